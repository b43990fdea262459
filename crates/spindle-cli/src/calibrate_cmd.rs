//! `spindle calibrate TARGET -o DRIVE.toml`: a drive model measured from request timing;
//! `spindle calibrate TARGET --check DRIVE.toml`: its head tracking checked on a random
//! workload (docs/calibrate.md; the work is `spindle_emu::calibrate`).

use anyhow::Context;
use clap::Args;
use spindle_emu::calibrate::{self, check::CheckOptions, output, Event, Options};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct CalibrateArgs {
    /// `nbd://host[:port][/export]`, `nbd+unix:///export?socket=PATH`, a block device or a
    /// file. Only read, one request at a time.
    pub target: String,
    /// Write the drive file here (atomically).
    #[arg(
        short,
        long,
        required_unless_present = "check",
        conflicts_with = "check"
    )]
    pub output: Option<PathBuf>,
    /// Instead of calibrating: check this calibrated drive file's head tracking against
    /// TARGET — a random read workload, each request predicted (dissertation 3.3.2) and
    /// timed; prints the prediction-error statistics (table 3.2).
    #[arg(long, value_name = "DRIVE.toml")]
    pub check: Option<PathBuf>,
    /// --check: requests counted.
    #[arg(long, default_value_t = 2000, requires = "check")]
    pub requests: u64,
    /// --check: requests first, not counted (the tracker learns the host's delay and slack).
    #[arg(long, default_value_t = 200, requires = "check")]
    pub warmup: u64,
    /// --check: sectors per request.
    #[arg(long, default_value_t = 8, requires = "check")]
    pub sectors: u32,
    /// --check: the workload's seed.
    #[arg(long, default_value_t = 1, requires = "check")]
    pub seed: u64,
    /// The drive file's id.
    #[arg(long, default_value = "calibrated")]
    pub id: String,
    /// Seconds for the asynchronous rotation refinement (longer: a tighter bound).
    #[arg(long, default_value_t = 30.0)]
    pub rotation_secs: f64,
    /// Calibrate only the first N zones (a region: faster, the drive file covers only it).
    #[arg(long)]
    pub zones: Option<usize>,
    /// Skip the minimum-read-time (seek) profile.
    #[arg(long)]
    pub no_seek: bool,
    /// Save progress to STATE after each step; if STATE exists, resume from it.
    #[arg(long, value_name = "STATE")]
    pub resume: Option<PathBuf>,
    /// Allow writes (only inside --scratch): measures write overhead and settle and
    /// whether a volatile write cache answers writes. Without it nothing is written.
    #[arg(long, requires = "scratch", conflicts_with = "check")]
    pub allow_writes: bool,
    /// The LBAs (sectors) writes may overwrite, START..END (END excluded): their contents
    /// are lost. Only with --allow-writes.
    #[arg(long, value_name = "START..END", requires = "allow_writes", value_parser = parse_range)]
    pub scratch: Option<std::ops::Range<u64>>,
    /// Time requests from a SCHED_FIFO thread (root or CAP_SYS_NICE), as `serve --realtime`.
    #[arg(long)]
    pub realtime: bool,
    /// Also write every measurement (the state) as JSON here; with --check, the report
    /// (`-`: on stdout, instead of the table).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn parse_range(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("{s:?}: expected START..END (LBAs)"))?;
    let n = |x: &str| {
        x.trim()
            .replace('_', "")
            .parse::<u64>()
            .map_err(|e| format!("{s:?}: {x:?}: {e}"))
    };
    Ok(n(a)?..n(b)?)
}

fn check(args: &CalibrateArgs, drive_path: &Path, quiet: bool) -> anyhow::Result<()> {
    if args.requests == 0 || args.sectors == 0 {
        anyhow::bail!("--requests and --sectors must be >= 1");
    }
    let text = std::fs::read_to_string(drive_path)
        .with_context(|| format!("reading {}", drive_path.display()))?;
    let drive =
        spindle::drive::parse_drive(&text).with_context(|| format!("{}", drive_path.display()))?;
    let opts = CheckOptions {
        requests: args.requests,
        warmup: args.warmup,
        sectors: args.sectors,
        seed: args.seed,
        realtime: args.realtime,
    };
    let mut bar = crate::progress::bar(None, quiet, "checking");
    let mut events = |e: Event| match e {
        Event::Stage(name, total) => {
            bar.finish_and_clear();
            bar = crate::progress::bar((total > 0).then_some(total), quiet, name);
        }
        Event::Step => bar.inc(1),
        Event::Line(l) => bar.suspend(|| eprintln!("{l}")),
    };
    let name = drive_path.display().to_string();
    let r = calibrate::check::check(&args.target, drive, &name, &opts, &mut events)
        .with_context(|| format!("checking {} against {}", name, args.target))?;
    bar.finish_and_clear();
    let json = serde_json::to_string_pretty(&r)?;
    match &args.json {
        Some(p) if p.as_os_str() == "-" => {
            println!("{json}");
            return Ok(());
        }
        Some(p) => crate::output::write_atomically(p, json.as_bytes())?,
        None => {}
    }
    let a = &r.accuracy;
    let pct = |x: f64| format!("{:.2} %", 100.0 * x);
    let rows = [
        (
            "requests (after warm-up)",
            format!("{} (+{})", a.requests, r.warmup),
        ),
        (
            "rotation misses",
            format!(
                "{} ({}) late, {} ({}) early",
                a.misses,
                pct(a.misses as f64 / a.requests as f64),
                a.early,
                pct(a.early as f64 / a.requests as f64)
            ),
        ),
        (
            "mean prediction error",
            format!("{:.1} µs", a.mean_error_us),
        ),
        (
            "standard deviation of error",
            format!("{:.1} µs", a.stdev_error_us),
        ),
        (
            "|error| p50 / p90 / p99 / max",
            format!(
                "{:.1} / {:.1} / {:.1} / {:.1} µs",
                a.abs_error_p50_us, a.abs_error_p90_us, a.abs_error_p99_us, a.abs_error_max_us
            ),
        ),
        (
            "within ±100 / ±200 µs",
            format!("{} / {}", pct(a.within_100us), pct(a.within_200us)),
        ),
        (
            "average access time (measured / predicted)",
            format!("{:.1} / {:.1} µs", a.mean_service_us, a.mean_predicted_us),
        ),
        ("demerit", format!("{:.1} µs", a.demerit_us)),
        ("demerit / access time", pct(a.demerit_share)),
        (
            "|error| / access time (mean / median)",
            format!(
                "{} / {}",
                pct(a.mean_abs_rel_error),
                pct(a.median_abs_rel_error)
            ),
        ),
        (
            "slack at the end",
            match r.slack_us.is_empty() {
                true => "none".into(),
                false => r
                    .slack_us
                    .iter()
                    .map(|(c, s)| format!("{c} {s:.0} µs"))
                    .collect::<Vec<_>>()
                    .join(", "),
            },
        ),
        (
            "host delay fitted",
            format!(
                "{:.1} µs + {:.2} % of the access time",
                r.delay_constant_us,
                100.0 * r.delay_slope
            ),
        ),
        (
            "rotation (drive file / target)",
            format!(
                "{:.6} / {:.6} ms, interval noise {:.1} µs, {} anchors",
                r.period_ms, r.measured_period_ms, r.interval_sigma_us, r.anchors
            ),
        ),
    ];
    println!(
        "head tracking of {} on {} ({} random reads of {} sectors over LBAs 0..{}, seed {}):",
        r.drive, r.target, a.requests, r.sectors, r.region_sectors, r.seed
    );
    for (k, v) in rows {
        println!("  {k:<44} {v}");
    }
    Ok(())
}

pub fn run(args: CalibrateArgs, quiet: bool) -> anyhow::Result<()> {
    if let Some(drive) = &args.check {
        return check(&args, drive, quiet);
    }
    let output = args.output.clone().expect("clap: --output or --check");
    if !(args.rotation_secs.is_finite() && args.rotation_secs >= 0.0) {
        anyhow::bail!("--rotation-secs must be >= 0, got {}", args.rotation_secs);
    }
    let opts = Options {
        rotation_budget: Duration::from_secs_f64(args.rotation_secs),
        zones_max: args.zones.unwrap_or(usize::MAX),
        no_seek: args.no_seek,
        state: args.resume.clone(),
        realtime: args.realtime,
        scratch: args.scratch.clone().filter(|_| args.allow_writes),
    };
    let mut bar = crate::progress::bar(None, quiet, "calibrating");
    let mut events = |e: Event| match e {
        Event::Stage(name, total) => {
            bar.finish_and_clear();
            bar = crate::progress::bar((total > 0).then_some(total), quiet, name);
        }
        Event::Step => bar.inc(1),
        Event::Line(l) => bar.suspend(|| eprintln!("{l}")),
    };
    let m = calibrate::calibrate(&args.target, &opts, &mut events)
        .with_context(|| format!("calibrating {}", args.target))?;
    let text =
        output::drive_file(&m, &args.id).map_err(|e| anyhow::anyhow!("{}: {e}", args.target))?;
    crate::output::write_atomically(&output, text.as_bytes())?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&m)?;
        crate::output::write_atomically(path, json.as_bytes())?;
    }
    let secs: f64 = m.seconds.iter().map(|s| s.1).sum();
    eprintln!(
        "calibrated {} in {secs:.1} s ({} reads): wrote {}",
        args.target,
        m.reads,
        output.display()
    );
    Ok(())
}
