//! The free-space index of one disk's eager-writing region: which blocks are free, and which
//! free block a write started now reaches soonest (EW-Array paper, 2.1: "the system allocates
//! a new free block that is closest to the current disk head position").
//!
//! The region is a range of LBAs cut into blocks of `block_sectors` consecutive LBAs lying in
//! consecutive physical sectors of one track; [`BlockId`]s number them in LBA order. A track's
//! leftover sectors (fewer than a block), and the pieces around a slip, are not used.
//!
//! Internally blocks are grouped into *segments*: a run of blocks on one track whose rotational
//! positions step by exactly `block_sectors` sectors, so that block `j`'s rotational index is
//! `(base + j · block_sectors) mod spt`. On a plain geometry a segment is a track (or its part
//! between slips). On a DiskSim layout rounded fixed-point angles could break that step (none
//! of the library's drives do), so every block is checked and a segment ends at a break. Free bits are `u64` words per segment; free counts per
//! segment and per cylinder, and a bitset of non-full cylinders, let a search skip full ones.
//!
//! [`FreeSpace::closest`] is exact, not a heuristic: it returns the block and time that the
//! minimum of [`Drive::position_time`] over every free extent gives (ties to the lowest id).
//! It visits non-full cylinders outward from the head, the one with the shorter seek first,
//! and stops once the seek alone exceeds the best time found (seek curves never fall with
//! distance); on a track, bit scans find the first free block at or after the arrival angle.
//!
//! Pure and deterministic: no clock, no allocation during a search. Caller bugs (freeing a
//! free block, asking with another drive) panic; a bad region is an `Err`.

use crate::drive::{Chs, Drive, HeadState};
use crate::{Nanos, Op, Span};
use std::fmt;
use std::sync::Arc;

/// A physical block: index into the region's blocks, in LBA order.
pub type BlockId = u32;

/// [`FreeSpace`]'s block-to-segment table has one entry per `1 << SEG_AT_SHIFT` blocks.
const SEG_AT_SHIFT: u32 = 4;

/// Which cylinders a search may use (SATF-EW and FreeBW force the arm to sweep one way).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Sweep {
    Any,
    /// Cylinders `>= head.cylinder`.
    Up,
    /// Cylinders `<= head.cylinder`.
    Down,
}

/// Blocks on one track whose rotational indices step by `block_sectors` (see module doc).
#[derive(Clone, Debug)]
struct Segment {
    first_lba: u64,
    cylinder: u32,
    head: u32,
    first_block: BlockId,
    blocks: u32,
    /// Rotational index of block 0's first sector, in `0..spt`.
    base: u32,
    spt: u32,
    /// The segment's first word in `FreeSpace::bits`; bits past `blocks` stay zero.
    word: u32,
}

/// A bitset with summary levels (bit `i` of level `k+1` = word `i` of level `k` is non-zero),
/// answering "next/previous set bit" in a few word operations however sparse it is.
#[derive(Clone, Debug)]
struct LevelBits {
    levels: Vec<Vec<u64>>,
}

impl LevelBits {
    fn new(n: usize) -> LevelBits {
        let mut levels = vec![vec![0u64; n.div_ceil(64).max(1)]];
        while levels.last().expect("one level").len() > 1 {
            let below = levels.last().expect("one level").len();
            levels.push(vec![0u64; below.div_ceil(64)]);
        }
        LevelBits { levels }
    }

    fn set(&mut self, mut i: usize) {
        for words in &mut self.levels {
            let was = words[i / 64];
            words[i / 64] = was | 1 << (i % 64);
            // A word already non-zero is already marked above.
            if was != 0 {
                return;
            }
            i /= 64;
        }
    }

    fn clear(&mut self, mut i: usize) {
        for words in &mut self.levels {
            words[i / 64] &= !(1 << (i % 64));
            if words[i / 64] != 0 {
                return;
            }
            i /= 64;
        }
    }

    /// The first set bit `>= i`.
    fn next(&self, i: usize) -> Option<usize> {
        let (mut lvl, mut pos) = (0, i);
        loop {
            let words = self.levels.get(lvl)?;
            let w = pos / 64;
            let m = words.get(w)? & (!0u64 << (pos % 64));
            if m != 0 {
                pos = w * 64 + m.trailing_zeros() as usize;
                break;
            }
            (lvl, pos) = (lvl + 1, w + 1);
        }
        while lvl > 0 {
            lvl -= 1;
            pos = pos * 64 + self.levels[lvl][pos].trailing_zeros() as usize;
        }
        Some(pos)
    }

    /// The last set bit `<= i`.
    fn prev(&self, i: usize) -> Option<usize> {
        let (mut lvl, mut pos) = (0, i);
        loop {
            let words = self.levels.get(lvl)?;
            let w = (pos / 64).min(words.len() - 1);
            let keep = if w == pos / 64 { pos % 64 } else { 63 };
            let m = words[w] & (!0u64 >> (63 - keep));
            if m != 0 {
                pos = w * 64 + 63 - m.leading_zeros() as usize;
                break;
            }
            (lvl, pos) = (lvl + 1, w.checked_sub(1)?);
        }
        while lvl > 0 {
            lvl -= 1;
            pos = pos * 64 + 63 - self.levels[lvl][pos].leading_zeros() as usize;
        }
        Some(pos)
    }
}

/// The free blocks of one disk's eager-writing region (see the module doc).
#[derive(Clone)]
pub struct FreeSpace {
    block_sectors: u32,
    blocks: u32,
    free: u32,
    /// In LBA order (so in `first_block` order). The cut is immutable: clones of one
    /// region (every disk of a column) share it, and the per-cylinder tables below.
    segs: Arc<[Segment]>,
    /// Entry `k`: the segment holding block `k << SEG_AT_SHIFT` (a block's segment is at
    /// most `1 << SEG_AT_SHIFT` segments further: no search over all of them).
    seg_at: Arc<[u32]>,
    /// Free bits, the segments' words in segment order (a segment's free count is their
    /// population: a track holds at most a word or two of blocks, so no separate count).
    bits: Vec<u64>,
    /// Lowest cylinder holding a block; cylinder indices below are relative to it.
    cyl_lo: u32,
    /// Segments by (cylinder, head, LBA): cylinder `c`'s are
    /// `cyl_segs[cyl_first[c] as usize..cyl_first[c + 1] as usize]`.
    cyl_segs: Arc<[u32]>,
    cyl_first: Arc<[u32]>,
    cyl_free: Vec<u32>,
    /// Cylinders with at least one free block.
    nonfull: LevelBits,
    /// The drive the region was cut from (capacity, period), to catch a caller passing another.
    drive_capacity: u64,
    period_ns: u64,
    /// A DiskSim layout: sector angles are not whole multiples of `period / spt`.
    disksim: bool,
}

impl fmt::Debug for FreeSpace {
    // The bitsets hold millions of bits on a whole disk: a summary reads better.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FreeSpace")
            .field("block_sectors", &self.block_sectors)
            .field("blocks", &self.blocks)
            .field("free", &self.free)
            .field("segments", &self.segs.len())
            .field(
                "cylinders",
                &(self.cyl_lo..self.cyl_lo + self.cylinder_count()),
            )
            .field("free_cylinder_range", &self.free_cylinder_range())
            .finish()
    }
}

impl FreeSpace {
    /// The region of LBAs `start_lba .. start_lba + sectors` of `drive`, cut into blocks of
    /// `block_sectors` consecutive LBAs on one track. All blocks start free. Errors name the
    /// numbers: an empty region, one beyond the drive, or one of more than `u32::MAX` blocks.
    pub fn new(
        drive: &Drive,
        start_lba: u64,
        sectors: u64,
        block_sectors: u32,
    ) -> Result<FreeSpace, String> {
        let cap = drive.capacity_sectors();
        if block_sectors == 0 {
            return Err("block_sectors must be >= 1, got 0".into());
        }
        let end = start_lba
            .checked_add(sectors)
            .filter(|&e| e <= cap)
            .ok_or_else(|| {
                format!(
                    "region of {sectors} sectors from lba {start_lba} exceeds the drive's {cap} sectors"
                )
            })?;
        // A BlockId is a u32; checked before cutting so a huge region costs nothing.
        if sectors / u64::from(block_sectors) > u64::from(u32::MAX) {
            return Err(format!(
                "region of {sectors} sectors could hold more than {} blocks of {block_sectors} sectors",
                u32::MAX
            ));
        }
        let segs = Self::cut(drive, start_lba, end, block_sectors);
        let Some(last) = segs.last() else {
            return Err(format!(
                "region of {sectors} sectors from lba {start_lba} holds no block of {block_sectors} sectors on one track"
            ));
        };
        let blocks = last.first_block + last.blocks;
        Ok(Self::index(drive, segs, blocks, block_sectors))
    }

    /// Cuts `start..end` into segments, numbering blocks and words.
    fn cut(drive: &Drive, start: u64, end: u64, bs: u32) -> Vec<Segment> {
        let geo = drive.geometry();
        let bs64 = u64::from(bs);
        let index_of = |lba: u64| geo.angle_index(geo.lba_to_chs(lba));
        let (mut segs, mut blocks, mut words) = (Vec::new(), 0u64, 0u64);
        let mut lba = start;
        while lba < end {
            let run = u64::from(geo.run_on_track(lba)).min(end - lba);
            assert!(run > 0, "run_on_track is at least one sector");
            let n = run / bs64;
            let mut k = 0;
            while k < n {
                let first_lba = lba + k * bs64;
                let chs = geo.lba_to_chs(first_lba);
                let (base, spt) = geo.angle_index(chs);
                let step = |i: u64| (u64::from(base) + i * bs64) % u64::from(spt);
                // A plain geometry steps by construction (index = skew + sector); a DiskSim
                // layout's rounded fixed-point angles may not, so each block is checked.
                let mut len = if geo.is_disksim() { 1 } else { n - k };
                while k + len < n && u64::from(index_of(first_lba + len * bs64).0) == step(len) {
                    len += 1;
                }
                debug_assert_eq!(
                    u64::from(index_of(first_lba + (len - 1) * bs64).0),
                    step(len - 1)
                );
                let len32 = u32::try_from(len).expect("blocks on a track fit u32");
                // Less than a revolution: the rotational search relies on it.
                assert!(
                    len * bs64 <= u64::from(spt),
                    "a track run exceeds its track"
                );
                assert!(blocks + len <= u64::from(u32::MAX), "checked by new");
                segs.push(Segment {
                    first_lba,
                    cylinder: chs.cylinder,
                    head: chs.head,
                    first_block: u32::try_from(blocks).expect("checked by new"),
                    blocks: len32,
                    base,
                    spt,
                    word: u32::try_from(words).expect("no more words than blocks"),
                });
                blocks += len;
                words += len.div_ceil(64);
                k += len;
            }
            lba += run;
        }
        segs
    }

    /// Builds the per-cylinder index over `segs`, all blocks free.
    fn index(drive: &Drive, segs: Vec<Segment>, blocks: u32, bs: u32) -> FreeSpace {
        let last = segs.last().expect("checked non-empty");
        let words = last.word as usize + last.blocks.div_ceil(64) as usize;
        let mut bits = vec![0u64; words];
        for s in &segs {
            for j in 0..s.blocks {
                let at = s.word as usize + (j / 64) as usize;
                bits[at] |= 1 << (j % 64);
            }
        }
        let cyl_lo = segs.iter().map(|s| s.cylinder).min().expect("non-empty");
        let cyl_hi = segs.iter().map(|s| s.cylinder).max().expect("non-empty");
        let ncyl = (cyl_hi - cyl_lo + 1) as usize;
        let mut order: Vec<u32> =
            (0..u32::try_from(segs.len()).expect("segments fit u32")).collect();
        order.sort_by_key(|&i| {
            let s = &segs[i as usize];
            (s.cylinder, s.head, i)
        });
        let mut cyl_first = vec![0u32; ncyl + 1];
        let mut cyl_free = vec![0u32; ncyl];
        for s in &segs {
            let c = (s.cylinder - cyl_lo) as usize;
            cyl_first[c + 1] += 1;
            cyl_free[c] += s.blocks;
        }
        for c in 0..ncyl {
            cyl_first[c + 1] += cyl_first[c];
        }
        let mut nonfull = LevelBits::new(ncyl);
        for (c, &f) in cyl_free.iter().enumerate() {
            if f > 0 {
                nonfull.set(c);
            }
        }
        assert_eq!(cyl_first[ncyl] as usize, segs.len());
        let mut seg_at = Vec::with_capacity((blocks >> SEG_AT_SHIFT) as usize + 1);
        let mut si = 0u32;
        for k in 0..=(blocks - 1) >> SEG_AT_SHIFT {
            let b = k << SEG_AT_SHIFT;
            while segs[si as usize].first_block + segs[si as usize].blocks <= b {
                si += 1;
            }
            seg_at.push(si);
        }
        assert_eq!(
            cyl_free.iter().map(|&f| u64::from(f)).sum::<u64>(),
            u64::from(blocks)
        );
        FreeSpace {
            block_sectors: bs,
            blocks,
            free: blocks,
            segs: segs.into(),
            seg_at: seg_at.into(),
            bits,
            cyl_lo,
            cyl_segs: order.into(),
            cyl_first: cyl_first.into(),
            cyl_free,
            nonfull,
            drive_capacity: drive.capacity_sectors(),
            period_ns: drive.period().0,
            disksim: drive.geometry().is_disksim(),
        }
    }

    /// Total blocks in the region.
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    pub fn free_blocks(&self) -> u32 {
        self.free
    }

    pub fn block_sectors(&self) -> u32 {
        self.block_sectors
    }

    /// Lowest and highest cylinder holding a block of the region (free or not).
    pub fn cylinders(&self) -> (u32, u32) {
        (self.cyl_lo, self.cyl_lo + self.cylinder_count() - 1)
    }

    fn cylinder_count(&self) -> u32 {
        u32::try_from(self.cyl_free.len()).expect("cylinders fit u32")
    }

    #[inline]
    fn seg_of(&self, b: BlockId) -> usize {
        assert!(b < self.blocks, "block {b} beyond {}", self.blocks);
        let mut si = self.seg_at[(b >> SEG_AT_SHIFT) as usize] as usize;
        while self.segs[si].first_block + self.segs[si].blocks <= b {
            si += 1;
        }
        debug_assert_eq!(si, self.segs.partition_point(|s| s.first_block <= b) - 1);
        si
    }

    /// First LBA of block `b`.
    pub fn lba(&self, b: BlockId) -> u64 {
        let s = &self.segs[self.seg_of(b)];
        s.first_lba + u64::from(b - s.first_block) * u64::from(self.block_sectors)
    }

    pub fn cylinder(&self, b: BlockId) -> u32 {
        self.segs[self.seg_of(b)].cylinder
    }

    pub fn head(&self, b: BlockId) -> u32 {
        self.segs[self.seg_of(b)].head
    }

    /// The block starting at `lba`, if any.
    pub fn block_at(&self, lba: u64) -> Option<BlockId> {
        let i = self.segs.partition_point(|s| s.first_lba <= lba);
        let s = &self.segs[i.checked_sub(1)?];
        let off = lba - s.first_lba;
        let bs = u64::from(self.block_sectors);
        (off.is_multiple_of(bs) && off / bs < u64::from(s.blocks))
            .then(|| s.first_block + u32::try_from(off / bs).expect("< blocks"))
    }

    /// Whether blocks `b..b+len` (len >= 1) are physically consecutive on one track, so one
    /// command can move them. On a DiskSim layout a track can hold two segments that are
    /// physically consecutive yet reported as not (see the module doc): safe, only stricter.
    pub fn contiguous(&self, b: BlockId, len: u32) -> bool {
        if len == 0 || u64::from(b) + u64::from(len) > u64::from(self.blocks) {
            return false;
        }
        let s = &self.segs[self.seg_of(b)];
        b + len <= s.first_block + s.blocks
    }

    pub fn is_free(&self, b: BlockId) -> bool {
        let s = &self.segs[self.seg_of(b)];
        self.bit(s, b - s.first_block)
    }

    fn bit(&self, s: &Segment, j: u32) -> bool {
        self.bits[s.word as usize + (j / 64) as usize] & (1 << (j % 64)) != 0
    }

    /// Marks blocks `b..b+len` used; panics if any is not free or they are not
    /// [`FreeSpace::contiguous`] (a caller bug).
    pub fn allocate(&mut self, b: BlockId, len: u32) {
        assert!(
            self.contiguous(b, len),
            "blocks {b}..{} are not consecutive on one track",
            u64::from(b) + u64::from(len)
        );
        let si = self.seg_of(b);
        let (word, first) = (self.segs[si].word as usize, self.segs[si].first_block);
        for j in b - first..b - first + len {
            let (w, m) = (word + (j / 64) as usize, 1u64 << (j % 64));
            assert!(self.bits[w] & m != 0, "block {} is not free", first + j);
            self.bits[w] &= !m;
        }
        let c = (self.segs[si].cylinder - self.cyl_lo) as usize;
        self.cyl_free[c] -= len;
        if self.cyl_free[c] == 0 {
            self.nonfull.clear(c);
        }
        self.free -= len;
    }

    /// A hint: block `b`'s free bit and its cylinder's count will be needed soon. Nothing
    /// for a block outside the region.
    pub fn prefetch(&self, b: BlockId) {
        if b < self.blocks {
            let s = &self.segs[self.seg_of(b)];
            let w = s.word as usize + ((b - s.first_block) / 64) as usize;
            crate::engine::prefetch(&self.bits[w]);
            crate::engine::prefetch(&self.cyl_free[(s.cylinder - self.cyl_lo) as usize]);
        }
    }

    /// Marks blocks `b..b+len` free (they may span tracks); panics if any is already free.
    pub fn release(&mut self, b: BlockId, len: u32) {
        let end = u64::from(b) + u64::from(len);
        assert!(
            end <= u64::from(self.blocks),
            "blocks {b}..{end} beyond {}",
            self.blocks
        );
        let mut at = b;
        while u64::from(at) < end {
            let si = self.seg_of(at);
            let s = &self.segs[si];
            let upto = (s.first_block + s.blocks).min(u32::try_from(end).expect("<= blocks"));
            let (word, first, c) = (s.word as usize, s.first_block, s.cylinder - self.cyl_lo);
            for j in at - first..upto - first {
                let (w, m) = (word + (j / 64) as usize, 1u64 << (j % 64));
                assert!(self.bits[w] & m == 0, "block {} is already free", first + j);
                self.bits[w] |= m;
            }
            let n = upto - at;
            if self.cyl_free[c as usize] == 0 {
                self.nonfull.set(c as usize);
            }
            self.cyl_free[c as usize] += n;
            self.free += n;
            at = upto;
        }
    }

    /// Marks each block of `runs` (`(first block, blocks)`, increasing, disjoint) used:
    /// [`FreeSpace::allocate`] of one block each, in one pass over the segments and up to a
    /// word at a time (building a disk's initial state: a stripe unit is one run).
    pub fn allocate_sorted(&mut self, runs: impl IntoIterator<Item = (BlockId, u32)>) {
        let (mut si, mut next) = (0usize, 0);
        for (mut b, mut len) in runs {
            assert!(b >= next, "runs to allocate are increasing and disjoint");
            let end = u64::from(b) + u64::from(len);
            assert!(
                end <= u64::from(self.blocks),
                "block {end} beyond {}",
                self.blocks
            );
            next = b + len;
            while len > 0 {
                while self.segs[si].first_block + self.segs[si].blocks <= b {
                    si += 1;
                }
                let s = &self.segs[si];
                let k = len.min(s.first_block + s.blocks - b);
                let (mut j, end) = (b - s.first_block, b - s.first_block + k);
                while j < end {
                    let n = (64 - j % 64).min(end - j);
                    let m = (u64::MAX >> (64 - n)) << (j % 64);
                    let w = s.word as usize + (j / 64) as usize;
                    assert!(self.bits[w] & m == m, "a block of {b}..{end} is not free");
                    self.bits[w] &= !m;
                    j += n;
                }
                let c = (s.cylinder - self.cyl_lo) as usize;
                self.cyl_free[c] -= k;
                if self.cyl_free[c] == 0 {
                    self.nonfull.clear(c);
                }
                self.free -= k;
                (b, len) = (b + k, len - k);
            }
        }
    }

    /// Lowest and highest cylinder holding a free block (for a sweep deciding to turn).
    pub fn free_cylinder_range(&self) -> Option<(u32, u32)> {
        let lo = self.nonfull.next(0)?;
        let hi = self
            .nonfull
            .prev(self.cyl_free.len() - 1)
            .expect("a set bit exists");
        Some((self.cyl_at(lo), self.cyl_at(hi)))
    }

    /// The free extent of `len` consecutive blocks on one track that a write started at `now`
    /// with the arm at `head` reaches soonest, and that time: exactly
    /// `drive.position_time(now, head, Op::Write, &drive.locate(self.lba(b)))`, minimal over
    /// all free extents within `sweep` (ties: lowest id). `None` if there is none.
    pub fn closest(
        &self,
        drive: &Drive,
        now: Nanos,
        head: &HeadState,
        len: u32,
        sweep: Sweep,
    ) -> Option<(BlockId, Span)> {
        self.closest_within(drive, now, head, len, sweep, Span(u64::MAX))
    }

    /// Whether [`FreeSpace::closest`] would find an extent: for one block, whether a
    /// non-full cylinder lies within `sweep` (no search).
    pub fn any_extent(
        &self,
        drive: &Drive,
        now: Nanos,
        head: &HeadState,
        len: u32,
        sweep: Sweep,
    ) -> bool {
        if len != 1 {
            return self.closest(drive, now, head, len, sweep).is_some();
        }
        let found = match sweep {
            Sweep::Any => self.free > 0,
            Sweep::Up => self.next_nonfull(head.cylinder).is_some(),
            Sweep::Down => self.prev_nonfull(head.cylinder).is_some(),
        };
        debug_assert_eq!(found, self.closest(drive, now, head, len, sweep).is_some());
        found
    }

    /// [`FreeSpace::closest`] among extents whose positioning time is `< limit`: a cheap
    /// "is there a free block I can reach before this read?".
    pub fn closest_within(
        &self,
        drive: &Drive,
        now: Nanos,
        head: &HeadState,
        len: u32,
        sweep: Sweep,
        limit: Span,
    ) -> Option<(BlockId, Span)> {
        assert!(
            drive.capacity_sectors() == self.drive_capacity && drive.period().0 == self.period_ns,
            "closest asked with a drive other than the region's"
        );
        assert!(len >= 1, "an extent holds at least one block");
        if len > self.free {
            return None;
        }
        let before = drive.overhead(Op::Write) + drive.command_overhead(Op::Write);
        let p = self.period_ns;
        let q = Query {
            drive,
            head,
            len,
            before,
            limit,
            // `rotational_wait` at `now + before + seek` sees the platter at
            // `(now + phase + before + seek) mod p`: all but the seek is fixed per query.
            // (One division: the phase and the overheads are within a revolution.)
            angle0: [now.0, head.phase_ns, before.0]
                .into_iter()
                .map(|x| if x < p { x } else { x % p })
                .fold(0, |a, x| if a + x >= p { a + x - p } else { a + x }),
            period_ns: p,
        };
        let hc = head.cylinder;
        let mut up = match sweep {
            Sweep::Any | Sweep::Up => self.next_nonfull(hc),
            Sweep::Down => None,
        };
        let mut down = match sweep {
            Sweep::Any => hc.checked_sub(1).and_then(|c| self.prev_nonfull(c)),
            Sweep::Down => self.prev_nonfull(hc),
            Sweep::Up => None,
        };
        // The seek to a cylinder on the head's own surface bounds every track there from
        // below (another surface can only add a head switch).
        let bound = |c: u32| q.before + q.seek(c, head.head);
        let mut up_bound = up.map(bound);
        let mut down_bound = down.map(bound);
        let mut best: Option<(Span, BlockId)> = None;
        loop {
            let go_up = match (up_bound, down_bound) {
                (Some(u), Some(d)) => u <= d,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let (c, lb) = if go_up {
                (up.expect("bound implies cylinder"), up_bound.expect("some"))
            } else {
                (
                    down.expect("bound implies cylinder"),
                    down_bound.expect("some"),
                )
            };
            // Seek curves never fall with distance: every cylinder further out in either
            // direction costs at least `lb`, so nothing left can beat `best`.
            if lb >= limit || best.is_some_and(|(t, _)| lb > t) {
                break;
            }
            self.scan_cylinder(&q, c, &mut best);
            if go_up {
                up = c.checked_add(1).and_then(|n| self.next_nonfull(n));
                up_bound = up.map(bound);
            } else {
                down = c.checked_sub(1).and_then(|p| self.prev_nonfull(p));
                down_bound = down.map(bound);
            }
        }
        debug_assert!(best.is_none_or(|(t, b)| {
            t == drive.position_time(now, head, Op::Write, &drive.locate(self.lba(b)))
        }));
        best.map(|(t, b)| (b, t))
    }

    /// The cylinder of index `i` in the per-cylinder tables.
    fn cyl_at(&self, i: usize) -> u32 {
        self.cyl_lo + u32::try_from(i).expect("cylinder index fits u32")
    }

    /// The first non-full cylinder `>= c`.
    fn next_nonfull(&self, c: u32) -> Option<u32> {
        let i = c.saturating_sub(self.cyl_lo) as usize;
        (i < self.cyl_free.len())
            .then(|| self.nonfull.next(i))
            .flatten()
            .map(|i| self.cyl_at(i))
    }

    /// The last non-full cylinder `<= c`.
    fn prev_nonfull(&self, c: u32) -> Option<u32> {
        let i = c.checked_sub(self.cyl_lo)? as usize;
        let i = i.min(self.cyl_free.len() - 1);
        self.nonfull.prev(i).map(|i| self.cyl_at(i))
    }

    /// Offers the best extent of every track of cylinder `c` to `best`.
    fn scan_cylinder(&self, q: &Query<'_>, c: u32, best: &mut Option<(Span, BlockId)>) {
        let ci = (c - self.cyl_lo) as usize;
        let range = self.cyl_first[ci] as usize..self.cyl_first[ci + 1] as usize;
        // `seek_span` depends on the distance and on whether the head changes: two values
        // per cylinder, the other surface's computed only if needed.
        let same = q.seek(c, q.head.head);
        let mut other = None;
        // The first rotational index at or after the arrival angle, a division: the same for
        // every track of the cylinder reached with the same seek and sectors per track.
        let mut first_index = [(u64::MAX, 0u32, 0u64); 2];
        for &si in &self.cyl_segs[range] {
            let s = &self.segs[si as usize];
            if !self.may_hold(s, q.len) {
                continue;
            }
            let (seek, k) = if s.head == q.head.head {
                (same, 0)
            } else {
                (*other.get_or_insert_with(|| q.seek(c, s.head)), 1)
            };
            let pre = q.before + seek;
            if pre >= q.limit || best.is_some_and(|(t, _)| pre > t) {
                continue;
            }
            let angle = q.angle_after(seek);
            let cached = &mut first_index[k];
            if cached.0 != angle || cached.1 != s.spt {
                *cached = (angle, s.spt, q.first_index(angle, s.spt));
            }
            let Some((j, rot)) = self.first_extent_after(q, s, angle, cached.2) else {
                continue;
            };
            let cand = (pre + rot, s.first_block + j);
            if cand.0 < q.limit && best.is_none_or(|b| cand < b) {
                *best = Some(cand);
            }
        }
    }

    /// On segment `s`, reached with the platter at `angle` (ns into the revolution): the free
    /// extent whose first sector passes under the head soonest, and that wait (exactly
    /// `Drive::rotational_wait`); `t` is [`Query::first_index`] of `angle` and `s.spt`.
    fn first_extent_after(
        &self,
        q: &Query<'_>,
        s: &Segment,
        angle: u64,
        t: u64,
    ) -> Option<(u32, Span)> {
        if q.len > 1 && !self.has_extent(s, q.len) {
            // Cheap bit test before the divisions below.
            return None;
        }
        let p = q.period_ns;
        let spt = u64::from(s.spt);
        let bs = u64::from(self.block_sectors);
        debug_assert_eq!(t, q.first_index(angle, s.spt));
        // Blocks starting at or after `t` come first, in block order, then the rest: the
        // segment spans less than one revolution.
        let mut o = t + spt - u64::from(s.base);
        if o >= spt {
            o -= spt;
        }
        let j0 = u32::try_from(o.div_ceil(bs).min(u64::from(s.blocks))).expect("< blocks");
        let j = self
            .find_extent(s, j0, s.blocks, q.len)
            .or_else(|| self.find_extent(s, 0, j0, q.len))?;
        if self.disksim {
            // A DiskSim layout: `Drive::locate` waits for the sector's exact start angle,
            // which can lie between sector boundaries (skews in revolutions) and differs
            // from `p · idx / spt` by rounding. Time the extent found with it; if that angle
            // has just gone by, the next free extent may come sooner.
            let exact = |j: u32| {
                let lba = s.first_lba + u64::from(j) * bs;
                (q.drive.locate(lba).angle_ns + p - angle) % p
            };
            let mut found = (j, exact(j));
            if found.1 > p - p / spt {
                let next = self
                    .find_extent(s, j + 1, s.blocks, q.len)
                    .or_else(|| self.find_extent(s, 0, j.min(s.blocks), q.len));
                if let Some(k) = next {
                    let w = exact(k);
                    if w < found.1 {
                        found = (k, w);
                    }
                }
            }
            return Some((found.0, Span(found.1)));
        }
        let mut idx = u64::from(s.base) + u64::from(j) * bs;
        if idx >= spt {
            idx -= spt;
        }
        // `rotational_wait`: (sector angle − platter angle) mod p, both in 0..p.
        let mut wait = p * idx / spt + p - angle;
        if wait >= p {
            wait -= p;
        }
        Some((j, Span(wait)))
    }

    /// The words of segment `s`'s free bits.
    #[inline]
    fn words(&self, s: &Segment) -> &[u64] {
        &self.bits[s.word as usize..s.word as usize + s.blocks.div_ceil(64) as usize]
    }

    /// Whether segment `s` has at least `len` free blocks (a necessary condition for an
    /// extent of `len`).
    #[inline]
    fn may_hold(&self, s: &Segment, len: u32) -> bool {
        let words = self.words(s);
        if len == 1 {
            words.iter().any(|&w| w != 0)
        } else {
            words.iter().map(|w| w.count_ones()).sum::<u32>() >= len
        }
    }

    /// Free blocks of segment `s`.
    #[cfg(test)]
    fn seg_free(&self, si: usize) -> u32 {
        self.words(&self.segs[si])
            .iter()
            .map(|w| w.count_ones())
            .sum()
    }

    /// Whether segment `s` holds any free extent of `len` blocks.
    fn has_extent(&self, s: &Segment, len: u32) -> bool {
        let words = &self.bits[s.word as usize..s.word as usize + s.blocks.div_ceil(64) as usize];
        (0..s.blocks.div_ceil(64)).any(|w| extent_word(words, w, len) != 0)
    }

    /// The first `j` in `from..to` with blocks `j..j+len` of `s` all free.
    fn find_extent(&self, s: &Segment, from: u32, to: u32, len: u32) -> Option<u32> {
        if from >= to {
            return None;
        }
        let words = &self.bits[s.word as usize..s.word as usize + s.blocks.div_ceil(64) as usize];
        let last = (to - 1) / 64;
        let mut w = from / 64;
        let mut m = extent_word(words, w, len) & (!0u64 << (from % 64));
        loop {
            if m != 0 {
                let j = w * 64 + m.trailing_zeros();
                return (j < to).then_some(j);
            }
            w += 1;
            if w > last {
                return None;
            }
            m = extent_word(words, w, len);
        }
    }
}

/// One search's constant inputs.
struct Query<'a> {
    drive: &'a Drive,
    head: &'a HeadState,
    len: u32,
    /// Overhead and command overhead: paid before the seek starts.
    before: Span,
    limit: Span,
    /// The platter angle (ns into the revolution) after `before`, with no seek.
    angle0: u64,
    period_ns: u64,
}

impl Query<'_> {
    fn seek(&self, cylinder: u32, head: u32) -> Span {
        let to = Chs {
            cylinder,
            head,
            sector: 0,
        };
        self.drive
            .seek_span(self.head.cylinder, self.head.head, to, Op::Write)
    }

    /// The first rotational index of a track of `spt` sectors whose angle `p · idx / spt`
    /// (floored, as `Drive::locate`) is at or after `angle`: idx ≥ ceil(angle · spt / p),
    /// wrapped to 0 at `spt`.
    fn first_index(&self, angle: u64, spt: u32) -> u64 {
        let spt = u64::from(spt);
        let t = (angle * spt).div_ceil(self.period_ns);
        if t == spt {
            0
        } else {
            t
        }
    }

    /// The platter angle when a seek of `seek` ends.
    fn angle_after(&self, seek: Span) -> u64 {
        let a = self.angle0 + seek.0;
        // A seek is shorter than a revolution or two: a subtraction beats a division.
        match a {
            _ if a < self.period_ns => a,
            _ if a < 2 * self.period_ns => a - self.period_ns,
            _ => a % self.period_ns,
        }
    }
}

/// Bit `i` set iff blocks `64w+i .. 64w+i+len` are all free (bits past the segment are 0).
fn extent_word(words: &[u64], w: u32, len: u32) -> u64 {
    let mut m = words[w as usize];
    let mut k = 1;
    while k < len && m != 0 {
        m &= bits_from(words, u64::from(w) * 64 + u64::from(k));
        k += 1;
    }
    m
}

/// The 64 bits starting at bit `p` (zeros past the end).
fn bits_from(words: &[u64], p: u64) -> u64 {
    let (i, sh) = ((p / 64) as usize, p % 64);
    let lo = words.get(i).copied().unwrap_or(0);
    if sh == 0 {
        return lo;
    }
    let hi = words.get(i + 1).copied().unwrap_or(0);
    (lo >> sh) | (hi << (64 - sh))
}

#[cfg(test)]
mod tests;
