//! The I/O channel and the read cache's write port (Varma & Jacobson, III.B): "The cache
//! ports and the I/O bus have a fixed data transfer rate of 20 Mbytes/second and requests
//! are queued in FIFO order."
//!
//! - **The I/O channel** carries every host request's data between host and controller: a
//!   write's data crosses it from its arrival (in FIFO order), and the write is answered no
//!   earlier than the crossing's end; a read's data crosses it once every block is in the
//!   caches ("on obtaining access to the I/O channel, data is transferred to the host system
//!   as a single block transfer"), and the read is answered at its end. A write is absorbed
//!   into the cache, or its classic update planned, at its arrival, not at the crossing's
//!   end: early by at most one transfer (0.4 ms for 8 KiB at 20 MB/s), against accesses of
//!   tens of ms.
//! - **The read cache's write port** carries every block read from disk (with caches): "the
//!   disk is marked busy until the data-transfer is completed", so a disk read's transfer
//!   through the port, queued FIFO from the end of its media access, extends the disk's
//!   busy time (charged to the read's cause). Writes overlap their transfer with the seek,
//!   as in the paper, and take no port time.
//!
//! Answers delayed by the channel wait in a heap and are delivered on a timer
//! ([`crate::engine::Action::Wake`]).

use super::Raid5Array;
use crate::engine::{Action, Completion};
use crate::{Nanos, Op};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// A resource served first come, first served at `bytes_per_s`.
#[derive(Clone, Debug)]
struct Fifo {
    bytes_per_s: f64,
    free_at: Nanos,
}

impl Fifo {
    fn new(bytes_per_s: f64) -> Fifo {
        Fifo {
            bytes_per_s,
            free_at: Nanos::ZERO,
        }
    }

    /// Reserves a transfer of `bytes` asked for at `at`: (its start, its end).
    fn reserve(&mut self, at: Nanos, bytes: u64) -> (Nanos, Nanos) {
        let start = at.max(self.free_at);
        let ns = (bytes as f64 / self.bytes_per_s * 1e9).round() as u64;
        self.free_at = Nanos(start.0 + ns);
        (start, self.free_at)
    }
}

/// The channel, the port, and the answers waiting for the channel.
#[derive(Default)]
pub(super) struct Channel {
    bus: Option<Fifo>,
    port: Option<Fifo>,
    /// Writes' crossings: request id → end.
    write_in: HashMap<u64, Nanos>,
    /// Answers due later: (due, order) → the answer.
    due: BinaryHeap<Reverse<(Nanos, u64)>>,
    waiting: HashMap<u64, (Completion, bool)>,
    seq: u64,
}

impl Channel {
    /// A channel and a port at these rates (bytes/s; `None`: not modelled).
    pub(super) fn new(bus: Option<f64>, port: Option<f64>) -> Channel {
        Channel {
            bus: bus.map(Fifo::new),
            port: port.map(Fifo::new),
            ..Channel::default()
        }
    }

    /// Answers held back by the channel.
    pub(super) fn held(&self) -> usize {
        self.waiting.len()
    }
}

impl Raid5Array {
    /// A host write of `bytes` arrived at `now`: its data crosses the channel.
    pub(super) fn write_arrives(&mut self, now: Nanos, id: u64, bytes: u64) {
        if let Some(bus) = self.channel.bus.as_mut() {
            let (_, end) = bus.reserve(now, bytes);
            self.channel.write_in.insert(id, end);
        }
    }

    /// A disk read's media access ended at `now` on a controller with caches: its data
    /// crosses the read cache's write port; returns when the disk is free again.
    pub(super) fn port_transfer(&mut self, now: Nanos, bytes: u64) -> Nanos {
        match (self.channel.port.as_mut(), self.cache.is_some()) {
            (Some(port), true) => port.reserve(now, bytes).1,
            _ => now,
        }
    }

    /// Host request `c` is done at `now` in the array (`disk_read`: a read the disks
    /// served): answered now, or when the channel has carried its data.
    pub(super) fn deliver(&mut self, now: Nanos, mut c: Completion, disk_read: bool) {
        let sector = u64::from(self.drive.geometry().sector_bytes());
        let done = match (c.op, self.channel.bus.as_mut()) {
            (_, None) => now,
            (Op::Read, Some(bus)) => {
                let (start, end) = bus.reserve(now, u64::from(c.sectors) * sector);
                c.breakdown.queue += start.since(now);
                c.breakdown.transfer += end.since(start);
                end
            }
            (Op::Write, Some(_)) => {
                let end = self.channel.write_in.remove(&c.id).unwrap_or(now);
                if end > now {
                    c.breakdown.transfer += end.since(now);
                }
                end.max(now)
            }
        };
        c.done = done;
        if done == now {
            self.answer(c, disk_read);
            return;
        }
        let ch = &mut self.channel;
        ch.seq += 1;
        ch.due.push(Reverse((done, ch.seq)));
        ch.waiting.insert(ch.seq, (c, disk_read));
        self.out.push(Action::Wake { at: done });
    }

    /// Answers whose channel transfer has ended by `now`.
    pub(super) fn deliver_due(&mut self, now: Nanos) {
        while let Some(&Reverse((t, seq))) = self.channel.due.peek() {
            if t > now {
                break;
            }
            self.channel.due.pop();
            let (c, disk_read) = self.channel.waiting.remove(&seq).expect("a held answer");
            self.answer(c, disk_read);
        }
    }

    fn answer(&mut self, c: Completion, disk_read: bool) {
        if let (Some(cache), Op::Read, true) = (self.cache.as_mut(), c.op, disk_read) {
            cache.counters.disk_reads += 1;
            cache.counters.disk_read_ns += u128::from(c.latency().0);
        }
        self.out.push(Action::Complete(c));
    }
}
