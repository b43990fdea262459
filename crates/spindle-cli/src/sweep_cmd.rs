//! `spindle sweep FILE [--set key=value]… [--csv|--json] [--jobs N]`: an experiment over the
//! Cartesian product of its `[[axis]]` tables (docs/sweep.md), the points run in parallel,
//! one row per point in point order.

use crate::progress;
use anyhow::Context;
use clap::Args;
use spindle::sweep::{Format, PointResult, Sweep};
pub use spindle_files::run_points;
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
    /// Run the points as tasks on the Ray cluster at ADDRESS (`auto`, `host:port`, or
    /// `local` for a new local one) through the Python package (docs/python.md); the
    /// interpreter is `$SPINDLE_PYTHON`, else `python3`.
    #[arg(long, value_name = "ADDRESS", conflicts_with = "jobs")]
    ray: Option<String>,
}

pub fn run(args: SweepArgs, quiet: bool) -> anyhow::Result<()> {
    if let Some(address) = &args.ray {
        return run_on_ray(&args, address, quiet);
    }
    let path = &args.file;
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let sweep = Sweep::parse(&text, &path.display().to_string(), &args.sets)?;
    let base = path.parent().map(Path::to_path_buf);
    let n = sweep.len();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs(args.jobs, n))
        .build()
        .context("starting the worker threads")?;

    // Every point is checked before any runs: a bad value in the last point fails at once.
    spindle_files::check_points(&sweep, base.as_deref(), &pool)?;

    let bar = progress::bar(Some(n as u64), quiet, "sweeping");
    let started = std::time::Instant::now();
    let results = run_points(&sweep, base.as_deref(), &pool, &|| bar.inc(1));
    bar.finish_and_clear();
    let reports = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    let points: Vec<PointResult> = reports.iter().map(PointResult::of).collect();
    let simulated = points.iter().map(|p| p.requests_issued).sum();
    progress::report_speed(
        quiet,
        simulated,
        started.elapsed(),
        pool.current_num_threads(),
    );

    let out = spindle::sweep::format(&sweep, &points, format(&args));
    std::io::stdout().lock().write_all(out.as_bytes())?;
    for w in spindle::sweep::warnings(&sweep, &points) {
        eprintln!("{w}");
    }
    Ok(())
}

/// `--ray`: hands the sweep to the Python package (`python -m spindle.sweep_cli`), which
/// runs each point as a Ray task and prints this command's output; its exit status is ours.
fn run_on_ray(args: &SweepArgs, address: &str, quiet: bool) -> anyhow::Result<()> {
    let python = std::env::var("SPINDLE_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = std::process::Command::new(&python)
        .args(["-c", "import spindle.sweep_cli"])
        .output()
        .with_context(|| {
            format!("--ray needs Python with the spindle package: running {python}")
        })?;
    if !probe.status.success() {
        anyhow::bail!(
            "--ray needs the Python package spindle (and Ray) in {python}: see docs/python.md \
             ({})",
            String::from_utf8_lossy(&probe.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "spindle.sweep_cli"])
        .arg(&args.file)
        .args(["--ray", address]);
    for s in &args.sets {
        cmd.args(["--set", s]);
    }
    match format(args) {
        Format::Csv => {
            cmd.arg("--csv");
        }
        Format::JsonLines => {
            cmd.arg("--json");
        }
        Format::Table => {}
    }
    if quiet {
        cmd.arg("--quiet");
    }
    let status = cmd
        .status()
        .with_context(|| format!("running {python} -m spindle.sweep_cli"))?;
    if !status.success() {
        // The Python side printed why.
        std::process::exit(status.code().unwrap_or(2));
    }
    Ok(())
}

fn format(args: &SweepArgs) -> Format {
    if args.json {
        Format::JsonLines
    } else if args.csv {
        Format::Csv
    } else {
        Format::Table
    }
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
