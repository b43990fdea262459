//! The primary's stream of updates as the secondary receives it: each forwarded log record
//! at its place in the log (its LSN, a byte offset) and its arrival time, with the data
//! pages it changes.
//!
//! Two sources: the writes of any block trace (physical block forwarding: a write of n
//! bytes is n bytes of log and changes the pages it covers), and a real database log, the
//! text `pg_waldump` prints for a PostgreSQL WAL (`scripts/pgbench_wal.sh`), whose records
//! name the relation blocks they change (`blkref #k: rel SPC/DB/REL [fork F] blk B`).

use crate::Nanos;
use std::collections::BTreeMap;
use std::io::BufRead;

/// One forwarded log record.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Byte offset of the record's end in the log, from the stream's start: the log volume
    /// holds `lsn_end` bytes once this record is in.
    pub lsn_end: u64,
    /// When it reaches the secondary (non-decreasing).
    pub at: Nanos,
    /// Its page updates: `pages[first..first + count]` of the [`Stream`].
    pub first: u32,
    pub count: u32,
}

/// A stream of forwarded records and the data pages they update.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    pub records: Vec<Record>,
    /// Page numbers on the data volume (pages of [`Stream::page_bytes`]), record by record.
    pub pages: Vec<u64>,
    pub page_bytes: u32,
    /// Pages the data volume must hold (one past the highest page).
    pub data_pages: u64,
    /// What the stream is, for the report.
    pub label: String,
}

impl Stream {
    pub fn log_bytes(&self) -> u64 {
        self.records.last().map_or(0, |r| r.lsn_end)
    }

    /// Time from the first record's arrival to the last's.
    pub fn duration(&self) -> Nanos {
        match (self.records.first(), self.records.last()) {
            (Some(a), Some(b)) => Nanos(b.at.0 - a.at.0),
            _ => Nanos::ZERO,
        }
    }

    pub fn updates(&self, r: &Record) -> &[u64] {
        &self.pages[r.first as usize..(r.first + r.count) as usize]
    }

    /// The stream replayed `speedup` times faster (0.5: at half the rate); times are
    /// rescaled from the first arrival.
    pub fn with_speedup(mut self, speedup: f64) -> Stream {
        if let Some(t0) = self.records.first().map(|r| r.at.0) {
            for r in &mut self.records {
                r.at = Nanos(t0 + ((r.at.0 - t0) as f64 / speedup).round() as u64);
            }
        }
        self
    }

    /// The stream played `times` times back to back (a long steady run from a short
    /// capture): each cycle's log follows the last, and its first record arrives one mean
    /// inter-arrival time after the last cycle's last record.
    pub fn repeated(mut self, times: u32) -> Result<Stream, String> {
        let (n, pages) = (self.records.len(), self.pages.len());
        if times <= 1 || n == 0 {
            return Ok(self);
        }
        let (log, span) = (self.log_bytes(), self.duration().0);
        let period = span + span / n as u64;
        let times64 = u64::from(times);
        let too_long = || {
            format!(
                "repeating {n} records ({pages} page updates, {log} bytes of log over {span} ns) \
                 {times} times is beyond what a stream can hold (2^32 page updates, 2^64 bytes \
                 and ns)"
            )
        };
        let total_pages = (pages as u64).checked_mul(times64).ok_or_else(too_long)?;
        if total_pages > u64::from(u32::MAX)
            || log.checked_mul(times64).is_none()
            || period.checked_mul(times64).is_none()
        {
            return Err(too_long());
        }
        for c in 1..times64 {
            for i in 0..n {
                let r = self.records[i];
                self.records.push(Record {
                    lsn_end: r.lsn_end + c * log,
                    at: Nanos(r.at.0 + c * period),
                    first: r.first + (c * pages as u64) as u32,
                    count: r.count,
                });
            }
            self.pages.extend_from_within(..pages);
        }
        Ok(self)
    }

    /// Adds a record; errors past 2^32 page updates.
    pub(crate) fn push(
        &mut self,
        lsn_end: u64,
        at: Nanos,
        pages: impl IntoIterator<Item = u64>,
    ) -> Result<(), String> {
        let first = u32::try_from(self.pages.len()).map_err(|_| "more than 2^32 page updates")?;
        self.pages.extend(pages);
        let count =
            u32::try_from(self.pages.len()).map_err(|_| "more than 2^32 page updates")? - first;
        self.records.push(Record {
            lsn_end,
            at,
            first,
            count,
        });
        Ok(())
    }
}

/// The write stream of a block trace: each write of the trace (in arrival order) is one
/// record of as many log bytes as it writes, updating the `page_bytes` pages it touches.
/// `writes` yields `(arrival, first byte, bytes)`; arrivals must not decrease. Times count
/// from the first write.
pub fn from_writes(
    writes: impl IntoIterator<Item = Result<(Nanos, u64, u64), String>>,
    page_bytes: u32,
    label: String,
) -> Result<Stream, String> {
    let mut s = Stream {
        page_bytes,
        label,
        ..Stream::default()
    };
    let pb = u64::from(page_bytes);
    let mut lsn = 0u64;
    let mut last = Nanos::ZERO;
    let mut t0 = None;
    for (i, w) in writes.into_iter().enumerate() {
        let (at, offset, bytes) = w?;
        if at < last {
            return Err(format!(
                "write {} arrives at {at}, before the previous one ({last})",
                i + 1
            ));
        }
        last = at;
        let at = Nanos(at.0 - *t0.get_or_insert(at.0));
        if bytes == 0 {
            continue;
        }
        let too_big = || format!("write {}: the log passes 2^64 bytes", i + 1);
        lsn = lsn.checked_add(bytes).ok_or_else(too_big)?;
        let last = offset.checked_add(bytes).ok_or_else(too_big)?;
        let (first, end) = (offset / pb, last.div_ceil(pb));
        s.data_pages = s.data_pages.max(end);
        s.push(lsn, at, first..end)
            .map_err(|e| format!("write {}: {e}", i + 1))?;
    }
    Ok(s)
}

/// A relation fork: tablespace, database, relation file and fork (main 0, fsm 1, vm 2, init 3).
type RelFork = (u32, u32, u32, u8);

/// A record of `pg_waldump`'s text: its LSN, total length, commit time and block references.
#[derive(Debug, Default, PartialEq)]
struct WalLine {
    lsn: u64,
    tot: u64,
    commit_ns: Option<i128>,
    blocks: Vec<(RelFork, u64)>,
}

/// Parses one `pg_waldump` line (`rmgr: … len (rec/tot): R/ T, tx: X, lsn: H/L, prev …, desc:
/// …[, blkref #k: rel S/D/R [fork F] blk B [FPW]]…`).
fn parse_wal_line(line: &str) -> Result<WalLine, String> {
    let field = |key: &str| -> Result<&str, String> {
        let at = line
            .find(key)
            .ok_or_else(|| format!("no `{}` field", key.trim_end_matches(':')))?;
        Ok(line[at + key.len()..].trim_start())
    };
    let tot = field("len (rec/tot):")?;
    let tot = tot
        .split(',')
        .next()
        .and_then(|s| s.split('/').nth(1))
        .and_then(|s| s.trim().parse::<u32>().ok())
        .map(u64::from)
        .ok_or("a `len (rec/tot)` that is not two numbers")?;
    let lsn = field("lsn:")?;
    let lsn = lsn.split(',').next().unwrap_or("");
    let (hi, lo) = lsn
        .split_once('/')
        .ok_or_else(|| format!("lsn `{lsn}` is not HI/LO"))?;
    let hex = |s: &str| u64::from_str_radix(s.trim(), 16).map_err(|_| format!("lsn `{lsn}`"));
    let (hi, lo) = (hex(hi)?, hex(lo)?);
    if hi > u64::from(u32::MAX) || lo > u64::from(u32::MAX) {
        return Err(format!("lsn `{lsn}` beyond 64 bits"));
    }
    let mut out = WalLine {
        lsn: hi << 32 | lo,
        tot,
        ..WalLine::default()
    };
    let desc = field("desc:").unwrap_or("");
    if let Some(rest) = desc.strip_prefix("COMMIT ") {
        out.commit_ns = Some(parse_utc(rest)?);
    }
    for part in desc.split("blkref #").skip(1) {
        let err = || format!("block reference `blkref #{}`", part.trim_end());
        let rel = part.split_once("rel ").map(|(_, r)| r).ok_or_else(err)?;
        let mut words = rel.split_whitespace();
        let ids: Vec<u32> = words
            .next()
            .ok_or_else(err)?
            .trim_end_matches(',')
            .split('/')
            .map(|x| x.parse::<u32>())
            .collect::<Result<_, _>>()
            .map_err(|_| err())?;
        let [spc, db, relfile] = ids[..] else {
            return Err(err());
        };
        let mut fork = 0u8;
        let mut blk = None;
        while let Some(w) = words.next() {
            match w {
                "fork" => {
                    fork = match words.next().ok_or_else(err)? {
                        "main" => 0,
                        "fsm" => 1,
                        "vm" => 2,
                        "init" => 3,
                        _ => return Err(err()),
                    }
                }
                "blk" => {
                    let b = words.next().ok_or_else(err)?;
                    let b = b.trim_end_matches(|c: char| !c.is_ascii_digit());
                    // PostgreSQL's BlockNumber is 32 bits.
                    blk = Some(u64::from(b.parse::<u32>().map_err(|_| err())?));
                    break;
                }
                _ => {}
            }
        }
        out.blocks
            .push(((spc, db, relfile, fork), blk.ok_or_else(err)?));
    }
    Ok(out)
}

/// `2026-11-27 16:00:26.591975 UTC…` as nanoseconds since 1970 (proleptic Gregorian).
fn parse_utc(s: &str) -> Result<i128, String> {
    let bad = || format!("commit time `{}`", s.trim_end());
    let mut it = s.split_whitespace();
    let (date, time) = (it.next().ok_or_else(bad)?, it.next().ok_or_else(bad)?);
    let d: Vec<i64> = date
        .split('-')
        .map(|x| x.parse())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let [y, m, day] = d[..] else {
        return Err(bad());
    };
    let time = time.trim_end_matches(';');
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<i64> = hms
        .split(':')
        .map(|x| x.parse())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let [h, mi, sec] = t[..] else {
        return Err(bad());
    };
    if !(1..=9999).contains(&y)
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&day)
        || !(0..=23).contains(&h)
        || !(0..=59).contains(&mi)
        || !(0..=60).contains(&sec)
    {
        return Err(bad());
    }
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let nanos: i64 = format!("{frac:0<9}").parse().map_err(|_| bad())?;
    // Days from 1970-01-01 (H. Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = i128::from(days) * 86_400 + i128::from(h * 3600 + mi * 60 + sec);
    Ok(secs * 1_000_000_000 + i128::from(nanos))
}

/// A PostgreSQL WAL as `pg_waldump` prints it (lines starting `#` are comments): every record
/// is a record of its total length; its block references are the pages it updates, each
/// relation fork laid out on the data volume as one extent (in order of tablespace,
/// database, relation and fork) as long as its highest block; records are timed by their
/// LSN between the commit times around them (a commit record's time is its `COMMIT`
/// timestamp). `origin` names the input in errors (`FILE:LINE`).
pub fn from_waldump(input: impl BufRead, origin: &str) -> Result<Stream, String> {
    let mut lines: Vec<WalLine> = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let line = line.map_err(|e| format!("{origin}:{}: {e}", i + 1))?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        // pg_waldump's own messages (e.g. the error at the end of valid WAL).
        if t.starts_with("pg_waldump:") {
            continue;
        }
        let w = parse_wal_line(t).map_err(|e| format!("{origin}:{}: {e}", i + 1))?;
        if let Some(prev) = lines.last() {
            if w.lsn < prev.lsn.saturating_add(prev.tot) {
                return Err(format!(
                    "{origin}:{}: lsn {:X}/{:08X} overlaps the previous record",
                    i + 1,
                    w.lsn >> 32,
                    w.lsn as u32
                ));
            }
        }
        lines.push(w);
    }
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return Err(format!("{origin}: no WAL records"));
    };
    let (lsn0, lsn_last) = (first.lsn, last.lsn.saturating_add(last.tot));
    // Commit times, in LSN order; a clock that steps back is held (times never decrease).
    let commits: Vec<(u64, i128)> = lines
        .iter()
        .filter_map(|w| w.commit_ns.map(|t| (w.lsn, t)))
        .scan(i128::MIN, |hi, (l, t)| {
            *hi = (*hi).max(t);
            Some((l, *hi))
        })
        .collect();
    if commits.is_empty() {
        return Err(format!(
            "{origin}: no COMMIT record, so nothing gives the records a time"
        ));
    }
    let t0 = commits[0].1;
    // Extents: each relation fork as long as its highest block, in key order.
    let mut extents: BTreeMap<RelFork, u64> = BTreeMap::new();
    for w in &lines {
        for &(rel, blk) in &w.blocks {
            let e = extents.entry(rel).or_insert(0);
            *e = (*e).max(blk + 1);
        }
    }
    let mut base = 0u64;
    for len in extents.values_mut() {
        let start = base;
        base += *len;
        *len = start;
    }
    let mut s = Stream {
        page_bytes: 8192,
        data_pages: base,
        label: format!("{origin} (PostgreSQL WAL)"),
        ..Stream::default()
    };
    let mut next = 0usize; // the first commit at or after the record
    for w in &lines {
        while next < commits.len() && commits[next].0 < w.lsn {
            next += 1;
        }
        let t = match (next.checked_sub(1).map(|p| commits[p]), commits.get(next)) {
            (_, Some(&(l, t))) if l == w.lsn => t,
            (Some((l0, a)), Some(&(l1, b))) => {
                a + (b - a) * i128::from(w.lsn - l0) / i128::from(l1 - l0)
            }
            (None, Some(&(_, t))) | (Some((_, t)), None) => t,
            (None, None) => unreachable!("commits is not empty"),
        };
        let at = Nanos(u64::try_from(t - t0).expect("times never decrease from the first commit"));
        let pages = w.blocks.iter().map(|(rel, blk)| extents[rel] + blk);
        let end = w
            .lsn
            .checked_add(w.tot)
            .ok_or_else(|| format!("{origin}: a record ends past the 64-bit LSN space"))?;
        s.push(end - lsn0, at, pages)
            .map_err(|e| format!("{origin}: {e}"))?;
    }
    debug_assert_eq!(s.log_bytes(), lsn_last - lsn0);
    Ok(s)
}

#[cfg(test)]
mod tests;
