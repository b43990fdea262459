//! The pending-write table's index by position: per granule of the layout's data (`1 <<
//! shift` sectors of one column), the entries touching it.
//!
//! An entry overlapping a range shares a sector, so a granule, with it: a search reads only
//! the range's own granules. A bit per granule answers most searches ("nothing here") from
//! memory small enough to stay in cache; a hash map holds the lists of the granules in use
//! (about one per entry), so adding or removing an entry touches a cache line or two, not
//! the path of a search tree.

use super::table::Key;
use crate::layout::Layout;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

pub(super) struct PieceIndex {
    shift: u32,
    column_granules: u64,
    /// Bit g: some entry touches granule g.
    nonzero: Vec<u64>,
    lists: HashMap<u32, Ids, BuildHasherDefault<GranuleHasher>>,
}

/// The entries touching one granule (mostly one), with their pieces.
enum Ids {
    One(Key, usize),
    Many(Vec<(Key, usize)>),
}

impl PieceIndex {
    /// `used`: false for an index that never holds an entry (a layout with one copy).
    pub fn new(layout: &Layout, used: bool) -> PieceIndex {
        let (columns, sectors) = (u64::from(layout.columns()), layout.column_sectors());
        let mut shift = 6;
        while columns * (sectors >> shift).saturating_add(1) > 1 << 20 {
            shift += 1;
        }
        let column_granules = (sectors >> shift) + 1;
        let granules = if used {
            (columns * column_granules) as usize
        } else {
            0
        };
        PieceIndex {
            shift,
            column_granules,
            nonzero: vec![0; granules.div_ceil(64)],
            lists: HashMap::default(),
        }
    }

    /// The granules `len` (>= 1) sectors at `offset` of `column` touch.
    fn range(&self, column: u32, offset: u64, len: u32) -> std::ops::RangeInclusive<u32> {
        let base = u64::from(column) * self.column_granules;
        let (first, last) = (
            offset >> self.shift,
            (offset + u64::from(len.max(1)) - 1) >> self.shift,
        );
        let g = |x: u64| u32::try_from(base + x).expect("granules fit u32");
        g(first)..=g(last)
    }

    fn touched(&self, g: u32) -> bool {
        self.nonzero[g as usize / 64] >> (g % 64) & 1 == 1
    }

    pub fn insert(&mut self, key: Key, id: usize) {
        for g in self.range(key.0, key.1, key.2) {
            match self.lists.get_mut(&g) {
                None => {
                    self.lists.insert(g, Ids::One(key, id));
                    self.nonzero[g as usize / 64] |= 1 << (g % 64);
                }
                Some(Ids::Many(v)) => v.push((key, id)),
                Some(l @ Ids::One(..)) => {
                    let Ids::One(k0, i0) = *l else { unreachable!() };
                    *l = Ids::Many(vec![(k0, i0), (key, id)]);
                }
            }
        }
    }

    pub fn remove(&mut self, key: Key, id: usize) {
        for g in self.range(key.0, key.1, key.2) {
            let empty = match self.lists.get_mut(&g).expect("an indexed granule") {
                Ids::One(..) => true,
                Ids::Many(v) => {
                    let i = v.iter().position(|&(_, x)| x == id).expect("indexed");
                    v.swap_remove(i);
                    v.is_empty()
                }
            };
            if empty {
                self.lists.remove(&g);
                self.nonzero[g as usize / 64] &= !(1 << (g % 64));
            }
        }
    }

    /// Whether an entry may overlap these sectors (false: none does).
    pub fn any(&self, column: u32, offset: u64, len: u32) -> bool {
        // [`PieceIndex::range`] without its checks: asked for every blocked write each time
        // an entry goes, so kept to a few instructions.
        let base = u64::from(column) * self.column_granules;
        let first = base + (offset >> self.shift);
        let last = base + ((offset + u64::from(len.max(1)) - 1) >> self.shift);
        (first..=last).any(|g| self.nonzero[(g / 64) as usize] >> (g % 64) & 1 == 1)
    }

    /// The entries overlapping `len` sectors at `offset` of `column`, in piece order.
    pub fn overlapping(&self, column: u32, offset: u64, len: u32) -> Vec<usize> {
        let end = offset + u64::from(len);
        let mut found: Vec<(Key, usize)> = Vec::new();
        for g in self.range(column, offset, len) {
            if !self.touched(g) {
                continue;
            }
            let hits = |&(k, _): &(Key, usize)| {
                k.0 == column && k.1 < end && k.1 + u64::from(k.2) > offset
            };
            match &self.lists[&g] {
                Ids::One(k, id) => {
                    if hits(&(*k, *id)) {
                        found.push((*k, *id));
                    }
                }
                Ids::Many(v) => found.extend(v.iter().filter(|e| hits(e))),
            }
        }
        if found.len() > 1 {
            // An entry over two granules is found in each.
            found.sort_unstable();
            found.dedup();
        }
        found.into_iter().map(|(_, id)| id).collect()
    }

    /// The entry of exactly this piece.
    pub fn find(&self, key: Key) -> Option<usize> {
        let g = *self.range(key.0, key.1, 1).start();
        if !self.touched(g) {
            return None;
        }
        match &self.lists[&g] {
            Ids::One(k, id) => (*k == key).then_some(*id),
            Ids::Many(v) => v.iter().find(|(k, _)| *k == key).map(|&(_, id)| id),
        }
    }
}

/// A hasher for granule numbers (distinct integers): one multiplication, no SipHash.
#[derive(Default)]
pub(super) struct GranuleHasher(u64);

impl std::hash::Hasher for GranuleHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.0 = (self.0 ^ u64::from(x)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
