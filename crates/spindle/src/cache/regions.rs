//! Bands and regions: the disk partition of the approximate linear-threshold algorithm
//! (paper II.E, Fig. 1) and its destage-cost table (appendix A, eqs. (2)–(6)), plus the
//! per-region LRU queues the approximate algorithm searches.
//!
//! The cylinders are split into `bands` circular bands of (nearly) equal width; each band is
//! split by rotational angle into `m` regions, numbered `band · m + slot` (Fig. 1(a)). A
//! region's slot is the angle of a position divided into `m` equal sectors of angle, in the
//! same frame as [`Drive::rotational_wait`]: the platter angle at `t` is
//! `(t + phase_ns) mod period`. Costs are whole *region times* (`period / m`).
//!
//! Units: the table works in nanoseconds scaled by `m` (a region time is then exactly
//! `period_ns`), in integers, so the paper's floors and ceilings are exact.

use crate::drive::{Drive, HeadState, Target};
use crate::{Nanos, Op, Span};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the cost of a destage from region i to region j is estimated (paper IV.B, Fig. 13).
/// Each is a positioning delay — controller overhead + seek + rotational wait — rounded up
/// to whole region times.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CostEstimate {
    /// The paper's default ("the *average* positioning delay between regions"): from the
    /// centre of region i to the centre of region j, appendix A exactly — the seek between
    /// the two bands' middle cylinders (eq. 2), or across half the band within a band
    /// (eq. 3), then eq. (6) for the rotational offset.
    #[default]
    Average,
    /// Conservative: "the *maximum* positioning delay needed to move the head to any part
    /// of the target region from any point in the current region" — the supremum over every
    /// head position in i and target position in j, with the seek anywhere between the two
    /// bands' nearest and farthest cylinders. Often a whole revolution above `Average` (a
    /// seek that just misses the target waits a turn); never below `Average + 1`.
    Maximum,
    /// Aggressive: the *minimum* positioning delay from region i to region j — the shortest
    /// seek (nearest cylinders of the two bands; none within a band) and the best head and
    /// target positions. Never above `Average`.
    Minimum,
}

/// Where a cost table comes from: the partition, the seek curve and the overhead.
#[derive(Clone, Debug)]
pub struct RegionMap {
    cylinders: u32,
    bands: u32,
    m: u32,
    period_ns: u64,
    estimate: CostEstimate,
    /// `cost[(from_band · bands + to_band) · m + (slot_to − slot_from) mod m]`.
    cost: Vec<u32>,
    /// `t_seek(i, j)` of eqs. (2)/(3) (overhead included), per band pair.
    seek_average: Vec<Span>,
}

impl RegionMap {
    /// The table for `drive`, with its read seek curve (destage reads and writes share the
    /// estimate; the paper has one seek model).
    pub fn new(
        drive: &Drive,
        bands: u32,
        regions_per_band: u32,
        controller_overhead: Span,
        estimate: CostEstimate,
    ) -> RegionMap {
        let curve = drive.seek_curve(Op::Read);
        RegionMap::with_seek(
            drive.geometry().cylinders(),
            drive.period(),
            bands,
            regions_per_band,
            controller_overhead,
            estimate,
            |d| curve.time(d),
        )
    }

    /// The table for any seek function `f(distance)` (the paper's own HP 97560 model, in
    /// tests). Panics unless `1 <= bands <= cylinders`, `m >= 1` and the period is non-zero.
    pub fn with_seek(
        cylinders: u32,
        period: Span,
        bands: u32,
        regions_per_band: u32,
        controller_overhead: Span,
        estimate: CostEstimate,
        f: impl Fn(u32) -> Span,
    ) -> RegionMap {
        assert!(bands >= 1, "at least one band");
        assert!(bands <= cylinders, "{bands} bands of {cylinders} cylinders");
        assert!(regions_per_band >= 1, "at least one region per band");
        assert!(period.0 > 0, "a drive turns");
        let m = regions_per_band;
        let mut map = RegionMap {
            cylinders,
            bands,
            m,
            period_ns: period.0,
            estimate,
            cost: Vec::with_capacity((bands as usize).pow(2) * m as usize),
            seek_average: Vec::with_capacity((bands as usize).pow(2)),
        };
        // f at half a cylinder: the mean of its neighbours (a band of odd width, middles).
        let f_half = |twice: u32| Span((f(twice / 2).0 + f(twice.div_ceil(2)).0) / 2);
        for bi in 0..bands {
            let (fi, li) = map.band_cylinders(bi);
            for bj in 0..bands {
                let (fj, lj) = map.band_cylinders(bj);
                let (near, avg, far) = if bi == bj {
                    (f(0), f_half(li - fi + 1), f(li - fi))
                } else {
                    let near = if bj > bi { fj - li } else { fi - lj };
                    let mid = (fj + lj).abs_diff(fi + li);
                    let far = lj.abs_diff(fi).max(fj.abs_diff(li));
                    (f(near), f_half(mid), f(far))
                };
                let (near, avg, far) = (
                    near + controller_overhead,
                    avg + controller_overhead,
                    far + controller_overhead,
                );
                map.seek_average.push(avg);
                for d in 0..m {
                    let c = match estimate {
                        CostEstimate::Average => map.at_or_after(map.scaled(avg), d),
                        CostEstimate::Minimum => map.minimum(map.scaled(near), d),
                        CostEstimate::Maximum => map.maximum(map.scaled(near), map.scaled(far), d),
                    };
                    map.cost.push(c);
                }
            }
        }
        assert_eq!(map.cost.len(), (bands as usize).pow(2) * m as usize);
        map
    }

    /// A time in the table's unit: nanoseconds times `m`, so a region time is `period_ns`.
    fn scaled(&self, t: Span) -> u128 {
        u128::from(t.0) * u128::from(self.m)
    }

    /// Eq. (6): the fewest whole region times `k` with `k ≡ d (mod m)` that the head needs
    /// to cover a positioning of `s` (scaled): `k ≥ s`, rounded up to the next time the
    /// target's slot comes round.
    fn at_or_after(&self, s: u128, d: u32) -> u32 {
        let p = u128::from(self.period_ns);
        let m = u128::from(self.m);
        let k0 = s.div_ceil(p);
        let k = k0 + (u128::from(d) + m - k0 % m) % m;
        u32::try_from(k).expect("a cost fits u32")
    }

    /// The least positioning delay over head positions in region i and target positions in
    /// region j (their angle differs by more than `d − 1` and less than `d + 1` region
    /// times) after the shortest seek, rounded up: the first whole region time `k ≥ near`
    /// whose slot is `d` (target straight ahead by `d`) or `d + 1` (target less than a
    /// region further).
    fn minimum(&self, near: u128, d: u32) -> u32 {
        let m = self.m;
        [d, (d + 1) % m]
            .into_iter()
            .map(|e| self.at_or_after(near, e))
            .min()
            .expect("two candidates")
    }

    /// The supremum of the positioning delay over head positions in region i, target
    /// positions in region j and seeks in `near ..= far`, rounded up. The target lies at an
    /// angle `δ` in the open arc `(d − 1, d + 1)` region times ahead of the head; after a
    /// seek `s` the head waits until `δ` comes round. If some seek ends with the arc's
    /// interior (or its end) under the head, a target just behind it costs a whole turn
    /// more: `s + m`.
    fn maximum(&self, near: u128, far: u128, d: u32) -> u32 {
        let p = u128::from(self.period_ns);
        let m = u128::from(self.m);
        let turn = m * p;
        let units = |t: u128| u32::try_from(t.div_ceil(p)).expect("a cost fits u32");
        if m <= 2 {
            // The arc spans the whole turn: every seek can just miss its target.
            return units(far + turn);
        }
        let arc_start = ((u128::from(d) + m - 1) % m) * p;
        let r = far % turn;
        let o = (r + turn - arc_start) % turn;
        if o > 0 && o <= 2 * p {
            return units(far + turn);
        }
        // `far` ends outside the arc: the latest seek that ends at the arc's end, if any,
        // costs a turn more; otherwise the longest seek waits for the arc's end.
        let wait_for_end = far + (arc_start + 2 * p + turn - r) % turn;
        let back = (o + turn - 2 * p) % turn;
        let missed = (far >= back && far - back >= near).then(|| far - back + turn);
        units(missed.map_or(wait_for_end, |x| x.max(wait_for_end)))
    }

    pub fn estimate(&self) -> CostEstimate {
        self.estimate
    }

    pub fn bands(&self) -> u32 {
        self.bands
    }

    pub fn regions_per_band(&self) -> u32 {
        self.m
    }

    /// Number of regions, `bands · regions_per_band`.
    pub fn regions(&self) -> u32 {
        self.bands * self.m
    }

    /// The band holding `cylinder`: `cylinder · bands / cylinders`.
    pub fn band_of(&self, cylinder: u32) -> u32 {
        assert!(
            cylinder < self.cylinders,
            "cylinder {cylinder} beyond the drive"
        );
        let b = u64::from(cylinder) * u64::from(self.bands) / u64::from(self.cylinders);
        u32::try_from(b).expect("band < bands")
    }

    /// First and last cylinder of `band`.
    pub fn band_cylinders(&self, band: u32) -> (u32, u32) {
        assert!(band < self.bands, "band {band} of {}", self.bands);
        let first = |b: u32| {
            let c = (u64::from(b) * u64::from(self.cylinders)).div_ceil(u64::from(self.bands));
            u32::try_from(c).expect("cylinder fits u32")
        };
        (first(band), first(band + 1) - 1)
    }

    /// The slot of an angle (ns within a revolution): `angle · m / period`.
    fn slot(&self, angle_ns: u64) -> u32 {
        let angle = angle_ns % self.period_ns;
        let s = u128::from(angle) * u128::from(self.m) / u128::from(self.period_ns);
        u32::try_from(s).expect("slot < m")
    }

    /// The region of a destage: its cylinder's band and its first sector's angle.
    pub fn region_of(&self, target: &Target) -> u32 {
        self.band_of(target.chs.cylinder) * self.m + self.slot(target.angle_ns)
    }

    /// The region under the head at `now`: its cylinder's band, the platter angle at `now`.
    pub fn head_region(&self, now: Nanos, head: &HeadState) -> u32 {
        let angle = (now.0 % self.period_ns + head.phase_ns) % self.period_ns;
        self.band_of(head.cylinder) * self.m + self.slot(angle)
    }

    /// `cost(i, j)` in region times (eq. (6) for [`CostEstimate::Average`]).
    pub fn cost(&self, from: u32, to: u32) -> u32 {
        assert!(from < self.regions(), "region {from} of {}", self.regions());
        assert!(to < self.regions(), "region {to} of {}", self.regions());
        let (bi, bj) = (from / self.m, to / self.m);
        let d = (to % self.m + self.m - from % self.m) % self.m;
        self.cost[((bi * self.bands + bj) * self.m + d) as usize]
    }

    /// `t_seek(i, j)` of eqs. (2) and (3), controller overhead included.
    pub fn seek_average(&self, from: u32, to: u32) -> Span {
        let (bi, bj) = (from / self.m, to / self.m);
        self.seek_average[(bi * self.bands + bj) as usize]
    }
}

/// One LRU queue per region: `(last_access, seq) → id`, least recently accessed first.
#[derive(Clone, Debug)]
pub(crate) struct RegionQueues {
    queues: Vec<BTreeMap<(Nanos, u64), u64>>,
}

impl RegionQueues {
    pub(crate) fn new(regions: u32) -> RegionQueues {
        assert!(regions >= 1, "at least one region");
        RegionQueues {
            queues: vec![BTreeMap::new(); regions as usize],
        }
    }

    pub(crate) fn insert(&mut self, region: u32, last_access: Nanos, seq: u64, id: u64) {
        let old = self.queues[region as usize].insert((last_access, seq), id);
        assert!(
            old.is_none(),
            "destage seq {seq} queued twice in region {region}"
        );
    }

    pub(crate) fn remove(&mut self, region: u32, last_access: Nanos, seq: u64, id: u64) {
        let old = self.queues[region as usize].remove(&(last_access, seq));
        assert_eq!(old, Some(id), "destage {id} missing from region {region}");
    }

    /// The approximate algorithm's search from region `from` at threshold `th` region
    /// times: among regions with `cost(from, j) ≤ th` and work queued, those of least cost
    /// (the paper searches all regions within one unit of cost together, then two, …), and
    /// among them the least recently accessed block, ties by `seq`. Returns its id and the
    /// region's cost. O(regions).
    pub(crate) fn search(&self, map: &RegionMap, from: u32, th: u32) -> Option<(u64, u32)> {
        let mut best: Option<(u32, Nanos, u64, u64)> = None;
        for (j, q) in self.queues.iter().enumerate() {
            let Some((&(last_access, seq), &id)) = q.first_key_value() else {
                continue;
            };
            let cost = map.cost(from, u32::try_from(j).expect("region fits u32"));
            if cost > th {
                continue;
            }
            let key = (cost, last_access, seq, id);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        best.map(|(cost, _, _, id)| (id, cost))
    }
}
