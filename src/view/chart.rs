//! Inline SVG charts for the HTML report: a step line (features passing over
//! sessions) and stacked bars (tokens, cost). Plain markup, no script, no
//! external reference; every mark links to its session's row.

use std::fmt::Write;

use super::html::escape;

const WIDTH: f64 = 1100.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 36.0;

/// One bar: the session it belongs to and its stacked values, bottom first.
pub struct Bar {
    pub session: u32,
    pub values: Vec<f64>,
    /// The tooltip.
    pub title: String,
}

/// A series' name and colour, for the legend.
pub struct Series<'a> {
    pub name: &'a str,
    pub color: &'a str,
}

fn plot_w() -> f64 {
    WIDTH - LEFT - RIGHT
}
fn plot_h() -> f64 {
    HEIGHT - TOP - BOTTOM
}

fn open(id: &str, label: &str) -> String {
    format!(
        r#"<svg id="{id}" class="chart" role="img" aria-label="{}" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" preserveAspectRatio="xMinYMin meet">"#,
        escape(label)
    )
}

/// `ticks` + 1 horizontal grid lines and their labels, from 0 to `max`.
fn axis(out: &mut String, max: f64, ticks: u32, format: &dyn Fn(f64) -> String) {
    for i in 0..=ticks {
        let v = max * f64::from(i) / f64::from(ticks);
        let y = TOP + plot_h() - plot_h() * f64::from(i) / f64::from(ticks);
        let _ = write!(
            out,
            r##"<line class="grid" x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#d8dde3"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11" fill="#57606a">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            escape(&format(v))
        );
    }
}

fn x_label(out: &mut String, x: f64, session: u32) {
    let _ = write!(
        out,
        r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="#57606a">{session}</text>"##,
        HEIGHT - BOTTOM + 16.0
    );
}

fn caption(out: &mut String, text: &str) {
    let _ = write!(
        out,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="#57606a">{}</text>"##,
        LEFT + plot_w() / 2.0,
        HEIGHT - 4.0,
        escape(text)
    );
}

/// Features passing after each session, as a step line over session numbers.
pub fn passing_line(id: &str, points: &[(u32, usize)], total: usize) -> String {
    let mut out = open(id, "features passing after each session");
    let max = total.max(1) as f64;
    // Whole features only: one grid line per feature while they fit.
    let ticks = if total <= 8 { total.max(1) as u32 } else { 4 };
    axis(&mut out, max, ticks, &|v| format!("{v:.0}"));
    let n = points.len().max(1) as f64;
    let x = |i: usize| LEFT + plot_w() * (i as f64 + 0.5) / n;
    let y = |v: usize| TOP + plot_h() - plot_h() * v as f64 / max;
    let mut path = String::new();
    for (i, (_, passing)) in points.iter().enumerate() {
        let (px, py) = (x(i), y(*passing));
        if i == 0 {
            let _ = write!(path, "M{px:.1},{py:.1}");
        } else {
            // A step: the count holds until the next session lands.
            let _ = write!(path, " H{px:.1} V{py:.1}");
        }
    }
    let _ = write!(
        out,
        r##"<path d="{path}" fill="none" stroke="#2da44e" stroke-width="2.5"/>"##
    );
    for (i, (session, passing)) in points.iter().enumerate() {
        let _ = write!(
            out,
            r##"<a href="#session-{session}"><circle class="point" cx="{:.1}" cy="{:.1}" r="4.5" fill="#2da44e"><title>session {session}: {passing} of {total} passing</title></circle></a>"##,
            x(i),
            y(*passing)
        );
        x_label(&mut out, x(i), *session);
    }
    caption(&mut out, "session");
    out.push_str("</svg>");
    out
}

/// Stacked bars, one per session; `format` labels the axis.
pub fn stacked_bars(
    id: &str,
    label: &str,
    bars: &[Bar],
    series: &[Series],
    format: &dyn Fn(f64) -> String,
) -> String {
    let mut out = open(id, label);
    let max = bars
        .iter()
        .map(|b| b.values.iter().sum::<f64>())
        .fold(0.0, f64::max);
    let max = if max > 0.0 { max } else { 1.0 };
    axis(&mut out, max, 4, format);
    let n = bars.len().max(1) as f64;
    let slot = plot_w() / n;
    let width = (slot * 0.7).min(48.0);
    for (i, bar) in bars.iter().enumerate() {
        let cx = LEFT + slot * (i as f64 + 0.5);
        let mut base = TOP + plot_h();
        let _ = write!(out, r##"<a href="#session-{}">"##, bar.session);
        for (v, s) in bar.values.iter().zip(series) {
            let h = plot_h() * v / max;
            base -= h;
            let _ = write!(
                out,
                r##"<rect class="bar" x="{:.1}" y="{base:.1}" width="{width:.1}" height="{h:.1}" fill="{}"><title>{}</title></rect>"##,
                cx - width / 2.0,
                s.color,
                escape(&bar.title)
            );
        }
        out.push_str("</a>");
        x_label(&mut out, cx, bar.session);
    }
    caption(&mut out, "session");
    out.push_str("</svg>");
    out
}

/// Axis labels in dollars with as many decimals as `max` needs for its
/// ticks to differ: `$0.0025` steps, `$0.25`, `$25`.
pub fn money(max: f64, ticks: u32) -> impl Fn(f64) -> String {
    let step = max / f64::from(ticks.max(1));
    let decimals = if step >= 1.0 {
        if max >= 100.0 {
            0
        } else {
            2
        }
    } else if step > 0.0 {
        ((-step.log10()).ceil() as usize + 1).clamp(2, 8)
    } else {
        2
    };
    move |v| format!("${v:.decimals$}")
}

/// The legend under a chart.
pub fn legend(series: &[Series]) -> String {
    let mut out = String::from(r#"<p class="legend">"#);
    for s in series {
        let _ = write!(
            out,
            r#"<span><i style="background:{}"></i>{}</span>"#,
            s.color,
            escape(s.name)
        );
    }
    out.push_str("</p>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_has_a_linked_point_per_session() {
        let svg = passing_line("p", &[(1, 0), (2, 1), (3, 1)], 2);
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains(r##"<a href="#session-2">"##));
        assert!(svg.contains("session 3: 1 of 2 passing"));
    }

    #[test]
    fn money_labels_differ_at_any_scale() {
        for max in [0.0004, 0.004, 0.03, 0.7, 4.0, 37.0, 1234.0] {
            let label = money(max, 4);
            let labels: Vec<String> = (0..=4).map(|i| label(max * f64::from(i) / 4.0)).collect();
            let mut unique = labels.clone();
            unique.dedup();
            assert_eq!(unique.len(), 5, "{max}: {labels:?}");
        }
    }

    #[test]
    fn bars_stack_and_scale_to_the_tallest() {
        let bars = vec![
            Bar {
                session: 1,
                values: vec![30.0, 10.0],
                title: "one".into(),
            },
            Bar {
                session: 2,
                values: vec![10.0, 10.0],
                title: "two".into(),
            },
        ];
        let series = [
            Series {
                name: "in",
                color: "#111",
            },
            Series {
                name: "out",
                color: "#222",
            },
        ];
        let svg = stacked_bars("t", "tokens", &bars, &series, &|v| format!("{v}"));
        assert_eq!(svg.matches("<rect").count(), 4);
        // The tallest stack fills the plot: 30 of 40 is 126 of 168 pixels.
        assert!(svg.contains(r#"height="126.0""#), "{svg}");
    }
}
