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
//! The state and the shared helpers live here; reads in `read.rs`, writes in `write.rs`, the
//! read-ahead in `read_ahead.rs`.
//!
//! Not modelled (they matter only with several devices sharing a bus or deep drive queues):
//! bus arbitration and holding, sneaky/intermediate hits, write prebuffering, preseeking.

use super::cache_spec::CacheSpec;
use super::mech::{Access, Drive, HeadState, Transfer};
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

    /// The segment every write takes and no read uses, with "Use separate write segment"
    /// (DiskSim `dedicatedwriteseg`): the last.
    fn dedicated_write_segment(&self) -> Option<usize> {
        let separate = self
            .params
            .as_ref()
            .is_some_and(|p| p.spec.separate_write_segment);
        (separate && self.segments.len() > 1).then(|| self.segments.len() - 1)
    }

    fn after_read(&self) -> bool {
        self.last_op == Op::Read
    }

    /// A segment for new data of `op` on `lba..end`, chosen as DiskSim does
    /// (`disk_buffer_select_read_segment`, `disk_buffer_select_write_segment`): for a write,
    /// a clean segment it overlaps; then an empty segment (it trashes no data); then a
    /// clean one; the segment the read-ahead was filling (`reading`) last, and one holding
    /// write data not yet on the media only if nothing else is left. Ties go to the least
    /// recently used.
    fn take_segment(&mut self, op: Op, range: (u64, u64), reading: Option<usize>) -> usize {
        let i = self.pick_segment(op, range, reading);
        self.segments[i].used = self.clock;
        i
    }

    /// The segment [`Controller::take_segment`] would take, leaving the LRU order alone.
    fn pick_segment(&self, op: Op, (lba, end): (u64, u64), reading: Option<usize>) -> usize {
        let n = self.segments.len();
        let range = match self.dedicated_write_segment() {
            None => 0..n,
            Some(w) if op == Op::Write => w..w + 1,
            Some(w) => 0..w,
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
        range
            .max_by_key(|&i| (rank(i), std::cmp::Reverse(self.segments[i].used)))
            .expect("a segment exists")
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

mod read;
mod read_ahead;
mod write;

#[cfg(test)]
mod tests;
