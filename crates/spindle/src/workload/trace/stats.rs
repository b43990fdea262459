//! Trace statistics in one streaming pass: counts, time span, read share, request sizes,
//! addresses, inter-arrival times, sequentiality and the seek locality index L.
//!
//! The definitions follow `shared/traces/trace_stats.py` (the reference script whose numbers are
//! in each trace folder's `STATS.txt`), with these differences, all documented in
//! `docs/traces.md`:
//!
//! * Sizes are whole sectors (byte sizes round up), so a byte size that is not a multiple of 512
//!   counts as the next multiple. All public samples are sector-aligned, so they agree exactly.
//! * Inter-arrival percentiles come from an HDR histogram with 3 significant digits (relative
//!   error below 0.05%, bounded memory) instead of a sorted list. The rank is the reference's:
//!   the value at index `round(p/100 * (n-1))` of the sorted gaps, Python rounding (half to
//!   even). Size percentiles are exact (a map from size to count).
//! * The reference sorts all arrival times before taking gaps. This pass takes gaps between
//!   consecutive records in file order, skipping negative gaps (counted as non-monotonic). For a
//!   sorted trace the two are the same; for an unsorted one the mean still is (it is
//!   `span / (n - 1)` either way) but the percentiles and the CV differ.
//!
//! Seek locality L (SR-Array dissertation §2.1.4 and table 4.2): "the ratio between the average
//! of random seek distances on that disk and the average seek distance observed in the trace".
//! The reference script does not compute it; here, per device, a seek is the distance in
//! sectors from the end of the previous request on that device to the start of the next (so a
//! sequential request seeks 0), and the random average is a third of the device's touched span
//! (`max(lba + sectors) - min(lba)`, the mean of `|x - y|` for uniform x, y). The trace's L is
//! the seek-count-weighted ratio `Σ_d seeks_d · span_d / 3 / Σ_d seek_distance_sum_d`. L is
//! absent when no request ever moved the head.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{TraceError, TraceRecord};
use crate::Op;

/// Summary statistics of a trace. All sizes in bytes are `sectors * 512`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceStats {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    /// Reads as a percentage of requests (0 for an empty trace).
    pub read_pct: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub time: Option<TimeStats>,
    pub size: Option<SizeStats>,
    pub address: Option<AddressStats>,
    /// Absent with fewer than two requests.
    pub interarrival: Option<InterArrivalStats>,
    /// Requests starting where the previous request on the same device ended, in percent.
    pub sequential_pct: f64,
    /// The seek locality index L of the whole trace (see the module docs).
    pub seek_locality: Option<f64>,
    pub device_count: usize,
    /// Per device, in device-number order.
    pub devices: Vec<DeviceStats>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeStats {
    /// The earliest arrival.
    pub first_ns: u64,
    /// The latest arrival.
    pub last_ns: u64,
    pub span_ns: u64,
    /// Records that arrive before the record just before them in the file.
    pub nonmonotonic_records: u64,
    /// Requests per second over the span; absent when the span is 0.
    pub mean_iops: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeStats {
    pub min_bytes: u64,
    pub p50_bytes: u64,
    pub mean_bytes: f64,
    pub p90_bytes: u64,
    pub p99_bytes: u64,
    pub max_bytes: u64,
    /// The 6 most common sizes, most common first (ties: smaller size first).
    pub top: Vec<SizeCount>,
    /// Power-of-two buckets from the smallest to the largest size: `count` requests of more
    /// than half `le_bytes` and at most `le_bytes`.
    pub histogram: Vec<SizeBucket>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeCount {
    pub bytes: u64,
    pub count: u64,
    pub pct: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeBucket {
    pub le_bytes: u64,
    pub count: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AddressStats {
    /// The lowest start sector.
    pub lba_min: u64,
    /// The highest start sector.
    pub lba_max: u64,
    /// The highest end sector (`max(lba + sectors)`, exclusive).
    pub end_max: u64,
    /// `(end_max - lba_min) * 512`.
    pub range_bytes: u128,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InterArrivalStats {
    /// `span / (requests - 1)`.
    pub mean_ns: f64,
    /// Coefficient of variation (population standard deviation / mean) of the gaps.
    pub cv: Option<f64>,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceStats {
    pub device: u32,
    pub requests: u64,
    pub reads: u64,
    pub read_pct: f64,
    pub lba_min: u64,
    pub lba_max: u64,
    pub end_max: u64,
    pub sequential_pct: f64,
    /// Mean distance in sectors from the previous request's end; absent with one request.
    pub mean_seek_sectors: Option<f64>,
    /// This device's seek locality index L.
    pub seek_locality: Option<f64>,
}

#[derive(Clone, Debug)]
struct DeviceAcc {
    requests: u64,
    reads: u64,
    lba_min: u64,
    lba_max: u64,
    end_max: u64,
    last_end: u64,
    sequential: u64,
    seeks: u64,
    seek_sum: u128,
}

/// Accumulates [`TraceStats`] one record at a time, in bounded memory (per device and per
/// distinct size, not per request).
pub struct StatsBuilder {
    requests: u64,
    reads: u64,
    read_sectors: u128,
    write_sectors: u128,
    time_min: u64,
    time_max: u64,
    prev_ns: u64,
    nonmonotonic: u64,
    sizes: BTreeMap<u32, u64>,
    gaps: Histogram<u64>,
    gap_n: u64,
    gap_max: u64,
    gap_mean: f64,
    gap_m2: f64,
    devices: BTreeMap<u32, DeviceAcc>,
}

impl Default for StatsBuilder {
    fn default() -> Self {
        StatsBuilder::new()
    }
}

/// The index of percentile `p` in a sorted list of `n` values, as `trace_stats.py` computes it:
/// `round(p / 100 * (n - 1))` with Python's round-half-to-even.
fn rank(p: u64, n: u64) -> u64 {
    assert!(p <= 100 && n > 0, "percentile {p} of {n} values");
    let num = u128::from(p) * u128::from(n - 1);
    let (q, r) = (num / 100, num % 100);
    let q = u64::try_from(q).expect("q <= n - 1");
    if r > 50 || (r == 50 && q % 2 == 1) {
        q + 1
    } else {
        q
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl StatsBuilder {
    pub fn new() -> Self {
        StatsBuilder {
            requests: 0,
            reads: 0,
            read_sectors: 0,
            write_sectors: 0,
            time_min: u64::MAX,
            time_max: 0,
            prev_ns: 0,
            nonmonotonic: 0,
            sizes: BTreeMap::new(),
            gaps: Histogram::new(3).expect("3 significant figures is a valid precision"),
            gap_n: 0,
            gap_max: 0,
            gap_mean: 0.0,
            gap_m2: 0.0,
            devices: BTreeMap::new(),
        }
    }

    /// Accounts for one record.
    pub fn push(&mut self, rec: &TraceRecord) {
        assert!(rec.sectors > 0, "readers never yield empty requests");
        let t = rec.arrival.0;
        let end = rec
            .lba
            .checked_add(u64::from(rec.sectors))
            .expect("readers reject requests past u64::MAX");
        if self.requests > 0 {
            if t < self.prev_ns {
                self.nonmonotonic += 1;
            } else {
                let gap = t - self.prev_ns;
                if self.gaps.record(gap).is_err() {
                    self.gaps.saturating_record(gap);
                }
                self.gap_n += 1;
                self.gap_max = self.gap_max.max(gap);
                let x = gap as f64;
                let delta = x - self.gap_mean;
                self.gap_mean += delta / self.gap_n as f64;
                self.gap_m2 += delta * (x - self.gap_mean);
            }
        }
        self.prev_ns = t;
        self.requests += 1;
        self.time_min = self.time_min.min(t);
        self.time_max = self.time_max.max(t);
        let read = rec.op == Op::Read;
        if read {
            self.reads += 1;
            self.read_sectors += u128::from(rec.sectors);
        } else {
            self.write_sectors += u128::from(rec.sectors);
        }
        *self.sizes.entry(rec.sectors).or_insert(0) += 1;
        let d = self.devices.entry(rec.device).or_insert(DeviceAcc {
            requests: 0,
            reads: 0,
            lba_min: u64::MAX,
            lba_max: 0,
            end_max: 0,
            last_end: 0,
            sequential: 0,
            seeks: 0,
            seek_sum: 0,
        });
        if d.requests > 0 {
            if d.last_end == rec.lba {
                d.sequential += 1;
            }
            d.seeks += 1;
            d.seek_sum += u128::from(d.last_end.abs_diff(rec.lba));
        }
        d.requests += 1;
        d.reads += u64::from(read);
        d.lba_min = d.lba_min.min(rec.lba);
        d.lba_max = d.lba_max.max(rec.lba);
        d.end_max = d.end_max.max(end);
        d.last_end = end;
    }

    /// The statistics so far.
    pub fn finish(&self) -> TraceStats {
        let n = self.requests;
        let sat = |x: u128| u64::try_from(x * 512).unwrap_or(u64::MAX);
        let mut stats = TraceStats {
            requests: n,
            reads: self.reads,
            writes: n - self.reads,
            read_pct: pct(self.reads, n),
            read_bytes: sat(self.read_sectors),
            write_bytes: sat(self.write_sectors),
            time: None,
            size: None,
            address: None,
            interarrival: None,
            sequential_pct: pct(self.devices.values().map(|d| d.sequential).sum(), n),
            seek_locality: None,
            device_count: self.devices.len(),
            devices: self
                .devices
                .iter()
                .map(|(&dev, d)| device_stats(dev, d))
                .collect(),
        };
        if n == 0 {
            return stats;
        }
        let span_ns = self.time_max - self.time_min;
        stats.time = Some(TimeStats {
            first_ns: self.time_min,
            last_ns: self.time_max,
            span_ns,
            nonmonotonic_records: self.nonmonotonic,
            mean_iops: (span_ns > 0).then(|| n as f64 / (span_ns as f64 / 1e9)),
        });
        stats.size = Some(self.size_stats());
        let lba_min = self
            .devices
            .values()
            .map(|d| d.lba_min)
            .min()
            .expect("n > 0");
        let end_max = self
            .devices
            .values()
            .map(|d| d.end_max)
            .max()
            .expect("n > 0");
        stats.address = Some(AddressStats {
            lba_min,
            lba_max: self
                .devices
                .values()
                .map(|d| d.lba_max)
                .max()
                .expect("n > 0"),
            end_max,
            range_bytes: u128::from(end_max - lba_min) * 512,
        });
        if n >= 2 {
            let mean_ns = span_ns as f64 / (n - 1) as f64;
            let variance = if self.gap_n > 0 {
                self.gap_m2 / self.gap_n as f64
            } else {
                0.0
            };
            stats.interarrival = Some(InterArrivalStats {
                mean_ns,
                cv: (self.gap_n > 0 && self.gap_mean > 0.0)
                    .then(|| variance.sqrt() / self.gap_mean),
                p50_ns: self.gap_quantile(50),
                p90_ns: self.gap_quantile(90),
                p99_ns: self.gap_quantile(99),
                max_ns: self.gap_max,
            });
        }
        let (mut random, mut observed) = (0.0f64, 0.0f64);
        for d in self.devices.values() {
            random += d.seeks as f64 * (d.end_max - d.lba_min) as f64 / 3.0;
            observed += d.seek_sum as f64;
        }
        stats.seek_locality = (observed > 0.0).then(|| random / observed);
        stats
    }

    fn gap_quantile(&self, p: u64) -> u64 {
        let n = self.gaps.len();
        if n == 0 {
            return 0;
        }
        let k = rank(p, n);
        let mut seen = 0u64;
        for v in self.gaps.iter_recorded() {
            seen += v.count_at_value();
            if seen > k {
                return self
                    .gaps
                    .median_equivalent(v.value_iterated_to())
                    .min(self.gap_max);
            }
        }
        self.gap_max
    }

    fn size_stats(&self) -> SizeStats {
        let n = self.requests;
        let quantile = |p: u64| {
            let k = rank(p, n);
            let mut seen = 0u64;
            for (&s, &c) in &self.sizes {
                seen += c;
                if seen > k {
                    return u64::from(s) * 512;
                }
            }
            unreachable!("the counts add up to n")
        };
        let total: u128 = self
            .sizes
            .iter()
            .map(|(&s, &c)| u128::from(s) * u128::from(c))
            .sum();
        let mut top: Vec<(u32, u64)> = self.sizes.iter().map(|(&s, &c)| (s, c)).collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        top.truncate(6);
        let min = *self.sizes.keys().next().expect("n > 0");
        let max = *self.sizes.keys().next_back().expect("n > 0");
        // Power-of-two buckets in bytes: 512 (1 sector), 1 KiB, 2 KiB, …
        // In 64 bits: a request of more than 2^31 sectors has no 32-bit power of two above it.
        let bucket = |sectors: u32| u64::from(sectors).next_power_of_two().trailing_zeros();
        let mut histogram: Vec<SizeBucket> = (bucket(min)..=bucket(max))
            .map(|b| SizeBucket {
                le_bytes: 512u64 << b,
                count: 0,
            })
            .collect();
        for (&s, &c) in &self.sizes {
            histogram[(bucket(s) - bucket(min)) as usize].count += c;
        }
        SizeStats {
            min_bytes: u64::from(min) * 512,
            p50_bytes: quantile(50),
            mean_bytes: total as f64 * 512.0 / n as f64,
            p90_bytes: quantile(90),
            p99_bytes: quantile(99),
            max_bytes: u64::from(max) * 512,
            top: top
                .into_iter()
                .map(|(s, c)| SizeCount {
                    bytes: u64::from(s) * 512,
                    count: c,
                    pct: pct(c, n),
                })
                .collect(),
            histogram,
        }
    }
}

fn device_stats(device: u32, d: &DeviceAcc) -> DeviceStats {
    let mean_seek = (d.seeks > 0).then(|| d.seek_sum as f64 / d.seeks as f64);
    let random = (d.end_max - d.lba_min) as f64 / 3.0;
    DeviceStats {
        device,
        requests: d.requests,
        reads: d.reads,
        read_pct: pct(d.reads, d.requests),
        lba_min: d.lba_min,
        lba_max: d.lba_max,
        end_max: d.end_max,
        sequential_pct: pct(d.sequential, d.requests),
        mean_seek_sectors: mean_seek,
        seek_locality: mean_seek.filter(|&m| m > 0.0).map(|m| random / m),
    }
}

impl TraceStats {
    /// Statistics of a whole record stream; the first error stops it.
    pub fn from_records<I>(records: I) -> Result<TraceStats, TraceError>
    where
        I: IntoIterator<Item = Result<TraceRecord, TraceError>>,
    {
        let mut b = StatsBuilder::new();
        for r in records {
            b.push(&r?);
        }
        Ok(b.finish())
    }

    /// The devices with the most requests, most first (ties: lower device number first).
    pub fn top_devices(&self, count: usize) -> Vec<&DeviceStats> {
        let mut v: Vec<&DeviceStats> = self.devices.iter().collect();
        v.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.device.cmp(&b.device)));
        v.truncate(count);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    fn rec(t: u64, device: u32, lba: u64, sectors: u32, op: Op) -> TraceRecord {
        TraceRecord {
            arrival: Nanos(t),
            device,
            lba,
            sectors,
            op,
        }
    }

    #[test]
    fn rank_matches_python_round_half_even() {
        // Python: round(0.5 * 3) = 2, round(0.5 * 1) = 0, round(0.5 * 5) = 2, round(0.9 * 9) = 8.
        assert_eq!(rank(50, 4), 2);
        assert_eq!(rank(50, 2), 0);
        assert_eq!(rank(50, 6), 2);
        assert_eq!(rank(90, 10), 8);
        assert_eq!(rank(99, 1), 0);
        assert_eq!(rank(100, 7), 6);
    }

    #[test]
    fn empty_and_single_record_traces() {
        let s = StatsBuilder::new().finish();
        assert_eq!(
            (s.requests, s.read_pct, s.time, s.devices.len()),
            (0, 0.0, None, 0)
        );
        let s = TraceStats::from_records([Ok(rec(5, 1, 10, 8, Op::Read))]).expect("no errors");
        assert_eq!(s.requests, 1);
        assert_eq!(s.interarrival, None);
        assert_eq!(s.seek_locality, None);
        assert_eq!(s.time.as_ref().expect("one record").mean_iops, None);
        assert_eq!(s.size.as_ref().expect("one record").p99_bytes, 4096);
    }

    #[test]
    fn counts_sizes_gaps_and_sequentiality() {
        let recs = [
            rec(0, 0, 100, 8, Op::Read),
            rec(1_000, 0, 108, 8, Op::Read), // sequential on device 0, seek 0
            rec(3_000, 1, 0, 16, Op::Write), // first on device 1
            rec(2_500, 0, 0, 1, Op::Write),  // goes back in time; seek 116 on device 0
            rec(6_000, 1, 16, 16, Op::Read), // sequential on device 1
        ];
        let s = TraceStats::from_records(recs.map(Ok)).expect("no errors");
        assert_eq!((s.requests, s.reads, s.writes), (5, 3, 2));
        assert_eq!(s.read_pct, 60.0);
        assert_eq!(s.read_bytes, (8 + 8 + 16) * 512);
        let t = s.time.clone().expect("records");
        assert_eq!(
            (t.first_ns, t.last_ns, t.span_ns, t.nonmonotonic_records),
            (0, 6_000, 6_000, 1)
        );
        let ia = s.interarrival.clone().expect("records");
        assert_eq!(ia.mean_ns, 1_500.0, "span / (n - 1)");
        // File-order gaps without the negative one: 1000, 2000, 3500.
        assert_eq!((ia.p50_ns, ia.max_ns), (2_000, 3_500));
        let size = s.size.clone().expect("records");
        assert_eq!(
            (size.min_bytes, size.max_bytes, size.p50_bytes),
            (512, 8192, 4096)
        );
        assert_eq!(
            size.top[0],
            SizeCount {
                bytes: 4096,
                count: 2,
                pct: 40.0
            }
        );
        assert_eq!(
            size.histogram,
            vec![
                SizeBucket {
                    le_bytes: 512,
                    count: 1
                },
                SizeBucket {
                    le_bytes: 1024,
                    count: 0
                },
                SizeBucket {
                    le_bytes: 2048,
                    count: 0
                },
                SizeBucket {
                    le_bytes: 4096,
                    count: 2
                },
                SizeBucket {
                    le_bytes: 8192,
                    count: 2
                },
            ]
        );
        assert_eq!(s.sequential_pct, 40.0);
        assert_eq!(s.device_count, 2);
        let d0 = &s.devices[0];
        assert_eq!((d0.lba_min, d0.lba_max, d0.end_max), (0, 108, 116));
        assert_eq!(d0.mean_seek_sectors, Some(58.0), "(0 + 116) / 2");
        let l0 = d0.seek_locality.expect("the head moved");
        assert!((l0 - (116.0 / 3.0) / 58.0).abs() < 1e-12, "{l0}");
        let d1 = &s.devices[1];
        assert_eq!((d1.mean_seek_sectors, d1.seek_locality), (Some(0.0), None));
        // Trace L = (2 * 116/3 + 1 * 32/3) / (116 + 0).
        let l = s.seek_locality.expect("the head moved");
        assert!(
            (l - (2.0 * 116.0 / 3.0 + 32.0 / 3.0) / 116.0).abs() < 1e-12,
            "{l}"
        );
        assert_eq!(s.top_devices(1)[0].device, 0);
    }

    #[test]
    fn uniform_random_access_has_locality_near_one() {
        // A fixed LCG over 1,000,000 sectors: observed mean seek ≈ span / 3, so L ≈ 1.
        let mut x: u64 = 0x5EED;
        let mut b = StatsBuilder::new();
        for i in 0..200_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let lba = (x >> 33) % 1_000_000;
            b.push(&rec(i, 0, lba, 1, Op::Read));
        }
        let l = b.finish().seek_locality.expect("random seeks");
        assert!((l - 1.0).abs() < 0.02, "L of uniform random access = {l}");
    }
}
