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
