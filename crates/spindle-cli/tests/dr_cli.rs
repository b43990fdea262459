//! `spindle dr`: the power-aware DR secondary from the command line, on a block trace's
//! writes (a generated DiskSim ASCII trace), its report and its errors; and, when the
//! PostgreSQL server binaries are here, on a real pgbench WAL (`scripts/pgbench_wal.sh`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn spindle(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spindle"))
        .args(args)
        .output()
        .expect("spindle runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spindle-dr-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An OLTP-like write stream: every `gap_ms` a write of 8 KiB to one of `pages` hot pages
/// (a fixed pseudo-random walk), with a read every fourth request (not forwarded).
fn write_trace(dir: &Path, n: u64, gap_ms: f64, pages: u64) -> PathBuf {
    let p = dir.join("oltp.trace");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    let mut x = 12345u64;
    for i in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let page = (x >> 33) % pages;
        let read = i % 4 == 3;
        writeln!(
            f,
            "{:.3} 0 {} 16 {}",
            i as f64 * gap_ms,
            page * 16,
            u8::from(read)
        )
        .unwrap();
    }
    p
}

fn experiment(dir: &Path, trace: &Path, dr: &str) -> PathBuf {
    let p = dir.join("dr.toml");
    std::fs::write(
        &p,
        format!(
            r#"seed = 1
name = "deferred"
[drive]
model = "ibm36z15"
[array]
layout = "jbod"
disks = 1
[workload]
kind = "dr"
[workload.trace]
path = "{}"
format = "disksim"
[workload.dr]
{dr}
"#,
            trace.display()
        ),
    )
    .unwrap();
    p
}

#[test]
fn a_block_trace_secondary_keeps_its_rto_and_saves_energy() {
    let dir = tmpdir("trace");
    // 400,000 requests 50 ms apart: 20,000 s, 300,000 writes of 8 KiB (2.5 GB of log)
    // over 20,000 pages.
    let trace = write_trace(&dir, 400_000, 50.0, 20_000);
    let exp = experiment(&dir, &trace, "window_mb = 64\nrto_s = 100");
    let o = spindle(&["--quiet", "dr", exp.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let dr = &j["dr"];
    assert_eq!(
        dr["stream"]["records"], 300_000,
        "writes only: {}",
        dr["stream"]
    );
    assert_eq!(dr["stream"]["page_updates"], 300_000);
    let plan = &dr["plan"];
    let worst = plan["worst_recovery_s"].as_f64().unwrap();
    assert!(worst <= 100.0, "worst recovery {worst} s within the RTO");
    let batches = plan["batch_list"].as_array().unwrap();
    assert!(batches.len() >= 4, "several batches: {}", batches.len());
    // At a steady rate the plan comes to the paper's closed form, give or take the
    // granularity of its decisions: one window's filling time (W / R_gen).
    let interval = plan["mean_batch_interval_s"].as_f64().unwrap();
    let closed = dr["closed_form"]["batch_interval_s"].as_f64().unwrap();
    let fill = dr["window_mb"].as_f64().unwrap() / dr["stream"]["rgen_mb_s"].as_f64().unwrap();
    assert!(
        (interval - closed).abs() <= fill,
        "batch interval {interval:.0} s against the closed form {closed:.0} s (window fills in {fill:.0} s)"
    );
    for b in batches {
        assert!(b["worst_recovery_s"].as_f64().unwrap() <= 100.0, "{b}");
        assert!(b["apply_until_s"].as_f64() >= b["apply_from_s"].as_f64());
    }
    // The deferred volume sleeps most of the time and draws less than the immediate one,
    // which writes 15 pages/s at random and never sleeps.
    let e = &plan["energy"];
    let saving = e["saving"].as_f64().unwrap();
    assert!(saving > 0.5, "saving {saving}: {e}");
    assert!(
        plan["state_s"]["sleeping"].as_f64().unwrap() > 5_000.0,
        "{}",
        plan["state_s"]
    );
    // The report's energy fields are the deferred timeline's, over the stream's duration.
    let total = j["energy"]["total_j"].as_f64().unwrap();
    assert!((total - e["deferred_j"].as_f64().unwrap()).abs() < 1e-6 * total);
    assert_eq!(j["disks"][0]["spin_ups"], plan["spin_ups"]);
    assert!(dr.get("infeasible").is_none());
    // The immediate secondary is the compare row.
    assert_eq!(j["compare"][0]["label"], "immediate");
    assert_eq!(j["compare"][0]["saturated"], false);
    // The table says it too.
    let o = spindle(&["--quiet", "dr", exp.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("DR secondary") && table.contains("worst recovery time"),
        "{table}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn impossible_secondaries_are_refused_naming_the_key() {
    let dir = tmpdir("errors");
    let trace = write_trace(&dir, 2_000, 50.0, 1_000);
    let cases = [
        // The 36Z15 needs 15 s to spin down and 26 s to spin up.
        (
            "window_mb = 8\nrto_s = 30",
            "workload.dr.rto_s",
            "below the spin-down and spin-up penalties",
        ),
        (
            "window_mb = 0\nrto_s = 100",
            "workload.dr.window_mb",
            "must be a positive number",
        ),
        (
            "window_mb = 8\nrto_s = 100\nspeedup = -1",
            "workload.dr.speedup",
            "positive",
        ),
        (
            "window_mb = 8\nrto_s = 100\nbogus = 1",
            "bogus",
            "unknown field",
        ),
        (
            "window_mb = 8\nrto_s = 100\nwal = \"x.txt\"",
            "workload.dr.wal",
            "not both",
        ),
    ];
    for (dr, key, why) in cases {
        let exp = experiment(&dir, &trace, dr);
        let o = spindle(&["--quiet", "dr", exp.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{dr}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(key) && e.contains(why), "{dr}: {e}");
        assert!(e.contains("dr.toml: line"), "names the file and line: {e}");
    }
    // In a sweep an infeasible point is a row that says why, not an abort.
    let exp = experiment(
        &dir,
        &trace,
        "window_mb = 8\nrto_s = 100\n[[axis]]\nkey = \"workload.dr.rto_s\"\nvalues = [30, 100]",
    );
    let o = spindle(&["--quiet", "sweep", exp.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = o
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert!(
        rows[0]["dr"]["infeasible"]
            .as_str()
            .unwrap()
            .contains("penalties"),
        "{}",
        rows[0]
    );
    assert!(rows[0]["dr"]["dr_saving"].is_null() || rows[0]["dr"]["saving"].is_null());
    assert!(rows[1]["dr"].get("infeasible").is_none(), "{}", rows[1]);
    assert!(
        rows[1]["dr"]["saving"].as_f64().unwrap() > 0.0,
        "{}",
        rows[1]
    );
    let o = spindle(&["--quiet", "sweep", exp.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("INFEASIBLE"));
    // `spindle dr` runs DR experiments only; a drive without power data is refused.
    let o = spindle(&["--quiet", "dr", "../../examples/look_vs_queue.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("kind = \"dr\""), "{}", stderr(&o));
    let exp = experiment(&dir, &trace, "window_mb = 8\nrto_s = 100");
    let text = std::fs::read_to_string(&exp)
        .unwrap()
        .replace("ibm36z15", "st39133lwv");
    std::fs::write(&exp, text).unwrap();
    let o = spindle(&["--quiet", "dr", exp.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no [power] data"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}
