//! `spindle bench`: the simulator's speed (simulated requests per wall-clock second on one
//! core) and peak memory on named scenarios, all with random 4 KiB requests, 60 % reads.
//!
//! On the built-in Cheetah 9LP (no on-disk buffer: the mechanical model and the schedulers):
//!
//! - (a) closed loop, Q = 1, FCFS;
//! - (b) open-loop replay of a generated DiskSim ASCII trace whose Poisson arrival rate loads
//!   the disk to about 70 % (measured from (a)), FCFS;
//! - (c) the same trace with SATF and a 16-deep queue: replayed with `max_outstanding = 16`
//!   and a speed-up large enough that the queue stays full, so every SATF decision weighs
//!   16 candidates.
//!
//! On DiskSim's own Cheetah 9LP model (with its buffer: the controller path), the workloads
//! of `../shared/tools/disksim-4.0/bench/` (`scripts/bench_vs_disksim.sh` runs them side by
//! side with DiskSim):
//!
//! - (da) closed loop, Q = 1, FCFS;
//! - (db) open-loop trace, FCFS: Poisson arrivals every 13.655943 ms on average (about 70 %
//!   load), 4 KiB-aligned over DiskSim's 17,783,240 sectors, generated as that folder's
//!   `gen_trace.py` does (same distribution, this generator's numbers);
//! - (dc1) the same trace, SATF, at most 16 outstanding;
//! - (dc2) closed loop, 16 outstanding, SATF.
//!
//! Whole experiments compiled in from `examples/bench/`: the 36-disk mix at Q = 64 (r10,
//! sr, srm, ew), the file-server trace on a 12-disk RAID-10 (fs, skipped without
//! `../shared`), and the 64-point sweep of the mix on one and two threads (sw1, sw2; the
//! rate per core is the rate divided by the threads).
//!
//! The DiskSim model is `--model PATH`, else `../shared/validation/disksim/cheetah9LP/
//! cheetah9LP.parv` when present; without it those scenarios run on the built-in Cheetah 9LP
//! and the table says so.
//!
//! Each scenario runs in a child process (`spindle bench --scenario X`) so its peak resident
//! memory (VmHWM) is its own. Wall time counts the simulation (the drive model's import and
//! trace parsing included), not the trace generation. A new scenario is one more entry of
//! [`SCENARIOS`].

use anyhow::{bail, Context};
use clap::Args;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    /// Run one scenario in this process and print its result as JSON.
    #[arg(long, hide = true)]
    scenario: Option<String>,
    /// The trace for the scenario run with --scenario.
    #[arg(long, hide = true)]
    trace: Option<PathBuf>,
    /// The drive model of the DiskSim scenarios (da, db, dc1, dc2): a DiskSim .parv, a
    /// drive TOML or a built-in name. Default: ../shared/validation/disksim/cheetah9LP/
    /// cheetah9LP.parv when present, else the built-in cheetah9lp (no buffer).
    #[arg(long)]
    model: Option<String>,
    /// Run only these scenarios (comma-separated names, e.g. da,dc2).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Requests per scenario (the 36-disk, file-server and sweep scenarios run their files'
    /// own).
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
    /// The drive model the scenario ran on.
    model: String,
    requests: u64,
    wall_s: f64,
    /// Simulated requests per wall-clock second per core: every scenario runs on one core
    /// but the multi-threaded sweep, whose rate is divided by its threads.
    requests_per_s: f64,
    /// CPU time of the run (Linux schedstat; 0 where unavailable) and simulated requests
    /// per CPU second: what other load on the machine disturbs least.
    cpu_s: f64,
    requests_per_cpu_s: f64,
    peak_rss_mb: f64,
    mean_latency_ms: f64,
    utilization: f64,
}

/// The built-in drive of scenarios a–c (and of the DiskSim ones when no model is found).
const BUILTIN: &str = "cheetah9lp";

/// The DiskSim model's default place, relative to the working directory (a checkout beside
/// `shared/`), then to this crate's source.
const DISKSIM_MODEL: &str = "shared/validation/disksim/cheetah9LP/cheetah9LP.parv";

/// Which trace a scenario replays.
#[derive(Copy, Clone, PartialEq, Eq)]
enum TraceKind {
    None,
    /// Generated at 70 % of the built-in drive's Q = 1 service rate (measured in (a)).
    Builtin,
    /// `gen_trace.py`'s parameters: mean inter-arrival 13.655943 ms, DiskSim's capacity.
    DiskSim,
    /// The shared file-server trace ([`FILE_SERVER_TRACE`]), replacing the experiment's
    /// `workload.trace.path`; the scenario is skipped, saying so, when it is absent.
    FileServer,
}

/// The Microsoft file-server trace's place, relative to the working directory (a checkout
/// beside `shared/`), then to this crate's source.
const FILE_SERVER_TRACE: &str = "shared/traces/msnfs_fileserver_replayer/MSN-FS-30s-ms";

/// Which drive a scenario runs on.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Model {
    Builtin,
    /// `--model`, the shared DiskSim Cheetah 9LP, or the built-in as a fallback.
    DiskSim,
    /// A whole experiment (an `examples/bench/` file, compiled in): its own drive, array,
    /// workload and request count.
    Experiment(&'static str),
    /// A whole sweep (an `examples/bench/` file, compiled in), its points run on this many
    /// worker threads, costliest first as `spindle sweep` runs them.
    Sweep(&'static str, usize),
}

/// One named scenario: an experiment on `model`, possibly replaying a trace.
struct Scenario {
    name: &'static str,
    description: &'static str,
    model: Model,
    trace: TraceKind,
    /// Seed: 1 on the built-in drive (as before the DiskSim scenarios), 42 as in
    /// `../shared/tools/disksim-4.0/bench/*.toml`.
    seed: u64,
    /// The scheduler, then the `[workload]` body (without the trace path).
    scheduler: &'static str,
    workload: &'static str,
}

const CLOSED_Q1: &str = "kind = \"closed\"\nqueue_depth = 1\nread_fraction = 0.6";
const CLOSED_Q1_4K: &str = "kind = \"closed\"\nqueue_depth = 1\nread_fraction = 0.6\nsize_bytes = 4096\nalignment_bytes = 4096";
const CLOSED_Q16_4K: &str = "kind = \"closed\"\nqueue_depth = 16\nread_fraction = 0.6\nsize_bytes = 4096\nalignment_bytes = 4096";

/// The scenarios, in the order they run and print.
const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "a",
        description: "closed loop, Q=1, FCFS",
        model: Model::Builtin,
        seed: 1,
        trace: TraceKind::None,
        scheduler: "fcfs",
        workload: CLOSED_Q1,
    },
    Scenario {
        name: "b",
        description: "open-loop trace replay (~70 % load), FCFS",
        model: Model::Builtin,
        seed: 1,
        trace: TraceKind::Builtin,
        scheduler: "fcfs",
        workload: "",
    },
    Scenario {
        name: "c",
        description: "trace replay x1000, SATF, 16 outstanding",
        model: Model::Builtin,
        seed: 1,
        trace: TraceKind::Builtin,
        scheduler: "satf",
        workload: "speedup = 1000.0\nmax_outstanding = 16",
    },
    Scenario {
        name: "da",
        description: "DiskSim model: closed loop, Q=1, FCFS",
        model: Model::DiskSim,
        seed: 42,
        trace: TraceKind::None,
        scheduler: "fcfs",
        workload: CLOSED_Q1_4K,
    },
    Scenario {
        name: "db",
        description: "DiskSim model: open-loop trace (~70 % load), FCFS",
        model: Model::DiskSim,
        seed: 42,
        trace: TraceKind::DiskSim,
        scheduler: "fcfs",
        workload: "",
    },
    Scenario {
        name: "dc1",
        description: "DiskSim model: same trace, SATF, <= 16 outstanding",
        model: Model::DiskSim,
        seed: 42,
        trace: TraceKind::DiskSim,
        scheduler: "satf",
        workload: "max_outstanding = 16",
    },
    Scenario {
        name: "dc2",
        description: "DiskSim model: closed loop, Q=16, SATF",
        model: Model::DiskSim,
        seed: 42,
        trace: TraceKind::None,
        scheduler: "satf",
        workload: CLOSED_Q16_4K,
    },
    Scenario {
        name: "r10",
        description: "36 disks: RAID-10 18x1x2, SATF, Q=64",
        model: Model::Experiment(include_str!("../../../examples/bench/raid10_36.toml")),
        seed: 1,
        trace: TraceKind::None,
        scheduler: "",
        workload: "",
    },
    Scenario {
        name: "sr",
        description: "36 disks: SR-Array 9x4, RSATF, Q=64",
        model: Model::Experiment(include_str!("../../../examples/bench/sr_array_36.toml")),
        seed: 1,
        trace: TraceKind::None,
        scheduler: "",
        workload: "",
    },
    Scenario {
        name: "srm",
        description: "36 disks: SR-Mirror 9x2x2, RSATF, Q=64",
        model: Model::Experiment(include_str!("../../../examples/bench/sr_mirror_36.toml")),
        seed: 1,
        trace: TraceKind::None,
        scheduler: "",
        workload: "",
    },
    Scenario {
        name: "ew",
        description: "36 disks: EW-Array 2x9x2, SATF-EW, Q=64",
        model: Model::Experiment(include_str!("../../../examples/bench/ew_array_36.toml")),
        seed: 1,
        trace: TraceKind::None,
        scheduler: "",
        workload: "",
    },
    Scenario {
        name: "fs",
        description: "12 disks: RAID-10 6x1x2, SATF, file-server trace",
        model: Model::Experiment(include_str!("../../../examples/bench/fileserver_12.toml")),
        seed: 1,
        trace: TraceKind::FileServer,
        scheduler: "",
        workload: "",
    },
    Scenario {
        name: "sw1",
        description: "sweep: 36-disk mix, 64 points, 1 thread",
        model: Model::Sweep(include_str!("../../../examples/bench/sweep_36_mix.toml"), 1),
        seed: 1,
        trace: TraceKind::None,
        scheduler: "",
        workload: "",
    },
    Scenario {
        name: "sw2",
        description: "sweep: 36-disk mix, 64 points, 2 threads",
        model: Model::Sweep(include_str!("../../../examples/bench/sweep_36_mix.toml"), 2),
        seed: 1,
        trace: TraceKind::None,
        scheduler: "",
        workload: "",
    },
];

fn scenario(name: &str) -> anyhow::Result<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name).with_context(|| {
        let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
        format!("unknown scenario {name:?}; one of {}", names.join(", "))
    })
}

/// The DiskSim scenarios' model: `--model`, else the shared Cheetah 9LP when present, else
/// the built-in.
fn disksim_model(arg: Option<&str>) -> String {
    if let Some(m) = arg {
        return m.to_string();
    }
    shared_file(DISKSIM_MODEL).map_or_else(|| BUILTIN.to_string(), |p| p.display().to_string())
}

/// `relative` (a path under `shared/`) beside the working directory, else beside this
/// checkout; `None` when it is in neither.
fn shared_file(relative: &str) -> Option<PathBuf> {
    let candidates = [
        Path::new("..").join(relative),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../..")
            .join(relative),
    ];
    candidates
        .iter()
        .find(|p| p.exists())
        .and_then(|p| p.canonicalize().ok())
}

/// The experiment of scenario `s` on `model`, replaying `trace` if it has one.
fn experiment(
    s: &Scenario,
    model: &str,
    trace: Option<&Path>,
    requests: u64,
) -> anyhow::Result<String> {
    if let Model::Experiment(text) | Model::Sweep(text, _) = s.model {
        return Ok(text.to_string());
    }
    let workload = match s.trace {
        TraceKind::None => s.workload.to_string(),
        TraceKind::Builtin | TraceKind::DiskSim | TraceKind::FileServer => {
            let path = trace.with_context(|| format!("scenario {} needs --trace", s.name))?;
            format!(
                "kind = \"trace\"\n[workload.trace]\npath = {:?}\nformat = \"disksim\"\n{}",
                path.display().to_string(),
                s.workload
            )
        }
    };
    Ok(format!(
        "seed = {}\n[drive]\nmodel = {model:?}\n[array]\ndisks = 1\nscheduler = \"{}\"\n\
         [workload]\n{workload}\n[run]\nrequests = {requests}\nwarmup_requests = 0\ncooldown_requests = 0\n",
        s.seed, s.scheduler
    ))
}

/// Runs scenario `s` in this process: the requests simulated, the mean latency and the mean
/// utilisation (over every point of a sweep, weighted by requests).
fn simulate(
    s: &Scenario,
    model: &str,
    trace: Option<&Path>,
    requests: u64,
) -> anyhow::Result<(u64, f64, f64)> {
    let text = experiment(s, model, trace, requests)?;
    let origin = format!("bench scenario {}", s.name);
    // A compiled-in experiment replays the trace found beside the checkout.
    let sets: Vec<String> = match (s.model, trace) {
        (Model::Experiment(_), Some(t)) => vec![format!("workload.trace.path={}", t.display())],
        _ => Vec::new(),
    };
    if let Model::Sweep(_, threads) = s.model {
        let sweep = spindle::sweep::Sweep::parse(&text, &origin, &sets)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .context("starting the worker threads")?;
        let reports = crate::sweep_cmd::run_points(&sweep, None, &pool, &|| {})
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let rows: Vec<_> = reports.iter().flat_map(|r| r.rows()).collect();
        let n: u64 = rows.iter().map(|r| r.requests_issued).sum();
        let weighted = |f: &dyn Fn(&spindle::metrics::Report) -> f64| {
            rows.iter()
                .map(|r| f(r) * r.requests_issued as f64)
                .sum::<f64>()
                / n.max(1) as f64
        };
        return Ok((
            n,
            weighted(&|r| r.latency.all.mean_ms),
            weighted(&|r| r.mean_utilization()),
        ));
    }
    let exp = spindle::config::Experiment::parse(&text, &origin, &sets)?;
    let read_file = crate::run_cmd::reader_relative_to(None);
    let open_trace = crate::replay::opener(None);
    let report = exp.run(&read_file, &open_trace, &mut |_, _, _, _| {})?;
    Ok((
        report.requests_issued,
        report.latency.all.mean_ms,
        report.mean_utilization(),
    ))
}

fn run_scenario(
    s: &Scenario,
    model: &str,
    trace: Option<&Path>,
    requests: u64,
) -> anyhow::Result<Outcome> {
    let cpu0 = cpu_s();
    let start = Instant::now();
    let (n, mean_latency_ms, utilization) = simulate(s, model, trace, requests)?;
    let wall_s = start.elapsed().as_secs_f64();
    let cpu = cpu_s() - cpu0;
    let cores = match s.model {
        Model::Sweep(_, threads) => threads as f64,
        _ => 1.0,
    };
    Ok(Outcome {
        scenario: s.name.to_string(),
        description: s.description.to_string(),
        model: model.to_string(),
        requests: n,
        wall_s,
        requests_per_s: n as f64 / wall_s / cores,
        cpu_s: cpu,
        requests_per_cpu_s: if cpu > 0.0 { n as f64 / cpu } else { 0.0 },
        peak_rss_mb: peak_rss_mb(),
        mean_latency_ms,
        utilization,
    })
}

/// CPU time (user + system) of this process, all threads, in seconds (Linux /proc/self/stat,
/// in 1/100 s); 0 where unavailable.
fn cpu_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // After the command name in parentheses: state is field 3, utime and stime 14 and 15.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => 0.0,
    }
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

/// Writes `n` random 4 KiB requests (4 KiB-aligned, uniform over `slots` 8-sector slots),
/// 60 % reads, Poisson with mean inter-arrival `mean_ms`, as DiskSim ASCII.
fn generate_trace(path: &Path, n: u64, mean_ms: f64, slots: u64, seed: u64) -> anyhow::Result<()> {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let file = std::fs::File::create(path).with_context(|| format!("{}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let mut t_ms = 0.0f64;
    for _ in 0..n {
        let u: f64 = rng.gen::<f64>().max(f64::MIN_POSITIVE);
        t_ms += -u.ln() * mean_ms;
        let lba = rng.gen_range(0..slots) * 8;
        let flags = if rng.gen::<f64>() < 0.6 { 1 } else { 0 };
        writeln!(w, "{t_ms:.6} 0 {lba} 8 {flags}")?;
    }
    w.flush()?;
    Ok(())
}

/// `gen_trace.py`'s mean inter-arrival and slots (DiskSim's synthio capacity, the last slot
/// never used).
const DISKSIM_MEAN_MS: f64 = 13.655943;
const DISKSIM_SLOTS: u64 = 17_783_240 / 8 - 1;

pub fn run(args: BenchArgs, quiet: bool) -> anyhow::Result<()> {
    if let Some(name) = &args.scenario {
        let s = scenario(name)?;
        let model = args.model.clone().unwrap_or_else(|| BUILTIN.to_string());
        let out = run_scenario(s, &model, args.trace.as_deref(), args.requests)?;
        println!("{}", serde_json::to_string(&out)?);
        return Ok(());
    }
    let selected: Vec<&Scenario> = if args.only.is_empty() {
        SCENARIOS.iter().collect()
    } else {
        args.only
            .iter()
            .map(|n| scenario(n))
            .collect::<anyhow::Result<_>>()?
    };
    let say = |m: &str| {
        if !quiet {
            eprintln!("{m}");
        }
    };
    let disksim = disksim_model(args.model.as_deref());
    if selected.iter().any(|s| s.model == Model::DiskSim) {
        if disksim == BUILTIN {
            say(&format!(
                "DiskSim scenarios: the DiskSim Cheetah 9LP model (../{DISKSIM_MODEL}) is absent: they run on the built-in {BUILTIN} (no buffer); --model PATH to choose"
            ));
        } else {
            say(&format!("DiskSim scenarios: model {disksim}"));
        }
    }
    let exe = std::env::current_exe().context("locating the spindle binary")?;
    let child = |s: &Scenario, model: &str, trace: Option<&Path>| -> anyhow::Result<Outcome> {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args([
            "bench",
            "--scenario",
            s.name,
            "--requests",
            &args.requests.to_string(),
            "--model",
            model,
        ]);
        if let Some(t) = trace {
            cmd.arg("--trace").arg(t);
        }
        let out = cmd.output().context("running a bench scenario")?;
        if !out.status.success() {
            bail!(
                "scenario {} failed: {}",
                s.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    };
    let dir = tempdir()?;
    let mut builtin_trace: Option<PathBuf> = None;
    let mut disksim_trace: Option<PathBuf> = None;
    let mut results: Vec<Outcome> = Vec::new();
    let file_server = shared_file(FILE_SERVER_TRACE);
    for s in &selected {
        let model = match s.model {
            Model::Builtin => BUILTIN,
            Model::DiskSim => disksim.as_str(),
            Model::Experiment(_) | Model::Sweep(..) => "examples/bench",
        };
        let trace = match s.trace {
            TraceKind::None => None,
            TraceKind::Builtin => {
                if builtin_trace.is_none() {
                    // Poisson arrivals at 70 % of the Q = 1 service rate load the disk to
                    // about 70 %.
                    let q1_ms = match results.iter().find(|r| r.scenario == "a") {
                        Some(a) => a.mean_latency_ms,
                        None => {
                            say("bench (a) for the trace's rate …");
                            child(scenario("a")?, BUILTIN, None)?.mean_latency_ms
                        }
                    };
                    let path = dir.join("builtin.disksim.txt");
                    say(&format!(
                        "generating a {}-line DiskSim trace at {:.0} IOPS …",
                        args.requests,
                        0.7 * 1e3 / q1_ms
                    ));
                    let slots = spindle::drive::builtin_drive(BUILTIN)?.capacity_sectors() / 8;
                    generate_trace(&path, args.requests, q1_ms / 0.7, slots, 42)?;
                    builtin_trace = Some(path);
                }
                builtin_trace.as_deref()
            }
            TraceKind::DiskSim => {
                if disksim_trace.is_none() {
                    let path = dir.join("rand4k.disksim.txt");
                    say(&format!(
                        "generating a {}-line DiskSim trace, mean inter-arrival {DISKSIM_MEAN_MS} ms …",
                        args.requests
                    ));
                    generate_trace(&path, args.requests, DISKSIM_MEAN_MS, DISKSIM_SLOTS, 12345)?;
                    disksim_trace = Some(path);
                }
                disksim_trace.as_deref()
            }
            TraceKind::FileServer => match &file_server {
                Some(p) => Some(p.as_path()),
                None => {
                    say(&format!(
                        "bench ({}): SKIPPED: the file-server trace (../{FILE_SERVER_TRACE}) is absent",
                        s.name
                    ));
                    continue;
                }
            },
        };
        say(&format!("bench ({}): {} …", s.name, s.description));
        results.push(child(s, model, trace)?);
    }
    let _ = std::fs::remove_dir_all(&dir);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
        return Ok(());
    }
    println!(
        "{:<6} {:<52} {:>10} {:>8} {:>12} {:>8} {:>12} {:>8} {:>7}",
        "", "scenario", "requests", "wall s", "req/s/core", "CPU s", "req/CPU-s", "peak MB", "util"
    );
    for r in &results {
        println!(
            "{:<6} {:<52} {:>10} {:>8.3} {:>12.0} {:>8.3} {:>12.0} {:>8.1} {:>6.1}%",
            format!("({})", r.scenario),
            r.description,
            r.requests,
            r.wall_s,
            r.requests_per_s,
            r.cpu_s,
            r.requests_per_cpu_s,
            r.peak_rss_mb,
            100.0 * r.utilization
        );
    }
    if results
        .iter()
        .any(|r| scenario(&r.scenario).is_ok_and(|s| s.model == Model::DiskSim))
    {
        println!("DiskSim model: {disksim}");
    }
    Ok(())
}

fn tempdir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("spindle-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    Ok(dir)
}
