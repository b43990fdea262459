//! Writes: segment choice, the extra write disconnect, fast writes completed from the
//! buffer and destaged in the background, write-through, and appends joining a destage
//! (DiskSim `disk_write_arrive`, `disk_buffer_select_write_segment`).

use super::{ns, track_of, Controller, Params, Segment, Service};
use crate::drive::mech::{Access, Drive, Transfer};
use crate::drive::sector_loop::{
    track_extent, write_media_end, write_media_immediate, write_media_segmented, WriteBus,
};
use crate::{Nanos, Op, Span};
use rand::Rng;

impl Controller {
    pub(super) fn write<R: Rng>(
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
        // A write that waits for the destage of data it does not append to (below) has
        // its segment chosen again once the destage is done (DiskSim `disk_release_hda`,
        // `disk_buffer_select_write_segment`): the destaged segment is then empty (or
        // clean) and preferred to the clean one picked on arrival, which that first choice
        // does not make the most recently used (`disk_buffer_set_segment` is not reached).
        let chosen_again = !c.never_disconnect && !appends && destaging;
        let mut seg = match self.segments.iter().position(|s| s.dirty && s.end == x.lba) {
            Some(i) if c.combine_seq_writes => i,
            _ if chosen_again => self.pick_segment(Op::Write, (x.lba, x.lba + n), reading),
            _ => self.take_segment(Op::Write, (x.lba, x.lba + n), reading),
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
        if chosen_again {
            self.destaged(c);
            seg = self.take_segment(Op::Write, (x.lba, x.lba + n), reading);
        }
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
        let unstoppable = if c.write_hit_stop_prefetch && self.read_ahead_overlaps(drive, now, &x) {
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
        let held = match unstoppable {
            Some(h) => {
                self.stop_read_ahead(drive, h);
                Span::ZERO
            }
            None => self.preempt_read_ahead(drive, c, now),
        };
        // Data comes over the interface first (after the extra disconnect, if any).
        let mut bus_start = t + p.t.data_preparation;
        // The drive has disconnected after the command overhead and the write disconnect
        // overhead (`disk_write_arrive`), and reconnects no sooner.
        if let Some(h) = unstoppable.filter(|_| !c.never_disconnect) {
            let back = h.max(t + p.t.write_disconnect);
            bus_start = bus_start.max(back + p.t.first_reselect + p.t.data_preparation);
        }
        // A write that arrives while the mechanism destages earlier write data it does not
        // append to cannot be taken: the drive disconnects and takes it, reselecting, once
        // the destage is done (DiskSim `disk_write_arrive`: data is accepted at once only
        // when there is no effective media access or it is a stoppable append).
        if !c.never_disconnect && !appends && self.destage_end > now {
            let back = self.destage_end.max(t + p.t.write_disconnect);
            bus_start = bus_start.max(back + p.t.first_reselect + p.t.data_preparation);
        }
        // A drive that never disconnects takes the data into another segment during the
        // destage, unless the destaging segment is as many write segments as it may have:
        // DiskSim `disk_buffer_select_write_segment` gives a write no segment but an append
        // while `numdirty >= numwritesegs` (a separate write segment is the only one), and
        // the write waits, holding the bus, for the destage to end.
        // Nor does a write that overlaps the data being destaged get a segment
        // (`disk_buffer_select_write_segment`: a BUFFER_COLLISION with a segment whose
        // owner has had its completion, `disk_buffer_reusable_segment_check`).
        let seg_limit = c.write_segments <= 1 || c.separate_write_segment;
        let (lo, hi) = (x.lba, x.lba + n);
        let collides = self
            .segments
            .iter()
            .any(|s| s.dirty && lo < s.end && hi > s.start);
        if c.never_disconnect && (seg_limit || collides) && !appends && self.destage_end > now {
            // The held bus sends the data as the destage releases the segment, with no
            // data preparation of its own (DiskSim: the transfer starts at the release).
            bus_start = bus_start.max(self.destage_end);
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
        let mut start = (seek_from + held).max(self.mech_free);
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
            let immediate = c.immediate_buffer_write.then_some(landed);
            write_media_segmented(drive, &self.head, x, (&times, immediate), &bus)
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
        // The segment is circular: it holds at most its size, the last sectors written
        // (DiskSim `disk_buffer_segment_wrap` as the data comes in).
        s.start = s.start.max(s.end.saturating_sub(seg_size));
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
