//! Where a parity array keeps its data and parity: G disks per parity group, several groups
//! per array, data striped in stripe units across the groups (unit u of the array goes to
//! group u mod groups), and in each group a parity stripe of G − 1 data units and one parity
//! unit. RAID-5 rotates the parity unit over the group's disks (the four rotations DiskSim
//! offers, left-symmetric by default); RAID-4 keeps it on the group's last disk.
//!
//! Stripe s's units lie at the same sectors of every disk (its *row*). Conventionally every
//! row is one fixed stripe unit; **track-aligned** ([`ParityLayout::new_track_aligned`]) row
//! s is track s (module [`rows`]), so the unit varies by zone. Either way stripe s holds the
//! logical sectors `[D · b_s, D · b_{s+1})`, D = groups × (G − 1) data units per stripe and
//! `b_s` the unit sectors of the rows before s, dealt unit by unit to the groups as before.

mod rows;

use rows::{Rows, TrackRows};
use serde::{Deserialize, Serialize};

/// Where stripe s's parity unit lies and how its data units follow it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParityRotation {
    /// Parity on disk G−1−(s mod G); data units start on the disk after it and wrap
    /// (consecutive units visit every disk before any repeats: Linux md's default).
    #[default]
    LeftSymmetric,
    /// Parity on disk G−1−(s mod G); data units on the other disks in disk order.
    LeftAsymmetric,
    /// Parity on disk s mod G; data units start on the disk after it and wrap.
    RightSymmetric,
    /// Parity on disk s mod G; data units on the other disks in disk order.
    RightAsymmetric,
    /// RAID-4: parity always on the group's last disk.
    Dedicated,
}

impl ParityRotation {
    pub fn name(self) -> &'static str {
        match self {
            ParityRotation::LeftSymmetric => "left-symmetric",
            ParityRotation::LeftAsymmetric => "left-asymmetric",
            ParityRotation::RightSymmetric => "right-symmetric",
            ParityRotation::RightAsymmetric => "right-asymmetric",
            ParityRotation::Dedicated => "dedicated",
        }
    }
}

/// The part of a host request inside one data unit of one parity stripe.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UnitPiece {
    pub group: u32,
    pub stripe: u64,
    /// The data unit's index in its stripe, 0 .. G−1.
    pub unit: u32,
    /// Sectors from the unit's start.
    pub offset: u32,
    pub sectors: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParityLayout {
    groups: u32,
    width: u32,
    rows: Rows,
    stripes: u64,
    rotation: ParityRotation,
}

impl ParityLayout {
    /// `groups` parity groups of `width` disks of `disk_sectors` each, stripe units of
    /// `unit_sectors`; `data_sectors`: the data set (absent: every whole stripe).
    pub fn new(
        groups: u32,
        width: u32,
        unit_sectors: u32,
        disk_sectors: u64,
        data_sectors: Option<u64>,
        rotation: ParityRotation,
    ) -> Result<ParityLayout, String> {
        Self::check_shape(groups, width)?;
        if unit_sectors == 0 {
            return Err("the stripe unit is at least one sector".into());
        }
        let max_stripes = disk_sectors / u64::from(unit_sectors);
        let per_stripe = u64::from(groups) * u64::from(width - 1) * u64::from(unit_sectors);
        let stripes = match data_sectors {
            None => max_stripes,
            Some(d) => {
                let need = d.div_ceil(per_stripe);
                if need > max_stripes {
                    return Err(format!(
                        "the data set ({d} sectors) exceeds the array's {} data sectors",
                        max_stripes * per_stripe
                    ));
                }
                need
            }
        };
        if stripes == 0 {
            return Err("a disk holds no whole stripe unit".into());
        }
        Ok(ParityLayout {
            groups,
            width,
            rows: Rows::Fixed(unit_sectors),
            stripes,
            rotation,
        })
    }

    /// A track-aligned layout on `drive` (spindle's own layout): stripe s's row is track s,
    /// less the sectors before its first and after its last whole block of `block_sectors`
    /// (the caches move whole blocks, and a block straddling two tracks would belong to two
    /// stripes); a track holding no whole block is no stripe. `data_sectors` as in
    /// [`ParityLayout::new`].
    pub fn new_track_aligned(
        groups: u32,
        width: u32,
        drive: &crate::drive::Drive,
        block_sectors: u32,
        data_sectors: Option<u64>,
        rotation: ParityRotation,
    ) -> Result<ParityLayout, String> {
        Self::check_shape(groups, width)?;
        let per_disk = data_sectors.map(|d| d.div_ceil(u64::from(groups) * u64::from(width - 1)));
        let rows = TrackRows::tracks(drive, block_sectors, per_disk)?;
        let stripes = rows.len();
        if let (Some(d), Some(need)) = (data_sectors, per_disk) {
            if rows.before(stripes) < need {
                return Err(format!(
                    "the data set ({d} sectors) exceeds the array's {} data sectors",
                    rows.before(stripes) * u64::from(groups) * u64::from(width - 1)
                ));
            }
        }
        if stripes == 0 {
            return Err("a disk holds no whole track-aligned stripe unit".into());
        }
        Ok(ParityLayout {
            groups,
            width,
            rows: Rows::Tracks(std::sync::Arc::new(rows)),
            stripes,
            rotation,
        })
    }

    fn check_shape(groups: u32, width: u32) -> Result<(), String> {
        if groups == 0 {
            return Err("a parity array has at least one parity group".into());
        }
        if width < 3 {
            return Err(format!(
                "a parity group has at least 3 disks (2 data + parity), got {width}"
            ));
        }
        Ok(())
    }

    pub fn groups(&self) -> u32 {
        self.groups
    }

    /// Disks per parity group, G.
    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn disks(&self) -> usize {
        (self.groups * self.width) as usize
    }

    /// The stripe unit when it is fixed; `None` when it is one track (it varies by zone).
    pub fn fixed_unit(&self) -> Option<u32> {
        match &self.rows {
            Rows::Fixed(u) => Some(*u),
            Rows::Tracks(_) => None,
        }
    }

    /// Whether each stripe's unit is one track ([`ParityLayout::new_track_aligned`]).
    pub fn track_aligned(&self) -> bool {
        self.fixed_unit().is_none()
    }

    /// Sectors of each unit (data or parity) of stripe `stripe`.
    pub fn unit_of(&self, stripe: u64) -> u32 {
        match &self.rows {
            Rows::Fixed(u) => *u,
            Rows::Tracks(t) => t.unit(stripe),
        }
    }

    /// Unit sectors of the stripes before `stripe` (on each disk).
    pub fn before(&self, stripe: u64) -> u64 {
        match &self.rows {
            Rows::Fixed(u) => stripe * u64::from(*u),
            Rows::Tracks(t) => t.before(stripe),
        }
    }

    /// Data units per stripe over all groups, D.
    fn data_units(&self) -> u64 {
        u64::from(self.groups) * u64::from(self.width - 1)
    }

    pub fn rotation(&self) -> ParityRotation {
        self.rotation
    }

    /// Parity stripes per group.
    pub fn stripes(&self) -> u64 {
        self.stripes
    }

    /// Data sectors: every group's stripes of G − 1 data units.
    pub fn capacity_sectors(&self) -> u64 {
        self.before(self.stripes) * self.data_units()
    }

    /// The stripe holding array sector `lba`.
    fn stripe_of(&self, lba: u64) -> u64 {
        match &self.rows {
            Rows::Fixed(u) => lba / (self.data_units() * u64::from(*u)),
            Rows::Tracks(t) => t.stripe_of(lba / self.data_units()),
        }
    }

    /// Splits `sectors` at `lba` into its pieces in data units, in address order.
    pub fn pieces(&self, lba: u64, sectors: u32, out: &mut Vec<UnitPiece>) {
        let (mut at, end) = (lba, lba + u64::from(sectors));
        let groups = u64::from(self.groups);
        while at < end {
            let stripe = self.stripe_of(at);
            let unit = u64::from(self.unit_of(stripe));
            // The unit's index in its stripe, counting every group's units in turn.
            let rel = at - self.before(stripe) * self.data_units();
            let u = rel / unit;
            let offset = (rel % unit) as u32;
            let n = (end - at).min(unit - u64::from(offset)) as u32;
            out.push(UnitPiece {
                group: (u % groups) as u32,
                stripe,
                unit: (u / groups) as u32,
                offset,
                sectors: n,
            });
            at += u64::from(n);
        }
    }

    /// The disk (array-wide) of stripe `stripe`'s parity unit in `group`.
    pub fn parity_disk(&self, group: u32, stripe: u64) -> usize {
        let g = u64::from(self.width);
        let p = match self.rotation {
            ParityRotation::LeftSymmetric | ParityRotation::LeftAsymmetric => g - 1 - stripe % g,
            ParityRotation::RightSymmetric | ParityRotation::RightAsymmetric => stripe % g,
            ParityRotation::Dedicated => g - 1,
        };
        (group * self.width) as usize + p as usize
    }

    /// The disk (array-wide) of data unit `unit` of stripe `stripe` in `group`.
    pub fn data_disk(&self, group: u32, stripe: u64, unit: u32) -> usize {
        let g = self.width;
        let p = (self.parity_disk(group, stripe) - (group * g) as usize) as u32;
        let d = match self.rotation {
            ParityRotation::LeftSymmetric | ParityRotation::RightSymmetric => (p + 1 + unit) % g,
            _ if unit < p => unit,
            _ => unit + 1,
        };
        (group * g + d) as usize
    }

    /// The first disk sector of stripe `stripe`'s units (the same on every disk).
    pub fn stripe_lba(&self, stripe: u64) -> u64 {
        match &self.rows {
            Rows::Fixed(u) => stripe * u64::from(*u),
            Rows::Tracks(t) => t.start(stripe),
        }
    }

    /// The stripe whose row holds disk sector `lba` and the offset in its units; `None`
    /// beyond the last stripe or between two track-aligned rows.
    pub fn row_of(&self, lba: u64) -> Option<(u64, u32)> {
        let stripe = match &self.rows {
            Rows::Fixed(u) => lba / u64::from(*u),
            Rows::Tracks(t) => t.row_at(lba)?,
        };
        let offset = lba.checked_sub(self.stripe_lba(stripe))?;
        (stripe < self.stripes && offset < u64::from(self.unit_of(stripe)))
            .then_some((stripe, offset as u32))
    }

    /// Whether every stripe's row starts on a block of `block_sectors` and is whole blocks
    /// (the caches' condition).
    pub fn whole_blocks(&self, block_sectors: u32) -> bool {
        let bs = u64::from(block_sectors);
        match &self.rows {
            Rows::Fixed(u) => u64::from(*u).is_multiple_of(bs),
            Rows::Tracks(_) => (0..self.stripes).all(|s| {
                self.stripe_lba(s).is_multiple_of(bs)
                    && u64::from(self.unit_of(s)).is_multiple_of(bs)
            }),
        }
    }

    /// Disk sectors up to the end of the last stripe's row.
    pub fn disk_sectors_used(&self) -> u64 {
        let last = self.stripes - 1;
        self.stripe_lba(last) + u64::from(self.unit_of(last))
    }

    /// The array address of a piece of a data unit (the inverse of [`ParityLayout::pieces`]).
    pub fn logical(&self, group: u32, stripe: u64, unit: u32, offset: u32) -> u64 {
        let u = u64::from(unit) * u64::from(self.groups) + u64::from(group);
        self.before(stripe) * self.data_units()
            + u * u64::from(self.unit_of(stripe))
            + u64::from(offset)
    }
}

#[cfg(test)]
mod track_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(rotation: ParityRotation) -> ParityLayout {
        ParityLayout::new(2, 5, 72, 72 * 100, None, rotation).expect("valid")
    }

    #[test]
    fn left_symmetric_is_the_md_default_pattern() {
        let l = layout(ParityRotation::LeftSymmetric);
        // Group 0, G = 5: stripe 0 parity on disk 4, data on 0..3; stripe 1 parity on 3,
        // data on 4, 0, 1, 2.
        assert_eq!(l.parity_disk(0, 0), 4);
        assert_eq!(
            (0..4).map(|k| l.data_disk(0, 0, k)).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(l.parity_disk(0, 1), 3);
        assert_eq!(
            (0..4).map(|k| l.data_disk(0, 1, k)).collect::<Vec<_>>(),
            [4, 0, 1, 2]
        );
        // Group 1 is disks 5..9.
        assert_eq!(l.parity_disk(1, 1), 8);
    }

    #[test]
    fn every_rotation_puts_data_and_parity_on_distinct_disks_and_round_trips() {
        for rot in [
            ParityRotation::LeftSymmetric,
            ParityRotation::LeftAsymmetric,
            ParityRotation::RightSymmetric,
            ParityRotation::RightAsymmetric,
            ParityRotation::Dedicated,
        ] {
            let l = layout(rot);
            let mut parity_count = vec![0u32; l.disks()];
            for g in 0..2 {
                for s in 0..10 {
                    let mut seen: Vec<usize> = (0..4).map(|k| l.data_disk(g, s, k)).collect();
                    seen.push(l.parity_disk(g, s));
                    parity_count[l.parity_disk(g, s)] += 1;
                    seen.sort_unstable();
                    let want: Vec<usize> = (g as usize * 5..g as usize * 5 + 5).collect();
                    assert_eq!(seen, want, "{rot:?} g{g} s{s}");
                }
            }
            // Rotations spread parity evenly over 10 stripes (2 per disk); RAID-4 keeps it
            // on each group's last disk.
            let want: Vec<u32> = if rot == ParityRotation::Dedicated {
                vec![0, 0, 0, 0, 10, 0, 0, 0, 0, 10]
            } else {
                vec![2; 10]
            };
            assert_eq!(parity_count, want, "{rot:?}");
            let mut out = Vec::new();
            l.pieces(0, (l.capacity_sectors()) as u32, &mut out);
            let mut at = 0;
            for p in &out {
                assert_eq!(l.logical(p.group, p.stripe, p.unit, p.offset), at);
                at += u64::from(p.sectors);
            }
            assert_eq!(at, l.capacity_sectors());
        }
    }

    #[test]
    fn units_alternate_groups_then_fill_a_stripe() {
        let l = layout(ParityRotation::LeftSymmetric);
        let mut out = Vec::new();
        l.pieces(70, 4 + 72, &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|p| (p.group, p.stripe, p.unit, p.offset, p.sectors))
            .collect();
        assert_eq!(got, [(0, 0, 0, 70, 2), (1, 0, 0, 0, 72), (0, 0, 1, 0, 2)]);
    }

    #[test]
    fn impossible_shapes_are_refused() {
        assert!(ParityLayout::new(1, 2, 8, 800, None, ParityRotation::default()).is_err());
        assert!(ParityLayout::new(0, 5, 8, 800, None, ParityRotation::default()).is_err());
        assert!(ParityLayout::new(1, 5, 8, 800, Some(10_000), ParityRotation::default()).is_err());
    }
}
