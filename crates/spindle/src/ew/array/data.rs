//! The EW controller's bytes: data moves, the NVRAM image and crash recovery (the contract
//! is [`crate::engine::data`]'s). Nothing here changes timing: with data moves off none of it
//! runs, and with them on the controller makes exactly the same decisions.
//!
//! # Data moves
//!
//! Each disk operation is described when it starts (when eager writing has chosen its free
//! extent):
//!
//! - a read: the copy chosen, into [`Bytes::Host`] at the block's array-logical sector;
//! - a synchronous eager copy: [`Bytes::Host`] into the extent chosen;
//! - a delayed propagation or a DDM move home: [`Bytes::Copy`] from, per block, a replica
//!   the map points at that holds the newest acknowledged bytes *now* (a location the map
//!   points at is never freed, so its bytes are whole). A propagation whose blocks' fresh
//!   replicas lie on different disks is described by one move per source disk, each for
//!   its part of the operation's extent (the only case of several moves for one
//!   operation);
//! - a rebuild: nothing for the survivor's read; the spare's write is [`Bytes::Copy`] from
//!   the survivor's copy into the failed disk's slots ([`super::failure`]);
//! - a map log append or checkpoint: [`Bytes::Meta`] with the append's bytes
//!   ([`MapLog::append_bytes`], layout in [`crate::ew::map_log`]) at the region's sectors
//!   on each disk holding a copy of the region (disk 0, and with `map_log_replicas` > 1
//!   column 0 of the next replicas);
//! - a rebuild's copy of the map log region: [`Bytes::Copy`] from the surviving copy's
//!   sectors to the same sectors of the spare.
//!
//! Before its first event a fresh controller (not recovered) formats the map log region:
//! one [`Bytes::Meta`] move per initial checkpoint append and copy of the region, untimed like
//! [`MapLog::new`]'s format, and writes the whole NVRAM image. Host requests must be whole
//! 4 KiB blocks ([`Engine::io_align_bytes`]).
//!
//! # NVRAM image (little-endian)
//!
//! | bytes | part |
//! |---|---|
//! | 0..64 | superblock: what array this is |
//! | 64..64 + `nvram_bytes` | the map log's NVRAM: header, two update buffers ([`crate::ew::map_log`]; 64 + 2·R·8 bytes used, the paper's 100 KB) |
//! | T.. | the propagation table, T = 64 + `nvram_bytes`: 12-byte slots |
//!
//! Superblock: magic `"SPNDLEWA"` (0..8), format version u32 = 1 (8..12), flags u32 (bit 0:
//! DDM; 12..16), disks u32, Dm u32, logical blocks u32, block sectors u32, stripe unit
//! blocks u32, map portions M u32 (16..40), map NVRAM bytes u64 (40..48), CRC-32 of the
//! placement (every disk's band: its block count and first and last block's LBA; the map
//! log region's LBA and size; 48..52), sector bytes u32 (52..56), copies of the map log
//! region less one u32 (56..60), CRC-32 of bytes 0..60 (60..64). Recovery refuses an image whose superblock is not this array's.
//!
//! **Propagation table** (the NVRAM table of pending delayed writes, paper 4.5; "the first
//! copy's location is enough"): one slot per block whose replicas may hold different
//! bytes — from the first map update of a write until every replica holds its newest
//! write (the block settles) — naming the copy to keep: logical block + 1 u32 (0: empty
//! slot), replica u32, physical block u32. The copy to keep is the replica whose map entry
//! records the newest write (ties: the one just updated), at its mapped location, which
//! always holds at least the newest acknowledged bytes. Slots are taken lowest first and
//! zeroed when the block settles. Arrays with Dm = 1 keep no table. The table is sized for
//! `nvram_entries` blocks: the simulator's rule keeps the blocks waiting in the background
//! within it, but blocks whose propagation moved to the foreground and blocks between their
//! two synchronous copies need a slot too, so under overload it grows beyond
//! (see [`EwArray::nvram_table_slots_max`]); a real controller would stall writes there,
//! which the simulator does not model.
//!
//! **Order.** A map update writes its table slot first, then its update record, then the
//! map log header (one write). A block's location is freed only after the write that moved
//! its map entry (and the table slot) away, and reused by an operation that starts later,
//! so every prefix of the NVRAM writes, with the data moves polled before it, is a state
//! recovery handles. All NVRAM writes of a map update are polled before the completion
//! that answers the host.
//!
//! # Recovery
//!
//! [`EwArray::recover_from`] checks the superblock, rebuilds the map with
//! [`MapLog::recover_image`] (the map log region read from the youngest complete
//! checkpoint, torn appends refused by their checksum, then NVRAM's buffers), checks that
//! the map is one of this array (every location inside its disk's band, no two blocks at
//! one location, DDM homes only for their own blocks), rebuilds each disk's free space
//! (free: referenced by no replica and no DDM home), and returns, per table slot, repair
//! moves copying the kept copy over every other replica's mapped location (and over the
//! kept replica's own, if the crash came between the slot and the map record). After
//! the repairs every replica holds the same bytes, so the recovered controller starts
//! with no pending propagation; a DDM queues the moves home of blocks away from home. The
//! map log continues where it stopped: appends NVRAM still holds are issued again, same
//! place and bytes. Then the whole NVRAM image is polled again (contract step 3).
//!
//! Call `recover` after turning data moves on and before any event *or poll* (the first
//! poll of a fresh controller formats the region). The map lives in the map log, so every
//! restart — after a clean stop too, when it finds nothing to repair — goes through
//! `recover`; a controller that is not recovered formats anew, which loses the map.

use super::*;
use crate::drive::Run;
use crate::engine::{Bytes, CopyRuns};
use crate::ew::map_log::RecoveredLog;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// The superblock's size, and where the map log's NVRAM starts.
pub(crate) const SUPERBLOCK_BYTES: u64 = 64;
/// A propagation table slot: block + 1, replica, physical block (u32 each).
pub(crate) const TABLE_SLOT_BYTES: u64 = 12;
const MAGIC: [u8; 8] = *b"SPNDLEWA";
const FORMAT_VERSION: u32 = 1;

/// What a driver moving real bytes needs of the controller.
#[derive(Default)]
pub(super) struct DataState {
    pub(super) moves: VecDeque<DataMove>,
    pub(super) nvram: VecDeque<NvramWrite>,
    /// The controller began (formatted, or recovered): `recover` comes only before.
    started: bool,
    /// The propagation table: per block whose replicas may differ, its slot and the copy
    /// to keep.
    dirty: BTreeMap<u32, Dirty>,
    free_slots: BinaryHeap<Reverse<u32>>,
    /// Slots ever used (the table's extent in the image).
    slots: u32,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Dirty {
    slot: u32,
    replica: u32,
    phys: BlockId,
}

impl EwArray {
    /// Turns data moves on (before the first event); `false` if this array cannot describe
    /// its bytes (events already handled, or a map log sector that is not the drive's).
    pub(super) fn enable_data(&mut self) -> bool {
        if self.data.is_some() {
            return true;
        }
        let fresh = self.seq == 0 && self.version == 0 && self.out.now() == Nanos::ZERO;
        if !fresh || self.map_cfg.sector_bytes != self.drive.geometry().sector_bytes() {
            return false;
        }
        self.data = Some(DataState::default());
        true
    }

    /// Blocks the propagation table held at most at once (its slots in the image).
    pub fn nvram_table_slots_max(&self) -> u32 {
        self.data.as_ref().map_or(0, |d| d.slots)
    }

    /// Where the propagation table starts in the NVRAM image.
    fn table_offset(&self) -> u64 {
        SUPERBLOCK_BYTES + self.map_cfg.nvram_bytes
    }

    /// With data moves on, before the first event or poll: a fresh controller formats the
    /// map log region and writes its whole NVRAM image.
    pub(super) fn begin(&mut self) {
        if self.data.as_ref().is_none_or(|d| d.started) {
            return;
        }
        let mut moves = Vec::new();
        for (offset, bytes) in self.map.region_image() {
            for &d in &self.log_disks {
                moves.push(self.meta_move(d, offset, bytes.clone()));
            }
        }
        let d = self.data.as_mut().expect("data on");
        d.started = true;
        d.moves.extend(moves);
        self.write_whole_image();
    }

    /// The superblock, the map log's NVRAM, the table's slots (after a format or recovery).
    fn write_whole_image(&mut self) {
        let sb = self.superblock().to_vec();
        self.push_nvram(0, sb);
        for (at, bytes) in self.map.enable_image() {
            self.push_nvram(SUPERBLOCK_BYTES + at, bytes);
        }
        let slots: Vec<(u32, Dirty)> = self
            .data
            .as_ref()
            .expect("data on")
            .dirty
            .iter()
            .map(|(&b, &e)| (b, e))
            .collect();
        for (b, e) in slots {
            self.write_slot(e.slot, Some((b, e)));
        }
    }

    fn push_nvram(&mut self, offset: u64, bytes: Vec<u8>) {
        let d = self.data.as_mut().expect("data on");
        d.nvram.push_back(NvramWrite::literal(offset, bytes));
    }

    /// Moves the map log's NVRAM writes to the image, after whatever was written before.
    pub(super) fn pump_map_nvram(&mut self) {
        for (at, bytes) in self.map.take_nvram_writes() {
            self.push_nvram(SUPERBLOCK_BYTES + at, bytes);
        }
    }

    fn write_slot(&mut self, slot: u32, entry: Option<(u32, Dirty)>) {
        let mut b = [0u8; TABLE_SLOT_BYTES as usize];
        if let Some((block, e)) = entry {
            b[0..4].copy_from_slice(&(block + 1).to_le_bytes());
            b[4..8].copy_from_slice(&e.replica.to_le_bytes());
            b[8..12].copy_from_slice(&e.phys.to_le_bytes());
        }
        let at = self.table_offset() + u64::from(slot) * TABLE_SLOT_BYTES;
        self.push_nvram(at, b.to_vec());
    }

    /// Replica `m` of block `b` now lives at `slot`, holding write `version` (the map has
    /// changed, its NVRAM writes not yet taken): the table slot first, then the record.
    pub(super) fn map_updated(&mut self, b: u32, m: u32, slot: BlockId, version: u64) {
        if self.dm > 1 {
            let gone = self.gone(b);
            assert!(
                gone & (1 << m) == 0,
                "block {b}: a write to a replaced copy"
            );
            let st = self.table.get(&b).expect("an updated block has state");
            // A copy lost with a replaced disk is never kept: its bytes are gone.
            let mut newest = (m, version);
            for (r, &v) in st.ver.iter().enumerate() {
                if r as u32 != m && v > newest.1 && gone & (1 << r) == 0 {
                    newest = (r as u32, v);
                }
            }
            let keep = if newest.0 == m {
                slot
            } else {
                self.map.map().get(b, newest.0)
            };
            self.write_keep(b, newest.0, keep);
        }
        self.pump_map_nvram();
    }

    /// Before a failed disk's spare is installed: table slots that keep the failed disk's
    /// copy of one of its blocks keep the newest surviving copy instead (one that holds the
    /// newest acknowledged bytes: the spare waits for that), so no recovery copies from the
    /// emptied spare.
    pub(super) fn keep_survivors(&mut self, disk: usize) {
        let Some(data) = self.data.as_ref() else {
            return;
        };
        let lost: Vec<u32> = data
            .dirty
            .iter()
            .filter(|(&b, e)| self.disk_of(b, e.replica) == disk)
            .map(|(&b, _)| b)
            .collect();
        for b in lost {
            let st = self.table.get(&b).expect("a dirty block has state");
            let failed = self.lost(b);
            let (r, v) = st
                .ver
                .iter()
                .enumerate()
                .filter(|(r, _)| failed & (1 << r) == 0)
                .map(|(r, &v)| (r as u32, v))
                .fold(None::<(u32, u64)>, |best, (r, v)| match best {
                    Some((_, bv)) if bv >= v => best,
                    _ => Some((r, v)),
                })
                .expect("a surviving replica");
            assert!(
                v >= st.acked,
                "block {b}: no survivor holds its acknowledged data"
            );
            let keep = self.map.map().get(b, r);
            self.write_keep(b, r, keep);
        }
    }

    /// Block `b`'s table slot keeps replica `replica` at `keep`.
    fn write_keep(&mut self, b: u32, replica: u32, keep: BlockId) {
        {
            let data = self.data.as_mut().expect("data on");
            let old = data.dirty.get(&b).copied();
            let slot_no = old.map(|e| e.slot).unwrap_or_else(|| {
                data.free_slots.pop().map_or_else(
                    || {
                        data.slots += 1;
                        data.slots - 1
                    },
                    |Reverse(s)| s,
                )
            });
            let e = Dirty {
                slot: slot_no,
                replica,
                phys: keep,
            };
            if old != Some(e) {
                data.dirty.insert(b, e);
                self.write_slot(slot_no, Some((b, e)));
            }
        }
    }

    /// Block `b` settled: every replica holds its newest write; its table slot is freed.
    pub(super) fn settled(&mut self, b: u32) {
        let data = self.data.as_mut().expect("data on");
        if let Some(e) = data.dirty.remove(&b) {
            data.free_slots.push(Reverse(e.slot));
            self.write_slot(e.slot, None);
        }
    }

    fn meta_move(&self, disk: usize, offset_sectors: u64, bytes: Vec<u8>) -> DataMove {
        let sectors = u32::try_from(bytes.len() / self.sector_bytes() as usize)
            .expect("an append fits u32 sectors");
        DataMove {
            disk,
            op: Op::Write,
            lba: 0,
            sectors,
            bytes: Bytes::Meta(bytes),
            copies: vec![vec![Run {
                lba: self.log_lba + offset_sectors,
                sectors,
            }]],
        }
    }

    fn push_move(&mut self, mv: DataMove) {
        debug_assert!(mv.is_consistent(self.sector_bytes()), "{mv:?}");
        self.data.as_mut().expect("data on").moves.push_back(mv);
    }

    fn run_of(&self, disk: usize, slot: BlockId, blocks: u32) -> Run {
        Run {
            lba: self.disks[disk].free.lba(slot),
            sectors: blocks * self.block_sectors,
        }
    }

    /// The data moves of operation `id`, starting on disk `d` with transfer `xfer`.
    pub(super) fn start_moves(&mut self, d: usize, id: usize, xfer: &Transfer) {
        let op = self.op(id);
        let bs = self.block_sectors;
        let lba = u64::from(op.block) * u64::from(bs);
        let host = op.slot.map(|s| Bytes::Host(self.host.get(s).req.id));
        let dest = Run {
            lba: xfer.lba,
            sectors: xfer.sectors,
        };
        match op.kind {
            // A read that meets a latent error returns nothing; its retry moves the bytes.
            Kind::Read if op.unreadable => {}
            Kind::Read => {
                let a = op
                    .locs
                    .iter()
                    .find(|&&(m, _)| self.disk_of(op.block, m) == d)
                    .expect("the read's copy")
                    .1;
                let mv = DataMove {
                    disk: d,
                    op: Op::Read,
                    lba,
                    sectors: op.blocks * bs,
                    bytes: host.expect("a read serves the host"),
                    copies: vec![vec![self.run_of(d, a, op.blocks)]],
                };
                self.push_move(mv);
            }
            Kind::Write => {
                let mv = DataMove {
                    disk: d,
                    op: Op::Write,
                    lba,
                    sectors: xfer.sectors,
                    bytes: host.expect("a synchronous copy serves the host"),
                    copies: vec![vec![dest]],
                };
                self.push_move(mv);
            }
            Kind::Propagate | Kind::Home => {
                let (block, blocks) = (op.block, op.blocks);
                debug_assert_eq!(blocks * bs, xfer.sectors);
                // Per block, a replica holding the newest acknowledged bytes, keeping the
                // same one while it is fresh; one move per run of blocks with one source
                // disk.
                let mut parts: Vec<(usize, u32, CopyRuns)> = Vec::new();
                let mut replica: Option<u32> = None;
                for i in 0..blocks {
                    let b = block + i;
                    // Not a lost copy: the spare's file is emptied when it is installed.
                    let fresh = self.readable(b);
                    let r = match replica {
                        Some(r) if fresh & (1 << r) != 0 => r,
                        _ => fresh.trailing_zeros(),
                    };
                    assert!(r < self.dm, "block {b} has a fresh copy");
                    replica = Some(r);
                    let src = self.disk_of(b, r);
                    let run = self.run_of(src, self.map.map().get(b, r), 1);
                    match parts.last_mut() {
                        Some((disk, _, runs)) if *disk == src => {
                            let last = runs.last_mut().expect("a run");
                            if last.lba + u64::from(last.sectors) == run.lba {
                                last.sectors += run.sectors;
                            } else {
                                runs.push(run);
                            }
                        }
                        _ => parts.push((src, i, vec![run])),
                    }
                }
                for (src, first, runs) in parts {
                    let sectors = runs.iter().map(|r| r.sectors).sum::<u32>();
                    let mv = DataMove {
                        disk: d,
                        op: Op::Write,
                        lba: lba + u64::from(first * bs),
                        sectors,
                        bytes: Bytes::Copy { disk: src, runs },
                        copies: vec![vec![Run {
                            lba: dest.lba + u64::from(first * bs),
                            sectors,
                        }]],
                    };
                    self.push_move(mv);
                }
            }
            // The survivor's copy is read when the spare's is written: the step holds its
            // blocks, so the map and the bytes stay put in between.
            Kind::RebuildRead => {}
            Kind::RebuildWrite => {
                let (block, blocks) = (op.block, op.blocks);
                let (from, to) = (op.locs[0], op.locs[1]);
                let src = self.disk_of(block, from.0);
                debug_assert_eq!(self.disk_of(block, to.0), d);
                let mv = DataMove {
                    disk: d,
                    op: Op::Write,
                    lba,
                    sectors: blocks * bs,
                    bytes: Bytes::Copy {
                        disk: src,
                        runs: vec![self.run_of(src, from.1, blocks)],
                    },
                    copies: vec![vec![self.run_of(d, to.1, blocks)]],
                };
                debug_assert_eq!(mv.copies[0][0], dest);
                self.push_move(mv);
            }
            Kind::MapAppend(aid) => {
                debug_assert!(self.log_disks.contains(&d));
                let bytes = self.map.append_bytes(aid);
                let mv = self.meta_move(d, xfer.lba - self.log_lba, bytes);
                debug_assert_eq!(mv.copies[0][0], dest);
                self.push_move(mv);
            }
            Kind::LogCopyRead => {}
            Kind::LogCopyWrite => {
                let src = self.log_copy_source().expect("the region is being copied");
                let run = Run {
                    lba: op.lba,
                    sectors: op.sectors,
                };
                self.push_move(DataMove {
                    disk: d,
                    op: Op::Write,
                    lba: 0,
                    sectors: op.sectors,
                    bytes: Bytes::Copy {
                        disk: src,
                        runs: vec![run],
                    },
                    copies: vec![vec![run]],
                });
            }
        }
    }

    /// The map log recovered from the copy of its region on disk `d`, with `nvram` the map
    /// log's part of the NVRAM image.
    pub(super) fn recover_log_from(
        &self,
        nvram: &[u8],
        read: &mut DiskReader<'_>,
        d: usize,
    ) -> Result<RecoveredLog, String> {
        let sector = self.sector_bytes() as usize;
        let log_lba = self.log_lba;
        let mut region = |offset: u64, buf: &mut [u8]| -> Result<(), String> {
            let sectors = u32::try_from(buf.len() / sector).map_err(|e| e.to_string())?;
            let run = Run {
                lba: log_lba + offset,
                sectors,
            };
            read(d, &[run], buf).map_err(|e| format!("reading the map log region on disk {d}: {e}"))
        };
        MapLog::recover_image(
            self.map_cfg,
            self.logical_blocks,
            self.dm,
            nvram,
            &mut region,
        )
    }

    /// This array's superblock (module doc).
    fn superblock(&self) -> [u8; SUPERBLOCK_BYTES as usize] {
        let mut b = [0u8; SUPERBLOCK_BYTES as usize];
        b[0..8].copy_from_slice(&MAGIC);
        let words = [
            FORMAT_VERSION,
            u32::from(self.shape.ddm),
            u32::try_from(self.disks.len()).expect("disks fit u32"),
            self.dm,
            self.logical_blocks,
            self.block_sectors,
            self.unit_blocks,
            self.map_cfg.portions,
        ];
        for (i, w) in words.iter().enumerate() {
            b[8 + 4 * i..12 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        b[40..48].copy_from_slice(&self.map_cfg.nvram_bytes.to_le_bytes());
        let mut crc = flate2::Crc::new();
        for d in &self.disks {
            let n = d.free.blocks();
            crc.update(&n.to_le_bytes());
            crc.update(&d.free.lba(0).to_le_bytes());
            crc.update(&d.free.lba(n - 1).to_le_bytes());
        }
        crc.update(&self.log_lba.to_le_bytes());
        crc.update(&self.map.region_sectors().to_le_bytes());
        b[48..52].copy_from_slice(&crc.sum().to_le_bytes());
        b[52..56].copy_from_slice(&self.sector_bytes().to_le_bytes());
        let copies = self.log_disks.len() as u32 - 1;
        b[56..60].copy_from_slice(&copies.to_le_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(&b[..60]);
        b[60..64].copy_from_slice(&crc.sum().to_le_bytes());
        b
    }

    /// [`Engine::recover`]: see the module doc.
    pub(super) fn recover_from(
        &mut self,
        nvram: &[u8],
        read: &mut DiskReader<'_>,
    ) -> Result<Vec<DataMove>, RecoverError> {
        let err = |m: String| RecoverError(format!("{}: {m}", self.shape.describe()));
        match &self.data {
            None => return Err(err("turn data moves on before recovering".into())),
            Some(d) if d.started => {
                return Err(err(
                    "recover a freshly built controller, before its first event".into(),
                ))
            }
            Some(_) => {}
        }
        let nv = |at: u64, len: u64| -> Vec<u8> {
            let mut out = vec![0u8; len as usize];
            let n = nvram.len() as u64;
            let (s, e) = (at.min(n) as usize, (at + len).min(n) as usize);
            out[..e - s].copy_from_slice(&nvram[s..e]);
            out
        };
        // The superblock.
        let sb = nv(0, SUPERBLOCK_BYTES);
        if sb[0..8] != MAGIC {
            return Err(err(
                "the NVRAM image is not an EW controller's (no magic)".into()
            ));
        }
        let mut crc = flate2::Crc::new();
        crc.update(&sb[..60]);
        if crc.sum().to_le_bytes() != sb[60..64] {
            return Err(err("the NVRAM superblock's checksum fails".into()));
        }
        let mine = self.superblock();
        if sb[..] != mine[..] {
            let names = [
                "format version",
                "DDM flag",
                "disks",
                "Dm",
                "logical blocks",
                "block sectors",
                "stripe unit blocks",
                "map portions",
            ];
            let word = |b: &[u8], i: usize| {
                u32::from_le_bytes(b[8 + 4 * i..12 + 4 * i].try_into().expect("4 bytes"))
            };
            let what = (0..names.len())
                .find(|&i| word(&sb, i) != word(&mine, i))
                .map(|i| {
                    format!(
                        "{}: {} in the image, {} here",
                        names[i],
                        word(&sb, i),
                        word(&mine, i)
                    )
                })
                .unwrap_or_else(|| {
                    "map NVRAM size, placement, sector size or map log region copies".into()
                });
            return Err(err(format!("the NVRAM image is another array's ({what})")));
        }
        // The map log.
        let part = nv(SUPERBLOCK_BYTES, self.map.nvram_image_bytes());
        // The region from the first copy that recovers: a disk failed from the start (its
        // file stale, or a spare's partial copy) is never read.
        let failed = self.failed_from_start();
        let mut rec = Err(String::new());
        let mut read_from = 0;
        for &d in self.log_disks.iter().filter(|&&d| Some(d) != failed) {
            match (self.recover_log_from(&part, read, d), &rec) {
                (Ok(r), _) => {
                    rec = Ok(r);
                    read_from = d;
                    break;
                }
                (Err(e), Err(first)) if first.is_empty() => {
                    rec = Err(if self.log_disks.len() > 1 {
                        format!("the map log region's copy on disk {d}: {e}")
                    } else {
                        e
                    })
                }
                (Err(_), _) => {}
            }
        }
        let rec = rec.map_err(err)?;
        // The map must be one of this array.
        let map = rec.log.map();
        let mut used: Vec<Vec<bool>> = self
            .disks
            .iter()
            .map(|d| vec![false; d.free.blocks() as usize])
            .collect();
        for b in 0..self.logical_blocks {
            for m in 0..self.dm {
                let d = self.disk_of(b, m);
                let loc = map.get(b, m);
                let Some(u) = used[d].get_mut(loc as usize) else {
                    return Err(err(format!(
                        "block {b} replica {m} at {loc}, outside disk {d}'s band"
                    )));
                };
                if std::mem::replace(u, true) {
                    return Err(err(format!("disk {d}: two blocks at location {loc}")));
                }
                let own_home =
                    self.shape.ddm && m == self.home_replica(b) && loc == self.home_slot(b);
                if self.is_home(d, loc) && !own_home {
                    return Err(err(format!(
                        "block {b} replica {m} at another block's home {loc} on disk {d}"
                    )));
                }
            }
        }
        // The propagation table.
        let mut kept: BTreeMap<u32, (u32, BlockId)> = BTreeMap::new();
        let table = self.table_offset();
        if (nvram.len() as u64) > table {
            let slots = (nvram.len() as u64 - table).div_ceil(TABLE_SLOT_BYTES);
            for i in 0..slots {
                let e = nv(table + i * TABLE_SLOT_BYTES, TABLE_SLOT_BYTES);
                let word =
                    |k: usize| u32::from_le_bytes(e[4 * k..4 * k + 4].try_into().expect("4"));
                let (b1, r, phys) = (word(0), word(1), word(2));
                if (b1, r, phys) == (0, 0, 0) {
                    continue;
                }
                let b = b1.wrapping_sub(1);
                let valid = b1 != 0
                    && b < self.logical_blocks
                    && r < self.dm
                    && phys < self.disks[self.disk_of(b, r)].free.blocks();
                if !valid {
                    return Err(err(format!(
                        "propagation table slot {i} names block {b1} - 1, replica {r}, location {phys}: not of this array"
                    )));
                }
                if kept.insert(b, (r, phys)).is_some() {
                    return Err(err(format!("block {b} has two propagation table slots")));
                }
            }
        }
        // Everything checked: adopt the map and rebuild the free space.
        for (d, u) in used.iter().enumerate() {
            for (s, &referenced) in u.iter().enumerate() {
                let s = s as BlockId;
                let want_used = referenced || self.is_home(d, s);
                let free = &mut self.disks[d].free;
                match (want_used, free.is_free(s)) {
                    (true, true) => free.allocate(s, 1),
                    (false, false) => free.release(s, 1),
                    _ => {}
                }
            }
        }
        self.map = rec.log;
        // Bad locations are a function of the seed: the free ones are retired again.
        if let Err(e) = self.retire_bad_free(false) {
            return Err(RecoverError(e));
        }
        // Repairs: appends the crash may have left on some copies of the region only, to
        // the others (the copy of a failed disk is rebuilt later)…
        let mut repairs = Vec::new();
        for (offset, bytes) in rec.unconfirmed {
            for &d in &self.log_disks {
                if d != read_from && Some(d) != failed {
                    repairs.push(self.meta_move(d, offset, bytes.clone()));
                }
            }
        }
        // …and the kept copy over every other replica's mapped location.
        let bs = self.block_sectors;
        for (&b, &(r, phys)) in &kept {
            let src = self.disk_of(b, r);
            let from = self.run_of(src, phys, 1);
            for m in 0..self.dm {
                let loc = self.map.map().get(b, m);
                if m == r && loc == phys {
                    continue;
                }
                let d = self.disk_of(b, m);
                let mv = DataMove {
                    disk: d,
                    op: Op::Write,
                    lba: u64::from(b) * u64::from(bs),
                    sectors: bs,
                    bytes: Bytes::Copy {
                        disk: src,
                        runs: vec![from],
                    },
                    copies: vec![vec![self.run_of(d, loc, 1)]],
                };
                debug_assert!(mv.is_consistent(self.sector_bytes()));
                repairs.push(mv);
            }
        }
        // Continue: the whole NVRAM image again, the appends NVRAM still holds issued
        // again, and a DDM's blocks away from home moved home.
        self.data.as_mut().expect("data on").started = true;
        self.write_whole_image();
        // A disk failed from the start fails before anything queued here starts, so no
        // append goes to it and no move home copies from it.
        if failed.is_some() {
            self.fail_if_due(Nanos::ZERO);
        }
        self.queue_appends(Nanos::ZERO, rec.reissue);
        if self.shape.ddm {
            for b in 0..self.logical_blocks {
                let h = self.home_replica(b);
                if self.map.map().get(b, h) != self.home_slot(b) {
                    self.queue_home(Nanos::ZERO, b, 1, 0);
                }
            }
            self.enforce_nvram_limit();
        }
        Ok(repairs)
    }
}
