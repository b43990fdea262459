//! Drawing a [`Figure`] with plotters into SVG, and rasterising that SVG into PNG.
//!
//! Why this way: plotters' SVG backend writes text as `<text>` elements, so SVG needs no
//! font at all (plotters is built without its `ttf` feature, which would pull font-kit and
//! the system's fontconfig and fonts). A PNG needs glyphs: rather than plotters' bitmap
//! backend (a second rendering path, and a font loaded through fontconfig or a separate
//! glyph crate), the PNG is the very same SVG rasterised by resvg (pure Rust, tiny-skia),
//! with the DejaVu Sans font compiled into the binary (crate `dejavu`), so a fresh machine
//! with no fonts or system libraries draws the same picture. Both outputs are deterministic:
//! same figure, same bytes.

use super::figure::{Figure, Panel, Point, XAxis};
use anyhow::anyhow;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The figure's width and each panel's height, in px.
const WIDTH: u32 = 960;
const PANEL_H: u32 = 380;
const TITLE_H: u32 = 40;
/// The legend column on the right of each panel: it never hides a curve.
const LEGEND_W: u32 = 290;
const LEGEND_ROW: u32 = 18;

/// A colour-blind-friendly palette (Okabe & Ito), then Tableau's for more series.
const PALETTE: [RGBColor; 14] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(148, 103, 189),
    RGBColor(214, 39, 40),
    RGBColor(23, 190, 207),
    RGBColor(44, 160, 44),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A tick label: integers plainly, others with up to 3 significant decimals.
fn tick(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn panel_height(p: &Panel, extra_legend: usize) -> u32 {
    let rows = (p.series.len() + extra_legend) as u32;
    // Categories stand one per row (a run's configurations): 24 px each.
    let cats = match &p.x {
        XAxis::Categories(n) => (90 + 24 * n.len() as u32).max(200),
        XAxis::Numeric { .. } => PANEL_H,
    };
    cats.max(60 + rows * LEGEND_ROW)
}

/// The figure as SVG text.
pub fn svg(fig: &Figure) -> anyhow::Result<String> {
    let extra = usize::from(fig.any_saturated()) + usize::from(fig.any_backlog_grows());
    let height = TITLE_H
        + fig
            .panels
            .iter()
            .map(|p| panel_height(p, extra))
            .sum::<u32>();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        draw(&root, fig, extra).map_err(|e| anyhow!("drawing the figure: {e}"))?;
        root.present()
            .map_err(|e| anyhow!("drawing the figure: {e}"))?;
    }
    Ok(out)
}

/// The figure as PNG bytes: [`svg`] rasterised at twice its size (crisp on screens).
pub fn png(fig: &Figure) -> anyhow::Result<Vec<u8>> {
    use resvg::{tiny_skia, usvg};
    let svg = svg(fig)?;
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_font_data(dejavu::sans::regular().to_vec());
    db.set_sans_serif_family("DejaVu Sans");
    opt.font_family = "DejaVu Sans".to_string();
    let tree =
        usvg::Tree::from_str(&svg, &opt).map_err(|e| anyhow!("rasterising the figure: {e}"))?;
    let scale = 2.0;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(scale)
        .ok_or_else(|| anyhow!("empty figure"))?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| anyhow!("a figure too large to rasterise"))?;
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| anyhow!("encoding the PNG: {e}"))
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure, extra: usize) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (title, mut rest) = root.split_vertically(TITLE_H);
    title.draw_text(
        &fig.title,
        &TextStyle::from(("sans-serif", 18).into_font()).pos(Pos::new(HPos::Center, VPos::Center)),
        (WIDTH as i32 / 2, TITLE_H as i32 / 2),
    )?;
    for p in &fig.panels {
        let (area, below) = rest.split_vertically(panel_height(p, extra));
        rest = below;
        let (chart, legend) = area.split_horizontally(WIDTH - LEGEND_W);
        match &p.x {
            XAxis::Numeric { log: true } => {
                let (lo, hi) = x_bounds(p, true);
                let ticks = log_ticks(p, lo, hi);
                let n = ticks.len();
                plot(&chart, p, (lo..hi).log_scale().with_key_points(ticks), n)?
            }
            XAxis::Numeric { log: false } => {
                let (lo, hi) = x_bounds(p, false);
                plot(&chart, p, lo..hi, 10)?
            }
            XAxis::Categories(names) => dots(&chart, p, names)?,
        }
        legend_column(&legend, p, fig)?;
    }
    Ok(())
}

/// Ticks of a log axis: powers of 2 for integers up to 4096 (queue depths 1, 2, 4, …),
/// else 1, 2, 5 × 10^k (plotters' own log ticks skip decades' insides).
fn log_ticks(p: &Panel, lo: f64, hi: f64) -> Vec<f64> {
    let integers = all_points(p).all(|q| q.x >= 1.0 && q.x == q.x.round());
    if integers && hi <= 4096.0 {
        let mut out = Vec::new();
        let mut v = 1.0;
        while v <= hi {
            if v >= lo {
                out.push(v);
            }
            v *= 2.0;
        }
        out
    } else {
        ticks_125(lo, hi)
    }
}

/// 1, 2, 5 × 10^k from `lo` to `hi`.
fn ticks_125(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = m * decade;
            if v >= lo && v <= hi {
                out.push(v);
            }
        }
        decade *= 10.0;
    }
    if out.len() < 3 {
        // Less than a decade: evenly spaced 1, 2 or 5 × 10^k steps instead.
        let raw = (hi - lo) / 5.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        out.clear();
        let mut k = (lo / step).ceil();
        while k * step <= hi {
            out.push(k * step);
            k += 1.0;
        }
    }
    out
}

fn all_points(p: &Panel) -> impl Iterator<Item = &Point> {
    p.series.iter().flat_map(|s| &s.points)
}

/// The x range: the data's, padded a little so end markers are whole.
fn x_bounds(p: &Panel, log: bool) -> (f64, f64) {
    let xs = all_points(p).map(|q| q.x).filter(|&x| !log || x > 0.0);
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if log {
        (lo / 1.15, hi * 1.15)
    } else if hi > lo {
        let pad = (hi - lo) * 0.03;
        (lo - pad, hi + pad)
    } else {
        (lo - 1.0, hi + 1.0)
    }
}

fn y_bounds(p: &Panel) -> (f64, f64) {
    let (lo, hi) = all_points(p).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), q| {
        (a.min(q.y), b.max(q.y))
    });
    if p.y_log {
        return (lo / 1.3, hi * 1.3);
    }
    let lo = lo.min(0.0);
    if hi > lo {
        (lo, hi + (hi - lo) * 0.06)
    } else {
        (lo - 1.0, hi + 1.0)
    }
}

fn plot<DB, XR>(area: &DrawingArea<DB, Shift>, p: &Panel, x_spec: XR, x_labels: usize) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    XR: AsRangedCoord<Value = f64>,
    XR::CoordDescType: ValueFormatter<f64>,
{
    let (y0, y1) = y_bounds(p);
    if p.y_log {
        let ticks = ticks_125(y0, y1);
        let n = ticks.len();
        plot_xy(
            area,
            p,
            x_spec,
            x_labels,
            (y0..y1).log_scale().with_key_points(ticks),
            n,
        )
    } else {
        plot_xy(area, p, x_spec, x_labels, y0..y1, 8)
    }
}

fn plot_xy<DB, XR, YR>(
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    x_spec: XR,
    x_labels: usize,
    y_spec: YR,
    y_labels: usize,
) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    XR: AsRangedCoord<Value = f64>,
    XR::CoordDescType: ValueFormatter<f64>,
    YR: AsRangedCoord<Value = f64>,
    YR::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x_spec, y_spec)?;
    let names = match &p.x {
        XAxis::Categories(n) => n.clone(),
        XAxis::Numeric { .. } => Vec::new(),
    };
    let x_fmt = |v: &f64| -> String {
        if names.is_empty() {
            tick(*v)
        } else if (v - v.round()).abs() < 1e-9 && *v >= 0.0 {
            names.get(v.round() as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let y_fmt = |v: &f64| tick(*v);
    chart
        .configure_mesh()
        .x_desc(p.x_label.as_str())
        .y_desc(p.y_label.as_str())
        .x_labels(x_labels)
        .y_labels(y_labels)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 13))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(0, 0, 0).mix(0.12))
        .draw()?;
    for (i, s) in p.series.iter().enumerate() {
        let c = color(i);
        let pts: Vec<(f64, f64)> = s.points.iter().map(|q| (q.x, q.y)).collect();
        if s.line {
            let style = c.stroke_width(2);
            if s.dashed {
                chart.draw_series(DashedLineSeries::new(pts.clone(), 8, 5, style))?;
            } else {
                chart.draw_series(LineSeries::new(pts.clone(), style))?;
            }
        }
        if s.markers {
            // A saturated point is hollow: its latency grows with the run's length.
            chart.draw_series(s.points.iter().map(|q| {
                let style = if q.saturated {
                    c.stroke_width(2)
                } else {
                    c.filled()
                };
                Circle::new((q.x, q.y), 4, style)
            }))?;
            chart.draw_series(
                s.points
                    .iter()
                    .filter(|q| q.backlog_grows)
                    .map(|q| Cross::new((q.x, q.y), 7, BLACK.stroke_width(2))),
            )?;
        }
    }
    Ok(())
}

/// Named categories (a run's configurations) as a dot plot: one row each, top to bottom in
/// the file's order, the value along x, so long names read horizontally.
fn dots<DB>(area: &DrawingArea<DB, Shift>, p: &Panel, names: &[String]) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    // A dot plot's value axis is linear from 0 (`--log-y` is for curves).
    let linear = Panel {
        y_log: false,
        ..p.clone()
    };
    let (v0, v1) = y_bounds(&linear);
    let n = names.len();
    let longest = names.iter().map(|s| s.chars().count()).max().unwrap_or(0);
    // Row i of n is drawn at y = n - 1 - i, so the first row is on top.
    let row = |i: f64| (n as f64 - 1.0) - i;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(16 + 7 * longest.min(40) as u32)
        .build_cartesian_2d(v0..v1, -0.5..(n as f64 - 0.5))?;
    let y_fmt = |v: &f64| -> String {
        let i = (n as f64 - 1.0) - v;
        if (i - i.round()).abs() < 1e-9 && i >= -1e-9 {
            names.get(i.round() as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let x_fmt = |v: &f64| tick(*v);
    chart
        .configure_mesh()
        .x_desc(p.y_label.as_str())
        .x_labels(8)
        .y_labels(n + 1)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 13))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(0, 0, 0).mix(0.12))
        .draw()?;
    for (i, s) in p.series.iter().enumerate() {
        let c = color(i);
        chart.draw_series(s.points.iter().map(|q| {
            let style = if q.saturated {
                c.stroke_width(2)
            } else {
                c.filled()
            };
            Circle::new((q.y, row(q.x)), 5, style)
        }))?;
        chart.draw_series(
            s.points
                .iter()
                .filter(|q| q.backlog_grows)
                .map(|q| Cross::new((q.y, row(q.x)), 7, BLACK.stroke_width(2))),
        )?;
    }
    Ok(())
}

/// Cuts a legend entry to what the column holds.
fn fit(label: &str) -> String {
    const MAX: usize = 42;
    if label.chars().count() <= MAX {
        label.to_string()
    } else {
        label.chars().take(MAX - 1).collect::<String>() + "…"
    }
}

fn legend_column<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    fig: &Figure,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let text =
        TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = 30i32;
    let x = 8i32;
    for (i, s) in p.series.iter().enumerate() {
        let c = color(i);
        if s.line {
            let style = c.stroke_width(2);
            if s.dashed {
                area.draw(&PathElement::new(vec![(x, y), (x + 8, y)], style))?;
                area.draw(&PathElement::new(vec![(x + 14, y), (x + 24, y)], style))?;
            } else {
                area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], style))?;
            }
        }
        if s.markers {
            area.draw(&Circle::new((x + 12, y), 4, c.filled()))?;
        }
        area.draw_text(&fit(&s.label), &text, (x + 32, y))?;
        y += LEGEND_ROW as i32;
    }
    let grey = RGBColor(90, 90, 90);
    if fig.any_saturated() {
        area.draw(&Circle::new((x + 12, y), 4, grey.stroke_width(2)))?;
        area.draw_text("saturated (hollow)", &text, (x + 32, y))?;
        y += LEGEND_ROW as i32;
    }
    if fig.any_backlog_grows() {
        area.draw(&Cross::new((x + 12, y), 7, BLACK.stroke_width(2)))?;
        area.draw_text("backlog grows (×)", &text, (x + 32, y))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::figure::{build, Choice};
    use super::super::results::parse;
    use super::*;

    fn figure() -> Figure {
        let t = parse(
            "config,Q,throughput_iops,mean_ms,saturated,sustainable\n\
             SATF,1,100,10,false,true\nSATF,32,300,20,true,true\n\
             LOOK,1,90,11,false,true\nLOOK,32,250,30,false,false\n",
            "s.csv",
        )
        .unwrap();
        build(&t, &Choice::default()).unwrap()
    }

    #[test]
    fn svg_is_deterministic_and_marks_saturation() {
        let f = figure();
        let a = svg(&f).unwrap();
        assert_eq!(a, svg(&f).unwrap(), "same figure, same bytes");
        assert!(a.starts_with("<svg"));
        for text in [
            "saturated (hollow)",
            "backlog grows",
            "SATF",
            "LOOK",
            "throughput (IOPS)",
            "mean latency (ms)",
        ] {
            assert!(a.contains(text), "{text} missing");
        }
    }

    #[test]
    fn png_is_a_png_and_deterministic() {
        let f = figure();
        let a = png(&f).unwrap();
        assert_eq!(&a[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(a, png(&f).unwrap());
    }
}
