//! The destage policies' choices on the HP 97560 (the paper's drive): FCFS, least-cost,
//! high/low mark, linear threshold, same-track batching and misuse.

use super::*;
use crate::drive::{builtin_drive, Drive, HeadState};
use crate::{Nanos, Op, Span};
use proptest::prelude::*;

/// 19 surfaces of 72 sectors: the LBA of (cylinder, head, sector).
pub(super) fn lba(cylinder: u64, head: u64, sector: u64) -> u64 {
    (cylinder * 19 + head) * 72 + sector
}

pub(super) fn hp() -> Drive {
    builtin_drive("hp97560").expect("built-in hp97560")
}

/// A destage of `op` at `lba`, queued at `seq` µs, its block last accessed at `last_access`.
pub(super) fn req(d: &Drive, seq: u64, op: Op, lba: u64, last_access: u64) -> DestageRequest {
    DestageRequest {
        id: 1000 + seq,
        op,
        lba,
        sectors: 8,
        target: d.locate(lba),
        queued_at: Nanos(seq * 1000),
        last_access: Nanos(last_access),
        seq,
    }
}

pub(super) const HEAD0: HeadState = HeadState {
    cylinder: 0,
    head: 0,
    phase_ns: 0,
};

fn queue(p: &DestagePolicy, d: &Drive, reqs: &[DestageRequest]) -> DestageQueue {
    let mut q = DestageQueue::new(p, d).expect("valid policy");
    for r in reqs {
        q.push(r.clone());
    }
    assert_eq!(q.len(), reqs.len());
    q
}

fn ids(b: &DestageBatch) -> Vec<u64> {
    b.requests.iter().map(|r| r.id).collect()
}

#[test]
fn fcfs_picks_the_oldest_queued_destage() {
    let d = hp();
    let mut reqs = vec![
        req(&d, 0, Op::Write, lba(1500, 0, 0), 0),
        req(&d, 1, Op::Read, lba(10, 3, 5), 0),
        req(&d, 2, Op::Write, lba(900, 7, 40), 0),
    ];
    // Queued out of seq order: 2 came first in time.
    reqs[2].queued_at = Nanos(0);
    reqs[0].queued_at = Nanos(500);
    let mut q = queue(&DestagePolicy::Fcfs, &d, &reqs);
    let level = CacheLevel::new(0.0);
    let order: Vec<u64> = std::iter::from_fn(|| q.pick(Nanos(0), &HEAD0, &d, level))
        .map(|b| b.requests[0].seq)
        .collect();
    assert_eq!(order, vec![2, 0, 1]);
    assert_eq!(q.stats().declined, 0, "FCFS is work-conserving");
}

/// Brute force: the minimum of (predicted positioning time, seq) over the queue.
fn brute_least_cost(
    d: &Drive,
    now: Nanos,
    head: &HeadState,
    reqs: &[DestageRequest],
) -> (u64, Span) {
    reqs.iter()
        .map(|r| (d.position_time(now, head, r.op, &r.target), r.seq, r.id))
        .min()
        .map(|(c, _, id)| (id, c))
        .expect("non-empty")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Least-cost equals the brute-force minimum over `position_time`, pick after pick, the
    /// head moving to each batch's track; it never declines.
    #[test]
    fn least_cost_is_the_minimum_predicted_access_time(
        spots in prop::collection::vec((0u64..1962, 0u64..19, 0u64..72, any::<bool>()), 1..30),
        now_us in 0u64..1_000_000,
        head_cyl in 0u32..1962,
        phase in 0u64..14_992_504,
    ) {
        let d = hp();
        let mut left: Vec<DestageRequest> = spots
            .iter()
            .enumerate()
            .map(|(i, &(c, h, s, w))| {
                let op = if w { Op::Write } else { Op::Read };
                req(&d, i as u64, op, lba(c, h, s), 0)
            })
            .collect();
        let mut q = queue(&DestagePolicy::LeastCost, &d, &left);
        let mut head = HeadState { cylinder: head_cyl, head: 0, phase_ns: phase };
        let mut now = Nanos(now_us * 1000);
        while !left.is_empty() {
            let (want, cost) = brute_least_cost(&d, now, &head, &left);
            let b = q.pick(now, &head, &d, CacheLevel::new(0.0)).expect("work-conserving");
            prop_assert_eq!(b.requests[0].id, want);
            prop_assert_eq!(b.position_time, cost);
            left.retain(|r| !b.requests.iter().any(|x| x.id == r.id));
            prop_assert_eq!(q.len(), left.len());
            head.cylinder = b.requests[0].target.chs.cylinder;
            head.head = b.requests[0].target.chs.head;
            now += Span::from_ms(20);
        }
        prop_assert!(q.pick(now, &head, &d, CacheLevel::new(1.0)).is_none());
    }
}

#[test]
fn high_low_gate_has_hysteresis() {
    let mut g = HighLowGate::default();
    let seen: Vec<bool> = [0.5, 0.7, 0.71, 0.5, 0.31, 0.3, 0.29, 0.5, 0.69, 0.9]
        .into_iter()
        .map(|w| g.observe(w))
        .collect();
    // Off until over 70 % (0.7 itself is not over), on until below 30 % (0.3 is not below).
    assert_eq!(
        seen,
        vec![false, false, true, true, true, true, false, false, false, true]
    );
}

#[test]
fn high_low_declines_while_the_gate_is_off_and_destages_least_cost_while_on() {
    let d = hp();
    let far = req(&d, 0, Op::Write, lba(1900, 0, 0), 0);
    let near = req(&d, 1, Op::Write, lba(3, 0, 36), 0);
    let mut q = queue(&DestagePolicy::high_low_default(), &d, &[far, near]);
    let mut gate = DestagePolicy::high_low_default().gate();
    gate.observe(0.6);
    assert!(
        q.pick(Nanos(0), &HEAD0, &d, gate.level()).is_none(),
        "below high"
    );
    gate.observe(0.75);
    let b = q
        .pick(Nanos(0), &HEAD0, &d, gate.level())
        .expect("on over high");
    assert_eq!(b.requests[0].seq, 1, "least-cost: the near one");
    gate.observe(0.4);
    assert!(
        q.pick(Nanos(0), &HEAD0, &d, gate.level()).is_some(),
        "still on above low"
    );
    assert_eq!(q.stats().declined, 1);
    assert!(q.is_empty());
}

#[test]
fn linear_threshold_grows_from_a_third_to_eight_thirds_of_a_revolution() {
    let t = LinearThreshold::default();
    let p = Span(15_000_000);
    assert_eq!(t.threshold(p, 0.0), Span(5_000_000));
    assert_eq!(t.threshold(p, 1.0), Span(40_000_000));
    assert_eq!(t.threshold(p, 0.5), Span(22_500_000));
}

#[test]
fn linear_threshold_declines_a_far_destage_at_low_occupancy_and_takes_it_at_high() {
    let d = hp();
    let p = DestagePolicy::linear_threshold_default();
    // Cylinder 1900 from cylinder 0: a 23.2 ms seek + 2.2 ms overhead > 5 ms (1/3 rev).
    let far = req(&d, 0, Op::Write, lba(1900, 0, 0), 0);
    let mut q = queue(&p, &d, std::slice::from_ref(&far));
    let cost = d.position_time(Nanos(0), &HEAD0, Op::Write, &far.target);
    assert!(cost > Span::from_ms(25), "{cost}");
    assert!(q.pick(Nanos(0), &HEAD0, &d, CacheLevel::new(0.1)).is_none());
    assert_eq!(q.stats().declined, 1);
    // 8/3 rev at a full cache is 40 ms: within.
    let b = q
        .pick(Nanos(0), &HEAD0, &d, CacheLevel::new(1.0))
        .expect("within 8/3 rev");
    assert_eq!(b.requests[0].id, far.id);
    // A destage on the head's own track whose sector arrives soonest after the 2.2 ms
    // overhead costs under 1/3 revolution: taken even at an empty cache.
    let near = (0..72)
        .map(|s| req(&d, 1 + s, Op::Write, lba(0, 0, s), 0))
        .min_by_key(|r| d.position_time(Nanos(0), &HEAD0, Op::Write, &r.target))
        .expect("72 sectors");
    let mut q = queue(&p, &d, &[near.clone(), far]);
    let b = q
        .pick(Nanos(0), &HEAD0, &d, CacheLevel::new(0.0))
        .expect("near is cheap");
    assert_eq!(ids(&b), vec![near.id]);
    assert!(
        b.position_time < Span(d.period().0 / 3),
        "{}",
        b.position_time
    );
}

#[test]
fn a_batch_is_every_destage_of_the_same_op_on_the_same_track_in_rotational_order() {
    let d = hp();
    let chosen = req(&d, 0, Op::Write, lba(5, 2, 50), 0);
    let reqs = vec![
        chosen.clone(),
        req(&d, 1, Op::Write, lba(5, 2, 10), 0), // same track, behind: last
        req(&d, 2, Op::Write, lba(5, 2, 60), 0), // same track, just ahead: second
        req(&d, 3, Op::Read, lba(5, 2, 55), 0),  // same track, other op: stays
        req(&d, 4, Op::Write, lba(5, 3, 50), 0), // other head: stays
        req(&d, 5, Op::Write, lba(6, 2, 50), 0), // other cylinder: stays
        req(&d, 6, Op::Write, lba(5, 2, 70), 0), // same track: third
    ];
    let mut q = queue(&DestagePolicy::Fcfs, &d, &reqs);
    let b = q
        .pick(Nanos(0), &HEAD0, &d, CacheLevel::new(0.0))
        .expect("work");
    assert_eq!(b.op, Op::Write);
    assert_eq!(ids(&b), vec![1000, 1002, 1006, 1001]);
    assert_eq!(q.len(), 3);
    assert_eq!(q.stats().batched, 3);
    assert!(q.get(1003).is_some() && q.get(1004).is_some() && q.get(1005).is_some());
    assert_eq!(
        b.position_time,
        d.position_time(Nanos(0), &HEAD0, Op::Write, &chosen.target)
    );
}

#[test]
fn remove_takes_a_destage_out_of_every_index() {
    let d = hp();
    let reqs = vec![
        req(&d, 0, Op::Write, lba(5, 2, 50), 0),
        req(&d, 1, Op::Write, lba(5, 2, 10), 0),
    ];
    for p in [DestagePolicy::Fcfs, DestagePolicy::regions_default()] {
        let mut q = queue(&p, &d, &reqs);
        assert_eq!(q.remove(1001).map(|r| r.seq), Some(1));
        assert!(q.remove(1001).is_none());
        let b = q
            .pick(Nanos(0), &HEAD0, &d, CacheLevel::new(1.0))
            .expect("one left");
        assert_eq!(ids(&b), vec![1000], "{p:?}: the removed one is not batched");
        assert!(q.is_empty());
    }
}

#[test]
#[should_panic(expected = "queued twice")]
fn pushing_an_id_twice_is_a_controller_bug() {
    let d = hp();
    let r = req(&d, 0, Op::Write, lba(5, 2, 50), 0);
    let mut q = queue(&DestagePolicy::LeastCost, &d, std::slice::from_ref(&r));
    q.push(DestageRequest { seq: 9, ..r });
}

#[test]
#[should_panic(expected = "time went backwards")]
fn picking_in_the_past_is_a_controller_bug() {
    let d = hp();
    let mut q = queue(&DestagePolicy::LeastCost, &d, &[]);
    let _ = q.pick(Nanos(10), &HEAD0, &d, CacheLevel::new(0.0));
    let _ = q.pick(Nanos(9), &HEAD0, &d, CacheLevel::new(0.0));
}

#[test]
fn bad_parameters_are_typed_errors_naming_the_field() {
    let d = hp();
    let err = |p: DestagePolicy| DestageQueue::new(&p, &d).unwrap_err().to_string();
    assert!(err(DestagePolicy::HighLow {
        high: 0.3,
        low: 0.7
    })
    .starts_with("destage policy: low:"));
    assert!(err(DestagePolicy::LinearThreshold {
        at_empty_revs: f64::NAN,
        at_full_revs: 1.0
    })
    .contains("at_empty_revs"));
    let regions = |bands, steps| DestagePolicy::Regions {
        bands,
        regions_per_band: 3,
        steps,
        controller_overhead: Span::from_ms_f64(2.2),
        estimate: CostEstimate::Average,
    };
    assert!(err(regions(0, table_i())).contains("bands"));
    assert!(err(regions(5000, table_i())).contains("bands"));
    assert!(err(regions(15, vec![(0.5, 3), (0.4, 4)])).contains("steps"));
    assert!(err(regions(15, vec![(0.5, 3), (1.0, 2)])).contains("steps"));
    assert!(err(regions(15, vec![])).contains("steps"));
}

#[test]
fn policies_read_from_toml() {
    let p: DestagePolicy = toml::from_str(
        "kind = \"regions\"\nbands = 15\nregions_per_band = 3\nsteps = [[0.5, 3], [1.0, 6]]\n\
         controller_overhead = 2200000\nestimate = \"maximum\"\n",
    )
    .expect("parses");
    assert_eq!(
        p,
        DestagePolicy::Regions {
            bands: 15,
            regions_per_band: 3,
            steps: vec![(0.5, 3), (1.0, 6)],
            controller_overhead: Span::from_ms_f64(2.2),
            estimate: CostEstimate::Maximum,
        }
    );
    let p: DestagePolicy = toml::from_str("kind = \"high-low\"\nhigh = 0.7\nlow = 0.3\n").unwrap();
    assert_eq!(p, DestagePolicy::high_low_default());
}
