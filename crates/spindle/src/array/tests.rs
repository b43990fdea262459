use super::*;
use crate::drive::builtin_drive;
use crate::engine::Completion;
use crate::layout::{Layout, LayoutConfig, Placement, Shape};

mod failure;
mod latent;

fn array(disks: usize, policy: Policy) -> Array {
    let drive = Arc::new(builtin_drive("st39133lwv").expect("built-in drive"));
    Array::new(drive, &ArrayConfig::jbod(disks, policy, 7))
        .map_err(|e| e.0)
        .unwrap()
}

/// Runs the array to quiescence, returning completions in order. Host arrivals and disk
/// completions are fed in time order.
fn drain(a: &mut Array, reqs: &[HostRequest]) -> Vec<Completion> {
    drain_with(a, reqs, &mut |_| None)
}

/// [`drain`], and `follow(c)` may issue one more request the instant `c` completes.
fn drain_with(
    a: &mut Array,
    reqs: &[HostRequest],
    follow: &mut dyn FnMut(&Completion) -> Option<HostRequest>,
) -> Vec<Completion> {
    use std::cmp::Reverse;
    let mut disks = std::collections::BinaryHeap::new();
    let mut out = vec![];
    let mut next = reqs.iter().peekable();
    loop {
        while let Some(act) = a.poll_action() {
            match act {
                // A timer: an event with no disk.
                Action::Wake { at } => disks.push(Reverse((at, usize::MAX))),
                Action::DiskBusy { disk, until } => disks.push(Reverse((until, disk))),
                Action::Complete(c) => {
                    if let Some(r) = follow(&c) {
                        a.handle(c.done, Event::Host(r));
                    }
                    out.push(c);
                }
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
            if disk == usize::MAX {
                a.handle(t, Event::Wake);
            } else {
                a.handle(t, Event::DiskDone { disk });
            }
        }
    }
    out
}

#[test]
fn a_request_spanning_two_disks_is_answered_once_after_both_parts() {
    let mut a = array(2, Policy::Fcfs);
    let per = a.capacity_sectors() / 2;
    let r = HostRequest {
        id: 0,
        op: Op::Read,
        lba: per - 4,
        sectors: 8,
        arrival: Nanos(0),
    };
    let out = drain(&mut a, &[r]);
    assert_eq!(out.len(), 1);
    assert_eq!(a.counters(0).ops + a.counters(1).ops, 2);
    assert_eq!(a.outstanding(), 0);
}

#[test]
fn every_request_is_answered_exactly_once_under_every_policy() {
    for policy in Policy::ALL {
        let mut a = array(3, policy);
        let cap = a.capacity_sectors();
        let reqs: Vec<_> = (0..200u64)
            .map(|i| HostRequest {
                id: i,
                op: if i % 3 == 0 { Op::Write } else { Op::Read },
                lba: (i * 7_919_993) % (cap - 64),
                sectors: 8,
                arrival: Nanos(i * 100_000),
            })
            .collect();
        let out = drain(&mut a, &reqs);
        let mut ids: Vec<_> = out.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..200).collect::<Vec<_>>(), "{policy}");
        for c in &out {
            let b = c.breakdown;
            assert_eq!(
                c.latency(),
                b.queue + b.overhead + b.seek + b.rotation + b.transfer + b.switches,
                "{policy}"
            );
        }
    }
}

/// Random but valid on-disk buffer configurations under random request streams: every
/// request is answered once, after it arrived, and its breakdown adds up to its latency.
#[test]
fn buffered_drives_keep_the_invariants_under_random_configurations() {
    use crate::drive::spec::test_spec;
    use crate::drive::{CacheSpec, ExtraWriteDisconnect};
    use rand::Rng;
    let mut rng = Pcg64Mcg::seed_from_u64(0xCAC4E);
    for case in 0..60 {
        let mut spec = test_spec(2, 1000, 100);
        let ms = |rng: &mut Pcg64Mcg, hi: f64| (rng.gen::<f64>() * hi * 1000.0).round() / 1000.0;
        let segment_sectors = rng.gen_range(8..400);
        spec.cache = Some(CacheSpec {
            segments: rng.gen_range(1..8),
            segment_sectors,
            write_segments: 1,
            separate_write_segment: rng.gen(),
            enable_caching: rng.gen_range(0..3),
            continuous_read: rng.gen_range(0..5),
            min_read_ahead_sectors: 0,
            max_read_ahead_sectors: rng.gen_range(0..=segment_sectors),
            read_ahead_over_requested: rng.gen(),
            read_ahead_on_idle_hit: rng.gen(),
            read_any_free_blocks: rng.gen(),
            free_blocks_before_request: true,
            fast_write_level: rng.gen_range(0..3),
            immediate_buffer_read: rng.gen(),
            immediate_buffer_write: rng.gen(),
            combine_seq_writes: rng.gen(),
            stop_prefetch_in_sector: rng.gen(),
            write_hit_stop_prefetch: rng.gen(),
            read_directly_to_buffer: true,
            immediate_transfer_partial_hit: true,
            read_hits_on_write_data: rng.gen(),
            low_water_mark: rng.gen(),
            high_water_mark: rng.gen(),
            watermark_by_request: rng.gen(),
            read_hit_after_read_ms: ms(&mut rng, 1.0),
            read_hit_after_write_ms: ms(&mut rng, 1.0),
            read_miss_after_read_ms: ms(&mut rng, 3.0),
            read_miss_after_write_ms: ms(&mut rng, 3.0),
            write_hit_after_read_ms: ms(&mut rng, 1.0),
            write_hit_after_write_ms: ms(&mut rng, 1.0),
            write_miss_after_read_ms: ms(&mut rng, 3.0),
            write_miss_after_write_ms: ms(&mut rng, 3.0),
            read_completion_ms: ms(&mut rng, 0.2),
            write_completion_ms: ms(&mut rng, 0.2),
            data_preparation_ms: ms(&mut rng, 0.1),
            first_reselect_ms: ms(&mut rng, 0.2),
            other_reselect_ms: ms(&mut rng, 0.2),
            read_disconnect_after_read_ms: 0.0,
            read_disconnect_after_write_ms: 0.0,
            write_disconnect_ms: ms(&mut rng, 0.2),
            bus_sector_ms: ms(&mut rng, 0.3),
            bus_sector_write_ms: rng
                .gen::<bool>()
                .then(|| (rng.gen::<f64>() * 300.0).round() / 1000.0),
            hold_bus_read: false,
            hold_bus_write: false,
            never_disconnect: false,
            extra_write_disconnect: rng.gen::<bool>().then_some(ExtraWriteDisconnect {
                command_ms: 0.5,
                disconnect_ms: 0.05,
                inter_disconnect_delay_ms: 0.4,
                second_disconnect_ms: 0.1,
                seek_delta_ms: 0.0,
            }),
            minimum_seek_ms: ms(&mut rng, 1.0),
            per_request_ms: ms(&mut rng, 0.3),
        });
        let drive = Arc::new(Drive::from_spec(&spec).unwrap());
        let policy = Policy::ALL[case % Policy::ALL.len()];
        let mut a = Array::new(drive, &ArrayConfig::jbod(1, policy, case as u64))
            .map_err(|e| e.0)
            .unwrap();
        let cap = a.capacity_sectors();
        // Mostly sequential runs with jumps, so hits, read-ahead and appends all occur.
        let mut lba = 0u64;
        let mut t = 0u64;
        let reqs: Vec<_> = (0..300u64)
            .map(|id| {
                let sectors = rng.gen_range(1..40u32);
                if rng.gen::<f64>() < 0.3 {
                    lba = rng.gen_range(0..cap - 64);
                }
                let r = HostRequest {
                    id,
                    op: if rng.gen::<f64>() < 0.6 {
                        Op::Read
                    } else {
                        Op::Write
                    },
                    lba,
                    sectors,
                    arrival: Nanos(t),
                };
                lba = (lba + u64::from(sectors)).min(cap - 64);
                t += rng.gen_range(0..20_000_000);
                r
            })
            .collect();
        let out = drain(&mut a, &reqs);
        let mut ids: Vec<_> = out.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..300).collect::<Vec<_>>(), "case {case}");
        for c in &out {
            let b = c.breakdown;
            assert!(c.done >= c.arrival, "case {case}");
            assert_eq!(
                c.latency(),
                b.queue + b.overhead + b.seek + b.rotation + b.transfer + b.switches,
                "case {case}: {c:?}"
            );
        }
    }
}

impl Array {
    /// Nothing left anywhere: no queued or live operation, no pending write, no blocked one.
    fn assert_quiescent(&self) {
        for (i, d) in self.disks.iter().enumerate() {
            assert!(d.busy.is_none(), "disk {i} busy");
            assert!(d.queue.is_empty(), "disk {i}: {} queued", d.queue.len());
            assert_eq!(d.queue.delayed_len(), 0, "disk {i}: delayed writes left");
        }
        assert!(self.ops.is_empty(), "live operations left");
        assert!(
            self.table.is_empty(),
            "{} pending writes left",
            self.table.len()
        );
        assert!(self.blocked.is_empty(), "blocked writes left");
        assert_eq!(self.outstanding(), 0);
    }
}

/// `n` requests of 1–24 sectors on the first `cap` sectors, in bursts (70 % of arrivals up
/// to 3 ms after the previous one, the rest at the same instant), reads with probability
/// `read_p`: pieces collide, duplicates race and pending writes are overtaken.
fn random_traffic(rng: &mut Pcg64Mcg, cap: u64, n: u64, read_p: f64) -> Vec<HostRequest> {
    let mut t = 0u64;
    (0..n)
        .map(|id| {
            let sectors = [1u32, 8, 8, 16, 24][rng.gen_range(0..5)];
            let lba = rng.gen_range(0..(cap - 24) / 8) * 8 + rng.gen_range(0..2) * 4;
            if rng.gen::<f64>() < 0.7 {
                t += rng.gen_range(0..3_000_000);
            }
            HostRequest {
                id,
                op: if rng.gen_bool(read_p) {
                    Op::Read
                } else {
                    Op::Write
                },
                lba,
                sectors,
                arrival: Nanos(t),
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)] // a test fixture: every knob is a parameter
fn layout_array(
    ds: u32,
    dr: u32,
    dm: u32,
    placement: Placement,
    writes: WritePolicy,
    policy: Policy,
    nvram: usize,
    seed: u64,
) -> Array {
    let drive = Arc::new(builtin_drive("st39133lwv").expect("built-in drive"));
    let layout = Layout::new(
        &drive,
        &LayoutConfig {
            shape: Shape::SrMirror { ds, dr, dm },
            stripe_unit_bytes: 8192,
            placement,
            data_set_bytes: Some(64 << 20),
            seed,
        },
    )
    .map_err(|e| e.0)
    .unwrap();
    let cfg = ArrayConfig {
        layout: Some(layout),
        writes,
        nvram_entries: nvram,
        ..ArrayConfig::jbod(1, policy, seed)
    };
    Array::new(drive, &cfg).map_err(|e| e.0).unwrap()
}

/// Random layouts, policies and write modes under bursts of overlapping reads and writes
/// on a small data set (so pieces collide, duplicates race and delayed writes supersede
/// each other): every request is answered exactly once, its breakdown adds up, nothing is
/// left behind, and no read returns data older than the last write acknowledged before the
/// read arrived.
#[test]
fn replicated_arrays_keep_their_invariants_under_random_traffic() {
    let mut rng = Pcg64Mcg::seed_from_u64(0xA77A);
    let mut checked = 0;
    for case in 0..40u64 {
        let dr = rng.gen_range(1..=3);
        let dm = rng.gen_range(1..=3);
        let ds = rng.gen_range(1..=2);
        let placement =
            [Placement::Even, Placement::Random, Placement::TrackGroup][case as usize % 3];
        let writes = if rng.gen() {
            WritePolicy::Delayed
        } else {
            WritePolicy::Foreground
        };
        let policy = Policy::ALL[rng.gen_range(0..Policy::ALL.len())];
        let nvram = rng.gen_range(1..20);
        let mut a = layout_array(ds, dr, dm, placement, writes, policy, nvram, case);
        // A small hot region, so reads often follow writes whose copies are still pending.
        let cap = a.capacity_sectors().min(640);
        let mut t = 0u64;
        let reqs: Vec<_> = (0..400u64)
            .map(|id| {
                let sectors = [1u32, 8, 8, 16, 24][rng.gen_range(0..5)];
                let lba = rng.gen_range(0..(cap - 24) / 8) * 8 + rng.gen_range(0..2) * 4;
                if rng.gen::<f64>() < 0.7 {
                    t += rng.gen_range(0..3_000_000);
                }
                HostRequest {
                    id,
                    op: if rng.gen::<f64>() < 0.5 {
                        Op::Read
                    } else {
                        Op::Write
                    },
                    lba,
                    sectors,
                    arrival: Nanos(t),
                }
            })
            .collect();
        // Half the acknowledged writes are read back at once, while their other copies
        // are still being propagated.
        let mut next_id = 400u64;
        let mut follow_rng = Pcg64Mcg::seed_from_u64(case);
        let mut follow = |c: &Completion| {
            let r = (c.op == Op::Write && c.id < 400 && follow_rng.gen::<bool>()).then(|| {
                let r = reqs[c.id as usize];
                HostRequest {
                    id: next_id,
                    op: Op::Read,
                    arrival: c.done,
                    ..r
                }
            });
            next_id += u64::from(r.is_some());
            r
        };
        let out = drain_with(&mut a, &reqs, &mut follow);
        let issued = next_id;
        let what =
            format!("case {case}: {ds}x{dr}x{dm} {placement:?} {writes:?} {policy} nvram {nvram}");
        let mut ids: Vec<_> = out.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..issued).collect::<Vec<_>>(), "{what}");
        for c in &out {
            let b = c.breakdown;
            assert!(c.done >= c.arrival, "{what}");
            assert_eq!(
                c.latency(),
                b.queue + b.overhead + b.seek + b.rotation + b.transfer + b.switches,
                "{what}"
            );
        }
        a.assert_quiescent();
        assert_eq!(a.audit.stale_reads, 0, "{what}: stale reads");
        checked += a.audit.reads_checked;
        if dr * dm > 1 && writes == WritePolicy::Delayed {
            let propagated: u64 = (0..a.disk_count())
                .map(|d| a.counters(d).propagations)
                .sum();
            assert!(propagated > 0, "{what}: delayed writes were propagated");
        }
    }
    assert!(checked > 5_000, "reads audited: {checked}");
}

/// Every copy of a piece is written once the array is idle again: each spaced-out write
/// on a 2x2x2 SR-Mirror costs its first copy, one propagation of the other replica on the
/// same disk and one of both replicas on the mirror, and nothing is left pending.
#[test]
fn delayed_writes_reach_every_copy() {
    let mut a = layout_array(
        2,
        2,
        2,
        Placement::TrackGroup,
        WritePolicy::Delayed,
        Policy::Satf,
        10_000,
        3,
    );
    let reqs: Vec<_> = (0..50u64)
        .map(|id| HostRequest {
            id,
            op: Op::Write,
            lba: id * 64,
            sectors: 8,
            arrival: Nanos(id * 20_000_000),
        })
        .collect();
    drain(&mut a, &reqs);
    a.assert_quiescent();
    // Each write: 1 first copy + 1 more replica on its disk + 2 replicas on the mirror.
    let ops: u64 = (0..a.disk_count()).map(|d| a.counters(d).ops).sum();
    let propagations: u64 = (0..a.disk_count())
        .map(|d| a.counters(d).propagations)
        .sum();
    assert_eq!(ops, 50 * 3);
    assert_eq!(propagations, 50 * 2);
}

/// A chain of partly overlapping writes on a RAID-10 with delayed copies, while a read
/// stream keeps the foreground queues from ever emptying: W2 waits for W1's copies (W1's
/// delayed write is moved to the foreground), W3 waits behind W2. When W2 starts, W3 waits
/// for W2's entry, whose delayed write must go to the foreground too; left in the delayed
/// queue it is served only once the reads stop, and W3 with it (measured without the fix:
/// W3 answered after 2.88 s, as the last read completes).
#[test]
fn a_write_waiting_again_behind_a_started_overlapping_write_moves_its_copy_to_the_foreground() {
    let mut a = layout_array(
        1,
        1,
        2,
        Placement::TrackGroup,
        WritePolicy::Delayed,
        Policy::Fcfs,
        10_000,
        3,
    );
    let mut rng = Pcg64Mcg::seed_from_u64(0x0B1A);
    // Reads every 2 ms for 2 s, more than two disks serve: the foreground never empties.
    let mut reqs: Vec<HostRequest> = (0..1000u64)
        .map(|i| HostRequest {
            id: 100 + i,
            op: Op::Read,
            lba: 4096 + rng.gen_range(0..10_000u64) * 8,
            sectors: 8,
            arrival: Nanos(i * 2_000_000),
        })
        .collect();
    for (id, lba, at_ms) in [(1u64, 0u64, 10u64), (2, 4, 11), (3, 8, 12)] {
        reqs.push(HostRequest {
            id,
            op: Op::Write,
            lba,
            sectors: 8,
            arrival: Nanos(at_ms * 1_000_000),
        });
    }
    reqs.sort_by_key(|r| (r.arrival, r.id));
    let done = drain(&mut a, &reqs);
    a.assert_quiescent();
    let last_read = done
        .iter()
        .filter(|c| c.op == Op::Read)
        .map(|c| c.done)
        .max()
        .expect("reads were served");
    let w3 = done.iter().find(|c| c.id == 3).expect("W3 was answered");
    eprintln!("W3 answered after {:?}", w3.latency());
    assert!(
        w3.latency() < Span::from_ms(1000),
        "W3 answered after {:?} (last read done at {last_read:?})",
        w3.latency()
    );
}

/// With every holder busy a read is queued at all of them and withdrawn from the others
/// when one starts: each read is served exactly once.
#[test]
fn duplicated_reads_are_served_once() {
    let mut a = layout_array(
        1,
        1,
        3,
        Placement::Even,
        WritePolicy::Delayed,
        Policy::Look,
        10_000,
        9,
    );
    let reqs: Vec<_> = (0..300u64)
        .map(|id| HostRequest {
            id,
            op: Op::Read,
            lba: (id * 7919) % 100_000 / 16 * 16,
            sectors: 8,
            arrival: Nanos(0),
        })
        .collect();
    let out = drain(&mut a, &reqs);
    assert_eq!(out.len(), 300);
    let ops: Vec<u64> = (0..3).map(|d| a.counters(d).ops).collect();
    assert_eq!(ops.iter().sum::<u64>(), 300, "{ops:?}");
    assert!(
        ops.iter().all(|&n| n > 50),
        "the mirrors share the load: {ops:?}"
    );
    a.assert_quiescent();
}

/// A read issued the instant a mirrored write is acknowledged, while the other mirror's copy
/// is still only queued as a delayed write, is served by the written copy.
#[test]
fn a_read_after_an_acknowledged_write_sees_it() {
    for seed in 0..20 {
        let mut a = layout_array(
            1,
            1,
            2,
            Placement::Even,
            WritePolicy::Delayed,
            Policy::Satf,
            10_000,
            seed,
        );
        a.handle(
            Nanos(0),
            Event::Host(HostRequest {
                id: 0,
                op: Op::Write,
                lba: 800,
                sectors: 8,
                arrival: Nanos(0),
            }),
        );
        let mut heap = std::collections::BinaryHeap::new();
        let mut read_sent = false;
        loop {
            while let Some(act) = a.poll_action() {
                match act {
                    Action::Wake { .. } => unreachable!("this controller sets no timers"),
                    Action::DiskBusy { disk, until } => heap.push(std::cmp::Reverse((until, disk))),
                    Action::Complete(c) if c.id == 0 => {
                        a.handle(
                            c.done,
                            Event::Host(HostRequest {
                                id: 1,
                                op: Op::Read,
                                lba: 800,
                                sectors: 8,
                                arrival: c.done,
                            }),
                        );
                        read_sent = true;
                    }
                    Action::Complete(_) => {}
                }
            }
            let Some(std::cmp::Reverse((t, disk))) = heap.pop() else {
                break;
            };
            a.handle(t, Event::DiskDone { disk });
        }
        assert!(read_sent);
        assert_eq!(a.audit.reads_checked, 1);
        assert_eq!(a.audit.stale_reads, 0, "seed {seed}");
    }
}

/// A byte model of the disks: per disk, per physical sector, the tag (writing host request
/// id + 1) it holds; changed only by data moves.
type DiskTags = Vec<std::collections::HashMap<u64, u64>>;

fn sectors_of(runs: &[Run]) -> impl Iterator<Item = u64> + '_ {
    runs.iter()
        .flat_map(|r| r.lba..r.lba + u64::from(r.sectors))
}

/// Applies a write move to the model (a host write tags its sectors, a copy copies the
/// source's tags); returns false for a read, which changes nothing.
fn apply_write(disks: &mut DiskTags, mv: &DataMove) -> bool {
    let tags: Vec<u64> = match (mv.op, &mv.bytes) {
        (Op::Write, Bytes::Host(id)) => vec![id + 1; mv.sectors as usize],
        (Op::Write, Bytes::Copy { disk, runs }) => sectors_of(runs)
            .map(|p| disks[*disk].get(&p).copied().unwrap_or(0))
            .collect(),
        (Op::Read, Bytes::Host(_)) => return false,
        _ => panic!("malformed move {mv:?}"),
    };
    for copy in &mv.copies {
        for (p, &tag) in sectors_of(copy).zip(&tags) {
            disks[mv.disk].insert(p, tag);
        }
    }
    true
}

/// A random request of 1–24 sectors on a 4-sector boundary below `cap`, a read with
/// probability `read_share`; bursts: 70 % of the time the clock `t` then moves on.
fn hot_request(rng: &mut Pcg64Mcg, id: u64, cap: u64, t: &mut u64, read_share: f64) -> HostRequest {
    let sectors = [1u32, 8, 16, 24][rng.gen_range(0..4)];
    let lba = rng.gen_range(0..(cap - 24) / 4) * 4;
    let op = if rng.gen::<f64>() < read_share {
        Op::Read
    } else {
        Op::Write
    };
    let r = HostRequest {
        id,
        op,
        lba,
        sectors,
        arrival: Nanos(*t),
    };
    if rng.gen::<f64>() < 0.7 {
        *t += rng.gen_range(0..3_000_000);
    }
    r
}

/// The data moves alone carry the data: a model of every disk's sectors, changed only by
/// the moves in the order they are polled, returns to each read at least the newest write
/// acknowledged before the read arrived, and once idle every copy of every written sector
/// holds the newest write. Random SR-Mirror shapes, placements, policies and write modes on
/// a small hot region, as in the invariant test above.
#[test]
fn data_moves_carry_the_newest_acknowledged_bytes_to_reads_and_every_copy() {
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, HashMap};
    let mut rng = Pcg64Mcg::seed_from_u64(0xDA7A);
    let mut reads_checked = 0u64;
    for case in 0..30u64 {
        let (dr, dm, ds) = (
            rng.gen_range(1..=3),
            rng.gen_range(1..=2),
            rng.gen_range(1..=2),
        );
        let placement =
            [Placement::Even, Placement::Random, Placement::TrackGroup][case as usize % 3];
        let writes = [WritePolicy::Delayed, WritePolicy::Foreground][rng.gen_range(0..2)];
        let policy = Policy::ALL[rng.gen_range(0..Policy::ALL.len())];
        let nvram = rng.gen_range(1..20);
        let mut a = layout_array(ds, dr, dm, placement, writes, policy, nvram, case);
        let sb = a.drive().geometry().sector_bytes();
        assert!(a.enable_data_moves());
        let what = format!("case {case}: {ds}x{dr}x{dm} {placement:?} {writes:?} {policy}");
        let cap = a.capacity_sectors().min(640);
        let mut disks: DiskTags = vec![HashMap::new(); a.disk_count()];
        // Per logical sector: the newest acknowledged write's tag.
        let mut acked: HashMap<u64, u64> = HashMap::new();
        let mut reqs: HashMap<u64, (HostRequest, Vec<u64>)> = HashMap::new();
        let mut read_tags: HashMap<u64, Vec<Option<u64>>> = HashMap::new();
        let mut heap: BinaryHeap<Reverse<(Nanos, usize)>> = BinaryHeap::new();
        let (mut t, mut next_id) = (0u64, 0u64);
        loop {
            // The next arrival (bursts: often at the same instant), unless a disk finishes
            // first; 400 requests in all.
            let disk_t = heap.peek().map(|Reverse((u, _))| u.0);
            if next_id < 400 && disk_t.is_none_or(|u| t <= u) {
                let r = hot_request(&mut rng, next_id, cap, &mut t, 0.5);
                let (op, lba) = (r.op, r.lba);
                let must = (lba..lba + u64::from(r.sectors))
                    .map(|s| acked.get(&s).copied().unwrap_or(0))
                    .collect();
                reqs.insert(next_id, (r, must));
                if op == Op::Read {
                    read_tags.insert(next_id, vec![None; r.sectors as usize]);
                }
                next_id += 1;
                a.handle(r.arrival, Event::Host(r));
            } else {
                let Some(Reverse((until, disk))) = heap.pop() else {
                    break;
                };
                a.handle(until, Event::DiskDone { disk });
            }
            loop {
                while let Some(mv) = a.poll_data() {
                    assert!(mv.is_consistent(sb), "{what}: {mv:?}");
                    if apply_write(&mut disks, &mv) {
                        continue;
                    }
                    let Bytes::Host(id) = mv.bytes else {
                        unreachable!("a read is for a host request")
                    };
                    let got = sectors_of(&mv.copies[0])
                        .map(|p| disks[mv.disk].get(&p).copied().unwrap_or(0));
                    let (req, _) = reqs[&id];
                    let slot = read_tags.get_mut(&id).expect("a read");
                    for (i, tag) in got.enumerate() {
                        let at = (mv.lba - req.lba) as usize + i;
                        assert!(slot[at].is_none(), "{what}: sector read twice");
                        slot[at] = Some(tag);
                    }
                }
                let Some(act) = a.poll_action() else { break };
                match act {
                    Action::Wake { .. } => unreachable!("this controller sets no timers"),
                    Action::DiskBusy { disk, until } => heap.push(Reverse((until, disk))),
                    Action::Complete(c) => {
                        let (req, must) = &reqs[&c.id];
                        let sectors = req.lba..req.lba + u64::from(req.sectors);
                        if c.op == Op::Write {
                            for s in sectors {
                                let e = acked.entry(s).or_insert(0);
                                *e = (*e).max(c.id + 1);
                            }
                        } else {
                            let got = &read_tags[&c.id];
                            for (i, (g, m)) in got.iter().zip(must).enumerate() {
                                let g = g.unwrap_or_else(|| panic!("{what}: sector {i} unread"));
                                assert!(g >= *m, "{what}: read {} sector {i}: {g} < {m}", c.id);
                            }
                            reads_checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(a.outstanding(), 0, "{what}");
        // Idle: every copy of every acknowledged sector holds the newest write.
        let mut pieces = Vec::new();
        for (&s, &tag) in &acked {
            pieces.clear();
            a.layout().pieces(s, 1, &mut pieces);
            let p = pieces[0];
            for disk in a.layout().disks_of(p.column) {
                for k in 0..a.layout().replicas() {
                    let run = a.layout().band().replica(p.offset, 1, k).first;
                    let held = disks[disk].get(&run.lba).copied().unwrap_or(0);
                    assert_eq!(held, tag, "{what}: sector {s} disk {disk} replica {k}");
                }
            }
        }
    }
    assert!(reads_checked > 3_000, "reads checked: {reads_checked}");
}

/// Crash recovery from the NVRAM table: the workload of the test above is cut at a random
/// point — between any two of the driver's steps (an NVRAM write applied, a data move
/// performed, an action acted on) — and a fresh controller recovers from the NVRAM image
/// alone. After its repairs, every copy of every sector holds one version, and that version
/// is at least the newest write acknowledged before the crash (a write in flight may or may
/// not have landed, but everywhere or nowhere). 600 crash points over random shapes with
/// several copies, both write policies, every scheduler and NVRAM limits small enough that
/// delayed writes are promoted.
#[test]
fn recovery_from_the_nvram_table_leaves_every_copy_with_the_newest_acknowledged_write() {
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, HashMap};
    let mut rng = Pcg64Mcg::seed_from_u64(0xC4A5);
    let (mut with_records, mut repaired) = (0u32, 0u32);
    for case in 0..600u64 {
        let (dr, dm, ds) = loop {
            let s = (
                rng.gen_range(1..=3u32),
                rng.gen_range(1..=2u32),
                rng.gen_range(1..=2u32),
            );
            if s.0 * s.1 > 1 {
                break s;
            }
        };
        let placement =
            [Placement::Even, Placement::Random, Placement::TrackGroup][case as usize % 3];
        let writes = [WritePolicy::Delayed, WritePolicy::Foreground][rng.gen_range(0..4) / 3];
        let policy = Policy::ALL[rng.gen_range(0..Policy::ALL.len())];
        let nvram = rng.gen_range(1..20);
        let what = format!("case {case}: {ds}x{dr}x{dm} {placement:?} {writes:?} {policy}");
        let mut a = layout_array(ds, dr, dm, placement, writes, policy, nvram, case);
        assert!(a.enable_data_moves());
        let cap = a.capacity_sectors().min(640);
        let mut disks: DiskTags = vec![HashMap::new(); a.disk_count()];
        let mut image: Vec<u8> = Vec::new();
        let apply = |image: &mut Vec<u8>, w: NvramWrite| {
            let end = w.offset as usize + w.as_literal().expect("a literal NVRAM write").len();
            if image.len() < end {
                image.resize(end, 0);
            }
            image[w.offset as usize..end]
                .copy_from_slice(w.as_literal().expect("a literal NVRAM write"));
        };
        let mut acked: HashMap<u64, u64> = HashMap::new();
        let mut reqs: HashMap<u64, HostRequest> = HashMap::new();
        let mut heap: BinaryHeap<Reverse<(Nanos, usize)>> = BinaryHeap::new();
        let (mut t, mut next_id) = (0u64, 0u64);
        // The driver's steps left before the crash.
        let mut steps = rng.gen_range(1..4_000u32);
        'run: loop {
            let disk_t = heap.peek().map(|Reverse((u, _))| u.0);
            if next_id < 300 && disk_t.is_none_or(|u| t <= u) {
                let r = hot_request(&mut rng, next_id, cap, &mut t, 0.25);
                reqs.insert(next_id, r);
                next_id += 1;
                a.handle(r.arrival, Event::Host(r));
            } else {
                let Some(Reverse((until, disk))) = heap.pop() else {
                    break;
                };
                a.handle(until, Event::DiskDone { disk });
            }
            loop {
                // The driver's order: NVRAM writes, then data moves, then one action.
                loop {
                    if steps == 0 {
                        break 'run;
                    }
                    steps -= 1;
                    if let Some(w) = a.poll_nvram() {
                        apply(&mut image, w);
                    } else if let Some(mv) = a.poll_data() {
                        apply_write(&mut disks, &mv);
                    } else {
                        break;
                    }
                }
                let Some(act) = a.poll_action() else { break };
                match act {
                    Action::Wake { .. } => unreachable!("this controller sets no timers"),
                    Action::DiskBusy { disk, until } => heap.push(Reverse((until, disk))),
                    Action::Complete(c) if c.op == Op::Write => {
                        let req = reqs[&c.id];
                        for s in req.lba..req.lba + u64::from(req.sectors) {
                            let e = acked.entry(s).or_insert(0);
                            *e = (*e).max(c.id + 1);
                        }
                    }
                    Action::Complete(_) => {}
                }
            }
        }
        // The crash: a fresh controller recovers from the image.
        let mut b = layout_array(ds, dr, dm, placement, writes, policy, nvram, case);
        assert!(b.enable_data_moves());
        let records = nvram::parse(&image, &b.nvram_header()).expect("a valid image");
        with_records += u32::from(!records.is_empty());
        let repairs = b.recover(&image).unwrap_or_else(|e| panic!("{what}: {e}"));
        repaired += u32::from(!repairs.is_empty());
        for mv in &repairs {
            assert!(
                mv.is_consistent(b.drive().geometry().sector_bytes()),
                "{what}: {mv:?}"
            );
            apply_write(&mut disks, mv);
        }
        let mut fresh_image = Vec::new();
        while let Some(w) = b.poll_nvram() {
            apply(&mut fresh_image, w);
        }
        assert!(nvram::parse(&fresh_image, &b.nvram_header())
            .expect("valid")
            .is_empty());
        let mut pieces = Vec::new();
        for s in 0..cap {
            let newest = acked.get(&s).copied().unwrap_or(0);
            pieces.clear();
            b.layout().pieces(s, 1, &mut pieces);
            let p = pieces[0];
            let mut held = Vec::new();
            for disk in b.layout().disks_of(p.column) {
                for k in 0..b.layout().replicas() {
                    let run = b.layout().band().replica(p.offset, 1, k).first;
                    held.push(disks[disk].get(&run.lba).copied().unwrap_or(0));
                }
            }
            assert!(
                held.iter().all(|&h| h == held[0]),
                "{what}: sector {s}: copies differ after recovery: {held:?}"
            );
            assert!(
                held[0] >= newest,
                "{what}: sector {s} holds {} but write {newest} was acknowledged",
                held[0]
            );
            if held[0] > 0 {
                let w = reqs[&(held[0] - 1)];
                assert!(w.op == Op::Write && (w.lba..w.lba + u64::from(w.sectors)).contains(&s));
            }
        }
    }
    // The crash points really cut through pending work.
    assert!(with_records > 300, "{with_records} images with records");
    assert!(repaired > 300, "{repaired} recoveries with repairs");
}
