//! The advisor's pure part: every candidate configuration of the layout families for a set
//! of disk counts, and their order by the models' prediction (`spindle advise`,
//! docs/advise.md). The driver simulates the best of them.

use serde::Serialize;

use super::predict::{predict, Candidate, Load, Prediction};
use super::DiskModel;

/// Dilutions Dd the advisor tries for EW-Arrays (the paper's figures use 1.25–4).
pub const EW_DILUTIONS: [f64; 5] = [1.25, 1.5, 2.0, 3.0, 4.0];
/// Mirrors Dm tried (beyond 3 copies the writes cost more than reads gain, 2.3.4).
pub const DM_MAX: u32 = 3;
/// Copies of a page the advisor tries on paged disks (the layout allows 1–8).
pub const PAGED_REPLICAS: [u32; 5] = [1, 2, 3, 4, 6];

/// What the ranking optimises: a latency metric, and a bound on it when one is given.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    MeanMs,
    P99Ms,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::MeanMs => "mean_ms",
            Metric::P99Ms => "p99_ms",
        }
    }

    pub fn of(self, p: &Prediction) -> f64 {
        match self {
            Metric::MeanMs => p.mean_ms,
            Metric::P99Ms => p.p99_ms,
        }
    }
}

/// Every candidate on `disks` disks: the SR-Mirror family Ds × Dr × Dm (striping, RAID-10,
/// SR-Arrays, SR-Mirrors; Dr ≤ `dr_max`, Dm ≤ [`DM_MAX`]), EW-Arrays Dm × Ds × Dd with
/// Ds·Dd = D/Dm whole and Ds ≥ 1 (Ds fractional), and RAID-5 (one group of D, and groups of
/// 5 when 5 divides D) from 3 disks, and paged disks with r copies of each page (r ≤ D, so
/// the disks hold at least one disk's worth of pages).
pub fn candidates(disks: u32, dr_max: u32) -> Vec<Candidate> {
    let mut out = Vec::new();
    for dm in 1..=DM_MAX.min(disks) {
        if !disks.is_multiple_of(dm) {
            continue;
        }
        let per = disks / dm;
        for dr in 1..=dr_max.min(per) {
            if per.is_multiple_of(dr) {
                out.push(Candidate::sr(per / dr, dr, dm));
            }
        }
        for dd in EW_DILUTIONS {
            let ds = f64::from(per) / dd;
            if ds >= 1.0 {
                out.push(Candidate::ew(dm, ds, dd));
            }
        }
    }
    if disks >= 3 {
        if disks <= 10 {
            out.push(Candidate::raid5(disks, disks));
        }
        if disks.is_multiple_of(5) && disks > 5 {
            out.push(Candidate::raid5(disks, 5));
        }
    }
    for r in PAGED_REPLICAS.into_iter().filter(|&r| r <= disks) {
        out.push(Candidate::paged(disks, r));
    }
    out
}

/// A candidate with its prediction.
#[derive(Clone, Debug, Serialize)]
pub struct Ranked {
    pub candidate: Candidate,
    pub prediction: Prediction,
}

/// The candidates in the order the models rank them: those predicted to keep up first, by
/// `metric`; then the saturated, by the throughput they can serve (most first). Ties keep the
/// enumeration order (fewer disks first, then simpler layouts).
pub fn rank(d: &DiskModel, load: &Load, cands: Vec<Candidate>, metric: Metric) -> Vec<Ranked> {
    let mut ranked: Vec<Ranked> = cands
        .into_iter()
        .map(|c| Ranked {
            prediction: predict(d, &c, load),
            candidate: c,
        })
        .collect();
    ranked.sort_by(|a, b| {
        let (pa, pb) = (&a.prediction, &b.prediction);
        pa.saturated.cmp(&pb.saturated).then_with(|| {
            if pa.saturated {
                pb.max_iops.total_cmp(&pa.max_iops)
            } else {
                metric.of(pa).total_cmp(&metric.of(pb))
            }
        })
    });
    ranked
}

/// The 4.3 question in the models' terms: `hit` of the reads served by a host LRU cache
/// bought for the price of one disk. The load the disks see: the missed reads and every
/// write (synchronous writes are forced to disk in both alternatives, 4.3).
pub fn with_cache(load: &Load, read_hit: f64) -> (Load, f64) {
    let rf = load.read_fraction;
    let hits = rf * read_hit.clamp(0.0, 1.0);
    let remaining = 1.0 - hits;
    let mut l = load.clone();
    l.read_fraction = if remaining > 0.0 {
        (rf - hits) / remaining
    } else {
        0.0
    };
    l.rate_iops = load.rate_iops.map(|r| r * remaining);
    l.queue = load.queue.map(|q| (q * remaining).max(1.0));
    (l, hits)
}
