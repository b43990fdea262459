//! The copies of a long SATF queue bucketed by the angle of their first sector, per op, so a
//! pick reads the copies in the order the platter brings them under the head and stops
//! early (see [`AngleRing`]).

use crate::drive::Chs;
use crate::Op;

/// Buckets of a revolution.
const BUCKETS: usize = 64;

/// A copy as the ring holds it: its index in the scheduler's copy table and what a walk
/// prices it by, kept in its bucket so a walk reads a bucket's copies from one run of
/// memory rather than a cache line each.
#[derive(Copy, Clone, Debug)]
pub struct RingCopy {
    pub i: u32,
    pub chs: Chs,
    pub angle_ns: u64,
    pub seq: u64,
}

/// Copies (by their index into the scheduler's copy table) in [`BUCKETS`] buckets of the revolution
/// per op, bucket `b` holding angles `θ mod p` with `b·p ≤ (θ mod p)·BUCKETS < (b+1)·p`.
///
/// Why it finds the argmin early: a copy reached before its sector comes round the first
/// time (seek ≤ `r`, the angle still to turn once the overhead is paid) costs `before + r`;
/// any other costs at least `before + r + p`. So once a copy of an op is reachable, a copy
/// of that op further round the revolution, or one not reachable in time, cannot beat it:
/// the walk stops at the first bucket whose smallest `r` exceeds the best found.
#[derive(Debug)]
pub struct AngleRing {
    period_ns: u64,
    /// `buckets[op * BUCKETS + b]`, op 0 reads, 1 writes.
    buckets: Vec<Vec<RingCopy>>,
    /// Per copy index: (bucket, position in it), `u32::MAX` for a copy not in the ring.
    at: Vec<(u32, u32)>,
}

/// What a walk needs of one copy.
pub struct Seen {
    /// The copy's angle still to turn once the overhead is paid, `r` in `0..p`.
    pub r: u64,
    /// Its positioning time and arrival order, the key SATF minimises: `before + r`, so
    /// meaningful only for a copy reached in time (the walk weighs no other).
    pub key: (crate::Span, u64),
    /// Whether the arm gets there before the sector first comes round (seek ≤ `r`).
    pub in_time: bool,
}

impl AngleRing {
    pub fn new(period_ns: u64) -> AngleRing {
        // Keeps `angle · BUCKETS` within 64 bits (periods are milliseconds).
        assert!(
            period_ns > 0 && period_ns < 1 << 48,
            "a period of {period_ns} ns"
        );
        AngleRing {
            period_ns,
            buckets: vec![Vec::new(); 2 * BUCKETS],
            at: Vec::new(),
        }
    }

    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    fn bucket(&self, op: Op, angle_ns: u64) -> usize {
        let p = self.period_ns;
        // Angles are kept within the revolution: the division is rarely needed.
        let a = if angle_ns < p { angle_ns } else { angle_ns % p };
        let b = (a * BUCKETS as u64 / p) as usize;
        usize::from(op == Op::Write) * BUCKETS + b
    }

    /// Adds copy `c.i`.
    pub fn insert(&mut self, c: RingCopy, op: Op) {
        let (i, b) = (c.i, self.bucket(op, c.angle_ns));
        if self.at.len() <= i as usize {
            self.at.resize(i as usize + 1, (u32::MAX, u32::MAX));
        }
        let pos = u32::try_from(self.buckets[b].len()).expect("bucket fits u32");
        self.buckets[b].push(c);
        self.at[i as usize] = (b as u32, pos);
    }

    /// Removes copy `i` (in the ring).
    pub fn remove(&mut self, i: u32) {
        let (b, pos) = std::mem::replace(&mut self.at[i as usize], (u32::MAX, u32::MAX));
        assert!(b != u32::MAX, "copy {i} is in the ring");
        let bucket = &mut self.buckets[b as usize];
        bucket.swap_remove(pos as usize);
        if let Some(moved) = bucket.get(pos as usize) {
            self.at[moved.i as usize].1 = pos;
        }
    }

    /// The copies of `op` in the order the platter brings them round from angle `a0` (ns
    /// into the revolution), a bucket at a time, until none left can beat the best copy
    /// reached in time; `see` prices a copy. Returns the best key of a copy reached in
    /// time with its index, or `None` when no copy of the op is reached in time (then the
    /// caller must weigh them all).
    pub fn walk(
        &self,
        op: Op,
        a0: u64,
        mut see: impl FnMut(&RingCopy) -> Seen,
    ) -> Option<((crate::Span, u64), u32)> {
        let p = self.period_ns;
        let base = usize::from(op == Op::Write) * BUCKETS;
        let j0 = self.bucket(Op::Read, a0);
        let mut best: Option<(u64, (crate::Span, u64), u32)> = None;
        for m in 0..BUCKETS {
            if m > 0 {
                // Every angle in this bucket is at least its lower edge, `r` at least that
                // edge less `a0` (a revolution on once the walk has wrapped).
                let k = (j0 + m) as u64;
                let edge = (k * p).div_ceil(BUCKETS as u64);
                let r_min = edge - a0;
                if best.is_some_and(|(r, _, _)| r < r_min) {
                    break;
                }
            }
            for c in &self.buckets[base + (j0 + m) % BUCKETS] {
                let s = see(c);
                if s.in_time && best.is_none_or(|(_, k, _)| s.key < k) {
                    best = Some((s.r, s.key, c.i));
                }
            }
        }
        best.map(|(_, k, i)| (k, i))
    }

    /// Whether op `op` has copies in the ring.
    pub fn has(&self, op: Op) -> bool {
        let base = usize::from(op == Op::Write) * BUCKETS;
        self.buckets[base..base + BUCKETS]
            .iter()
            .any(|b| !b.is_empty())
    }
}
