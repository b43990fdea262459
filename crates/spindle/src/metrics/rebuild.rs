//! Host response times around a disk failure: before it, and while the rebuild runs.

use super::report::{DuringReport, RebuildReport};
use crate::engine::{Completion, RebuildStatus};
use crate::{Nanos, Op};

#[derive(Default)]
struct Sums {
    requests: u64,
    ns: u128,
    reads: u64,
    read_ns: u128,
    max_ns: u64,
}

impl Sums {
    fn add(&mut self, op: Op, ns: u64) {
        self.requests += 1;
        self.ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
        if op == Op::Read {
            self.reads += 1;
            self.read_ns += u128::from(ns);
        }
    }

    fn report(&self) -> DuringReport {
        let mean = |ns: u128, n: u64| (n > 0).then(|| ns as f64 / n as f64 / 1e6);
        let writes = self.requests - self.reads;
        DuringReport {
            requests: self.requests,
            mean_ms: mean(self.ns, self.requests),
            read_mean_ms: mean(self.read_ns, self.reads),
            write_mean_ms: mean(self.ns - self.read_ns, writes),
            max_ms: (self.requests > 0).then(|| self.max_ns as f64 / 1e6),
        }
    }
}

/// Sorts each host completion by when its request arrived: before the failure, or while
/// the rebuild ran. The controller's status is read at each completion; the rebuild's end
/// is known from the completion after it, and every request answered later arrived later
/// than the rebuild's end or was answered after it, so none is misfiled.
#[derive(Default)]
pub struct RebuildWatch {
    before: Sums,
    during: Sums,
}

impl RebuildWatch {
    /// Request `c`, which arrived at `arrived`, was answered; `status` is the controller's
    /// failure state now (`None`: no disk has failed).
    pub fn observe(&mut self, status: Option<RebuildStatus>, c: &Completion, arrived: Nanos) {
        let ns = c.done.since(arrived).0;
        let Some(s) = status else {
            self.before.add(c.op, ns);
            return;
        };
        if arrived < s.failed_at {
            self.before.add(c.op, ns);
        } else if s.started.is_some_and(|t| arrived >= t) && s.done.is_none_or(|t| arrived < t) {
            self.during.add(c.op, ns);
        }
    }

    /// The report of the failure `status` describes at the run's end.
    pub fn finish(&self, status: Option<RebuildStatus>) -> Option<RebuildReport> {
        let s = status?;
        let secs = |t: Nanos| t.0 as f64 / 1e9;
        Some(RebuildReport {
            disk: s.disk,
            failed_at_s: secs(s.failed_at),
            started_s: s.started.map(secs),
            done_s: s.done.map(secs),
            stripes_done: s.stripes_done,
            stripes_total: s.stripes_total,
            during: self.during.report(),
            before_failure: self.before.report(),
        })
    }
}
