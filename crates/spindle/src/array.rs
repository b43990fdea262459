//! The array controller: a deterministic, sans-I/O state machine from host requests to disk
//! operations and completions.
//!
//! Call order (after quinn-proto): feed input with [`Array::handle`] (`now` first, never
//! decreasing), then drain [`Array::poll_action`] until it returns `None`. Actions are
//! values: *disk d is busy until t* (the driver calls `handle(t, Event::DiskDone)` then) and
//! *host request answered*. The controller never reads a clock.
//!
//! Idle disks choose their next request lazily: only once every completion action has been
//! polled. A host that answers a completion with a new request at the same instant (the
//! closed loop) therefore has it considered in the next scheduling decision, as in the
//! dissertation's model of Q constantly outstanding requests (2.4).
//!
//! Layout (this stage): JBOD — the logical address space is the disks' spaces concatenated;
//! a request crossing a disk boundary is split and answered when its last part completes.

use crate::drive::{Access, Controller, Drive, HeadState, Transfer};
use crate::sched::{DiskRequest, Policy, SchedStats, Scheduler};
use crate::{Nanos, Op, Span};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::VecDeque;
use std::sync::Arc;

/// A host (client) request in logical sectors of the drive's sector size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HostRequest {
    /// Issue order, unique per run.
    pub id: u64,
    pub op: Op,
    pub lba: u64,
    pub sectors: u32,
    pub arrival: Nanos,
}

/// Where a host request's response time went, summed along its critical path.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Breakdown {
    pub queue: Span,
    pub overhead: Span,
    pub seek: Span,
    pub rotation: Span,
    pub transfer: Span,
    pub switches: Span,
}

/// An answered host request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub id: u64,
    pub op: Op,
    pub sectors: u32,
    pub arrival: Nanos,
    pub done: Nanos,
    pub breakdown: Breakdown,
}

impl Completion {
    pub fn latency(&self) -> Span {
        self.done.since(self.arrival)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Host(HostRequest),
    DiskDone { disk: usize },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Disk `disk` started an operation that ends at `until`.
    DiskBusy {
        disk: usize,
        until: Nanos,
    },
    Complete(Completion),
}

/// Array configuration for this stage.
#[derive(Clone, Debug)]
pub struct ArrayConfig {
    pub disks: usize,
    pub policy: Policy,
    pub age_bound: Option<Span>,
    /// Give each disk a random rotational phase (real spindles are not synchronised).
    pub random_phase: bool,
    pub noise: bool,
    pub seed: u64,
}

struct InFlight {
    slot: usize,
    access: Access,
    started: Nanos,
    queued_at: Nanos,
}

struct Disk {
    head: HeadState,
    /// The drive's own buffer and controller (a pass-through for drives without a cache).
    ctl: Controller,
    sched: Box<dyn Scheduler>,
    busy: Option<InFlight>,
    rng: Pcg64Mcg,
    busy_ns: u64,
    ops: u64,
}

struct HostSlot {
    req: HostRequest,
    parts_left: u32,
    breakdown: Breakdown,
    last_done: Nanos,
}

/// Per-disk counters, readable at any time.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub ops: u64,
    pub sched: SchedStats,
}

pub struct Array {
    drive: Arc<Drive>,
    disks: Vec<Disk>,
    per_disk_sectors: u64,
    slots: Vec<Option<HostSlot>>,
    free_slots: Vec<usize>,
    actions: VecDeque<Action>,
    /// Disks that are idle and may have work: dispatched when `actions` runs dry.
    to_dispatch: Vec<usize>,
    now: Nanos,
    seq: u64,
    noise: bool,
}

impl Array {
    pub fn new(drive: Arc<Drive>, cfg: &ArrayConfig) -> Array {
        assert!(cfg.disks >= 1, "an array has at least one disk");
        let mut seeder = Pcg64Mcg::seed_from_u64(cfg.seed);
        let period = drive.period().0;
        let disks = (0..cfg.disks)
            .map(|_| {
                let phase_ns = if cfg.random_phase {
                    seeder.gen_range(0..period)
                } else {
                    0
                };
                let head = HeadState {
                    cylinder: 0,
                    head: 0,
                    phase_ns,
                };
                Disk {
                    head,
                    ctl: Controller::new(&drive, head),
                    sched: cfg
                        .policy
                        .build(cfg.age_bound, drive.geometry().cylinders()),
                    busy: None,
                    rng: Pcg64Mcg::seed_from_u64(seeder.gen()),
                    busy_ns: 0,
                    ops: 0,
                }
            })
            .collect();
        Array {
            per_disk_sectors: drive.capacity_sectors(),
            drive,
            disks,
            slots: Vec::with_capacity(1024),
            free_slots: Vec::with_capacity(1024),
            actions: VecDeque::with_capacity(64),
            to_dispatch: Vec::with_capacity(cfg.disks),
            now: Nanos::ZERO,
            seq: 0,
            noise: cfg.noise,
        }
    }

    /// Logical capacity in sectors.
    pub fn capacity_sectors(&self) -> u64 {
        self.per_disk_sectors * self.disks.len() as u64
    }

    pub fn disk_count(&self) -> usize {
        self.disks.len()
    }

    pub fn drive(&self) -> &Drive {
        &self.drive
    }

    /// Host requests accepted and not yet answered.
    pub fn outstanding(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }

    /// Cumulative busy time of `disk` up to instant `t` (t ≥ the last event handled).
    pub fn busy_until(&self, disk: usize, t: Nanos) -> Span {
        let d = &self.disks[disk];
        let partial = d
            .busy
            .as_ref()
            .map_or(0, |f| t.0.min(f.access.end.0).saturating_sub(f.started.0));
        Span(d.busy_ns + partial)
    }

    pub fn counters(&self, disk: usize) -> DiskCounters {
        let d = &self.disks[disk];
        DiskCounters {
            ops: d.ops,
            sched: d.sched.stats(),
        }
    }

    pub fn handle(&mut self, now: Nanos, ev: Event) {
        assert!(
            now >= self.now,
            "time went backwards: {now:?} < {:?}",
            self.now
        );
        self.now = now;
        match ev {
            Event::Host(req) => self.accept(now, req),
            Event::DiskDone { disk } => self.finish(now, disk),
        }
    }

    #[must_use]
    pub fn poll_action(&mut self) -> Option<Action> {
        if self.actions.is_empty() && !self.to_dispatch.is_empty() {
            let now = self.now;
            let mut pending = std::mem::take(&mut self.to_dispatch);
            for &disk in &pending {
                if self.disks[disk].busy.is_none() {
                    self.start_next(now, disk);
                }
            }
            pending.clear();
            self.to_dispatch = pending;
        }
        self.actions.pop_front()
    }

    fn mark_for_dispatch(&mut self, disk: usize) {
        if !self.to_dispatch.contains(&disk) {
            self.to_dispatch.push(disk);
        }
    }

    fn accept(&mut self, now: Nanos, req: HostRequest) {
        assert!(req.sectors > 0, "host request {} moves no data", req.id);
        let end = req.lba + u64::from(req.sectors);
        assert!(
            end <= self.capacity_sectors(),
            "host request {} ends at {end}, beyond the array",
            req.id
        );
        let first_disk = req.lba / self.per_disk_sectors;
        let last_disk = (end - 1) / self.per_disk_sectors;
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        let parts = u32::try_from(last_disk - first_disk + 1).expect("parts fit u32");
        self.slots[slot] = Some(HostSlot {
            req,
            parts_left: parts,
            breakdown: Breakdown::default(),
            last_done: now,
        });
        for d in first_disk..=last_disk {
            let start = req.lba.max(d * self.per_disk_sectors);
            let stop = end.min((d + 1) * self.per_disk_sectors);
            let disk = usize::try_from(d).expect("disk index fits usize");
            let lba = start - d * self.per_disk_sectors;
            self.seq += 1;
            let dr = DiskRequest {
                id: slot as u64,
                op: req.op,
                lba,
                sectors: u32::try_from(stop - start).expect("part fits u32"),
                target: self.drive.locate(lba),
                queued_at: now,
                seq: self.seq,
            };
            self.disks[disk].sched.push(dr);
            if self.disks[disk].busy.is_none() {
                self.mark_for_dispatch(disk);
            }
        }
    }

    fn start_next(&mut self, now: Nanos, disk: usize) {
        let d = &mut self.disks[disk];
        assert!(d.busy.is_none(), "disk {disk} is already busy");
        // Plan from when and where the arm will be free: a drive with a buffer may still be
        // destaging write-back data when the host sees its last request done.
        let plan_at = now.max(d.ctl.mech_free());
        let Some(pick) = d.sched.pick(plan_at, &d.head, &self.drive) else {
            return;
        };
        let r = pick.request;
        let rng = if self.noise { Some(&mut d.rng) } else { None };
        let xfer = Transfer {
            op: r.op,
            lba: r.lba,
            sectors: r.sectors,
        };
        let access = if self.drive.cache().is_some() {
            // The drive's controller serves it: buffer hits, read-ahead, write-back.
            let svc = d.ctl.serve(&self.drive, now, xfer, rng);
            let head = d.ctl.head();
            Access {
                end_cylinder: head.cylinder,
                end_head: head.head,
                ..svc.access
            }
        } else {
            self.drive
                .access(now, &d.head, xfer, pick.via_cylinder, rng)
        };
        let until = access.end;
        d.busy = Some(InFlight {
            slot: usize::try_from(r.id).expect("slot fits usize"),
            access,
            started: now,
            queued_at: r.queued_at,
        });
        self.actions.push_back(Action::DiskBusy { disk, until });
    }

    fn finish(&mut self, now: Nanos, disk: usize) {
        let d = &mut self.disks[disk];
        let f = d
            .busy
            .take()
            .unwrap_or_else(|| panic!("disk {disk} completed with nothing in flight"));
        assert_eq!(
            f.access.end, now,
            "disk {disk} completion at the wrong time"
        );
        d.busy_ns += now.since(f.started).0;
        d.ops += 1;
        d.head.cylinder = f.access.end_cylinder;
        d.head.head = f.access.end_head;
        let slot = self.slots[f.slot]
            .as_mut()
            .expect("in-flight operation belongs to a live host request");
        slot.parts_left -= 1;
        if now >= slot.last_done {
            // The part that finishes last is the critical path.
            let a = &f.access;
            slot.breakdown = Breakdown {
                queue: f.started.since(f.queued_at),
                overhead: a.overhead,
                seek: a.seek,
                rotation: a.rotation,
                transfer: a.transfer,
                switches: a.switches,
            };
            slot.last_done = now;
        }
        if slot.parts_left == 0 {
            let s = self.slots[f.slot].take().expect("slot is live");
            self.free_slots.push(f.slot);
            self.actions.push_back(Action::Complete(Completion {
                id: s.req.id,
                op: s.req.op,
                sectors: s.req.sectors,
                arrival: s.req.arrival,
                done: now,
                breakdown: s.breakdown,
            }));
        }
        self.mark_for_dispatch(disk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::builtin_drive;

    fn array(disks: usize, policy: Policy) -> Array {
        let drive = Arc::new(builtin_drive("st39133lwv").expect("built-in drive"));
        Array::new(
            drive,
            &ArrayConfig {
                disks,
                policy,
                age_bound: None,
                random_phase: true,
                noise: false,
                seed: 7,
            },
        )
    }

    /// Runs the array to quiescence, returning completions in order.
    fn drain(a: &mut Array, reqs: &[HostRequest]) -> Vec<Completion> {
        let mut heap = std::collections::BinaryHeap::new();
        let mut out = vec![];
        for r in reqs {
            a.handle(r.arrival, Event::Host(*r));
        }
        loop {
            while let Some(act) = a.poll_action() {
                match act {
                    Action::DiskBusy { disk, until } => heap.push(std::cmp::Reverse((until, disk))),
                    Action::Complete(c) => out.push(c),
                }
            }
            let Some(std::cmp::Reverse((t, disk))) = heap.pop() else {
                break;
            };
            a.handle(t, Event::DiskDone { disk });
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
            let ms =
                |rng: &mut Pcg64Mcg, hi: f64| (rng.gen::<f64>() * hi * 1000.0).round() / 1000.0;
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
            let mut a = Array::new(
                drive,
                &ArrayConfig {
                    disks: 1,
                    policy,
                    age_bound: None,
                    random_phase: true,
                    noise: false,
                    seed: case as u64,
                },
            );
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
}
