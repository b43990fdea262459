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
//! The [`Layout`] splits a host request into pieces, each held by a mirror set of Dm disks
//! with Dr rotational replicas on each (JBOD: one disk, one copy). Scheduling follows the
//! dissertation's 3.4:
//!
//! - **Reads** go to the idle holder whose head is closest to a replica; if every holder is
//!   busy, a duplicate enters each holder's queue and the others are removed as soon as one
//!   starts. A disk serves the rotationally closest replica (RLOOK/RSATF).
//! - **Writes**, [`WritePolicy::Foreground`]: every mirror writes every replica (one
//!   command per disk, replicas in rotational order) before the host is answered.
//!   [`WritePolicy::Delayed`]: the first copy is scheduled like a read (any replica of any
//!   holder); once it is written the host is answered and the other copies become delayed
//!   writes in per-disk queues served only when the disk's foreground queue is empty. The
//!   pending propagations are recorded in an NVRAM table of `nvram_entries` entries; a
//!   write that finds it full waits (unacknowledged) while the oldest entry's delayed
//!   writes are forced to the foreground queues (3.4.3), so deferred work never outgrows
//!   the table. A newer write of the same piece cancels the older pending
//!   propagations; reads are served only by copies holding the last acknowledged data; a
//!   write that partly overlaps a pending one waits until that one is propagated.

mod coverage;
mod failure;
pub(crate) mod latent;
mod nvram;
mod piece_index;
mod table;

use coverage::Coverage;
use table::{Entry, EntryId, Ops, Table};

use nvram::{Header as NvramHeader, NvramTable, Record as NvramRecord};

use crate::drive::{Access, Controller, Drive, HeadState, Run, Target, Transfer};
use crate::engine::{
    Action, Backlog, Breakdown, Busy, Bytes, Cause, CopyRuns, DataMove, DiskClock, DiskCounters,
    DiskReader, Engine, Event, FailureConfig, HostRequest, HostSlot, HostTable, LatentCounters,
    NvramWrite, Outbox, RebuildStatus, RecoverError, Slab,
};
use crate::layout::{Layout, LayoutConfig, LayoutError, Piece, Placement, Shape};
use crate::sched::{DiskQueue, DiskRequest, Policy, Replicas, MAX_REPLICAS};
use crate::{Nanos, Op, Span};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WritePolicy {
    /// After the first copy; the others are propagated when disks are idle.
    #[default]
    Delayed,
    /// After every copy is written (the dissertation's throughput experiments).
    Foreground,
}

impl WritePolicy {
    pub fn name(self) -> &'static str {
        match self {
            WritePolicy::Delayed => "delayed",
            WritePolicy::Foreground => "foreground",
        }
    }
}

/// The dissertation's NVRAM table limit (3.4.2).
pub const DEFAULT_NVRAM_ENTRIES: usize = 10_000;

/// Array configuration.
#[derive(Clone, Debug)]
pub struct ArrayConfig {
    /// The layout; `None`: JBOD over `disks` disks.
    pub layout: Option<Layout>,
    pub disks: usize,
    pub policy: Policy,
    pub age_bound: Option<Span>,
    /// Give each disk a random rotational phase (real spindles are not synchronised).
    pub random_phase: bool,
    pub noise: bool,
    pub seed: u64,
    pub writes: WritePolicy,
    /// Pending delayed writes beyond which the oldest move to the foreground.
    pub nvram_entries: usize,
    /// A disk that fails, and its rebuild (mirrored layouts: see [`failure`]).
    pub failure: Option<FailureConfig>,
    /// The fraction of sectors with a latent error (see [`latent`]); `None`: none.
    pub latent_error_rate: Option<f64>,
}

impl ArrayConfig {
    /// JBOD over `disks` disks with the defaults for everything else.
    pub fn jbod(disks: usize, policy: Policy, seed: u64) -> ArrayConfig {
        ArrayConfig {
            layout: None,
            disks,
            policy,
            age_bound: None,
            random_phase: true,
            noise: false,
            seed,
            writes: WritePolicy::default(),
            nvram_entries: DEFAULT_NVRAM_ENTRIES,
            failure: None,
            latent_error_rate: None,
        }
    }
}

struct InFlight {
    op: usize,
    access: Access,
    started: Nanos,
    queued_at: Nanos,
    /// Replica numbers the operation wrote or read (bit k: replica k).
    replicas: u8,
    /// The copies its queue entry listed, located, and the first one's sector: a first
    /// write's propagations go to the same places (see [`Array::replica_at`]).
    located: (u64, Replicas),
    /// A read that met a latent sector error: it returns nothing.
    unreadable: bool,
    #[cfg(test)]
    runs: Vec<Run>,
}

/// The runs one operation moves: every replica, each possibly wrapping its track.
#[derive(Copy, Clone)]
struct Runs {
    len: usize,
    runs: [Run; 2 * MAX_REPLICAS],
}

impl Runs {
    fn push(&mut self, r: Run) {
        self.runs[self.len] = r;
        self.len += 1;
    }
    fn as_slice(&self) -> &[Run] {
        &self.runs[..self.len]
    }
}

struct Disk {
    head: HeadState,
    /// The drive's own buffer and controller (a pass-through for drives without a cache).
    ctl: Controller,
    /// The foreground queue, and the delayed writes (replica propagation), served when
    /// the foreground is empty.
    queue: Box<dyn DiskQueue>,
    busy: Option<InFlight>,
    rng: Pcg64Mcg,
    clock: DiskClock,
    propagations: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// Read one replica of one holder.
    Read,
    /// Delayed writes: the first copy, any replica of any holder.
    FirstWrite,
    /// Write the replicas in `mask` on one disk, for the host (foreground writes).
    WriteAll,
    /// Write the replicas in `mask` on one disk, in the background (delayed writes).
    Propagate,
    /// Read a rebuild step's data from a surviving mirror ([`failure`]).
    RebuildRead,
    /// Write every replica of a rebuild step on the spare.
    RebuildWrite,
    /// Rewrite copies that met a latent sector error from the copy read ([`latent`]).
    Repair,
}

struct DiskOp {
    kind: Kind,
    /// The host request answered (all kinds but `Propagate`).
    slot: Option<usize>,
    piece: Piece,
    /// Copies eligible (reads, first writes) or to write (the others): bit m·Dr + k for
    /// replica k on the m-th disk of the mirror set.
    copies: u64,
    /// Mirrors whose queues hold this operation (bit m: the set's m-th disk); one bit once
    /// it has started.
    holders: u64,
    in_delayed: bool,
    /// While `in_delayed`: the delayed queue's hint for its promotion
    /// ([`DiskQueue::promote_hinted`]).
    delayed_hint: u32,
    /// The table entry the operation serves (writes of a replicated layout).
    entry: Option<EntryId>,
    version: u64,
    /// Creation order (FCFS order and tie-breaks).
    seq: u64,
    queued_at: Nanos,
    /// Reads: per sector, the last-arriving acknowledged write at the read's arrival (audit).
    #[cfg(test)]
    must_see: Vec<Option<(Nanos, u64)>>,
}

impl Engine for Array {
    fn handle(&mut self, now: Nanos, ev: Event) {
        Array::handle(self, now, ev)
    }
    fn poll_action(&mut self) -> Option<Action> {
        Array::poll_action(self)
    }
    fn outstanding(&self) -> usize {
        Array::outstanding(self)
    }
    fn capacity_sectors(&self) -> u64 {
        Array::capacity_sectors(self)
    }
    fn prefetch(&self, lba: u64) {
        if lba < self.capacity_sectors() {
            let (_, offset) = self.layout.column_offset(lba);
            let band = self.layout.band();
            self.drive.prefetch(band.replica(offset, 1, 0).first.lba);
        }
    }
    fn disk_count(&self) -> usize {
        Array::disk_count(self)
    }
    fn sector_bytes(&self) -> u32 {
        self.drive.geometry().sector_bytes()
    }
    fn busy(&self, disk: usize, t: Nanos) -> Busy {
        self.disks[disk].clock.busy(t)
    }
    fn power(&self, disk: usize, t: Nanos) -> Option<crate::drive::PowerTotals> {
        self.disks[disk].clock.power(t)
    }
    fn power_command(&mut self, now: Nanos, disk: usize, cmd: crate::drive::PowerCommand) {
        self.disks[disk].clock.command(now, cmd);
    }
    fn counters(&self, disk: usize) -> DiskCounters {
        Array::counters(self, disk)
    }
    fn backlog(&self) -> Backlog {
        Array::backlog(self)
    }
    fn rebuild(&self) -> Option<RebuildStatus> {
        self.rebuild_status()
    }
    fn latent(&self) -> Option<LatentCounters> {
        self.latent_counters()
    }
    fn enable_data_moves(&mut self) -> bool {
        self.data_moves.get_or_insert_with(VecDeque::new);
        if self.copies_mask() != 1 && self.nvram.is_none() {
            self.nvram = Some(NvramTable::new(&self.nvram_header()));
        }
        true
    }
    fn poll_data(&mut self) -> Option<DataMove> {
        self.data_moves.as_mut()?.pop_front()
    }
    fn enable_real_disks(&mut self) -> Result<(), String> {
        // A real driver performs each operation's own bytes on its own disk; copies from
        // another disk (delayed writes, rebuilds, repairs) would need that disk read first.
        let refuse = |why: &str| Err(format!("real disks cannot run this array yet: {why}"));
        if self.data_moves.is_none() {
            return refuse("data moves are off (enable_data_moves first)");
        }
        if self.writes == WritePolicy::Delayed && self.copies_mask() != 1 {
            return refuse(
                "delayed writes copy between disks (give array.writes = \"foreground\")",
            );
        }
        if self.failure.is_some() {
            return refuse("a disk failure and its rebuild (array.failed_disk)");
        }
        if self.latent.is_some() {
            return refuse("simulated latent sector errors (array.latent_error_rate)");
        }
        if self.drive.cache().is_some() {
            return refuse(
                "the drive model has an on-board cache ([cache]); a calibrated drive has none",
            );
        }
        self.real_disks = true;
        Ok(())
    }
    fn set_disk_head(&mut self, disk: usize, head: HeadState) {
        assert!(self.real_disks, "a tracked head is for real disks");
        self.disks[disk].head = HeadState {
            phase_ns: head.phase_ns % self.drive.period().0,
            ..head
        };
    }
    fn poll_nvram(&mut self) -> Option<NvramWrite> {
        self.nvram.as_mut()?.poll()
    }
    fn recover(
        &mut self,
        image: &[u8],
        _read: &mut DiskReader<'_>,
    ) -> Result<Vec<DataMove>, RecoverError> {
        Array::recover(self, image)
    }
}

pub struct Array {
    drive: Arc<Drive>,
    layout: Layout,
    disks: Vec<Disk>,
    /// Host requests in flight; each keeps its write version.
    host: HostTable<u64>,
    ops: Slab<DiskOp>,
    /// Pending writes: the NVRAM table (delayed writes) or the writes in flight.
    table: Table,
    /// Which granules of the data the blocked writes touch.
    blocked_cover: Coverage,
    /// Writes waiting for an overlapping pending write to finish, or for room.
    blocked: VecDeque<Blocked>,
    /// An empty queue with room, swapped with `blocked` while it is rebuilt.
    blocked_spare: VecDeque<Blocked>,
    out: Outbox,
    seq: u64,
    op_seq: u64,
    noise: bool,
    writes: WritePolicy,
    nvram_entries: usize,
    pieces: Vec<Piece>,
    /// The replicas of the piece located last (see [`Array::replica_at`]).
    located: std::cell::RefCell<Located>,
    /// Data moves not yet polled; `None` while no driver wants them.
    data_moves: Option<VecDeque<DataMove>>,
    /// The table's NVRAM image (with data moves on, when a piece has several copies).
    nvram: Option<NvramTable>,
    failure: Option<failure::Failure>,
    latent: Option<latent::Latent>,
    /// Real disks ([`Engine::enable_real_disks`]): an operation ends when its disk answers.
    real_disks: bool,
    #[cfg(test)]
    audit: audit::Audit,
}

impl Array {
    pub fn new(drive: Arc<Drive>, cfg: &ArrayConfig) -> Result<Array, LayoutError> {
        let layout = match &cfg.layout {
            Some(l) => l.clone(),
            None => Layout::new(
                &drive,
                &LayoutConfig {
                    shape: Shape::Jbod {
                        disks: u32::try_from(cfg.disks).unwrap_or(u32::MAX),
                    },
                    stripe_unit_bytes: 0,
                    placement: Placement::default(),
                    data_set_bytes: None,
                    seed: cfg.seed,
                },
            )?,
        };
        if layout.disks() == 0 {
            return Err(LayoutError("an array has at least one disk".into()));
        }
        let (dr, dm) = (layout.replicas(), layout.mirrors());
        // Rotational replication steers the head to a chosen replica, which a drive's own
        // read-ahead and write-back would defeat: like the dissertation's prototype (3.4.3),
        // replicated layouts run their drives with the buffer turned off.
        let drive = if dr > 1 && drive.cache().is_some() {
            Arc::new(drive.without_cache())
        } else {
            drive
        };
        if u64::from(dr) * u64::from(dm) > 64 {
            return Err(LayoutError(format!(
                "Dr x Dm = {} copies of each sector: at most 64 are tracked",
                dr * dm
            )));
        }
        let mut seeder = Pcg64Mcg::seed_from_u64(cfg.seed);
        let period = drive.period().0;
        let cylinders = drive.geometry().cylinders();
        let disks = (0..layout.disks())
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
                    queue: cfg.policy.build_queue(cfg.age_bound, cylinders),
                    busy: None,
                    rng: Pcg64Mcg::seed_from_u64(seeder.gen()),
                    clock: DiskClock::new(drive.power_clock()),
                    propagations: 0,
                }
            })
            .collect();
        let n = layout.disks();
        let drive_origin = Target {
            chs: crate::drive::Chs {
                cylinder: 0,
                head: 0,
                sector: 0,
            },
            angle_ns: 0,
        };
        let failure = cfg
            .failure
            .as_ref()
            .map(|f| failure::Failure::new(f, &layout, drive.geometry().sector_bytes()))
            .transpose()
            .map_err(LayoutError)?;
        let latent = cfg
            .latent_error_rate
            .map(|rate| latent::Latent::new(rate, cfg.seed ^ 0x6c61_7465_6e74))
            .transpose()
            .map_err(LayoutError)?;
        // Only a layout with several copies of a sector keeps a table.
        let replicated = u64::from(dr) * u64::from(dm) > 1;
        let (table, blocked_cover) = (
            Table::new(&layout, replicated),
            Coverage::new(&layout, replicated),
        );
        Ok(Array {
            drive,
            layout,
            disks,
            host: HostTable::default(),
            ops: Slab::with_capacity(1024),
            table,
            blocked_cover,
            blocked: VecDeque::new(),
            blocked_spare: VecDeque::new(),
            out: Outbox::new(n),
            seq: 0,
            op_seq: 0,
            noise: cfg.noise,
            writes: cfg.writes,
            nvram_entries: cfg.nvram_entries,
            pieces: Vec::with_capacity(8),
            located: std::cell::RefCell::new(Located {
                piece: Piece {
                    column: 0,
                    offset: 0,
                    sectors: 0,
                },
                done: 0,
                at: [(0, drive_origin); MAX_REPLICAS],
            }),
            data_moves: None,
            nvram: None,
            failure,
            latent,
            real_disks: false,
            #[cfg(test)]
            audit: audit::Audit::default(),
        })
    }

    /// Logical capacity in sectors.
    pub fn capacity_sectors(&self) -> u64 {
        self.layout.capacity_sectors()
    }

    /// Whether `layout` can take failure `f` (see [`failure`]): the reason it cannot.
    pub fn check_failure(
        layout: &Layout,
        f: &FailureConfig,
        sector_bytes: u32,
    ) -> Result<(), String> {
        failure::Failure::new(f, layout, sector_bytes).map(|_| ())
    }

    pub fn disk_count(&self) -> usize {
        self.disks.len()
    }

    pub fn drive(&self) -> &Drive {
        &self.drive
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Host requests accepted and not yet answered.
    pub fn outstanding(&self) -> usize {
        self.host.outstanding()
    }

    /// Entries of the NVRAM table (pieces with copies still to propagate).
    pub fn pending_writes(&self) -> usize {
        self.table.len()
    }

    /// Delayed writes still to propagate (queued, promoted or running) and the NVRAM table
    /// entries that record them. O(operations in flight): for window edges, not per event.
    pub fn backlog(&self) -> Backlog {
        let sector_bytes = u64::from(self.drive.geometry().sector_bytes());
        let mut b = Backlog::default();
        for op in self.ops.iter() {
            if op.kind == Kind::Propagate {
                b.ops += 1;
                b.bytes +=
                    u64::from(op.piece.sectors) * u64::from(op.copies.count_ones()) * sector_bytes;
            }
        }
        if self.writes == WritePolicy::Delayed {
            b.nvram_entries = self.table.entries().filter(|e| e.acked != 0).count() as u64;
        }
        b
    }

    pub fn counters(&self, disk: usize) -> DiskCounters {
        let d = &self.disks[disk];
        DiskCounters {
            ops: d.clock.ops(),
            propagations: d.propagations,
            map_logging: Span::ZERO,
            sched: d.queue.stats(),
        }
    }

    pub fn handle(&mut self, now: Nanos, ev: Event) {
        self.out.advance(now);
        self.fail_if_due(now);
        match ev {
            Event::Host(req) => self.accept(now, req),
            Event::DiskDone { disk } => self.finish(now, disk),
            // The failure's and a paced rebuild's timers.
            Event::Wake => self.wake(now),
        }
    }

    #[must_use]
    pub fn poll_action(&mut self) -> Option<Action> {
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

    fn copies_mask(&self) -> u64 {
        let n = self.layout.replicas() * self.layout.mirrors();
        if n == 64 {
            u64::MAX
        } else {
            (1u64 << n) - 1
        }
    }

    fn nvram_header(&self) -> NvramHeader {
        NvramHeader {
            disks: self.disks.len() as u32,
            dr: self.layout.replicas(),
            dm: self.layout.mirrors(),
            columns: self.layout.columns(),
            column_sectors: self.layout.column_sectors(),
        }
    }

    /// Writes entry `id`'s fresh copies to its NVRAM record (with data moves on).
    fn record_entry(&mut self, id: EntryId) {
        let Some(t) = self.nvram.as_mut() else {
            return;
        };
        let e = &mut self.table[id];
        let key = e.key;
        let r = NvramRecord {
            column: key.0,
            offset: key.1,
            sectors: key.2,
            fresh: e.fresh,
        };
        match e.nvram_slot {
            Some(slot) => t.update(slot, &r),
            None => e.nvram_slot = Some(t.insert(&r)),
        }
    }

    /// After a crash, on a fresh controller: the copies that make every piece in the NVRAM
    /// table image hold one version everywhere — the newest acknowledged one, copied from a
    /// copy the table names fresh (see [`nvram`]).
    pub fn recover(&mut self, image: &[u8]) -> Result<Vec<DataMove>, RecoverError> {
        if self.data_moves.is_none() {
            return Err(RecoverError("data moves are off".into()));
        }
        if self.out.now() != Nanos::ZERO || !self.table.is_empty() || self.outstanding() > 0 {
            return Err(RecoverError(
                "recover is for a fresh controller, before its first event".into(),
            ));
        }
        let header = self.nvram_header();
        let records = nvram::parse(image, &header)?;
        if !records.is_empty() && self.nvram.is_none() {
            return Err(RecoverError(
                "the image records pending copies, but this layout has one copy".into(),
            ));
        }
        let dr = self.layout.replicas();
        let band = self.layout.band();
        let mut repairs = Vec::new();
        for r in records {
            if band.contiguous(r.offset, u64::from(r.sectors)) < u64::from(r.sectors) {
                return Err(RecoverError(format!(
                    "NVRAM table: {r:?} spans two track groups: not a piece of this layout"
                )));
            }
            let piece = Piece {
                column: r.column,
                offset: r.offset,
                sectors: r.sectors,
            };
            let first = self.layout.disks_of(r.column).start;
            let b = r.fresh.trailing_zeros();
            let src = first + (b / dr) as usize;
            let src_runs = band.replica(r.offset, r.sectors, b % dr).to_vec();
            for (m, disk) in self.layout.disks_of(r.column).enumerate() {
                let copies: Vec<CopyRuns> = (0..dr)
                    .filter(|&k| m as u32 * dr + k != b)
                    .map(|k| band.replica(r.offset, r.sectors, k).to_vec())
                    .collect();
                if copies.is_empty() {
                    continue;
                }
                repairs.push(DataMove {
                    disk,
                    op: Op::Write,
                    lba: self.layout.logical_of(&piece),
                    sectors: r.sectors,
                    bytes: Bytes::Copy {
                        disk: src,
                        runs: src_runs.clone(),
                    },
                    copies,
                });
            }
        }
        // The image starts again from this controller's (empty) table.
        if self.nvram.is_some() {
            self.nvram = Some(NvramTable::new(&header));
        }
        Ok(repairs)
    }

    fn accept(&mut self, now: Nanos, req: HostRequest) {
        assert!(req.sectors > 0, "host request {} moves no data", req.id);
        let end = req.lba + u64::from(req.sectors);
        assert!(
            end <= self.capacity_sectors(),
            "host request {} ends at {end}, beyond the array",
            req.id
        );
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        self.layout.pieces(req.lba, req.sectors, &mut pieces);
        self.seq += 1;
        let slot = self.host.admit(req, now, self.seq);
        for &piece in &pieces {
            match req.op {
                Op::Read => self.accept_read(now, slot, piece),
                Op::Write => self.accept_write(now, slot, piece),
            }
        }
        self.pieces = pieces;
    }

    fn new_op(&mut self, mut op: DiskOp) -> usize {
        self.op_seq += 1;
        op.seq = self.op_seq;
        if let Some(s) = op.slot {
            self.host.add_part(s);
        }
        self.ops.insert(op)
    }

    /// The table entries overlapping `len` sectors at `offset` of `column`, in piece order.
    fn overlapping(&self, column: u32, offset: u64, len: u32) -> Vec<EntryId> {
        self.table.overlapping(column, offset, len)
    }

    fn accept_read(&mut self, now: Nanos, slot: usize, piece: Piece) {
        let all = self.copies_mask();
        // Entries never overlap one another (a partly overlapping write waits), so cutting
        // the read at entry boundaries leaves each part with one set of fresh copies.
        let ids = self.overlapping(piece.column, piece.offset, piece.sectors);
        let whole = [piece.offset, piece.offset + u64::from(piece.sectors)];
        let mut cuts_vec = Vec::new();
        let cuts: &[u64] = if ids.is_empty() {
            // The common case: nothing pending here, one part, no allocation.
            &whole
        } else {
            cuts_vec.extend(whole);
            for &id in &ids {
                let k = self.table[id].key;
                for c in [k.1, k.1 + u64::from(k.2)] {
                    if c > whole[0] && c < whole[1] {
                        cuts_vec.push(c);
                    }
                }
            }
            cuts_vec.sort_unstable();
            cuts_vec.dedup();
            &cuts_vec
        };
        for w in cuts.windows(2) {
            let part = Piece {
                column: piece.column,
                offset: w[0],
                sectors: u32::try_from(w[1] - w[0]).expect("part fits u32"),
            };
            let fresh = ids
                .iter()
                .map(|&id| &self.table[id])
                .filter(|e| e.key.1 < w[1] && e.key.1 + u64::from(e.key.2) > w[0])
                .fold(all, |m, e| m & e.fresh);
            debug_assert!(fresh != 0, "a piece with no fresh copy");
            // A failed disk's copies serve no new read, unless the data lives only there
            // (then it is still draining: see `failure`).
            let lost = self.lost_copies(&part);
            let fresh = if fresh & !lost != 0 {
                fresh & !lost
            } else {
                fresh
            };
            let op = DiskOp {
                kind: Kind::Read,
                slot: Some(slot),
                piece: part,
                copies: fresh,
                holders: 0,
                in_delayed: false,
                delayed_hint: u32::MAX,
                entry: None,
                version: 0,
                seq: 0,
                queued_at: now,
                #[cfg(test)]
                must_see: self
                    .audit
                    .acked_versions(self.layout.logical_of(&part), part.sectors),
            };
            let id = self.new_op(op);
            self.dispatch_any(now, id);
        }
    }

    /// The replicas (bit k) of `copies` on the `m`-th disk of a mirror set.
    fn replica_mask(&self, copies: u64, m: usize) -> u8 {
        let dr = self.layout.replicas();
        ((copies >> (m as u32 * dr)) & ((1u64 << dr) - 1)) as u8
    }

    /// Queues operation `id` (a read or a first write) at the idle holder closest to one of
    /// its eligible replicas, or as duplicates at every holder when all are busy.
    fn dispatch_any(&mut self, now: Nanos, id: usize) {
        let op = &self.ops[id];
        let first = self.layout.disks_of(op.piece.column).start;
        let mut holders = 0u64;
        for m in 0..self.layout.mirrors() as usize {
            if self.replica_mask(op.copies, m) != 0 {
                holders |= 1 << m;
            }
        }
        let mut best: Option<(Span, usize)> = None;
        if holders.count_ones() > 1 {
            for m in bits(holders) {
                let disk = &self.disks[first + m];
                if disk.busy.is_none() && disk.queue.is_empty() {
                    let r = self.request_for(id, first + m);
                    let at = now.max(disk.ctl.mech_free());
                    let (_, t) = r.replicas.best(at, &disk.head, r.op, &self.drive);
                    if best.is_none_or(|(bt, _)| t < bt) {
                        best = Some((t, m));
                    }
                }
            }
        }
        if let Some((_, m)) = best {
            holders = 1 << m;
        }
        for m in bits(holders) {
            let d = first + m;
            let r = self.request_for(id, d);
            self.disks[d].queue.push(r);
            if self.disks[d].busy.is_none() {
                self.out.mark_for_dispatch(d);
            }
        }
        self.ops[id].holders = holders;
    }

    /// The queue entry of operation `id` at `disk`: its eligible replicas located.
    fn request_for(&self, id: usize, disk: usize) -> DiskRequest {
        let op = &self.ops[id];
        let m = disk - self.layout.disks_of(op.piece.column).start;
        let mask = self.replica_mask(op.copies, m);
        let mut list: Vec<(u8, Target)> = if self.layout.replicas() > 1 {
            Vec::with_capacity(mask.count_ones() as usize)
        } else {
            Vec::new()
        };
        let mut first = None;
        for k in 0..self.layout.replicas() {
            if mask & (1 << k) == 0 {
                continue;
            }
            let (lba, t) = self.replica_at(&op.piece, k, mask);
            first.get_or_insert((lba, t));
            if self.layout.replicas() > 1 {
                list.push((k as u8, t));
            }
        }
        let (lba, target) = first.expect("an operation has a replica");
        let replicas = if list.is_empty() {
            Replicas::one(target)
        } else {
            Replicas::from_list(list)
        };
        DiskRequest {
            id: id as u64,
            op: if op.kind == Kind::Read {
                Op::Read
            } else {
                Op::Write
            },
            lba,
            sectors: op.piece.sectors,
            target,
            replicas,
            queued_at: op.queued_at,
            seq: op.seq,
        }
    }

    /// Remembers the copies of `piece` a queue entry located (`lba`: the first one's
    /// sector), so that its propagations locate none again.
    fn remember_located(&self, piece: &Piece, (lba, copies): &(u64, Replicas)) {
        let mut l = self.located.borrow_mut();
        l.piece = *piece;
        l.done = 0;
        let replicas = self.layout.band().piece(piece.offset, piece.sectors);
        for i in 0..copies.len() {
            let (k, t) = copies.get(i);
            let lba = if i == 0 {
                *lba
            } else {
                replicas.replica(u32::from(k)).first.lba
            };
            debug_assert_eq!(self.drive.locate(lba), t, "replica {k} located as before");
            l.at[usize::from(k)] = (lba, t);
            l.done |= 1 << k;
        }
    }

    /// The first sector of replica `k` of `piece`, located. The same on every disk of the
    /// mirror set, so remembered for the last piece asked: an operation's queue entries at
    /// each holder, and the propagations of a write to each mirror, locate it once. A miss
    /// locates every replica in `mask` (those the caller asks next), the piece's track
    /// group found once.
    fn replica_at(&self, piece: &Piece, k: u32, mask: u8) -> (u64, Target) {
        let mut l = self.located.borrow_mut();
        if l.piece != *piece {
            l.piece = *piece;
            l.done = 0;
        }
        if l.done & (1 << k) == 0 {
            let replicas = self.layout.band().piece(piece.offset, piece.sectors);
            for j in bits(u64::from((mask | 1 << k) & !l.done)) {
                let lba = replicas.replica(j as u32).first.lba;
                l.at[j] = (lba, self.drive.locate(lba));
            }
            l.done |= mask | 1 << k;
        }
        l.at[k as usize]
    }

    fn accept_write(&mut self, now: Nanos, slot: usize, piece: Piece) {
        let copies = self.layout.replicas() * self.layout.mirrors();
        if copies == 1 {
            // One copy: nothing to keep consistent; the disk's queue orders it.
            let version = self.host.get(slot).extra;
            let d = self.layout.disks_of(piece.column).start;
            self.queue_write_all(now, slot, piece, (version, None), (d, 0));
            return;
        }
        let (must_wait, keys) = self.must_wait(&piece);
        if must_wait {
            let for_room = keys.is_empty();
            let clear = self.clear_since(&piece, &keys);
            for k in keys {
                self.promote(k);
            }
            if for_room {
                // The table is full: force the oldest deferred copies out (3.4.3) so an
                // entry frees for this write.
                self.force_out_oldest();
            }
            // The host waits for this piece too.
            self.host.add_part(slot);
            self.blocked_cover.add(&piece);
            self.blocked.push_back(Blocked { slot, piece, clear });
            return;
        }
        self.start_write(now, slot, piece);
    }

    /// Whether a write of `piece` must wait, with the pending entries it overlaps: behind an
    /// earlier waiting write that overlaps it, behind any overlapping pending write with
    /// foreground writes, and with delayed writes behind a partly overlapping one or a write
    /// of the same piece whose first copy is not yet written (once it is, the newer write
    /// supersedes its propagation instead: two first copies in flight could leave the
    /// acknowledged one's data on one copy while the table still trusts every copy).
    ///
    /// With delayed writes the NVRAM table holds at most `nvram_entries` entries, forced-out
    /// ones included: a write of a piece with no entry waits while it is full (the keys
    /// returned are then empty). The table is storage, not a threshold: a write the table
    /// cannot record is not acknowledged early, so deferred work never outgrows it.
    fn must_wait(&self, piece: &Piece) -> (bool, Vec<EntryId>) {
        let keys = self.overlapping(piece.column, piece.offset, piece.sectors);
        if keys.is_empty() && self.table_full() {
            // The table is full: it waits for room whatever else may hold it (the common
            // case for the blocked writes a release weighs again), and nothing to promote.
            return (true, keys);
        }
        let same = (piece.column, piece.offset, piece.sectors);
        let wait = self.held_by_rebuild(piece)
            || (self
                .blocked_cover
                .any(piece.column, piece.offset, piece.sectors)
                && self.blocked.iter().any(|b| overlaps(&b.piece, piece)))
            || match self.writes {
                WritePolicy::Foreground => !keys.is_empty(),
                WritePolicy::Delayed => {
                    keys.iter().any(|&id| {
                        let e = &self.table[id];
                        e.key != same || e.acked != e.version
                    }) || (keys.is_empty() && self.table.len() >= self.nvram_entries)
                }
            };
        (wait, keys)
    }

    /// A write of one piece that may proceed (nothing partly overlapping is pending).
    fn start_write(&mut self, now: Nanos, slot: usize, piece: Piece) {
        let version = self.host.get(slot).extra;
        // A write that waited for an overlapping one has been queued since it arrived.
        let arrival = self.host.get(slot).req.arrival;
        let key = (piece.column, piece.offset, piece.sectors);
        let all = self.copies_mask();
        let entry = |promoted| Entry {
            key,
            version,
            acked: 0,
            fresh: all,
            ops: Ops::new(),
            promoted,
            nvram_slot: None,
        };
        match self.writes {
            WritePolicy::Foreground => {
                let e = self.table.insert(entry(true), false);
                let ops = self.write_all_now(arrival, slot, piece, (version, e));
                self.table[e].ops = ops;
                self.record_entry(e);
            }
            WritePolicy::Delayed => {
                let e = match self.table.find(key) {
                    Some(e) => {
                        // A newer write of the same piece: the older one's pending
                        // propagation is moot. Copies it already reached stay fresh for
                        // reads until this write is acknowledged.
                        self.table[e].version = version;
                        let old = std::mem::take(&mut self.table[e].ops);
                        let mut keep = Ops::new();
                        for &id in old.iter() {
                            let kind = self.ops[id].kind;
                            let started = self.is_running(id);
                            if kind == Kind::Propagate && !started {
                                self.cancel(id);
                            } else {
                                keep.push(id);
                            }
                        }
                        self.table[e].ops = keep;
                        e
                    }
                    None => {
                        let e = self.table.insert(entry(false), true);
                        self.record_entry(e);
                        assert!(
                            self.table.len() <= self.nvram_entries,
                            "the NVRAM table holds at most its {} entries",
                            self.nvram_entries
                        );
                        e
                    }
                };
                let id = self.new_op(DiskOp {
                    kind: Kind::FirstWrite,
                    slot: Some(slot),
                    piece,
                    copies: all & !self.lost_copies(&piece),
                    holders: 0,
                    in_delayed: false,
                    delayed_hint: u32::MAX,
                    entry: Some(e),
                    version,
                    seq: 0,
                    queued_at: arrival,
                    #[cfg(test)]
                    must_see: Vec::new(),
                });
                self.table[e].ops.push(id);
                self.dispatch_any(now, id);
            }
        }
    }

    fn all_replicas(&self) -> u8 {
        ((1u16 << self.layout.replicas()) - 1) as u8
    }

    /// Foreground writes of every replica on every holder, queued since `queued_at`, of
    /// write `version` for table entry `e`; returns the operations.
    fn write_all_now(
        &mut self,
        queued_at: Nanos,
        slot: usize,
        piece: Piece,
        (version, e): (u64, EntryId),
    ) -> Ops {
        let disks = self.layout.disks_of(piece.column);
        let (dr, lost) = (self.layout.replicas(), self.lost_copies(&piece));
        let mut ids = Ops::new();
        for (m, d) in disks.enumerate() {
            if lost >> (m as u32 * dr) & 1 == 1 {
                continue;
            }
            let id = self.queue_write_all(queued_at, slot, piece, (version, Some(e)), (d, m));
            ids.push(id);
        }
        ids
    }

    /// Queues, at `disk` (the `m`-th of its mirror set), a foreground write of every
    /// replica of `piece` for host request `slot` (write `version`, of table entry `entry`).
    fn queue_write_all(
        &mut self,
        queued_at: Nanos,
        slot: usize,
        piece: Piece,
        (version, entry): (u64, Option<EntryId>),
        (disk, m): (usize, usize),
    ) -> usize {
        let copies = u64::from(self.all_replicas()) << (m as u32 * self.layout.replicas());
        let id = self.new_op(DiskOp {
            kind: Kind::WriteAll,
            slot: Some(slot),
            piece,
            copies,
            holders: 1 << m,
            in_delayed: false,
            delayed_hint: u32::MAX,
            entry,
            version,
            seq: 0,
            queued_at,
            #[cfg(test)]
            must_see: Vec::new(),
        });
        let r = self.request_for(id, disk);
        self.disks[disk].queue.push(r);
        if self.disks[disk].busy.is_none() {
            self.out.mark_for_dispatch(disk);
        }
        id
    }

    fn is_running(&self, id: usize) -> bool {
        self.disks
            .iter()
            .any(|d| d.busy.as_ref().is_some_and(|f| f.op == id))
    }

    /// Removes a queued (not running) operation from every queue and frees it.
    fn cancel(&mut self, id: usize) {
        let op = self.ops.remove(id);
        let first = self.layout.disks_of(op.piece.column).start;
        for d in bits(op.holders).map(|m| first + m) {
            self.disks[d]
                .queue
                .remove(id as u64)
                .expect("a cancelled operation is in its holders' queues");
        }
    }

    /// Moves an entry's queued delayed writes to the foreground queues.
    fn promote(&mut self, entry: EntryId) {
        if self.table[entry].promoted {
            // Its delayed writes moved already, and every later one is queued in the
            // foreground (`written`): nothing is left in a delayed queue.
            return;
        }
        self.table.mark_promoted(entry);
        // Moving queue entries leaves the entry's operations as they are.
        let ids = std::mem::take(&mut self.table[entry].ops);
        // Cold operations, one per copy: their misses overlap instead of one per turn.
        for &id in ids.iter() {
            self.ops.prefetch(id);
        }
        for &id in ids.iter() {
            let op = &mut self.ops[id];
            if !op.in_delayed {
                continue;
            }
            op.in_delayed = false;
            let hint = op.delayed_hint;
            let d =
                self.layout.disks_of(op.piece.column).start + op.holders.trailing_zeros() as usize;
            if self.disks[d].busy.as_ref().is_some_and(|f| f.op == id) {
                continue;
            }
            assert!(
                self.disks[d].queue.promote_hinted(id as u64, hint),
                "a delayed write is in its delayed queue"
            );
            if self.disks[d].busy.is_none() {
                self.out.mark_for_dispatch(d);
            }
        }
        self.table[entry].ops = ids;
    }

    /// The table is full and a write waits for an entry: the oldest entry whose delayed
    /// writes still wait in the delayed queues moves them to the foreground queues.
    fn force_out_oldest(&mut self) {
        if let Some(e) = self.table.pop_oldest_unpromoted() {
            self.promote(e);
        }
    }

    fn start_next(&mut self, now: Nanos, disk: usize) {
        let d = &mut self.disks[disk];
        assert!(d.busy.is_none(), "disk {disk} is already busy");
        // Plan from when and where the arm will be free: a drive with a buffer may still be
        // destaging write-back data when the host sees its last request done.
        let plan_at = now.max(d.ctl.mech_free());
        let Some(pick) = d.queue.pick(plan_at, &d.head, &self.drive) else {
            return;
        };
        let r = pick.request;
        let id = usize::try_from(r.id).expect("op id fits usize");
        let (first_replica, _) = r.replicas.get(pick.replica);
        let (kind, piece, holders) = {
            let op = &self.ops[id];
            (op.kind, op.piece, op.holders)
        };
        if kind == Kind::Repair && !self.repair_still_needed(id) {
            return self.start_next(now, disk);
        }
        let first = self.layout.disks_of(piece.column).start;
        let me = disk - first;
        if holders != 1 << me {
            // Duplicates elsewhere are withdrawn as soon as one copy starts (3.4.1).
            for m in bits(holders & !(1 << me)) {
                self.disks[first + m]
                    .queue
                    .remove(r.id)
                    .expect("a duplicate is in every holder's queue");
            }
            self.ops[id].holders = 1 << me;
        }
        // What this operation moves: one replica, or every replica in its mask in
        // rotational order from the closest one.
        let mut order = [(0u64, first_replica); MAX_REPLICAS];
        let mut n = 1;
        if matches!(
            kind,
            Kind::WriteAll | Kind::Propagate | Kind::RebuildWrite | Kind::Repair
        ) {
            let period = self.drive.period().0;
            let angle_of = |i: usize| r.replicas.get(i).1.angle_ns;
            let a0 = angle_of(pick.replica);
            for i in (0..r.replicas.len()).filter(|&i| i != pick.replica) {
                order[n] = ((angle_of(i) + period - a0) % period, r.replicas.get(i).0);
                n += 1;
            }
            order[1..n].sort_unstable();
        }
        let band = self.layout.band();
        let empty = Run { lba: 0, sectors: 0 };
        let mut runs = Runs {
            len: 0,
            runs: [empty; 2 * MAX_REPLICAS],
        };
        let mut written = 0u8;
        // Each copy's runs, for a driver that moves the bytes.
        let mut copies = self.data_moves.as_ref().map(|_| Vec::with_capacity(n));
        let replicas = band.piece(piece.offset, piece.sectors);
        for &(_, k) in &order[..n] {
            let rr = replicas.replica(u32::from(k));
            runs.push(rr.first);
            if let Some(w) = rr.wrap {
                runs.push(w);
            }
            if let Some(c) = copies.as_mut() {
                c.push(rr.to_vec());
            }
            written |= 1 << k;
        }
        // A read that meets a latent sector error returns nothing: no bytes move (the
        // emulator answers a read no copy filled with an I/O error).
        let unreadable = kind == Kind::Read && self.read_meets_latent_error(disk, runs.as_slice());
        if let Some(copies) = copies.filter(|_| kind != Kind::RebuildRead && !unreadable) {
            let mv = self.data_move(disk, r.op, kind, id, piece, copies);
            debug_assert!(
                mv.is_consistent(self.drive.geometry().sector_bytes()),
                "{mv:?}"
            );
            if let Some(q) = self.data_moves.as_mut() {
                q.push_back(mv);
            }
        }
        let runs_slice = runs.as_slice();
        let d = &mut self.disks[disk];
        // A disk in a low-power state first comes back: the operation starts then.
        let now = d.clock.wake(now);
        let rng = if self.noise { Some(&mut d.rng) } else { None };
        let access = if self.drive.cache().is_some() {
            // The drive's controller serves it: buffer hits, read-ahead, write-back.
            debug_assert_eq!(runs_slice.len(), 1, "buffered drives are never replicated");
            let xfer = Transfer {
                op: r.op,
                lba: runs_slice[0].lba,
                sectors: runs_slice[0].sectors,
            };
            d.ctl.serve_access(&self.drive, now, xfer, rng)
        } else {
            self.drive
                .access_runs(now, &d.head, r.op, runs_slice, pick.via_cylinder, rng)
        };
        let until = access.end;
        #[cfg(test)]
        if kind == Kind::Read && !unreadable {
            let must_see = &self.ops[id].must_see;
            self.audit.check_read(disk, runs_slice, must_see);
            self.audit.read_starts.push((disk, now));
        }
        let cause = match kind {
            Kind::Read => Cause::HostRead,
            Kind::FirstWrite | Kind::WriteAll => Cause::HostWrite,
            Kind::Propagate => Cause::DelayedWrite,
            Kind::RebuildRead | Kind::RebuildWrite | Kind::Repair => Cause::Rebuild,
        };
        self.disks[disk].clock.start(cause, now, until);
        self.disks[disk].busy = Some(InFlight {
            op: id,
            access,
            started: now,
            queued_at: r.queued_at,
            replicas: written,
            located: (r.lba, r.replicas),
            unreadable,
            #[cfg(test)]
            runs: runs_slice.to_vec(),
        });
        self.out.push(Action::DiskBusy { disk, until });
    }

    /// What operation `id` (starting on `disk`) moves: a host request's bytes, or for a
    /// propagation a copy of the piece's newest acknowledged bytes.
    fn data_move(
        &self,
        disk: usize,
        op: Op,
        kind: Kind,
        id: usize,
        piece: Piece,
        copies: Vec<CopyRuns>,
    ) -> DataMove {
        let slot = self.ops[id].slot;
        let host = slot.map(|s| Bytes::Host(self.host.get(s).req.id));
        let rebuilt = (kind == Kind::RebuildWrite).then(|| Bytes::Copy {
            disk: self.rebuild_source(),
            runs: self
                .layout
                .band()
                .replica(piece.offset, piece.sectors, 0)
                .to_vec(),
        });
        let source = (kind == Kind::Propagate).then(|| {
            let e = self.ops[id].entry.expect("a propagation has a table entry");
            let fresh = self.table[e].fresh;
            assert!(fresh != 0, "a propagated piece has a fresh copy");
            let b = fresh.trailing_zeros();
            let dr = self.layout.replicas();
            let src = self.layout.disks_of(piece.column).start + (b / dr) as usize;
            let rr = self
                .layout
                .band()
                .replica(piece.offset, piece.sectors, b % dr);
            Bytes::Copy {
                disk: src,
                runs: rr.to_vec(),
            }
        });
        let repaired = (kind == Kind::Repair).then(|| self.repair_source(id));
        DataMove {
            disk,
            op,
            lba: self.layout.logical_of(&piece),
            sectors: piece.sectors,
            bytes: host
                .or(source)
                .or(rebuilt)
                .or(repaired)
                .expect("an operation serves a host request or propagates"),
            copies,
        }
    }

    fn finish(&mut self, now: Nanos, disk: usize) {
        let d = &mut self.disks[disk];
        let f = d
            .busy
            .take()
            .unwrap_or_else(|| panic!("disk {disk} completed with nothing in flight"));
        if self.real_disks {
            d.clock.finish_at(now);
        } else {
            assert_eq!(
                f.access.end, now,
                "disk {disk} completion at the wrong time"
            );
            d.clock.finish();
        }
        d.head.cylinder = f.access.end_cylinder;
        d.head.head = f.access.end_head;
        let op = self.ops.remove(f.op);
        if op.kind == Kind::Propagate {
            self.disks[disk].propagations += 1;
        }
        match op.kind {
            Kind::RebuildRead | Kind::RebuildWrite => {
                #[cfg(test)]
                if op.kind == Kind::RebuildWrite {
                    let src = self.rebuild_source();
                    let from = self
                        .layout
                        .band()
                        .replica(op.piece.offset, op.piece.sectors, 0);
                    self.audit.copied((src, &from.to_vec()), disk, &f.runs);
                }
                self.rebuild_op_done(now, op.kind, op.piece);
            }
            Kind::Read if f.unreadable => {
                let slot = op.slot;
                // Served again by another copy (answered when that read is), or lost.
                if self.latent_read_failed(now, disk, f.op, op, f.replicas) {
                    if let Some(slot) = slot {
                        self.part_done(now, slot, &f);
                    }
                }
                self.spare_check(now, disk);
                self.out.mark_for_dispatch(disk);
                return;
            }
            Kind::Read => self.latent_read_done(now, disk, f.op, &op, f.replicas),
            Kind::Repair => {
                let _source = self.repair_done(f.op);
                #[cfg(test)]
                self.audit.copied((_source.0, &_source.1), disk, &f.runs);
            }
            _ => {
                #[cfg(test)]
                self.audit.wrote(disk, &f.runs, op.version);
                if self.layout.replicas() * self.layout.mirrors() > 1 {
                    self.written(now, disk, &op, &f);
                }
            }
        }
        if matches!(
            op.kind,
            Kind::FirstWrite | Kind::WriteAll | Kind::Propagate | Kind::RebuildWrite | Kind::Repair
        ) {
            self.latent_wrote(disk, &op.piece, f.replicas);
        }
        if let Some(slot) = op.slot {
            self.part_done(now, slot, &f);
        }
        self.spare_check(now, disk);
        self.out.mark_for_dispatch(disk);
    }

    /// Bookkeeping after a write of replicas `replicas` of `op` on `disk` completed.
    fn written(&mut self, now: Nanos, disk: usize, op: &DiskOp, f: &InFlight) {
        let (replicas, id) = (f.replicas, f.op);
        let dr = self.layout.replicas();
        let m = (disk - self.layout.disks_of(op.piece.column).start) as u32;
        let bits = u64::from(replicas) << (m * dr);
        let entry = op.entry.expect("a replicated write has a table entry");
        let e = &mut self.table[entry];
        e.ops.retain(|&o| o != id);
        match op.kind {
            Kind::FirstWrite if op.version == e.version => {
                e.acked = op.version;
                e.fresh = bits;
                let promoted = e.promoted;
                // Kept in NVRAM before the host is answered (part_done, below).
                self.record_entry(entry);
                self.remember_located(&op.piece, &f.located);
                // The other copies: the rest of this disk's replicas, every replica of
                // the other mirrors, as delayed writes.
                let all = self.all_replicas();
                let mirrors = self.layout.disks_of(op.piece.column);
                let lost = self.lost_copies(&op.piece);
                let mut new_ops = Ops::new();
                for (mi, d) in mirrors.enumerate() {
                    let mask = if d == disk { all & !replicas } else { all };
                    if mask == 0 || lost >> (mi as u32 * dr) & 1 == 1 {
                        continue;
                    }
                    let copies = u64::from(mask) << (mi as u32 * dr);
                    let nid = self.new_op(DiskOp {
                        kind: Kind::Propagate,
                        slot: None,
                        piece: op.piece,
                        copies,
                        holders: 1 << mi,
                        in_delayed: !promoted,
                        delayed_hint: u32::MAX,
                        entry: Some(entry),
                        version: op.version,
                        seq: 0,
                        queued_at: now,
                        #[cfg(test)]
                        must_see: Vec::new(),
                    });
                    let r = self.request_for(nid, d);
                    if promoted {
                        self.disks[d].queue.push(r);
                    } else {
                        self.ops[nid].delayed_hint = self.disks[d].queue.push_delayed_hinted(r);
                    }
                    if self.disks[d].busy.is_none() {
                        self.out.mark_for_dispatch(d);
                    }
                    new_ops.push(nid);
                }
                for &id in new_ops.iter() {
                    self.table[entry].ops.push(id);
                }
                if self.failed_disk() == Some(disk) {
                    // Acknowledged data on the failed disk alone (accepted work it is
                    // draining): copied to the survivors at once, so the spare can come.
                    self.promote(entry);
                }
            }
            Kind::Propagate | Kind::WriteAll
                if op.version == e.version && e.acked == op.version =>
            {
                e.fresh |= bits;
            }
            // Foreground writes: acknowledged when the last copy is written.
            Kind::WriteAll if op.version == e.version && e.ops.is_empty() => {
                e.acked = op.version;
            }
            _ => {} // superseded by a newer write of the piece
        }
        let e = &self.table[entry];
        if e.ops.is_empty() {
            debug_assert!(
                e.acked == e.version,
                "an entry with nothing pending holds its newest write"
            );
            let e = self.table.remove(entry);
            if let (Some(t), Some(slot)) = (self.nvram.as_mut(), e.nvram_slot) {
                t.remove(slot);
            }
            self.release_blocked(now);
            if let Some(f) = self.failure.as_ref() {
                let failed = f.disk();
                self.start_rebuild_step(now);
                self.spare_check(now, failed);
            }
        } else if op.kind == Kind::FirstWrite
            && self
                .blocked_cover
                .any(op.piece.column, op.piece.offset, op.piece.sectors)
        {
            // A newer write of the same piece may now supersede this one's propagation
            // (no blocked write touches the piece: nothing a blocked write waits on changed).
            self.release_blocked(now);
        }
    }

    /// Starts the blocked writes that no longer overlap anything pending, in arrival order.
    fn release_blocked(&mut self, now: Nanos) {
        if self.blocked.is_empty() {
            return;
        }
        // Each write is weighed against the ones before it that still wait (`blocked`,
        // rebuilt in order). The cover keeps every waiting write's piece meanwhile: it is
        // only a filter before that exact search, and a write still waiting (the common
        // case: the table is full) then costs no update of its cold counts.
        let mut waiting =
            std::mem::replace(&mut self.blocked, std::mem::take(&mut self.blocked_spare));
        for b in waiting.drain(..) {
            if b.clear == Some(self.table.inserts_in(b.piece.column)) && self.table_full() {
                // Nothing pending over its piece still, and no room: what `must_wait`
                // would say, without the search.
                self.blocked.push_back(b);
                continue;
            }
            let Blocked { slot, piece, .. } = b;
            let (wait, keys) = self.must_wait(&piece);
            if wait {
                let clear = self.clear_since(&piece, &keys);
                // Still waiting, now perhaps for entries that did not exist when it first
                // waited (the write it queued behind has started): their delayed copies
                // must not wait for an idle disk while a host write waits for them.
                for k in keys {
                    self.promote(k);
                }
                self.blocked.push_back(Blocked { slot, piece, clear });
            } else {
                self.blocked_cover.remove(&piece);
                self.host.drop_part(slot);
                self.start_write(now, slot, piece);
            }
        }
        // Kept for the next release: no allocation per release.
        self.blocked_spare = waiting;
    }

    /// With delayed writes, whether the NVRAM table is full: a write of a piece with no
    /// entry waits for room ([`Array::must_wait`]).
    fn table_full(&self) -> bool {
        self.writes == WritePolicy::Delayed && self.table.len() >= self.nvram_entries
    }

    /// For a waiting write of `piece` overlapping the entries `keys`: when there are none,
    /// the column's insertion count, under which there are still none.
    fn clear_since(&self, piece: &Piece, keys: &[EntryId]) -> Option<u64> {
        keys.is_empty().then(|| self.table.inserts_in(piece.column))
    }

    fn part_done(&mut self, now: Nanos, slot_id: usize, f: &InFlight) {
        // The part that finishes last is the critical path.
        let breakdown = |_: &HostSlot<u64>| Breakdown::of(&f.access, f.started.since(f.queued_at));
        if let Some((c, _s)) = self.host.part_done(slot_id, now, breakdown) {
            #[cfg(test)]
            if _s.req.op == Op::Write {
                self.audit
                    .acked(_s.req.lba, _s.req.sectors, _s.extra, _s.req.arrival, now);
            }
            self.out.push(Action::Complete(c));
        }
    }
}

/// A write waiting in `Array::blocked` for host request `slot`.
struct Blocked {
    slot: usize,
    piece: Piece,
    /// [`Table::inserts_in`] of its column when it last found no entry overlapping its
    /// piece (`None`: it did find some).
    clear: Option<u64>,
}

/// Replicas of one piece, located: bit k of `done` says `at[k]` holds replica k.
struct Located {
    piece: Piece,
    done: u8,
    at: [(u64, Target); MAX_REPLICAS],
}

/// The set bits of `mask`, lowest first.
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let b = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            b
        })
    })
}

fn overlaps(a: &Piece, b: &Piece) -> bool {
    a.column == b.column
        && a.offset < b.offset + u64::from(b.sectors)
        && b.offset < a.offset + u64::from(a.sectors)
}

/// Test-only shadow of the data: which write each physical sector holds, and per logical
/// sector the acknowledged write that arrived last, to check that no read returns data that
/// was already superseded when the read arrived. Write X is superseded by write Y if X was
/// acknowledged before Y arrived (X really precedes Y) and Y was acknowledged before the
/// read arrived; writes that overlapped in time may be ordered either way.
#[cfg(test)]
mod audit {
    use crate::drive::Run;
    use crate::Nanos;
    use std::collections::HashMap;

    #[derive(Default)]
    pub struct Audit {
        physical: HashMap<(usize, u64), u64>,
        /// Per logical sector: (arrival, version) of the acknowledged write that arrived last.
        logical: HashMap<u64, (Nanos, u64)>,
        acked_at: HashMap<u64, Nanos>,
        pub reads_checked: u64,
        pub stale_reads: u64,
        /// Every host read's disk and start.
        pub read_starts: Vec<(usize, Nanos)>,
        /// A spare and the sectors written on it since it was installed (the rest hold
        /// nothing: reading them is a stale read).
        spare: Option<(usize, std::collections::HashSet<u64>)>,
    }

    fn sectors(runs: &[Run]) -> impl Iterator<Item = u64> + '_ {
        runs.iter()
            .flat_map(|r| r.lba..r.lba + u64::from(r.sectors))
    }

    impl Audit {
        pub fn wrote(&mut self, disk: usize, runs: &[Run], version: u64) {
            for s in sectors(runs) {
                self.physical.insert((disk, s), version);
                if let Some((_, on_spare)) = self.spare.as_mut().filter(|(d, _)| *d == disk) {
                    on_spare.insert(s);
                }
            }
        }
        /// A new, empty disk takes `disk`'s place.
        pub fn install_spare(&mut self, disk: usize) {
            self.physical.retain(|&(d, _), _| d != disk);
            self.spare = Some((disk, Default::default()));
        }
        /// `to` (one or more copies, one after the other) received what `from` holds.
        pub fn copied(&mut self, (src, from): (usize, &[Run]), disk: usize, to: &[Run]) {
            let held: Vec<u64> = sectors(from)
                .map(|s| self.physical.get(&(src, s)).copied().unwrap_or(0))
                .collect();
            let to: Vec<u64> = sectors(to).collect();
            for (i, s) in to.into_iter().enumerate() {
                self.wrote(disk, &[Run { lba: s, sectors: 1 }], held[i % held.len()]);
            }
        }
        pub fn acked(&mut self, lba: u64, sectors: u32, version: u64, arrival: Nanos, now: Nanos) {
            self.acked_at.insert(version, now);
            for s in lba..lba + u64::from(sectors) {
                let e = self.logical.entry(s).or_insert((arrival, version));
                if arrival >= e.0 {
                    *e = (arrival, version);
                }
            }
        }
        /// What a read of these sectors arriving now must not fall behind: per sector, the
        /// arrival time of the last-arriving acknowledged write (None: never written).
        pub fn acked_versions(&self, lba: u64, sectors: u32) -> Vec<Option<(Nanos, u64)>> {
            (lba..lba + u64::from(sectors))
                .map(|s| self.logical.get(&s).copied())
                .collect()
        }
        /// The read's runs map in order onto its logical sectors.
        pub fn check_read(&mut self, disk: usize, runs: &[Run], must_see: &[Option<(Nanos, u64)>]) {
            self.reads_checked += 1;
            if let Some((_, on_spare)) = self.spare.as_ref().filter(|(d, _)| *d == disk) {
                if sectors(runs).any(|s| !on_spare.contains(&s)) {
                    self.stale_reads += 1;
                    return;
                }
            }
            let held = runs
                .iter()
                .flat_map(|r| r.lba..r.lba + u64::from(r.sectors))
                .map(|s| self.physical.get(&(disk, s)).copied().unwrap_or(0));
            let stale = held.zip(must_see).any(|(held, want)| match *want {
                None => false,
                Some((_, v)) if v == held => false,
                // The initial data, or a write acknowledged before the last one arrived.
                Some((arrival, _)) => {
                    self.acked_at
                        .get(&held)
                        .is_none_or(|&acked| acked < arrival)
                        && (held == 0 || self.acked_at.contains_key(&held))
                }
            });
            if stale {
                self.stale_reads += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests;
