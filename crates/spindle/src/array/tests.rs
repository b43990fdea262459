use super::*;
use crate::drive::builtin_drive;
use crate::layout::{Layout, LayoutConfig, Placement, Shape};

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
            a.handle(t, Event::DiskDone { disk });
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
            assert!(d.sched.is_empty(), "disk {i}: {} queued", d.sched.len());
            assert!(
                d.delayed.is_empty(),
                "disk {i}: {} delayed",
                d.delayed.len()
            );
        }
        assert!(self.ops.iter().all(Option::is_none), "live operations left");
        assert!(
            self.table.is_empty(),
            "{} pending writes left",
            self.table.len()
        );
        assert!(self.blocked.is_empty(), "blocked writes left");
        assert_eq!(self.outstanding(), 0);
    }
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
