//! The logical-to-physical map's persistence (EW-Array paper, 5.2): the in-memory map, the
//! NVRAM that buffers map entry updates, the map log region on disk with incremental
//! checkpoints in M portions, and recovery. Pure bookkeeping: no clock, no disk timing.
//!
//! # Lifecycle and call order
//!
//! 1. [`MapLog::new`] formats the region: the map given is the *initial checkpoint*, all M
//!    portions written at format time (before the run, so it costs no simulated time). The
//!    controller reserves [`MapLog::region_sectors`] sectors and needs no special case.
//! 2. Every eager write that moves a replica calls [`MapLog::update`]. The update is durable
//!    at once (NVRAM); the returned [`Append`]s are disk writes the controller issues at
//!    `region_start_lba + offset_sectors` ("map logging" in utilisation). `Err(NvramFull)`:
//!    NVRAM has no free buffer because earlier appends are still in flight; nothing changed,
//!    the host write stays unacknowledged and is retried after an [`MapLog::append_done`].
//! 3. When an append's write completes, [`MapLog::append_done`].
//! 4. A crash: [`MapLog::crash`] is what survives; [`MapLog::recover`] rebuilds the map from it
//!    and says how many region sectors it read (the controller times that read).
//!
//! # Formats (sizes are what a real controller would store)
//!
//! - **Map entry** ([`ENTRY_BYTES`] = 4): one physical block per logical block per replica
//!   (5.2.1). A checkpoint portion is its blocks' entries, keys implicit.
//! - **Update record** ([`RECORD_BYTES`] = 8): the entry's index (`block × replicas +
//!   replica`, u32, so the map has at most `u32::MAX` entries) and the new physical block
//!   (u32). Records are absolute values, so replaying one twice is harmless.
//! - **NVRAM** (`nvram_bytes`, all of it counted): a [`NVRAM_HEADER_BYTES`] = 64 header (the
//!   recovery pointer: offset u64 + sequence number u64; per buffer its sequence number u64,
//!   record count u32 and state u32; the write head u64; next portion and appends since the
//!   last checkpoint, u32 each) and two equal update buffers of `R = (nvram_bytes − 64) / 16`
//!   records (double buffering). The default 100 KB gives R = 6396.
//! - **Append** ([`APPEND_HEADER_BYTES`] = 32 + R records + optionally one checkpoint portion,
//!   rounded up to sectors): the header holds a magic number, the record count, the
//!   append's sequence number, the checkpoint's portion (or none) and a checksum over header
//!   and body, so a torn append reads as invalid. The simulator does not model bytes: a torn
//!   append is simply absent from the region image. A driver that moves real bytes gets
//!   them from [`MapLog::append_bytes`] and [`MapLog::region_image`], in the byte layout
//!   below, and recovers with [`MapLog::recover_image`].
//!
//! # Byte layout (little-endian)
//!
//! **Append**, at its region offset, `sectors` sectors:
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic [`APPEND_MAGIC`] (`"SPNDLMAP"`) |
//! | 8..16 | sequence number u64 |
//! | 16..20 | record count u32 (≤ R) |
//! | 20..24 | checkpoint portion u32 ([`NO_PORTION`] = none) |
//! | 24..28 | CRC-32 (IEEE) over bytes 0..24 and the body |
//! | 28..32 | zero |
//! | 32.. | body: the records (entry u32, physical block u32), then the portion's entries (u32 each, in entry order) |
//! | .. | zero padding to the sector |
//!
//! **NVRAM** (the map log's part, [`MapLog::nvram_image_bytes`] = 64 + 2·R·8 bytes):
//!
//! | bytes | field |
//! |---|---|
//! | 0..16 | recovery pointer: region offset u64, sequence number u64 |
//! | 16..32, 32..48 | buffer 0, buffer 1: sequence number u64, record count u32, state u32 |
//! | 48..56 | write head u64 (where the next append goes, before the wrap rule) |
//! | 56..60 | next checkpoint portion u32 |
//! | 60..64 | appends since the last checkpoint u32 |
//! | 64.. | buffer 0's records (R × 8 bytes), then buffer 1's |
//!
//! The buffer holding sequence number s is buffer `s mod 2`. States: [`BUFFER_FREE`] (0),
//! [`BUFFER_OPEN`] (1, taking updates), [`BUFFER_SEALED`] (2, its append issued) and
//! [`BUFFER_SEALED`] + 1 + p (sealed, its append carries portion p). With the image on
//! ([`MapLog::enable_image`]) every change is an NVRAM write ([`MapLog::take_nvram_writes`]):
//! an update writes its record, then the whole 64-byte header (one write, so each change of
//! the header is atomic); any prefix of the writes is a state recovery accepts.
//!
//! # Double buffering
//!
//! Updates go into the *open* buffer. When it holds R records it is *sealed*: its append is
//! issued at once and its records stay in NVRAM until the append (and every older one) is
//! durable; new updates go into the other buffer. With both buffers sealed, `update` answers
//! `NvramFull`. Buffers are released in sequence order, so NVRAM always holds every record
//! newer than the last durable append, however the disk orders completions.
//!
//! # Checkpoint cadence
//!
//! Every K-th append carries the next portion, round robin. K = ⌈portion bytes / buffer
//! bytes⌉ (at least 1), so checkpoint bytes ≈ log bytes: the overhead is about twice the
//! log's alone, and the log a recovery reads is about two full maps (M portions plus M·K
//! buffers ≈ M portions). A smaller K trades overhead for a smaller region and a faster
//! recovery; this is the paper's "size and frequency" trade-off.
//! Portion p is blocks `[p·B/M, (p+1)·B/M)` with all their replicas. A checkpoint is the
//! portion as of its own append's last record (taken when the buffer is sealed).
//!
//! # Region, wrap and what is dead
//!
//! Appends are written one after another from sector 0; when the next append might not fit
//! (`head + C > region`, C the largest append) the log wraps to sector 0. Recovery applies
//! the same rule, so it needs no pointer per append. The paper's "youngest valid checkpoint"
//! is the youngest *complete* one: the M youngest durable portions. The NVRAM pointer names
//! the append carrying the oldest of them (the M-th youngest portion checkpoint); every
//! record older than it is dead, its space free for new appends.
//!
//! *Why the writer never overwrites a needed record:* at most two appends are unreleased
//! (two buffers), all older ones are durable, and portion checkpoints are K appends apart.
//! So the live appends, from the pointer to the newest, number at most M·K + 2, of which at
//! most M + 1 carry a checkpoint (M + 2 when K = 1). With L the size of a plain append and
//! C of one with a checkpoint:
//!
//! `region = n_c·C + (M·K + 2 − n_c)·L + (C − 1)`,  `n_c = M + 1 (+1 if K = 1)`;
//!
//! the last term is the wrap's unused tail (< C), met at most once by the live span.
//! `MapLog` asserts the property at every placement. For 2 197 266 blocks (9 GB of 4 KB
//! blocks) × 2 replicas, 100 KB NVRAM, M = 4, 512-byte sectors: R = 6396, L = 100, portion
//! 4 394 536 bytes, K = 86, C = 8684, region = 86 203 sectors (42 MiB, 2.5 maps of 34 332
//! sectors); one log cycle (K appends, one with a checkpoint) is 17 184 sectors for 550 056
//! updates: 0.031 sectors (16 bytes) per update, 0.39 % of the 8 sectors a 4 KB replica write
//! moves. Recovery reads at most `region − (C − 1)` = 77 520 sectors (the test measured
//! 60 237 after two cycles).
//!
//! # Crash model and recovery
//!
//! What survives ([`Persistent`]): NVRAM (pointer + both buffers) and the region image, the
//! appends that completed. An append in flight is torn: absent, and whatever older appends
//! it overlapped are destroyed (they are dead, see above). Recovery reads from the pointer,
//! following the wrap rule, while each header carries the next sequence number (sequence
//! numbers never repeat, so a stale append from an earlier wrap, or a torn one, ends the
//! chain); it applies records and portions in order, then replays NVRAM's buffers. It checks
//! that the chain reaches NVRAM's oldest buffer and that all M portions were found. Sectors
//! read = the chain's appends + the one header sector that ends it; the unused tail before a
//! wrap is skipped. An append's id is its sequence number.
//!
//! From real bytes, [`MapLog::recover_image`] does the same, with a torn append (its
//! checksum fails) or a stale one (another sequence number) ending the chain, and returns a
//! log that *continues*: every append of the chain is durable, so released; the pointer is
//! the oldest of the chain's M youngest checkpoints; NVRAM's sealed buffers not in the chain
//! are issued again with the same sequence number, place and bytes (a checkpoint's portion
//! is rebuilt as of its buffer's last record), so whatever part of them reached the region
//! is overwritten by the same bytes; the open buffer stays open. Sequence numbers never
//! repeat across recoveries.
//!
//! The paper's replicated region is the controller's: it writes each append to every copy
//! (`array.map_log_replicas`), and [`RecoveredLog::unconfirmed`] names the appends the copy
//! read holds that another copy may lack. Not done here: merging repeated updates of one
//! entry in NVRAM, replicating NVRAM.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::Arc;

mod l2p;
pub use l2p::{L2pMap, MapView, Placement, PAGE_ENTRIES};

/// The paper's NVRAM size (5.2.2).
pub const DEFAULT_NVRAM_BYTES: u64 = 100 * 1024;
/// The paper's M (Figure 7).
pub const DEFAULT_PORTIONS: u32 = 4;
pub const DEFAULT_SECTOR_BYTES: u32 = 512;
/// A map entry's on-disk size: 4 bytes per block per replica (paper 5.2.1).
pub const ENTRY_BYTES: u64 = 4;
/// Physical block number meaning "no location" (e.g. a replica not yet written).
pub const NOWHERE: u32 = u32::MAX;
/// An update record: entry index (u32) + physical block (u32).
pub const RECORD_BYTES: u64 = 8;
/// An append's header: magic, record count, sequence number, portion, checksum.
pub const APPEND_HEADER_BYTES: u64 = 32;
/// NVRAM's fixed part: recovery pointer, buffer descriptors, write head, cadence state.
pub const NVRAM_HEADER_BYTES: u64 = 64;
/// Update buffers in NVRAM (double buffering).
pub const NVRAM_BUFFERS: usize = 2;
/// An append header's first 8 bytes.
pub const APPEND_MAGIC: [u8; 8] = *b"SPNDLMAP";
/// An append header's portion field when the append carries no checkpoint.
pub const NO_PORTION: u32 = u32::MAX;
/// NVRAM buffer states (module doc, byte layout).
pub const BUFFER_FREE: u32 = 0;
pub const BUFFER_OPEN: u32 = 1;
pub const BUFFER_SEALED: u32 = 2;

/// How the map is made persistent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapLogConfig {
    /// All of NVRAM: header plus two update buffers.
    pub nvram_bytes: u64,
    /// M: the map is checkpointed in this many portions.
    pub portions: u32,
    pub sector_bytes: u32,
}

impl Default for MapLogConfig {
    fn default() -> Self {
        MapLogConfig {
            nvram_bytes: DEFAULT_NVRAM_BYTES,
            portions: DEFAULT_PORTIONS,
            sector_bytes: DEFAULT_SECTOR_BYTES,
        }
    }
}

fn ix(x: u64) -> usize {
    usize::try_from(x).expect("map index fits usize")
}

/// The sizes everything is derived from (see the module doc for the formulas).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapLogGeometry {
    pub logical_blocks: u32,
    pub replicas: u32,
    /// M.
    pub portions: u32,
    pub sector_bytes: u32,
    /// R: update records per NVRAM buffer.
    pub records_per_buffer: u32,
    /// ⌈B / M⌉: the largest portion.
    pub portion_blocks_max: u32,
    /// K: every K-th append carries a checkpoint portion.
    pub checkpoint_every: u32,
    /// L: a full buffer's append without a checkpoint.
    pub log_append_sectors: u64,
    /// C: a full buffer's append with the largest portion; the largest append.
    pub checkpoint_append_sectors: u64,
    pub region_sectors: u64,
}

impl MapLogGeometry {
    /// Errors name the impossible values.
    pub fn new(
        cfg: &MapLogConfig,
        logical_blocks: u32,
        replicas: u32,
    ) -> Result<MapLogGeometry, String> {
        let m = cfg.portions;
        if cfg.sector_bytes == 0 {
            return Err("map log: sector_bytes = 0: must be > 0".into());
        }
        if logical_blocks == 0 || replicas == 0 {
            return Err(format!(
                "map log: the map is empty ({logical_blocks} logical blocks × {replicas} replicas)"
            ));
        }
        let entries = u64::from(logical_blocks) * u64::from(replicas);
        if entries > u64::from(u32::MAX) {
            return Err(format!(
                "map log: {logical_blocks} blocks × {replicas} replicas = {entries} entries: \
                 an update record's 32-bit key names at most {}",
                u32::MAX
            ));
        }
        if m == 0 {
            return Err("map log: portions = 0: need at least one portion".into());
        }
        if m > u32::MAX - (BUFFER_SEALED + 1) {
            return Err(format!("map log: portions = {m} is too large"));
        }
        if m > logical_blocks {
            return Err(format!(
                "map log: portions = {m} > {logical_blocks} logical blocks: a portion needs a block"
            ));
        }
        let need = NVRAM_HEADER_BYTES + NVRAM_BUFFERS as u64 * RECORD_BYTES;
        if cfg.nvram_bytes < need {
            return Err(format!(
                "map log: nvram_bytes = {} is too small: the {NVRAM_HEADER_BYTES}-byte header \
                 and two buffers of one {RECORD_BYTES}-byte update record need {need}",
                cfg.nvram_bytes
            ));
        }
        let records =
            (cfg.nvram_bytes - NVRAM_HEADER_BYTES) / (NVRAM_BUFFERS as u64 * RECORD_BYTES);
        let records_per_buffer = u32::try_from(records)
            .map_err(|_| format!("map log: nvram_bytes = {} is too large", cfg.nvram_bytes))?;
        let portion_blocks_max = logical_blocks.div_ceil(m);
        let buffer_bytes = records * RECORD_BYTES;
        let portion_bytes = u64::from(portion_blocks_max) * u64::from(replicas) * ENTRY_BYTES;
        let k = portion_bytes.div_ceil(buffer_bytes).max(1);
        let checkpoint_every = u32::try_from(k).expect("k <= portion bytes / 8 fits u32");
        let sector = u64::from(cfg.sector_bytes);
        let log_append_sectors = (APPEND_HEADER_BYTES + buffer_bytes).div_ceil(sector);
        let c = (APPEND_HEADER_BYTES + buffer_bytes + portion_bytes).div_ceil(sector);
        if c > u64::from(u32::MAX) {
            return Err(format!(
                "map log: an append of {c} sectors is too large (sector_bytes = {})",
                cfg.sector_bytes
            ));
        }
        // Live appends: at most M·K + 2, of which n_c carry a checkpoint (module doc).
        let n_c = u64::from(m) + 1 + u64::from(k == 1);
        let live = u64::from(m) * k + 2;
        let region_sectors = n_c
            .checked_mul(c)
            .and_then(|x| x.checked_add((live - n_c).checked_mul(log_append_sectors)?))
            .and_then(|x| x.checked_add(c - 1))
            .ok_or_else(|| "map log: the region size overflows 64 bits".to_string())?;
        Ok(MapLogGeometry {
            logical_blocks,
            replicas,
            portions: m,
            sector_bytes: cfg.sector_bytes,
            records_per_buffer,
            portion_blocks_max,
            checkpoint_every,
            log_append_sectors,
            checkpoint_append_sectors: c,
            region_sectors,
        })
    }

    fn entries(&self) -> u64 {
        u64::from(self.logical_blocks) * u64::from(self.replicas)
    }

    /// Portion `p`'s entries, as a range of entry indices.
    fn portion_entries(&self, p: u32) -> std::ops::Range<usize> {
        let b = u64::from(self.logical_blocks);
        let m = u64::from(self.portions);
        let r = u64::from(self.replicas);
        let lo = u64::from(p) * b / m;
        let hi = (u64::from(p) + 1) * b / m;
        ix(lo * r)..ix(hi * r)
    }

    /// An append's size: header, `records` update records, `checkpoint_entries` map entries.
    fn append_sectors(&self, records: usize, checkpoint_entries: usize) -> u64 {
        let bytes = APPEND_HEADER_BYTES
            + records as u64 * RECORD_BYTES
            + checkpoint_entries as u64 * ENTRY_BYTES;
        bytes.div_ceil(u64::from(self.sector_bytes))
    }

    /// Where an append may start, given the write head: the wrap rule both writer and
    /// recovery apply.
    fn placed_at(&self, head: u64) -> u64 {
        if head + self.checkpoint_append_sectors > self.region_sectors {
            0
        } else {
            head
        }
    }
}

/// NVRAM had no free buffer; nothing changed. Retry after an [`MapLog::append_done`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvramFull;

impl fmt::Display for NvramFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("map log NVRAM full: both buffers await their appends")
    }
}

impl std::error::Error for NvramFull {}

/// One write the controller must perform in the map log region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Append {
    /// The append's sequence number; pass it to [`MapLog::append_done`].
    pub id: u64,
    /// From the region's start.
    pub offset_sectors: u64,
    pub sectors: u32,
    /// The map portion this append checkpoints, if any.
    pub checkpoint: Option<u32>,
    pub update_count: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record {
    entry: u32,
    phys: u32,
}

/// A map portion as of its append's last record (the map's pages then, shared).
#[derive(Clone, Debug)]
struct Snapshot {
    portion: u32,
    phys: MapView,
}

/// An append's content, as written to the region.
#[derive(Clone, Debug)]
struct Written {
    seq: u64,
    sectors: u64,
    records: Arc<[Record]>,
    checkpoint: Option<Snapshot>,
}

/// The region's readable content: completed appends by starting sector, never overlapping.
#[derive(Clone, Debug, Default)]
struct Region {
    appends: BTreeMap<u64, Written>,
}

impl Region {
    /// Destroys whatever overlaps `[at, at + sectors)`; returns the destroyed sequence numbers'
    /// maximum, if any.
    fn tear(&mut self, at: u64, sectors: u64) -> Option<u64> {
        let hit: Vec<u64> = self
            .appends
            .range(..at + sectors)
            .rev()
            .take_while(|(&o, w)| o + w.sectors > at)
            .map(|(&o, _)| o)
            .collect();
        hit.iter()
            .filter_map(|o| self.appends.remove(o))
            .map(|w| w.seq)
            .max()
    }

    /// Writes `w` at `at`; returns [`Region::tear`]'s answer for what it overwrote.
    fn write(&mut self, at: u64, w: Written) -> Option<u64> {
        let overwritten = self.tear(at, w.sectors);
        self.appends.insert(at, w);
        overwritten
    }
}

/// Where an append lives, by sequence number and starting sector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LogPos {
    seq: u64,
    offset: u64,
}

#[derive(Clone, Debug)]
struct NvramBuffer {
    seq: u64,
    records: Arc<[Record]>,
}

/// What survives a crash: NVRAM (recovery pointer and update buffers) and the region's
/// completed appends. Only [`MapLog::recover`] reads it.
#[derive(Clone)]
pub struct Persistent {
    /// The append holding the oldest of the M youngest durable portion checkpoints.
    start: LogPos,
    /// Unreleased buffers, oldest first: sealed ones, then the open one if a slot is free.
    buffers: Vec<NvramBuffer>,
    region: Region,
}

impl Persistent {
    /// NVRAM in use: header plus buffered records.
    pub fn nvram_bytes_used(&self) -> u64 {
        let records: usize = self.buffers.iter().map(|b| b.records.len()).sum();
        NVRAM_HEADER_BYTES + records as u64 * RECORD_BYTES
    }
}

impl fmt::Debug for Persistent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Persistent")
            .field("start", &self.start)
            .field("nvram_bytes_used", &self.nvram_bytes_used())
            .field("region_appends", &self.region.appends.len())
            .finish()
    }
}

/// An append issued and not yet released (its buffer still in NVRAM).
#[derive(Debug)]
struct Sealed {
    offset: u64,
    written: Written,
    done: bool,
}

/// Counters since creation (the format is counted apart).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapLogStats {
    /// Updates accepted.
    pub updates: u64,
    /// `update` calls answered `NvramFull`.
    pub refused: u64,
    pub appends: u64,
    /// Appends carrying a portion.
    pub checkpoints: u64,
    pub sectors_appended: u64,
    /// The part of `sectors_appended` due to portions.
    pub checkpoint_sectors: u64,
    /// Times the write head went back to sector 0.
    pub wraps: u64,
    /// High-water mark of the live appends' sectors (from the pointer's append to the newest,
    /// in flight included): at most `region_sectors − (C − 1)`, the wrap's slack.
    pub live_sectors_max: u64,
    /// High-water mark of NVRAM in use, header included.
    pub nvram_bytes_max: u64,
    /// The initial checkpoint, written before the run.
    pub format_sectors: u64,
}

/// The map and its persistence: NVRAM buffers, appends in flight, the region's layout.
pub struct MapLog {
    geo: MapLogGeometry,
    map: L2pMap,
    /// The open buffer.
    open: Vec<Record>,
    /// Issued, not yet released; oldest first, at most two.
    sealed: VecDeque<Sealed>,
    next_seq: u64,
    /// Where the next append goes (before the wrap rule).
    head: u64,
    appends_since_checkpoint: u32,
    next_portion: u32,
    /// The M youngest released portion checkpoints, oldest first; the front is the pointer.
    checkpoints: VecDeque<LogPos>,
    /// Appends recovery may need, oldest first: from the pointer on, in flight included.
    live: VecDeque<(LogPos, u64)>,
    region: Region,
    stats: MapLogStats,
    /// The NVRAM byte image, when a driver moves real bytes.
    image: Option<Image>,
}

/// NVRAM writes not yet taken, and the header as last written.
#[derive(Debug)]
struct Image {
    writes: Vec<(u64, Vec<u8>)>,
    header: [u8; NVRAM_HEADER_BYTES as usize],
}

impl fmt::Debug for MapLog {
    // The map and the region image are large: show the state that matters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapLog")
            .field("geometry", &self.geo)
            .field("start", &self.start())
            .field("next_seq", &self.next_seq)
            .field("head", &self.head)
            .field("in_flight", &self.in_flight().collect::<Vec<_>>())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl MapLog {
    /// Formats the region with `initial` as the initial checkpoint. Errors (naming the
    /// values) for impossible configurations.
    pub fn new(cfg: MapLogConfig, initial: L2pMap) -> Result<MapLog, String> {
        let geo = MapLogGeometry::new(&cfg, initial.logical_blocks(), initial.replicas())?;
        let mut log = MapLog {
            geo,
            map: initial,
            open: Vec::with_capacity(ix(u64::from(geo.records_per_buffer))),
            sealed: VecDeque::with_capacity(NVRAM_BUFFERS),
            next_seq: 0,
            head: 0,
            appends_since_checkpoint: 0,
            next_portion: 0,
            checkpoints: VecDeque::with_capacity(ix(u64::from(geo.portions)) + 1),
            live: VecDeque::new(),
            region: Region::default(),
            stats: MapLogStats::default(),
            image: None,
        };
        for p in 0..geo.portions {
            let seq = log.next_seq;
            log.next_seq += 1;
            let checkpoint = Some(log.snapshot(p));
            let sectors = geo.append_sectors(0, log.geo.portion_entries(p).len());
            let offset = log.place(seq, sectors);
            let w = Written {
                seq,
                sectors,
                records: Arc::from([]),
                checkpoint,
            };
            assert!(
                log.region.write(offset, w).is_none(),
                "format overlaps itself"
            );
            log.checkpoints.push_back(LogPos { seq, offset });
            log.stats.format_sectors += sectors;
        }
        log.stats.nvram_bytes_max = NVRAM_HEADER_BYTES;
        assert_eq!(log.checkpoints.len(), ix(u64::from(geo.portions)));
        Ok(log)
    }

    /// Size of the on-disk log region in sectors (module doc: the formula).
    pub fn region_sectors(&self) -> u64 {
        self.geo.region_sectors
    }

    pub fn geometry(&self) -> &MapLogGeometry {
        &self.geo
    }

    /// The live map.
    pub fn map(&self) -> &L2pMap {
        &self.map
    }

    pub fn stats(&self) -> MapLogStats {
        self.stats
    }

    /// Appends issued and not yet reported done.
    pub fn in_flight(&self) -> impl Iterator<Item = u64> + '_ {
        self.sealed
            .iter()
            .filter(|s| !s.done)
            .map(|s| s.written.seq)
    }

    pub fn nvram_bytes_used(&self) -> u64 {
        let sealed: usize = self.sealed.iter().map(|s| s.written.records.len()).sum();
        NVRAM_HEADER_BYTES + (sealed + self.open.len()) as u64 * RECORD_BYTES
    }

    /// Block `block`'s replica `replica` now lives at `phys`: the map changes and the update
    /// is in NVRAM (durable at once). Returns the append to issue when this filled a buffer.
    /// `Err(NvramFull)` (nothing changed) while both buffers await their appends.
    /// Panics on a block or replica outside the map (a controller bug).
    pub fn update(
        &mut self,
        block: u32,
        replica: u32,
        phys: u32,
    ) -> Result<Vec<Append>, NvramFull> {
        let entry = self.map.entry(block, replica);
        if self.sealed.len() == NVRAM_BUFFERS {
            self.stats.refused += 1;
            return Err(NvramFull);
        }
        let entry = u32::try_from(entry).expect("entries fit u32 (checked by new)");
        self.map.set_entry(u64::from(entry), phys);
        let record = Record { entry, phys };
        if let Some(img) = self.image.as_mut() {
            let at =
                buffer_offset(&self.geo, self.next_seq) + self.open.len() as u64 * RECORD_BYTES;
            img.writes.push((at, record.bytes().to_vec()));
        }
        self.open.push(record);
        self.stats.updates += 1;
        self.stats.nvram_bytes_max = self.stats.nvram_bytes_max.max(self.nvram_bytes_used());
        assert!(self.open.len() <= ix(u64::from(self.geo.records_per_buffer)));
        let appends = if self.open.len() == ix(u64::from(self.geo.records_per_buffer)) {
            vec![self.seal()]
        } else {
            Vec::new()
        };
        self.write_header();
        Ok(appends)
    }

    /// Whether [`MapLog::update`] would answer `NvramFull` now.
    pub fn is_full(&self) -> bool {
        self.sealed.len() == NVRAM_BUFFERS
    }

    /// Append `id` is durable: once it and every older append are, their NVRAM buffers are
    /// released and a checkpoint among them moves the recovery pointer. Returns further
    /// appends to issue: always none in this design (every append is issued when sealed).
    /// Panics on an id not in flight (a controller bug).
    pub fn append_done(&mut self, id: u64) -> Vec<Append> {
        let s = self
            .sealed
            .iter_mut()
            .find(|s| s.written.seq == id)
            .unwrap_or_else(|| panic!("append_done({id}): no such append in flight"));
        assert!(!s.done, "append_done({id}) twice");
        s.done = true;
        let (offset, written) = (s.offset, s.written.clone());
        let overwritten = self.region.write(offset, written);
        // Placement checked the space was dead; the pointer has only moved on since.
        assert!(
            overwritten.is_none_or(|seq| seq < self.start().seq),
            "append {id} overwrote a live append"
        );
        while self.sealed.front().is_some_and(|s| s.done) {
            let s = self.sealed.pop_front().expect("front exists");
            if s.written.checkpoint.is_some() {
                self.checkpoints.push_back(LogPos {
                    seq: s.written.seq,
                    offset: s.offset,
                });
                if self.checkpoints.len() > ix(u64::from(self.geo.portions)) {
                    self.checkpoints.pop_front();
                }
            }
        }
        let start = self.start().seq;
        while self.live.front().is_some_and(|(p, _)| p.seq < start) {
            self.live.pop_front();
        }
        self.write_header();
        Vec::new()
    }

    /// What survives a crash right now: appends in flight are torn.
    pub fn crash(&self) -> Persistent {
        self.crash_with(&[])
    }

    /// [`MapLog::crash`], but the appends in flight listed in `landed` reached the disk before
    /// the crash (their completion not yet reported). Panics on an id not in flight.
    pub fn crash_with(&self, landed: &[u64]) -> Persistent {
        for id in landed {
            assert!(
                self.in_flight().any(|s| s == *id),
                "crash_with: {id} is not in flight"
            );
        }
        let mut region = self.region.clone();
        for s in self.sealed.iter().filter(|s| !s.done) {
            if landed.contains(&s.written.seq) {
                region.write(s.offset, s.written.clone());
            } else {
                region.tear(s.offset, s.written.sectors);
            }
        }
        let mut buffers: Vec<NvramBuffer> = self
            .sealed
            .iter()
            .map(|s| NvramBuffer {
                seq: s.written.seq,
                records: s.written.records.clone(),
            })
            .collect();
        if buffers.len() < NVRAM_BUFFERS {
            buffers.push(NvramBuffer {
                seq: self.next_seq,
                records: Arc::from(self.open.as_slice()),
            });
        }
        Persistent {
            start: self.start(),
            buffers,
            region,
        }
    }

    /// Rebuilds the map from what survived: reads the region from the NVRAM pointer while
    /// sequence numbers follow on, then replays NVRAM's buffers. Returns the map and the
    /// region sectors read (the appends, plus the one header sector that ends the chain).
    pub fn recover(
        p: &Persistent,
        cfg: &MapLogConfig,
        logical_blocks: u32,
        replicas: u32,
    ) -> Result<(L2pMap, u64), String> {
        let mut map = L2pMap::new(logical_blocks, replicas);
        let read = Self::recover_into(p, cfg, logical_blocks, replicas, Some(&mut map))?;
        Ok((map, read))
    }

    /// [`MapLog::recover`]'s checks and sectors read, without building the map (what a
    /// recovery would cost, not its result).
    pub fn recovery_sectors(
        p: &Persistent,
        cfg: &MapLogConfig,
        logical_blocks: u32,
        replicas: u32,
    ) -> Result<u64, String> {
        Self::recover_into(p, cfg, logical_blocks, replicas, None)
    }

    /// [`MapLog::recover`] into `map` (every entry is overwritten), or only its checks.
    fn recover_into(
        p: &Persistent,
        cfg: &MapLogConfig,
        logical_blocks: u32,
        replicas: u32,
        mut map: Option<&mut L2pMap>,
    ) -> Result<u64, String> {
        let geo = MapLogGeometry::new(cfg, logical_blocks, replicas)?;
        check_nvram(p, &geo)?;
        let mut found = vec![false; ix(u64::from(geo.portions))];
        let mut pos = p.start;
        let mut read = 0;
        if pos.offset >= geo.region_sectors {
            return Err(format!(
                "map log: the checkpoint pointer (sector {}) is outside the {}-sector region",
                pos.offset, geo.region_sectors
            ));
        }
        loop {
            let Some(w) = p
                .region
                .appends
                .get(&pos.offset)
                .filter(|w| w.seq == pos.seq)
            else {
                read += 1; // the header that ends the chain
                break;
            };
            if pos.offset + w.sectors > geo.region_sectors {
                return Err(format!(
                    "map log: append {} at sector {} runs past the region",
                    w.seq, pos.offset
                ));
            }
            read += w.sectors;
            replay(map.as_deref_mut(), &w.records, &geo)?;
            if let Some(c) = &w.checkpoint {
                let fits = c.portion < geo.portions
                    && c.phys.len() == geo.portion_entries(c.portion).len();
                if !fits {
                    return Err(format!(
                        "map log: append {}: checkpoint of portion {} with {} entries is \
                         not a portion of this map",
                        w.seq,
                        c.portion,
                        c.phys.len()
                    ));
                }
                if let Some(map) = map.as_deref_mut() {
                    map.copy_view(&c.phys);
                }
                found[ix(u64::from(c.portion))] = true;
            }
            pos = LogPos {
                seq: pos.seq + 1,
                offset: geo.placed_at(pos.offset + w.sectors),
            };
        }
        if pos.seq == p.start.seq {
            return Err(format!(
                "map log: no append {} at the checkpoint pointer (sector {})",
                p.start.seq, p.start.offset
            ));
        }
        let oldest = p.buffers[0].seq;
        if pos.seq < oldest {
            return Err(format!(
                "map log: records lost: the log ends before append {} but NVRAM starts at {oldest}",
                pos.seq
            ));
        }
        if let Some(missing) = found.iter().position(|f| !f) {
            return Err(format!(
                "map log: no checkpoint of portion {missing} from append {} on",
                p.start.seq
            ));
        }
        for b in &p.buffers {
            replay(map.as_deref_mut(), &b.records, &geo)?;
        }
        Ok(read)
    }

    fn start(&self) -> LogPos {
        *self
            .checkpoints
            .front()
            .expect("the format wrote M checkpoints")
    }

    /// Portion `p` of the live map (its pages shared, not copied).
    fn snapshot(&self, p: u32) -> Snapshot {
        let r = self.geo.portion_entries(p);
        Snapshot {
            portion: p,
            phys: self.map.view(r.start as u64, r.len() as u64),
        }
    }

    /// Chooses where append `seq` of `sectors` goes and records it as live. Asserts it
    /// overwrites nothing recovery may need.
    fn place(&mut self, seq: u64, sectors: u64) -> u64 {
        self.try_place(seq, sectors)
            .unwrap_or_else(|e| panic!("map log: {e}"))
    }

    /// [`MapLog::place`], or why append `seq` cannot go at the write head.
    fn try_place(&mut self, seq: u64, sectors: u64) -> Result<u64, String> {
        if sectors > self.geo.checkpoint_append_sectors {
            return Err(format!("append {seq} of {sectors} sectors is too large"));
        }
        let offset = self.geo.placed_at(self.head);
        let end = offset + sectors;
        if end > self.geo.region_sectors {
            return Err(format!("append {seq} runs past the region"));
        }
        for (p, n) in &self.live {
            if !(end <= p.offset || p.offset + n <= offset) {
                return Err(format!(
                    "append {seq} at [{offset}, {end}) would overwrite live append {} at {}",
                    p.seq, p.offset
                ));
            }
        }
        if offset != self.head {
            self.stats.wraps += 1;
        }
        self.live.push_back((LogPos { seq, offset }, sectors));
        let live: u64 = self.live.iter().map(|(_, n)| n).sum();
        self.stats.live_sectors_max = self.stats.live_sectors_max.max(live);
        self.head = end;
        Ok(offset)
    }

    /// Seals the open buffer: its append, with a portion every K-th time, is issued.
    fn seal(&mut self) -> Append {
        assert!(self.sealed.len() < NVRAM_BUFFERS);
        assert!(!self.open.is_empty());
        let seq = self.next_seq;
        self.next_seq += 1;
        let records: Arc<[Record]> = Arc::from(std::mem::take(&mut self.open));
        self.open = Vec::with_capacity(ix(u64::from(self.geo.records_per_buffer)));
        self.appends_since_checkpoint += 1;
        let checkpoint = if self.appends_since_checkpoint == self.geo.checkpoint_every {
            self.appends_since_checkpoint = 0;
            let p = self.next_portion;
            self.next_portion = (p + 1) % self.geo.portions;
            Some(self.snapshot(p))
        } else {
            None
        };
        let entries = checkpoint.as_ref().map_or(0, |c| c.phys.len());
        let sectors = self.geo.append_sectors(records.len(), entries);
        let offset = self.place(seq, sectors);
        self.stats.appends += 1;
        self.stats.sectors_appended += sectors;
        if checkpoint.is_some() {
            self.stats.checkpoints += 1;
            self.stats.checkpoint_sectors += sectors - self.geo.append_sectors(records.len(), 0);
        }
        let append = Append {
            id: seq,
            offset_sectors: offset,
            sectors: u32::try_from(sectors).expect("C fits u32 (checked by new)"),
            checkpoint: checkpoint.as_ref().map(|c| c.portion),
            update_count: u32::try_from(records.len()).expect("R fits u32"),
        };
        self.sealed.push_back(Sealed {
            offset,
            written: Written {
                seq,
                sectors,
                records,
                checkpoint,
            },
            done: false,
        });
        append
    }
}

/// A map log rebuilt from its byte images by [`MapLog::recover_image`], ready to continue.
#[derive(Debug)]
pub struct RecoveredLog {
    pub log: MapLog,
    /// Appends whose buffers NVRAM still holds and which may not have reached the region:
    /// issue them again (same sequence number, place and bytes as the first time).
    pub reissue: Vec<Append>,
    /// Appends of the chain whose buffers NVRAM still held sealed, as (offset in sectors,
    /// bytes): durable in the region read, but another copy of the region (the paper's
    /// replicated region) may lack them; a controller with copies writes them there too.
    pub unconfirmed: Vec<(u64, Vec<u8>)>,
    /// Region sectors read (the chain from the pointer, and the header that ends it).
    pub sectors_read: u64,
}

/// Reads whole sectors of the map log region: `(offset in sectors, buffer)`.
pub type RegionReader<'a> = dyn FnMut(u64, &mut [u8]) -> Result<(), String> + 'a;

impl MapLog {
    /// Turns the NVRAM byte image on: from now on every change of NVRAM is a write for
    /// [`MapLog::take_nvram_writes`]. Returns the writes that make up the whole image now
    /// (header and live buffers), offsets from the start of the map log's NVRAM.
    pub fn enable_image(&mut self) -> Vec<(u64, Vec<u8>)> {
        let header = self.nvram_header();
        let mut writes = vec![(0, header.to_vec())];
        let sealed = self
            .sealed
            .iter()
            .map(|s| (s.written.seq, &s.written.records[..]));
        let open = (self.sealed.len() < NVRAM_BUFFERS).then_some((self.next_seq, &self.open[..]));
        for (seq, records) in sealed.chain(open) {
            if !records.is_empty() {
                let bytes: Vec<u8> = records.iter().flat_map(|r| r.bytes()).collect();
                writes.push((buffer_offset(&self.geo, seq), bytes));
            }
        }
        self.image = Some(Image {
            writes: Vec::new(),
            header,
        });
        writes
    }

    /// The NVRAM writes since the last call, in order (offsets from the start of the map
    /// log's NVRAM). Empty while the image is off.
    pub fn take_nvram_writes(&mut self) -> Vec<(u64, Vec<u8>)> {
        self.image
            .as_mut()
            .map(|img| std::mem::take(&mut img.writes))
            .unwrap_or_default()
    }

    /// Size of the map log's part of NVRAM: header and two buffers of R records (at most
    /// `nvram_bytes`).
    pub fn nvram_image_bytes(&self) -> u64 {
        nvram_image_bytes(&self.geo)
    }

    /// The bytes of append `id` (in flight), padded to its sectors. Panics on an id not in
    /// flight (a controller bug).
    pub fn append_bytes(&self, id: u64) -> Vec<u8> {
        let s = self
            .sealed
            .iter()
            .find(|s| s.written.seq == id)
            .unwrap_or_else(|| panic!("append_bytes({id}): no such append in flight"));
        encode_append(&s.written, &self.geo)
    }

    /// Every append the region holds now, as (offset in sectors, bytes): after
    /// [`MapLog::new`], the format (the initial checkpoint) to write before the first event.
    pub fn region_image(&self) -> Vec<(u64, Vec<u8>)> {
        self.region
            .appends
            .iter()
            .map(|(&offset, w)| (offset, encode_append(w, &self.geo)))
            .collect()
    }

    /// Writes the header to the image if it changed.
    fn write_header(&mut self) {
        if self.image.is_none() {
            return;
        }
        let h = self.nvram_header();
        let img = self.image.as_mut().expect("image on");
        if img.header != h {
            img.header = h;
            img.writes.push((0, h.to_vec()));
        }
    }

    /// The NVRAM header for the current state (module doc, byte layout).
    fn nvram_header(&self) -> [u8; NVRAM_HEADER_BYTES as usize] {
        let mut h = [0u8; NVRAM_HEADER_BYTES as usize];
        let p = self.start();
        put_u64(&mut h, 0, p.offset);
        put_u64(&mut h, 8, p.seq);
        let mut describe = |seq: u64, count: usize, state: u32| {
            let at = 16 + 16 * (seq % NVRAM_BUFFERS as u64) as usize;
            put_u64(&mut h, at, seq);
            put_u32(&mut h, at + 8, u32::try_from(count).expect("R fits u32"));
            put_u32(&mut h, at + 12, state);
        };
        for s in &self.sealed {
            let state = match &s.written.checkpoint {
                None => BUFFER_SEALED,
                Some(c) => BUFFER_SEALED + 1 + c.portion,
            };
            describe(s.written.seq, s.written.records.len(), state);
        }
        if self.sealed.len() < NVRAM_BUFFERS {
            describe(self.next_seq, self.open.len(), BUFFER_OPEN);
        }
        put_u64(&mut h, 48, self.head);
        put_u32(&mut h, 56, self.next_portion);
        put_u32(&mut h, 60, self.appends_since_checkpoint);
        h
    }

    /// Rebuilds the map log from its byte images, as a crash left them: `nvram` is the map
    /// log's part of NVRAM (zero beyond its end), `read` reads the region. Reads the chain
    /// of appends from the NVRAM pointer while each header carries the next sequence number
    /// and its checksum holds (a torn or stale append ends it), replays NVRAM's buffers, and
    /// returns a log that continues where the old one stopped, with the appends to issue
    /// again. Garbage gives an error, never a panic.
    pub fn recover_image(
        cfg: MapLogConfig,
        logical_blocks: u32,
        replicas: u32,
        nvram: &[u8],
        read: &mut RegionReader<'_>,
    ) -> Result<RecoveredLog, String> {
        let geo = MapLogGeometry::new(&cfg, logical_blocks, replicas)?;
        let nv = |at: u64, len: u64| -> Vec<u8> {
            let mut out = vec![0u8; ix(len)];
            let start = ix(at.min(nvram.len() as u64));
            let end = ix((at + len).min(nvram.len() as u64));
            out[..end - start].copy_from_slice(&nvram[start..end]);
            out
        };
        let h = nv(0, NVRAM_HEADER_BYTES);
        let pointer = LogPos {
            offset: get_u64(&h, 0),
            seq: get_u64(&h, 8),
        };
        struct Buf {
            seq: u64,
            count: u32,
            state: u32,
        }
        let mut bufs = Vec::new();
        for i in 0..NVRAM_BUFFERS {
            let at = 16 + 16 * i;
            let (seq, count, state) = (get_u64(&h, at), get_u32(&h, at + 8), get_u32(&h, at + 12));
            if state == BUFFER_FREE {
                continue;
            }
            if state > BUFFER_SEALED && state - BUFFER_SEALED > geo.portions {
                return Err(format!("map log: NVRAM buffer {i} has state {state}"));
            }
            if seq % NVRAM_BUFFERS as u64 != i as u64 {
                return Err(format!(
                    "map log: NVRAM buffer {i} holds sequence number {seq}"
                ));
            }
            if count > geo.records_per_buffer {
                return Err(format!(
                    "map log: NVRAM buffer {seq} holds {count} records, more than {}",
                    geo.records_per_buffer
                ));
            }
            bufs.push(Buf { seq, count, state });
        }
        bufs.sort_by_key(|b| b.seq);
        let (Some(oldest), Some(youngest)) = (bufs.first(), bufs.last()) else {
            return Err("map log: NVRAM holds no update buffer".into());
        };
        let (oldest, youngest) = (oldest.seq, youngest.seq);
        if youngest >= u64::MAX - NVRAM_BUFFERS as u64 {
            return Err(format!(
                "map log: NVRAM buffer sequence number {youngest} is out of range"
            ));
        }
        if youngest - oldest >= NVRAM_BUFFERS as u64 {
            return Err("map log: NVRAM buffers are not consecutive".into());
        }
        if bufs[..bufs.len() - 1]
            .iter()
            .any(|b| b.state == BUFFER_OPEN)
        {
            return Err("map log: an open NVRAM buffer is older than a sealed one".into());
        }
        if pointer.offset >= geo.region_sectors || pointer.seq >= oldest {
            return Err(format!(
                "map log: the checkpoint pointer (append {} at sector {}) is outside the \
                 {}-sector region or not older than NVRAM's buffers",
                pointer.seq, pointer.offset, geo.region_sectors
            ));
        }
        let head = get_u64(&h, 48);
        let next_portion = get_u32(&h, 56);
        let since = get_u32(&h, 60);
        if next_portion >= geo.portions || since >= geo.checkpoint_every {
            return Err(format!(
                "map log: NVRAM's cadence (portion {next_portion}, {since} appends since a \
                 checkpoint) does not fit M = {}, K = {}",
                geo.portions, geo.checkpoint_every
            ));
        }
        // The chain of appends from the pointer.
        let sb = u64::from(geo.sector_bytes);
        let header_sectors = APPEND_HEADER_BYTES.div_ceil(sb);
        let mut map = L2pMap::new(logical_blocks, replicas);
        let mut found = vec![false; ix(u64::from(geo.portions))];
        let mut chain: Vec<(LogPos, Written)> = Vec::new();
        let mut pos = pointer;
        let mut sectors_read = 0;
        while pos.offset + header_sectors <= geo.region_sectors
            && (chain.len() as u64) <= geo.region_sectors
        {
            let mut buf = vec![0u8; ix(header_sectors * sb)];
            read(pos.offset, &mut buf)?;
            sectors_read += header_sectors;
            let Some((seq, count, portion)) = parse_append_header(&buf) else {
                break;
            };
            let portion_ok = portion.is_none_or(|p| p < geo.portions);
            if seq != pos.seq || count > geo.records_per_buffer || !portion_ok {
                break;
            }
            let entries = portion.map_or(0, |p| geo.portion_entries(p).len());
            let sectors = geo.append_sectors(ix(u64::from(count)), entries);
            if pos.offset + sectors > geo.region_sectors {
                break;
            }
            buf.resize(ix(sectors * sb), 0);
            if sectors > header_sectors {
                read(
                    pos.offset + header_sectors,
                    &mut buf[ix(header_sectors * sb)..],
                )?;
                sectors_read += sectors - header_sectors;
            }
            let Some(w) = decode_append(&buf, &geo, sectors) else {
                break; // torn
            };
            replay(Some(&mut map), &w.records, &geo)?;
            if let Some(c) = &w.checkpoint {
                map.copy_view(&c.phys);
                found[ix(u64::from(c.portion))] = true;
            }
            chain.push((pos, w));
            if pos.seq > youngest {
                break; // nothing newer than NVRAM's buffers was ever written
            }
            pos = LogPos {
                seq: pos.seq + 1,
                offset: geo.placed_at(pos.offset + sectors),
            };
        }
        let end = pos.seq;
        let Some((last_pos, last)) = chain.last() else {
            return Err(format!(
                "map log: no append {} at the checkpoint pointer (sector {})",
                pointer.seq, pointer.offset
            ));
        };
        let chain_head = last_pos.offset + last.sectors;
        if oldest > end {
            return Err(format!(
                "map log: records lost: the log ends before append {end} but NVRAM starts at {oldest}"
            ));
        }
        if let Some(missing) = found.iter().position(|f| !f) {
            return Err(format!(
                "map log: no checkpoint of portion {missing} from append {} on",
                pointer.seq
            ));
        }
        // NVRAM's buffers, oldest first; those not in the chain are issued again.
        let mut open: Option<(u64, Vec<Record>)> = None;
        let mut again: Vec<Written> = Vec::new();
        let mut unconfirmed = Vec::new();
        for b in &bufs {
            let bytes = nv(
                buffer_offset(&geo, b.seq),
                u64::from(b.count) * RECORD_BYTES,
            );
            let records: Vec<Record> = bytes.chunks_exact(8).map(Record::from_bytes).collect();
            replay(Some(&mut map), &records, &geo)?;
            if b.state == BUFFER_OPEN {
                if b.seq < end {
                    return Err(format!(
                        "map log: open NVRAM buffer {} is already in the log",
                        b.seq
                    ));
                }
                open = Some((b.seq, records));
            } else if b.seq < end {
                if let Some((p, w)) = chain.iter().find(|(p, _)| p.seq == b.seq) {
                    unconfirmed.push((p.offset, encode_append(w, &geo)));
                }
            } else {
                let checkpoint = (b.state > BUFFER_SEALED).then(|| {
                    let portion = b.state - BUFFER_SEALED - 1;
                    let r = geo.portion_entries(portion);
                    Snapshot {
                        portion,
                        phys: map.view(r.start as u64, r.len() as u64),
                    }
                });
                let entries = checkpoint.as_ref().map_or(0, |c| c.phys.len());
                again.push(Written {
                    seq: b.seq,
                    sectors: geo.append_sectors(records.len(), entries),
                    records: Arc::from(records),
                    checkpoint,
                });
            }
        }
        // The writer's state: every append of the chain is durable, so released.
        let mut checkpoints: VecDeque<LogPos> = chain
            .iter()
            .filter(|(_, w)| w.checkpoint.is_some())
            .map(|(p, _)| *p)
            .collect();
        while checkpoints.len() > ix(u64::from(geo.portions)) {
            checkpoints.pop_front();
        }
        let start = checkpoints.front().expect("every portion was found").seq;
        let mut region = Region::default();
        let mut live = VecDeque::new();
        for (p, w) in chain.into_iter().filter(|(p, _)| p.seq >= start) {
            live.push_back((p, w.sectors));
            region.appends.insert(p.offset, w);
        }
        let mut log = MapLog {
            geo,
            map,
            open: Vec::with_capacity(ix(u64::from(geo.records_per_buffer))),
            sealed: VecDeque::with_capacity(NVRAM_BUFFERS),
            next_seq: end,
            head: chain_head,
            appends_since_checkpoint: since,
            next_portion,
            checkpoints,
            live,
            region,
            stats: MapLogStats::default(),
            image: None,
        };
        let mut reissue = Vec::new();
        for w in again {
            if w.seq != log.next_seq {
                return Err(format!(
                    "map log: NVRAM buffer {} does not follow the log's append {}",
                    w.seq,
                    log.next_seq - 1
                ));
            }
            let offset = log
                .try_place(w.seq, w.sectors)
                .map_err(|e| format!("map log: {e}"))?;
            log.next_seq += 1;
            reissue.push(Append {
                id: w.seq,
                offset_sectors: offset,
                sectors: u32::try_from(w.sectors).expect("C fits u32"),
                checkpoint: w.checkpoint.as_ref().map(|c| c.portion),
                update_count: u32::try_from(w.records.len()).expect("R fits u32"),
            });
            log.sealed.push_back(Sealed {
                offset,
                written: w,
                done: false,
            });
        }
        if let Some((seq, records)) = open {
            if seq != log.next_seq {
                return Err(format!(
                    "map log: the open NVRAM buffer {seq} does not follow append {}",
                    log.next_seq - 1
                ));
            }
            log.open = records;
        }
        if log.head != head {
            return Err(format!(
                "map log: NVRAM's write head (sector {head}) disagrees with the log's ({})",
                log.head
            ));
        }
        log.stats.nvram_bytes_max = log.nvram_bytes_used();
        Ok(RecoveredLog {
            log,
            reissue,
            unconfirmed,
            sectors_read,
        })
    }
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn get_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Record {
    fn bytes(&self) -> [u8; RECORD_BYTES as usize] {
        let mut b = [0u8; RECORD_BYTES as usize];
        put_u32(&mut b, 0, self.entry);
        put_u32(&mut b, 4, self.phys);
        b
    }

    fn from_bytes(b: &[u8]) -> Record {
        Record {
            entry: get_u32(b, 0),
            phys: get_u32(b, 4),
        }
    }
}

fn nvram_image_bytes(geo: &MapLogGeometry) -> u64 {
    NVRAM_HEADER_BYTES + NVRAM_BUFFERS as u64 * u64::from(geo.records_per_buffer) * RECORD_BYTES
}

/// Where the NVRAM buffer of sequence number `seq` starts.
fn buffer_offset(geo: &MapLogGeometry, seq: u64) -> u64 {
    NVRAM_HEADER_BYTES
        + (seq % NVRAM_BUFFERS as u64) * u64::from(geo.records_per_buffer) * RECORD_BYTES
}

/// CRC-32 of an append: its header's first 24 bytes, then the body.
fn append_crc(header: &[u8], body: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(&header[..24]);
    crc.update(body);
    crc.sum()
}

/// An append's bytes (module doc, byte layout), padded to its sectors.
fn encode_append(w: &Written, geo: &MapLogGeometry) -> Vec<u8> {
    let len = ix(w.sectors * u64::from(geo.sector_bytes));
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&APPEND_MAGIC);
    b.extend_from_slice(&w.seq.to_le_bytes());
    let count = u32::try_from(w.records.len()).expect("R fits u32");
    b.extend_from_slice(&count.to_le_bytes());
    let portion = w.checkpoint.as_ref().map_or(NO_PORTION, |c| c.portion);
    b.extend_from_slice(&portion.to_le_bytes());
    b.extend_from_slice(&[0u8; 8]); // checksum, then zero
    for r in w.records.iter() {
        b.extend_from_slice(&r.bytes());
    }
    if let Some(c) = &w.checkpoint {
        for p in c.phys.values() {
            b.extend_from_slice(&p.to_le_bytes());
        }
    }
    let body_end = b.len();
    let crc = append_crc(&b[..24], &b[ix(APPEND_HEADER_BYTES)..body_end]);
    put_u32(&mut b, 24, crc);
    assert!(body_end <= len, "an append's body fits its sectors");
    b.resize(len, 0);
    b
}

/// An append header's (sequence number, record count, portion), if the magic is there.
fn parse_append_header(b: &[u8]) -> Option<(u64, u32, Option<u32>)> {
    if b.len() < ix(APPEND_HEADER_BYTES) || b[..8] != APPEND_MAGIC {
        return None;
    }
    let portion = get_u32(b, 20);
    Some((
        get_u64(b, 8),
        get_u32(b, 16),
        (portion != NO_PORTION).then_some(portion),
    ))
}

/// The append in `b` (its `sectors` sectors), if its checksum holds. The header fields must
/// have been checked against the geometry.
fn decode_append(b: &[u8], geo: &MapLogGeometry, sectors: u64) -> Option<Written> {
    let (seq, count, portion) = parse_append_header(b)?;
    let records_end = ix(APPEND_HEADER_BYTES + u64::from(count) * RECORD_BYTES);
    let entries = portion.map_or(0, |p| geo.portion_entries(p).len());
    let body_end = records_end + entries * ix(ENTRY_BYTES);
    if body_end > b.len() || get_u32(b, 28) != 0 {
        return None;
    }
    if append_crc(&b[..24], &b[ix(APPEND_HEADER_BYTES)..body_end]) != get_u32(b, 24) {
        return None;
    }
    let records: Vec<Record> = b[ix(APPEND_HEADER_BYTES)..records_end]
        .chunks_exact(8)
        .map(Record::from_bytes)
        .collect();
    let checkpoint = portion.map(|p| {
        let values: Vec<u32> = b[records_end..body_end]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        let first = geo.portion_entries(p).start as u64;
        Snapshot {
            portion: p,
            phys: MapView::from_values(first, geo.replicas, &values),
        }
    });
    Some(Written {
        seq,
        sectors,
        records: Arc::from(records),
        checkpoint,
    })
}

/// NVRAM's buffers are one or two, consecutive, each within R records.
fn check_nvram(p: &Persistent, geo: &MapLogGeometry) -> Result<(), String> {
    if p.buffers.is_empty() || p.buffers.len() > NVRAM_BUFFERS {
        return Err(format!("map log: NVRAM holds {} buffers", p.buffers.len()));
    }
    if p.buffers.windows(2).any(|w| w[1].seq != w[0].seq + 1) {
        return Err("map log: NVRAM buffers are not consecutive".into());
    }
    if let Some(b) = p
        .buffers
        .iter()
        .find(|b| b.records.len() > ix(u64::from(geo.records_per_buffer)))
    {
        return Err(format!(
            "map log: NVRAM buffer {} holds {} records, more than {}",
            b.seq,
            b.records.len(),
            geo.records_per_buffer
        ));
    }
    Ok(())
}

/// Applies `records` to `map` (none: only checks them).
fn replay(
    mut map: Option<&mut L2pMap>,
    records: &[Record],
    geo: &MapLogGeometry,
) -> Result<(), String> {
    for r in records {
        if u64::from(r.entry) >= geo.entries() {
            return Err(format!(
                "map log: update record for entry {} outside the {}-entry map",
                r.entry,
                geo.entries()
            ));
        }
        if let Some(map) = map.as_deref_mut() {
            map.set_entry(u64::from(r.entry), r.phys);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
