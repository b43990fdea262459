//! The orderings Varma & Jacobson (ISCA '95, section IV.B) report between destage
//! algorithms, on their array: two parity groups of five HP 97560s, 9-block stripe units,
//! a 1 MB write cache and an 8 MB read cache, their process-group workload (40 % writes, 2
//! blocks per request on average). Each test names the figure and states its tolerance.
//! Three seeds each: the orderings hold on every one (measured 2026-11-26, seeds 1–3, with
//! the paper's 20 MB/s I/O channel and cache ports, the default).

mod common;
use common::*;

use spindle::config::Experiment;
use spindle::metrics::Report;

const BASE: &str = "[drive]\nmodel = \"hp97560\"\n[array]\nlayout = \"raid-5\"\ndisks = 10\n\
                    stripe_unit_bytes = 36864\nscheduler = \"fcfs\"\n[workload]\n\
                    kind = \"groups\"\n[run]\nrequests = 20000\n";

/// The paper's array at `rate` IOPS with destage algorithm `destage`.
fn run(destage: &str, rate: u32, seed: u64) -> Report {
    let text = format!("seed = {seed}\n{BASE}");
    let sets = [
        format!("array.destage={destage}"),
        format!("workload.rate_iops={rate}"),
    ];
    let exp = Experiment::parse(&text, "raid5", &sets).expect("valid experiment");
    exp.run(&no_files, &no_trace, &mut |_, _, _, _| {})
        .expect("experiment runs")
}

fn occupancy(r: &Report) -> f64 {
    r.cache
        .as_ref()
        .expect("a write cache")
        .write
        .occupancy_mean
}

fn writes_per_host_write(r: &Report) -> f64 {
    r.disk_writes_per_host_write
        .flatten()
        .expect("the host wrote in the window")
}

fn disk_read_ms(r: &Report) -> f64 {
    r.cache
        .as_ref()
        .and_then(|c| c.disk_read_mean_ms)
        .expect("reads went to disk")
}

fn mean_utilization(r: &Report) -> f64 {
    r.mean_utilization()
}

const SEEDS: [u64; 3] = [1, 2, 3];

#[test]
fn high_low_mark_holds_the_cache_about_half_full_and_the_others_lower() {
    // Fig. 3 / IV.B: "the high-low mark algorithm maintains the write cache occupancy at
    // approximately 50%, near the middle of its high and low marks"; "the least-cost and
    // FCFS algorithms maintain much lower cache occupancies, until the workload becomes very
    // heavy". Tolerance: 40–60 % for "approximately 50 %" (measured 52–53 %); "much lower"
    // as at most half linear threshold's at a moderate load (100 IOPS, disks ~30 % busy;
    // measured FCFS 4 %, least-cost 3 %, linear threshold 26 %).
    for seed in SEEDS {
        let hl = occupancy(&run("high-low", 100, seed));
        assert!((0.4..=0.6).contains(&hl), "seed {seed}: high/low {hl}");
        let linear = occupancy(&run("linear-threshold", 100, seed));
        for other in ["fcfs", "least-cost"] {
            let o = occupancy(&run(other, 100, seed));
            assert!(
                o < linear / 2.0,
                "seed {seed}: {other} {o} vs linear {linear}"
            );
        }
    }
}

#[test]
fn linear_threshold_and_high_low_write_fewer_blocks_than_fcfs_and_least_cost() {
    // Fig. 5: "both FCFS and least-cost scheduling perform significantly more writes as
    // compared to the linear threshold scheduling algorithm ... the high/low mark algorithm
    // performs the best". "Significantly": at least 10 % more blocks written per host block
    // (measured at 100 IOPS: high/low 1.31–1.35, linear 1.64–1.68, FCFS and least-cost
    // 1.98–1.99).
    for seed in SEEDS {
        let hl = writes_per_host_write(&run("high-low", 100, seed));
        let linear = writes_per_host_write(&run("linear-threshold", 100, seed));
        assert!(hl < linear, "seed {seed}: high/low {hl} vs linear {linear}");
        for other in ["fcfs", "least-cost"] {
            let o = writes_per_host_write(&run(other, 100, seed));
            assert!(
                o > linear * 1.1,
                "seed {seed}: {other} {o} vs linear {linear}"
            );
        }
    }
}

#[test]
fn linear_threshold_and_high_low_keep_the_disks_least_busy() {
    // Figs. 6 and 7 at 200 I/Os per second: "the linear threshold and the high-low mark
    // algorithms have noticeably lower disk utilization than the other two". "Noticeably":
    // at least 10 % lower mean utilisation (measured: linear 60–62 %, high/low 56–59 %,
    // FCFS 85–88 %, least-cost 78–81 %).
    for seed in SEEDS {
        let runs: Vec<(&str, f64)> = ["linear-threshold", "high-low", "fcfs", "least-cost"]
            .iter()
            .map(|&d| (d, mean_utilization(&run(d, 200, seed))))
            .collect();
        for (low, u) in &runs[..2] {
            for (high, v) in &runs[2..] {
                assert!(u * 1.1 < *v, "seed {seed}: {low} {u} vs {high} {v}");
            }
        }
    }
}

#[test]
fn linear_threshold_gives_the_best_disk_read_response_at_moderate_to_heavy_load() {
    // Fig. 8: "for moderate to heavy workloads, the linear threshold algorithm has the best
    // read-to-disk response times"; fig. 12: the band/region approximation shows "no
    // degradation in response time as compared to the ideal algorithm". Tolerance: linear
    // threshold at most 2 % above any other algorithm (high/low ties it at 200 IOPS:
    // measured 32.9–33.9 ms vs 33.2–34.1 ms; FCFS 39.9–41.5, least-cost 37.2–38.3); the
    // approximation within 10 % of the ideal (measured +5 … +7 %: spindle's regions come out
    // slightly worse where the paper's came out slightly better — examples/raid5/README.md).
    for seed in SEEDS {
        for rate in [200, 300] {
            let linear = disk_read_ms(&run("linear-threshold", rate, seed));
            for other in ["fcfs", "least-cost", "high-low"] {
                let o = disk_read_ms(&run(other, rate, seed));
                assert!(
                    linear <= o * 1.02,
                    "seed {seed}, {rate} IOPS: linear {linear} ms vs {other} {o} ms"
                );
            }
            let regions = disk_read_ms(&run("regions", rate, seed));
            assert!(
                regions <= linear * 1.1,
                "seed {seed}, {rate} IOPS: regions {regions} ms vs linear {linear} ms"
            );
        }
    }
}

#[test]
fn every_destage_is_charged_to_its_cause_and_the_window_balances() {
    // With a write cache host writes never reach the disks unless the cache overflows: the
    // busy time splits into host reads, destage reads and destage writes.
    let r = run("linear-threshold", 150, 1);
    assert_eq!(r.cache.as_ref().unwrap().write.overflows, 0);
    for d in &r.disks {
        let c = &d.utilization_by_cause;
        assert_eq!(c.host_write, 0.0, "disk {}", d.disk);
        assert!(
            c.destage_read > 0.0 && c.destage_write > 0.0,
            "disk {}",
            d.disk
        );
        let sum = c.host_read + c.destage_read + c.destage_write;
        assert!((sum - d.utilization).abs() < 1e-9, "disk {}", d.disk);
    }
}

#[test]
fn least_cost_tolerates_the_longest_bursts() {
    // Fig. 11 / IV.B: "the least-cost algorithm, followed closely by FCFS, showed the best
    // burst tolerance ... the linear threshold algorithm is not able to sustain bursts as
    // long". Background 200 IOPS, bursts of 3x, 5 cycles. Tolerance: least-cost's mean at
    // least 0.95 of every other's (the cycles' spread is about ±20 %; measured least-cost
    // 1.00 s, linear threshold 0.83, regions 0.81, FCFS 0.70, high/low 0.59 s). FCFS does
    // not follow closely here (docs: examples/raid5/README.md), so it is not asserted.
    use spindle::burst::{burst_tolerance, BurstSpec};
    let text = format!("seed = 1\n{BASE}\n[workload.groups]\n");
    let mut means = Vec::new();
    for d in ["least-cost", "linear-threshold", "high-low", "regions"] {
        let sets = [
            format!("array.destage={d}"),
            "workload.rate_iops=200".to_string(),
        ];
        let rows = burst_tolerance(
            &text,
            "raid5",
            &sets,
            BurstSpec::default(),
            &no_files,
            &no_trace,
            &mut |_, _| {},
        )
        .expect("burst tolerance runs");
        assert_eq!(
            rows[0].overflowed_before, 0,
            "{d}: the background alone overflowed"
        );
        means.push((d, rows[0].mean_s.expect("the burst overflows the cache")));
    }
    let lc = means[0].1;
    for (d, m) in &means[1..] {
        assert!(lc >= 0.95 * m, "least-cost {lc} s vs {d} {m} s");
    }
}

#[test]
fn a_larger_write_cache_helps_linear_threshold_much_more_than_least_cost() {
    // Figs. 9 and 10: "the least-cost algorithm is not able to achieve substantial
    // response-time gains from a larger write cache ... the linear threshold algorithm, on
    // the other hand, consistently improves response times for larger caches"; "both
    // algorithms see comparable increases in sustainable throughput". At 250 IOPS, 512 KB →
    // 4 MB: linear threshold at least 10 % faster and at least twice least-cost's relative
    // gain (measured seed 1: linear 38.7 → 31.5 ms, −19 %; least-cost 39.1 → 37.2 ms, −5 %).
    // At 300 IOPS both overflow a 512 KB cache and neither a 1 MB one (measured: 6,052 and
    // 6,203 overflows against none).
    let at = |d: &str, bytes: u32, rate: u32| {
        let text = format!("seed = 1\n{BASE}");
        let sets = [
            format!("array.destage={d}"),
            format!("workload.rate_iops={rate}"),
            format!("array.write_cache_bytes={bytes}"),
        ];
        Experiment::parse(&text, "raid5", &sets)
            .expect("valid experiment")
            .run(&no_files, &no_trace, &mut |_, _, _, _| {})
            .expect("experiment runs")
    };
    let gain = |d: &str| {
        let small = disk_read_ms(&at(d, 512 << 10, 250));
        let large = disk_read_ms(&at(d, 4 << 20, 250));
        1.0 - large / small
    };
    let (linear, least) = (gain("linear-threshold"), gain("least-cost"));
    assert!(linear >= 0.10, "linear threshold gained {linear}");
    assert!(
        linear >= 2.0 * least,
        "linear {linear} vs least-cost {least}"
    );
    for d in ["linear-threshold", "least-cost"] {
        let overflows = |bytes| at(d, bytes, 300).cache.unwrap().write.overflows;
        assert!(overflows(512 << 10) > 0, "{d}: 512 KB did not overflow");
        assert_eq!(overflows(1 << 20), 0, "{d}: 1 MB overflowed");
    }
}

#[test]
fn the_average_cost_estimate_gives_the_cheapest_destages() {
    // Fig. 13 / IV.B: of the three ways the approximate linear threshold (bands and
    // regions) estimates a destage's cost, the average positioning delay performs best; the
    // aggressive (minimum) estimate "performed poorly compared to the other two". spindle
    // reproduces the first part: the average estimate has the lowest mean destage service
    // time, below both others at 100–300 IOPS (measured: 17.0–18.6 ms vs minimum 18.4–19.4
    // and maximum 20.0–21.3, seed 1; each is the mean of thousands of destages, so a
    // strict ordering is the bound). Not the second: spindle's maximum estimate is often a
    // whole revolution above the average, which flattens its ranking of candidates, so it
    // does worse than the minimum (examples/raid5/README.md).
    for seed in SEEDS {
        for rate in [100, 300] {
            let mean = |estimate: &str| {
                let text = format!("seed = {seed}\n{BASE}");
                let sets = [
                    "array.destage=regions".to_string(),
                    format!("array.destage_estimate={estimate}"),
                    format!("workload.rate_iops={rate}"),
                ];
                let exp = Experiment::parse(&text, "raid5", &sets).expect("valid experiment");
                let r = exp
                    .run(&no_files, &no_trace, &mut |_, _, _, _| {})
                    .expect("experiment runs");
                r.cache
                    .as_ref()
                    .and_then(|c| c.destage_write_mean_ms)
                    .expect("destages in the window")
            };
            let (avg, max, min) = (mean("average"), mean("maximum"), mean("minimum"));
            assert!(
                avg < min && avg < max,
                "seed {seed}, {rate} IOPS: average {avg:.2} ms, maximum {max:.2}, minimum {min:.2}"
            );
        }
    }
}
