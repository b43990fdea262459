//! Reader-level tests: the real samples in `shared/traces` (cross-checked against the reference
//! script's `*.stats.json`), round trips through every writer, garbage input, and a parse-rate
//! measurement (ignored by default).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use proptest::prelude::*;

use super::*;
use crate::Nanos;

// ---------------------------------------------------------------------------------------------
// Shared samples

/// `shared/traces/<rel>`, or `None` (with a message) when the shared folder is absent.
fn shared(rel: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces")
        .join(rel);
    if p.exists() {
        Some(p)
    } else {
        crate::testing::shared_missing(&format!(
            "{} is absent (shared traces not available)",
            p.display()
        ));
        None
    }
}

/// Opens a sample (decompressing .gz/.bz2 by magic number). Tests may use `std::fs`; the
/// library does not.
fn input(p: &std::path::Path) -> Box<dyn BufRead> {
    let f = std::fs::File::open(p).expect("sample is readable");
    decompress(BufReader::with_capacity(1 << 16, f))
        .expect("sniffable")
        .1
}

fn read_sample(rel: &str, format: TraceFormat) -> Option<Vec<TraceRecord>> {
    let p = shared(rel)?;
    let recs = open(format, input(&p)).collect::<Result<Vec<_>, _>>();
    Some(recs.unwrap_or_else(|e| panic!("{rel}: {e}")))
}

struct Sample {
    rel: &'static str,
    format: TraceFormat,
    /// What content detection says: a format, or `None` for "ambiguous".
    detected: Option<TraceFormat>,
    /// The file is sorted by time, so the reference's inter-arrival percentiles apply.
    sorted: bool,
}

const SAMPLES: [Sample; 10] = [
    Sample {
        rel: "disksim_example_ascii_18disk/ascii.trace",
        format: TraceFormat::DiskSim,
        detected: Some(TraceFormat::DiskSim),
        sorted: true,
    },
    Sample {
        rel: "msnfs_fileserver_replayer/MSN-FS-30s-ms",
        format: TraceFormat::DiskSim,
        detected: Some(TraceFormat::DiskSim),
        sorted: true,
    },
    Sample {
        rel: "oltp_tpcc_mqsim/tpcc-small.trace",
        format: TraceFormat::MqSim,
        detected: None,
        sorted: true,
    },
    Sample {
        rel: "websearch_umass_mqsim/wsrch-small.trace",
        format: TraceFormat::MqSim,
        detected: None,
        sorted: true,
    },
    Sample {
        rel: "oltp_umass_financial1_head/Financial_mini.spc",
        format: TraceFormat::Spc,
        detected: Some(TraceFormat::Spc),
        sorted: true,
    },
    Sample {
        rel: "msr_and_cloud_samples/msr-cambridge1-sample.csv",
        format: TraceFormat::Msr,
        detected: Some(TraceFormat::Msr),
        sorted: true,
    },
    Sample {
        rel: "msr_and_cloud_samples/cloud_storage-sample.bz2",
        format: TraceFormat::Tencent,
        detected: Some(TraceFormat::Tencent),
        sorted: false,
    },
    Sample {
        rel: "msr_and_cloud_samples/systor17-traces-sample.csv.gz",
        format: TraceFormat::Systor,
        detected: Some(TraceFormat::Systor),
        sorted: false,
    },
    Sample {
        rel: "msr_and_cloud_samples/systor17-additional-sample.csv.gz",
        format: TraceFormat::Systor,
        detected: Some(TraceFormat::Systor),
        sorted: false,
    },
    Sample {
        rel: "blkparse_sample_apress/blktrace.txt",
        format: TraceFormat::Blkparse,
        detected: Some(TraceFormat::Blkparse),
        sorted: true,
    },
];

/// The seek locality index L of the samples, from an independent Python implementation of the
/// definition in `stats.rs` run over `trace_stats.py`'s own parsers (which do not compute L):
/// per device, seeks from the previous request's end; random mean = (max end - min lba) / 3;
/// L = Σ seeks_d · random_d / Σ seek distances. f64 sums in a different order: 1e-9 relative.
const SEEK_LOCALITY: [(&str, f64); 9] = [
    (
        "disksim_example_ascii_18disk/ascii.trace",
        2.6003551192446386,
    ),
    (
        "msnfs_fileserver_replayer/MSN-FS-30s-ms",
        2.0639503089730358,
    ),
    ("oltp_tpcc_mqsim/tpcc-small.trace", 1.2928732980298159),
    (
        "websearch_umass_mqsim/wsrch-small.trace",
        1.3272347102745043,
    ),
    (
        "oltp_umass_financial1_head/Financial_mini.spc",
        1.0321485331369495,
    ),
    (
        "msr_and_cloud_samples/msr-cambridge1-sample.csv",
        3.6029915374806207,
    ),
    (
        "msr_and_cloud_samples/cloud_storage-sample.bz2",
        1.9006691110938307,
    ),
    (
        "msr_and_cloud_samples/systor17-traces-sample.csv.gz",
        2.564650586541893,
    ),
    ("blkparse_sample_apress/blktrace.txt", 8.311559453945849),
];

fn close(got: f64, want: f64, abs: f64, rel: f64) -> bool {
    (got - want).abs() <= abs + rel * want.abs()
}

/// Every sample's statistics against the reference script's JSON (`<file>.stats.json`).
///
/// Tolerances:
/// * counts, bytes, sizes (min, p50, p90, p99, max), LBAs, devices: exact — every sample is
///   sector-aligned, so whole-sector sizes lose nothing, and both sides use the same rank rule;
/// * time span and mean inter-arrival: 1e-5 s absolute — the reference keeps absolute times in
///   f64, and at MSR's FILETIME magnitude (1.3e10 s since 1601) one f64 ulp is 1.9 µs (Unix
///   times of the cloud traces: 0.24 µs); the parsers here are exact integers;
/// * inter-arrival p50: 0.1% relative (the HDR histogram keeps 3 significant digits: half a
///   bucket is at most 1/2048 ≈ 0.05%) plus 4 µs for the same f64 noise in the reference's
///   differences; only for sorted samples (the reference sorts, this pass does not);
/// * CV: 1e-3 relative, for sorted samples (f64 noise in the reference's gaps).
#[test]
fn stats_match_the_reference_script_on_every_sample() {
    let mut checked = 0;
    for s in &SAMPLES {
        let (Some(path), Some(json_path)) =
            (shared(s.rel), shared(&format!("{}.stats.json", s.rel)))
        else {
            continue;
        };
        let want: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json_path).expect("json readable"))
                .expect("valid json");
        let got = TraceStats::from_records(open(s.format, input(&path)))
            .unwrap_or_else(|e| panic!("{}: {e}", s.rel));
        let w = |k: &str| &want[k];
        let ctx = s.rel;
        assert_eq!(
            got.requests,
            w("requests").as_u64().expect("int"),
            "{ctx}: requests"
        );
        assert!(
            close(
                got.read_pct,
                w("read_pct").as_f64().expect("f64"),
                1e-9,
                0.0
            ),
            "{ctx}: read_pct {}",
            got.read_pct
        );
        assert_eq!(
            got.read_bytes,
            w("read_bytes").as_u64().expect("int"),
            "{ctx}: read_bytes"
        );
        assert_eq!(
            got.write_bytes,
            w("write_bytes").as_u64().expect("int"),
            "{ctx}: write_bytes"
        );
        let t = got.time.as_ref().expect("non-empty");
        assert_eq!(
            t.nonmonotonic_records,
            w("time_nonmonotonic_records").as_u64().expect("int"),
            "{ctx}: nonmonotonic"
        );
        let span_s = t.span_ns as f64 / 1e9;
        assert!(
            close(span_s, w("time_span_s").as_f64().expect("f64"), 1e-5, 0.0),
            "{ctx}: span {span_s}"
        );
        let size = got.size.as_ref().expect("non-empty");
        let ws = &want["size_bytes"];
        for (name, v) in [
            ("min", size.min_bytes),
            ("p50", size.p50_bytes),
            ("p90", size.p90_bytes),
            ("p99", size.p99_bytes),
            ("max", size.max_bytes),
        ] {
            assert_eq!(v, ws[name].as_u64().expect("int"), "{ctx}: size {name}");
        }
        assert!(
            close(
                size.mean_bytes,
                ws["mean"].as_f64().expect("f64"),
                0.0,
                1e-12
            ),
            "{ctx}: mean size"
        );
        for (i, top) in want["size_top"]
            .as_array()
            .expect("list")
            .iter()
            .enumerate()
        {
            let (bytes, pct) = (top[0].as_u64().expect("int"), top[1].as_f64().expect("f64"));
            let ours = size
                .top
                .iter()
                .find(|t| t.bytes == bytes)
                .unwrap_or_else(|| panic!("{ctx}: size {bytes} not in our top 6"));
            assert!(
                close(ours.pct, pct, 0.005, 0.0),
                "{ctx}: size_top[{i}] {bytes}: {} vs {pct}",
                ours.pct
            );
        }
        let a = got.address.as_ref().expect("non-empty");
        assert_eq!(
            a.lba_min,
            w("lba_sector_min").as_u64().expect("int"),
            "{ctx}: lba min"
        );
        assert_eq!(
            a.lba_max,
            w("lba_sector_max").as_u64().expect("int"),
            "{ctx}: lba max"
        );
        assert_eq!(
            u128::from(a.end_max) * 512,
            u128::from(w("addr_max_bytes").as_u64().expect("int")),
            "{ctx}: end"
        );
        assert_eq!(
            a.range_bytes,
            u128::from(w("addr_range_bytes").as_u64().expect("int")),
            "{ctx}: range"
        );
        assert_eq!(
            got.device_count as u64,
            w("devices").as_u64().expect("int"),
            "{ctx}: devices"
        );
        for pair in w("device_top").as_array().expect("list") {
            let (dev, count) = (
                pair[0].as_u64().expect("int"),
                pair[1].as_u64().expect("int"),
            );
            let d = got
                .devices
                .iter()
                .find(|d| u64::from(d.device) == dev)
                .unwrap_or_else(|| panic!("{ctx}: device {dev}"));
            assert_eq!(d.requests, count, "{ctx}: device {dev} requests");
        }
        assert!(
            close(
                got.sequential_pct,
                w("sequential_pct").as_f64().expect("f64"),
                1e-9,
                0.0
            ),
            "{ctx}: sequential"
        );
        let ia = got.interarrival.as_ref().expect("many records");
        let mean_ms = ia.mean_ns / 1e6;
        let n_gaps = (got.requests - 1) as f64;
        assert!(
            close(
                mean_ms,
                w("interarrival_mean_ms").as_f64().expect("f64"),
                1e-2 / n_gaps,
                0.0
            ),
            "{ctx}: mean gap {mean_ms}"
        );
        if s.sorted {
            let p50_ms = ia.p50_ns as f64 / 1e6;
            let want_p50 = w("interarrival_p50_ms").as_f64().expect("f64");
            assert!(
                close(p50_ms, want_p50, 4e-3, 1e-3),
                "{ctx}: p50 gap {p50_ms} vs {want_p50}"
            );
            let cv = ia.cv.expect("gaps vary");
            let want_cv = w("interarrival_cv").as_f64().expect("f64");
            assert!(close(cv, want_cv, 0.0, 1e-3), "{ctx}: cv {cv} vs {want_cv}");
        }
        if let Some(&(_, want_l)) = SEEK_LOCALITY.iter().find(|(rel, _)| *rel == s.rel) {
            let l = got.seek_locality.expect("the head moves in every sample");
            assert!(close(l, want_l, 0.0, 1e-9), "{ctx}: L {l} vs {want_l}");
        }
        checked += 1;
    }
    eprintln!("cross-checked {checked} samples against trace_stats.py");
}

#[test]
fn content_detection_on_every_sample() {
    for s in &SAMPLES {
        let Some(path) = shared(s.rel) else { continue };
        match (detect_and_open(input(&path)), s.detected) {
            (Ok((f, _)), Some(want)) => assert_eq!(f, want, "{}", s.rel),
            (Err(DetectError::Ambiguous { candidates }), None) => {
                assert_eq!(
                    candidates,
                    vec![TraceFormat::DiskSim, TraceFormat::MqSim],
                    "{}",
                    s.rel
                );
            }
            (other, want) => panic!(
                "{}: detected {:?}, want {want:?}",
                s.rel,
                other.map(|(f, _)| f)
            ),
        }
    }
    for rel in [
        "oltp_tpcc_mqsim/tpcc-small.disksim.txt",
        "blkparse_sample_apress/blktrace.D-events.disksim.txt",
    ] {
        let Some(path) = shared(rel) else { continue };
        let (f, _) = detect_and_open(input(&path)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(f, TraceFormat::DiskSim, "{rel}");
    }
}

#[test]
fn first_and_last_records_of_the_samples() {
    let r = |t: u64, device: u32, lba: u64, sectors: u32, op: Op| TraceRecord {
        arrival: Nanos(t),
        device,
        lba,
        sectors,
        op,
    };
    let cases = [
        (
            "disksim_example_ascii_18disk/ascii.trace",
            TraceFormat::DiskSim,
            100_000,
            r(13_191_135, 30, 0, 5, Op::Read),
            r(1_532_949_045_363, 11, 323_157, 1, Op::Read),
        ),
        (
            "msnfs_fileserver_replayer/MSN-FS-30s-ms",
            TraceFormat::DiskSim,
            149_999,
            r(0, 5, 174_224_064, 16, Op::Read),
            r(143_068_077_000, 5, 175_985_024, 16, Op::Read),
        ),
        (
            "oltp_tpcc_mqsim/tpcc-small.trace",
            TraceFormat::MqSim,
            6_999,
            r(938_513_000, 4, 264_719_034, 16, Op::Write),
            r(1_075_002_000, 7, 160_057_354, 16, Op::Write),
        ),
        (
            "websearch_umass_mqsim/wsrch-small.trace",
            TraceFormat::MqSim,
            24_783,
            r(11_413_000, 0, 657_728, 16, Op::Read),
            r(60_066_625_000, 1, 34_371_424, 64, Op::Read),
        ),
        (
            "oltp_umass_financial1_head/Financial_mini.spc",
            TraceFormat::Spc,
            949,
            r(0, 0, 303_567, 7, Op::Write),
            r(28_442_623_000, 4, 837_815, 1, Op::Write),
        ),
        (
            "msr_and_cloud_samples/msr-cambridge1-sample.csv",
            TraceFormat::Msr,
            1_000,
            r(0, 0, 17_687_528, 4, Op::Write),
            r(
                (128_166_386_567_849_604 - 128_166_385_295_514_663) * 100,
                0,
                23_333_104,
                8,
                Op::Read,
            ),
        ),
        (
            "blkparse_sample_apress/blktrace.txt",
            TraceFormat::Blkparse,
            170,
            r(31_865, 2064, 1_444_645_666, 256, Op::Read),
            r(9_352_904_571, 2064, 1_950_886_354, 912, Op::Write),
        ),
    ];
    for (rel, format, n, first, last) in cases {
        let Some(recs) = read_sample(rel, format) else {
            continue;
        };
        assert_eq!(recs.len(), n, "{rel}: record count (STATS.txt)");
        assert_eq!(recs[0], first, "{rel}: first record");
        assert_eq!(recs[n - 1], last, "{rel}: last record");
    }
}

/// The DiskSim copies in `shared/traces` were made from the MQSim and blkparse originals with the
/// reference script (times rebased to the first record, in ms with 6 decimals): reading both
/// must give the same records.
#[test]
fn disksim_copies_equal_their_originals() {
    let pairs = [
        (
            "oltp_tpcc_mqsim/tpcc-small.trace",
            TraceFormat::MqSim,
            "oltp_tpcc_mqsim/tpcc-small.disksim.txt",
        ),
        (
            "websearch_umass_mqsim/wsrch-small.trace",
            TraceFormat::MqSim,
            "websearch_umass_mqsim/wsrch-small.disksim.txt",
        ),
        (
            "blkparse_sample_apress/blktrace.txt",
            TraceFormat::Blkparse,
            "blkparse_sample_apress/blktrace.D-events.disksim.txt",
        ),
    ];
    for (orig, format, copy) in pairs {
        let (Some(a), Some(b)) = (
            read_sample(orig, format),
            read_sample(copy, TraceFormat::DiskSim),
        ) else {
            continue;
        };
        assert_eq!(a.len(), b.len(), "{copy}");
        let rebased: Vec<TraceRecord> = a
            .iter()
            .map(Ok)
            .map(|r: Result<&TraceRecord, TraceError>| r.copied())
            .speed_up(SpeedUp::ONE)
            .collect::<Result<_, _>>()
            .expect("sorted");
        for (i, (x, y)) in rebased.iter().zip(&b).enumerate() {
            // The copy rounds times to whole ns of ms-with-6-decimals: exact for µs-granular
            // originals, within 0.5 µs (printf rounding) for blkparse's ns timestamps.
            let dt = x.arrival.0.abs_diff(y.arrival.0);
            assert!(dt <= 500, "{copy} record {i}: {x:?} vs {y:?}");
            assert_eq!(
                (x.device, x.lba, x.sectors, x.op),
                (y.device, y.lba, y.sectors, y.op),
                "{copy} record {i}"
            );
        }
    }
}

#[test]
fn concatenating_the_tpcc_luns_gives_one_contiguous_data_set() {
    let Some(recs) = read_sample("oltp_tpcc_mqsim/tpcc-small.trace", TraceFormat::MqSim) else {
        return;
    };
    let ext = device_extents(recs.iter().copied().map(Ok)).expect("no errors");
    assert_eq!(ext.len(), 16, "16 LUNs (README)");
    let layout = ext.concat_layout();
    assert_eq!(
        layout.total_sectors(),
        ext.iter().map(|(_, e)| e).sum::<u64>()
    );
    let out: Vec<TraceRecord> = recs
        .iter()
        .copied()
        .map(Ok)
        .concat(layout.clone())
        .speed_up("4".parse().expect("valid"))
        .collect::<Result<_, _>>()
        .expect("consistent passes");
    assert_eq!(out.len(), recs.len());
    assert!(out
        .iter()
        .all(|r| r.device == 0 && r.lba + u64::from(r.sectors) <= layout.total_sectors()));
    // Device 8 (the log LUN) starts after devices 0..=7.
    let base8: u64 = ext.iter().filter(|&(d, _)| d < 8).map(|(_, e)| e).sum();
    assert_eq!(layout.base(8), Some(base8));
    let first8 = recs
        .iter()
        .position(|r| r.device == 8)
        .expect("LUN 8 has requests");
    assert_eq!(out[first8].lba, base8 + recs[first8].lba);
    // A 4x speed-up: the 136.489 ms span becomes a quarter of it (floored).
    assert_eq!(
        out.last().expect("records").arrival.0,
        (1_075_002_000 - 938_513_000) / 4
    );
}

// ---------------------------------------------------------------------------------------------
// Round trips

fn write_to_vec(format: TraceFormat, recs: &[TraceRecord]) -> Vec<u8> {
    let mut w = TraceWriter::new(format, Vec::new()).expect("writable");
    for r in recs {
        w.write(r).expect("write to a Vec");
    }
    w.finish().expect("flush")
}

fn read_back(format: TraceFormat, bytes: &[u8]) -> Vec<TraceRecord> {
    open(format, bytes)
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{format}: {e}"))
}

#[test]
fn every_writable_format_round_trips_a_real_trace() {
    let Some(recs) = read_sample(
        "disksim_example_ascii_18disk/ascii.trace",
        TraceFormat::DiskSim,
    ) else {
        return;
    };
    for format in [TraceFormat::DiskSim, TraceFormat::MqSim, TraceFormat::Spc] {
        assert_eq!(
            read_back(format, &write_to_vec(format, &recs)),
            recs,
            "{format}"
        );
    }
    // MSR: 100-ns ticks, relative to the first record.
    let msr_in: Vec<TraceRecord> = recs
        .iter()
        .map(|r| TraceRecord {
            arrival: Nanos((r.arrival.0 - recs[0].arrival.0) / 100 * 100),
            ..*r
        })
        .collect();
    assert_eq!(
        read_back(TraceFormat::Msr, &write_to_vec(TraceFormat::Msr, &msr_in)),
        msr_in
    );
    // fio v3: µs, devices renumbered in order of first appearance.
    let mut order: Vec<u32> = Vec::new();
    let fio_in: Vec<TraceRecord> = recs
        .iter()
        .map(|r| TraceRecord {
            arrival: Nanos(r.arrival.0 / 1000 * 1000),
            ..*r
        })
        .collect();
    let expected: Vec<TraceRecord> = fio_in
        .iter()
        .map(|r| {
            let d = order
                .iter()
                .position(|&d| d == r.device)
                .unwrap_or_else(|| {
                    order.push(r.device);
                    order.len() - 1
                });
            TraceRecord {
                device: u32::try_from(d).expect("few devices"),
                ..*r
            }
        })
        .collect();
    assert_eq!(
        read_back(TraceFormat::Fio3, &write_to_vec(TraceFormat::Fio3, &fio_in)),
        expected
    );
}

fn arb_record(max_t: u64, max_lba: u64) -> impl Strategy<Value = TraceRecord> {
    (
        0..max_t,
        0u32..64,
        0u64..max_lba,
        1u32..=65_536,
        any::<bool>(),
    )
        .prop_map(|(t, device, lba, sectors, read)| TraceRecord {
            arrival: Nanos(t),
            device,
            lba,
            sectors,
            op: if read { Op::Read } else { Op::Write },
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn exact_formats_round_trip_any_records(recs in proptest::collection::vec(arb_record(u64::MAX, u64::MAX - 65_536), 0..50)) {
        for format in [TraceFormat::DiskSim, TraceFormat::MqSim, TraceFormat::Spc] {
            prop_assert_eq!(&read_back(format, &write_to_vec(format, &recs)), &recs);
        }
    }

    #[test]
    fn msr_round_trips_sorted_100ns_records(mut recs in proptest::collection::vec(arb_record(1 << 50, 1 << 50), 1..50)) {
        recs.sort_by_key(|r| r.arrival);
        let t0 = recs[0].arrival.0;
        for r in &mut recs {
            r.arrival = Nanos((r.arrival.0 - t0) / 100 * 100);
        }
        prop_assert_eq!(read_back(TraceFormat::Msr, &write_to_vec(TraceFormat::Msr, &recs)), recs);
    }

    #[test]
    fn readers_never_panic_on_garbage(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..80), 0..20)) {
        let mut text = Vec::new();
        for l in &lines {
            text.extend_from_slice(l);
            text.push(b'\n');
        }
        for format in TraceFormat::ALL {
            // Errors are expected here; the records that do come out must be valid.
            for rec in open(format, &text[..]).flatten() {
                prop_assert!(rec.sectors > 0);
                prop_assert!(rec.lba.checked_add(u64::from(rec.sectors)).is_some());
            }
        }
        let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
        let _ = detect(&refs);
    }

    #[test]
    fn readers_never_panic_on_near_miss_lines(
        fields in proptest::collection::vec(
            prop_oneof![
                Just(String::new()), Just("-1".to_string()), Just("0".to_string()), Just("1".to_string()),
                Just("18446744073709551616".to_string()), Just("4294967296".to_string()), Just("1e400".to_string()),
                Just("0.5".to_string()), Just("R".to_string()), Just("w".to_string()), Just("Read".to_string()),
                Just("D".to_string()), Just("8,16".to_string()), Just("+".to_string()), Just("zz".to_string()),
                Just("add".to_string()), Just("read".to_string()), Just("wait".to_string()),
                any::<u64>().prop_map(|v| v.to_string()),
            ],
            0..12,
        ),
        sep in prop_oneof![Just(" "), Just(","), Just("\t")],
    ) {
        let line = fields.join(sep);
        for format in TraceFormat::ALL {
            let mut p = AnyParser::new(format);
            if matches!(format, TraceFormat::Fio2 | TraceFormat::Fio3) {
                let header = if format == TraceFormat::Fio2 { fio::FIO2_HEADER } else { fio::FIO3_HEADER };
                let _ = p.parse_line(header.as_bytes());
                let _ = p.parse_line(b"1 f add");
                let _ = p.parse_line(b"f add");
            }
            if let Ok(Some(rec)) = p.parse_line(line.as_bytes()) {
                prop_assert!(rec.sectors > 0);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reader behaviour on bad input

#[test]
fn garbage_lines_give_errors_with_line_numbers() {
    let table: &[(TraceFormat, &[u8], &str)] = &[
        (TraceFormat::DiskSim, b"1.0 0 0 8 1\n\n2.0 0 0 8 zz\n", r#"line 3: field 5 (flags): expected a hex number, got "zz""#),
        (TraceFormat::DiskSim, b"1.0 0 0 8\n", "line 1: expected at least 5 fields, got 4"),
        (TraceFormat::DiskSim, b"1.0 0 0 -8 1\n", r#"line 1: field 4 (sectors): expected a non-negative integer, got "-8""#),
        (TraceFormat::DiskSim, b"1.0 0 0 0 1\n", "line 1: field 4 (sectors): zero-size request"),
        (TraceFormat::DiskSim, b"1.0 0 18446744073709551615 8 1\n", "line 1: request at lba 18446744073709551615 of 8 sectors runs past the end of a 64-bit address space"),
        (TraceFormat::DiskSim, b"1.0 0 99999999999999999999 8 1\n", "line 1: field 3 (lba): 99999999999999999999 is out of range"),
        (TraceFormat::DiskSim, b"1e30 0 0 8 1\n", "line 1: field 1 (arrival): 1e30 is out of range"),
        (TraceFormat::DiskSim, b"1.0 0 0 8 1 \xff\n\xff\xfe 0 0 8 1\n", "line 2: field 1 (arrival): expected a non-negative decimal number, got \"\u{fffd}\u{fffd}\""),
        (TraceFormat::MqSim, b"5 0 0 8 1\n6 0 0 99999999999 1\n", "line 2: request of 99999999999 sectors is too large (at most 4294967295)"),
        (TraceFormat::Spc, b"0,1,512,q,0.0\n", r#"line 1: field 4 (opcode): expected 'r' or 'w', got "q""#),
        (TraceFormat::Msr, b"1,h,0,Read,0,512,0\n0,h,0,Read,0,512,0\n", "line 2: timestamp 0 is earlier than the first record's 1"),
        (TraceFormat::Blkparse, b"8,0 1 1 0.1 5 D W 7 + x [p]\n", r#"line 1: field 10 (sectors): expected a non-negative integer, got "x""#),
        (TraceFormat::Fio2, b"/dev/sda add\n", r#"line 1: expected the header "fio version 2 iolog", got "/dev/sda add""#),
    ];
    for &(format, text, want) in table {
        let err = open(format, text)
            .find_map(Result::err)
            .unwrap_or_else(|| panic!("{format}: {:?} should fail", String::from_utf8_lossy(text)));
        assert!(
            err.to_string().starts_with(want),
            "{format}\n got: {err}\nwant: {want}"
        );
    }
}

#[test]
fn readers_carry_on_after_a_bad_line_and_handle_line_endings() {
    let text = b"1.0 0 0 8 1\r\n2.0 0 0 8 zz\r\n# comment\n   \n3.0 0 8 8 0";
    let out: Vec<_> = open(TraceFormat::DiskSim, &text[..]).collect();
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].as_ref().expect("valid").arrival, Nanos(1_000_000));
    assert_eq!(out[1].as_ref().expect_err("bad flags").line, 2);
    let last = out[2].as_ref().expect("no trailing newline is fine");
    assert_eq!(
        (last.arrival, last.lba, last.op),
        (Nanos(3_000_000), 8, Op::Write)
    );
}

#[test]
fn over_long_lines_end_the_stream_with_an_error() {
    let mut text = b"1.0 0 0 8 1\n".to_vec();
    text.extend(vec![b'7'; LINE_MAX_BYTES + 10]);
    text.extend_from_slice(b"\n2.0 0 0 8 1\n");
    let out: Vec<_> = open(TraceFormat::DiskSim, &text[..]).collect();
    assert_eq!(out.len(), 2, "one record, then the error, then nothing");
    let e = out[1].as_ref().expect_err("too long");
    assert_eq!(
        e.to_string(),
        format!("line 2: line is longer than {LINE_MAX_BYTES} bytes (is this a binary file?)")
    );
}

#[test]
fn read_errors_end_the_stream() {
    struct Failing;
    impl std::io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    let text = std::io::Read::chain(&b"1.0 0 0 8 1\n"[..], Failing);
    let out: Vec<_> = open(TraceFormat::DiskSim, BufReader::new(text)).collect();
    assert_eq!(out.len(), 2);
    assert_eq!(
        out[1].as_ref().expect_err("io").to_string(),
        "line 2: read error: disk on fire"
    );
}

#[test]
fn compressed_input_is_sniffed() {
    use std::io::Write;
    let plain = b"1.0 0 0 8 1\n2.0 1 8 8 0\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(plain).expect("compress");
    let gz = gz.finish().expect("compress");
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    bz.write_all(plain).expect("compress");
    let bz = bz.finish().expect("compress");
    for (bytes, kind) in [
        (&plain[..], Compression::None),
        (&gz[..], Compression::Gzip),
        (&bz[..], Compression::Bzip2),
    ] {
        let (k, r) = decompress(bytes).expect("sniff");
        assert_eq!(k, kind);
        assert_eq!(read_back_boxed(r).len(), 2, "{kind:?}");
    }
}

fn read_back_boxed(r: Box<dyn BufRead + '_>) -> Vec<TraceRecord> {
    open(TraceFormat::DiskSim, r)
        .collect::<Result<_, _>>()
        .expect("valid")
}

#[test]
fn format_names_round_trip() {
    for f in TraceFormat::ALL {
        assert_eq!(f.name().parse::<TraceFormat>(), Ok(f));
        assert_eq!(f.to_string(), f.name());
    }
    assert_eq!("DiskSim".parse::<TraceFormat>(), Ok(TraceFormat::DiskSim));
    assert_eq!("dsascii".parse::<TraceFormat>(), Ok(TraceFormat::DiskSim));
    let e = "vscsi".parse::<TraceFormat>().expect_err("not supported");
    assert!(
        e.to_string()
            .starts_with(r#"unknown trace format "vscsi" (expected one of disksim, mqsim"#),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// Parse rate (a measurement, not a test of speed: run it by hand)
//
//   cargo test --release -p spindle --lib workload::trace::tests::parse_rate -- --ignored --nocapture

#[test]
#[ignore = "a measurement; run by hand in release mode"]
#[allow(clippy::disallowed_methods)] // Instant::now: a test harness may read the clock
fn parse_rate() {
    const LINES: u64 = 1_000_000;
    let mut disksim = Vec::with_capacity(40 * LINES as usize);
    let mut mqsim = Vec::with_capacity(40 * LINES as usize);
    let mut x: u64 = 0x5EED;
    for i in 0..LINES {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let (dev, lba, n, f) = (
            (x >> 60) % 18,
            (x >> 20) % 2_376_005,
            1 + (x >> 8) % 64,
            (x >> 4) & 1,
        );
        let t_ns = i * 15_329_511;
        disksim.extend_from_slice(
            format!(
                "{}.{:06}\t{dev}\t{lba}\t{n}\t{f}\n",
                t_ns / 1_000_000,
                t_ns % 1_000_000
            )
            .as_bytes(),
        );
        mqsim.extend_from_slice(format!("{t_ns} {dev} {lba} {n} {f}\n").as_bytes());
    }
    for (format, text) in [
        (TraceFormat::DiskSim, &disksim),
        (TraceFormat::MqSim, &mqsim),
    ] {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = std::time::Instant::now();
            let mut sum = 0u64;
            for r in open(format, &text[..]) {
                sum = sum.wrapping_add(r.expect("valid").lba);
            }
            best = best.min(start.elapsed().as_secs_f64());
            std::hint::black_box(sum);
        }
        eprintln!(
            "{format}: {LINES} lines in {:.1} ms = {:.2} M lines/s ({:.0} MB/s)",
            best * 1e3,
            LINES as f64 / best / 1e6,
            text.len() as f64 / best / 1e6
        );
    }
}
