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
    /// Override a key of the experiment, e.g. `--set workload.queue_depth=8`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Print the report as one JSON object (fields in docs/report.md).
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print the report as CSV, one line per configuration.
    #[arg(long)]
    csv: bool,
}

/// Reads a file named inside an experiment: relative paths are taken from the experiment
/// file's directory first, then from the working directory.
pub fn reader_relative_to(base: Option<&Path>) -> impl Fn(&str) -> Result<Vec<u8>, String> + '_ {
    move |name: &str| {
        let p = Path::new(name);
        let candidates: Vec<PathBuf> = match base {
            Some(dir) if p.is_relative() => vec![dir.join(p), p.to_path_buf()],
            _ => vec![p.to_path_buf()],
        };
        let found = candidates
            .iter()
            .find(|c| c.exists())
            .unwrap_or(&candidates[0]);
        std::fs::read(found).map_err(|e| format!("{}: {e}", found.display()))
    }
}

pub fn run(args: RunArgs, quiet: bool) -> anyhow::Result<()> {
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
    let exp = Experiment::parse(&text, &origin, &args.sets)?;
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
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(())
}
