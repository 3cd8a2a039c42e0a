//! A session's budget: steps, input and output tokens, wall time and cost.
//!
//! Each limit ends the session with its own reason; at 80% of any of them
//! the model is told, once, how many steps are left. A step is one model
//! request, as the orchestrator counts them (it enforces the same budget on
//! what it brokers): subagents spend from the same steps, tokens, time and
//! money, within a step limit of their own.

use std::time::{Duration, Instant};

use crate::config::BudgetSection;
use crate::model::Usage;

/// The share of a budget at which the model is warned, in percent.
const WARN_AT_PERCENT: f64 = 80.0;

#[derive(Debug, Clone)]
pub struct Budget {
    limits: BudgetSection,
    started: Instant,
    steps: u32,
    usage: Usage,
    cost_usd: f64,
    warned: bool,
}

impl Budget {
    pub fn new(limits: BudgetSection) -> Budget {
        Budget::starting_at(limits, Instant::now())
    }

    /// A budget whose wall time counts from `started` (a subagent shares its parent's clock).
    pub fn starting_at(limits: BudgetSection, started: Instant) -> Budget {
        Budget {
            limits,
            started,
            steps: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            warned: false,
        }
    }

    /// What a subagent may spend: at most `steps`, and what is left of the rest.
    pub fn for_subagent(&self, steps: u32) -> Budget {
        let left = |limit: Option<u64>, used: u64| limit.map(|l| l.saturating_sub(used));
        let limits = BudgetSection {
            steps: steps.min(self.limits.steps.saturating_sub(self.steps)),
            wall_time_secs: self.limits.wall_time_secs,
            input_tokens: left(self.limits.input_tokens, self.usage.input_tokens),
            output_tokens: left(self.limits.output_tokens, self.usage.output_tokens),
            cost_usd: self.limits.cost_usd.map(|c| (c - self.cost_usd).max(0.0)),
        };
        Budget::starting_at(limits, self.started)
    }

    /// Wall time left before the session's budget ends it.
    pub fn time_left(&self) -> Duration {
        Duration::from_secs(self.limits.wall_time_secs).saturating_sub(self.started.elapsed())
    }

    pub fn steps(&self) -> u32 {
        self.steps
    }

    /// Model requests left before the step limit.
    pub fn requests_left(&self) -> u32 {
        self.limits.steps.saturating_sub(self.steps)
    }

    pub fn usage(&self) -> Usage {
        self.usage
    }

    pub fn cost_usd(&self) -> f64 {
        self.cost_usd
    }

    /// One model turn taken.
    pub fn step(&mut self) {
        self.steps += 1;
    }

    /// Tokens and money one model call spent.
    pub fn spend(&mut self, usage: Usage, cost_usd: f64) {
        self.usage.add(usage);
        self.cost_usd += cost_usd;
    }

    /// What a subagent spent counts toward this budget too, its steps included.
    pub fn absorb(&mut self, child: &Budget) {
        self.steps += child.steps;
        self.spend(child.usage, child.cost_usd);
    }

    /// The reason the session must end now, if a limit is reached.
    pub fn exhausted(&self) -> Option<String> {
        let l = &self.limits;
        if self.steps >= l.steps {
            return Some(format!("budget: step limit of {} reached", l.steps));
        }
        if let Some(max) = l.input_tokens.filter(|m| self.usage.input_tokens >= *m) {
            return Some(format!(
                "budget: input-token limit of {max} reached ({} used)",
                self.usage.input_tokens
            ));
        }
        if let Some(max) = l.output_tokens.filter(|m| self.usage.output_tokens >= *m) {
            return Some(format!(
                "budget: output-token limit of {max} reached ({} used)",
                self.usage.output_tokens
            ));
        }
        if self.started.elapsed() >= Duration::from_secs(l.wall_time_secs) {
            return Some(format!(
                "budget: wall time of {} s reached",
                l.wall_time_secs
            ));
        }
        if let Some(max) = l.cost_usd.filter(|m| self.cost_usd >= *m) {
            return Some(format!(
                "budget: cost limit of ${max:.2} reached (${:.4} spent)",
                self.cost_usd
            ));
        }
        None
    }

    /// Once, when any limit passes 80%: the message to the model.
    pub fn warning(&mut self) -> Option<String> {
        if self.warned {
            return None;
        }
        let (name, percent) = self.most_spent()?;
        if percent < WARN_AT_PERCENT {
            return None;
        }
        self.warned = true;
        let left = match self.steps_left() {
            1 => "1 step".to_string(),
            n => format!("{n} steps"),
        };
        Some(format!(
            "[harness] {percent:.0}% of this session's {name} budget is spent: about {left} left. \
             Commit what works now; if the feature cannot be finished, leave its passes false and say in progress.md what is left."
        ))
    }

    /// The limit closest to its end, and how much of it is spent, in percent.
    fn most_spent(&self) -> Option<(&'static str, f64)> {
        let l = &self.limits;
        let pct = |used: f64, max: f64| if max > 0.0 { used * 100.0 / max } else { 100.0 };
        let mut shares = vec![
            ("step", pct(self.steps as f64, l.steps as f64)),
            (
                "wall-time",
                pct(
                    self.started.elapsed().as_secs_f64(),
                    l.wall_time_secs as f64,
                ),
            ),
        ];
        if let Some(m) = l.input_tokens {
            shares.push(("input-token", pct(self.usage.input_tokens as f64, m as f64)));
        }
        if let Some(m) = l.output_tokens {
            shares.push((
                "output-token",
                pct(self.usage.output_tokens as f64, m as f64),
            ));
        }
        if let Some(m) = l.cost_usd {
            shares.push(("cost", pct(self.cost_usd, m)));
        }
        shares.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Steps left by the tightest limit, spending at this session's average rate.
    fn steps_left(&self) -> u64 {
        let l = &self.limits;
        let taken = self.steps.max(1) as f64;
        let by_rate =
            |used: f64, max: f64| ((max - used).max(0.0) / (used / taken).max(1e-9)) as u64;
        let mut left = u64::from(l.steps.saturating_sub(self.steps));
        if let Some(m) = l.input_tokens {
            left = left.min(by_rate(self.usage.input_tokens as f64, m as f64));
        }
        if let Some(m) = l.output_tokens {
            left = left.min(by_rate(self.usage.output_tokens as f64, m as f64));
        }
        if let Some(m) = l.cost_usd {
            left = left.min(by_rate(self.cost_usd, m));
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        left.min(by_rate(elapsed, l.wall_time_secs as f64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> BudgetSection {
        BudgetSection {
            steps: 10,
            wall_time_secs: 3600,
            input_tokens: Some(1000),
            output_tokens: None,
            cost_usd: Some(1.0),
        }
    }

    #[test]
    fn each_limit_ends_the_session_with_its_own_reason() {
        let mut b = Budget::new(limits());
        for _ in 0..10 {
            b.step();
        }
        assert_eq!(
            b.exhausted().as_deref(),
            Some("budget: step limit of 10 reached")
        );
        let mut b = Budget::new(limits());
        b.spend(
            Usage {
                input_tokens: 1200,
                ..Usage::default()
            },
            0.0,
        );
        assert!(b.exhausted().unwrap().contains("input-token limit of 1000"));
        let mut b = Budget::new(limits());
        b.spend(Usage::default(), 1.5);
        assert!(b.exhausted().unwrap().contains("cost limit of $1.00"));
    }

    #[test]
    fn the_warning_comes_once_at_eighty_percent_with_steps_left() {
        let mut b = Budget::new(limits());
        for _ in 0..7 {
            b.step();
        }
        assert_eq!(b.warning(), None);
        b.step();
        let w = b.warning().unwrap();
        assert!(w.contains("about 2 steps left"), "{w}");
        b.step();
        assert_eq!(b.warning(), None);
    }

    #[test]
    fn a_token_warning_estimates_steps_from_the_rate() {
        let mut b = Budget::new(limits());
        for _ in 0..4 {
            b.step();
            b.spend(
                Usage {
                    input_tokens: 200,
                    ..Usage::default()
                },
                0.0,
            );
        }
        let w = b.warning().unwrap();
        assert!(
            w.contains("80% of this session's input-token budget"),
            "{w}"
        );
        assert!(w.contains("about 1 step left"), "{w}");
    }

    #[test]
    fn a_subagent_spends_what_is_left_and_its_tokens_count() {
        let mut parent = Budget::new(limits());
        parent.spend(
            Usage {
                input_tokens: 600,
                ..Usage::default()
            },
            0.25,
        );
        let mut child = parent.for_subagent(5);
        child.spend(
            Usage {
                input_tokens: 500,
                ..Usage::default()
            },
            0.0,
        );
        assert!(child
            .exhausted()
            .unwrap()
            .contains("input-token limit of 400"));
        child.step();
        parent.absorb(&child);
        assert_eq!(parent.usage().input_tokens, 1100);
        assert_eq!(parent.steps(), 1);
        // A subagent's steps stop where the session's do.
        let mut parent = Budget::new(limits());
        for _ in 0..9 {
            parent.step();
        }
        let mut child = parent.for_subagent(5);
        assert_eq!(child.exhausted(), None);
        child.step();
        assert!(child.exhausted().unwrap().contains("step limit of 1"));
    }
}
