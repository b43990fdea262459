//! The models' own consistency: the special cases the dissertation states (each equation
//! reduces to the simpler one it generalises), the optimum of eqs. 2.20–2.28 and the
//! queueing forms' known values. The agreement with the simulator is in
//! `tests/array_models.rs`, `tests/paper_models.rs` and `tests/advise_models.rs`.

use super::*;

const D: DiskModel = DiskModel::ST39133LWV;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn the_st39133lwv_file_gives_table_4_1() {
    let drive = crate::drive::builtin_drive("st39133lwv").expect("built-in drive");
    let m = DiskModel::of(&drive);
    // The drive file's linear curve over 9,772 cylinders: S within its discreteness
    // (mean over d ≥ 1 is (N + 1)/3, 2/N relative); R, To and Two as in table 4.1 up to the
    // drive's whole-nanosecond times (a few ns).
    assert!((m.s_ms - 9.2).abs() < 0.01, "S {}", m.s_ms);
    assert!((m.r_ms - D.r_ms).abs() < 1e-5, "R {}", m.r_ms);
    assert!((m.to_ms - 2.7).abs() < 1e-5, "To {}", m.to_ms);
    assert!((m.two_ms - 0.7).abs() < 1e-5, "Two {}", m.two_ms);
    assert!((m.capacity_bytes / D.capacity_bytes - 1.0).abs() < 0.01);
}

#[test]
fn sr_array_equations_reduce_to_their_special_cases() {
    // Eq. 2.19 at 1 × 1 is eq. 2.2; at D × 1 eq. 2.7; at 1 × n eq. 2.8.
    assert!(close(
        sr_array::read_ms(&D, 1.0, 1, 1.0),
        sr_array::single_disk_ms(&D, 1.0)
    ));
    assert!(close(
        sr_array::read_ms(&D, 4.0, 1, 1.0),
        sr_array::striping_ms(&D, 4.0, 1.0)
    ));
    assert!(close(
        sr_array::read_ms(&D, 1.0, 3, 1.0),
        sr_array::rrep_read_ms(&D, 3, 1.0)
    ));
    // Eq. 2.26 at p = 1 is eq. 2.19, at p = 0 eq. 2.24; at p = 1/2 it does not depend on
    // Dr (the invariant of 2.2.3).
    assert!(close(
        sr_array::mixed_ms(&D, 2.0, 3, 1.0, 1.0),
        sr_array::read_ms(&D, 2.0, 3, 1.0)
    ));
    assert!(close(
        sr_array::mixed_ms(&D, 2.0, 3, 0.0, 1.0),
        sr_array::write_ms(&D, 2.0, 3, 1.0)
    ));
    let half: Vec<f64> = (1..=6)
        .map(|dr| sr_array::mixed_ms(&D, 2.0, dr, 0.5, 1.0))
        .collect();
    assert!(half.iter().all(|&t| close(t, half[0])), "{half:?}");
    // Locality L divides the seek (eq. 2.5).
    assert!(close(sr_array::mean_seek_ms(&D, 4.0), D.s_ms / 12.0));
    // Eq. 2.25.
    assert!(close(sr_array::p_of(50.0, 30.0, 20.0), 0.8));
}

#[test]
fn the_optimum_of_eqs_2_20_to_2_28() {
    for disks in [2.0, 6.0, 12.0, 36.0] {
        for p in [0.6, 0.8, 1.0] {
            for l in [1.0, 4.0] {
                // Eq. 2.27's shape balances seek and rotation and gives eq. 2.28's latency;
                // no nearby shape of D disks does better.
                let (ds, dr) = optimal::best_shape_real(&D, disks, p, l);
                assert!(close(ds * dr, disks));
                let t = |ds: f64| {
                    let dr = disks / ds;
                    D.s_ms / (3.0 * ds * l)
                        + p * D.r_ms / (2.0 * dr)
                        + (1.0 - p) * (D.r_ms - D.r_ms / (2.0 * dr))
                        + D.to_ms
                };
                let best = sr_array::best_ms(&D, disks, p, l);
                assert!(close(t(ds), best), "D {disks} p {p}: {} vs {best}", t(ds));
                assert!(t(ds * 1.1) > best && t(ds / 1.1) > best);
            }
        }
    }
    // Eq. 2.20 for the ST39133LWV: S < R argues for more replicas than stripes at D = 6
    // (Ds = √(2·9.2·6/(3·5.98)) = 2.48); the best whole shape by eq. 2.19 is 3 × 2.
    let (ds, _) = optimal::best_shape_real(&D, 6.0, 1.0, 1.0);
    assert!((ds - 2.48).abs() < 0.01, "Ds {ds}");
    assert_eq!(optimal::best_shape(&D, 6, 1.0, 1.0, 1.0, 6).0, 3);
    // Below p = 1/2 striping is best (2.3.2).
    assert_eq!(
        optimal::best_shape(&D, 6, 0.3, 1.0, 1.0, 6),
        (6, 1, sr_array::mixed_ms(&D, 6.0, 1, 0.3, 1.0))
    );
}

#[test]
fn mirror_equations_reduce_to_their_special_cases() {
    // One copy: every mirror form is one disk (eqs. 2.12–2.15, 2.17).
    let one = sr_array::single_disk_ms(&D, 1.0);
    assert!(close(mirror::read_nearest_arm_ms(&D, 1, 1.0), one));
    assert!(close(mirror::write_all_arms_ms(&D, 1, 1.0), one));
    assert!(close(mirror::read_ms(&D, 1, 1.0), one));
    assert!(close(mirror::write_ms(&D, 1, 1.0), one));
    assert!(close(mirror::read_synchronized_ms(&D, 1, 1.0), one));
    // The SR-Mirror write is eq. 2.24 at Dm = 1 and eq. 2.15 at Dr = 1.
    assert!(close(
        mirror::sr_mirror_write_ms(&D, 2.0, 3, 1, 1.0),
        sr_array::write_ms(&D, 2.0, 3, 1.0)
    ));
    assert!(close(
        mirror::sr_mirror_write_ms(&D, 1.0, 1, 3, 1.0),
        mirror::write_ms(&D, 3, 1.0)
    ));
    // Eq. 2.29 is eq. 2.18 at Dr = 1, and depends on D only.
    assert!(close(
        mirror::sr_mirror_read_ms(&D, 3.0, 1, 2, 1.0),
        mirror::raid10_read_ms(&D, 3.0, 2, 1.0)
    ));
    assert!(close(
        mirror::sr_mirror_read_ms(&D, 3.0, 2, 1, 1.0),
        mirror::sr_mirror_read_ms(&D, 1.0, 2, 3, 1.0)
    ));
}

#[test]
fn look_equations_at_one_request_are_eq_2_2() {
    // Eq. 2.33 at q = 1 is eq. 2.2; eq. 2.41 at Q = 1 too; eq. 2.34 / 2.42 at q = 1 are
    // eq. 2.19 / 2.26.
    let one = sr_array::single_disk_ms(&D, 1.0);
    assert!(close(queueing::t1_look_batch_ms(&D, 1.0), one));
    assert!(close(queueing::t1_look_ms(&D, 1.0), one));
    assert!(close(
        queueing::t_look_batch_ms(&D, 3.0, 2, 1.0),
        sr_array::read_ms(&D, 3.0, 2, 1.0)
    ));
    assert!(close(
        queueing::t1_rlook_ms(&D, 3.0, 2, 1.0, 0.7, 1.0),
        sr_array::mixed_ms(&D, 3.0, 2, 0.7, 1.0)
    ));
    // Eq. 2.32: the sweep seek approaches S.
    assert!(close(queueing::s_look(9.2, 1.0), 9.2 / 3.0));
    // Eq. 2.44 is eq. 2.42 at eq. 2.43's shape.
    let (disks, q_total, p) = (8.0, 32.0, 0.9);
    let (ds, dr) = queueing::best_rlook_shape(&D, disks, q_total / disks, p, 1.0);
    let dr_f = dr;
    let t42 = D.s_ms / (queueing::look_divisor(q_total / disks) * ds)
        + p * D.r_ms / (2.0 * dr_f)
        + (1.0 - p) * (D.r_ms - D.r_ms / (2.0 * dr_f))
        + D.to_ms;
    assert!(close(
        t42,
        queueing::t1_rlook_best_ms(&D, disks, q_total, p, 1.0)
    ));
    // Eq. 2.45: one disk is never idle with a request; Q ≫ D makes every disk busy.
    assert!(close(queueing::array_iops(1.0, 4.0, 10.0), 100.0));
    assert!((queueing::array_iops(4.0, 400.0, 10.0) - 400.0).abs() < 1e-6);
}

#[test]
fn kingman_is_mm1_for_exponential_arrivals_and_service() {
    // M/M/1: Wq = ρ/(1 − ρ) E[S].
    let w = queueing::kingman_wait_ms(0.5, 10.0, 1.0, 1.0).expect("stable");
    assert!(close(w, 10.0));
    assert_eq!(queueing::kingman_wait_ms(1.0, 10.0, 1.0, 1.0), None);
    // M/M/1's waiting time: P(W > t) = ρ e^(−t (1 − ρ)/E[S]); its p99 at ρ = 0.5, E[S] = 10
    // is 10/0.5 · ln 50 = 78.2 ms.
    assert!((queueing::wait_p99_ms(0.5, w) - 20.0 * 50f64.ln()).abs() < 1e-9);
}

#[test]
fn the_eager_write_shortens_with_dilution() {
    // Fig. 1(a)'s shape: more free space, a shorter eager write; at Dd = 1.25 the
    // rotational part is under 1 ms (the paper's "well below 1 ms").
    let w: Vec<f64> = [1.25, 1.5, 2.0, 4.0]
        .iter()
        .map(|&dd| ew::eager_write_ms(&D, 1.0, dd, 4096.0, 1.0))
        .collect();
    assert!(w.windows(2).all(|p| p[1] < p[0]), "{w:?}");
    let rot = w[0] - D.to_local_ms - D.two_ms;
    assert!(rot < 1.0, "rotational part at Dd 1.25: {rot} ms");
    // Dd = 1: no free block, an update in place.
    assert!(ew::eager_write_ms(&D, 1.0, 1.0, 4096.0, 1.0) > w[0]);
}

#[test]
fn predictions_saturate_past_the_arrays_throughput() {
    let c = predict::Candidate::sr(3, 2, 1);
    let load = |rate| predict::Load {
        read_fraction: 0.7,
        locality: 1.0,
        size_bytes: 4096.0,
        queue: None,
        rate_iops: Some(rate),
        arrival_cv2: 1.0,
        window_counts: Vec::new(),
        window_ms: 0.0,
    };
    let low = predict::predict(&D, &c, &load(50.0));
    assert!(!low.saturated && low.utilization < 0.5 && low.mean_ms.is_finite());
    let high = predict::predict(&D, &c, &load(low.max_iops * 1.2));
    assert!(high.saturated && high.utilization <= 1.0);
    // Latency rises with the rate.
    let mid = predict::predict(&D, &c, &load(low.max_iops * 0.7));
    assert!(mid.mean_ms > low.mean_ms);
}

#[test]
fn a_burst_above_capacity_waits_in_the_fluid_queue() {
    // 100 IOPS of capacity, 10 ms windows: a steady 1 per window never waits; 10 arrivals
    // in one window then none leave a backlog of 9 served over the next 9 windows.
    assert_eq!(queueing::fluid_wait_ms(&[1; 100], 10.0, 100.0), 0.0);
    let mut burst = vec![10u32];
    burst.extend([0; 20]);
    // The burst's window: backlog 0 → 9, mean 4.5 requests = 45 ms for each of the 10.
    assert!((queueing::fluid_wait_ms(&burst, 10.0, 100.0) - 45.0).abs() < 1e-9);
}
