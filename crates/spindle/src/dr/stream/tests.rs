use super::*;

const WAL: &str = "\
# spindle pgbench WAL: scale 2
rmgr: Heap        len (rec/tot):     65/  3061, tx:        735, lsn: 0/02DCD258, prev 0/02DCD228, desc: UPDATE off 8 xmax 735 flags 0x00 ; new off 13 xmax 0, blkref #0: rel 1663/5/1259 blk 0 FPW
rmgr: Transaction len (rec/tot):     34/    34, tx:        735, lsn: 0/02DCDE50, prev 0/02DCD258, desc: COMMIT 2026-11-27 16:00:26.500000 UTC
rmgr: Heap        len (rec/tot):     73/  5773, tx:        736, lsn: 0/02DCDE78, prev 0/02DCDE50, desc: UPDATE off 12 xmax 736 flags 0x03 ; new off 43 xmax 0, blkref #0: rel 1663/5/16396 blk 3 FPW, blkref #1: rel 1663/5/16396 blk 1
rmgr: Heap2       len (rec/tot):     56/    56, tx:          0, lsn: 0/02DCF508, prev 0/02DCDE78, desc: VISIBLE cutoff xid 0 flags 0x01, blkref #0: rel 1663/5/16396 fork vm blk 0, blkref #1: rel 1663/5/16396 blk 2
rmgr: Transaction len (rec/tot):     34/    34, tx:        736, lsn: 0/02DCF540, prev 0/02DCF508, desc: COMMIT 2026-11-27 16:00:27.500000 UTC
pg_waldump: error: error in WAL record at 0/2DCF540: invalid record length at 0/2DCF568: wanted 24, got 0
";

#[test]
fn a_waldump_becomes_timed_page_updates() {
    let s = from_waldump(WAL.as_bytes(), "wal.txt").unwrap();
    assert_eq!(s.records.len(), 5);
    // Log bytes: from the first record's LSN to the last one's end.
    assert_eq!(s.log_bytes(), 0x02DCF540 + 34 - 0x02DCD258);
    assert_eq!(s.records[0].lsn_end, 3061);
    // Extents in key order: 1259 main (1 page), 16396 main (blocks 0..=3), 16396 vm (1).
    assert_eq!(s.data_pages, 1 + 4 + 1);
    assert_eq!(s.updates(&s.records[0]), &[0]);
    assert_eq!(s.updates(&s.records[2]), &[1 + 3, 1 + 1]);
    assert_eq!(s.updates(&s.records[3]), &[5, 1 + 2]);
    assert!(s.updates(&s.records[1]).is_empty());
    // Times: commits at 0 and 1 s; records between by LSN.
    assert_eq!(s.records[0].at, Nanos::ZERO);
    assert_eq!(s.records[1].at, Nanos::ZERO);
    assert_eq!(s.records[4].at, Nanos(1_000_000_000));
    let r2 = s.records[2].at.0;
    let frac = (0x02DCDE78u64 - 0x02DCDE50) as f64 / (0x02DCF540u64 - 0x02DCDE50) as f64;
    assert_eq!(r2, (1e9 * frac) as u64);
    assert_eq!(s.page_bytes, 8192);
}

#[test]
fn a_bad_waldump_line_names_file_and_line() {
    let bad = WAL.replace("lsn: 0/02DCDE78", "lsn: 0/zz");
    let e = from_waldump(bad.as_bytes(), "wal.txt").unwrap_err();
    assert!(e.starts_with("wal.txt:4: lsn"), "{e}");
    let bad = WAL.replace("blk 3 FPW", "blk x");
    let e = from_waldump(bad.as_bytes(), "wal.txt").unwrap_err();
    assert!(e.starts_with("wal.txt:4: block reference"), "{e}");
    let no_commit: String = WAL
        .lines()
        .filter(|l| !l.contains("COMMIT"))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = from_waldump(no_commit.as_bytes(), "wal.txt").unwrap_err();
    assert!(e.contains("no COMMIT record"), "{e}");
    let e = from_waldump("# nothing\n".as_bytes(), "wal.txt").unwrap_err();
    assert!(e.contains("no WAL records"), "{e}");
    let bad = WAL.replace("16:00:27.500000", "16:00:61.5");
    assert!(from_waldump(bad.as_bytes(), "wal.txt")
        .unwrap_err()
        .contains("commit time"));
}

#[test]
fn commit_times_are_utc_nanoseconds() {
    assert_eq!(parse_utc("1970-01-01 00:00:00.000001 UTC").unwrap(), 1_000);
    assert_eq!(
        parse_utc("2000-03-01 00:00:00 UTC").unwrap(),
        951_868_800 * 1_000_000_000
    );
    assert_eq!(
        parse_utc("2026-11-27 16:00:26.591975 UTC; rels: x").unwrap(),
        (1_795_795_226i128 * 1_000_000_000) + 591_975_000
    );
}

#[test]
fn block_trace_writes_become_page_updates() {
    let w = |t: u64, off: u64, n: u64| Ok((Nanos(t), off, n));
    let s = from_writes(
        [w(500, 0, 4096), w(700, 8192 + 512, 8192), w(700, 0, 0)],
        8192,
        "t".into(),
    )
    .unwrap();
    assert_eq!(s.records.len(), 2, "an empty write is no record");
    assert_eq!(
        s.records[0].at,
        Nanos::ZERO,
        "times count from the first write"
    );
    assert_eq!(s.records[1].at, Nanos(200));
    assert_eq!(s.updates(&s.records[0]), &[0]);
    assert_eq!(s.updates(&s.records[1]), &[1, 2]);
    assert_eq!(s.log_bytes(), 4096 + 8192);
    assert_eq!(s.data_pages, 3);
    let e = from_writes([w(500, 0, 512), w(400, 0, 512)], 8192, "t".into()).unwrap_err();
    assert!(e.contains("before the previous one"), "{e}");
}

#[test]
fn a_repeated_stream_continues_the_log_and_the_clock() {
    let w = |t: u64, off: u64| Ok((Nanos(t), off, 8192));
    let s = from_writes([w(0, 0), w(100, 8192)], 8192, "t".into()).unwrap();
    let r = s.clone().repeated(3).unwrap();
    assert_eq!(r.records.len(), 6);
    assert_eq!(r.log_bytes(), 3 * s.log_bytes());
    // Period: the span (100) plus one mean inter-arrival (50).
    let at: Vec<u64> = r.records.iter().map(|x| x.at.0).collect();
    assert_eq!(at, vec![0, 100, 150, 250, 300, 400]);
    assert_eq!(r.updates(&r.records[4]), &[0]);
    assert_eq!(r.updates(&r.records[5]), &[1]);
    assert_eq!(s.clone().repeated(1).unwrap().records, s.records);
}

#[test]
fn a_stream_too_long_to_repeat_is_refused() {
    let w = |t: u64, off: u64| Ok((Nanos(t), off, 8192));
    let s = from_writes([w(0, 0), w(u64::MAX / 4, 8192)], 8192, "t".into()).unwrap();
    let e = s.repeated(10).unwrap_err();
    assert!(e.contains("beyond what a stream can hold"), "{e}");
    // A block number past PostgreSQL's 32 bits is a bad line, not an overflow.
    let bad = WAL.replace("blk 3 FPW", "blk 18446744073709551615");
    let e = from_waldump(bad.as_bytes(), "wal.txt").unwrap_err();
    assert!(e.starts_with("wal.txt:4: block reference"), "{e}");
    let bad = WAL.replace("2026-11-27 16:00:27", "99999999999-11-27 16:00:27");
    assert!(from_waldump(bad.as_bytes(), "wal.txt")
        .unwrap_err()
        .contains("commit time"));
}
