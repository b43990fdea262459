//! The ext4 + PostgreSQL recipe of docs/emulator.md, end to end: `scripts/ext4_pgbench.sh`
//! serves the 6-disk RAID-10 example with this build's `spindle`, puts ext4 on it through
//! nbdfuse and a loop device (direct I/O, 4 KiB sectors), runs pgbench on a PostgreSQL
//! cluster there and tears everything down; with `--record`, the pgbench run's host requests
//! are recorded (`spindle serve --record`) and read back with spindle's trace reader.
//!
//! Needs root (or passwordless sudo), /dev/fuse, a free loop device, nbdfuse, e2fsprogs and
//! the PostgreSQL server binaries. A missing tool or package skips the test with the reason,
//! unless `SPINDLE_REQUIRE_NBD_TOOLS=1` (CI installs the Debian packages and sets it), which
//! makes it a failure; what no package brings (root, /dev/fuse, a loop device) always skips
//! with the reason.

use spindle::workload::trace::{self, TraceFormat};
use std::path::PathBuf;
use std::process::{Command, Output};

fn require_tools() -> bool {
    std::env::var("SPINDLE_REQUIRE_NBD_TOOLS").is_ok_and(|v| v == "1")
}

/// Skips (or, when prerequisites are required, fails) with `why`.
fn missing(why: &str) {
    assert!(!require_tools(), "{why}, and SPINDLE_REQUIRE_NBD_TOOLS=1");
    eprintln!("skipping: {why}");
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn succeeds(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `bash script args` with the given environment, as root: directly, or through `sudo -n`.
fn script(sudo: bool, env: &[(&str, String)], args: &[&str]) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join("scripts/ext4_pgbench.sh");
    let mut cmd = if sudo {
        let mut c = Command::new("sudo");
        c.arg("-n").arg("env");
        for (k, v) in env {
            c.arg(format!("{k}={v}"));
        }
        c.arg("timeout");
        c
    } else {
        let mut c = Command::new("timeout");
        c.envs(env.iter().map(|(k, v)| (k, v)));
        c
    };
    // A hang guard: SIGTERM runs the script's teardown, SIGKILL 60 s later.
    cmd.args(["-k", "60", "600", "bash"])
        .arg(&script)
        .args(args)
        .current_dir(&root)
        .output()
        .expect("bash runs")
}

/// The number after `key` on the line that starts with it, e.g. `tps = 123.4 (...)`.
fn number_after(out: &str, key: &str) -> Option<f64> {
    let line = out.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .split_whitespace()
        .next()?
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()
}

#[test]
fn ext4_and_pgbench_on_an_emulated_raid10() {
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let sudo = !is_root;
    if sudo && !succeeds("sudo", &["-n", "true"]) {
        return eprintln!("skipping: needs root or passwordless sudo (loop devices, mounts)");
    }
    let mut env = vec![("SPINDLE", env!("CARGO_BIN_EXE_spindle").to_string())];
    if succeeds("python3", &["--version"]) {
        // Counts requests in flight and checks every one is 4 KiB-aligned.
        env.push(("COUNT_INFLIGHT", "1".to_string()));
    } else {
        eprintln!("python3 not installed: requests are not counted (scripts/nbd_inflight.py)");
    }
    let check = script(sudo, &env, &["--check"]);
    match check.status.code() {
        Some(3) => return missing(text(&check).trim()),
        // Privileges and devices no package installs: a skip even in CI.
        Some(4) => return eprintln!("skipping: {}", text(&check).trim()),
        _ => {}
    }
    assert!(check.status.success(), "--check failed:\n{}", text(&check));

    // The recording goes where the script's user (root) can write and the test can read.
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("pgbench.trace");
    let rec_arg = rec.to_string_lossy().into_owned();
    let o = script(
        sudo,
        &env,
        &[
            "--record",
            &rec_arg,
            "examples/emulator/raid10_6disks.toml",
            "4",
            "10",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let all = text(&o);
    eprintln!("{all}");
    assert!(o.status.success(), "the script failed:\n{all}");

    let tps = number_after(&out, "tps = ").unwrap_or_else(|| panic!("no tps line:\n{out}"));
    assert!(tps > 0.0, "tps = {tps}");
    let done = number_after(&out, "number of transactions actually processed: ")
        .unwrap_or_else(|| panic!("no transaction count:\n{out}"));
    assert!(done > 0.0, "{done} transactions");
    if out.contains("number of failed transactions") {
        assert!(
            out.contains("number of failed transactions: 0 "),
            "failed transactions:\n{out}"
        );
    }
    assert!(
        out.lines().any(|l| l.starts_with("e2fsck: clean")),
        "e2fsck -fn not clean:\n{out}"
    );

    // spindle stopped cleanly with its final statistics, and PostgreSQL's fsyncs reached
    // it as NBD flushes.
    assert!(out.contains("spindle exit status: 0 "), "{out}");
    let stopped = out
        .lines()
        .find(|l| l.starts_with("spindle serve: stopped: "))
        .unwrap_or_else(|| panic!("no final statistics:\n{all}"));
    let requests = number_after(stopped, "spindle serve: stopped: ").unwrap();
    assert!(requests > 1000.0, "{stopped}");
    let flushes: f64 = stopped
        .split_once(" flushes)")
        .and_then(|(before, _)| before.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no flush count in {stopped}"));
    assert!(flushes > 0.0, "{stopped}");

    // The recording: the pgbench run's reads and writes, 4 KiB-aligned (the loop device's
    // sector), in time order, spanning about the run's 10 s.
    let text =
        std::fs::read_to_string(&rec).unwrap_or_else(|e| panic!("{}: {e}\n{all}", rec.display()));
    let records: Vec<trace::TraceRecord> = trace::open(TraceFormat::DiskSim, text.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}", rec.display()));
    // About as many as the server answered between its statistics before and after the run
    // (the recording's window is those two instants). The recording counts the requests
    // that arrived in it, the statistics those answered, so they differ by the requests in
    // flight at its two edges: at most the NBD clients' queues, which `nbd_inflight` shows
    // at 5 a connection over 3 connections, so 32 is a bound with room (measured: 7). Not an
    // absolute count: how many requests pgbench makes in 10 s depends on the machine's load
    // (380 at a load of 8, 1,433 on an idle machine).
    let served = |when: &str| -> f64 {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("spindle {when} the run: ")))
            .unwrap_or_else(|| panic!("no statistics {when} the run:\n{out}"));
        let reads = line
            .split_once(" reads")
            .and_then(|(b, _)| b.rsplit(['(', ' ']).next()?.parse::<f64>().ok());
        let writes = line
            .split_once(" writes")
            .and_then(|(b, _)| b.rsplit(' ').next()?.parse::<f64>().ok());
        match (reads, writes) {
            (Some(r), Some(w)) => r + w,
            _ => panic!("no read and write counts in {line}"),
        }
    };
    let in_run = served("after") - served("before");
    assert!(
        in_run > 0.0 && (records.len() as f64 - in_run).abs() <= 32.0,
        "{} requests recorded, {in_run} served during the run",
        records.len()
    );
    assert!(
        records.iter().all(|r| r.lba % 8 == 0 && r.sectors % 8 == 0),
        "a request not 4 KiB-aligned"
    );
    assert!(records.windows(2).all(|w| w[0].arrival <= w[1].arrival));
    let span_s = (records[records.len() - 1].arrival.0 - records[0].arrival.0) as f64 / 1e9;
    assert!(
        (8.0..=12.5).contains(&span_s),
        "the recording spans {span_s} s"
    );
    assert!(text.lines().any(|l| l.starts_with("# flush ")), "no flush");
    assert!(
        out.contains("requests            : "),
        "no trace stats:\n{out}"
    );

    if env.iter().any(|(k, _)| *k == "COUNT_INFLIGHT") {
        let counted = out
            .lines()
            .find(|l| l.starts_with("nbd_inflight: connection"))
            .unwrap_or_else(|| panic!("no request count:\n{all}"));
        assert!(counted.contains("not 4096-aligned: 0"), "{counted}");
        // No TRIM: the recipe zeroes inode tables and journal in mkfs (WRITE_ZEROES) and
        // mounts without discard; a TRIM would be a timed write of zeroes on the disks.
        assert!(!counted.contains("trim "), "{counted}");
    }
}
