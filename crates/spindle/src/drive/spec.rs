//! Drive specification: the serde form of a drive file (`drives/*.toml`) and its validation.
//!
//! A drive file holds geometry (zones, skews, spares, slips), mechanics (rpm, seek curve,
//! head switch, write settle, per-command overheads) and, for every value, where it came from
//! (`[provenance]`). Units are in the field names: `_ms` milliseconds, `_sectors` sectors.
//! Validation turns a `DriveSpec` into the checked, integer-nanosecond [`super::Drive`].

use super::cache_spec::CacheSpec;
use super::layout_spec::LayoutSpec;
use super::power::PowerSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A drive file, as written on disk.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DriveSpec {
    /// Short identifier used on the command line and in experiment files (`cheetah9lp`).
    pub id: String,
    /// Full name: vendor, family and model number.
    pub name: String,
    /// Free text shown by `spindle drives show`: what the model is good for, its caveats.
    #[serde(default)]
    pub description: String,
    /// True when some mechanical values are estimates rather than measured or published.
    #[serde(default)]
    pub estimated: bool,
    pub rpm: f64,
    /// Bytes per sector: 512 or 4096.
    #[serde(default = "default_sector_bytes")]
    pub sector_bytes: u32,
    pub surfaces: u32,
    pub cylinders: u32,
    /// Zones from the outer edge (cylinder 0) inwards; together they cover every cylinder.
    pub zones: Vec<ZoneSpec>,
    /// Physical sectors that are skipped by the LBA mapping (slipped defects), as zero-based
    /// physical sector numbers counted over the whole drive in (cylinder, head, sector) order.
    #[serde(default)]
    pub slips: Vec<u64>,
    pub seek: SeekSpec,
    /// Time to switch heads within a cylinder (ms).
    pub head_switch_ms: f64,
    /// Extra settle time a write pays after a seek or head switch (ms).
    #[serde(default)]
    pub write_settle_ms: f64,
    /// Zero-latency access (read-on-arrival, write-on-arrival): an access starts moving data
    /// at whichever of its sectors on a track first comes under the head and comes round
    /// for the rest, so a whole-track access pays no rotational latency (docs/drives.md,
    /// docs/track_aligned.md). Absent: false, every access waits for its first sector.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zero_latency: bool,
    /// Fixed per-command controller overhead for reads (ms): the dissertation's To.
    pub overhead_read_ms: f64,
    /// Fixed per-command controller overhead for writes (ms).
    pub overhead_write_ms: f64,
    /// Optional seeded noise on seek and rotation (dissertation 3.5.1).
    #[serde(default)]
    pub noise: NoiseSpec,
    /// DiskSim-exact layout details (sparing schemes, defects, …); absent for plain drives.
    #[serde(default, skip_serializing_if = "LayoutSpec::is_default")]
    pub layout: LayoutSpec,
    /// The on-disk buffer and interface; absent: no buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSpec>,
    /// Power states and transitions (docs/power.md); absent: the drive reports no energy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerSpec>,
    /// Where every value came from: dotted field name → citation (e.g. `"rpm" = "DiskSim
    /// cheetah9LP.model (measured)"`).
    #[serde(default)]
    pub provenance: BTreeMap<String, String>,
    /// Full citations for the keys used in `provenance`.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

fn default_sector_bytes() -> u32 {
    512
}

/// One recording zone: a run of cylinders with the same number of sectors per track.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    pub first_cylinder: u32,
    pub last_cylinder: u32,
    pub sectors_per_track: u32,
    /// Rotational offset of a track's first sector relative to the previous track's first
    /// sector after a head switch, in `skew_unit`s.
    #[serde(default)]
    pub track_skew: f64,
    /// The same after a cylinder switch.
    #[serde(default)]
    pub cylinder_skew: f64,
    #[serde(default)]
    pub skew_unit: SkewUnit,
    /// Sectors reserved at the end of every track (not mapped to LBAs).
    #[serde(default)]
    pub spare_sectors_per_track: u32,
    /// Sectors reserved at the end of the zone (not mapped to LBAs).
    #[serde(default)]
    pub spare_sectors_per_zone: u64,
}

#[derive(Copy, Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SkewUnit {
    #[default]
    Sectors,
    Revolutions,
}

/// The seek curve: time to move the arm `d` cylinders, `d ≥ 1` (excludes the overhead To).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SeekSpec {
    /// Measured `(distance, ms)` points, linearly interpolated (DiskSim `.seek` files).
    /// `write_points`, when given, is the write seek curve.
    Table {
        points: Vec<(u32, f64)>,
        #[serde(default)]
        write_points: Option<Vec<(u32, f64)>>,
    },
    /// Ruemmler–Wilkes two-piece form: `a + b·√d` for `d < boundary`, `c + e·d` above.
    TwoPiece {
        a_ms: f64,
        b_ms: f64,
        c_ms: f64,
        e_ms: f64,
        boundary: u32,
        /// Time of a one-cylinder seek if it differs from the formula (DiskSim `hplplus10`).
        #[serde(default)]
        single_cylinder_ms: Option<f64>,
    },
    /// The dissertation's linear form (section 2.1.1): `seek = intercept_ms + full_ms · d /
    /// (cylinders − 1)` for `d ≥ 1`. The constant part of a random access is To, kept in
    /// `overhead_*_ms` except for `intercept_ms` (default 0): the part of To that only an
    /// access moving the arm pays, so that an access on the track under the head costs
    /// less than To.
    Linear {
        full_ms: f64,
        #[serde(default)]
        intercept_ms: f64,
    },
    /// Three published points (single-track, average, full-stroke) shaped by the normalised
    /// template of measured drives (`../shared/drives/seek_template.json`).
    ThreePoint {
        single_ms: f64,
        average_ms: f64,
        full_ms: f64,
    },
}

/// Seeded noise: each seek is scaled by `1 + N(0, seek_rel_sigma)` and each rotational wait
/// gets `N(0, rotation_sigma_ms)` added, both clamped so a time never goes negative.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NoiseSpec {
    #[serde(default)]
    pub seek_rel_sigma: f64,
    #[serde(default)]
    pub rotation_sigma_ms: f64,
}

/// A plain one-zone drive for unit tests: 10,000 rpm, linear 9.99 ms full seek over
/// `cylinders`, no skews, spares, overheads or switches unless a test sets them.
#[cfg(test)]
pub(crate) fn test_spec(surfaces: u32, cylinders: u32, sectors_per_track: u32) -> DriveSpec {
    DriveSpec {
        id: "t".into(),
        name: "test".into(),
        description: String::new(),
        estimated: true,
        rpm: 10_000.0,
        sector_bytes: 512,
        surfaces,
        cylinders,
        zones: vec![ZoneSpec {
            first_cylinder: 0,
            last_cylinder: cylinders - 1,
            sectors_per_track,
            track_skew: 0.0,
            cylinder_skew: 0.0,
            skew_unit: SkewUnit::Sectors,
            spare_sectors_per_track: 0,
            spare_sectors_per_zone: 0,
        }],
        slips: vec![],
        seek: SeekSpec::Linear {
            full_ms: 9.99,
            intercept_ms: 0.0,
        },
        head_switch_ms: 0.0,
        write_settle_ms: 0.0,
        zero_latency: false,
        overhead_read_ms: 0.0,
        overhead_write_ms: 0.0,
        noise: NoiseSpec::default(),
        layout: LayoutSpec::default(),
        cache: None,
        power: None,
        provenance: BTreeMap::new(),
        sources: BTreeMap::new(),
    }
}
