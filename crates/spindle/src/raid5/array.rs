//! The parity array controller without a write cache: the classic RAID-5/RAID-4 write
//! (Varma & Jacobson, ISCA'95, section I). Each host write is cut into its parity stripes;
//! each stripe's update is planned as
//!
//! - a **full-stripe write** when it covers every data unit: parity is computed from the
//!   new data, so data and parity are written with no reads;
//! - a **reconstruct-write** when it covers more than `reconstruct_fraction` of the
//!   stripe's data: the untouched data of the rows it touches is read, then the new data and
//!   the parity of those rows are written;
//! - otherwise a **read-modify-write**: the old data and old parity of the rows it touches
//!   are read, then the new data and new parity are written (four accesses for a small
//!   write).
//!
//! The reads of a stripe update run in parallel on their disks, then its writes; the host is
//! answered when every stripe's writes are done. Updates of one stripe run one at a time, in
//! arrival order (two concurrent read-modify-writes of a stripe would each compute parity
//! from the other's old data). Reads go to the data unit's disk. Every disk operation the
//! host waits for is charged to it: reads to host reads, the reads and writes of an update
//! to host writes.
//!
//! With a write cache ([`CacheConfig`], paper III.A) host writes go to the non-volatile
//! write cache and are answered at once; parity is brought up to date later by destage
//! rounds (the `destage` module), scheduled on each disk by a [`DestageQueue`] only when
//! the disk has no host work. A write that finds the cache full (its parity reserve kept)
//! is an overflow and takes the classic update above. Reads are answered from either cache
//! when every block is there, otherwise the missing blocks are read from disk into the read
//! cache. Parity arrays run their drives without the drive's own buffer, as the paper's
//! simulator does (and as replicated layouts do): the controller's caches stand in for it.

mod channel;
mod data;
mod degraded;
mod destage;

pub use degraded::FailureConfig;

use super::layout::{ParityLayout, UnitPiece};
use crate::cache::{BlockAddr, DestagePolicy, DestageQueue, HighLowGate, ReadCache, WriteCache};
use crate::drive::{Access, Controller, Drive, HeadState, Run, Transfer};
use crate::engine::{
    Action, Backlog, Breakdown, Busy, CacheCounters, Cause, DiskClock, DiskCounters, Engine, Event,
    HostRequest, HostSlot, HostTable, Outbox, Slab,
};
use crate::sched::{DiskRequest, Policy, Scheduler};
use crate::{Nanos, Op, Span};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

/// A parity array's configuration.
#[derive(Clone, Debug)]
pub struct Raid5Config {
    pub layout: ParityLayout,
    pub policy: Policy,
    pub age_bound: Option<Span>,
    /// Give each disk a random rotational phase (real spindles are not synchronised).
    pub random_phase: bool,
    pub noise: bool,
    pub seed: u64,
    /// A partial-stripe write covering more than this fraction of the stripe's data is a
    /// reconstruct-write; at most this, a read-modify-write.
    pub reconstruct_fraction: f64,
    /// The write and read caches and destage scheduling; `None`: every write is a classic
    /// update.
    pub cache: Option<CacheConfig>,
    /// A disk that fails, and its rebuild onto a spare; `None`: every disk works.
    pub failure: Option<FailureConfig>,
    /// The I/O channel's rate in bytes/s (paper III.B: 20 MB/s); `None`: not modelled.
    pub io_bus_bytes_per_s: Option<f64>,
    /// The read cache's write port's rate in bytes/s (with caches); `None`: not modelled.
    pub cache_port_bytes_per_s: Option<f64>,
    /// Run the drives with their own buffer and controller (DiskSim's logorg arrays do);
    /// otherwise the controller's caches stand in for them, as in the paper's simulator.
    /// Not with a write cache.
    pub drive_buffers: bool,
}

/// The controller's caches (Varma & Jacobson, III.A), in 4 KiB blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheConfig {
    /// The non-volatile write cache (paper: 1 MB = 256 blocks; 512 KB – 4 MB).
    pub write_blocks: usize,
    /// The volatile read cache (paper: 8 MB = 2,048 blocks).
    pub read_blocks: usize,
    /// Write-cache blocks host writes leave for newly computed parity (paper: 3).
    pub parity_reserve: usize,
    pub policy: DestagePolicy,
}

/// The caches' block.
pub const BLOCK_BYTES: u32 = 4096;

/// Sectors per cache block on a drive of `sector_bytes` sectors (at least one).
pub fn block_sectors(sector_bytes: u32) -> u32 {
    (BLOCK_BYTES / sector_bytes).max(1)
}

/// How a stripe update gets its parity.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UpdateKind {
    FullStripe,
    ReconstructWrite,
    ReadModifyWrite,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// A host read of part of a data unit.
    Read,
    /// A read of old data or parity for stripe update `usize`.
    OldRead(usize),
    /// A write of new data or parity for stripe update `usize`.
    NewWrite(usize),
    /// A read of old data or parity into the read cache for destage round `usize`.
    DestageRead(usize),
    /// A write of cached data or parity to disk for destage round `usize`.
    DestageWrite(usize),
    /// A read of a surviving disk for degraded read `usize` (the failed disk's data is the
    /// XOR of the others).
    ReconRead(usize),
    /// A read of a surviving disk for the rebuild step under way.
    RebuildRead,
    /// The rebuild step's write of the reconstructed unit to the spare.
    RebuildWrite,
}

struct DiskOp {
    kind: Kind,
    /// The host request a read answers.
    slot: Option<usize>,
    disk: usize,
    op: Op,
    lba: u64,
    sectors: u32,
}

/// One disk access of a stripe update: (disk, first sector, sectors).
type Access1 = (usize, u64, u32);

/// The update of one parity stripe for one host write, planned when it starts (a disk
/// may have failed, or been rebuilt, meanwhile).
struct StripeUpdate {
    slot: usize,
    key: (u32, u64),
    /// The host write's pieces in this stripe (at most one per data unit).
    pieces: Vec<UnitPiece>,
    reads: Vec<Access1>,
    writes: Vec<Access1>,
    /// With a write cache: what the update writes, whose cached copies it makes stale.
    written: Vec<Access1>,
    /// Operations of the current phase not yet done.
    left: u32,
    /// With data moves on: the write phase's moves, parity first.
    moves: Vec<crate::engine::DataMove>,
}

struct InFlight {
    op: usize,
    /// The other operations of a same-track destage batch, done in the same access.
    batch: Vec<usize>,
    access: Access,
    started: Nanos,
    queued_at: Nanos,
    /// When the disk is free: the access's end, or later while a read's data crosses the
    /// read cache's write port.
    until: Nanos,
    /// A read whose data has yet to cross the port.
    port_pending: bool,
}

struct Disk {
    head: HeadState,
    /// The drive's own controller (buffer, read-ahead, write-back) with `drive_buffers`.
    ctl: Controller,
    queue: Box<dyn Scheduler>,
    /// Destage reads and writes, served when `queue` is empty (with a write cache).
    destage: Option<DestageQueue>,
    busy: Option<InFlight>,
    rng: Pcg64Mcg,
    clock: DiskClock,
}

/// Per-kind counts of stripe updates, whole run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateCounts {
    pub full_stripe: u64,
    pub reconstruct_write: u64,
    pub read_modify_write: u64,
}

/// A destage round of one stripe: read the old data and parity its dirty blocks need,
/// compute the new parity into the write cache, write data and parity.
struct Round {
    key: (u32, u64),
    /// Operations of the current phase not yet done.
    left: u32,
    /// A host write waits for the stripe: the round's work goes to the host queues.
    promoted: bool,
    /// Old data and parity its destage reads brought: kept (pinned in the read cache, in
    /// effect) until the parity is computed, so a small read cache cannot starve a round.
    fetched: HashSet<BlockAddr>,
}

/// Work holding a stripe: a classic update or a destage round.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum StripeWork {
    Update(usize),
    Round(usize),
    /// A host read of the failed disk, reconstructed from the others (`degraded` module).
    Recon(usize),
    /// The rebuild of this stripe onto the spare.
    Rebuild,
}

/// The caches and what destaging needs.
struct Cached {
    write: WriteCache,
    read: ReadCache,
    gate: HighLowGate,
    /// Per stripe, the dirty blocks: (data unit, block row in the unit).
    dirty: HashMap<(u32, u64), BTreeSet<(u32, u32)>>,
    /// Stripes with a destage round queued or running.
    rounds_queued: HashSet<(u32, u64)>,
    rounds: Slab<Round>,
    /// Rounds waiting for write-cache room to hold their new parity.
    waiting_room: VecDeque<usize>,
    /// Idle disks whose destage pick declined: asked again when the occupancy changes.
    declined: Vec<usize>,
    counters: CacheCounters,
    changed_at: Nanos,
}

pub struct Raid5Array {
    drive: Arc<Drive>,
    layout: ParityLayout,
    disks: Vec<Disk>,
    /// Host requests; each knows whether it went to disk (a read miss).
    host: HostTable<bool>,
    ops: Slab<DiskOp>,
    updates: Slab<StripeUpdate>,
    /// Work per stripe, in arrival order; the front one runs.
    stripe_queues: HashMap<(u32, u64), VecDeque<StripeWork>>,
    cache: Option<Cached>,
    /// Sectors per cache block.
    block_sectors: u32,
    out: Outbox,
    seq: u64,
    noise: bool,
    reconstruct_fraction: f64,
    counts: UpdateCounts,
    pieces: Vec<UnitPiece>,
    failure: Option<degraded::Failure>,
    data: Option<Box<data::DataState>>,
    channel: channel::Channel,
}

impl Raid5Array {
    pub fn new(drive: Arc<Drive>, cfg: &Raid5Config) -> Result<Raid5Array, String> {
        if !(0.0..=1.0).contains(&cfg.reconstruct_fraction) {
            return Err(format!(
                "reconstruct_fraction must be in [0, 1], got {}",
                cfg.reconstruct_fraction
            ));
        }
        // The controller's caches stand in for the drive's own buffer (module docs).
        if cfg.drive_buffers && cfg.cache.is_some() {
            return Err(
                "the drives' own buffers are kept only without a write cache (the \
                        controller's caches stand in for them)"
                    .into(),
            );
        }
        let drive = if drive.cache().is_some() && !cfg.drive_buffers {
            Arc::new(drive.without_cache())
        } else {
            drive
        };
        let sector = drive.geometry().sector_bytes();
        let block_sectors = block_sectors(sector);
        let cache = match &cfg.cache {
            None => None,
            Some(c) => {
                if !BLOCK_BYTES.is_multiple_of(sector) || !cfg.layout.whole_blocks(block_sectors) {
                    let unit = match cfg.layout.fixed_unit() {
                        Some(u) => format!("{u} sectors"),
                        None => "one track's whole blocks".into(),
                    };
                    return Err(format!(
                        "with a write cache the stripe unit must be whole {BLOCK_BYTES}-byte \
                         blocks of whole sectors ({unit} of {sector} bytes)"
                    ));
                }
                if c.write_blocks <= c.parity_reserve {
                    return Err(format!(
                        "the write cache ({} blocks) must be larger than its parity reserve ({})",
                        c.write_blocks, c.parity_reserve
                    ));
                }
                c.policy.validate(&drive).map_err(|e| e.to_string())?;
                Some(Cached {
                    write: WriteCache::new(c.write_blocks, c.parity_reserve),
                    read: ReadCache::new(c.read_blocks),
                    gate: c.policy.gate(),
                    dirty: HashMap::new(),
                    rounds_queued: HashSet::new(),
                    rounds: Slab::default(),
                    waiting_room: VecDeque::new(),
                    declined: Vec::new(),
                    counters: CacheCounters {
                        capacity_blocks: c.write_blocks as u64,
                        ..CacheCounters::default()
                    },
                    changed_at: Nanos::ZERO,
                })
            }
        };
        let mut seeder = Pcg64Mcg::seed_from_u64(cfg.seed);
        let period = drive.period().0;
        let cylinders = drive.geometry().cylinders();
        let mut disks = Vec::with_capacity(cfg.layout.disks());
        for _ in 0..cfg.layout.disks() {
            let phase_ns = if cfg.random_phase {
                seeder.gen_range(0..period)
            } else {
                0
            };
            let destage = match &cfg.cache {
                Some(c) => Some(DestageQueue::new(&c.policy, &drive).map_err(|e| e.to_string())?),
                None => None,
            };
            let head = HeadState {
                cylinder: 0,
                head: 0,
                phase_ns,
            };
            disks.push(Disk {
                head,
                ctl: Controller::new(&drive, head),
                queue: cfg.policy.build(cfg.age_bound, cylinders),
                destage,
                busy: None,
                rng: Pcg64Mcg::seed_from_u64(seeder.gen()),
                clock: DiskClock::new(drive.power_clock()),
            });
        }
        Ok(Raid5Array {
            out: Outbox::new(cfg.layout.disks()),
            drive,
            layout: cfg.layout.clone(),
            disks,
            host: HostTable::default(),
            ops: Slab::with_capacity(1024),
            updates: Slab::with_capacity(256),
            stripe_queues: HashMap::new(),
            cache,
            block_sectors,
            seq: 0,
            noise: cfg.noise,
            reconstruct_fraction: cfg.reconstruct_fraction,
            counts: UpdateCounts::default(),
            pieces: Vec::with_capacity(8),
            failure: match &cfg.failure {
                Some(f) => Some(degraded::Failure::new(f, &cfg.layout, sector)?),
                None => None,
            },
            data: None,
            channel: channel::Channel::new(cfg.io_bus_bytes_per_s, cfg.cache_port_bytes_per_s),
        })
    }

    pub fn layout(&self) -> &ParityLayout {
        &self.layout
    }

    /// Stripe updates planned so far, by kind.
    pub fn update_counts(&self) -> UpdateCounts {
        self.counts
    }

    fn accept(&mut self, now: Nanos, req: HostRequest) {
        assert!(req.sectors > 0, "host request {} moves no data", req.id);
        let end = req.lba + u64::from(req.sectors);
        assert!(
            end <= self.layout.capacity_sectors(),
            "host request {} ends at {end}, beyond the array",
            req.id
        );
        let slot = self.host.admit(req, now, false);
        if req.op == Op::Write {
            let sector = u64::from(self.drive.geometry().sector_bytes());
            self.write_arrives(now, req.id, u64::from(req.sectors) * sector);
        }
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        self.layout.pieces(req.lba, req.sectors, &mut pieces);
        match req.op {
            Op::Read => {
                let mut queued = 0;
                for p in &pieces {
                    let key = (p.group, p.stripe);
                    let disk = self.layout.data_disk(p.group, p.stripe, p.unit);
                    let lba = self.layout.stripe_lba(p.stripe) + u64::from(p.offset);
                    let lost = self.lost_disk(key) == Some(disk);
                    let runs = if self.cache.is_some() {
                        // With data moves on, a lost disk's read-cache copies are not used
                        // (their bytes would come from the failed disk): degraded reads may
                        // then take longer than without data moves.
                        let bytes_lost = lost && self.data.is_some();
                        let misses = self.read_misses(disk, lba, p.sectors, bytes_lost);
                        self.describe_hits(slot, disk, lba, p.sectors, &misses);
                        misses
                    } else {
                        vec![(lba, p.sectors)]
                    };
                    for (lba, sectors) in runs {
                        if lost {
                            self.queue_recon(now, slot, key, disk, lba, sectors);
                        } else {
                            self.queue_op(
                                now,
                                Kind::Read,
                                Some(slot),
                                disk,
                                Op::Read,
                                lba,
                                sectors,
                            );
                        }
                        queued += 1;
                    }
                }
                if let Some(c) = self.cache.as_mut() {
                    c.counters.host_reads += 1;
                    if queued == 0 {
                        c.counters.read_hits += 1;
                    }
                }
                if queued == 0 {
                    self.answer_now(now, slot);
                } else {
                    self.host.get_mut(slot).extra = true;
                }
            }
            Op::Write => {
                // Pieces of one stripe are consecutive units of its group; a request
                // spanning groups interleaves them, so gather each stripe's pieces.
                let mut stripes: Vec<((u32, u64), Vec<UnitPiece>)> = Vec::new();
                for p in &pieces {
                    let key = (p.group, p.stripe);
                    match stripes.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, v)) => v.push(*p),
                        None => stripes.push((key, vec![*p])),
                    }
                }
                if self.cache.is_some() && self.absorb(now, req.id, &stripes) {
                    self.answer_now(now, slot);
                } else {
                    if self.cache.is_some() {
                        self.overflow(now, req.id, &stripes);
                    }
                    for (key, pieces) in stripes {
                        self.host.add_part(slot);
                        let u = self.updates.insert(StripeUpdate {
                            slot,
                            key,
                            pieces,
                            reads: Vec::new(),
                            writes: Vec::new(),
                            written: Vec::new(),
                            left: 0,
                            moves: Vec::new(),
                        });
                        self.enqueue_stripe_work(now, key, StripeWork::Update(u));
                    }
                }
            }
        }
        self.pieces = pieces;
    }

    /// Queues work on stripe `key`, starting it if nothing else holds the stripe.
    fn enqueue_stripe_work(&mut self, now: Nanos, key: (u32, u64), w: StripeWork) {
        let q = self.stripe_queues.entry(key).or_default();
        q.push_back(w);
        if q.len() == 1 {
            self.start_stripe_work(now, w);
            return;
        }
        // Host work (and the rebuild) must not wait on destage work the destage policy may
        // decline for ever (a non-work-conserving policy at low occupancy): the rounds
        // ahead of it become host work.
        if !matches!(w, StripeWork::Round(_)) {
            let ahead: Vec<usize> = q
                .iter()
                .filter_map(|w| match w {
                    StripeWork::Round(r) => Some(*r),
                    _ => None,
                })
                .collect();
            for r in ahead {
                self.promote_round(now, r);
            }
        }
    }

    fn start_stripe_work(&mut self, now: Nanos, w: StripeWork) {
        match w {
            StripeWork::Update(u) => self.start_update(now, u),
            StripeWork::Round(r) => self.start_round(now, r),
            StripeWork::Recon(j) => self.start_recon(now, j),
            StripeWork::Rebuild => self.start_rebuild_step(now),
        }
    }

    /// The work holding stripe `key` is done: the next one starts.
    fn release_stripe(&mut self, now: Nanos, key: (u32, u64)) {
        let q = self
            .stripe_queues
            .get_mut(&key)
            .expect("running work holds its stripe");
        q.pop_front();
        match q.front() {
            Some(&next) => self.start_stripe_work(now, next),
            None => {
                self.stripe_queues.remove(&key);
            }
        }
    }

    /// Answers host request `slot` now, with nothing on the disks (a cache hit or a write
    /// into the write cache).
    fn answer_now(&mut self, now: Nanos, slot: usize) {
        self.host.add_part(slot);
        if let Some((c, _)) = self.host.part_done(slot, now, |_| Breakdown::default()) {
            self.deliver(now, c, false);
        }
    }

    /// Plans update `u`: the reads and writes updating its stripe with its pieces. With a
    /// disk lost (failed, not yet rebuilt) in the stripe, the update leaves it out: a lost
    /// parity unit is not updated; new data of a lost unit is folded into the parity, from
    /// every surviving unit's rows; a lost untouched unit forces a read-modify-write.
    fn plan(&mut self, u: usize) {
        let pieces = std::mem::take(&mut self.updates[u].pieces);
        let key = self.updates[u].key;
        let full = pieces.iter().map(|p| u64::from(p.sectors)).sum::<u64>()
            == u64::from(self.layout.width() - 1) * u64::from(self.layout.unit_of(key.1));
        let lost = self.lost_disk(key);
        let (group, stripe) = key;
        let l = &self.layout;
        let base = l.stripe_lba(stripe);
        let data_units = l.width() - 1;
        let unit = l.unit_of(stripe);
        let covered: u64 = pieces.iter().map(|p| u64::from(p.sectors)).sum();
        let stripe_data = u64::from(data_units) * u64::from(unit);
        // The rows (sector offsets within a unit) whose parity changes.
        let rows_start = pieces.iter().map(|p| p.offset).min().expect("a piece");
        let rows_end = pieces
            .iter()
            .map(|p| p.offset + p.sectors)
            .max()
            .expect("a piece");
        let parity = l.parity_disk(group, stripe);
        let lost_written = lost.is_some_and(|x| {
            pieces
                .iter()
                .any(|p| l.data_disk(group, stripe, p.unit) == x)
        });
        let kind = if covered == stripe_data {
            UpdateKind::FullStripe
        } else if lost.is_none() && covered as f64 > self.reconstruct_fraction * stripe_data as f64
        {
            UpdateKind::ReconstructWrite
        } else {
            UpdateKind::ReadModifyWrite
        };
        let mut reads = Vec::new();
        let mut writes: Vec<Access1> = pieces
            .iter()
            .map(|p| {
                let disk = l.data_disk(group, stripe, p.unit);
                (disk, base + u64::from(p.offset), p.sectors)
            })
            .collect();
        match kind {
            UpdateKind::FullStripe => {
                writes.push((parity, base, unit));
                self.counts.full_stripe += 1;
            }
            UpdateKind::ReconstructWrite => {
                // The rows' data the write leaves: each unit's rows outside its piece.
                for k in 0..data_units {
                    let disk = l.data_disk(group, stripe, k);
                    // The unit's piece [a, b) (an untouched unit: empty, at the rows' end).
                    let (a, b) = pieces
                        .iter()
                        .find(|p| p.unit == k)
                        .map_or((rows_end, rows_end), |p| (p.offset, p.offset + p.sectors));
                    if a > rows_start {
                        reads.push((disk, base + u64::from(rows_start), a - rows_start));
                    }
                    if b < rows_end {
                        reads.push((disk, base + u64::from(b), rows_end - b));
                    }
                }
                let n = rows_end - rows_start;
                writes.push((parity, base + u64::from(rows_start), n));
                self.counts.reconstruct_write += 1;
            }
            UpdateKind::ReadModifyWrite => {
                reads.extend(writes.iter().copied());
                let n = rows_end - rows_start;
                reads.push((parity, base + u64::from(rows_start), n));
                writes.push((parity, base + u64::from(rows_start), n));
                self.counts.read_modify_write += 1;
            }
        }
        if let Some(x) = lost {
            // Degraded: the rows' parity comes from every surviving unit when the lost
            // unit is written (its old contents are the XOR of the others); nothing is
            // read when the lost unit is the parity.
            let n = rows_end - rows_start;
            if x == parity {
                reads.clear();
            } else if lost_written && kind != UpdateKind::FullStripe {
                reads = (0..data_units)
                    .map(|k| l.data_disk(group, stripe, k))
                    .chain(std::iter::once(parity))
                    .filter(|&d| d != x)
                    .map(|d| (d, base + u64::from(rows_start), n))
                    .collect();
            }
        }
        // With a write cache, what the update changes makes cached copies stale, the lost
        // disk's included (its blocks' contents change though it is not written).
        let written = if self.cache.is_some() {
            writes.clone()
        } else {
            Vec::new()
        };
        if let Some(x) = lost {
            writes.retain(|w| w.0 != x);
        }
        let parity_write = writes
            .iter()
            .find(|w| w.0 == parity)
            .map(|&(d, lba, n)| (d, (lba - base) as u32, n));
        self.prepare_update(
            u,
            &pieces,
            parity_write,
            lost,
            full,
            kind == UpdateKind::ReconstructWrite,
        );
        let upd = &mut self.updates[u];
        upd.reads = reads;
        upd.writes = writes;
        upd.written = written;
    }

    /// Plans update `u` and starts its first phase: its reads, or its writes when it needs
    /// none.
    fn start_update(&mut self, now: Nanos, u: usize) {
        self.plan(u);
        let phase = if self.updates[u].reads.is_empty() {
            Kind::NewWrite(u)
        } else {
            Kind::OldRead(u)
        };
        self.start_phase(now, u, phase);
    }

    fn start_phase(&mut self, now: Nanos, u: usize, kind: Kind) {
        let (list, op) = match kind {
            Kind::OldRead(_) => (std::mem::take(&mut self.updates[u].reads), Op::Read),
            Kind::NewWrite(_) => (std::mem::take(&mut self.updates[u].writes), Op::Write),
            _ => unreachable!("only a classic update has phases here"),
        };
        self.updates[u].left = list.len() as u32;
        if op == Op::Write {
            self.describe_writes(u);
        }
        for (disk, lba, sectors) in list {
            self.queue_op(now, kind, None, disk, op, lba, sectors);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn queue_op(
        &mut self,
        now: Nanos,
        kind: Kind,
        slot: Option<usize>,
        disk: usize,
        op: Op,
        lba: u64,
        sectors: u32,
    ) {
        // Every operation serves one stripe: it stays in that stripe's row (with
        // track-aligned stripes, in one track).
        debug_assert!(
            self.layout
                .row_of(lba)
                .is_some_and(|(s, o)| o + sectors <= self.layout.unit_of(s)),
            "{kind:?} of {sectors} sectors at {lba} of disk {disk} leaves its stripe's row"
        );
        self.seq += 1;
        if let Some(s) = slot {
            self.host.add_part(s);
        }
        let id = self.ops.insert(DiskOp {
            kind,
            slot,
            disk,
            op,
            lba,
            sectors,
        });
        let target = self.drive.locate(lba);
        self.disks[disk].queue.push(DiskRequest::single(
            id as u64,
            op,
            (lba, sectors),
            target,
            now,
            self.seq,
        ));
        if self.disks[disk].busy.is_none() {
            self.out.mark_for_dispatch(disk);
        }
    }

    fn start_next(&mut self, now: Nanos, disk: usize) {
        let d = &mut self.disks[disk];
        let (id, batch, queued_at) = match d.queue.pick(now, &d.head, &self.drive) {
            Some(pick) => {
                let id = usize::try_from(pick.request.id).expect("op id fits usize");
                (id, Vec::new(), pick.request.queued_at)
            }
            None => {
                // No host work: the destage policy decides whether to destage now.
                let Some(c) = self.cache.as_mut() else {
                    return;
                };
                let level = c.gate.level();
                let dq = d.destage.as_mut().expect("a destage queue per disk");
                match dq.pick(now, &d.head, &self.drive, level) {
                    Some(b) => {
                        let mut ids = b.requests.iter().map(|r| r.id as usize);
                        let first = ids.next().expect("a batch starts a destage");
                        (first, ids.collect(), b.requests[0].queued_at)
                    }
                    None => {
                        if !dq.is_empty() && !c.declined.contains(&disk) {
                            c.declined.push(disk);
                        }
                        return;
                    }
                }
            }
        };
        let (kind, op) = (self.ops[id].kind, self.ops[id].op);
        match kind {
            Kind::Read => {
                let o = &self.ops[id];
                let (slot, lba, sectors) = (o.slot.expect("a host read"), o.lba, o.sectors);
                self.describe_read(slot, disk, lba, sectors);
            }
            Kind::DestageWrite(_) => {
                for &o in std::iter::once(&id).chain(&batch) {
                    let (lba, sectors) = (self.ops[o].lba, self.ops[o].sectors);
                    self.describe_destage_write(disk, lba, sectors);
                }
            }
            _ => {}
        }
        let mut runs = Vec::with_capacity(1 + batch.len());
        for &o in std::iter::once(&id).chain(&batch) {
            runs.push(Run {
                lba: self.ops[o].lba,
                sectors: self.ops[o].sectors,
            });
        }
        let d = &mut self.disks[disk];
        // A disk in a low-power state first comes back: the operation starts then.
        let now = d.clock.wake(now);
        let rng = if self.noise { Some(&mut d.rng) } else { None };
        let access = if self.drive.cache().is_some() && runs.len() == 1 {
            // The drive's own controller serves it (`drive_buffers`: no write cache, so no
            // same-track batches).
            let xfer = Transfer {
                op,
                lba: runs[0].lba,
                sectors: runs[0].sectors,
            };
            d.ctl.serve_access(&self.drive, now, xfer, rng)
        } else {
            self.drive.access_runs(now, &d.head, op, &runs, None, rng)
        };
        let cause = match kind {
            Kind::Read => Cause::HostRead,
            Kind::OldRead(_) | Kind::NewWrite(_) => Cause::HostWrite,
            Kind::DestageRead(_) => Cause::DestageRead,
            Kind::DestageWrite(_) => Cause::DestageWrite,
            Kind::ReconRead(_) => Cause::HostRead,
            Kind::RebuildRead | Kind::RebuildWrite => Cause::Rebuild,
        };
        let until = access.end;
        d.clock.start(cause, now, until);
        d.busy = Some(InFlight {
            op: id,
            batch,
            access,
            started: now,
            queued_at,
            until,
            port_pending: op == Op::Read,
        });
        self.out.push(Action::DiskBusy { disk, until });
    }

    fn finish(&mut self, now: Nanos, disk: usize) {
        let d = &mut self.disks[disk];
        let f = d
            .busy
            .take()
            .unwrap_or_else(|| panic!("disk {disk} completed with nothing in flight"));
        assert_eq!(f.until, now, "disk {disk} completion at the wrong time");
        if f.port_pending {
            // The read's data crosses the read cache's write port; the disk stays busy.
            let sectors: u32 = std::iter::once(&f.op)
                .chain(&f.batch)
                .map(|&o| self.ops[o].sectors)
                .sum();
            let sector = u64::from(self.drive.geometry().sector_bytes());
            let until = self.port_transfer(now, u64::from(sectors) * sector);
            if until > now {
                let d = &mut self.disks[disk];
                d.clock.extend(until);
                d.busy = Some(InFlight {
                    until,
                    port_pending: false,
                    ..f
                });
                self.out.push(Action::DiskBusy { disk, until });
                return;
            }
        }
        let d = &mut self.disks[disk];
        d.clock.finish();
        d.head.cylinder = f.access.end_cylinder;
        d.head.head = f.access.end_head;
        if let (Kind::DestageWrite(_), Some(c)) = (self.ops[f.op].kind, self.cache.as_mut()) {
            c.counters.destage_writes += 1;
            c.counters.destage_write_ns += u128::from(f.access.end.since(f.started).0);
        }
        for &id in std::iter::once(&f.op).chain(&f.batch) {
            let op = self.ops.remove(id);
            debug_assert_eq!(op.disk, disk);
            match op.kind {
                Kind::Read => {
                    self.read_into_cache(disk, op.lba, op.sectors);
                    let slot = op.slot.expect("a host read answers a request");
                    self.part_done(now, slot, &f);
                }
                Kind::OldRead(u) => {
                    self.updates[u].left -= 1;
                    if self.updates[u].left == 0 {
                        self.start_phase(now, u, Kind::NewWrite(u));
                    }
                }
                Kind::NewWrite(u) => {
                    self.count_disk_write(op.sectors);
                    self.updates[u].left -= 1;
                    if self.updates[u].left == 0 {
                        let done = self.updates.remove(u);
                        self.update_done(&done);
                        self.invalidate_written(&done.written);
                        self.part_done(now, done.slot, &f);
                        self.release_stripe(now, done.key);
                    }
                }
                Kind::DestageRead(r) => self.destage_read_done(now, r, disk, &op),
                Kind::DestageWrite(r) => self.destage_write_done(now, r, disk, &op),
                Kind::ReconRead(j) => self.recon_read_done(now, j, &f),
                Kind::RebuildRead | Kind::RebuildWrite => self.rebuild_op_done(now, op.kind),
            }
        }
        self.out.mark_for_dispatch(disk);
        self.disk_idle_check(now, disk);
    }

    fn part_done(&mut self, now: Nanos, slot: usize, f: &InFlight) {
        let breakdown = |_: &HostSlot<bool>| Breakdown::of(&f.access, f.started.since(f.queued_at));
        if let Some((c, s)) = self.host.part_done(slot, now, breakdown) {
            self.deliver(now, c, s.extra);
        }
    }
}

impl Engine for Raid5Array {
    fn handle(&mut self, now: Nanos, ev: Event) {
        self.out.advance(now);
        self.fail_if_due(now);
        match ev {
            Event::Host(req) => self.accept(now, req),
            Event::DiskDone { disk } => self.finish(now, disk),
            Event::Wake => {
                self.wake(now);
                self.deliver_due(now);
            }
        }
    }

    fn poll_action(&mut self) -> Option<Action> {
        if let Some(due) = self.out.due() {
            let now = self.out.now();
            for &disk in &due {
                if self.disks[disk].busy.is_none() {
                    self.start_next(now, disk);
                }
            }
            self.out.dispatched(due);
        }
        self.out.pop()
    }

    fn outstanding(&self) -> usize {
        self.host.outstanding() + self.channel.held()
    }

    fn capacity_sectors(&self) -> u64 {
        self.layout.capacity_sectors()
    }

    fn disk_count(&self) -> usize {
        self.disks.len()
    }

    fn sector_bytes(&self) -> u32 {
        self.drive.geometry().sector_bytes()
    }

    /// With the write cache, whole 4 KiB blocks (the cache's unit: a partial block would
    /// need the rest of it read first); otherwise a sector.
    fn io_align_bytes(&self) -> u32 {
        if self.cache.is_some() {
            BLOCK_BYTES
        } else {
            self.sector_bytes()
        }
    }

    fn busy(&self, disk: usize, t: Nanos) -> Busy {
        self.disks[disk].clock.busy(t)
    }
    fn power(&self, disk: usize, t: Nanos) -> Option<crate::drive::PowerTotals> {
        self.disks[disk].clock.power(t)
    }
    fn power_command(&mut self, now: Nanos, disk: usize, cmd: crate::drive::PowerCommand) {
        self.disks[disk].clock.command(now, cmd);
    }

    /// Destage reads and writes queued or running, and the write-cache blocks holding data
    /// or parity newer than the disks. O(operations in flight).
    fn backlog(&self) -> Backlog {
        let sector = u64::from(self.drive.geometry().sector_bytes());
        let mut b = Backlog {
            nvram_entries: self.cache.as_ref().map_or(0, |c| c.write.occupied() as u64),
            ..Backlog::default()
        };
        for op in self.ops.iter() {
            if matches!(
                op.kind,
                Kind::DestageRead(_)
                    | Kind::DestageWrite(_)
                    | Kind::RebuildRead
                    | Kind::RebuildWrite
            ) {
                b.ops += 1;
                b.bytes += u64::from(op.sectors) * sector;
            }
        }
        b
    }

    fn cache(&self, t: Nanos) -> Option<CacheCounters> {
        self.cache_counters(t)
    }

    fn rebuild(&self) -> Option<crate::engine::RebuildStatus> {
        self.rebuild_status()
    }

    fn enable_data_moves(&mut self) -> bool {
        self.enable_data()
    }

    fn poll_data(&mut self) -> Option<crate::engine::DataMove> {
        self.next_move()
    }

    fn poll_nvram(&mut self) -> Option<crate::engine::NvramWrite> {
        self.next_nvram()
    }

    fn recover(
        &mut self,
        nvram: &[u8],
        _read: &mut crate::engine::DiskReader<'_>,
    ) -> Result<Vec<crate::engine::DataMove>, crate::engine::RecoverError> {
        self.recover_image(nvram)
    }

    fn counters(&self, disk: usize) -> DiskCounters {
        let d = &self.disks[disk];
        DiskCounters {
            ops: d.clock.ops(),
            propagations: 0,
            map_logging: Span::ZERO,
            sched: d.queue.stats(),
        }
    }
}

#[cfg(test)]
mod tests;
