//! `run.give_up_mean_ms` (sim::Window::give_up): a run stops once the measured requests'
//! mean latency is proven to exceed the limit. Over random configurations of every family,
//! open loops below and beyond saturation: the proof is sound (the bound at the stop never
//! exceeds the full run's mean), a limit at or above the full run's mean changes nothing,
//! and a stopped report still never counts work outside its window.

mod common;
use common::*;

use proptest::prelude::*;
use spindle::config::Experiment;
use spindle::metrics::Report;

/// Layouts as `--set`s (6 or fewer ST39133LWVs).
const FAMILIES: [&[(&str, &str)]; 5] = [
    &[
        ("array.layout", "striping"),
        ("array.ds", "2"),
        ("array.scheduler", "satf"),
    ],
    &[
        ("array.layout", "raid-10"),
        ("array.ds", "2"),
        ("array.dm", "2"),
        ("array.scheduler", "satf"),
    ],
    &[
        ("array.layout", "sr-array"),
        ("array.ds", "2"),
        ("array.dr", "2"),
        ("array.scheduler", "rsatf"),
    ],
    &[
        ("array.layout", "ew-array"),
        ("array.dm", "2"),
        ("array.ds", "1.5"),
        ("array.dd", "2"),
        ("array.scheduler", "satf-ew"),
    ],
    &[
        ("array.layout", "raid-5"),
        ("array.disks", "5"),
        ("array.scheduler", "satf"),
    ],
];

fn run(sets: &[String]) -> Result<Report, String> {
    let text = "seed = 3\n[drive]\nmodel = \"st39133lwv\"\n[workload]\nkind = \"open\"\n\
                size_bytes = 8192\n[run]\nrequests = 2000\n";
    let exp = Experiment::parse(text, "test", sets).map_err(|e| e.to_string())?;
    exp.run(&no_files, &no_trace, &mut |_, _, _, _| {})
        .map_err(|e| e.to_string())
}

proptest! {
    // A fixed seed: the same 16 cases on every run, so CI is reproducible.
    #![proptest_config(ProptestConfig {
        cases: 16,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x61BE_0011),
        ..ProptestConfig::default()
    })]

    #[test]
    fn giving_up_is_sound(
        family in 0..FAMILIES.len(),
        read_pct in 0u32..=100,
        // From well below one family's capacity to far beyond every one's.
        rate in 50u32..=2500,
        // The limit as a fraction of the full run's mean: below it (must stop) and not.
        fraction in 0.02f64..=0.95,
    ) {
        let mut sets: Vec<String> =
            FAMILIES[family].iter().map(|(k, v)| format!("{k}={v}")).collect();
        sets.push(format!("workload.read_fraction={}", f64::from(read_pct) / 100.0));
        sets.push(format!("workload.rate_iops={rate}"));
        let what = format!("{sets:?}");
        let full = run(&sets).unwrap();
        let mean = full.latency.all.mean_ms;
        prop_assert!(full.stopped.is_none());

        // The report's mean comes from the latency histogram, whose values are kept to 3
        // significant digits: it is within 0.1 % of the exact mean the bound converges to.
        const HISTOGRAM: f64 = 1e-3;
        // At or above the full run's mean the bound never crosses the limit: the same report.
        let mut at = sets.clone();
        at.push(format!("run.give_up_mean_ms={}", mean * (1.0 + HISTOGRAM)));
        let same = run(&at).unwrap();
        prop_assert!(same == full, "{what}: a limit above the mean changed the report");

        // Below it the run stops, and what it proved holds: the bound it stopped on lies
        // between the limit and the full run's mean (to the histogram's resolution).
        let limit = mean * fraction;
        let mut below = sets.clone();
        below.push(format!("run.give_up_mean_ms={limit}"));
        let cut = run(&below).unwrap();
        let s = cut.stopped.as_ref();
        prop_assert!(s.is_some(), "{what}: limit {limit} ms below the mean {mean} ms, no stop");
        let s = s.unwrap();
        prop_assert!(
            s.mean_ms_at_least > limit && s.mean_ms_at_least <= mean * (1.0 + HISTOGRAM),
            "{what}: stopped on {} ms, limit {limit}, full mean {mean}",
            s.mean_ms_at_least
        );
        prop_assert!(s.at_s <= full.window_s + 1.0, "{what}: stopped after the full run");
        for d in &cut.disks {
            prop_assert!((0.0..=1.0).contains(&d.utilization), "{what}: utilisation {}", d.utilization);
        }
        prop_assert!(cut.requests < full.requests || s.unanswered == 0);
    }
}

#[test]
fn a_bad_limit_names_the_key() {
    for v in ["0", "-1", "nan"] {
        let e = run(&[
            "workload.rate_iops=100".into(),
            format!("run.give_up_mean_ms={v}"),
        ])
        .unwrap_err();
        assert!(e.contains("run.give_up_mean_ms"), "{v}: {e}");
    }
}
