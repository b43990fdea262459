//! A failed disk of a mirrored layout: degraded operation and rebuild (`array::failure`).

use super::*;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

fn failing_array(
    (ds, dr, dm): (u32, u32, u32),
    writes: WritePolicy,
    policy: Policy,
    failure: FailureConfig,
    seed: u64,
) -> Result<Array, String> {
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
    .map_err(|e| e.0)?;
    let cfg = ArrayConfig {
        layout: Some(layout),
        writes,
        nvram_entries: 16,
        failure: Some(failure),
        ..ArrayConfig::jbod(1, policy, seed)
    };
    Array::new(drive, &cfg).map_err(|e| e.0)
}

fn fail(disk: usize, at_ms: u64, rate: Option<f64>) -> FailureConfig {
    FailureConfig {
        disk,
        at: Nanos(at_ms * 1_000_000),
        rebuild: true,
        rate_bytes_per_s: rate,
    }
}

/// Random mirrored layouts, write modes and policies; a random disk fails under bursts of
/// overlapping reads and writes on a small hot region and is rebuilt onto a spare: every
/// request is answered once, no read returns data older than the last write acknowledged
/// before it arrived (nor a spare's sector the rebuild has not written), the rebuild
/// finishes, and nothing is left pending.
#[test]
fn mirrored_arrays_lose_no_acknowledged_write_through_a_failure_and_rebuild() {
    let mut rng = Pcg64Mcg::seed_from_u64(0xFA11);
    let mut checked = 0;
    for case in 0..24u64 {
        let (ds, dr, dm) = (
            rng.gen_range(1..=2),
            rng.gen_range(1..=3),
            rng.gen_range(2..=3),
        );
        let writes = if rng.gen() {
            WritePolicy::Delayed
        } else {
            WritePolicy::Foreground
        };
        let policy = Policy::ALL[rng.gen_range(0..Policy::ALL.len())];
        let disk = rng.gen_range(0..(ds * dm) as usize);
        let at_ms = rng.gen_range(0..400);
        let rate = rng.gen_bool(0.5).then(|| rng.gen_range(20e6..200e6));
        let what = format!(
            "case {case}: {ds}x{dr}x{dm} {writes:?} {policy}, disk {disk} fails at {at_ms} ms, \
             rate {rate:?}"
        );
        let mut a = failing_array((ds, dr, dm), writes, policy, fail(disk, at_ms, rate), case)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let cap = a.capacity_sectors().min(2048);
        let reqs = random_traffic(&mut rng, cap, 600, 0.5);
        // Acknowledged writes are often read back at once, while copies are pending.
        let mut next_id = 600u64;
        let mut follow_rng = Pcg64Mcg::seed_from_u64(case);
        let mut follow = |c: &Completion| {
            let r = (c.op == Op::Write && c.id < 600 && follow_rng.gen::<bool>()).then(|| {
                HostRequest {
                    id: next_id,
                    op: Op::Read,
                    arrival: c.done,
                    ..reqs[c.id as usize]
                }
            });
            next_id += u64::from(r.is_some());
            r
        };
        let out = drain_with(&mut a, &reqs, &mut follow);
        let mut ids: Vec<_> = out.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..next_id).collect::<Vec<_>>(), "{what}");
        a.assert_quiescent();
        assert_eq!(a.audit.stale_reads, 0, "{what}: stale reads");
        let status = a.rebuild_status().expect("the disk failed");
        assert!(
            status.done.is_some(),
            "{what}: rebuild unfinished: {status:?}"
        );
        assert_eq!(status.stripes_done, status.stripes_total, "{what}");
        checked += a.audit.reads_checked;
    }
    assert!(checked > 5_000, "reads audited: {checked}");
}

/// While degraded, reads of data the rebuild has not reached go to the survivor (the audit
/// counts any read of a spare sector not yet written as stale); the rebuilt spare serves
/// reads again; the rebuild's time is charged to its own cause on both disks.
#[test]
fn a_failed_disk_is_left_out_until_its_spare_is_rebuilt() {
    let mut a = failing_array(
        (1, 1, 2),
        WritePolicy::Delayed,
        Policy::Fcfs,
        fail(1, 2_000, Some(20e6)),
        3,
    )
    .unwrap();
    let cap = a.capacity_sectors();
    // Reads spread over the data set, before the failure, while the rebuild runs and after.
    let reqs: Vec<_> = (0..400u64)
        .map(|id| HostRequest {
            id,
            op: Op::Read,
            lba: (id * 7919 * 8) % (cap - 8),
            sectors: 8,
            arrival: Nanos(id * 20_000_000),
        })
        .collect();
    let out = drain(&mut a, &reqs);
    assert_eq!(out.len(), 400);
    assert_eq!(a.audit.reads_checked, 400);
    assert_eq!(a.audit.stale_reads, 0);
    let status = a.rebuild_status().unwrap();
    let done = status.done.expect("rebuilt");
    assert_eq!(status.failed_at, Nanos(2_000_000_000));
    assert_eq!(status.started, Some(status.failed_at), "nothing to drain");
    let reads_on_1 = |from: Nanos, to: Nanos| {
        a.audit
            .read_starts
            .iter()
            .filter(|&&(d, t)| d == 1 && t >= from && t < to)
            .count()
    };
    assert!(
        reads_on_1(Nanos::ZERO, status.failed_at) > 0,
        "both mirrors read before"
    );
    assert!(
        reads_on_1(done, Nanos(u64::MAX)) > 0,
        "the rebuilt spare serves reads again"
    );
    let end = a.out.now();
    assert!(a.disks[1].clock.busy(end).get(Cause::Rebuild) > Span::ZERO);
    assert!(
        a.disks[0].clock.busy(end).get(Cause::Rebuild) > Span::ZERO,
        "the source reads"
    );
}

/// A paced rebuild of an idle array takes the column's bytes over the rate (to within the
/// last step), and an unpaced one is faster.
#[test]
fn a_paced_rebuild_takes_the_data_over_the_rate() {
    // Below what the disks sustain (a step's read, then its write: about 8 MB/s here).
    let rate = 4e6;
    let time = |rate: Option<f64>| {
        let mut a = failing_array(
            (1, 1, 2),
            WritePolicy::Delayed,
            Policy::Fcfs,
            fail(0, 0, rate),
            5,
        )
        .unwrap();
        // One request: the controller sees time begin (the failure is at 0).
        let r = HostRequest {
            id: 0,
            op: Op::Read,
            lba: 0,
            sectors: 1,
            arrival: Nanos::ZERO,
        };
        drain(&mut a, &[r]);
        let s = a.rebuild_status().unwrap();
        (
            s.done.unwrap().since(s.started.unwrap()),
            a.layout.column_sectors() * 512,
        )
    };
    let (paced, bytes) = time(Some(rate));
    let want = bytes as f64 / rate;
    let got = paced.0 as f64 / 1e9;
    // A step of 256 KiB may start once the data before it is due at the rate; the last
    // starts one step's time (65 ms) before `want` and ends with its copy (a read and a
    // write of 256 KiB, well under 50 ms on this drive).
    let step = 262_144.0 / rate;
    assert!(
        got >= want - step && got < want + 0.05,
        "paced rebuild {got:.3} s, data over rate {want:.3} s"
    );
    let (fast, _) = time(None);
    assert!(fast < paced, "unpaced {fast:?} vs paced {paced:?}");
}

/// Without a mirror every copy of a block is on one disk: a failure loses data, and the
/// configuration says so.
#[test]
fn a_failure_without_a_mirror_is_refused() {
    for (ds, dr) in [(2, 1), (2, 3)] {
        let err = failing_array(
            (ds, dr, 1),
            WritePolicy::Delayed,
            Policy::Fcfs,
            fail(0, 0, None),
            1,
        )
        .err()
        .expect("refused");
        assert!(err.contains("loses its data"), "{err}");
    }
}
