//! The process-group workload of Varma and Jacobson, "Destage algorithms for disk arrays with
//! non-volatile caches" (ISCA '95), section III.C: N process groups, each issuing requests
//! at its own rate to its own part of the address space, with locality from a per-group
//! history buffer and issue times from a normal distribution; optional sustained bursts
//! (section IV.A item 4: the rate multiplied by a factor, periodically or once).
//!
//! Units: addresses and sizes in blocks of `block_sectors` sectors; every request starts on
//! a block boundary and lies inside its group's space, which lies inside the data set.
//! Times are integer nanoseconds; a group's gap is drawn in `f64` seconds and rounded once.
//!
//! Determinism: group g has its own [`Pcg64Mcg`] seeded from the experiment seed and g, and
//! draws, per request, in a fixed order: operation, size, whether to use the history, which
//! history list (writes only), the position in it or a fresh address, then the next gap.
//! Groups are merged by next arrival, ties going to the lower group index, so the stream
//! depends only on the parameters and the seed.
//!
//! The distribution forms the paper leaves open, and what is chosen here (docs/workload.md):
//! - size: a discretised half-normal on whole blocks, P(k) ∝ exp(−(k−1)²/2σ²) for k ≥ 1,
//!   σ solved so the mean is `mean_blocks` exactly (mode 1 block: "favouring smaller");
//! - gaps: Normal(m/r, cv/r) clamped at 0, with r the group's current rate and m solved so
//!   the clamped gap's mean is exactly 1/r (the clamp alone would raise the mean);
//! - history position: age a (0 = most recent) of a half-normal with σ = `sigma_fraction`
//!   times the list's length, redrawn while a ≥ length.
//!
//! It does not model per-group rates or mixes (all groups share them), nor the paper's
//! validation workload of overlaid real traces.

use crate::{Nanos, Op, Span};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_pcg::Pcg64Mcg;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The paper's defaults (section III.C).
pub const DEFAULT_GROUPS: u32 = 10;
pub const DEFAULT_GLOBAL_GROUPS: u32 = 1;
pub const DEFAULT_SUBSET_FRACTION: f64 = 0.01;
pub const DEFAULT_MEAN_BLOCKS: f64 = 2.0;
/// "The default size of the history buffer is 10 Mbytes": in total, split evenly.
pub const DEFAULT_HISTORY_BYTES: u64 = 10 * 1024 * 1024;
pub const DEFAULT_READ_HISTORY_FRACTION: f64 = 0.65;
pub const DEFAULT_WRITE_HISTORY_FRACTION: f64 = 0.9;
/// "The target addresses for writes are chosen 90% of the time from old writes".
pub const DEFAULT_WRITE_FROM_WRITES_FRACTION: f64 = 0.9;
/// Not in the paper: the history position's σ as a fraction of the list's length.
pub const DEFAULT_HISTORY_SIGMA_FRACTION: f64 = 0.5;
/// Not in the paper: the gaps' coefficient of variation (sd / mean).
pub const DEFAULT_ARRIVAL_CV: f64 = 0.5;
/// "Tripling the issue rate".
pub const DEFAULT_BURST_FACTOR: f64 = 3.0;

/// Bounds that keep the tables and the history in memory and the times in range.
pub const MAX_GROUPS: u32 = 65_536;
pub const MAX_MEAN_BLOCKS: f64 = 256.0;
pub const MAX_ARRIVAL_CV: f64 = 10.0;
pub const MAX_SIGMA_FRACTION: f64 = 4.0;
/// Redraws of a history age beyond the list before falling back to a uniform age.
const AGE_TRIES: u32 = 64;

/// Sustained bursts: during a burst every group's rate is multiplied by `factor`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Burst {
    pub factor: f64,
    /// The first burst begins here.
    pub start: Nanos,
    pub length: Span,
    /// Bursts repeat every `period` from `start`; `None`: one burst.
    pub period: Option<Span>,
}

impl Burst {
    /// Whether `t` lies inside a burst.
    pub fn covers(&self, t: Nanos) -> bool {
        if t < self.start {
            return false;
        }
        let since = t.since(self.start).0;
        match self.period {
            Some(p) => since % p.0 < self.length.0,
            None => since < self.length.0,
        }
    }
}

/// Everything the generator needs, already in blocks and nanoseconds; see
/// [`GroupsParams::check`] for the rules.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupsParams {
    pub groups: u32,
    /// The last `global_groups` groups address the whole data set, the others a subset.
    pub global_groups: u32,
    /// A subset group's share of the data set: one contiguous run at a random block.
    pub subset_fraction: f64,
    /// All groups together, requests per second outside bursts.
    pub rate_per_s: f64,
    pub read_fraction: f64,
    pub block_sectors: u32,
    pub data_set_blocks: u64,
    pub mean_blocks: f64,
    /// The history buffers' total, in blocks; each group holds an equal share.
    pub history_blocks: u64,
    pub read_history_fraction: f64,
    pub write_history_fraction: f64,
    pub write_from_writes_fraction: f64,
    pub history_sigma_fraction: f64,
    pub arrival_cv: f64,
    pub burst: Option<Burst>,
}

/// A parameter out of range: the key (as named in `[workload.groups]`) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub key: &'static str,
    pub msg: String,
}

fn fail<T>(key: &'static str, msg: String) -> Result<T, ParamError> {
    Err(ParamError { key, msg })
}

fn within(key: &'static str, v: f64, lo: f64, hi: f64, open_lo: bool) -> Result<(), ParamError> {
    let ok = v.is_finite() && v <= hi && if open_lo { v > lo } else { v >= lo };
    if ok {
        return Ok(());
    }
    let range = if open_lo {
        format!("({lo}, {hi}]")
    } else {
        format!("[{lo}, {hi}]")
    };
    fail(key, format!("must be in {range}, got {v}"))
}

impl GroupsParams {
    /// Checks every parameter; the first error names its key (`rate_iops` and
    /// `read_fraction` are `[workload]`'s, the rest `[workload.groups]`'s).
    pub fn check(&self) -> Result<(), ParamError> {
        if !(1..=MAX_GROUPS).contains(&self.groups) {
            return fail(
                "count",
                format!("must be within 1..={MAX_GROUPS}, got {}", self.groups),
            );
        }
        if self.global_groups > self.groups {
            return fail(
                "global_groups",
                format!(
                    "must be at most count ({}), got {}",
                    self.groups, self.global_groups
                ),
            );
        }
        within("subset_fraction", self.subset_fraction, 0.0, 1.0, true)?;
        let per_group = self.rate_per_s / f64::from(self.groups);
        if !(self.rate_per_s.is_finite() && (1e-3..=1e9).contains(&per_group)) {
            return fail(
                "rate_iops",
                format!(
                    "must give each of the {} groups 0.001..=1e9 requests per second, got {}",
                    self.groups, self.rate_per_s
                ),
            );
        }
        within("read_fraction", self.read_fraction, 0.0, 1.0, false)?;
        within("mean_blocks", self.mean_blocks, 1.0, MAX_MEAN_BLOCKS, false)?;
        within(
            "read_history_fraction",
            self.read_history_fraction,
            0.0,
            1.0,
            false,
        )?;
        within(
            "write_history_fraction",
            self.write_history_fraction,
            0.0,
            1.0,
            false,
        )?;
        within(
            "write_from_writes_fraction",
            self.write_from_writes_fraction,
            0.0,
            1.0,
            false,
        )?;
        within(
            "history_sigma_fraction",
            self.history_sigma_fraction,
            0.0,
            MAX_SIGMA_FRACTION,
            true,
        )?;
        within("arrival_cv", self.arrival_cv, 0.0, MAX_ARRIVAL_CV, false)?;
        if self.history_blocks < u64::from(self.groups) {
            return fail(
                "history_bytes",
                format!(
                    "{} blocks cannot give each of the {} groups one block",
                    self.history_blocks, self.groups
                ),
            );
        }
        let largest = SizeTable::new(self.mean_blocks).largest();
        if u64::from(largest) * u64::from(self.block_sectors) > u64::from(u32::MAX) {
            return fail(
                "mean_blocks",
                format!("requests of up to {largest} blocks do not fit 2^32 sectors"),
            );
        }
        let smallest = self.group_blocks(self.global_groups == self.groups);
        if smallest < u64::from(largest) {
            return fail(
                "subset_fraction",
                format!(
                    "a group's space of {smallest} blocks cannot hold requests of up to \
                     {largest} blocks (mean_blocks {})",
                    self.mean_blocks
                ),
            );
        }
        if let Some(b) = self.burst {
            within("burst_factor", b.factor, 0.0, 1e6, true)?;
            if b.length == Span::ZERO {
                return fail("burst_length_s", "must be > 0".into());
            }
            if let Some(p) = b.period {
                if p <= b.length {
                    return fail(
                        "burst_period_s",
                        format!(
                            "must be longer than burst_length_s ({}), got {}",
                            b.length, p
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    /// Blocks a group addresses: the data set, or a subset of it (at least one block).
    fn group_blocks(&self, global: bool) -> u64 {
        if global {
            return self.data_set_blocks;
        }
        let share = (self.subset_fraction * self.data_set_blocks as f64).round() as u64;
        share.clamp(1, self.data_set_blocks)
    }
}

/// The request sizes: a discretised half-normal on whole blocks with a given mean.
#[derive(Clone, Debug)]
pub struct SizeTable {
    /// Cumulative probability of sizes 1, 2, …; the last is 1.
    cumulative: Vec<f64>,
    sigma: f64,
}

impl SizeTable {
    /// P(k) ∝ exp(−(k−1)²/2σ²) for k = 1 ..= 1 + ⌈8σ⌉ (beyond it the weights are below
    /// e^-32 ≈ 1e-14), σ found by bisection so the mean is `mean_blocks`; mean 1 is always 1 block.
    pub fn new(mean_blocks: f64) -> SizeTable {
        assert!(
            (1.0..=MAX_MEAN_BLOCKS).contains(&mean_blocks),
            "mean_blocks {mean_blocks} out of range"
        );
        if mean_blocks == 1.0 {
            return SizeTable {
                cumulative: vec![1.0],
                sigma: 0.0,
            };
        }
        // mean(σ) rises from 1 (σ → 0) without bound; the continuous half-normal has
        // mean 1 + 0.8σ, so σ = 2·mean brackets the root.
        let (mut lo, mut hi) = (0.0f64, 2.0 * mean_blocks);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if Self::mean_of(mid) < mean_blocks {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let sigma = 0.5 * (lo + hi);
        let weights = Self::weights(sigma);
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let mut cumulative: Vec<f64> = weights
            .iter()
            .map(|w| {
                acc += w / total;
                acc
            })
            .collect();
        *cumulative.last_mut().expect("at least one size") = 1.0;
        assert!(sigma > 0.0, "sigma solved for a mean above one block");
        SizeTable { cumulative, sigma }
    }

    fn weights(sigma: f64) -> Vec<f64> {
        let last = 1 + (8.0 * sigma).ceil() as usize;
        (0..last)
            .map(|i| (-((i * i) as f64) / (2.0 * sigma * sigma)).exp())
            .collect()
    }

    fn mean_of(sigma: f64) -> f64 {
        let w = Self::weights(sigma);
        let total: f64 = w.iter().sum();
        w.iter()
            .enumerate()
            .map(|(i, w)| (i + 1) as f64 * w)
            .sum::<f64>()
            / total
    }

    /// The exact mean of the table, in blocks.
    pub fn mean(&self) -> f64 {
        let mut prev = 0.0;
        self.cumulative
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let p = c - prev;
                prev = *c;
                (i + 1) as f64 * p
            })
            .sum()
    }

    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// The largest size drawn, in blocks.
    pub fn largest(&self) -> u32 {
        u32::try_from(self.cumulative.len()).expect("table fits u32")
    }

    pub fn draw(&self, rng: &mut impl Rng) -> u32 {
        let u: f64 = rng.gen();
        let i = self
            .cumulative
            .partition_point(|&c| c <= u)
            .min(self.cumulative.len() - 1);
        u32::try_from(i + 1).expect("table fits u32")
    }
}

/// The complementary error function (Numerical Recipes' `erfcc`, fractional error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The standard normal's CDF Φ and density φ.
fn phi_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}
fn phi_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The location m for which max(0, N(m, cv)) has mean 1: E = m·Φ(m/cv) + cv·φ(m/cv) is
/// convex and increasing in m with derivative Φ(m/cv), so Newton's method from m = 1
/// (where E ≥ 1) descends monotonically to the root.
pub fn clamped_location(cv: f64) -> f64 {
    assert!(
        (0.0..=MAX_ARRIVAL_CV).contains(&cv),
        "arrival cv {cv} out of range"
    );
    if cv == 0.0 {
        return 1.0;
    }
    let mut m = 1.0f64;
    for _ in 0..200 {
        let e = m * phi_cdf(m / cv) + cv * phi_pdf(m / cv);
        let step = (e - 1.0) / phi_cdf(m / cv);
        m -= step;
        if step.abs() < 1e-13 {
            break;
        }
    }
    assert!(m.is_finite() && m <= 1.0, "clamped location {m} diverged");
    m
}

/// Where a request's address came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A fresh uniform block of the group's space.
    New,
    /// The history was to be used but the list it names was still empty: a fresh block.
    Fallback,
    /// A read: any earlier request of the group.
    AnyHistory,
    /// A write: an earlier write of the group.
    WriteHistory,
    /// A write: an earlier read of the group.
    ReadHistory,
}

/// One generated request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GroupRequest {
    pub arrival: Nanos,
    pub group: u32,
    pub op: Op,
    pub lba: u64,
    pub sectors: u32,
    pub source: Source,
}

#[derive(Copy, Clone, Debug)]
struct Entry {
    block: u64,
    blocks: u32,
}

/// A group's history buffer: its latest requests holding at most `capacity` blocks (the
/// latest one always kept), with per-kind lists of their sequence numbers.
#[derive(Debug)]
struct History {
    entries: VecDeque<Entry>,
    reads: VecDeque<u64>,
    writes: VecDeque<u64>,
    /// Sequence number of `entries[0]`.
    front_seq: u64,
    held_blocks: u64,
    capacity_blocks: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum List {
    All,
    Reads,
    Writes,
}

impl History {
    fn new(capacity_blocks: u64) -> History {
        assert!(capacity_blocks >= 1, "a history holds at least one block");
        History {
            entries: VecDeque::new(),
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            front_seq: 0,
            held_blocks: 0,
            capacity_blocks,
        }
    }

    fn len(&self, list: List) -> usize {
        match list {
            List::All => self.entries.len(),
            List::Reads => self.reads.len(),
            List::Writes => self.writes.len(),
        }
    }

    /// The entry `age` places back from the most recent in `list`.
    fn get(&self, list: List, age: usize) -> Entry {
        let n = self.len(list);
        assert!(age < n, "age {age} beyond a list of {n}");
        let index = match list {
            List::All => n - 1 - age,
            List::Reads => {
                usize::try_from(self.reads[n - 1 - age] - self.front_seq).expect("index fits usize")
            }
            List::Writes => usize::try_from(self.writes[n - 1 - age] - self.front_seq)
                .expect("index fits usize"),
        };
        self.entries[index]
    }

    fn push(&mut self, op: Op, e: Entry) {
        let seq = self.front_seq + self.entries.len() as u64;
        self.entries.push_back(e);
        match op {
            Op::Read => self.reads.push_back(seq),
            Op::Write => self.writes.push_back(seq),
        }
        self.held_blocks += u64::from(e.blocks);
        while self.held_blocks > self.capacity_blocks && self.entries.len() > 1 {
            let old = self.entries.pop_front().expect("more than one entry");
            self.held_blocks -= u64::from(old.blocks);
            if self.reads.front() == Some(&self.front_seq) {
                self.reads.pop_front();
            } else {
                assert_eq!(self.writes.pop_front(), Some(self.front_seq));
            }
            self.front_seq += 1;
        }
        assert_eq!(self.entries.len(), self.reads.len() + self.writes.len());
        assert!(self.held_blocks <= self.capacity_blocks || self.entries.len() == 1);
    }
}

#[derive(Debug)]
struct Group {
    rng: Pcg64Mcg,
    first_block: u64,
    blocks: u64,
    history: History,
    /// The group's next arrival (already in the merge heap).
    next: Nanos,
}

/// SplitMix64's finaliser: spreads (seed, group) into independent PCG seeds.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The merged request stream of all groups, in arrival order. It does not end, except that
/// a group stops once its next arrival would pass 2^64 ns (about 584 years).
#[derive(Debug)]
pub struct ProcessGroups {
    params: GroupsParams,
    sizes: SizeTable,
    /// Location of the clamped normal gap, in mean gaps ([`clamped_location`]).
    gap_location: f64,
    groups: Vec<Group>,
    /// (next arrival, group): ties go to the lower group.
    heap: BinaryHeap<Reverse<(Nanos, u32)>>,
    last: Nanos,
}

impl ProcessGroups {
    /// Panics if `params` fail [`GroupsParams::check`] (validate configuration first).
    pub fn new(params: GroupsParams, seed: u64) -> ProcessGroups {
        if let Err(e) = params.check() {
            panic!("process-group parameters: {}: {}", e.key, e.msg);
        }
        let sizes = SizeTable::new(params.mean_blocks);
        let gap_location = clamped_location(params.arrival_cv);
        let per_group_history = params.history_blocks / u64::from(params.groups);
        let base = mix64(seed ^ 0x7072_6f63_6772_7073); // "procgrps"
        let subset_groups = params.groups - params.global_groups;
        let mut groups = Vec::with_capacity(params.groups as usize);
        for g in 0..params.groups {
            let mut rng = Pcg64Mcg::seed_from_u64(mix64(base.wrapping_add(u64::from(g))));
            let global = g >= subset_groups;
            let blocks = params.group_blocks(global);
            let first_block = rng.gen_range(0..=params.data_set_blocks - blocks);
            groups.push(Group {
                rng,
                first_block,
                blocks,
                history: History::new(per_group_history),
                next: Nanos::ZERO,
            });
        }
        let mut pg = ProcessGroups {
            params,
            sizes,
            gap_location,
            groups,
            heap: BinaryHeap::new(),
            last: Nanos::ZERO,
        };
        for g in 0..pg.params.groups {
            if let Some(t) = pg.gap_after(g, Nanos::ZERO) {
                pg.groups[g as usize].next = t;
                pg.heap.push(Reverse((t, g)));
            }
        }
        pg
    }

    pub fn params(&self) -> &GroupsParams {
        &self.params
    }

    pub fn sizes(&self) -> &SizeTable {
        &self.sizes
    }

    /// Group `g`'s space: first block and length in blocks.
    pub fn group_space(&self, g: u32) -> (u64, u64) {
        let grp = &self.groups[g as usize];
        (grp.first_block, grp.blocks)
    }

    /// Group `g`'s arrival after one at `now`: a clamped normal gap at the rate in force at
    /// `now`. `None` if it would pass `Nanos::MAX`.
    fn gap_after(&mut self, g: u32, now: Nanos) -> Option<Nanos> {
        let p = &self.params;
        let mut rate = p.rate_per_s / f64::from(p.groups);
        if let Some(b) = p.burst.filter(|b| b.covers(now)) {
            rate *= b.factor;
        }
        let mean_ns = 1e9 / rate;
        let z: f64 = StandardNormal.sample(&mut self.groups[g as usize].rng);
        let gap = (mean_ns * (self.gap_location + p.arrival_cv * z)).max(0.0);
        assert!(gap.is_finite(), "gap of group {g} is {gap}");
        if gap >= u64::MAX as f64 {
            return None;
        }
        now.0.checked_add(gap.round() as u64).map(Nanos)
    }

    /// The half-normal age (0 = most recent) in a list of `n` entries.
    fn age(rng: &mut Pcg64Mcg, n: usize, sigma_fraction: f64) -> usize {
        assert!(n >= 1, "an age needs a non-empty list");
        let sigma = sigma_fraction * n as f64;
        for _ in 0..AGE_TRIES {
            let z: f64 = StandardNormal.sample(rng);
            let a = (z.abs() * sigma).floor();
            if a < n as f64 {
                return a as usize;
            }
        }
        rng.gen_range(0..n)
    }

    /// Group `g`'s request at `now`: operation, size and address, recorded in its history.
    fn request(&mut self, g: u32, now: Nanos) -> GroupRequest {
        let p = &self.params;
        let grp = &mut self.groups[g as usize];
        let rng = &mut grp.rng;
        let op = if rng.gen::<f64>() < p.read_fraction {
            Op::Read
        } else {
            Op::Write
        };
        let mut blocks = self.sizes.draw(rng);
        let history_fraction = match op {
            Op::Read => p.read_history_fraction,
            Op::Write => p.write_history_fraction,
        };
        let from_history = rng.gen::<f64>() < history_fraction;
        let mut source = Source::New;
        let mut block = None;
        if from_history {
            let list = match op {
                Op::Read => List::All,
                Op::Write if rng.gen::<f64>() < p.write_from_writes_fraction => List::Writes,
                Op::Write => List::Reads,
            };
            let n = grp.history.len(list);
            if n == 0 {
                source = Source::Fallback;
            } else {
                let age = Self::age(rng, n, p.history_sigma_fraction);
                block = Some(grp.history.get(list, age).block);
                source = match list {
                    List::All => Source::AnyHistory,
                    List::Writes => Source::WriteHistory,
                    List::Reads => Source::ReadHistory,
                };
            }
        }
        let end = grp.first_block + grp.blocks;
        let block = match block {
            Some(b) => {
                // An old address keeps its block; the size is cut at the group's end.
                blocks = blocks.min(u32::try_from(end - b).unwrap_or(u32::MAX));
                b
            }
            None => grp.first_block + rng.gen_range(0..=grp.blocks - u64::from(blocks)),
        };
        assert!(blocks >= 1, "a request has at least one block");
        assert!(block >= grp.first_block && block + u64::from(blocks) <= end);
        grp.history.push(op, Entry { block, blocks });
        let bs = p.block_sectors;
        GroupRequest {
            arrival: now,
            group: g,
            op,
            lba: block * u64::from(bs),
            sectors: blocks * bs,
            source,
        }
    }
}

impl Iterator for ProcessGroups {
    type Item = GroupRequest;

    fn next(&mut self) -> Option<GroupRequest> {
        let Reverse((now, g)) = self.heap.pop()?;
        assert!(now >= self.last, "arrivals go back: {now} < {}", self.last);
        assert_eq!(self.groups[g as usize].next, now);
        self.last = now;
        let r = self.request(g, now);
        if let Some(t) = self.gap_after(g, now) {
            self.groups[g as usize].next = t;
            self.heap.push(Reverse((t, g)));
        }
        // Otherwise the group's next arrival would pass 2^64 ns: the group stops.
        Some(r)
    }
}

#[cfg(test)]
mod tests;
