//! The workload parameters the array models need (docs/advise.md), in one pass over a trace,
//! beside [`super::stats`] (which has the counts, sizes, inter-arrival times and the seek
//! locality L of table 4.2): burstiness of the arrivals, read-after-write and overwrite
//! shares, the working set and the LRU reuse-distance profile (for the dissertation's 4.3
//! question, more disks or more memory).
//!
//! Blocks are 4 KiB (a request touches every block it overlaps), per device. Reuse distance
//! of an access: the distinct blocks touched since the previous access to the same block
//! (LRU stack distance, Mattson et al.), computed with a Fenwick tree over access times in
//! O(log n) per access; an LRU cache of C blocks hits exactly the accesses with distance < C.
//! Memory grows with the accesses (about 24 bytes each) and the distinct blocks.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::TraceRecord;
use crate::Op;

/// The block the reuse and working-set measures count in.
pub const BLOCK_BYTES: u64 = 4096;
/// The window of table 4.2's "read after write (1 hour)".
pub const RAW_WINDOW_NS: u64 = 3_600 * 1_000_000_000;
/// The blocks of one request the reuse and working-set measures follow: a longer request
/// (256 MiB and more; a trace's request may claim up to 2 TiB) counts by its first blocks
/// only, and is counted in [`Characterisation::truncated_requests`], so memory stays bounded.
pub const MAX_BLOCKS_PER_REQUEST: u64 = 65_536;
/// Arrival-count windows for the burstiness measures.
pub const WINDOWS_MS: [u64; 3] = [10, 100, 1000];

/// The characterisation of a trace (docs/advise.md, "Characterisation").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Characterisation {
    /// Reads over requests: p of eq. 2.25 when every write can be propagated in the
    /// foreground only (an upper bound on the array's p is 1: every write in the background).
    pub read_fraction: f64,
    /// Per window length: arrivals counted in consecutive windows of the trace's span.
    pub burstiness: Vec<Burstiness>,
    /// Reads of a block written less than an hour before, over all requests (table 4.2).
    pub read_after_write_pct: f64,
    /// Writes to a block written before (anywhere in the trace), over writes.
    pub overwrite_pct: f64,
    /// Distinct 4 KiB blocks touched, and their bytes.
    pub working_set_blocks: u64,
    pub working_set_bytes: u64,
    /// Block accesses (a request of n blocks is n accesses).
    pub block_accesses: u64,
    /// LRU reuse distances of the re-accesses: `count` with distance below `lt_blocks`
    /// (power-of-two buckets); first accesses are cold misses, not counted here.
    pub reuse: Vec<ReuseBucket>,
    /// Read accesses and their reuse distances alone (a host cache serves reads; writes still
    /// go to the disks, dissertation 4.3).
    pub read_accesses: u64,
    pub read_reuse: Vec<ReuseBucket>,
    /// Requests longer than [`MAX_BLOCKS_PER_REQUEST`] blocks, followed by their first
    /// blocks only in the working set and reuse distances.
    pub truncated_requests: u64,
    /// Arrivals per consecutive [`FLUID_WINDOW_MS`] window (for the advisor's burst model;
    /// not printed).
    #[serde(skip)]
    pub window_counts: Vec<u32>,
}

/// The window of [`Characterisation::window_counts`].
pub const FLUID_WINDOW_MS: u64 = 10;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Burstiness {
    pub window_ms: u64,
    pub windows: u64,
    /// Mean arrivals per window.
    pub mean: f64,
    /// Index of dispersion: variance over mean of the counts (1 for a Poisson stream).
    pub dispersion: f64,
    /// The busiest window over the mean.
    pub peak_to_mean: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReuseBucket {
    pub lt_blocks: u64,
    pub count: u64,
}

impl Characterisation {
    /// Hit ratio of an LRU cache of `blocks` 4 KiB blocks over the read accesses (reads that
    /// a cache of that size would have served). Buckets are powers of two: a size between
    /// two bounds interpolates linearly.
    pub fn read_hit_ratio(&self, blocks: f64) -> f64 {
        hit_ratio(&self.read_reuse, self.read_accesses, blocks)
    }
}

fn hit_ratio(buckets: &[ReuseBucket], accesses: u64, blocks: f64) -> f64 {
    if accesses == 0 || blocks < 1.0 {
        return 0.0;
    }
    let mut hits = 0.0;
    let mut lo = 0.0;
    for b in buckets {
        let hi = b.lt_blocks as f64;
        if blocks >= hi {
            hits += b.count as f64;
        } else if blocks > lo {
            hits += b.count as f64 * (blocks - lo) / (hi - lo);
        }
        lo = hi;
    }
    hits / accesses as f64
}

/// Fenwick tree of 0/1 marks over access times: the live (most recent) access of each block.
struct Fenwick(Vec<u32>);

impl Fenwick {
    fn add(&mut self, i: usize, v: i32) {
        let mut i = i + 1;
        while i <= self.0.len() {
            self.0[i - 1] = self.0[i - 1].wrapping_add_signed(v);
            i += i & i.wrapping_neg();
        }
    }

    /// Marks at 0..=i.
    fn prefix(&self, i: usize) -> u64 {
        let mut i = i + 1;
        let mut s = 0u64;
        while i > 0 {
            s += u64::from(self.0[i - 1]);
            i -= i & i.wrapping_neg();
        }
        s
    }

    fn grow(&mut self) {
        // Doubling rebuilds the tree from its marks (each live mark re-added).
        let n = self.0.len();
        let marks: Vec<usize> = (0..n)
            .filter(|&i| self.prefix(i) - if i == 0 { 0 } else { self.prefix(i - 1) } == 1)
            .collect();
        self.0 = vec![0; (n * 2).max(1024)];
        for i in marks {
            self.add(i, 1);
        }
    }
}

/// Builds a [`Characterisation`] from records pushed in arrival order.
pub struct CharacteriseBuilder {
    requests: u64,
    reads: u64,
    writes: u64,
    raw_reads: u64,
    overwrites: u64,
    arrivals_ns: Vec<u64>,
    /// (device, block) → (last access time index, last write arrival ns or None).
    blocks: HashMap<(u32, u64), (usize, Option<u64>)>,
    tree: Fenwick,
    clock: usize,
    reuse: Vec<u64>,
    read_reuse: Vec<u64>,
    accesses: u64,
    read_accesses: u64,
    truncated: u64,
}

impl Default for CharacteriseBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl CharacteriseBuilder {
    pub fn new() -> Self {
        CharacteriseBuilder {
            requests: 0,
            reads: 0,
            writes: 0,
            raw_reads: 0,
            overwrites: 0,
            arrivals_ns: Vec::new(),
            blocks: HashMap::new(),
            tree: Fenwick(vec![0; 1024]),
            clock: 0,
            reuse: vec![0; 64],
            read_reuse: vec![0; 64],
            accesses: 0,
            read_accesses: 0,
            truncated: 0,
        }
    }

    pub fn push(&mut self, r: &TraceRecord) {
        self.requests += 1;
        let read = r.op == Op::Read;
        if read {
            self.reads += 1;
        } else {
            self.writes += 1;
        }
        let now = r.arrival.0;
        self.arrivals_ns.push(now);
        let per = BLOCK_BYTES / 512;
        let first = r.lba / per;
        let mut last = (r.lba + u64::from(r.sectors.max(1)) - 1) / per;
        if last - first >= MAX_BLOCKS_PER_REQUEST {
            last = first + MAX_BLOCKS_PER_REQUEST - 1;
            self.truncated += 1;
        }
        let (mut raw, mut over) = (false, false);
        for b in first..=last {
            if self.clock >= self.tree.0.len() {
                self.tree.grow();
            }
            let t = self.clock;
            self.clock += 1;
            self.accesses += 1;
            if read {
                self.read_accesses += 1;
            }
            let entry = self.blocks.get(&(r.device, b)).copied();
            let mut last_write = None;
            if let Some((prev, w)) = entry {
                // Distinct blocks touched after `prev`: live marks after it.
                let distance = self.tree.prefix(t.saturating_sub(1)) - self.tree.prefix(prev);
                let bucket = (64 - distance.leading_zeros()) as usize; // distance < 2^bucket
                self.reuse[bucket] += 1;
                if read {
                    self.read_reuse[bucket] += 1;
                }
                self.tree.add(prev, -1);
                last_write = w;
                if let Some(w) = w {
                    if read && now.saturating_sub(w) < RAW_WINDOW_NS {
                        raw = true;
                    }
                    if !read {
                        over = true;
                    }
                }
            }
            self.tree.add(t, 1);
            let w = if read { last_write } else { Some(now) };
            self.blocks.insert((r.device, b), (t, w));
        }
        self.raw_reads += u64::from(raw);
        self.overwrites += u64::from(over);
    }

    pub fn finish(self) -> Characterisation {
        let n = self.requests.max(1) as f64;
        let buckets = |v: &[u64]| -> Vec<ReuseBucket> {
            let top = v.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
            v[..top]
                .iter()
                .enumerate()
                .map(|(i, &count)| ReuseBucket {
                    lt_blocks: 1u64 << i,
                    count,
                })
                .collect()
        };
        let blocks = self.blocks.len() as u64;
        Characterisation {
            read_fraction: self.reads as f64 / n,
            burstiness: burstiness(&self.arrivals_ns),
            read_after_write_pct: self.raw_reads as f64 / n * 100.0,
            overwrite_pct: if self.writes == 0 {
                0.0
            } else {
                self.overwrites as f64 / self.writes as f64 * 100.0
            },
            working_set_blocks: blocks,
            working_set_bytes: blocks * BLOCK_BYTES,
            block_accesses: self.accesses,
            reuse: buckets(&self.reuse),
            read_accesses: self.read_accesses,
            read_reuse: buckets(&self.read_reuse),
            truncated_requests: self.truncated,
            window_counts: window_counts(&self.arrivals_ns, FLUID_WINDOW_MS),
        }
    }
}

fn window_counts(arrivals: &[u64], ms: u64) -> Vec<u32> {
    let (Some(&lo), Some(&hi)) = (arrivals.iter().min(), arrivals.iter().max()) else {
        return Vec::new();
    };
    let w = ms * 1_000_000;
    let n = (hi - lo) / w + 1;
    if n > 10_000_000 {
        return Vec::new();
    }
    let mut counts = vec![0u32; n as usize];
    for &a in arrivals {
        counts[((a - lo) / w) as usize] += 1;
    }
    counts
}

fn burstiness(arrivals: &[u64]) -> Vec<Burstiness> {
    let (Some(&lo), Some(&hi)) = (arrivals.iter().min(), arrivals.iter().max()) else {
        return Vec::new();
    };
    WINDOWS_MS
        .iter()
        .filter_map(|&ms| {
            let w = ms * 1_000_000;
            let windows = (hi - lo) / w + 1;
            if !(2..=50_000_000).contains(&windows) {
                return None;
            }
            let mut counts = vec![0u64; usize::try_from(windows).ok()?];
            for &a in arrivals {
                counts[usize::try_from((a - lo) / w).ok()?] += 1;
            }
            let k = counts.len() as f64;
            let mean = arrivals.len() as f64 / k;
            let var = counts
                .iter()
                .map(|&c| (c as f64 - mean).powi(2))
                .sum::<f64>()
                / k;
            let peak = counts.iter().copied().max().unwrap_or(0) as f64;
            Some(Burstiness {
                window_ms: ms,
                windows,
                mean,
                dispersion: if mean > 0.0 { var / mean } else { 0.0 },
                peak_to_mean: if mean > 0.0 { peak / mean } else { 0.0 },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    fn rec(t_ms: u64, lba: u64, sectors: u32, op: Op) -> TraceRecord {
        TraceRecord {
            arrival: Nanos(t_ms * 1_000_000),
            device: 0,
            lba,
            sectors,
            op,
        }
    }

    /// A request of 2^32 - 1 sectors (2 TiB) is followed by its first blocks only: memory
    /// stays bounded, and the truncation is counted.
    #[test]
    fn a_huge_request_is_followed_by_its_first_blocks() {
        let mut b = CharacteriseBuilder::new();
        b.push(&rec(0, 0, u32::MAX, Op::Write));
        b.push(&rec(1, 0, 8, Op::Read));
        let c = b.finish();
        assert_eq!(c.truncated_requests, 1);
        assert_eq!(c.working_set_blocks, MAX_BLOCKS_PER_REQUEST);
        assert_eq!(c.block_accesses, MAX_BLOCKS_PER_REQUEST + 1);
    }

    #[test]
    fn reuse_distance_is_the_lru_stack_distance() {
        // Blocks A B C A B: the second A has B and C between (distance 2), the second B has
        // C and A (2). An LRU cache of 3 blocks hits both, of 2 neither.
        let mut b = CharacteriseBuilder::new();
        for (t, blk) in [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1)] {
            b.push(&rec(t, blk * 8, 8, Op::Read));
        }
        let c = b.finish();
        assert_eq!(c.working_set_blocks, 3);
        assert_eq!(c.block_accesses, 5);
        let total: u64 = c.reuse.iter().map(|r| r.count).sum();
        assert_eq!(total, 2);
        // Distance 2 lies in the bucket [2, 4).
        assert_eq!(c.reuse.last().map(|r| (r.lt_blocks, r.count)), Some((4, 2)));
        assert!((c.read_hit_ratio(4.0) - 0.4).abs() < 1e-12);
        assert_eq!(c.read_hit_ratio(1.0), 0.0);
    }

    #[test]
    fn read_after_write_and_overwrite_shares() {
        let mut b = CharacteriseBuilder::new();
        b.push(&rec(0, 0, 8, Op::Write));
        b.push(&rec(1, 0, 8, Op::Read)); // read after write
        b.push(&rec(2, 0, 8, Op::Write)); // overwrite
        b.push(&rec(3, 800, 8, Op::Write)); // new block
        let c = b.finish();
        assert!((c.read_after_write_pct - 25.0).abs() < 1e-12);
        assert!((c.overwrite_pct - 100.0 / 3.0).abs() < 1e-9);
        assert!((c.read_fraction - 0.25).abs() < 1e-12);
    }

    #[test]
    fn a_burst_has_a_high_dispersion_and_an_even_stream_none() {
        let even: Vec<u64> = (0..1000).map(|i| i * 10_000_000).collect();
        let b = burstiness(&even);
        let s = b
            .iter()
            .find(|b| b.window_ms == 100)
            .expect("100 ms windows");
        assert!(
            s.dispersion < 0.01 && (s.peak_to_mean - 1.0).abs() < 0.02,
            "{s:?}"
        );
        let mut bursty: Vec<u64> = (0..500).map(|i| i * 1_000).collect();
        bursty.extend((0..500).map(|i| 9_000_000_000 + i * 1_000));
        let b = burstiness(&bursty);
        let s = b
            .iter()
            .find(|b| b.window_ms == 100)
            .expect("100 ms windows");
        assert!(s.dispersion > 100.0 && s.peak_to_mean > 40.0, "{s:?}");
    }
}

/// The object `spindle trace stats --json` prints (and Python's `spindle.trace.stats`
/// returns): the trace's statistics, flattened, with its characterisation.
#[derive(Serialize)]
pub struct StatsReport<'a> {
    pub path: &'a str,
    pub format: super::TraceFormat,
    /// `none`, `gzip` or `bzip2`.
    pub compression: &'a str,
    #[serde(flatten)]
    pub stats: &'a super::stats::TraceStats,
    pub characterisation: &'a Characterisation,
}
