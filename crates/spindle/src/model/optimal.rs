//! The best SR-Array shape for D disks (dissertation 2.3.2, 2.4.3): the real-valued optimum
//! of eqs. 2.20, 2.27 and 2.43, and the best whole Ds × Dr among D's divisors.

use super::queueing::t1_rlook_ms;
use super::sr_array::mixed_ms;
use super::DiskModel;

/// Eq. 2.20 (p = 1) and 2.27: the real-valued Ds, Dr minimising eq. 2.26 for D disks,
/// Ds = √(2 S D/(3 R L (2p − 1))), Dr = D/Ds; for p ≤ 1/2 striping (D, 1).
pub fn best_shape_real(d: &DiskModel, disks: f64, p: f64, l: f64) -> (f64, f64) {
    if p <= 0.5 {
        return (disks, 1.0);
    }
    let ds = (2.0 * d.s_ms / l * disks / (3.0 * d.r_ms * (2.0 * p - 1.0))).sqrt();
    (ds, disks / ds)
}

/// The whole Ds × Dr (Ds·Dr = D, Dr ≤ `dr_max`) with the least eq. 2.26 latency at Q = 1, or
/// eq. 2.42's time per request with Q outstanding (q = Q/D per disk); ties go to the larger
/// Ds (fewer replicas to write). Returns (Ds, Dr, ms).
pub fn best_shape(
    d: &DiskModel,
    disks: u32,
    p: f64,
    l: f64,
    q_total: f64,
    dr_max: u32,
) -> (u32, u32, f64) {
    assert!(disks >= 1, "at least one disk");
    let mut best: Option<(u32, u32, f64)> = None;
    for dr in 1..=disks.min(dr_max.max(1)) {
        if !disks.is_multiple_of(dr) {
            continue;
        }
        let ds = disks / dr;
        let t = if q_total <= 1.0 {
            mixed_ms(d, f64::from(ds), dr, p, l)
        } else {
            t1_rlook_ms(d, f64::from(ds), dr, q_total / f64::from(disks), p, l)
        };
        if best.is_none_or(|(_, _, b)| t < b - 1e-12) {
            best = Some((ds, dr, t));
        }
    }
    best.expect("Dr = 1 always divides D")
}
