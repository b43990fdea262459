//! DiskSim's media sector loop (`disk_buffer_sector_done`, `disk_buffer_block_available`)
//! where the media waits for the interface: a write whose sectors are written only once
//! buffered, and transfers larger than their buffer segment, crossing the interface in
//! pieces with disconnects and reconnections at the water marks. The controller
//! ([`super::controller`]) decides when these apply; this module times them.

use super::mech::{Drive, HeadState, Transfer};
use crate::{Nanos, Op, Span};

/// The first sector of `left` (≥ 1) from `lba` on, and how many of them lie on its track
/// (runs split by slips stay together).
pub(super) fn track_extent(drive: &Drive, lba: u64, left: u64) -> (super::Target, u64) {
    let target = drive.locate(lba);
    let track = (target.chs.cylinder, target.chs.head);
    let mut len = 0;
    while len < left {
        let chs = drive.locate(lba + len).chs;
        if (chs.cylinder, chs.head) != track {
            break;
        }
        len += u64::from(drive.geometry().run_on_track(lba + len)).min(left - len);
    }
    (target, len)
}

/// When the head, done with track `from` at `end`, is over `target` for `op`: the head
/// switch or seek, then the rotational wait.
fn landing(
    drive: &Drive,
    head: &HeadState,
    (cyl, hd): (u32, u32),
    end: Nanos,
    target: &super::Target,
    op: Op,
) -> Nanos {
    let at = end + drive.seek_span(cyl, hd, target.chs, op);
    at + drive.rotational_wait(at, head.phase_ns, target.angle_ns)
}

/// The interface side of a segmented transfer, as the media's sector loop drives it.
trait SegmentSim {
    /// Time reaches `t`; `sector_event` after the media's own step at `t`.
    fn event(&mut self, t: Nanos, sector_event: bool);
    /// Whether sector `j` can be transferred to or from the media at `due`.
    fn may_pass(&self, j: u64, due: Nanos) -> bool;
    /// Sector `j` is written (or read into the buffer).
    fn passed(&mut self, j: u64);
}

/// DiskSim's sector loop for a segmented transfer (`disk_buffer_sector_done`): track by
/// track, a sector event at landing and at each sector; a sector that cannot pass when it
/// comes under the head is passed, and the loop comes back to it after a turn through the
/// track's LBNs, a sector event each. Returns when the media is done, and how far the
/// loop's turns on the last track fell short of whole revolutions (a track with spare
/// sectors has fewer LBNs than sectors: the loop then runs ahead of the platter).
fn segment_walk(
    drive: &Drive,
    head: &HeadState,
    x: Transfer,
    times: &[(Nanos, Nanos)],
    op: Op,
    sim: &mut impl SegmentSim,
) -> (Nanos, Span) {
    let n = times.len() as u64;
    let (mut k, mut end) = (0u64, Nanos::ZERO);
    let mut lead = Span::ZERO;
    let mut prev: Option<(u32, u32)> = None;
    while k < n {
        let lba = x.lba + k;
        let (target, len) = track_extent(drive, lba, n - k);
        let track = (target.chs.cylinder, target.chs.head);
        let first = times[k as usize].0;
        let landed = match prev {
            Some(from) => landing(drive, head, from, end, &target, op),
            None => first,
        };
        let (lbns, ps) = drive.media_step(lba);
        let step = |i: u64| Span(i * ps / 1000);
        sim.event(landed, false);
        sim.event(landed, true);
        let mut shift = Span::ZERO;
        for j in k..k + len {
            let mut due = landed + times[j as usize].0.since(first) + shift;
            // (A sector waits only for what the interface will deliver or take; the bound
            // is a guard.)
            let mut turns = 0;
            while !sim.may_pass(j, due) && turns < 1_000 {
                turns += 1;
                for i in 1..=lbns {
                    sim.event(due + step(i), false);
                    sim.event(due + step(i), true);
                }
                shift += step(lbns);
                due += step(lbns);
            }
            let done = due + times[j as usize].1.since(times[j as usize].0);
            sim.event(done, false);
            sim.passed(j);
            sim.event(done, true);
            end = done;
        }
        let period = drive.period().0;
        lead = Span((period - shift.0 % period) % period);
        prev = Some(track);
        k += len;
    }
    (end, lead)
}

/// When a write's media transfer ends if sector k can be written only once it is in the
/// buffer (`ready(k)`), timed as DiskSim's sector loop (`disk_buffer_sector_done`) does: on
/// each track the head lands on the first sector wanted there; a sector not yet buffered
/// when it comes under the head is passed, and with it the ones after it, and the loop
/// comes back to it after a turn through the track's LBNs ([`Drive::media_cycle`]); the
/// next track is reached by a head switch or seek and the rotational wait from where the
/// loop left off. `times` are the sectors' times without waiting for data (when each comes
/// under the head and has passed, in LBA order).
pub(super) fn write_media_end(
    drive: &Drive,
    head: &HeadState,
    x: Transfer,
    times: &[(Nanos, Nanos)],
    ready: impl Fn(u64) -> Nanos,
) -> Nanos {
    let n = times.len() as u64;
    let (mut k, mut end, mut delayed) = (0u64, Nanos::ZERO, false);
    let mut prev: Option<(u32, u32)> = None;
    while k < n {
        let lba = x.lba + k;
        let (target, len) = track_extent(drive, lba, n - k);
        let track = (target.chs.cylinder, target.chs.head);
        let first = times[k as usize].0;
        let landed = match prev {
            Some(from) if delayed => landing(drive, head, from, end, &target, Op::Write),
            _ => first,
        };
        let cycle = drive.media_cycle(lba).0.max(1);
        let mut turns = 0u64;
        for j in k..k + len {
            let due = landed + times[j as usize].0.since(first) + Span(cycle * turns);
            turns += ready(j).0.saturating_sub(due.0).div_ceil(cycle);
        }
        end = landed + times[(k + len - 1) as usize].1.since(first) + Span(cycle * turns);
        delayed |= turns > 0;
        prev = Some(track);
        k += len;
    }
    end
}

/// A zero-latency write's media transfer ("Immediate buffer write"), timed as DiskSim's
/// sector loop does it (`disk_buffer_sector_done`), track by track. On each track the head
/// waits for the first sector wanted there (`disk_buffer_seekdone`: DiskSim 4.0's
/// `g1_access_block` never starts an immediate access elsewhere), then steps through the
/// track's LBNs, one sector time each, wrapping from the last to the first: a sector is
/// written when it is the next one due (`inblkno`) and buffered at its start; a later
/// buffered sector starts, extends or (past a gap) restarts the one out-of-order run
/// (`immedstart..immedend`), which the in-order writing skips once it reaches it. So a
/// write whose data arrives after its first sectors have passed writes the rest as it
/// arrives and comes round for the first ones, instead of waiting a turn for all of them.
/// `land` is when the arm is over the first track (before the rotational wait); `ready(k)`
/// is when sector k is buffered.
pub(super) fn write_media_immediate(
    drive: &Drive,
    head: &HeadState,
    x: Transfer,
    land: Nanos,
    ready: impl Fn(u64) -> Nanos,
) -> Nanos {
    struct Ready<F>(F);
    impl<F: Fn(u64) -> Nanos> SegmentSim for Ready<F> {
        fn event(&mut self, _: Nanos, _: bool) {}
        fn may_pass(&self, j: u64, due: Nanos) -> bool {
            (self.0)(j) <= due
        }
        fn passed(&mut self, _: u64) {}
    }
    immediate_walk(drive, head, x, land, &mut Ready(ready))
}

/// [`write_media_immediate`]'s sector loop, with a sector event at the end of each sector
/// time for the interface, and `passed` for the sectors written in order (`inblkno`: a
/// write's sectors written out of order free no room in its segment until the in-order
/// writing reaches them and jumps past the run, DiskSim `disk_buffer_transfer_size`).
fn immediate_walk(
    drive: &Drive,
    head: &HeadState,
    x: Transfer,
    land: Nanos,
    sim: &mut impl SegmentSim,
) -> Nanos {
    let end_lba = x.lba + u64::from(x.sectors);
    let (mut first, mut land, mut end) = (x.lba, land, land);
    while first < end_lba {
        let target = drive.locate(first);
        let (cyl, hd) = (target.chs.cylinder, target.chs.head);
        let (lbns, ps) = drive.media_step(first);
        let step = |i: u64| Span(i * ps / 1000);
        // The track's LBNs, `tf..next`.
        let mut tf = first;
        while tf > 0 && {
            let c = drive.locate(tf - 1).chs;
            (c.cylinder, c.head) == (cyl, hd)
        } {
            tf -= 1;
        }
        let next = tf + lbns;
        let stop = end_lba.min(next);
        // Sector events are whole steps from the first (no rounding carried step to step).
        let base = land + drive.rotational_wait(land, head.phase_ns, target.angle_ns);
        sim.event(base, false);
        sim.event(base, true);
        let (mut c, mut steps) = (first, 0u64);
        // The out-of-order run, `immedstart..immedend`.
        let mut run: Option<(u64, u64)> = None;
        // (Every sector is buffered within a few turns; the bound is a guard.)
        let mut guard = 0u64;
        while first < stop && guard < 1_000 * lbns {
            guard += 1;
            let available = c >= first && c < stop && sim.may_pass(c - x.lba, base + step(steps));
            steps += 1;
            let done = base + step(steps);
            sim.event(done, false);
            if available {
                if c == first {
                    first += 1;
                    if let Some((a, b)) = run.filter(|r| r.0 == first) {
                        debug_assert_eq!(a, first);
                        first = b;
                        run = None;
                    }
                    sim.passed(first - 1 - x.lba);
                } else {
                    run = match run {
                        None => Some((c, c + 1)),
                        Some((a, b)) if c == b => Some((a, b + 1)),
                        Some((_, b)) if c > b => Some((c, c + 1)),
                        r => r,
                    };
                }
            }
            sim.event(done, true);
            c = if c + 1 < next { c + 1 } else { tf };
        }
        end = base + step(steps);
        if first < end_lba {
            let to = drive.locate(first).chs;
            land = end + drive.seek_span(cyl, hd, to, Op::Write);
        }
    }
    end
}

/// The interface side of a write larger than its buffer segment.
pub(super) struct WriteBus {
    /// When the first sector starts over the interface.
    pub(super) start: Nanos,
    /// Interface time per sector.
    pub(super) sector: Span,
    /// The segment's size in sectors.
    pub(super) size: u64,
    /// Sectors that must be buffered before the first is written (extra write disconnect).
    pub(super) q: u64,
    /// The drive holds the bus while the segment is full instead of disconnecting.
    pub(super) hold: bool,
    /// The low water mark in sectors: a disconnected write reconnects once no more than
    /// this many buffered sectors are left to write.
    pub(super) mark: u64,
    /// The write disconnect overhead.
    pub(super) disconnect: Span,
    /// Reselection plus data preparation.
    pub(super) reselect: Span,
}

/// The interface's state during a segmented write.
#[derive(Clone, Copy)]
enum BusState {
    /// Sectors `first..first + count` cross from `t0`, one every `WriteBus::sector`.
    Moving { t0: Nanos, first: u64, count: u64 },
    /// The segment was full: disconnected (or holding the bus) from `since`.
    Stalled { since: Nanos },
    /// Reselecting; the next piece starts at `at`.
    Reconnecting { at: Nanos },
    /// All the data is in.
    Done,
}

/// A write larger than its segment, timed as DiskSim moves it
/// (`disk_buffer_transfer_size`, `disk_request_needs_bus`, `disk_buffer_request_complete`,
/// `disk_buffer_sector_done`): the interface sends as much as the segment has room for
/// (`size − (sent − written)`), and when a piece is done it sends the next at once if there
/// is room; otherwise it disconnects (the write disconnect overhead) and reconnects
/// (reselection and data preparation) at the first sector event, or at the end of the
/// disconnect, when at most the low water mark of buffered sectors is left to write — or,
/// holding the bus, goes on at the first sector event with room. The media side is
/// [`write_media_end`]'s sector loop, a sector written only once it is buffered. Returns
/// when the last sector has crossed the interface and when the media write ends.
pub(super) fn write_media_segmented(
    drive: &Drive,
    head: &HeadState,
    x: Transfer,
    (times, immediate): (&[(Nanos, Nanos)], Option<Nanos>),
    bus: &WriteBus,
) -> (Nanos, Nanos) {
    let n = times.len() as u64;
    struct Sim<'a> {
        bus: &'a WriteBus,
        n: u64,
        state: BusState,
        /// Sectors fully across the interface at the end of the last piece.
        out: u64,
        /// Sectors written.
        written: u64,
        data_in: Nanos,
    }
    impl Sim<'_> {
        fn piece(&mut self, t0: Nanos) {
            let room = self.bus.size.saturating_sub(self.out - self.written);
            let count = (self.n - self.out).min(room);
            self.state = if count > 0 {
                BusState::Moving {
                    t0,
                    first: self.out,
                    count,
                }
            } else if self.bus.hold {
                BusState::Stalled { since: t0 }
            } else {
                BusState::Stalled {
                    since: t0 + self.bus.disconnect,
                }
            };
        }
        fn may_reconnect(&self) -> bool {
            let buffered = self.out - self.written;
            buffered < self.bus.size && (self.bus.hold || buffered <= self.bus.mark)
        }
        fn reconnect(&mut self, t: Nanos) {
            if self.bus.hold {
                self.piece(t);
            } else {
                self.state = BusState::Reconnecting {
                    at: t + self.bus.reselect,
                };
            }
        }
        /// Interface events up to `t`; `sector_event`: `t` is a sector event after the
        /// media progress at `t` is counted.
        fn advance(&mut self, t: Nanos, sector_event: bool) {
            loop {
                match self.state {
                    BusState::Moving { t0, first, count } => {
                        let end = t0 + self.bus.sector * count;
                        if end > t {
                            return;
                        }
                        self.out = first + count;
                        if self.out >= self.n {
                            self.data_in = end;
                            self.state = BusState::Done;
                        } else {
                            self.piece(end);
                        }
                    }
                    BusState::Stalled { since } => {
                        if since > t || !self.may_reconnect() {
                            return;
                        }
                        if sector_event {
                            self.reconnect(t);
                        } else if !self.bus.hold {
                            // At the end of the disconnect (`disk_disconnect` checks the bus).
                            self.reconnect(since);
                        } else {
                            return;
                        }
                    }
                    BusState::Reconnecting { at } => {
                        if at > t {
                            return;
                        }
                        self.piece(at);
                    }
                    BusState::Done => return,
                }
            }
        }
        /// Sectors in the buffer at `t`.
        fn buffered(&self, t: Nanos) -> u64 {
            match self.state {
                BusState::Moving { t0, first, count } if t >= t0 => {
                    let k = match self.bus.sector.0 {
                        0 => count,
                        s => (t.since(t0).0 / s).min(count),
                    };
                    first + k
                }
                _ => self.out,
            }
        }
        fn available(&self, j: u64, t: Nanos) -> bool {
            let b = self.buffered(t);
            j < b && b >= self.bus.q
        }
    }
    impl SegmentSim for Sim<'_> {
        fn event(&mut self, t: Nanos, sector_event: bool) {
            self.advance(t, sector_event);
        }
        fn may_pass(&self, j: u64, due: Nanos) -> bool {
            self.available(j, due)
        }
        fn passed(&mut self, j: u64) {
            self.written = j + 1;
        }
    }
    let mut sim = Sim {
        bus,
        n,
        state: BusState::Moving {
            t0: bus.start,
            first: 0,
            count: n.min(bus.size),
        },
        out: 0,
        written: 0,
        data_in: bus.start,
    };
    // A zero-latency write ("Immediate buffer write") lands at `immediate` and writes out
    // of order what is buffered.
    let end = match immediate {
        Some(land) => immediate_walk(drive, head, x, land, &mut sim),
        None => segment_walk(drive, head, x, times, Op::Write, &mut sim).0,
    };
    (sim.data_in, end)
}

/// When a read's sectors crossed the interface: the pieces it sent, so that the media can
/// ask how far the host had got at any instant (DiskSim's `outblkno`, which
/// `disk_buffer_update_outbuffer` advances by the whole sectors sent since the piece began).
#[derive(Clone, Debug, Default)]
pub(super) struct BusLog {
    /// Sectors `first..first + count` of the request cross from `t0`, one per `sector`.
    pieces: Vec<(Nanos, u64, u64)>,
    sector: Span,
}

impl BusLog {
    pub(super) fn new(sector: Span) -> BusLog {
        BusLog {
            pieces: Vec::new(),
            sector,
        }
    }

    /// Sectors `first..first + count` cross from `t0`.
    pub(super) fn piece(&mut self, t0: Nanos, first: u64, count: u64) {
        self.pieces.push((t0, first, count));
    }

    /// How many of the request's sectors had crossed by `t`.
    pub(super) fn sent(&self, t: Nanos) -> u64 {
        let i = self.pieces.partition_point(|p| p.0 <= t);
        let Some(&(t0, first, count)) = i.checked_sub(1).map(|i| &self.pieces[i]) else {
            return 0;
        };
        let k = match self.sector.0 {
            0 => count,
            s => (t.since(t0).0 / s).min(count),
        };
        first + k
    }
}

/// The interface side of a read larger than its buffer segment.
pub(super) struct ReadBus {
    /// When the drive first reconnects to send data.
    pub(super) start: Nanos,
    /// Interface time per sector.
    pub(super) sector: Span,
    /// The segment's size in sectors.
    pub(super) size: u64,
    /// The drive holds the bus when it has sent all that is buffered.
    pub(super) hold: bool,
    /// The high water mark in sectors.
    pub(super) mark: u64,
    /// The read disconnect overhead.
    pub(super) disconnect: Span,
    /// Reselection plus data preparation.
    pub(super) reselect: Span,
}

/// A read larger than its segment, timed as DiskSim moves it (`disk_buffer_sector_done`,
/// `disk_buffer_block_available`, `disk_buffer_transfer_size`, `disk_request_needs_bus`):
/// the media reads sector k only while fewer than a segment of sectors are buffered and
/// not yet sent (`k − sent < size`), else the sector loop passes it and comes back after a
/// turn through the track's LBNs; the interface sends what is buffered, piece by piece,
/// and when it has caught up holds the bus or disconnects (the read disconnect overhead)
/// and reconnects (reselection and data preparation) at a sector event, or at the end of
/// the disconnect, once the high water mark of sectors, or the rest, is buffered. Returns
/// when the last sector has crossed the interface, when the media read ends and how far
/// the sector loop then runs ahead of the platter on the last track; the pieces sent go to
/// `log`. The request's first `pre` sectors are in the buffer already (a partial hit); `x`
/// and `times` are the rest, read from the media.
pub(super) fn read_media_segmented(
    drive: &Drive,
    head: &HeadState,
    (x, pre): (Transfer, u64),
    times: &[(Nanos, Nanos)],
    bus: &ReadBus,
    log: &mut BusLog,
) -> (Nanos, Nanos, Span) {
    let n = pre + times.len() as u64;
    struct Sim<'a> {
        bus: &'a ReadBus,
        log: &'a mut BusLog,
        n: u64,
        /// Sectors buffered before the media starts.
        pre: u64,
        state: BusState,
        /// Sectors sent at the end of the last piece.
        out: u64,
        /// Sectors read from the media.
        buffered: u64,
        done: Nanos,
        /// The time of the event being handled.
        now: Nanos,
        /// When each sector read was buffered.
        when: Vec<Nanos>,
    }
    impl Sim<'_> {
        fn piece(&mut self, t0: Nanos) {
            self.state = if self.buffered > self.out {
                let count = self.buffered.min(self.n) - self.out;
                self.log.piece(t0, self.out, count);
                BusState::Moving {
                    t0,
                    first: self.out,
                    count,
                }
            } else if self.bus.hold {
                BusState::Stalled { since: t0 }
            } else {
                BusState::Stalled {
                    since: t0 + self.bus.disconnect,
                }
            };
        }
        fn may_reconnect(&self) -> bool {
            let ready = self.buffered.saturating_sub(self.out);
            ready > 0 && (self.bus.hold || ready >= self.bus.mark || self.buffered >= self.n)
        }
        fn advance(&mut self, t: Nanos, sector_event: bool) {
            loop {
                match self.state {
                    BusState::Moving { t0, first, count } => {
                        let end = t0 + self.bus.sector * count;
                        if end > t {
                            return;
                        }
                        self.out = first + count;
                        if self.out >= self.n {
                            self.done = end;
                            self.state = BusState::Done;
                        } else {
                            self.piece(end);
                        }
                    }
                    BusState::Stalled { since } => {
                        if since > t || !self.may_reconnect() {
                            return;
                        }
                        let at = if sector_event {
                            t
                        } else if !self.bus.hold {
                            since
                        } else {
                            return;
                        };
                        if self.bus.hold {
                            self.piece(at);
                        } else {
                            self.state = BusState::Reconnecting {
                                at: at + self.bus.reselect,
                            };
                        }
                    }
                    BusState::Reconnecting { at } => {
                        // A sector read as the drive reconnects goes in the piece.
                        if at > t || (at == t && !sector_event) {
                            return;
                        }
                        if self.buffered > self.out {
                            // The first piece cannot leave before its first sector is
                            // buffered (a drive that never disconnects is connected from
                            // the command on, before the media has read anything).
                            self.piece(at.max(self.when[self.out as usize]));
                        } else {
                            return;
                        }
                    }
                    BusState::Done => return,
                }
            }
        }
    }
    impl SegmentSim for Sim<'_> {
        fn event(&mut self, t: Nanos, sector_event: bool) {
            self.now = t;
            self.advance(t, sector_event);
        }
        fn may_pass(&self, j: u64, due: Nanos) -> bool {
            // (The host always takes what is buffered.)
            let k = self.pre + j;
            k - self.log.sent(due).min(k) < self.bus.size
        }
        fn passed(&mut self, j: u64) {
            self.buffered = self.pre + j + 1;
            self.when.push(self.now);
        }
    }
    let mut when = Vec::with_capacity(n as usize);
    when.resize(pre as usize, bus.start);
    let mut sim = Sim {
        bus,
        log,
        n,
        pre,
        state: BusState::Reconnecting { at: bus.start },
        out: 0,
        buffered: pre,
        done: bus.start,
        now: Nanos::ZERO,
        when,
    };
    let (end, lead) = segment_walk(drive, head, x, times, Op::Read, &mut sim);
    // The media is done: the interface sends the rest.
    let mut guard = 0;
    while !matches!(sim.state, BusState::Done) && guard < 64 {
        guard += 1;
        let t = match sim.state {
            BusState::Moving { t0, count, .. } => t0 + bus.sector * count,
            BusState::Stalled { since } => since.max(end),
            BusState::Reconnecting { at } => at,
            BusState::Done => break,
        };
        sim.advance(t, true);
    }
    (sim.done, end, lead)
}

#[cfg(test)]
mod tests {
    use super::super::spec::test_spec;
    use super::*;
    use rand_pcg::Pcg64Mcg;

    /// The media asks how far the host has got (DiskSim's `outblkno`): whole sectors of the
    /// piece under way, all of a finished one, none before the first.
    #[test]
    fn a_bus_log_counts_whole_sectors_sent() {
        let mut log = BusLog::new(Span(100));
        log.piece(Nanos(1_000), 0, 5);
        log.piece(Nanos(2_000), 5, 3);
        assert_eq!(log.sent(Nanos(999)), 0);
        assert_eq!(log.sent(Nanos(1_000)), 0);
        assert_eq!(log.sent(Nanos(1_199)), 1, "a sector half sent is not sent");
        assert_eq!(log.sent(Nanos(1_500)), 5);
        assert_eq!(log.sent(Nanos(1_900)), 5, "between pieces");
        assert_eq!(log.sent(Nanos(2_250)), 7);
        assert_eq!(log.sent(Nanos(9_000)), 8);
    }

    #[test]
    fn a_zero_latency_write_writes_what_is_buffered_and_comes_round_for_the_rest() {
        // 10,000 rpm, 100 sectors a track: a sector passes in 60 µs. The head is over
        // sector 0 at t = 0, but sector 0 is buffered only at 30 µs (then one every 20 µs):
        // sectors 1..20 are written as they pass (an out-of-order run), and the head comes
        // round for sector 0 after a turn: done after 101 sectors, 6.06 ms. In order, the
        // write waits a turn for sector 0 and then writes all 20: 7.2 ms.
        let d = Drive::from_spec(&test_spec(2, 1000, 100)).unwrap();
        let head = HeadState {
            cylinder: 0,
            head: 0,
            phase_ns: 0,
        };
        let x = Transfer {
            op: Op::Write,
            lba: 0,
            sectors: 20,
        };
        let ready = |k: u64| Nanos(30_000 + 20_000 * k);
        let end = write_media_immediate(&d, &head, x, Nanos(0), ready);
        assert_eq!(end, Nanos(6_060_000));
        let mut times = Vec::new();
        d.access_with_sector_times(Nanos(0), &head, x, None::<&mut Pcg64Mcg>, &mut times);
        assert_eq!(
            write_media_end(&d, &head, x, &times, ready),
            Nanos(7_200_000)
        );
    }

    #[test]
    fn a_read_connected_from_the_command_sends_its_first_sector_once_buffered() {
        // 10,000 rpm, 100 sectors a track: a sector passes in 60 µs, the bus takes 100 µs.
        // A drive that never disconnects is on the bus from the command (t = 0), long
        // before the media has read anything; the host gets sector 0 only once it is
        // buffered, and the bus, slower than the media, is never starved after.
        let d = Drive::from_spec(&test_spec(2, 1000, 100)).unwrap();
        let head = HeadState {
            cylinder: 0,
            head: 0,
            phase_ns: 0,
        };
        let x = Transfer {
            op: Op::Read,
            lba: 5_000,
            sectors: 40,
        };
        let mut times = Vec::new();
        d.access_with_sector_times(Nanos(0), &head, x, None::<&mut Pcg64Mcg>, &mut times);
        let bus = ReadBus {
            start: Nanos(0),
            sector: Span::from_ms_f64(0.1),
            size: 30,
            hold: true,
            mark: 1,
            disconnect: Span::ZERO,
            reselect: Span::ZERO,
        };
        let mut log = BusLog::new(bus.sector);
        let (done, _, _) = read_media_segmented(&d, &head, (x, 0), &times, &bus, &mut log);
        assert_eq!(done, times[0].1 + Span::from_ms_f64(0.1) * 40);
    }
}
