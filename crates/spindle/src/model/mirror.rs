//! D-way mirrors, RAID-10 (Ds × Dm) and SR-Mirrors (Ds × Dr × Dm) at one request
//! outstanding (dissertation 2.2.4, 2.3.1, 2.3.4). ms; `l` is the seek locality L.

use super::sr_array::mean_seek_ms;
use super::DiskModel;

/// Eq. 2.10: the mean of the minimum of n independent uniform delays in 0..R, R/(n + 1).
pub fn min_of_uniform(r: f64, n: u32) -> f64 {
    r / f64::from(n + 1)
}

/// Eq. 2.11: the mean of the maximum of n independent uniform delays in 0..R, nR/(n + 1).
pub fn max_of_uniform(r: f64, n: u32) -> f64 {
    r * f64::from(n) / f64::from(n + 1)
}

/// Eq. 2.12: a read on an n-way mirror that sends it to the arm nearest the target (no
/// rotational position), S/(2n + 1) + R/2 + To.
pub fn read_nearest_arm_ms(d: &DiskModel, n: u32, l: f64) -> f64 {
    3.0 * mean_seek_ms(d, l) / f64::from(2 * n + 1) + d.r_ms / 2.0 + d.to_ms
}

/// Eq. 2.13: a write on an n-way mirror (all arms move; the slowest decides),
/// S (1 − Π_{k=1..n} 2k/(2k + 1)) + R/2 + To.
pub fn write_all_arms_ms(d: &DiskModel, n: u32, l: f64) -> f64 {
    let prod: f64 = (1..=n)
        .map(|k| f64::from(2 * k) / f64::from(2 * k + 1))
        .product();
    3.0 * mean_seek_ms(d, l) * (1.0 - prod) + d.r_ms / 2.0 + d.to_ms
}

/// Eq. 2.14: a read on an n-way mirror choosing the replica with the shortest rotational
/// delay, S/3 + R/(n + 1) + To.
pub fn read_ms(d: &DiskModel, n: u32, l: f64) -> f64 {
    mean_seek_ms(d, l) + min_of_uniform(d.r_ms, n) + d.to_ms
}

/// Eq. 2.15: a write to all n mirrors, S/3 + nR/(n + 1) + To.
pub fn write_ms(d: &DiskModel, n: u32, l: f64) -> f64 {
    mean_seek_ms(d, l) + max_of_uniform(d.r_ms, n) + d.to_ms
}

/// Eq. 2.16 (Gum): a read choosing the smallest seek + rotation, √(πRS/(4n)) + To.
pub fn read_positioning_ms(d: &DiskModel, n: u32, l: f64) -> f64 {
    (std::f64::consts::PI * d.r_ms * d.s_ms / l / (4.0 * f64::from(n))).sqrt() + d.to_ms
}

/// Eq. 2.17: synchronized mirroring (arms move together, replicas evenly spaced),
/// S/3 + R/(2n) + To.
pub fn read_synchronized_ms(d: &DiskModel, n: u32, l: f64) -> f64 {
    mean_seek_ms(d, l) + d.r_ms / (2.0 * f64::from(n)) + d.to_ms
}

/// Eq. 2.18: a read on a Ds × Dm striped mirror (RAID-10), √(π R (S/Ds)/(4 Dm)) + To.
pub fn raid10_read_ms(d: &DiskModel, ds: f64, dm: u32, l: f64) -> f64 {
    (std::f64::consts::PI * d.r_ms * d.s_ms / (l * ds) / (4.0 * f64::from(dm))).sqrt() + d.to_ms
}

/// Eq. 2.29: a read on a Ds × Dr × Dm SR-Mirror, √(π (R/Dr)(S/Ds)/(4 Dm)) + To.
pub fn sr_mirror_read_ms(d: &DiskModel, ds: f64, dr: u32, dm: u32, l: f64) -> f64 {
    (std::f64::consts::PI * (d.r_ms / f64::from(dr)) * d.s_ms / (l * ds) / (4.0 * f64::from(dm)))
        .sqrt()
        + d.to_ms
}

/// A read on a Ds × Dr × Dm SR-Mirror choosing the copy with the shortest rotational delay
/// among Dm disks of Dr evenly spaced replicas each: eq. 2.14 with S → S/Ds and R → R/Dr
/// (2.3.4's substitution), S/(3 Ds L) + R/(Dr (Dm + 1)) + To. This, not eq. 2.29, is what
/// the simulator's dispatch does at Q = 1 (it picks the idle disk whose copy comes first).
pub fn sr_mirror_read_rot_ms(d: &DiskModel, ds: f64, dr: u32, dm: u32, l: f64) -> f64 {
    mean_seek_ms(d, l) / ds + min_of_uniform(d.r_ms / f64::from(dr), dm) + d.to_ms
}

/// A write of every copy of a Ds × Dr × Dm SR-Mirror in the foreground: on each of the Dm
/// disks the first replica comes after a uniform wait in 0..R/Dr and the other Dr − 1 follow
/// at R/Dr each; the slowest disk answers (eq. 2.11 on the first wait):
/// S/(3 Ds L) + (Dr − 1) R/Dr + Dm R/(Dr (Dm + 1)) + To. Dm = 1 gives eq. 2.24, Dr = 1
/// gives eq. 2.15.
pub fn sr_mirror_write_ms(d: &DiskModel, ds: f64, dr: u32, dm: u32, l: f64) -> f64 {
    let per = d.r_ms / f64::from(dr);
    mean_seek_ms(d, l) / ds + f64::from(dr - 1) * per + max_of_uniform(per, dm) + d.to_ms
}
