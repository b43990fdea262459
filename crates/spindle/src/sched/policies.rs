//! Five of the six policies, each a thin rule over [`Pending`] (SATF has its own module);
//! see the module docs of `sched`.

use super::{DiskRequest, Pending, Pick, SchedStats, Scheduler};
use crate::drive::{Drive, HeadState};
use crate::Nanos;
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
