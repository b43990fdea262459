//! Where each parity stripe's row lies on the disks: a fixed stripe unit, or one track per
//! stripe (track-aligned). Track-aligned rows are listed once, at build time: their units
//! vary by zone, and with whole blocks kept, from track to track within a zone too.

use crate::drive::Drive;
use crate::layout::track_geometry;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Rows {
    /// Stripe s is sectors `[s · u, (s + 1) · u)` of every disk.
    Fixed(u32),
    Tracks(Arc<TrackRows>),
}

/// Track-aligned rows: stripe s's units start at disk sector `start[s]` and hold
/// `before[s + 1] − before[s]` sectors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TrackRows {
    start: Vec<u64>,
    /// Unit sectors of the stripes before s; one more entry than `start`.
    before: Vec<u64>,
}

impl TrackRows {
    /// One row per track of `drive` holding a whole block of `block_sectors` (its whole
    /// blocks), from the outer edge until the rows hold `per_disk` sectors (absent: the
    /// whole disk).
    pub(super) fn tracks(
        drive: &Drive,
        block_sectors: u32,
        per_disk: Option<u64>,
    ) -> Result<TrackRows, String> {
        let geo = track_geometry(drive).map_err(|e| e.0)?;
        let bs = u64::from(block_sectors.max(1));
        let (mut start, mut before) = (Vec::new(), vec![0u64]);
        let (mut at, mut held) = (0u64, 0u64);
        while at < geo.capacity_sectors() && per_disk.is_none_or(|need| held < need) {
            let (first, len) = geo.track_of(at).expect("checked: contiguous tracks");
            let (a, b) = (first.next_multiple_of(bs), (first + len) / bs * bs);
            if b > a {
                start.push(a);
                held += b - a;
                before.push(held);
            }
            at = first + len;
        }
        Ok(TrackRows { start, before })
    }

    pub(super) fn len(&self) -> u64 {
        self.start.len() as u64
    }

    pub(super) fn start(&self, stripe: u64) -> u64 {
        self.start[stripe as usize]
    }

    pub(super) fn before(&self, stripe: u64) -> u64 {
        self.before[stripe as usize]
    }

    pub(super) fn unit(&self, stripe: u64) -> u32 {
        let s = stripe as usize;
        u32::try_from(self.before[s + 1] - self.before[s]).expect("a track fits u32")
    }

    /// The stripe holding sector `x` of a disk's units laid end to end.
    pub(super) fn stripe_of(&self, x: u64) -> u64 {
        (self.before.partition_point(|&b| b <= x) - 1) as u64
    }

    /// The last stripe whose row starts at or before disk sector `lba`.
    pub(super) fn row_at(&self, lba: u64) -> Option<u64> {
        (self.start.partition_point(|&a| a <= lba) as u64).checked_sub(1)
    }
}
