//! Unit tests of the policies' choices on a small linear-seek drive.

use super::*;
use crate::drive::spec::test_spec;
use crate::drive::Drive;

fn drive() -> Drive {
    Drive::from_spec(&test_spec(1, 1000, 100)).unwrap()
}

/// A read of sector `sector` on `cylinder` (100 sectors per cylinder), queued at `seq` ns.
fn req(d: &Drive, seq: u64, cylinder: u64, sector: u64) -> DiskRequest {
    let lba = cylinder * 100 + sector;
    DiskRequest {
        id: seq,
        op: Op::Read,
        lba,
        sectors: 1,
        target: d.locate(lba),
        replicas: Replicas::one(d.locate(lba)),
        queued_at: Nanos(seq),
        seq,
    }
}

fn order(policy: Policy, head_cyl: u32, cyls: &[u64]) -> Vec<u32> {
    let d = drive();
    let mut s = policy.build(None, 1000);
    for (i, &c) in cyls.iter().enumerate() {
        s.push(req(&d, i as u64, c, 0));
    }
    let mut head = HeadState {
        cylinder: head_cyl,
        head: 0,
        phase_ns: 0,
    };
    let mut out = vec![];
    while let Some(p) = s.pick(Nanos(0), &head, &d) {
        head.cylinder = p.request.target.chs.cylinder;
        out.push(head.cylinder);
    }
    out
}

#[test]
fn fcfs_serves_in_arrival_order() {
    assert_eq!(
        order(Policy::Fcfs, 500, &[900, 100, 600, 400]),
        vec![900, 100, 600, 400]
    );
}

#[test]
fn sstf_serves_the_nearest_cylinder() {
    // 600 and 400 are equally near 500: the earlier arrival (600) wins the tie.
    assert_eq!(
        order(Policy::Sstf, 500, &[900, 100, 600, 400]),
        vec![600, 400, 100, 900]
    );
}

#[test]
fn look_sweeps_up_then_reverses() {
    assert_eq!(
        order(Policy::Look, 500, &[900, 100, 600, 400]),
        vec![600, 900, 400, 100]
    );
}

#[test]
fn c_look_returns_to_the_lowest_request() {
    assert_eq!(
        order(Policy::CLook, 500, &[900, 100, 600, 400]),
        vec![600, 900, 100, 400]
    );
}

#[test]
fn scan_visits_the_edge_before_reversing() {
    let d = drive();
    let mut s = Policy::Scan.build(None, 1000);
    s.push(req(&d, 0, 100, 0));
    let head = HeadState {
        cylinder: 500,
        head: 0,
        phase_ns: 0,
    };
    let p = s.pick(Nanos(0), &head, &d).unwrap();
    assert_eq!(p.via_cylinder, Some(999));
    assert_eq!(s.stats().reversals, 1);
}

#[test]
fn satf_prefers_a_far_request_that_is_rotationally_close() {
    let d = drive();
    let mut s = Policy::Satf.build(None, 1000);
    // Seek to cylinder 10 takes 0.1 ms; sector 0 is under the head again only after 6 ms.
    // Cylinder 60 costs a 0.6 ms seek, and sector 20 arrives at 1.2 ms: total 1.2 ms.
    s.push(req(&d, 0, 10, 0));
    s.push(req(&d, 1, 60, 20));
    let head = HeadState {
        cylinder: 0,
        head: 0,
        phase_ns: 0,
    };
    let p = s.pick(Nanos(0), &head, &d).unwrap();
    assert_eq!(p.request.target.chs.cylinder, 60);
}

#[test]
fn age_bound_serves_a_starving_request_first() {
    let d = drive();
    for policy in [
        Policy::Sstf,
        Policy::Look,
        Policy::CLook,
        Policy::Scan,
        Policy::Satf,
    ] {
        let mut s = policy.build(Some(Span::from_ms(50)), 1000);
        s.push(req(&d, 0, 999, 0));
        s.push(req(&d, 1, 1, 0));
        let head = HeadState {
            cylinder: 0,
            head: 0,
            phase_ns: 0,
        };
        // At 10 ms nothing is overdue: the near request wins.
        assert_eq!(
            s.pick(Nanos(10_000_000), &head, &d).unwrap().request.id,
            1,
            "{policy}"
        );
        s.push(req(&d, 2, 2, 0));
        // At 60 ms request 0 has waited past the 50 ms bound.
        assert_eq!(
            s.pick(Nanos(60_000_000), &head, &d).unwrap().request.id,
            0,
            "{policy}"
        );
        assert_eq!(s.stats().aged_picks, 1, "{policy}");
    }
}

#[test]
fn remove_takes_a_queued_request_out() {
    let d = drive();
    for policy in Policy::ALL {
        let mut s = policy.build(None, 1000);
        s.push(req(&d, 0, 5, 0));
        s.push(req(&d, 1, 6, 0));
        assert_eq!(s.remove(0).map(|r| r.id), Some(0), "{policy}");
        assert_eq!(s.remove(0), None, "{policy}");
        assert_eq!(s.len(), 1, "{policy}");
    }
}

/// SATF's pick is the argmin of (quickest replica's positioning time, seq) over the queue,
/// whether the queue is short (a whole scan) or long (the angle ring's early stop): checked
/// against a brute-force argmin of [`Drive::position_time`] on random queues that grow past
/// the ring's threshold and shrink below it, with reads, writes and rotational replicas, on
/// two drives (a linear test drive and the built-in ST39133LWV with its write settle).
#[test]
fn satf_picks_the_brute_force_argmin_on_long_queues() {
    use rand::{Rng, SeedableRng};
    for d in [drive(), crate::drive::builtin_drive("st39133lwv").unwrap()] {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let mut s = Policy::Satf.build(None, d.geometry().cylinders());
        let mut queued: Vec<DiskRequest> = Vec::new();
        let mut head = HeadState {
            cylinder: 0,
            head: 0,
            phase_ns: 0,
        };
        let mut now = Nanos(0);
        let mut seq = 0;
        for round in 0..6000 {
            // Grow to ~1,200 requests, then drain to none, twice.
            let grow = (round / 1500) % 2 == 0;
            if grow || queued.is_empty() || rng.gen_bool(0.3) {
                seq += 1;
                let copies = if rng.gen_bool(0.3) {
                    rng.gen_range(2..=4)
                } else {
                    1
                };
                let r = random_request(&mut rng, &d, seq, copies, now);
                queued.push(r.clone());
                s.push(r);
            }
            if !grow || rng.gen_bool(0.2) {
                if rng.gen_bool(0.1) {
                    // A cancellation from the middle of the queue.
                    let k = rng.gen_range(0..queued.len());
                    let r = queued.swap_remove(k);
                    assert_eq!(s.remove(r.id).map(|x| x.id), Some(r.id));
                    continue;
                }
                let best = queued
                    .iter()
                    .map(|r| (r.replicas.best(now, &head, r.op, &d).1, r.seq))
                    .min()
                    .unwrap();
                let p = s.pick(now, &head, &d).unwrap();
                let got = (
                    p.request.replicas.best(now, &head, p.request.op, &d).1,
                    p.request.seq,
                );
                assert_eq!(
                    got, best,
                    "round {round}: SATF picked a request that is not the argmin"
                );
                queued.retain(|r| r.id != p.request.id);
                let t = p.request.replicas.get(p.replica).1;
                head.cylinder = t.chs.cylinder;
                head.head = t.chs.head;
                now = Nanos(now.0 + rng.gen_range(0..20_000_000));
            }
        }
        assert_eq!(s.len(), queued.len());
    }
}

/// SATF's two classes in one queue (promotion in place) choose as two SATF queues, a
/// foreground and a delayed one, with promotion moving a request from one to the other:
/// random pushes to either class, promotions (with the push's hint, a wrong one, or none),
/// cancellations and picks, on queues long enough for both classes' angle rings.
#[test]
fn satf_delayed_class_picks_as_two_queues() {
    use rand::{Rng, SeedableRng};
    let d = crate::drive::builtin_drive("st39133lwv").unwrap();
    let cylinders = d.geometry().cylinders();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
    let mut one = Policy::Satf.build_queue(Some(Span::from_ms(400)), cylinders);
    let mut two = Split {
        foreground: Policy::Satf.build(Some(Span::from_ms(400)), cylinders),
        delayed: Policy::Satf.build(None, cylinders),
    };
    // Delayed requests with their push's hint.
    let (mut delayed, mut foreground): (Vec<(u64, u32)>, Vec<u64>) = (Vec::new(), Vec::new());
    let mut head = HeadState {
        cylinder: 0,
        head: 0,
        phase_ns: 0,
    };
    let (mut now, mut seq) = (Nanos(0), 0);
    for round in 0..8000 {
        let grow = (round / 2000) % 2 == 0;
        match rng.gen_range(0..10) {
            0..=5 if grow || rng.gen_bool(0.2) => {
                seq += 1;
                let copies = rng.gen_range(1..=3);
                let r = random_request(&mut rng, &d, seq, copies, now);
                if rng.gen_bool(0.7) {
                    delayed.push((seq, one.push_delayed_hinted(r.clone())));
                    two.push_delayed(r);
                } else {
                    foreground.push(seq);
                    one.push(r.clone());
                    two.push(r);
                }
            }
            4 if !delayed.is_empty() => {
                let (id, hint) = delayed.swap_remove(rng.gen_range(0..delayed.len()));
                let promoted = match rng.gen_range(0..3) {
                    0 => one.promote_hinted(id, hint),
                    1 => one.promote_hinted(id, rng.gen_range(0..64)),
                    _ => one.promote(id),
                };
                assert!(promoted && two.promote(id));
                assert!(!one.promote_hinted(id, hint), "promoted once");
                foreground.push(id);
            }
            5 if !foreground.is_empty() => {
                let id = foreground.swap_remove(rng.gen_range(0..foreground.len()));
                assert_eq!(one.remove(id).map(|r| r.id), Some(id));
                assert_eq!(two.remove(id).map(|r| r.id), Some(id));
            }
            _ => {
                let (a, b) = (one.pick(now, &head, &d), two.pick(now, &head, &d));
                assert_eq!(
                    a.as_ref().map(|p| (p.request.id, p.replica)),
                    b.as_ref().map(|p| (p.request.id, p.replica)),
                    "round {round}"
                );
                if let Some(p) = a {
                    delayed.retain(|&(i, _)| i != p.request.id);
                    foreground.retain(|&i| i != p.request.id);
                    let t = p.request.replicas.get(p.replica).1;
                    head.cylinder = t.chs.cylinder;
                    head.head = t.chs.head;
                }
                now = Nanos(now.0 + rng.gen_range(0..5_000_000));
            }
        }
        assert_eq!(
            (one.len(), one.delayed_len()),
            (two.len(), two.delayed_len())
        );
        assert_eq!(one.len(), foreground.len());
        assert_eq!(one.stats(), two.stats());
    }
}

/// A one-sector request `seq` at `copies` random places on `d`, read or write at random
/// (the property tests' queue traffic).
fn random_request(
    rng: &mut rand_pcg::Pcg64Mcg,
    d: &Drive,
    seq: u64,
    copies: usize,
    now: Nanos,
) -> DiskRequest {
    use rand::Rng;
    let list: Vec<(u8, crate::drive::Target)> = (0..copies)
        .map(|k| (k as u8, d.locate(rng.gen_range(0..d.capacity_sectors()))))
        .collect();
    DiskRequest {
        id: seq,
        op: if rng.gen_bool(0.5) {
            Op::Read
        } else {
            Op::Write
        },
        lba: 0,
        sectors: 1,
        target: list[0].1,
        replicas: Replicas::from_list(list),
        queued_at: now,
        seq,
    }
}
