//! The in-memory logical-to-physical map (EW-Array paper, 5.2.1), held in pages of
//! [`PAGE_ENTRIES`] entries that are materialised lazily and shared copy-on-write.
//!
//! A map starts from a [`Placement`], a formula giving every entry's first location (the
//! array's initial placement, or [`NOWHERE`]): a page nobody has written since is not
//! stored, its entries are the formula's. The first update of an entry materialises its
//! page (4 KiB). A checkpoint portion ([`MapView`]) shares the map's pages instead of
//! copying them; the map copies a shared page before changing it, so a view keeps the
//! entries of its moment. A 9 GB disk's 2.2 M blocks × 2 replicas thus cost nothing at
//! start (formerly 18 MB for the map and 18 MB for its initial checkpoint), and a
//! checkpoint costs one page copy per page written after it.
//!
//! The entries' values are exactly those of a dense `Vec<u32>`: only where they are kept
//! changes.

use super::NOWHERE;
use std::fmt;
use std::sync::Arc;

/// Entries per page: 4 KiB of 4-byte entries.
pub const PAGE_ENTRIES: usize = 1024;
const PAGE_SHIFT: u32 = 10;
const PAGE_MASK: u64 = PAGE_ENTRIES as u64 - 1;

/// Where every entry of a map starts (before its first update).
pub trait Placement: Send + Sync {
    /// The initial physical block of `replica` of logical `block`.
    fn initial(&self, block: u32, replica: u32) -> u32;

    /// Entries `first .. first + out.len()` (entry = block × `replicas` + replica) into
    /// `out`. The default asks [`Placement::initial`] for each.
    fn fill(&self, first: u64, replicas: u32, out: &mut [u32]) {
        let r = u64::from(replicas);
        for (k, o) in out.iter_mut().enumerate() {
            let e = first + k as u64;
            let block = u32::try_from(e / r).expect("block fits u32");
            let replica = u32::try_from(e % r).expect("replica fits u32");
            *o = self.initial(block, replica);
        }
    }
}

/// Every entry [`NOWHERE`].
struct Nowhere;

impl Placement for Nowhere {
    fn initial(&self, _block: u32, _replica: u32) -> u32 {
        NOWHERE
    }

    fn fill(&self, _first: u64, _replicas: u32, out: &mut [u32]) {
        out.fill(NOWHERE);
    }
}

type PageData = [u32; PAGE_ENTRIES];

/// One page of entries: still the placement's, or its own.
#[derive(Clone)]
enum Page {
    Formula(Arc<dyn Placement>),
    Own(Arc<PageData>),
}

impl Page {
    fn same(&self, other: &Page) -> bool {
        match (self, other) {
            (Page::Own(a), Page::Own(b)) => Arc::ptr_eq(a, b),
            (Page::Formula(a), Page::Formula(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The in-memory map: for each logical block and replica (mirror) a physical block (u32),
/// entry `block × replicas + replica`.
#[derive(Clone)]
pub struct L2pMap {
    blocks: u32,
    replicas: u32,
    entries: u64,
    pages: Vec<Page>,
}

fn page_count(entries: u64) -> usize {
    usize::try_from(entries.div_ceil(PAGE_ENTRIES as u64)).expect("pages fit usize")
}

impl L2pMap {
    /// Every entry [`NOWHERE`].
    pub fn new(logical_blocks: u32, replicas: u32) -> L2pMap {
        L2pMap::with_placement(logical_blocks, replicas, Arc::new(Nowhere))
    }

    /// Every entry where `placement` puts it (computed when first needed, not stored).
    pub fn with_placement(
        logical_blocks: u32,
        replicas: u32,
        placement: Arc<dyn Placement>,
    ) -> L2pMap {
        let entries = u64::from(logical_blocks) * u64::from(replicas);
        L2pMap {
            blocks: logical_blocks,
            replicas,
            entries,
            pages: vec![Page::Formula(placement); page_count(entries)],
        }
    }

    pub fn logical_blocks(&self) -> u32 {
        self.blocks
    }

    pub fn replicas(&self) -> u32 {
        self.replicas
    }

    /// Entries: logical blocks × replicas.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    #[inline]
    pub(super) fn entry(&self, block: u32, replica: u32) -> u64 {
        assert!(block < self.blocks, "block {block} >= {}", self.blocks);
        assert!(
            replica < self.replicas,
            "replica {replica} >= {}",
            self.replicas
        );
        u64::from(block) * u64::from(self.replicas) + u64::from(replica)
    }

    #[inline]
    pub fn get(&self, block: u32, replica: u32) -> u32 {
        let e = self.entry(block, replica);
        match &self.pages[page_of(e)] {
            Page::Own(p) => p[(e & PAGE_MASK) as usize],
            Page::Formula(f) => f.initial(block, replica),
        }
    }

    /// Asks the CPU to bring in the entry [`L2pMap::get`] of `(block, replica)` will read
    /// (a random place in a map of megabytes), so the cache miss overlaps other work; no
    /// effect on results.
    #[inline]
    pub fn prefetch(&self, block: u32, replica: u32) {
        let e = self.entry(block, replica);
        if let Page::Own(p) = &self.pages[page_of(e)] {
            crate::engine::prefetch(&p[(e & PAGE_MASK) as usize]);
        }
    }

    #[inline]
    pub fn set(&mut self, block: u32, replica: u32, phys: u32) {
        let e = self.entry(block, replica);
        self.set_entry(e, phys);
    }

    /// Entry `e`'s value.
    #[inline]
    pub(super) fn get_entry(&self, e: u64) -> u32 {
        assert!(e < self.entries, "entry {e} >= {}", self.entries);
        match &self.pages[page_of(e)] {
            Page::Own(p) => p[(e & PAGE_MASK) as usize],
            Page::Formula(f) => {
                let r = u64::from(self.replicas);
                let block = u32::try_from(e / r).expect("block fits u32");
                f.initial(block, u32::try_from(e % r).expect("replica fits u32"))
            }
        }
    }

    /// Sets entry `e` (materialising its page, or copying it if a view shares it).
    #[inline]
    pub(super) fn set_entry(&mut self, e: u64, phys: u32) {
        assert!(e < self.entries, "entry {e} >= {}", self.entries);
        let k = page_of(e);
        let page = self.own_page(k);
        page[(e & PAGE_MASK) as usize] = phys;
    }

    /// Page `k`'s entries, materialised and not shared.
    fn own_page(&mut self, k: usize) -> &mut PageData {
        if let Page::Formula(f) = &self.pages[k] {
            let mut data = [NOWHERE; PAGE_ENTRIES];
            let first = (k as u64) << PAGE_SHIFT;
            let n = usize::try_from((self.entries - first).min(PAGE_ENTRIES as u64))
                .expect("a page fits usize");
            f.fill(first, self.replicas, &mut data[..n]);
            self.pages[k] = Page::Own(Arc::new(data));
        }
        match &mut self.pages[k] {
            Page::Own(p) => Arc::make_mut(p),
            Page::Formula(_) => unreachable!("materialised above"),
        }
    }

    /// Entries `first .. first + len` as of now, sharing the map's pages.
    pub(super) fn view(&self, first: u64, len: u64) -> MapView {
        assert!(first + len <= self.entries, "a view inside the map");
        let (lo, hi) = page_range(first, len);
        MapView {
            first,
            len,
            replicas: self.replicas,
            pages: self.pages[lo..hi].to_vec(),
        }
    }

    /// Makes entries `view.first ..` equal to the view's (sharing whole pages).
    pub(super) fn copy_view(&mut self, view: &MapView) {
        assert!(
            view.first + view.len <= self.entries,
            "a view inside the map"
        );
        assert_eq!(
            view.replicas, self.replicas,
            "a view of a map of this shape"
        );
        let (lo, _) = page_range(view.first, view.len);
        let end = view.first + view.len;
        let mut e = view.first;
        while e < end {
            let k = page_of(e);
            let page_start = (k as u64) << PAGE_SHIFT;
            let page_end = (page_start + PAGE_ENTRIES as u64).min(self.entries);
            if e == page_start && page_end <= end {
                self.pages[k] = view.pages[k - lo].clone();
                e = page_end;
                continue;
            }
            let stop = page_end.min(end);
            for x in e..stop {
                self.set_entry(x, view.get(x - view.first));
            }
            e = stop;
        }
    }

    /// The first entry where the maps differ, as (block, replica, self's, other's); `None`
    /// when equal. Maps of different shapes differ at (0, 0). For readable test failures.
    pub fn first_difference(&self, other: &L2pMap) -> Option<(u32, u32, u32, u32)> {
        if (self.blocks, self.replicas) != (other.blocks, other.replicas) {
            return Some((0, 0, NOWHERE, NOWHERE));
        }
        for (k, (a, b)) in self.pages.iter().zip(&other.pages).enumerate() {
            if a.same(b) {
                continue;
            }
            let first = (k as u64) << PAGE_SHIFT;
            let end = (first + PAGE_ENTRIES as u64).min(self.entries);
            for e in first..end {
                let (x, y) = (self.get_entry(e), other.get_entry(e));
                if x != y {
                    let r = u64::from(self.replicas);
                    let block = u32::try_from(e / r).expect("block fits u32");
                    let replica = u32::try_from(e % r).expect("replica fits u32");
                    return Some((block, replica, x, y));
                }
            }
        }
        None
    }

    /// Pages stored (materialised): the map's memory is about this × 4 KiB.
    pub fn pages_stored(&self) -> usize {
        self.pages
            .iter()
            .filter(|p| matches!(p, Page::Own(_)))
            .count()
    }
}

fn page_of(e: u64) -> usize {
    (e >> PAGE_SHIFT) as usize
}

/// The pages holding entries `first .. first + len`.
fn page_range(first: u64, len: u64) -> (usize, usize) {
    let lo = page_of(first);
    let hi = if len == 0 {
        lo
    } else {
        page_of(first + len - 1) + 1
    };
    (lo, hi)
}

impl PartialEq for L2pMap {
    fn eq(&self, other: &L2pMap) -> bool {
        self.first_difference(other).is_none()
    }
}

impl Eq for L2pMap {}

impl fmt::Debug for L2pMap {
    // The whole map can be millions of entries: show its shape and a few.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first: Vec<u32> = (0..self.entries.min(8))
            .map(|e| self.get_entry(e))
            .collect();
        f.debug_struct("L2pMap")
            .field("logical_blocks", &self.blocks)
            .field("replicas", &self.replicas)
            .field("first", &first)
            .field("pages_stored", &self.pages_stored())
            .finish_non_exhaustive()
    }
}

/// Entries `first .. first + len` of a map as of when the view was taken (a checkpoint
/// portion): the map's pages then, shared.
#[derive(Clone)]
pub struct MapView {
    first: u64,
    len: u64,
    replicas: u32,
    /// The pages holding the entries, from the one holding `first`.
    pages: Vec<Page>,
}

impl MapView {
    /// A view of `values` as entries `first ..` of a map with `replicas` replicas (a
    /// checkpoint portion read back from bytes).
    pub(super) fn from_values(first: u64, replicas: u32, values: &[u32]) -> MapView {
        let len = values.len() as u64;
        let (lo, hi) = page_range(first, len);
        let mut pages = Vec::with_capacity(hi - lo);
        for k in lo..hi {
            let start = (k as u64) << PAGE_SHIFT;
            let mut data = [NOWHERE; PAGE_ENTRIES];
            for (j, d) in data.iter_mut().enumerate() {
                let e = start + j as u64;
                if e >= first && e < first + len {
                    *d = values[(e - first) as usize];
                }
            }
            pages.push(Page::Own(Arc::new(data)));
        }
        MapView {
            first,
            len,
            replicas,
            pages,
        }
    }

    /// Entries in the view.
    pub fn len(&self) -> usize {
        usize::try_from(self.len).expect("a view's length fits usize")
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The view's `i`-th entry (entry `first + i` of the map).
    pub fn get(&self, i: u64) -> u32 {
        assert!(i < self.len, "entry {i} of a view of {}", self.len);
        let e = self.first + i;
        let k = page_of(e) - page_of(self.first);
        match &self.pages[k] {
            Page::Own(p) => p[(e & PAGE_MASK) as usize],
            Page::Formula(f) => {
                let r = u64::from(self.replicas);
                let block = u32::try_from(e / r).expect("block fits u32");
                f.initial(block, u32::try_from(e % r).expect("replica fits u32"))
            }
        }
    }

    /// The entries in order.
    pub fn values(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len).map(|i| self.get(i))
    }
}

impl fmt::Debug for MapView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapView")
            .field("first", &self.first)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Block b, replica r starts at 10·b + r.
    struct Linear;
    impl Placement for Linear {
        fn initial(&self, block: u32, replica: u32) -> u32 {
            10 * block + replica
        }
    }

    #[test]
    fn a_lazy_map_reads_like_a_dense_one() {
        let (blocks, replicas) = (3000u32, 2u32);
        let mut map = L2pMap::with_placement(blocks, replicas, Arc::new(Linear));
        let mut dense: Vec<u32> = (0..blocks * replicas)
            .map(|e| 10 * (e / replicas) + e % replicas)
            .collect();
        assert_eq!(map.pages_stored(), 0);
        let view0 = map.view(100, 4000);
        for (i, e) in [5u64, 1023, 1024, 2047, 5999, 3000].into_iter().enumerate() {
            map.set_entry(e, i as u32);
            dense[e as usize] = i as u32;
        }
        let view1 = map.view(100, 4000);
        map.set_entry(1500, 77);
        dense[1500] = 77;
        for e in 0..u64::from(blocks * replicas) {
            assert_eq!(map.get_entry(e), dense[e as usize], "entry {e}");
        }
        // Views keep their moment.
        for i in 0..4000u64 {
            let e = 100 + i;
            let before = 10 * (e as u32 / replicas) + e as u32 % replicas;
            assert_eq!(view0.get(i), before);
            let at1 = if e == 1500 { before } else { dense[e as usize] };
            assert_eq!(view1.get(i), at1);
        }
        // Copying a view back restores its entries only.
        let mut other = L2pMap::new(blocks, replicas);
        other.copy_view(&view1);
        for e in 0..u64::from(blocks * replicas) {
            let want = if (100..4100).contains(&e) {
                view1.get(e - 100)
            } else {
                NOWHERE
            };
            assert_eq!(other.get_entry(e), want, "entry {e}");
        }
        let values: Vec<u32> = view1.values().collect();
        let back = MapView::from_values(100, replicas, &values);
        let mut third = L2pMap::new(blocks, replicas);
        third.copy_view(&back);
        assert_eq!(third, other);
        assert!(map.first_difference(&other).is_some());
    }
}
