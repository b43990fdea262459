//! The page map's persistence (paged-disk paper, 3.4, first design, after the EW-Array's
//! map log): every page-location change is a record `(page u32, state u32)` appended to an
//! NVRAM ring; when half the ring is used the records are flushed to a log region on the
//! disk (a map-logging write); when the log region is full the next flush is a checkpoint
//! of every page's state instead, into the checkpoint copy not holding the valid one, and
//! the log restarts behind it. Recovery reads the valid checkpoint (or starts from the
//! initial map), the log's durable sectors and the NVRAM records, in that order.
//!
//! **Region** (the disk's last LBAs, outside the page slots): checkpoint A, checkpoint B
//! (`ckpt_sectors` each: 4 bytes per page), then the log (`log_sectors`).
//!
//! **NVRAM image** of disk `d`, from byte `d · nvram_bytes(cap)`: a 32-byte header —
//! magic u32, valid checkpoint u32 (0 none, 1 A, 2 B), durable log sectors u64, records
//! dropped u64 (the ring's head), records appended u64 (its tail) — then the ring of `cap`
//! 8-byte records, little-endian. A record is written before the header that counts it.

use crate::engine::NvramWrite;
use std::collections::VecDeque;

const MAGIC: u32 = 0x5047_4d31; // "PGM1"
pub const HEADER_BYTES: u64 = 32;
/// A log sector's padding record (no page).
const PAD: u32 = u32::MAX;

/// The region's place and sizes on a disk.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub first_lba: u64,
    pub ckpt_sectors: u64,
    pub log_sectors: u64,
}

impl Region {
    pub fn sectors(&self) -> u64 {
        2 * self.ckpt_sectors + self.log_sectors
    }
    /// Checkpoint copy `c` (1 or 2).
    pub fn ckpt_lba(&self, c: u32) -> u64 {
        self.first_lba + u64::from(c - 1) * self.ckpt_sectors
    }
    pub fn log_lba(&self) -> u64 {
        self.first_lba + 2 * self.ckpt_sectors
    }
}

/// What a map-logging disk write carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flush {
    /// Records `upto − count .. upto` (ring indices) to log sectors `at .. at + sectors`.
    Log {
        at: u64,
        sectors: u64,
        upto: u64,
        bytes: Vec<u8>,
    },
    /// Every page's state as of ring index `upto`, into checkpoint copy `copy`.
    Checkpoint {
        copy: u32,
        sectors: u64,
        upto: u64,
        bytes: Vec<u8>,
    },
}

/// One disk's map log.
#[derive(Clone, Debug)]
pub struct MapLog {
    pub region: Region,
    cap: u64,
    sector_bytes: u64,
    ring: Vec<(u32, u32)>,
    head: u64,
    tail: u64,
    /// Records durable on disk, not yet dropped from the ring (in flight: flushing).
    flushing: bool,
    ckpt: u32,
    durable_sectors: u64,
    /// The NVRAM image's base offset for this disk.
    base: u64,
    /// NVRAM writes to hand to the driver (only with data moves on).
    pub emit: bool,
    pub out: VecDeque<NvramWrite>,
}

impl MapLog {
    pub fn new(region: Region, cap: u64, sector_bytes: u32, base: u64) -> MapLog {
        assert!(cap >= 8, "the NVRAM ring holds at least 8 records");
        MapLog {
            region,
            cap,
            sector_bytes: u64::from(sector_bytes),
            ring: vec![(0, 0); cap as usize],
            head: 0,
            tail: 0,
            flushing: false,
            ckpt: 0,
            durable_sectors: 0,
            base,
            emit: false,
            out: VecDeque::new(),
        }
    }

    /// Bytes of NVRAM a disk's log uses with a ring of `cap` records.
    pub fn nvram_bytes(cap: u64) -> u64 {
        HEADER_BYTES + 8 * cap
    }

    /// Records in NVRAM.
    pub fn pending(&self) -> u64 {
        self.tail - self.head
    }

    /// Room for `n` more records.
    /// Records the NVRAM ring holds.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    pub fn has_room(&self, n: u64) -> bool {
        self.pending() + n <= self.cap
    }

    pub fn flushing(&self) -> bool {
        self.flushing
    }

    /// A flush should start: half the ring used (or no room for a write's records).
    pub fn flush_due(&self) -> bool {
        !self.flushing
            && self.pending() > 0
            && (self.pending() * 2 >= self.cap || !self.has_room(4))
    }

    pub fn append(&mut self, page: u32, state: u32) {
        assert!(
            self.has_room(1),
            "the NVRAM ring is full: writes wait for a flush"
        );
        let i = self.tail;
        self.ring[(i % self.cap) as usize] = (page, state);
        self.tail += 1;
        if self.emit {
            let mut rec = Vec::with_capacity(8);
            rec.extend_from_slice(&page.to_le_bytes());
            rec.extend_from_slice(&state.to_le_bytes());
            self.out.push_back(NvramWrite::literal(
                self.base + HEADER_BYTES + 8 * (i % self.cap),
                rec,
            ));
            self.push_header();
        }
    }

    fn header(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(HEADER_BYTES as usize);
        h.extend_from_slice(&MAGIC.to_le_bytes());
        h.extend_from_slice(&self.ckpt.to_le_bytes());
        h.extend_from_slice(&self.durable_sectors.to_le_bytes());
        h.extend_from_slice(&self.head.to_le_bytes());
        h.extend_from_slice(&self.tail.to_le_bytes());
        h
    }

    fn push_header(&mut self) {
        let h = self.header();
        self.out.push_back(NvramWrite::literal(self.base, h));
    }

    /// Emits the whole image (after recovery, on an empty image).
    pub fn emit_image(&mut self) {
        if !self.emit {
            return;
        }
        for i in self.head..self.tail {
            let (p, s) = self.ring[(i % self.cap) as usize];
            let mut rec = p.to_le_bytes().to_vec();
            rec.extend_from_slice(&s.to_le_bytes());
            self.out.push_back(NvramWrite::literal(
                self.base + HEADER_BYTES + 8 * (i % self.cap),
                rec,
            ));
        }
        self.push_header();
    }

    /// Starts a flush of the NVRAM records (a checkpoint of `states` when the log region
    /// cannot take them).
    pub fn start_flush(&mut self, states: &[u32]) -> Flush {
        assert!(!self.flushing, "one map-logging write at a time");
        self.flushing = true;
        let upto = self.tail;
        let n = upto - self.head;
        let sectors = (n * 8).div_ceil(self.sector_bytes).max(1);
        if self.durable_sectors + sectors <= self.region.log_sectors {
            let mut bytes = Vec::with_capacity((sectors * self.sector_bytes) as usize);
            for i in self.head..upto {
                let (p, s) = self.ring[(i % self.cap) as usize];
                bytes.extend_from_slice(&p.to_le_bytes());
                bytes.extend_from_slice(&s.to_le_bytes());
            }
            while (bytes.len() as u64) < sectors * self.sector_bytes {
                bytes.extend_from_slice(&PAD.to_le_bytes());
            }
            return Flush::Log {
                at: self.durable_sectors,
                sectors,
                upto,
                bytes,
            };
        }
        let copy = if self.ckpt == 1 { 2 } else { 1 };
        let mut bytes = Vec::with_capacity((self.region.ckpt_sectors * self.sector_bytes) as usize);
        for s in states {
            bytes.extend_from_slice(&s.to_le_bytes());
        }
        bytes.resize((self.region.ckpt_sectors * self.sector_bytes) as usize, 0);
        Flush::Checkpoint {
            copy,
            sectors: self.region.ckpt_sectors,
            upto,
            bytes,
        }
    }

    /// The flush's write is on disk: its records leave NVRAM.
    pub fn flush_done(&mut self, f: &Flush) {
        assert!(self.flushing);
        self.flushing = false;
        match *f {
            Flush::Log { sectors, upto, .. } => {
                self.durable_sectors += sectors;
                self.head = upto;
            }
            Flush::Checkpoint { copy, upto, .. } => {
                self.ckpt = copy;
                self.durable_sectors = 0;
                self.head = upto;
            }
        }
        if self.emit {
            self.push_header();
        }
    }

    /// Sectors a recovery reads now: the valid checkpoint and the durable log.
    pub fn recovery_sectors(&self) -> u64 {
        let c = if self.ckpt == 0 {
            0
        } else {
            self.region.ckpt_sectors
        };
        c + self.durable_sectors
    }
}

/// What a recovery found in one disk's NVRAM image.
pub struct Image {
    pub ckpt: u32,
    pub durable_sectors: u64,
    pub records: Vec<(u32, u32)>,
    pub head: u64,
    pub tail: u64,
}

/// Parses disk image `img` (this disk's bytes of the NVRAM image; empty: a fresh disk).
pub fn parse_image(img: &[u8], cap: u64) -> Result<Option<Image>, String> {
    if img.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let word = |at: usize, n: usize| -> Result<u64, String> {
        let b = img
            .get(at..at + n)
            .ok_or_else(|| format!("the NVRAM image ends at byte {}", img.len()))?;
        let mut w = [0u8; 8];
        w[..n].copy_from_slice(b);
        Ok(u64::from_le_bytes(w))
    };
    if word(0, 4)? != u64::from(MAGIC) {
        return Err("the NVRAM image has no page map log header".into());
    }
    let ckpt = u32::try_from(word(4, 4)?).map_err(|_| "bad checkpoint")?;
    if ckpt > 2 {
        return Err(format!("valid checkpoint {ckpt}: expected 0, 1 or 2"));
    }
    let durable_sectors = word(8, 8)?;
    let (head, tail) = (word(16, 8)?, word(24, 8)?);
    if head > tail || tail - head > cap {
        return Err(format!("ring {head}..{tail} does not fit {cap} records"));
    }
    let mut records = Vec::new();
    for i in head..tail {
        let at = (HEADER_BYTES + 8 * (i % cap)) as usize;
        let p = word(at, 4)? as u32;
        let s = word(at + 4, 4)? as u32;
        records.push((p, s));
    }
    Ok(Some(Image {
        ckpt,
        durable_sectors,
        records,
        head,
        tail,
    }))
}

/// The records of log sectors' bytes (padding skipped).
pub fn parse_log(bytes: &[u8]) -> Vec<(u32, u32)> {
    bytes
        .chunks_exact(8)
        .map(|c| {
            (
                u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
        .filter(|&(p, _)| p != PAD)
        .collect()
}

impl MapLog {
    /// Restores the NVRAM state found by recovery.
    pub fn restore(&mut self, img: &Image) {
        self.ckpt = img.ckpt;
        self.durable_sectors = img.durable_sectors;
        self.head = img.head;
        self.tail = img.head;
        for &(p, s) in &img.records {
            self.ring[(self.tail % self.cap) as usize] = (p, s);
            self.tail += 1;
        }
        assert_eq!(self.tail, img.tail);
    }
}
