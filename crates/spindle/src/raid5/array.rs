//! The parity array controller without a write cache: the classic RAID-5/RAID-4 write
//! (Varma & Jacobson, ISCA'95, section I). Each host write is cut into its parity stripes;
//! each stripe's update is planned as
//!
//! - a **full-stripe write** when it covers every data unit: parity is computed from the
//!   new data, so data and parity are written with no reads;
//! - a **reconstruct-write** when it covers more than `reconstruct_fraction` of the
//!   stripe's data: the untouched data of the rows it touches is read, then the new data and
//!   the parity of those rows are written;
//! - otherwise a **read-modify-write**: the old data and old parity of the rows it touches
//!   are read, then the new data and new parity are written (four accesses for a small
//!   write).
//!
//! The reads of a stripe update run in parallel on their disks, then its writes; the host is
//! answered when every stripe's writes are done. Updates of one stripe run one at a time, in
//! arrival order (two concurrent read-modify-writes of a stripe would each compute parity
//! from the other's old data). Reads go to the data unit's disk. Every disk operation the
//! host waits for is charged to it: reads to host reads, the reads and writes of an update
//! to host writes.

use super::layout::{ParityLayout, UnitPiece};
use crate::drive::{Access, Controller, Drive, HeadState, Transfer};
use crate::engine::{
    Action, Breakdown, Busy, Cause, DiskClock, DiskCounters, Engine, Event, HostRequest, HostSlot,
    HostTable, Outbox, Slab,
};
use crate::sched::{DiskRequest, Policy, Replicas, Scheduler};
use crate::{Nanos, Op, Span};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// A parity array's configuration.
#[derive(Clone, Debug)]
pub struct Raid5Config {
    pub layout: ParityLayout,
    pub policy: Policy,
    pub age_bound: Option<Span>,
    /// Give each disk a random rotational phase (real spindles are not synchronised).
    pub random_phase: bool,
    pub noise: bool,
    pub seed: u64,
    /// A partial-stripe write covering more than this fraction of the stripe's data is a
    /// reconstruct-write; at most this, a read-modify-write.
    pub reconstruct_fraction: f64,
}

/// How a stripe update gets its parity.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UpdateKind {
    FullStripe,
    ReconstructWrite,
    ReadModifyWrite,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// A host read of part of a data unit.
    Read,
    /// A read of old data or parity for stripe update `usize`.
    OldRead(usize),
    /// A write of new data or parity for stripe update `usize`.
    NewWrite(usize),
}

struct DiskOp {
    kind: Kind,
    /// The host request a read answers.
    slot: Option<usize>,
    disk: usize,
    op: Op,
    lba: u64,
    sectors: u32,
}

/// One disk access of a stripe update: (disk, first sector, sectors).
type Access1 = (usize, u64, u32);

/// The update of one parity stripe for one host write.
struct StripeUpdate {
    slot: usize,
    key: (u32, u64),
    reads: Vec<Access1>,
    writes: Vec<Access1>,
    /// Operations of the current phase not yet done.
    left: u32,
}

struct InFlight {
    op: usize,
    access: Access,
    started: Nanos,
    queued_at: Nanos,
}

struct Disk {
    /// The drive's mechanism and its own buffer (a pass-through for drives without one).
    ctl: Controller,
    queue: Box<dyn Scheduler>,
    busy: Option<InFlight>,
    rng: Pcg64Mcg,
    clock: DiskClock,
}

/// Per-kind counts of stripe updates, whole run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateCounts {
    pub full_stripe: u64,
    pub reconstruct_write: u64,
    pub read_modify_write: u64,
}

pub struct Raid5Array {
    drive: Arc<Drive>,
    layout: ParityLayout,
    disks: Vec<Disk>,
    host: HostTable<()>,
    ops: Slab<DiskOp>,
    updates: Slab<StripeUpdate>,
    /// Stripe updates per stripe, in arrival order; the front one runs.
    stripe_queues: HashMap<(u32, u64), VecDeque<usize>>,
    out: Outbox,
    seq: u64,
    noise: bool,
    reconstruct_fraction: f64,
    counts: UpdateCounts,
    pieces: Vec<UnitPiece>,
}

impl Raid5Array {
    pub fn new(drive: Arc<Drive>, cfg: &Raid5Config) -> Result<Raid5Array, String> {
        if !(0.0..=1.0).contains(&cfg.reconstruct_fraction) {
            return Err(format!(
                "reconstruct_fraction must be in [0, 1], got {}",
                cfg.reconstruct_fraction
            ));
        }
        let mut seeder = Pcg64Mcg::seed_from_u64(cfg.seed);
        let period = drive.period().0;
        let cylinders = drive.geometry().cylinders();
        let disks = (0..cfg.layout.disks())
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
                    ctl: Controller::new(&drive, head),
                    queue: cfg.policy.build(cfg.age_bound, cylinders),
                    busy: None,
                    rng: Pcg64Mcg::seed_from_u64(seeder.gen()),
                    clock: DiskClock::default(),
                }
            })
            .collect();
        Ok(Raid5Array {
            out: Outbox::new(cfg.layout.disks()),
            drive,
            layout: cfg.layout.clone(),
            disks,
            host: HostTable::default(),
            ops: Slab::with_capacity(1024),
            updates: Slab::with_capacity(256),
            stripe_queues: HashMap::new(),
            seq: 0,
            noise: cfg.noise,
            reconstruct_fraction: cfg.reconstruct_fraction,
            counts: UpdateCounts::default(),
            pieces: Vec::with_capacity(8),
        })
    }

    pub fn layout(&self) -> &ParityLayout {
        &self.layout
    }

    /// Stripe updates planned so far, by kind.
    pub fn update_counts(&self) -> UpdateCounts {
        self.counts
    }

    fn accept(&mut self, now: Nanos, req: HostRequest) {
        assert!(req.sectors > 0, "host request {} moves no data", req.id);
        let end = req.lba + u64::from(req.sectors);
        assert!(
            end <= self.layout.capacity_sectors(),
            "host request {} ends at {end}, beyond the array",
            req.id
        );
        let slot = self.host.admit(req, now, ());
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        self.layout.pieces(req.lba, req.sectors, &mut pieces);
        match req.op {
            Op::Read => {
                for p in &pieces {
                    let disk = self.layout.data_disk(p.group, p.stripe, p.unit);
                    let lba = self.layout.stripe_lba(p.stripe) + u64::from(p.offset);
                    self.queue_op(now, Kind::Read, Some(slot), disk, Op::Read, lba, p.sectors);
                }
            }
            Op::Write => {
                // Pieces of one stripe are consecutive units of its group; a request
                // spanning groups interleaves them, so gather each stripe's pieces.
                let mut stripes: Vec<((u32, u64), Vec<UnitPiece>)> = Vec::new();
                for p in &pieces {
                    let key = (p.group, p.stripe);
                    match stripes.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, v)) => v.push(*p),
                        None => stripes.push((key, vec![*p])),
                    }
                }
                for (key, ps) in stripes {
                    self.host.add_part(slot);
                    let u = self.plan(slot, key, &ps);
                    let q = self.stripe_queues.entry(key).or_default();
                    q.push_back(u);
                    if q.len() == 1 {
                        self.start_update(now, u);
                    }
                }
            }
        }
        self.pieces = pieces;
    }

    /// The reads and writes updating stripe `key` with `pieces` (at most one per data
    /// unit: a host request is contiguous).
    fn plan(&mut self, slot: usize, key: (u32, u64), pieces: &[UnitPiece]) -> usize {
        let (group, stripe) = key;
        let l = &self.layout;
        let base = l.stripe_lba(stripe);
        let data_units = l.width() - 1;
        let unit = l.unit_sectors();
        let covered: u64 = pieces.iter().map(|p| u64::from(p.sectors)).sum();
        let stripe_data = u64::from(data_units) * u64::from(unit);
        // The rows (sector offsets within a unit) whose parity changes.
        let rows_start = pieces.iter().map(|p| p.offset).min().expect("a piece");
        let rows_end = pieces
            .iter()
            .map(|p| p.offset + p.sectors)
            .max()
            .expect("a piece");
        let parity = l.parity_disk(group, stripe);
        let kind = if covered == stripe_data {
            UpdateKind::FullStripe
        } else if covered as f64 > self.reconstruct_fraction * stripe_data as f64 {
            UpdateKind::ReconstructWrite
        } else {
            UpdateKind::ReadModifyWrite
        };
        let mut reads = Vec::new();
        let mut writes: Vec<Access1> = pieces
            .iter()
            .map(|p| {
                let disk = l.data_disk(group, stripe, p.unit);
                (disk, base + u64::from(p.offset), p.sectors)
            })
            .collect();
        match kind {
            UpdateKind::FullStripe => {
                writes.push((parity, base, unit));
                self.counts.full_stripe += 1;
            }
            UpdateKind::ReconstructWrite => {
                // The rows' data the write leaves: each unit's rows outside its piece.
                for k in 0..data_units {
                    let disk = l.data_disk(group, stripe, k);
                    // The unit's piece [a, b) (an untouched unit: empty, at the rows' end).
                    let (a, b) = pieces
                        .iter()
                        .find(|p| p.unit == k)
                        .map_or((rows_end, rows_end), |p| (p.offset, p.offset + p.sectors));
                    if a > rows_start {
                        reads.push((disk, base + u64::from(rows_start), a - rows_start));
                    }
                    if b < rows_end {
                        reads.push((disk, base + u64::from(b), rows_end - b));
                    }
                }
                let n = rows_end - rows_start;
                writes.push((parity, base + u64::from(rows_start), n));
                self.counts.reconstruct_write += 1;
            }
            UpdateKind::ReadModifyWrite => {
                reads.extend(writes.iter().copied());
                let n = rows_end - rows_start;
                reads.push((parity, base + u64::from(rows_start), n));
                writes.push((parity, base + u64::from(rows_start), n));
                self.counts.read_modify_write += 1;
            }
        }
        self.updates.insert(StripeUpdate {
            slot,
            key,
            reads,
            writes,
            left: 0,
        })
    }

    /// Starts update `u`'s first phase: its reads, or its writes when it needs none.
    fn start_update(&mut self, now: Nanos, u: usize) {
        let phase = if self.updates[u].reads.is_empty() {
            Kind::NewWrite(u)
        } else {
            Kind::OldRead(u)
        };
        self.start_phase(now, u, phase);
    }

    fn start_phase(&mut self, now: Nanos, u: usize, kind: Kind) {
        let (list, op) = match kind {
            Kind::OldRead(_) => (std::mem::take(&mut self.updates[u].reads), Op::Read),
            Kind::NewWrite(_) => (std::mem::take(&mut self.updates[u].writes), Op::Write),
            Kind::Read => unreachable!("host reads are not stripe updates"),
        };
        self.updates[u].left = list.len() as u32;
        for (disk, lba, sectors) in list {
            self.queue_op(now, kind, None, disk, op, lba, sectors);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn queue_op(
        &mut self,
        now: Nanos,
        kind: Kind,
        slot: Option<usize>,
        disk: usize,
        op: Op,
        lba: u64,
        sectors: u32,
    ) {
        self.seq += 1;
        if let Some(s) = slot {
            self.host.add_part(s);
        }
        let id = self.ops.insert(DiskOp {
            kind,
            slot,
            disk,
            op,
            lba,
            sectors,
        });
        let target = self.drive.locate(lba);
        self.disks[disk].queue.push(DiskRequest {
            id: id as u64,
            op,
            lba,
            sectors,
            target,
            replicas: Replicas::one(target),
            queued_at: now,
            seq: self.seq,
        });
        if self.disks[disk].busy.is_none() {
            self.out.mark_for_dispatch(disk);
        }
    }

    fn start_next(&mut self, now: Nanos, disk: usize) {
        let d = &mut self.disks[disk];
        let plan_at = now.max(d.ctl.mech_free());
        let head = d.ctl.head();
        let Some(pick) = d.queue.pick(plan_at, &head, &self.drive) else {
            return;
        };
        let id = usize::try_from(pick.request.id).expect("op id fits usize");
        let (kind, op, lba, sectors) = {
            let o = &self.ops[id];
            (o.kind, o.op, o.lba, o.sectors)
        };
        let rng = if self.noise { Some(&mut d.rng) } else { None };
        let svc = d
            .ctl
            .serve(&self.drive, now, Transfer { op, lba, sectors }, rng);
        let cause = match kind {
            Kind::Read => Cause::HostRead,
            Kind::OldRead(_) | Kind::NewWrite(_) => Cause::HostWrite,
        };
        let until = svc.access.end;
        d.clock.start(cause, now, until);
        d.busy = Some(InFlight {
            op: id,
            access: svc.access,
            started: now,
            queued_at: pick.request.queued_at,
        });
        self.out.push(Action::DiskBusy { disk, until });
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
        d.clock.finish();
        let op = self.ops.remove(f.op);
        debug_assert_eq!(op.disk, disk);
        match op.kind {
            Kind::Read => {
                let slot = op.slot.expect("a host read answers a request");
                self.part_done(now, slot, &f);
            }
            Kind::OldRead(u) => {
                self.updates[u].left -= 1;
                if self.updates[u].left == 0 {
                    self.start_phase(now, u, Kind::NewWrite(u));
                }
            }
            Kind::NewWrite(u) => {
                self.updates[u].left -= 1;
                if self.updates[u].left == 0 {
                    let done = self.updates.remove(u);
                    self.part_done(now, done.slot, &f);
                    let q = self
                        .stripe_queues
                        .get_mut(&done.key)
                        .expect("a running update is queued");
                    q.pop_front();
                    match q.front() {
                        Some(&next) => self.start_update(now, next),
                        None => {
                            self.stripe_queues.remove(&done.key);
                        }
                    }
                }
            }
        }
        self.out.mark_for_dispatch(disk);
    }

    fn part_done(&mut self, now: Nanos, slot: usize, f: &InFlight) {
        let a = &f.access;
        let breakdown = |_: &HostSlot<()>| Breakdown {
            queue: f.started.since(f.queued_at),
            overhead: a.overhead,
            seek: a.seek,
            rotation: a.rotation,
            transfer: a.transfer,
            switches: a.switches,
        };
        if let Some((c, _)) = self.host.part_done(slot, now, breakdown) {
            self.out.push(Action::Complete(c));
        }
    }
}

impl Engine for Raid5Array {
    fn handle(&mut self, now: Nanos, ev: Event) {
        self.out.advance(now);
        match ev {
            Event::Host(req) => self.accept(now, req),
            Event::DiskDone { disk } => self.finish(now, disk),
        }
    }

    fn poll_action(&mut self) -> Option<Action> {
        if let Some(due) = self.out.due() {
            let now = self.out.now();
            for &disk in &due {
                if self.disks[disk].busy.is_none() {
                    self.start_next(now, disk);
                }
            }
            self.out.dispatched(due);
        }
        self.out.pop()
    }

    fn outstanding(&self) -> usize {
        self.host.outstanding()
    }

    fn capacity_sectors(&self) -> u64 {
        self.layout.capacity_sectors()
    }

    fn disk_count(&self) -> usize {
        self.disks.len()
    }

    fn sector_bytes(&self) -> u32 {
        self.drive.geometry().sector_bytes()
    }

    fn busy(&self, disk: usize, t: Nanos) -> Busy {
        self.disks[disk].clock.busy(t)
    }

    fn counters(&self, disk: usize) -> DiskCounters {
        let d = &self.disks[disk];
        DiskCounters {
            ops: d.clock.ops(),
            propagations: 0,
            map_logging: Span::ZERO,
            sched: d.queue.stats(),
        }
    }
}

#[cfg(test)]
mod tests;
