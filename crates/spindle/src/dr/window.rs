//! Eager log compaction (the paper's section 3.2): the forwarded log is cut into windows of
//! W bytes as the window buffer fills; each window is **folded** (repeated updates of a page
//! become one, its last) and **sorted** by address before it is applied.

use super::stream::Stream;
use crate::Nanos;

/// The log cut into windows of `window_bytes`: window `k` holds the records whose log ends
/// in `(k·W, (k+1)·W]` (a record is never split).
#[derive(Clone, Debug)]
pub struct Windows {
    pub window_bytes: u64,
    /// Per window, its records `records[k]..records[k + 1]` of the stream.
    pub bounds: Vec<usize>,
    /// When each complete window's buffer is full: when the first record that does not fit
    /// arrives (or its own last record, if that ends exactly on the window's edge at the
    /// stream's end); the last window is incomplete when the stream ends inside it.
    pub complete_at: Vec<Nanos>,
}

impl Windows {
    pub fn cut(stream: &Stream, window_bytes: u64) -> Windows {
        assert!(window_bytes > 0, "a window holds at least one byte");
        let mut bounds = vec![0];
        let mut complete_at = Vec::new();
        let recs = &stream.records;
        for (i, r) in recs.iter().enumerate() {
            let k = (r.lsn_end - 1) / window_bytes;
            // Records of windows beyond the current one: each window in between ends here.
            while (bounds.len() as u64 - 1) < k {
                bounds.push(i);
                // Full when this record arrives and does not fit.
                complete_at.push(r.at);
            }
        }
        bounds.push(recs.len());
        // A last window exactly full is complete too.
        if let Some(last) = recs.last() {
            if last.lsn_end % window_bytes == 0 && complete_at.len() < bounds.len() - 1 {
                complete_at.push(last.at);
            }
        }
        Windows {
            window_bytes,
            bounds,
            complete_at,
        }
    }

    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Window `k`, compacted: the pages it updates, each once, in ascending order.
    pub fn compacted(&self, stream: &Stream, k: usize) -> Vec<u64> {
        self.compacted_prefix(stream, k, self.bounds[k + 1])
    }

    /// Window `k`'s records up to `end` (an index into the stream's records), compacted.
    pub fn compacted_prefix(&self, stream: &Stream, k: usize, end: usize) -> Vec<u64> {
        let mut pages: Vec<u64> = stream.records[self.bounds[k]..end]
            .iter()
            .flat_map(|r| stream.updates(r).iter().copied())
            .collect();
        pages.sort_unstable();
        pages.dedup();
        pages
    }

    /// Where window `k`'s first `s / stages` of log end, for s = 1..=stages: the index of the
    /// first record past `k·W + s·W/stages` (its records up to there are that prefix).
    pub fn stage_ends(&self, stream: &Stream, k: usize, stages: usize) -> Vec<usize> {
        let recs = &stream.records[self.bounds[k]..self.bounds[k + 1]];
        let base = k as u64 * self.window_bytes;
        (1..=stages as u64)
            .map(|s| {
                let edge = base + self.window_bytes * s / stages as u64;
                self.bounds[k] + recs.partition_point(|r| r.lsn_end <= edge)
            })
            .collect()
    }

    /// When window `k`'s log first passes a stage's end `end` (from [`Windows::stage_ends`]):
    /// the arrival of record `end`, if it is in the window.
    pub fn stage_start(&self, stream: &Stream, k: usize, end: usize) -> Option<Nanos> {
        (end < self.bounds[k + 1]).then(|| stream.records[end].at)
    }

    /// Page updates in window `k` before folding.
    pub fn updates(&self, stream: &Stream, k: usize) -> usize {
        stream.records[self.bounds[k]..self.bounds[k + 1]]
            .iter()
            .map(|r| r.count as usize)
            .sum()
    }
}

/// Runs of consecutive pages as one write each, at most `max_pages` long: a sorted window's
/// pages, as the applier issues them (`(first page, pages)`).
pub fn runs(pages: &[u64], max_pages: u32) -> Vec<(u64, u32)> {
    let mut out: Vec<(u64, u32)> = Vec::new();
    for &p in pages {
        match out.last_mut() {
            Some((first, n)) if *first + u64::from(*n) == p && *n < max_pages => *n += 1,
            _ => out.push((p, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of `bytes` log bytes each, one per second, updating the given pages.
    fn stream(recs: &[(u64, &[u64])]) -> Stream {
        let mut s = Stream {
            page_bytes: 8192,
            ..Stream::default()
        };
        let mut lsn = 0;
        for (i, (bytes, pages)) in recs.iter().enumerate() {
            lsn += bytes;
            s.push(lsn, Nanos(i as u64 * 1_000_000_000), pages.iter().copied())
                .unwrap();
        }
        s
    }

    #[test]
    fn windows_cut_at_whole_records_and_complete_when_the_log_goes_past() {
        let s = stream(&[
            (60, &[5, 1]),
            (60, &[5]),
            (30, &[]),
            (100, &[2, 1]),
            (10, &[9]),
        ]);
        let w = Windows::cut(&s, 100);
        // Ends 60, 120, 150, 250, 260: windows (0,100] (100,200] (200,300].
        assert_eq!(w.bounds, vec![0, 1, 3, 5]);
        assert_eq!(w.len(), 3);
        // Window 0 is full when record 1 (ending at 120) arrives; window 1 when record 3.
        assert_eq!(
            w.complete_at,
            vec![Nanos(1_000_000_000), Nanos(3_000_000_000)]
        );
        assert_eq!(w.compacted(&s, 0), vec![1, 5]);
        assert_eq!(w.compacted(&s, 1), vec![5]);
        assert_eq!(w.compacted(&s, 2), vec![1, 2, 9]);
        assert_eq!(w.updates(&s, 2), 3);
        // A stream ending exactly on a window's edge completes it.
        let s = stream(&[(50, &[1]), (50, &[1])]);
        let w = Windows::cut(&s, 100);
        assert_eq!((w.len(), w.complete_at.len()), (1, 1));
        // A record longer than a window leaves empty windows before it.
        let s = stream(&[(10, &[1]), (300, &[2])]);
        let w = Windows::cut(&s, 100);
        assert_eq!(w.bounds, vec![0, 1, 1, 1, 2]);
        assert_eq!(w.complete_at.len(), 3);
        assert!(w.compacted(&s, 1).is_empty());
    }

    #[test]
    fn stages_are_prefixes_of_the_windows_log() {
        // Records ending at 30, 60, 90, 120, 150, 180, 210; windows of 100 bytes.
        let s = stream(&[
            (30, &[7]),
            (30, &[3]),
            (30, &[7]),
            (30, &[1]),
            (30, &[2]),
            (30, &[5]),
            (30, &[4]),
        ]);
        let w = Windows::cut(&s, 100);
        assert_eq!(w.bounds, vec![0, 3, 6, 7]);
        // Window 0 in quarters (edges 25, 50, 75, 100): first record past each edge.
        assert_eq!(w.stage_ends(&s, 0, 4), vec![0, 1, 2, 3]);
        assert_eq!(w.compacted_prefix(&s, 0, 2), vec![3, 7]);
        assert_eq!(w.compacted_prefix(&s, 0, 3), vec![3, 7], "folded");
        // Window 1 (edges 125, 150, 175, 200): records 3 (120), 4 (150), 5 (180).
        assert_eq!(w.stage_ends(&s, 1, 4), vec![4, 5, 5, 6]);
        assert_eq!(w.stage_start(&s, 1, 4), Some(Nanos(4_000_000_000)));
        assert_eq!(w.stage_start(&s, 1, 6), None, "past the window");
    }

    #[test]
    fn sorted_pages_merge_into_runs() {
        assert_eq!(runs(&[1, 2, 3, 7, 8, 10], 8), vec![(1, 3), (7, 2), (10, 1)]);
        assert_eq!(runs(&[1, 2, 3, 4, 5], 2), vec![(1, 2), (3, 2), (5, 1)]);
        assert!(runs(&[], 4).is_empty());
    }
}
