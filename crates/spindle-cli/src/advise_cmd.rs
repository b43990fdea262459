//! `spindle advise WORKLOAD …`: which array, and how many disks, for a workload (a trace or
//! an experiment file). Enumerates every layout family's configurations, ranks them by the
//! analytical models (`spindle::model`), simulates the best `--top` in parallel and prints
//! them with the simulator's verdicts; answers the smallest number of disks meeting a
//! `--target` and, with `--memory-cost`, the dissertation's 4.3 question (docs/advise.md).

use crate::{progress, replay, run_cmd::reader_relative_to, trace_cmd};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use rayon::prelude::*;
use serde::Serialize;
use spindle::config::{resolve_drive, Experiment, Setting, WorkloadKind};
use spindle::metrics::Report;
use spindle::model::advise::{candidates, rank, with_cache, Metric, Ranked};
use spindle::model::predict::{predict, Candidate, Family, Load};
use spindle::model::DiskModel;
use spindle::workload::trace::characterise::Characterisation;
use spindle::workload::trace::TraceFormat;
use std::io::Write;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

/// Rotational replicas tried at most (the dissertation's drive keeps up with Dr = 6, 4.2.2;
/// a drive that cannot is refused by the configuration check and the next candidate taken).
const DR_MAX: u32 = 6;

#[derive(Args)]
pub struct AdviseArgs {
    /// A trace (any `spindle trace formats` format) or an experiment file (`.toml`; its
    /// `[array]` and `[[compare]]` are replaced by the candidates).
    workload: PathBuf,
    /// The trace's format (default: detected).
    #[arg(long, short = 'f', value_name = "FORMAT")]
    format: Option<TraceFormat>,
    /// The drive for a trace (an experiment file names its own).
    #[arg(long, default_value = "st39133lwv")]
    drive: String,
    /// Consider exactly N disks.
    #[arg(long, value_name = "N", conflicts_with = "max_disks")]
    disks: Option<u32>,
    /// Consider 1 to N disks (default 12).
    #[arg(long, value_name = "N")]
    max_disks: Option<u32>,
    /// Replay a trace at this mean rate (requests/s), or run an open-loop experiment at it.
    #[arg(long, value_name = "IOPS", conflicts_with = "speedup")]
    rate: Option<f64>,
    /// Replay a trace this many times faster.
    #[arg(long, value_name = "X")]
    speedup: Option<f64>,
    /// The latency goal: `mean_ms=V` or `p99_ms=V` (ranks by that metric; without it, the mean).
    #[arg(long, value_name = "METRIC=MS")]
    target: Option<String>,
    /// Memory's price per MB over disk's (the dissertation's M, 4.3): compare one more disk
    /// with a host LRU cache of the same price.
    #[arg(long, value_name = "M")]
    memory_cost: Option<f64>,
    /// Candidates simulated: the best K by the models, plus the best of each family not
    /// among them.
    #[arg(long, default_value_t = 8, value_name = "K")]
    top: usize,
    /// One JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Simulate every candidate to its end, even once its mean latency is proven worse than
    /// another's (slow on saturated candidates; to check the advisor's giving up).
    #[arg(long)]
    no_give_up: bool,
    /// Override a key of the workload's experiment, e.g. `--set run.requests=20000`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Simulations run at once (default: one per core).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<NonZeroUsize>,
}

/// A latency goal.
#[derive(Copy, Clone, Debug, Serialize)]
struct Target {
    metric: Metric,
    ms: Option<f64>,
}

fn parse_target(s: Option<&str>) -> Result<Target> {
    let Some(s) = s else {
        return Ok(Target {
            metric: Metric::MeanMs,
            ms: None,
        });
    };
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| anyhow!("--target {s}: expected mean_ms=V or p99_ms=V"))?;
    let metric = match k.trim() {
        "mean_ms" => Metric::MeanMs,
        "p99_ms" => Metric::P99Ms,
        other => bail!("--target {s}: unknown metric {other:?}; expected mean_ms or p99_ms"),
    };
    let ms: f64 = v
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .ok_or_else(|| anyhow!("--target {s}: expected a positive number of ms, got {v:?}"))?;
    Ok(Target {
        metric,
        ms: Some(ms),
    })
}

/// The workload: the experiment every candidate is set onto, the models' view of it, and a
/// trace's characterisation.
struct Workload {
    exp: Experiment,
    base: Option<PathBuf>,
    load: Load,
    characterisation: Option<Characterisation>,
    /// A synthetic workload without a data set of its own: one disk's worth, which the
    /// other layouts hold by default and a paged array of more disks than copies exceeds.
    one_disk_bytes: Option<u64>,
}

/// A speed-up as the trace key takes it: a decimal with at most 9 decimals.
fn speedup_text(x: f64) -> Result<String> {
    let t = format!("{x:.9}");
    let t = t.trim_end_matches('0').trim_end_matches('.').to_string();
    if t.parse::<f64>().map_or(true, |v| v <= 0.0) {
        bail!("a speed-up of {x} is too small to replay");
    }
    Ok(t)
}

fn positive(name: &str, v: Option<f64>) -> Result<Option<f64>> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0) => {
            bail!("{name}: expected a positive number, got {x}")
        }
        _ => Ok(v),
    }
}

/// Loads the trace's stats and characterisation into a [`Load`]; `speedup` scales its rate.
fn trace_load(
    path: &Path,
    format: Option<TraceFormat>,
    quiet: bool,
) -> Result<(Load, Characterisation, f64)> {
    let (stats, c, _) = trace_cmd::characterise_file(path, format, quiet)?;
    let iops = stats
        .time
        .as_ref()
        .and_then(|t| t.mean_iops)
        .ok_or_else(|| {
            anyhow!(
                "{}: its requests all arrive at once: no rate to replay at",
                path.display()
            )
        })?;
    let cv2 = stats
        .interarrival
        .as_ref()
        .and_then(|i| i.cv)
        .map_or(1.0, |cv| cv * cv);
    let load = Load {
        read_fraction: c.read_fraction,
        // A trace without head movement (all sequential) has no L: as random.
        locality: stats.seek_locality.unwrap_or(1.0).max(1.0),
        size_bytes: stats.size.as_ref().map_or(4096.0, |s| s.mean_bytes),
        queue: None,
        rate_iops: Some(iops),
        arrival_cv2: cv2,
        window_counts: c.window_counts.clone(),
        window_ms: spindle::workload::trace::characterise::FLUID_WINDOW_MS as f64,
    };
    Ok((load, c, iops))
}

fn workload(args: &AdviseArgs, quiet: bool) -> Result<Workload> {
    let rate = positive("--rate", args.rate)?;
    let speedup = positive("--speedup", args.speedup)?;
    let path = &args.workload;
    let is_toml = path.extension().is_some_and(|e| e == "toml");
    if !is_toml {
        let (mut load, c, iops) = trace_load(path, args.format, quiet)?;
        let x = match (rate, speedup) {
            (Some(r), _) => r / iops,
            (None, Some(x)) => x,
            (None, None) => 1.0,
        };
        load.rate_iops = Some(iops * x);
        load.window_ms /= x;
        let abs = std::fs::canonicalize(path).with_context(|| path.display().to_string())?;
        let format = args
            .format
            .map(|f| format!("format = \"{f}\"\n"))
            .unwrap_or_default();
        // Addresses scaled onto one disk's worth of data (the dissertation's setting, 4.2.1):
        // relative seek distances, hence L, are kept.
        let text = format!(
            "seed = 1\n[drive]\nmodel = {drive:?}\n[workload]\nkind = \"trace\"\n\
             [workload.trace]\npath = {p:?}\n{format}speedup = {x}\nfit = \"scale\"\n",
            drive = args.drive,
            p = abs.display().to_string(),
            x = speedup_text(x)?,
        );
        let exp = Experiment::parse(&text, &path.display().to_string(), &args.sets)?;
        return Ok(Workload {
            exp,
            base: None,
            load,
            characterisation: Some(c),
            one_disk_bytes: None,
        });
    }
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    // The candidates replace the file's array and comparison rows.
    let doc: toml::Table = toml::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let unsets: Vec<String> = ["array", "compare"]
        .into_iter()
        .filter(|k| doc.contains_key(*k))
        .map(String::from)
        .collect();
    let mut sets = args.sets.clone();
    let base = path.parent().map(Path::to_path_buf);
    let exp0 = Experiment::parse_with(&text, &path.display().to_string(), &unsets, &sets)?;
    let w = &exp0.spec.workload;
    let mut load = Load {
        read_fraction: w.read_fraction(),
        // Uniformly random addresses (the synthetic generators'); sequential runs not modelled.
        locality: 1.0,
        size_bytes: w.sizes.as_ref().map_or(w.size_bytes as f64, |s| {
            let total: f64 = s.iter().map(|x| x.1).sum();
            s.iter().map(|(b, wt)| *b as f64 * wt).sum::<f64>() / total.max(1e-12)
        }),
        queue: None,
        rate_iops: None,
        arrival_cv2: 1.0,
        window_counts: Vec::new(),
        window_ms: 0.0,
    };
    let mut characterisation = None;
    match w.kind {
        WorkloadKind::Closed => load.queue = Some(f64::from(w.queue_depth)),
        WorkloadKind::Open => {
            if let Some(r) = rate {
                sets.push(format!("workload.rate_iops={r}"));
            }
            load.rate_iops = rate.or(w.rate_iops);
        }
        WorkloadKind::Trace => {
            let t = w
                .trace
                .as_ref()
                .ok_or_else(|| anyhow!("{}: [workload.trace] is missing", path.display()))?;
            let tpath = base
                .as_deref()
                .map_or_else(|| PathBuf::from(&t.path), |b| b.join(&t.path));
            let format = t.trace_format().map_err(|(k, m)| anyhow!("{k}: {m}"))?;
            let (l, c, iops) = trace_load(&tpath, format, quiet)?;
            let x = match (rate, speedup) {
                (Some(r), _) => r / iops,
                (None, Some(x)) => x * t.speedup,
                (None, None) => t.speedup,
            };
            sets.push(format!("workload.trace.speedup={}", speedup_text(x)?));
            load = Load {
                rate_iops: Some(iops * x),
                window_ms: l.window_ms / x,
                ..l
            };
            characterisation = Some(c);
        }
        other => bail!(
            "{}: workload.kind = {other:?}: advise takes closed, open and trace workloads",
            path.display()
        ),
    }
    let exp = Experiment::parse_with(&text, &path.display().to_string(), &unsets, &sets)?;
    Ok(Workload {
        exp,
        base,
        load,
        characterisation,
        one_disk_bytes: None,
    })
}

/// One simulated candidate.
#[derive(Clone, Debug, Serialize)]
struct Row {
    rank: usize,
    configuration: String,
    candidate: Candidate,
    disks: u32,
    predicted_mean_ms: f64,
    predicted_p99_ms: f64,
    predicted_utilization: f64,
    predicted_max_iops: f64,
    simulated_mean_ms: f64,
    simulated_p99_ms: f64,
    simulated_iops: f64,
    /// Host requests outstanding on average when the workload is replayed on this
    /// configuration (Little's law over the window: answered rate × mean latency); null
    /// for a run that gave up.
    outstanding_mean: Option<f64>,
    utilization: f64,
    /// The array's capacity over the offered rate (predicted; > 1 keeps up).
    headroom: Option<f64>,
    saturated: bool,
    sustainable: bool,
    /// The simulation gave up at this virtual time: its mean latency was proven to be at
    /// least `mean_ms_at_least` (then the simulated figures cover only the requests answered
    /// by then).
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_at_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mean_ms_at_least: Option<f64>,
    why: String,
}

impl Row {
    fn ok(&self) -> bool {
        !self.saturated && self.sustainable && self.stopped_at_s.is_none()
    }

    /// The simulated metric; for a stopped run, the proven lower bound on its mean.
    fn metric(&self, m: Metric) -> f64 {
        if let Some(b) = self.mean_ms_at_least {
            return b;
        }
        match m {
            Metric::MeanMs => self.simulated_mean_ms,
            Metric::P99Ms => self.simulated_p99_ms,
        }
    }

    /// The simulated mean for people: "≥ X" for a stopped run.
    fn mean_text(&self) -> String {
        match self.mean_ms_at_least {
            Some(b) => format!("≥ {b:.2}"),
            None => format!("{:.2}", self.simulated_mean_ms),
        }
    }
}

fn settings_of(c: &Candidate) -> Result<Vec<Setting>> {
    c.settings()
        .into_iter()
        .map(|(key, v)| {
            let doc: toml::Table = toml::from_str(&format!("v = {v}"))
                .map_err(|e| anyhow!("advisor setting {key} = {v}: {e}"))?;
            Ok(Setting {
                value: doc["v"].clone(),
                from: format!("candidate {}", c.label()),
                key,
                line: None,
            })
        })
        .collect()
}

/// The experiment of a candidate, checked; Err(why) when the configuration is refused.
fn point(w: &Workload, c: &Candidate) -> Result<Experiment, String> {
    let mut settings = settings_of(c).map_err(|e| e.to_string())?;
    if let (Family::Paged, Some(b)) = (c.family, w.one_disk_bytes) {
        if c.dr < c.disks {
            settings.push(Setting {
                key: "workload.data_set_bytes".into(),
                value: toml::Value::Integer(b as i64),
                from: format!("candidate {}: one disk's worth of data", c.label()),
                line: None,
            });
        }
    }
    let exp = w.exp.with_settings(&settings).map_err(|e| e.to_string())?;
    let read_file = reader_relative_to(w.base.as_deref());
    let open_trace = replay::opener(w.base.as_deref());
    let open_validate = crate::validate_cmd::opener(w.base.as_deref());
    exp.check(&read_file, &open_trace, &open_validate)
        .map_err(|e| e.to_string())?;
    Ok(exp)
}

/// `exp` giving up once its mean latency is proven above `ms` (`run.give_up_mean_ms`).
fn giving_up(exp: Experiment, ms: Option<f64>) -> Result<Experiment> {
    let Some(ms) = ms else { return Ok(exp) };
    Ok(exp.with_settings(&[Setting {
        key: "run.give_up_mean_ms".into(),
        value: toml::Value::Float(ms),
        from: "the advisor's bound on a candidate out of the question".into(),
        line: None,
    }])?)
}

/// Simulates `todo` (rank, ranked, experiment) on `pool`, one bar step each, each run giving
/// up once its mean latency is proven above `give_up_ms`.
fn simulate(
    w: &Workload,
    todo: Vec<(usize, &Ranked, Experiment)>,
    pool: &rayon::ThreadPool,
    quiet: bool,
    what: &str,
    give_up_ms: Option<f64>,
) -> Result<Vec<Row>> {
    let bar = progress::bar(Some(todo.len() as u64), quiet, what);
    let rate = w.load.rate_iops;
    let rows: Vec<Result<Row>> = pool.install(|| {
        todo.into_par_iter()
            .map(|(rank, r, exp)| {
                let exp = giving_up(exp, give_up_ms)?;
                let read_file = reader_relative_to(w.base.as_deref());
                let open_trace = replay::opener(w.base.as_deref());
                let open_validate = crate::validate_cmd::opener(w.base.as_deref());
                let rep: Report = exp
                    .run_with(
                        &read_file,
                        &open_trace,
                        &open_validate,
                        &mut |_, _, _, _| {},
                    )
                    .with_context(|| r.candidate.label())?;
                bar.inc(1);
                let p = &r.prediction;
                Ok(Row {
                    rank,
                    configuration: r.candidate.label(),
                    candidate: r.candidate.clone(),
                    disks: r.candidate.disks,
                    predicted_mean_ms: p.mean_ms,
                    predicted_p99_ms: p.p99_ms,
                    predicted_utilization: p.utilization,
                    predicted_max_iops: p.max_iops,
                    simulated_mean_ms: rep.latency.all.mean_ms,
                    simulated_p99_ms: rep.latency.all.p99_ms,
                    simulated_iops: rep.throughput_iops,
                    outstanding_mean: rep
                        .stopped
                        .is_none()
                        .then(|| rep.throughput_iops * rep.latency.all.mean_ms / 1e3),
                    utilization: rep.mean_utilization(),
                    headroom: rate.map(|x| p.max_iops / x),
                    saturated: rep.saturated,
                    sustainable: rep.sustainable,
                    stopped_at_s: rep.stopped.as_ref().map(|x| x.at_s),
                    mean_ms_at_least: rep.stopped.as_ref().map(|x| x.mean_ms_at_least),
                    why: p.why.clone(),
                })
            })
            .collect()
    });
    bar.finish_and_clear();
    rows.into_iter().collect()
}

/// Simulates `todo`, giving up on candidates out of the question (none with `cap` None).
/// Each run first stops once its mean latency is proven above `cap` ms. If a run stopped, and the best candidate
/// that kept up has a metric above the cap, the stopped ones run again with that metric as
/// the bound (a second stop proves them worse than it); if none kept up, again with ten
/// times the bound, twice, then to the end. So a stopped row is always proven worse than the
/// choice — by the mean; for a p99 target, its mean exceeds the choice's p99.
fn simulate_ranked(
    w: &Workload,
    todo: Vec<(usize, &Ranked, Experiment)>,
    ranked: &[Ranked],
    pool: &rayon::ThreadPool,
    quiet: bool,
    metric: Metric,
    mut cap: Option<f64>,
) -> Result<Vec<Row>> {
    let mut rows = simulate(w, todo, pool, quiet, "simulating", cap)?;
    for round in 0.. {
        let Some(c) = cap else { break };
        let stopped: Vec<usize> = rows
            .iter()
            .filter(|r| r.stopped_at_s.is_some())
            .map(|r| r.rank)
            .collect();
        if stopped.is_empty() {
            break;
        }
        let best_ok = rows
            .iter()
            .filter(|r| r.ok())
            .map(|r| r.metric(metric))
            .min_by(f64::total_cmp);
        cap = match best_ok {
            Some(m) if m <= c => break,
            Some(m) => Some(m),
            None if round < 2 => Some(c * 10.0),
            None => None,
        };
        let again = stopped
            .iter()
            .map(|&rank| {
                let r = &ranked[rank - 1];
                point(w, &r.candidate)
                    .map(|exp| (rank, r, exp))
                    .map_err(|e| anyhow!("{}: {e}", r.candidate.label()))
            })
            .collect::<Result<Vec<_>>>()?;
        let redone = simulate(w, again, pool, quiet, "simulating again", cap)?;
        rows.retain(|r| r.stopped_at_s.is_none());
        rows.extend(redone);
    }
    rows.sort_by_key(|r| r.rank);
    Ok(rows)
}

/// The output (`--json`).
#[derive(Serialize)]
struct Advice {
    workload: String,
    drive: String,
    load: Load,
    target: Target,
    disks: Vec<u32>,
    candidates: usize,
    refused: Vec<(String, String)>,
    simulated: Vec<Row>,
    choice: Option<Row>,
    /// The fewest disks whose best candidate met the target in simulation.
    smallest_disks_meeting_target: Option<Row>,
    memory: Option<MemoryAnswer>,
    characterisation: Option<Characterisation>,
}

/// The 4.3 question: one more disk, or the same money in host memory (an LRU cache).
#[derive(Serialize)]
struct MemoryAnswer {
    memory_cost: f64,
    cache_bytes: f64,
    read_hit_ratio: f64,
    /// The choice with the cache, by the models (hits cost nothing; the misses and every
    /// write reach the disks), scaled by the choice's simulated over predicted latency.
    with_memory_mean_ms: f64,
    /// The best configuration of one more disk, simulated.
    one_more_disk: Option<Row>,
    verdict: String,
}

pub fn run(args: AdviseArgs, quiet: bool) -> Result<()> {
    let target = parse_target(args.target.as_deref())?;
    if args.top == 0 {
        bail!("--top: at least one candidate must be simulated");
    }
    let counts: Vec<u32> = match (args.disks, args.max_disks) {
        (Some(0), _) | (_, Some(0)) => bail!("--disks / --max-disks: at least 1"),
        (Some(n), _) => vec![n],
        (None, m) => (1..=m.unwrap_or(12)).collect(),
    };
    if counts.iter().any(|&n| n > 64) {
        bail!("--disks / --max-disks: at most 64");
    }
    let mut w = workload(&args, quiet)?;
    let base = w.base.clone();
    let read_file = reader_relative_to(base.as_deref());
    let drive_name = w.exp.spec.drive.model.clone();
    let drive = resolve_drive(&drive_name, &read_file).map_err(|e| anyhow!("drive: {e}"))?;
    let disk = DiskModel::of(&drive);
    if w.characterisation.is_none() {
        // A synthetic workload over part of the array's one disk of data seeks over that
        // part only: L = data of the array / data addressed (eq. 2.5).
        match w.exp.spec.workload.data_set_bytes.filter(|&b| b > 0) {
            Some(b) => w.load.locality = (disk.capacity_bytes / b as f64).max(1.0),
            None => {
                let page = u64::from(spindle::model::predict::PAGE_BYTES);
                w.one_disk_bytes = Some(disk.capacity_bytes as u64 / page * page);
            }
        }
    }
    let all: Vec<Candidate> = counts.iter().flat_map(|&n| candidates(n, DR_MAX)).collect();
    let n_candidates = all.len();
    let ranked = rank(&disk, &w.load, all, target.metric);

    // The best K that the configuration check accepts, and the best of every family not
    // among them: where the models misjudge a family as a whole (a bursty trace's mirrors
    // balance their queues; docs/advise.md), its best still gets simulated.
    let mut refused = Vec::new();
    let mut todo = Vec::new();
    let mut families = Vec::new();
    for (i, r) in ranked.iter().enumerate() {
        let family = r.candidate.family;
        let top = todo.len() < args.top;
        if !top && families.contains(&family) {
            continue;
        }
        match point(&w, &r.candidate) {
            Ok(exp) => {
                todo.push((i + 1, r, exp));
                if !families.contains(&family) {
                    families.push(family);
                }
            }
            Err(why) => refused.push((r.candidate.label(), why)),
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let jobs = args
        .jobs
        .map_or(cores, NonZeroUsize::get)
        .clamp(1, cores * 4);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .context("starting the worker threads")?;
    let started = std::time::Instant::now();
    // A run gives up once proven out of the question (docs/advise.md, "Giving up"): at
    // first at 5 times the best prediction (at least 20 ms).
    let best_predicted = todo
        .iter()
        .map(|(_, r, _)| &r.prediction)
        .filter(|p| !p.saturated)
        .map(|p| target.metric.of(p))
        .filter(|m| m.is_finite())
        .min_by(f64::total_cmp);
    let cap = (!args.no_give_up).then(|| (5.0 * best_predicted.unwrap_or(0.0)).max(20.0));
    let rows = simulate_ranked(&w, todo, &ranked, &pool, quiet, target.metric, cap)?;
    let choice = best(&rows, target.metric);

    // The smallest disk count whose best predicted candidate meets the target, simulated.
    let mut smallest = None;
    if let Some(goal) = target.ms {
        // Disk counts whose best prediction meets the goal (within 20 %: the models' spread),
        // fewest first; at most 3 tried, the best 2 candidates of each.
        let hopeful: Vec<u32> = counts
            .iter()
            .copied()
            .filter(|&n| {
                ranked.iter().any(|r| {
                    r.candidate.disks == n
                        && !r.prediction.saturated
                        && target.metric.of(&r.prediction) <= goal * 1.2
                })
            })
            .take(3)
            .collect();
        for &n in &hopeful {
            let cand = ranked
                .iter()
                .enumerate()
                .filter(|(_, r)| r.candidate.disks == n && !r.prediction.saturated)
                .take(2);
            let mut met = None;
            for (i, r) in cand {
                let row = match rows.iter().find(|x| x.rank == i + 1) {
                    Some(x) => x.clone(),
                    None => match point(&w, &r.candidate) {
                        Ok(exp) => {
                            // Proven above the goal: it does not meet it.
                            let give_up = (target.metric == Metric::MeanMs && !args.no_give_up)
                                .then_some(goal);
                            let mut v = simulate(
                                &w,
                                vec![(i + 1, r, exp)],
                                &pool,
                                quiet,
                                "disks",
                                give_up,
                            )?;
                            v.remove(0)
                        }
                        Err(_) => continue,
                    },
                };
                if row.ok() && row.metric(target.metric) <= goal {
                    met = Some(row);
                    break;
                }
            }
            if met.is_some() {
                smallest = met;
                break;
            }
        }
    }

    // 4.3: one more disk, or memory for its price.
    let memory = match (args.memory_cost, &choice, &w.characterisation) {
        (Some(m), Some(ch), Some(c)) if m.is_finite() && m > 0.0 => {
            let cache_bytes = disk.capacity_bytes / m;
            let hit = c.read_hit_ratio(cache_bytes / 4096.0);
            let (cached, hits) = with_cache(&w.load, hit);
            let before = predict(&disk, &ch.candidate, &w.load);
            let after = predict(&disk, &ch.candidate, &cached);
            let scale = if before.mean_ms.is_finite() && before.mean_ms > 0.0 {
                ch.simulated_mean_ms / before.mean_ms
            } else {
                1.0
            };
            let with_memory = (1.0 - hits) * after.mean_ms * scale;
            let more = ranked
                .iter()
                .enumerate()
                .find(|(_, r)| r.candidate.disks == ch.disks + 1 && !r.prediction.saturated);
            let one_more = match more {
                Some((i, r)) => match rows.iter().find(|x| x.rank == i + 1) {
                    Some(x) => Some(x.clone()),
                    None => match point(&w, &r.candidate) {
                        Ok(exp) => Some(
                            simulate(
                                &w,
                                vec![(i + 1, r, exp)],
                                &pool,
                                quiet,
                                "one more disk",
                                (!args.no_give_up).then_some(with_memory),
                            )?
                            .remove(0),
                        ),
                        Err(_) => None,
                    },
                },
                None => {
                    // Outside the disk counts considered: one more disk of the same family.
                    let cand = candidates(ch.disks + 1, DR_MAX);
                    let r = rank(&disk, &w.load, cand, target.metric).into_iter().next();
                    match r {
                        Some(r) => match point(&w, &r.candidate) {
                            Ok(exp) => Some(
                                simulate(
                                    &w,
                                    vec![(0, &r, exp)],
                                    &pool,
                                    quiet,
                                    "one more disk",
                                    (!args.no_give_up).then_some(with_memory),
                                )?
                                .remove(0),
                            ),
                            Err(_) => None,
                        },
                        None => None,
                    }
                }
            };
            let verdict = match &one_more {
                Some(d) if d.ok() && d.simulated_mean_ms < with_memory => format!(
                    "one more disk: {} at {:.2} ms beats {:.0} MB of memory at {:.2} ms (M = {m})",
                    d.configuration,
                    d.simulated_mean_ms,
                    cache_bytes / 1e6,
                    with_memory
                ),
                Some(d) => format!(
                    "memory: {:.0} MB of cache ({:.1} % of reads hit) at {:.2} ms beats one more disk ({} at {} ms{}) (M = {m})",
                    cache_bytes / 1e6,
                    hit * 100.0,
                    with_memory,
                    d.configuration,
                    d.mean_text(),
                    if d.stopped_at_s.is_some() {
                        ", proven worse: gave up"
                    } else if d.ok() {
                        ""
                    } else {
                        ", saturated"
                    }
                ),
                None => "no configuration of one more disk could be simulated".into(),
            };
            Some(MemoryAnswer {
                memory_cost: m,
                cache_bytes,
                read_hit_ratio: hit,
                with_memory_mean_ms: with_memory,
                one_more_disk: one_more,
                verdict,
            })
        }
        (Some(_), _, None) => {
            eprintln!(
                "spindle: --memory-cost needs a trace workload (its reuse distances); skipped"
            );
            None
        }
        _ => None,
    };
    if !quiet {
        eprintln!(
            "advised in {:.1} s: {} candidates ranked, {} simulated on {} threads",
            started.elapsed().as_secs_f64(),
            n_candidates,
            rows.len(),
            pool.current_num_threads()
        );
    }
    let advice = Advice {
        workload: args.workload.display().to_string(),
        drive: drive_name,
        load: w.load.clone(),
        target,
        disks: counts,
        candidates: n_candidates,
        refused,
        simulated: rows,
        choice,
        smallest_disks_meeting_target: smallest,
        memory,
        characterisation: w.characterisation.clone(),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &advice)?;
        writeln!(out)?;
    } else {
        out.write_all(table(&advice).as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

/// The best simulated row: never a saturated or unsustainable one while another kept up.
fn best(rows: &[Row], m: Metric) -> Option<Row> {
    let pick = |ok: bool| {
        rows.iter()
            .filter(|r| r.ok() == ok)
            .min_by(|a, b| a.metric(m).total_cmp(&b.metric(m)))
            .cloned()
    };
    pick(true).or_else(|| pick(false))
}

fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "∞".into()
    }
}

fn table(a: &Advice) -> String {
    let mut t = String::new();
    let l = &a.load;
    t.push_str(&format!(
        "workload {}: p = {:.2} reads, L = {:.2}, {:.0} B mean, {}\n",
        a.workload,
        l.read_fraction,
        l.locality,
        l.size_bytes,
        match (l.queue, l.rate_iops) {
            (Some(q), _) => format!("closed loop Q = {q}"),
            (None, Some(r)) => format!("{r:.1} IOPS (arrival CV² {:.1})", l.arrival_cv2),
            _ => "no rate".into(),
        }
    ));
    t.push_str(&format!(
        "{} candidates on {} disk count(s), drive {}; {} simulated (the models' best, and the best of each family):\n\n",
        a.candidates,
        a.disks.len(),
        a.drive,
        a.simulated.len()
    ));
    let m = a.target.metric;
    let head = format!(
        "{:<5}{:<24}{:>6}{:>11}{:>11}{:>11}{:>11}{:>7}{:>10}  {:<15}{}\n",
        "rank",
        "configuration",
        "disks",
        "pred mean",
        "sim mean",
        "pred p99",
        "sim p99",
        "util",
        "headroom",
        "state",
        "why"
    );
    t.push_str(&head);
    for r in &a.simulated {
        let state = if r.stopped_at_s.is_some() {
            "GAVE UP"
        } else if r.saturated {
            "SATURATED"
        } else if !r.sustainable {
            "UNSUSTAINABLE"
        } else {
            "sustainable"
        };
        t.push_str(&format!(
            "{:<5}{:<24}{:>6}{:>11}{:>11}{:>11}{:>11}{:>6.0}%{:>10}  {:<15}{}\n",
            r.rank,
            r.configuration,
            r.disks,
            ms(r.predicted_mean_ms),
            match r.mean_ms_at_least {
                Some(b) => format!("≥{}", ms(b)),
                None => ms(r.simulated_mean_ms),
            },
            ms(r.predicted_p99_ms),
            if r.stopped_at_s.is_some() {
                "-".into()
            } else {
                ms(r.simulated_p99_ms)
            },
            r.utilization * 100.0,
            r.headroom.map_or("-".into(), |h| format!("{h:.2}x")),
            state,
            r.why
        ));
    }
    if a.simulated.iter().any(|r| r.stopped_at_s.is_some()) {
        t.push_str(
            "(GAVE UP: the simulation stopped once its mean latency was proven to exceed the \
             bound shown, worse than the choice — docs/advise.md, \"Giving up\")\n",
        );
    }
    t.push('\n');
    match &a.choice {
        Some(c) if c.ok() => t.push_str(&format!(
            "choice: {} ({} disks): {} {} ms simulated\n",
            c.configuration,
            c.disks,
            m.name(),
            ms(c.metric(m))
        )),
        Some(c) => t.push_str(&format!(
            "no simulated candidate keeps up; the least bad: {} ({} disks, {} {} ms, saturated)\n",
            c.configuration,
            c.disks,
            m.name(),
            ms(c.metric(m))
        )),
        None => t.push_str("no candidate could be simulated\n"),
    }
    if let Some(goal) = a.target.ms {
        match &a.smallest_disks_meeting_target {
            Some(r) => t.push_str(&format!(
                "smallest array meeting {} ≤ {goal} ms: {} disks ({}, {} ms simulated)\n",
                m.name(),
                r.disks,
                r.configuration,
                ms(r.metric(m))
            )),
            None => t.push_str(&format!(
                "no array of {:?} disks met {} ≤ {goal} ms in simulation\n",
                a.disks,
                m.name()
            )),
        }
    }
    if let Some(mem) = &a.memory {
        t.push_str(&format!(
            "more disks or more memory (4.3): {}\n",
            mem.verdict
        ));
    }
    if !a.refused.is_empty() {
        t.push_str(&format!(
            "{} candidate(s) refused by the configuration check (first: {}: {})\n",
            a.refused.len(),
            a.refused[0].0,
            a.refused[0].1
        ));
    }
    t
}
