//! The file side of spindle's drivers, shared by the command line and the Python package:
//! the openers an experiment's run is handed (its files, its trace, its validate trace,
//! paths taken from the experiment file's folder first) and a sweep's points run on worker
//! threads. The core (`spindle`) does no I/O and starts no threads; this crate does both.

pub mod replay;

use spindle::config::{ConfigError, ValidateSpec};
use spindle::metrics::Report;
use spindle::sim::ReplayRequests;
use spindle::sweep::Sweep;
use spindle::validate::{ValidateReader, ValidateTraceError};
use spindle::workload::trace;
use std::io::BufRead;
use std::path::{Path, PathBuf};

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

/// A trace file opened for reading, gzip and bzip2 undone; errors name the path.
pub fn open_input(path: &Path) -> Result<Box<dyn BufRead>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (_, input) = trace::decompress(std::io::BufReader::with_capacity(1 << 16, file))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(input)
}

/// Reads a validate-format trace and counts its records, stopping at the first bad line.
pub fn count_validate_records(path: &Path) -> Result<u64, String> {
    let mut n = 0u64;
    for r in ValidateReader::new(open_input(path)?) {
        r.map_err(|e| format!("{}: {e}", path.display()))?;
        n += 1;
    }
    Ok(n)
}

/// The opener handed to the core for `kind = "validate"` workloads: paths are relative to
/// `base` (the experiment file's folder) first. The trace is read twice: a first pass counts
/// the requests and reports a bad line before anything runs.
pub fn validate_opener(
    base: Option<&Path>,
) -> impl Fn(&ValidateSpec, u32) -> Result<(ReplayRequests<'static>, Option<u64>), String> + '_ {
    move |spec: &ValidateSpec, sector_bytes: u32| {
        let p = Path::new(&spec.path);
        let path = match base {
            Some(dir) if p.is_relative() && dir.join(p).exists() => dir.join(p),
            _ => p.to_path_buf(),
        };
        let count = count_validate_records(&path)?;
        if count == 0 {
            return Err(format!("{}: no requests to replay", path.display()));
        }
        let shown = path.display().to_string();
        let requests: ReplayRequests<'static> =
            Box::new(ValidateReader::new(open_input(&path)?).map(move |r| {
                r.map(|r| r.replay_request(sector_bytes))
                    .map_err(|e: ValidateTraceError| format!("{shown}: {e}"))
            }));
        Ok((requests, Some(count)))
    }
}

/// Checks every point of `sweep` before any runs (a bad value in the last point fails at
/// once), on `pool`'s workers; the first failing point's error.
pub fn check_points(
    sweep: &Sweep,
    base: Option<&Path>,
    pool: &rayon::ThreadPool,
) -> Result<(), ConfigError> {
    use rayon::prelude::*;
    let read_file = reader_relative_to(base);
    let open_trace = replay::opener(base);
    let open_validate = validate_opener(base);
    let checked: Vec<Result<(), ConfigError>> = pool.install(|| {
        (0..sweep.len())
            .into_par_iter()
            .map(|i| {
                sweep
                    .point(i)?
                    .check(&read_file, &open_trace, &open_validate)
                    .map_err(|e| sweep.point_error(i, e))
            })
            .collect()
    });
    checked.into_iter().find(Result::is_err).unwrap_or(Ok(()))
}

/// Runs point `i` of `sweep` (files named relative to `base`); errors name the point.
pub fn run_point(sweep: &Sweep, base: Option<&Path>, i: usize) -> Result<Report, ConfigError> {
    let read_file = reader_relative_to(base);
    let open_trace = replay::opener(base);
    let open_validate = validate_opener(base);
    sweep.point(i).and_then(|p| {
        p.run_with(
            &read_file,
            &open_trace,
            &open_validate,
            &mut |_, _, _, _| {},
        )
        .map_err(|e| sweep.point_error(i, e))
    })
}

/// Runs every point of `sweep` on `pool`'s workers and returns the reports in point order;
/// `done` is called as each point ends. The costliest points start first, each worker taking
/// the next point in that order when it is free (rayon's splitting of the index range would
/// leave the order to chance: slow eager-writing points landing last kept the other workers
/// idle). Files are named relative to `base`.
pub fn run_points(
    sweep: &Sweep,
    base: Option<&Path>,
    pool: &rayon::ThreadPool,
    done: &(dyn Fn() + Sync),
) -> Vec<Result<Report, ConfigError>> {
    let order = sweep.longest_first();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Result<Report, ConfigError>>>> = (0..sweep.len())
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    pool.scope(|s| {
        for _ in 0..pool.current_num_threads() {
            s.spawn(|_| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&i) = order.get(k) else {
                    break;
                };
                let report = run_point(sweep, base, i);
                done();
                *slots[i].lock().expect("a worker panicked") = Some(report);
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .expect("a worker panicked")
                .expect("every point ran")
        })
        .collect()
}
