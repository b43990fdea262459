//! The per-disk destage queue and its policies (paper section II). See the module docs of
//! `cache` for the call order; `docs/destage.md` for each policy in the paper's words.

use super::regions::{CostEstimate, RegionMap, RegionQueues};
use super::threshold::{check_occupancy, check_steps, stepped, table_i, HighLowGate};
use super::LinearThreshold;
use crate::drive::{Drive, HeadState, Target};
use crate::{Nanos, Op, Span};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A destage read (old data or old parity) or destage write (new data or new parity)
/// waiting for one disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestageRequest {
    /// The controller's handle; unique among this disk's queued destages.
    pub id: u64,
    pub op: Op,
    pub lba: u64,
    pub sectors: u32,
    /// The first sector's physical position ([`Drive::locate`]), located once when queued.
    pub target: Target,
    pub queued_at: Nanos,
    /// When the cache block was last accessed (its LRU recency): the region policy destages
    /// the least recently accessed block first.
    pub last_access: Nanos,
    /// Queueing order, for FCFS and every tie (deterministic).
    pub seq: u64,
}

/// The write cache as a pick sees it: its occupancy and the array-wide high/low gate.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CacheLevel {
    /// The write cache's instantaneous occupancy, in `[0, 1]`.
    pub occupancy: f64,
    /// Whether the high/low mark has turned destaging on ([`HighLowGate`]); only the
    /// high/low policy reads it.
    pub high_low_on: bool,
}

impl CacheLevel {
    /// A level without a high/low gate (every policy but high/low mark).
    pub fn new(occupancy: f64) -> CacheLevel {
        check_occupancy(occupancy);
        CacheLevel {
            occupancy,
            high_low_on: false,
        }
    }
}

/// Which destage to start when a disk is idle with no host work (paper section II).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DestagePolicy {
    /// The oldest queued destage first; work-conserving.
    Fcfs,
    /// The destage with the shortest predicted access time (positioning: controller
    /// overhead + seek or head switch + rotational wait); work-conserving (II.B).
    LeastCost,
    /// Least-cost while the [`HighLowGate`] is on: on above `high`, off below `low` (II.C).
    /// Paper: 0.7 and 0.3.
    HighLow { high: f64, low: f64 },
    /// Least-cost, but only if the cost is within a threshold that grows linearly with the
    /// occupancy ([`LinearThreshold`], II.D).
    LinearThreshold {
        at_empty_revs: f64,
        at_full_revs: f64,
    },
    /// The band/region approximation to linear threshold (II.E, appendix A): `bands` bands
    /// of `regions_per_band` regions, the stepped threshold `steps` (Table I: (upper end of
    /// the occupancy range, largest cost in region times)), the constant controller
    /// overhead t_con (paper: 2.2 ms) and the cost estimate (Fig. 13).
    Regions {
        bands: u32,
        regions_per_band: u32,
        steps: Vec<(f64, u32)>,
        controller_overhead: Span,
        estimate: CostEstimate,
    },
}

impl DestagePolicy {
    /// High/low mark at the paper's 70 % / 30 %.
    pub fn high_low_default() -> DestagePolicy {
        DestagePolicy::HighLow {
            high: HighLowGate::HIGH_DEFAULT,
            low: HighLowGate::LOW_DEFAULT,
        }
    }

    /// Linear threshold from 1/3 revolution (empty cache) to 8/3 (full), after Table I.
    pub fn linear_threshold_default() -> DestagePolicy {
        let t = LinearThreshold::default();
        DestagePolicy::LinearThreshold {
            at_empty_revs: t.at_empty_revs,
            at_full_revs: t.at_full_revs,
        }
    }

    /// The paper's example: 15 bands of 3 regions, Table I, 2.2 ms, average estimate.
    pub fn regions_default() -> DestagePolicy {
        DestagePolicy::Regions {
            bands: 15,
            regions_per_band: 3,
            steps: table_i(),
            controller_overhead: Span::from_ms_f64(2.2),
            estimate: CostEstimate::Average,
        }
    }

    /// A high/low gate with this policy's marks (the paper's for other policies, whose
    /// picks ignore it).
    pub fn gate(&self) -> HighLowGate {
        match *self {
            DestagePolicy::HighLow { high, low } => HighLowGate::new(high, low),
            _ => HighLowGate::default(),
        }
    }

    /// Checks the parameters against `drive`, naming the first bad field.
    pub fn validate(&self, drive: &Drive) -> Result<(), DestageError> {
        let bad = |field: &str, msg: String| {
            Err(DestageError::Invalid {
                field: field.into(),
                msg,
            })
        };
        match self {
            DestagePolicy::Fcfs | DestagePolicy::LeastCost => Ok(()),
            &DestagePolicy::HighLow { high, low } => {
                if !(0.0..=1.0).contains(&high) {
                    return bad("high", format!("must be within [0, 1], got {high}"));
                }
                if !(0.0..=high).contains(&low) {
                    return bad(
                        "low",
                        format!("must be within [0, high = {high}], got {low}"),
                    );
                }
                Ok(())
            }
            &DestagePolicy::LinearThreshold {
                at_empty_revs,
                at_full_revs,
            } => {
                for (k, v) in [
                    ("at_empty_revs", at_empty_revs),
                    ("at_full_revs", at_full_revs),
                ] {
                    if !(v.is_finite() && (0.0..=1000.0).contains(&v)) {
                        return bad(k, format!("must be within [0, 1000] revolutions, got {v}"));
                    }
                }
                Ok(())
            }
            DestagePolicy::Regions {
                bands,
                regions_per_band,
                steps,
                controller_overhead,
                ..
            } => {
                let cylinders = drive.geometry().cylinders();
                if *bands == 0 || *bands > cylinders {
                    return bad(
                        "bands",
                        format!("must be within 1..={cylinders}, got {bands}"),
                    );
                }
                if *regions_per_band == 0 || *regions_per_band > 1024 {
                    return bad(
                        "regions_per_band",
                        format!("must be within 1..=1024, got {regions_per_band}"),
                    );
                }
                if controller_overhead.0 > 10_000_000_000 {
                    return bad(
                        "controller_overhead",
                        format!("must be at most 10 s, got {controller_overhead}"),
                    );
                }
                check_steps(steps).or_else(|msg| bad("steps", msg))
            }
        }
    }
}

/// A destage policy that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DestageError {
    #[error("destage policy: {field}: {msg}")]
    Invalid { field: String, msg: String },
}

/// What a pick starts: the chosen destage first, then every other queued destage of the
/// same op on the same track (cylinder and head), in rotational order from the chosen one
/// (angle ahead of it, then LBA, then seq) — "all pending destage requests to the same
/// track are performed in one disk access". The controller makes one access of the
/// contiguous ones and consecutive accesses otherwise.
#[derive(Clone, Debug, PartialEq)]
pub struct DestageBatch {
    pub op: Op,
    pub requests: Vec<DestageRequest>,
    /// Predicted positioning time of the first ([`Drive::position_time`] at the pick).
    pub position_time: Span,
    /// The region policy's estimated cost in region times; `None` for the others.
    pub region_cost: Option<u32>,
}

/// Counters a queue keeps about its own decisions.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DestageStats {
    /// Batches started.
    pub picks: u64,
    /// Picks the policy declined with destages queued (non-work-conserving policies).
    pub declined: u64,
    /// Destages started inside a batch, beyond its first.
    pub batched: u64,
}

/// The policy, compiled against one drive.
#[derive(Clone, Debug)]
enum Rule {
    Fcfs,
    LeastCost,
    HighLow,
    Linear(LinearThreshold),
    Regions {
        map: Box<RegionMap>,
        queues: RegionQueues,
        steps: Vec<(f64, u32)>,
    },
}

/// One disk's pending destages under one policy. Call [`DestageQueue::pick`] only when the
/// disk is idle and its host queue is empty (paper III.A); `now` never goes backwards.
#[derive(Clone, Debug)]
pub struct DestageQueue {
    rule: Rule,
    reqs: BTreeMap<u64, DestageRequest>,
    /// (cylinder, head, is a write, seq, id): the same-track batch is one range.
    tracks: BTreeSet<(u32, u32, bool, u64, u64)>,
    last_pick: Nanos,
    stats: DestageStats,
}

fn track_key(r: &DestageRequest) -> (u32, u32, bool, u64, u64) {
    let chs = r.target.chs;
    (chs.cylinder, chs.head, r.op == Op::Write, r.seq, r.id)
}

impl DestageQueue {
    /// An empty queue; for regions, precomputes the cost table of appendix A.
    pub fn new(policy: &DestagePolicy, drive: &Drive) -> Result<DestageQueue, DestageError> {
        policy.validate(drive)?;
        let rule = match policy {
            DestagePolicy::Fcfs => Rule::Fcfs,
            DestagePolicy::LeastCost => Rule::LeastCost,
            DestagePolicy::HighLow { .. } => Rule::HighLow,
            &DestagePolicy::LinearThreshold {
                at_empty_revs,
                at_full_revs,
            } => Rule::Linear(LinearThreshold {
                at_empty_revs,
                at_full_revs,
            }),
            DestagePolicy::Regions {
                bands,
                regions_per_band,
                steps,
                controller_overhead,
                estimate,
            } => {
                let map = RegionMap::new(
                    drive,
                    *bands,
                    *regions_per_band,
                    *controller_overhead,
                    *estimate,
                );
                Rule::Regions {
                    queues: RegionQueues::new(map.regions()),
                    map: Box::new(map),
                    steps: steps.clone(),
                }
            }
        };
        Ok(DestageQueue {
            rule,
            reqs: BTreeMap::new(),
            tracks: BTreeSet::new(),
            last_pick: Nanos::ZERO,
            stats: DestageStats::default(),
        })
    }

    /// Queues a destage. Panics if its id is already queued (a controller bug).
    pub fn push(&mut self, r: DestageRequest) {
        assert!(r.sectors > 0, "destage {} moves no sector", r.id);
        if let Rule::Regions { map, queues, .. } = &mut self.rule {
            queues.insert(map.region_of(&r.target), r.last_access, r.seq, r.id);
        }
        assert!(
            self.tracks.insert(track_key(&r)),
            "destage {} queued twice",
            r.id
        );
        let id = r.id;
        assert!(
            self.reqs.insert(id, r).is_none(),
            "destage {id} queued twice"
        );
    }

    /// Removes a queued destage (its block was rewritten, or the controller withdrew it).
    pub fn remove(&mut self, id: u64) -> Option<DestageRequest> {
        let r = self.reqs.remove(&id)?;
        assert!(
            self.tracks.remove(&track_key(&r)),
            "destage {id} off its track"
        );
        if let Rule::Regions { map, queues, .. } = &mut self.rule {
            queues.remove(map.region_of(&r.target), r.last_access, r.seq, id);
        }
        Some(r)
    }

    pub fn len(&self) -> usize {
        self.reqs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// The queued destage with id `id`.
    pub fn get(&self, id: u64) -> Option<&DestageRequest> {
        self.reqs.get(&id)
    }

    pub fn stats(&self) -> DestageStats {
        self.stats
    }

    /// The region partition and cost table (region policy only).
    pub fn region_map(&self) -> Option<&RegionMap> {
        match &self.rule {
            Rule::Regions { map, .. } => Some(map),
            _ => None,
        }
    }

    /// The destage to start now with the head at `head`, and its same-track batch; `None`
    /// when nothing is queued or the policy declines. Call only when the disk is idle and
    /// its host queue is empty.
    #[must_use]
    pub fn pick(
        &mut self,
        now: Nanos,
        head: &HeadState,
        drive: &Drive,
        level: CacheLevel,
    ) -> Option<DestageBatch> {
        assert!(
            now >= self.last_pick,
            "time went backwards: {now:?} < {:?}",
            self.last_pick
        );
        check_occupancy(level.occupancy);
        self.last_pick = now;
        if self.reqs.is_empty() {
            return None;
        }
        let chosen = match &self.rule {
            Rule::Fcfs => self
                .reqs
                .values()
                .min_by_key(|r| (r.queued_at, r.seq))
                .map(|r| (r.id, None)),
            Rule::LeastCost => self.least_cost(now, head, drive).map(|(id, _)| (id, None)),
            Rule::HighLow => level
                .high_low_on
                .then(|| self.least_cost(now, head, drive))
                .flatten()
                .map(|(id, _)| (id, None)),
            Rule::Linear(t) => {
                let threshold = t.threshold(drive.period(), level.occupancy);
                self.least_cost(now, head, drive)
                    .filter(|&(_, cost)| cost <= threshold)
                    .map(|(id, _)| (id, None))
            }
            Rule::Regions { map, queues, steps } => {
                let th = stepped(steps, level.occupancy);
                queues
                    .search(map, map.head_region(now, head), th)
                    .map(|(id, cost)| (id, Some(cost)))
            }
        };
        let Some((id, region_cost)) = chosen else {
            self.stats.declined += 1;
            return None;
        };
        let batch = self.take_batch(id, now, head, drive, region_cost);
        assert!(!batch.requests.is_empty(), "a batch starts a destage");
        assert_eq!(batch.requests[0].id, id, "the chosen destage comes first");
        Some(batch)
    }

    /// The destage of least predicted positioning time, ties by seq; O(queue).
    fn least_cost(&self, now: Nanos, head: &HeadState, drive: &Drive) -> Option<(u64, Span)> {
        self.reqs
            .values()
            .map(|r| (drive.position_time(now, head, r.op, &r.target), r.seq, r.id))
            .min()
            .map(|(cost, _, id)| (id, cost))
    }

    /// Takes `id` and every queued destage of its op on its track.
    fn take_batch(
        &mut self,
        id: u64,
        now: Nanos,
        head: &HeadState,
        drive: &Drive,
        region_cost: Option<u32>,
    ) -> DestageBatch {
        let first = self.remove(id).expect("the chosen destage is queued");
        let (cyl, hd, w) = (
            first.target.chs.cylinder,
            first.target.chs.head,
            first.op == Op::Write,
        );
        let same: Vec<u64> = self
            .tracks
            .range((cyl, hd, w, 0, 0)..=(cyl, hd, w, u64::MAX, u64::MAX))
            .map(|k| k.4)
            .collect();
        let period = drive.period().0;
        let ahead = |r: &DestageRequest| {
            (r.target.angle_ns % period + period - first.target.angle_ns % period) % period
        };
        let mut rest: Vec<DestageRequest> = same
            .into_iter()
            .map(|i| self.remove(i).expect("indexed destage is queued"))
            .collect();
        rest.sort_by_key(|r| (ahead(r), r.lba, r.seq));
        self.stats.picks += 1;
        self.stats.batched += rest.len() as u64;
        let position_time = drive.position_time(now, head, first.op, &first.target);
        let mut requests = Vec::with_capacity(1 + rest.len());
        requests.push(first);
        requests.extend(rest);
        DestageBatch {
            op: requests[0].op,
            requests,
            position_time,
            region_cost,
        }
    }
}
