//! The write cache's blocks in the NVRAM image (paper III.A: the write cache is
//! non-volatile). Each block version the cache holds — host data not yet in parity
//! (dirty), data or newly computed parity waiting for its destage write (pending), a
//! destaged block still readable (available) — has a slot: a 16-byte header (state, disk,
//! block) and 4 KiB of bytes. Host data is stored from the host's buffer before the write
//! is answered; new parity is the XOR, computed as it is stored, of the disks' old data and
//! parity and the cached new data; a destage write moves a slot's bytes to its disk; a read
//! hit is answered from the slot. A slot's bytes are written before its header names it.
//!
//! Recovery writes every data block newer than the disks (the dirty version if there is
//! one, else the pending one) to its disk; the parity of its stripe, and of every stripe
//! with new parity pending (its round may have written data and not yet the parity), is
//! then recomputed from the data (`super::recover_image`). Available blocks are not needed.

use super::super::{Raid5Array, BLOCK_BYTES};
use super::{disk_piece, run, DataMove, Geometry, SLOT_BYTES};
use crate::cache::BlockAddr;
use crate::engine::{Bytes, NvramBytes, NvramWrite, Piece, RecoverError, Source};
use crate::Op;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Repair writes of cached data, and the stripes whose parity is to be recomputed.
pub(super) type CacheRepairs = (Vec<DataMove>, BTreeSet<(u32, u64)>);

const DIRTY: u8 = 1;
const PENDING_DATA: u8 = 2;
const PENDING_PARITY: u8 = 3;
const AVAILABLE: u8 = 4;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Ver {
    Dirty,
    Pending,
    Available,
}

/// Which slot holds which block version.
#[derive(Default)]
pub(in crate::raid5::array) struct Slots {
    at: HashMap<(BlockAddr, Ver), u32>,
    free: Vec<u32>,
    next: u32,
}

fn header(state: u8, k: BlockAddr) -> Vec<u8> {
    let mut h = vec![state, 0, 0, 0];
    h.extend_from_slice(&k.0.to_le_bytes());
    h.extend_from_slice(&k.1.to_le_bytes());
    h
}

impl Raid5Array {
    fn nv_on(&self) -> bool {
        self.data.is_some() && self.cache.is_some()
    }

    fn block_sectors_u32(&self) -> u32 {
        self.block_sectors
    }

    /// A free slot; the cache's blocks trimmed for room are freed first, so there is one
    /// (the write cache never holds more versions than it has blocks).
    fn slot_alloc(&mut self) -> u32 {
        self.nv_evictions();
        let c = self.geo().c;
        let d = &mut self.data.as_mut().expect("data on").cache;
        let slot = d.free.pop().unwrap_or_else(|| {
            d.next += 1;
            d.next - 1
        });
        assert!(
            u64::from(slot) < c,
            "write-cache slot {slot} of {c}: more versions than cache blocks"
        );
        slot
    }

    fn slot_free(&mut self, slot: u32) {
        let d = self.data.as_mut().expect("data on");
        let at = d.geo.cache_header(slot);
        d.nvram.push_back(NvramWrite::literal(at, vec![0; 4]));
        d.cache.free.push(slot);
    }

    fn set_header(&mut self, slot: u32, state: u8, k: BlockAddr) {
        let d = self.data.as_mut().expect("data on");
        let at = d.geo.cache_header(slot);
        // The address first, then the state word that makes it valid.
        d.nvram
            .push_back(NvramWrite::literal(at + 4, header(state, k)[4..].to_vec()));
        d.nvram
            .push_back(NvramWrite::literal(at, vec![state, 0, 0, 0]));
    }

    fn store_block(&mut self, slot: u32, pieces: Vec<Piece>) {
        let sectors = self.block_sectors_u32();
        let d = self.data.as_mut().expect("data on");
        let at = d.geo.cache_block(slot);
        d.nvram.push_back(NvramWrite {
            offset: at,
            bytes: NvramBytes::Xor { sectors, pieces },
        });
    }

    fn geo(&self) -> Geometry {
        self.data.as_ref().expect("data on").geo
    }

    /// The newest version of `k` the cache holds: its slot.
    fn newest_slot(&self, k: BlockAddr) -> Option<u32> {
        let at = &self.data.as_ref()?.cache.at;
        [Ver::Dirty, Ver::Pending, Ver::Available]
            .iter()
            .find_map(|v| at.get(&(k, *v)).copied())
    }

    /// Frees the slots of available blocks the cache gave up for room.
    fn nv_evictions(&mut self) {
        let evicted = self.cache.as_mut().expect("a cache").write.take_evicted();
        for k in evicted {
            self.nv_invalidate(k);
        }
    }

    /// Host write `id` put block `k` (array sector `lba` onwards) in the cache, over its
    /// dirty version when `in_place`.
    pub(in crate::raid5::array) fn nv_absorb(
        &mut self,
        k: BlockAddr,
        id: u64,
        lba: u64,
        in_place: bool,
    ) {
        if !self.nv_on() {
            return;
        }
        let pieces = vec![Piece {
            at: 0,
            sectors: self.block_sectors_u32(),
            from: Source::Host { id, lba },
        }];
        if in_place {
            let slot = self.slots()[&(k, Ver::Dirty)];
            self.store_block(slot, pieces);
            return;
        }
        self.new_version(k, Ver::Dirty, DIRTY, pieces);
    }

    fn slots(&mut self) -> &mut HashMap<(BlockAddr, Ver), u32> {
        &mut self.data.as_mut().expect("data on").cache.at
    }

    /// A new version of `k` in a slot of its own, holding the XOR of `pieces`; an
    /// available copy of `k` it supersedes gives up its slot first.
    fn new_version(&mut self, k: BlockAddr, ver: Ver, state: u8, pieces: Vec<Piece>) {
        self.nv_invalidate(k);
        let slot = self.slot_alloc();
        self.store_block(slot, pieces);
        self.set_header(slot, state, k);
        self.slots().insert((k, ver), slot);
        self.nv_evictions();
    }

    /// Data block `k`'s parity is computed: its dirty version now waits for destage.
    pub(in crate::raid5::array) fn nv_computed(&mut self, k: BlockAddr) {
        if !self.nv_on() {
            return;
        }
        let at = self.slots();
        let slot = at.remove(&(k, Ver::Dirty)).expect("a dirty slot");
        at.insert((k, Ver::Pending), slot);
        self.set_header(slot, PENDING_DATA, k);
    }

    /// New parity `p` of a row: the XOR of the clean blocks `old` (the disks' contents)
    /// and the cached new data `new` (dirty blocks just computed, now pending).
    pub(in crate::raid5::array) fn nv_parity(
        &mut self,
        p: BlockAddr,
        old: &[BlockAddr],
        new: &[BlockAddr],
    ) {
        if !self.nv_on() {
            return;
        }
        let bs = self.block_sectors_u32();
        let geo = self.geo();
        let mut pieces: Vec<Piece> = old
            .iter()
            .map(|&(disk, b)| disk_piece(0, disk as usize, b * u64::from(bs), bs))
            .collect();
        for &k in new {
            let slot = self.slots()[&(k, Ver::Pending)];
            pieces.push(Piece {
                at: 0,
                sectors: bs,
                from: Source::Nvram(geo.cache_block(slot)),
            });
        }
        self.new_version(p, Ver::Pending, PENDING_PARITY, pieces);
    }

    /// A pending version of `k` reached its disk (or, degraded, the parity).
    pub(in crate::raid5::array) fn nv_destaged(&mut self, k: BlockAddr) {
        if !self.nv_on() {
            return;
        }
        let available = self.cache.as_ref().expect("a cache").write.is_available(k);
        let at = self.slots();
        let slot = at.remove(&(k, Ver::Pending)).expect("a pending slot");
        if available {
            at.insert((k, Ver::Available), slot);
            let state = AVAILABLE;
            self.set_header(slot, state, k);
        } else {
            self.slot_free(slot);
        }
        self.nv_evictions();
    }

    /// `k`'s available copy is stale (a write bypassed the cache, or a new version
    /// supersedes it): its slot is freed.
    pub(in crate::raid5::array) fn nv_invalidate(&mut self, k: BlockAddr) {
        if !self.nv_on() {
            return;
        }
        if let Some(s) = self.slots().remove(&(k, Ver::Available)) {
            self.slot_free(s);
        }
    }

    /// A host read of request `slot` answered from the caches for the blocks of `sectors`
    /// at `lba` of `disk` not in `misses` (whole-block runs read from disk): from the write
    /// cache's slot, or from the disk a read-cache copy mirrors.
    pub(in crate::raid5::array) fn describe_hits(
        &mut self,
        host_slot: usize,
        disk: usize,
        lba: u64,
        sectors: u32,
        misses: &[(u64, u32)],
    ) {
        if !self.nv_on() {
            return;
        }
        let bs = self.block_sectors_u32();
        let id = self.host.get(host_slot).req.id;
        let geo = self.geo();
        let first = lba / u64::from(bs);
        let last = (lba + u64::from(sectors) - 1) / u64::from(bs);
        for b in first..=last {
            let start = b * u64::from(bs);
            if misses
                .iter()
                .any(|&(m, n)| start >= m && start < m + u64::from(n))
            {
                continue;
            }
            let k = (disk as u32, b);
            let from = match self.newest_slot(k) {
                Some(s) => Source::Nvram(geo.cache_block(s)),
                None => Source::Disk {
                    disk,
                    runs: run(start, bs),
                },
            };
            let logical = self.logical_of(disk, start);
            self.push_move(DataMove {
                disk,
                op: Op::Read,
                lba: logical,
                sectors: bs,
                bytes: Bytes::HostXor {
                    id,
                    pieces: vec![Piece {
                        at: 0,
                        sectors: bs,
                        from,
                    }],
                },
                copies: Vec::new(),
            });
        }
    }

    /// A destage write of `sectors` at `lba` of `disk` starts: each block's pending version
    /// moves from its slot.
    pub(in crate::raid5::array) fn describe_destage_write(
        &mut self,
        disk: usize,
        lba: u64,
        sectors: u32,
    ) {
        if !self.nv_on() {
            return;
        }
        let bs = self.block_sectors_u32();
        let geo = self.geo();
        let group = disk as u32 / self.layout.width();
        for b in lba / u64::from(bs)..(lba + u64::from(sectors)) / u64::from(bs) {
            let k = (disk as u32, b);
            let start = b * u64::from(bs);
            let slot = self.slots()[&(k, Ver::Pending)];
            let (stripe, _) = self.layout.row_of(start).expect("a block lies in a row");
            let parity = self.layout.parity_disk(group, stripe) == disk;
            let logical = if parity {
                0
            } else {
                self.logical_of(disk, start)
            };
            self.push_move(DataMove {
                disk,
                op: Op::Write,
                lba: logical,
                sectors: bs,
                bytes: Bytes::Nvram(geo.cache_block(slot)),
                copies: vec![run(start, bs)],
            });
        }
    }

    /// Recovery's part for the cache: the newest data versions written to their disks, and
    /// the stripes they lie in (whose parity is then recomputed).
    pub(super) fn recover_cache(
        &self,
        image: &[u8],
        geo: Geometry,
    ) -> Result<CacheRepairs, RecoverError> {
        let Some(c) = self.cache.as_ref() else {
            return Ok(Default::default());
        };
        let bs = self.block_sectors_u32();
        let l = &self.layout;
        let blocks_per_disk = l.disk_sectors_used() / u64::from(bs);
        // Per block, its newest data version's slot (dirty over pending).
        let mut newest: BTreeMap<BlockAddr, (u8, u32)> = BTreeMap::new();
        let mut stripes = BTreeSet::new();
        for i in 0..c.write.capacity() as u32 {
            let at = geo.cache_header(i) as usize;
            if at >= image.len() {
                break;
            }
            let h = &image[at..(at + SLOT_BYTES as usize).min(image.len())];
            let state = h[0];
            if state == 0 {
                continue;
            }
            if h.len() < SLOT_BYTES as usize || h[1..4] != [0, 0, 0] || state > AVAILABLE {
                return Err(RecoverError(format!(
                    "NVRAM cache slot {i}: malformed header {:02x?}",
                    &h[..4.min(h.len())]
                )));
            }
            let disk = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes"));
            let block = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes"));
            let row = l.row_of(block * u64::from(bs));
            if disk as usize >= l.disks() || block >= blocks_per_disk || row.is_none() {
                return Err(RecoverError(format!(
                    "NVRAM cache slot {i}: block {block} of disk {disk} is not in this array"
                )));
            }
            if state == PENDING_PARITY {
                // Its round may have written some data and not the parity.
                let (stripe, _) = row.expect("checked");
                stripes.insert((disk / l.width(), stripe));
                continue;
            }
            if state == AVAILABLE {
                continue;
            }
            // A valid header is written after its block: a block missing from the image
            // means the image is damaged, not that the block was zeros.
            if geo.cache_block(i) + u64::from(BLOCK_BYTES) > image.len() as u64 {
                return Err(RecoverError(format!(
                    "NVRAM cache slot {i}: its block lies beyond the image's {} bytes",
                    image.len()
                )));
            }
            let e = newest.entry((disk, block)).or_insert((state, i));
            if state == DIRTY {
                *e = (state, i);
            }
        }
        let mut moves = Vec::new();
        for ((disk, block), (_, slot)) in newest {
            let start = block * u64::from(bs);
            let group = disk / l.width();
            let (stripe, _) = l.row_of(start).expect("checked when read");
            if l.parity_disk(group, stripe) == disk as usize {
                return Err(RecoverError(format!(
                    "NVRAM cache slot {slot}: data on the parity of stripe {stripe}"
                )));
            }
            stripes.insert((group, stripe));
            moves.push(DataMove {
                disk: disk as usize,
                op: Op::Write,
                lba: self.logical_of(disk as usize, start),
                sectors: bs,
                bytes: Bytes::Nvram(geo.cache_block(slot)),
                copies: vec![run(start, bs)],
            });
        }
        Ok((moves, stripes))
    }
}
