//! `spindle bench`: the simulator's speed (simulated requests per wall-clock second, one
//! core) and peak memory on three standard scenarios on the Cheetah 9LP with random 4 KiB
//! requests, 60 % reads:
//!
//! - (a) closed loop, Q = 1, FCFS, 1,000,000 requests;
//! - (b) open-loop replay of a generated 1,000,000-line DiskSim ASCII trace whose Poisson
//!   arrival rate loads the disk to about 70 %, FCFS;
//! - (c) the same trace with SATF and a 16-deep queue: replayed with `max_outstanding = 16`
//!   and a speed-up large enough that the queue stays full, so every SATF decision weighs
//!   16 candidates.
//!
//! Each scenario runs in a child process (`spindle bench --scenario X`) so its peak resident
//! memory (VmHWM) is its own. Wall time counts the simulation, trace parsing included, not
//! the trace generation.

use anyhow::{bail, Context};
use clap::Args;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    /// Run one scenario in this process (a, b or c) and print its result as JSON.
    #[arg(long, hide = true)]
    scenario: Option<String>,
    /// The trace for scenarios b and c (generated when absent).
    #[arg(long, hide = true)]
    trace: Option<PathBuf>,
    /// Requests per scenario.
    #[arg(long, default_value_t = 1_000_000)]
    requests: u64,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize, Deserialize)]
struct Outcome {
    scenario: String,
    description: String,
    requests: u64,
    wall_s: f64,
    requests_per_s: f64,
    peak_rss_mb: f64,
    mean_latency_ms: f64,
    utilization: f64,
}

const DRIVE: &str = "cheetah9lp";

/// A one-disk experiment on the bench drive with warm-up and cool-down off.
fn experiment(scheduler: &str, workload: &str, requests: u64) -> String {
    format!(
        "seed = 1\n[drive]\nmodel = \"{DRIVE}\"\n[array]\ndisks = 1\nscheduler = \"{scheduler}\"\n\
         {workload}\n[run]\nrequests = {requests}\nwarmup_requests = 0\ncooldown_requests = 0\n"
    )
}

fn run_scenario(
    name: &str,
    trace: Option<&Path>,
    requests: u64,
    rate: f64,
) -> anyhow::Result<Outcome> {
    let trace_workload = |extra: &str| -> anyhow::Result<String> {
        let path = trace.context("scenarios b and c need --trace")?;
        Ok(format!("[workload]\nkind = \"trace\"\n[workload.trace]\npath = {:?}\nformat = \"disksim\"\n{extra}", path.display().to_string()))
    };
    let (text, description) = match name {
        "a" => (
            experiment(
                "fcfs",
                "[workload]\nkind = \"closed\"\nqueue_depth = 1\nread_fraction = 0.6",
                requests,
            ),
            "closed loop, Q=1, FCFS".to_string(),
        ),
        "b" => (
            experiment("fcfs", &trace_workload("")?, requests),
            format!("open-loop DiskSim trace replay at {rate:.0} IOPS (~70 % load), FCFS"),
        ),
        "c" => (
            experiment(
                "satf",
                &trace_workload("speedup = 1000.0\nmax_outstanding = 16\n")?,
                requests,
            ),
            "DiskSim trace replay, SATF, 16 outstanding".to_string(),
        ),
        other => bail!("unknown scenario {other:?}; use a, b or c"),
    };
    let exp = spindle::config::Experiment::parse(&text, &format!("bench scenario {name}"), &[])?;
    let read_file = crate::run_cmd::reader_relative_to(None);
    let open_trace = crate::replay::opener(None);
    let start = Instant::now();
    let report = exp.run(&read_file, &open_trace, &mut |_, _, _, _| {})?;
    let wall_s = start.elapsed().as_secs_f64();
    Ok(Outcome {
        scenario: name.to_string(),
        description,
        requests: report.requests_issued,
        wall_s,
        requests_per_s: report.requests_issued as f64 / wall_s,
        peak_rss_mb: peak_rss_mb(),
        mean_latency_ms: report.latency.all.mean_ms,
        utilization: report.mean_utilization(),
    })
}

/// Peak resident set of this process (Linux VmHWM), in MB; 0 where unavailable.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(str::to_string)
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Writes `n` random 4 KiB requests, 60 % reads, Poisson at `rate` IOPS, as DiskSim ASCII.
fn generate_trace(path: &Path, n: u64, rate: f64, capacity_sectors: u64) -> anyhow::Result<()> {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(42);
    let file = std::fs::File::create(path).with_context(|| format!("{}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let mut t_ms = 0.0f64;
    let slots = capacity_sectors / 8;
    for _ in 0..n {
        let u: f64 = rng.gen::<f64>().max(f64::MIN_POSITIVE);
        t_ms += -u.ln() / rate * 1e3;
        let lba = rng.gen_range(0..slots) * 8;
        let flags = if rng.gen::<f64>() < 0.6 { 1 } else { 0 };
        writeln!(w, "{t_ms:.6} 0 {lba} 8 {flags}")?;
    }
    w.flush()?;
    Ok(())
}

pub fn run(args: BenchArgs, quiet: bool) -> anyhow::Result<()> {
    if let Some(s) = &args.scenario {
        let rate = std::env::var("SPINDLE_BENCH_RATE")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(0.0);
        let out = run_scenario(s, args.trace.as_deref(), args.requests, rate)?;
        println!("{}", serde_json::to_string(&out)?);
        return Ok(());
    }
    let exe = std::env::current_exe().context("locating the spindle binary")?;
    let child = |scenario: &str, trace: Option<&Path>, rate: f64| -> anyhow::Result<Outcome> {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args([
            "bench",
            "--scenario",
            scenario,
            "--requests",
            &args.requests.to_string(),
        ]);
        cmd.env("SPINDLE_BENCH_RATE", rate.to_string());
        if let Some(t) = trace {
            cmd.arg("--trace").arg(t);
        }
        let out = cmd.output().context("running a bench scenario")?;
        if !out.status.success() {
            bail!(
                "scenario {scenario} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    };
    let say = |m: &str| {
        if !quiet {
            eprintln!("{m}");
        }
    };
    say("bench (a): closed loop, Q=1, FCFS …");
    let a = child("a", None, 0.0)?;
    // Poisson arrivals at 70 % of the Q = 1 service rate load the disk to about 70 %.
    let rate = 0.7 * 1e3 / a.mean_latency_ms;
    let dir = tempdir()?;
    let trace = dir.join("bench.disksim.txt");
    say(&format!(
        "generating a {}-line DiskSim trace at {rate:.0} IOPS …",
        args.requests
    ));
    let capacity = spindle::drive::builtin_drive(DRIVE)?.capacity_sectors();
    generate_trace(&trace, args.requests, rate, capacity)?;
    say("bench (b): open-loop replay, FCFS …");
    let b = child("b", Some(&trace), rate)?;
    say("bench (c): replay, SATF, 16 outstanding …");
    let c = child("c", Some(&trace), rate)?;
    let _ = std::fs::remove_dir_all(&dir);
    let results = [a, b, c];
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        println!(
            "{:<3} {:<58} {:>10} {:>8} {:>14} {:>9} {:>8}",
            "", "scenario", "requests", "wall s", "requests/s", "peak MB", "util"
        );
        for r in &results {
            println!(
                "({}) {:<58} {:>10} {:>8.3} {:>14.0} {:>9.1} {:>7.1}%",
                r.scenario,
                r.description,
                r.requests,
                r.wall_s,
                r.requests_per_s,
                r.peak_rss_mb,
                100.0 * r.utilization
            );
        }
    }
    Ok(())
}

fn tempdir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("spindle-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    Ok(dir)
}
