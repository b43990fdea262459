//! DiskSim 4.0's `dm_layout_g1`: LBN ↔ (cylinder, head, sector) under its sparing schemes,
//! and each physical sector's angle (`dm_pbn_skew`) in DiskSim's fixed point (2^32 per
//! revolution).
//!
//! Written from DiskSim's `diskmodel/layout_g1.c` and `layout_g1_load.c` semantics (not its
//! code). The LBN → physical direction (`ltop`, DiskSim's `MAP_FULL`: slips and remapped
//! defects) follows DiskSim literally, including its order-dependent loops over the slip
//! list. The physical → LBN direction is the exact inverse of `ltop` (DiskSim's own `ptol`
//! functions disagree with its `ltop` in corner cases, e.g. the first spare track under track
//! sparing). Capacity is DiskSim's `dm_layout_g1_compute_blksinband` sum; DiskSim ignores the
//! model's declared `Block count` in favour of it (`checknumblocks`).
//!
//! Supported schemes: 1, 2 (without slips), 3, 4, 7, 8, 9, 10. Not supported: 0 (DiskSim's
//! `ltop` for it never writes its result), 5, 6 (DiskSim's `ltop` ignores the front spares
//! that its capacity and `ptol` reserve) and 2 with slips (two LBNs on one sector). Layouts
//! whose LBNs DiskSim would map outside their zone (scheme 7 with spares, scheme 8 with a
//! partial range) are rejected at load.

use crate::drive::geometry::Chs;
use crate::drive::layout_spec::{LayoutSpec, Mapping, Sparing};
use crate::drive::spec::{DriveSpec, SkewUnit, ZoneSpec};
use crate::drive::DriveError;
use std::sync::Arc;

/// LBNs per bucket of [`G1Layout::run_buckets`].
const BUCKET_SHIFT: u32 = 8;

/// A maximal run of LBNs on consecutive physical sectors of one track (what
/// [`G1Layout::run_on_track`] measures), from its first LBN on.
#[derive(Copy, Clone, Debug)]
struct TrackRun {
    first_lbn: u64,
    cylinder: u32,
    head: u16,
    /// The run's zone (index into [`G1Layout::bands`]).
    band: u16,
    sector: u32,
    /// The angle of the track's sector 0 after its skews and slip offsets
    /// ([`G1Layout::track_angle`]): a sector's angle is one `addmult` from it.
    track_angle: u32,
}

/// One revolution in DiskSim's `dm_angle_t` units.
const REV: i64 = 1 << 32;

/// One zone ("band") with everything DiskSim derives from it.
#[derive(Clone, Debug)]
struct Band {
    startcyl: i64,
    endcyl: i64,
    spt: i64,
    deadspace: i64,
    sparecnt: i64,
    /// In the file's order (DiskSim's loops over it depend on the order).
    slips: Vec<i64>,
    /// `slips[j] - j` when the slips are strictly increasing, else `None`. Then the mapping's
    /// slip loops stop counting at the first slip past their target (every later slip is
    /// further still), and the count is a binary search over these non-decreasing keys.
    slip_keys: Option<Vec<i64>>,
    /// The slips in increasing order (counting those below a bound does not depend on order).
    slips_sorted: Vec<i64>,
    defects: Vec<(i64, i64)>,
    /// The first `(defect, replacement)` entry of each defective unit, sorted by unit: what
    /// `defects.iter().find(|(d, _)| *d == x)` returns.
    defects_first: Vec<(i64, i64)>,
    /// The same over the entries whose replacement differs from the defect.
    defects_moved_first: Vec<(i64, i64)>,
    /// LBNs in the band (`blksinband`) and the band's first LBN.
    blks: i64,
    first_lbn: i64,
    firstblkangle: u32,
    trackskew: u32,
    cylskew: u32,
    sector_width: u32,
    /// `ceil(2^64 / sector_width)`, for an exact division of any angle by the width with
    /// one multiplication (Lemire et al., "Faster remainder by direct computation", 2019);
    /// 0 for a width below 2 (then a plain division).
    width_magic: u64,
    trkspace: u32,
}

/// A validated DiskSim layout.
#[derive(Clone, Debug)]
pub struct G1Layout {
    surfaces: i64,
    sparing: Sparing,
    mapping: Mapping,
    rangesize: i64,
    bands: Vec<Band>,
    capacity: i64,
    /// Every LBN's run, in LBN order (they tile the LBNs): the mapping with defects
    /// (`MAP_FULL`) and the track runs as a table, computed once at load. Shared by clones
    /// (an array clones its drive per disk).
    runs: Arc<[TrackRun]>,
    /// For each `2^BUCKET_SHIFT` LBNs, the index of the run holding the bucket's first LBN.
    run_buckets: Arc<[u32]>,
}

/// DiskSim's `addmult`: `start + mult·q` modulo a revolution, plus `x` for every time the
/// sum passes a whole revolution (`trkspace` keeps sector boundaries aligned).
fn addmult(start: u32, mult: i64, q: u32, x: u32) -> u32 {
    let tmp = i64::from(start) + mult * i64::from(q);
    let wraps = tmp.div_euclid(REV);
    let v = i64::from(start) + mult * i64::from(q) + wraps * i64::from(x);
    v.rem_euclid(REV) as u32
}

#[cfg(test)]
pub(crate) fn addmult_for_test(start: u32, mult: i64, q: u32, x: u32) -> u32 {
    addmult(start, mult, q, x)
}

/// DiskSim's `dm_angle_dtoi` for a fraction of a revolution.
/// A skew or offset in sectors is a C `int` in DiskSim: below 2^31.
pub(crate) const MAX_SKEW_SECTORS: f64 = 2_147_483_648.0;
pub(crate) const SKEW_SECTORS_RANGE: &str =
    "must be below 2^31 sectors (DiskSim reads it as a C int)";

fn angle_of_revolutions(mut a: f64) -> u32 {
    if a > 1.0 {
        a -= a.trunc();
    }
    ((a * REV as f64) as i64).rem_euclid(REV) as u32
}

impl G1Layout {
    pub fn new(spec: &DriveSpec) -> Result<G1Layout, DriveError> {
        let bad = |key: String, msg: String| DriveError::Invalid { key, msg };
        let layout: &LayoutSpec = &spec.layout;
        let sparing = layout.sparing.expect("called for DiskSim layouts only");
        match sparing {
            Sparing::None | Sparing::SectorsPerCylinderAtFront | Sparing::SectorsPerCylinderAtFrontSlipToEnd => {
                return Err(bad(
                    "layout.sparing".into(),
                    format!(
                        "DiskSim sparing scheme {} is not supported (DiskSim's own LBN-to-PBN mapping for it is inconsistent); supported: 1, 2, 3, 4, 7, 8, 9, 10",
                        sparing.disksim_number()
                    ),
                ))
            }
            _ => {}
        }
        if layout.sparing_range_cylinders == 0 {
            return Err(bad(
                "layout.sparing_range_cylinders".into(),
                "must be > 0, got 0".into(),
            ));
        }
        if layout.zones.len() != spec.zones.len() {
            return Err(bad(
                "layout.zones".into(),
                format!(
                    "has {} entries; the drive has {} zones",
                    layout.zones.len(),
                    spec.zones.len()
                ),
            ));
        }
        if !spec.slips.is_empty() {
            return Err(bad(
                "slips".into(),
                "must be empty with a DiskSim layout (slips are per zone: layout.zones[i].slips)"
                    .into(),
            ));
        }
        let mut g = G1Layout {
            surfaces: i64::from(spec.surfaces),
            sparing,
            mapping: layout.mapping,
            rangesize: i64::from(layout.sparing_range_cylinders),
            bands: Vec::with_capacity(spec.zones.len()),
            capacity: 0,
            runs: Arc::new([]),
            run_buckets: Arc::new([]),
        };
        let mut prev_end: Option<u32> = None;
        for (i, (z, lz)) in spec.zones.iter().zip(&layout.zones).enumerate() {
            let key = |f: &str| format!("zones[{i}].{f}");
            if let Some(p) = prev_end {
                if z.first_cylinder <= p {
                    return Err(bad(
                        key("first_cylinder"),
                        format!("zones must be in cylinder order without overlap: {} after a zone ending at {p}", z.first_cylinder),
                    ));
                }
            }
            if z.last_cylinder < z.first_cylinder {
                return Err(bad(
                    key("last_cylinder"),
                    format!(
                        "{} is before first_cylinder {}",
                        z.last_cylinder, z.first_cylinder
                    ),
                ));
            }
            if z.spare_sectors_per_track != 0 || z.spare_sectors_per_zone != 0 {
                return Err(bad(
                    key("spare_sectors_per_track"),
                    "must be 0 with a DiskSim layout (spares are layout.zones[i].spares)".into(),
                ));
            }
            if z.sectors_per_track == 0 {
                return Err(bad(key("sectors_per_track"), "must be > 0".into()));
            }
            prev_end = Some(z.last_cylinder);
            let band = g.band(i, z, lz, &bad)?;
            g.bands.push(band);
        }
        let mut first = 0i64;
        for b in &mut g.bands {
            b.first_lbn = first;
            first += b.blks;
        }
        g.capacity = first;
        g.check_reach(spec)?;
        g.build_runs()?;
        Ok(g)
    }

    fn band(
        &self,
        i: usize,
        z: &ZoneSpec,
        lz: &crate::drive::layout_spec::LayoutZone,
        bad: &dyn Fn(String, String) -> DriveError,
    ) -> Result<Band, DriveError> {
        let key = |f: &str| format!("zones[{i}].{f}");
        let lkey = |f: &str| format!("layout.zones[{i}].{f}");
        let spt = i64::from(z.sectors_per_track);
        let sector_width = (REV / spt) as u32;
        let trkspace = (REV % spt) as u32;
        let to_angle = |v: f64, k: String| -> Result<u32, DriveError> {
            if !v.is_finite() || v < 0.0 {
                return Err(bad(k, format!("must be >= 0, got {v}")));
            }
            if z.skew_unit == SkewUnit::Sectors && v >= MAX_SKEW_SECTORS {
                return Err(bad(k, format!("{SKEW_SECTORS_RANGE}, got {v}")));
            }
            Ok(match z.skew_unit {
                // DiskSim: `(int)d * sector_width`, in unsigned 32-bit arithmetic.
                SkewUnit::Sectors => {
                    ((v.trunc() as i64) * i64::from(sector_width)).rem_euclid(REV) as u32
                }
                SkewUnit::Revolutions => angle_of_revolutions(v),
            })
        };
        let cylcnt = i64::from(z.last_cylinder - z.first_cylinder + 1);
        let surfaces = self.surfaces;
        let sparecnt = i64::from(lz.spares);
        let deadspace = i64::from(lz.front_space_sectors);
        let slips: Vec<i64> = lz.slips.iter().map(|&s| i64::from(s)).collect();
        let defects: Vec<(i64, i64)> = lz
            .defects
            .iter()
            .map(|&(d, r)| (i64::from(d), i64::from(r)))
            .collect();
        let nslips = slips.len() as i64;
        let mut blks = cylcnt * spt * surfaces - deadspace;
        blks -= match self.sparing {
            Sparing::Tracks => sparecnt * spt,
            Sparing::SectorsPerTrack => sparecnt * cylcnt * surfaces,
            Sparing::SectorsAtZoneEnd => nslips,
            Sparing::SectorsPerZone => sparecnt,
            Sparing::SectorsPerZoneSlipToEnd => sparecnt + nslips,
            Sparing::SectorsPerCylinder => sparecnt * cylcnt,
            Sparing::SectorsPerCylinderSlipToEnd => sparecnt * cylcnt + nslips,
            Sparing::SectorsPerRange => sparecnt * (cylcnt / self.rangesize),
            Sparing::None
            | Sparing::SectorsPerCylinderAtFront
            | Sparing::SectorsPerCylinderAtFrontSlipToEnd => {
                unreachable!("rejected above")
            }
        };
        if blks <= 0 {
            return Err(bad(
                lkey("spares"),
                format!("the zone holds no LBN ({blks} blocks after spares and front space)"),
            ));
        }
        // Slips and defects are zone-relative physical sector numbers (tracks for scheme 1).
        let units = if self.sparing == Sparing::Tracks {
            cylcnt * surfaces
        } else {
            cylcnt * surfaces * spt
        };
        for (j, &s) in slips.iter().enumerate() {
            if s >= units {
                return Err(bad(
                    format!("layout.zones[{i}].slips[{j}]"),
                    format!("{s} is beyond the zone ({units})"),
                ));
            }
        }
        for (j, &(d, r)) in defects.iter().enumerate() {
            if d >= units || r >= units {
                return Err(bad(
                    format!("layout.zones[{i}].defects[{j}]"),
                    format!("({d}, {r}) is beyond the zone ({units})"),
                ));
            }
        }
        match self.sparing {
            Sparing::Tracks if nslips + defects.len() as i64 > sparecnt => {
                return Err(bad(
                    lkey("spares"),
                    format!(
                        "{} slips and {} defects outnumber the {sparecnt} spare tracks",
                        nslips,
                        defects.len()
                    ),
                ));
            }
            Sparing::SectorsPerCylinder if nslips > 0 => {
                // DiskSim's scheme 2 moves a slipped cylinder's last LBN onto the next
                // cylinder's first sector, which already holds an LBN.
                return Err(bad(
                    lkey("slips"),
                    "DiskSim's sparing scheme 2 maps two LBNs to one sector when a zone has slips; not supported".into(),
                ));
            }
            Sparing::SectorsPerTrack => {
                // DiskSim cannot slip past a track's end: at most `spares` slips per track.
                let mut per_track = std::collections::BTreeMap::new();
                for &s in &slips {
                    *per_track.entry(s / spt).or_insert(0i64) += 1;
                }
                if let Some((t, n)) = per_track.iter().find(|(_, &n)| n > sparecnt) {
                    return Err(bad(
                        lkey("slips"),
                        format!("track {t} has {n} slips but only {sparecnt} spare sectors"),
                    ));
                }
            }
            _ => {}
        }
        let increasing = slips.windows(2).all(|w| w[0] < w[1]);
        let slip_keys = increasing.then(|| {
            slips
                .iter()
                .enumerate()
                .map(|(j, &s)| s - j as i64)
                .collect()
        });
        let mut slips_sorted = slips.clone();
        slips_sorted.sort_unstable();
        let first_per_unit = |moved_only: bool| {
            let mut v: Vec<(i64, i64)> = defects
                .iter()
                .copied()
                .filter(|&(d, r)| !moved_only || r != d)
                .collect();
            // Stable: the first entry of each unit stays first, and dedup keeps it.
            v.sort_by_key(|&(d, _)| d);
            v.dedup_by_key(|&mut (d, _)| d);
            v
        };
        let defects_first = first_per_unit(false);
        let defects_moved_first = first_per_unit(true);
        Ok(Band {
            startcyl: i64::from(z.first_cylinder),
            endcyl: i64::from(z.last_cylinder),
            spt,
            deadspace,
            sparecnt,
            slips,
            slip_keys,
            slips_sorted,
            defects,
            defects_first,
            defects_moved_first,
            blks,
            first_lbn: 0,
            firstblkangle: to_angle(lz.first_block_offset, lkey("first_block_offset"))?,
            trackskew: to_angle(z.track_skew, key("track_skew"))?,
            cylskew: to_angle(z.cylinder_skew, key("cylinder_skew"))?,
            sector_width,
            width_magic: if sector_width >= 2 {
                u64::MAX / u64::from(sector_width) + 1
            } else {
                0
            },
            trkspace,
        })
    }

    /// Every LBN must land inside its zone and on an existing cylinder.
    fn check_reach(&self, spec: &DriveSpec) -> Result<(), DriveError> {
        for (i, b) in self.bands.iter().enumerate() {
            let (c0, _, _) = self.ltop_raw(b.first_lbn, true);
            let (c1, _, _) = self.ltop_raw(b.first_lbn + b.blks - 1, true);
            if c0 < b.startcyl || c1 > b.endcyl || c1 >= i64::from(spec.cylinders) {
                return Err(DriveError::Invalid {
                    key: format!("zones[{i}]"),
                    msg: format!(
                        "its LBNs reach cylinders {c0}..={c1}, outside the zone ({}..={}) or the drive ({} cylinders)",
                        b.startcyl, b.endcyl, spec.cylinders
                    ),
                });
            }
        }
        Ok(())
    }

    /// The run table: each run's first LBN, position and length from the computed mapping.
    fn build_runs(&mut self) -> Result<(), DriveError> {
        let mut runs = Vec::new();
        for b in &self.bands {
            let (mut l, end) = (b.first_lbn, b.first_lbn + b.blks);
            while l < end {
                let (c, h, s) = self.ltop_raw(l, true);
                // Usually the rest of the track (or band) is one run: positions grow with
                // the LBN, so without defects its last LBN in place means every LBN between
                // is too. Else the search (the tests compare the table with it).
                let bound = (b.spt - s).min(end - l);
                let last = self.ltop_raw(l + bound - 1, true);
                let n = if self.monotonic(b)
                    && last == (c, h, s + bound - 1)
                    && self.position(b, last.0, last.1, last.2)
                        == self.position(b, c, h, s) + bound - 1
                {
                    bound
                } else {
                    i64::from(self.run_on_track_computed(l as u64))
                };
                let chs = Chs {
                    cylinder: u32::try_from(c).expect("checked by check_reach"),
                    head: u32::try_from(h).expect("head fits u32"),
                    sector: u32::try_from(s).expect("sector fits u32"),
                };
                let (band, _) = self.band_index_of_cyl(c);
                let narrow = |v: u32, what: &str| {
                    u16::try_from(v).map_err(|_| DriveError::Invalid {
                        key: "layout".into(),
                        msg: format!("{what} {v}: at most 65,535 supported"),
                    })
                };
                runs.push(TrackRun {
                    first_lbn: l as u64,
                    cylinder: chs.cylinder,
                    head: narrow(chs.head, "surface")?,
                    band: narrow(u32::try_from(band).unwrap_or(u32::MAX), "zone")?,
                    sector: chs.sector,
                    track_angle: self.track_angle(&self.bands[band], chs),
                });
                l += n;
            }
        }
        if u32::try_from(runs.len()).is_err() {
            return Err(DriveError::Invalid {
                key: "layout".into(),
                msg: format!("{} track runs; at most 2^32 supported", runs.len()),
            });
        }
        let buckets = (self.capacity as u64 >> BUCKET_SHIFT) + 1;
        let mut run_buckets = Vec::with_capacity(buckets as usize);
        let mut i = 0usize;
        for k in 0..buckets {
            let lbn = k << BUCKET_SHIFT;
            while i + 1 < runs.len() && runs[i + 1].first_lbn <= lbn {
                i += 1;
            }
            run_buckets.push(i as u32);
        }
        self.runs = runs.into();
        self.run_buckets = run_buckets.into();
        Ok(())
    }

    /// Index of the run holding `lbn` (< capacity).
    #[inline]
    fn run_index(&self, lbn: u64) -> usize {
        let k = (lbn >> BUCKET_SHIFT) as usize;
        let lo = self.run_buckets[k] as usize;
        let hi = match self.run_buckets.get(k + 1) {
            Some(&h) => h as usize,
            None => self.runs.len() - 1,
        };
        // runs[lo] starts at or before lbn; the run holding lbn is at most `hi`.
        lo + self.runs[lo + 1..=hi].partition_point(|r| r.first_lbn <= lbn)
    }

    /// Asks the CPU to bring in the run-table entry locating `lbn` will read, so the cache
    /// miss of a random address overlaps other work (no effect on results).
    #[inline]
    pub fn prefetch(&self, lbn: u64) {
        if lbn < self.capacity() {
            let lo = self.run_buckets[(lbn >> BUCKET_SHIFT) as usize] as usize;
            let entry: *const TrackRun = &self.runs[lo];
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch is a hint that never faults and reads nothing into the
            // program; `entry` points into the live table anyway. SSE is baseline on x86_64.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(entry.cast::<i8>());
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = entry;
        }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity as u64
    }

    pub fn zone_count(&self) -> usize {
        self.bands.len()
    }

    /// (first LBN, LBN count) of zone `i`.
    pub fn zone_lbns(&self, i: usize) -> (u64, u64) {
        let b = &self.bands[i];
        (b.first_lbn as u64, b.blks as u64)
    }

    fn band_of_lbn(&self, lbn: i64) -> &Band {
        let i = self.bands.partition_point(|b| b.first_lbn + b.blks <= lbn);
        &self.bands[i]
    }

    /// The zone holding `cyl`, or for a cylinder no zone lists, the zone before it (DiskSim's
    /// `g1_st_pbn`), or the first zone.
    fn band_of_cyl(&self, cyl: i64) -> (&Band, bool) {
        let (i, listed) = self.band_index_of_cyl(cyl);
        (&self.bands[i], listed)
    }

    /// [`G1Layout::band_of_cyl`]'s index into `bands`.
    fn band_index_of_cyl(&self, cyl: i64) -> (usize, bool) {
        let i = self.bands.partition_point(|b| b.endcyl < cyl);
        if let Some(b) = self.bands.get(i) {
            if b.startcyl <= cyl {
                return (i, true);
            }
        }
        (i.saturating_sub(1), false)
    }

    /// Physical sectors per track on `cylinder`.
    pub fn sectors_per_track(&self, cylinder: u32) -> u32 {
        self.band_of_cyl(i64::from(cylinder)).0.spt as u32
    }

    /// One sector's width on `cylinder` in 2^-32 revolutions: `floor(2^32 / spt)` (DiskSim
    /// `dm_get_sector_width` of one sector).
    pub fn sector_width(&self, cylinder: u32) -> u32 {
        self.band_of_cyl(i64::from(cylinder)).0.sector_width
    }

    /// DiskSim's `g1_surfno_on_cyl`: the head of logical surface `head` on `cyl` (an
    /// involution).
    fn surfno(&self, b: &Band, cyl: i64, head: i64) -> i64 {
        let reversed = match self.mapping {
            Mapping::Normal => false,
            Mapping::SurfaceSerpentineByZone => (cyl - b.startcyl) % 2 == 1,
            Mapping::SurfaceSerpentineByCylinder => cyl % 2 == 1,
        };
        if reversed {
            self.surfaces - head - 1
        } else {
            head
        }
    }

    /// How many slips DiskSim's slip loop counts: in the list's order, a slip counts when
    /// `(prefix && s < first) || (s >= first && s - first <= base + counted)` (every scheme's
    /// loop has this form). A binary search when the slips are strictly increasing (see
    /// [`Band::slip_keys`]), else the loop itself.
    #[inline]
    fn slips_counted(b: &Band, first: i64, prefix: bool, base: i64) -> i64 {
        match &b.slip_keys {
            Some(keys) => {
                // Slips below `first` come first; from index `i0` on, slip `j` counts iff
                // `s_j - first <= base + c0 + (j - i0)`, i.e. `keys[j] <= first + base + c0 - i0`,
                // and the keys do not decrease, so the counted ones are a prefix.
                let i0 = if first == 0 {
                    0
                } else {
                    b.slips.partition_point(|&s| s < first)
                };
                let c0 = if prefix { i0 as i64 } else { 0 };
                let t = first + base + c0 - i0 as i64;
                let n = keys[i0..].partition_point(|&k| k <= t);
                c0 + n as i64
            }
            None => {
                let mut c = 0;
                for &s in &b.slips {
                    if (prefix && s < first) || (s >= first && s - first <= base + c) {
                        c += 1;
                    }
                }
                c
            }
        }
    }

    /// The replacement of the first defect entry for `unit` in `table` (one of
    /// [`Band::defects_first`], [`Band::defects_moved_first`]).
    #[inline]
    fn remap(table: &[(i64, i64)], unit: i64) -> Option<i64> {
        if table.is_empty() {
            return None;
        }
        table
            .binary_search_by_key(&unit, |&(d, _)| d)
            .ok()
            .map(|i| table[i].1)
    }

    /// DiskSim's `dm_translate_ltop`: `MAP_FULL` with `defects`, `MAP_ADDSLIPS` without.
    /// Indexed: the slip and defect lists are binary-searched (the same results as DiskSim's
    /// loops, [`G1Layout::ltop_scan`] in the tests).
    fn ltop_raw(&self, lbn: i64, defects: bool) -> (i64, i64, i64) {
        let b = self.band_of_lbn(lbn);
        let mut lbn = lbn - b.first_lbn + b.deadspace;
        let surfaces = self.surfaces;
        let spt = b.spt;
        let bpc = spt * surfaces;
        let (cyl, logical_head, sector) = match self.sparing {
            Sparing::Tracks => {
                let mut trackno = lbn / spt;
                trackno += Self::slips_counted(b, 0, false, trackno);
                if defects {
                    if let Some(r) = Self::remap(&b.defects_first, trackno) {
                        trackno = r;
                    }
                }
                (trackno / surfaces, trackno % surfaces, lbn % spt)
            }
            Sparing::SectorsPerTrack => {
                let lpt = spt - b.sparecnt;
                let mut trackno = lbn / lpt;
                lbn %= lpt;
                let mut first = spt * trackno;
                lbn += Self::slips_counted(b, first, false, lbn);
                if defects {
                    // Each entry is checked against the position the previous ones left.
                    for &(d, r) in &b.defects {
                        if d == first + lbn {
                            trackno = r / spt;
                            first = spt * trackno;
                            lbn = r % spt;
                        }
                    }
                }
                assert!(lbn < spt, "slips crossed a track end (checked at load)");
                (trackno / surfaces, trackno % surfaces, lbn)
            }
            Sparing::SectorsPerCylinder
            | Sparing::SectorsPerCylinderSlipToEnd
            | Sparing::SectorsAtZoneEnd => {
                let to_end = self.sparing != Sparing::SectorsPerCylinder;
                let lpc = bpc - b.sparecnt;
                let mut cyl = lbn / lpc;
                lbn %= lpc;
                let first = cyl * bpc;
                // `s / bpc < cyl` is `s < first` for the non-negative slips.
                lbn += Self::slips_counted(b, first, to_end, lbn);
                let remap = if defects {
                    Self::remap(&b.defects_moved_first, first + lbn)
                } else {
                    None
                };
                if let Some(r) = remap {
                    cyl = r / bpc;
                    lbn = r % bpc;
                } else {
                    cyl += lbn / lpc;
                    lbn %= lpc;
                }
                (cyl, lbn / spt, lbn % spt)
            }
            Sparing::SectorsPerRange => {
                let bpr = bpc * self.rangesize;
                let lpr = bpr - b.sparecnt;
                let rangeno = lbn / lpr;
                lbn %= lpr;
                let first = rangeno * bpr;
                lbn += Self::slips_counted(b, first, false, lbn);
                if defects {
                    if let Some(r) = Self::remap(&b.defects_moved_first, first + lbn) {
                        lbn = r % bpr;
                    }
                }
                (
                    rangeno * self.rangesize + lbn / bpc,
                    (lbn % bpc) / spt,
                    lbn % spt,
                )
            }
            Sparing::SectorsPerZone | Sparing::SectorsPerZoneSlipToEnd => {
                lbn += Self::slips_counted(b, 0, false, lbn);
                if defects {
                    if let Some(r) = Self::remap(&b.defects_moved_first, lbn) {
                        lbn = r;
                    }
                }
                (lbn / bpc, (lbn % bpc) / spt, lbn % spt)
            }
            Sparing::None
            | Sparing::SectorsPerCylinderAtFront
            | Sparing::SectorsPerCylinderAtFrontSlipToEnd => {
                unreachable!("rejected at load")
            }
        };
        let cyl = cyl + b.startcyl;
        (cyl, self.surfno(b, cyl, logical_head), sector)
    }

    /// The mapping as first written: DiskSim's loops over the slip and defect lists, verbatim.
    /// The reference [`G1Layout::ltop_raw`] is tested against.
    #[cfg(test)]
    pub(crate) fn ltop_scan(&self, lbn: i64, defects: bool) -> (i64, i64, i64) {
        let b = self.band_of_lbn(lbn);
        let mut lbn = lbn - b.first_lbn + b.deadspace;
        let surfaces = self.surfaces;
        let spt = b.spt;
        let bpc = spt * surfaces;
        let (cyl, logical_head, sector) = match self.sparing {
            Sparing::Tracks => {
                let mut trackno = lbn / spt;
                for &s in &b.slips {
                    if s <= trackno {
                        trackno += 1;
                    }
                }
                if defects {
                    if let Some(&(_, r)) = b.defects.iter().find(|&&(d, _)| d == trackno) {
                        trackno = r;
                    }
                }
                (trackno / surfaces, trackno % surfaces, lbn % spt)
            }
            Sparing::SectorsPerTrack => {
                let lpt = spt - b.sparecnt;
                let mut trackno = lbn / lpt;
                lbn %= lpt;
                let mut first = spt * trackno;
                for &s in &b.slips {
                    if s >= first && s - first <= lbn {
                        lbn += 1;
                    }
                }
                if defects {
                    for &(d, r) in &b.defects {
                        if d == first + lbn {
                            trackno = r / spt;
                            first = spt * trackno;
                            lbn = r % spt;
                        }
                    }
                }
                assert!(lbn < spt, "slips crossed a track end (checked at load)");
                (trackno / surfaces, trackno % surfaces, lbn)
            }
            Sparing::SectorsPerCylinder
            | Sparing::SectorsPerCylinderSlipToEnd
            | Sparing::SectorsAtZoneEnd => {
                let to_end = self.sparing != Sparing::SectorsPerCylinder;
                let lpc = bpc - b.sparecnt;
                let mut cyl = lbn / lpc;
                lbn %= lpc;
                let first = cyl * bpc;
                let mut slips = 0;
                for &s in &b.slips {
                    if (to_end && s / bpc < cyl) || (s >= first && s - first <= lbn + slips) {
                        slips += 1;
                    }
                }
                lbn += slips;
                let remap = defects
                    .then(|| b.defects.iter().find(|&&(d, r)| d == first + lbn && r != d))
                    .flatten();
                if let Some(&(_, r)) = remap {
                    cyl = r / bpc;
                    lbn = r % bpc;
                } else {
                    cyl += lbn / lpc;
                    lbn %= lpc;
                }
                (cyl, lbn / spt, lbn % spt)
            }
            Sparing::SectorsPerRange => {
                let bpr = bpc * self.rangesize;
                let lpr = bpr - b.sparecnt;
                let rangeno = lbn / lpr;
                lbn %= lpr;
                let first = rangeno * bpr;
                let mut slips = 0;
                for &s in &b.slips {
                    if s >= first && s - first <= lbn + slips {
                        slips += 1;
                    }
                }
                lbn += slips;
                if defects {
                    if let Some(&(_, r)) =
                        b.defects.iter().find(|&&(d, r)| d == first + lbn && r != d)
                    {
                        lbn = r % bpr;
                    }
                }
                (
                    rangeno * self.rangesize + lbn / bpc,
                    (lbn % bpc) / spt,
                    lbn % spt,
                )
            }
            Sparing::SectorsPerZone | Sparing::SectorsPerZoneSlipToEnd => {
                let mut slips = 0;
                for &s in &b.slips {
                    if s <= lbn + slips {
                        slips += 1;
                    }
                }
                lbn += slips;
                if defects {
                    if let Some(&(_, r)) = b.defects.iter().find(|&&(d, r)| d == lbn && r != d) {
                        lbn = r;
                    }
                }
                (lbn / bpc, (lbn % bpc) / spt, lbn % spt)
            }
            Sparing::None
            | Sparing::SectorsPerCylinderAtFront
            | Sparing::SectorsPerCylinderAtFrontSlipToEnd => {
                unreachable!("rejected at load")
            }
        };
        let cyl = cyl + b.startcyl;
        (cyl, self.surfno(b, cyl, logical_head), sector)
    }

    /// [`G1Layout::ltop_raw`] and the reference scan [`G1Layout::ltop_scan`] of `lbn`.
    #[cfg(test)]
    pub(crate) fn ltop_indexed_and_scanned(
        &self,
        lbn: u64,
        defects: bool,
    ) -> ((i64, i64, i64), (i64, i64, i64)) {
        (
            self.ltop_raw(lbn as i64, defects),
            self.ltop_scan(lbn as i64, defects),
        )
    }

    /// Physical position of `lbn` (DiskSim `MAP_FULL`).
    pub fn ltop(&self, lbn: u64) -> Chs {
        assert!(
            lbn < self.capacity(),
            "lbn {lbn} beyond capacity {}",
            self.capacity
        );
        let r = self.runs[self.run_index(lbn)];
        Chs {
            cylinder: r.cylinder,
            head: u32::from(r.head),
            sector: r.sector + (lbn - r.first_lbn) as u32,
        }
    }

    /// `(ltop(lbn), run_on_track(lbn), angle_index(ltop(lbn)))` with one table lookup (the
    /// angle from the table when `lbn` starts its run).
    #[inline]
    pub fn locate(&self, lbn: u64) -> (Chs, u32, (u32, u32)) {
        let (chs, run, angle, _) = self.locate_exact(lbn);
        (chs, run, angle)
    }

    /// [`G1Layout::locate`], with the sector's exact start angle in 2^-32 revolutions
    /// ([`G1Layout::angle`], computed on the way).
    pub fn locate_exact(&self, lbn: u64) -> (Chs, u32, (u32, u32), u32) {
        assert!(
            lbn < self.capacity(),
            "lbn {lbn} beyond capacity {}",
            self.capacity
        );
        let i = self.run_index(lbn);
        let r = self.runs[i];
        let end = self
            .runs
            .get(i + 1)
            .map_or(self.capacity as u64, |n| n.first_lbn);
        let chs = Chs {
            cylinder: r.cylinder,
            head: u32::from(r.head),
            sector: r.sector + (lbn - r.first_lbn) as u32,
        };
        let run = u32::try_from(end - lbn).expect("a track run fits u32");
        let b = &self.bands[usize::from(r.band)];
        let a = addmult(
            r.track_angle,
            i64::from(chs.sector),
            b.sector_width,
            b.trkspace,
        );
        let angle = (Self::angle_sector_in(b, a), b.spt as u32);
        (chs, run, angle, a)
    }

    /// [`G1Layout::locate`] from the run table (which [`G1Layout::ltop`] and
    /// [`G1Layout::run_on_track`] must agree with) and computed (the mapping, run search and
    /// angle the table was built from).
    #[cfg(test)]
    #[allow(clippy::type_complexity)]
    pub(crate) fn table_and_computed(
        &self,
        lbn: u64,
    ) -> ((Chs, u32, (u32, u32)), (Chs, u32, (u32, u32))) {
        let (c, h, s) = self.ltop_raw(lbn as i64, true);
        let computed = Chs {
            cylinder: c as u32,
            head: h as u32,
            sector: s as u32,
        };
        let table = self.locate(lbn);
        assert_eq!((self.ltop(lbn), self.run_on_track(lbn)), (table.0, table.1));
        (
            table,
            (
                computed,
                self.run_on_track_computed(lbn),
                self.angle_index(computed),
            ),
        )
    }

    /// Zone-relative position of a sector in LBN order (logical surface order).
    fn position(&self, b: &Band, c: i64, h: i64, s: i64) -> i64 {
        ((c - b.startcyl) * self.surfaces + self.surfno(b, c, h)) * b.spt + s
    }

    /// The LBN stored at `chs`, or `None` for spare, slipped, remapped-away and unlisted
    /// sectors: the exact inverse of [`G1Layout::ltop`].
    pub fn ptol(&self, chs: Chs) -> Option<u64> {
        let (c, h, s) = (
            i64::from(chs.cylinder),
            i64::from(chs.head),
            i64::from(chs.sector),
        );
        let (b, listed) = self.band_of_cyl(c);
        if !listed || h >= self.surfaces || s >= b.spt {
            return None;
        }
        let target = self.position(b, c, h, s);
        let full_is = |lbn: i64| self.ltop_raw(lbn, true) == (c, h, s);
        // A replacement sector holds the LBN whose slipped-only position is the defect.
        for &(d, r) in &b.defects {
            let unit = if self.sparing == Sparing::Tracks {
                b.spt
            } else {
                1
            };
            let rp = if unit == 1 { r } else { r * unit + s };
            if rp == target {
                let dp = if unit == 1 { d } else { d * unit + s };
                if let Some(lbn) = self.search(b, dp) {
                    if full_is(lbn) {
                        return Some(lbn as u64);
                    }
                }
            }
        }
        let lbn = self.search(b, target)?;
        full_is(lbn).then_some(lbn as u64)
    }

    /// The band LBN whose slips-only position is `target` (positions grow with the LBN).
    fn search(&self, b: &Band, target: i64) -> Option<i64> {
        let pos = |lbn: i64| {
            let (c, h, s) = self.ltop_raw(lbn, false);
            self.position(b, c, h, s)
        };
        let (mut lo, mut hi) = (b.first_lbn, b.first_lbn + b.blks);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pos(mid) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo < b.first_lbn + b.blks && pos(lo) == target).then_some(lo)
    }

    /// How many LBNs from `lbn` on lie in consecutive physical sectors of one track.
    pub fn run_on_track(&self, lbn: u64) -> u32 {
        assert!(lbn < self.capacity(), "lbn {lbn} beyond capacity");
        let i = self.run_index(lbn);
        let end = self
            .runs
            .get(i + 1)
            .map_or(self.capacity as u64, |r| r.first_lbn);
        u32::try_from(end - lbn).expect("a track run fits u32")
    }

    /// How many LBNs the track holding `lbn` has: the runs on its (cylinder, head) next to
    /// `lbn`'s in LBN order (DiskSim `dm_get_track_boundaries`: last − first + 1).
    pub fn track_lbns(&self, lbn: u64) -> u64 {
        assert!(lbn < self.capacity(), "lbn {lbn} beyond capacity");
        let i = self.run_index(lbn);
        let same =
            |r: &TrackRun| (r.cylinder, r.head) == (self.runs[i].cylinder, self.runs[i].head);
        let mut lo = i;
        while lo > 0 && same(&self.runs[lo - 1]) {
            lo -= 1;
        }
        let mut hi = i + 1;
        while hi < self.runs.len() && same(&self.runs[hi]) {
            hi += 1;
        }
        let end = self
            .runs
            .get(hi)
            .map_or(self.capacity as u64, |r| r.first_lbn);
        end - self.runs[lo].first_lbn
    }

    /// Whether positions strictly grow with the LBN across band `b`, so that a track's run
    /// is known from its ends. Not with defects (remapped sectors), nor with slips under
    /// spares per range of cylinders (scheme 8): DiskSim's loop there can put an LBN past
    /// its successor (random layouts found LBNs at a track's first sector whose successor
    /// is not the next sector), so those runs are found LBN by LBN.
    fn monotonic(&self, b: &Band) -> bool {
        b.defects.is_empty() && (self.sparing != Sparing::SectorsPerRange || b.slips.is_empty())
    }

    /// [`G1Layout::run_on_track`] from the mapping (the run table is built with it).
    fn run_on_track_computed(&self, lbn: u64) -> u32 {
        let l = lbn as i64;
        let b = self.band_of_lbn(l);
        let (c, h, s) = self.ltop_raw(l, true);
        let p0 = self.position(b, c, h, s);
        let bound = (b.spt - s).min(b.first_lbn + b.blks - l);
        let at = |i: i64| {
            let (c2, h2, s2) = self.ltop_raw(l + i, true);
            (c2, h2) == (c, h) && s2 == s + i && self.position(b, c2, h2, s2) == p0 + i
        };
        let run = if self.monotonic(b) {
            // Positions strictly grow with the LBN, so "still adjacent" holds for a prefix.
            let (mut lo, mut hi) = (1i64, bound);
            while lo < hi {
                let mid = lo + (hi - lo + 1) / 2;
                if at(mid - 1) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            lo
        } else {
            let mut n = 1;
            while n < bound && at(n) {
                n += 1;
            }
            n
        };
        u32::try_from(run).expect("a track run fits u32")
    }

    /// DiskSim's `g1_map_pbn_skew`: the angle at which physical sector `chs` starts, in
    /// 2^-32 revolutions.
    pub fn angle(&self, chs: Chs) -> u32 {
        let (b, _) = self.band_of_cyl(i64::from(chs.cylinder));
        self.angle_in(b, chs)
    }

    /// [`G1Layout::angle`] on `chs`'s band `b`.
    #[inline]
    fn angle_in(&self, b: &Band, chs: Chs) -> u32 {
        let a = self.track_angle(b, chs);
        addmult(a, i64::from(chs.sector), b.sector_width, b.trkspace)
    }

    /// The angle of sector 0 of `chs`'s track (band `b`) after the skews and the slip
    /// offsets: all of [`G1Layout::angle`] but the sector's own offset.
    #[inline]
    fn track_angle(&self, b: &Band, chs: Chs) -> u32 {
        let (c, h) = (i64::from(chs.cylinder), i64::from(chs.head));
        let cylno = c - b.startcyl;
        let surf = self.surfno(b, c, h);
        let switches = surf + (self.surfaces - 1) * cylno;
        let mut a = addmult(b.firstblkangle, switches, b.trackskew, b.trkspace);
        a = addmult(a, cylno, b.cylskew, b.trkspace);
        let per_cyl = matches!(
            self.sparing,
            Sparing::SectorsPerCylinder
                | Sparing::SectorsPerCylinderSlipToEnd
                | Sparing::SectorsPerCylinderAtFront
                | Sparing::SectorsPerCylinderAtFrontSlipToEnd
        );
        let mut slipoffs = 0;
        if per_cyl || self.sparing == Sparing::SectorsPerTrack {
            let mut tracks = cylno * self.surfaces;
            if self.sparing == Sparing::SectorsPerTrack {
                tracks += h;
            }
            let cutoff = tracks * b.spt;
            slipoffs = b.slips_sorted.partition_point(|&x| x < cutoff) as i64;
        }
        addmult(a, slipoffs, b.sector_width, b.trkspace)
    }

    /// DiskSim's sector index for an angle on a track of `chs`'s zone: rounded up to the next
    /// sector boundary (as `g1_ltop_0t` does).
    pub fn angle_sector(&self, chs: Chs, angle: u32) -> u32 {
        let (b, _) = self.band_of_cyl(i64::from(chs.cylinder));
        Self::angle_sector_in(b, angle)
    }

    #[inline]
    fn angle_sector_in(b: &Band, angle: u32) -> u32 {
        let w = b.sector_width;
        let q = if b.width_magic != 0 {
            ((u128::from(b.width_magic) * u128::from(angle)) >> 64) as u32
        } else {
            angle / w
        };
        debug_assert_eq!(q, angle / w);
        // `q` is below 2·spt (a width is floor(2^32 / spt)): `% spt` by subtraction.
        let spt = b.spt as u64;
        let wrap = |x: u64| if x >= spt { x - spt } else { x };
        let mut idx = wrap(u64::from(q));
        if idx >= spt {
            idx %= spt;
        }
        if angle != q.wrapping_mul(w) {
            idx = wrap(idx + 1);
        }
        idx as u32
    }

    /// `(angle_sector(chs, angle(chs)), sectors_per_track(chs.cylinder))` with one zone
    /// lookup.
    #[inline]
    pub fn angle_index(&self, chs: Chs) -> (u32, u32) {
        let (b, _) = self.band_of_cyl(i64::from(chs.cylinder));
        (
            Self::angle_sector_in(b, self.angle_in(b, chs)),
            b.spt as u32,
        )
    }
}
