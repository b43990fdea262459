//! A failed disk of an EW-Array or DDM, degraded operation and the rebuild
//! (`ew::array::failure`), under the timing audit and the byte model.

use super::super::tests::{assert_settled, config, drive, run};
use super::*;
use crate::engine::FailureConfig;

fn fail(disk: usize, at_ms: u64, rate: Option<f64>) -> FailureConfig {
    FailureConfig {
        disk,
        at: Nanos(at_ms * 1_000_000),
        rebuild: true,
        rate_bytes_per_s: rate,
    }
}

impl Harness {
    /// As the emulator does: a failed disk's spare holds nothing when the rebuild starts.
    pub(super) fn follow_rebuild(&mut self) {
        if let Some(r) = self.a.rebuild_status() {
            if r.started.is_some() && !self.replaced {
                self.replaced = true;
                self.disks.disks[r.disk].clear();
            }
        }
    }

    /// The disk whose copies may differ from the others' now: a failed disk not (yet)
    /// rebuilt.
    pub(super) fn unrebuilt(a: &EwArray) -> Option<usize> {
        a.rebuild_status()
            .filter(|r| r.done.is_none())
            .map(|r| r.disk)
    }
}

/// Redundant shapes: (Dm, Ds, Dd, DDM, sync copies).
const SHAPES: [(u32, f64, f64, bool, u32); 8] = [
    (2, 1.0, 2.0, false, 1),
    (2, 1.0, 2.0, false, 2),
    (2, 1.6, 1.25, false, 1),
    (2, 2.0, 1.5, false, 2),
    (3, 0.8, 1.25, false, 1),
    (3, 1.0, 2.0, false, 2),
    (2, 1.0, 2.0, true, 2),
    (2, 1.5, 2.0, true, 2),
];

/// A random failure of a random disk at a random instant, rebuilt as fast as the disks
/// allow or paced, with the map log region replicated 1 to Dm times: at least twice when a
/// disk holding a copy fails (disk 0 one time in three, so its region copy is exercised).
fn random_failure(rng: &mut Pcg64Mcg, cfg: &mut EwConfig, at_ms_max: u64) -> FailureConfig {
    let shape = cfg.shape;
    let disks = shape.disks().expect("whole") as usize;
    let n = shape.per_replica().expect("whole") as usize;
    let rate = rng.gen_bool(0.5).then(|| rng.gen_range(3e6..40e6));
    let disk = if rng.gen_bool(1.0 / 3.0) {
        0
    } else {
        rng.gen_range(0..disks)
    };
    let copies_of_log = |r: u32| (0..r as usize).any(|k| k * n == disk);
    cfg.map_log_replicas = rng.gen_range(1..=shape.dm);
    if copies_of_log(cfg.map_log_replicas) {
        cfg.map_log_replicas = rng.gen_range(2..=shape.dm);
    }
    fail(disk, rng.gen_range(0..at_ms_max), rate)
}

/// Random redundant EW shapes, schedulers, free layouts and buffer sizes; a random disk
/// fails under random closed-loop traffic and is rebuilt: every request is answered once,
/// no read returns data older than the last write acknowledged before it arrived nor a
/// spare's block the rebuild has not written (the audit panics), the rebuild finishes, and
/// the array ends settled with every disk's used blocks its column's (the map unchanged by
/// the rebuild, a DDM's blocks all home).
#[test]
fn ew_arrays_lose_no_acknowledged_write_through_a_failure_and_rebuild() {
    let mut rng = Pcg64Mcg::seed_from_u64(0xEFA1);
    let mut checked = 0;
    for case in 0..24u64 {
        let (dm, ds, dd, ddm, sync) = SHAPES[rng.gen_range(0..SHAPES.len())];
        let policy = EwPolicy::ALL[rng.gen_range(0..EwPolicy::ALL.len())];
        let mut cfg = config(dm, ds, dd, ddm, sync, policy);
        cfg.seed = case;
        cfg.nvram_entries = rng.gen_range(1..60);
        if !ddm && rng.gen_bool(0.3) {
            cfg.free_layout = FreeLayout::Random;
        }
        let f = random_failure(&mut rng, &mut cfg, 600);
        let what = format!(
            "case {case}: {} sync {sync} {policy} {:?} nvram {} log copies {}: {f:?}",
            cfg.shape.describe(),
            cfg.free_layout,
            cfg.nvram_entries,
            cfg.map_log_replicas
        );
        cfg.failure = Some(f);
        let mut a = EwArray::new(drive(), &cfg).unwrap_or_else(|e| panic!("{what}: {e}"));
        let q = rng.gen_range(1..=16);
        let n = run(&mut a, 3000, q, rng.gen_range(0.3..0.7), case, None);
        assert_eq!(n, 3000, "{what}");
        assert_eq!(a.outstanding(), 0, "{what}");
        let s = a.rebuild_status().expect("the disk failed");
        assert!(s.done.is_some(), "{what}: rebuild unfinished: {s:?}");
        assert_eq!(s.stripes_done, s.stripes_total, "{what}");
        assert_settled(&a);
        checked += a.audit.reads_checked;
    }
    assert!(checked > 20_000, "reads audited: {checked}");
}

/// Degraded to the end (no rebuild), disk 1 or disk 0 (with the map log region on its
/// mirror too): reads are served by the survivors alone, writes are acknowledged, the map
/// log goes on on the surviving copy, and nothing is left pending.
#[test]
fn an_ew_array_runs_degraded_without_a_rebuild() {
    for (dm, ds, dd, ddm, sync) in SHAPES {
        for disk in [1, 0] {
            let mut cfg = config(dm, ds, dd, ddm, sync, EwPolicy::SatfEw);
            cfg.map_log_replicas = if disk == 0 { 2 } else { 1 };
            // 16 records a buffer: hundreds of appends, most after the failure at 100 ms.
            cfg.map.nvram_bytes = 64 + 2 * 16 * 8;
            cfg.failure = Some(FailureConfig {
                rebuild: false,
                ..fail(disk, 100, None)
            });
            let mut a = EwArray::new(drive(), &cfg).unwrap();
            assert_eq!(run(&mut a, 2000, 8, 0.5, 3, None), 2000);
            assert_eq!(a.outstanding(), 0);
            assert_eq!(a.pending_blocks(), 0);
            let s = a.rebuild_status().unwrap();
            assert_eq!((s.started, s.done), (None, None));
            assert!(a.audit.reads_checked > 500);
            let log = a.map_log().stats();
            assert!(log.appends > 40, "{log:?}");
            assert!(a.map_log().in_flight().next().is_none());
        }
    }
}

/// A paced rebuild of an idle array takes the column's data over the rate (to within the
/// last step), and an unpaced one is faster.
#[test]
fn a_paced_ew_rebuild_takes_the_data_over_the_rate() {
    let rate = 2e6;
    let time = |rate: Option<f64>| {
        let mut cfg = config(2, 1.0, 2.0, false, 1, EwPolicy::SatfEw);
        cfg.failure = Some(fail(1, 0, rate));
        let mut a = EwArray::new(drive(), &cfg).unwrap();
        // One request: the controller sees time begin (the failure is at 0).
        assert_eq!(run(&mut a, 1, 1, 1.0, 1, None), 1);
        let s = a.rebuild_status().unwrap();
        let bytes = u64::from(a.column_blocks(1)) * BLOCK_BYTES;
        (s.done.unwrap().since(s.started.unwrap()), bytes)
    };
    let (paced, bytes) = time(Some(rate));
    let want = bytes as f64 / rate;
    let got = paced.0 as f64 / 1e9;
    // The last 256 KiB step starts one step's time (131 ms) before `want` and ends with
    // its copy: its reads and writes, well under 100 ms on this drive.
    let step = 262_144.0 / rate;
    assert!(
        got >= want - step && got < want + 0.1,
        "paced rebuild {got:.3} s, data over rate {want:.3} s"
    );
    let (fast, _) = time(None);
    assert!(fast < paced, "unpaced {fast:?} vs paced {paced:?}");
}

/// Dm = 1 keeps one copy: a failure loses data, and the configuration says so; disk 0
/// is refused too while it holds the only copy of the map log region, as is a disk that
/// does not exist.
#[test]
fn failures_the_ew_array_cannot_survive_are_refused() {
    let mut cfg = config(1, 2.0, 1.5, false, 1, EwPolicy::SatfEw);
    cfg.failure = Some(fail(1, 0, None));
    let e = EwArray::new(drive(), &cfg).err().expect("refused");
    assert!(e.contains("loses its data"), "{e}");
    let mut cfg = config(2, 1.0, 2.0, true, 2, EwPolicy::SatfEw);
    cfg.failure = Some(fail(0, 0, None));
    let e = EwArray::new(drive(), &cfg).err().expect("refused");
    assert!(e.contains("map_log_replicas = 2"), "{e}");
    cfg.map_log_replicas = 2;
    assert!(EwArray::new(drive(), &cfg).is_ok());
    cfg.map_log_replicas = 3;
    let e = EwArray::new(drive(), &cfg).err().expect("refused");
    assert!(e.contains("1 to Dm = 2"), "{e}");
    cfg.map_log_replicas = 1;
    cfg.failure = Some(fail(4, 0, None));
    let e = EwArray::new(drive(), &cfg).err().expect("refused");
    assert!(e.contains("does not exist"), "{e}");
}

/// A random redundant configuration (the byte model's) with a random failure.
pub(super) fn failing_config(
    rng: &mut Pcg64Mcg,
    case: u64,
    nvram: std::ops::Range<u64>,
) -> (EwConfig, String) {
    loop {
        let (mut cfg, what) = random_config(rng, case, nvram.clone());
        if cfg.shape.dm < 2 {
            continue;
        }
        let f = random_failure(rng, &mut cfg, 400);
        let what = format!("{what}: {f:?}");
        cfg.failure = Some(f);
        return (cfg, what);
    }
}

/// The byte model through a failure and rebuild: every read gets at least the last write
/// acknowledged before it arrived (the failed disk's file is emptied when its spare is
/// installed, as the emulator does), and once idle every replica, the spare's too, holds
/// every block's newest write; a restart then rebuilds the same map with no repair.
#[test]
fn data_moves_rebuild_the_spare_with_the_newest_acknowledged_bytes() {
    let mut rng = Pcg64Mcg::seed_from_u64(0xEFB2);
    let mut reads = 0;
    for case in 0..24u64 {
        let (cfg, what) = failing_config(&mut rng, case, 100..600);
        let mut h = Harness::new(cfg, Pcg64Mcg::seed_from_u64(case), what);
        h.reads = rng.gen_range(0.2..0.7);
        let q = rng.gen_range(1..=16);
        assert!(h.run(1_500, q));
        let s = h.a.rebuild_status().expect("failed");
        assert!(s.done.is_some(), "{}: rebuild unfinished {s:?}", h.what);
        assert!(h.replaced, "{}", h.what);
        h.check_idle();
        reads += h.stats.reads_checked;
    }
    assert!(reads > 5_000, "reads checked: {reads}");
}

/// Crashes at random points of random workloads with a failure, before, while the failed
/// disk drains, and during the rebuild: recovery (the disk failed again from the start, as
/// `spindle serve` asks after a crash during a rebuild) leaves every block at least its
/// last acknowledged write on every surviving replica, and the array then rebuilds and ends
/// idle with every replica, the spare's too, holding the newest write.
#[test]
fn a_crash_during_a_failure_recovers_every_acknowledged_write() {
    let mut rng = Pcg64Mcg::seed_from_u64(0xEFC3);
    let (mut crashes, mut while_failed, mut during_rebuild) = (0, 0, 0);
    // Crashes while a disk holding a copy of the map log region is failed.
    let mut log_disk_failed = 0;
    let mut case = 0;
    while crashes < 300 {
        case += 1;
        let (cfg, what) = failing_config(&mut rng, case, 100..3000);
        let mut h = Harness::new(cfg, Pcg64Mcg::seed_from_u64(case ^ 0xEFC3), what);
        h.reads = rng.gen_range(0.1..0.6);
        let q = rng.gen_range(1..=12);
        for _ in 0..rng.gen_range(1..=2) {
            if rng.gen_bool(0.5) {
                h.crash_at_move = Some(h.moves + rng.gen_range(1..1_500));
            } else {
                h.crash_at = Some(h.steps + rng.gen_range(1..4_000));
            }
            h.tear = rng.gen_bool(0.5);
            if h.run(400, q) {
                break;
            }
            let s = h.a.rebuild_status();
            while_failed += u32::from(s.is_some());
            during_rebuild += u32::from(s.is_some_and(|s| s.started.is_some()));
            log_disk_failed += u32::from(s.is_some_and(|s| h.a.log_disks.contains(&s.disk)));
            crashes += 1;
            h.crash_and_recover();
        }
        h.crash_at = None;
        h.crash_at_move = None;
        assert!(h.run(200, q));
        let s = h.a.rebuild_status().expect("failed");
        assert!(s.done.is_some(), "{}: rebuild unfinished {s:?}", h.what);
        h.check_idle();
    }
    println!(
        "{case} arrays, {crashes} crashes, {while_failed} failed, {during_rebuild} rebuilding, \
         {log_disk_failed} with a map log copy failed"
    );
    assert!(
        while_failed > 100 && during_rebuild > 50 && log_disk_failed > 30,
        "crashes while failed {while_failed}, during the rebuild {during_rebuild}, with a \
         map log copy failed {log_disk_failed}"
    );
}
