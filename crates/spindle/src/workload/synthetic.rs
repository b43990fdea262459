//! Synthetic request streams: the Iometer-style closed loop (Q outstanding requests, a new
//! one as soon as one completes) and the open loop (Poisson arrivals at a given rate).
//!
//! Each request's operation, size and address are drawn from [`Mix`]: read fraction, a size
//! distribution, alignment, the span of the data set, and a sequential fraction (the chance a
//! request continues where the previous request of its stream ended).

use crate::{Nanos, Op, Span};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};
use rand_pcg::Pcg64Mcg;

/// What the requests look like (all sizes in sectors of the drive).
#[derive(Clone, Debug)]
pub struct Mix {
    pub read_fraction: f64,
    /// (size in sectors, weight); weights need not sum to one.
    pub sizes: Vec<(u32, f64)>,
    pub alignment_sectors: u64,
    /// First sector and length of the region requests fall in.
    pub span_start: u64,
    pub span_sectors: u64,
    pub sequential_fraction: f64,
}

/// Draws requests from a [`Mix`] with a seeded RNG.
pub struct Generator {
    mix: Mix,
    cumulative: Vec<f64>,
    rng: Pcg64Mcg,
    /// Where each stream's previous request ended (for sequential continuation).
    stream_end: Vec<Option<u64>>,
}

/// One generated request (no arrival time yet).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Draw {
    pub op: Op,
    pub lba: u64,
    pub sectors: u32,
}

impl Generator {
    /// `streams`: independent sequential streams (the closed loop's Q).
    pub fn new(mix: Mix, streams: usize, seed: u64) -> Generator {
        assert!(
            !mix.sizes.is_empty(),
            "a size distribution has at least one size"
        );
        assert!(
            mix.alignment_sectors >= 1,
            "alignment is at least one sector"
        );
        let max = mix
            .sizes
            .iter()
            .map(|s| u64::from(s.0))
            .max()
            .expect("non-empty");
        assert!(
            max <= mix.span_sectors,
            "the span holds the largest request"
        );
        let total: f64 = mix.sizes.iter().map(|s| s.1).sum();
        let mut acc = 0.0;
        let cumulative = mix
            .sizes
            .iter()
            .map(|s| {
                acc += s.1 / total;
                acc
            })
            .collect();
        Generator {
            mix,
            cumulative,
            rng: Pcg64Mcg::seed_from_u64(seed),
            stream_end: vec![None; streams.max(1)],
        }
    }

    pub fn draw(&mut self, stream: usize) -> Draw {
        let op = if self.rng.gen::<f64>() < self.mix.read_fraction {
            Op::Read
        } else {
            Op::Write
        };
        let sectors = if self.mix.sizes.len() == 1 {
            self.mix.sizes[0].0
        } else {
            let u: f64 = self.rng.gen();
            let i = self
                .cumulative
                .partition_point(|&c| c < u)
                .min(self.mix.sizes.len() - 1);
            self.mix.sizes[i].0
        };
        let end = self.mix.span_start + self.mix.span_sectors;
        let sequential = self.mix.sequential_fraction > 0.0
            && self.rng.gen::<f64>() < self.mix.sequential_fraction;
        let lba = match self.stream_end[stream] {
            Some(prev) if sequential && prev + u64::from(sectors) <= end => prev,
            _ => {
                // Aligned slots whose request stays inside the span.
                let slots =
                    (self.mix.span_sectors - u64::from(sectors)) / self.mix.alignment_sectors + 1;
                self.mix.span_start + self.rng.gen_range(0..slots) * self.mix.alignment_sectors
            }
        };
        self.stream_end[stream] = Some(lba + u64::from(sectors));
        Draw { op, lba, sectors }
    }
}

/// Poisson arrival times at `rate_per_s`, integer nanoseconds.
pub struct Poisson {
    exp: Exp<f64>,
    rng: Pcg64Mcg,
    next: Nanos,
}

impl Poisson {
    pub fn new(rate_per_s: f64, seed: u64) -> Poisson {
        assert!(
            rate_per_s.is_finite() && rate_per_s > 0.0,
            "arrival rate must be > 0"
        );
        Poisson {
            exp: Exp::new(rate_per_s / 1e9).expect("positive rate"),
            rng: Pcg64Mcg::seed_from_u64(seed),
            next: Nanos::ZERO,
        }
    }

    pub fn next_arrival(&mut self) -> Nanos {
        let gap = self.exp.sample(&mut self.rng).round() as u64;
        self.next += Span(gap);
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix() -> Mix {
        Mix {
            read_fraction: 0.6,
            sizes: vec![(8, 3.0), (128, 1.0)],
            alignment_sectors: 8,
            span_start: 1_000,
            span_sectors: 1_000_000,
            sequential_fraction: 0.0,
        }
    }

    #[test]
    fn draws_respect_span_alignment_and_mix() {
        let mut g = Generator::new(mix(), 1, 1);
        let n = 100_000;
        let (mut reads, mut small) = (0, 0);
        for _ in 0..n {
            let d = g.draw(0);
            assert!(d.lba >= 1_000 && d.lba + u64::from(d.sectors) <= 1_001_000);
            assert_eq!((d.lba - 1_000) % 8, 0);
            reads += usize::from(d.op == Op::Read);
            small += usize::from(d.sectors == 8);
        }
        // Binomial standard deviation at n = 100,000 is ~0.0015; 0.01 is > 6 sigma.
        assert!((reads as f64 / n as f64 - 0.6).abs() < 0.01);
        assert!((small as f64 / n as f64 - 0.75).abs() < 0.01);
    }

    #[test]
    fn sequential_fraction_continues_the_stream() {
        let mut m = mix();
        m.sequential_fraction = 1.0;
        m.sizes = vec![(8, 1.0)];
        let mut g = Generator::new(m, 2, 1);
        let a = g.draw(0);
        let b = g.draw(0);
        assert_eq!(b.lba, a.lba + 8);
    }

    #[test]
    fn poisson_mean_gap_matches_the_rate() {
        let mut p = Poisson::new(1_000.0, 3);
        let n = 100_000u64;
        let mut last = Nanos::ZERO;
        for _ in 0..n {
            last = p.next_arrival();
        }
        // Mean gap 1 ms; the sample mean's relative sd is 1/sqrt(n) ≈ 0.3 %; allow 1.5 %.
        let mean_ms = last.as_ms_f64() / n as f64;
        assert!((mean_ms - 1.0).abs() < 0.015, "{mean_ms}");
    }
}
