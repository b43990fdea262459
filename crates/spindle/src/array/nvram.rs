//! The NVRAM table of pending writes (dissertation 3.4.2) as the bytes a controller keeps
//! across a crash.
//!
//! Every entry of the table — a piece with a write in flight or copies still to propagate —
//! has a record saying which copies hold its newest *acknowledged* bytes ("the first
//! copy's location is enough"). The record is written when the entry is made (the copies
//! then fresh), rewritten when a first copy is acknowledged (before the host is answered)
//! and cleared when every copy holds the newest bytes. After a crash, copying a fresh copy
//! over the others makes every copy of every recorded piece hold the newest acknowledged
//! bytes — or, for a write not yet acknowledged, one consistent version. Records of
//! foreground writes are the write-intent log a mirror needs for the same reason.
//!
//! Image: a [`HEADER_BYTES`] header (magic, then disks, Dr, Dm, columns as u32 and the
//! column's sectors as u64, all little-endian) and slots of [`RECORD_BYTES`]: state u32
//! (0 free, 1 valid), column u32, offset u64, sectors u32, reserved u32, fresh-copy mask
//! u64 (bit m·Dr + k: replica k on mirror m).
//!
//! No store to NVRAM is assumed atomic beyond one aligned word (a crash may cut a longer
//! one, as a kill can cut the emulator's copy into its mapped image), so a record becomes
//! valid last: an insert writes the record's body, then its state word (cut between, the
//! slot stays free — harmless, as no copy of the piece is written yet); an update rewrites
//! only the fresh-copy mask (the piece is the slot's); a removal, only the state word.

use crate::engine::{NvramWrite, RecoverError};
use std::collections::VecDeque;

const MAGIC: &[u8; 8] = b"SPNVTAB1";
pub const HEADER_BYTES: u64 = 32;
pub const RECORD_BYTES: u64 = 32;
const VALID: u32 = 1;
/// A record's state word, and where its fresh-copy mask lies in it.
const STATE_BYTES: u64 = 4;
const FRESH_AT: u64 = 24;

/// What an image was made for; recovery refuses an image of another layout.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub disks: u32,
    pub dr: u32,
    pub dm: u32,
    pub columns: u32,
    pub column_sectors: u64,
}

impl Header {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_BYTES as usize);
        b.extend_from_slice(MAGIC);
        for v in [self.disks, self.dr, self.dm, self.columns] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&self.column_sectors.to_le_bytes());
        b
    }
}

/// One pending piece and its fresh copies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub column: u32,
    pub offset: u64,
    pub sectors: u32,
    pub fresh: u64,
}

impl Record {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(RECORD_BYTES as usize);
        b.extend_from_slice(&VALID.to_le_bytes());
        b.extend_from_slice(&self.column.to_le_bytes());
        b.extend_from_slice(&self.offset.to_le_bytes());
        b.extend_from_slice(&self.sectors.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.fresh.to_le_bytes());
        b
    }
}

/// The table's slots and the writes not yet polled.
pub struct NvramTable {
    free: Vec<u32>,
    next: u32,
    writes: VecDeque<NvramWrite>,
}

impl NvramTable {
    /// An empty table; its first write is the header.
    pub fn new(header: &Header) -> NvramTable {
        let mut writes = VecDeque::new();
        writes.push_back(NvramWrite::literal(0, header.encode()));
        NvramTable {
            free: Vec::new(),
            next: 0,
            writes,
        }
    }

    fn at(slot: u32) -> u64 {
        HEADER_BYTES + u64::from(slot) * RECORD_BYTES
    }

    /// Records a new entry; returns its slot.
    pub fn insert(&mut self, r: &Record) -> u32 {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        });
        let bytes = r.encode();
        self.writes.push_back(NvramWrite::literal(
            Self::at(slot) + STATE_BYTES,
            bytes[STATE_BYTES as usize..].to_vec(),
        ));
        self.writes.push_back(NvramWrite::literal(
            Self::at(slot),
            bytes[..STATE_BYTES as usize].to_vec(),
        ));
        slot
    }

    /// Rewrites the fresh copies of the entry in `slot` (`r` is the piece it was inserted
    /// with).
    pub fn update(&mut self, slot: u32, r: &Record) {
        self.writes.push_back(NvramWrite::literal(
            Self::at(slot) + FRESH_AT,
            r.fresh.to_le_bytes().to_vec(),
        ));
    }

    pub fn remove(&mut self, slot: u32) {
        self.writes.push_back(NvramWrite::literal(
            Self::at(slot),
            vec![0; STATE_BYTES as usize],
        ));
        self.free.push(slot);
    }

    pub fn poll(&mut self) -> Option<NvramWrite> {
        self.writes.pop_front()
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The valid records of `image`, made for `want`. An empty image has none.
pub fn parse(image: &[u8], want: &Header) -> Result<Vec<Record>, RecoverError> {
    if image.is_empty() {
        return Ok(Vec::new());
    }
    let err = |m: String| Err(RecoverError(format!("NVRAM table: {m}")));
    if image.len() < HEADER_BYTES as usize || &image[..8] != MAGIC {
        return err("not a spindle NVRAM table image (bad magic)".into());
    }
    let got = Header {
        disks: u32_at(image, 8),
        dr: u32_at(image, 12),
        dm: u32_at(image, 16),
        columns: u32_at(image, 20),
        column_sectors: u64_at(image, 24),
    };
    if got != *want {
        return err(format!("made for {got:?}, this array is {want:?}"));
    }
    let body = &image[HEADER_BYTES as usize..];
    if !body.len().is_multiple_of(RECORD_BYTES as usize) {
        return err(format!(
            "{} bytes of records: not a whole number of {RECORD_BYTES}-byte records",
            body.len()
        ));
    }
    let mut out = Vec::new();
    for (i, b) in body.chunks_exact(RECORD_BYTES as usize).enumerate() {
        match u32_at(b, 0) {
            0 => continue,
            VALID => {}
            s => return err(format!("record {i}: unknown state {s}")),
        }
        let r = Record {
            column: u32_at(b, 4),
            offset: u64_at(b, 8),
            sectors: u32_at(b, 16),
            fresh: u64_at(b, 24),
        };
        let copies = want.dr * want.dm;
        let mask = if copies >= 64 {
            u64::MAX
        } else {
            (1u64 << copies) - 1
        };
        let end = r.offset.checked_add(u64::from(r.sectors));
        if r.column >= want.columns
            || r.sectors == 0
            || !matches!(end, Some(e) if e <= want.column_sectors)
            || r.fresh == 0
            || r.fresh & !mask != 0
        {
            return err(format!("record {i}: impossible entry {r:?}"));
        }
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: Header = Header {
        disks: 4,
        dr: 2,
        dm: 2,
        columns: 2,
        column_sectors: 1000,
    };

    /// Stores `bytes` at `offset`, growing the image with zeros.
    fn put(image: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
        let end = offset as usize + bytes.len();
        if image.len() < end {
            image.resize(end, 0);
        }
        image[offset as usize..end].copy_from_slice(bytes);
    }

    fn apply(image: &mut Vec<u8>, t: &mut NvramTable) {
        while let Some(w) = t.poll() {
            put(
                image,
                w.offset,
                w.as_literal().expect("a literal NVRAM write"),
            );
        }
    }

    #[test]
    fn the_image_holds_exactly_the_live_records() {
        let mut t = NvramTable::new(&H);
        let mut image = Vec::new();
        let r = |o, f| Record {
            column: 1,
            offset: o,
            sectors: 8,
            fresh: f,
        };
        let a = t.insert(&r(0, 0b1111));
        let b = t.insert(&r(8, 0b1111));
        t.update(a, &r(0, 0b0100));
        t.remove(b);
        let c = t.insert(&r(16, 0b0001));
        assert_eq!(c, b, "a freed slot is reused");
        apply(&mut image, &mut t);
        assert_eq!(
            parse(&image, &H).unwrap(),
            vec![r(0, 0b0100), r(16, 0b0001)]
        );
        assert_eq!(parse(&[], &H).unwrap(), vec![]);
    }

    /// A crash after any prefix of the table's writes — one write cut anywhere but inside
    /// an aligned word — never leaves a valid record with another entry's piece or mask:
    /// a slot reused for a new entry is free until the new record is whole.
    #[test]
    fn a_cut_write_never_makes_a_record_of_two_entries() {
        let old = Record {
            column: 1,
            offset: 40,
            sectors: 24,
            fresh: 0b0010,
        };
        let new = Record {
            column: 0,
            offset: 8,
            sectors: 8,
            fresh: 0b1111,
        };
        let mut t = NvramTable::new(&H);
        let mut image = Vec::new();
        let slot = t.insert(&old);
        t.remove(slot);
        apply(&mut image, &mut t);
        assert_eq!(t.insert(&new), slot);
        t.update(
            slot,
            &Record {
                fresh: 0b0100,
                ..new
            },
        );
        let writes: Vec<NvramWrite> = std::iter::from_fn(|| t.poll()).collect();
        for (i, w) in writes.iter().enumerate() {
            // The writes before it whole, then its first `cut` bytes (whole 4-byte words).
            for cut in (0..w.as_literal().expect("a literal NVRAM write").len()).step_by(4) {
                let mut img = image.clone();
                for done in &writes[..i] {
                    put(
                        &mut img,
                        done.offset,
                        done.as_literal().expect("a literal NVRAM write"),
                    );
                }
                put(
                    &mut img,
                    w.offset,
                    &w.as_literal().expect("a literal NVRAM write")[..cut],
                );
                let records = parse(&img, &H).unwrap();
                assert!(
                    records.is_empty()
                        || records == vec![new]
                        || records
                            == vec![Record {
                                fresh: 0b0100,
                                ..new
                            }],
                    "write {i} cut after {cut} bytes: {records:?}"
                );
            }
        }
    }

    #[test]
    fn a_foreign_or_damaged_image_is_refused() {
        let mut t = NvramTable::new(&H);
        t.insert(&Record {
            column: 0,
            offset: 0,
            sectors: 8,
            fresh: 1,
        });
        let mut image = Vec::new();
        apply(&mut image, &mut t);
        let other = Header { dr: 3, ..H };
        assert!(parse(&image, &other).unwrap_err().0.contains("made for"));
        let mut bad = image.clone();
        bad[0] = b'X';
        assert!(parse(&bad, &H).unwrap_err().0.contains("magic"));
        assert!(parse(&image[..image.len() - 1], &H)
            .unwrap_err()
            .0
            .contains("whole number"));
        for (at, v) in [(4, 9u8), (24, 0), (24 + 1, 1), (0, 7)] {
            let mut bad = image.clone();
            let i = HEADER_BYTES as usize + at;
            bad[i] = v;
            assert!(parse(&bad, &H).is_err(), "byte {at} set to {v} accepted");
        }
    }
}
