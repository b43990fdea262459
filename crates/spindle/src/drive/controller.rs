//! The drive's own controller: on-disk buffer segments, read-ahead, write-back and the
//! interface transfer, in front of the mechanics of [`super::mech`].
//!
//! One request is served at a time (the drive's queue depth is one; the array's scheduler
//! orders the rest). [`Controller::serve`] takes a request arriving at `now` and returns when
//! the host sees it complete; background work it leaves behind (read-ahead after a read,
//! destaging write-back data) keeps the mechanism busy and is pre-empted or waited for by the
//! next request, as in DiskSim's disk module (parameter names follow DiskSim's, see
//! `CacheSpec`):
//!
//! - **Read hit** (the first requested sector is in a segment, or already read by the
//!   running read-ahead): hit overhead, then sectors go over the interface as soon as each is
//!   in the buffer; sectors still to come from the read-ahead arrive at its pace.
//! - **Read miss**: miss overhead; a running read-ahead stops; dirty write data is destaged
//!   first; then seek, rotation and media transfer, with the interface transfer of each
//!   sector starting once it is in the buffer (reselection overhead before the first). The
//!   read-ahead then continues past the request (to the end of the track, cylinder, segment,
//!   or the next track, by `continuous_read`) until the next request needs the mechanism.
//!   With `read_any_free_blocks`, sectors of the target track that pass under the head
//!   during the rotational wait are kept too.
//! - **Write**, fast-write (`fast_write_level` 1 or 2; DiskSim 4.0 completes both from
//!   the buffer): hit overhead, interface transfer, completion; the media write happens in the
//!   background. Otherwise write-through: miss overhead, the interface transfer overlaps the
//!   positioning, and completion follows the media write.
//!
//! Not modelled (they matter only with several devices sharing a bus or deep drive queues):
//! bus arbitration and holding, sneaky/intermediate hits, write prebuffering, preseeking.

use super::cache_spec::CacheSpec;
use super::mech::{Access, Drive, HeadState, Transfer};
use super::sector_loop::{
    read_media_segmented, track_extent, write_media_end, write_media_immediate,
    write_media_segmented, BusLog, ReadBus, WriteBus,
};
use crate::{Nanos, Op, Span};
use rand::Rng;

fn ns(ms: f64) -> Span {
    Span::from_ms_f64(ms.max(0.0))
}

/// The cache parameters in integer nanoseconds.
#[derive(Clone, Debug)]
struct Params {
    spec: CacheSpec,
    bus_sector: Span,
    bus_sector_write: Span,
    /// The spec's overheads and delays, converted once (each request pays several).
    t: Spans,
}

/// [`CacheSpec`]'s times in integer nanoseconds: `x` is `x_ms`.
#[derive(Clone, Debug)]
struct Spans {
    data_preparation: Span,
    first_reselect: Span,
    minimum_seek: Span,
    other_reselect: Span,
    read_completion: Span,
    read_disconnect_after_read: Span,
    read_disconnect_after_write: Span,
    read_hit_after_read: Span,
    read_hit_after_write: Span,
    read_miss_after_read: Span,
    read_miss_after_write: Span,
    write_completion: Span,
    write_disconnect: Span,
    write_hit_after_read: Span,
    write_hit_after_write: Span,
    write_miss_after_read: Span,
    write_miss_after_write: Span,
    per_request: Span,
}

impl Spans {
    fn of(c: &CacheSpec) -> Spans {
        Spans {
            data_preparation: ns(c.data_preparation_ms),
            first_reselect: ns(c.first_reselect_ms),
            minimum_seek: ns(c.minimum_seek_ms),
            other_reselect: ns(c.other_reselect_ms),
            read_completion: ns(c.read_completion_ms),
            read_disconnect_after_read: ns(c.read_disconnect_after_read_ms),
            read_disconnect_after_write: ns(c.read_disconnect_after_write_ms),
            read_hit_after_read: ns(c.read_hit_after_read_ms),
            read_hit_after_write: ns(c.read_hit_after_write_ms),
            read_miss_after_read: ns(c.read_miss_after_read_ms),
            read_miss_after_write: ns(c.read_miss_after_write_ms),
            write_completion: ns(c.write_completion_ms),
            write_disconnect: ns(c.write_disconnect_ms),
            write_hit_after_read: ns(c.write_hit_after_read_ms),
            write_hit_after_write: ns(c.write_hit_after_write_ms),
            write_miss_after_read: ns(c.write_miss_after_read_ms),
            write_miss_after_write: ns(c.write_miss_after_write_ms),
            per_request: ns(c.per_request_ms),
        }
    }
}

#[derive(Clone, Debug)]
struct Segment {
    /// Sectors `start..end` are (or, for the active read-ahead, will be) in the buffer.
    start: u64,
    end: u64,
    /// LRU stamp.
    used: u64,
    /// When the segment's last media access was a write: where that write's data ends
    /// (DiskSim `seg->access` not a read, and `seg->endblkno`).
    write_end: Option<u64>,
    /// Holds write data not yet on the media.
    dirty: bool,
}

/// Read-ahead in progress: sectors `from..until` are read sequentially starting at `began`.
#[derive(Clone, Debug)]
struct ReadAhead {
    segment: usize,
    from: u64,
    until: u64,
    /// The read-ahead cannot be stopped before it has read up to here (DiskSim
    /// `minreadaheadblkno`: the end of the last request on its segment plus the minimum
    /// read-ahead).
    min_until: u64,
    began: Nanos,
    /// Head position and time at which reading `from` starts (no seek: it continues the
    /// previous transfer).
    head: HeadState,
}

impl ReadAhead {
    /// The read-ahead's first `k` sectors as one media access (no noise: the read-ahead
    /// continues a transfer already under way).
    fn first(&self, drive: &Drive, k: u64) -> Access {
        let sectors = u32::try_from(k).expect("a read-ahead is at most a segment");
        let x = Transfer {
            op: Op::Read,
            lba: self.from,
            sectors,
        };
        drive.access(
            self.began,
            &self.head,
            x,
            None,
            None::<&mut rand_pcg::Pcg64Mcg>,
        )
    }
}

/// Where a served request's time went, and when the host sees it done.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Service {
    pub access: Access,
    /// True if the request was served from the buffer without a media access of its own.
    pub hit: bool,
}

/// Per-disk controller state.
#[derive(Clone, Debug)]
pub struct Controller {
    /// Shared by clones (a controller is cloned to try a request, and per disk).
    params: Option<std::sync::Arc<Params>>,
    segments: Vec<Segment>,
    read_ahead: Option<ReadAhead>,
    /// The mechanism is committed (destaging) until this instant.
    mech_free: Nanos,
    /// Where the arm is once committed work ends.
    head: HeadState,
    last_op: Op,
    /// When the media write of the last write-back data ends (a read-ahead being stopped
    /// does not count: it is stoppable, a destage is not).
    destage_end: Nanos,
    clock: u64,
}

impl Controller {
    pub fn new(drive: &Drive, head: HeadState) -> Controller {
        let params = drive.cache().map(|c| {
            std::sync::Arc::new(Params {
                spec: c.clone(),
                bus_sector: ns(c.bus_sector_ms),
                bus_sector_write: ns(c.bus_sector_write_ms.unwrap_or(c.bus_sector_ms)),
                t: Spans::of(c),
            })
        });
        let segments = match &params {
            Some(p) => (0..p.spec.segments.max(1))
                .map(|_| Segment {
                    start: 0,
                    end: 0,
                    used: 0,
                    write_end: None,
                    dirty: false,
                })
                .collect(),
            None => Vec::new(),
        };
        Controller {
            params,
            segments,
            read_ahead: None,
            mech_free: Nanos::ZERO,
            head,
            last_op: Op::Read,
            destage_end: Nanos::ZERO,
            clock: 0,
        }
    }

    /// The arm's position once committed work ends (what a scheduler should plan from).
    pub fn head(&self) -> HeadState {
        self.head
    }

    /// When the mechanism finishes the work it is committed to (destaging write-back data):
    /// the earliest a new media access can start.
    pub fn mech_free(&self) -> Nanos {
        self.mech_free
    }

    /// Serves one request arriving at `now`.
    pub fn serve<R: Rng>(
        &mut self,
        drive: &Drive,
        now: Nanos,
        x: Transfer,
        rng: Option<&mut R>,
    ) -> Service {
        let Some(p) = self.params.clone() else {
            // No buffer: the request is exactly its mechanical access.
            let access = drive.access(now, &self.head, x, None, rng);
            self.head.cylinder = access.end_cylinder;
            self.head.head = access.end_head;
            self.mech_free = access.end;
            self.last_op = x.op;
            return Service { access, hit: false };
        };
        self.clock += 1;
        // The per-request processing delays the request's arrival at the controller.
        let per_request = p.t.per_request;
        let arrive = now + per_request;
        let mut svc = match x.op {
            Op::Read => self.read(drive, &p, arrive, x, rng),
            Op::Write => self.write(drive, &p, arrive, x, rng),
        };
        svc.access.overhead += per_request;
        self.last_op = x.op;
        svc
    }

    /// [`Controller::serve`] as the [`Access`] a disk reports: the arm ends where the
    /// controller leaves it (after any read-ahead or destage it committed to).
    pub fn serve_access<R: Rng>(
        &mut self,
        drive: &Drive,
        now: Nanos,
        x: Transfer,
        rng: Option<&mut R>,
    ) -> Access {
        let svc = self.serve(drive, now, x, rng);
        Access {
            end_cylinder: self.head.cylinder,
            end_head: self.head.head,
            ..svc.access
        }
    }

    fn read_hits_on_write_data(&self) -> bool {
        self.params
            .as_ref()
            .is_some_and(|p| p.spec.read_hits_on_write_data)
    }

    fn after_read(&self) -> bool {
        self.last_op == Op::Read
    }

    /// When sector `lba` is (or will be) in the buffer, if it is cached or being read ahead.
    fn ready_at(&self, drive: &Drive, now: Nanos, lba: u64) -> Option<(usize, Nanos)> {
        if let Some(ra) = &self.read_ahead {
            let s = &self.segments[ra.segment];
            // The segment is circular: sectors the read-ahead has pushed out are gone,
            // its own first ones too once it has read a segment past them.
            let wrap = self.wrap_start(drive, ra, now);
            if lba >= s.start && lba < ra.from && lba >= wrap {
                return Some((ra.segment, Nanos::ZERO));
            }
            if lba >= ra.from && lba < ra.until && lba >= wrap {
                return Some((ra.segment, ra.first(drive, lba - ra.from + 1).end));
            }
        }
        let reading = self.read_ahead.as_ref().map(|ra| ra.segment);
        self.segments
            .iter()
            .enumerate()
            .position(|(i, s)| {
                Some(i) != reading
                    && lba >= s.start
                    && lba < s.end
                    && (!s.dirty || self.read_hits_on_write_data())
            })
            .map(|i| (i, Nanos::ZERO))
    }

    /// Whole sectors the read-ahead has read by `t` (DiskSim stops at a sector boundary).
    fn read_ahead_done(drive: &Drive, ra: &ReadAhead, t: Nanos) -> u64 {
        let sectors = u32::try_from(ra.until - ra.from).expect("a read-ahead is at most a segment");
        drive.sectors_moved_by(ra.began, &ra.head, Op::Read, (ra.from, sectors), t)
    }

    /// [`Self::read_ahead_done`], with the media access of those sectors (`None` for none).
    fn read_ahead_progress(drive: &Drive, ra: &ReadAhead, t: Nanos) -> (u64, Option<Access>) {
        let done = Self::read_ahead_done(drive, ra, t);
        (done, (done > 0).then(|| ra.first(drive, done)))
    }

    /// The first sector still in the read-ahead's segment at `t`: a segment holds at most
    /// `segment_sectors`, and read-ahead data overwrites the oldest (DiskSim
    /// `disk_buffer_segment_wrap`: start = max(start, end − size)).
    fn wrap_start(&self, drive: &Drive, ra: &ReadAhead, t: Nanos) -> u64 {
        self.wrap_start_after(ra, Self::read_ahead_done(drive, ra, t))
    }

    /// [`Self::wrap_start`] for a read-ahead that has read `done` sectors.
    fn wrap_start_after(&self, ra: &ReadAhead, done: u64) -> u64 {
        let Some(p) = &self.params else {
            return 0;
        };
        (ra.from + done).saturating_sub(u64::from(p.spec.segment_sectors))
    }

    /// Stops a stoppable read-ahead for a request arriving at `now`: the sector events still
    /// to come are dropped, so the segment keeps the sectors read by then (DiskSim
    /// `disk_buffer_stopable_access`, `disk_buffer_stop_access`). The mechanism is free at
    /// once, except without "Stop prefetch in sector" and "Read directly to buffer", when it
    /// is free once the sector under the head has passed (`disk_seek_stoptime` is the pending
    /// sector event's time; which settings move that event was measured against the oracle,
    /// not read from the source: 97.636 % with the mechanism always free at once, 97.618 %
    /// with the sector always finished, 97.648 % so).
    fn preempt_read_ahead(&mut self, drive: &Drive, c: &CacheSpec, now: Nanos) {
        let Some(ra) = &self.read_ahead else {
            return;
        };
        let done = Self::read_ahead_done(drive, ra, now);
        let free =
            if c.read_directly_to_buffer || c.stop_prefetch_in_sector || done >= ra.until - ra.from
            {
                now
            } else {
                ra.first(drive, done + 1).end.max(now)
            };
        self.stop_read_ahead(drive, now);
        self.mech_free = self.mech_free.max(free);
    }

    /// Whether `x` overlaps what the read-ahead's segment holds at `t` (DiskSim
    /// `disk_buffer_overlap` on `startblkno..endblkno`).
    fn read_ahead_overlaps(&self, drive: &Drive, t: Nanos, x: &Transfer) -> bool {
        let Some(ra) = &self.read_ahead else {
            return false;
        };
        let done = Self::read_ahead_done(drive, ra, t);
        let start = self.segments[ra.segment]
            .start
            .max(self.wrap_start_after(ra, done));
        let end = ra.from + done;
        let (lo, hi) = (x.lba, x.lba + u64::from(x.sectors));
        (lo >= start && lo < end) || (hi > start && hi <= end) || (lo <= start && hi >= end)
    }

    /// Stops the read-ahead at `t`: the segment keeps what was read by then and the arm is
    /// where the read-ahead had got to.
    fn stop_read_ahead(&mut self, drive: &Drive, t: Nanos) {
        let Some(ra) = self.read_ahead.take() else {
            return;
        };
        let mut done = ra.from;
        let (mut cyl, mut hd) = (ra.head.cylinder, ra.head.head);
        let (lo, at_lo) = Self::read_ahead_progress(drive, &ra, t);
        let wrap = self.wrap_start_after(&ra, lo);
        let s = &mut self.segments[ra.segment];
        s.start = s.start.max(wrap);
        if let Some(a) = at_lo {
            done = ra.from + lo;
            cyl = a.end_cylinder;
            hd = a.end_head;
        }
        self.segments[ra.segment].end = done;
        self.head = HeadState {
            cylinder: cyl,
            head: hd,
            phase_ns: self.head.phase_ns,
        };
        self.mech_free = self.mech_free.max(t);
    }

    /// A segment for new data of `op` on `lba..end`, chosen as DiskSim does
    /// (`disk_buffer_select_read_segment`, `disk_buffer_select_write_segment`): for a write,
    /// a clean segment it overlaps; then an empty segment (it trashes no data); then a
    /// clean one; the segment the read-ahead was filling (`reading`) last, and one holding
    /// write data not yet on the media only if nothing else is left. Ties go to the least
    /// recently used.
    fn take_segment(
        &mut self,
        p: &Params,
        op: Op,
        (lba, end): (u64, u64),
        reading: Option<usize>,
    ) -> usize {
        let reserved = p.spec.separate_write_segment && self.segments.len() > 1;
        let n = self.segments.len();
        let range = if !reserved {
            0..n
        } else if op == Op::Write {
            n - 1..n
        } else {
            0..n - 1
        };
        let rank = |i: usize| -> u8 {
            let s = &self.segments[i];
            let empty = s.start >= s.end;
            if s.dirty {
                0
            } else if Some(i) == reading {
                1
            } else if op == Op::Write && !empty && lba < s.end && end > s.start {
                4
            } else if empty {
                3
            } else {
                2
            }
        };
        let i = range
            .max_by_key(|&i| (rank(i), std::cmp::Reverse(self.segments[i].used)))
            .expect("a segment exists");
        self.segments[i].used = self.clock;
        i
    }

    /// A read miss's sectors over an interface that lets go of the bus when it has sent
    /// everything buffered (DiskSim `disk_reconnection_or_transfer_complete`: each transfer
    /// moves what is buffered; with nothing left it holds the bus only with "Hold bus entire
    /// read xfer" or "Never disconnect", else it disconnects, taking the read disconnect
    /// overhead, and `disk_request_needs_bus` reconnects once that is done and `mark` more
    /// sectors, or all the rest, are buffered, paying the reselection and data preparation
    /// again). `ready[k]` is when sector k is buffered
    /// (non-decreasing); the bus is first connected at `connected`. Returns when the last
    /// sector has gone; the pieces sent go to `log`.
    fn read_interface(
        &self,
        p: &Params,
        connected: Nanos,
        ready: &[(Nanos, Nanos)],
        mark: u64,
        (disconnect, reselect): (Span, Span),
        log: &mut BusLog,
    ) -> Nanos {
        let c = &p.spec;
        let hold = c.hold_bus_read || c.never_disconnect;
        let n = ready.len();
        let (mut t, mut sent) = (connected, 0usize);
        while sent < n {
            let buffered = ready.partition_point(|r| r.1 <= t);
            if buffered > sent {
                log.piece(t, sent as u64, (buffered - sent) as u64);
                t += p.bus_sector * (buffered - sent) as u64;
                sent = buffered;
            } else if hold {
                t = ready[sent].1;
            } else {
                // The disconnect takes the read disconnect overhead; the bus is checked
                // again when it is done (`disk_disconnect`) and at each sector event after.
                let need = (sent as u64 + mark.max(1)).min(n as u64) as usize;
                t = ready[need - 1].1.max(t + disconnect) + reselect;
            }
        }
        t
    }

    /// The interface side of a read larger than its segment, first connected at `start`,
    /// reconnecting at `mark` sectors.
    fn read_bus(
        p: &Params,
        start: Nanos,
        mark: u64,
        (disconnect, reselect): (Span, Span),
    ) -> ReadBus {
        let c = &p.spec;
        ReadBus {
            start,
            sector: p.bus_sector,
            size: u64::from(c.segment_sectors).max(1),
            hold: c.hold_bus_read || c.never_disconnect,
            mark,
            disconnect,
            reselect,
        }
    }

    fn read<R: Rng>(
        &mut self,
        drive: &Drive,
        p: &Params,
        now: Nanos,
        x: Transfer,
        rng: Option<&mut R>,
    ) -> Service {
        let c = &p.spec;
        // A hit needs its first sector in the buffer when the request arrives: one the
        // read-ahead has yet to reach is a miss (DiskSim `disk_buffer_check_read_segments`
        // looks only at `startblkno..endblkno`, what is read; "Allow almost read hits" is
        // not modelled).
        let first = self
            .ready_at(drive, now, x.lba)
            .filter(|&(_, ready)| ready <= now);
        let hit = c.enable_caching > 0 && first.is_some();
        let overhead = match (hit, self.after_read()) {
            (true, true) => p.t.read_hit_after_read,
            (true, false) => p.t.read_hit_after_write,
            (false, _) => self.read_miss_overhead(p),
        };
        let mut overhead = overhead;
        let mut begin = now + overhead + p.t.data_preparation;
        // Nor can a hit on another segment stop a read-ahead short of its minimum
        // (`disk_buffer_stopable_access`): it waits for the read-ahead to reach it.
        let other = self
            .read_ahead
            .as_ref()
            .is_some_and(|ra| Some(ra.segment) != first.map(|f| f.0));
        let ra_busy = if hit && !c.never_disconnect && other {
            self.read_ahead_unstoppable_until(drive, c, now)
        } else {
            None
        };
        if let Some(h) = ra_busy {
            overhead = self.read_miss_overhead(p);
            let disconnect = self.read_disconnect(p);
            self.stop_read_ahead(drive, h);
            begin =
                (now + overhead + disconnect).max(h) + p.t.first_reselect + p.t.data_preparation;
        } else if hit && !c.never_disconnect && self.destage_end > now {
            // Likewise, a hit arriving while write-back data is being destaged cannot take the
            // mechanism's place (DiskSim `disk_buffer_stopable_access`: a writing access
            // stops only for an append): the drive disconnects after the read-miss command
            // overhead and the read disconnect overhead (`disk_read_arrive`), and once the
            // destage is done reconnects (first reselection and data preparation) to send
            // the data.
            overhead = self.read_miss_overhead(p);
            let disconnect = self.read_disconnect(p);
            begin = (now + overhead + disconnect).max(self.destage_end)
                + p.t.first_reselect
                + p.t.data_preparation;
        }
        if hit {
            // Sectors present or on their way from the read-ahead; any beyond it are a miss
            // of the remainder, served after the read-ahead's last sector.
            let (seg, _) = first.expect("hit");
            let x_end = x.lba + u64::from(x.sectors);
            // A hit moves the read-ahead's goal to the maximum read-ahead past this request
            // (DiskSim `disk_buffer_attempt_seg_ownership`: maxreadaheadblkno = max(old,
            // end + maximum read-ahead)), so a sequential stream of hits keeps being read
            // ahead of.
            let goal = Self::read_ahead_goal(drive, c, x_end);
            // The hit's segment is set up for it: its read-ahead may not be stopped before
            // the minimum read-ahead past this request (`disk_buffer_set_segment`).
            if let Some(ra) = self.read_ahead.as_mut().filter(|ra| ra.segment == seg) {
                ra.min_until = ra.min_until.max(Self::min_read_ahead_end(drive, c, x_end));
            }
            if let Some(goal) = goal {
                // A read-ahead that reached its goal before this request has stopped: the
                // mechanism is idle, and what it read is in the segment.
                let finished = self
                    .read_ahead
                    .as_ref()
                    .is_some_and(|ra| ra.first(drive, ra.until - ra.from).end <= now);
                if finished {
                    self.stop_read_ahead(drive, now);
                }
                match self.read_ahead.as_mut() {
                    Some(ra) if ra.segment == seg => ra.until = ra.until.max(goal),
                    Some(_) => {}
                    None => {
                        // The idle mechanism resumes reading where the segment's data ends
                        // — for the rest of a partial hit, or ahead of a full one if the
                        // drive reads ahead on idle hits (DiskSim `disk_check_hda_pending`)
                        // — once the command overhead is done (a read's mechanical activity
                        // waits for the read-miss overhead, `disk_read_arrive`).
                        let from = self.segments[seg].end;
                        if from < goal && (from < x_end || c.read_ahead_on_idle_hit) {
                            let miss = self.read_miss_overhead(p);
                            self.segments[seg].write_end = None;
                            self.read_ahead = Some(ReadAhead {
                                segment: seg,
                                from,
                                until: goal,
                                min_until: Self::min_read_ahead_end(drive, c, x_end),
                                began: (now + miss).max(self.mech_free),
                                head: self.head,
                            });
                        }
                    }
                }
            }
            let mut ready = Vec::with_capacity(x.sectors as usize);
            let mut lba = x.lba;
            while lba < x.lba + u64::from(x.sectors) {
                match self.ready_at(drive, now, lba) {
                    Some((_, t)) => ready.push(t),
                    None => break,
                }
                lba += 1;
            }
            let covered = ready.len() as u32;
            let mut log = BusLog::new(p.bus_sector);
            let fed = self.read_ahead.as_ref().is_some_and(|ra| ra.segment == seg);
            let partial = covered < x.sectors && !fed;
            // Sectors still on their way from the read-ahead cross as they come, the drive
            // letting go of the bus when it has sent all that is buffered and reconnecting
            // at the water mark, as for a miss (`disk_reconnection_or_transfer_complete`).
            let mut end = if partial {
                Nanos::ZERO
            } else {
                let n = u64::from(covered).max(1);
                let k0 = Self::high_water_mark(c, u64::from(x.sectors)).clamp(1, n);
                let disconnect = self.read_disconnect(p);
                let reselect = p.t.first_reselect + p.t.data_preparation;
                // A hit only partly buffered when it arrives goes at once only with "Immed
                // transfer partial hit" or from the high water mark on (`disk_read_arrive`:
                // `enough_ready_to_go`); else the drive disconnects like a miss.
                let cached = ready.iter().filter(|&&t| t <= now).count() as u64;
                let want = u64::from(x.sectors);
                let short = !c.never_disconnect
                    && !c.immediate_transfer_partial_hit
                    && cached < want
                    && cached < Self::high_water_mark(c, want).min(want);
                let ready: Vec<(Nanos, Nanos)> = ready.into_iter().map(|t| (t, t)).collect();
                let connected = if short {
                    let miss = self.read_miss_overhead(p);
                    overhead = miss;
                    ready[k0 as usize - 1].1.max(now + miss + disconnect) + reselect
                } else {
                    begin
                };
                self.read_interface(p, connected, &ready, k0, (disconnect, reselect), &mut log)
            };
            if partial {
                // A partial hit on cached data: the rest is read once the read-miss command
                // overhead is done and the mechanism is free (`disk_read_arrive`). The
                // cached part goes at once only with "Immed transfer partial hit", or when
                // it reaches the high water mark, and only if the mechanism is not held
                // by a destage or a read-ahead short of its minimum; otherwise the drive
                // disconnects and reconnects at the water mark like a miss.
                let rest = Transfer {
                    op: Op::Read,
                    lba,
                    sectors: x.sectors - covered,
                };
                let miss = self.read_miss_overhead(p);
                // The mechanism waits for a read-ahead short of its minimum even when the
                // drive, never disconnecting, sends the cached part at once.
                let busy = ra_busy.or_else(|| self.read_ahead_unstoppable_until(drive, c, now));
                let t = (now + miss).max(self.mech_free).max(busy.unwrap_or(now));
                self.stop_read_ahead(drive, t);
                let mut times = Vec::with_capacity(x.sectors as usize);
                times.resize(covered as usize, (now, now));
                let a = drive.access_with_sector_times(t, &self.head, rest, rng, &mut times);
                let n = u64::from(x.sectors);
                let k0 = Self::high_water_mark(c, n).clamp(1, n);
                let disconnect = self.read_disconnect(p);
                let reselect = p.t.first_reselect + p.t.data_preparation;
                let held = ra_busy.is_some() || self.destage_end > now;
                let enough = c.never_disconnect
                    || (!held && (c.immediate_transfer_partial_hit || u64::from(covered) >= k0));
                let connected = if enough {
                    begin
                } else {
                    overhead = miss;
                    times[k0 as usize - 1].1.max(now + miss + disconnect) + reselect
                };
                let seg_size = u64::from(c.segment_sectors).max(1);
                let media_end = if n <= seg_size {
                    end = self.read_interface(
                        p,
                        connected,
                        &times,
                        k0,
                        (disconnect, reselect),
                        &mut log,
                    );
                    a.end
                } else {
                    // Larger than its segment: the media stops while the segment is full
                    // of sectors the host has not taken, the cached ones first.
                    let bus = Self::read_bus(p, connected, k0, (disconnect, reselect));
                    let pre = u64::from(covered);
                    let (e, media_end, _) = read_media_segmented(
                        drive,
                        &self.head,
                        (rest, pre),
                        &times[covered as usize..],
                        &bus,
                        &mut log,
                    );
                    end = e;
                    media_end
                };
                self.head.cylinder = a.end_cylinder;
                self.head.head = a.end_head;
                self.mech_free = media_end;
                self.segments[seg].end = self.segments[seg]
                    .end
                    .max(rest.lba + u64::from(rest.sectors));
                // The media access goes on into the read-ahead, as after a miss.
                self.start_read_ahead(drive, p, seg, x_end, media_end);
            } else if covered < x.sectors {
                let rest = Transfer {
                    op: Op::Read,
                    lba,
                    sectors: x.sectors - covered,
                };
                // The read-ahead bringing in the first part reads on into the rest without
                // stopping (the hit raises its goal past the request,
                // `disk_buffer_attempt_seg_ownership`); an idle mechanism reads the rest
                // once the read-miss command overhead is done (`disk_read_arrive`), while
                // the cached part crosses the interface.
                let t = match self
                    .read_ahead
                    .as_ref()
                    .filter(|ra| ra.segment == seg)
                    .map(|ra| ra.first(drive, ra.until - ra.from).end)
                {
                    Some(e) if e > now => e,
                    _ => now + self.read_miss_overhead(p),
                }
                .max(self.mech_free);
                self.stop_read_ahead(drive, t);
                let mut times = Vec::with_capacity(rest.sectors as usize);
                let a = drive.access_with_sector_times(
                    t.max(self.mech_free),
                    &self.head,
                    rest,
                    rng,
                    &mut times,
                );
                let n = u64::from(rest.sectors);
                // Once the interface has caught up it lets go of the bus and comes back at
                // the high water mark, or for the rest, as for a miss
                // (`disk_reconnection_or_transfer_complete`, `disk_request_needs_bus`).
                let mark = Self::high_water_mark(c, u64::from(x.sectors)).clamp(1, n);
                let disconnect = self.read_disconnect(p);
                let reselect = p.t.first_reselect + p.t.data_preparation;
                let mut rest_log = BusLog::new(p.bus_sector);
                end = self.read_interface(
                    p,
                    end,
                    &times,
                    mark,
                    (disconnect, reselect),
                    &mut rest_log,
                );
                log.append(&rest_log, u64::from(covered));
                self.head.cylinder = a.end_cylinder;
                self.head.head = a.end_head;
                self.mech_free = a.end;
                self.segments[seg].end = self.segments[seg].end.max(rest.lba + n);
                // The media access goes on into the read-ahead, as after a miss.
                self.start_read_ahead(drive, p, seg, x_end, a.end);
            }
            // The hit owns its segment's read-ahead until its completion is sent. (With
            // "Immediate buffer read" DiskSim's stalled loop reads the sectors after the
            // one it waits for out of order, and they push the segment's start on
            // (`immedstart..immedend`, `disk_buffer_segment_wrap`): not modelled; the
            // read-ahead left running, whose start wraps with it, comes closer for a hit.)
            if self.read_ahead.as_ref().is_some_and(|ra| ra.segment == seg)
                && !c.immediate_buffer_read
            {
                self.hold_read_ahead(drive, p, &log, x.lba, (now, end));
            }
            // The segment is a circular buffer: sectors before the ones just sent to the host
            // are the first to be overwritten, and are no longer counted on.
            let s = &mut self.segments[seg];
            s.used = self.clock;
            s.start = s.start.max(x.lba);
            let done = end + p.t.read_completion;
            let access = Access {
                overhead: overhead + p.t.data_preparation + p.t.read_completion,
                transfer: done.since(now) - overhead - p.t.data_preparation - p.t.read_completion,
                end: done,
                end_cylinder: self.head.cylinder,
                end_head: self.head.head,
                ..Access::default()
            };
            // An idle mechanism reads ahead of a hit from where the segment's data ends, once
            // the read-miss command overhead is done (DiskSim `disk_check_hda_pending`,
            // `disk_read_arrive`).
            if goal.is_none() && self.read_ahead.is_none() && c.read_ahead_on_idle_hit {
                let from = self.segments[seg].end.max(x_end);
                let at = (now + self.read_miss_overhead(p)).max(self.mech_free);
                self.start_read_ahead(drive, p, seg, from, at);
            }
            return Service { access, hit: true };
        }
        // Miss: the mechanism is needed.
        let t = now + overhead;
        let reading = self.read_ahead.as_ref().map(|ra| ra.segment);
        match self.read_ahead_unstoppable_until(drive, c, t) {
            Some(h) => self.stop_read_ahead(drive, h),
            None => self.preempt_read_ahead(drive, c, now),
        }
        let start = t.max(self.mech_free);
        // Write-back data is destaged first, or was before the miss arrived: its segment is
        // then clean with read hits on write data, else empty, and a new read prefers an
        // empty segment to a clean one (DiskSim `disk_release_hda`,
        // `disk_buffer_select_read_segment`).
        self.destaged(c);
        // When each requested sector is in the buffer, in LBA order.
        let mut times = Vec::with_capacity(x.sectors as usize);
        let a = drive.access_with_sector_times(start, &self.head, x, rng, &mut times);
        let n = u64::from(x.sectors);
        // Zero-latency reads and writes ("Immediate buffer read/write") start at the first
        // requested sector, as in DiskSim 4.0: `g1_access_block` (diskmodel/mech_g1.c),
        // which `disk_buffer_seekdone` and `dm_latency_g1` ask where an immediate access
        // begins, takes the layout's `DM_OK` (−3) from `dm_convert_atop` for a failure and
        // returns the first requested sector. (Timed as on-arrival reads, DEC RZ26, which
        // enables them, scored 0.392 ms instead of 0.327 against its measured trace.)
        let (media_end, rotation) = (a.end, a.rotation);
        // Reconnecting to send data costs the first reselection and the data preparation
        // (DiskSim `disk_check_bus`: `overhead_reselect_first` + `overhead_data_prep` when
        // data is to move).
        let reselect = p.t.first_reselect + p.t.data_preparation;
        let k0 = Self::high_water_mark(c, n).clamp(1, n);
        // A drive that never disconnects holds the bus from the command on: each sector
        // crosses as soon as it is buffered, with no water mark and no reselection (DiskSim
        // `disk_read_arrive`: READY_TO_TRANSFER after the command overhead and the data
        // preparation; `disk_reconnection_or_transfer_complete` holds the bus).
        let disconnect = self.read_disconnect(p);
        let bus_start = if c.never_disconnect {
            now + overhead + p.t.data_preparation
        } else {
            // The drive first disconnects, after the command overhead and the read
            // disconnect overhead (DiskSim `disk_read_arrive`); it cannot reselect before.
            times[k0 as usize - 1].1.max(now + overhead + disconnect) + reselect
        };
        let seg_size = u64::from(c.segment_sectors).max(1);
        let mut log = BusLog::new(p.bus_sector);
        let mut loop_lead = Span::ZERO;
        // A drive that never disconnects is held back by the segment too
        // (`disk_buffer_block_available` does not look at the bus).
        let (end, media_end) = if n <= seg_size {
            let end =
                self.read_interface(p, bus_start, &times, k0, (disconnect, reselect), &mut log);
            (end, media_end)
        } else {
            // A read larger than its segment: the media stops reading while the segment
            // is full of sectors the host has not taken.
            let bus = Self::read_bus(p, bus_start, k0, (disconnect, reselect));
            let (end, media_end, lead) =
                read_media_segmented(drive, &self.head, (x, 0), &times, &bus, &mut log);
            loop_lead = lead;
            (end, media_end)
        };
        let done = end + p.t.read_completion;
        let seg = self.take_segment(p, Op::Read, (x.lba, x.lba + n), reading);
        let mut seg_start = x.lba;
        if c.read_any_free_blocks {
            // Sectors of the target track passing under the head during the rotational wait
            // (DiskSim `disk_buffer_seekdone`: with "Read any free blocks" the head reads
            // from wherever it lands). The read-ahead soon pushes them out of the circular
            // segment (`wrap_start`); before the segment wrapped they made the Ultrastar
            // 18ES score 0.472 ms.
            let spt = u64::from(
                drive
                    .geometry()
                    .sectors_per_track(drive.locate(x.lba).chs.cylinder),
            );
            let passed = a.rotation.0 * spt / drive.period().0;
            let on_track = u64::from(drive.locate(x.lba).chs.sector);
            // A track's physical sector index can exceed its first LBA (a first-block
            // offset, slips): never before LBA 0.
            seg_start = x.lba.saturating_sub(passed.min(on_track));
        }
        // Without caching the segment is empty once the read is done (DiskSim
        // `disk_release_hda`: BUFFER_EMPTY unless "Enable caching in buffer"), so a later
        // write prefers it to the previous write's segment like any other empty one.
        let seg_end = if c.enable_caching > 0 {
            x.lba + n
        } else {
            seg_start
        };
        self.segments[seg] = Segment {
            start: seg_start,
            end: seg_end,
            used: self.clock,
            write_end: None,
            dirty: false,
        };
        self.head.cylinder = a.end_cylinder;
        self.head.head = a.end_head;
        self.mech_free = media_end;
        self.start_read_ahead(drive, p, seg, x.lba + n, media_end);
        if let Some(ra) = self.read_ahead.as_mut().filter(|_| loop_lead > Span::ZERO) {
            if track_of(drive, ra.from) == track_of(drive, ra.from - 1) {
                let period = drive.period().0;
                ra.head.phase_ns = (ra.head.phase_ns + loop_lead.0) % period;
            }
        }
        self.hold_read_ahead(drive, p, &log, x.lba, (now, end));
        let access = Access {
            overhead: overhead + p.t.read_completion,
            seek: a.seek + start.since(t),
            rotation,
            transfer: done.since(now)
                - overhead
                - p.t.read_completion
                - a.seek
                - start.since(t)
                - rotation,
            switches: Span::ZERO,
            end: done,
            end_cylinder: a.end_cylinder,
            end_head: a.end_head,
        };
        Service { access, hit: false }
    }

    /// Where a read-ahead started for a request ending at `end` may first be stopped.
    fn min_read_ahead_end(drive: &Drive, c: &CacheSpec, end: u64) -> u64 {
        (end + u64::from(c.min_read_ahead_sectors)).min(drive.capacity_sectors())
    }

    /// When the running read-ahead, not yet stoppable at `t`, reaches the point where it
    /// may be stopped; `None` if there is none or it may be stopped at `t`. DiskSim
    /// (`disk_buffer_stopable_access`) does not stop a read-ahead for another request
    /// before it has read the minimum read-ahead; it goes on to that point and then hands
    /// the mechanism over (`disk_buffer_request_complete`, `disk_check_prefetch_swap`).
    /// A request arriving while the read-ahead is still running short of a minimum that
    /// lies past its goal raises the goal to the minimum (`disk_buffer_stopable_access`:
    /// `maxreadaheadblkno = minreadaheadblkno`) — where the goal is a maximum (modes 3 and
    /// 4); modes 1 and 2 stop at the track or cylinder end whatever the maximum
    /// (`disk_initiate_seek`).
    fn read_ahead_unstoppable_until(
        &mut self,
        drive: &Drive,
        c: &CacheSpec,
        t: Nanos,
    ) -> Option<Nanos> {
        let ra = self.read_ahead.as_mut()?;
        let point = if matches!(c.continuous_read, 1 | 2) {
            ra.min_until.min(ra.until)
        } else {
            ra.min_until
        };
        if point <= ra.from {
            return None;
        }
        if point > ra.until {
            if ra.first(drive, ra.until - ra.from).end <= t {
                return None;
            }
            ra.until = point;
        }
        let end = ra.first(drive, point - ra.from).end;
        (end > t).then_some(end)
    }

    /// The drive reconnects once the high water mark of data is buffered, or the whole
    /// request. DiskSim (`disk_buffer_set_segment`, `disk_read_arrive`): by request size
    /// the mark is max(1, ⌊min(segment, request) · mark⌋) sectors (truncated); by segment
    /// it is ⌈segment · mark⌉.
    fn high_water_mark(c: &CacheSpec, n: u64) -> u64 {
        if c.watermark_by_request {
            ((c.high_water_mark * u64::from(c.segment_sectors).min(n) as f64) as u64).max(1)
        } else {
            (c.high_water_mark * f64::from(c.segment_sectors)).ceil() as u64
        }
    }

    /// The write-back data is on the media: its segments are clean with read hits on write
    /// data, else empty (DiskSim `disk_release_hda`).
    fn destaged(&mut self, c: &CacheSpec) {
        for s in &mut self.segments {
            if s.dirty && !c.read_hits_on_write_data {
                s.end = s.start;
            }
            s.dirty = false;
        }
    }

    /// The read disconnect overhead, after a read or after a write (DiskSim's `lastflags`
    /// is the previous request's until this one completes).
    fn read_disconnect(&self, p: &Params) -> Span {
        if self.after_read() {
            p.t.read_disconnect_after_read
        } else {
            p.t.read_disconnect_after_write
        }
    }

    /// The read-miss command overhead, after a read or after a write. DiskSim also holds a
    /// read hit's mechanical activity (resuming the read-ahead) for it (`disk_read_arrive`).
    fn read_miss_overhead(&self, p: &Params) -> Span {
        if self.after_read() {
            p.t.read_miss_after_read
        } else {
            p.t.read_miss_after_write
        }
    }

    /// Where the read-ahead stops after a read ending at `end`, for `continuous_read` mode 3
    /// with a maximum read-ahead (DiskSim `disk_buffer_get_max_readahead`: the request's
    /// end plus the maximum read-ahead); `None` for the other modes.
    fn read_ahead_goal(drive: &Drive, c: &CacheSpec, end: u64) -> Option<u64> {
        (c.continuous_read == 3 && c.max_read_ahead_sectors > 0 && c.enable_caching > 0)
            .then(|| (end + u64::from(c.max_read_ahead_sectors)).min(drive.capacity_sectors()))
    }

    fn start_read_ahead(&mut self, drive: &Drive, p: &Params, seg: usize, from: u64, at: Nanos) {
        let c = &p.spec;
        if c.continuous_read == 0 || c.enable_caching == 0 || from >= drive.capacity_sectors() {
            return;
        }
        let geo = drive.geometry();
        // A hit on data the read-ahead is still bringing in can leave the start past the
        // recorded end (the rest is counted by the read-ahead): no data yet, not negative.
        let seg_len = self.segments[seg]
            .end
            .saturating_sub(self.segments[seg].start);
        // How far past the request the read-ahead may go (DiskSim
        // `disk_buffer_get_max_readahead`): the maximum read-ahead when one is set; else a
        // whole segment past the request with "Read-ahead over requested", or the rest of
        // the segment after the request's own data (at least the minimum read-ahead)
        // without it. The segment is circular, so this is not capped by its size.
        let seg_size = u64::from(c.segment_sectors);
        let goal = if c.max_read_ahead_sectors > 0 {
            u64::from(c.max_read_ahead_sectors)
        } else if c.read_ahead_over_requested {
            seg_size
        } else if seg_len >= seg_size || seg_size - seg_len < u64::from(c.min_read_ahead_sectors) {
            u64::from(c.min_read_ahead_sectors)
        } else {
            seg_size - seg_len
        };
        let mut n = match c.continuous_read {
            // Modes 1 and 2 stop where a background read would need a head switch or a seek
            // (mode 1) or a seek (mode 2) (DiskSim `disk_initiate_seek`): counted in LBNs,
            // so spare and slipped sectors at the end of a track are not read into.
            1 => lbns_before_switch(drive, from, goal, false),
            2 => lbns_before_switch(drive, from, goal, true),
            3 => goal,
            // DiskSim `disk_buffer_get_max_readahead`, BUFFER_DEC_PREFETCH_SCHEME: to the
            // end of the track holding the first sector after the request, and one track
            // further when the segment holds data from before that track (a sequential
            // stream).
            _ => {
                let spt = u64::from(geo.sectors_per_track(drive.locate(from).chs.cylinder));
                let lbns_to_end = u64::from(geo.run_on_track(from));
                let seg_start = self.segments[seg].start.min(from);
                if track_of(drive, seg_start) != track_of(drive, from) {
                    lbns_to_end + spt
                } else {
                    lbns_to_end
                }
            }
        };
        n = n.min(drive.capacity_sectors() - from);
        if n == 0 {
            return;
        }
        self.segments[seg].write_end = None;
        self.read_ahead = Some(ReadAhead {
            segment: seg,
            from,
            until: from + n,
            min_until: Self::min_read_ahead_end(drive, c, from),
            began: at,
            head: self.head,
        });
        self.segments[seg].end = from;
    }

    /// Holds the running read-ahead back while the request owning its segment has not sent
    /// its completion. From the request's arrival (`owned`) until its last sector has
    /// crossed the interface (`done`),
    /// the media may read sector `b` only while `b − out` is less than the segment size,
    /// `out` being the request's next sector to cross: `first` plus the sectors `log` has
    /// sent (DiskSim `disk_buffer_block_available`). The sector loop passes a sector it may
    /// not read and comes back to it after a turn through the track's LBNs
    /// (`disk_buffer_sector_done`): what was read before it stays in the segment, and the
    /// read-ahead resumes there, the turns later.
    fn hold_read_ahead(
        &mut self,
        drive: &Drive,
        p: &Params,
        log: &BusLog,
        first: u64,
        (owned, done): (Nanos, Nanos),
    ) {
        let size = u64::from(p.spec.segment_sectors).max(1);
        let full = |b: u64, t: Nanos| t >= owned && t < done && b >= first + log.sent(t) + size;
        let period = drive.period().0;
        let mut times = Vec::new();
        // Each pass moves the read-ahead past one stall; stalls end at `done`.
        while let Some(ra) = self.read_ahead.as_mut() {
            if ra.began >= done {
                return;
            }
            let sectors =
                u32::try_from(ra.until - ra.from).expect("a read-ahead is at most a segment");
            times.clear();
            let x = Transfer {
                op: Op::Read,
                lba: ra.from,
                sectors,
            };
            drive.access_with_sector_times(
                ra.began,
                &ra.head,
                x,
                None::<&mut rand_pcg::Pcg64Mcg>,
                &mut times,
            );
            let Some((i, due)) = times
                .iter()
                .enumerate()
                .take_while(|(_, t)| t.0 < done)
                .find(|&(i, t)| full(ra.from + i as u64, t.0))
                .map(|(i, t)| (i as u64, t.0))
            else {
                return;
            };
            let b = ra.from + i;
            let cycle = drive.media_cycle(b);
            let mut back = due + cycle;
            while full(b, back) {
                back += cycle;
            }
            // The read-ahead reads `b` at `back`: the spindle's phase as the sector loop
            // sees it moves by what its turns fall short of whole revolutions (tracks with
            // spare sectors), and the access starts half a sector early to meet `b`.
            let shift = back.since(due).0 % period;
            let half_sector = drive.media_step(b).1 / 2000;
            let chs = drive.locate(b).chs;
            ra.head = HeadState {
                cylinder: chs.cylinder,
                head: chs.head,
                phase_ns: (ra.head.phase_ns + period - shift) % period,
            };
            ra.from = b;
            ra.began = Nanos(back.0 - half_sector);
            let seg = ra.segment;
            self.segments[seg].end = b;
        }
    }

    fn write<R: Rng>(
        &mut self,
        drive: &Drive,
        p: &Params,
        now: Nanos,
        x: Transfer,
        rng: Option<&mut R>,
    ) -> Service {
        let c = &p.spec;
        let n = u64::from(x.sectors);
        // A destage done before the write arrived left its segment clean (or empty), no
        // longer one to append to or to avoid (DiskSim `disk_release_hda`).
        if self.destage_end <= now {
            self.destaged(c);
        }
        // An append continues dirty data; DiskSim recognises appends only when it combines
        // sequential writes (`disk_buffer_check_write_segments`).
        let appends =
            c.combine_seq_writes && self.segments.iter().any(|s| s.dirty && s.end == x.lba);
        let destaging = self.destage_end > now;
        // DiskSim 4.0 completes every write from the buffer at level 1 as at level 2
        // (`disk_reconnection_or_transfer_complete` tests only NO_FASTWRITE); "limited"
        // only ranks appending writes in the disk's own queue, which a drive serving one
        // request at a time does not have.
        let fast = c.enable_caching > 0 && c.fast_write_level >= 1;
        let after_read = self.after_read();
        let reading = self.read_ahead.as_ref().map(|ra| ra.segment);
        // The extra write disconnect is suffered by a write that follows a write without
        // continuing it ("a write following a non-sequential write"; the HP C2247A trace
        // marks those writes "Trip", written in three pieces).
        // DiskSim (`disk_buffer_select_segment`) flags it when the segment the write gets
        // is the most recently used one (the end of its LRU list), whose last media access
        // was a write the new one does not start at the end of.
        let mru = self
            .segments
            .iter()
            .enumerate()
            .max_by_key(|(_, s)| s.used)
            .map(|(i, _)| i);
        let seg = match self.segments.iter().position(|s| s.dirty && s.end == x.lba) {
            Some(i) if c.combine_seq_writes => i,
            _ => self.take_segment(p, Op::Write, (x.lba, x.lba + n), reading),
        };
        // A write that finds every write segment dirty gets no segment when it arrives
        // (`disk_buffer_select_write_segment`: an empty or clean segment only while
        // `numdirty < numwritesegs`), and only that first selection may flag the extra
        // disconnect; the segment it is given after the destage never does.
        let dirty = self.segments.iter().filter(|s| s.dirty).count();
        let write_segments = if c.separate_write_segment {
            1
        } else {
            c.write_segments.max(1) as usize
        };
        let segmentless = destaging && !appends && dirty >= write_segments;
        let follows_write = !segmentless
            && Some(seg) == mru
            && self.segments[seg].write_end.is_some_and(|e| e != x.lba);
        let extra = c
            .extra_write_disconnect
            .as_ref()
            .filter(|_| !c.never_disconnect && follows_write);
        let overhead = match (extra, fast, after_read) {
            (Some(e), _, _) => ns(e.command_ms),
            (None, true, true) => p.t.write_hit_after_read,
            (None, true, false) => p.t.write_hit_after_write,
            (None, false, true) => p.t.write_miss_after_read,
            (None, false, false) => p.t.write_miss_after_write,
        };
        let t = now + overhead;
        // A read-ahead short of its minimum when the write arrives cannot be stopped: the
        // drive disconnects, the read-ahead goes on to the minimum and hands over, and the
        // write's data comes after a reselection (DiskSim `disk_write_arrive`,
        // `disk_buffer_stopable_access`).
        // "Write hit stop prefetch" drops the minimum of a read-ahead whose segment the write
        // overlaps (`disk_buffer_stopable_access`: max = min = endblkno).
        let unstoppable = if c.never_disconnect
            || (c.write_hit_stop_prefetch && self.read_ahead_overlaps(drive, now, &x))
        {
            None
        } else {
            self.read_ahead_unstoppable_until(drive, c, now)
        };
        // The segment a read-ahead is still filling when the write takes its segment keeps
        // what it reads even where the write overlaps it: DiskSim (`disk_buffer_set_segment`)
        // empties only clean, inactive segments the write overlaps, and the stopped
        // read-ahead's segment becomes clean with its whole range. A write that waits for
        // an unstoppable read-ahead takes its segment once the read-ahead has handed over.
        let still_reading = self.read_ahead.as_ref().and_then(|ra| {
            (unstoppable.is_none() && Self::read_ahead_done(drive, ra, now) < ra.until - ra.from)
                .then_some(ra.segment)
        });
        // The write's media access (write-through, or the destage, which starts at once)
        // takes the mechanism from a read-ahead whether or not "Write hit stop prefetch" is
        // set: DiskSim hands the hda to the write (`disk_check_hda`) once the read-ahead is
        // stoppable; the setting only cuts short the goal of a read-ahead the write
        // overlaps (`disk_buffer_stopable_access`), which stopping it here covers.
        match unstoppable {
            Some(h) => self.stop_read_ahead(drive, h),
            None => self.preempt_read_ahead(drive, c, now),
        }
        // Data comes over the interface first (after the extra disconnect, if any).
        let mut bus_start = t + p.t.data_preparation;
        if let Some(h) = unstoppable {
            bus_start = bus_start.max(h + p.t.first_reselect + p.t.data_preparation);
        }
        // A write that arrives while the mechanism destages earlier write data it does not
        // append to cannot be taken: the drive disconnects and takes it, reselecting, once
        // the destage is done (DiskSim `disk_write_arrive`: data is accepted at once only
        // when there is no effective media access or it is a stoppable append).
        if !c.never_disconnect && !appends && self.destage_end > now {
            bus_start = bus_start.max(self.destage_end + p.t.first_reselect + p.t.data_preparation);
        }
        // A drive that never disconnects takes the data into another segment during the
        // destage, unless the destaging segment is as many write segments as it may have:
        // DiskSim `disk_buffer_select_write_segment` gives a write no segment but an append
        // while `numdirty >= numwritesegs` (a separate write segment is the only one), and
        // the write waits, holding the bus, for the destage to end.
        let seg_limit = c.write_segments <= 1 || c.separate_write_segment;
        if c.never_disconnect && seg_limit && !appends && self.destage_end > now {
            bus_start = bus_start.max(self.destage_end + p.t.data_preparation);
        }
        if let Some(e) = extra {
            bus_start += ns(e.disconnect_ms) + ns(e.inter_disconnect_delay_ms) + p.t.first_reselect;
        }
        let data_in = bus_start + p.bus_sector_write * n;
        // Cached read data the write overlaps is stale: those segments are dropped.
        let (lo, hi) = (x.lba, x.lba + n);
        // A write given the read-ahead's own segment takes it over: the read-ahead stops
        // (DiskSim `disk_buffer_select_write_segment` takes a reading segment only from
        // a pure prefetch it can stop).
        if let Some(ra) = &self.read_ahead {
            let s = &self.segments[ra.segment];
            if ra.segment == seg || (lo < ra.until.max(s.end) && hi > s.start) {
                self.stop_read_ahead(drive, t);
            }
        }
        for (i, s) in self.segments.iter_mut().enumerate() {
            if i != seg && Some(i) != still_reading && !s.dirty && lo < s.end && hi > s.start {
                s.end = s.start;
            }
        }
        // The media write: positioning overlaps the data transfer; the first sector can be
        // written once it is in the buffer.
        // With an extra disconnect the seek waits for the command overhead plus the seek
        // delta (DiskSim `disk_write_arrive`: `overhead_done` = command + seek delta).
        let seek_from = match extra {
            Some(e) => t + ns(e.seek_delta_ms),
            None => t,
        };
        let mut start = seek_from.max(self.mech_free);
        // Sector k goes to the media when it comes under the head and must be in the buffer
        // by then (DiskSim `disk_buffer_block_available` at the sector's start); a drive with
        // the extra write disconnect starts writing only once min(request, 10) sectors are
        // buffered, 15 for requests of 45 or more (`extra_write_disconnect`).
        let q = match c.extra_write_disconnect {
            Some(_) if n < 45 => n.min(10),
            Some(_) => 15,
            None => 1,
        };
        // An append taken while the destage runs: the destage goes on through what its
        // segment holds (DiskSim `disk_buffer_request_complete`: a background write is done
        // when `inblkno` reaches the segment's end), writing the appended sectors that are
        // buffered when they come under the head, with no positioning of its own, until it
        // catches up with the data. The appending write's own media progress never moved,
        // so it then writes all its sectors again in an access of its own
        // (`disk_find_new_seg_owner`, `disk_initiate_seek`).
        if fast && appends && destaging && seek_from <= self.mech_free {
            let mut passing = Vec::with_capacity(x.sectors as usize);
            let d = drive.access_with_sector_times(
                self.mech_free,
                &self.head,
                x,
                None::<&mut R>,
                &mut passing,
            );
            // The destage's sector loop steps on from its last sector, one LBN a sector
            // time, whatever turns it took (on a track with spare sectors its turns fall
            // short of revolutions, so the platter's angle would put the next sector
            // elsewhere; DiskSim `disk_buffer_sector_done`).
            if track_of(drive, x.lba) == track_of(drive, x.lba.saturating_sub(1)) {
                let (_, on_track) = track_extent(drive, x.lba, n);
                let ps = drive.media_step(x.lba).1;
                for (k, t) in passing.iter_mut().take(on_track as usize).enumerate() {
                    let k = k as u64;
                    *t = (
                        self.mech_free + Span(k * ps / 1000),
                        self.mech_free + Span((k + 1) * ps / 1000),
                    );
                }
            }
            let written = passing
                .iter()
                .enumerate()
                .take_while(|&(k, t)| bus_start + p.bus_sector_write * (k as u64 + 1).max(q) <= t.0)
                .count();
            if written > 0 {
                start = passing[written - 1].1;
                self.head.cylinder = d.end_cylinder;
                self.head.head = d.end_head;
            }
        }
        // "Minimum seek delay" is a floor on the write's positioning time, not a wait
        // before it (DiskSim `disk_initiate_seek`: `if (seektime < mintime) seg->time +=
        // mintime - seektime`).
        if c.minimum_seek_ms > 0.0 {
            let to = drive.locate(x.lba).chs;
            let seek = drive.seek_span(self.head.cylinder, self.head.head, to, Op::Write);
            start += p.t.minimum_seek.saturating_sub(seek);
        }
        let mut times = Vec::with_capacity(x.sectors as usize);
        let a = drive.access_with_sector_times(start, &self.head, x, rng, &mut times);
        // (Zero-latency writes start at the first sector too: see `read`.)
        let landed = start + a.overhead + a.seek;
        let seg_size = u64::from(c.segment_sectors).max(1);
        let (data_in, media_end) = if n <= seg_size {
            let ready = |k: u64| bus_start + p.bus_sector_write * (k + 1).max(q);
            // Zero-latency writes: sectors buffered after their turn has passed are
            // written as they come round, out of order (DiskSim `disk_buffer_sector_done`).
            let media = if c.immediate_buffer_write {
                write_media_immediate(drive, &self.head, x, landed, ready)
            } else {
                write_media_end(drive, &self.head, x, &times, ready)
            };
            (data_in, media)
        } else {
            // A write larger than its segment comes over the interface in pieces as the
            // media write frees room.
            let mark = if c.watermark_by_request {
                ((seg_size.min(n) as f64 * c.low_water_mark) as u64).max(1)
            } else {
                (seg_size as f64 * c.low_water_mark + 0.9999999999) as u64
            };
            let bus = WriteBus {
                start: bus_start,
                sector: p.bus_sector_write,
                size: seg_size,
                q: q.min(seg_size),
                hold: c.hold_bus_write || c.never_disconnect,
                mark,
                disconnect: p.t.write_disconnect,
                reselect: p.t.first_reselect + p.t.data_preparation,
            };
            write_media_segmented(drive, &self.head, x, &times, &bus)
        };
        self.head.cylinder = a.end_cylinder;
        self.head.head = a.end_head;
        self.mech_free = media_end;
        if fast {
            self.destage_end = media_end;
        }
        // Written data stays cached only with caching on (DiskSim `disk_release_hda`:
        // clean = enablecache && readhitsonwritedata, else BUFFER_EMPTY).
        let keep = c.read_hits_on_write_data && c.enable_caching > 0;
        let s = &mut self.segments[seg];
        s.write_end = Some(x.lba + n);
        if s.dirty && s.end == x.lba {
            s.end += n;
        } else {
            *s = Segment {
                start: x.lba,
                end: x.lba + n,
                used: self.clock,
                write_end: Some(x.lba + n),
                dirty: fast,
            };
        }
        // Without read hits on write data, written data is not cached: a written-through
        // segment is empty at once; a dirty one keeps its range (a later write may append
        // to it, DiskSim BUFFER_APPEND) but serves no read hit, and is emptied when it is
        // destaged (DiskSim `disk_release_hda`: clean only with read hits on write data).
        if !keep && !fast {
            s.end = s.start;
        }
        // Write-through: the drive disconnects once the data is in, and reselects (the
        // first reselection, or the other one after an extra disconnect) to report
        // completion once the media write is done (DiskSim `disk_check_bus`,
        // `disk_reconnection_or_transfer_complete`).
        let (disconnect, reselect) = match extra {
            Some(e) => (ns(e.second_disconnect_ms), p.t.other_reselect),
            None => (p.t.write_disconnect, p.t.first_reselect),
        };
        let done = if fast {
            data_in + p.t.write_completion
        } else {
            media_end.max(data_in + disconnect) + reselect + p.t.write_completion
        };
        let completion = if fast {
            p.t.write_completion
        } else {
            done.since(media_end.max(data_in))
        };
        let access = Access {
            overhead: overhead + completion,
            seek: if fast {
                Span::ZERO
            } else {
                a.seek + start.since(t)
            },
            // Time on the track not spent writing: the rotational wait, missed revolutions,
            // or a zero-latency write's pass over the rest of the track.
            rotation: if fast {
                Span::ZERO
            } else {
                media_end
                    .saturating_since(landed)
                    .saturating_sub(a.transfer + a.switches)
            },
            transfer: Span::ZERO,
            switches: Span::ZERO,
            end: done,
            end_cylinder: a.end_cylinder,
            end_head: a.end_head,
        };
        let accounted = access.overhead + access.seek + access.rotation;
        let access = Access {
            transfer: done.since(now).saturating_sub(accounted),
            ..access
        };
        Service { access, hit: fast }
    }
}

/// How many of `goal` LBNs from `from` on lie before the next head switch (or, with
/// `cylinder`, before the next seek).
fn lbns_before_switch(drive: &Drive, from: u64, goal: u64, cylinder: bool) -> u64 {
    let cyl = drive.locate(from).chs.cylinder;
    let mut n = 0;
    while n < goal && from + n < drive.capacity_sectors() {
        if drive.locate(from + n).chs.cylinder != cyl {
            break;
        }
        n += super::sector_loop::track_extent(drive, from + n, goal - n).1;
        if !cylinder {
            break;
        }
    }
    n.min(goal)
}

/// The global track number (cylinder · surfaces + head) holding `lba`.
fn track_of(drive: &Drive, lba: u64) -> u64 {
    let chs = drive.locate(lba).chs;
    u64::from(chs.cylinder) * u64::from(drive.geometry().surfaces()) + u64::from(chs.head)
}

#[cfg(test)]
mod tests;
