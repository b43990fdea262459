//! DiskSim-exact layout parameters of a drive file (`[layout]`): sparing schemes, defects,
//! zone-front space, first-block offsets, LBN-to-PBN mapping order. Absent: the plain
//! traditional layout of [`super::geometry`].
//!
//! With `sparing` set, the drive's LBA ↔ physical mapping and sector angles are DiskSim 4.0's
//! `dm_layout_g1` (see [`super::disksim::layout_g1`]): `zones[i]` of the drive file gives the
//! zone's cylinders, sectors per track, skews and skew unit exactly as DiskSim's
//! `dm_layout_g1_zone` does, and `layout.zones[i]` the rest of that zone. DiskSim zones may
//! leave cylinders out (no LBA lives there) and the last may name a cylinder past the end when
//! no LBA maps there; the per-track and per-zone spare fields of `zones[i]` and the drive-wide
//! `slips` must then be empty, since the sparing scheme says where spares and slips are.

use serde::{Deserialize, Serialize};

/// Layout details beyond zones, skews and per-track/per-zone spares.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LayoutSpec {
    /// DiskSim "Sparing scheme used". Absent: the plain layout (all other fields default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparing: Option<Sparing>,
    /// DiskSim "Rangesize for sparing": cylinders per sparing range (scheme
    /// `sectors_per_range` only; DiskSim requires it > 0 for every scheme).
    #[serde(default = "one")]
    pub sparing_range_cylinders: u32,
    /// DiskSim "LBN-to-PBN mapping scheme".
    #[serde(default)]
    pub mapping: Mapping,
    /// One entry per drive-file zone, in the same order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<LayoutZone>,
}

impl Default for LayoutSpec {
    fn default() -> Self {
        LayoutSpec {
            sparing: None,
            sparing_range_cylinders: 1,
            mapping: Mapping::Normal,
            zones: Vec::new(),
        }
    }
}

fn one() -> u32 {
    1
}

/// DiskSim's sparing schemes (`dm_layout_g1_spare_t`), named; the number is DiskSim's.
#[derive(Copy, Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Sparing {
    /// 0: no spares.
    None,
    /// 1: `Number of spares` whole tracks at the end of each zone; slips and defects are
    /// track numbers.
    Tracks,
    /// 2: spare sectors at the end of every cylinder.
    SectorsPerCylinder,
    /// 3: spare sectors at the end of every track.
    SectorsPerTrack,
    /// 4: as 2, and a slip pushes every later LBA of the zone along.
    SectorsPerCylinderSlipToEnd,
    /// 5: spare sectors at the front of every cylinder.
    SectorsPerCylinderAtFront,
    /// 6: as 5 with slips to the zone end.
    SectorsPerCylinderAtFrontSlipToEnd,
    /// 7: no reserved spares; each slip pushes the zone's later LBAs along and its last
    /// sectors out (DiskSim `SECTATEND_SPARING`).
    SectorsAtZoneEnd,
    /// 8: spare sectors at the end of every range of `sparing_range_cylinders` cylinders.
    SectorsPerRange,
    /// 9: `Number of spares` sectors at the end of each zone; slips use them.
    SectorsPerZone,
    /// 10: as 9, and slips cost capacity instead of spares.
    SectorsPerZoneSlipToEnd,
}

impl Sparing {
    /// DiskSim's number for the scheme.
    pub fn disksim_number(self) -> u32 {
        match self {
            Sparing::None => 0,
            Sparing::Tracks => 1,
            Sparing::SectorsPerCylinder => 2,
            Sparing::SectorsPerTrack => 3,
            Sparing::SectorsPerCylinderSlipToEnd => 4,
            Sparing::SectorsPerCylinderAtFront => 5,
            Sparing::SectorsPerCylinderAtFrontSlipToEnd => 6,
            Sparing::SectorsAtZoneEnd => 7,
            Sparing::SectorsPerRange => 8,
            Sparing::SectorsPerZone => 9,
            Sparing::SectorsPerZoneSlipToEnd => 10,
        }
    }

    /// The scheme DiskSim numbers `n`.
    pub fn from_disksim_number(n: i64) -> Option<Sparing> {
        const ALL: [Sparing; 11] = [
            Sparing::None,
            Sparing::Tracks,
            Sparing::SectorsPerCylinder,
            Sparing::SectorsPerTrack,
            Sparing::SectorsPerCylinderSlipToEnd,
            Sparing::SectorsPerCylinderAtFront,
            Sparing::SectorsPerCylinderAtFrontSlipToEnd,
            Sparing::SectorsAtZoneEnd,
            Sparing::SectorsPerRange,
            Sparing::SectorsPerZone,
            Sparing::SectorsPerZoneSlipToEnd,
        ];
        usize::try_from(n).ok().and_then(|i| ALL.get(i).copied())
    }
}

/// DiskSim's "LBN-to-PBN mapping scheme" (`dm_layout_g1_map_t`).
#[derive(Copy, Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Mapping {
    /// 0: every cylinder is filled from head 0 up.
    #[default]
    Normal,
    /// 1: cylinders at odd offsets from their zone's first cylinder are filled from the last
    /// head down, so a cylinder switch stays on the same surface.
    SurfaceSerpentineByZone,
    /// 2: odd-numbered cylinders are filled from the last head down.
    SurfaceSerpentineByCylinder,
}

impl Mapping {
    pub fn disksim_number(self) -> u32 {
        match self {
            Mapping::Normal => 0,
            Mapping::SurfaceSerpentineByZone => 1,
            Mapping::SurfaceSerpentineByCylinder => 2,
        }
    }

    pub fn from_disksim_number(n: i64) -> Option<Mapping> {
        match n {
            0 => Some(Mapping::Normal),
            1 => Some(Mapping::SurfaceSerpentineByZone),
            2 => Some(Mapping::SurfaceSerpentineByCylinder),
            _ => None,
        }
    }
}

/// The DiskSim `dm_layout_g1_zone` parameters that a drive-file zone does not carry.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LayoutZone {
    /// DiskSim "Number of spares": sectors or tracks per track, cylinder, range or zone, as
    /// the sparing scheme says.
    #[serde(default)]
    pub spares: u32,
    /// DiskSim "Empty space at zone front": sectors at the zone's start that hold no LBA.
    #[serde(default)]
    pub front_space_sectors: u32,
    /// DiskSim "Offset of first block": angle of physical sector 0 of the zone's first track,
    /// in the zone's `skew_unit` (sectors are truncated to whole sectors, as DiskSim does).
    #[serde(default)]
    pub first_block_offset: f64,
    /// DiskSim "slips": zone-relative physical sector numbers (track numbers for scheme
    /// `tracks`) skipped by the mapping, in the file's order (DiskSim's loops depend on it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slips: Vec<u32>,
    /// DiskSim "defects": (defective, replacement) zone-relative physical sector (or track)
    /// numbers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defects: Vec<(u32, u32)>,
}

impl LayoutSpec {
    pub fn is_default(&self) -> bool {
        *self == LayoutSpec::default()
    }
}
