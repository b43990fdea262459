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

/// Fig. 1(a): on the ST39133LWV the mean rotational wait of eager writes at Dd = 1.25 (80 %
/// utilisation) is below 1 ms (the paper: "well below 1 ms"). Measured 0.28 ms: a block on
/// the track under the head is reached after ~1/10 of a rotation (9 free blocks of 45),
/// and one on another track costs the 0.9 ms track switch.
#[test]
fn fig_1a_eager_write_rotational_wait_is_below_1ms_at_80_percent_utilisation() {
    let (_, rot, _) = fig_1a("st39133lwv", &[1.25])[0];
    assert!(rot < 1.0, "Dd 1.25: {rot:.3} ms");
}

/// Fig. 1(a): with more free space the eager write's seek and its whole positioning time
/// (seek + rotational wait) fall at every step of Dd 1.25, 1.5, 2, 4 (measured at seed 3:
/// seek 0.29, 0.15, 0.09, 0.04 ms; seek + rotation 0.58, 0.47, 0.39, 0.26 ms; the smallest
/// step, 17 %, is many standard errors of a 6,000-write mean).
#[test]
fn fig_1a_eager_write_seek_and_positioning_fall_with_dilution() {
    let runs = fig_1a("st39133lwv", &[1.25, 1.5, 2.0, 4.0]);
    for w in runs.windows(2) {
        let ((d0, r0, s0), (d1, r1, s1)) = (w[0], w[1]);
        assert!(
            s1 < s0,
            "Dd {d1}: seek {s1:.4} ms did not fall from {s0:.4} (Dd {d0})"
        );
        let (p0, p1) = (r0 + s0, r1 + s1);
        assert!(
            p1 < p0,
            "Dd {d1}: seek + rotation {p1:.4} ms did not fall from {p0:.4} (Dd {d0})"
        );
    }
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
/// 4 KB, each policy's throughput. Run on the Cheetah 9LP (DiskSim-validated, 10k rpm like
/// the paper's drive): on the ST39133LWV model a command costs a fixed 1.8 ms (a write
/// 2.5 ms; measured from the host), longer than most gaps between reads, so the
/// free-bandwidth policies can hide few writes there (FreeBW-Hybrid 284 IOPS against
/// SATF-EW 301; docs/ew.md).
///
/// Measured at seed 3: FreeBW-Hybrid 420.6, SATF-EW 378.7, FreeBW-SCAN 385.6, FreeBW-SATF
/// 303.2, read-first 199.0 IOPS.
fn fig_4(policy: &str, seed: u64) -> f64 {
    let disk = spindle::drive::builtin_drive("cheetah9lp").expect("built-in drive");
    let half = (disk.capacity_sectors() * 512 / 2 * 9 / 10 / 4096 * 4096).to_string();
    let r = run(
        &ew(1, 0.5, 2.0),
        &[
            ("seed", &seed.to_string()),
            ("drive.model", "\"cheetah9lp\""),
            ("workload.read_fraction", "0.5"),
            ("workload.queue_depth", "64"),
            ("array.scheduler", &format!("\"{policy}\"")),
            ("array.age_bound_ms", "1000"),
            ("array.data_set_bytes", &half),
            ("run.requests", "30000"),
        ],
    );
    eprintln!("seed {seed} {policy}: {:.1} IOPS", r.throughput_iops);
    r.throughput_iops
}

/// The orderings of fig. 4 that hold at every seed tried (1–3): FreeBW-Hybrid ≥ SATF-EW,
/// SATF-EW > read-first, and FreeBW-SCAN > FreeBW-SATF (the paper's point: SATF leaves no
/// gaps for eager writes).
#[test]
fn fig_4_scheduler_ordering_at_q64() {
    let (hybrid, satf_ew) = (fig_4("freebw-hybrid", 3), fig_4("satf-ew", 3));
    let (scan, satf) = (fig_4("freebw-scan", 3), fig_4("freebw-satf", 3));
    let read_first = fig_4("read-first", 3);
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

/// The rest of the fig. 4 bound: SATF-EW > FreeBW-SCAN and SATF-EW > write-first.
/// Not met: the three are within 3 % of each other and SATF-EW is not first (seed 1:
/// SATF-EW 380.0, FreeBW-SCAN 389.2, write-first 382.6 IOPS). With half the disk free the closest free block is nearly always
/// closer than any read, so SATF-EW serves writes first — the degeneration the paper
/// itself describes (4.2).
#[test]
#[ignore = "SATF-EW, write-first and FreeBW-SCAN are within 3 % and SATF-EW is not first (numbers in the doc comment)"]
fn fig_4_satf_ew_beats_freebw_scan_and_write_first() {
    for seed in 1..=3 {
        let satf_ew = fig_4("satf-ew", seed);
        let scan = fig_4("freebw-scan", seed);
        let write_first = fig_4("write-first", seed);
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
