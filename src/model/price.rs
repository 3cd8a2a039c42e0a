//! What a request cost: a built-in price table for common models, which
//! `price_*_per_mtok` in longrun.toml overrides.

use super::settings::PriceOverride;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    /// Input tokens read from the prompt cache.
    pub cached: f64,
    pub output: f64,
    /// Input tokens written to the prompt cache (Anthropic charges extra for these).
    pub cache_write: f64,
}

/// Token counts as a provider reports them, before they are folded into [`super::Usage`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Every input token, cached or not.
    pub input: u64,
    pub output: u64,
    /// Of `input`, read from the cache.
    pub cached: u64,
    /// Of `input`, written to the cache.
    pub cache_write: u64,
}

// (model name prefix, input, cached input, output); the longest matching prefix wins.
const OPENAI: &[(&str, f64, f64, f64)] = &[
    ("gpt-4o", 2.50, 1.25, 10.00),
    ("gpt-4o-mini", 0.15, 0.075, 0.60),
    ("gpt-4.1", 2.00, 0.50, 8.00),
    ("gpt-4.1-mini", 0.40, 0.10, 1.60),
    ("gpt-4.1-nano", 0.10, 0.025, 0.40),
    ("gpt-5", 1.25, 0.125, 10.00),
    ("gpt-5-mini", 0.25, 0.025, 2.00),
    ("gpt-5-nano", 0.05, 0.005, 0.40),
    ("o3", 2.00, 0.50, 8.00),
    ("o4-mini", 1.10, 0.275, 4.40),
];

// Anthropic: cache reads at a tenth of the input price, cache writes at 1.25 times.
const ANTHROPIC: &[(&str, f64, f64)] = &[
    ("claude-opus-4", 15.0, 75.0),
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("claude-3-5-sonnet", 3.0, 15.0),
    ("claude-haiku-4-5", 1.0, 5.0),
    ("claude-3-5-haiku", 0.80, 4.0),
];

/// The table's price of `model`, matched on its last path segment
/// (OpenRouter names models `openai/gpt-4o`).
pub fn builtin(model: &str) -> Option<Price> {
    let name = model.rsplit('/').next().unwrap_or(model);
    let openai = OPENAI
        .iter()
        .map(|&(p, input, cached, output)| {
            (
                p,
                Price {
                    input,
                    cached,
                    output,
                    cache_write: input,
                },
            )
        })
        .chain(ANTHROPIC.iter().map(|&(p, input, output)| {
            (
                p,
                Price {
                    input,
                    cached: input * 0.1,
                    output,
                    cache_write: input * 1.25,
                },
            )
        }));
    openai
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, price)| price)
}

/// The price to charge: the overrides over the table. `None` when neither knows the model.
pub fn resolve(model: &str, overrides: &PriceOverride) -> Option<Price> {
    let table = builtin(model);
    if overrides.input.is_none() && overrides.output.is_none() {
        return table.map(|t| Price {
            cached: overrides.cached.unwrap_or(t.cached),
            ..t
        });
    }
    let input = overrides.input.or(table.map(|t| t.input)).unwrap_or(0.0);
    Some(Price {
        input,
        cached: overrides.cached.unwrap_or(input),
        output: overrides.output.or(table.map(|t| t.output)).unwrap_or(0.0),
        cache_write: table
            .map(|t| t.cache_write / t.input.max(f64::MIN_POSITIVE) * input)
            .unwrap_or(input),
    })
}

/// The cost of `tokens` at `price`, in USD.
pub fn cost(price: &Price, tokens: &Tokens) -> f64 {
    let fresh = tokens
        .input
        .saturating_sub(tokens.cached + tokens.cache_write);
    let per = |n: u64, usd: f64| n as f64 * usd / 1_000_000.0;
    per(fresh, price.input)
        + per(tokens.cached, price.cached)
        + per(tokens.cache_write, price.cache_write)
        + per(tokens.output, price.output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_router_names_match() {
        assert_eq!(builtin("gpt-4o-mini-2024-07-18").unwrap().input, 0.15);
        assert_eq!(builtin("openai/gpt-4o").unwrap().input, 2.50);
        assert_eq!(builtin("claude-opus-4-5-20251101").unwrap().output, 25.0);
        assert_eq!(builtin("claude-opus-4-1").unwrap().output, 75.0);
        assert!(builtin("llama3.2").is_none());
    }

    #[test]
    fn cost_charges_cache_reads_and_writes_apart() {
        let price = builtin("claude-sonnet-4-5").unwrap();
        let tokens = Tokens {
            input: 1_000_000,
            output: 100_000,
            cached: 500_000,
            cache_write: 100_000,
        };
        // 400k fresh at 3, 500k read at 0.3, 100k written at 3.75, 100k out at 15.
        let want = 1.2 + 0.15 + 0.375 + 1.5;
        assert!((cost(&price, &tokens) - want).abs() < 1e-9);
    }

    #[test]
    fn overrides_win_and_price_unknown_models() {
        let o = PriceOverride {
            input: Some(1.0),
            output: Some(2.0),
            cached: None,
        };
        let p = resolve("my-local-model", &o).unwrap();
        assert_eq!((p.input, p.cached, p.output), (1.0, 1.0, 2.0));
        assert!(resolve("my-local-model", &PriceOverride::default()).is_none());
    }
}
