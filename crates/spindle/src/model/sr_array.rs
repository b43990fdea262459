//! Latency of one disk, striping, rotational replication and the SR-Array Ds × Dr at one
//! request outstanding (dissertation 2.1–2.3). Every function returns ms; `l` is the seek
//! locality L (eq. 2.5: the random seek S/3 becomes S/(3L)); L = 1 is uniform random access.

use super::DiskModel;

/// Eq. 2.1: the mean random seek of a linear seek curve, S/3, and with locality L (eq. 2.5)
/// S/(3L).
pub fn mean_seek_ms(d: &DiskModel, l: f64) -> f64 {
    assert!(l > 0.0, "seek locality L must be positive, got {l}");
    d.s_ms / (3.0 * l)
}

/// Eqs. 2.2 and 2.6: one random access, T1L = S/(3L) + R/2 + To.
pub fn single_disk_ms(d: &DiskModel, l: f64) -> f64 {
    mean_seek_ms(d, l) + d.r_ms / 2.0 + d.to_ms
}

/// Eq. 2.7: D-way striping, Tstripe(n) = S/(3n) + R/2 + To (with L: S/(3nL)).
pub fn striping_ms(d: &DiskModel, n: f64, l: f64) -> f64 {
    assert!(n >= 1.0, "striping degree must be at least 1, got {n}");
    mean_seek_ms(d, l) / n + d.r_ms / 2.0 + d.to_ms
}

/// Eq. 2.8: a read on n evenly spaced rotational replicas, S/3 + R/(2n) + To.
pub fn rrep_read_ms(d: &DiskModel, n: u32, l: f64) -> f64 {
    read_ms(d, 1.0, n, l)
}

/// Eq. 2.9: a write of n evenly spaced rotational replicas, S/3 + (2n − 1)R/(2n) + To.
pub fn rrep_write_ms(d: &DiskModel, n: u32, l: f64) -> f64 {
    write_ms(d, 1.0, n, l)
}

/// Eq. 2.19: a random read on a Ds × Dr SR-Array, TR = S/(3 Ds L) + R/(2 Dr) + To.
pub fn read_ms(d: &DiskModel, ds: f64, dr: u32, l: f64) -> f64 {
    assert!(ds > 0.0 && dr >= 1, "Ds {ds} and Dr {dr} must be positive");
    mean_seek_ms(d, l) / ds + d.r_ms / (2.0 * f64::from(dr)) + d.to_ms
}

/// Eq. 2.24: a write whose Dr replicas are all written in the foreground,
/// TW = S/(3 Ds L) + R − R/(2 Dr) + To (without the write settle Two).
pub fn write_ms(d: &DiskModel, ds: f64, dr: u32, l: f64) -> f64 {
    assert!(ds > 0.0 && dr >= 1, "Ds {ds} and Dr {dr} must be positive");
    let dr = f64::from(dr);
    mean_seek_ms(d, l) / ds + d.r_ms - d.r_ms / (2.0 * dr) + d.to_ms
}

/// Eq. 2.25: p, the fraction of requests that cost a read: reads Xr plus writes whose
/// replicas are propagated in the background Xwb, over all requests.
pub fn p_of(reads: f64, writes_background: f64, writes_foreground: f64) -> f64 {
    let all = reads + writes_background + writes_foreground;
    if all <= 0.0 {
        return 1.0;
    }
    (reads + writes_background) / all
}

/// Eq. 2.26: T(Ds, Dr) = p TR + (1 − p) TW
/// = S/(3 Ds L) + p R/(2 Dr) + (1 − p)(R − R/(2 Dr)) + To (Two not included; the simulator's
/// drive adds it to each write, see [`mixed_with_two_ms`]).
pub fn mixed_ms(d: &DiskModel, ds: f64, dr: u32, p: f64, l: f64) -> f64 {
    assert!((0.0..=1.0).contains(&p), "p must be in 0..=1, got {p}");
    p * read_ms(d, ds, dr, l) + (1.0 - p) * write_ms(d, ds, dr, l)
}

/// Eq. 2.26 plus the write settle Two on the share `write_share` of requests that are
/// writes (the form `tests/array_models.rs` holds the simulator to: foreground writes, so
/// p = the read fraction and every write pays Two).
pub fn mixed_with_two_ms(d: &DiskModel, ds: f64, dr: u32, p: f64, write_share: f64, l: f64) -> f64 {
    mixed_ms(d, ds, dr, p, l) + write_share * d.two_ms
}

/// Eq. 2.23 (p = 1) and 2.28 (any p ≥ 1/2): the best latency of D disks with real-valued Ds,
/// Dr, Tbest = √(2 S R (2p − 1)/(3 D L)) + (1 − p) R + To. For p < 1/2 rotational replication
/// does not pay (2.3.2): the best is striping over D, eq. 2.26 at Dr = 1.
pub fn best_ms(d: &DiskModel, disks: f64, p: f64, l: f64) -> f64 {
    if p <= 0.5 {
        return mixed_ms(d, disks, 1, p, l);
    }
    (2.0 * d.s_ms * d.r_ms * (2.0 * p - 1.0) / (3.0 * disks * l)).sqrt()
        + (1.0 - p) * d.r_ms
        + d.to_ms
}
