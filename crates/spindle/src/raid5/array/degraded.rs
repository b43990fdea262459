//! A failed disk, degraded operation and the rebuild onto a spare.
//!
//! A disk fails at a configured instant (a timer, [`Action::Wake`]). Work it had already
//! accepted — operations in its queues, and the phases of stripe work planned before the
//! failure — still completes on it: the model is a fail-stop after its accepted work, so
//! no acknowledged write is lost and no operation is cut in half. From the failure on,
//! work planned on a stripe of the failed disk's group that the rebuild has not reached
//! leaves the disk out (it is *lost* there):
//!
//! - a host read of it reads the same rows of every other disk of the stripe (data and
//!   parity) and answers with their XOR — a reconstruct read, which holds the stripe like
//!   an update so it never sees a half-done update;
//! - a write updates parity without it (see `Raid5Array::plan` and the destage rounds'
//!   `row_needs`).
//!
//! When the failed disk has no accepted work left, a spare takes its place (the same
//! index) and the rebuild starts: stripe by stripe, in order, it reads the stripe's units
//! on every surviving disk and writes their XOR to the spare. Each step holds its stripe,
//! and its reads and write go to the disks' host queues, so it competes with host I/O under
//! the array's scheduler; at most `rate` bytes per second of the spare are rebuilt (steps
//! are paced by a timer), or as fast as the disks allow. Stripes the rebuild has passed are
//! served normally, spare included.

use super::{Kind, Raid5Array, StripeWork};
pub use crate::engine::FailureConfig;
use crate::engine::{Action, FailureClock, RebuildStatus};
use crate::raid5::layout::ParityLayout;
use crate::{Nanos, Op};

/// A reconstruct read: rows of a lost unit answered from the other disks of its stripe.
struct Recon {
    slot: usize,
    key: (u32, u64),
    disk: usize,
    lba: u64,
    sectors: u32,
    left: u32,
}

pub(super) struct Failure {
    cfg: FailureConfig,
    group: u32,
    /// The failure has happened (at `failed_at`).
    clock: FailureClock,
    /// Stripes of the group below this are on the spare.
    cursor: u64,
    stripes: u64,
    started: Option<Nanos>,
    done: Option<Nanos>,
    /// Virtual time one stripe's rebuild takes at the configured rate (a fixed unit).
    step_ns: Option<u64>,
    sector_bytes: u32,
    /// The step under way holds stripe `cursor`: operations of its phase not yet done.
    step_left: Option<u32>,
    /// A paced step waits for this instant (a timer is set).
    step_due: Option<Nanos>,
    recons: crate::engine::Slab<Recon>,
}

impl Failure {
    pub(super) fn new(
        cfg: &FailureConfig,
        layout: &ParityLayout,
        sector_bytes: u32,
    ) -> Result<Failure, String> {
        if cfg.disk >= layout.disks() {
            return Err(format!(
                "failed disk {} does not exist: the array has disks 0..{}",
                cfg.disk,
                layout.disks()
            ));
        }
        // Track-aligned units vary: the pace is then worked out per stripe (the first
        // stripe's unit only checks the rate here).
        let unit = layout.unit_of(0);
        let step_ns = cfg.step_ns(u64::from(unit) * u64::from(sector_bytes))?;
        Ok(Failure {
            cfg: cfg.clone(),
            group: cfg.disk as u32 / layout.width(),
            clock: FailureClock::new(cfg.at),
            cursor: 0,
            stripes: layout.stripes(),
            started: None,
            done: None,
            step_ns,
            sector_bytes,
            step_left: None,
            step_due: None,
            recons: crate::engine::Slab::default(),
        })
    }
}

impl Raid5Array {
    /// The disk of stripe `key` that has failed and is not yet rebuilt there, if any.
    pub(super) fn lost_disk(&self, key: (u32, u64)) -> Option<usize> {
        let f = self.failure.as_ref()?;
        (f.clock.failed_at().is_some() && key.0 == f.group && key.1 >= f.cursor)
            .then_some(f.cfg.disk)
    }

    pub(super) fn rebuild_status(&self) -> Option<RebuildStatus> {
        let f = self.failure.as_ref()?;
        Some(RebuildStatus {
            disk: f.cfg.disk,
            failed_at: f.clock.failed_at()?,
            started: f.started,
            done: f.done,
            stripes_done: f.cursor,
            stripes_total: f.stripes,
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
        let disk = f.cfg.disk;
        // Destage work the failed disk accepted must not wait on its destage policy: the
        // rounds it belongs to become host work, so the disk drains and the rebuild starts.
        let rounds: Vec<usize> = self
            .ops
            .iter()
            .filter(|o| o.disk == disk)
            .filter_map(|o| match o.kind {
                Kind::DestageRead(r) | Kind::DestageWrite(r) => Some(r),
                _ => None,
            })
            .collect();
        for r in rounds {
            self.promote_round(now, r);
        }
        self.disk_idle_check(now, disk);
    }

    /// A timer fired: a paced rebuild step may be due.
    pub(super) fn wake(&mut self, now: Nanos) {
        let Some(f) = self.failure.as_mut() else {
            return;
        };
        if f.step_due.is_some_and(|t| t <= now) {
            f.step_due = None;
            self.queue_rebuild_step(now);
        }
    }

    /// Disk `disk` may have run out of work: if it is the failed disk and its accepted work
    /// is done, the spare takes its place and the rebuild starts.
    pub(super) fn disk_idle_check(&mut self, now: Nanos, disk: usize) {
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
        let idle = d.busy.is_none()
            && d.queue.is_empty()
            && d.destage.as_ref().is_none_or(|q| q.is_empty());
        if idle {
            self.failure.as_mut().expect("a failure").started = Some(now);
            self.queue_rebuild_step(now);
        }
    }

    /// The next stripe's rebuild, now or when its pace allows.
    fn queue_rebuild_step(&mut self, now: Nanos) {
        let f = self.failure.as_mut().expect("a failure");
        if f.cursor == f.stripes {
            f.done = Some(now);
            return;
        }
        if let Some(step) = f.step_ns {
            let started = f.started.expect("the rebuild started");
            // Stripes before the cursor at the configured rate.
            let paced = match self.layout.fixed_unit() {
                Some(_) => step.saturating_mul(f.cursor),
                None if f.cursor == 0 => 0,
                None => {
                    let bytes = self.layout.before(f.cursor) * u64::from(f.sector_bytes);
                    f.cfg.step_ns(bytes).ok().flatten().unwrap_or(0)
                }
            };
            let due = started + crate::Span(paced);
            if due > now {
                f.step_due = Some(due);
                self.out.push(Action::Wake { at: due });
                return;
            }
        }
        let key = (f.group, f.cursor);
        self.enqueue_stripe_work(now, key, StripeWork::Rebuild);
    }

    /// The rebuild step holds stripe `cursor`: read its units on every surviving disk.
    pub(super) fn start_rebuild_step(&mut self, now: Nanos) {
        let f = self.failure.as_ref().expect("a failure");
        let (group, stripe, lost) = (f.group, f.cursor, f.cfg.disk);
        let first = (group * self.layout.width()) as usize;
        let lba = self.layout.stripe_lba(stripe);
        let unit = self.layout.unit_of(stripe);
        let survivors: Vec<usize> = (first..first + self.layout.width() as usize)
            .filter(|&d| d != lost)
            .collect();
        self.failure.as_mut().expect("a failure").step_left = Some(survivors.len() as u32);
        for d in survivors {
            self.queue_op(now, Kind::RebuildRead, None, d, Op::Read, lba, unit);
        }
    }

    pub(super) fn rebuild_op_done(&mut self, now: Nanos, kind: Kind) {
        let f = self.failure.as_mut().expect("a failure");
        let left = f.step_left.as_mut().expect("a rebuild step under way");
        *left -= 1;
        if *left > 0 {
            return;
        }
        let (group, stripe, lost) = (f.group, f.cursor, f.cfg.disk);
        match kind {
            Kind::RebuildRead => {
                f.step_left = Some(1);
                let lba = self.layout.stripe_lba(stripe);
                let unit = self.layout.unit_of(stripe);
                let first = (group * self.layout.width()) as usize;
                let survivors: Vec<usize> = (first..first + self.layout.width() as usize)
                    .filter(|&d| d != lost)
                    .collect();
                self.describe_rebuild(lost, &survivors, stripe);
                self.queue_op(now, Kind::RebuildWrite, None, lost, Op::Write, lba, unit);
            }
            Kind::RebuildWrite => {
                f.step_left = None;
                f.cursor += 1;
                self.release_stripe(now, (group, stripe));
                self.queue_rebuild_step(now);
            }
            _ => unreachable!("only rebuild operations"),
        }
    }

    /// A host read of `sectors` at `lba` of lost `disk` in stripe `key`, for request `slot`:
    /// queued as stripe work (it must not see a half-done update of the stripe).
    pub(super) fn queue_recon(
        &mut self,
        now: Nanos,
        slot: usize,
        key: (u32, u64),
        disk: usize,
        lba: u64,
        sectors: u32,
    ) {
        self.host.add_part(slot);
        let j = self
            .failure
            .as_mut()
            .expect("a failure")
            .recons
            .insert(Recon {
                slot,
                key,
                disk,
                lba,
                sectors,
                left: 0,
            });
        self.enqueue_stripe_work(now, key, StripeWork::Recon(j));
    }

    /// The reconstruct read holds its stripe: read the same rows of every other disk of it
    /// — or, if the rebuild passed the stripe meanwhile, the spare.
    pub(super) fn start_recon(&mut self, now: Nanos, j: usize) {
        let r = &self.failure.as_ref().expect("a failure").recons[j];
        let (key, disk, lba, sectors) = (r.key, r.disk, r.lba, r.sectors);
        let others: Vec<usize> = if self.lost_disk(key) == Some(disk) {
            let first = (key.0 * self.layout.width()) as usize;
            (first..first + self.layout.width() as usize)
                .filter(|&d| d != disk)
                .collect()
        } else {
            vec![disk]
        };
        self.failure.as_mut().expect("a failure").recons[j].left = others.len() as u32;
        let slot = self.failure.as_ref().expect("a failure").recons[j].slot;
        if others.len() == 1 {
            self.describe_read(slot, disk, lba, sectors);
        } else {
            self.describe_recon(slot, disk, &others, lba, sectors);
        }
        for d in others {
            self.queue_op(now, Kind::ReconRead(j), None, d, Op::Read, lba, sectors);
        }
    }

    pub(super) fn recon_read_done(&mut self, now: Nanos, j: usize, f: &super::InFlight) {
        let recons = &mut self.failure.as_mut().expect("a failure").recons;
        recons[j].left -= 1;
        if recons[j].left > 0 {
            return;
        }
        let r = recons.remove(j);
        self.part_done(now, r.slot, f);
        self.release_stripe(now, r.key);
    }
}
