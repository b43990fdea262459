//! `spindle calibrate TARGET -o DRIVE.toml`: a drive model measured from request timing
//! (docs/calibrate.md; the work is `spindle_emu::calibrate`).

use anyhow::Context;
use clap::Args;
use spindle_emu::calibrate::{self, output, Event, Options};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct CalibrateArgs {
    /// `nbd://host[:port][/export]`, `nbd+unix:///export?socket=PATH`, a block device or a
    /// file. Only read, one request at a time.
    pub target: String,
    /// Write the drive file here (atomically).
    #[arg(short, long)]
    pub output: PathBuf,
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
    /// Time requests from a SCHED_FIFO thread (root or CAP_SYS_NICE), as `serve --realtime`.
    #[arg(long)]
    pub realtime: bool,
    /// Also write every measurement (the state) as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub fn run(args: CalibrateArgs, quiet: bool) -> anyhow::Result<()> {
    if !(args.rotation_secs.is_finite() && args.rotation_secs >= 0.0) {
        anyhow::bail!("--rotation-secs must be >= 0, got {}", args.rotation_secs);
    }
    let opts = Options {
        rotation_budget: Duration::from_secs_f64(args.rotation_secs),
        zones_max: args.zones.unwrap_or(usize::MAX),
        no_seek: args.no_seek,
        state: args.resume.clone(),
        realtime: args.realtime,
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
    crate::output::write_atomically(&args.output, text.as_bytes())?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&m)?;
        crate::output::write_atomically(path, json.as_bytes())?;
    }
    let secs: f64 = m.seconds.iter().map(|s| s.1).sum();
    eprintln!(
        "calibrated {} in {secs:.1} s ({} reads): wrote {}",
        args.target,
        m.reads,
        args.output.display()
    );
    Ok(())
}
