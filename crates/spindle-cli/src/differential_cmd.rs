//! `spindle validate --against-disksim ORACLE`: differential testing against DiskSim 4.0.
//!
//! For each of `--models` random drive models ([`spindle::validate::differential`]) this
//! writes the model's files into a scratch folder, imports them with spindle's DiskSim
//! importer, writes a random validate trace over the drive's capacity, runs the oracle
//! (`ORACLE/bin/disksim`, built by `scripts/build_disksim_oracle.sh`, which prints one `REQ`
//! line per request) and spindle's validation replay on the same trace, and compares every
//! request's service time. Models run in parallel (rayon); the results are in model order.

use crate::progress;
use anyhow::{anyhow, bail, Context};
use rayon::prelude::*;
use serde::Serialize;
use spindle::drive::{disksim::import_parv, Drive};
use spindle::validate::differential::{
    self, by_region, compare, parse_reqlog, random_model, random_trace, Agreement, ModelResult,
    OracleRequest, Profile,
};
use spindle::validate::{self, ValidateReader};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// What the differential run was asked to do.
pub struct DifferentialArgs {
    pub oracle: PathBuf,
    pub models: u64,
    pub requests: usize,
    pub seed: u64,
    /// Keep each model's files here (else a scratch folder that is removed).
    pub keep: Option<PathBuf>,
    pub json: bool,
    pub profile: Profile,
    /// Spindle's documented departures from DiskSim 4.0 switched off.
    pub disksim_semantics: bool,
}

/// The whole run's result (printed with `--json`).
#[derive(Serialize)]
pub struct Summary {
    pub models: u64,
    pub requests_per_model: usize,
    pub seed: u64,
    pub profile: Profile,
    pub disksim_semantics: bool,
    pub agree_ns: u64,
    pub all: Agreement,
    pub reads: Agreement,
    pub writes: Agreement,
    /// (parameter, value, agreement), lowest agreement first.
    pub regions: Vec<(String, String, Agreement)>,
    pub results: Vec<ModelResult>,
    /// Models DiskSim itself aborted on (not compared).
    pub oracle_failed: Vec<OracleFailure>,
}

/// A model DiskSim 4.0 aborted on, with its last words and the model's facets.
#[derive(Serialize)]
pub struct OracleFailure {
    pub name: String,
    pub why: String,
    pub facets: Vec<String>,
}

fn run_model(
    oracle: &Path,
    statdefs: &str,
    dir: &Path,
    seed: u64,
    requests: usize,
    (profile, disksim_semantics): (Profile, bool),
) -> anyhow::Result<Outcome> {
    let m = random_model(seed, profile);
    std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    let parv = dir.join(format!("{}.parv", m.name));
    std::fs::write(&parv, &m.parv)?;
    if let Some(seek) = &m.seek_file {
        std::fs::write(dir.join(format!("{}.seek", m.name)), seek)?;
    }
    std::fs::write(dir.join("statdefs"), statdefs)?;
    let base = dir.to_path_buf();
    let read = move |p: &str| -> Result<String, String> {
        let path = base.join(Path::new(p).file_name().unwrap_or_default());
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let mut spec = import_parv(&format!("{}.parv", m.name), &read)
        .map_err(|e| anyhow!("{}: the import failed: {e}", m.name))?;
    if disksim_semantics {
        if let Some(c) = spec.cache.as_mut() {
            c.free_blocks_before_request = false;
        }
    }
    let drive = Drive::from_spec(&spec).map_err(|e| anyhow!("{}: {e}", m.name))?;
    let trace = random_trace(seed, drive.capacity_sectors(), requests);
    let trace_path = dir.join(format!("{}.trace", m.name));
    std::fs::write(&trace_path, &trace)?;

    let out = Command::new(oracle.join("bin/disksim"))
        .current_dir(dir)
        .env("DISKSIM_REQLOG", "1")
        .args([
            parv.file_name().expect("a file name"),
            "out.outv".as_ref(),
            "validate".as_ref(),
            trace_path.file_name().expect("a file name"),
            "0".as_ref(),
        ])
        .output()
        .with_context(|| format!("running {}", oracle.join("bin/disksim").display()))?;
    if !out.status.success() {
        // DiskSim 4.0 itself aborts on some parameter combinations: not comparable, counted.
        let why = String::from_utf8_lossy(&out.stderr)
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string();
        return Ok(Outcome::OracleFailed {
            name: m.name,
            why: format!("{}: {why}", out.status),
            facets: m.facets,
        });
    }
    let oracle_reqs = parse_reqlog(&String::from_utf8_lossy(&out.stdout))
        .map_err(|e| anyhow!("{}: {e}", m.name))?;

    let mut ours = Vec::with_capacity(requests);
    validate::replay_observed(
        Arc::new(drive),
        ValidateReader::new(trace.as_bytes()),
        Some(requests as u64),
        &mut |_, _| {},
        &mut |r, service| ours.push((r.op == spindle::Op::Write, service.0)),
    )
    .map_err(|e| anyhow!("{}: {e}", m.name))?;
    let result = compare(&m.name, &ours, &oracle_reqs).map_err(|e| anyhow!(e))?;
    std::fs::write(dir.join("requests.csv"), requests_csv(&ours, &oracle_reqs))?;
    Ok(Outcome::Compared(result, m.facets))
}

/// Request by request, both simulators' service times (kept with `--keep` for tracing a
/// disagreement to its first request).
fn requests_csv(ours: &[(bool, u64)], oracle: &[OracleRequest]) -> String {
    let mut s = String::from("request,op,blkno,sectors,spindle_ms,disksim_ms,diff_us\n");
    for (i, (&(_, ns), d)) in ours.iter().zip(oracle).enumerate() {
        let ms = ns as f64 / 1e6;
        let _ = writeln!(
            s,
            "{i},{},{},{},{ms:.6},{:.6},{:.3}",
            if d.write { 'W' } else { 'R' },
            d.blkno,
            d.sectors,
            d.access_ms,
            (ms - d.access_ms) * 1e3
        );
    }
    s
}

enum Outcome {
    Compared(ModelResult, Vec<(&'static str, String)>),
    OracleFailed {
        name: String,
        why: String,
        facets: Vec<(&'static str, String)>,
    },
}

pub fn run(args: DifferentialArgs, quiet: bool) -> anyhow::Result<()> {
    let bin = args.oracle.join("bin/disksim");
    if !bin.is_file() {
        bail!(
            "{}: no DiskSim oracle (build it: scripts/build_disksim_oracle.sh {})",
            bin.display(),
            args.oracle.display()
        );
    }
    let statdefs_path = args.oracle.join("statdefs");
    let statdefs = std::fs::read_to_string(&statdefs_path).with_context(|| {
        format!(
            "{} (scripts/build_disksim_oracle.sh puts DiskSim's statdefs there)",
            statdefs_path.display()
        )
    })?;
    let scratch = match &args.keep {
        Some(k) => k.clone(),
        None => std::env::temp_dir().join(format!("spindle-differential-{}", std::process::id())),
    };
    let bar = progress::bar(Some(args.models), quiet, "differential");
    let seeds: Vec<u64> = (0..args.models).map(|i| args.seed + i).collect();
    let results: Vec<anyhow::Result<_>> = seeds
        .par_iter()
        .map(|&s| {
            let r = run_model(
                &args.oracle,
                &statdefs,
                &scratch.join(format!("model-{s}")),
                s,
                args.requests,
                (args.profile, args.disksim_semantics),
            );
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    if args.keep.is_none() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    let mut done = Vec::new();
    let mut oracle_failed = Vec::new();
    for r in results {
        match r? {
            Outcome::Compared(r, f) => done.push((r, f)),
            Outcome::OracleFailed { name, why, facets } => oracle_failed.push(OracleFailure {
                name,
                why,
                facets: facets
                    .into_iter()
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect(),
            }),
        }
    }
    let mut all = Agreement::default();
    let mut reads = Agreement::default();
    let mut writes = Agreement::default();
    for (r, _) in &done {
        all.add(r.all());
        reads.add(r.reads);
        writes.add(r.writes);
    }
    let regions_in: Vec<_> = done.iter().map(|(r, f)| (f.clone(), r.all())).collect();
    let mut regions: Vec<(String, String, Agreement)> = by_region(&regions_in)
        .into_iter()
        .map(|((k, v), a)| (k, v, a))
        .collect();
    regions.sort_by(|a, b| a.2.pct().total_cmp(&b.2.pct()).then(a.0.cmp(&b.0)));
    let summary = Summary {
        models: args.models,
        requests_per_model: args.requests,
        seed: args.seed,
        profile: args.profile,
        disksim_semantics: args.disksim_semantics,
        agree_ns: differential::AGREE_NS,
        all,
        reads,
        writes,
        regions,
        results: done.into_iter().map(|(r, _)| r).collect(),
        oracle_failed,
    };
    let text = if args.json {
        serde_json::to_string_pretty(&summary)? + "\n"
    } else {
        table(&summary)
    };
    use std::io::Write;
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

fn table(s: &Summary) -> String {
    let mut t = String::new();
    let row = |t: &mut String, what: &str, a: &Agreement| {
        let _ = writeln!(
            t,
            "{what:<48} {:>9} / {:<9} {:>7.2} %",
            a.agree,
            a.total,
            a.pct()
        );
    };
    let _ = writeln!(
        t,
        "{} random DiskSim drive models ({:?} profile) x {} requests (seed {}): requests within {} us of DiskSim's service time",
        s.results.len(), s.profile, s.requests_per_model, s.seed, s.agree_ns / 1000
    );
    let _ = writeln!(
        t,
        "{}",
        if s.disksim_semantics {
            "(DiskSim 4.0's semantics: spindle's documented departures switched off)"
        } else {
            "(spindle as users run it, its documented departures on; --disksim-semantics switches them off)"
        }
    );
    row(&mut t, "all", &s.all);
    row(&mut t, "reads", &s.reads);
    row(&mut t, "writes", &s.writes);
    let _ = writeln!(t, "\nby parameter region (lowest first):");
    for (k, v, a) in s.regions.iter().take(25) {
        row(&mut t, &format!("  {k} = {v}"), a);
    }
    let mut worst: Vec<&ModelResult> = s.results.iter().collect();
    worst.sort_by(|a, b| a.all().pct().total_cmp(&b.all().pct()));
    let _ = writeln!(t, "\nworst models:");
    for r in worst.iter().take(8) {
        let first = r
            .first_disagreement
            .map(|(i, a, b)| format!("first at request {i}: spindle {a:.6} ms, DiskSim {b:.6} ms"))
            .unwrap_or_default();
        let _ = writeln!(
            t,
            "  {:<14} {:>7.2} %  mean |diff| {:>9.1} us  {first}",
            r.name,
            r.all().pct(),
            r.mean_abs_diff_us
        );
    }
    if !s.oracle_failed.is_empty() {
        let _ = writeln!(
            t,
            "\nDiskSim aborted on {} of {} models (not compared):",
            s.oracle_failed.len(),
            s.models
        );
        for f in s.oracle_failed.iter().take(8) {
            let _ = writeln!(t, "  {:<14} {}", f.name, f.why);
        }
    }
    t
}
