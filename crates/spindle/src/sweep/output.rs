//! A sweep's results as text (`spindle sweep` and the Python package print the same): a
//! table, CSV, or JSON Lines, one row per point in point order (fields in docs/sweep.md).
//!
//! Each point's result is a [`PointResult`]: the numbers the rows show, taken from its
//! report. It is what a point sends back when it runs elsewhere (a Ray task): it serializes
//! with serde, and the text of a sweep depends on nothing else, so points run anywhere print
//! the same bytes.

use super::{Sweep, HEADLINE_FIELDS, STATE_FIELDS};
use crate::metrics::Report;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// What a sweep prints of one point's report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// The report's numbers in [`HEADLINE_FIELDS`] order.
    pub headline: [f64; 9],
    pub offered_iops: Option<f64>,
    pub achieved_iops: Option<f64>,
    pub saturated: bool,
    pub sustainable: bool,
    /// The report's flags (` SATURATED`…), as the table shows them.
    pub flags: String,
    /// A drive with power data: the window's energy (docs/power.md).
    pub energy: Option<PointEnergy>,
    /// The same energy as the report's JSON prints it.
    pub energy_json: Option<String>,
    /// A controller with a write cache: the report's `cache`, as JSON.
    pub cache_json: Option<String>,
    pub disk_writes_per_host_write: Option<Option<f64>>,
    /// A DR secondary (docs/dr.md).
    pub dr: Option<PointDr>,
    /// The report's warnings.
    pub warnings: Vec<String>,
    /// Requests issued over every row of the report (for the speed line).
    pub requests_issued: u64,
    /// The run gave up (`run.give_up_mean_ms`): the mean latency it proved.
    pub stopped_mean_ms_at_least: Option<f64>,
}

/// A point's energy (the CSV's [`ENERGY_FIELDS`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointEnergy {
    pub total_j: f64,
    pub mean_w: f64,
    pub spin_ups: u64,
    pub spin_ups_per_day: f64,
}

/// A DR secondary's point: its values in [`DR_FIELDS`] order and why it is infeasible.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointDr {
    pub values: [Option<f64>; 10],
    pub infeasible: Option<String>,
}

impl PointResult {
    /// The numbers a sweep prints of `r`.
    pub fn of(r: &Report) -> PointResult {
        let l = &r.latency.all;
        PointResult {
            headline: [
                r.throughput_iops,
                r.throughput_mb_s,
                l.mean_ms,
                l.p50_ms,
                l.p95_ms,
                l.p99_ms,
                r.mean_utilization(),
                r.breakdown_ms.seek,
                r.breakdown_ms.rotation,
            ],
            offered_iops: r.offered_iops,
            achieved_iops: r.achieved_iops,
            saturated: r.saturated,
            sustainable: r.sustainable,
            flags: r.flags(),
            energy: r.energy.as_ref().map(|e| PointEnergy {
                total_j: e.total_j,
                mean_w: e.mean_w,
                spin_ups: e.spin_ups,
                spin_ups_per_day: e.spin_ups_per_day,
            }),
            energy_json: r.energy.as_ref().map(json),
            cache_json: r.cache.as_ref().map(json),
            disk_writes_per_host_write: r.disk_writes_per_host_write,
            dr: r.dr.as_ref().map(|d| PointDr {
                values: dr_values(r),
                infeasible: d.infeasible.as_ref().map(|i| i.reason.clone()),
            }),
            warnings: r.warnings(),
            stopped_mean_ms_at_least: r.stopped.as_ref().map(|x| x.mean_ms_at_least),
            requests_issued: r.rows().map(|r| r.requests_issued).sum(),
        }
    }

    /// The DR values in [`DR_FIELDS`] order (all None for other points).
    pub fn dr_values(&self) -> [Option<f64>; 10] {
        self.dr.as_ref().map_or([None; 10], |d| d.values)
    }
}

/// A part of the report as the JSON Lines print it.
fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

/// The output formats of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    JsonLines,
}

impl Format {
    /// `"table"`, `"csv"` or `"json"`.
    pub fn parse(name: &str) -> Option<Format> {
        match name {
            "table" => Some(Format::Table),
            "csv" => Some(Format::Csv),
            "json" | "jsonl" => Some(Format::JsonLines),
            _ => None,
        }
    }
}

/// The sweep's results in `format`.
pub fn format(sweep: &Sweep, results: &[PointResult], format: Format) -> String {
    match format {
        Format::Table => to_table(sweep, results),
        Format::Csv => to_csv(sweep, results),
        Format::JsonLines => to_json_lines(sweep, results),
    }
}

/// The warnings of every point, each naming its point.
pub fn warnings(sweep: &Sweep, results: &[PointResult]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, r) in results.iter().enumerate() {
        for w in &r.warnings {
            let at: Vec<String> = sweep
                .axis_points(i)
                .into_iter()
                .zip(&sweep.axes)
                .map(|(p, a)| format!("{}={}", a.name, p.shown))
                .collect();
            out.push(format!("{} (point {}: {})", w, i + 1, at.join(", ")));
        }
    }
    out
}

/// One row per point: the axis values, then the headline numbers.
pub fn to_table(sweep: &Sweep, reports: &[PointResult]) -> String {
    let rows: Vec<Vec<&str>> = (0..reports.len())
        .map(|i| {
            sweep
                .axis_points(i)
                .into_iter()
                .map(|p| p.shown.as_str())
                .collect()
        })
        .collect();
    let widths: Vec<usize> = sweep
        .axes
        .iter()
        .enumerate()
        .map(|(a, axis)| {
            rows.iter()
                .map(|r| r[a].chars().count())
                .chain([axis.name.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
    let mut s = String::new();
    let names: Vec<&str> = sweep.axes.iter().map(|a| a.name.as_str()).collect();
    let _ = writeln!(
        s,
        "sweep of {} points over {}",
        reports.len(),
        names.join(" × ")
    );
    let mut header: Vec<String> = names.iter().zip(&widths).map(|(n, &w)| pad(n, w)).collect();
    header.push(format!(
        "{:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>6} {:>7} {:>7}",
        "IOPS", "MB/s", "mean ms", "p50", "p95", "p99", "util", "seek", "rot"
    ));
    let flagged = reports.iter().any(|r| r.saturated || !r.sustainable);
    let energy = reports.iter().any(|r| r.energy.is_some());
    let dr = reports.iter().any(|r| r.dr.is_some());
    if energy {
        header.push(format!(
            "{:>12} {:>8} {:>9}",
            "energy J", "mean W", "ups/day"
        ));
    }
    if dr {
        header.push(format!(
            "{:>7} {:>8} {:>8} {:>9} {:>9}",
            "saving", "imm W", "R_apl/g", "batch s", "worst s"
        ));
    }
    let _ = writeln!(s, "{}", header.join("  "));
    for (row, r) in rows.iter().zip(reports) {
        let [iops, mb, mean, p50, p95, p99, util, seek, rot] = r.headline;
        let mut cells: Vec<String> = row.iter().zip(&widths).map(|(v, &w)| pad(v, w)).collect();
        cells.push(format!(
            "{iops:>10.1} {mb:>8.3} {mean:>9.3} {p50:>9.3} {p95:>9.3} {p99:>9.3} {:>5.1}% {seek:>7.3} {rot:>7.3}",
            100.0 * util,
        ));
        if energy {
            cells.push(match &r.energy {
                Some(e) => format!(
                    "{:>12.1} {:>8.2} {:>9.1}",
                    e.total_j, e.mean_w, e.spin_ups_per_day
                ),
                None => format!("{:>12} {:>8} {:>9}", "-", "-", "-"),
            });
        }
        if dr {
            let [saving, _, imm, _, acc, interval, _, worst, ..] = r.dr_values();
            let cell = |v: Option<f64>, scale: f64, digits: usize| {
                v.map_or("-".to_string(), |v| format!("{:.*}", digits, v * scale))
            };
            cells.push(format!(
                "{:>6}% {:>8} {:>8} {:>9} {:>9}",
                cell(saving, 100.0, 1),
                cell(imm, 1.0, 2),
                cell(acc, 1.0, 1),
                cell(interval, 1.0, 0),
                cell(worst, 1.0, 2)
            ));
        }
        let _ = writeln!(s, "{}{}", cells.join("  "), r.flags);
    }
    let _ = writeln!(
        s,
        "(latency in ms over each point's measured requests; util = mean disk utilisation; \
         seek, rot = mean ms per request)"
    );
    if energy {
        let _ = writeln!(
            s,
            "(energy over each point's window, all disks; mean W = energy / window; ups/day = \
             spin-ups per day of the window — docs/power.md)"
        );
    }
    if dr {
        let _ = writeln!(
            s,
            "(DR secondary: saving = 1 - deferred / immediate mean power of the data volume; \
             imm W = the immediate secondary's; R_apl/g = R_apl / R_gen; batch s = mean batch \
             interval; worst s = worst recovery time — docs/dr.md)"
        );
    }
    if flagged {
        let _ = writeln!(
            s,
            "(SATURATED: the array fell behind its arrivals; BACKLOG GROWS: deferred work grew \
             over the window, not sustainable at this load — docs/report.md)"
        );
    }
    s
}

/// A header (the axis names, then [`HEADLINE_FIELDS`]) and one line per point.
pub fn to_csv(sweep: &Sweep, reports: &[PointResult]) -> String {
    let mut header: Vec<String> = sweep.axes.iter().map(|a| csv_field(&a.name)).collect();
    header.extend(HEADLINE_FIELDS.iter().map(|f| f.to_string()));
    header.extend(STATE_FIELDS.iter().map(|f| f.to_string()));
    let energy = reports.iter().any(|r| r.energy.is_some());
    let dr = reports.iter().any(|r| r.dr.is_some());
    let stopped = reports.iter().any(|r| r.stopped_mean_ms_at_least.is_some());
    if energy {
        header.extend(ENERGY_FIELDS.iter().map(|f| f.to_string()));
    }
    if dr {
        header.extend(DR_FIELDS.iter().map(|f| f.to_string()));
    }
    if stopped {
        header.push("stopped_mean_ms_at_least".into());
    }
    let mut s = header.join(",") + "\n";
    for (i, r) in reports.iter().enumerate() {
        let mut cells: Vec<String> = sweep
            .axis_points(i)
            .into_iter()
            .map(|p| csv_field(&p.shown))
            .collect();
        let [iops, mb, mean, p50, p95, p99, util, seek, rot] = r.headline;
        cells.extend([
            format!("{iops:.3}"),
            format!("{mb:.3}"),
            format!("{mean:.6}"),
            format!("{p50:.6}"),
            format!("{p95:.6}"),
            format!("{p99:.6}"),
            format!("{util:.6}"),
            format!("{seek:.6}"),
            format!("{rot:.6}"),
            r.offered_iops.map_or(String::new(), |v| format!("{v:.3}")),
            r.achieved_iops.map_or(String::new(), |v| format!("{v:.3}")),
            r.saturated.to_string(),
            r.sustainable.to_string(),
        ]);
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6}"));
        if energy {
            let e = r.energy.as_ref();
            cells.extend([
                opt(e.map(|e| e.total_j)),
                opt(e.map(|e| e.mean_w)),
                e.map_or(String::new(), |e| e.spin_ups.to_string()),
                opt(e.map(|e| e.spin_ups_per_day)),
            ]);
        }
        if dr {
            cells.extend(r.dr_values().into_iter().map(opt));
        }
        if stopped {
            cells.push(opt(r.stopped_mean_ms_at_least));
        }
        let _ = writeln!(s, "{}", cells.join(","));
    }
    s
}

/// One JSON object per point per line: each axis's value under its name (a compound axis's
/// label), then [`HEADLINE_FIELDS`] and [`STATE_FIELDS`], in that order; with a write cache,
/// the report's `cache` and `disk_writes_per_host_write` after them; with power data, its
/// `energy`.
pub fn to_json_lines(sweep: &Sweep, reports: &[PointResult]) -> String {
    let mut s = String::new();
    for (i, r) in reports.iter().enumerate() {
        let mut fields: Vec<String> = sweep
            .axis_points(i)
            .into_iter()
            .zip(&sweep.axes)
            .map(|(p, a)| {
                let value = serde_json::to_string(&p.value).unwrap_or_else(|_| "null".into());
                format!("{}:{value}", json_string(&a.name))
            })
            .collect();
        for (name, v) in HEADLINE_FIELDS.iter().zip(r.headline) {
            let v = serde_json::to_string(&v).unwrap_or_else(|_| "null".into());
            fields.push(format!("{}:{v}", json_string(name)));
        }
        let state = [
            serde_json::json!(r.offered_iops),
            serde_json::json!(r.achieved_iops),
            serde_json::json!(r.saturated),
            serde_json::json!(r.sustainable),
        ];
        for (name, v) in STATE_FIELDS.iter().zip(state) {
            fields.push(format!("{}:{v}", json_string(name)));
        }
        if r.dr.is_some() {
            let dr: serde_json::Map<String, serde_json::Value> = DR_FIELDS
                .iter()
                .zip(r.dr_values())
                .map(|(k, v)| {
                    (
                        k.trim_start_matches("dr_").to_string(),
                        serde_json::json!(v),
                    )
                })
                .collect();
            let mut dr = dr;
            if let Some(reason) = r.dr.as_ref().and_then(|d| d.infeasible.as_ref()) {
                dr.insert("infeasible".into(), serde_json::json!(reason));
            }
            fields.push(format!("\"dr\":{}", serde_json::Value::Object(dr)));
        }
        // A controller with a write cache (parity arrays): the report's cache fields too.
        if let Some(c) = &r.cache_json {
            fields.push(format!("\"cache\":{c}"));
        }
        // A drive with power data: the report's energy (docs/power.md).
        if let Some(e) = &r.energy_json {
            fields.push(format!("\"energy\":{e}"));
        }
        if let Some(d) = r.disk_writes_per_host_write {
            fields.push(format!(
                "\"disk_writes_per_host_write\":{}",
                serde_json::json!(d)
            ));
        }
        if let Some(b) = r.stopped_mean_ms_at_least {
            fields.push(format!(
                "\"stopped_mean_ms_at_least\":{}",
                serde_json::json!(b)
            ));
        }
        let _ = writeln!(s, "{{{}}}", fields.join(","));
    }
    s
}

/// CSV columns of a point's energy (when a drive has power data; docs/power.md).
pub const ENERGY_FIELDS: [&str; 4] = ["energy_j", "mean_w", "spin_ups", "spin_ups_per_day"];

/// CSV columns of a DR secondary's point (docs/dr.md); JSON `dr` has them without `dr_`.
pub const DR_FIELDS: [&str; 10] = [
    "dr_saving",
    "dr_deferred_mean_w",
    "dr_immediate_mean_w",
    "dr_rapl_mb_s",
    "dr_acceleration",
    "dr_batch_interval_s",
    "dr_closed_form_interval_s",
    "dr_worst_recovery_s",
    "dr_spin_ups_per_day",
    "dr_folded_share",
];

/// A DR point's values in [`DR_FIELDS`] order (all None for other points; the plan's None
/// when the point is infeasible).
fn dr_values(r: &Report) -> [Option<f64>; 10] {
    let Some(d) = &r.dr else {
        return [None; 10];
    };
    let p = d.plan.as_ref();
    [
        p.map(|p| p.energy.saving),
        p.map(|p| p.energy.deferred_mean_w),
        Some(d.immediate_mean_w),
        Some(d.rapl_mb_s).filter(|v| v.is_finite()),
        Some(d.acceleration).filter(|v| v.is_finite()),
        p.and_then(|p| p.mean_batch_interval_s),
        d.closed_form.as_ref().map(|c| c.batch_interval_s),
        p.map(|p| p.worst_recovery_s),
        p.map(|p| p.spin_ups_per_day),
        Some(d.folded_share),
    ]
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(iops: f64) -> PointResult {
        let mut r = Report {
            throughput_iops: iops,
            throughput_mb_s: iops * 4096.0 / 1e6,
            sustainable: true,
            ..Report::default()
        };
        r.latency.all.mean_ms = 1000.0 / iops;
        PointResult::of(&r)
    }

    fn sweep() -> Sweep {
        let text = "seed = 1\n[drive]\nmodel = \"st39133lwv\"\n[workload]\nkind = \"closed\"\n\
                    [[axis]]\nkey = \"workload.queue_depth\"\nvalues = [1, 2]\n\
                    [[axis]]\nname = \"cfg, \\\"quoted\\\"\"\npoints = [{ label = \"a,b\" }, { label = \"c\" }]\n";
        Sweep::parse(text, "t.toml", &[]).unwrap()
    }

    #[test]
    fn csv_quotes_names_and_labels_and_has_one_line_per_point() {
        let s = sweep();
        let reports: Vec<PointResult> = (1..=4).map(|i| report(100.0 * f64::from(i))).collect();
        let csv = to_csv(&s, &reports);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "workload.queue_depth,\"cfg, \"\"quoted\"\"\",throughput_iops,throughput_mb_s,mean_ms,p50_ms,p95_ms,p99_ms,utilization,seek_ms,rotation_ms,offered_iops,achieved_iops,saturated,sustainable"
        );
        assert_eq!(lines.len(), 5);
        assert!(lines[1].starts_with("1,\"a,b\",100.000,"), "{}", lines[1]);
        assert!(lines[4].starts_with("2,c,400.000,"), "{}", lines[4]);
    }

    #[test]
    fn json_lines_keep_axis_values_typed_and_fields_in_order() {
        let s = sweep();
        let reports: Vec<PointResult> = (1..=4).map(|i| report(100.0 * f64::from(i))).collect();
        let out = to_json_lines(&s, &reports);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(
            lines[1].starts_with("{\"workload.queue_depth\":1,\"cfg, \\\"quoted\\\"\":\"c\",\"throughput_iops\":200.0,"),
            "{}",
            lines[1]
        );
        let v: serde_json::Value = serde_json::from_str(lines[3]).unwrap();
        assert_eq!(v["workload.queue_depth"], 2);
        assert_eq!(v["mean_ms"], 2.5);
    }

    #[test]
    fn table_has_a_row_per_point_with_its_axis_values() {
        let s = sweep();
        let reports: Vec<PointResult> = (1..=4).map(|i| report(100.0 * f64::from(i))).collect();
        let t = to_table(&s, &reports);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 1 + 1 + 4 + 1);
        assert!(
            lines[1].starts_with("workload.queue_depth  cfg, \"quoted\"  "),
            "{t}"
        );
        assert!(
            lines[2].starts_with("1                     a,b             "),
            "{t}"
        );
        assert!(lines[5].contains("400.0"), "{t}");
    }
}
