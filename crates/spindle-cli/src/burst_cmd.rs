//! `spindle burst FILE [--set key=value]… [--start-s S] [--horizon-s S] [--cycles N]
//! [--resolution-ms MS] [--json]`: the shortest burst that overflows the write cache
//! (ISCA '95 fig. 11), for each configuration of the experiment.

use crate::{progress, replay, run_cmd};
use anyhow::Context;
use clap::Args;
use spindle::burst::{burst_tolerance, BurstSpec};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct BurstArgs {
    /// Experiment file (TOML) with a parity array and `kind = "groups"`.
    file: PathBuf,
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Seconds of background load before each burst.
    #[arg(long, default_value_t = 30.0)]
    start_s: f64,
    /// The longest burst tried (s); a cycle that has not overflowed by then is censored.
    #[arg(long, default_value_t = 60.0)]
    horizon_s: f64,
    /// Cycles (runs, seeds seed … seed + cycles − 1) averaged.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    cycles: u32,
    /// Sampling interval (ms): the lengths' resolution.
    #[arg(long, default_value_t = 10.0)]
    resolution_ms: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: BurstArgs, quiet: bool) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("{}", args.file.display()))?;
    let origin = args.file.display().to_string();
    let base = args.file.parent().map(Path::to_path_buf);
    let read_file = run_cmd::reader_relative_to(base.as_deref());
    let open_trace = replay::opener(base.as_deref());
    let spec = BurstSpec {
        start_s: args.start_s,
        horizon_s: args.horizon_s,
        cycles: args.cycles,
        resolution_ms: args.resolution_ms,
    };
    let bar = progress::bar(Some(u64::from(args.cycles)), quiet, "bursts");
    let rows = burst_tolerance(
        &text,
        &origin,
        &args.sets,
        spec,
        &read_file,
        &open_trace,
        &mut |done, _| bar.set_position(u64::from(done)),
    )?;
    bar.finish_and_clear();
    let out = if args.json {
        serde_json::to_string_pretty(&rows)? + "\n"
    } else {
        let mut s = format!(
            "shortest burst that overflows the write cache ({} cycles, burst after {} s, \
             resolution {} ms; '>' = none within {} s)\n{:<24} {:>10}  per cycle (s)\n",
            args.cycles,
            args.start_s,
            args.resolution_ms,
            args.horizon_s,
            "configuration",
            "mean s"
        );
        for r in &rows {
            let per: Vec<String> = r
                .lengths_s
                .iter()
                .map(|l| match l {
                    Some(v) => format!("{v:.2}"),
                    None => format!(">{}", args.horizon_s),
                })
                .collect();
            let mean = r.mean_s.map_or("-".to_string(), |m| format!("{m:.2}"));
            s += &format!("{:<24} {:>10}  {}", r.label, mean, per.join(" "));
            if r.overflowed_before > 0 {
                s += &format!(
                    "  ({} cycles overflowed before the burst: the background load is too high)",
                    r.overflowed_before
                );
            }
            s += "\n";
        }
        s
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(())
}
