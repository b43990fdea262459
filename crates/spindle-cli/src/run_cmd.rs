//! `spindle run [FILE] [--set key=value]… [--json|--csv]`.

use crate::{progress, replay};
use anyhow::Context;
use clap::Args;
use spindle::config::{Experiment, DEFAULT_EXPERIMENT};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct RunArgs {
    /// Experiment file (TOML); absent: the built-in default experiment.
    file: Option<PathBuf>,
    /// Override a key of the experiment, e.g. `--set workload.queue_depth=8`. Without FILE,
    /// an `array.*` key makes the run one configuration: the built-in default's drive,
    /// workload and run with the array the overrides describe (no comparison rows).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Remove a key (or a whole table) of the experiment before the overrides, e.g.
    /// `--unset array.dd`; its default applies.
    #[arg(long = "unset", value_name = "KEY")]
    unsets: Vec<String>,
    /// Print an experiment file naming every key with its default, and exit.
    #[arg(long, conflicts_with_all = ["file", "sets", "unsets", "json", "csv", "series"])]
    print_config: bool,
    /// Print the report as one JSON object (fields in docs/report.md).
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print the report as CSV, one line per configuration.
    #[arg(long)]
    csv: bool,
    /// Write the array's state over virtual time to this CSV file (one row per sample per
    /// configuration: outstanding requests, deferred work, write-cache occupancy).
    #[arg(long, value_name = "FILE.csv")]
    series: Option<PathBuf>,
    /// The sampling interval of `--series`, in ms of virtual time (sets `run.series_ms`).
    #[arg(long, value_name = "MS", default_value_t = 100.0, requires = "series")]
    series_ms: f64,
}

pub use spindle_files::reader_relative_to;

/// The built-in default compares schedulers and arrays; `--set array.…` on it asks for one
/// array: its `[array]` table and `[[compare]]` rows give way to the overrides.
fn builtin_unsets(args: &RunArgs) -> Vec<String> {
    let array_set = args
        .sets
        .iter()
        .any(|s| s.trim_start().starts_with("array."));
    if args.file.is_none() && array_set {
        ["name", "array", "compare"].map(String::from).to_vec()
    } else {
        Vec::new()
    }
}

/// The label of the one row `--set array.…` on the built-in default runs.
pub const SET_ARRAY_LABEL: &str = "array from --set";

pub fn run(args: RunArgs, quiet: bool) -> anyhow::Result<()> {
    run_checked(args, quiet, false)
}

/// `spindle dr FILE`: [`run`] on an experiment whose workload is a disaster-recovery
/// secondary (`workload.kind = "dr"`, docs/dr.md).
pub fn run_dr(args: RunArgs, quiet: bool) -> anyhow::Result<()> {
    if args.file.is_none() && !args.print_config {
        anyhow::bail!(
            "spindle dr needs an experiment FILE with workload.kind = \"dr\" (docs/dr.md)"
        );
    }
    run_checked(args, quiet, true)
}

fn run_checked(args: RunArgs, quiet: bool, dr_only: bool) -> anyhow::Result<()> {
    if args.print_config {
        std::io::stdout()
            .lock()
            .write_all(spindle::config::template().as_bytes())?;
        return Ok(());
    }
    let (text, origin, base) = match &args.file {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
            (
                text,
                path.display().to_string(),
                path.parent().map(Path::to_path_buf),
            )
        }
        None => (
            DEFAULT_EXPERIMENT.to_string(),
            "built-in default experiment".to_string(),
            None,
        ),
    };
    let mut sets = args.sets.clone();
    if let Some(path) = &args.series {
        crate::output::check_writable(path)?;
        sets.push(format!("run.series_ms={}", args.series_ms));
    }
    let builtin = builtin_unsets(&args);
    let mut unsets = builtin.clone();
    unsets.extend(args.unsets.iter().filter(|u| !builtin.contains(u)).cloned());
    let mut exp = Experiment::parse_with(&text, &origin, &unsets, &sets)?;
    if !builtin.is_empty() && exp.spec.name.is_none() {
        exp.spec.name = Some(SET_ARRAY_LABEL.to_string());
    }
    if dr_only && exp.spec.workload.kind != spindle::config::WorkloadKind::Dr {
        return Err(exp
            .error(
                "workload.kind",
                "spindle dr runs a DR secondary: set kind = \"dr\" (docs/dr.md)",
            )
            .into());
    }
    let read_file = reader_relative_to(base.as_deref());
    let open_trace = replay::opener(base.as_deref());
    let open_validate = crate::validate_cmd::opener(base.as_deref());
    let bar = progress::bar(Some(0), quiet, "simulating");
    let started = std::time::Instant::now();
    let report = exp.run_with(
        &read_file,
        &open_trace,
        &open_validate,
        &mut |i, n, done, total| {
            if let Some(t) = total {
                bar.set_length(t);
            }
            bar.set_position(done);
            bar.set_message(format!("simulating {}/{}", i + 1, n));
        },
    )?;
    bar.finish_and_clear();
    // A DR secondary that cannot keep its RTO is refused (a sweep shows it as a row).
    if let Some(i) = report
        .rows()
        .find_map(|r| r.dr.as_ref().and_then(|d| d.infeasible.as_ref()))
    {
        return Err(exp.error(&i.key, i.reason.clone()).into());
    }
    let simulated = report.rows().map(|r| r.requests_issued).sum();
    progress::report_speed(quiet, simulated, started.elapsed(), 1);
    for w in report.warnings() {
        eprintln!("{w}");
    }
    let out = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else if args.csv {
        report.to_csv()
    } else {
        report.to_table()
    };
    if let Some(path) = &args.series {
        crate::output::write_atomically(path, series_csv(&report).as_bytes())?;
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(())
}

/// Every configuration's samples, one CSV row each (empty cells where a controller has
/// no write cache).
fn series_csv(report: &spindle::metrics::Report) -> String {
    let mut out = String::from(
        "config,t_s,outstanding,backlog_ops,nvram_entries,occupied_blocks,occupancy,overflows\n",
    );
    let opt = |v: Option<String>| v.unwrap_or_default();
    for r in report.rows() {
        let label = if r.label.contains([',', '"']) {
            format!("\"{}\"", r.label.replace('"', "\"\""))
        } else {
            r.label.clone()
        };
        for p in &r.series {
            out += &format!(
                "{label},{:.6},{},{},{},{},{},{}\n",
                p.t_s,
                p.outstanding,
                p.backlog_ops,
                p.nvram_entries,
                opt(p.occupied_blocks.map(|v| v.to_string())),
                opt(p.occupancy.map(|v| format!("{v:.6}"))),
                opt(p.overflows.map(|v| v.to_string())),
            );
        }
    }
    out
}
