//! The process-group generator against the paper's parameters: rates, mix, sizes, spaces,
//! history use and bursts, each with its tolerance stated.

use super::*;
use std::collections::BTreeSet;

/// The paper's workload on a 2,000,000-block (8 GB of 4 KiB blocks) data set, 1,000 IOPS.
fn paper() -> GroupsParams {
    GroupsParams {
        groups: DEFAULT_GROUPS,
        global_groups: DEFAULT_GLOBAL_GROUPS,
        subset_fraction: DEFAULT_SUBSET_FRACTION,
        rate_per_s: 1_000.0,
        read_fraction: 0.6,
        block_sectors: 8,
        data_set_blocks: 2_000_000,
        mean_blocks: DEFAULT_MEAN_BLOCKS,
        history_blocks: DEFAULT_HISTORY_BYTES / 4096,
        read_history_fraction: DEFAULT_READ_HISTORY_FRACTION,
        write_history_fraction: DEFAULT_WRITE_HISTORY_FRACTION,
        write_from_writes_fraction: DEFAULT_WRITE_FROM_WRITES_FRACTION,
        history_sigma_fraction: DEFAULT_HISTORY_SIGMA_FRACTION,
        arrival_cv: DEFAULT_ARRIVAL_CV,
        burst: None,
    }
}

const N: usize = 200_000;

fn secs(s: f64) -> Nanos {
    Nanos((s * 1e9).round() as u64)
}

#[test]
fn same_seed_same_stream_other_seed_differs() {
    let a: Vec<GroupRequest> = ProcessGroups::new(paper(), 7).take(10_000).collect();
    let b: Vec<GroupRequest> = ProcessGroups::new(paper(), 7).take(10_000).collect();
    assert_eq!(a, b);
    let c: Vec<GroupRequest> = ProcessGroups::new(paper(), 8).take(10_000).collect();
    assert_ne!(a, c);
    // Not merely shifted: the subsets themselves move with the seed.
    let (pa, pc) = (
        ProcessGroups::new(paper(), 7),
        ProcessGroups::new(paper(), 8),
    );
    assert_ne!(pa.group_space(0), pc.group_space(0));
}

#[test]
fn rate_mix_sizes_and_spaces_match_the_parameters() {
    let p = paper();
    let gen = ProcessGroups::new(p.clone(), 1);
    let spaces: Vec<(u64, u64)> = (0..p.groups).map(|g| gen.group_space(g)).collect();
    let (mut writes, mut blocks, mut outside) = (0u64, 0u64, 0u64);
    let mut per_group = vec![0u64; p.groups as usize];
    let mut last = Nanos::ZERO;
    for r in gen.take(N) {
        assert!(r.arrival >= last, "arrivals in order");
        last = r.arrival;
        assert_eq!(r.lba % 8, 0, "block aligned");
        assert_eq!(r.sectors % 8, 0, "whole blocks");
        assert!(r.lba + u64::from(r.sectors) <= p.data_set_blocks * 8);
        let (first, len) = spaces[r.group as usize];
        let (b, n) = (r.lba / 8, u64::from(r.sectors / 8));
        outside += u64::from(b < first || b + n > first + len);
        writes += u64::from(r.op == Op::Write);
        blocks += n;
        per_group[r.group as usize] += 1;
    }
    // Every subset group stays in its 1 % (20,000 blocks); the global one spans everything.
    assert_eq!(outside, 0);
    for &(_, len) in &spaces[..9] {
        assert_eq!(len, 20_000);
    }
    assert_eq!(spaces[9], (0, 2_000_000));
    // Rate: each group's 20,000 gaps have a relative sd of about 0.5/√20000 = 0.35 %; 2 %.
    let rate = N as f64 / (last.0 as f64 / 1e9);
    assert!((rate / 1_000.0 - 1.0).abs() < 0.02, "rate {rate}");
    // Equal rates: each group issues 1/10 of the requests (±3 %: the merge cuts each
    // group's count at the same instant, so they differ by the rate's noise only).
    for (g, &c) in per_group.iter().enumerate() {
        assert!(
            (c as f64 / (N as f64 / 10.0) - 1.0).abs() < 0.03,
            "group {g}: {c}"
        );
    }
    // Writes: binomial sd at n = 200,000 is 0.0011; 0.01 is 9 sd.
    let wf = writes as f64 / N as f64;
    assert!((wf - 0.4).abs() < 0.01, "write fraction {wf}");
    // Sizes: sd ≈ 0.8 block, so the mean's sd is ≈ 0.002 block; 3 % of 2 blocks is 0.06.
    let mean = blocks as f64 / N as f64;
    assert!((mean / 2.0 - 1.0).abs() < 0.03, "mean blocks {mean}");
    eprintln!("rate {rate:.2} IOPS, write fraction {wf:.4}, mean blocks {mean:.4}");
}

#[test]
fn history_use_and_re_reference_rates() {
    let p = paper();
    let (mut reads, mut reads_hist, mut reads_seen) = (0u64, 0u64, 0u64);
    let (mut writes, mut writes_hist, mut writes_from_writes, mut writes_seen) =
        (0u64, 0u64, 0u64, 0u64);
    let mut seen: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); p.groups as usize];
    for r in ProcessGroups::new(p.clone(), 2).take(N) {
        let was_seen = !seen[r.group as usize].insert(r.lba);
        match r.op {
            Op::Read => {
                reads += 1;
                reads_seen += u64::from(was_seen);
                reads_hist += u64::from(matches!(r.source, Source::AnyHistory | Source::Fallback));
                assert!(!matches!(
                    r.source,
                    Source::WriteHistory | Source::ReadHistory
                ));
            }
            Op::Write => {
                writes += 1;
                writes_seen += u64::from(was_seen);
                let hist = matches!(r.source, Source::WriteHistory | Source::ReadHistory);
                writes_hist += u64::from(hist);
                writes_from_writes += u64::from(r.source == Source::WriteHistory);
                assert_ne!(r.source, Source::AnyHistory);
            }
        }
    }
    // Chosen to use the history: Bernoulli(0.65) per read, Bernoulli(0.9) per write; sds at
    // n ≈ 120,000 and 80,000 are 0.0014 and 0.0011; 0.01 is > 7 sd.
    let rh = reads_hist as f64 / reads as f64;
    let wh = writes_hist as f64 / writes as f64;
    let ww = writes_from_writes as f64 / writes_hist as f64;
    assert!((rh - 0.65).abs() < 0.01, "reads from history {rh}");
    assert!((wh - 0.9).abs() < 0.01, "writes from history {wh}");
    assert!(
        (ww - 0.9).abs() < 0.01,
        "history writes from old writes {ww}"
    );
    // Re-reference, seen from the addresses alone. A read after its group's first request
    // takes an address of an earlier request of the group with probability 0.65 (the
    // history then holds at least one entry); fresh addresses may also repeat by chance. So
    // the fraction is at least 0.65·(reads − 10)/reads minus noise (sd 0.0014): ≥ 0.64.
    // Writes likewise: 0.9·(1 − P(no earlier read)) ≥ 0.9 − 0.01 once a group has read.
    let rs = reads_seen as f64 / reads as f64;
    let ws = writes_seen as f64 / writes as f64;
    assert!(rs >= 0.64, "reads re-referencing {rs}");
    assert!(ws >= 0.89, "writes re-referencing {ws}");
    eprintln!(
        "reads: history {rh:.4}, re-referenced {rs:.4}; writes: history {wh:.4} \
         (old writes {ww:.4}), re-referenced {ws:.4}"
    );
}

#[test]
fn history_ages_favour_recent_entries() {
    // σ = n/2, ages redrawn beyond n: P(age < n/2) = P(|Z| < 1) / P(|Z| < 2)
    // = 0.682689 / 0.954500 = 0.71523; sd at 100,000 draws is 0.0014; allow 0.01.
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let n = 1_000;
    let draws = 100_000;
    let (mut young, mut newest) = (0u64, 0u64);
    for _ in 0..draws {
        let a = ProcessGroups::age(&mut rng, n, 0.5);
        assert!(a < n);
        young += u64::from(a < n / 2);
        newest += u64::from(a == 0);
    }
    let f = young as f64 / draws as f64;
    assert!((f - 0.71523).abs() < 0.01, "young fraction {f}");
    // The most recent entry is the likeliest: density 2φ(0)/(σ·0.9545) per unit age.
    let f0 = newest as f64 / draws as f64;
    let expect = 2.0 * 0.398_942 * (1.0 / 500.0) / 0.954_5;
    assert!((f0 / expect - 1.0).abs() < 0.15, "age 0: {f0} vs {expect}");
}

#[test]
fn the_history_holds_its_capacity_and_returns_the_right_entries() {
    let mut h = History::new(10);
    for i in 0..100u64 {
        let op = if i % 3 == 0 { Op::Write } else { Op::Read };
        h.push(
            op,
            Entry {
                block: i,
                blocks: 1 + (i % 2) as u32,
            },
        );
        assert!(h.held_blocks <= 10);
    }
    // The latest requests 99 (2 blocks), 98 (1), 97 (2), 96 (1), 95 (2), 94 (1): 9 blocks;
    // adding 93 (2) would exceed 10.
    assert_eq!(h.len(List::All), 6);
    assert_eq!(h.get(List::All, 0).block, 99);
    assert_eq!(h.get(List::All, 5).block, 94);
    // Writes are the multiples of 3: 99 and 96.
    assert_eq!(h.len(List::Writes), 2);
    assert_eq!(h.get(List::Writes, 0).block, 99);
    assert_eq!(h.get(List::Writes, 1).block, 96);
    assert_eq!(h.get(List::Reads, 0).block, 98);
    assert_eq!(h.get(List::Reads, 3).block, 94);
    // One request larger than the buffer is still kept, alone.
    h.push(
        Op::Read,
        Entry {
            block: 500,
            blocks: 50,
        },
    );
    assert_eq!(h.len(List::All), 1);
    assert_eq!(h.len(List::Writes), 0);
}

#[test]
fn size_table_has_the_asked_mean_and_favours_small_requests() {
    for mean in [1.0, 1.5, 2.0, 4.0, 16.0, 256.0] {
        let t = SizeTable::new(mean);
        assert!((t.mean() - mean).abs() < 1e-9, "mean {mean}: {}", t.mean());
    }
    let t = SizeTable::new(2.0);
    // σ for mean 2, by hand: weights e^(−j²/2σ²) at σ = 1.615 are 1, 0.826, 0.465, 0.178,
    // 0.047, 0.008, 0.001 (j = k − 1), sum 2.524, Σ j·w 2.522: mean 1 + 0.999 blocks. (The
    // continuous half-normal would need 1.2533: the discrete one has a full weight at j = 0.)
    assert!((t.sigma() - 1.615).abs() < 0.002, "sigma {}", t.sigma());
    // P(1 block) = 1 / 2.524 = 0.396.
    assert!(
        (t.cumulative[0] - 0.396).abs() < 0.001,
        "{}",
        t.cumulative[0]
    );
    let p: Vec<f64> = t
        .cumulative
        .iter()
        .scan(0.0, |prev, c| {
            let p = c - *prev;
            *prev = *c;
            Some(p)
        })
        .collect();
    // Decreasing (the far tail, below 1e-12, may round to equal cumulative values).
    assert!(p.windows(2).all(|w| w[0] >= w[1]), "non-increasing: {p:?}");
    assert!(p[..8].windows(2).all(|w| w[0] > w[1]), "decreasing: {p:?}");
    assert_eq!(t.largest() as usize, p.len());
    assert_eq!(SizeTable::new(1.0).largest(), 1);
}

#[test]
fn the_clamped_gap_keeps_the_rate() {
    // E[max(0, N(m, c))] = 1 at the solved location, by numeric integration.
    for cv in [0.25, 0.5, 1.0, 1.5, 4.0] {
        let m = clamped_location(cv);
        let steps = 200_000;
        let (lo, hi) = (m - 12.0 * cv, m + 12.0 * cv);
        let dx = (hi - lo) / steps as f64;
        let e: f64 = (0..steps)
            .map(|i| {
                let x = lo + (i as f64 + 0.5) * dx;
                x.max(0.0) * phi_pdf((x - m) / cv) / cv * dx
            })
            .sum();
        assert!((e - 1.0).abs() < 1e-5, "cv {cv}: m {m}, mean {e}");
    }
    // Without the correction cv = 1.5 would run 23 % slow; with it the rate holds (2 %).
    let mut p = paper();
    p.arrival_cv = 1.5;
    let last = ProcessGroups::new(p, 4).take(N).last().expect("requests");
    let rate = N as f64 / (last.arrival.0 as f64 / 1e9);
    assert!((rate / 1_000.0 - 1.0).abs() < 0.02, "rate {rate}");
    eprintln!("cv 1.5: rate {rate:.2} IOPS");
}

#[test]
fn zero_cv_issues_in_lockstep_with_ties_by_group() {
    let mut p = paper();
    p.arrival_cv = 0.0;
    // 100 IOPS per group: every 10 ms all ten groups issue, in group order.
    let got: Vec<(Nanos, u32)> = ProcessGroups::new(p, 1)
        .take(30)
        .map(|r| (r.arrival, r.group))
        .collect();
    for (i, &(t, g)) in got.iter().enumerate() {
        assert_eq!(t, Nanos(10_000_000 * (i as u64 / 10 + 1)));
        assert_eq!(g, i as u32 % 10);
    }
}

/// Arrivals per second inside and outside the bursts up to `until`.
fn rates(p: GroupsParams, until: Nanos) -> (f64, f64) {
    let b = p.burst.expect("bursts");
    let (mut inside, mut outside) = (0u64, 0u64);
    for r in ProcessGroups::new(p, 5).take_while(|r| r.arrival < until) {
        if b.covers(r.arrival) {
            inside += 1;
        } else {
            outside += 1;
        }
    }
    // Burst time up to `until`, by 1 ms steps.
    let step = 1_000_000;
    let burst_ms = (0..until.0 / step)
        .filter(|i| b.covers(Nanos(i * step)))
        .count() as f64;
    let total_ms = (until.0 / step) as f64;
    (
        inside as f64 / (burst_ms / 1e3),
        outside as f64 / ((total_ms - burst_ms) / 1e3),
    )
}

#[test]
fn periodic_bursts_triple_the_rate() {
    let mut p = paper();
    // 2 s of burst in every 10 s, the first at 8 s.
    p.burst = Some(Burst {
        factor: 3.0,
        start: secs(8.0),
        length: Span(2_000_000_000),
        period: Some(Span(10_000_000_000)),
    });
    // ~120,000 requests inside bursts, ~160,000 outside: the counts' sds are < 0.3 %; a
    // gap straddling a burst edge (about 10 per edge, 40 edges) moves < 0.5 %. Allow 5 %.
    let (inside, outside) = rates(p, secs(200.0));
    let ratio = inside / outside;
    assert!(
        (outside / 1_000.0 - 1.0).abs() < 0.02,
        "background {outside}"
    );
    assert!((ratio / 3.0 - 1.0).abs() < 0.05, "burst ratio {ratio}");
    eprintln!("periodic: background {outside:.1}/s, burst {inside:.1}/s, ratio {ratio:.4}");
}

#[test]
fn a_single_burst_at_its_start() {
    let mut p = paper();
    p.burst = Some(Burst {
        factor: 3.0,
        start: secs(50.0),
        length: Span(20_000_000_000),
        period: None,
    });
    let (inside, outside) = rates(p, secs(150.0));
    let ratio = inside / outside;
    assert!((ratio / 3.0 - 1.0).abs() < 0.05, "burst ratio {ratio}");
    eprintln!("single: background {outside:.1}/s, burst {inside:.1}/s, ratio {ratio:.4}");
}

#[test]
fn bad_parameters_name_their_key() {
    type Edit = fn(&mut GroupsParams);
    let cases: Vec<(Edit, &str)> = vec![
        (|p| p.groups = 0, "count"),
        (|p| p.global_groups = 11, "global_groups"),
        (|p| p.subset_fraction = 0.0, "subset_fraction"),
        (|p| p.subset_fraction = 1.5, "subset_fraction"),
        (|p| p.mean_blocks = 0.5, "mean_blocks"),
        (|p| p.read_history_fraction = -0.1, "read_history_fraction"),
        (
            |p| p.write_history_fraction = f64::NAN,
            "write_history_fraction",
        ),
        (|p| p.history_sigma_fraction = 0.0, "history_sigma_fraction"),
        (|p| p.arrival_cv = 11.0, "arrival_cv"),
        (|p| p.history_blocks = 5, "history_bytes"),
        (|p| p.rate_per_s = 0.0, "rate_iops"),
        // 1 % of 100 blocks is one block; mean 2 draws up to 13.
        (|p| p.data_set_blocks = 100, "subset_fraction"),
    ];
    for (edit, key) in cases {
        let mut p = paper();
        edit(&mut p);
        assert_eq!(p.check().map_err(|e| e.key), Err(key));
    }
    let mut p = paper();
    p.burst = Some(Burst {
        factor: 3.0,
        start: Nanos::ZERO,
        length: Span(5),
        period: Some(Span(5)),
    });
    assert_eq!(p.check().map_err(|e| e.key), Err("burst_period_s"));
    assert_eq!(paper().check(), Ok(()));
}
