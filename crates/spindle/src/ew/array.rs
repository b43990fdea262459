//! The eager-writing array controller: EW-Array Dm × Ds × Dd and the Doubly Distorted
//! Mirror (EW-Array paper, sections 2.3, 3.4, 4.5, 5.2, 6.2). A sans-I/O state machine
//! with the call order of [`crate::array::Array`]: [`Engine::handle`], then drain
//! [`Engine::poll_action`].
//!
//! **Shape.** D = Dm·Ds·Dd disks in Dm groups (replicas) of N = Ds·Dd disks; Ds and Dd may
//! be fractional as long as N is whole. Each replica stripes the data set (stripe unit,
//! default 64 KiB) over its group's N disks: logical block b lives on column c of every
//! group. On each disk the column's blocks occupy a band of the outer tracks Dd times
//! their size (1/Ds of the disk for a data set of one disk), so utilisation is 1/Dd.
//! Blocks are 4 KiB; initially each stripe unit's blocks lie together (a multi-block read
//! is one command) and the free blocks are spread evenly between the stripe units, or
//! ([`FreeLayout::Random`]) lie at random slots of the band, the state long random
//! single-block overwriting leaves (the steady state of the paper's fig. 1(a)).
//!
//! **Writes** (4.5) are eager: a write goes to the idle candidate disk (one per group)
//! whose head is closest to a free extent, else to the shortest queue, and its disk's
//! scheduler places it in the free extent it chooses. One or two copies are written
//! before the host is answered (`sync_copies`); the other groups' copies become delayed
//! writes, also eager, in per-disk queues served when the foreground queue is empty. At
//! most `nvram_entries` blocks wait for propagation (the paper's 10,000-block buffer),
//! counting those forced to the foreground and those admitted writes will queue: a write
//! that would overfill the buffer waits, unacknowledged, while the oldest propagations
//! move to the foreground, so deferred work never outgrows the buffer. A newer write of a
//! block makes its older pending propagation obsolete: cancelled if nothing else rides on
//! it, its stale block released otherwise. A block's previous locations are freed once the
//! map points elsewhere (a location a queued read still needs is freed after the read).
//!
//! **Reads** go to the idle disk whose head is closest to a copy holding the last
//! acknowledged data, else duplicates enter every such disk's queue and the others are
//! withdrawn when one starts.
//!
//! **Map** (5.2): every location change is recorded by [`MapLog`] (NVRAM, then appends to
//! a map log region after disk 0's band, with incremental checkpoints; with
//! `map_log_replicas` > 1 the region is replicated after the band of column 0's disk of the
//! next replicas too). The appends are disk writes in those disks' foreground queues; their
//! busy time is reported as map logging.
//! When NVRAM is full the write whose update cannot be recorded waits for an append.
//!
//! **Doubly Distorted Mirror** (6.2, 6.5): Dm = 2, both copies eager-written
//! synchronously; each block has a fixed home on one of the two disks (alternating by
//! stripe unit), and its copy there is moved home in the background (a delayed write to
//! the home location; the eager copy is freed after). Reads use either copy.

use super::free_space::{BlockId, FreeSpace, Sweep};
use super::map_log::{Append, L2pMap, MapLog, MapLogConfig, Placement};
use super::sched::{EwPick, EwPolicy, EwQueue, EwRequest, Work};
use super::small::{InlineVec, IntMap, IntSet};
use crate::drive::{Access, Drive, HeadState, Transfer};
use crate::engine::{
    Action, Backlog, Breakdown, Busy, Cause, DataMove, DiskClock, DiskCounters, DiskReader, Engine,
    Event, FailureConfig, HostRequest, HostSlot, HostTable, LatentCounters, NvramWrite, Outbox,
    RebuildStatus, RecoverError, Slab,
};
use crate::{Nanos, Op, Span};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;

/// The EW-Array paper's block (5.2.1).
pub const BLOCK_BYTES: u64 = 4096;
/// The longest eager write one command moves (longer writes are cut).
const MAX_EXTENT_BLOCKS: u32 = 16;

/// Dm × Ds × Dd, or the Doubly Distorted Mirror.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct EwShape {
    pub dm: u32,
    pub ds: f64,
    pub dd: f64,
    pub ddm: bool,
}

impl EwShape {
    /// N = Ds·Dd, the disks each replica stripes over, if whole.
    pub fn per_replica(&self) -> Option<u32> {
        let n = self.ds * self.dd;
        let r = n.round();
        ((n - r).abs() < 1e-6 && r >= 1.0 && r <= f64::from(u32::MAX)).then_some(r as u32)
    }

    pub fn disks(&self) -> Option<u32> {
        self.per_replica()?.checked_mul(self.dm)
    }

    /// `ew-array 2x9x2` (Dm x Ds x Dd, the paper's order), `ddm 2x9x2`.
    pub fn describe(&self) -> String {
        let kind = if self.ddm { "ddm" } else { "ew-array" };
        format!("{kind} {}x{}x{}", self.dm, self.ds, self.dd)
    }
}

/// Where a disk's free blocks lie when the array starts.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FreeLayout {
    /// Spread evenly between the stripe units (a freshly built array).
    #[default]
    Even,
    /// At random slots of the band (seeded): the data blocks keep their order and fill
    /// the other slots, as after many random single-block overwrites.
    Random,
}

#[derive(Clone, Debug)]
pub struct EwConfig {
    pub shape: EwShape,
    pub stripe_unit_bytes: u64,
    /// Absent: one disk's capacity.
    pub data_set_bytes: Option<u64>,
    /// Copies written before the host is answered: 1 or 2.
    pub sync_copies: u32,
    pub policy: EwPolicy,
    pub age_bound: Option<Span>,
    pub random_phase: bool,
    pub noise: bool,
    pub seed: u64,
    /// Blocks that may wait for background propagation.
    pub nvram_entries: usize,
    pub map: MapLogConfig,
    pub free_layout: FreeLayout,
    /// Copies of the map log region (1..=Dm): on the first disk (column 0) of each of the
    /// first replicas, every append written to each (EW-Array paper, 5.2.2).
    pub map_log_replicas: u32,
    /// A disk that fails, and its rebuild ([`failure`]).
    pub failure: Option<FailureConfig>,
    /// The fraction of sectors unreadable from the start ([`latent`]).
    pub latent_error_rate: Option<f64>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Read,
    /// A synchronous eager copy.
    Write,
    /// A delayed eager copy.
    Propagate,
    /// DDM: a copy moved to its home location.
    Home,
    /// A map log append (its id in [`MapLog`]), one operation per copy of the region.
    MapAppend(u64),
    /// A rebuild step's read from a surviving replica ([`failure`]).
    RebuildRead,
    /// Its copy written to the spare, in place.
    RebuildWrite,
    /// A chunk of the map log region read from a surviving copy ([`failure`]).
    LogCopyRead,
    /// Its bytes written to the spare's region, at the same sectors.
    LogCopyWrite,
}

struct DiskOp {
    kind: Kind,
    slot: Option<usize>,
    group: Option<usize>,
    /// Logical blocks `block .. block + blocks`.
    block: u32,
    blocks: u32,
    version: u64,
    /// Reads: (group, first physical block) of each copy it may be served from; Home: the
    /// home location; MapAppend: none.
    locs: InlineVec<(u32, BlockId), 2>,
    /// Disks whose queues hold the operation.
    holders: InlineVec<usize, 2>,
    /// MapAppend, LogCopyRead/Write: the LBA range.
    lba: u64,
    sectors: u32,
    seq: u64,
    queued_at: Nanos,
    in_delayed: bool,
    promoted: bool,
    started: bool,
    /// Propagate/Home: blocks whose version is still the newest acknowledged.
    live: u32,
    /// A read that meets a latent sector error ([`latent`]).
    unreadable: bool,
    /// A propagation repairing a replica a latent error made unreadable.
    repair: bool,
}

struct InFlight {
    op: usize,
    access: Access,
    extent: Option<(BlockId, u32)>,
}

struct Disk {
    head: HeadState,
    free: FreeSpace,
    fg: EwQueue,
    delayed: EwQueue,
    busy: Option<InFlight>,
    rng: Pcg64Mcg,
    clock: DiskClock,
    propagations: u64,
    /// DDM: the home locations on this disk (never free).
    home: Vec<u64>,
}

/// The synchronous copies of one chunk of a host write.
struct Group {
    block: u32,
    blocks: u32,
    version: u64,
    left: u32,
    /// Groups (replicas) written.
    written: u64,
    /// Buffer blocks reserved for its propagations until it is acknowledged.
    reserved: usize,
}

/// A block with writes in flight or copies to propagate.
struct BlockState {
    /// The newest write accepted.
    newest: u64,
    /// The newest write acknowledged.
    acked: u64,
    /// The version each replica's mapped location holds.
    ver: InlineVec<u64, 2>,
    /// Operations writing this block not yet finished.
    inflight: u32,
    /// Pending propagations and home moves.
    props: InlineVec<usize, 2>,
    /// Host write chunks covering this block not yet acknowledged. The state stays while
    /// one is pending: a chunk acknowledged after its block settled on a newer write (its
    /// other blocks' copies still in flight) must not see a state created afresh by a
    /// still newer write, or it would record itself as the newest acknowledged write with
    /// no replica holding it.
    chunks: u32,
    /// Replicas whose mapped location a read found unreadable ([`latent`]): stale until the
    /// map moves them.
    bad: u64,
}

/// A chunk of a host write waiting for room in the delayed-write buffer: it starts when
/// its propagations will fit (`need` blocks).
struct Held {
    slot: usize,
    block: u32,
    blocks: u32,
    version: u64,
    /// Synchronous copies: `sync_copies`, or every replica when written through.
    sync: u32,
    need: usize,
}

/// A write whose map update waits for NVRAM room: (op, disk, extent, blocks applied).
struct Stalled {
    op: usize,
    disk: usize,
    extent: (BlockId, u32),
    done: u32,
    access: Access,
}

pub struct EwArray {
    drive: Arc<Drive>,
    shape: EwShape,
    n: u32,
    dm: u32,
    unit_blocks: u32,
    block_sectors: u32,
    logical_blocks: u32,
    sync_copies: u32,
    disks: Vec<Disk>,
    map: MapLog,
    log_lba: u64,
    /// The disks holding a copy of the map log region (column 0 of the first replicas).
    log_disks: Vec<usize>,
    /// Map log appends whose copies are not all written: copies left.
    append_left: IntMap<u64, u32>,
    host: HostTable<()>,
    ops: Slab<DiskOp>,
    groups: Vec<Option<Group>>,
    free_groups: Vec<usize>,
    /// Blocks with writes in flight or copies to propagate (looked up, never iterated).
    table: IntMap<u32, BlockState>,
    /// Locations queued reads still need, with their count of readers.
    pins: IntMap<(usize, BlockId), u32>,
    /// Pinned locations the map no longer points to: freed with their last pin.
    zombies: IntSet<(usize, BlockId)>,
    pending_blocks: usize,
    /// Pending blocks whose propagation was moved to the foreground.
    promoted_blocks: usize,
    /// Propagation blocks the admitted, not yet acknowledged writes will queue.
    reserved_blocks: usize,
    /// Host write chunks waiting for room in the buffer, in arrival order.
    held: VecDeque<Held>,
    /// The propagation blocks the held chunks need.
    held_blocks: usize,
    nvram_entries: usize,
    map_cfg: MapLogConfig,
    /// Delayed propagations in the order they entered the NVRAM table, oldest first: (op id,
    /// op seq). Ids are reused once an operation ends; the seq tells a stale entry.
    prop_order: VecDeque<(usize, u64)>,
    stalled: VecDeque<Stalled>,
    out: Outbox,
    version: u64,
    seq: u64,
    noise: bool,
    /// The bytes (data moves, NVRAM image); `None` while no driver wants them.
    data: Option<data::DataState>,
    failure: Option<failure::EwFailure>,
    latent: Option<latent::EwLatent>,
    #[cfg(test)]
    pub(crate) audit: audit::Audit,
}

/// Where a column's `i`-th block is placed at the start (and a DDM home): the column's
/// stripe units of `unit` blocks in order, each kept together, with the `slots − blocks`
/// free blocks spread evenly between them.
fn initial_slot(i: u32, blocks: u32, slots: u32, unit: u32) -> BlockId {
    let units = u64::from(blocks.div_ceil(unit).max(1));
    let gap = u64::from(slots - blocks) * u64::from(i / unit) / units;
    i + gap as BlockId
}

/// `blocks` of `slots` chosen uniformly at random, in increasing order (selection
/// sampling, Knuth's Algorithm S: exactly `blocks`, one pass).
fn random_slots(blocks: u32, slots: u32, rng: &mut Pcg64Mcg) -> Vec<BlockId> {
    let mut chosen = Vec::with_capacity(blocks as usize);
    for slot in 0..slots {
        let (need, left) = (blocks as usize - chosen.len(), slots - slot);
        if need == 0 {
            break;
        }
        if rng.gen_range(0..left) < need as u32 {
            chosen.push(slot as BlockId);
        }
    }
    chosen
}

/// Where each logical block lives by column: `(column, index within the column)`.
fn column_of(b: u32, unit: u32, n: u32) -> (u32, u32) {
    let stripe = b / unit;
    (stripe % n, (stripe / n) * unit + b % unit)
}

/// The initial placement as a formula (the map's [`Placement`]): every replica of logical
/// block b at its column's slot — [`initial_slot`] for an even layout, the drawn slots for
/// a random one. The map stores an entry only once it changes.
struct InitialPlacement {
    unit: u32,
    n: u32,
    /// Blocks per column.
    per_column: Vec<u32>,
    /// Blocks of each column's band.
    band_blocks: Vec<u32>,
    /// Random layout: each column's slots, in column order; even layout: empty.
    random: Vec<Vec<BlockId>>,
}

impl InitialPlacement {
    /// Column `c`'s `i`-th block's slot.
    fn slot(&self, c: usize, i: u32) -> BlockId {
        if self.random.is_empty() {
            initial_slot(i, self.per_column[c], self.band_blocks[c], self.unit)
        } else {
            self.random[c][i as usize]
        }
    }
}

impl InitialPlacement {
    /// Column `c`'s slots in column order ([`InitialPlacement::slot`] of 0, 1, …) as runs
    /// `(first, blocks)`: a stripe unit each in an even layout, one block each at random.
    fn column_runs(&self, c: usize) -> Box<dyn Iterator<Item = (BlockId, u32)> + '_> {
        if !self.random.is_empty() {
            return Box::new(self.random[c].iter().map(|&b| (b, 1)));
        }
        let (blocks, unit) = (self.per_column[c], self.unit);
        Box::new((0..blocks.div_ceil(unit)).map(move |u| {
            let i = u * unit;
            (self.slot(c, i), unit.min(blocks - i))
        }))
    }
}

impl Placement for InitialPlacement {
    fn initial(&self, block: u32, _replica: u32) -> u32 {
        let (c, i) = column_of(block, self.unit, self.n);
        self.slot(c as usize, i)
    }

    /// A stripe unit's blocks lie together in an even layout: one formula per unit, and
    /// each block's `replicas` entries filled at once.
    fn fill(&self, first: u64, replicas: u32, out: &mut [u32]) {
        let r = replicas as usize;
        let mut k = 0usize;
        while k < out.len() {
            let e = first + k as u64;
            let block = u32::try_from(e / u64::from(replicas)).expect("block fits u32");
            let replica = (e % u64::from(replicas)) as usize;
            let (c, i) = column_of(block, self.unit, self.n);
            // Blocks left in this stripe unit from `block` on: the same column, next
            // indices (the map's last block may end one early).
            let run = (self.unit - block % self.unit) as usize;
            let n = (run * r - replica).min(out.len() - k);
            let (now, rest) = out[k..k + n].split_at_mut((r - replica).min(n));
            let slot = self.slot(c as usize, i);
            now.fill(slot);
            for (j, entries) in (1..).zip(rest.chunks_mut(r)) {
                entries.fill(if self.random.is_empty() {
                    // Within a stripe unit the even layout's slots are consecutive.
                    slot + j
                } else {
                    self.slot(c as usize, i + j)
                });
            }
            k += n;
        }
    }
}

impl EwArray {
    pub fn new(drive: Arc<Drive>, cfg: &EwConfig) -> Result<EwArray, String> {
        let s = cfg.shape;
        if s.dm == 0 {
            return Err("Dm must be >= 1".into());
        }
        if cfg.map_log_replicas == 0 || cfg.map_log_replicas > s.dm {
            return Err(format!(
                "{} copies of the map log region: 1 to Dm = {}",
                cfg.map_log_replicas, s.dm
            ));
        }
        if !(s.dd.is_finite() && s.dd > 1.0) {
            return Err(format!(
                "Dd = {} leaves no free blocks for eager writing: it must be > 1",
                s.dd
            ));
        }
        if !(s.ds.is_finite() && s.ds > 0.0) {
            return Err(format!("Ds must be > 0, got {}", s.ds));
        }
        let n = s.per_replica().ok_or_else(|| {
            format!(
                "Ds x Dd = {} x {} = {} must be a whole number of disks",
                s.ds,
                s.dd,
                s.ds * s.dd
            )
        })?;
        if s.ddm && s.dm != 2 {
            return Err(format!(
                "a Doubly Distorted Mirror has Dm = 2, got {}",
                s.dm
            ));
        }
        let sync_max = if s.ddm { 2 } else { s.dm.min(2) };
        if cfg.sync_copies == 0 || cfg.sync_copies > sync_max {
            return Err(format!(
                "sync_copies must be within 1..={sync_max} for {}, got {}",
                s.describe(),
                cfg.sync_copies
            ));
        }
        if s.ddm && cfg.sync_copies != 2 {
            return Err(
                "a Doubly Distorted Mirror writes both copies synchronously: sync_copies = 2"
                    .into(),
            );
        }
        let disks_total = s.dm as usize * n as usize;
        let drive = if drive.cache().is_some() {
            // Eager writing steers the head to a chosen free block: the drive's own
            // buffer would defeat it (as for the SR family, dissertation 3.4.3).
            Arc::new(drive.without_cache())
        } else {
            drive
        };
        let sector_bytes = u64::from(drive.geometry().sector_bytes());
        if !BLOCK_BYTES.is_multiple_of(sector_bytes) {
            return Err(format!(
                "the {BLOCK_BYTES}-byte block is not a whole number of {sector_bytes}-byte sectors"
            ));
        }
        let block_sectors = (BLOCK_BYTES / sector_bytes) as u32;
        if cfg.stripe_unit_bytes == 0 || !cfg.stripe_unit_bytes.is_multiple_of(BLOCK_BYTES) {
            return Err(format!(
                "the stripe unit must be a positive multiple of the {BLOCK_BYTES}-byte block, got {}",
                cfg.stripe_unit_bytes
            ));
        }
        let unit_blocks = u32::try_from(cfg.stripe_unit_bytes / BLOCK_BYTES)
            .map_err(|_| "stripe unit too large".to_string())?;
        let disk_bytes = drive.capacity_sectors() * sector_bytes;
        let data_set = cfg.data_set_bytes.unwrap_or(disk_bytes);
        let logical = data_set / BLOCK_BYTES;
        if logical == 0 {
            return Err(format!(
                "the data set of {data_set} bytes holds no 4 KiB block"
            ));
        }
        let logical_blocks = u32::try_from(logical)
            .map_err(|_| format!("the data set of {data_set} bytes has more than 2^32 blocks"))?;
        // Blocks per column.
        let mut per_column = vec![0u32; n as usize];
        {
            let full_rows = logical_blocks / (unit_blocks * n);
            for c in per_column.iter_mut() {
                *c = full_rows * unit_blocks;
            }
            let rest = logical_blocks - full_rows * unit_blocks * n;
            for (c, v) in per_column.iter_mut().enumerate() {
                let before = c as u32 * unit_blocks;
                *v += rest.saturating_sub(before).min(unit_blocks);
            }
        }
        let mut seeder = Pcg64Mcg::seed_from_u64(cfg.seed);
        let period = drive.period().0;
        // Each column's band: Dd times its blocks, grown until the tracks hold that many.
        let mut bands: Vec<FreeSpace> = Vec::with_capacity(n as usize);
        for (c, &blocks) in per_column.iter().enumerate() {
            // Columns of equal size have equal bands: cut once, share the cut.
            if let Some(same) = per_column[..c].iter().position(|&b| b == blocks) {
                let band = bands[same].clone();
                bands.push(band);
                continue;
            }
            let want = ((f64::from(blocks) * s.dd).ceil() as u64).max(u64::from(blocks) + 1);
            let mut sectors = want * u64::from(block_sectors);
            let cap = drive.capacity_sectors();
            let free = loop {
                let fs = FreeSpace::new(&drive, 0, sectors.min(cap), block_sectors)?;
                if u64::from(fs.blocks()) >= want {
                    break fs;
                }
                if sectors >= cap {
                    return Err(format!(
                        "{} x Dd {} = {want} blocks per disk do not fit the {} ({} usable blocks): lower Dd or the data set, or raise Ds",
                        blocks, s.dd, drive.id, fs.blocks()
                    ));
                }
                let missing = want - u64::from(fs.blocks());
                sectors += missing * u64::from(block_sectors) + u64::from(block_sectors);
            };
            bands.push(free);
        }
        if s.ddm && cfg.free_layout == FreeLayout::Random {
            return Err(
                "a Doubly Distorted Mirror starts with every block at its fixed home: free_layout = \"even\""
                    .into(),
            );
        }
        // Each column's blocks' slots, in column order (the same in every group).
        // Even: a formula, not stored (millions of blocks); random: drawn and kept.
        let random: Vec<Vec<BlockId>> = match cfg.free_layout {
            FreeLayout::Even => Vec::new(),
            FreeLayout::Random => per_column
                .iter()
                .zip(&bands)
                .map(|(&blocks, band)| random_slots(blocks, band.blocks(), &mut seeder))
                .collect(),
        };
        let placement = Arc::new(InitialPlacement {
            unit: unit_blocks,
            n,
            band_blocks: bands.iter().map(|b| b.blocks()).collect(),
            per_column: per_column.clone(),
            random,
        });
        let slot_of = |c: usize, i: u32| -> BlockId { placement.slot(c, i) };
        // Column c's i-th block is logical block `column_of`⁻¹(c, i).
        debug_assert!(per_column.iter().enumerate().all(|(c, &blocks)| {
            (0..blocks).all(|i| {
                let b = ((i / unit_blocks) * n + c as u32) * unit_blocks + i % unit_blocks;
                column_of(b, unit_blocks, n) == (c as u32, i)
            })
        }));
        let initial = L2pMap::with_placement(logical_blocks, s.dm, placement.clone());
        let map = MapLog::new(cfg.map, initial)?;
        let log_lba = bands[0].lba(bands[0].blocks() - 1) + u64::from(block_sectors);
        if log_lba + map.region_sectors() > drive.capacity_sectors() {
            return Err(format!(
                "the map log region ({} sectors) does not fit after disk 0's band",
                map.region_sectors()
            ));
        }
        // Every disk of a column starts with the same blocks in use: its column's slots.
        let used: Vec<FreeSpace> = (0..n as usize)
            .map(|c| {
                let mut band = bands[c].clone();
                debug_assert!(placement
                    .column_runs(c)
                    .flat_map(|(b, n)| b..b + n)
                    .eq((0..per_column[c]).map(|i| slot_of(c, i))));
                band.allocate_sorted(placement.column_runs(c));
                band
            })
            .collect();
        let mut disks = Vec::with_capacity(disks_total);
        for d in 0..disks_total {
            let c = d % n as usize;
            let free = used[c].clone();
            let blocks = per_column[c];
            let mut home = Vec::new();
            if s.ddm {
                home = vec![0u64; (free.blocks() as usize).div_ceil(64)];
                let replica = (d / n as usize) as u32;
                for i in 0..blocks {
                    let slot = slot_of(c, i);
                    // Column index i is in stripe row i / unit, whose home alternates.
                    if (i / unit_blocks) % 2 == replica {
                        home[slot as usize / 64] |= 1 << (slot % 64);
                    }
                }
            }
            let phase_ns = if cfg.random_phase {
                seeder.gen_range(0..period)
            } else {
                0
            };
            disks.push(Disk {
                head: HeadState {
                    cylinder: 0,
                    head: 0,
                    phase_ns,
                },
                free,
                fg: EwQueue::new(cfg.policy, cfg.age_bound),
                delayed: EwQueue::new(cfg.policy, None),
                busy: None,
                rng: Pcg64Mcg::seed_from_u64(seeder.gen()),
                clock: DiskClock::new(drive.power_clock()),
                propagations: 0,
                home,
            });
        }
        let n_disks = disks.len();
        let mut a = EwArray {
            drive,
            shape: s,
            n,
            dm: s.dm,
            unit_blocks,
            block_sectors,
            logical_blocks,
            sync_copies: cfg.sync_copies,
            disks,
            map,
            log_lba,
            log_disks: (0..cfg.map_log_replicas)
                .map(|r| (r * n) as usize)
                .collect(),
            append_left: IntMap::default(),
            host: HostTable::default(),
            ops: Slab::with_capacity(1024),
            groups: Vec::new(),
            free_groups: Vec::new(),
            table: IntMap::default(),
            pins: IntMap::default(),
            zombies: IntSet::default(),
            pending_blocks: 0,
            reserved_blocks: 0,
            held: VecDeque::new(),
            held_blocks: 0,
            promoted_blocks: 0,
            map_cfg: cfg.map,
            nvram_entries: cfg.nvram_entries,
            prop_order: VecDeque::new(),
            stalled: VecDeque::new(),
            out: Outbox::new(n_disks),
            version: 0,
            seq: 0,
            noise: cfg.noise,
            data: None,
            failure: None,
            latent: cfg
                .latent_error_rate
                .map(|r| latent::EwLatent::new(r, block_sectors, cfg.seed, n_disks))
                .transpose()?,
            #[cfg(test)]
            audit: audit::Audit::default(),
        };
        a.retire_bad_free(true)?;
        if let Some(f) = &cfg.failure {
            a.failure = Some(a.new_failure(f)?);
        }
        Ok(a)
    }

    pub fn shape(&self) -> EwShape {
        self.shape
    }

    pub fn drive(&self) -> &Drive {
        &self.drive
    }

    /// Blocks waiting for background propagation.
    pub fn pending_blocks(&self) -> usize {
        self.pending_blocks
    }

    pub fn map_log(&self) -> &MapLog {
        &self.map
    }

    /// The disk holding replica `m` of logical block `b`.
    fn disk_of(&self, b: u32, m: u32) -> usize {
        let (c, _) = column_of(b, self.unit_blocks, self.n);
        (m * self.n + c) as usize
    }

    /// DDM: the replica whose disk holds block `b`'s home (alternating by stripe row).
    fn home_replica(&self, b: u32) -> u32 {
        (b / self.unit_blocks / self.n) % 2
    }

    /// DDM: block `b`'s home location on its home disk.
    fn home_slot(&self, b: u32) -> BlockId {
        let (c, i) = column_of(b, self.unit_blocks, self.n);
        let d = &self.disks[c as usize];
        initial_slot(i, self.column_blocks(c), d.free.blocks(), self.unit_blocks)
    }

    fn column_blocks(&self, c: u32) -> u32 {
        let (unit, n) = (self.unit_blocks, self.n);
        let full_rows = self.logical_blocks / (unit * n);
        let rest = self.logical_blocks - full_rows * unit * n;
        full_rows * unit + rest.saturating_sub(c * unit).min(unit)
    }

    fn is_home(&self, disk: usize, slot: BlockId) -> bool {
        let h = &self.disks[disk].home;
        !h.is_empty() && h[slot as usize / 64] & (1 << (slot % 64)) != 0
    }

    fn new_op(&mut self, op: DiskOp) -> usize {
        if let Some(s) = op.slot {
            self.host.add_part(s);
        }
        self.ops.insert(op)
    }

    fn op(&self, id: usize) -> &DiskOp {
        &self.ops[id]
    }

    fn op_mut(&mut self, id: usize) -> &mut DiskOp {
        &mut self.ops[id]
    }

    fn blank_op(&mut self, kind: Kind, now: Nanos) -> DiskOp {
        self.seq += 1;
        DiskOp {
            kind,
            slot: None,
            group: None,
            block: 0,
            blocks: 0,
            version: 0,
            locs: InlineVec::new(),
            holders: InlineVec::new(),
            lba: 0,
            sectors: 0,
            seq: self.seq,
            queued_at: now,
            in_delayed: false,
            promoted: false,
            started: false,
            live: 0,
            unreadable: false,
            repair: false,
        }
    }

    fn state(&mut self, b: u32) -> &mut BlockState {
        let dm = self.dm as usize;
        self.table.entry(b).or_insert_with(|| BlockState {
            newest: 0,
            acked: 0,
            ver: InlineVec::filled(0, dm),
            inflight: 0,
            props: InlineVec::new(),
            chunks: 0,
            bad: 0,
        })
    }

    /// Forgets a block's state once every copy holds its newest write.
    /// A replica lost with a failed disk is not waited for: the rebuild copies the newest.
    fn settle(&mut self, b: u32) {
        let lost = self.lost(b);
        if let Some(st) = self.table.get(&b) {
            if st.inflight == 0
                && st.chunks == 0
                && st.props.is_empty()
                && st.acked == st.newest
                && st.bad & !lost == 0
                && st
                    .ver
                    .iter()
                    .enumerate()
                    .all(|(m, &v)| v == st.newest || lost & (1 << m) != 0)
            {
                self.table.remove(&b);
                if self.data.is_some() {
                    self.settled(b);
                }
            }
        }
    }

    /// Replicas of block `b` holding its last acknowledged data (bit m).
    fn fresh(&self, b: u32) -> u64 {
        match self.table.get(&b) {
            None => (1u64 << self.dm) - 1,
            Some(st) => st
                .ver
                .iter()
                .enumerate()
                .filter(|&(i, &v)| v >= st.acked && st.bad & (1 << i) == 0)
                .fold(0, |m, (i, _)| m | 1 << i),
        }
    }

    fn pin(&mut self, disk: usize, slot: BlockId, blocks: u32) {
        for s in slot..slot + blocks {
            *self.pins.entry((disk, s)).or_insert(0) += 1;
        }
    }

    fn unpin(&mut self, disk: usize, slot: BlockId, blocks: u32) {
        for s in slot..slot + blocks {
            let k = (disk, s);
            let c = self.pins.get_mut(&k).expect("pinned location");
            *c -= 1;
            if *c == 0 {
                self.pins.remove(&k);
                if self.zombies.remove(&k) {
                    self.disks[disk].free.release(s, 1);
                }
            }
        }
    }

    /// A location the map no longer points to: free (after the reads that still need it).
    fn release(&mut self, disk: usize, slot: BlockId) {
        if self.is_home(disk, slot) || self.retire_if_bad(disk, slot) {
            return;
        }
        if self.pins.contains_key(&(disk, slot)) {
            self.zombies.insert((disk, slot));
        } else {
            self.disks[disk].free.release(slot, 1);
        }
    }

    fn accept(&mut self, now: Nanos, req: HostRequest) {
        assert!(req.sectors > 0, "host request {} moves no data", req.id);
        let end = req.lba + u64::from(req.sectors);
        assert!(
            end <= self.capacity(),
            "host request {} ends at {end}, beyond the array",
            req.id
        );
        if self.data.is_some() {
            let bs = u64::from(self.block_sectors);
            assert!(
                req.lba.is_multiple_of(bs) && u64::from(req.sectors).is_multiple_of(bs),
                "host request {}: with data moves on, requests are whole {BLOCK_BYTES}-byte blocks",
                req.id
            );
        }
        let slot = self.host.admit(req, now, ());
        // The block is the unit of placement: a request touching part of a block moves
        // the whole block.
        let bs = u64::from(self.block_sectors);
        let first = (req.lba / bs) as u32;
        let last = end.div_ceil(bs) as u32;
        self.version += 1;
        let version = self.version;
        let mut b = first;
        while b < last {
            // Chunks stay inside one stripe unit (one column) and one extent.
            let unit_end = (b / self.unit_blocks + 1) * self.unit_blocks;
            let chunk_end = last.min(unit_end).min(b + MAX_EXTENT_BLOCKS);
            match req.op {
                Op::Read => self.accept_read(now, slot, b, chunk_end - b),
                Op::Write => self.admit_write(now, slot, b, chunk_end - b, version),
            }
            b = chunk_end;
        }
        // A read whose every block is lost (latent errors on every replica) is answered now.
        if self.host.get(slot).parts_left == 0 {
            self.host.add_part(slot);
            if let Some((c, _)) = self.host.part_done(slot, now, |_| Breakdown::default()) {
                self.out.push(Action::Complete(c));
            }
        }
    }

    fn capacity(&self) -> u64 {
        u64::from(self.logical_blocks) * u64::from(self.block_sectors)
    }

    fn accept_read(&mut self, now: Nanos, slot: usize, block: u32, blocks: u32) {
        // Cut where the fresh copies change or a copy stops being one physical run.
        let mut start = block;
        while start < block + blocks {
            let mask = self.readable(start);
            if mask == 0 {
                // Every replica unreadable (latent errors): the block's data is lost.
                self.block_lost();
                start += 1;
                continue;
            }
            let mut end = start + 1;
            while end < block + blocks && self.readable(end) == mask {
                let contiguous = (0..self.dm).filter(|m| mask & (1 << m) != 0).all(|m| {
                    let d = self.disk_of(start, m);
                    let a = self.map.map().get(start, m);
                    let len = end + 1 - start;
                    self.map.map().get(end, m) == a + (end - start)
                        && self.disks[d].free.contiguous(a, len)
                });
                if !contiguous {
                    break;
                }
                end += 1;
            }
            self.read_part(now, slot, start, end - start, mask);
            start = end;
        }
    }

    fn read_part(&mut self, now: Nanos, slot: usize, block: u32, blocks: u32, mask: u64) {
        let mut op = self.blank_op(Kind::Read, now);
        op.slot = Some(slot);
        op.block = block;
        op.blocks = blocks;
        for m in 0..self.dm {
            if mask & (1 << m) != 0 {
                op.locs.push((m, self.map.map().get(block, m)));
            }
        }
        #[cfg(test)]
        self.audit.read_issued(
            op.seq,
            (block..block + blocks)
                .map(|b| self.table.get(&b).map_or(0, |st| st.acked))
                .collect(),
        );
        let locs = op.locs.clone();
        let id = self.new_op(op);
        for &(m, a) in locs.iter() {
            let d = self.disk_of(block, m);
            self.pin(d, a, blocks);
        }
        // The idle holder closest to its copy, else a duplicate at every holder.
        let mut best: Option<(Span, usize)> = None;
        if locs.len() > 1 {
            for &(m, a) in locs.iter() {
                let d = self.disk_of(block, m);
                let disk = &self.disks[d];
                if disk.busy.is_none() && disk.fg.is_empty() {
                    let target = self.drive.locate(disk.free.lba(a));
                    let t = self.drive.position_time(now, &disk.head, Op::Read, &target);
                    if best.is_none_or(|(bt, _)| t < bt) {
                        best = Some((t, d));
                    }
                }
            }
        }
        let mut holders: InlineVec<(usize, BlockId, u32), 2> = InlineVec::new();
        for &(m, a) in locs.iter() {
            let d = self.disk_of(block, m);
            if best.is_none_or(|(_, bd)| bd == d) {
                holders.push((d, a, m));
            }
        }
        for &(d, a, _) in holders.iter() {
            let lba = self.disks[d].free.lba(a);
            let r = EwRequest {
                id: id as u64,
                work: Work::Positioned {
                    op: Op::Read,
                    lba,
                    sectors: blocks * self.block_sectors,
                    target: self.drive.locate(lba),
                },
                queued_at: now,
                seq: self.op(id).seq,
            };
            self.disks[d].fg.push(r);
            if self.disks[d].busy.is_none() {
                self.out.mark_for_dispatch(d);
            }
        }
        // Copies not queued anywhere are no longer needed.
        let mut queued: InlineVec<usize, 2> = InlineVec::new();
        for h in holders.iter() {
            queued.push(h.0);
        }
        for &(m, a) in locs.iter() {
            let d = self.disk_of(block, m);
            if !queued.as_slice().contains(&d) {
                self.unpin(d, a, blocks);
            }
        }
        let op = self.op_mut(id);
        op.holders = queued;
        op.locs.retain(|&(m, _)| holders.iter().any(|h| h.2 == m));
    }

    /// Propagation blocks a write chunk of `blocks` blocks will queue once acknowledged:
    /// a copy for each replica not written synchronously, or the DDM's move home.
    fn propagation_need(&self, blocks: u32) -> usize {
        let copies = if self.shape.ddm {
            1
        } else {
            self.dm - self.sync_copies.min(self.dm)
        };
        blocks as usize * copies as usize
    }

    /// The delayed-write buffer holds at most `nvram_entries` blocks, forced-out ones and
    /// those admitted writes will queue included: a write chunk that would overfill it waits
    /// (unacknowledged, behind any earlier waiting chunk) while the oldest propagations are
    /// forced to the foreground. An empty buffer admits any chunk, so writes always progress.
    ///
    /// A chunk whose propagations alone would overfill the whole buffer is written through
    /// instead: every replica synchronously, nothing deferred (a DDM chunk, whose deferred
    /// work is its move home, waits for an empty buffer).
    fn admit_write(&mut self, now: Nanos, slot: usize, block: u32, blocks: u32, version: u64) {
        let mut need = self.propagation_need(blocks);
        let mut sync = self.sync_copies;
        if need > self.nvram_entries && !self.shape.ddm {
            (need, sync) = (0, self.dm);
        }
        // Behind a held chunk, every chunk waits: writes start in arrival order.
        if self.held.is_empty() && self.has_room(need) && !self.held_by_rebuild(block, blocks) {
            self.reserved_blocks += need;
            self.accept_write(now, slot, block, blocks, version, sync);
            return;
        }
        // The host waits for the held chunk too.
        self.host.add_part(slot);
        self.held.push_back(Held {
            slot,
            block,
            blocks,
            version,
            sync,
            need,
        });
        self.held_blocks += need;
        self.enforce_nvram_limit();
    }

    /// Whether propagations of `need` blocks fit the buffer now (an empty one takes any).
    fn has_room(&self, need: usize) -> bool {
        let used = self.pending_blocks + self.reserved_blocks;
        need == 0 || used == 0 || used + need <= self.nvram_entries
    }

    /// Starts the held chunks that now fit, in arrival order.
    fn release_held(&mut self, now: Nanos) {
        while let Some(h) = self.held.front() {
            if !self.has_room(h.need) || self.held_by_rebuild(h.block, h.blocks) {
                break;
            }
            let h = self.held.pop_front().expect("a held chunk");
            self.held_blocks -= h.need;
            self.reserved_blocks += h.need;
            self.accept_write(now, h.slot, h.block, h.blocks, h.version, h.sync);
            self.host.drop_part(h.slot);
        }
        self.enforce_nvram_limit();
    }

    /// Queues a write chunk's `sync` synchronous copies (the rest are propagated once it is
    /// acknowledged).
    fn accept_write(
        &mut self,
        now: Nanos,
        slot: usize,
        block: u32,
        blocks: u32,
        version: u64,
        sync: u32,
    ) {
        for b in block..block + blocks {
            let st = self.state(b);
            st.newest = st.newest.max(version);
            st.chunks += 1;
        }
        // Degraded: lost replicas are not written, and the survivors are all there is (a
        // chunk is one stripe unit: its blocks are lost alike).
        let lost = self.lost(block);
        let copies = sync.min(self.dm - lost.count_ones());
        let g = Group {
            block,
            blocks,
            version,
            left: copies,
            written: 0,
            // A written-through chunk (every replica synchronous) defers nothing.
            reserved: if sync == self.sync_copies {
                self.propagation_need(blocks)
            } else {
                0
            },
        };
        let gid = match self.free_groups.pop() {
            Some(i) => {
                self.groups[i] = Some(g);
                i
            }
            None => {
                self.groups.push(Some(g));
                self.groups.len() - 1
            }
        };
        let mut used = lost;
        for _ in 0..copies {
            let m = self.choose_write_replica(now, block, blocks, used);
            used |= 1 << m;
            let d = self.disk_of(block, m);
            let mut op = self.blank_op(Kind::Write, now);
            op.slot = Some(slot);
            op.group = Some(gid);
            op.block = block;
            op.blocks = blocks;
            op.version = version;
            op.holders = InlineVec::one(d);
            let seq = op.seq;
            let id = self.new_op(op);
            for b in block..block + blocks {
                self.state(b).inflight += 1;
            }
            self.disks[d].fg.push(EwRequest {
                id: id as u64,
                work: Work::Eager { blocks },
                queued_at: now,
                seq,
            });
            if self.disks[d].busy.is_none() {
                self.out.mark_for_dispatch(d);
            }
        }
    }

    /// 4.5: the idle candidate closest to a free extent, else the shortest queue.
    fn choose_write_replica(&self, now: Nanos, block: u32, blocks: u32, used: u64) -> u32 {
        let mut best_idle: Option<(Span, u32)> = None;
        let mut shortest: Option<((usize, usize), u32)> = None;
        for m in 0..self.dm {
            if used & (1 << m) != 0 {
                continue;
            }
            let d = &self.disks[self.disk_of(block, m)];
            if d.busy.is_none() && d.fg.is_empty() {
                let t = d
                    .free
                    .closest(&self.drive, now, &d.head, blocks, Sweep::Any)
                    .or_else(|| d.free.closest(&self.drive, now, &d.head, 1, Sweep::Any))
                    .map_or(Span(u64::MAX), |(_, t)| t);
                if best_idle.is_none_or(|(bt, _)| t < bt) {
                    best_idle = Some((t, m));
                }
            }
            let key = (d.fg.len(), d.delayed.len());
            if shortest.is_none_or(|(k, _)| key < k) {
                shortest = Some((key, m));
            }
        }
        best_idle
            .map(|(_, m)| m)
            .or(shortest.map(|(_, m)| m))
            .expect("a candidate replica")
    }

    fn start_next(&mut self, now: Nanos, d: usize) {
        debug_assert!(self.disks[d].busy.is_none());
        let disk = &mut self.disks[d];
        let pick = match disk.fg.pick(now, &disk.head, &self.drive, &disk.free) {
            Some(p) => Some(p),
            None => disk.delayed.pick(now, &disk.head, &self.drive, &disk.free),
        };
        let Some(EwPick { request, extent }) = pick else {
            return;
        };
        let id = request.id as usize;
        let kind = self.op(id).kind;
        // A read leaves its duplicates' queues.
        if kind == Kind::Read {
            let op = self.op(id);
            let mut others: InlineVec<(usize, BlockId, u32), 2> = InlineVec::new();
            for &(m, a) in op.locs.iter() {
                let od = self.disk_of(op.block, m);
                if od != d {
                    others.push((od, a, op.blocks));
                }
            }
            for &(od, a, n) in others.iter() {
                self.disks[od].fg.remove(id as u64);
                self.unpin(od, a, n);
            }
            let op = self.op_mut(id);
            op.holders = InlineVec::one(d);
            if self.latent.is_some() {
                let op = self.op(id);
                let a = op.locs.iter().find(|&&(m, _)| m == d as u32 / self.n);
                let bad = self.read_meets_latent_error(d, a.expect("the read's copy").1, op.blocks);
                self.op_mut(id).unreadable = bad;
            }
        }
        let bs = self.block_sectors;
        let xfer = match (request.work, extent) {
            (
                Work::Positioned {
                    op, lba, sectors, ..
                },
                _,
            ) => Transfer { op, lba, sectors },
            (Work::Eager { blocks }, Some((e, len))) => {
                if len < blocks {
                    self.split_eager(now, d, id, len);
                }
                self.disks[d].free.allocate(e, len);
                Transfer {
                    op: Op::Write,
                    lba: self.disks[d].free.lba(e),
                    sectors: len * bs,
                }
            }
            (Work::Eager { .. }, None) => unreachable!("an eager write is picked with its extent"),
        };
        self.op_mut(id).started = true;
        if matches!(kind, Kind::Write | Kind::Propagate | Kind::Home) {
            // Its completion updates the map entries of its blocks on this disk's mirror.
            let (op, m) = (self.op(id), d as u32 / self.n);
            for b in op.block..op.block + op.blocks {
                self.map.map().prefetch(b, m);
            }
        }
        if self.data.is_some() {
            self.start_moves(d, id, &xfer);
        }
        let disk = &mut self.disks[d];
        let rng = if self.noise {
            Some(&mut disk.rng)
        } else {
            None
        };
        // A disk in a low-power state first comes back: the operation starts then.
        let now = disk.clock.wake(now);
        let access = self.drive.access(now, &disk.head, xfer, None, rng);
        disk.head.cylinder = access.end_cylinder;
        disk.head.head = access.end_head;
        let cause = match kind {
            Kind::Read => Cause::HostRead,
            Kind::Write => Cause::HostWrite,
            Kind::Propagate | Kind::Home => Cause::DelayedWrite,
            Kind::MapAppend(_) => Cause::MapLogging,
            Kind::RebuildRead | Kind::RebuildWrite | Kind::LogCopyRead | Kind::LogCopyWrite => {
                Cause::Rebuild
            }
        };
        disk.clock
            .start(cause, Nanos(access.end.0 - access.service().0), access.end);
        disk.busy = Some(InFlight {
            op: id,
            access,
            extent: match request.work {
                Work::Eager { .. } => extent,
                Work::Positioned { .. } => None,
            },
        });
        self.out.push(Action::DiskBusy {
            disk: d,
            until: access.end,
        });
    }

    /// An eager write placed in a shorter extent than it needs: the rest becomes a new
    /// operation of the same kind in the same queue.
    fn split_eager(&mut self, now: Nanos, d: usize, id: usize, len: u32) {
        let op = self.op(id);
        let mut rest = self.blank_op(op.kind, now);
        let op = self.op(id);
        rest.slot = op.slot;
        rest.group = op.group;
        rest.block = op.block + len;
        rest.blocks = op.blocks - len;
        rest.version = op.version;
        rest.holders = InlineVec::one(d);
        rest.in_delayed = op.in_delayed;
        rest.promoted = op.promoted;
        rest.live = rest.blocks;
        rest.queued_at = op.queued_at;
        rest.repair = op.repair;
        let (kind, group, in_delayed) = (op.kind, op.group, rest.in_delayed);
        let blocks = rest.blocks;
        let first = rest.block;
        let seq = rest.seq;
        let rid = self.new_op(rest);
        self.op_mut(id).blocks = len;
        self.op_mut(id).live = self.op(id).live.min(len);
        if let Some(g) = group {
            self.groups[g].as_mut().expect("live group").left += 1;
        }
        if kind == Kind::Propagate {
            for b in first..first + blocks {
                for p in self.state(b).props.iter_mut() {
                    if *p == id {
                        *p = rid;
                    }
                }
            }
            self.prop_order.push_back((rid, seq));
        }
        let r = EwRequest {
            id: rid as u64,
            work: Work::Eager { blocks },
            queued_at: now,
            seq,
        };
        if in_delayed && !self.op(rid).promoted {
            self.disks[d].delayed.push(r);
        } else {
            self.disks[d].fg.push(r);
        }
    }

    fn finish(&mut self, now: Nanos, d: usize) {
        let Some(f) = self.disks[d].busy.take() else {
            panic!("disk {d} completed with nothing in flight");
        };
        debug_assert_eq!(f.access.end, now, "disk {d} completion at the wrong time");
        self.disks[d].clock.finish();
        let kind = self.op(f.op).kind;
        match kind {
            Kind::Read if self.op(f.op).unreadable => {
                self.latent_read_failed(now, d, f.op, &f.access);
            }
            Kind::Read => {
                let (block, blocks) = (self.op(f.op).block, self.op(f.op).blocks);
                let a = self
                    .op(f.op)
                    .locs
                    .iter()
                    .find(|&&(m, _)| self.disk_of(block, m) == d)
                    .expect("the read's copy")
                    .1;
                #[cfg(test)]
                self.audit.check_read(d, a, block, self.op(f.op).seq);
                self.unpin(d, a, blocks);
                self.part_done(now, f.op, &f.access);
            }
            Kind::Write | Kind::Propagate => {
                let extent = f.extent.expect("an eager write's extent");
                self.stalled.push_back(Stalled {
                    op: f.op,
                    disk: d,
                    extent,
                    done: 0,
                    access: f.access,
                });
                self.drain_stalled(now);
            }
            Kind::Home => {
                self.disks[d].propagations += 1;
                self.stalled.push_back(Stalled {
                    op: f.op,
                    disk: d,
                    extent: (self.op(f.op).locs[0].1, self.op(f.op).blocks),
                    done: 0,
                    access: f.access,
                });
                self.drain_stalled(now);
            }
            Kind::MapAppend(id) => {
                self.remove_op(f.op);
                let left = self.append_left.get_mut(&id).expect("an append in flight");
                *left -= 1;
                // Durable once every copy of the region holds it.
                if *left == 0 {
                    self.append_left.remove(&id);
                    let more = self.map.append_done(id);
                    if self.data.is_some() {
                        self.pump_map_nvram();
                    }
                    self.queue_appends(now, more);
                    self.drain_stalled(now);
                }
            }
            Kind::RebuildRead | Kind::RebuildWrite => self.rebuild_op_done(now, f.op),
            Kind::LogCopyRead | Kind::LogCopyWrite => self.log_copy_done(now, f.op),
        }
        // Propagations done or made obsolete free room for held writes.
        if !self.held.is_empty() {
            self.release_held(now);
        }
        if self.failure.is_some() {
            self.failure_progress(now);
        }
        self.out.mark_for_dispatch(d);
    }

    /// Applies finished writes' map updates in order, as NVRAM room allows.
    fn drain_stalled(&mut self, now: Nanos) {
        while let Some(mut s) = self.stalled.pop_front() {
            if !self.apply_write(&mut s) {
                self.stalled.push_front(s);
                return;
            }
            let kind = self.op(s.op).kind;
            match kind {
                Kind::Write => self.copy_done(now, s.op, s.disk, &s.access),
                Kind::Propagate | Kind::Home => {
                    if kind == Kind::Propagate {
                        self.disks[s.disk].propagations += 1;
                    }
                    let op = self.op(s.op);
                    let (block, blocks, promoted) = (op.block, op.blocks, op.promoted);
                    if op.repair {
                        self.repair_ended(blocks, true);
                    }
                    self.pending_blocks -= blocks as usize;
                    if promoted {
                        self.promoted_blocks -= blocks as usize;
                    }
                    for b in block..block + blocks {
                        let st = self.state(b);
                        st.props.retain(|&p| p != s.op);
                        st.inflight -= 1;
                        self.settle(b);
                    }
                    self.remove_op(s.op);
                }
                _ => unreachable!("only writes stall"),
            }
        }
    }

    /// Records a finished write's locations; false if NVRAM is full (progress is kept).
    fn apply_write(&mut self, s: &mut Stalled) -> bool {
        let op = self.op(s.op);
        let (kind, block, version) = (op.kind, op.block, op.version);
        let m = (s.disk as u32) / self.n;
        let (e, len) = s.extent;
        while s.done < len {
            let i = s.done;
            let b = block + i;
            let slot = e + i;
            #[cfg(test)]
            self.audit.wrote(s.disk, slot, b, version);
            // The location it replaces is freed below: its free-space lines load while the
            // block's state does (the map entry itself was prefetched at the write's start).
            self.disks[s.disk].free.prefetch(self.map.map().get(b, m));
            let st = self.table.get(&b).expect("a written block has state");
            let current = st.ver[m as usize];
            let update = match kind {
                Kind::Home => current == version && self.map.map().get(b, m) != slot,
                // A repair of an unreadable replica writes the version it holds.
                Kind::Propagate if st.bad & (1 << m) != 0 => version >= current,
                _ => version > current,
            };
            if update {
                let old = self.map.map().get(b, m);
                match self.map.update(b, m, slot) {
                    Ok(appends) => {
                        if self.data.is_some() {
                            self.map_updated(b, m, slot, version);
                        }
                        self.queue_appends(s.access.end, appends)
                    }
                    Err(_) => return false,
                }
                let st = self.state(b);
                st.ver[m as usize] = version;
                st.bad &= !(1 << m);
                self.release(s.disk, old);
            } else if kind != Kind::Home {
                // Superseded while in flight: the copy is stale at once.
                self.release(s.disk, slot);
            }
            s.done += 1;
        }
        true
    }

    /// One synchronous copy of a chunk is durable.
    fn copy_done(&mut self, now: Nanos, id: usize, d: usize, access: &Access) {
        let op = self.op(id);
        let (block, blocks, gid) = (op.block, op.blocks, op.group.expect("a write's group"));
        for b in block..block + blocks {
            self.state(b).inflight -= 1;
        }
        let m = d as u32 / self.n;
        let g = self.groups[gid].as_mut().expect("live group");
        g.written |= 1 << m;
        g.left -= 1;
        let group_done = g.left == 0;
        self.part_done(now, id, access);
        if group_done {
            let g = self.groups[gid].take().expect("live group");
            self.free_groups.push(gid);
            self.chunk_acked(now, &g);
        }
    }

    /// A chunk's synchronous copies are durable: it is acknowledged; older propagations of
    /// its blocks are obsolete; the other replicas get delayed copies.
    fn chunk_acked(&mut self, now: Nanos, g: &Group) {
        self.reserved_blocks -= g.reserved;
        let mut obsolete: Vec<usize> = Vec::new();
        for b in g.block..g.block + g.blocks {
            let st = self
                .table
                .get_mut(&b)
                .expect("a pending chunk keeps its blocks' state");
            st.chunks -= 1;
            if g.version <= st.acked {
                continue;
            }
            let previous = std::mem::replace(&mut st.acked, g.version);
            let props = st.props.clone();
            for &p in props.iter() {
                let op = &mut self.ops[p];
                // The block was current for propagations of the previous acknowledged
                // write, and is no longer.
                if op.version == previous && !op.started {
                    op.live -= 1;
                    obsolete.push(p);
                }
            }
        }
        obsolete.sort_unstable();
        obsolete.dedup();
        // Settled only once this write's own propagations are queued.
        let mut touched = Vec::new();
        for p in obsolete {
            self.obsolete(now, p, &mut touched);
        }
        // Runs of the chunk's blocks whose newest acknowledged data this write is.
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for b in g.block..g.block + g.blocks {
            if self.table.get(&b).is_some_and(|st| st.acked == g.version) {
                match runs.last_mut() {
                    Some((s, n)) if *s + *n == b => *n += 1,
                    _ => runs.push((b, 1)),
                }
            }
        }
        for (start, n) in runs {
            if self.shape.ddm {
                self.queue_home(now, start, n, g.version);
                continue;
            }
            let lost = self.lost(start);
            for m in 0..self.dm {
                if (g.written | lost) & (1 << m) == 0 {
                    self.queue_propagation(now, start, n, g.version, m);
                }
            }
        }
        for b in (g.block..g.block + g.blocks).chain(touched) {
            self.settle(b);
        }
        self.enforce_nvram_limit();
    }

    /// A delayed eager copy of blocks `block..block + blocks` for replica `m`.
    fn queue_propagation(&mut self, now: Nanos, block: u32, blocks: u32, version: u64, m: u32) {
        let d = self.disk_of(block, m);
        let mut op = self.blank_op(Kind::Propagate, now);
        op.block = block;
        op.blocks = blocks;
        op.version = version;
        op.holders = InlineVec::one(d);
        op.in_delayed = true;
        op.live = blocks;
        self.queue_delayed(now, op, d, Work::Eager { blocks });
    }

    /// Enters a propagation or DDM move in the NVRAM table and disk `d`'s delayed queue.
    fn queue_delayed(&mut self, now: Nanos, op: DiskOp, d: usize, work: Work) {
        let (block, blocks, seq) = (op.block, op.blocks, op.seq);
        let id = self.new_op(op);
        for b in block..block + blocks {
            let st = self.state(b);
            st.props.push(id);
            st.inflight += 1;
        }
        self.pending_blocks += blocks as usize;
        self.prop_order.push_back((id, seq));
        self.disks[d].delayed.push(EwRequest {
            id: id as u64,
            work,
            queued_at: now,
            seq,
        });
        if self.disks[d].busy.is_none() {
            self.out.mark_for_dispatch(d);
        }
    }

    /// DDM: moves blocks home, one operation per run of consecutive home locations.
    /// Blocks of one stripe unit, whose home may be lost with a failed disk (then the
    /// rebuild moves them home).
    fn queue_home(&mut self, now: Nanos, block: u32, blocks: u32, version: u64) {
        let h = self.home_replica(block);
        if self.lost(block) & (1 << h) != 0 {
            return;
        }
        let d = self.disk_of(block, h);
        let mut start = block;
        while start < block + blocks {
            let a = self.home_slot(start);
            // A bad home is retired: the block stays away from it.
            if self.latent_bad(d, a) {
                start += 1;
                continue;
            }
            let mut end = start + 1;
            while end < block + blocks
                && self.home_slot(end) == a + (end - start)
                && !self.latent_bad(d, a + (end - start))
                && self.disks[d].free.contiguous(a, end + 1 - start)
            {
                end += 1;
            }
            let n = end - start;
            let lba = self.disks[d].free.lba(a);
            let mut op = self.blank_op(Kind::Home, now);
            op.block = start;
            op.blocks = n;
            op.version = version;
            op.locs = InlineVec::one((h, a));
            op.holders = InlineVec::one(d);
            op.in_delayed = true;
            op.live = n;
            let work = Work::Positioned {
                op: Op::Write,
                lba,
                sectors: n * self.block_sectors,
                target: self.drive.locate(lba),
            };
            self.queue_delayed(now, op, d, work);
            start = end;
        }
    }

    /// A queued propagation one of whose blocks has a newer acknowledged write. With no
    /// block left current it is cancelled; a DDM move is cancelled and its current blocks
    /// queued again (a move must not overwrite a home with older data after a newer move).
    fn obsolete(&mut self, now: Nanos, p: usize, touched: &mut Vec<u32>) {
        let op = self.op(p);
        if op.started {
            return;
        }
        let (kind, live) = (op.kind, op.live);
        if kind == Kind::Propagate && live > 0 {
            return;
        }
        let (block, blocks, version, d) = (op.block, op.blocks, op.version, op.holders[0]);
        let removed = if op.promoted || !op.in_delayed {
            self.disks[d].fg.remove(p as u64)
        } else {
            self.disks[d].delayed.remove(p as u64)
        };
        debug_assert!(removed.is_some(), "a queued propagation is in its queue");
        self.pending_blocks -= blocks as usize;
        if self.op(p).promoted {
            self.promoted_blocks -= blocks as usize;
        }
        if self.op(p).repair {
            self.repair_ended(blocks, false);
        }
        let mut again = Vec::new();
        for b in block..block + blocks {
            let st = self.state(b);
            st.props.retain(|&x| x != p);
            st.inflight -= 1;
            if st.acked == version {
                again.push(b);
            }
            touched.push(b);
        }
        self.remove_op(p);
        for b in again {
            self.queue_home(now, b, 1, version);
        }
    }

    /// While held writes need room, the oldest propagations go to the foreground until the
    /// ones left in the delayed queues, the admitted writes' and the held writes' would fit.
    fn enforce_nvram_limit(&mut self) {
        while (self.pending_blocks - self.promoted_blocks) + self.reserved_blocks + self.held_blocks
            > self.nvram_entries
        {
            let Some((p, seq)) = self.prop_order.pop_front() else {
                break;
            };
            let Some(op) = self.ops.get(p) else {
                continue;
            };
            if op.seq != seq || !matches!(op.kind, Kind::Propagate | Kind::Home) {
                continue;
            }
            self.promote(p);
        }
    }

    /// Writes each append to every copy of the map log region that is live (a spare's
    /// copy joins once the rebuild has copied the region: until then appends wait).
    fn queue_appends(&mut self, now: Nanos, appends: Vec<Append>) {
        let appends = self.hold_appends(appends);
        for a in appends {
            let disks: Vec<usize> = self
                .log_disks
                .iter()
                .copied()
                .filter(|&d| self.log_copy_live(d))
                .collect();
            assert!(!disks.is_empty(), "a copy of the map log region survives");
            self.append_left.insert(a.id, disks.len() as u32);
            for d in disks {
                let lba = self.log_lba + a.offset_sectors;
                self.queue_positioned(now, Kind::MapAppend(a.id), d, Op::Write, lba, a.sectors);
            }
        }
    }

    /// Queues a positioned command (an append, a log copy) on disk `d`'s foreground.
    fn queue_positioned(
        &mut self,
        now: Nanos,
        kind: Kind,
        d: usize,
        op: Op,
        lba: u64,
        sectors: u32,
    ) {
        let mut o = self.blank_op(kind, now);
        o.lba = lba;
        o.sectors = sectors;
        o.holders = InlineVec::one(d);
        let seq = o.seq;
        let id = self.new_op(o);
        self.disks[d].fg.push(EwRequest {
            id: id as u64,
            work: Work::Positioned {
                op,
                lba,
                sectors,
                target: self.drive.locate(lba),
            },
            queued_at: now,
            seq,
        });
        if self.disks[d].busy.is_none() {
            self.out.mark_for_dispatch(d);
        }
    }

    fn remove_op(&mut self, id: usize) {
        self.ops.remove(id);
    }

    /// A host request's part is done: the host is answered after its last.
    fn part_done(&mut self, now: Nanos, id: usize, access: &Access) {
        let slot_id = self.op(id).slot.expect("a host operation");
        self.remove_op(id);
        let breakdown = |s: &HostSlot<()>| {
            Breakdown::of(
                access,
                now.since(s.req.arrival).saturating_sub(access.service()),
            )
        };
        if let Some((c, _)) = self.host.part_done(slot_id, now, breakdown) {
            self.out.push(Action::Complete(c));
        }
    }
}

impl Engine for EwArray {
    fn handle(&mut self, now: Nanos, ev: Event) {
        self.out.advance(now);
        self.begin();
        self.fail_if_due(now);
        match ev {
            Event::Host(req) => self.accept(now, req),
            Event::DiskDone { disk } => self.finish(now, disk),
            // A failure's or a paced rebuild's timer.
            Event::Wake => self.failure_wake(now),
        }
    }

    fn poll_action(&mut self) -> Option<Action> {
        self.begin();
        if let Some(due) = self.out.due() {
            let now = self.out.now();
            for &d in &due {
                if self.disks[d].busy.is_none() {
                    self.start_next(now, d);
                }
            }
            self.out.dispatched(due);
        }
        self.out.pop()
    }

    fn outstanding(&self) -> usize {
        self.host.outstanding()
    }

    fn capacity_sectors(&self) -> u64 {
        self.capacity()
    }

    fn disk_count(&self) -> usize {
        self.disks.len()
    }

    fn sector_bytes(&self) -> u32 {
        self.drive.geometry().sector_bytes()
    }

    /// The 4 KiB block: eager writing places whole blocks.
    fn io_align_bytes(&self) -> u32 {
        BLOCK_BYTES as u32
    }

    fn enable_data_moves(&mut self) -> bool {
        self.enable_data()
    }

    fn poll_data(&mut self) -> Option<DataMove> {
        self.begin();
        self.data.as_mut()?.moves.pop_front()
    }

    fn poll_nvram(&mut self) -> Option<NvramWrite> {
        self.begin();
        self.data.as_mut()?.nvram.pop_front()
    }

    fn recover(
        &mut self,
        nvram: &[u8],
        read: &mut DiskReader<'_>,
    ) -> Result<Vec<DataMove>, RecoverError> {
        self.recover_from(nvram, read)
    }

    fn busy(&self, disk: usize, t: Nanos) -> Busy {
        self.disks[disk].clock.busy(t)
    }

    fn rebuild(&self) -> Option<RebuildStatus> {
        self.rebuild_status()
    }
    fn latent(&self) -> Option<LatentCounters> {
        self.latent_counters()
    }
    fn power(&self, disk: usize, t: Nanos) -> Option<crate::drive::PowerTotals> {
        self.disks[disk].clock.power(t)
    }
    fn power_command(&mut self, now: Nanos, disk: usize, cmd: crate::drive::PowerCommand) {
        self.disks[disk].clock.command(now, cmd);
    }

    /// Delayed eager copies, DDM moves home and map log appends pending (queued or
    /// running), and the blocks waiting in NVRAM for them. O(operations in flight).
    fn backlog(&self) -> Backlog {
        let sector_bytes = u64::from(self.drive.geometry().sector_bytes());
        let mut b = Backlog {
            nvram_entries: self.pending_blocks as u64,
            ..Backlog::default()
        };
        for op in self.ops.iter() {
            let bytes = match op.kind {
                Kind::Propagate | Kind::Home => u64::from(op.blocks) * BLOCK_BYTES,
                Kind::MapAppend(_) => u64::from(op.sectors) * sector_bytes,
                Kind::Read
                | Kind::Write
                | Kind::RebuildRead
                | Kind::RebuildWrite
                | Kind::LogCopyRead
                | Kind::LogCopyWrite => continue,
            };
            b.ops += 1;
            b.bytes += bytes;
        }
        b
    }

    fn counters(&self, disk: usize) -> DiskCounters {
        let d = &self.disks[disk];
        let mut sched = d.fg.stats();
        let bg = d.delayed.stats();
        sched.picks += bg.picks;
        sched.reversals += bg.reversals;
        DiskCounters {
            ops: d.clock.ops(),
            propagations: d.propagations,
            map_logging: d.clock.finished(Cause::MapLogging),
            sched,
        }
    }

    /// Reading the map log region from its first live copy (from the oldest record still needed)
    /// sequentially from the outer edge, as a crash now would require; NVRAM replay is
    /// memory work and not timed.
    fn recovery_time(&self) -> Option<Span> {
        let p = self.map.crash();
        let sectors =
            MapLog::recovery_sectors(&p, &self.map_cfg, self.logical_blocks, self.dm).ok()?;
        if sectors == 0 {
            return Some(Span::ZERO);
        }
        let d = self
            .log_disks
            .iter()
            .copied()
            .find(|&d| self.log_copy_live(d))?;
        let head = HeadState {
            cylinder: 0,
            head: 0,
            phase_ns: self.disks[d].head.phase_ns,
        };
        let sectors = sectors.min(self.map.region_sectors());
        let a = self.drive.access(
            Nanos::ZERO,
            &head,
            Transfer {
                op: Op::Read,
                lba: self.log_lba,
                sectors: u32::try_from(sectors).unwrap_or(u32::MAX),
            },
            None,
            None::<&mut Pcg64Mcg>,
        );
        Some(a.service())
    }
}

mod data;
mod failure;
mod latent;

#[cfg(test)]
pub(crate) mod audit;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod data_tests;
