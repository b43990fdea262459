//! The bytes behind the parity controller's operations (`crate::engine::data`), and its
//! NVRAM: a write-intent record per stripe update in progress.
//!
//! - A host read moves the disk's bytes into the host's buffer; a reconstruct read answers
//!   with the XOR of the other disks' rows (`Bytes::HostXor`).
//! - A stripe update's writes are described when its write phase starts, the parity first:
//!   the parity's move is the XOR of what the disks hold then (old data, old parity: the
//!   data writes are performed after it) and the host's new data. A read-modify-write's new
//!   parity is the old parity XOR, for each piece, old and new data; the lost unit's old
//!   data (degraded) is the XOR of its row's other units and parity. A reconstruct-write's
//!   parity is the XOR of the rows' new data and the untouched data; a full stripe's, of the
//!   new data.
//! - A rebuild step writes the XOR of the stripe's units on the survivors to the spare.
//!
//! **NVRAM.** A crash between an update's data and parity writes leaves a stripe whose
//! parity is not the XOR of its data (the RAID-5 write hole). Each update records its
//! stripe in NVRAM before any of its writes (the record is an NVRAM write of the same input
//! as, or an earlier one than, its write phase) and clears it once every write is done;
//! recovery recomputes the parity of every recorded stripe from its data. The host wrote
//! nothing acknowledged into such a stripe that is not on disk (a write is answered after
//! its stripes' writes), so no acknowledged byte is lost.
//!
//! With the write cache the image also holds the cache's blocks (the `cache` module).
//!
//! Image: a 48-byte header (magic, version, the layout: disks, group width, stripe unit,
//! stripes per group; the write cache's blocks C; zeros), C 16-byte cache block headers,
//! C blocks of 4 KiB from the next 4 KiB boundary, then 16-byte intent slots: a state byte
//! (1: in use), three zero bytes, the group (u32 LE) and the stripe (u64 LE). A slot's body
//! is written before its state byte.

mod cache;

use super::{Raid5Array, StripeUpdate, UnitPiece, BLOCK_BYTES};
use crate::drive::Run;
use crate::engine::{Bytes, DataMove, NvramWrite, Piece, RecoverError, Source};
use crate::Op;
use std::collections::{HashMap, VecDeque};

const MAGIC: &[u8; 8] = b"SPNDLR5\0";
const VERSION: u32 = 2;
const HEADER_BYTES: u64 = 48;
const SLOT_BYTES: u64 = 16;

/// Where things lie in an image of a controller whose write cache has `c` blocks.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct Geometry {
    c: u64,
}

impl Geometry {
    fn cache_header(self, i: u32) -> u64 {
        HEADER_BYTES + u64::from(i) * SLOT_BYTES
    }

    fn data_base(self) -> u64 {
        (HEADER_BYTES + self.c * SLOT_BYTES).div_ceil(u64::from(BLOCK_BYTES))
            * u64::from(BLOCK_BYTES)
    }

    fn cache_block(self, i: u32) -> u64 {
        self.data_base() + u64::from(i) * u64::from(BLOCK_BYTES)
    }

    fn intent(self, j: u32) -> u64 {
        self.data_base() + self.c * u64::from(BLOCK_BYTES) + u64::from(j) * SLOT_BYTES
    }
}

#[derive(Default)]
pub(super) struct DataState {
    geo: Geometry,
    moves: VecDeque<DataMove>,
    nvram: VecDeque<NvramWrite>,
    /// Stripes with an update in progress → their slot.
    intents: HashMap<(u32, u64), u32>,
    free: Vec<u32>,
    next: u32,
    cache: cache::Slots,
}

fn run(lba: u64, sectors: u32) -> Vec<Run> {
    vec![Run { lba, sectors }]
}

fn disk_piece(at: u32, disk: usize, lba: u64, sectors: u32) -> Piece {
    Piece {
        at,
        sectors,
        from: Source::Disk {
            disk,
            runs: run(lba, sectors),
        },
    }
}

impl Raid5Array {
    fn header(&self) -> Vec<u8> {
        let l = &self.layout;
        let mut h = Vec::with_capacity(HEADER_BYTES as usize);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&(l.disks() as u32).to_le_bytes());
        h.extend_from_slice(&l.width().to_le_bytes());
        // 0: track-aligned, the unit varies by stripe.
        h.extend_from_slice(&l.fixed_unit().unwrap_or(0).to_le_bytes());
        h.extend_from_slice(&l.stripes().to_le_bytes());
        let c = self.cache.as_ref().map_or(0, |c| c.write.capacity() as u32);
        h.extend_from_slice(&c.to_le_bytes());
        h.resize(HEADER_BYTES as usize, 0);
        h
    }

    /// Turns data moves on.
    pub(super) fn enable_data(&mut self) -> bool {
        if self.data.is_none() {
            let c = match self.cache.as_mut() {
                Some(c) => {
                    c.write.track_evictions();
                    c.write.capacity() as u64
                }
                None => 0,
            };
            let mut d = DataState {
                geo: Geometry { c },
                ..DataState::default()
            };
            d.nvram.push_back(NvramWrite::literal(0, self.header()));
            self.data = Some(Box::new(d));
        }
        true
    }

    /// Queues a data move (data moves are on).
    fn push_move(&mut self, mv: DataMove) {
        self.data.as_mut().expect("data on").moves.push_back(mv);
    }

    pub(super) fn next_move(&mut self) -> Option<DataMove> {
        self.data.as_mut()?.moves.pop_front()
    }

    pub(super) fn next_nvram(&mut self) -> Option<NvramWrite> {
        self.data.as_mut()?.nvram.pop_front()
    }

    /// The array address of sector `lba` of data on `disk`.
    fn logical_of(&self, disk: usize, lba: u64) -> u64 {
        let l = &self.layout;
        let group = disk as u32 / l.width();
        let (stripe, offset) = l.row_of(lba).expect("data lies in a stripe's row");
        let unit = (0..l.width() - 1)
            .find(|&k| l.data_disk(group, stripe, k) == disk)
            .expect("a host read goes to a data unit");
        l.logical(group, stripe, unit, offset)
    }

    /// A host read of `sectors` at `lba` of `disk` for request `slot` starts.
    pub(super) fn describe_read(&mut self, slot: usize, disk: usize, lba: u64, sectors: u32) {
        if self.data.is_none() {
            return;
        }
        let id = self.host.get(slot).req.id;
        let logical = self.logical_of(disk, lba);
        self.push_move(DataMove {
            disk,
            op: Op::Read,
            lba: logical,
            sectors,
            bytes: Bytes::Host(id),
            copies: vec![run(lba, sectors)],
        });
    }

    /// A reconstruct read of `sectors` at `lba` of lost `disk` for request `slot`: the XOR of
    /// the same rows of `others`.
    pub(super) fn describe_recon(
        &mut self,
        slot: usize,
        disk: usize,
        others: &[usize],
        lba: u64,
        sectors: u32,
    ) {
        if self.data.is_none() {
            return;
        }
        let id = self.host.get(slot).req.id;
        let logical = self.logical_of(disk, lba);
        let pieces = others
            .iter()
            .map(|&d| disk_piece(0, d, lba, sectors))
            .collect();
        self.push_move(DataMove {
            disk,
            op: Op::Read,
            lba: logical,
            sectors,
            bytes: Bytes::HostXor { id, pieces },
            copies: Vec::new(),
        });
    }

    /// The rebuild writes stripe `stripe`'s unit on `spare` from `survivors`.
    pub(super) fn describe_rebuild(&mut self, spare: usize, survivors: &[usize], stripe: u64) {
        if self.data.is_none() {
            return;
        }
        let lba = self.layout.stripe_lba(stripe);
        let unit = self.layout.unit_of(stripe);
        let pieces = survivors
            .iter()
            .map(|&d| disk_piece(0, d, lba, unit))
            .collect();
        self.push_move(DataMove {
            disk: spare,
            op: Op::Write,
            lba: 0,
            sectors: unit,
            bytes: Bytes::Xor(pieces),
            copies: vec![run(lba, unit)],
        });
    }

    /// Update `u` is planned: its stripe is recorded in NVRAM, and its write moves are
    /// prepared (`parity`: its disk and rows, absent when the parity is lost; `lost`: the
    /// failed disk of the stripe; `full`: a full-stripe write; `reconstruct`: a
    /// reconstruct-write).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn prepare_update(
        &mut self,
        u: usize,
        pieces: &[UnitPiece],
        parity: Option<(usize, u32, u32)>,
        lost: Option<usize>,
        full: bool,
        reconstruct: bool,
    ) {
        if self.data.is_none() {
            return;
        }
        let key = self.updates[u].key;
        let (group, stripe) = key;
        let id = self.host.get(self.updates[u].slot).req.id;
        let l = &self.layout;
        let base = l.stripe_lba(stripe);
        let data_units = l.width() - 1;
        let host = |p: &UnitPiece, at: u32| Piece {
            at,
            sectors: p.sectors,
            from: Source::Host {
                id,
                lba: l.logical(group, stripe, p.unit, p.offset),
            },
        };
        let mut moves = Vec::new();
        if let Some((pdisk, a, n)) = parity {
            let mut xs = Vec::new();
            if full {
                xs.extend(pieces.iter().map(|p| host(p, p.offset)));
            } else if reconstruct {
                // Each unit's rows: new data where the write covers them, old elsewhere.
                for k in 0..data_units {
                    let d = l.data_disk(group, stripe, k);
                    let (pa, pb) = match pieces.iter().find(|p| p.unit == k) {
                        Some(p) => {
                            xs.push(host(p, p.offset - a));
                            (p.offset, p.offset + p.sectors)
                        }
                        None => (a + n, a + n),
                    };
                    if pa > a {
                        xs.push(disk_piece(0, d, base + u64::from(a), pa.min(a + n) - a));
                    }
                    if pb < a + n && pb >= a {
                        xs.push(disk_piece(pb - a, d, base + u64::from(pb), a + n - pb));
                    }
                }
            } else {
                // Read-modify-write: old parity, and per piece old ⊕ new data; a lost unit's
                // old data is its row's parity and other units.
                xs.push(disk_piece(0, pdisk, base + u64::from(a), n));
                for p in pieces {
                    let d = l.data_disk(group, stripe, p.unit);
                    let at = p.offset - a;
                    let lba = base + u64::from(p.offset);
                    xs.push(host(p, at));
                    if Some(d) == lost {
                        xs.push(disk_piece(at, pdisk, lba, p.sectors));
                        for k in (0..data_units).filter(|&k| k != p.unit) {
                            let o = l.data_disk(group, stripe, k);
                            xs.push(disk_piece(at, o, lba, p.sectors));
                        }
                    } else {
                        xs.push(disk_piece(at, d, lba, p.sectors));
                    }
                }
            }
            moves.push(DataMove {
                disk: pdisk,
                op: Op::Write,
                lba: 0,
                sectors: n,
                bytes: Bytes::Xor(xs),
                copies: vec![run(base + u64::from(a), n)],
            });
        }
        for p in pieces {
            let d = l.data_disk(group, stripe, p.unit);
            if Some(d) == lost {
                continue;
            }
            moves.push(DataMove {
                disk: d,
                op: Op::Write,
                lba: l.logical(group, stripe, p.unit, p.offset),
                sectors: p.sectors,
                bytes: Bytes::Host(id),
                copies: vec![run(base + u64::from(p.offset), p.sectors)],
            });
        }
        self.updates[u].moves = moves;
        self.record_intent(key);
    }

    fn record_intent(&mut self, key: (u32, u64)) {
        let d = self.data.as_mut().expect("data on");
        if d.intents.contains_key(&key) {
            return;
        }
        let slot = d.free.pop().unwrap_or_else(|| {
            d.next += 1;
            d.next - 1
        });
        d.intents.insert(key, slot);
        let at = d.geo.intent(slot);
        let mut body = Vec::with_capacity(12);
        body.extend_from_slice(&key.0.to_le_bytes());
        body.extend_from_slice(&key.1.to_le_bytes());
        d.nvram.push_back(NvramWrite::literal(at + 4, body));
        d.nvram.push_back(NvramWrite::literal(at, vec![1, 0, 0, 0]));
    }

    /// Update `u`'s write phase starts: its moves, the parity's first.
    pub(super) fn describe_writes(&mut self, u: usize) {
        let Some(d) = self.data.as_mut() else {
            return;
        };
        d.moves.extend(std::mem::take(&mut self.updates[u].moves));
    }

    /// Update `done` finished: its stripe's record is cleared.
    pub(super) fn update_done(&mut self, done: &StripeUpdate) {
        let Some(d) = self.data.as_mut() else {
            return;
        };
        if let Some(slot) = d.intents.remove(&done.key) {
            let at = d.geo.intent(slot);
            d.nvram.push_back(NvramWrite::literal(at, vec![0; 4]));
            d.free.push(slot);
        }
    }

    /// Recovery (see the module docs): every cached data block newer than the disks is
    /// written to its disk, then the parity of every stripe recorded in `image` or holding
    /// such a block is recomputed from its data.
    pub(super) fn recover_image(&mut self, image: &[u8]) -> Result<Vec<DataMove>, RecoverError> {
        if image.iter().all(|&b| b == 0) {
            return Ok(Vec::new());
        }
        let err = |m: String| RecoverError(m);
        if image.len() < HEADER_BYTES as usize || &image[..8] != MAGIC {
            return Err(err(
                "the NVRAM image is not a parity array's (bad magic)".into()
            ));
        }
        let want = self.header();
        if image[..HEADER_BYTES as usize] != want[..] {
            return Err(err(format!(
                "the NVRAM image was written by a different parity array (header {:02x?}, \
                 this array's {:02x?})",
                &image[8..HEADER_BYTES as usize],
                &want[8..]
            )));
        }
        let geo = self.data.as_ref().expect("data on").geo;
        let (mut repairs, mut stripes) = self.recover_cache(image, geo)?;
        let l = &self.layout;
        let slot_at = |at: u64| -> &[u8] {
            let a = (at as usize).min(image.len());
            &image[a..(a + SLOT_BYTES as usize).min(image.len())]
        };
        for j in 0.. {
            let at = geo.intent(j);
            if at >= image.len() as u64 {
                break;
            }
            let s = slot_at(at);
            if s[0] == 0 {
                continue;
            }
            if s.len() < SLOT_BYTES as usize || s[0] != 1 || s[1..4] != [0, 0, 0] {
                return Err(err(format!(
                    "NVRAM intent slot {j}: malformed state {:02x?}",
                    &s[..4.min(s.len())]
                )));
            }
            let group = u32::from_le_bytes(s[4..8].try_into().expect("4 bytes"));
            let stripe = u64::from_le_bytes(s[8..16].try_into().expect("8 bytes"));
            if group >= l.groups() || stripe >= l.stripes() {
                return Err(err(format!(
                    "NVRAM intent slot {j}: stripe {stripe} of group {group} is not in this \
                     array"
                )));
            }
            stripes.insert((group, stripe));
        }
        for (group, stripe) in stripes {
            let lba = l.stripe_lba(stripe);
            let unit = l.unit_of(stripe);
            let pieces = (0..l.width() - 1)
                .map(|k| disk_piece(0, l.data_disk(group, stripe, k), lba, unit))
                .collect();
            repairs.push(DataMove {
                disk: l.parity_disk(group, stripe),
                op: Op::Write,
                lba: 0,
                sectors: unit,
                bytes: Bytes::Xor(pieces),
                copies: vec![run(lba, unit)],
            });
        }
        Ok(repairs)
    }
}
