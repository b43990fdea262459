//! Per-disk schedulers: FCFS, SSTF, SCAN, LOOK, C-LOOK and SATF, each with an optional age
//! bound against starvation. Pure: no clock, no I/O; times are `Nanos`.
//!
//! A scheduler holds the disk's queued requests. The disk calls [`Scheduler::pick`] when it
//! becomes idle; the pick is O(queue) with an O(1) prediction per candidate (each request's
//! physical target is located once, when queued). With an age bound, a request that has
//! waited longer than the bound is served first, oldest first, whatever the policy.

mod angle_ring;
mod policies;
mod satf;

pub use policies::{CLook, Fcfs, Look, Scan, Sstf};
pub use satf::Satf;

use crate::drive::{Drive, HeadState, Target};
use crate::{Nanos, Op, Span};
use serde::{Deserialize, Serialize};

/// Rotational replicas a request may be served from are stored inline, at most this many.
pub const MAX_REPLICAS: usize = 8;

/// The physical copies a queued request may be served from: its rotational replicas on
/// this disk (one for an unreplicated layout). Replica-aware policies (RLOOK, RSATF: every
/// policy here) serve the copy with the smallest predicted positioning time. A single copy
/// is stored inline; several live on the heap, so an unreplicated request stays small.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replicas {
    One(Target),
    /// (the layout's replica number, first sector) of each eligible copy.
    Many(Box<[(u8, Target)]>),
}

impl Replicas {
    /// A single copy, replica 0.
    pub fn one(t: Target) -> Replicas {
        Replicas::One(t)
    }

    /// The copies `(replica number, first sector)`; at least one.
    pub fn from_list(list: Vec<(u8, Target)>) -> Replicas {
        assert!(!list.is_empty(), "a request has a copy");
        assert!(
            list.len() <= MAX_REPLICAS,
            "more than {MAX_REPLICAS} replicas"
        );
        match list.as_slice() {
            [(0, t)] => Replicas::One(*t),
            _ => Replicas::Many(list.into_boxed_slice()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Replicas::One(_) => 1,
            Replicas::Many(l) => l.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (replica number, first sector) of entry `i`.
    pub fn get(&self, i: usize) -> (u8, Target) {
        match self {
            Replicas::One(t) if i == 0 => (0, *t),
            Replicas::One(_) => panic!("replica entry {i} of 1"),
            Replicas::Many(l) => l[i],
        }
    }

    /// The entry with the smallest predicted positioning time from `head` at `now`.
    pub fn best(&self, now: Nanos, head: &HeadState, op: Op, drive: &Drive) -> (usize, Span) {
        match self {
            Replicas::One(t) => (0, drive.position_time(now, head, op, t)),
            Replicas::Many(l) => {
                let mut best = (0, drive.position_time(now, head, op, &l[0].1));
                for (i, (_, t)) in l.iter().enumerate().skip(1) {
                    let t = drive.position_time(now, head, op, t);
                    if t < best.1 {
                        best = (i, t);
                    }
                }
                best
            }
        }
    }
}

/// A disk operation waiting in a queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskRequest {
    /// The caller's handle; unique among queued requests of one disk.
    pub id: u64,
    pub op: Op,
    pub lba: u64,
    pub sectors: u32,
    /// The first replica's first sector: what the seek-ordering policies sort by.
    pub target: Target,
    /// Every copy the request may be served from (`replicas.get(0).1 == target`).
    pub replicas: Replicas,
    /// When the request entered the queue.
    pub queued_at: Nanos,
    /// Arrival order, for FCFS and tie-breaking (deterministic).
    pub seq: u64,
}

impl DiskRequest {
    /// A request with a single copy, at `target` (the first sector of `lba`).
    pub fn single(
        id: u64,
        op: Op,
        run: (u64, u32),
        target: Target,
        queued_at: Nanos,
        seq: u64,
    ) -> DiskRequest {
        DiskRequest {
            id,
            op,
            lba: run.0,
            sectors: run.1,
            target,
            replicas: Replicas::one(target),
            queued_at,
            seq,
        }
    }
}

/// The scheduler's choice: a request, the entry of its `replicas` to serve, and for SCAN
/// the edge cylinder the arm visits first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pick {
    pub request: DiskRequest,
    pub replica: usize,
    pub via_cylinder: Option<u32>,
}

impl Pick {
    /// `request`, served from its replica that is quickest to reach from `head` at `now`.
    pub fn closest(request: DiskRequest, now: Nanos, head: &HeadState, drive: &Drive) -> Pick {
        let replica = if request.replicas.len() > 1 {
            request.replicas.best(now, head, request.op, drive).0
        } else {
            0
        };
        Pick {
            request,
            replica,
            via_cylinder: None,
        }
    }
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

/// A disk's queue with two classes: the foreground, and delayed writes (replica
/// propagation), served only when no foreground request is queued, until promoted.
/// [`Scheduler::pick`] takes from the foreground first; [`Scheduler::len`] and
/// [`Scheduler::stats`] count the foreground only.
pub trait DiskQueue: Scheduler {
    /// Queues `r` in the delayed class.
    fn push_delayed(&mut self, r: DiskRequest);
    /// Moves delayed request `id` to the foreground; false if no delayed request has it.
    fn promote(&mut self, id: u64) -> bool;
    fn delayed_len(&self) -> usize;
    /// [`DiskQueue::push_delayed`], returning a hint for [`DiskQueue::promote_hinted`]:
    /// where the queue keeps `r` (`u32::MAX`: no hint).
    fn push_delayed_hinted(&mut self, r: DiskRequest) -> u32 {
        self.push_delayed(r);
        u32::MAX
    }
    /// [`DiskQueue::promote`], given the hint `id`'s push returned: a queue checks it, so a
    /// stale hint costs only the search it saves.
    fn promote_hinted(&mut self, id: u64, hint: u32) -> bool {
        let _ = hint;
        self.promote(id)
    }
}

/// The two classes of a [`DiskQueue`] as two schedulers of one policy (SATF keeps both
/// in one queue, promoting in place).
struct Split {
    foreground: Box<dyn Scheduler>,
    delayed: Box<dyn Scheduler>,
}

impl Scheduler for Split {
    fn push(&mut self, r: DiskRequest) {
        self.foreground.push(r);
    }
    fn pick(&mut self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<Pick> {
        self.foreground
            .pick(now, head, drive)
            .or_else(|| self.delayed.pick(now, head, drive))
    }
    fn remove(&mut self, id: u64) -> Option<DiskRequest> {
        self.foreground
            .remove(id)
            .or_else(|| self.delayed.remove(id))
    }
    fn len(&self) -> usize {
        self.foreground.len()
    }
    fn stats(&self) -> SchedStats {
        self.foreground.stats()
    }
}

impl DiskQueue for Split {
    fn push_delayed(&mut self, r: DiskRequest) {
        self.delayed.push(r);
    }
    fn promote(&mut self, id: u64) -> bool {
        let r = self.delayed.remove(id);
        let moved = r.is_some();
        if let Some(r) = r {
            self.foreground.push(r);
        }
        moved
    }
    fn delayed_len(&self) -> usize {
        self.delayed.len()
    }
}

/// The scheduling policies, as named in experiment files. Every policy serves a request
/// from its rotationally closest replica, so on replicated layouts LOOK is the
/// dissertation's RLOOK and SATF its RSATF (2.4.3–2.4.4); `rlook` and `rsatf` are accepted
/// as their names.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    Fcfs,
    Sstf,
    Scan,
    #[serde(alias = "rlook")]
    Look,
    CLook,
    #[serde(alias = "rsatf")]
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

    /// A two-class queue of this policy ([`DiskQueue`]); the age bound applies to the
    /// foreground.
    pub fn build_queue(self, age_bound: Option<Span>, cylinders: u32) -> Box<dyn DiskQueue> {
        match self {
            Policy::Satf => Box::new(Satf::new(Pending::new(age_bound))),
            _ => Box::new(Split {
                foreground: self.build(age_bound, cylinders),
                delayed: self.build(None, cylinders),
            }),
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
    fn take_overdue(&mut self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<Pick> {
        let i = self.overdue(now)?;
        Some(Pick::closest(self.take(i, true), now, head, drive))
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
