//! Latent sector errors of an EW-Array or DDM (`ew::array::latent`) under the byte model:
//! a read that meets an unreadable location is served by another replica and the replica
//! is repaired by an eager write; a block with no readable replica is answered without
//! data, never with wrong data.

use super::failure::failing_config;
use super::*;

/// A rate giving 0.8–7.7 % bad 4 KiB locations: errors on many first reads of the initial
/// data, within what the narrowest free space (Dd = 1.25) accepts (at most half its free
/// locations bad).
fn random_rate(rng: &mut Pcg64Mcg) -> f64 {
    rng.gen_range(0.001..0.01)
}

/// Sets a random rate on `cfg`, halved while the array refuses it (a tiny band whose free
/// locations are more than half bad: the refusal is tested from the command line).
fn set_rate(rng: &mut Pcg64Mcg, cfg: &mut EwConfig) -> f64 {
    let mut rate = random_rate(rng);
    loop {
        cfg.latent_error_rate = Some(rate);
        match EwArray::new(drive(), cfg) {
            Err(e) if e.contains("latent sector error rate") => rate /= 2.0,
            _ => return rate,
        }
    }
}

/// The latent counters of a run, summed.
#[derive(Default, Debug)]
struct Totals {
    errors: u64,
    repairs: u64,
    superseded: u64,
    unrecoverable: u64,
    sectors_lost: u64,
    reads_checked: u64,
    /// Errors met by a DDM and by a mirrored EW-Array (Dm >= 2).
    ddm_errors: u64,
    ew_errors: u64,
}

impl Totals {
    fn add(&mut self, h: &Harness) {
        let c = h.a.latent_counters().expect("latent errors on");
        self.errors += c.errors;
        self.repairs += c.repairs;
        self.superseded += c.superseded;
        self.unrecoverable += c.unrecoverable;
        self.sectors_lost += h.stats.sectors_lost;
        self.reads_checked += h.stats.reads_checked;
        if h.a.shape.ddm {
            self.ddm_errors += c.errors;
        } else if h.a.dm >= 2 {
            self.ew_errors += c.errors;
        }
    }
}

/// Random EW shapes (Dm 1–3, DDM) with latent errors under closed-loop traffic: every read
/// gets at least the last write acknowledged before it arrived, or — only when the array
/// counts a block lost — nothing; once idle every replica of every block holds its newest
/// write (the repairs reached them, the bad locations retired) and a restart from the
/// images rebuilds the same map with no repair.
#[test]
fn latent_errors_are_served_by_another_replica_and_repaired_by_eager_writes() {
    let mut rng = Pcg64Mcg::seed_from_u64(0x1A7E);
    let mut t = Totals::default();
    for case in 0..30u64 {
        let (mut cfg, what) = random_config(&mut rng, case, 100..600);
        let rate = set_rate(&mut rng, &mut cfg);
        let what = format!("{what} latent {rate:.4}");
        let mut h = Harness::new(cfg, Pcg64Mcg::seed_from_u64(case), what);
        h.reads = rng.gen_range(0.3..0.8);
        let q = rng.gen_range(1..=16);
        assert!(h.run(1_000, q), "{}", h.what);
        h.check_idle();
        let c = h.a.latent_counters().expect("on");
        // Exactly the blocks counted lost went unread.
        let bs = u64::from(h.a.block_sectors);
        assert_eq!(h.stats.sectors_lost, c.unrecoverable * bs, "{}", h.what);
        if h.a.dm == 1 {
            // One copy: errors lose data (but for a block a write moved while its read
            // ran: the retry reads the new copy), and nothing is repaired.
            assert!(
                c.repairs == 0 && (c.errors == 0 || c.unrecoverable > 0),
                "{}: {c:?}",
                h.what
            );
        }
        t.add(&h);
    }
    println!("{t:?}");
    // Hundreds of errors each for the DDM and the mirrored EW-Arrays; most repaired.
    assert!(t.ew_errors > 200 && t.ddm_errors > 50, "{t:?}");
    assert!(t.repairs > 200, "{t:?}");
    assert!(t.reads_checked > 5_000, "{t:?}");
}

/// With a disk failed, degraded and rebuilt, latent errors on the survivors: every read
/// with a readable replica gets the newest acknowledged data (a replaced disk's copy is
/// never read once its spare is installed), the rebuild ends, and the array ends settled
/// with every replica, the spare's too, holding the newest write.
#[test]
fn latent_errors_with_a_failed_disk_and_its_rebuild_lose_no_acknowledged_write() {
    let mut rng = Pcg64Mcg::seed_from_u64(0x1A7F);
    let mut t = Totals::default();
    for case in 0..24u64 {
        let (mut cfg, what) = failing_config(&mut rng, case, 100..600);
        let rate = set_rate(&mut rng, &mut cfg);
        let what = format!("{what} latent {rate:.4}");
        let mut h = Harness::new(cfg, Pcg64Mcg::seed_from_u64(case), what);
        h.reads = rng.gen_range(0.3..0.8);
        let q = rng.gen_range(1..=16);
        assert!(h.run(1_500, q), "{}", h.what);
        let s = h.a.rebuild_status().expect("failed");
        assert!(s.done.is_some(), "{}: rebuild unfinished {s:?}", h.what);
        h.check_idle();
        let lost = h.a.latent_counters().expect("on").unrecoverable;
        assert_eq!(
            h.stats.sectors_lost,
            lost * u64::from(h.a.block_sectors),
            "{}",
            h.what
        );
        t.add(&h);
    }
    println!("{t:?}");
    assert!(t.errors > 300 && t.repairs > 150, "{t:?}");
    assert!(t.reads_checked > 5_000, "{t:?}");
}

/// Crashes at random points (torn moves, cut NVRAM writes) of arrays with latent errors,
/// some with a failed disk: recovery leaves every block at least its last acknowledged
/// write on every replica (a repair in flight is a propagation: its table slot keeps the
/// copy to spread), the bad locations are retired again from the seed, and the array then
/// ends idle with every replica holding the newest write.
#[test]
fn a_crash_with_latent_errors_recovers_every_acknowledged_write() {
    let mut rng = Pcg64Mcg::seed_from_u64(0x1A80);
    let mut t = Totals::default();
    let (mut crashes, mut case) = (0, 0u64);
    while crashes < 300 {
        case += 1;
        let (mut cfg, what) = if rng.gen_bool(0.3) {
            failing_config(&mut rng, case, 100..3000)
        } else {
            random_config(&mut rng, case, 100..3000)
        };
        let rate = set_rate(&mut rng, &mut cfg);
        let what = format!("{what} latent {rate:.4}");
        let mut h = Harness::new(cfg, Pcg64Mcg::seed_from_u64(case ^ 0x1A80), what);
        h.reads = rng.gen_range(0.3..0.7);
        let q = rng.gen_range(1..=12);
        for _ in 0..rng.gen_range(1..=3) {
            if rng.gen_bool(0.5) {
                h.crash_at_move = Some(h.moves + rng.gen_range(1..1_500));
            } else {
                h.crash_at = Some(h.steps + rng.gen_range(1..4_000));
            }
            h.tear = rng.gen_bool(0.5);
            // The counters of the array that crashes.
            let before = h.a.latent_counters().expect("on");
            if h.run(300, q) {
                break;
            }
            t.errors += h.a.latent_counters().expect("on").errors - before.errors;
            crashes += 1;
            h.crash_and_recover();
        }
        h.crash_at = None;
        h.crash_at_move = None;
        assert!(h.run(150, q), "{}", h.what);
        if h.a.rebuild_status().is_some() {
            let s = h.a.rebuild_status().expect("failed");
            assert!(s.done.is_some(), "{}: rebuild unfinished {s:?}", h.what);
        }
        h.check_idle();
        t.add(&h);
    }
    println!("{case} arrays, {crashes} crashes: {t:?}");
    assert!(t.errors > 300 && t.repairs > 100, "{t:?}");
}

/// The timing model alone (no data moves), under the audit of what each location holds:
/// every EW shape and scheduler with latent errors answers each request once, no read
/// returns data older than the last write acknowledged before it arrived, and the array
/// ends settled with every location the map left free, mapped or retired.
#[test]
fn every_ew_shape_with_latent_errors_answers_each_request_once_with_fresh_data() {
    use super::super::tests::run;
    let shapes = [
        (2, 1.0, 2.0, false, 1),
        (2, 1.5, 2.0, false, 2),
        (3, 0.8, 1.25, false, 1),
        (2, 1.0, 2.0, true, 2),
    ];
    let mut errors = 0;
    for (dm, ds, dd, ddm, sync) in shapes {
        for (policy, seed) in EwPolicy::ALL
            .into_iter()
            .zip(1..)
            .chain([(EwPolicy::SatfEw, 9)])
        {
            let mut cfg = config(dm, ds, dd, ddm, sync, policy);
            cfg.latent_error_rate = Some(0.005);
            cfg.seed = seed;
            let mut a = EwArray::new(drive(), &cfg).expect("valid shape");
            let n = run(&mut a, 2000, 16, 0.6, seed, None);
            let what = format!("{dm}x{ds}x{dd} ddm {ddm} {policy} seed {seed}");
            assert_eq!(n, 2000, "{what}");
            assert_eq!(a.outstanding(), 0, "{what}");
            assert!(a.audit.reads_checked > 500, "{what}");
            assert_settled(&a);
            let c = a.latent_counters().expect("on");
            assert!(c.errors > 0 && c.repairs > 0, "{what}: {c:?}");
            errors += c.errors;
        }
    }
    println!("{errors} errors met");
}
