//! DiskSim's demerit figure: the rms horizontal distance between two service-time CDFs
//! (Ruemmler & Wilkes), computed exactly as DiskSim 4.0 computes it.
//!
//! 1. Times are binned into DiskSim's 1750 buckets (statdefs "Physical access time" /
//!    "Trace access time": scale 1000, start 0, step 1, grow 1). Edges are integer µs:
//!    b0 = 0, b[k+1] = b[k] + 1 + floor(b[k] / 100). A time of `v` µs (truncated to an
//!    integer) is counted in row k+1 where b[k] ≤ v < b[k+1], the last row taking the rest;
//!    row k is therefore the CDF point (b[k], fraction of requests < b[k]).
//! 2. Each CDF is cut after its first point whose fraction is ≥ 1 (DiskSim's rms reader
//!    stops there). Fractions are rounded to 6 decimals, as DiskSim prints them and its rms
//!    program reads them back.
//! 3. For p = 0.0001, 0.0002, … ≤ 1 (accumulated in `f64`, so the last step may be skipped,
//!    as in DiskSim) the time at which each CDF reaches p is interpolated linearly between
//!    the two points around it; the figure is the root of the mean squared difference, ms.
//!
//! Pure: no I/O. [`DiskSimCdfs::parse_csv`] reads the published `cdf_measured_vs_disksim.csv`
//! text; [`cdf_csv`] writes the same shape for a measured/simulated pair.

use crate::Span;
use std::fmt::Write as _;

/// DiskSim's bucket count.
pub const BUCKETS: usize = 1750;

/// Percentile step of the rms figure.
pub const RMS_STEP: f64 = 0.0001;

/// DiskSim's bucket edges in integer µs.
pub const EDGES_US: [u64; BUCKETS] = edges();

const fn edges() -> [u64; BUCKETS] {
    let mut e = [0u64; BUCKETS];
    let mut k = 1;
    while k < BUCKETS {
        e[k] = e[k - 1] + 1 + e[k - 1] / 100;
        k += 1;
    }
    e
}

/// The row a time of `us` whole microseconds is counted in.
pub fn bucket_of(us: u64) -> usize {
    EDGES_US.partition_point(|&e| e <= us).min(BUCKETS - 1)
}

/// Service times binned in DiskSim's buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemeritHistogram {
    counts: Vec<u64>,
    total: u64,
}

impl Default for DemeritHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl DemeritHistogram {
    pub fn new() -> Self {
        DemeritHistogram {
            counts: vec![0; BUCKETS],
            total: 0,
        }
    }

    /// Counts a time of `us` whole microseconds.
    pub fn add_us(&mut self, us: u64) {
        self.counts[bucket_of(us)] += 1;
        self.total += 1;
    }

    /// Counts a time given as DiskSim holds it, a `f64` in ms: DiskSim truncates
    /// `ms * 1000` to an integer, and so does this (bit for bit the same row).
    pub fn add_ms_f64(&mut self, ms: f64) {
        assert!(
            ms.is_finite() && ms >= 0.0,
            "time {ms} ms is not a duration"
        );
        self.add_us((ms * 1000.0) as u64);
    }

    /// Counts a simulated span (truncated to whole µs).
    pub fn add_span(&mut self, s: Span) {
        self.add_us(s.0 / 1000);
    }

    /// Times counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Count per row (row k: times in `EDGES_US[k-1] .. EDGES_US[k]`).
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Fraction below each row's edge as DiskSim prints it: the running sum of each row's
    /// density (`count / total`, in `f64`), printed with `%f` (6 decimals).
    fn fractions(&self) -> impl Iterator<Item = f64> + '_ {
        let n = self.total.max(1) as f64;
        self.counts.iter().scan(0.0f64, move |dist, &c| {
            *dist += c as f64 / n;
            Some(printed6(*dist))
        })
    }

    /// The CDF points, one per row; `None` when nothing was counted.
    pub fn cdf(&self) -> Option<Cdf> {
        if self.total == 0 {
            return None;
        }
        let points = EDGES_US
            .iter()
            .zip(self.fractions())
            .map(|(&e, y)| (e as f64 / 1000.0, y))
            .collect();
        Some(Cdf::new(points).expect("a histogram's CDF is well formed"))
    }
}

/// `x` as C's `printf("%f")` prints it and `atof` reads it back (exact ties round to even,
/// as Rust's formatting does too).
fn printed6(x: f64) -> f64 {
    format!("{x:.6}").parse().expect("a formatted float parses")
}

/// A CDF as DiskSim's rms sees it: points `(time_ms, fraction < time)`, non-decreasing in
/// both, cut after the first point with fraction ≥ 1.
#[derive(Clone, Debug, PartialEq)]
pub struct Cdf {
    points: Vec<(f64, f64)>,
}

impl Cdf {
    /// Checks and cuts `points`. They must start below every percentile (first fraction 0,
    /// as DiskSim's first row always is), be non-decreasing, and reach 1.
    pub fn new(mut points: Vec<(f64, f64)>) -> Result<Cdf, String> {
        if let Some(i) = points.iter().position(|&(_, y)| y >= 1.0) {
            points.truncate(i + 1);
        } else {
            return Err("the CDF never reaches 1".into());
        }
        if points.len() < 2 || points[0].1 > 0.0 {
            return Err("the CDF must start at fraction 0".into());
        }
        for w in points.windows(2) {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            if !(x1 >= x0 && y1 >= y0 && x0.is_finite() && x1.is_finite()) {
                return Err(format!(
                    "the CDF decreases between ({x0}, {y0}) and ({x1}, {y1})"
                ));
            }
        }
        Ok(Cdf { points })
    }

    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// Visits the time (ms) at which this CDF reaches each percentile of the rms sweep.
    fn sweep(&self) -> impl Iterator<Item = f64> + '_ {
        let mut i = 1;
        let mut p = RMS_STEP;
        std::iter::from_fn(move || {
            if p > 1.0 {
                return None;
            }
            let pts = &self.points;
            while i < pts.len() - 1 && pts[i].1 < p {
                i += 1;
            }
            let ((x0, y0), (x1, y1)) = (pts[i - 1], pts[i]);
            let x = if y1 > y0 {
                x0 + (p - y0) / (y1 - y0) * (x1 - x0)
            } else {
                x1
            };
            p += RMS_STEP;
            Some(x)
        })
    }

    /// The interpolated time (ms) at which the CDF reaches `p` (0 < p ≤ 1).
    pub fn quantile_ms(&self, p: f64) -> f64 {
        assert!(p > 0.0 && p <= 1.0, "percentile {p} outside (0, 1]");
        let pts = &self.points;
        let i = pts
            .iter()
            .position(|&(_, y)| y >= p)
            .unwrap_or(pts.len() - 1)
            .max(1);
        let ((x0, y0), (x1, y1)) = (pts[i - 1], pts[i]);
        if y1 > y0 {
            x0 + (p - y0) / (y1 - y0) * (x1 - x0)
        } else {
            x1
        }
    }
}

/// DiskSim's demerit figure between two CDFs, in ms (symmetric).
pub fn rms_ms(a: &Cdf, b: &Cdf) -> f64 {
    let mut n = 0u32;
    let mut acc = 0.0f64;
    for (x, y) in a.sweep().zip(b.sweep()) {
        acc += (x - y) * (x - y);
        n += 1;
    }
    assert!(n > 9_000, "the percentile sweep visits about 10,000 points");
    (acc / f64::from(n)).sqrt()
}

/// The two CDFs DiskSim publishes beside each validation drive
/// (`edge_ms,measured_count,measured_cdf,disksim_count,disksim_cdf`).
#[derive(Clone, Debug, PartialEq)]
pub struct DiskSimCdfs {
    pub measured: Cdf,
    pub disksim: Cdf,
    /// Requests counted in the measured column.
    pub measured_total: u64,
}

impl DiskSimCdfs {
    /// Parses the CSV text; errors name the line.
    pub fn parse_csv(text: &str) -> Result<DiskSimCdfs, String> {
        const HEADER: &str = "edge_ms,measured_count,measured_cdf,disksim_count,disksim_cdf";
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, h)) if h.trim() == HEADER => {}
            other => {
                return Err(format!(
                    "line 1: expected the header {HEADER:?}, got {:?}",
                    other.map(|(_, h)| h).unwrap_or("")
                ))
            }
        }
        let (mut m, mut d) = (Vec::new(), Vec::new());
        let mut total = 0u64;
        for (i, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            let at = |msg: String| format!("line {}: {msg}", i + 1);
            if f.len() != 5 {
                return Err(at(format!("expected 5 fields, got {}", f.len())));
            }
            let num = |k: usize| -> Result<f64, String> {
                f[k].parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| at(format!("field {}: not a number: {:?}", k + 1, f[k])))
            };
            let count = f[1]
                .parse::<u64>()
                .map_err(|_| at(format!("field 2: not a count: {:?}", f[1])))?;
            total += count;
            let x = num(0)?;
            m.push((x, num(2)?));
            d.push((x, num(4)?));
        }
        Ok(DiskSimCdfs {
            measured: Cdf::new(m).map_err(|e| format!("measured_cdf: {e}"))?,
            disksim: Cdf::new(d).map_err(|e| format!("disksim_cdf: {e}"))?,
            measured_total: total,
        })
    }

    /// DiskSim's own demerit figure for this drive, ms.
    pub fn rms_ms(&self) -> f64 {
        rms_ms(&self.disksim, &self.measured)
    }
}

/// The measured and simulated CDFs side by side as CSV
/// (`edge_ms,measured_count,measured_cdf,simulated_count,simulated_cdf`), one row per
/// bucket up to the first where both have reached 1.
pub fn cdf_csv(measured: &DemeritHistogram, simulated: &DemeritHistogram) -> String {
    let mut s = String::from("edge_ms,measured_count,measured_cdf,simulated_count,simulated_cdf\n");
    let (mut cm, mut cs) = (0u64, 0u64);
    let rows = EDGES_US
        .iter()
        .zip(measured.counts().iter().zip(measured.fractions()))
        .zip(simulated.counts().iter().zip(simulated.fractions()));
    for ((&edge, (&m, fm)), (&sc, fs)) in rows {
        cm += m;
        cs += sc;
        let _ = writeln!(s, "{:.3},{m},{fm:.6},{sc},{fs:.6}", edge as f64 / 1000.0);
        if cm == measured.total() && cs == simulated.total() {
            break;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_follow_disksim_statdefs() {
        assert_eq!(&EDGES_US[..5], &[0, 1, 2, 3, 4]);
        assert_eq!(&EDGES_US[100..103], &[100, 102, 104]);
        assert_eq!(EDGES_US[BUCKETS - 1], 2_049_165_458);
    }

    #[test]
    fn a_time_counts_in_the_row_labelled_by_the_next_edge() {
        assert_eq!(bucket_of(0), 1);
        assert_eq!(bucket_of(99), 100);
        assert_eq!(bucket_of(100), 101);
        assert_eq!(bucket_of(101), 101);
        assert_eq!(bucket_of(102), 102);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        let mut h = DemeritHistogram::new();
        h.add_ms_f64(0.0999);
        h.add_span(Span(99_999));
        h.add_span(Span(100_000));
        assert_eq!(h.counts()[100], 2);
        assert_eq!(h.counts()[101], 1);
        assert_eq!(h.total(), 3);
    }

    #[test]
    fn identical_cdfs_score_zero_and_a_shift_scores_the_shift() {
        let mut a = DemeritHistogram::new();
        let mut b = DemeritHistogram::new();
        for us in 0..50u64 {
            a.add_us(us);
            b.add_us(us + 10);
        }
        let (ca, cb) = (a.cdf().unwrap(), b.cdf().unwrap());
        assert_eq!(rms_ms(&ca, &ca), 0.0);
        let r = rms_ms(&ca, &cb);
        assert!((r - 0.010).abs() < 1e-9, "{r}");
    }

    #[test]
    fn csv_rows_stop_when_both_cdfs_reach_one() {
        let mut a = DemeritHistogram::new();
        let mut b = DemeritHistogram::new();
        a.add_us(3);
        b.add_us(5);
        let csv = cdf_csv(&a, &b);
        let last = csv.lines().last().unwrap();
        assert_eq!(last, "0.006,0,1.000000,1,1.000000");
        assert_eq!(csv.lines().count(), 1 + 7);
    }

    #[test]
    fn parse_csv_rejects_a_bad_row_with_its_line() {
        let text = "edge_ms,measured_count,measured_cdf,disksim_count,disksim_cdf\n0.000,0,0,0,0\n0.001,x,1,1,1\n";
        let err = DiskSimCdfs::parse_csv(text).unwrap_err();
        assert_eq!(err, "line 3: field 2: not a count: \"x\"");
    }
}
