//! Host requests in flight: a controller splits each into parts (disk operations, cache
//! hits) and the host is answered when the last part is done, with the time breakdown of
//! the part that finished last (its critical path).

use super::slab::Slab;
use super::{Breakdown, Completion, HostRequest};
use crate::Nanos;

/// An accepted host request and what its controller keeps with it (`X`).
#[derive(Clone, Debug)]
pub struct HostSlot<X> {
    pub req: HostRequest,
    /// Parts not yet done.
    pub parts_left: u32,
    /// The breakdown of the part that finished last so far.
    pub breakdown: Breakdown,
    pub last_done: Nanos,
    pub extra: X,
}

/// The host requests accepted and not yet answered.
#[derive(Clone, Debug)]
pub struct HostTable<X> {
    slots: Slab<HostSlot<X>>,
}

impl<X> Default for HostTable<X> {
    fn default() -> HostTable<X> {
        HostTable {
            slots: Slab::with_capacity(1024),
        }
    }
}

impl<X> HostTable<X> {
    /// Accepts `req` at `now` with no parts yet; returns its slot.
    pub fn admit(&mut self, req: HostRequest, now: Nanos, extra: X) -> usize {
        self.slots.insert(HostSlot {
            req,
            parts_left: 0,
            breakdown: Breakdown::default(),
            last_done: now,
            extra,
        })
    }

    pub fn get(&self, slot: usize) -> &HostSlot<X> {
        &self.slots[slot]
    }

    pub fn get_mut(&mut self, slot: usize) -> &mut HostSlot<X> {
        &mut self.slots[slot]
    }

    /// One more part to wait for.
    pub fn add_part(&mut self, slot: usize) {
        self.slots[slot].parts_left += 1;
    }

    /// One part fewer (withdrawn before it ran).
    pub fn drop_part(&mut self, slot: usize) {
        self.slots[slot].parts_left -= 1;
    }

    /// A part of `slot` finished at `now`. If it finished last so far, `breakdown` gives
    /// the request's breakdown. Returns the completion and the slot when it was the last
    /// part.
    pub fn part_done(
        &mut self,
        slot: usize,
        now: Nanos,
        breakdown: impl FnOnce(&HostSlot<X>) -> Breakdown,
    ) -> Option<(Completion, HostSlot<X>)> {
        let s = &mut self.slots[slot];
        if now >= s.last_done {
            s.breakdown = breakdown(s);
            s.last_done = now;
        }
        s.parts_left -= 1;
        if s.parts_left > 0 {
            return None;
        }
        let s = self.slots.remove(slot);
        let c = Completion {
            id: s.req.id,
            op: s.req.op,
            sectors: s.req.sectors,
            arrival: s.req.arrival,
            done: now,
            breakdown: s.breakdown,
        };
        Some((c, s))
    }

    /// Requests accepted and not yet answered.
    pub fn outstanding(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Op, Span};

    #[test]
    fn the_host_is_answered_after_the_last_part_with_its_breakdown() {
        let mut t = HostTable::default();
        let req = HostRequest {
            id: 7,
            op: Op::Read,
            lba: 0,
            sectors: 8,
            arrival: Nanos(10),
        };
        let s = t.admit(req, Nanos(10), ());
        t.add_part(s);
        t.add_part(s);
        let seek = |ms| {
            move |_: &HostSlot<()>| Breakdown {
                seek: Span(ms),
                ..Breakdown::default()
            }
        };
        assert!(t.part_done(s, Nanos(40), seek(1)).is_none());
        assert_eq!(t.outstanding(), 1);
        let (c, _) = t.part_done(s, Nanos(50), seek(2)).expect("answered");
        assert_eq!((c.done, c.breakdown.seek), (Nanos(50), Span(2)));
        assert_eq!(t.outstanding(), 0);
    }
}
