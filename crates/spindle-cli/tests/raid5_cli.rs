//! Parity arrays (`raid-5`, `raid-4`) from the CLI, as a user runs them.

use std::path::Path;
mod common;
use common::{spindle, stderr};

fn experiment(dir: &Path, body: &str) -> String {
    let path = dir.join("exp.toml");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

/// Two groups of five HP 97560s, 36 KiB stripe units, single 4 KiB blocks (never across a
/// unit): every write is one read-modify-write.
fn body(layout: &str, read_fraction: f64) -> String {
    format!(
        "seed = 3\n[drive]\nmodel = \"hp97560\"\n[array]\nlayout = \"{layout}\"\ndisks = 10\n\
         stripe_unit_bytes = 36864\nwrite_cache_bytes = 0\n[workload]\nkind = \"open\"\nrate_iops = 60\n\
         read_fraction = {read_fraction}\nsize_bytes = 4096\n[run]\nrequests = 2000\n"
    )
}

fn run_json(dir: &Path, body: &str) -> serde_json::Value {
    let exp = experiment(dir, body);
    let o = spindle(&["run", &exp, "--json", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

fn ops(v: &serde_json::Value) -> Vec<u64> {
    v["disks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["ops"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_small_write_costs_four_accesses_and_is_charged_to_host_writes() {
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(dir.path(), &body("raid-5", 0.0));
    // 2,000 single-block writes, each reading and writing its data and its parity.
    assert_eq!(ops(&v).iter().sum::<u64>(), 4 * 2000);
    for d in v["disks"].as_array().unwrap() {
        let c = &d["utilization_by_cause"];
        assert_eq!(c["host_read"].as_f64(), Some(0.0), "{d}");
        let u = d["utilization"].as_f64().unwrap();
        assert!((c["host_write"].as_f64().unwrap() - u).abs() < 1e-9, "{d}");
    }
    // Reads cost one access each.
    let v = run_json(dir.path(), &body("raid-5", 1.0));
    assert_eq!(ops(&v).iter().sum::<u64>(), 2000);
}

#[test]
fn raid_4_puts_every_parity_access_on_the_dedicated_disks() {
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(dir.path(), &body("raid-4", 0.0));
    let o = ops(&v);
    // Half of each write's four accesses are its parity's: all on disks 4 and 9.
    assert_eq!(o[4] + o[9], 2 * 2000, "{o:?}");
    // RAID-5 spreads them: no disk takes more than a fifth of all accesses plus noise
    // (2,000 writes over 10 disks: a disk's share varies by a few per cent).
    let v = run_json(dir.path(), &body("raid-5", 0.0));
    let o = ops(&v);
    assert!(o.iter().all(|&n| n < 8000 / 10 * 13 / 10), "{o:?}");
}

#[test]
fn impossible_parity_arrays_fail_with_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, key) in [
        ("disks = 7\n", "array.disks"),
        ("group_width = 2\n", "array.group_width"),
        (
            "parity_rotation = \"left-symmetric\"\n",
            "array.parity_rotation",
        ),
        ("reconstruct_fraction = 1.5\n", "array.reconstruct_fraction"),
        ("dm = 2\n", "array.dm"),
        ("ds = 9\n", "array.ds"),
    ] {
        let layout = if key == "array.parity_rotation" {
            "raid-4"
        } else {
            "raid-5"
        };
        let text = body(layout, 0.5)
            .replace("disks = 10\n", "")
            .replace("[array]\n", &format!("[array]\n{extra}"));
        let text = if extra.starts_with("disks") {
            text
        } else {
            text.replace("[array]\n", "[array]\ndisks = 10\n")
        };
        let exp = experiment(dir.path(), &text);
        let o = spindle(&["run", &exp]);
        assert!(!o.status.success(), "{extra} accepted");
        assert!(stderr(&o).contains(key), "{extra}: {}", stderr(&o));
    }
    // A parity key on another layout.
    let text = body("striping", 0.5).replace("[array]\n", "[array]\ngroup_width = 5\n");
    let o = spindle(&["run", &experiment(dir.path(), &text)]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("array.group_width"), "{}", stderr(&o));
}

#[test]
fn series_writes_the_write_cache_occupancy_over_time() {
    let dir = tempfile::tempdir().unwrap();
    let text = body("raid-5", 0.6).replace("write_cache_bytes = 0\n", "destage = \"high-low\"\n");
    let exp = experiment(dir.path(), &text);
    let csv = dir.path().join("occ.csv");
    let o = spindle(&[
        "run",
        &exp,
        "--quiet",
        "--series",
        csv.to_str().unwrap(),
        "--series-ms",
        "50",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "config,t_s,outstanding,backlog_ops,nvram_entries,occupied_blocks,occupancy,overflows"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // 2,000 requests at 60 IOPS: about 33 s of virtual time, a sample every 50 ms.
    assert!(rows.len() > 600, "{} samples", rows.len());
    for (i, r) in rows.iter().enumerate() {
        let t: f64 = r[1].parse().unwrap();
        assert!((t - 0.05 * i as f64).abs() < 1e-9, "sample {i} at {t}");
        let occ: f64 = r[6].parse().unwrap();
        assert!((0.0..=1.0).contains(&occ));
        // The occupancy is the occupied blocks over the 256-block (1 MiB) cache.
        let blocks: f64 = r[5].parse().unwrap();
        assert!((occ - blocks / 256.0).abs() < 1e-6);
    }
    // High/low mark lets the cache fill past its low mark before destaging.
    let peak = rows
        .iter()
        .map(|r| r[6].parse::<f64>().unwrap())
        .fold(0.0, f64::max);
    assert!(peak > 0.3, "peak occupancy {peak}");
    // A directory is never replaced, and nothing runs first.
    let o = spindle(&[
        "run",
        &exp,
        "--quiet",
        "--series",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    assert!(
        o.stdout.is_empty(),
        "no report before the output is known to be writable"
    );
}

#[test]
fn a_failed_disk_is_rebuilt_and_the_report_says_how_long_it_took() {
    let dir = tempfile::tempdir().unwrap();
    // 2 MB of data: 14 stripes of 36 KiB per group, rebuilt well inside the run.
    let b = body("raid-5", 0.5).replace(
        "write_cache_bytes = 0\n",
        "write_cache_bytes = 0\ndata_set_bytes = 2000000\nfailed_disk = 3\nfail_at_ms = 5000\n\
         rebuild_rate_mb_s = 0.1\n",
    );
    let v = run_json(dir.path(), &b);
    let r = &v["rebuild"];
    assert_eq!(r["disk"].as_u64(), Some(3));
    assert_eq!(r["failed_at_s"].as_f64(), Some(5.0));
    let total = r["stripes_total"].as_u64().unwrap();
    assert_eq!(r["stripes_done"].as_u64(), Some(total));
    // Paced at 0.1 MB/s: the last of `total` stripes of 36,864 bytes starts (total − 1) ×
    // 0.369 s after the rebuild's start and takes well under a second.
    let rebuild_s = v["rebuild_s"].as_f64().expect("the rebuild finished");
    let pace = 36_864.0 / 0.1e6;
    assert!(
        rebuild_s >= (total - 1) as f64 * pace && rebuild_s < (total - 1) as f64 * pace + 1.0,
        "{rebuild_s} s for {total} stripes"
    );
    assert!(r["during"]["requests"].as_u64().unwrap() > 0, "{r}");
    assert!(r["before_failure"]["requests"].as_u64().unwrap() > 0, "{r}");
    // The rebuild's disk time is accounted: on the spare (disk 3) it is all writes.
    let spare = &v["disks"][3]["utilization_by_cause"];
    assert!(spare["rebuild"].as_f64().unwrap() > 0.0, "{spare}");
    let healthy = run_json(dir.path(), &body("raid-5", 0.5));
    assert!(healthy.get("rebuild").is_none() && healthy.get("rebuild_s").is_none());
}

#[test]
fn failure_keys_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, key) in [
        ("fail_at_ms = 10\n", "array.fail_at_ms"),
        ("failed_disk = 10\n", "array.failed_disk"),
        ("failed_disk = 1\nfail_at_ms = -1\n", "array.fail_at_ms"),
        (
            "failed_disk = 1\nrebuild = false\nrebuild_rate_mb_s = 1\n",
            "array.rebuild_rate_mb_s",
        ),
        (
            "failed_disk = 1\nrebuild_rate_mb_s = 0.0001\n",
            "array.rebuild_rate_mb_s",
        ),
    ] {
        let b = body("raid-5", 0.5).replace(
            "write_cache_bytes = 0\n",
            &format!("write_cache_bytes = 0\n{extra}"),
        );
        let exp = experiment(dir.path(), &b);
        let o = spindle(&["run", &exp, "--quiet"]);
        assert!(!o.status.success(), "{extra}");
        assert!(stderr(&o).contains(key), "{extra}: {}", stderr(&o));
    }
    let b = body("striping", 0.5).replace("write_cache_bytes = 0\n", "failed_disk = 1\n");
    let o = spindle(&["run", &experiment(dir.path(), &b), "--quiet"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("array.failed_disk"), "{}", stderr(&o));
}

#[test]
fn the_channel_and_port_keys_are_checked_and_slow_the_answers() {
    let dir = tempfile::tempdir().unwrap();
    for (layout, extra, key) in [
        ("raid-5", "io_bus_mb_s = -1\n", "array.io_bus_mb_s"),
        ("raid-5", "cache_port_mb_s = 5\n", "array.cache_port_mb_s"),
        ("striping", "io_bus_mb_s = 20\n", "array.io_bus_mb_s"),
    ] {
        let b = body(layout, 0.5).replace(
            "write_cache_bytes = 0\n",
            &format!("write_cache_bytes = 0\n{extra}"),
        );
        let o = spindle(&["run", &experiment(dir.path(), &b), "--quiet"]);
        assert!(!o.status.success(), "{layout} {extra}");
        assert!(stderr(&o).contains(key), "{extra}: {}", stderr(&o));
    }
    // The drives' own buffers only without a write cache; on striping, not a key at all.
    for (layout, cache, key) in [
        (
            "raid-5",
            "write_cache_bytes = 1048576\n",
            "array.drive_buffers",
        ),
        ("striping", "write_cache_bytes = 0\n", "array.drive_buffers"),
    ] {
        let b = body(layout, 0.5).replace(
            "write_cache_bytes = 0\n",
            &format!("{cache}drive_buffers = true\n"),
        );
        let o = spindle(&["run", &experiment(dir.path(), &b), "--quiet"]);
        assert!(!o.status.success(), "{layout}");
        assert!(stderr(&o).contains(key), "{layout}: {}", stderr(&o));
    }
    let b = body("raid-5", 0.5).replace(
        "write_cache_bytes = 0\n",
        "write_cache_bytes = 0\ndrive_buffers = true\n",
    );
    run_json(dir.path(), &b);
    // Reads of 4 KiB through a 1 MB/s channel take at least 4.096 ms more than without it.
    let mean = |extra: &str| {
        let b = body("raid-5", 1.0).replace(
            "write_cache_bytes = 0\n",
            &format!("write_cache_bytes = 0\n{extra}"),
        );
        run_json(dir.path(), &b)["latency"]["all"]["mean_ms"]
            .as_f64()
            .unwrap()
    };
    let (off, slow) = (mean("io_bus_mb_s = 0\n"), mean("io_bus_mb_s = 1\n"));
    assert!(slow >= off + 4.096, "{off} ms without, {slow} ms at 1 MB/s");
}
