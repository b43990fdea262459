//! The EW-Array paper's claims (sections 3–5) against the simulator on its drive, the
//! Seagate ST39133LWV, with the tolerances; each bound's justification is beside it.

mod common;
use common::*;

use spindle::config::Experiment;
use spindle::metrics::Report;

/// A closed-loop random 4 KiB workload on one disk's worth of data, with `--set`s.
fn run(array: &str, sets: &[(&str, &str)]) -> Report {
    let text = format!(
        "seed = 3\n[drive]\nmodel = \"st39133lwv\"\n[array]\n{array}\n\
         [workload]\nkind = \"closed\"\nsize_bytes = 4096\n[run]\nrequests = 6000\n"
    );
    let sets: Vec<String> = sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let exp = Experiment::parse(&text, "test", &sets).expect("valid experiment");
    exp.run(&no_files, &no_trace, &mut |_, _, _, _| {})
        .expect("experiment runs")
}

fn ew(dm: u32, ds: f64, dd: f64) -> String {
    format!("layout = \"ew-array\"\ndm = {dm}\nds = {ds}\ndd = {dd}")
}

/// Fig. 1(a) runs: random 4 KB writes at Q = 1 on one disk (Dm = Ds = 1), SATF-EW, at
/// the dilutions `dds`; the mean rotational and seek parts of the eager writes (ms). The
/// free blocks start at random slots: the paper measures a random write workload's steady
/// state, where the free blocks are the scattered old locations of overwritten blocks (a
/// fresh array's free runs between stripe units give a different, transient picture).
fn fig_1a(drive: &str, dds: &[f64]) -> Vec<(f64, f64, f64)> {
    let disk = spindle::drive::builtin_drive(drive).expect("built-in drive");
    let bytes = disk.capacity_sectors() * u64::from(disk.geometry().sector_bytes());
    dds.iter()
        .map(|&dd| {
            // One disk: Ds·Dd = 1, a data set of 1/Dd of the disk (less its unusable tails).
            let data = ((bytes as f64 / dd) * 0.97) as u64;
            let r = run(
                &ew(1, 1.0 / dd, dd),
                &[
                    ("drive.model", &format!("\"{drive}\"")),
                    ("workload.read_fraction", "0.0"),
                    ("array.data_set_bytes", &data.to_string()),
                    ("array.free_layout", "\"random\""),
                ],
            );
            let b = &r.breakdown_ms;
            eprintln!(
                "{drive} Dd {dd}: rotation {:.3} ms, seek {:.3} ms, mean {:.3} ms",
                b.rotation, b.seek, r.latency.all.mean_ms
            );
            (dd, b.rotation, b.seek)
        })
        .collect()
}

/// Fig. 1(a), restated criterion (the owner's decision): on the ST39133LWV at Dd = 1.25 (80 %
/// utilisation) the eager write's mean rotational wait and its seek + rotational wait are
/// each under 1 ms (the paper: "well below 1 ms"; 1 ms is the paper's own figure, no
/// tolerance added). Measured at seed 3: rotation 0.28 ms, seek + rotation 0.58 ms: a block
/// on the track under the head is reached after ~1/10 of a rotation (9 free blocks of 45),
/// and one on another track costs the 0.9 ms track switch.
#[test]
fn fig_1a_eager_write_rotational_wait_is_below_1ms_at_80_percent_utilisation() {
    let (_, rot, seek) = fig_1a("st39133lwv", &[1.25])[0];
    let mut missed = Vec::new();
    if rot >= 1.0 {
        missed.push(format!("rotational wait {rot:.3} ms"));
    }
    if rot + seek >= 1.0 {
        missed.push(format!("seek + rotational wait {:.3} ms", rot + seek));
    }
    assert!(missed.is_empty(), "Dd 1.25: {}", missed.join("; "));
}

/// Fig. 1(a), restated criterion: with more free space the eager write's seek and its whole
/// positioning time (seek + rotational wait) fall at every step of Dd 1.25, 1.5, 2, 4, and
/// the rotational wait at Dd = 4 is below that at 1.25 (measured at seed 3: seek 0.29,
/// 0.15, 0.09, 0.04 ms; seek + rotation 0.58, 0.47, 0.39, 0.26 ms; rotation 0.28 at 1.25,
/// 0.22 at 4). Strict inequalities, no tolerance: the smallest step, 17 %, and the 21 %
/// fall of the rotational wait are many standard errors of a 6,000-write mean.
#[test]
fn fig_1a_eager_write_seek_and_positioning_fall_with_dilution() {
    let runs = fig_1a("st39133lwv", &[1.25, 1.5, 2.0, 4.0]);
    let mut missed = Vec::new();
    let (r_first, r_last) = (runs[0].1, runs[3].1);
    if r_last >= r_first {
        missed.push(format!(
            "Dd 4: rotational wait {r_last:.4} ms not below Dd 1.25's {r_first:.4}"
        ));
    }
    for w in runs.windows(2) {
        let ((d0, r0, s0), (d1, r1, s1)) = (w[0], w[1]);
        if s1 >= s0 {
            missed.push(format!(
                "Dd {d1}: seek {s1:.4} ms did not fall from {s0:.4} (Dd {d0})"
            ));
        }
        let (p0, p1) = (r0 + s0, r1 + s1);
        if p1 >= p0 {
            missed.push(format!(
                "Dd {d1}: seek + rotation {p1:.4} ms did not fall from {p0:.4} (Dd {d0})"
            ));
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("; "));
}

/// Fig. 1(a), the rest of the paper's sentence: "both the rotational delay and seek time
/// decrease". Not met: the rotational wait rises from Dd 1.25 to 1.5 and then falls (seed
/// 3: 0.28, 0.32, 0.30, 0.22 ms). At 80 % utilisation a third of the writes take a block on
/// another track (0.9 ms switch, rotational wait near 0) rather than wait on their own; more
/// free space keeps them on the track, trading the switch for a shorter rotational wait.
/// With a 1.6 ms off-track cost (a 0.7 ms write settle after every switch) the wait falls
/// at every step, but then replicas on adjacent tracks could not be written in one
/// rotation beyond Dr = 3, against the dissertation's Dr = 6 with a 900 µs switch (4.2.2).
#[test]
#[ignore = "the rotational wait rises from Dd 1.25 to 1.5 (it trades against track switches); numbers in the doc comment"]
fn fig_1a_eager_write_rotational_wait_falls_with_dilution() {
    let runs = fig_1a("st39133lwv", &[1.25, 1.5, 2.0, 4.0]);
    for w in runs.windows(2) {
        let ((d0, r0, _), (d1, r1, _)) = (w[0], w[1]);
        assert!(
            r1 < r0,
            "Dd {d1}: rotation {r1:.4} ms did not fall from {r0:.4} (Dd {d0})"
        );
    }
}

/// Fig. 2: at Q = 1 and 50 % reads the best 4-disk EW-Array has at most 0.55x the latency
/// of one conventional disk (the paper: "halves"; 0.55 is the bound). The
/// candidates are every 4-disk Dm x Ds x Dd with Ds·Dd whole and the data fitting.
#[test]
fn fig_2_the_best_four_disk_ew_array_halves_single_disk_latency() {
    // A data set of 90 % of a disk, so that M2S1D2 (a band of Dd/Ds = 2 halves) fits.
    let disk = spindle::drive::builtin_drive("st39133lwv").expect("built-in drive");
    let data = (disk.capacity_sectors() * 512 * 9 / 10 / 4096 * 4096).to_string();
    let single = run(
        "layout = \"jbod\"\ndisks = 1",
        &[
            ("workload.read_fraction", "0.5"),
            ("workload.data_set_bytes", &data),
        ],
    );
    let shapes = [
        (1, 3.2, 1.25),
        (1, 2.0, 2.0),
        (2, 1.6, 1.25),
        (2, 1.0, 2.0),
        (2, 1.2, 1.6666666666666667),
    ];
    let mut best = f64::INFINITY;
    for (dm, ds, dd) in shapes {
        let r = run(
            &ew(dm, ds, dd),
            &[
                ("workload.read_fraction", "0.5"),
                ("array.data_set_bytes", &data),
            ],
        );
        eprintln!(
            "M{dm}S{ds}D{dd}: {:.3} ms (single disk {:.3})",
            r.latency.all.mean_ms, single.latency.all.mean_ms
        );
        best = best.min(r.latency.all.mean_ms);
    }
    let ratio = best / single.latency.all.mean_ms;
    assert!(
        ratio <= 0.55,
        "best 4-disk EW-Array at {ratio:.3}x of one disk"
    );
}

/// Fig. 4 at Q = 64: one disk at Dd = 2 (half the disk holds data), 50 % writes, random
/// 4 KB, the 1,000 ms age bound of `examples/ew_array/fig4_schedulers_queue.toml`, each
/// policy's throughput (IOPS) on `drive`.
fn fig_4_on(drive: &str, policy: &str, seed: u64) -> f64 {
    let disk = spindle::drive::builtin_drive(drive).expect("built-in drive");
    let half = (disk.capacity_sectors() * 512 / 2 * 9 / 10 / 4096 * 4096).to_string();
    let r = run(
        &ew(1, 0.5, 2.0),
        &[
            ("seed", &seed.to_string()),
            ("drive.model", &format!("\"{drive}\"")),
            ("workload.read_fraction", "0.5"),
            ("workload.queue_depth", "64"),
            ("array.scheduler", &format!("\"{policy}\"")),
            ("array.age_bound_ms", "1000"),
            ("array.data_set_bytes", &half),
            ("run.requests", "30000"),
        ],
    );
    eprintln!(
        "{drive} seed {seed} {policy}: {:.1} IOPS",
        r.throughput_iops
    );
    r.throughput_iops
}

/// Fig. 4 on the paper's drive, the restated criteria (the owner's decision) that hold:
/// FreeBW-SCAN > FreeBW-SATF (the paper's point: SATF's tight read schedule leaves no gaps
/// for eager writes), SATF-EW > read-first, and SATF-EW within 3 % of write-first or better
/// (the paper has SATF-EW above write-first; 3 % is the owner's tolerance for the two being
/// alike when half the disk is free and the closest free block is nearly always sooner than
/// any read, the degeneration the paper describes in 4.2). Strict orderings get no
/// tolerance. Measured at seed 3 (30,000 requests): write-first 257.5, read-first 171.8,
/// SATF-EW 272.4, FreeBW-SATF 207.7, FreeBW-SCAN 210.4 IOPS. SCAN's lead over SATF, 1.3 %,
/// is small but systematic: in `examples/ew_array/fig4_schedulers_queue.toml` (20,000
/// requests) it is 1.2–1.8 % at seeds 1–3.
#[test]
fn fig_4_scheduler_ordering_at_q64_on_the_st39133lwv() {
    let d = "st39133lwv";
    let satf_ew = fig_4_on(d, "satf-ew", 3);
    let (scan, satf) = (fig_4_on(d, "freebw-scan", 3), fig_4_on(d, "freebw-satf", 3));
    let read_first = fig_4_on(d, "read-first", 3);
    let write_first = fig_4_on(d, "write-first", 3);
    // Every criterion is checked and every miss reported.
    let mut missed = Vec::new();
    if scan <= satf {
        missed.push(format!("FreeBW-SCAN {scan:.1} <= FreeBW-SATF {satf:.1}"));
    }
    if satf_ew <= read_first {
        missed.push(format!(
            "SATF-EW {satf_ew:.1} <= read-first {read_first:.1}"
        ));
    }
    if satf_ew < 0.97 * write_first {
        missed.push(format!(
            "SATF-EW {satf_ew:.1} more than 3 % below write-first {write_first:.1}"
        ));
    }
    assert!(missed.is_empty(), "{}", missed.join("; "));
}

/// Fig. 4 on the paper's drive, the restated criterion FreeBW-Hybrid >= SATF-EW. Not met:
/// seed 3, 30,000 requests: FreeBW-Hybrid 210.4 (= FreeBW-SCAN: writes are always queued)
/// against SATF-EW 272.4 IOPS (-23 %). The model element: the drive's per-command overhead
/// (the dissertation's To, measured from the host: 1.8 ms before a read, 2.5 ms before a
/// write, serial with the mechanics). An eager write fits in the gap before a read only if
/// the read's rotational wait exceeds the write's 2.5 ms overhead + transfer + wait; FreeBW
/// hides 2,766 of ~5,000 writes in 10,000 requests (the rest wait until no read is queued),
/// so writes pile up (62 of the 64 queued), the reads lose their choice and cost 8–9 ms
/// each. SATF-EW serves writes first and keeps ~63 reads to choose from. The same drive with
/// 0.3/1.0 ms overheads (geometry, seek and switch unchanged) hides every write and orders
/// the policies as the paper does (seed 1, 20,000 requests: Hybrid 529.5, SATF-EW 527.8,
/// SCAN 444.2, FreeBW-SATF 378.4, write-first 497.5, read-first 231.2; docs/ew.md).
#[test]
#[ignore = "FreeBW-Hybrid 210.4 < SATF-EW 272.4 IOPS on the ST39133LWV: its 2.5 ms write overhead leaves few gaps (doc comment)"]
fn fig_4_freebw_hybrid_at_least_satf_ew_on_the_st39133lwv() {
    let hybrid = fig_4_on("st39133lwv", "freebw-hybrid", 3);
    let satf_ew = fig_4_on("st39133lwv", "satf-ew", 3);
    assert!(
        hybrid >= satf_ew,
        "FreeBW-Hybrid {hybrid:.1} < SATF-EW {satf_ew:.1}"
    );
}

/// Fig. 4, a drive substitution: the Cheetah 9LP (DiskSim-validated, 10k rpm like the
/// paper's drive, 0.28/0.91 ms overheads) gives the paper's FreeBW-Hybrid >= SATF-EW.
/// Measured at seed 3: FreeBW-Hybrid 420.2, SATF-EW 378.4, FreeBW-SCAN 385.4, FreeBW-SATF
/// 303.1, read-first 198.9 IOPS; the orderings hold at seeds 1–3.
#[test]
fn fig_4_scheduler_ordering_at_q64_drive_substitution_cheetah9lp() {
    let d = "cheetah9lp";
    let (hybrid, satf_ew) = (fig_4_on(d, "freebw-hybrid", 3), fig_4_on(d, "satf-ew", 3));
    let (scan, satf) = (fig_4_on(d, "freebw-scan", 3), fig_4_on(d, "freebw-satf", 3));
    let read_first = fig_4_on(d, "read-first", 3);
    assert!(
        hybrid >= satf_ew,
        "FreeBW-Hybrid {hybrid:.1} < SATF-EW {satf_ew:.1}"
    );
    assert!(
        satf_ew > read_first,
        "SATF-EW {satf_ew:.1} <= read-first {read_first:.1}"
    );
    assert!(
        scan > satf,
        "FreeBW-SCAN {scan:.1} <= FreeBW-SATF {satf:.1}"
    );
}

/// The original fig. 4 bound on the Cheetah 9LP (drive substitution): SATF-EW >
/// FreeBW-SCAN and SATF-EW > write-first. Not met: the three are within 3 % of each other
/// and SATF-EW is not first (seed 1: SATF-EW 379.4, FreeBW-SCAN 389.0, write-first 382.4
/// IOPS). With half the disk free the closest free block is nearly always closer than any
/// read, so SATF-EW serves writes first — the degeneration the paper itself describes (4.2).
#[test]
#[ignore = "Cheetah 9LP: SATF-EW, write-first and FreeBW-SCAN are within 3 % and SATF-EW is not first (numbers in the doc comment)"]
fn fig_4_satf_ew_beats_freebw_scan_and_write_first() {
    for seed in 1..=3 {
        let satf_ew = fig_4_on("cheetah9lp", "satf-ew", seed);
        let scan = fig_4_on("cheetah9lp", "freebw-scan", seed);
        let write_first = fig_4_on("cheetah9lp", "write-first", seed);
        assert!(
            satf_ew > scan,
            "seed {seed}: SATF-EW {satf_ew:.1} <= FreeBW-SCAN {scan:.1}"
        );
        assert!(
            satf_ew > write_first,
            "seed {seed}: SATF-EW {satf_ew:.1} <= write-first {write_first:.1}"
        );
    }
}

/// 5.2.2: maintaining the map costs under 1 % of disk time on a TPC-C-like mix (the
/// trace's 54 % reads, 4–8 KB requests) on the paper's 2 x 9 x 2 EW-Array with 100 KB of
/// NVRAM, and the recovery time is reported.
#[test]
fn map_maintenance_is_under_one_percent_of_disk_time() {
    let text = "seed = 3\n[drive]\nmodel = \"st39133lwv\"\n[array]\nlayout = \"ew-array\"\n\
                dm = 2\nds = 9\ndd = 2\n[workload]\nkind = \"closed\"\nqueue_depth = 72\n\
                read_fraction = 0.54\nsizes = [[4096, 3.0], [8192, 1.0]]\n[run]\nrequests = 400000\n";
    let exp = Experiment::parse(text, "test", &[]).expect("valid experiment");
    let r = exp
        .run(&no_files, &no_trace, &mut |_, _, _, _| {})
        .expect("experiment runs");
    let share = r
        .map_logging_share
        .expect("an eager-writing array reports map logging");
    let recovery = r.map_recovery_ms.expect("and its recovery time");
    eprintln!(
        "map logging {:.4} % of disk time, recovery {recovery:.1} ms",
        100.0 * share
    );
    assert!(share > 0.0, "the map log was written");
    assert!(
        share < 0.01,
        "map logging {:.3} % of disk time",
        100.0 * share
    );
    assert!(recovery > 0.0);
}
