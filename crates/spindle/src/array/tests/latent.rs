//! Latent sector errors of the mirrored and rotationally replicated layouts
//! (`array::latent`): reads served again by another copy, repairs, data lost.

use super::*;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

fn latent_array(
    (ds, dr, dm): (u32, u32, u32),
    writes: WritePolicy,
    policy: Policy,
    rate: f64,
    failure: Option<FailureConfig>,
    seed: u64,
) -> Array {
    let drive = Arc::new(builtin_drive("st39133lwv").expect("built-in drive"));
    let layout = Layout::new(
        &drive,
        &LayoutConfig {
            shape: Shape::SrMirror { ds, dr, dm },
            stripe_unit_bytes: 8192,
            placement: Placement::Even,
            data_set_bytes: Some(16 << 20),
            seed,
        },
    )
    .map_err(|e| e.0)
    .unwrap();
    let cfg = ArrayConfig {
        layout: Some(layout),
        writes,
        nvram_entries: 16,
        failure,
        latent_error_rate: Some(rate),
        ..ArrayConfig::jbod(1, policy, seed)
    };
    Array::new(drive, &cfg).map_err(|e| e.0).unwrap()
}

fn reads(n: u64, cap: u64, spacing_ns: u64) -> Vec<HostRequest> {
    (0..n)
        .map(|id| HostRequest {
            id,
            op: Op::Read,
            lba: (id * 7919 * 8) % (cap - 8) / 8 * 8,
            sectors: 8,
            arrival: Nanos(id * spacing_ns),
        })
        .collect()
}

/// Every sector bad: a read of data never written fails on every copy and is answered
/// without data; data written since reads back without error (a write remaps).
#[test]
fn every_copy_unreadable_is_data_lost_and_a_write_makes_it_readable() {
    let mut a = latent_array(
        (1, 1, 2),
        WritePolicy::Foreground,
        Policy::Fcfs,
        1.0,
        None,
        1,
    );
    let reqs = [
        HostRequest {
            id: 0,
            op: Op::Read,
            lba: 800,
            sectors: 8,
            arrival: Nanos(0),
        },
        HostRequest {
            id: 1,
            op: Op::Write,
            lba: 1600,
            sectors: 8,
            arrival: Nanos(50_000_000),
        },
        HostRequest {
            id: 2,
            op: Op::Read,
            lba: 1600,
            sectors: 8,
            arrival: Nanos(100_000_000),
        },
    ];
    let out = drain(&mut a, &reqs);
    assert_eq!(out.len(), 3);
    a.assert_quiescent();
    let c = a.latent_counters().expect("latent errors on");
    assert_eq!(c.errors, 2, "the first read fails on both mirrors: {c:?}");
    assert_eq!(c.unrecoverable, 1, "{c:?}");
    assert_eq!(c.repairs, 0, "nothing readable to repair from: {c:?}");
}

/// The rate is a fraction of sectors: isolated 8-sector reads of never-written data meet
/// an error with probability 1 − (1 − rate)^8 on the first copy they try. A read that
/// fails is served by the mirror, which then repairs the bad copy; the same reads again
/// meet fewer errors.
#[test]
fn errors_occur_at_the_configured_rate_and_repairs_remove_them() {
    let rate = 0.01;
    let n = 2_000u64;
    let mut a = latent_array((1, 1, 2), WritePolicy::Delayed, Policy::Fcfs, rate, None, 5);
    let cap = a.capacity_sectors();
    let first = reads(n, cap, 40_000_000);
    drain(&mut a, &first);
    a.assert_quiescent();
    let c1 = a.latent_counters().expect("latent errors on");
    // First tries: n reads, p = 1 - 0.99^8 = 0.0773; the retries on the mirror add about
    // p² n more. Bound: 5 standard deviations of the binomial around n·p(1 + p).
    let p = 1.0 - (1.0 - rate).powi(8);
    let mean = n as f64 * p * (1.0 + p);
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (c1.errors as f64 - mean).abs() < 5.0 * sd,
        "errors {} against {mean:.0} ± {sd:.0}: {c1:?}",
        c1.errors
    );
    assert!(c1.repairs > 0 && c1.unrecoverable > 0, "{c1:?}");
    assert_eq!(
        c1.repairs + c1.unrecoverable,
        c1.errors - c1.unrecoverable,
        "every read with a readable copy left is repaired: {c1:?}"
    );
    // The same reads again: the copies that failed were rewritten from their mirror (or
    // are the unrecoverable ones, still bad on both).
    let again: Vec<_> = first
        .iter()
        .map(|r| HostRequest {
            id: r.id + n,
            arrival: Nanos(r.arrival.0 + n * 40_000_000),
            ..*r
        })
        .collect();
    drain(&mut a, &again);
    let c2 = a.latent_counters().expect("latent errors on");
    let second = c2.errors - c1.errors;
    assert!(
        second <= 2 * c1.unrecoverable + (c1.errors - c1.repairs - c1.unrecoverable),
        "reads of repaired data fail again: {second} errors the second time, {c1:?} -> {c2:?}"
    );
}

/// A layout with one copy of each sector loses the data of every read that meets an error.
#[test]
fn a_single_copy_loses_every_read_that_meets_an_error() {
    let mut a = latent_array((2, 1, 1), WritePolicy::Delayed, Policy::Satf, 0.01, None, 2);
    let cap = a.capacity_sectors();
    let out = drain(&mut a, &reads(1_000, cap, 20_000_000));
    assert_eq!(out.len(), 1_000);
    let c = a.latent_counters().expect("latent errors on");
    assert!(c.errors > 0, "{c:?}");
    assert_eq!(c.errors, c.unrecoverable, "{c:?}");
    assert_eq!(c.repairs, 0, "{c:?}");
}

/// Random replicated layouts under overlapping reads and writes on a hot region with many
/// bad sectors, some with a disk failing too: every request is answered once, no read
/// returns data older than the last write acknowledged before it arrived (a repair that
/// wrote older data over a newer write would show here), and nothing is left pending.
#[test]
fn repairs_never_write_stale_data_under_random_traffic() {
    let mut rng = Pcg64Mcg::seed_from_u64(0x1A7E);
    let (mut errors, mut repairs, mut superseded, mut checked) = (0, 0, 0, 0);
    for case in 0..60u64 {
        let dr = rng.gen_range(1..=3);
        let dm = rng.gen_range(1..=3);
        let ds = rng.gen_range(1..=2);
        let writes = if rng.gen() {
            WritePolicy::Delayed
        } else {
            WritePolicy::Foreground
        };
        let policy = Policy::ALL[rng.gen_range(0..Policy::ALL.len())];
        let rate = [0.002, 0.02, 0.1][rng.gen_range(0..3)];
        let failure = (dm > 1 && rng.gen_bool(0.3)).then(|| FailureConfig {
            disk: rng.gen_range(0..(ds * dm) as usize),
            at: Nanos(rng.gen_range(0..400) * 1_000_000),
            rebuild: true,
            rate_bytes_per_s: None,
        });
        let what = format!(
            "case {case}: {ds}x{dr}x{dm} {writes:?} {policy} rate {rate} failure {failure:?}"
        );
        let mut a = latent_array((ds, dr, dm), writes, policy, rate, failure, case);
        let cap = a.capacity_sectors().min(1024);
        let reqs = random_traffic(&mut rng, cap, 500, 0.6);
        let out = drain(&mut a, &reqs);
        let mut ids: Vec<_> = out.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..500).collect::<Vec<_>>(), "{what}");
        a.assert_quiescent();
        assert_eq!(a.audit.stale_reads, 0, "{what}: stale reads");
        let c = a.latent_counters().expect("latent errors on");
        if dr * dm == 1 {
            assert_eq!(c.errors, c.unrecoverable, "{what}: {c:?}");
        }
        errors += c.errors;
        repairs += c.repairs;
        superseded += c.superseded;
        checked += a.audit.reads_checked;
    }
    assert!(
        errors > 200 && repairs > 100 && superseded > 0,
        "the cases exercised errors {errors}, repairs {repairs}, superseded {superseded}"
    );
    assert!(checked > 5_000, "reads audited: {checked}");
}
