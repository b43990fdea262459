//! `spindle sweep FILE [--set key=value]… [--csv|--json] [--jobs N]`: an experiment over the
//! Cartesian product of its `[[axis]]` tables (docs/sweep.md), the points run in parallel,
//! one row per point in point order.

use crate::{progress, replay, run_cmd::reader_relative_to};
use anyhow::Context;
use clap::Args;
use rayon::prelude::*;
use spindle::config::ConfigError;
use spindle::metrics::Report;
use spindle::sweep::{Sweep, HEADLINE_FIELDS, STATE_FIELDS};
use std::fmt::Write as _;
use std::io::Write;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct SweepArgs {
    /// Sweep file: an experiment plus [[axis]] tables (docs/sweep.md).
    file: PathBuf,
    /// Override a key of the base experiment, e.g. `--set run.requests=20000`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// One JSON object per point per line (JSON Lines; fields in docs/sweep.md).
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// CSV: a header and one line per point.
    #[arg(long)]
    csv: bool,
    /// Points simulated at once (default: one per core; at most 4 per core and one per point).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<NonZeroUsize>,
}

pub fn run(args: SweepArgs, quiet: bool) -> anyhow::Result<()> {
    let path = &args.file;
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let sweep = Sweep::parse(&text, &path.display().to_string(), &args.sets)?;
    let base = path.parent().map(Path::to_path_buf);
    let read_file = reader_relative_to(base.as_deref());
    let open_trace = replay::opener(base.as_deref());
    let open_validate = crate::validate_cmd::opener(base.as_deref());
    let n = sweep.len();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs(args.jobs, n))
        .build()
        .context("starting the worker threads")?;

    // Every point is checked before any runs: a bad value in the last point fails at once.
    let checked: Vec<Result<(), ConfigError>> = pool.install(|| {
        (0..n)
            .into_par_iter()
            .map(|i| {
                sweep
                    .point(i)?
                    .check(&read_file, &open_trace, &open_validate)
                    .map_err(|e| sweep.point_error(i, e))
            })
            .collect()
    });
    if let Some(Err(e)) = checked.into_iter().find(Result::is_err) {
        return Err(e.into());
    }

    let bar = progress::bar(Some(n as u64), quiet, "sweeping");
    let started = std::time::Instant::now();
    let results = run_points(&sweep, base.as_deref(), &pool, &|| bar.inc(1));
    bar.finish_and_clear();
    let reports = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    let simulated = reports
        .iter()
        .flat_map(Report::rows)
        .map(|r| r.requests_issued)
        .sum();
    progress::report_speed(
        quiet,
        simulated,
        started.elapsed(),
        pool.current_num_threads(),
    );

    let out = if args.json {
        to_json_lines(&sweep, &reports)
    } else if args.csv {
        to_csv(&sweep, &reports)
    } else {
        to_table(&sweep, &reports)
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    for (i, r) in reports.iter().enumerate() {
        for w in r.warnings() {
            let at: Vec<String> = sweep
                .axis_points(i)
                .into_iter()
                .zip(&sweep.axes)
                .map(|(p, a)| format!("{}={}", a.name, p.shown))
                .collect();
            eprintln!("{} (point {}: {})", w, i + 1, at.join(", "));
        }
    }
    Ok(())
}

/// Worker threads for `points` points: `--jobs` or one per core, at most 4 per core (more
/// only adds threads waiting for a core) and no more than the points; a capped `--jobs`
/// says so on stderr.
fn jobs(asked: Option<NonZeroUsize>, points: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let max = cores.saturating_mul(4);
    let jobs = asked
        .map_or(cores, NonZeroUsize::get)
        .min(max)
        .min(points.max(1));
    if let Some(asked) = asked.filter(|a| a.get() > jobs) {
        eprintln!(
            "spindle: --jobs {asked}: running {jobs} at once (at most 4 per core on {cores} cores, and one per point of {points})"
        );
    }
    jobs
}

/// Runs every point of `sweep` on `pool`'s workers and returns the reports in point order;
/// `done` is called as each point ends. The costliest points start first, each worker taking
/// the next point in that order when it is free (rayon's splitting of the index range would
/// leave the order to chance: slow eager-writing points landing last kept the other workers
/// idle). Files are named relative to `base`.
pub fn run_points(
    sweep: &Sweep,
    base: Option<&Path>,
    pool: &rayon::ThreadPool,
    done: &(dyn Fn() + Sync),
) -> Vec<Result<Report, ConfigError>> {
    let read_file = reader_relative_to(base);
    let open_trace = replay::opener(base);
    let open_validate = crate::validate_cmd::opener(base);
    let order = sweep.longest_first();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Result<Report, ConfigError>>>> = (0..sweep.len())
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    pool.scope(|s| {
        for _ in 0..pool.current_num_threads() {
            s.spawn(|_| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&i) = order.get(k) else {
                    break;
                };
                let report = sweep.point(i).and_then(|p| {
                    p.run_with(
                        &read_file,
                        &open_trace,
                        &open_validate,
                        &mut |_, _, _, _| {},
                    )
                    .map_err(|e| sweep.point_error(i, e))
                });
                done();
                *slots[i].lock().expect("a worker panicked") = Some(report);
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .expect("a worker panicked")
                .expect("every point ran")
        })
        .collect()
}

/// The headline numbers of a report, in [`HEADLINE_FIELDS`] order.
fn headline(r: &Report) -> [f64; 9] {
    let l = &r.latency.all;
    [
        r.throughput_iops,
        r.throughput_mb_s,
        l.mean_ms,
        l.p50_ms,
        l.p95_ms,
        l.p99_ms,
        r.mean_utilization(),
        r.breakdown_ms.seek,
        r.breakdown_ms.rotation,
    ]
}

/// One row per point: the axis values, then the headline numbers.
fn to_table(sweep: &Sweep, reports: &[Report]) -> String {
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
        let [iops, mb, mean, p50, p95, p99, util, seek, rot] = headline(r);
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
            let [saving, _, imm, _, acc, interval, _, worst, ..] = dr_values(r);
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
        let _ = writeln!(s, "{}{}", cells.join("  "), r.flags());
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
fn to_csv(sweep: &Sweep, reports: &[Report]) -> String {
    let mut header: Vec<String> = sweep.axes.iter().map(|a| csv_field(&a.name)).collect();
    header.extend(HEADLINE_FIELDS.iter().map(|f| f.to_string()));
    header.extend(STATE_FIELDS.iter().map(|f| f.to_string()));
    let energy = reports.iter().any(|r| r.energy.is_some());
    let dr = reports.iter().any(|r| r.dr.is_some());
    if energy {
        header.extend(ENERGY_FIELDS.iter().map(|f| f.to_string()));
    }
    if dr {
        header.extend(DR_FIELDS.iter().map(|f| f.to_string()));
    }
    let mut s = header.join(",") + "\n";
    for (i, r) in reports.iter().enumerate() {
        let mut cells: Vec<String> = sweep
            .axis_points(i)
            .into_iter()
            .map(|p| csv_field(&p.shown))
            .collect();
        let [iops, mb, mean, p50, p95, p99, util, seek, rot] = headline(r);
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
            cells.extend(dr_values(r).into_iter().map(opt));
        }
        let _ = writeln!(s, "{}", cells.join(","));
    }
    s
}

/// One JSON object per point per line: each axis's value under its name (a compound axis's
/// label), then [`HEADLINE_FIELDS`] and [`STATE_FIELDS`], in that order; with a write cache,
/// the report's `cache` and `disk_writes_per_host_write` after them; with power data, its
/// `energy`.
fn to_json_lines(sweep: &Sweep, reports: &[Report]) -> String {
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
        for (name, v) in HEADLINE_FIELDS.iter().zip(headline(r)) {
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
                .zip(dr_values(r))
                .map(|(k, v)| {
                    (
                        k.trim_start_matches("dr_").to_string(),
                        serde_json::json!(v),
                    )
                })
                .collect();
            let mut dr = dr;
            if let Some(i) = r.dr.as_ref().and_then(|d| d.infeasible.as_ref()) {
                dr.insert("infeasible".into(), serde_json::json!(i.reason));
            }
            fields.push(format!("\"dr\":{}", serde_json::Value::Object(dr)));
        }
        // A controller with a write cache (parity arrays): the report's cache fields too.
        if let Some(c) = &r.cache {
            let c = serde_json::to_string(c).unwrap_or_else(|_| "null".into());
            fields.push(format!("\"cache\":{c}"));
        }
        // A drive with power data: the report's energy (docs/power.md).
        if let Some(e) = &r.energy {
            let e = serde_json::to_string(e).unwrap_or_else(|_| "null".into());
            fields.push(format!("\"energy\":{e}"));
        }
        if let Some(d) = r.disk_writes_per_host_write {
            fields.push(format!(
                "\"disk_writes_per_host_write\":{}",
                serde_json::json!(d)
            ));
        }
        let _ = writeln!(s, "{{{}}}", fields.join(","));
    }
    s
}

/// CSV columns of a point's energy (when a drive has power data; docs/power.md).
const ENERGY_FIELDS: [&str; 4] = ["energy_j", "mean_w", "spin_ups", "spin_ups_per_day"];

/// CSV columns of a DR secondary's point (docs/dr.md); JSON `dr` has them without `dr_`.
const DR_FIELDS: [&str; 10] = [
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

    fn report(iops: f64) -> Report {
        let mut r = Report {
            throughput_iops: iops,
            throughput_mb_s: iops * 4096.0 / 1e6,
            sustainable: true,
            ..Report::default()
        };
        r.latency.all.mean_ms = 1000.0 / iops;
        r
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
        let reports: Vec<Report> = (1..=4).map(|i| report(100.0 * f64::from(i))).collect();
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
        let reports: Vec<Report> = (1..=4).map(|i| report(100.0 * f64::from(i))).collect();
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
        let reports: Vec<Report> = (1..=4).map(|i| report(100.0 * f64::from(i))).collect();
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
