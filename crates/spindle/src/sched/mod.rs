//! Per-disk schedulers: FCFS, SSTF, SCAN, LOOK, C-LOOK and SATF, each with an optional age
//! bound against starvation. Pure: no clock, no I/O; times are `Nanos`.
//!
//! A scheduler holds the disk's queued requests. The disk calls [`Scheduler::pick`] when it
//! becomes idle; the pick is O(queue) with an O(1) prediction per candidate (each request's
//! physical target is located once, when queued). With an age bound, a request that has
//! waited longer than the bound is served first, oldest first, whatever the policy.

mod policies;

pub use policies::{CLook, Fcfs, Look, Satf, Scan, Sstf};

use crate::drive::{Drive, HeadState, Target};
use crate::{Nanos, Op, Span};
use serde::{Deserialize, Serialize};

/// A disk operation waiting in a queue.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DiskRequest {
    /// The caller's handle; unique among queued requests of one disk.
    pub id: u64,
    pub op: Op,
    pub lba: u64,
    pub sectors: u32,
    pub target: Target,
    /// When the request entered the queue.
    pub queued_at: Nanos,
    /// Arrival order, for FCFS and tie-breaking (deterministic).
    pub seq: u64,
}

/// The scheduler's choice: a request, and for SCAN the edge cylinder the arm visits first.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Pick {
    pub request: DiskRequest,
    pub via_cylinder: Option<u32>,
}

/// Counters a scheduler keeps about its own decisions.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SchedStats {
    pub picks: u64,
    /// Reversals of the sweep direction (sweeping policies only).
    pub reversals: u64,
    /// Picks forced by the age bound.
    pub aged_picks: u64,
}

pub trait Scheduler: Send {
    fn push(&mut self, r: DiskRequest);
    /// Chooses and removes the next request to serve, if any.
    fn pick(&mut self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<Pick>;
    /// Removes a queued request (a cancelled duplicate); `None` if it is not queued.
    fn remove(&mut self, id: u64) -> Option<DiskRequest>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn stats(&self) -> SchedStats;
}

/// The scheduling policies, as named in experiment files.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    Fcfs,
    Sstf,
    Scan,
    Look,
    CLook,
    Satf,
}

impl Policy {
    pub const ALL: [Policy; 6] = [
        Policy::Fcfs,
        Policy::Sstf,
        Policy::Scan,
        Policy::Look,
        Policy::CLook,
        Policy::Satf,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Fcfs => "fcfs",
            Policy::Sstf => "sstf",
            Policy::Scan => "scan",
            Policy::Look => "look",
            Policy::CLook => "c-look",
            Policy::Satf => "satf",
        }
    }

    /// A scheduler of this policy; `age_bound` of `None` never forces a pick.
    pub fn build(self, age_bound: Option<Span>, cylinders: u32) -> Box<dyn Scheduler> {
        let q = Pending::new(age_bound);
        match self {
            Policy::Fcfs => Box::new(Fcfs::new(q)),
            Policy::Sstf => Box::new(Sstf::new(q)),
            Policy::Scan => Box::new(Scan::new(q, cylinders)),
            Policy::Look => Box::new(Look::new(q)),
            Policy::CLook => Box::new(CLook::new(q)),
            Policy::Satf => Box::new(Satf::new(q)),
        }
    }
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The queued requests shared by every policy, with the age-bound check.
#[derive(Debug)]
pub struct Pending {
    reqs: Vec<DiskRequest>,
    age_bound: Option<Span>,
    stats: SchedStats,
}

impl Pending {
    pub fn new(age_bound: Option<Span>) -> Pending {
        Pending {
            reqs: Vec::with_capacity(64),
            age_bound,
            stats: SchedStats::default(),
        }
    }

    fn push(&mut self, r: DiskRequest) {
        debug_assert!(
            self.reqs.iter().all(|q| q.id != r.id),
            "request {} queued twice",
            r.id
        );
        self.reqs.push(r);
    }

    /// The index of the oldest request if it has waited past the age bound.
    fn overdue(&self, now: Nanos) -> Option<usize> {
        let bound = self.age_bound?;
        let (i, oldest) = self.reqs.iter().enumerate().min_by_key(|(_, r)| r.seq)?;
        (now.saturating_since(oldest.queued_at) > bound).then_some(i)
    }

    /// The oldest request, taken, if it has waited past the age bound: every policy asks
    /// this first.
    fn take_overdue(&mut self, now: Nanos) -> Option<Pick> {
        let i = self.overdue(now)?;
        Some(Pick {
            request: self.take(i, true),
            via_cylinder: None,
        })
    }

    /// Removes request `i`, keeping the others (order among them is not significant).
    fn take(&mut self, i: usize, aged: bool) -> DiskRequest {
        self.stats.picks += 1;
        if aged {
            self.stats.aged_picks += 1;
        }
        self.reqs.swap_remove(i)
    }

    fn remove(&mut self, id: u64) -> Option<DiskRequest> {
        let i = self.reqs.iter().position(|r| r.id == id)?;
        Some(self.reqs.swap_remove(i))
    }

    /// Index of the request minimising `key`, ties broken by arrival order.
    fn argmin<K: Ord>(&self, mut key: impl FnMut(&DiskRequest) -> K) -> Option<usize> {
        self.reqs
            .iter()
            .enumerate()
            .min_by_key(|(_, r)| (key(r), r.seq))
            .map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests;
