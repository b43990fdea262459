//! The read-ahead: what it has read by when, its goal and minimum, how a request stops it,
//! and how it shares its segment with the request that owns it (DiskSim
//! `disk_buffer_sector_done`, `disk_buffer_stopable_access`, `disk_buffer_block_available`).

use super::{lbns_before_switch, track_of, Controller, Params, ReadAhead};
use crate::drive::cache_spec::CacheSpec;
use crate::drive::mech::{Access, Drive, HeadState, Transfer};
use crate::drive::sector_loop::BusLog;
use crate::{Nanos, Op, Span};

impl Controller {
    /// The segment a read of `x` arriving at `now` hits, if its first sector is buffered:
    /// DiskSim's choice (`disk_buffer_select_read_segment`) ranks the segments holding it
    /// by state — dirty 11, destaging 10, being read 9, clean 8 — less 4 for one that does
    /// not hold the whole request (for the segment being read, what is read by `now`),
    /// the least recently used first among equals.
    pub(super) fn hit_segment(&self, drive: &Drive, now: Nanos, x: &Transfer) -> Option<usize> {
        let x_end = x.lba + u64::from(x.sectors);
        let reading = self.read_ahead.as_ref().map(|ra| ra.segment);
        let mut best: Option<(usize, u8)> = None;
        // A dedicated write segment serves no read (DiskSim
        // `disk_buffer_check_read_segments`: dirty data there it overlaps is a collision,
        // the read waiting for the destage and going to the media).
        let write_only = self.dedicated_write_segment();
        for (i, s) in self.segments.iter().enumerate() {
            if Some(i) == write_only || self.ready_in(drive, now, i, x.lba).is_none_or(|t| t > now)
            {
                continue;
            }
            let (state, end) = match &self.read_ahead {
                Some(ra) if Some(i) == reading => {
                    (9, ra.from + Self::read_ahead_done(drive, ra, now))
                }
                _ if s.dirty && self.destage_end > now => (10, s.end),
                _ if s.dirty => (11, s.end),
                _ => (8, s.end),
            };
            let value = if end >= x_end { state } else { state - 4 };
            let better = best
                .is_none_or(|(b, v)| value > v || (value == v && s.used < self.segments[b].used));
            if better {
                best = Some((i, value));
            }
        }
        best.map(|(i, _)| i)
    }

    /// When sector `lba` is (or will be) in segment `seg`, if it holds it.
    pub(super) fn ready_in(
        &self,
        drive: &Drive,
        now: Nanos,
        seg: usize,
        lba: u64,
    ) -> Option<Nanos> {
        let s = &self.segments[seg];
        if let Some(ra) = self.read_ahead.as_ref().filter(|ra| ra.segment == seg) {
            // The segment is circular: sectors the read-ahead has pushed out are gone,
            // its own first ones too once it has read a segment past them.
            let wrap = self.wrap_start(drive, ra, now);
            if lba >= s.start && lba < ra.from && lba >= wrap {
                return Some(Nanos::ZERO);
            }
            if lba >= ra.from && lba < ra.until && lba >= wrap {
                return Some(ra.first(drive, lba - ra.from + 1).end);
            }
            return None;
        }
        (lba >= s.start && lba < s.end && (!s.dirty || self.read_hits_on_write_data()))
            .then_some(Nanos::ZERO)
    }

    /// Whole sectors the read-ahead has read by `t` (DiskSim stops at a sector boundary).
    pub(super) fn read_ahead_done(drive: &Drive, ra: &ReadAhead, t: Nanos) -> u64 {
        let sectors = u32::try_from(ra.until - ra.from).expect("a read-ahead is at most a segment");
        drive.sectors_moved_by(ra.began, &ra.head, Op::Read, (ra.from, sectors), t)
    }

    /// [`Self::read_ahead_done`], with the media access of those sectors (`None` for none).
    pub(super) fn read_ahead_progress(
        drive: &Drive,
        ra: &ReadAhead,
        t: Nanos,
    ) -> (u64, Option<Access>) {
        let done = Self::read_ahead_done(drive, ra, t);
        (done, (done > 0).then(|| ra.first(drive, done)))
    }

    /// The first sector still in the read-ahead's segment at `t`: a segment holds at most
    /// `segment_sectors`, and read-ahead data overwrites the oldest (DiskSim
    /// `disk_buffer_segment_wrap`: start = max(start, end − size)).
    pub(super) fn wrap_start(&self, drive: &Drive, ra: &ReadAhead, t: Nanos) -> u64 {
        self.wrap_start_after(ra, Self::read_ahead_done(drive, ra, t))
    }

    /// [`Self::wrap_start`] for a read-ahead that has read `done` sectors.
    pub(super) fn wrap_start_after(&self, ra: &ReadAhead, done: u64) -> u64 {
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
    /// with the sector always finished, 97.648 % so). Returns how long after `now` the
    /// mechanism is held: DiskSim adds that wait to the new request's command overhead
    /// before its seek starts (`disk_check_hda`: `delay` is the sum of both).
    pub(super) fn preempt_read_ahead(&mut self, drive: &Drive, c: &CacheSpec, now: Nanos) -> Span {
        let Some(ra) = &self.read_ahead else {
            return Span::ZERO;
        };
        let done = Self::read_ahead_done(drive, ra, now);
        // A read-ahead moving to its next track finishes the head switch or seek first
        // (`disk_seek_stoptime`: the pending event is the seek's end), and the heads are
        // then on that track.
        let next = (done < ra.until - ra.from).then(|| {
            let b = ra.from + done;
            let (cylinder, head, left) = if done == 0 {
                (ra.head.cylinder, ra.head.head, ra.began)
            } else {
                let last = drive.locate(b - 1).chs;
                (last.cylinder, last.head, ra.first(drive, done).end)
            };
            let to = drive.locate(b).chs;
            let moving = (to.cylinder, to.head) != (cylinder, head);
            let arrive = left + drive.seek_span(cylinder, head, to, Op::Read);
            moving.then_some((to, arrive))
        });
        // (A switch or seek already done has left the heads on the next track, waiting
        // for its first sector: DiskSim's `disk_buffer_seekdone` moved `mech_state`.)
        let free = if let Some(Some((_, arrive))) = next.filter(|&n| n.is_some_and(|n| n.1 > now)) {
            arrive
        } else if c.read_directly_to_buffer
            || c.stop_prefetch_in_sector
            || done >= ra.until - ra.from
        {
            now
        } else {
            ra.first(drive, done + 1).end.max(now)
        };
        self.stop_read_ahead(drive, now);
        if let Some(Some((to, _))) = next {
            self.head.cylinder = to.cylinder;
            self.head.head = to.head;
        }
        self.mech_free = self.mech_free.max(free);
        free.saturating_since(now)
    }

    /// Whether `x` overlaps what the read-ahead's segment holds at `t` (DiskSim
    /// `disk_buffer_overlap` on `startblkno..endblkno`).
    pub(super) fn read_ahead_overlaps(&self, drive: &Drive, t: Nanos, x: &Transfer) -> bool {
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
    pub(super) fn stop_read_ahead(&mut self, drive: &Drive, t: Nanos) {
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

    /// Where a read-ahead started for a request ending at `end` may first be stopped.
    pub(super) fn min_read_ahead_end(drive: &Drive, c: &CacheSpec, end: u64) -> u64 {
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
    pub(super) fn read_ahead_unstoppable_until(
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

    /// Where the read-ahead stops after a hit on `x`, for `continuous_read` mode 3 (DiskSim
    /// `disk_buffer_get_max_readahead`, which `disk_buffer_attempt_seg_ownership` applies to
    /// every request on the segment): the request's end plus the maximum read-ahead when one
    /// is set; else a segment past the request with "Read-ahead over requested", or without
    /// it a segment from the request's first sector (its end plus the minimum read-ahead if
    /// the request leaves less than that). `None` for the other modes.
    pub(super) fn read_ahead_goal(drive: &Drive, c: &CacheSpec, x: &Transfer) -> Option<u64> {
        if !matches!(c.continuous_read, 1..=3) || c.enable_caching == 0 {
            return None;
        }
        let n = u64::from(x.sectors);
        let end = x.lba + n;
        let size = u64::from(c.segment_sectors);
        let min = u64::from(c.min_read_ahead_sectors);
        let goal = if c.max_read_ahead_sectors > 0 {
            end + u64::from(c.max_read_ahead_sectors)
        } else if c.read_ahead_over_requested {
            end + size
        } else if n >= size || size - n < min {
            end + min
        } else {
            x.lba + size
        };
        Some(goal.min(drive.capacity_sectors()))
    }

    /// Whether a read-ahead from `from` would need a head switch (mode 1) or a seek (mode
    /// 2) from where the heads are, which DiskSim's `disk_initiate_seek` refuses a
    /// background read.
    pub(super) fn read_ahead_needs_move(&self, drive: &Drive, c: &CacheSpec, from: u64) -> bool {
        let dest = drive.locate(from).chs;
        match c.continuous_read {
            1 => (dest.cylinder, dest.head) != (self.head.cylinder, self.head.head),
            2 => dest.cylinder != self.head.cylinder,
            _ => false,
        }
    }

    /// How far a read-ahead from `from` may go towards `goal`: modes 1 and 2 stop where
    /// the background read would need a head switch (mode 1) or a seek (mode 2) (DiskSim
    /// `disk_initiate_seek`), counted in LBNs.
    pub(super) fn read_ahead_reach(drive: &Drive, c: &CacheSpec, from: u64, goal: u64) -> u64 {
        let n = goal.saturating_sub(from);
        match c.continuous_read {
            1 => from + lbns_before_switch(drive, from, n, false),
            2 => from + lbns_before_switch(drive, from, n, true),
            _ => goal,
        }
    }

    pub(super) fn start_read_ahead(
        &mut self,
        drive: &Drive,
        p: &Params,
        (seg, counted_from): (usize, Option<u64>),
        from: u64,
        at: Nanos,
    ) {
        let c = &p.spec;
        if c.continuous_read == 0 || c.enable_caching == 0 || from >= drive.capacity_sectors() {
            return;
        }
        let geo = drive.geometry();
        // A hit on data the read-ahead is still bringing in can leave the start past the
        // recorded end (the rest is counted by the read-ahead): no data yet, not negative.
        // DiskSim counts the segment's data from the request's first sector after a miss
        // (its "Read any free blocks" reads nothing before it; spindle's sectors from
        // before it are a departure, docs/validation.md).
        let start = self.segments[seg].start.max(counted_from.unwrap_or(0));
        let seg_len = self.segments[seg].end.saturating_sub(start);
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
        // Modes 1 and 2 read ahead only without a head switch or a seek from where the
        // mechanism is (DiskSim `disk_initiate_seek` refuses a background read whose first
        // sector is on another track or cylinder than the heads): a request ending at a
        // track's end is not read ahead of.
        if self.read_ahead_needs_move(drive, c, from) {
            return;
        }
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
                // (The segment's start when the request began: DiskSim computes the goal
                // before the request's own sectors wrap the segment.)
                let seg_start = counted_from.unwrap_or(self.segments[seg].start).min(from);
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
    pub(super) fn hold_read_ahead(
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
}
