//! Disk time by cause: every disk operation a controller starts is charged, from its start
//! to its end, to why it ran (a host read, a delayed copy, a destage write, …). A report
//! reads the cumulative charge at both edges of its measurement window, so utilisation by
//! cause is the window's own work, never more than 100 % in all.

use crate::drive::{PowerClock, PowerCommand, PowerTotals};
use crate::{Nanos, Span};
use serde::Serialize;

/// Why a disk operation ran.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cause {
    /// A read a host request waits for.
    HostRead,
    /// A write a host request waits for (with a write cache: a write that bypassed it).
    HostWrite,
    /// Deferred copies of acknowledged data: delayed replica writes, eager propagations,
    /// moves home.
    DelayedWrite,
    /// Appending the logical-to-physical map log and its checkpoints.
    MapLogging,
    /// Reading old data or parity to compute new parity for a destage.
    DestageRead,
    /// Writing cached data or parity to disk.
    DestageWrite,
    /// Reconstructing a failed disk's contents onto a spare.
    Rebuild,
    /// Moving data to where it belongs in the background: a paged disk's cleaner moving
    /// bad tenants home and restoring replication.
    Cleaning,
}

impl Cause {
    pub const ALL: [Cause; 8] = [
        Cause::HostRead,
        Cause::HostWrite,
        Cause::DelayedWrite,
        Cause::MapLogging,
        Cause::DestageRead,
        Cause::DestageWrite,
        Cause::Rebuild,
        Cause::Cleaning,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// A disk's busy time, cumulative, by cause.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Busy([u64; Cause::ALL.len()]);

impl Busy {
    pub fn get(&self, cause: Cause) -> Span {
        Span(self.0[cause.index()])
    }

    pub fn total(&self) -> Span {
        Span(self.0.iter().sum())
    }

    /// The busy time accrued between `earlier` and `self`.
    pub fn since(&self, earlier: &Busy) -> Busy {
        let mut d = Busy::default();
        for (i, v) in d.0.iter_mut().enumerate() {
            *v = self.0[i].saturating_sub(earlier.0[i]);
        }
        d
    }

    fn add(&mut self, cause: Cause, ns: u64) {
        self.0[cause.index()] += ns;
    }
}

/// Shares of a window by cause (each busy time over the window's length).
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize)]
pub struct CauseShares {
    pub host_read: f64,
    pub host_write: f64,
    pub delayed_write: f64,
    pub map_logging: f64,
    pub destage_read: f64,
    pub destage_write: f64,
    pub rebuild: f64,
    pub cleaning: f64,
}

impl CauseShares {
    /// `busy` over a window of `window` (all zero for an empty window).
    pub fn of(busy: &Busy, window: Span) -> CauseShares {
        let share = |c| {
            if window.0 == 0 {
                0.0
            } else {
                busy.get(c).0 as f64 / window.0 as f64
            }
        };
        CauseShares {
            host_read: share(Cause::HostRead),
            host_write: share(Cause::HostWrite),
            delayed_write: share(Cause::DelayedWrite),
            map_logging: share(Cause::MapLogging),
            destage_read: share(Cause::DestageRead),
            destage_write: share(Cause::DestageWrite),
            rebuild: share(Cause::Rebuild),
            cleaning: share(Cause::Cleaning),
        }
    }
}

/// One disk's time: the operation running, the busy time of those finished, by cause; and,
/// for a drive with power data, its power state ([`PowerClock`]).
///
/// Call order for an operation: [`DiskClock::wake`] (the instant it can start: later than
/// asked when the disk must first come back from a low-power state), [`DiskClock::start`]
/// from that instant, [`DiskClock::finish`] at its end.
#[derive(Clone, Debug, Default)]
pub struct DiskClock {
    busy: Busy,
    ops: u64,
    running: Option<(Nanos, Nanos, Cause)>,
    power: Option<Box<PowerClock>>,
}

impl DiskClock {
    /// A disk's clock; `power`: its power state, for a drive with power data
    /// ([`crate::drive::Drive::power_clock`]).
    pub fn new(power: Option<PowerClock>) -> DiskClock {
        DiskClock {
            power: power.map(Box::new),
            ..DiskClock::default()
        }
    }

    /// An operation is to start at `now`: when the disk can start it (`now`, unless it is
    /// in or going to a low-power state: then after the transition back).
    #[inline]
    pub fn wake(&mut self, now: Nanos) -> Nanos {
        match self.power.as_deref_mut() {
            None => now,
            Some(p) => p.wake(now),
        }
    }

    /// A power command at `now` (no effect without power data).
    pub fn command(&mut self, now: Nanos, cmd: PowerCommand) {
        let busy = self.running.is_some();
        if let Some(p) = self.power.as_deref_mut() {
            p.command(now, busy, cmd);
        }
    }

    /// Cumulative power totals up to `t` (t ≥ the last event handled), with power data.
    pub fn power(&self, t: Nanos) -> Option<PowerTotals> {
        self.power.as_deref().map(|p| p.totals(t))
    }

    /// The power state, with power data.
    pub fn power_clock(&self) -> Option<&PowerClock> {
        self.power.as_deref()
    }

    /// An operation for `cause` occupies the disk over `[from, until)`.
    pub fn start(&mut self, cause: Cause, from: Nanos, until: Nanos) {
        assert!(
            self.running.is_none(),
            "a disk runs one operation at a time"
        );
        assert!(until >= from, "an operation ends after it starts");
        self.running = Some((from, until, cause));
    }

    /// The running operation goes on until `until` (a read's data still crossing to the
    /// controller).
    pub fn extend(&mut self, until: Nanos) {
        let r = self.running.as_mut().expect("an operation is running");
        assert!(until >= r.1, "an operation is extended, not shortened");
        r.1 = until;
    }

    /// The running operation ended at `at` instead of the instant it was started to end at
    /// (a real disk answered then): its whole time is charged to its cause.
    pub fn finish_at(&mut self, at: Nanos) -> Cause {
        let r = self.running.as_mut().expect("an operation is running");
        assert!(at >= r.0, "an operation ends after it starts");
        r.1 = at;
        self.finish()
    }

    /// The running operation ended: its whole time is charged to its cause.
    pub fn finish(&mut self) -> Cause {
        let (from, until, cause) = self.running.take().expect("an operation is running");
        self.busy.add(cause, until.since(from).0);
        self.ops += 1;
        if let Some(p) = self.power.as_deref_mut() {
            p.idle(until);
        }
        cause
    }

    /// Cumulative busy time up to instant `t` (t ≥ the last event handled): the finished
    /// operations and the part of the running one before `t`.
    pub fn busy(&self, t: Nanos) -> Busy {
        let mut b = self.busy;
        if let Some((from, until, cause)) = self.running {
            b.add(cause, t.0.min(until.0).saturating_sub(from.0));
        }
        b
    }

    /// Operations finished.
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// Busy time of finished operations for `cause`, whole run.
    pub fn finished(&self, cause: Cause) -> Span {
        self.busy.get(cause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_operation_is_charged_up_to_the_instant_asked() {
        let mut c = DiskClock::default();
        c.start(Cause::DestageWrite, Nanos(100), Nanos(400));
        assert_eq!(c.busy(Nanos(250)).get(Cause::DestageWrite), Span(150));
        assert_eq!(c.busy(Nanos(900)).total(), Span(300));
        assert_eq!(c.finish(), Cause::DestageWrite);
        c.start(Cause::HostRead, Nanos(400), Nanos(500));
        let b = c.busy(Nanos(450));
        assert_eq!(b.get(Cause::DestageWrite), Span(300));
        assert_eq!(b.get(Cause::HostRead), Span(50));
        assert_eq!(b.total(), Span(350));
        assert_eq!(c.ops(), 1);
    }

    #[test]
    fn a_real_disk_is_charged_to_its_answer_not_to_the_prediction() {
        let mut c = DiskClock::default();
        c.start(Cause::HostRead, Nanos(100), Nanos(400));
        // Answered sooner than predicted, then later than predicted.
        assert_eq!(c.finish_at(Nanos(250)), Cause::HostRead);
        c.start(Cause::HostWrite, Nanos(300), Nanos(350));
        c.finish_at(Nanos(900));
        assert_eq!(c.busy(Nanos(900)).get(Cause::HostRead), Span(150));
        assert_eq!(c.busy(Nanos(900)).get(Cause::HostWrite), Span(600));
        assert_eq!(c.ops(), 2);
    }

    #[test]
    fn shares_of_a_window_are_the_accrued_time_over_its_length() {
        let mut c = DiskClock::default();
        c.start(Cause::HostRead, Nanos(0), Nanos(100));
        let start = c.busy(Nanos(50));
        c.finish();
        c.start(Cause::Rebuild, Nanos(100), Nanos(300));
        let end = c.busy(Nanos(150));
        let s = CauseShares::of(&end.since(&start), Span(100));
        assert_eq!((s.host_read, s.rebuild), (0.5, 0.5));
    }
}
