//! The cleaner's policies (`array/cleaner.rs`): each trigger respected, on the small test
//! drive with the invariant-checking harness of `tests.rs` (every step checks the data and
//! the map; the crash tests there run with every policy too).

use super::array::{CleanerPolicy, PagedConfig, DAY_NS};
use super::tests::{config, run, Harness};
use crate::Nanos;

fn cfg(cleaner: CleanerPolicy) -> PagedConfig {
    PagedConfig {
        cleaner,
        ..config(1, 4, true, 64, 64)
    }
}

/// A run with crashes compared now and then; returns the harness.
fn go(cleaner: CleanerPolicy, think_ns: u64, steps: usize) -> Harness {
    run(&cfg(cleaner), 5, 0.6, 400, 2, steps, 20, think_ns)
}

#[test]
fn idle_cleaning_starts_only_after_the_idle_threshold_with_no_host_work_queued() {
    let idle_ns = 3_000_000;
    let h = go(CleanerPolicy::Idle { idle_ns }, 20_000_000, 3000);
    let starts = h.array.clean_starts(0);
    assert!(starts.len() > 20, "{} cleans", starts.len());
    for s in starts {
        assert_eq!(s.host_queued, 0, "{s:?}");
        assert!(s.at.0 >= s.last_host.0 + idle_ns, "{s:?}");
    }
    assert!(h.array.cleaned(0) > 20);
    // Closed loop with no think time: the disk is never idle, nothing is cleaned.
    let busy = go(CleanerPolicy::Idle { idle_ns }, 0, 1500);
    assert!(busy.array.clean_starts(0).is_empty());
}

#[test]
fn dirtiness_keeps_the_bad_tenants_near_the_threshold() {
    let max_tenants = 6;
    let none = go(CleanerPolicy::None, 0, 3000);
    assert!(
        none.array.map(0).tenants() > 3 * max_tenants,
        "without a cleaner the tenants accumulate: {}",
        none.array.map(0).tenants()
    );
    let mut h = Harness::new(&cfg(CleanerPolicy::Dirtiness { max_tenants }), 5, 0.6, 400);
    h.issue();
    h.issue();
    let mut worst = 0;
    for i in 0..3000 {
        assert!(h.step());
        h.check();
        if i > 200 {
            worst = worst.max(h.array.map(0).tenants());
        }
    }
    // Cleaning alternates with host operations: at most a couple of writes land as tenants
    // between a crossing and the clean that brings it back.
    assert!(worst <= max_tenants + 2, "worst {worst}");
    for s in h.array.clean_starts(0) {
        assert!(s.tenants > max_tenants, "{s:?}");
    }
    assert!(h.array.cleaned(0) > 50);
}

#[test]
fn piggyback_cleans_only_on_the_visited_track() {
    let h = go(CleanerPolicy::Piggyback, 0, 3000);
    let starts = h.array.clean_starts(0);
    assert!(starts.len() > 20, "{} cleans", starts.len());
    let cut = h.array.map(0).cut.clone();
    let mut in_memory = 0;
    for s in starts {
        let t = s.visited.expect("a visited track");
        in_memory += u32::from(s.in_memory);
        assert!(
            s.in_memory || s.home_track == t || cut.track_of_slot(s.slot) == t,
            "{s:?}"
        );
    }
    eprintln!(
        "piggyback: {} cleans, {in_memory} from memory",
        starts.len()
    );
}

#[test]
fn nightly_cleans_only_inside_the_window() {
    let (start_ns, len_ns) = (2_000_000_000, 3_000_000_000);
    let h = go(
        CleanerPolicy::Nightly { start_ns, len_ns },
        10_000_000,
        1500,
    );
    assert!(h.now.0 > start_ns + len_ns, "the run passes the window");
    let starts = h.array.clean_starts(0);
    assert!(starts.len() > 20, "{} cleans", starts.len());
    for s in starts {
        assert!(s.at.0 >= start_ns && s.at.0 < start_ns + len_ns, "{s:?}");
        assert_eq!(s.host_queued, 0);
    }
}

#[test]
fn the_nightly_window_repeats_daily_and_may_wrap_past_midnight() {
    let h = 3_600_000_000_000u64;
    let (start, len) = (23 * h, 2 * h);
    for (t, inside) in [
        (0, true),
        (h - 1, true),
        (h, false),
        (22 * h, false),
        (23 * h, true),
        (DAY_NS + 30 * 60_000_000_000, true),
        (DAY_NS + 12 * h, false),
    ] {
        assert_eq!(
            CleanerPolicy::in_window(start, len, Nanos(t)),
            inside,
            "t {t}"
        );
    }
    assert_eq!(CleanerPolicy::next_window(start, Nanos(h)), Nanos(23 * h));
    assert_eq!(
        CleanerPolicy::next_window(start, Nanos(23 * h)),
        Nanos(23 * h)
    );
    assert_eq!(
        CleanerPolicy::next_window(start, Nanos(23 * h + 1)),
        Nanos(DAY_NS + 23 * h)
    );
}
