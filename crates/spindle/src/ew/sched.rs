//! Eager-writing schedulers for one disk (EW-Array paper, section 4).
//!
//! A queue holds two kinds of work: *positioned* requests, whose location is known (reads,
//! and writes to a fixed place: a map-log append, a Doubly Distorted Mirror's move home),
//! and *eager writes*, which may go to any free extent of their length. Deciding which
//! comes next, and where an eager write goes, is the policy:
//!
//! - `write-first`: every eager write before any positioned request; `read-first` the
//!   reverse (4.1). Both serve positioned requests SATF and should be given an age bound.
//! - `satf-ew` (4.2): the closest positioned request against the closest free extent,
//!   whichever the head reaches sooner. Free extents are searched only ahead of the head in
//!   its sweep direction, which turns when none is left ahead: the paper forces the sweep
//!   "to avoid trapping the disk head in a small region and exhausting the free blocks".
//!   Reads are taken from anywhere (restricting them too cost 9–11 % of throughput at
//!   Q = 64 on one disk, and is not what protects the free blocks).
//! - `freebw-satf`, `freebw-scan` (4.3): the positioned requests are scheduled by SATF or
//!   by SCAN (seek order in the sweep direction); before the next one, an eager write is
//!   inserted if a free extent lies in the gap, that is if writing it and then going on
//!   still reaches the positioned request in the same revolution (its deadline).
//!   Repeated at every decision, this fills each gap with as many eager writes as fit.
//! - `freebw-hybrid`: FreeBW-SCAN while eager writes are queued, plain SATF otherwise.
//!
//! The age bound of [`crate::sched`] applies to every policy: a request that has waited
//! longer is served first, oldest first.

use super::free_space::{BlockId, FreeSpace, Sweep};
use crate::drive::{Drive, HeadState, Target, Transfer};
use crate::sched::SchedStats;
use crate::{Nanos, Op, Span};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The eager-writing scheduling policies, as named in experiment files.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EwPolicy {
    WriteFirst,
    ReadFirst,
    SatfEw,
    #[serde(rename = "freebw-satf")]
    FreeBwSatf,
    #[serde(rename = "freebw-scan")]
    FreeBwScan,
    #[serde(rename = "freebw-hybrid")]
    FreeBwHybrid,
}

impl EwPolicy {
    pub const ALL: [EwPolicy; 6] = [
        EwPolicy::WriteFirst,
        EwPolicy::ReadFirst,
        EwPolicy::SatfEw,
        EwPolicy::FreeBwSatf,
        EwPolicy::FreeBwScan,
        EwPolicy::FreeBwHybrid,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EwPolicy::WriteFirst => "write-first",
            EwPolicy::ReadFirst => "read-first",
            EwPolicy::SatfEw => "satf-ew",
            EwPolicy::FreeBwSatf => "freebw-satf",
            EwPolicy::FreeBwScan => "freebw-scan",
            EwPolicy::FreeBwHybrid => "freebw-hybrid",
        }
    }
}

impl std::fmt::Display for EwPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a queued request asks of the disk.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Work {
    /// A read or write of a known place.
    Positioned {
        op: Op,
        lba: u64,
        sectors: u32,
        target: Target,
    },
    /// A write of `blocks` blocks to any free extent.
    Eager { blocks: u32 },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EwRequest {
    /// The caller's handle; unique among the queue's requests.
    pub id: u64,
    pub work: Work,
    pub queued_at: Nanos,
    /// Creation order: age and tie-breaks.
    pub seq: u64,
}

/// The scheduler's choice. For an eager write, the extent to write: `blocks` may be fewer
/// than asked when no free extent of the full length is left on the disk (the caller
/// writes those and queues the rest again).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EwPick {
    pub request: EwRequest,
    pub extent: Option<(BlockId, u32)>,
}

/// The sweep direction of the policies that force one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Dir {
    Up,
    Down,
}

impl Dir {
    fn sweep(self) -> Sweep {
        match self {
            Dir::Up => Sweep::Up,
            Dir::Down => Sweep::Down,
        }
    }
    fn ahead(self, head: u32, cylinder: u32) -> bool {
        match self {
            Dir::Up => cylinder >= head,
            Dir::Down => cylinder <= head,
        }
    }
    fn reverse(self) -> Dir {
        match self {
            Dir::Up => Dir::Down,
            Dir::Down => Dir::Up,
        }
    }
}

/// One disk's queue under an eager-writing policy.
///
/// Positioned requests and eager writes are kept apart: every choice scans the positioned
/// ones, but takes only the oldest eager write, so those are kept in creation (`seq`)
/// order. The order positioned requests are stored in is irrelevant: every choice among
/// them breaks ties by `seq`.
#[derive(Debug)]
pub struct EwQueue {
    policy: EwPolicy,
    positioned: Vec<EwRequest>,
    /// Eager writes by increasing `seq`.
    eager: VecDeque<EwRequest>,
    age_bound: Option<Span>,
    dir: Dir,
    stats: SchedStats,
}

/// A queued request: `Positioned(i)` is `positioned[i]`, `Eager(i)` is `eager[i]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Slot {
    Positioned(usize),
    Eager(usize),
}

/// Where and when a candidate is reached.
#[derive(Copy, Clone, Debug)]
struct Cand {
    index: Slot,
    time: Span,
    extent: Option<(BlockId, u32)>,
}

impl EwQueue {
    pub fn new(policy: EwPolicy, age_bound: Option<Span>) -> EwQueue {
        EwQueue {
            policy,
            positioned: Vec::with_capacity(64),
            eager: VecDeque::new(),
            age_bound,
            dir: Dir::Up,
            stats: SchedStats::default(),
        }
    }

    pub fn policy(&self) -> EwPolicy {
        self.policy
    }

    pub fn push(&mut self, r: EwRequest) {
        debug_assert!(
            self.requests().all(|q| q.id != r.id),
            "request {} queued twice",
            r.id
        );
        match r.work {
            Work::Positioned { .. } => self.positioned.push(r),
            Work::Eager { .. } => {
                // Usually the newest; an older one (a propagation moved to the foreground)
                // goes to its place.
                if self.eager.back().is_none_or(|b| b.seq < r.seq) {
                    self.eager.push_back(r);
                } else {
                    let i = self.eager.partition_point(|q| q.seq < r.seq);
                    self.eager.insert(i, r);
                }
            }
        }
    }

    /// Removes a queued request (a withdrawn duplicate, a cancelled propagation).
    pub fn remove(&mut self, id: u64) -> Option<EwRequest> {
        // The oldest eager write is the usual one (a propagation moved to the foreground).
        if self.eager.front().is_some_and(|r| r.id == id) {
            return self.eager.pop_front();
        }
        if let Some(i) = self.positioned.iter().position(|r| r.id == id) {
            return Some(self.positioned.swap_remove(i));
        }
        // Else usually a recent one: search from the newest.
        let i = self.eager.iter().rposition(|r| r.id == id)?;
        self.eager.remove(i)
    }

    pub fn len(&self) -> usize {
        self.positioned.len() + self.eager.len()
    }

    pub fn is_empty(&self) -> bool {
        self.positioned.is_empty() && self.eager.is_empty()
    }

    pub fn stats(&self) -> SchedStats {
        self.stats
    }

    /// The queued requests (unordered).
    pub fn requests(&self) -> impl Iterator<Item = &EwRequest> {
        self.positioned.iter().chain(&self.eager)
    }

    fn get(&self, s: Slot) -> &EwRequest {
        match s {
            Slot::Positioned(i) => &self.positioned[i],
            Slot::Eager(i) => &self.eager[i],
        }
    }

    fn take(&mut self, s: Slot) -> EwRequest {
        match s {
            Slot::Positioned(i) => self.positioned.swap_remove(i),
            Slot::Eager(i) => self.eager.remove(i).expect("a queued eager write"),
        }
    }

    /// Chooses and removes the next request; `now` is when the disk can start it.
    pub fn pick(
        &mut self,
        now: Nanos,
        head: &HeadState,
        drive: &Drive,
        free: &FreeSpace,
    ) -> Option<EwPick> {
        if self.is_empty() {
            return None;
        }
        let aged = self.overdue(now);
        let choice = match aged {
            Some(i) => self.eager_or_positioned(i, now, head, drive, free),
            None => self.choose(now, head, drive, free),
        };
        let c = choice?;
        self.stats.picks += 1;
        if aged.is_some() {
            self.stats.aged_picks += 1;
        }
        let request = self.take(c.index);
        Some(EwPick {
            request,
            extent: c.extent,
        })
    }

    fn overdue(&self, now: Nanos) -> Option<Slot> {
        let bound = self.age_bound?;
        let pos = self
            .positioned
            .iter()
            .enumerate()
            .min_by_key(|(_, r)| r.seq)
            .map(|(i, r)| (r.seq, Slot::Positioned(i)));
        let eager = self.eager.front().map(|r| (r.seq, Slot::Eager(0)));
        let (_, i) = match (pos, eager) {
            (Some(p), Some(e)) => {
                if e.0 < p.0 {
                    e
                } else {
                    p
                }
            }
            (p, e) => p.or(e)?,
        };
        let oldest = self.get(i);
        (now.saturating_since(oldest.queued_at) > bound).then_some(i)
    }

    /// Request `i` as a candidate: its place, or for an eager write the closest extent.
    fn eager_or_positioned(
        &self,
        i: Slot,
        now: Nanos,
        head: &HeadState,
        drive: &Drive,
        free: &FreeSpace,
    ) -> Option<Cand> {
        match self.get(i).work {
            Work::Positioned { op, target, .. } => Some(Cand {
                index: i,
                time: drive.position_time(now, head, op, &target),
                extent: None,
            }),
            Work::Eager { blocks } => {
                eager_extent(free, drive, now, head, blocks, Sweep::Any, None).map(|(e, t)| Cand {
                    index: i,
                    time: t,
                    extent: Some(e),
                })
            }
        }
    }

    /// SATF over the positioned requests ahead of the head in `dir` (all with `None`).
    fn closest_positioned(
        &self,
        now: Nanos,
        head: &HeadState,
        drive: &Drive,
        dir: Option<Dir>,
    ) -> Option<Cand> {
        let mut best: Option<(Span, u64, usize)> = None;
        for (i, r) in self.positioned.iter().enumerate() {
            let Work::Positioned { op, target, .. } = r.work else {
                unreachable!("only positioned requests are kept there");
            };
            if dir.is_some_and(|d| !d.ahead(head.cylinder, target.chs.cylinder)) {
                continue;
            }
            let t = drive.position_time(now, head, op, &target);
            if best.is_none_or(|(bt, bs, _)| (t, r.seq) < (bt, bs)) {
                best = Some((t, r.seq, i));
            }
        }
        best.map(|(time, _, index)| Cand {
            index: Slot::Positioned(index),
            time,
            extent: None,
        })
    }

    /// SCAN's next positioned request: the nearest cylinder ahead in `dir` (SATF among
    /// requests on that cylinder).
    fn next_in_sweep(&self, now: Nanos, head: &HeadState, drive: &Drive, dir: Dir) -> Option<Cand> {
        let mut best: Option<(u32, Span, u64, usize)> = None;
        for (i, r) in self.positioned.iter().enumerate() {
            let Work::Positioned { op, target, .. } = r.work else {
                unreachable!("only positioned requests are kept there");
            };
            let cyl = target.chs.cylinder;
            if !dir.ahead(head.cylinder, cyl) {
                continue;
            }
            let dist = cyl.abs_diff(head.cylinder);
            if best.is_some_and(|(bd, ..)| dist > bd) {
                continue;
            }
            let t = drive.position_time(now, head, op, &target);
            if best.is_none_or(|(bd, bt, bs, _)| (dist, t, r.seq) < (bd, bt, bs)) {
                best = Some((dist, t, r.seq, i));
            }
        }
        best.map(|(_, time, _, index)| Cand {
            index: Slot::Positioned(index),
            time,
            extent: None,
        })
    }

    /// The oldest eager write.
    fn oldest_eager(&self) -> Option<(Slot, u32)> {
        match self.eager.front()?.work {
            Work::Eager { blocks } => Some((Slot::Eager(0), blocks)),
            Work::Positioned { .. } => unreachable!("only eager writes are kept there"),
        }
    }

    /// The oldest eager write placed at the closest free extent within `sweep`; with a
    /// `limit`, only if it is reached before it (else `None`: exactly what comparing the
    /// unlimited search's time with `limit` decides).
    fn closest_eager(
        &self,
        now: Nanos,
        head: &HeadState,
        drive: &Drive,
        free: &FreeSpace,
        sweep: Sweep,
        limit: Option<Span>,
    ) -> Option<Cand> {
        let (i, blocks) = self.oldest_eager()?;
        eager_extent(free, drive, now, head, blocks, sweep, limit).map(|(e, t)| Cand {
            index: i,
            time: t,
            extent: Some(e),
        })
    }

    fn has_positioned(&self) -> bool {
        !self.positioned.is_empty()
    }

    fn choose(
        &mut self,
        now: Nanos,
        head: &HeadState,
        drive: &Drive,
        free: &FreeSpace,
    ) -> Option<Cand> {
        match self.policy {
            EwPolicy::WriteFirst => self
                .closest_eager(now, head, drive, free, Sweep::Any, None)
                .or_else(|| self.closest_positioned(now, head, drive, None)),
            EwPolicy::ReadFirst => self
                .closest_positioned(now, head, drive, None)
                .or_else(|| self.closest_eager(now, head, drive, free, Sweep::Any, None)),
            EwPolicy::SatfEw => {
                for _ in 0..2 {
                    let dir = self.dir;
                    let read = self.closest_positioned(now, head, drive, None);
                    // A write is taken only if it is reached before the read: extents
                    // further away need not be searched.
                    let write = match read {
                        Some(r) => {
                            self.closest_eager(now, head, drive, free, dir.sweep(), Some(r.time))
                        }
                        None => self.closest_eager(now, head, drive, free, dir.sweep(), None),
                    };
                    let best = match (read, write) {
                        (Some(r), Some(w)) => Some(if w.time < r.time { w } else { r }),
                        (r, w) => r.or(w),
                    };
                    if best.is_some() {
                        return best;
                    }
                    self.turn();
                }
                self.any(now, head, drive, free)
            }
            EwPolicy::FreeBwSatf => self.free_bandwidth(now, head, drive, free, false),
            EwPolicy::FreeBwScan => self.free_bandwidth(now, head, drive, free, true),
            EwPolicy::FreeBwHybrid => {
                if self.oldest_eager().is_some() {
                    self.free_bandwidth(now, head, drive, free, true)
                } else {
                    self.closest_positioned(now, head, drive, None)
                }
            }
        }
    }

    fn turn(&mut self) {
        self.dir = self.dir.reverse();
        self.stats.reversals += 1;
    }

    /// Whatever can be served (a last resort when nothing lies in either direction).
    fn any(&self, now: Nanos, head: &HeadState, drive: &Drive, free: &FreeSpace) -> Option<Cand> {
        self.closest_positioned(now, head, drive, None)
            .or_else(|| self.closest_eager(now, head, drive, free, Sweep::Any, None))
    }

    /// FreeBW: the next positioned request by SCAN (`scan`) or SATF, with an eager write
    /// inserted before it if one fits in the gap without delaying it.
    fn free_bandwidth(
        &mut self,
        now: Nanos,
        head: &HeadState,
        drive: &Drive,
        free: &FreeSpace,
        scan: bool,
    ) -> Option<Cand> {
        if !self.has_positioned() {
            // Only eager writes: sweep on with them.
            for _ in 0..2 {
                if let Some(w) = self.closest_eager(now, head, drive, free, self.dir.sweep(), None)
                {
                    return Some(w);
                }
                self.turn();
            }
            return self.any(now, head, drive, free);
        }
        let read = if scan {
            match self.next_in_sweep(now, head, drive, self.dir) {
                Some(r) => r,
                None => {
                    self.turn();
                    self.next_in_sweep(now, head, drive, self.dir)?
                }
            }
        } else {
            self.closest_positioned(now, head, drive, None)?
        };
        let Some((wi, blocks)) = self.oldest_eager() else {
            return Some(read);
        };
        let Work::Positioned {
            op: rop, target, ..
        } = self.get(read.index).work
        else {
            unreachable!("a positioned request was chosen");
        };
        // The gap: a free extent reached before the read's own positioning ends, in the
        // sweep direction, whose write leaves the read's sector still reachable on time.
        let sweep = if scan { self.dir.sweep() } else { Sweep::Any };
        let deadline = now + read.time;
        let Some((b, t)) = free.closest_within(drive, now, head, blocks, sweep, read.time) else {
            return Some(read);
        };
        let write = Transfer {
            op: Op::Write,
            lba: free.lba(b),
            sectors: blocks * free.block_sectors(),
        };
        let a = drive.access(now, head, write, None, None::<&mut Pcg64Mcg>);
        let after = HeadState {
            cylinder: a.end_cylinder,
            head: a.end_head,
            phase_ns: head.phase_ns,
        };
        if a.end + drive.position_time(a.end, &after, rop, &target) <= deadline {
            Some(Cand {
                index: wi,
                time: t,
                extent: Some((b, blocks)),
            })
        } else {
            Some(read)
        }
    }
}

/// The free extent for an eager write of `blocks`: the closest of that many blocks within
/// `sweep`, else of half as many, and so on down to one block. With a `limit`, the answer
/// only if it is reached before `limit`, else `None`: the same lengths are tried in the same
/// order, and a length with an extent anywhere within `sweep` ends the search (the unlimited
/// one would answer with it), found before `limit` or not.
#[allow(clippy::too_many_arguments)]
fn eager_extent(
    free: &FreeSpace,
    drive: &Drive,
    now: Nanos,
    head: &HeadState,
    blocks: u32,
    sweep: Sweep,
    limit: Option<Span>,
) -> Option<((BlockId, u32), Span)> {
    let mut len = blocks;
    while len >= 1 {
        let within = limit.unwrap_or(Span(u64::MAX));
        if let Some((b, t)) = free.closest_within(drive, now, head, len, sweep, within) {
            return Some(((b, len), t));
        }
        if limit.is_some() && free.any_extent(drive, now, head, len, sweep) {
            return None;
        }
        len /= 2;
    }
    None
}

#[cfg(test)]
mod tests;
