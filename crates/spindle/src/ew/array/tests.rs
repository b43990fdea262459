use super::*;
use crate::drive::builtin_drive;
use rand::Rng;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

pub(super) fn drive() -> Arc<Drive> {
    Arc::new(builtin_drive("st39133lwv").expect("built-in drive"))
}

pub(super) fn config(
    dm: u32,
    ds: f64,
    dd: f64,
    ddm: bool,
    sync: u32,
    policy: EwPolicy,
) -> EwConfig {
    EwConfig {
        shape: EwShape { dm, ds, dd, ddm },
        stripe_unit_bytes: 16 * 1024,
        data_set_bytes: Some(8 << 20),
        sync_copies: sync,
        policy,
        age_bound: None,
        random_phase: true,
        noise: false,
        seed: 7,
        nvram_entries: 40,
        map: MapLogConfig {
            nvram_bytes: 2048,
            portions: 3,
            sector_bytes: 512,
        },
        free_layout: FreeLayout::Even,
        map_log_replicas: 1,
        failure: None,
        latent_error_rate: None,
    }
}

/// Drives `a` with a closed loop of `q` random requests (1–3 blocks, `reads` of them
/// reads) until `requests` are answered or `stop_after` events have been handled (a crash).
/// Returns how many were answered; panics if one is answered twice.
pub(super) fn run(
    a: &mut EwArray,
    requests: u64,
    q: u64,
    reads: f64,
    seed: u64,
    stop_after: Option<u64>,
) -> u64 {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let cap_blocks = a.capacity() / 8;
    let mut heap: BinaryHeap<Reverse<(Nanos, u64, usize)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut issued = 0u64;
    let mut answered = BTreeSet::new();
    let mut events = 0u64;
    let issue = |a: &mut EwArray, at: Nanos, rng: &mut Pcg64Mcg, issued: &mut u64| {
        let blocks = rng.gen_range(1..=3u64);
        let b = rng.gen_range(0..cap_blocks - blocks);
        let op = if rng.gen_bool(reads) {
            Op::Read
        } else {
            Op::Write
        };
        a.handle(
            at,
            Event::Host(HostRequest {
                id: *issued,
                op,
                lba: b * 8,
                sectors: (blocks * 8) as u32,
                arrival: at,
            }),
        );
        *issued += 1;
    };
    for _ in 0..q.min(requests) {
        issue(a, Nanos::ZERO, &mut rng, &mut issued);
    }
    loop {
        while let Some(act) = a.poll_action() {
            match act {
                // A failure's or a paced rebuild's timer.
                Action::Wake { at } => {
                    seq += 1;
                    heap.push(Reverse((at, seq, WAKE)));
                }
                Action::DiskBusy { disk, until } => {
                    seq += 1;
                    heap.push(Reverse((until, seq, disk)));
                }
                Action::Complete(c) => {
                    assert!(answered.insert(c.id), "request {} answered twice", c.id);
                    if issued < requests {
                        issue(a, c.done, &mut rng, &mut issued);
                    }
                }
            }
        }
        events += 1;
        if stop_after.is_some_and(|s| events > s) {
            return answered.len() as u64;
        }
        let Some(Reverse((t, _, disk))) = heap.pop() else {
            break;
        };
        let ev = match disk {
            WAKE => Event::Wake,
            disk => Event::DiskDone { disk },
        };
        a.handle(t, ev);
    }
    answered.len() as u64
}

/// The event queue's mark of a controller's timer (not a disk).
pub(super) const WAKE: usize = usize::MAX;

/// Every disk's used blocks once everything is propagated: one per logical block of its
/// column (DDM: the homes, its eager copies moved home).
pub(super) fn assert_settled(a: &EwArray) {
    assert_eq!(a.pending_blocks(), 0, "propagations left");
    // The table is a hash map: name its lowest block, so a failure reads the same each run.
    if let Some((b, st)) = a.table.iter().min_by_key(|(&b, _)| b) {
        panic!(
            "{} blocks with state left, e.g. {b}: newest {} acked {} ver {:?} inflight {} props {:?}",
            a.table.len(),
            st.newest,
            st.acked,
            st.ver,
            st.inflight,
            st.props
        );
    }
    assert!(a.pins.is_empty() && a.zombies.is_empty(), "pins left");
    for (d, disk) in a.disks.iter().enumerate() {
        let c = d as u32 % a.n;
        let mut referenced = BTreeSet::new();
        for b in 0..a.logical_blocks {
            for m in 0..a.dm {
                if a.disk_of(b, m) == d {
                    assert!(
                        referenced.insert(a.map.map().get(b, m)),
                        "disk {d}: two blocks at one location"
                    );
                }
            }
        }
        if a.shape.ddm {
            let away: Vec<u32> = (0..a.logical_blocks)
                .filter(|&b| {
                    a.disk_of(b, a.home_replica(b)) == d
                        && a.map.map().get(b, a.home_replica(b)) != a.home_slot(b)
                        // A bad home is retired: its block stays away.
                        && !a.latent_bad(d, a.home_slot(b))
                })
                .collect();
            assert!(
                away.is_empty(),
                "disk {d}: {} blocks not moved home, e.g. {:?}",
                away.len(),
                &away[..away.len().min(5)]
            );
        }
        let unmapped =
            |s: &u32| !disk.free.is_free(*s) && !referenced.contains(s) && !a.is_home(d, *s);
        let leaked: Vec<u32> = (0..disk.free.blocks())
            .filter(|s| unmapped(s) && !a.latent_bad(d, *s))
            .collect();
        // Bad locations the map left are retired, every one counted.
        let retired = (0..disk.free.blocks())
            .filter(|s| unmapped(s) && a.latent_bad(d, *s))
            .count() as u32;
        assert_eq!(retired, a.retired_blocks(d), "disk {d}: retired locations");
        // A DDM block whose home is bad is mapped away from it, on top of its home.
        let away_from_bad_home = if a.shape.ddm {
            (0..a.logical_blocks)
                .filter(|&b| {
                    a.disk_of(b, a.home_replica(b)) == d
                        && a.latent_bad(d, a.home_slot(b))
                        && a.map.map().get(b, a.home_replica(b)) != a.home_slot(b)
                })
                .count() as u32
        } else {
            0
        };
        assert!(
            leaked.is_empty(),
            "disk {d}: {} blocks used but unmapped, e.g. {:?}",
            leaked.len(),
            &leaked[..leaked.len().min(5)]
        );
        assert_eq!(
            disk.free.blocks() - disk.free.free_blocks(),
            a.column_blocks(c) + retired + away_from_bad_home,
            "disk {d}: used blocks"
        );
    }
}

#[test]
fn every_layout_and_policy_answers_each_request_once_and_reads_are_fresh() {
    let shapes = [
        (1, 2.0, 1.5, false, 1),
        (2, 1.0, 2.0, false, 1),
        (2, 1.5, 2.0, false, 2),
        (3, 0.8, 1.25, false, 1),
        (2, 1.0, 2.0, true, 2),
    ];
    for (dm, ds, dd, ddm, sync) in shapes {
        for policy in EwPolicy::ALL {
            let mut cfg = config(dm, ds, dd, ddm, sync, policy);
            cfg.age_bound = Some(Span::from_ms(200));
            let mut a = EwArray::new(drive(), &cfg).expect("valid shape");
            let n = run(&mut a, 3000, 16, 0.5, 11, None);
            assert_eq!(n, 3000, "{dm}x{ds}x{dd} {policy}");
            assert_eq!(a.outstanding(), 0);
            assert!(a.audit.reads_checked > 1000, "reads were audited");
            assert_settled(&a);
            assert!(a.map.stats().appends > 0, "the map log was appended to");
        }
    }
}

#[test]
fn the_nvram_limit_moves_propagations_to_the_foreground() {
    let mut cfg = config(3, 1.0, 2.0, false, 1, EwPolicy::SatfEw);
    cfg.nvram_entries = 5;
    let mut a = EwArray::new(drive(), &cfg).expect("valid shape");
    // Write-only at Q = 32 leaves no idle time: without promotion nothing would propagate
    // until the end.
    let mut max_pending = 0;
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let mut heap: BinaryHeap<Reverse<(Nanos, u64, usize)>> = BinaryHeap::new();
    let (mut seq, mut issued) = (0u64, 0u64);
    let cap = a.capacity() / 8;
    for _ in 0..32 {
        let b = rng.gen_range(0..cap);
        a.handle(
            Nanos::ZERO,
            Event::Host(HostRequest {
                id: issued,
                op: Op::Write,
                lba: b * 8,
                sectors: 8,
                arrival: Nanos::ZERO,
            }),
        );
        issued += 1;
    }
    loop {
        while let Some(act) = a.poll_action() {
            match act {
                // A failure's or a paced rebuild's timer.
                Action::Wake { at } => {
                    seq += 1;
                    heap.push(Reverse((at, seq, WAKE)));
                }
                Action::DiskBusy { disk, until } => {
                    seq += 1;
                    heap.push(Reverse((until, seq, disk)));
                }
                Action::Complete(c) => {
                    if issued < 2000 {
                        let b = rng.gen_range(0..cap);
                        a.handle(
                            c.done,
                            Event::Host(HostRequest {
                                id: issued,
                                op: Op::Write,
                                lba: b * 8,
                                sectors: 8,
                                arrival: c.done,
                            }),
                        );
                        issued += 1;
                    }
                }
            }
        }
        // Each completed write adds at most 2 pending blocks beyond what is promoted.
        max_pending = max_pending.max(a.pending_blocks() - a.promoted_blocks);
        let Some(Reverse((t, _, disk))) = heap.pop() else {
            break;
        };
        a.handle(t, Event::DiskDone { disk });
    }
    assert!(
        max_pending <= 5 + 2,
        "unpromoted pending blocks reached {max_pending}"
    );
    assert_settled(&a);
}

#[test]
fn a_crash_at_any_point_recovers_the_live_map_pointing_at_acknowledged_data() {
    // 1,000 crash points over the layout families, each in a fresh small array.
    let mut rng = Pcg64Mcg::seed_from_u64(99);
    let shapes = [
        (2, 1.0, 2.0, false, 1),
        (2, 2.0, 1.5, false, 2),
        (1, 2.0, 1.5, false, 1),
        (2, 1.0, 2.0, true, 2),
    ];
    for i in 0..1000u64 {
        let (dm, ds, dd, ddm, sync) = shapes[i as usize % shapes.len()];
        let mut cfg = config(dm, ds, dd, ddm, sync, EwPolicy::ALL[i as usize % 6]);
        cfg.map.nvram_bytes = rng.gen_range(256..4096);
        cfg.seed = i;
        let mut a = EwArray::new(drive(), &cfg).expect("valid shape");
        let stop = rng.gen_range(1..4000);
        run(&mut a, 2000, 8, 0.3, i, Some(stop));
        let p = a.map.crash();
        let (map, _) = MapLog::recover(&p, &a.map_cfg, a.logical_blocks, a.dm)
            .unwrap_or_else(|e| panic!("crash {i}: recovery failed: {e}"));
        assert_eq!(
            &map,
            a.map.map(),
            "crash {i} at event {stop}: recovered map"
        );
        // Every copy the NVRAM table calls fresh holds the last acknowledged data.
        for b in 0..a.logical_blocks {
            let acked = a.table.get(&b).map_or(0, |st| st.acked);
            let fresh = a.fresh(b);
            assert!(fresh != 0, "block {b} has no fresh copy");
            for m in 0..a.dm {
                if fresh & (1 << m) == 0 {
                    continue;
                }
                let d = a.disk_of(b, m);
                let loc = map.get(b, m);
                match a.audit.contents.get(&(d, loc)) {
                    Some(&(held, v)) => {
                        assert_eq!(
                            held, b,
                            "crash {i}: block {b} copy {m} points at block {held}'s data"
                        );
                        assert!(
                            v >= acked,
                            "crash {i}: block {b} copy {m} holds {v} < acknowledged {acked}"
                        );
                    }
                    None => assert_eq!(
                        acked, 0,
                        "crash {i}: block {b} copy {m} points at initial data after write {acked}"
                    ),
                }
            }
        }
    }
}

#[test]
fn impossible_shapes_are_refused_with_the_reason() {
    let err = |dm, ds, dd, ddm, sync| {
        EwArray::new(drive(), &config(dm, ds, dd, ddm, sync, EwPolicy::SatfEw))
            .err()
            .expect("refused")
    };
    assert!(err(1, 1.5, 1.5, false, 1).contains("whole number"));
    assert!(err(1, 1.0, 1.0, false, 1).contains("no free blocks"));
    assert!(err(3, 1.0, 2.0, true, 2).contains("Dm = 2"));
    assert!(err(1, 1.0, 2.0, false, 2).contains("sync_copies"));
    let mut cfg = config(1, 0.5, 2.0, false, 1, EwPolicy::SatfEw);
    cfg.data_set_bytes = None;
    let e = EwArray::new(drive(), &cfg)
        .err()
        .expect("a band of two disks does not fit");
    assert!(e.contains("do not fit"), "{e}");
}

#[test]
fn random_slots_are_exactly_the_data_blocks_spread_over_the_band() {
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    let s = random_slots(1000, 1250, &mut rng);
    assert_eq!(s.len(), 1000);
    assert!(s.windows(2).all(|w| w[0] < w[1]), "increasing, distinct");
    assert!(*s.last().unwrap() < 1250);
    // Uniform: each tenth of the band holds 25 free slots on average (binomial sd ~4.5);
    // 12..=38 is three sd either side, and the seed is fixed.
    for tenth in 0..10u32 {
        let used = s.iter().filter(|&&x| x / 125 == tenth).count();
        let free = 125 - used;
        assert!((12..=38).contains(&free), "tenth {tenth}: {free} free");
    }
    let mut again = Pcg64Mcg::seed_from_u64(5);
    assert_eq!(random_slots(1000, 1250, &mut again), s, "deterministic");
}

#[test]
fn a_random_free_layout_keeps_every_guarantee() {
    for policy in EwPolicy::ALL {
        let mut cfg = config(2, 1.0, 2.0, false, 1, policy);
        cfg.free_layout = FreeLayout::Random;
        cfg.age_bound = Some(Span::from_ms(200));
        let mut a = EwArray::new(drive(), &cfg).expect("valid shape");
        let n = run(&mut a, 3000, 16, 0.5, 13, None);
        assert_eq!(n, 3000, "{policy}");
        assert!(a.audit.reads_checked > 1000, "reads were audited");
        assert_settled(&a);
    }
    let mut cfg = config(2, 1.0, 2.0, true, 2, EwPolicy::SatfEw);
    cfg.free_layout = FreeLayout::Random;
    let e = EwArray::new(drive(), &cfg).err().expect("refused");
    assert!(e.contains("home"), "{e}");
}

/// Multi-block writes on a small hot region: a chunk's block can settle on a newer write
/// while the chunk's other blocks are still being written, and a still newer write can
/// arrive before the chunk is acknowledged. Every request is answered (before the fix, a
/// late acknowledgement recorded itself as the newest on the newer write's fresh state,
/// leaving no copy to read: reads of the block were never served).
#[test]
fn a_late_chunk_acknowledgement_never_leaves_a_block_without_a_fresh_copy() {
    for policy in EwPolicy::ALL {
        for &(dm, ds, dd, sync) in &[(1, 2.0, 1.5, 1), (2, 1.5, 2.0, 2), (3, 0.8, 1.25, 1)] {
            let mut cfg = config(dm, ds, dd, false, sync, policy);
            cfg.nvram_entries = 10;
            let mut a = EwArray::new(drive(), &cfg).expect("valid shape");
            let mut r = Pcg64Mcg::seed_from_u64(u64::from(dm) * 100);
            let lb = (a.capacity() / 8) as u32;
            let mut heap = BinaryHeap::new();
            let (mut seq, mut issued, mut owed, mut now) = (0u64, 0u64, 12u64, Nanos::ZERO);
            loop {
                while let Some(act) = a.poll_action() {
                    match act {
                        Action::Wake { .. } => unreachable!("this controller sets no timers"),
                        Action::DiskBusy { disk, until } => {
                            seq += 1;
                            heap.push(Reverse((until, seq, disk)));
                        }
                        Action::Complete(_) => owed += 1,
                    }
                }
                if owed > 0 && issued < 1500 {
                    owed -= 1;
                    let blocks = r.gen_range(1..=6u32);
                    let b0 = if r.gen_bool(0.8) {
                        r.gen_range(0..48 - blocks)
                    } else {
                        r.gen_range(0..lb - blocks)
                    };
                    let op = if r.gen_bool(0.4) { Op::Read } else { Op::Write };
                    a.handle(
                        now,
                        Event::Host(HostRequest {
                            id: issued,
                            op,
                            lba: u64::from(b0) * 8,
                            sectors: blocks * 8,
                            arrival: now,
                        }),
                    );
                    issued += 1;
                    continue;
                }
                let Some(Reverse((t, _, disk))) = heap.pop() else {
                    break;
                };
                now = t;
                a.handle(t, Event::DiskDone { disk });
            }
            assert_eq!(a.outstanding(), 0, "{dm}x{ds}x{dd} sync {sync} {policy}");
            assert_settled(&a);
        }
    }
}

/// The initial placement's page fill (one formula per stripe unit) gives what the formula
/// gives entry by entry, for both layouts, pages starting anywhere, a last partial unit.
#[test]
fn initial_placement_fill_matches_the_formula() {
    let (unit, n) = (4u32, 3u32);
    let logical = 43u32; // 10 stripe units and 3 blocks: the last unit is partial
    let per_column: Vec<u32> = (0..n)
        .map(|c| {
            (0..logical)
                .filter(|&b| column_of(b, unit, n).0 == c)
                .count() as u32
        })
        .collect();
    let band_blocks: Vec<u32> = per_column.iter().map(|&b| 2 * b + 1).collect();
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let random: Vec<Vec<BlockId>> = per_column
        .iter()
        .zip(&band_blocks)
        .map(|(&b, &slots)| random_slots(b, slots, &mut rng))
        .collect();
    for random in [Vec::new(), random] {
        let p = InitialPlacement {
            unit,
            n,
            per_column: per_column.clone(),
            band_blocks: band_blocks.clone(),
            random,
        };
        for replicas in [1u32, 2, 3] {
            let entries = u64::from(logical * replicas);
            for first in 0..entries {
                for len in [1, 2, 5, 9, 31] {
                    let len = len.min(entries - first) as usize;
                    let mut out = vec![u32::MAX; len];
                    p.fill(first, replicas, &mut out);
                    for (k, &v) in out.iter().enumerate() {
                        let e = first + k as u64;
                        let r = u64::from(replicas);
                        let (b, x) = ((e / r) as u32, (e % r) as u32);
                        assert_eq!(v, p.initial(b, x), "entry {e} from {first}");
                    }
                }
            }
        }
    }
}
