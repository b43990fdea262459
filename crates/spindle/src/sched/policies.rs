//! The six policies. Each is a thin rule over [`Pending`]; see the module docs of `sched`.

use super::angle_ring::{AngleRing, RingCopy, Seen};
use super::{DiskRequest, Pending, Pick, SchedStats, Scheduler};
use crate::drive::{Drive, HeadState};
use crate::{Nanos, Op};
use std::collections::VecDeque;

/// The methods every policy built on [`Pending`] (a field `q`) shares.
macro_rules! pending_queue_methods {
    () => {
        fn push(&mut self, r: DiskRequest) {
            self.q.push(r);
        }
        fn remove(&mut self, id: u64) -> Option<DiskRequest> {
            self.q.remove(id)
        }
        fn len(&self) -> usize {
            self.q.reqs.len()
        }
        fn stats(&self) -> SchedStats {
            self.q.stats
        }
    };
}

/// First come, first served: arrival order, a ring buffer (no scan even for long queues).
#[derive(Debug)]
pub struct Fcfs {
    ring: VecDeque<DiskRequest>,
    stats: SchedStats,
}

impl Fcfs {
    pub fn new(q: Pending) -> Fcfs {
        // FCFS never starves a request, so an age bound has nothing to do.
        let _ = q;
        Fcfs {
            ring: VecDeque::with_capacity(64),
            stats: SchedStats::default(),
        }
    }
}

impl Scheduler for Fcfs {
    fn push(&mut self, r: DiskRequest) {
        // Almost always the newest; a delayed write promoted to the foreground (or any
        // re-queued request) takes its place by age.
        if self.ring.back().is_none_or(|b| b.seq < r.seq) {
            self.ring.push_back(r);
        } else {
            let i = self.ring.partition_point(|q| q.seq < r.seq);
            self.ring.insert(i, r);
        }
    }
    fn pick(&mut self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<Pick> {
        let r = self.ring.pop_front()?;
        self.stats.picks += 1;
        Some(Pick::closest(r, now, head, drive))
    }
    fn remove(&mut self, id: u64) -> Option<DiskRequest> {
        let i = self.ring.iter().position(|r| r.id == id)?;
        self.ring.remove(i)
    }
    fn len(&self) -> usize {
        self.ring.len()
    }
    fn stats(&self) -> SchedStats {
        self.stats
    }
}

/// Shortest seek (cylinder distance) first.
#[derive(Debug)]
pub struct Sstf {
    q: Pending,
}

impl Sstf {
    pub fn new(q: Pending) -> Sstf {
        Sstf { q }
    }
}

impl Scheduler for Sstf {
    pending_queue_methods!();
    fn pick(&mut self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<Pick> {
        if let Some(p) = self.q.take_overdue(now, head, drive) {
            return Some(p);
        }
        let i = self
            .q
            .argmin(|r| r.target.chs.cylinder.abs_diff(head.cylinder))?;
        Some(Pick::closest(self.q.take(i, false), now, head, drive))
    }
}

/// The sweep shared by SCAN and LOOK: the nearest request at or beyond the head in the
/// current direction; `None` when nothing lies ahead.
fn nearest_ahead(q: &Pending, cylinder: u32, up: bool) -> Option<usize> {
    if up {
        q.argmin(|r| {
            if r.target.chs.cylinder >= cylinder {
                r.target.chs.cylinder - cylinder
            } else {
                u32::MAX
            }
        })
        .filter(|&i| q.reqs[i].target.chs.cylinder >= cylinder)
    } else {
        q.argmin(|r| {
            if r.target.chs.cylinder <= cylinder {
                cylinder - r.target.chs.cylinder
            } else {
                u32::MAX
            }
        })
        .filter(|&i| q.reqs[i].target.chs.cylinder <= cylinder)
    }
}

/// LOOK: sweep in one direction while requests lie ahead, then reverse (dissertation 2.4.2).
#[derive(Debug)]
pub struct Look {
    q: Pending,
    up: bool,
}

impl Look {
    pub fn new(q: Pending) -> Look {
        Look { q, up: true }
    }
}

impl Scheduler for Look {
    pending_queue_methods!();
    fn pick(&mut self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<Pick> {
        if let Some(p) = self.q.take_overdue(now, head, drive) {
            return Some(p);
        }
        if self.q.reqs.is_empty() {
            return None;
        }
        let i = match nearest_ahead(&self.q, head.cylinder, self.up) {
            Some(i) => i,
            None => {
                self.up = !self.up;
                self.q.stats.reversals += 1;
                nearest_ahead(&self.q, head.cylinder, self.up)
                    .expect("a request lies one way or the other")
            }
        };
        Some(Pick::closest(self.q.take(i, false), now, head, drive))
    }
}

/// SCAN (the elevator): like LOOK, but the arm runs to the last cylinder in its direction
/// before it reverses.
#[derive(Debug)]
pub struct Scan {
    q: Pending,
    up: bool,
    last_cylinder: u32,
}

impl Scan {
    pub fn new(q: Pending, cylinders: u32) -> Scan {
        assert!(cylinders > 0, "a drive has cylinders");
        Scan {
            q,
            up: true,
            last_cylinder: cylinders - 1,
        }
    }
}

impl Scheduler for Scan {
    pending_queue_methods!();
    fn pick(&mut self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<Pick> {
        if let Some(p) = self.q.take_overdue(now, head, drive) {
            return Some(p);
        }
        if self.q.reqs.is_empty() {
            return None;
        }
        if let Some(i) = nearest_ahead(&self.q, head.cylinder, self.up) {
            return Some(Pick::closest(self.q.take(i, false), now, head, drive));
        }
        let edge = if self.up { self.last_cylinder } else { 0 };
        self.up = !self.up;
        self.q.stats.reversals += 1;
        let i = nearest_ahead(&self.q, edge, self.up).expect("every request lies on the way back");
        Some(Pick {
            via_cylinder: (edge != head.cylinder).then_some(edge),
            ..Pick::closest(self.q.take(i, false), now, head, drive)
        })
    }
}

/// C-LOOK: sweep upwards only; when nothing lies ahead, return to the lowest request.
#[derive(Debug)]
pub struct CLook {
    q: Pending,
}

impl CLook {
    pub fn new(q: Pending) -> CLook {
        CLook { q }
    }
}

impl Scheduler for CLook {
    pending_queue_methods!();
    fn pick(&mut self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<Pick> {
        if let Some(p) = self.q.take_overdue(now, head, drive) {
            return Some(p);
        }
        if self.q.reqs.is_empty() {
            return None;
        }
        let i = match nearest_ahead(&self.q, head.cylinder, true) {
            Some(i) => i,
            None => {
                self.q.stats.reversals += 1;
                self.q
                    .argmin(|r| r.target.chs.cylinder)
                    .expect("queue is not empty")
            }
        };
        Some(Pick::closest(self.q.take(i, false), now, head, drive))
    }
}

/// Shortest access time first: the smallest predicted overhead + seek + rotational wait,
/// using the rotational position of the platter at `now`.
///
/// The choice is the argmin of `(positioning time, seq)` over the queue: a unique key, so
/// the order the requests are looked at in does not matter. A delayed-write queue holds
/// hundreds of requests, so the scan runs over a compact copy of what the prediction needs
/// (cylinder, surface, angle, op and seq of every eligible copy of every request, `stride`
/// entries per slot) and predicts without divisions: the platter angle after the overhead
/// is computed once per op per pick, and each copy adds its seek. The prediction is exactly
/// [`Drive::position_time`] (asserted in debug builds). A long queue (from
/// [`Satf::RING_FROM`] live copies until it is back below [`Satf::RING_UNTIL`]) also keeps
/// its copies in an [`AngleRing`], and the scan reads them in the order the platter brings
/// them round, stopping when no copy left can win.
#[derive(Debug)]
pub struct Satf {
    age_bound: Option<crate::Span>,
    stats: SchedStats,
    /// The queue, dense: taking a request moves the last one into its slot, so a scan
    /// reads no free slots (a queue that once held many holds few again).
    slab: Vec<DiskRequest>,
    /// Slot `s`'s copies are `copies[s * stride..][..stride]`, unused ones [`SatfCopy::NONE`].
    copies: Vec<SatfCopy>,
    stride: usize,
    /// Live copies.
    live: usize,
    ring: Option<AngleRing>,
    /// Each slot's request id, its low 32 bits, apart: a removal by id scans this dense
    /// array (a few cache lines even for a delayed-write queue), no hash table to keep up
    /// per push and take.
    ids: Vec<u32>,
}

/// One copy a queued request may be served from, as the scan reads it.
#[derive(Copy, Clone, Debug)]
struct SatfCopy {
    chs: crate::drive::Chs,
    write: bool,
    angle_ns: u64,
    /// `u64::MAX`: no copy here.
    seq: u64,
}

impl SatfCopy {
    const NONE: SatfCopy = SatfCopy {
        chs: crate::drive::Chs {
            cylinder: 0,
            head: 0,
            sector: 0,
        },
        write: false,
        angle_ns: 0,
        seq: u64::MAX,
    };

    /// Copy `i` as an [`AngleRing`] holds it.
    fn in_ring(&self, i: usize) -> RingCopy {
        RingCopy {
            i: u32::try_from(i).expect("copy index fits u32"),
            chs: self.chs,
            angle_ns: self.angle_ns,
            seq: self.seq,
        }
    }

    fn from_ring(c: &RingCopy, write: bool) -> SatfCopy {
        SatfCopy {
            chs: c.chs,
            write,
            angle_ns: c.angle_ns,
            seq: c.seq,
        }
    }
}

impl Satf {
    pub fn new(q: Pending) -> Satf {
        Satf {
            age_bound: q.age_bound,
            stats: q.stats,
            slab: Vec::with_capacity(64),
            copies: Vec::with_capacity(64),
            stride: 1,
            live: 0,
            ring: None,
            ids: Vec::with_capacity(64),
        }
    }

    /// Takes the request in `slot` out of the queue; the last slot's request moves in.
    fn take_slot(&mut self, slot: u32) -> DiskRequest {
        let (s, last) = (slot as usize, self.slab.len() - 1);
        let at = s * self.stride;
        for i in at..at + self.stride {
            if self.copies[i].seq != u64::MAX {
                self.live -= 1;
                if let Some(ring) = &mut self.ring {
                    ring.remove(i as u32);
                }
            }
        }
        if self.live < Self::RING_UNTIL {
            self.ring = None;
        }
        let r = self.slab.swap_remove(s);
        self.ids.swap_remove(s);
        if s != last {
            let from = last * self.stride;
            for j in 0..self.stride {
                let c = self.copies[from + j];
                self.copies[at + j] = c;
                if let Some(ring) = self.ring.as_mut().filter(|_| c.seq != u64::MAX) {
                    ring.relabel((from + j) as u32, (at + j) as u32);
                }
            }
        }
        self.copies.truncate(last * self.stride);
        r
    }

    /// The slot of request `id`: sixteen ids at a time, compared without an early exit
    /// (vector compares), as a delayed-write queue holds hundreds; a slot whose low bits
    /// match is checked against the whole id.
    fn slot_of(&self, id: u64) -> Option<usize> {
        const W: usize = 16;
        let low = id as u32;
        let is = |i: usize| self.ids[i] == low && self.slab[i].id == id;
        let chunks = self.ids.chunks_exact(W);
        let whole = self.ids.len() - chunks.remainder().len();
        for (c, chunk) in chunks.enumerate() {
            if chunk.iter().fold(false, |hit, &x| hit | (x == low)) {
                if let Some(i) = (c * W..(c + 1) * W).find(|&i| is(i)) {
                    return Some(i);
                }
            }
        }
        (whole..self.ids.len()).find(|&i| is(i))
    }

    /// Widens every slot to `stride` copies.
    fn restride(&mut self, stride: usize) {
        let mut copies = vec![SatfCopy::NONE; self.slab.len() * stride];
        for s in 0..self.slab.len() {
            let (from, to) = (s * self.stride, s * stride);
            copies[to..to + self.stride].copy_from_slice(&self.copies[from..from + self.stride]);
        }
        self.copies = copies;
        self.stride = stride;
        if let Some(p) = self.ring.as_ref().map(AngleRing::period_ns) {
            self.build_ring(p);
        }
    }

    /// A queue of this many live copies keeps them in an [`AngleRing`] ...
    const RING_FROM: usize = 192;
    /// ... until it holds fewer than this many.
    const RING_UNTIL: usize = 96;

    /// Puts every live copy in a new ring for a drive turning once in `period_ns`.
    fn build_ring(&mut self, period_ns: u64) {
        let mut ring = AngleRing::new(period_ns);
        for (i, c) in self.copies.iter().enumerate() {
            if c.seq != u64::MAX {
                ring.insert(c.in_ring(i), op_of(c));
            }
        }
        self.ring = Some(ring);
    }

    /// The slot minimising `(positioning time, seq)`, and for a scan the entry of its
    /// `replicas` to serve.
    fn argmin(&self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<(u32, Option<usize>)> {
        let p = drive.period().0;
        // Per op: the overhead paid before the seek, and the platter angle (ns into the
        // revolution, phase included) once it is paid; `Drive::rotational_wait` sees the
        // platter at `(now + before + seek + phase) mod p`.
        let prep = |op: Op| {
            let before = drive.overhead(op) + drive.command_overhead(op);
            let a = ((now.0 % p) + (before.0 % p) + (head.phase_ns % p)) % p;
            (before, a)
        };
        let (read, write) = (prep(Op::Read), prep(Op::Write));
        // A copy's positioning time, its seek and its op.
        let time = |c: &SatfCopy| -> (crate::Span, crate::Span, Op) {
            let (op, (before, a0)) = if c.write {
                (Op::Write, write)
            } else {
                (Op::Read, read)
            };
            let seek = drive.seek_span(head.cylinder, head.head, c.chs, op);
            let mut a = a0 + seek.0;
            if a >= p {
                a -= p;
                if a >= p {
                    a %= p;
                }
            }
            let wait = if c.angle_ns < p {
                let w = c.angle_ns + p - a;
                if w >= p {
                    w - p
                } else {
                    w
                }
            } else {
                (c.angle_ns + p - a) % p
            };
            let t = before + seek + crate::Span(wait);
            debug_assert_eq!(
                t,
                drive.position_time(
                    now,
                    head,
                    op,
                    &crate::drive::Target {
                        chs: c.chs,
                        angle_ns: c.angle_ns
                    }
                ),
                "the scan predicts as the drive does"
            );
            (t, seek, op)
        };
        // A walk keeps only copies reached in time, whose time is `before + r`: the full
        // prediction (and its rotational wait) is needed for no other.
        let price = |c: &SatfCopy| -> Seen {
            let (op, (before, a0)) = if c.write {
                (Op::Write, write)
            } else {
                (Op::Read, read)
            };
            let seek = drive.seek_span(head.cylinder, head.head, c.chs, op);
            // The angle still to turn once the overhead is paid; a copy reached within it
            // costs exactly `before + r`.
            let angle = if c.angle_ns < p {
                c.angle_ns
            } else {
                c.angle_ns % p
            };
            let r = if angle >= a0 {
                angle - a0
            } else {
                angle + p - a0
            };
            let in_time = seek.0 <= r;
            debug_assert!(!in_time || time(c).0 == before + crate::Span(r));
            Seen {
                r,
                key: (before + crate::Span(r), c.seq),
                in_time,
            }
        };
        let mut best: Option<((crate::Span, u64), usize)> = None;
        let mut consider = |k: (crate::Span, u64), i: usize| {
            if best.is_none_or(|(b, _)| k < b) {
                best = Some((k, i));
            }
        };
        match &self.ring {
            Some(ring) => {
                for (op, (_, a0)) in [(Op::Read, read), (Op::Write, write)] {
                    if !ring.has(op) {
                        continue;
                    }
                    let write = op == Op::Write;
                    match ring.walk(op, a0, |c| price(&SatfCopy::from_ring(c, write))) {
                        Some((k, i)) => consider(k, i as usize),
                        // No copy of this op is reached in time: weigh them all.
                        None => {
                            for (i, c) in self.copies.iter().enumerate() {
                                if c.seq != u64::MAX && op_of(c) == op {
                                    consider((time(c).0, c.seq), i);
                                }
                            }
                        }
                    }
                }
            }
            None => {
                for (i, c) in self.copies.iter().enumerate() {
                    if c.seq != u64::MAX {
                        consider((time(c).0, c.seq), i);
                    }
                }
            }
        }
        let slot = |i: usize| u32::try_from(i / self.stride).expect("slot fits u32");
        // A scan in copy order keeps, of the winner's copies, the first quickest: the one
        // `Replicas::best` names. A ring walk meets them in angle order, so it does not say.
        let scanned = self.ring.is_none();
        best.map(|(_, i)| (slot(i), scanned.then_some(i % self.stride)))
    }
}

fn op_of(c: &SatfCopy) -> Op {
    if c.write {
        Op::Write
    } else {
        Op::Read
    }
}

impl Scheduler for Satf {
    fn push(&mut self, r: DiskRequest) {
        if r.replicas.len() > self.stride {
            self.restride(r.replicas.len());
        }
        let slot = u32::try_from(self.slab.len()).expect("queue fits u32");
        self.copies
            .extend(std::iter::repeat_n(SatfCopy::NONE, self.stride));
        debug_assert!(
            self.slot_of(r.id).is_none(),
            "request {} queued twice",
            r.id
        );
        self.ids.push(r.id as u32);
        let at = slot as usize * self.stride;
        for i in 0..r.replicas.len() {
            let t = r.replicas.get(i).1;
            self.copies[at + i] = SatfCopy {
                chs: t.chs,
                write: r.op == Op::Write,
                angle_ns: t.angle_ns,
                seq: r.seq,
            };
            self.live += 1;
            if let Some(ring) = &mut self.ring {
                ring.insert(self.copies[at + i].in_ring(at + i), r.op);
            }
        }
        self.slab.push(r);
    }
    fn pick(&mut self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<Pick> {
        if self.slab.is_empty() {
            return None;
        }
        // The age bound first: the oldest request, if it has waited too long.
        if let Some(bound) = self.age_bound {
            let (slot, oldest) = self
                .slab
                .iter()
                .enumerate()
                .min_by_key(|(_, r)| r.seq)
                .expect("the queue is not empty");
            if now.saturating_since(oldest.queued_at) > bound {
                self.stats.picks += 1;
                self.stats.aged_picks += 1;
                let r = self.take_slot(slot as u32);
                return Some(Pick::closest(r, now, head, drive));
            }
        }
        if self.ring.is_none() && self.live >= Self::RING_FROM {
            self.build_ring(drive.period().0);
        }
        // RSATF: a request costs its quickest replica.
        let (slot, replica) = self.argmin(now, head, drive)?;
        self.stats.picks += 1;
        let r = self.take_slot(slot);
        Some(match replica {
            Some(replica) => {
                debug_assert_eq!(
                    Pick::closest(r.clone(), now, head, drive).replica,
                    replica,
                    "the scan's replica is the quickest"
                );
                Pick {
                    request: r,
                    replica,
                    via_cylinder: None,
                }
            }
            None => Pick::closest(r, now, head, drive),
        })
    }
    fn remove(&mut self, id: u64) -> Option<DiskRequest> {
        let slot = self.slot_of(id)? as u32;
        Some(self.take_slot(slot))
    }
    fn len(&self) -> usize {
        self.slab.len()
    }
    fn stats(&self) -> SchedStats {
        self.stats
    }
}
