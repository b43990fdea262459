use super::*;
use crate::drive::builtin_drive;
use crate::engine::Completion;
use crate::raid5::ParityRotation;

mod channel;
mod data;
mod degraded;

/// HP 97560s in `groups` parity groups of `width`, stripe units of `unit` sectors, FCFS
/// host queues, data set `data` sectors (absent: every stripe), caches `cache`.
fn build(
    shape: (u32, u32, u32),
    data: Option<u64>,
    rotation: ParityRotation,
    cache: Option<CacheConfig>,
    seed: u64,
) -> Raid5Array {
    build_failing(shape, data, rotation, cache, seed, None)
}

/// [`build`] with a disk failure.
fn build_failing(
    shape: (u32, u32, u32),
    data: Option<u64>,
    rotation: ParityRotation,
    cache: Option<CacheConfig>,
    seed: u64,
    failure: Option<FailureConfig>,
) -> Raid5Array {
    let cfg = Raid5Config {
        cache,
        failure,
        seed,
        ..config(shape, data, rotation)
    };
    let drive = if shape.2 == TRACKS {
        zoned()
    } else {
        hp97560()
    };
    Raid5Array::new(drive, &cfg).expect("valid array")
}

fn hp97560() -> Arc<Drive> {
    Arc::new(builtin_drive("hp97560").expect("built-in drive"))
}

/// A stripe unit of [`TRACKS`] sectors: track-aligned stripes on [`zoned`] drives.
const TRACKS: u32 = 0;

/// Three zones whose tracks (75, 61, 50 sectors) are not whole 4 KiB blocks, the first
/// zone's last track cut short by its spares, two slipped sectors: track-aligned units
/// vary from stripe to stripe, within a zone too (each keeps its track's whole blocks).
fn zoned() -> Arc<Drive> {
    const ZONED: &str = r#"
id = "zoned"
name = "zoned test drive"
rpm = 6000
surfaces = 2
cylinders = 4000
head_switch_ms = 0.3
overhead_read_ms = 0.5
overhead_write_ms = 0.5
slips = [130, 900]
[[zones]]
first_cylinder = 0
last_cylinder = 3
sectors_per_track = 75
track_skew = 7
cylinder_skew = 13
spare_sectors_per_zone = 20
[[zones]]
first_cylinder = 4
last_cylinder = 9
sectors_per_track = 61
track_skew = 5
cylinder_skew = 11
[[zones]]
first_cylinder = 10
last_cylinder = 3999
sectors_per_track = 50
track_skew = 4
cylinder_skew = 9
[seek]
kind = "linear"
full_ms = 12.0
intercept_ms = 1.0
"#;
    Arc::new(crate::drive::parse_drive(ZONED).expect("valid test drive"))
}

/// HP 97560s in `groups` parity groups of `width`, stripe units of `unit` sectors, FCFS
/// host queues, random phases, no caches, no failure, no channel.
fn config(
    (groups, width, unit): (u32, u32, u32),
    data: Option<u64>,
    rotation: ParityRotation,
) -> Raid5Config {
    let layout = if unit == TRACKS {
        ParityLayout::new_track_aligned(groups, width, &zoned(), 8, data, rotation)
    } else {
        ParityLayout::new(
            groups,
            width,
            unit,
            hp97560().capacity_sectors(),
            data,
            rotation,
        )
    }
    .expect("valid layout");
    Raid5Config {
        layout,
        policy: Policy::Fcfs,
        age_bound: None,
        random_phase: true,
        noise: false,
        seed: 7,
        reconstruct_fraction: 0.5,
        cache: None,
        failure: None,
        io_bus_bytes_per_s: None,
        cache_port_bytes_per_s: None,
        drive_buffers: false,
    }
}

/// The paper's array: two parity groups of five HP 97560s, stripe units of nine 4 KiB blocks.
fn array(rotation: ParityRotation) -> Raid5Array {
    build((2, 5, 72), None, rotation, None, 7)
}

fn req(id: u64, op: Op, lba: u64, sectors: u32, at: u64) -> HostRequest {
    HostRequest {
        id,
        op,
        lba,
        sectors,
        arrival: Nanos(at),
    }
}

/// The heap key of a timer in [`drain`].
const WAKE: usize = usize::MAX;

/// Runs to quiescence, feeding arrivals and disk completions in time order.
fn drain(a: &mut Raid5Array, reqs: &[HostRequest]) -> Vec<Completion> {
    use std::cmp::Reverse;
    let mut disks = std::collections::BinaryHeap::new();
    let mut out = vec![];
    let mut next = reqs.iter().peekable();
    // A livelock (work that re-creates itself for ever) fails the test instead of hanging it:
    // no run here needs more than a few disk operations per sector requested.
    let budget: u64 = 1_000 + reqs.iter().map(|r| 64 * u64::from(r.sectors)).sum::<u64>();
    let mut events = 0u64;
    loop {
        events += 1;
        assert!(events <= budget, "no quiescence after {budget} events");
        while let Some(act) = a.poll_action() {
            match act {
                Action::DiskBusy { disk, until } => disks.push(Reverse((until, disk))),
                Action::Complete(c) => out.push(c),
                Action::Wake { at } => disks.push(Reverse((at, WAKE))),
            }
        }
        let disk_t = disks.peek().map(|Reverse((t, _))| *t);
        let host_first = match (next.peek(), disk_t) {
            (None, None) => break,
            (Some(r), Some(t)) => r.arrival <= t,
            (Some(_), None) => true,
            (None, Some(_)) => false,
        };
        if host_first {
            let r = next.next().expect("peeked");
            a.handle(r.arrival, Event::Host(*r));
        } else {
            let Reverse((t, disk)) = disks.pop().expect("peeked");
            if disk == WAKE {
                a.handle(t, Event::Wake);
            } else {
                a.handle(t, Event::DiskDone { disk });
            }
        }
    }
    out
}

fn ops_per_disk(a: &Raid5Array) -> Vec<u64> {
    (0..a.disk_count()).map(|d| a.counters(d).ops).collect()
}

#[test]
fn a_small_write_reads_and_writes_its_data_and_parity() {
    let mut a = array(ParityRotation::LeftSymmetric);
    // 8 sectors of group 0, stripe 0, unit 0 (disk 0); parity on disk 4.
    let done = drain(&mut a, &[req(1, Op::Write, 8, 8, 0)]);
    assert_eq!(done.len(), 1);
    assert_eq!(ops_per_disk(&a), [2, 0, 0, 0, 2, 0, 0, 0, 0, 0]);
    assert_eq!(a.update_counts().read_modify_write, 1);
    // Both reads before both writes: at least two accesses in series on each disk.
    let busy = a.busy(0, done[0].done).get(Cause::HostWrite);
    assert!(
        done[0].latency() >= busy,
        "{:?} < {busy:?}",
        done[0].latency()
    );
}

#[test]
fn a_full_stripe_write_writes_data_and_parity_without_reads() {
    let mut a = array(ParityRotation::LeftSymmetric);
    // Group 0's stripe 0 is units 0, 2, 4, 6 of the array (groups alternate).
    let reqs: Vec<_> = (0..8u64)
        .map(|u| req(u, Op::Write, u * 72, 72, 0))
        .collect();
    // One host write of the whole of both groups' stripe 0.
    let one = [req(1, Op::Write, 0, 8 * 72, 0)];
    drain(&mut a, &one);
    assert_eq!(ops_per_disk(&a), [1; 10]);
    assert_eq!(a.update_counts().full_stripe, 2);
    // The same data written unit by unit is eight read-modify-writes.
    let mut b = array(ParityRotation::LeftSymmetric);
    drain(&mut b, &reqs);
    assert_eq!(b.update_counts().read_modify_write, 8);
    assert_eq!(ops_per_disk(&b).iter().sum::<u64>(), 32);
}

#[test]
fn a_whole_track_aligned_stripe_is_a_full_stripe_write_whatever_its_unit() {
    let mut a = build(
        (1, 4, TRACKS),
        Some(60_000),
        ParityRotation::LeftSymmetric,
        None,
        7,
    );
    let l = a.layout().clone();
    // The first stripe of each unit size (the zoned drive's tracks keep 40 to 72 sectors).
    let mut sizes = std::collections::BTreeMap::new();
    for s in 0..l.stripes() {
        sizes.entry(l.unit_of(s)).or_insert(s);
    }
    assert!(sizes.len() >= 4, "{sizes:?}");
    let reqs: Vec<_> = sizes
        .values()
        .enumerate()
        .map(|(i, &s)| {
            let lba = l.logical(0, s, 0, 0);
            req(
                i as u64,
                Op::Write,
                lba,
                3 * l.unit_of(s),
                i as u64 * 1_000_000_000,
            )
        })
        .collect();
    drain(&mut a, &reqs);
    let n = reqs.len() as u64;
    assert_eq!(a.update_counts().full_stripe, n, "{:?}", a.update_counts());
    assert_eq!(ops_per_disk(&a), [n; 4]);
}

#[test]
fn a_large_partial_write_reads_only_the_data_it_leaves() {
    // One parity group, so that a host write's units are consecutive units of a stripe.
    let mut one = build((1, 5, 72), None, ParityRotation::LeftSymmetric, None, 7);
    // Units 0..2 whole and 8 sectors of unit 3's rows 0..8: 75 % of the stripe is new.
    drain(&mut one, &[req(1, Op::Write, 0, 3 * 72 + 8, 0)]);
    assert_eq!(one.update_counts().reconstruct_write, 1);
    // Unit 3 (disk 3) is read for its rows 8..72, then written; the others written once;
    // parity (disk 4) written once.
    assert_eq!(ops_per_disk(&one), [1, 1, 1, 2, 1]);
}

#[test]
fn updates_of_one_stripe_run_one_at_a_time() {
    let mut a = array(ParityRotation::LeftSymmetric);
    // Two small writes of the same stripe (different units) arriving together: the second
    // may read the parity only after the first has written it.
    let done = drain(
        &mut a,
        &[req(1, Op::Write, 0, 8, 0), req(2, Op::Write, 144, 8, 0)],
    );
    assert_eq!(done.len(), 2);
    let (first, second) = (done[0], done[1]);
    // The second update's four accesses all follow the first's completion: on the parity
    // disk, two accesses each.
    assert!(second.done > first.done);
    assert_eq!(a.counters(4).ops, 4);
}

#[test]
fn reads_go_to_the_data_disks_and_runs_are_deterministic() {
    let run = || {
        let mut a = array(ParityRotation::RightAsymmetric);
        let cap = a.capacity_sectors();
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let reqs: Vec<_> = (0..400u64)
            .map(|i| {
                let op = if rng.gen_bool(0.6) {
                    Op::Read
                } else {
                    Op::Write
                };
                let sectors = 8 * rng.gen_range(1..=4u32);
                let lba = rng.gen_range(0..(cap - 64) / 8) * 8;
                req(i, op, lba, sectors, i * 2_000_000)
            })
            .collect();
        let done = drain(&mut a, &reqs);
        assert_eq!(done.len(), 400, "every request answered");
        assert_eq!(a.outstanding(), 0);
        let c = a.update_counts();
        let writes = reqs.iter().filter(|r| r.op == Op::Write).count() as u64;
        // A write spans at most two stripes.
        let updates = c.full_stripe + c.reconstruct_write + c.read_modify_write;
        assert!(
            updates >= writes && updates <= 2 * writes,
            "{c:?} for {writes}"
        );
        done.iter().map(|c| (c.id, c.done)).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

/// A parity array with caches of `write`/`read` blocks and destage algorithm `policy`.
fn cached(
    policy: crate::cache::DestagePolicy,
    write: usize,
    read: usize,
    reserve: usize,
    rotation: ParityRotation,
    seed: u64,
    unit: u32,
) -> Raid5Array {
    let cache = CacheConfig {
        write_blocks: write,
        read_blocks: read,
        parity_reserve: reserve,
        policy,
    };
    build((2, 4, unit), Some(400_000), rotation, Some(cache), seed)
}

#[test]
fn random_workloads_through_small_caches_are_answered_and_work_conserving_destage_drains() {
    use crate::cache::DestagePolicy;
    let policies = [
        DestagePolicy::Fcfs,
        DestagePolicy::LeastCost,
        DestagePolicy::high_low_default(),
        DestagePolicy::linear_threshold_default(),
        DestagePolicy::regions_default(),
    ];
    let rotations = [
        ParityRotation::LeftSymmetric,
        ParityRotation::RightAsymmetric,
        ParityRotation::Dedicated,
    ];
    let mut overflowed = 0;
    for (unit, case) in [16, TRACKS]
        .into_iter()
        .flat_map(|u| (0..40u64).map(move |c| (u, c)))
    {
        let mut rng = Pcg64Mcg::seed_from_u64(case);
        let policy = policies[case as usize % policies.len()].clone();
        let work_conserving = matches!(policy, DestagePolicy::Fcfs | DestagePolicy::LeastCost);
        let write = rng.gen_range(6..64);
        let reserve = rng.gen_range(1..=3.min(write - 1));
        let read = rng.gen_range(0..128);
        let rotation = rotations[rng.gen_range(0..rotations.len())];
        let mut a = cached(policy, write, read, reserve, rotation, case, unit);
        let cap = a.capacity_sectors();
        // Bursts of arrivals on a small hot set (re-writes, same stripes) and anywhere.
        let mut t = 0u64;
        let reqs: Vec<_> = (0..300u64)
            .map(|i| {
                t += rng.gen_range(0..4_000_000);
                let op = if rng.gen_bool(0.5) {
                    Op::Read
                } else {
                    Op::Write
                };
                let sectors = rng.gen_range(1..=40u32);
                let span = if rng.gen_bool(0.5) { 2_000 } else { cap - 40 };
                let lba = rng.gen_range(0..span.min(cap - u64::from(sectors)));
                req(i, op, lba, sectors, t)
            })
            .collect();
        let done = drain(&mut a, &reqs);
        assert_eq!(
            done.len(),
            reqs.len(),
            "case {case}: every request answered"
        );
        assert_eq!(a.outstanding(), 0);
        let c = a.cache.as_ref().expect("a cache");
        assert!(c.write.occupied() <= c.write.capacity(), "case {case}");
        overflowed += c.counters.overflows;
        if work_conserving {
            // Nothing is left to destage: no dirty or pending block, no round, no
            // operation, no stripe held.
            assert_eq!(
                c.write.occupied(),
                0,
                "case {case}: blocks left newer than disk"
            );
            assert!(c.rounds.is_empty() && c.dirty.is_empty(), "case {case}");
            assert!(
                a.ops.is_empty() && a.stripe_queues.is_empty(),
                "case {case}"
            );
        } else {
            // What is left is a round's destage work, not a stuck host request.
            assert!(a.ops.iter().all(|o| o.slot.is_none()), "case {case}");
        }
    }
    assert!(overflowed > 0, "the small caches overflowed at least once");
}

#[test]
fn cached_runs_are_deterministic() {
    let run = |unit| {
        let mut a = cached(
            crate::cache::DestagePolicy::linear_threshold_default(),
            32,
            64,
            3,
            ParityRotation::LeftSymmetric,
            9,
            unit,
        );
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let reqs: Vec<_> = (0..500u64)
            .map(|i| {
                let op = if rng.gen_bool(0.4) {
                    Op::Write
                } else {
                    Op::Read
                };
                req(i, op, rng.gen_range(0..5_000) * 8, 8, i * 1_500_000)
            })
            .collect();
        drain(&mut a, &reqs)
            .iter()
            .map(|c| (c.id, c.done))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(16), run(16));
    assert_eq!(run(TRACKS), run(TRACKS));
}
