//! A hand-written SVG plot of service-time CDFs (measured vs simulated): no plotting
//! dependency, deterministic text (same inputs, same bytes). Pure: returns a string.

use super::demerit::Cdf;
use std::fmt::Write as _;

/// One curve of the plot.
pub struct Curve<'a> {
    pub label: String,
    pub cdf: &'a Cdf,
    /// An SVG colour, e.g. `#1f77b4`.
    pub color: &'static str,
    pub dashed: bool,
}

const W: f64 = 720.0;
const H: f64 = 450.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 56.0;

/// A tick step of 1, 2 or 5 × 10^k giving about six ticks up to `max`.
fn tick_step(max: f64) -> f64 {
    let raw = max / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The curves on one chart: x = service time (ms) up to where every curve has reached
/// 99.5 % (rounded up to a tick), y = fraction of requests.
pub fn cdf_svg(title: &str, curves: &[Curve<'_>]) -> String {
    assert!(!curves.is_empty(), "a plot needs a curve");
    let reach = curves
        .iter()
        .map(|c| c.cdf.quantile_ms(0.995))
        .fold(0.0f64, f64::max)
        .max(0.01);
    let step = tick_step(reach);
    let x_max = (reach / step).ceil() * step;
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let sx = |x: f64| LEFT + (x / x_max).min(1.05) * pw;
    let sy = |y: f64| TOP + (1.0 - y) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        W / 2.0,
        escape(title)
    );
    let _ = writeln!(
        s,
        r#"<defs><clipPath id="plot"><rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}"/></clipPath></defs>"#
    );
    // Grid and ticks.
    let ticks = (x_max / step).round() as u32;
    for i in 0..=ticks {
        let x = f64::from(i) * step;
        let px = sx(x);
        let _ = writeln!(
            s,
            r##"<line x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{:.1}" stroke="#e0e0e0"/>"##,
            TOP + ph
        );
        let decimals = (-step.log10().floor()).max(0.0) as usize;
        let label = format!("{x:.decimals$}");
        let _ = writeln!(
            s,
            r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{label}</text>"#,
            TOP + ph + 16.0
        );
    }
    for i in 0..=5 {
        let y = f64::from(i) / 5.0;
        let py = sy(y);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e0e0e0"/>"##,
            LEFT + pw
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{y:.1}</text>"#,
            LEFT - 6.0,
            py + 4.0
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">service time (ms)</text>"#,
        LEFT + pw / 2.0,
        H - 14.0
    );
    let _ = writeln!(
        s,
        r#"<text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">fraction of requests</text>"#,
        TOP + ph / 2.0,
        TOP + ph / 2.0
    );
    // Curves: straight segments between CDF points, as the demerit interpolates them.
    for c in curves {
        let mut pts = String::new();
        let mut last_y = f64::NAN;
        let all = c.cdf.points();
        for (i, &(x, y)) in all.iter().enumerate() {
            // Skip interior points of flat runs (most rows are empty): same picture, less text.
            let next_same = all.get(i + 1).is_some_and(|&(_, ny)| ny == y);
            if y == last_y && next_same {
                continue;
            }
            last_y = y;
            let _ = write!(pts, "{:.1},{:.1} ", sx(x), sy(y));
            if x > x_max {
                break;
            }
        }
        let dash = if c.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<polyline clip-path="url(#plot)" fill="none" stroke="{}" stroke-width="1.6"{dash} points="{}"/>"#,
            c.color,
            pts.trim_end()
        );
    }
    // Legend, bottom right inside the plot.
    let lx = LEFT + pw - 270.0;
    let mut ly = TOP + ph - 14.0 - 18.0 * (curves.len() as f64 - 1.0);
    let _ = writeln!(
        s,
        r##"<rect x="{:.1}" y="{:.1}" width="262" height="{:.1}" fill="white" stroke="#bbb"/>"##,
        lx - 8.0,
        ly - 14.0,
        18.0 * curves.len() as f64 + 6.0
    );
    for c in curves {
        let dash = if c.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"{dash}/>"#,
            ly - 4.0,
            lx + 26.0,
            ly - 4.0,
            c.color
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{ly:.1}">{}</text>"#,
            lx + 34.0,
            escape(&c.label)
        );
        ly += 18.0;
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::demerit::DemeritHistogram;

    #[test]
    fn a_plot_is_well_formed_and_escapes_labels() {
        let mut h = DemeritHistogram::new();
        for us in [800u64, 1200, 3000, 4500, 9000] {
            h.add_us(us);
        }
        let cdf = h.cdf().unwrap();
        let svg = cdf_svg(
            "a & b",
            &[Curve {
                label: "measured <real>".into(),
                cdf: &cdf,
                color: "#000",
                dashed: false,
            }],
        );
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("a &amp; b") && svg.contains("measured &lt;real&gt;"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert_eq!(tick_step(9.0), 2.0);
        assert_eq!(tick_step(30.0), 5.0);
    }
}
