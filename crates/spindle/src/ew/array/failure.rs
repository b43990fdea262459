//! A failed disk of an eager-writing array (EW-Array with Dm ≥ 2, the Doubly Distorted
//! Mirror), degraded operation and the rebuild onto a spare (docs/failures.md).
//!
//! The failure model is the mirrored arrays' (`crate::array::failure`): the disk fails at a
//! configured instant (a timer) and finishes the work it had accepted, so no operation is
//! cut in half. From then on its copies of the column's blocks the rebuild has not reached
//! are *lost*: reads go to a surviving replica (the map says where it is); writes go to the
//! surviving replicas only — `sync_copies` is capped by the replicas left, so a degraded
//! Dm = 2 write (a DDM's too) is acknowledged with its one surviving copy — and no
//! propagation or move home is queued for a lost copy. A block whose only fresh copy is on
//! the failed disk (acknowledged, its propagation not yet run) is still read there while
//! the disk drains; its propagations move to the foreground, and the spare is installed
//! only once no block's newest acknowledged data lives on the failed disk alone and its
//! accepted work (map updates waiting for NVRAM room included) is done. Before that, the
//! NVRAM propagation table's slots that keep a copy on the failed disk are moved to a
//! survivor, and the spare comes a timer later, after those NVRAM writes: a crash then
//! never repairs a block from the emptied spare (a driver empties its file when the
//! rebuild starts).
//!
//! **The rebuild writes in place.** The spare takes the failed disk's index, free space and
//! map entries: each block's copy is written where the map already places it (the failed
//! disk's slot). The map, the free space and the map log do not change, so crash recovery
//! needs nothing new, and the rebuild makes no map log traffic (eager placement on the
//! spare would cost one map update per block, appended on disk 0 against host I/O).
//! Blocks written after they are rebuilt are eager-written onto the spare as usual.
//!
//! In column order, in steps of whole stripe units (up to [`REBUILD_STEP_BYTES`]), each
//! step is read from a surviving replica, one command per run that is contiguous on both
//! disks, and each run written to the spare when its read is done ([`REBUILD_STEPS_IN_FLIGHT`]
//! steps at once). A step holds its blocks from when it is made: it starts once none of
//! them has a write or propagation pending (those move to the foreground), and host writes
//! to them wait until its copies are written (reads go to the survivors meanwhile) — so a
//! step never copies data older than a write acknowledged before it ends. Its commands
//! enter the disks' foreground queues, competing with host I/O under the array's scheduler;
//! their busy time is the `rebuild` class. With `rebuild_rate_mb_s` a step starts no
//! earlier than its first byte over the rate after the rebuild began.
//!
//! **The map log region** (5.2.2) lives after the band of column 0's disk in each of the
//! first `map_log_replicas` replicas; every append is written to each copy and is durable
//! once all live copies hold it. A failed disk holding a copy drops out: appends go to the
//! surviving copies (so a failure of disk 0 needs `map_log_replicas` ≥ 2, or the map would
//! be lost with it, and is refused otherwise). After the data steps, the rebuild copies the
//! region from a surviving copy to the spare in steps, with appends held meanwhile (they
//! wait in NVRAM's two buffers, as when NVRAM is full: a copy never races an append) and
//! started only once no append is in flight; then the held appends go to every copy, the
//! spare's included, and the rebuild is done. The region copy is not paced.

use super::*;
use crate::engine::{
    rebuild_step_due, FailureClock, FailureConfig, RebuildStatus, REBUILD_STEPS_IN_FLIGHT,
    REBUILD_STEP_BYTES,
};

/// A rebuild step: column indices `first..end` of the failed column.
#[derive(Copy, Clone, Debug)]
struct Step {
    first: u32,
    end: u32,
    /// Its reads are queued.
    started: bool,
    /// Runs whose copy is not yet on the spare (once started).
    left: u32,
}

pub(super) struct EwFailure {
    cfg: FailureConfig,
    clock: FailureClock,
    column: u32,
    /// The failed disk's replica (group).
    replica: u32,
    /// Column indices below this are on the spare (a multiple of the stripe unit).
    cursor: u32,
    /// Column indices below this belong to a step made so far.
    issued: u32,
    column_blocks: u32,
    step_blocks: u32,
    started: Option<Nanos>,
    done: Option<Nanos>,
    step_ns: Option<u64>,
    steps: VecDeque<Step>,
    /// A paced step waits for this instant (a timer is set).
    step_due: Option<Nanos>,
    /// The spare may be installed: the table keeps no copy on the failed disk, and a timer
    /// at once installs it (after those NVRAM writes are taken).
    ready: bool,
    /// The failed disk's copy of the map log region, if it holds one.
    log: LogCopy,
    /// Appends issued while the region is copied: written once the spare's copy is whole.
    held_appends: Vec<Append>,
}

/// The rebuild of a failed disk's copy of the map log region.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum LogCopy {
    /// The failed disk holds no copy.
    None,
    /// Its copy waits for the data steps.
    Pending,
    /// Appends are held; the copy starts when none is in flight.
    Draining,
    /// Sectors `next..` of the region are still to copy from disk `src`.
    Copying { src: usize, next: u64 },
    /// The spare's copy is whole and takes appends.
    Done,
}

impl EwArray {
    /// Whether an array of `shape` can take failure `f`: the reason it cannot.
    pub fn check_failure(
        shape: &EwShape,
        map_log_replicas: u32,
        f: &FailureConfig,
    ) -> Result<(), String> {
        let disks = shape.disks().unwrap_or(0) as usize;
        if f.disk >= disks {
            return Err(format!(
                "failed disk {} does not exist: the array has disks 0..{disks}",
                f.disk
            ));
        }
        if shape.dm < 2 {
            return Err(format!(
                "{} keeps one copy of each block (Dm = 1): a failed disk loses its data, so \
                 there is no degraded mode to simulate; mirror it (Dm >= 2, or ddm)",
                shape.describe()
            ));
        }
        if f.disk == 0 && map_log_replicas < 2 {
            return Err(
                "disk 0 holds the only copy of the map log region after its band: its failure \
                 would lose the map; set array.map_log_replicas = 2 to replicate the region on \
                 its mirror (EW-Array paper, 5.2.2), or fail another disk"
                    .into(),
            );
        }
        f.step_ns(REBUILD_STEP_BYTES).map(|_| ())
    }

    pub(super) fn new_failure(&self, cfg: &FailureConfig) -> Result<EwFailure, String> {
        Self::check_failure(&self.shape, self.log_disks.len() as u32, cfg)?;
        let column = cfg.disk as u32 % self.n;
        let unit = self.unit_blocks;
        let step_units = (REBUILD_STEP_BYTES / BLOCK_BYTES / u64::from(unit)).max(1);
        let step_blocks = u32::try_from(step_units * u64::from(unit)).expect("a step fits u32");
        Ok(EwFailure {
            cfg: cfg.clone(),
            clock: FailureClock::new(cfg.at),
            column,
            replica: cfg.disk as u32 / self.n,
            cursor: 0,
            issued: 0,
            column_blocks: self.column_blocks(column),
            step_blocks,
            started: None,
            done: None,
            step_ns: cfg.step_ns(u64::from(step_blocks) * BLOCK_BYTES)?,
            steps: VecDeque::new(),
            step_due: None,
            ready: false,
            log: if self.log_disks.contains(&cfg.disk) {
                LogCopy::Pending
            } else {
                LogCopy::None
            },
            held_appends: Vec::new(),
        })
    }

    /// Logical block of the failed column's `i`-th block (inverse of [`column_of`]).
    fn column_block(&self, c: u32, i: u32) -> u32 {
        let unit = self.unit_blocks;
        ((i / unit) * self.n + c) * unit + i % unit
    }

    /// The replicas of block `b` lost with the failed disk (bit m), 0 for none.
    pub(super) fn lost(&self, b: u32) -> u64 {
        let Some(f) = self.failure.as_ref() else {
            return 0;
        };
        if f.clock.failed_at().is_none() {
            return 0;
        }
        let (c, i) = column_of(b, self.unit_blocks, self.n);
        if c == f.column && i >= f.cursor {
            1 << f.replica
        } else {
            0
        }
    }

    /// The lost replicas of block `b` whose bytes are gone: the spare is installed.
    pub(super) fn gone(&self, b: u32) -> u64 {
        match self.failure.as_ref() {
            Some(f) if f.started.is_some() => self.lost(b),
            _ => 0,
        }
    }

    /// Replicas a read of block `b` may use: the fresh ones not lost, or, while the failed
    /// disk drains, its copy if that is the only fresh one.
    pub(super) fn readable(&self, b: u32) -> u64 {
        let fresh = self.fresh(b);
        let lost = self.lost(b);
        if fresh & !lost != 0 {
            fresh & !lost
        } else {
            // Not a replaced disk's copy: its bytes are gone (the survivors were unreadable).
            fresh & !self.gone(b)
        }
    }

    /// Whether a write of `block..block + blocks` must wait for a rebuild step.
    pub(super) fn held_by_rebuild(&self, block: u32, blocks: u32) -> bool {
        let Some(f) = self.failure.as_ref() else {
            return false;
        };
        if f.steps.is_empty() {
            return false;
        }
        (block..block + blocks).any(|b| {
            let (c, i) = column_of(b, self.unit_blocks, self.n);
            c == f.column && f.steps.iter().any(|s| (s.first..s.end).contains(&i))
        })
    }

    pub(super) fn rebuild_status(&self) -> Option<RebuildStatus> {
        let f = self.failure.as_ref()?;
        let step = u64::from(f.step_blocks);
        Some(RebuildStatus {
            disk: f.cfg.disk,
            failed_at: f.clock.failed_at()?,
            started: f.started,
            done: f.done,
            stripes_done: u64::from(f.cursor).div_ceil(step),
            stripes_total: u64::from(f.column_blocks).div_ceil(step),
        })
    }

    /// Before any event at `now`: the disk fails if its time has come (otherwise a timer is
    /// asked for it).
    pub(super) fn fail_if_due(&mut self, now: Nanos) {
        let Some(f) = self.failure.as_mut() else {
            return;
        };
        if f.clock.fails_now(now, &mut self.out) {
            self.failure_progress(now);
        }
    }

    /// A timer fired: a paced rebuild step may be due.
    pub(super) fn failure_wake(&mut self, now: Nanos) {
        let Some(f) = self.failure.as_mut() else {
            return;
        };
        if f.step_due.is_some_and(|t| t <= now) {
            f.step_due = None;
            self.next_rebuild_step(now);
        } else if f.ready && f.started.is_none() {
            self.spare_check(now);
        }
    }

    /// After an operation ended (or the failure): the spare may be due, a waiting step may
    /// start.
    pub(super) fn failure_progress(&mut self, now: Nanos) {
        let Some(f) = self.failure.as_ref() else {
            return;
        };
        if f.clock.failed_at().is_none() || f.done.is_some() {
            return;
        }
        if f.started.is_none() {
            self.spare_check(now);
        } else {
            self.start_rebuild_steps(now);
            self.start_log_copy(now);
        }
    }

    /// Installs the spare once the failed disk has run its accepted work and no block's
    /// newest acknowledged data lives on it alone (whose propagations are moved to the
    /// foreground here).
    fn spare_check(&mut self, now: Nanos) {
        let f = self.failure.as_ref().expect("a failure");
        if !f.cfg.rebuild {
            return;
        }
        let (disk, only_here) = (f.cfg.disk, 1u64 << f.replica);
        // Operations are a slab: its order, not a hash's.
        let mut waiting = false;
        let mut promote = Vec::new();
        for (id, op) in self.ops.iter_indexed() {
            if !matches!(op.kind, Kind::Propagate | Kind::Home) {
                continue;
            }
            if (op.block..op.block + op.blocks).any(|b| self.fresh(b) == only_here) {
                waiting = true;
                if !op.started && !op.promoted && op.in_delayed {
                    promote.push(id);
                }
            }
        }
        for id in promote {
            self.promote(id);
        }
        let d = &self.disks[disk];
        // A write the disk finished whose map update waits for NVRAM room is its work too.
        let stalled = self.stalled.iter().any(|s| s.disk == disk);
        if waiting || stalled || d.busy.is_some() || !d.fg.is_empty() || !d.delayed.is_empty() {
            return;
        }
        let f = self.failure.as_mut().expect("a failure");
        if !f.ready {
            // The table's slots first: the spare's file is emptied when it is installed.
            f.ready = true;
            self.out.push(Action::Wake { at: now });
            if self.data.is_some() {
                self.keep_survivors(disk);
            }
            return;
        }
        #[cfg(test)]
        self.audit.install_spare(disk);
        self.failure.as_mut().expect("a failure").started = Some(now);
        self.next_rebuild_step(now);
    }

    /// Moves a delayed propagation or move home to its disk's foreground queue.
    pub(super) fn promote(&mut self, p: usize) {
        let op = self.op(p);
        if op.started || op.promoted || !op.in_delayed {
            return;
        }
        let (d, blocks) = (op.holders[0], op.blocks);
        if let Some(r) = self.disks[d].delayed.remove(p as u64) {
            self.disks[d].fg.push(r);
            self.op_mut(p).promoted = true;
            self.promoted_blocks += blocks as usize;
            if self.disks[d].busy.is_none() {
                self.out.mark_for_dispatch(d);
            }
        }
    }

    /// Makes the next steps (up to [`REBUILD_STEPS_IN_FLIGHT`]), now or when the pace
    /// allows.
    fn next_rebuild_step(&mut self, now: Nanos) {
        loop {
            let f = self.failure.as_ref().expect("a failure");
            if f.steps.len() >= REBUILD_STEPS_IN_FLIGHT || f.step_due.is_some() || f.done.is_some()
            {
                return;
            }
            if f.issued >= f.column_blocks {
                if f.steps.is_empty() {
                    self.data_rebuilt(now);
                }
                return;
            }
            let began = f.started.expect("the rebuild has started");
            if let Some(ns) = f.step_ns {
                let due =
                    rebuild_step_due(began, ns, u64::from(f.issued), u64::from(f.step_blocks));
                if due > now {
                    self.failure.as_mut().expect("a failure").step_due = Some(due);
                    self.out.push(Action::Wake { at: due });
                    return;
                }
            }
            let f = self.failure.as_mut().expect("a failure");
            let first = f.issued;
            let end = (first + f.step_blocks).min(f.column_blocks);
            f.issued = end;
            f.steps.push_back(Step {
                first,
                end,
                started: false,
                left: 0,
            });
            self.start_rebuild_steps(now);
        }
    }

    /// Starts the steps none of whose blocks has a write or propagation pending (those
    /// are moved to the foreground; the step is tried again as operations end).
    fn start_rebuild_steps(&mut self, now: Nanos) {
        let f = self.failure.as_ref().expect("a failure");
        let c = f.column;
        let waiting: Vec<(usize, Step)> = f
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.started)
            .map(|(k, s)| (k, *s))
            .collect();
        for (k, s) in waiting {
            let (mut busy, mut props) = (false, Vec::new());
            for i in s.first..s.end {
                let b = self.column_block(c, i);
                if let Some(st) = self.table.get(&b) {
                    if st.inflight > 0 || st.chunks > 0 || !st.props.is_empty() {
                        busy = true;
                        props.extend(st.props.iter().copied());
                    }
                }
            }
            if busy {
                for p in props {
                    self.promote(p);
                }
                continue;
            }
            let runs = self.rebuild_runs(s.first, s.end);
            let f = self.failure.as_mut().expect("a failure");
            f.steps[k].started = true;
            f.steps[k].left = u32::try_from(runs.len()).expect("runs fit u32");
            for (b, n, from, to) in runs {
                self.queue_rebuild_op(now, Kind::RebuildRead, b, n, from, to);
            }
        }
    }

    /// A step's runs: (first block, blocks, survivor's location, spare's location), each
    /// one command on both disks.
    fn rebuild_runs(&self, first: u32, end: u32) -> Vec<(u32, u32, BlockId, BlockId)> {
        let f = self.failure.as_ref().expect("a failure");
        let (c, mf) = (f.column, f.replica);
        let ms = self.rebuild_source_replica();
        let (sd, fd) = ((ms * self.n + c) as usize, f.cfg.disk);
        let map = self.map.map();
        let mut runs: Vec<(u32, u32, BlockId, BlockId)> = Vec::new();
        for i in first..end {
            let b = self.column_block(c, i);
            let (from, to) = (map.get(b, ms), map.get(b, mf));
            if let Some(r) = runs.last_mut() {
                let k = r.1;
                let joins = r.0 + k == b
                    && r.2 + k == from
                    && r.3 + k == to
                    && self.disks[sd].free.contiguous(r.2, k + 1)
                    && self.disks[fd].free.contiguous(r.3, k + 1);
                if joins {
                    r.1 += 1;
                    continue;
                }
            }
            runs.push((b, 1, from, to));
        }
        runs
    }

    /// The replica the rebuild copies from: the first surviving one.
    fn rebuild_source_replica(&self) -> u32 {
        let f = self.failure.as_ref().expect("a failure");
        u32::from(f.replica == 0)
    }

    /// Queues a rebuild read (on the survivor) or write (on the spare) of `blocks` blocks
    /// from `block`; `locs` holds (replica, location) of the survivor's copy, then the
    /// spare's.
    fn queue_rebuild_op(
        &mut self,
        now: Nanos,
        kind: Kind,
        block: u32,
        blocks: u32,
        from: BlockId,
        to: BlockId,
    ) {
        let (ms, mf) = (
            self.rebuild_source_replica(),
            self.failure.as_ref().expect("a failure").replica,
        );
        let m = if kind == Kind::RebuildRead { ms } else { mf };
        let d = self.disk_of(block, m);
        let loc = if kind == Kind::RebuildRead { from } else { to };
        assert!(blocks > 0, "a rebuild run moves data");
        assert!(ms != mf, "the rebuild copies from a survivor");
        let mut op = self.blank_op(kind, now);
        op.block = block;
        op.blocks = blocks;
        op.locs = InlineVec::one((ms, from));
        op.locs.push((mf, to));
        op.holders = InlineVec::one(d);
        let seq = op.seq;
        let id = self.new_op(op);
        let lba = self.disks[d].free.lba(loc);
        let op = if kind == Kind::RebuildRead {
            Op::Read
        } else {
            Op::Write
        };
        self.disks[d].fg.push(EwRequest {
            id: id as u64,
            work: Work::Positioned {
                op,
                lba,
                sectors: blocks * self.block_sectors,
                target: self.drive.locate(lba),
            },
            queued_at: now,
            seq,
        });
        if self.disks[d].busy.is_none() {
            self.out.mark_for_dispatch(d);
        }
    }

    /// A rebuild operation ended: a read is followed by its write to the spare; a write may
    /// end its step, and the rebuilt prefix moves on.
    pub(super) fn rebuild_op_done(&mut self, now: Nanos, id: usize) {
        let op = self.op(id);
        let (kind, block, blocks) = (op.kind, op.block, op.blocks);
        let (from, to) = (op.locs[0].1, op.locs[1].1);
        self.remove_op(id);
        if kind == Kind::RebuildRead {
            self.queue_rebuild_op(now, Kind::RebuildWrite, block, blocks, from, to);
            return;
        }
        #[cfg(test)]
        {
            let sd = self.disk_of(block, self.rebuild_source_replica());
            let fd = self.failure.as_ref().expect("a failure").cfg.disk;
            for k in 0..blocks {
                self.audit.copied(sd, from + k, fd, to + k, block + k);
            }
        }
        let (_, i) = column_of(block, self.unit_blocks, self.n);
        let f = self.failure.as_mut().expect("a failure");
        let s = f
            .steps
            .iter_mut()
            .find(|s| (s.first..s.end).contains(&i))
            .expect("the write's step is under way");
        assert!(s.started && s.left > 0, "a write of a started step's run");
        s.left -= 1;
        let mut rebuilt = Vec::new();
        while f.steps.front().is_some_and(|s| s.started && s.left == 0) {
            let s = f.steps.pop_front().expect("a step");
            assert_eq!(s.first, f.cursor, "steps end in order");
            f.cursor = s.end;
            rebuilt.push((s.first, s.end));
        }
        let (c, mf) = (f.column, f.replica);
        for (first, end) in rebuilt {
            for i in first..end {
                self.rebuilt(now, self.column_block(c, i), mf);
            }
        }
        // A DDM's moves home queued above count against the buffer like any.
        self.enforce_nvram_limit();
        if !self.held.is_empty() {
            self.release_held(now);
        }
        self.next_rebuild_step(now);
    }

    /// Block `b`'s copy is on the spare: its replica holds the newest data again; a DDM
    /// block whose home is the spare is moved home if it is away.
    fn rebuilt(&mut self, now: Nanos, b: u32, mf: u32) {
        if let Some(st) = self.table.get_mut(&b) {
            st.ver[mf as usize] = st.newest;
            st.bad &= !(1 << mf);
        }
        self.settle(b);
        if self.shape.ddm
            && self.home_replica(b) == mf
            && self.map.map().get(b, mf) != self.home_slot(b)
        {
            let acked = self.table.get(&b).map_or(0, |st| st.acked);
            self.queue_home(now, b, 1, acked);
        }
    }

    /// Whether disk `d`'s copy of the map log region takes appends: not while it has
    /// failed, until the rebuild has copied the region to its spare.
    pub(super) fn log_copy_live(&self, d: usize) -> bool {
        match self.failure.as_ref() {
            Some(f) if f.cfg.disk == d && f.clock.failed_at().is_some() => f.log == LogCopy::Done,
            _ => true,
        }
    }

    /// The appends to write now: none while the region is being copied (kept for later).
    pub(super) fn hold_appends(&mut self, appends: Vec<Append>) -> Vec<Append> {
        match self.failure.as_mut() {
            Some(f) if matches!(f.log, LogCopy::Draining | LogCopy::Copying { .. }) => {
                f.held_appends.extend(appends);
                Vec::new()
            }
            _ => appends,
        }
    }

    /// The disk configured to fail at time zero (a restart after its failure).
    pub(super) fn failed_from_start(&self) -> Option<usize> {
        self.failure
            .as_ref()
            .filter(|f| f.cfg.at == Nanos::ZERO)
            .map(|f| f.cfg.disk)
    }

    /// The disk a map log region copy reads from.
    pub(super) fn log_copy_source(&self) -> Option<usize> {
        match self.failure.as_ref()?.log {
            LogCopy::Copying { src, .. } => Some(src),
            _ => None,
        }
    }

    /// The spare holds every block of the column: the rebuild is done, or goes on with the
    /// map log region if the failed disk held a copy.
    fn data_rebuilt(&mut self, now: Nanos) {
        let f = self.failure.as_mut().expect("a failure");
        match f.log {
            LogCopy::None | LogCopy::Done => f.done = Some(now),
            LogCopy::Pending => {
                f.log = LogCopy::Draining;
                self.start_log_copy(now);
            }
            LogCopy::Draining | LogCopy::Copying { .. } => {}
        }
    }

    /// Starts the region copy once no append is in flight (new ones are held).
    fn start_log_copy(&mut self, now: Nanos) {
        let Some(f) = self.failure.as_ref() else {
            return;
        };
        if f.log != LogCopy::Draining || !self.append_left.is_empty() {
            return;
        }
        let failed = f.cfg.disk;
        let src = self
            .log_disks
            .iter()
            .copied()
            .find(|&d| d != failed)
            .expect("a surviving copy of the map log region");
        self.failure.as_mut().expect("a failure").log = LogCopy::Copying { src, next: 0 };
        self.next_log_chunk(now);
    }

    /// Reads the next chunk of the region from the surviving copy, or, with all of it on
    /// the spare, writes the held appends everywhere and ends the rebuild.
    fn next_log_chunk(&mut self, now: Nanos) {
        let f = self.failure.as_mut().expect("a failure");
        let LogCopy::Copying { src, next } = f.log else {
            unreachable!("the region is being copied")
        };
        let region = self.map.region_sectors();
        if next >= region {
            f.log = LogCopy::Done;
            f.done = Some(now);
            let held = std::mem::take(&mut f.held_appends);
            self.queue_appends(now, held);
            return;
        }
        let chunk = REBUILD_STEP_BYTES / u64::from(self.drive.geometry().sector_bytes());
        let sectors = u32::try_from(chunk.min(region - next)).expect("a chunk fits u32");
        f.log = LogCopy::Copying {
            src,
            next: next + u64::from(sectors),
        };
        let lba = self.log_lba + next;
        self.queue_positioned(now, Kind::LogCopyRead, src, Op::Read, lba, sectors);
    }

    /// A region copy command ended: a read is followed by its write to the spare, a write
    /// by the next chunk.
    pub(super) fn log_copy_done(&mut self, now: Nanos, id: usize) {
        let op = self.op(id);
        let (kind, lba, sectors) = (op.kind, op.lba, op.sectors);
        self.remove_op(id);
        if kind == Kind::LogCopyRead {
            let spare = self.failure.as_ref().expect("a failure").cfg.disk;
            self.queue_positioned(now, Kind::LogCopyWrite, spare, Op::Write, lba, sectors);
        } else {
            self.next_log_chunk(now);
        }
    }
}
