//! The SR-Array dissertation's array models (chapter 2.2–2.4) against the simulator on the
//! drive of its table 4.1 (Seagate ST39133LWV), with the tolerances the issue sets; each
//! bound's justification is beside it.

mod common;
use common::*;

use spindle::config::Experiment;
use spindle::metrics::Report;
use spindle::model::{queueing, sr_array, DiskModel};

/// Table 4.1's drive as the models see it (the same S, R, To and Two as `common`).
const DISK: DiskModel = DiskModel::ST39133LWV;

/// A closed-loop random 4 KiB workload on an SR-Mirror `ds` x `dr` x `dm` of ST39133LWVs
/// holding one disk's worth of data (the dissertation's setting), with extra `--set`s.
fn run(ds: u32, dr: u32, dm: u32, extra: &[(&str, &str)]) -> Report {
    let text = format!(
        "seed = 5\n[drive]\nmodel = \"st39133lwv\"\n[array]\nlayout = \"sr-mirror\"\nds = {ds}\ndr = {dr}\ndm = {dm}\n\
         [workload]\nkind = \"closed\"\nsize_bytes = 4096\n[run]\nrequests = 10000\n"
    );
    let sets: Vec<String> = extra.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let exp = Experiment::parse(&text, "test", &sets).expect("valid experiment");
    exp.run(&no_files, &no_trace, &mut |_, _, _, _| {})
        .expect("experiment runs")
}

/// Eq. 2.19: T = S/(3 Ds) + R/(2 Dr) + To for Q = 1 random reads. Bound 5 % (the issue's):
/// the model ignores the 4 KiB transfer (8 of ≥ 242 sectors, ≤ 2 %) and zoning (≤ 3 %, eq.
/// 2.4); measured here the worst case is about 3 %.
#[test]
fn eq_2_19_read_latency_of_sr_arrays() {
    for dr in 1..=4u32 {
        for ds in 1..=12 / dr {
            let r = run(
                ds,
                dr,
                1,
                &[
                    ("workload.queue_depth", "1"),
                    ("workload.read_fraction", "1.0"),
                ],
            );
            let model = sr_array::read_ms(&DISK, f64::from(ds), dr, 1.0);
            let got = r.latency.all.mean_ms;
            assert!(
                (got / model - 1.0).abs() < 0.05,
                "{ds}x{dr}: simulated {got:.3} ms vs eq. 2.19 {model:.3} ms"
            );
        }
    }
}

/// Eq. 2.26 with every replica written in the foreground (p = read fraction) plus the
/// measured write penalty: T = S/(3 Ds) + p R/(2 Dr) + (1 − p)(R − R/(2 Dr)) + To +
/// (1 − p) Two, for the three 6-disk SR-Arrays of fig. 4.2. Bound 5 % (the issue's), for
/// the same reasons as eq. 2.19.
#[test]
fn eq_2_26_latency_against_read_fraction() {
    for (ds, dr) in [(2u32, 3u32), (3, 2), (6, 1)] {
        for p in [0.0, 0.25, 0.5, 0.75, 1.0] {
            let pf = format!("{p}");
            let r = run(
                ds,
                dr,
                1,
                &[
                    ("workload.queue_depth", "1"),
                    ("workload.read_fraction", &pf),
                    ("array.writes", "\"foreground\""),
                ],
            );
            let model = sr_array::mixed_with_two_ms(&DISK, f64::from(ds), dr, p, 1.0 - p, 1.0);
            let got = r.latency.all.mean_ms;
            assert!(
                (got / model - 1.0).abs() < 0.05,
                "{ds}x{dr} p={p}: simulated {got:.3} ms vs eq. 2.26 {model:.3} ms"
            );
        }
    }
}

/// The invariant of 2.2.3 (fig. 4.3): with as many reads as writes, replicas written in the
/// foreground, the mean latency does not depend on Dr. Bound 3 % (the issue's): what the
/// invariant leaves out is the transfer of the extra replicas (Dr − 1 more 4 KiB runs per
/// write, ≤ 0.2 ms at Dr = 4, half the requests) and track switches between them.
#[test]
fn half_reads_latency_is_independent_of_dr() {
    for ds in [1u32, 2, 3] {
        let means: Vec<f64> = (1..=4u32)
            .map(|dr| {
                run(
                    ds,
                    dr,
                    1,
                    &[
                        ("workload.queue_depth", "1"),
                        ("workload.read_fraction", "0.5"),
                        ("array.writes", "\"foreground\""),
                    ],
                )
                .latency
                .all
                .mean_ms
            })
            .collect();
        let lo = means.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = means.iter().copied().fold(0.0, f64::max);
        assert!(
            hi / lo - 1.0 < 0.03,
            "Ds = {ds}: means over Dr = 1..4 are {means:?}"
        );
    }
}

/// Fig. 4.8: write-only, Q = 32, six disks, every copy written before the host is answered.
/// Striping (no copies to write) has the highest throughput, and the 3x2 SR-Array (one seek,
/// replicas on adjacent tracks) beats the 3x1x2 RAID-10 (two seeks on two disks) by at
/// least 15 % (the dissertation measured about 20 %).
#[test]
fn write_throughput_striping_beats_sr_array_beats_raid10() {
    let w = |ds, dr, dm| {
        run(
            ds,
            dr,
            dm,
            &[
                ("workload.queue_depth", "32"),
                ("workload.read_fraction", "0.0"),
                ("array.writes", "\"foreground\""),
                ("array.scheduler", "\"satf\""),
            ],
        )
        .throughput_iops
    };
    let striping = w(6, 1, 1);
    let sr = w(3, 2, 1);
    let raid10 = w(3, 1, 2);
    assert!(
        striping > sr && striping > raid10,
        "striping {striping:.0} IOPS, SR-Array {sr:.0}, RAID-10 {raid10:.0}"
    );
    assert!(
        sr >= 1.15 * raid10,
        "SR-Array 3x2 {sr:.0} IOPS vs RAID-10 3x1x2 {raid10:.0}: less than 15 % better"
    );
}

/// Eqs. 2.42 and 2.45 for a Ds x Dr SR-Array under RLOOK with Q random reads outstanding
/// (q = Q/D per disk): per disk a request every S/((1.5q + 1 + 0.5/q) Ds) + R/(2 Dr) + To,
/// and D [1 − (1 − 1/D)^Q] disks busy on average.
fn rlook_model_iops(ds: u32, dr: u32, q_total: u32) -> f64 {
    let d = f64::from(ds * dr);
    let q = f64::from(q_total) / d;
    let t1 = queueing::t1_rlook_ms(&DISK, f64::from(ds), dr, q, 1.0, 1.0);
    queueing::array_iops(d, f64::from(q_total), t1)
}

/// Fig. 4.6's configurations: 6, 8 and 12 disks, Dr = 1 up to the drive's limit of 6.
const RLOOK_SHAPES: [(u32, u32); 11] = [
    (6, 1),
    (3, 2),
    (2, 3),
    (1, 6),
    (8, 1),
    (4, 2),
    (2, 4),
    (12, 1),
    (6, 2),
    (4, 3),
    (3, 4),
];

/// Simulated RLOOK read throughput of every shape at `q` outstanding requests:
/// (Ds, Dr, IOPS).
fn rlook_measured(q: u32) -> Vec<(u32, u32, f64)> {
    RLOOK_SHAPES
        .iter()
        .map(|&(ds, dr)| {
            let qs = q.to_string();
            let got = run(
                ds,
                dr,
                1,
                &[
                    ("workload.queue_depth", &qs),
                    ("workload.read_fraction", "1.0"),
                    ("array.scheduler", "\"rlook\""),
                ],
            )
            .throughput_iops;
            (ds, dr, got)
        })
        .collect()
}

/// Fig. 4.6(a): RLOOK read throughput of 6-, 8- and 12-disk SR-Arrays at Q = 8 within 10 %
/// of eqs. 2.44–2.45 (the owner's bound; the dissertation's own worst case, 12 disks at
/// Q = 8, was within 10 %). Measured: 1.5–9.9 % below the model (docs/arrays.md); 6x1 is
/// the closest to the bound.
#[test]
fn rlook_throughput_at_q8_follows_eqs_2_44_2_45() {
    for (ds, dr, got) in rlook_measured(8) {
        let model = rlook_model_iops(ds, dr, 8);
        eprintln!(
            "Q = 8 {ds}x{dr}: {got:.1} IOPS, eq. 2.45 {model:.1} ({:+.1} %)",
            (got / model - 1.0) * 100.0
        );
        assert!(
            (got / model - 1.0).abs() < 0.10,
            "{ds}x{dr}: {got:.1} IOPS vs eq. 2.45 {model:.1}"
        );
    }
}

/// The model of `examples/sr_array/closed_network.py`, now `spindle::model::queueing::
/// ClosedNetwork`: eq. 2.42's per-disk service law (with the disk's current queue length q)
/// plus the request's 4 KiB media transfer, in a closed network where each completion sends
/// a new request to a uniformly random disk; on the simulated drive's zones with table 4.1's
/// S, R and To (the script's constants).
mod closed_network {
    use spindle::model::queueing::ClosedNetwork;
    use spindle::model::DiskModel;

    /// (mean disk utilisation, IOPS) for a `ds` x `dr` array and `q_total` requests, 200,000
    /// completions, seed 1 (the script's simulate()).
    pub fn simulate(ds: u32, dr: u32, q_total: u32) -> (f64, f64) {
        let drive = spindle::drive::builtin_drive("st39133lwv").expect("built-in drive");
        let mut net = ClosedNetwork::of(&drive, 8.0);
        net.disk = DiskModel::ST39133LWV;
        net.simulate(ds, dr, q_total, 200_000, 1)
    }
}

/// The port gives the script's numbers (`python3 examples/sr_array/closed_network.py`
/// prints 0.929 and 918.4 IOPS for 6x1, 0.864 and 2424.2 for 3x4, at Q = 32; 0.744 and
/// 746.6 for 1x6 at Q = 8), on the simulated drive's zones. Bound: the script's rounding.
#[test]
fn closed_network_port_gives_the_scripts_numbers() {
    for (ds, dr, q, util_py, iops_py) in [
        (6, 1, 32, 0.929, 918.4),
        (3, 4, 32, 0.864, 2424.2),
        (1, 6, 8, 0.744, 746.6),
    ] {
        let (util, iops) = closed_network::simulate(ds, dr, q);
        assert!(
            (util - util_py).abs() <= 0.0005 && (iops - iops_py).abs() <= 0.05,
            "{ds}x{dr} Q = {q}: port {util:.4} / {iops:.2} IOPS, script {util_py} / {iops_py}"
        );
    }
}

/// Fig. 4.6(b), Q = 32, against the owner's restated criteria (the dissertation's "most
/// points within 3 %" of eq. 2.45, §4.1.2, is not reproduced; docs/arrays.md says why):
///
/// - within 5 % of `closed_network.py` (eq. 2.42's service law + the 4 KiB transfer in a
///   closed loop): what the simulator adds to that model is real disk mechanics (zoned
///   band, LOOK's actual sweep, track switches, pieces split at track groups); measured
///   −2.1 … +0.7 %;
/// - at most 16 % below eq. 2.45: its idle term (1 − 1/D)^Q puts 0.3–6 % of the disks idle
///   where a closed loop leaves 2–17 % idle, and it leaves out the 0.13–0.16 ms transfer
///   (2.2–3.6 % of eq. 2.45's throughput); measured 9.5–13.8 % below;
/// - eq. 2.45's order of the configurations with the same D kept, except near-ties (model
///   values within 0.5 %: 2x3 and 1x6).
#[test]
fn rlook_throughput_at_q32_follows_the_closed_network() {
    let measured = rlook_measured(32);
    for &(ds, dr, got) in &measured {
        let (_, net) = closed_network::simulate(ds, dr, 32);
        let model = rlook_model_iops(ds, dr, 32);
        eprintln!(
            "Q = 32 {ds}x{dr}: {got:.1} IOPS, closed network {net:.1} ({:+.1} %), \
             eq. 2.45 {model:.1} ({:+.1} %)",
            (got / net - 1.0) * 100.0,
            (got / model - 1.0) * 100.0
        );
        assert!(
            (got / net - 1.0).abs() < 0.05,
            "{ds}x{dr}: {got:.1} IOPS vs closed network {net:.1}"
        );
        assert!(
            got / model - 1.0 > -0.16,
            "{ds}x{dr}: {got:.1} IOPS vs eq. 2.45 {model:.1}: more than 16 % below"
        );
    }
    for &(ds_a, dr_a, got_a) in &measured {
        for &(ds_b, dr_b, got_b) in &measured {
            let (model_a, model_b) = (
                rlook_model_iops(ds_a, dr_a, 32),
                rlook_model_iops(ds_b, dr_b, 32),
            );
            if ds_a * dr_a != ds_b * dr_b || model_a <= model_b * 1.005 {
                continue;
            }
            assert!(
                got_a > got_b,
                "eq. 2.45 ranks {ds_a}x{dr_a} ({model_a:.1}) above {ds_b}x{dr_b} \
                 ({model_b:.1}); simulated {got_a:.1} vs {got_b:.1} IOPS"
            );
        }
    }
}

/// The paged disk (docs/paged.md) against `model::paged` at Q = 1, one disk's worth of
/// 4 KiB pages on N disks with r copies each (r ≤ N): reads by eq. 2.14 on a band of r / N
/// (the nearest of r copies), and writes in place (r = 1). Bound 10 %: the model ignores the
/// 4 KiB transfer (as eq. 2.19, ≤ 2 %), zoning (≤ 3 %) and the slots a track cannot use
/// (S − r·P of them: fewer pages a track than the model's share, so a band a few % wider);
/// measured −8 … +1 %. Bad-tenant writes (r ≥ 2) are a documented disagreement, printed and
/// not asserted: the model's nearest allowed slot on the track under the head is 2.7–2.8 ms,
/// the simulator's 3.9–5.7 ms — at Q = 1 writes follow one another on the same track and
/// use its allowed slots up, then a full replicated write moves the head (docs/advise.md).
#[test]
fn the_paged_disk_follows_its_model_at_q1() {
    use spindle::model::paged;
    let one_disk = (DISK.capacity_bytes as u64) / 4096 * 4096;
    for (n, r) in [(1u32, 1u32), (1, 2), (1, 4), (2, 1), (2, 2), (4, 2), (4, 4)] {
        for reads in [true, false] {
            let mut sets = vec![
                "array.layout=\"paged\"".to_string(),
                format!("array.ds={n}"),
                format!("array.replicas={r}"),
                "array.page_kb=4".into(),
                "array.scheduler=\"fcfs\"".into(),
                "workload.queue_depth=1".into(),
                format!("workload.read_fraction={}", if reads { 1.0 } else { 0.0 }),
            ];
            if r < n {
                sets.push(format!("workload.data_set_bytes={one_disk}"));
            }
            let text = "seed = 5\n[drive]\nmodel = \"st39133lwv\"\n[workload]\nkind = \"closed\"\n\
                        size_bytes = 4096\n[run]\nrequests = 6000\n";
            let exp = Experiment::parse(text, "test", &sets).expect("valid experiment");
            let rep = exp
                .run(&no_files, &no_trace, &mut |_, _, _, _| {})
                .expect("experiment runs");
            let model = if reads {
                paged::read_ms(&DISK, n, r, 1.0)
            } else {
                paged::write_ms(&DISK, n, r, 4096.0, 1.0)
            };
            let got = rep.latency.all.mean_ms;
            eprintln!("paged {n} r {r} reads {reads}: simulated {got:.3} ms, model {model:.3} ms");
            if !reads && r > 1 {
                continue;
            }
            assert!(
                (got / model - 1.0).abs() < 0.10,
                "paged {n} r {r} ({}): simulated {got:.3} ms vs the model's {model:.3} ms",
                if reads { "reads" } else { "writes" }
            );
        }
    }
}
