//! `spindle trace …` end to end: the built binary on the shared samples and on small fixtures.

use std::path::{Path, PathBuf};
mod common;
use common::{spindle, stderr, stdout};
use std::process::Output;

use spindle::workload::trace::{self, TraceFormat, TraceRecord};
use spindle::{Nanos, Op};

/// `shared/traces/<rel>`, or `None` (with a message) when the shared folder is absent.
fn shared(rel: &str) -> Option<String> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces")
        .join(rel);
    if p.exists() {
        Some(p.to_string_lossy().into_owned())
    } else {
        spindle::testing::shared_missing(&format!(
            "{} is absent (shared traces not available)",
            p.display()
        ));
        None
    }
}

fn read_records(path: &Path, format: TraceFormat) -> Vec<TraceRecord> {
    let f = std::fs::File::open(path).expect("output exists");
    trace::open(format, std::io::BufReader::new(f))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "stderr: {}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("one JSON object on stdout")
}

#[test]
fn stats_table_of_the_disksim_example() {
    let Some(p) = shared("disksim_example_ascii_18disk/ascii.trace") else {
        return;
    };
    let o = spindle(&["trace", "stats", &p]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    // Values from the folder's STATS.txt.
    for want in [
        "(disksim)",
        "requests            : 100,000 (reads 79,634, writes 20,366)",
        "79.6% / 20.4%",
        "time span           : 1532.936 s",
        "min 512 B, p50 3.5 KiB",
        "512 B 30.16%, 7.5 KiB 19.44%",
        "LBA (512-B sectors) : min 0, max 2,376,005",
        "devices             : 14",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // The device table lists the busiest device (14: 19,968 requests) first.
    let first_row = out
        .lines()
        .skip_while(|l| l.split_whitespace().next() != Some("device"))
        .nth(1)
        .expect("a device row");
    assert!(
        first_row.split_whitespace().take(2).eq(["14", "19,968"]),
        "{first_row}"
    );
}

#[test]
fn stats_json_agrees_with_stats_txt() {
    // (file, --format, requests, read %, devices) from each folder's STATS.txt.
    let cases: [(&str, Option<&str>, u64, f64, u64); 5] = [
        (
            "msnfs_fileserver_replayer/MSN-FS-30s-ms",
            None,
            149_999,
            87.0,
            1,
        ),
        (
            "oltp_tpcc_mqsim/tpcc-small.trace",
            Some("mqsim"),
            6_999,
            62.6,
            16,
        ),
        (
            "oltp_umass_financial1_head/Financial_mini.spc",
            None,
            949,
            19.3,
            16,
        ),
        (
            "msr_and_cloud_samples/cloud_storage-sample.bz2",
            None,
            50_000,
            49.0,
            2_038,
        ),
        ("blkparse_sample_apress/blktrace.txt", None, 170, 45.9, 1),
    ];
    for (rel, format, requests, read_pct, devices) in cases {
        let Some(p) = shared(rel) else { continue };
        let mut args = vec!["trace", "stats", "--json", &p];
        if let Some(f) = format {
            args.extend(["--format", f]);
        }
        let v = json(&spindle(&args));
        assert_eq!(v["requests"].as_u64(), Some(requests), "{rel}");
        let got = v["read_pct"].as_f64().expect("a number");
        assert!(
            (got - read_pct).abs() < 0.05,
            "{rel}: read {got}% (STATS.txt rounds to 0.1)"
        );
        assert_eq!(v["device_count"].as_u64(), Some(devices), "{rel}");
        assert_eq!(
            v["devices"].as_array().expect("a list").len() as u64,
            devices,
            "{rel}"
        );
        assert!(
            v["seek_locality"].as_f64().is_some_and(|l| l > 0.0),
            "{rel}: L present"
        );
        assert_eq!(v["path"].as_str(), Some(p.as_str()));
    }
    if let Some(p) = shared("msr_and_cloud_samples/cloud_storage-sample.bz2") {
        let v = json(&spindle(&["trace", "stats", "--json", &p]));
        assert_eq!(
            (v["format"].as_str(), v["compression"].as_str()),
            (Some("tencent"), Some("bzip2"))
        );
        assert_eq!(
            v["time"]["nonmonotonic_records"].as_u64(),
            Some(144),
            "STATS.txt: non-monotonic records: 144"
        );
    }
}

#[test]
fn ambiguous_content_needs_a_format() {
    let Some(p) = shared("websearch_umass_mqsim/wsrch-small.trace") else {
        return;
    };
    let o = spindle(&["trace", "stats", &p]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!(
            "spindle: {p}: cannot detect the trace format: the first lines read as disksim or mqsim; pass the \
             format explicitly (integer times: milliseconds for disksim, nanoseconds for mqsim)\n"
        )
    );
    let v = json(&spindle(&["trace", "stats", "-f", "mqsim", "--json", &p]));
    assert_eq!(v["requests"].as_u64(), Some(24_783));
}

#[test]
fn a_bad_line_names_the_file_and_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let p = dir.path().join("trace.txt");
    std::fs::write(&p, "1.0 0 0 8 1\n2.0 0 0 8 zz\n").expect("write fixture");
    let ps = p.to_str().expect("UTF-8 path");
    let o = spindle(&["trace", "stats", "--format", "disksim", ps]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!("spindle: {ps}: line 2: field 5 (flags): expected a hex number, got \"zz\"\n")
    );
    assert!(o.stdout.is_empty(), "nothing printed on failure");
    // Without --format, detection explains which line spoils the guess.
    let o = spindle(&["trace", "stats", ps]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the lines before line 2 read as disksim, but line 2 does not"),
        "{}",
        stderr(&o)
    );
    let o = spindle(&["trace", "stats", "/nonexistent/trace.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("spindle: /nonexistent/trace.txt: "),
        "{}",
        stderr(&o)
    );
    let o = spindle(&["trace", "stats", "--format", "nope", ps]);
    assert_eq!(o.status.code(), Some(2), "clap usage error");
    assert!(
        stderr(&o).contains("unknown trace format \"nope\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn convert_round_trips_through_every_writable_format() {
    let Some(src) = shared("disksim_example_ascii_18disk/ascii.trace") else {
        return;
    };
    let original = read_records(Path::new(&src), TraceFormat::DiskSim);
    assert_eq!(original.len(), 100_000);
    let dir = tempfile::tempdir().expect("temp dir");
    for to in ["mqsim", "spc", "disksim"] {
        let mid = dir.path().join(format!("mid.{to}"));
        let back = dir.path().join(format!("back-from-{to}.txt"));
        let (m, b) = (mid.to_str().expect("UTF-8"), back.to_str().expect("UTF-8"));
        let o = spindle(&["--quiet", "trace", "convert", &src, m, "--to", to]);
        assert!(o.status.success(), "{to}: {}", stderr(&o));
        assert!(
            o.stderr.is_empty(),
            "--quiet prints nothing: {}",
            stderr(&o)
        );
        let o = spindle(&["trace", "convert", m, b, "--from", to, "--to", "disksim"]);
        assert!(o.status.success(), "{to}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("wrote 100,000 records"),
            "{}",
            stderr(&o)
        );
        assert_eq!(
            read_records(&back, TraceFormat::DiskSim),
            original,
            "via {to}"
        );
    }
    // MSR and fio keep 100 ns and 1 µs: compare after rebasing and truncating.
    for (to, unit_ns) in [("msr", 100u64), ("fio3", 1_000)] {
        let mid = dir.path().join(format!("mid.{to}"));
        let m = mid.to_str().expect("UTF-8");
        let o = spindle(&["trace", "convert", &src, m, "--to", to, "--devices", "14"]);
        assert!(o.status.success(), "{to}: {}", stderr(&o));
        let got = read_records(&mid, to.parse().expect("a format"));
        let dev14: Vec<&TraceRecord> = original.iter().filter(|r| r.device == 14).collect();
        assert_eq!(got.len(), 19_968, "device 14's requests (STATS.txt)");
        let t0 = if to == "msr" {
            dev14[0].arrival.0 / 100 * 100
        } else {
            0
        };
        for (g, o) in got.iter().zip(&dev14) {
            let want_t = o.arrival.0 / unit_ns * unit_ns - t0;
            assert_eq!(
                (g.arrival.0, g.lba, g.sectors, g.op),
                (want_t, o.lba, o.sectors, o.op),
                "{to}"
            );
            assert_eq!(
                g.device,
                if to == "fio3" { 0 } else { 14 },
                "fio renumbers devices from 0"
            );
        }
    }
}

#[test]
fn convert_concatenates_filters_and_speeds_up() {
    let Some(src) = shared("oltp_tpcc_mqsim/tpcc-small.trace") else {
        return;
    };
    let original = read_records(Path::new(&src), TraceFormat::MqSim);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("lds.disksim");
    let o = spindle(&[
        "trace",
        "convert",
        &src,
        out.to_str().expect("UTF-8"),
        "--from",
        "mqsim",
        "--to",
        "disksim",
        "--devices",
        "8,9",
        "--concat",
        "--speedup",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("device 8: 454,518,380 sectors at logical sector 0"),
        "{err}"
    );
    assert!(
        err.contains("device 9: 378,506,170 sectors at logical sector 454,518,380"),
        "{err}"
    );
    let got = read_records(&out, TraceFormat::DiskSim);
    let kept: Vec<&TraceRecord> = original
        .iter()
        .filter(|r| r.device == 8 || r.device == 9)
        .collect();
    assert_eq!(got.len(), kept.len());
    assert_eq!(
        kept.len(),
        150 + 486,
        "LUN 8 and LUN 9 (STATS.txt / README)"
    );
    let t0 = kept[0].arrival.0;
    for (g, k) in got.iter().zip(&kept) {
        let base = if k.device == 8 { 0 } else { 454_518_380 };
        let want = TraceRecord {
            arrival: Nanos((k.arrival.0 - t0) / 2),
            device: 0,
            lba: base + k.lba,
            ..**k
        };
        assert_eq!(*g, want);
    }
}

#[test]
fn unsorted_traces_need_sort_before_a_speed_up() {
    let Some(src) = shared("msr_and_cloud_samples/systor17-traces-sample.csv.gz") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("s.mqsim");
    let o2 = out.to_str().expect("UTF-8");
    let o = spindle(&[
        "trace",
        "convert",
        &src,
        o2,
        "--to",
        "mqsim",
        "--speedup",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "record 2: arrival 1456095145126285000 ns is earlier than the previous record's"
        ),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("--sort"),
        "the message says how to fix it"
    );
    assert!(!out.exists(), "no output after a failure");
    let o = spindle(&[
        "trace",
        "convert",
        &src,
        o2,
        "--to",
        "mqsim",
        "--speedup",
        "1",
        "--sort",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let recs = read_records(&out, TraceFormat::MqSim);
    assert_eq!(recs.len(), 999);
    assert_eq!(recs[0].arrival, Nanos(0));
    assert!(
        recs.windows(2).all(|w| w[0].arrival <= w[1].arrival),
        "sorted"
    );
    assert_eq!(recs[998].arrival, Nanos(2_447_767_000), "the span");
}

#[test]
fn a_failed_conversion_leaves_no_partial_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("in.txt");
    let mut text = String::new();
    for i in 0..5_000 {
        text.push_str(&format!("{i}.5 0 {i} 8 1\n"));
    }
    text.push_str("9999.0 0 0 0 1\n"); // zero-size request: an error at line 5001
    std::fs::write(&input, text).expect("write fixture");
    let out = dir.path().join("out.mqsim");
    std::fs::write(&out, "previous contents\n").expect("write");
    let (i, o) = (input.to_str().expect("UTF-8"), out.to_str().expect("UTF-8"));
    let r = spindle(&[
        "trace", "convert", i, o, "--from", "disksim", "--to", "mqsim",
    ]);
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(
        stderr(&r),
        format!("spindle: {i}: line 5001: field 4 (sectors): zero-size request\n")
    );
    assert_eq!(
        std::fs::read_to_string(&out).expect("still there"),
        "previous contents\n"
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file left behind: {names:?}");
    // Read-only formats are refused before anything is created.
    let r = spindle(&["trace", "convert", i, o, "--to", "blkparse"]);
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(
        stderr(&r),
        "spindle: cannot write blkparse traces (writable: disksim, mqsim, spc, msr, fio3)\n"
    );
}

#[test]
fn fio_logs_from_inline_fixtures() {
    let dir = tempfile::tempdir().expect("temp dir");
    let v2 = dir.path().join("v2.log");
    std::fs::write(
        &v2,
        "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb read 0 4096\n/dev/sdb wait 2000 0\n\
         /dev/sdb write 8192 8192\n/dev/sdb trim 0 4096\n/dev/sdb close\n",
    )
    .expect("write");
    let v = json(&spindle(&[
        "trace",
        "stats",
        "--json",
        v2.to_str().expect("UTF-8"),
    ]));
    assert_eq!(
        (
            v["format"].as_str(),
            v["requests"].as_u64(),
            v["reads"].as_u64()
        ),
        (Some("fio2"), Some(2), Some(1))
    );
    assert_eq!(
        v["time"]["span_ns"].as_u64(),
        Some(2_000_000),
        "one 2000 µs wait"
    );
    // fio2 → fio3 → records.
    let v3 = dir.path().join("v3.log");
    let o = spindle(&[
        "trace",
        "convert",
        v2.to_str().expect("UTF-8"),
        v3.to_str().expect("UTF-8"),
        "--to",
        "fio3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        read_records(&v3, TraceFormat::Fio3),
        vec![
            TraceRecord {
                arrival: Nanos(0),
                device: 0,
                lba: 0,
                sectors: 8,
                op: Op::Read
            },
            TraceRecord {
                arrival: Nanos(2_000_000),
                device: 0,
                lba: 16,
                sectors: 16,
                op: Op::Write
            },
        ]
    );
}

#[test]
fn formats_lists_every_format() {
    let o = spindle(&["trace", "formats"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert_eq!(out.lines().count(), TraceFormat::ALL.len());
    assert!(
        out.lines()
            .any(|l| l.starts_with("fio3") && l.contains("read/write")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("blkparse") && !l.contains("write")),
        "{out}"
    );
}

#[test]
fn split_kb_turns_requests_into_pages_in_convert_and_in_a_replay() {
    let dir = tempfile::tempdir().expect("temp dir");
    // DiskSim ASCII: ms, device, lbn, sectors, flags (1 = read). 12 KiB at sector 4 spans
    // three 4 KiB pages (sectors 4-7, 8-15, 16-27); 4 KiB at sector 64 is one page.
    let src = dir.path().join("t.disksim");
    std::fs::write(&src, "0.000 0 4 24 0\n1.500 0 64 8 1\n").expect("write");
    let out = dir.path().join("pages.mqsim");
    let convert = |kb: &str| {
        spindle(&[
            "trace",
            "convert",
            src.to_str().expect("UTF-8"),
            out.to_str().expect("UTF-8"),
            "--to",
            "mqsim",
            "--split-kb",
            kb,
        ])
    };
    let o = convert("4");
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Vec<(u64, u64, u32, Op)> = read_records(&out, TraceFormat::MqSim)
        .iter()
        .map(|r| (r.arrival.0, r.lba, r.sectors, r.op))
        .collect();
    assert_eq!(
        got,
        vec![
            (0, 4, 4, Op::Write),
            (0, 8, 8, Op::Write),
            (0, 16, 8, Op::Write),
            (0, 24, 4, Op::Write),
            (1_500_000, 64, 8, Op::Read),
        ]
    );
    let o = convert("0");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--split-kb"), "{}", stderr(&o));

    // The same split at replay: four pages become five requests, all measured.
    let exp = dir.path().join("e.toml");
    std::fs::write(
        &exp,
        "[drive]\nmodel = \"hp97560\"\n[workload]\nkind = \"trace\"\n[workload.trace]\npath = \"t.disksim\"\nformat = \"disksim\"\n\
         split_kb = 4\n[run]\nwarmup_requests = 0\n",
    )
    .expect("write");
    let v = json(&spindle(&[
        "--quiet",
        "run",
        exp.to_str().expect("UTF-8"),
        "--json",
    ]));
    assert_eq!(v["requests"].as_u64(), Some(5), "{v}");
    let o = spindle(&[
        "--quiet",
        "run",
        exp.to_str().expect("UTF-8"),
        "--set",
        "workload.trace.split_kb=0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("workload.trace.split_kb") && stderr(&o).contains("got 0"),
        "{}",
        stderr(&o)
    );
}
