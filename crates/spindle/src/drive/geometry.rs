//! Disk geometry: zones, spares, slips and skews; LBA ↔ (cylinder, head, sector) and the
//! angular position of every sector.
//!
//! Layout is the traditional one: LBAs fill a track, then the next head of the same cylinder,
//! then the next cylinder, zone by zone from the outer edge. A "slot" is a data-capable
//! physical sector (not a per-track or per-zone spare); slipped slots are skipped by the LBA
//! mapping. Angles are fractions of a revolution expressed as `(index, sectors_per_track)`.
//!
//! With a DiskSim layout (`[layout] sparing = …`), the mapping and every sector's angle are
//! DiskSim 4.0's `dm_layout_g1` instead ([`super::disksim::layout_g1`]): sparing schemes,
//! slips, remapped defects, zone-front space, first-block offsets, serpentine surface order,
//! and angles in DiskSim's fixed point ([`Geometry::angle_ticks`]).

use super::disksim::layout_g1::G1Layout;
use super::spec::{DriveSpec, SkewUnit};
use super::DriveError;

/// A physical sector position.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Chs {
    pub cylinder: u32,
    pub head: u32,
    /// Physical sector index within the track, `0..sectors_per_track`.
    pub sector: u32,
}

#[derive(Clone, Debug)]
struct Zone {
    first_cylinder: u32,
    last_cylinder: u32,
    sectors_per_track: u32,
    data_per_track: u32,
    track_skew: u32,
    cylinder_skew: u32,
    first_slot: u64,
    /// Data slots in the zone after the per-zone spares are taken off its end.
    slots: u64,
}

/// Validated geometry of one drive.
#[derive(Clone, Debug)]
pub struct Geometry {
    surfaces: u32,
    cylinders: u32,
    sector_bytes: u32,
    zones: Vec<Zone>,
    /// Slipped slots, sorted, each counted once.
    slipped_slots: Vec<u64>,
    total_slots: u64,
    /// DiskSim's layout, when the drive file asks for it; it then answers every mapping
    /// question and `zones` only lists the zones' cylinders and sectors per track.
    g1: Option<Box<G1Layout>>,
}

/// Most cylinders a drive may have (the seek table has one entry per cylinder distance).
pub const CYLINDERS_MAX: u32 = 16_000_000;

/// Most sectors a track may hold: 2^20 (512 MiB of 512-byte sectors; the densest drives
/// hold a few thousand). A bound so that a mistyped value is an error, not a layout table
/// built for minutes.
pub const SECTORS_PER_TRACK_MAX: u32 = 1 << 20;

impl Geometry {
    pub fn new(spec: &DriveSpec) -> Result<Geometry, DriveError> {
        let bad = |key: String, msg: String| DriveError::Invalid { key, msg };
        if spec.surfaces == 0 {
            return Err(bad("surfaces".into(), "must be >= 1, got 0".into()));
        }
        // The seek table has one entry per cylinder distance: 16 M cylinders is 64 MiB, and
        // far beyond any drive (a 30 TB drive has under 1 M).
        if spec.cylinders == 0 || spec.cylinders > CYLINDERS_MAX {
            return Err(bad(
                "cylinders".into(),
                format!("must be within 1..={CYLINDERS_MAX}, got {}", spec.cylinders),
            ));
        }
        if spec.surfaces > 1_000 {
            return Err(bad(
                "surfaces".into(),
                format!("must be within 1..=1000, got {}", spec.surfaces),
            ));
        }
        if spec.sector_bytes != 512 && spec.sector_bytes != 4096 {
            return Err(bad(
                "sector_bytes".into(),
                format!("must be 512 or 4096, got {}", spec.sector_bytes),
            ));
        }
        if spec.zones.is_empty() {
            return Err(bad("zones".into(), "at least one zone is needed".into()));
        }
        if spec.layout.sparing.is_some() {
            return Geometry::new_g1(spec);
        }
        if !spec.layout.is_default() {
            return Err(bad(
                "layout".into(),
                "layout fields need `layout.sparing` (the DiskSim layout); absent, the layout is plain"
                    .into(),
            ));
        }
        let mut zones = Vec::with_capacity(spec.zones.len());
        let mut next_cylinder = 0u32;
        let mut first_slot = 0u64;
        for (i, z) in spec.zones.iter().enumerate() {
            let key = |f: &str| format!("zones[{i}].{f}");
            if z.first_cylinder != next_cylinder {
                return Err(bad(
                    key("first_cylinder"),
                    format!(
                        "zones must be contiguous: expected {next_cylinder}, got {}",
                        z.first_cylinder
                    ),
                ));
            }
            if z.last_cylinder < z.first_cylinder || z.last_cylinder >= spec.cylinders {
                return Err(bad(
                    key("last_cylinder"),
                    format!(
                        "must be within {}..{}, got {}",
                        z.first_cylinder,
                        spec.cylinders - 1,
                        z.last_cylinder
                    ),
                ));
            }
            if z.sectors_per_track > SECTORS_PER_TRACK_MAX {
                return Err(bad(
                    key("sectors_per_track"),
                    format!(
                        "must be at most {SECTORS_PER_TRACK_MAX}, got {}",
                        z.sectors_per_track
                    ),
                ));
            }
            if z.sectors_per_track == 0 || z.spare_sectors_per_track >= z.sectors_per_track {
                return Err(bad(
                    key("sectors_per_track"),
                    format!(
                        "must exceed the per-track spares ({}), got {}",
                        z.spare_sectors_per_track, z.sectors_per_track
                    ),
                ));
            }
            let skew = |v: f64, f: &str| -> Result<u32, DriveError> {
                if !v.is_finite() || v < 0.0 {
                    return Err(bad(key(f), format!("must be >= 0, got {v}")));
                }
                let sectors = match z.skew_unit {
                    SkewUnit::Sectors => v.round(),
                    SkewUnit::Revolutions => (v * f64::from(z.sectors_per_track)).round(),
                };
                Ok((sectors as u64 % u64::from(z.sectors_per_track)) as u32)
            };
            let tracks =
                u64::from(z.last_cylinder - z.first_cylinder + 1) * u64::from(spec.surfaces);
            let data_per_track = z.sectors_per_track - z.spare_sectors_per_track;
            let raw = tracks * u64::from(data_per_track);
            if z.spare_sectors_per_zone >= raw {
                return Err(bad(
                    key("spare_sectors_per_zone"),
                    format!(
                        "{} spares leave no data in a zone of {raw} sectors",
                        z.spare_sectors_per_zone
                    ),
                ));
            }
            let slots = raw - z.spare_sectors_per_zone;
            zones.push(Zone {
                first_cylinder: z.first_cylinder,
                last_cylinder: z.last_cylinder,
                sectors_per_track: z.sectors_per_track,
                data_per_track,
                track_skew: skew(z.track_skew, "track_skew")?,
                cylinder_skew: skew(z.cylinder_skew, "cylinder_skew")?,
                first_slot,
                slots,
            });
            first_slot += slots;
            next_cylinder = z.last_cylinder + 1;
        }
        if next_cylinder != spec.cylinders {
            return Err(bad(
                "zones".into(),
                format!(
                    "zones end at cylinder {} but the drive has {} cylinders",
                    next_cylinder, spec.cylinders
                ),
            ));
        }
        let mut geo = Geometry {
            surfaces: spec.surfaces,
            cylinders: spec.cylinders,
            sector_bytes: spec.sector_bytes,
            zones,
            slipped_slots: Vec::new(),
            total_slots: first_slot,
            g1: None,
        };
        let mut slipped = Vec::with_capacity(spec.slips.len());
        for (i, &pbn) in spec.slips.iter().enumerate() {
            let chs = geo.pbn_to_chs(pbn).ok_or_else(|| {
                bad(
                    format!("slips[{i}]"),
                    format!("physical sector {pbn} is beyond the drive"),
                )
            })?;
            // A slip on a spare sector costs no data slot.
            if let Some(slot) = geo.chs_to_slot(chs) {
                slipped.push(slot);
            }
        }
        slipped.sort_unstable();
        slipped.dedup();
        if slipped.len() as u64 >= geo.total_slots {
            return Err(bad("slips".into(), "every sector is slipped".into()));
        }
        geo.slipped_slots = slipped;
        Ok(geo)
    }

    /// A DiskSim-layout geometry: the checks above, then [`G1Layout::new`].
    fn new_g1(spec: &DriveSpec) -> Result<Geometry, DriveError> {
        let g1 = G1Layout::new(spec)?;
        assert_eq!(
            g1.zone_count(),
            spec.zones.len(),
            "one layout zone per zone"
        );
        let zones = spec
            .zones
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let (first_slot, slots) = g1.zone_lbns(i);
                Zone {
                    first_cylinder: z.first_cylinder,
                    last_cylinder: z.last_cylinder,
                    sectors_per_track: z.sectors_per_track,
                    data_per_track: z.sectors_per_track,
                    track_skew: 0,
                    cylinder_skew: 0,
                    first_slot,
                    slots,
                }
            })
            .collect();
        let total_slots = g1.capacity();
        assert!(total_slots > 0, "a DiskSim layout holds at least one LBN");
        Ok(Geometry {
            surfaces: spec.surfaces,
            cylinders: spec.cylinders,
            sector_bytes: spec.sector_bytes,
            zones,
            slipped_slots: Vec::new(),
            total_slots,
            g1: Some(Box::new(g1)),
        })
    }

    /// True when the mapping is DiskSim's `dm_layout_g1`.
    pub fn is_disksim(&self) -> bool {
        self.g1.is_some()
    }

    pub fn surfaces(&self) -> u32 {
        self.surfaces
    }

    pub fn cylinders(&self) -> u32 {
        self.cylinders
    }

    pub fn sector_bytes(&self) -> u32 {
        self.sector_bytes
    }

    /// Number of addressable sectors (LBAs).
    pub fn capacity_sectors(&self) -> u64 {
        self.total_slots - self.slipped_slots.len() as u64
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_sectors() * u64::from(self.sector_bytes)
    }

    pub fn zone_count(&self) -> usize {
        self.zones.len()
    }

    /// (first cylinder, last cylinder, sectors per track) of zone `i`.
    pub fn zone_bounds(&self, i: usize) -> (u32, u32, u32) {
        let z = &self.zones[i];
        (z.first_cylinder, z.last_cylinder, z.sectors_per_track)
    }

    fn zone_of_cylinder(&self, cylinder: u32) -> &Zone {
        let i = self.zones.partition_point(|z| z.last_cylinder < cylinder);
        &self.zones[i]
    }

    /// Physical sectors per track on `cylinder`.
    #[inline]
    pub fn sectors_per_track(&self, cylinder: u32) -> u32 {
        if let Some(g1) = &self.g1 {
            return g1.sectors_per_track(cylinder);
        }
        self.zone_of_cylinder(cylinder).sectors_per_track
    }

    /// The slot an LBA occupies, skipping slipped slots.
    fn lba_to_slot(&self, lba: u64) -> u64 {
        let mut slot = lba;
        for &s in &self.slipped_slots {
            if s <= slot {
                slot += 1;
            } else {
                break;
            }
        }
        slot
    }

    fn slot_to_chs(&self, slot: u64) -> Chs {
        assert!(
            slot < self.total_slots,
            "slot {slot} beyond {}",
            self.total_slots
        );
        let zi = self
            .zones
            .partition_point(|z| z.first_slot + z.slots <= slot);
        let z = &self.zones[zi];
        let rel = slot - z.first_slot;
        let track = rel / u64::from(z.data_per_track);
        let sector = (rel % u64::from(z.data_per_track)) as u32;
        let cyl_rel = u32::try_from(track / u64::from(self.surfaces)).expect("cylinder fits u32");
        let head = (track % u64::from(self.surfaces)) as u32;
        Chs {
            cylinder: z.first_cylinder + cyl_rel,
            head,
            sector,
        }
    }

    /// The slot of a physical sector, or `None` for a spare.
    fn chs_to_slot(&self, chs: Chs) -> Option<u64> {
        let z = self.zone_of_cylinder(chs.cylinder);
        if chs.sector >= z.data_per_track {
            return None;
        }
        let track = u64::from(chs.cylinder - z.first_cylinder) * u64::from(self.surfaces)
            + u64::from(chs.head);
        let rel = track * u64::from(z.data_per_track) + u64::from(chs.sector);
        (rel < z.slots).then_some(z.first_slot + rel)
    }

    fn pbn_to_chs(&self, pbn: u64) -> Option<Chs> {
        let mut base = 0u64;
        for z in &self.zones {
            let per_track = u64::from(z.sectors_per_track);
            let n = u64::from(z.last_cylinder - z.first_cylinder + 1)
                * u64::from(self.surfaces)
                * per_track;
            if pbn < base + n {
                let rel = pbn - base;
                let track = rel / per_track;
                return Some(Chs {
                    cylinder: z.first_cylinder
                        + u32::try_from(track / u64::from(self.surfaces)).ok()?,
                    head: (track % u64::from(self.surfaces)) as u32,
                    sector: (rel % per_track) as u32,
                });
            }
            base += n;
        }
        None
    }

    /// Physical position of `lba`; panics beyond capacity (callers validate addresses).
    pub fn lba_to_chs(&self, lba: u64) -> Chs {
        assert!(
            lba < self.capacity_sectors(),
            "lba {lba} beyond capacity {}",
            self.capacity_sectors()
        );
        if let Some(g1) = &self.g1 {
            return g1.ltop(lba);
        }
        self.slot_to_chs(self.lba_to_slot(lba))
    }

    /// The LBA stored at a physical position, or `None` for spare and slipped sectors.
    pub fn chs_to_lba(&self, chs: Chs) -> Option<u64> {
        if let Some(g1) = &self.g1 {
            return g1.ptol(chs);
        }
        let slot = self.chs_to_slot(chs)?;
        match self.slipped_slots.binary_search(&slot) {
            Ok(_) => None,
            Err(before) => Some(slot - before as u64),
        }
    }

    /// Touches what locating `lba` will read (a DiskSim layout's run table; spindle's own
    /// layouts compute a position from a few zone values).
    #[inline]
    pub fn prefetch(&self, lba: u64) {
        if let Some(g1) = &self.g1 {
            g1.prefetch(lba);
        }
    }

    /// `(lba_to_chs(lba), run_on_track(lba), angle_index(lba_to_chs(lba)))`, with one
    /// lookup for a DiskSim layout.
    #[inline]
    pub fn locate(&self, lba: u64) -> (Chs, u32, (u32, u32)) {
        let (chs, run, angle, _) = self.locate_exact(lba);
        (chs, run, angle)
    }

    /// [`Geometry::locate`], with a DiskSim layout's exact start angle of the sector
    /// ([`Geometry::g1_angle_ticks`]; `None` for spindle's own layouts).
    #[inline]
    pub fn locate_exact(&self, lba: u64) -> (Chs, u32, (u32, u32), Option<u32>) {
        if let Some(g1) = &self.g1 {
            let (chs, run, angle, ticks) = g1.locate_exact(lba);
            return (chs, run, angle, Some(ticks));
        }
        let (chs, run, angle) = self.locate_plain(lba);
        (chs, run, angle, None)
    }

    /// [`Geometry::locate`] for spindle's own layouts in one pass: the slot's zone found
    /// once and its track and cylinder with two divisions, where `lba_to_chs`,
    /// `run_on_track` and `angle_index` each find them again (the same values: a slot's zone
    /// is its cylinder's zone).
    fn locate_plain(&self, lba: u64) -> (Chs, u32, (u32, u32)) {
        assert!(
            lba < self.capacity_sectors(),
            "lba {lba} beyond capacity {}",
            self.capacity_sectors()
        );
        let slot = self.lba_to_slot(lba);
        let z = &self.zones[self
            .zones
            .partition_point(|z| z.first_slot + z.slots <= slot)];
        let rel = slot - z.first_slot;
        let track = rel / u64::from(z.data_per_track);
        let sector = (rel % u64::from(z.data_per_track)) as u32;
        let cyl_switches = track / u64::from(self.surfaces);
        let head = (track % u64::from(self.surfaces)) as u32;
        let chs = Chs {
            cylinder: z.first_cylinder + u32::try_from(cyl_switches).expect("cylinder fits u32"),
            head,
            sector,
        };
        let mut run = u64::from(z.data_per_track - sector).min(z.first_slot + z.slots - slot);
        if !self.slipped_slots.is_empty() {
            let next_slip = self.slipped_slots.partition_point(|&s| s <= slot);
            if let Some(&s) = self.slipped_slots.get(next_slip) {
                run = run.min(s - slot);
            }
        }
        let run = u32::try_from(run).expect("a track run fits u32");
        let head_switches = cyl_switches * u64::from(self.surfaces - 1) + u64::from(head);
        let skew =
            head_switches * u64::from(z.track_skew) + cyl_switches * u64::from(z.cylinder_skew);
        let idx = ((skew + u64::from(sector)) % u64::from(z.sectors_per_track)) as u32;
        (chs, run, (idx, z.sectors_per_track))
    }

    /// The LBAs of the track holding `lba`: its first LBA and how many it holds (the
    /// track's data sectors less any slipped ones; a zone's last track may hold fewer, its
    /// end taken by the zone's spares). `None` for a DiskSim layout, whose tracks need not
    /// hold a contiguous range of LBAs (remapped defects, serpentine order).
    pub fn track_of(&self, lba: u64) -> Option<(u64, u64)> {
        assert!(lba < self.capacity_sectors(), "lba {lba} beyond capacity");
        if self.g1.is_some() {
            return None;
        }
        let slot = self.lba_to_slot(lba);
        let z = &self.zones[self
            .zones
            .partition_point(|z| z.first_slot + z.slots <= slot)];
        let dpt = u64::from(z.data_per_track);
        let first = z.first_slot + (slot - z.first_slot) / dpt * dpt;
        let end = (first + dpt).min(z.first_slot + z.slots);
        let slipped_before = |x: u64| self.slipped_slots.partition_point(|&s| s < x) as u64;
        let start = first - slipped_before(first);
        let len = end - slipped_before(end) - start;
        assert!(start <= lba && lba < start + len, "lba inside its track");
        Some((start, len))
    }

    /// How many LBAs from `lba` on lie in consecutive physical sectors of the same track.
    pub fn run_on_track(&self, lba: u64) -> u32 {
        assert!(lba < self.capacity_sectors(), "lba {lba} beyond capacity");
        if let Some(g1) = &self.g1 {
            return g1.run_on_track(lba);
        }
        let slot = self.lba_to_slot(lba);
        let chs = self.slot_to_chs(slot);
        let z = self.zone_of_cylinder(chs.cylinder);
        let mut run = u64::from(z.data_per_track - chs.sector).min(z.first_slot + z.slots - slot);
        let next_slip = self.slipped_slots.partition_point(|&s| s <= slot);
        if let Some(&s) = self.slipped_slots.get(next_slip) {
            run = run.min(s - slot);
        }
        u32::try_from(run).expect("a track run fits u32")
    }

    /// Rotational index of a physical sector's start: the sector begins `index /
    /// sectors_per_track` of a revolution after the index mark. Track and cylinder skews
    /// accumulate from the start of the zone.
    ///
    /// With a DiskSim layout the index is DiskSim's exact angle ([`Geometry::angle_ticks`])
    /// rounded up to the next sector boundary, as DiskSim's `g1_ltop_0t` does; sector
    /// boundaries there are `floor(2^32 / spt)` ticks apart, so index `i` stands for an angle
    /// at most `i · (2^32 mod spt) / 2^32` of a revolution (< 2e-5 rev) from DiskSim's.
    #[inline]
    pub fn angle_index(&self, chs: Chs) -> (u32, u32) {
        if let Some(g1) = &self.g1 {
            return g1.angle_index(chs);
        }
        let z = self.zone_of_cylinder(chs.cylinder);
        let spt = u64::from(z.sectors_per_track);
        let cyl_switches = u64::from(chs.cylinder - z.first_cylinder);
        let head_switches = cyl_switches * u64::from(self.surfaces - 1) + u64::from(chs.head);
        let skew =
            head_switches * u64::from(z.track_skew) + cyl_switches * u64::from(z.cylinder_skew);
        (
            ((skew + u64::from(chs.sector)) % spt) as u32,
            z.sectors_per_track,
        )
    }

    /// A DiskSim layout's number of LBNs on the track holding `lba`; `None` for spindle's
    /// own layouts.
    pub fn g1_track_lbns(&self, lba: u64) -> Option<u64> {
        self.g1.as_ref().map(|g1| g1.track_lbns(lba))
    }

    /// A DiskSim layout's sector width on `cylinder` in 2^-32 revolutions; `None` for
    /// spindle's own layouts.
    #[inline]
    pub fn g1_sector_width(&self, cylinder: u32) -> Option<u32> {
        self.g1.as_ref().map(|g1| g1.sector_width(cylinder))
    }

    /// A DiskSim layout's exact start angle of a physical sector (`dm_pbn_skew`), in 2^-32
    /// revolutions; `None` for spindle's own layouts (whose angles are whole sectors).
    #[inline]
    pub fn g1_angle_ticks(&self, chs: Chs) -> Option<u32> {
        self.g1.as_ref().map(|g1| g1.angle(chs))
    }

    /// The angle at which a physical sector starts, in 2^-32 revolutions after the index
    /// mark: DiskSim's `dm_pbn_skew` for a DiskSim layout (exact), and
    /// `floor(index · 2^32 / sectors_per_track)` of [`Geometry::angle_index`] otherwise.
    pub fn angle_ticks(&self, chs: Chs) -> u32 {
        if let Some(g1) = &self.g1 {
            return g1.angle(chs);
        }
        let (idx, spt) = self.angle_index(chs);
        u32::try_from((u64::from(idx) << 32) / u64::from(spt)).expect("index < spt")
    }
}

#[cfg(test)]
mod tests {
    use super::super::spec::{test_spec, DriveSpec, ZoneSpec};
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn small_spec() -> DriveSpec {
        let mut s = test_spec(3, 30, 40);
        s.zones = vec![
            ZoneSpec {
                first_cylinder: 0,
                last_cylinder: 9,
                sectors_per_track: 40,
                track_skew: 5.0,
                cylinder_skew: 9.0,
                skew_unit: SkewUnit::Sectors,
                spare_sectors_per_track: 2,
                spare_sectors_per_zone: 7,
            },
            ZoneSpec {
                first_cylinder: 10,
                last_cylinder: 19,
                sectors_per_track: 32,
                track_skew: 0.125,
                cylinder_skew: 0.25,
                skew_unit: SkewUnit::Revolutions,
                spare_sectors_per_track: 0,
                spare_sectors_per_zone: 0,
            },
            ZoneSpec {
                first_cylinder: 20,
                last_cylinder: 29,
                sectors_per_track: 25,
                track_skew: 3.0,
                cylinder_skew: 6.0,
                skew_unit: SkewUnit::Sectors,
                spare_sectors_per_track: 1,
                spare_sectors_per_zone: 30,
            },
        ];
        s.slips = vec![3, 41, 1000, 2500];
        s
    }

    #[test]
    fn capacity_counts_spares_and_slips() {
        let g = Geometry::new(&small_spec()).unwrap();
        // zone 0: 10 cyl × 3 heads × 38 data sectors − 7; zone 1: 10×3×32; zone 2: 10×3×24 − 30.
        let slots = (10 * 3 * 38 - 7) + 10 * 3 * 32 + (10 * 3 * 24 - 30);
        // Slips at physical sectors 3, 41 (track 1, sector 1), 1000 and 2500 are all data
        // slots in this geometry: each costs one LBA.
        assert_eq!(g.capacity_sectors(), slots - 4);
    }

    #[test]
    fn out_of_range_cylinders_and_sectors_per_track_name_their_key() {
        let mut s = small_spec();
        s.zones[0].sectors_per_track = SECTORS_PER_TRACK_MAX + 1;
        let e = Geometry::new(&s)
            .expect_err("too many sectors per track")
            .to_string();
        assert!(e.contains("zones[0].sectors_per_track"), "{e}");
        let mut s = small_spec();
        s.cylinders = CYLINDERS_MAX + 1;
        let e = Geometry::new(&s)
            .expect_err("too many cylinders")
            .to_string();
        assert!(e.contains("cylinders"), "{e}");
    }

    #[test]
    fn every_lba_round_trips_on_the_small_geometry() {
        let g = Geometry::new(&small_spec()).unwrap();
        let mut seen = std::collections::HashSet::new();
        for lba in 0..g.capacity_sectors() {
            let chs = g.lba_to_chs(lba);
            assert!(seen.insert(chs), "two LBAs share {chs:?}");
            assert_eq!(g.chs_to_lba(chs), Some(lba), "at {chs:?}");
        }
    }

    #[test]
    fn locate_is_lba_to_chs_run_on_track_and_angle_index() {
        let g = Geometry::new(&small_spec()).unwrap();
        for lba in 0..g.capacity_sectors() {
            let chs = g.lba_to_chs(lba);
            assert_eq!(
                g.locate(lba),
                (chs, g.run_on_track(lba), g.angle_index(chs)),
                "lba {lba}"
            );
        }
    }

    #[test]
    fn skew_in_revolutions_is_converted_to_sectors() {
        let g = Geometry::new(&small_spec()).unwrap();
        // Zone 1: 0.125 rev of 32 sectors = 4 sectors per head switch.
        let a0 = g.angle_index(Chs {
            cylinder: 10,
            head: 0,
            sector: 0,
        });
        let a1 = g.angle_index(Chs {
            cylinder: 10,
            head: 1,
            sector: 0,
        });
        assert_eq!((a1.0 + 32 - a0.0) % 32, 4);
        // Cylinder switch from head 2 of cylinder 10 to head 0 of 11: 0.25 rev = 8 sectors.
        let a2 = g.angle_index(Chs {
            cylinder: 10,
            head: 2,
            sector: 0,
        });
        let a3 = g.angle_index(Chs {
            cylinder: 11,
            head: 0,
            sector: 0,
        });
        assert_eq!((a3.0 + 32 - a2.0) % 32, 8);
    }

    #[test]
    fn non_contiguous_zones_are_rejected_with_the_key() {
        let mut s = small_spec();
        s.zones[1].first_cylinder = 11;
        let err = Geometry::new(&s).unwrap_err().to_string();
        assert!(err.contains("zones[1].first_cylinder"), "{err}");
    }

    proptest! {
        // LBA → physical → LBA for random addresses in every zone of a large zoned geometry.
        #[test]
        fn round_trip_large_zoned(zone in 0usize..3, frac in 0.0f64..1.0) {
            let mut s = small_spec();
            s.cylinders = 30_000;
            s.surfaces = 8;
            s.zones[0].last_cylinder = 9_999;
            s.zones[1].first_cylinder = 10_000;
            s.zones[1].last_cylinder = 19_999;
            s.zones[2].first_cylinder = 20_000;
            s.zones[2].last_cylinder = 29_999;
            s.slips = vec![5, 77_777, 3_000_000];
            let g = Geometry::new(&s).unwrap();
            let (lo, hi) = match zone { 0 => (0, 3_000_000u64), 1 => (3_100_000, 5_500_000), _ => (5_600_000, g.capacity_sectors()) };
            let lba = lo + ((hi - lo) as f64 * frac) as u64;
            let lba = lba.min(g.capacity_sectors() - 1);
            let chs = g.lba_to_chs(lba);
            prop_assert_eq!(g.chs_to_lba(chs), Some(lba));
            let (idx, spt) = g.angle_index(chs);
            prop_assert!(idx < spt);
        }
    }

    proptest! {
        // A track's LBAs (`track_of`) are exactly the LBAs on its cylinder and head: the one
        // before it and the one after it lie on other tracks, every LBA inside on this one
        // (slips and zone-end spares included).
        #[test]
        fn track_of_is_the_track_and_nothing_else(frac in 0.0f64..1.0) {
            let mut s = small_spec();
            s.slips = vec![3, 40, 41, 1_000];
            let g = Geometry::new(&s).unwrap();
            let lba = ((g.capacity_sectors() - 1) as f64 * frac) as u64;
            let (start, len) = g.track_of(lba).unwrap();
            let track = |l: u64| { let c = g.lba_to_chs(l); (c.cylinder, c.head) };
            prop_assert!(len > 0 && start <= lba && lba < start + len);
            for l in start..start + len {
                prop_assert_eq!(track(l), track(lba));
                prop_assert_eq!(g.track_of(l), Some((start, len)));
            }
            if start > 0 { prop_assert_ne!(track(start - 1), track(lba)); }
            if start + len < g.capacity_sectors() { prop_assert_ne!(track(start + len), track(lba)); }
        }
    }
    proptest! {
        // Every zone of every library drive: a random LBA inside the zone maps to a physical
        // sector of that zone and back to itself.
        #[test]
        fn round_trip_every_zone_of_every_library_drive(drive in 0usize..64, zone in 0usize..64, frac in 0.0f64..1.0) {
            let ids: Vec<_> = crate::drive::library::builtin_ids().collect();
            let id = ids[drive % ids.len()];
            let spec: DriveSpec = toml::from_str(crate::drive::library::builtin_spec(id).unwrap()).unwrap();
            let g = Geometry::new(&spec).unwrap();
            let z = &g.zones[zone % g.zones.len()];
            let slot = z.first_slot + ((z.slots - 1) as f64 * frac) as u64;
            let chs = g.slot_to_chs(slot);
            prop_assert!(chs.cylinder >= z.first_cylinder && chs.cylinder <= z.last_cylinder, "{id}: {chs:?}");
            // No slips in the library: a slot is an LBA.
            let lba = g.chs_to_lba(chs).unwrap();
            prop_assert_eq!(g.lba_to_chs(lba), chs, "{}", id);
            prop_assert_eq!(lba, slot);
        }
    }
}
