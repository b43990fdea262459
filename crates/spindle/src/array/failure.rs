//! A failed disk of a mirrored layout (mirror, RAID-10, SR-Mirror), degraded operation and
//! the rebuild onto a spare.
//!
//! A disk fails at a configured instant (a timer, [`Action::Wake`]). As in the parity
//! arrays (`raid5::array::degraded`), the model is a fail-stop after the work the disk had
//! accepted: operations already in its queues still run on it, so no operation is cut in
//! half. From the failure on, the failed disk's copies of the data the rebuild has not
//! reached are *lost*: reads are served by the surviving mirrors, writes write the
//! surviving copies only (the host is answered when they are written: with delayed writes,
//! when the first surviving copy is), and no propagation is queued for a lost copy.
//!
//! Data acknowledged with a single fresh copy on the failed disk (a delayed write whose
//! propagation had not run) is still readable there while the disk drains: its
//! propagations are moved to the foreground at the failure, and the spare is installed
//! only once no acknowledged data lives on the failed disk alone — the NVRAM table knows
//! which pieces those are.
//!
//! Then a spare takes the failed disk's place (the same index) and the rebuild starts: in
//! order, step by step ([`STEP_BYTES`] of the column's data), it reads the step from a
//! surviving mirror and writes every rotational replica on the spare; the next step's read
//! overlaps this step's write ([`STEPS_IN_FLIGHT`]). A step holds its
//! range: it starts once no pending write overlaps it, and host writes to it wait until
//! the step's copy is written (reads go to the survivors meanwhile). Its read and write go
//! to the disks' host queues, so rebuild competes with host I/O under the array's
//! scheduler; at most `rate` bytes per second of the spare are rebuilt (steps are paced by
//! a timer), or as fast as the disks allow. Ranges the rebuild has passed are served by
//! every copy, spare included.
//!
//! A layout with one disk per mirror set (JBOD, striping, SR-Array) has no copy off the
//! failed disk: its failure loses data, and [`Failure::new`] refuses it.

use super::{Array, DiskOp, Kind};
use crate::engine::{
    rebuild_step_due, Action, FailureClock, FailureConfig, RebuildStatus,
    REBUILD_STEPS_IN_FLIGHT as STEPS_IN_FLIGHT, REBUILD_STEP_BYTES as STEP_BYTES,
};
use crate::layout::{Layout, Piece};
use crate::Nanos;

/// A step under way.
#[derive(Copy, Clone, Debug)]
struct Step {
    piece: Piece,
    /// Its read from a survivor or its write to the spare is queued or running.
    started: bool,
    /// Its copy is on the spare (it waits for an earlier step to finish).
    written: bool,
}

pub(super) struct Failure {
    cfg: FailureConfig,
    /// The failed disk's column and its place in the column's mirror set.
    column: u32,
    mirror: u32,
    clock: FailureClock,
    /// Column data below this offset is on the spare.
    cursor: u64,
    /// Column data below this offset belongs to a step made so far.
    issued: u64,
    column_sectors: u64,
    step_sectors: u64,
    started: Option<Nanos>,
    done: Option<Nanos>,
    /// Virtual time one step takes at the configured rate.
    step_ns: Option<u64>,
    /// In offset order.
    steps: std::collections::VecDeque<Step>,
    /// A paced step waits for this instant (a timer is set).
    step_due: Option<Nanos>,
}

impl Failure {
    pub(super) fn new(
        cfg: &FailureConfig,
        layout: &Layout,
        sector_bytes: u32,
    ) -> Result<Failure, String> {
        if cfg.disk >= layout.disks() {
            return Err(format!(
                "failed disk {} does not exist: the array has disks 0..{}",
                cfg.disk,
                layout.disks()
            ));
        }
        let dm = layout.mirrors();
        if dm < 2 {
            return Err(format!(
                "this layout keeps every copy of a block on one disk (Dm = {dm}{}): a failed \
                 disk loses its data, so there is no degraded mode to simulate; mirror it \
                 (Dm >= 2: mirror, raid-10, sr-mirror) or use a parity layout",
                if layout.replicas() > 1 {
                    format!(
                        ", its Dr = {} rotational replicas on the same disk",
                        layout.replicas()
                    )
                } else {
                    String::new()
                }
            ));
        }
        let step_sectors = (STEP_BYTES / u64::from(sector_bytes)).max(1);
        Ok(Failure {
            cfg: cfg.clone(),
            column: cfg.disk as u32 / dm,
            mirror: cfg.disk as u32 % dm,
            clock: FailureClock::new(cfg.at),
            cursor: 0,
            issued: 0,
            column_sectors: layout.column_sectors(),
            step_sectors,
            started: None,
            done: None,
            step_ns: cfg.step_ns(step_sectors * u64::from(sector_bytes))?,
            steps: Default::default(),
            step_due: None,
        })
    }
}

impl Failure {
    /// The disk that fails.
    pub(super) fn disk(&self) -> usize {
        self.cfg.disk
    }
}

impl Array {
    /// The disk that has failed (from its failure on), if any.
    pub(super) fn failed_disk(&self) -> Option<usize> {
        let f = self.failure.as_ref()?;
        f.clock.failed_at().map(|_| f.cfg.disk)
    }

    /// The copies of `piece` lost with the failed disk (bits `m·Dr + k`), 0 for none.
    pub(super) fn lost_copies(&self, piece: &Piece) -> u64 {
        let Some(f) = self.failure.as_ref() else {
            return 0;
        };
        let end = piece.offset + u64::from(piece.sectors);
        if f.clock.failed_at().is_none() || piece.column != f.column || end <= f.cursor {
            return 0;
        }
        let dr = self.layout.replicas();
        u64::from(self.all_replicas()) << (f.mirror * dr)
    }

    /// Whether a write of `piece` must wait for the rebuild step holding its range.
    pub(super) fn held_by_rebuild(&self, piece: &Piece) -> bool {
        self.failure.as_ref().is_some_and(|f| {
            f.steps
                .iter()
                .any(|s| s.piece.column == piece.column && super::overlaps(&s.piece, piece))
        })
    }

    pub(super) fn rebuild_status(&self) -> Option<RebuildStatus> {
        let f = self.failure.as_ref()?;
        Some(RebuildStatus {
            disk: f.cfg.disk,
            failed_at: f.clock.failed_at()?,
            started: f.started,
            done: f.done,
            stripes_done: f.cursor.div_ceil(f.step_sectors),
            stripes_total: f.column_sectors.div_ceil(f.step_sectors),
        })
    }

    /// Before any event at `now`: the disk fails if its time has come; otherwise a timer is
    /// set for it.
    pub(super) fn fail_if_due(&mut self, now: Nanos) {
        let Some(f) = self.failure.as_mut() else {
            return;
        };
        if !f.clock.fails_now(now, &mut self.out) {
            return;
        }
        let (disk, column, mirror) = (f.cfg.disk, f.column, f.mirror);
        // Acknowledged data whose only fresh copy is on the failed disk is propagated now,
        // so the disk can be replaced soon.
        let only_here = u64::from(self.all_replicas()) << (mirror * self.layout.replicas());
        let keys: Vec<_> = self
            .table
            .iter()
            .filter(|(_, e)| e.key.0 == column && e.acked != 0 && e.fresh & !only_here == 0)
            .map(|(id, _)| id)
            .collect();
        for k in keys {
            self.promote(k);
        }
        self.spare_check(now, disk);
    }

    /// A timer fired: a paced rebuild step may be due.
    pub(super) fn wake(&mut self, now: Nanos) {
        let Some(f) = self.failure.as_mut() else {
            return;
        };
        if f.step_due.is_some_and(|t| t <= now) {
            f.step_due = None;
            self.next_rebuild_step(now);
        }
    }

    /// Disk `disk` may have run out of accepted work (or a table entry finished): once the
    /// failed disk has, and no acknowledged data lives on it alone, the spare takes its
    /// place and the rebuild starts.
    pub(super) fn spare_check(&mut self, now: Nanos, disk: usize) {
        let Some(f) = self.failure.as_ref() else {
            return;
        };
        if f.cfg.disk != disk
            || f.clock.failed_at().is_none()
            || f.started.is_some()
            || !f.cfg.rebuild
        {
            return;
        }
        let d = &self.disks[disk];
        if d.busy.is_some() || !d.queue.is_empty() || d.queue.delayed_len() > 0 {
            return;
        }
        let only_here = u64::from(self.all_replicas()) << (f.mirror * self.layout.replicas());
        let column = f.column;
        if self
            .table
            .entries()
            .any(|e| e.key.0 == column && e.acked != 0 && e.fresh & !only_here == 0)
        {
            return;
        }
        #[cfg(test)]
        self.audit.install_spare(disk);
        self.failure.as_mut().expect("a failure").started = Some(now);
        self.next_rebuild_step(now);
    }

    /// The next steps of the rebuild (up to [`STEPS_IN_FLIGHT`]), now or when their pace
    /// allows.
    fn next_rebuild_step(&mut self, now: Nanos) {
        loop {
            let Some(f) = self.failure.as_ref() else {
                return;
            };
            if f.steps.len() >= STEPS_IN_FLIGHT || f.step_due.is_some() || f.done.is_some() {
                return;
            }
            if f.issued >= f.column_sectors {
                if f.steps.is_empty() {
                    self.failure.as_mut().expect("a failure").done = Some(now);
                }
                return;
            }
            let began = f.started.expect("the rebuild has started");
            if let Some(ns) = f.step_ns {
                // At the configured rate the spare may hold `issued` sectors no earlier
                // than this.
                let due = rebuild_step_due(began, ns, f.issued, f.step_sectors);
                if due > now {
                    self.failure.as_mut().expect("a failure").step_due = Some(due);
                    self.out.push(Action::Wake { at: due });
                    return;
                }
            }
            let (column, offset) = (f.column, f.issued);
            let want = f.step_sectors.min(f.column_sectors - offset);
            let sectors = self.layout.band().contiguous(offset, want).max(1);
            let f = self.failure.as_mut().expect("a failure");
            f.issued = offset + sectors;
            f.steps.push_back(Step {
                piece: Piece {
                    column,
                    offset,
                    sectors: u32::try_from(sectors).expect("a step fits u32"),
                },
                started: false,
                written: false,
            });
            self.start_rebuild_step(now);
        }
    }

    /// Starts the reads of the steps whose range no pending write overlaps (the writes
    /// that do are moved to the foreground; the steps are retried as entries finish).
    pub(super) fn start_rebuild_step(&mut self, now: Nanos) {
        let Some(f) = self.failure.as_ref() else {
            return;
        };
        let waiting: Vec<(usize, Piece)> = f
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.started)
            .map(|(i, s)| (i, s.piece))
            .collect();
        for (i, p) in waiting {
            let keys = self.overlapping(p.column, p.offset, p.sectors);
            if !keys.is_empty() {
                for k in keys {
                    self.promote(k);
                }
                continue;
            }
            let f = self.failure.as_mut().expect("a failure");
            f.steps[i].started = true;
            // The first surviving mirror of the set serves the copy.
            let source = u32::from(f.mirror == 0);
            let dr = self.layout.replicas();
            let copies = u64::from(self.all_replicas()) << (source * dr);
            self.queue_rebuild_op(now, Kind::RebuildRead, p, copies, source);
        }
    }

    /// Queues an operation no host request waits for (a rebuild step's read or write, a
    /// latent error's repair) of `piece` on the `m`-th disk of its mirror set; its id.
    pub(super) fn queue_rebuild_op(
        &mut self,
        now: Nanos,
        kind: Kind,
        piece: Piece,
        copies: u64,
        m: u32,
    ) -> usize {
        let id = self.new_op(DiskOp {
            kind,
            slot: None,
            piece,
            copies,
            holders: 1 << m,
            in_delayed: false,
            delayed_hint: u32::MAX,
            entry: None,
            version: 0,
            seq: 0,
            queued_at: now,
            #[cfg(test)]
            must_see: Vec::new(),
        });
        let disk = self.layout.disks_of(piece.column).start + m as usize;
        let r = self.request_for(id, disk);
        self.disks[disk].queue.push(r);
        if self.disks[disk].busy.is_none() {
            self.out.mark_for_dispatch(disk);
        }
        id
    }

    /// A rebuild operation of `piece` finished: a read is followed by the spare's write (and
    /// the next step's read may start); a write moves the rebuilt prefix on.
    pub(super) fn rebuild_op_done(&mut self, now: Nanos, kind: Kind, piece: Piece) {
        let f = self
            .failure
            .as_mut()
            .expect("rebuild operations need a failure");
        match kind {
            Kind::RebuildRead => {
                let m = f.mirror;
                let dr = self.layout.replicas();
                let copies = u64::from(self.all_replicas()) << (m * dr);
                self.queue_rebuild_op(now, Kind::RebuildWrite, piece, copies, m);
            }
            Kind::RebuildWrite => {
                let s = f
                    .steps
                    .iter_mut()
                    .find(|s| s.piece.offset == piece.offset)
                    .expect("the write's step is under way");
                s.written = true;
                while f.steps.front().is_some_and(|s| s.written) {
                    let s = f.steps.pop_front().expect("a step");
                    f.cursor = s.piece.offset + u64::from(s.piece.sectors);
                }
                self.release_blocked(now);
            }
            _ => unreachable!("not a rebuild operation"),
        }
        self.next_rebuild_step(now);
    }

    /// The survivor the rebuild copies from, for a step's write to the spare.
    pub(super) fn rebuild_source(&self) -> usize {
        let f = self.failure.as_ref().expect("a failure");
        self.layout.disks_of(f.column).start + usize::from(f.mirror == 0)
    }
}
