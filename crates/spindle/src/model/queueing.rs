//! Many requests outstanding (dissertation 2.4): LOOK, RLOOK and SATF with Q requests
//! queued (eqs. 2.30–2.46), the closed queueing network of
//! `examples/sr_array/closed_network.py` (eq. 2.42's service law with each completion sending
//! a new request to a random disk), and the open queue the advisor uses for a given arrival
//! rate. ms and requests per second.

use super::DiskModel;

/// Eq. 2.30: the expected minimum of q + 1 uniform positions in 0..S, S/(q + 2).
pub fn s_min(s: f64, q: f64) -> f64 {
    s / (q + 2.0)
}

/// Eq. 2.31: the expected maximum, (q + 1) S/(q + 2).
pub fn s_max(s: f64, q: f64) -> f64 {
    s * (q + 1.0) / (q + 2.0)
}

/// Eq. 2.32: one LOOK sweep's seek over q requests, q S/(q + 2).
pub fn s_look(s: f64, q: f64) -> f64 {
    s_max(s, q) - s_min(s, q)
}

/// Eq. 2.33: one request's share of a LOOK sweep over a batch of q, S/(q + 2) + R/2 + To.
pub fn t1_look_batch_ms(d: &DiskModel, q: f64) -> f64 {
    s_look(d.s_ms, q) / q + d.r_ms / 2.0 + d.to_ms
}

/// Eq. 2.34: the same on a Ds × Dr SR-Array, S/((q + 2) Ds) + R/(2 Dr) + To.
pub fn t_look_batch_ms(d: &DiskModel, ds: f64, dr: u32, q: f64) -> f64 {
    d.s_ms / ((q + 2.0) * ds) + d.r_ms / (2.0 * f64::from(dr)) + d.to_ms
}

/// The divisor of eqs. 2.40–2.44: 1.5q + 1 + 0.5/q (1.5 Q requests per sweep, 2.4.2).
pub fn look_divisor(q: f64) -> f64 {
    assert!(q > 0.0, "queue length must be positive, got {q}");
    1.5 * q + 1.0 + 0.5 / q
}

/// Eq. 2.40: the seek per request under LOOK with Q outstanding, S/(1.5Q + 1 + 0.5/Q).
pub fn ts_look_ms(d: &DiskModel, q: f64) -> f64 {
    d.s_ms / look_divisor(q)
}

/// Eq. 2.41: one disk's time per request under LOOK with Q outstanding (its inverse is the
/// throughput), S/(1.5Q + 1 + 0.5/Q) + R/2 + To.
pub fn t1_look_ms(d: &DiskModel, q: f64) -> f64 {
    ts_look_ms(d, q) + d.r_ms / 2.0 + d.to_ms
}

/// Eq. 2.42: a disk of a Ds × Dr SR-Array under RLOOK with q = Q/D queued and a share p of
/// requests costing a read: S/((1.5q + 1 + 0.5/q) Ds L) + p R/(2 Dr) + (1 − p)(R − R/(2 Dr))
/// + To.
pub fn t1_rlook_ms(d: &DiskModel, ds: f64, dr: u32, q: f64, p: f64, l: f64) -> f64 {
    let dr = f64::from(dr);
    d.s_ms / (look_divisor(q) * ds * l)
        + p * d.r_ms / (2.0 * dr)
        + (1.0 - p) * (d.r_ms - d.r_ms / (2.0 * dr))
        + d.to_ms
}

/// Eq. 2.43: the best real-valued (Ds, Dr) for D disks, q = Q/D and p > 1/2:
/// Ds = √(2 S D/((1.5q + 1 + 0.5/q) R (2p − 1))), Dr = D/Ds.
pub fn best_rlook_shape(d: &DiskModel, disks: f64, q: f64, p: f64, l: f64) -> (f64, f64) {
    let k = look_divisor(q);
    if p <= 0.5 {
        return (disks, 1.0);
    }
    let ds = (2.0 * d.s_ms / l * disks / (k * d.r_ms * (2.0 * p - 1.0))).sqrt();
    (ds, disks / ds)
}

/// Eq. 2.44: the best per-disk time at that shape,
/// √(2 S R (2p − 1)/(1.5Q + D + 0.5 D²/Q)) + (1 − p) R + To.
pub fn t1_rlook_best_ms(d: &DiskModel, disks: f64, q_total: f64, p: f64, l: f64) -> f64 {
    if p <= 0.5 {
        return t1_rlook_ms(d, disks, 1, q_total / disks, p, l);
    }
    (2.0 * d.s_ms / l * d.r_ms * (2.0 * p - 1.0)
        / (1.5 * q_total + disks + 0.5 * disks * disks / q_total))
        .sqrt()
        + (1.0 - p) * d.r_ms
        + d.to_ms
}

/// Eq. 2.45: the array's throughput (requests/s) with Q outstanding on D disks whose time per
/// request is `t1_ms`: D [1 − (1 − 1/D)^Q] / T1.
pub fn array_iops(disks: f64, q_total: f64, t1_ms: f64) -> f64 {
    assert!(t1_ms > 0.0, "time per request must be positive");
    disks * (1.0 - (1.0 - 1.0 / disks).powf(q_total)) / t1_ms * 1000.0
}

/// Eq. 2.46 (Gum): one request's time under SATF with q queued, √(π R S/(4q)) + To. Gum's
/// approximation holds when S is close to R.
pub fn t1_satf_ms(d: &DiskModel, q: f64, l: f64) -> f64 {
    (std::f64::consts::PI * d.r_ms * d.s_ms / l / (4.0 * q)).sqrt() + d.to_ms
}

/// Mean waiting time in an open G/G/1 queue (Kingman's approximation), ms: with utilisation
/// ρ, service mean `service_ms` and squared coefficients of variation `ca2` (arrivals) and
/// `cs2` (service), Wq ≈ (ca² + cs²)/2 · ρ/(1 − ρ) · E[S]. Exact for M/M/1 and M/G/1's mean
/// (Pollaczek–Khinchine) when ca² = 1. None when ρ ≥ 1 (the queue grows without bound).
pub fn kingman_wait_ms(rho: f64, service_ms: f64, ca2: f64, cs2: f64) -> Option<f64> {
    if !(0.0..1.0).contains(&rho) {
        return None;
    }
    Some((ca2 + cs2) / 2.0 * rho / (1.0 - rho) * service_ms)
}

/// The 99th percentile of the wait in that queue: the probability of waiting is about ρ and a
/// wait is about exponential with mean Wq/ρ, so P(W > t) ≈ ρ e^(−t ρ/Wq) and
/// t99 = (Wq/ρ) ln(100 ρ) (0 when fewer than 1 % of requests wait).
pub fn wait_p99_ms(rho: f64, wait_ms: f64) -> f64 {
    if rho <= 0.01 || wait_ms <= 0.0 {
        return 0.0;
    }
    (wait_ms / rho) * (100.0 * rho).ln()
}

/// The mean wait (ms) bursts add, by a fluid queue over the arrivals counted in consecutive
/// windows of `window_ms` (Lindley's recursion on the windows): a server of `capacity_iops`
/// carries a backlog from a window whose arrivals exceed what it serves in it; a window's
/// arrivals wait for the mean of its starting and ending backlog. Catches what the
/// inter-arrival CV of Kingman's formula misses: a trace whose rate stays above the array's
/// capacity for whole seconds (e.g. a peak-to-mean of 3.4 over 1 s windows).
pub fn fluid_wait_ms(counts: &[u32], window_ms: f64, capacity_iops: f64) -> f64 {
    if counts.is_empty() || capacity_iops.is_nan() || capacity_iops <= 0.0 {
        return 0.0;
    }
    let serve = capacity_iops * window_ms / 1000.0;
    let (mut backlog, mut total, mut n) = (0.0f64, 0.0f64, 0.0f64);
    for &c in counts {
        let c = f64::from(c);
        let end = (backlog + c - serve).max(0.0);
        total += c * (backlog + end) / 2.0 / capacity_iops * 1000.0;
        n += c;
        backlog = end;
    }
    if n > 0.0 {
        total / n
    } else {
        0.0
    }
}

pub use closed::ClosedNetwork;

/// The closed network of `examples/sr_array/closed_network.py`, moved here (the script stays
/// as the reference whose numbers `tests/array_models.rs` checks this against).
mod closed {
    use super::super::DiskModel;

    /// SplitMix64, the script's generator (so both give identical numbers).
    struct SplitMix64(u64);

    impl SplitMix64 {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// Uniform in 0..n.
        fn below(&mut self, n: usize) -> usize {
            let wide = u128::from(self.next()) * n as u128;
            usize::try_from(wide >> 64).expect("below n")
        }

        /// Uniform in [0, 1), 53 bits.
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
        }
    }

    /// A closed network of D = Ds × Dr disks and Q requests: each completion issues a new
    /// request to a uniformly random disk (Iometer), and a disk with q requests queued serves
    /// the next in S/((1.5q + 1 + 0.5/q) Ds) + U(0, R/Dr) + To + the request's transfer at the
    /// zone it lands in (a uniform place in the outer 1/Ds of the disk). Eq. 2.42 (p = 1) in a
    /// closed loop, instead of eq. 2.45's idle term.
    #[derive(Clone, Debug)]
    pub struct ClosedNetwork {
        pub disk: DiskModel,
        /// Zones outer first: (cylinders, sectors per track).
        pub zones: Vec<(u32, u32)>,
        pub surfaces: u32,
        /// Sectors per request (8: 4 KiB).
        pub block_sectors: f64,
    }

    struct State {
        ds: u32,
        dr: u32,
        rnd: SplitMix64,
        queued: Vec<u32>,
        done: Vec<Option<f64>>,
    }

    impl ClosedNetwork {
        /// The network of a simulated drive (its zones and its [`DiskModel`]).
        pub fn of(drive: &crate::drive::Drive, block_sectors: f64) -> ClosedNetwork {
            let g = drive.geometry();
            let zones = (0..g.zone_count())
                .map(|i| {
                    let (first, last, spt) = g.zone_bounds(i);
                    (last - first + 1, spt)
                })
                .collect();
            ClosedNetwork {
                disk: DiskModel::of(drive),
                zones,
                surfaces: g.surfaces(),
                block_sectors,
            }
        }

        fn capacity_sectors(&self) -> u64 {
            self.zones
                .iter()
                .map(|&(c, spt)| u64::from(c) * u64::from(self.surfaces) * u64::from(spt))
                .sum()
        }

        /// Media transfer (ms) of one request at fraction `u` of the band (outer 1/Ds).
        fn transfer_ms(&self, u: f64, ds: u32) -> f64 {
            let r = self.disk.r_ms;
            let mut pos = u * self.capacity_sectors() as f64 / f64::from(ds);
            for &(cylinders, spt) in &self.zones {
                let n = f64::from(cylinders) * f64::from(self.surfaces) * f64::from(spt);
                if pos < n {
                    return self.block_sectors * r / f64::from(spt);
                }
                pos -= n;
            }
            let last = self.zones.last().map_or(1, |z| z.1);
            self.block_sectors * r / f64::from(last)
        }

        fn start(&self, st: &mut State, d: usize, now: f64) {
            assert!(st.queued[d] > 0, "disk {d} starts with nothing queued");
            assert!(st.done[d].is_none(), "disk {d} is already busy");
            let q = f64::from(st.queued[d]);
            let seek = self.disk.s_ms / ((1.5 * q + 1.0 + 0.5 / q) * f64::from(st.ds));
            let rotation = st.rnd.unit() * (self.disk.r_ms / f64::from(st.dr));
            let xfer = self.transfer_ms(st.rnd.unit(), st.ds);
            st.done[d] = Some(now + (seek + rotation + self.disk.to_ms + xfer));
        }

        /// (mean disk utilisation, IOPS) of a `ds` × `dr` array with `q_total` requests over
        /// `completions` completions, generator seed `seed` (the script's simulate()).
        pub fn simulate(
            &self,
            ds: u32,
            dr: u32,
            q_total: u32,
            completions: u32,
            seed: u64,
        ) -> (f64, f64) {
            let disks = usize::try_from(ds * dr).expect("disks fit usize");
            assert!(disks > 0 && q_total > 0 && completions > 0);
            let mut st = State {
                ds,
                dr,
                rnd: SplitMix64(seed),
                queued: vec![0; disks],
                done: vec![None; disks],
            };
            for _ in 0..q_total {
                let d = st.rnd.below(disks);
                st.queued[d] += 1;
            }
            for d in 0..disks {
                if st.queued[d] > 0 {
                    self.start(&mut st, d, 0.0);
                }
            }
            let (mut idle, mut last) = (0.0, 0.0);
            for _ in 0..completions {
                // The earliest completion, the lowest disk on a tie (the script's min()).
                let mut next: Option<(usize, f64)> = None;
                for (e, t) in st.done.iter().enumerate() {
                    if let Some(t) = *t {
                        if next.is_none_or(|(_, best)| t < best) {
                            next = Some((e, t));
                        }
                    }
                }
                let (d, now) = next.expect("a closed network always has a busy disk");
                let idle_disks = st.done.iter().filter(|t| t.is_none()).count();
                idle += idle_disks as f64 * (now - last);
                last = now;
                st.done[d] = None;
                st.queued[d] -= 1;
                let nd = st.rnd.below(disks);
                st.queued[nd] += 1;
                if nd != d && st.done[nd].is_none() {
                    self.start(&mut st, nd, now);
                }
                if st.queued[d] > 0 {
                    self.start(&mut st, d, now);
                }
            }
            let disks_f = f64::from(ds * dr);
            (
                1.0 - idle / (disks_f * last),
                f64::from(completions) / last * 1000.0,
            )
        }
    }
}
