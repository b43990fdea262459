//! From a results table to a figure: which column goes on which axis, the series (one per
//! configuration), the units, log scales and the saturation marks. No drawing here
//! (`draw.rs` does that), so the choices are tested on plain data.

use super::results::{Cell, Kind, Table};
use anyhow::{anyhow, bail};

/// A point of a series; `saturated` and `backlog_grows` come from the report's flags
/// (docs/report.md) and are drawn hollow and crossed.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub saturated: bool,
    pub backlog_grows: bool,
}

#[derive(Clone, Debug)]
pub struct Series {
    pub label: String,
    pub points: Vec<Point>,
    /// Joined by a line (sweeps, series, CDFs) or markers alone (a run's configurations).
    pub line: bool,
    /// Markers at every point (sweeps and runs; not CDFs and time series, which are dense).
    pub markers: bool,
    pub dashed: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum XAxis {
    Numeric {
        log: bool,
    },
    /// Named positions 0, 1, 2, …
    Categories(Vec<String>),
}

#[derive(Clone, Debug)]
pub struct Panel {
    pub x_label: String,
    pub y_label: String,
    pub x: XAxis,
    /// A logarithmic y axis (`--log-y`: latencies of saturated points can be a thousand
    /// times the others'); else linear from 0.
    pub y_log: bool,
    pub series: Vec<Series>,
}

#[derive(Clone, Debug)]
pub struct Figure {
    pub title: String,
    pub panels: Vec<Panel>,
}

impl Figure {
    pub fn any_saturated(&self) -> bool {
        self.points().any(|p| p.saturated)
    }

    pub fn any_backlog_grows(&self) -> bool {
        self.points().any(|p| p.backlog_grows)
    }

    fn points(&self) -> impl Iterator<Item = &Point> {
        self.panels
            .iter()
            .flat_map(|p| &p.series)
            .flat_map(|s| &s.points)
    }
}

/// What the user asked for: `--x`, `--y` (several: one panel each), `--title`.
#[derive(Clone, Debug, Default)]
pub struct Choice {
    pub x: Option<String>,
    pub log_y: bool,
    pub y: Vec<String>,
    pub title: Option<String>,
}

/// An axis label with its unit, from a column name (docs/report.md's units).
pub fn label(column: &str) -> String {
    let known = match column {
        "throughput_iops" => "throughput (IOPS)",
        "throughput_mb_s" => "throughput (MB/s)",
        "mean_ms" => "mean latency (ms)",
        "p50_ms" => "median latency (ms)",
        "p95_ms" => "95th percentile latency (ms)",
        "p99_ms" => "99th percentile latency (ms)",
        "mean_utilization" => "mean disk utilisation (fraction of time)",
        "offered_iops" => "offered load (IOPS)",
        "achieved_iops" => "achieved throughput (IOPS)",
        "t_s" => "virtual time (s)",
        "outstanding" => "host requests in the array",
        "backlog_ops" => "deferred operations pending",
        "nvram_entries" => "NVRAM entries",
        "occupied_blocks" => "write-cache blocks occupied (4 KiB)",
        "occupancy" => "write-cache occupancy (fraction)",
        "overflows" => "write-cache overflows (so far)",
        "edge_ms" => "service time (ms)",
        "mean_w" => "mean power (W)",
        "energy_j" => "energy (J)",
        "workload.queue_depth" => "queue depth (requests outstanding)",
        "workload.read_fraction" => "read fraction",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    let units = [
        ("_mb_s", "MB/s"),
        ("_bytes", "bytes"),
        ("_iops", "IOPS"),
        ("_ms", "ms"),
        ("_s", "s"),
        ("_j", "J"),
        ("_w", "W"),
    ];
    match units.iter().find(|(s, _)| column.ends_with(s)) {
        Some((_, u)) => format!("{column} ({u})"),
        None => column.to_string(),
    }
}

/// The figure of `t` under `choice`: errors name the file and the column.
pub fn build(t: &Table, choice: &Choice) -> anyhow::Result<Figure> {
    let title = choice.title.clone().unwrap_or_else(|| default_title(t));
    let panels = match &t.kind {
        Kind::Sweep { axes } => sweep(t, axes, choice)?,
        Kind::Run => run(t, choice)?,
        Kind::Series => series(t, choice)?,
        Kind::Cdf => cdf(t, choice)?,
        Kind::Validate => bail!(
            "{}: validation scores (validate --json) hold no curve to plot: plot the <drive>.cdf.csv files `spindle validate --out DIR` writes",
            t.source
        ),
    };
    let mut panels = panels;
    if choice.log_y {
        for p in &mut panels {
            if let Some(q) = p.series.iter().flat_map(|s| &s.points).find(|q| q.y <= 0.0) {
                bail!(
                    "{}: --log-y: {:?} has the value {} at x = {}, and a log axis holds only values above 0",
                    t.source,
                    p.y_label,
                    q.y,
                    q.x
                );
            }
            p.y_log = true;
        }
    }
    Ok(Figure { title, panels })
}

fn default_title(t: &Table) -> String {
    let stem = std::path::Path::new(&t.source)
        .file_stem()
        .map_or_else(|| t.source.clone(), |s| s.to_string_lossy().into_owned());
    match t.kind {
        Kind::Cdf => format!(
            "{}: service-time CDF, measured vs simulated",
            stem.trim_end_matches(".cdf")
        ),
        Kind::Series => format!("{stem}: state over virtual time"),
        _ => stem,
    }
}

fn y_columns(t: &Table, choice: &Choice, default: &[&str]) -> anyhow::Result<Vec<usize>> {
    let names: Vec<String> = if choice.y.is_empty() {
        default.iter().map(|s| s.to_string()).collect()
    } else {
        choice.y.clone()
    };
    names.iter().map(|n| t.column(n)).collect()
}

fn flag(t: &Table, row: &[Cell], name: &str, when: bool) -> bool {
    t.columns
        .iter()
        .position(|c| c == name)
        .is_some_and(|i| matches!(row[i], Cell::Bool(b) if b == when))
}

/// Distinct values of column `i` in first-seen order.
fn distinct(t: &Table, i: usize) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    for r in &t.rows {
        if !out.contains(&r[i]) {
            out.push(r[i].clone());
        }
    }
    out
}

/// A numeric axis is logarithmic when its values are positive and span a factor of 30 or
/// more (queue depths 1–32, rates over decades); a linear axis would crowd the small ones.
fn log_wanted(values: &[f64]) -> bool {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(0.0f64, f64::max);
    min > 0.0 && max / min >= 30.0
}

fn sweep(t: &Table, axes: &[String], choice: &Choice) -> anyhow::Result<Vec<Panel>> {
    if axes.is_empty() {
        bail!("{}: a sweep with no axis column", t.source);
    }
    let varying: Vec<usize> = axes
        .iter()
        .map(|a| t.column(a))
        .collect::<anyhow::Result<Vec<_>>>()?
        .into_iter()
        .filter(|&i| distinct(t, i).len() > 1)
        .collect();
    let x = match &choice.x {
        Some(name) => t.column(name)?,
        // The numeric varying axis with the most values (the last of equals: sweeps put
        // the figure's x axis last or alone), else the first varying axis.
        None => varying
            .iter()
            .copied()
            .filter(|&i| distinct(t, i).iter().all(|c| c.num().is_some()))
            .max_by_key(|&i| distinct(t, i).len())
            .or_else(|| varying.first().copied())
            .unwrap_or(t.column(&axes[0])?),
    };
    let groups: Vec<usize> = varying.iter().copied().filter(|&i| i != x).collect();
    let xs = distinct(t, x);
    let numeric = xs.iter().all(|c| c.num().is_some());
    let x_axis = if numeric {
        XAxis::Numeric {
            log: log_wanted(&xs.iter().filter_map(Cell::num).collect::<Vec<_>>()),
        }
    } else {
        XAxis::Categories(xs.iter().map(ToString::to_string).collect())
    };
    let x_of = |c: &Cell| -> f64 {
        c.num()
            .unwrap_or_else(|| xs.iter().position(|v| v == c).unwrap_or(0) as f64)
    };
    let ys = y_columns(t, choice, &["throughput_iops", "mean_ms"])?;
    // One series per combination of the other varying axes, in first-seen order.
    // A word (a compound axis's label, a scheduler) names itself; a number says whose it is
    // by the key's last part (`queue_depth=8`).
    let key = |r: &[Cell]| -> String {
        let parts: Vec<String> = groups
            .iter()
            .map(|&g| match &r[g] {
                Cell::Text(v) => v.clone(),
                v => {
                    let name = &t.columns[g];
                    format!("{}={v}", name.rsplit('.').next().unwrap_or(name))
                }
            })
            .collect();
        parts.join(", ")
    };
    let mut keys: Vec<String> = Vec::new();
    for r in &t.rows {
        let k = key(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut panels = Vec::new();
    for &y in &ys {
        let series = keys
            .iter()
            .map(|k| {
                let mut points: Vec<Point> = t
                    .rows
                    .iter()
                    .filter(|r| &key(r) == k)
                    .filter_map(|r| {
                        Some(Point {
                            x: x_of(&r[x]),
                            y: r[y].num()?,
                            saturated: flag(t, r, "saturated", true),
                            backlog_grows: flag(t, r, "sustainable", false),
                        })
                    })
                    .collect();
                points.sort_by(|a, b| a.x.total_cmp(&b.x));
                Series {
                    label: if k.is_empty() {
                        label(&t.columns[y])
                    } else {
                        k.clone()
                    },
                    points,
                    line: true,
                    markers: true,
                    dashed: false,
                }
            })
            .collect();
        panels.push(Panel {
            x_label: label(&t.columns[x]),
            y_label: label(&t.columns[y]),
            x: x_axis.clone(),
            y_log: false,
            series,
        });
    }
    check_points(t, &panels)?;
    Ok(panels)
}

fn run(t: &Table, choice: &Choice) -> anyhow::Result<Vec<Panel>> {
    let x = t.column(choice.x.as_deref().unwrap_or("label"))?;
    let names: Vec<String> = t.rows.iter().map(|r| r[x].to_string()).collect();
    let ys = y_columns(t, choice, &["throughput_iops", "mean_ms"])?;
    let panels: Vec<Panel> = ys
        .iter()
        .map(|&y| Panel {
            x_label: if t.columns[x] == "label" {
                "configuration".to_string()
            } else {
                label(&t.columns[x])
            },
            y_label: label(&t.columns[y]),
            x: XAxis::Categories(names.clone()),
            y_log: false,
            series: vec![Series {
                label: label(&t.columns[y]),
                points: t
                    .rows
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| {
                        Some(Point {
                            x: i as f64,
                            y: r[y].num()?,
                            saturated: flag(t, r, "saturated", true),
                            backlog_grows: flag(t, r, "sustainable", false),
                        })
                    })
                    .collect(),
                line: false,
                markers: true,
                dashed: false,
            }],
        })
        .collect();
    check_points(t, &panels)?;
    Ok(panels)
}

fn series(t: &Table, choice: &Choice) -> anyhow::Result<Vec<Panel>> {
    let x = t.column(choice.x.as_deref().unwrap_or("t_s"))?;
    let config = t.column("config")?;
    let mut default = vec!["outstanding", "backlog_ops"];
    let occ = t.column("occupancy")?;
    if t.rows.iter().any(|r| r[occ].num().is_some()) {
        default.push("occupancy");
    }
    let ys = y_columns(t, choice, &default)?;
    let configs = distinct(t, config);
    let panels: Vec<Panel> = ys
        .iter()
        .map(|&y| Panel {
            x_label: label(&t.columns[x]),
            y_label: label(&t.columns[y]),
            x: XAxis::Numeric { log: false },
            y_log: false,
            series: configs
                .iter()
                .map(|c| Series {
                    label: c.to_string(),
                    points: thin(
                        t.rows
                            .iter()
                            .filter(|r| &r[config] == c)
                            .filter_map(|r| {
                                Some(Point {
                                    x: r[x].num()?,
                                    y: r[y].num()?,
                                    saturated: false,
                                    backlog_grows: false,
                                })
                            })
                            .collect(),
                    ),
                    line: true,
                    markers: false,
                    dashed: false,
                })
                .collect(),
        })
        .collect();
    check_points(t, &panels)?;
    Ok(panels)
}

/// Points a time-series curve keeps at most; a long run samples far more than a figure's
/// width shows.
const MAX_SERIES_POINTS: usize = 2400;

/// Thins a long series to at most [`MAX_SERIES_POINTS`], keeping in each of 600 equal runs
/// its first, lowest, highest and last sample in time order: the envelope (every peak and
/// trough) stays, only points hidden inside a pixel column go.
fn thin(points: Vec<Point>) -> Vec<Point> {
    if points.len() <= MAX_SERIES_POINTS {
        return points;
    }
    let per = points.len().div_ceil(MAX_SERIES_POINTS / 4);
    let mut out = Vec::with_capacity(MAX_SERIES_POINTS);
    for chunk in points.chunks(per) {
        let lowest = chunk
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.y.total_cmp(&b.1.y));
        let highest = chunk
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.y.total_cmp(&b.1.y));
        let mut keep = vec![0, chunk.len() - 1];
        keep.extend(lowest.map(|(i, _)| i));
        keep.extend(highest.map(|(i, _)| i));
        keep.sort_unstable();
        keep.dedup();
        out.extend(keep.into_iter().map(|i| chunk[i].clone()));
    }
    out
}

/// Measured and simulated service-time CDFs on a log time axis (service times span
/// decades: track-buffer hits at tenths of a ms, full rotations and seeks at tens).
fn cdf(t: &Table, choice: &Choice) -> anyhow::Result<Vec<Panel>> {
    let x = t.column(choice.x.as_deref().unwrap_or("edge_ms"))?;
    let ys = y_columns(t, choice, &["measured_cdf", "simulated_cdf"])?;
    let series: Vec<Series> = ys
        .iter()
        .enumerate()
        .map(|(k, &y)| {
            let all: Vec<(f64, f64)> = t
                .rows
                .iter()
                .filter_map(|r| Some((r[x].num()?, r[y].num()?)))
                .collect();
            let name = t.columns[y].trim_end_matches("_cdf").to_string();
            let label = match name.as_str() {
                "simulated" => "simulated (spindle)".to_string(),
                "measured" => "measured (real drive)".to_string(),
                _ => name,
            };
            cdf_series(label, &all, k > 0)
        })
        .collect();
    let mut panel = cdf_panel(series);
    panel.x_label = label(&t.columns[x]);
    let panels = vec![panel];
    check_points(t, &panels)?;
    Ok(panels)
}

/// One CDF curve from its (time, fraction) points: from the last point at 0 to the first at
/// 1, interior points of flat runs dropped (the same curve with a few hundred points instead
/// of 1750 histogram rows); times at or below 0 cannot stand on a log axis.
pub fn cdf_series(label: String, all: &[(f64, f64)], dashed: bool) -> Series {
    let all: Vec<(f64, f64)> = all.iter().copied().filter(|&(x, _)| x > 0.0).collect();
    let first = all.iter().rposition(|&(_, y)| y <= 0.0).unwrap_or(0);
    let last = all
        .iter()
        .position(|&(_, y)| y >= 1.0)
        .unwrap_or(all.len().saturating_sub(1));
    let span = all.get(first..=last).unwrap_or(&[]);
    let points = span
        .iter()
        .enumerate()
        .filter(|&(i, &(_, y))| {
            i == 0 || i + 1 == span.len() || span[i - 1].1 != y || span[i + 1].1 != y
        })
        .map(|(_, &(x, y))| Point {
            x,
            y,
            saturated: false,
            backlog_grows: false,
        })
        .collect();
    Series {
        label,
        points,
        line: true,
        markers: false,
        dashed,
    }
}

/// The panel of service-time CDFs (`validate --out`'s figure and a `.cdf.csv`'s).
pub fn cdf_panel(series: Vec<Series>) -> Panel {
    Panel {
        x_label: label("edge_ms"),
        y_label: "fraction of requests".to_string(),
        x: XAxis::Numeric { log: true },
        y_log: false,
        series,
    }
}

/// A figure with nothing to draw is an error, not an empty picture.
fn check_points(t: &Table, panels: &[Panel]) -> anyhow::Result<()> {
    for p in panels {
        if p.series.iter().all(|s| s.points.is_empty()) {
            return Err(anyhow!(
                "{}: no numeric values to plot for {:?} against {:?}",
                t.source,
                p.y_label,
                p.x_label
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::results::parse;
    use super::*;

    #[test]
    fn a_sweep_plots_its_numeric_axis_with_one_series_per_configuration() {
        let t = parse(
            "config,Q,throughput_iops,mean_ms,saturated,sustainable\n\
             SATF,1,100,10,false,true\nSATF,32,300,20,true,true\n\
             LOOK,1,90,11,false,true\nLOOK,32,250,30,false,false\n",
            "s.csv",
        )
        .unwrap();
        let f = build(&t, &Choice::default()).unwrap();
        assert_eq!(f.panels.len(), 2);
        let p = &f.panels[0];
        assert_eq!(
            p.x,
            XAxis::Numeric { log: true },
            "1..32 spans a factor of 32"
        );
        assert_eq!(p.x_label, "Q");
        assert_eq!(p.y_label, "throughput (IOPS)");
        let labels: Vec<&str> = p.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["SATF", "LOOK"]);
        let by_q = build(
            &t,
            &Choice {
                x: Some("config".into()),
                ..Choice::default()
            },
        )
        .unwrap();
        let labels: Vec<&str> = by_q.panels[0]
            .series
            .iter()
            .map(|s| s.label.as_str())
            .collect();
        assert_eq!(labels, ["Q=1", "Q=32"]);
        assert!(p.series[0].points[1].saturated && !p.series[0].points[0].saturated);
        assert!(p.series[1].points[1].backlog_grows);
        assert!(f.any_saturated() && f.any_backlog_grows());
        let e = build(
            &t,
            &Choice {
                y: vec!["p42_ms".into()],
                ..Choice::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("s.csv: no column \"p42_ms\""), "{e}");
    }

    #[test]
    fn a_long_series_is_thinned_keeping_its_extremes() {
        let points: Vec<Point> = (0..100_000)
            .map(|i| Point {
                x: f64::from(i),
                y: if i == 54_321 {
                    1e6
                } else if i == 7 {
                    -5.0
                } else {
                    f64::from(i % 10)
                },
                saturated: false,
                backlog_grows: false,
            })
            .collect();
        let thinned = thin(points);
        assert!(thinned.len() <= MAX_SERIES_POINTS, "{}", thinned.len());
        assert!(thinned.iter().any(|p| p.y == 1e6) && thinned.iter().any(|p| p.y == -5.0));
        assert_eq!(thinned.first().unwrap().x, 0.0);
        assert_eq!(thinned.last().unwrap().x, 99_999.0);
        assert!(
            thinned.windows(2).all(|w| w[0].x < w[1].x),
            "time order kept"
        );
    }

    #[test]
    fn labels_carry_units() {
        assert_eq!(label("mean_ms"), "mean latency (ms)");
        assert_eq!(label("workload.rate_iops"), "workload.rate_iops (IOPS)");
        assert_eq!(label("dr_batch_interval_s"), "dr_batch_interval_s (s)");
    }
}
