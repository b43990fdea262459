//! Validation against the six real drives of DiskSim 4.0's `valid/` set
//! (`../shared/validation/disksim`, see its README): the demerit figure reproduces DiskSim's
//! published rms, the validate-trace reader reads every trace, and — the acceptance test —
//! spindle's simulated service times score at least as well as DiskSim's.
//!
//! The data is not in the repository: every test skips with a message when it is absent.
//! Expected numbers (request counts, means, DiskSim's rms) are read from the README table and
//! DiskSim's CDF files, never typed in here.

mod common;
use common::{no_files, no_trace};

use spindle::config::{Experiment, ValidateSpec};
use spindle::drive::{builtin_drive, disksim::import_parv, library, Drive};
use spindle::sim::ReplayRequests;
use spindle::validate::{self, rms_ms, DemeritHistogram, DiskSimCdfs, ValidateReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn data_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/validation/disksim");
    if dir.join("README.md").exists() {
        Some(dir)
    } else {
        spindle::testing::shared_missing(&format!(
            "the validation data is not at {} (see DESIGN.md: real data lives in ../shared)",
            dir.display()
        ));
        None
    }
}

/// One row of the README's drive table.
#[derive(Debug)]
struct Row {
    dir: String,
    requests: u64,
    measured_mean_ms: f64,
    disksim_rms_ms: f64,
}

/// Parses the README's table by its header names.
fn readme_rows(dir: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(dir.join("README.md")).expect("README.md is readable");
    let mut lines = text.lines().skip_while(|l| !l.starts_with("| dir |"));
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let header = cells(lines.next().expect("the README has a drive table"));
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h.starts_with(name))
            .unwrap_or_else(|| panic!("README table has no {name:?} column: {header:?}"))
    };
    let (c_dir, c_req, c_mean, c_rms) = (
        col("dir"),
        col("requests"),
        col("mean measured service"),
        col("DiskSim 4.0 rms"),
    );
    let rows: Vec<Row> = lines
        .skip(1) // the |---| line
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let c = cells(l);
            Row {
                dir: c[c_dir].clone(),
                requests: c[c_req].parse().expect("requests is a count"),
                measured_mean_ms: c[c_mean].parse().expect("mean is a number"),
                disksim_rms_ms: c[c_rms].parse().expect("rms is a number"),
            }
        })
        .collect();
    assert_eq!(rows.len(), 6, "the README lists six drives: {rows:?}");
    rows
}

fn trace_path(dir: &Path, drive: &str) -> PathBuf {
    dir.join(drive).join(format!("{drive}.trace"))
}

fn reader(path: &Path) -> ValidateReader<std::io::BufReader<std::fs::File>> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ValidateReader::new(std::io::BufReader::new(f))
}

fn disksim_cdfs(dir: &Path, drive: &str) -> DiskSimCdfs {
    let p = dir.join(drive).join("cdf_measured_vs_disksim.csv");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    DiskSimCdfs::parse_csv(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_demerit_reproduces_disksims_rms_from_its_cdfs() {
    let Some(dir) = data_dir() else { return };
    for row in readme_rows(&dir) {
        let ds = disksim_cdfs(&dir, &row.dir);
        let rms = ds.rms_ms();
        eprintln!(
            "{:<11} DiskSim rms from its CDFs {rms:.6} ms, README {:.3} ms",
            row.dir, row.disksim_rms_ms
        );
        assert!(
            (rms - row.disksim_rms_ms).abs() <= 1e-3,
            "{}: rms {rms:.6} ms vs DiskSim's published {:.3} ms",
            row.dir,
            row.disksim_rms_ms
        );
        assert_eq!(ds.measured_total, row.requests, "{}", row.dir);
    }
}

#[test]
fn binning_the_measured_times_reproduces_disksims_measured_cdf() {
    let Some(dir) = data_dir() else { return };
    for row in readme_rows(&dir) {
        let mut h = DemeritHistogram::new();
        for r in reader(&trace_path(&dir, &row.dir)) {
            h.add_ms_f64(r.expect("a valid line").measured_ms());
        }
        let ours = h.cdf().expect("the trace has requests");
        let theirs = disksim_cdfs(&dir, &row.dir).measured;
        assert_eq!(ours.points().len(), theirs.points().len(), "{}", row.dir);
        for (a, b) in ours.points().iter().zip(theirs.points()) {
            assert!(
                (a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9,
                "{}: our point {a:?} vs DiskSim's {b:?}",
                row.dir
            );
        }
        assert_eq!(rms_ms(&ours, &theirs), 0.0, "{}", row.dir);
    }
}

#[test]
fn the_reader_parses_all_six_traces() {
    let Some(dir) = data_dir() else { return };
    for row in readme_rows(&dir) {
        let path = trace_path(&dir, &row.dir);
        let mut n = 0u64;
        let mut sum_ms = 0.0;
        for r in reader(&path) {
            let r = r.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(r.sectors > 0 && r.measured_us > 0.0, "{}: {r:?}", row.dir);
            n += 1;
            sum_ms += r.measured_ms();
        }
        assert_eq!(n, row.requests, "{}: request count", row.dir);
        let mean = sum_ms / n as f64;
        assert!(
            (mean - row.measured_mean_ms).abs() < 1e-3,
            "{}: mean measured {mean:.4} ms vs README {:.3} ms",
            row.dir,
            row.measured_mean_ms
        );
    }
}

#[test]
fn malformed_validate_lines_give_line_numbered_errors() {
    let Some(dir) = data_dir() else { return };
    let text = std::fs::read_to_string(trace_path(&dir, "cheetah9LP")).expect("trace");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[4_999] = format!("Q{}", &lines[4_999][1..]);
    lines[7_499] = "R Hit 100 4 12.5".to_string();
    lines[8_999] = "W Hit 100 0 12.5 3.0".to_string();
    let broken = lines.join("\n");
    let errs: Vec<String> = ValidateReader::new(broken.as_bytes())
        .filter_map(|r| r.err().map(|e| e.to_string()))
        .collect();
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert!(
        errs[0].starts_with("line 5000: field 1 (op): expected 'R' or 'W'"),
        "{}",
        errs[0]
    );
    assert!(
        errs[1].starts_with("line 7500: expected 6 fields"),
        "{}",
        errs[1]
    );
    assert!(
        errs[2].starts_with("line 9000: field 4 (nsectors): zero-size"),
        "{}",
        errs[2]
    );
    // A replay stops at the first bad line and names it.
    let drive = Arc::new(builtin_drive("cheetah9lp").expect("built-in drive"));
    let err = validate::replay(
        drive,
        ValidateReader::new(broken.as_bytes()),
        None,
        &mut |_, _| {},
    )
    .expect_err("a bad line stops the replay")
    .to_string();
    assert!(err.starts_with("line 5000: "), "{err}");
}

/// The model the acceptance test scores: the directory's `.parv` through the DiskSim import,
/// or — until the import lands — the built-in drive of the same name.
fn model(dir: &Path, drive: &str) -> (Drive, String) {
    let parv = dir.join(drive).join(format!("{drive}.parv"));
    let base = parv.parent().expect("a parent").to_path_buf();
    let read = move |name: &str| -> Result<String, String> {
        let p = Path::new(name);
        let p = if p.is_absolute() || p.exists() {
            p.to_path_buf()
        } else {
            base.join(p)
        };
        std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))
    };
    match import_parv(&parv.display().to_string(), &read) {
        Ok(spec) => (
            Drive::from_spec(&spec).unwrap_or_else(|e| panic!("{}: {e}", parv.display())),
            format!("{drive}.parv"),
        ),
        Err(e) => {
            let id = drive.to_ascii_lowercase();
            assert!(library::builtin_spec(&id).is_some(), "no built-in {id}");
            eprintln!("{drive}: .parv import failed ({e}); using built-in {id}");
            (
                builtin_drive(&id).expect("built-in drive"),
                format!("built-in {id}"),
            )
        }
    }
}

/// Replays every drive of the README's table on its imported `.parv` model: one line of
/// results per drive (measured mean, simulated mean, rms, DiskSim's rms).
fn replay_all(dir: &Path) -> Vec<(String, validate::Validation, f64)> {
    readme_rows(dir)
        .into_iter()
        .map(|row| {
            let (drive, what) = model(dir, &row.dir);
            let v = validate::replay(Arc::new(drive), reader(&trace_path(dir, &row.dir)), Some(row.requests), &mut |_, _| {})
                .unwrap_or_else(|e| panic!("{}: {e}", row.dir));
            assert_eq!(v.requests, row.requests);
            let disksim = disksim_cdfs(dir, &row.dir).rms_ms();
            eprintln!(
                "{:<11} {what:<20} measured {:.3} ms, spindle {:.3} ms ({:+.1} %), rms {:.3} ms, DiskSim rms {disksim:.3} ms",
                row.dir,
                v.measured_mean_ms,
                v.simulated_mean_ms,
                v.mean_error_pct(),
                v.rms_ms
            );
            (row.dir.clone(), v, disksim)
        })
        .collect()
}

/// The bound on the mean: within 2 % of the real drive's measured mean service time,
/// on every drive.
#[test]
fn every_drive_simulated_mean_is_within_two_percent_of_measured() {
    let Some(dir) = data_dir() else { return };
    let off: Vec<String> = replay_all(&dir)
        .into_iter()
        .filter(|(_, v, _)| v.mean_error_pct().abs() > 2.0)
        .map(|(d, v, _)| format!("{d}: {:+.2} %", v.mean_error_pct()))
        .collect();
    assert!(off.is_empty(), "simulated mean more than 2 % off: {off:?}");
}

/// The bound on the distribution: rms no worse than DiskSim 4.0's on every drive,
/// from the same parameter files (measured 2026-11-22: atlas10k 0.133 vs 0.268, cheetah9LP
/// 0.096 vs 0.107, dec_rz26 0.327 vs 0.341, hp_c2247a 0.087 vs 0.090, hp_c2490a 0.250 vs
/// 0.254, ibm18es 0.108 vs 0.136 ms). No tolerance: the issue asks for "at least as well".
#[test]
fn every_drive_rms_is_at_most_disksims() {
    let Some(dir) = data_dir() else { return };
    let worse: Vec<String> = replay_all(&dir)
        .into_iter()
        .filter(|(_, v, disksim)| v.rms_ms > *disksim)
        .map(|(d, v, disksim)| format!("{d}: {:.3} > {disksim:.3} ms", v.rms_ms))
        .collect();
    assert!(worse.is_empty(), "rms above DiskSim's: {worse:?}");
}

#[test]
fn an_experiment_with_a_validate_workload_replays_like_the_validator() {
    let Some(dir) = data_dir() else { return };
    let path = trace_path(&dir, "hp_c2247a");
    let open = |spec: &ValidateSpec,
                sector_bytes: u32|
     -> Result<(ReplayRequests<'static>, Option<u64>), String> {
        let f = std::fs::File::open(&spec.path).map_err(|e| e.to_string())?;
        let requests: ReplayRequests<'static> = Box::new(
            ValidateReader::new(std::io::BufReader::new(f)).map(move |r| {
                r.map(|r| r.replay_request(sector_bytes))
                    .map_err(|e| e.to_string())
            }),
        );
        Ok((requests, None))
    };
    let text = format!(
        "[drive]\nmodel = \"hp_c2247a\"\n[array]\nrandom_phase = false\n[workload]\nkind = \"validate\"\n\
         [workload.validate]\npath = {:?}\n",
        path.display().to_string()
    );
    let exp = Experiment::parse(&text, "validate.toml", &[]).expect("a valid experiment");
    let report = exp
        .run_with(&no_files, &no_trace, &open, &mut |_, _, _, _| {})
        .expect("the experiment runs");
    let drive = Arc::new(builtin_drive("hp_c2247a").expect("built-in drive"));
    let v = validate::replay(drive, reader(&path), None, &mut |_, _| {}).expect("replay");
    assert_eq!(report.requests, v.requests);
    assert!(
        report.workload.starts_with("validate trace"),
        "{}",
        report.workload
    );
    // The report's mean comes from an HDR histogram (3 significant digits).
    let (a, b) = (report.latency.all.mean_ms, v.simulated_mean_ms);
    assert!(
        (a - b).abs() / b < 2e-3,
        "experiment mean {a} ms vs validator {b} ms"
    );

    // Without an opener, the plain `run` refuses the workload by its key.
    let err = exp
        .run(&no_files, &no_trace, &mut |_, _, _, _| {})
        .expect_err("run has no validate opener")
        .to_string();
    assert!(err.contains("workload.validate.path"), "{err}");
}

/// With an on-disk buffer the scheduler must plan from when the arm is free and include the
/// drive's command overhead: then SATF > LOOK > FCFS holds at Q = 8 on every imported
/// DiskSim drive, as on the buffer-less library drives (paper_models.rs).
#[test]
fn satf_beats_look_beats_fcfs_on_every_imported_drive() {
    let Some(dir) = data_dir() else { return };
    let read = |p: &str| std::fs::read(p).map_err(|e| format!("{p}: {e}"));
    for row in readme_rows(&dir) {
        let sub = dir.join(&row.dir);
        let parv = std::fs::read_dir(&sub)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "parv"))
            .unwrap();
        let iops = |sched: &str| {
            let text = format!(
                "seed = 3\n[drive]\nmodel = {:?}\n[array]\nscheduler = \"{sched}\"\n[workload]\nkind = \"closed\"\nqueue_depth = 8\nread_fraction = 0.6\n[run]\nrequests = 6000\n",
                parv.display().to_string()
            );
            let exp = Experiment::parse(&text, "test", &[]).unwrap();
            exp.run(&read, &no_trace, &mut |_, _, _, _| {})
                .unwrap()
                .throughput_iops
        };
        let (satf, look, fcfs) = (iops("satf"), iops("look"), iops("fcfs"));
        assert!(
            satf > look && look > fcfs,
            "{}: SATF {satf:.1}, LOOK {look:.1}, FCFS {fcfs:.1} IOPS",
            row.dir
        );
    }
}
