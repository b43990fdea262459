//! Shortest access time first, with a foreground and a delayed class in one queue.

use super::angle_ring::{AngleRing, RingCopy, Seen};
use super::{DiskQueue, DiskRequest, Pending, Pick, SchedStats, Scheduler};
use crate::drive::{Drive, HeadState};
use crate::{Nanos, Op};

/// Shortest access time first: the smallest predicted overhead + seek + rotational wait,
/// using the rotational position of the platter at `now`.
///
/// The choice is the argmin of `(positioning time, seq)` over the queue: a unique key, so
/// the order the requests are looked at in does not matter. A delayed-write queue holds
/// hundreds of requests, so the scan runs over a compact copy of what the prediction needs
/// (cylinder, surface, angle, op and seq of every eligible copy of every request, `stride`
/// entries per slot) and predicts without divisions: the platter angle after the overhead
/// is computed once per op per pick, and each copy adds its seek. The prediction is exactly
/// [`Drive::position_time`] (asserted in debug builds). A long class (from
/// [`Satf::RING_FROM`] live copies until it is back below [`Satf::RING_UNTIL`]) also keeps
/// its copies in an [`AngleRing`], and the scan reads them in the order the platter brings
/// them round, stopping when no copy left can win.
///
/// Requests are queued in one of two classes ([`DiskQueue`]): the foreground, and delayed
/// writes, served only when the foreground is empty. A request keeps its slot until it is
/// taken, so promoting a delayed write to the foreground moves nothing but its slot number
/// from one class's list to the other's.
#[derive(Debug)]
pub struct Satf {
    age_bound: Option<crate::Span>,
    stats: SchedStats,
    /// Queued requests by slot (`None`: a free slot, in `free`).
    slab: Vec<Option<DiskRequest>>,
    free: Vec<u32>,
    /// Slot `s`'s copies are `copies[s * stride..][..stride]`, unused ones [`SatfCopy::NONE`].
    copies: Vec<SatfCopy>,
    stride: usize,
    /// Per slot: its class and its position in that class's list.
    place: Vec<(Class, u32)>,
    /// The foreground and the delayed class.
    classes: [Lane; 2],
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Class {
    Foreground = 0,
    Delayed = 1,
}

/// The slots of one class, in no order, with the ring of its copies when it is long.
#[derive(Debug, Default)]
struct Lane {
    slots: Vec<u32>,
    /// Each listed slot's request id, its low 32 bits, apart: a search by id scans this
    /// dense array (a few cache lines even for a delayed-write queue), no hash table to
    /// keep up per push and take.
    ids: Vec<u32>,
    /// Live copies of its requests.
    live: usize,
    ring: Option<AngleRing>,
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

    fn is_live(&self) -> bool {
        self.seq != u64::MAX
    }

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

    fn op(&self) -> Op {
        if self.write {
            Op::Write
        } else {
            Op::Read
        }
    }
}

impl Satf {
    pub fn new(q: Pending) -> Satf {
        Satf {
            age_bound: q.age_bound,
            stats: q.stats,
            slab: Vec::with_capacity(64),
            free: Vec::new(),
            copies: Vec::with_capacity(64),
            stride: 1,
            place: Vec::with_capacity(64),
            classes: [Lane::default(), Lane::default()],
        }
    }

    /// A class of this many live copies keeps them in an [`AngleRing`] ...
    const RING_FROM: usize = 192;
    /// ... until it holds fewer than this many.
    const RING_UNTIL: usize = 96;

    fn lane(&self, class: Class) -> &Lane {
        &self.classes[class as usize]
    }

    /// Slot `s`'s copy range in `copies`.
    fn copy_range(&self, s: u32) -> std::ops::Range<usize> {
        let at = s as usize * self.stride;
        at..at + self.stride
    }

    /// Queues `r` in `class`; returns its slot.
    fn enqueue(&mut self, r: DiskRequest, class: Class) -> u32 {
        if r.replicas.len() > self.stride {
            self.restride(r.replicas.len());
        }
        debug_assert!(
            self.slot_of(r.id, Class::Foreground).is_none()
                && self.slot_of(r.id, Class::Delayed).is_none(),
            "request {} queued twice",
            r.id
        );
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                let s = u32::try_from(self.slab.len()).expect("queue fits u32");
                self.slab.push(None);
                self.place.push((class, 0));
                self.copies
                    .extend(std::iter::repeat_n(SatfCopy::NONE, self.stride));
                s
            }
        };
        let range = self.copy_range(slot);
        for (j, c) in self.copies[range].iter_mut().enumerate() {
            *c = match r.replicas.len() > j {
                true => {
                    let t = r.replicas.get(j).1;
                    SatfCopy {
                        chs: t.chs,
                        write: r.op == Op::Write,
                        angle_ns: t.angle_ns,
                        seq: r.seq,
                    }
                }
                // A reused slot: what its last request left.
                false => SatfCopy::NONE,
            };
        }
        let id = r.id;
        self.slab[slot as usize] = Some(r);
        self.join(slot, class, id);
        slot
    }

    /// Adds slot `s` (its copies in place, its request's id `id`) to `class`.
    fn join(&mut self, s: u32, class: Class, id: u64) {
        let range = self.copy_range(s);
        let lane = &mut self.classes[class as usize];
        self.place[s as usize] = (class, u32::try_from(lane.slots.len()).expect("fits u32"));
        lane.slots.push(s);
        lane.ids.push(id as u32);
        for i in range {
            let c = &self.copies[i];
            if c.is_live() {
                lane.live += 1;
                if let Some(ring) = &mut lane.ring {
                    ring.insert(c.in_ring(i), c.op());
                }
            }
        }
    }

    /// Takes slot `s` (its copies left in place) out of its class.
    fn leave(&mut self, s: u32) {
        let range = self.copy_range(s);
        let (class, pos) = self.place[s as usize];
        let lane = &mut self.classes[class as usize];
        for i in range {
            if self.copies[i].is_live() {
                lane.live -= 1;
                if let Some(ring) = &mut lane.ring {
                    ring.remove(i as u32);
                }
            }
        }
        if lane.live < Self::RING_UNTIL {
            lane.ring = None;
        }
        lane.slots.swap_remove(pos as usize);
        lane.ids.swap_remove(pos as usize);
        if let Some(&moved) = lane.slots.get(pos as usize) {
            self.place[moved as usize].1 = pos;
        }
    }

    /// Takes the request in `slot` out of the queue and frees the slot.
    fn take_slot(&mut self, slot: u32) -> DiskRequest {
        self.leave(slot);
        self.free.push(slot);
        self.slab[slot as usize]
            .take()
            .expect("a queued slot holds a request")
    }

    /// The slot of request `id` in `class`: sixteen ids at a time, compared without an
    /// early exit (vector compares), as a delayed-write queue holds hundreds; a slot whose
    /// low bits match is checked against the whole id.
    fn slot_of(&self, id: u64, class: Class) -> Option<u32> {
        const W: usize = 16;
        let lane = self.lane(class);
        let low = id as u32;
        let is = |i: usize| {
            lane.ids[i] == low
                && self.slab[lane.slots[i] as usize]
                    .as_ref()
                    .is_some_and(|r| r.id == id)
        };
        let chunks = lane.ids.chunks_exact(W);
        let whole = lane.ids.len() - chunks.remainder().len();
        let found = chunks
            .enumerate()
            .filter(|(_, chunk)| chunk.iter().fold(false, |hit, &x| hit | (x == low)))
            .find_map(|(c, _)| (c * W..(c + 1) * W).find(|&i| is(i)))
            .or_else(|| (whole..lane.ids.len()).find(|&i| is(i)))?;
        Some(lane.slots[found])
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
        for class in [Class::Foreground, Class::Delayed] {
            if let Some(p) = self.lane(class).ring.as_ref().map(AngleRing::period_ns) {
                self.build_ring(class, p);
            }
        }
    }

    /// Puts every live copy of `class` in a new ring for a drive turning once in `period_ns`.
    fn build_ring(&mut self, class: Class, period_ns: u64) {
        let mut ring = AngleRing::new(period_ns);
        for &s in &self.lane(class).slots {
            for i in self.copy_range(s) {
                let c = &self.copies[i];
                if c.is_live() {
                    ring.insert(c.in_ring(i), c.op());
                }
            }
        }
        self.classes[class as usize].ring = Some(ring);
    }

    /// The slot of `class` minimising `(positioning time, seq)`, and for a scan the entry
    /// of its `replicas` to serve.
    fn argmin(
        &self,
        class: Class,
        now: Nanos,
        head: &HeadState,
        drive: &Drive,
    ) -> Option<(u32, Option<usize>)> {
        let lane = self.lane(class);
        let p = drive.period().0;
        // Per op: the overhead paid before the seek, and the platter angle (ns into the
        // revolution, phase included) once it is paid; `Drive::rotational_wait` sees the
        // platter at `(now + before + seek + phase) mod p`.
        // One division per pick: the phase and the overheads are within a revolution.
        let within = |x: u64| if x < p { x } else { x % p };
        let turned = match within(now.0) + within(head.phase_ns) {
            t if t >= p => t - p,
            t => t,
        };
        let prep = |op: Op| {
            let before = drive.overhead(op) + drive.command_overhead(op);
            let a = match turned + within(before.0) {
                a if a >= p => a - p,
                a => a,
            };
            debug_assert_eq!(a, ((now.0 % p) + (before.0 % p) + (head.phase_ns % p)) % p);
            (before, a)
        };
        let (read, write) = (prep(Op::Read), prep(Op::Write));
        // A copy's positioning time.
        let time = |c: &SatfCopy| -> crate::Span {
            let (before, a0) = if c.write { write } else { read };
            let seek = drive.seek_span(head.cylinder, head.head, c.chs, c.op());
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
                    c.op(),
                    &crate::drive::Target {
                        chs: c.chs,
                        angle_ns: c.angle_ns
                    }
                ),
                "the scan predicts as the drive does"
            );
            t
        };
        // A walk keeps only copies reached in time, whose time is `before + r`: the full
        // prediction (and its rotational wait) is needed for no other.
        let price = |c: &SatfCopy| -> Seen {
            let (before, a0) = if c.write { write } else { read };
            let seek = drive.seek_span(head.cylinder, head.head, c.chs, c.op());
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
            debug_assert!(!in_time || time(c) == before + crate::Span(r));
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
        // Every live copy of the class (of `op`, if given), with its index.
        let each = |op: Option<Op>, f: &mut dyn FnMut(&SatfCopy, usize)| {
            for &s in &lane.slots {
                for i in self.copy_range(s) {
                    let c = &self.copies[i];
                    if c.is_live() && op.is_none_or(|op| c.op() == op) {
                        f(c, i);
                    }
                }
            }
        };
        match &lane.ring {
            Some(ring) => {
                for (op, (_, a0)) in [(Op::Read, read), (Op::Write, write)] {
                    if !ring.has(op) {
                        continue;
                    }
                    let write = op == Op::Write;
                    match ring.walk(op, a0, |c| price(&SatfCopy::from_ring(c, write))) {
                        Some((k, i)) => consider(k, i as usize),
                        // No copy of this op is reached in time: weigh them all.
                        None => each(Some(op), &mut |c, i| consider((time(c), c.seq), i)),
                    }
                }
            }
            None => each(None, &mut |c, i| consider((time(c), c.seq), i)),
        }
        let slot = |i: usize| u32::try_from(i / self.stride).expect("slot fits u32");
        // A scan in copy order keeps, of the winner's copies, the first quickest: the one
        // `Replicas::best` names. A ring walk meets them in angle order, so it does not say.
        let scanned = lane.ring.is_none();
        best.map(|(_, i)| (slot(i), scanned.then_some(i % self.stride)))
    }

    /// The foreground request waiting longest, if it has waited past the age bound.
    fn overdue(&self, now: Nanos) -> Option<u32> {
        let bound = self.age_bound?;
        // A request's first copy is always live and carries its seq.
        let &oldest = self
            .lane(Class::Foreground)
            .slots
            .iter()
            .min_by_key(|&&s| self.copies[s as usize * self.stride].seq)?;
        let r = self.slab[oldest as usize].as_ref().expect("queued");
        (now.saturating_since(r.queued_at) > bound).then_some(oldest)
    }

    /// The best request of `class` (non-empty), taken.
    fn pick_from(&mut self, class: Class, now: Nanos, head: &HeadState, drive: &Drive) -> Pick {
        if self.lane(class).ring.is_none() && self.lane(class).live >= Self::RING_FROM {
            self.build_ring(class, drive.period().0);
        }
        // RSATF: a request costs its quickest replica.
        let (slot, replica) = self
            .argmin(class, now, head, drive)
            .expect("a class with slots has copies");
        let r = self.take_slot(slot);
        match replica {
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
        }
    }
}

impl Scheduler for Satf {
    fn push(&mut self, r: DiskRequest) {
        self.enqueue(r, Class::Foreground);
    }
    fn pick(&mut self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<Pick> {
        if self.lane(Class::Foreground).slots.is_empty() {
            // Delayed writes only when nothing else waits (not counted: background work).
            if self.lane(Class::Delayed).slots.is_empty() {
                return None;
            }
            return Some(self.pick_from(Class::Delayed, now, head, drive));
        }
        // The age bound first: the oldest request, if it has waited too long.
        if let Some(slot) = self.overdue(now) {
            self.stats.picks += 1;
            self.stats.aged_picks += 1;
            let r = self.take_slot(slot);
            return Some(Pick::closest(r, now, head, drive));
        }
        self.stats.picks += 1;
        Some(self.pick_from(Class::Foreground, now, head, drive))
    }
    fn remove(&mut self, id: u64) -> Option<DiskRequest> {
        let slot = self
            .slot_of(id, Class::Foreground)
            .or_else(|| self.slot_of(id, Class::Delayed))?;
        Some(self.take_slot(slot))
    }
    fn len(&self) -> usize {
        self.lane(Class::Foreground).slots.len()
    }
    fn stats(&self) -> SchedStats {
        self.stats
    }
}

impl DiskQueue for Satf {
    fn push_delayed(&mut self, r: DiskRequest) {
        self.enqueue(r, Class::Delayed);
    }
    fn promote(&mut self, id: u64) -> bool {
        self.promote_hinted(id, u32::MAX)
    }
    /// The hint is the request's slot, which it keeps while queued.
    fn push_delayed_hinted(&mut self, r: DiskRequest) -> u32 {
        self.enqueue(r, Class::Delayed)
    }
    fn promote_hinted(&mut self, id: u64, hint: u32) -> bool {
        let s = hint as usize;
        let hit = s < self.slab.len()
            && self.place[s].0 == Class::Delayed
            && self.slab[s].as_ref().is_some_and(|r| r.id == id);
        let Some(s) = (if hit {
            Some(hint)
        } else {
            self.slot_of(id, Class::Delayed)
        }) else {
            return false;
        };
        self.leave(s);
        self.join(s, Class::Foreground, id);
        true
    }
    fn delayed_len(&self) -> usize {
        self.lane(Class::Delayed).slots.len()
    }
}
