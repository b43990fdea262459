//! A controller's output side: the actions waiting to be polled, and the idle disks to
//! dispatch once they have been. Idle disks choose their next operation lazily — only
//! when every action so far has been polled — so a host that answers a completion with a
//! new request at the same instant has it considered in the next scheduling decision.

use super::Action;
use crate::Nanos;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct Outbox {
    actions: VecDeque<Action>,
    to_dispatch: Vec<usize>,
    now: Nanos,
}

impl Outbox {
    pub fn new(disks: usize) -> Outbox {
        Outbox {
            actions: VecDeque::with_capacity(64),
            to_dispatch: Vec::with_capacity(disks),
            now: Nanos::ZERO,
        }
    }

    /// The instant of the last input.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// An input arrives at `now`: time never goes back.
    pub fn advance(&mut self, now: Nanos) {
        assert!(
            now >= self.now,
            "time went backwards: {now:?} < {:?}",
            self.now
        );
        self.now = now;
    }

    pub fn push(&mut self, a: Action) {
        self.actions.push_back(a);
    }

    /// `disk` is idle and may have work: it chooses once the actions have been polled.
    pub fn mark_for_dispatch(&mut self, disk: usize) {
        if !self.to_dispatch.contains(&disk) {
            self.to_dispatch.push(disk);
        }
    }

    /// The disks to dispatch now (none while actions wait to be polled). Hand the list
    /// back with [`Outbox::dispatched`].
    pub fn due(&mut self) -> Option<Vec<usize>> {
        (self.actions.is_empty() && !self.to_dispatch.is_empty())
            .then(|| std::mem::take(&mut self.to_dispatch))
    }

    /// Returns the list [`Outbox::due`] handed out, for reuse.
    pub fn dispatched(&mut self, mut list: Vec<usize>) {
        if self.to_dispatch.is_empty() {
            list.clear();
            self.to_dispatch = list;
        }
    }

    pub fn pop(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }
}
