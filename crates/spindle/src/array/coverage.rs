//! A filter before a search for overlapping pieces: counts of pieces per granule.

use super::piece_index::GranuleHasher;
use crate::layout::{Layout, Piece};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Counts of pieces per granule of the layout's data (a granule: `1 << shift` sectors of one
/// column, at most about a million granules in all): a filter before a search for
/// overlapping pieces, which mostly finds none.
pub(super) struct Coverage {
    shift: u32,
    column_granules: u64,
    /// The counts of the granules some piece touches: the pieces are few (the blocked
    /// writes), so a small map that stays in cache, not a count per granule of the data.
    counts: HashMap<u32, u32, BuildHasherDefault<GranuleHasher>>,
    /// Bit g: granule g's count is not zero. What [`Coverage::any`] reads.
    nonzero: Vec<u64>,
}

impl Coverage {
    /// `used`: false for an empty filter that is never asked (no table).
    pub(super) fn new(layout: &Layout, used: bool) -> Coverage {
        let (columns, sectors) = (u64::from(layout.columns()), layout.column_sectors());
        if !used {
            return Coverage {
                shift: 0,
                column_granules: 0,
                counts: HashMap::default(),
                nonzero: Vec::new(),
            };
        }
        let mut shift = 6;
        while columns * (sectors >> shift).saturating_add(1) > 1 << 20 {
            shift += 1;
        }
        let column_granules = (sectors >> shift) + 1;
        let granules = (columns * column_granules) as usize;
        Coverage {
            shift,
            column_granules,
            counts: HashMap::default(),
            nonzero: vec![0; granules.div_ceil(64)],
        }
    }

    /// The granules `len` (>= 1) sectors at `offset` of `column` touch.
    fn range(&self, column: u32, offset: u64, len: u32) -> std::ops::RangeInclusive<usize> {
        let base = u64::from(column) * self.column_granules;
        let (first, last) = (
            offset >> self.shift,
            (offset + u64::from(len.max(1)) - 1) >> self.shift,
        );
        (base + first) as usize..=(base + last) as usize
    }

    pub(super) fn add(&mut self, p: &Piece) {
        for g in self.range(p.column, p.offset, p.sectors) {
            let count = self.counts.entry(g as u32).or_insert(0);
            *count += 1;
            if *count == 1 {
                self.nonzero[g / 64] |= 1 << (g % 64);
            }
        }
    }

    pub(super) fn remove(&mut self, p: &Piece) {
        for g in self.range(p.column, p.offset, p.sectors) {
            let count = self.counts.get_mut(&(g as u32)).expect("a counted granule");
            *count -= 1;
            if *count == 0 {
                self.counts.remove(&(g as u32));
                self.nonzero[g / 64] &= !(1 << (g % 64));
            }
        }
    }

    /// Whether some counted piece may overlap these sectors.
    pub(super) fn any(&self, column: u32, offset: u64, len: u32) -> bool {
        self.range(column, offset, len)
            .any(|g| self.nonzero[g / 64] >> (g % 64) & 1 == 1)
    }
}
