//! Power states end to end, through every controller family (the SR/mirror family, eager
//! writing, parity): a request reaching a disk in a low-power state waits exactly for the
//! transition back; the explicit commands of the core API; the report's energy over its
//! window; configuration errors. docs/power.md.

mod common;
use common::*;

use spindle::config::Experiment;
use spindle::drive::{LowPower, PowerCommand};
use spindle::engine::{Action, Engine, Event, HostRequest};
use spindle::{Nanos, Op, Span};

const S: u64 = 1_000_000_000;

/// Arrays of IBM Ultrastar 36Z15s, one per controller family.
const FAMILIES: [&str; 4] = [
    "layout = \"jbod\"",
    "layout = \"mirror\"\ndm = 2\nscheduler = \"satf\"",
    "layout = \"ew-array\"\ndisks = 2\ndm = 1\nds = 1\ndd = 2\nscheduler = \"satf-ew\"\n\
     data_set_bytes = 1000000000",
    "layout = \"raid-5\"\ndisks = 3\ngroup_width = 3\nwrite_cache_bytes = 0",
];

fn text(array: &str, power: &str) -> String {
    format!(
        "seed = 1\n[drive]\nmodel = \"ibm36z15\"\n[array]\n{array}\n[workload]\n\
         kind = \"closed\"\n[run]\nrequests = 1\n[power]\n{power}\n"
    )
}

fn engine(array: &str, power: &str) -> Box<dyn Engine> {
    let exp = Experiment::parse(&text(array, power), "test", &[]).expect("valid experiment");
    exp.build_array(&no_files).expect("builds").engine
}

/// Drives `e` like the simulator from `start` until host request 0 (a 4 KiB read of `lba`
/// arriving at `at`) completes: returns its completion time.
fn read_once(e: &mut dyn Engine, at: Nanos, lba: u64) -> Nanos {
    let mut pending: Vec<(Nanos, Event)> = Vec::new();
    e.handle(
        at,
        Event::Host(HostRequest {
            id: 0,
            op: Op::Read,
            lba,
            sectors: 8,
            arrival: at,
        }),
    );
    let mut now = at;
    loop {
        while let Some(a) = e.poll_action() {
            match a {
                Action::DiskBusy { disk, until } => pending.push((until, Event::DiskDone { disk })),
                Action::Wake { at } => pending.push((at, Event::Wake)),
                Action::Complete(c) => {
                    assert_eq!(c.id, 0);
                    // Let the disks finish what they started.
                    pending.sort_by_key(|p| p.0);
                    for (t, ev) in pending.drain(..) {
                        e.handle(t.max(now), ev);
                        while e.poll_action().is_some() {}
                    }
                    return c.done;
                }
            }
        }
        pending.sort_by_key(|p| std::cmp::Reverse(p.0));
        let (t, ev) = pending
            .pop()
            .expect("work pending until the read completes");
        now = t;
        e.handle(t, ev);
    }
}

#[test]
fn a_request_to_a_standby_disk_pays_exactly_the_spin_up_in_every_family() {
    for array in FAMILIES {
        // Spun down at 10 s of idling, down by 25 s; a read at 100 s waits 26 s of spin-up,
        // then takes what the same read takes on a spinning disk starting at 126 s.
        let mut down = engine(array, "policy = \"timeout\"\ntimeout_s = 10.0");
        let done_down = read_once(down.as_mut(), Nanos(100 * S), 4096);
        let mut up = engine(array, "policy = \"never\"");
        let done_up = read_once(up.as_mut(), Nanos(126 * S), 4096);
        assert_eq!(done_down, done_up, "{array}");
        let service = done_up.since(Nanos(126 * S));
        assert_eq!(
            done_down.since(Nanos(100 * S)),
            Span(26 * S) + service,
            "{array}"
        );
        assert!(service < Span(S / 10), "{array}: {service:?}");
        let spin_ups: u64 = (0..down.disk_count())
            .map(|d| down.power(d, done_down).expect("power data").spin_ups)
            .sum();
        assert_eq!(spin_ups, 1, "{array}: only the disk read spins up");
        // During the spin-down (10 s..25 s) the request waits for its end, then spins up.
        let mut e = engine(array, "policy = \"timeout\"\ntimeout_s = 10.0");
        let done = read_once(e.as_mut(), Nanos(12 * S), 4096);
        let mut up = engine(array, "policy = \"never\"");
        assert_eq!(done, read_once(up.as_mut(), Nanos(51 * S), 4096), "{array}");
    }
}

#[test]
fn explicit_commands_through_the_core_api() {
    for array in FAMILIES {
        let mut e = engine(array, "policy = \"explicit\"");
        let disks = e.disk_count();
        // Never down by itself: an hour later a read does not wait.
        let done = read_once(e.as_mut(), Nanos(3600 * S), 0);
        let mut up = engine(array, "policy = \"never\"");
        assert_eq!(done, read_once(up.as_mut(), Nanos(3600 * S), 0), "{array}");
        // Every disk down at 4000 s, up again at 5000 s: ready at 5026 s.
        for d in 0..disks {
            e.power_command(Nanos(4000 * S), d, PowerCommand::Down(LowPower::Standby));
        }
        let t = Nanos(4900 * S);
        for d in 0..disks {
            let p = e.power(d, t).expect("power data");
            assert_eq!(
                p.low_ns[LowPower::Standby.index()],
                885 * S,
                "{array} disk {d}"
            );
        }
        for d in 0..disks {
            e.power_command(Nanos(5000 * S), d, PowerCommand::Up);
        }
        let done = read_once(e.as_mut(), Nanos(5010 * S), 0);
        let mut up = engine(array, "policy = \"never\"");
        let want = read_once(up.as_mut(), Nanos(5026 * S), 0);
        assert_eq!(
            done, want,
            "{array}: the read waits for the commanded spin-up"
        );
        for d in 0..disks {
            assert_eq!(e.power(d, done).expect("power data").spin_ups, 1, "{array}");
        }
    }
}

#[test]
fn the_report_counts_energy_inside_its_window_only() {
    let base = "seed = 3\n[drive]\nmodel = \"ibm36z15\"\n[array]\nlayout = \"striping\"\n\
                disks = 2\n[workload]\nkind = \"open\"\nrate_iops = 0.05\n[run]\nrequests = 200\n";
    for power in [
        "policy = \"never\"",
        "policy = \"timeout\"\ntimeout_s = 5.0",
        "policy = \"adaptive\"\ntimeout_s = 5.0",
    ] {
        let text = format!("{base}[power]\n{power}\n");
        let exp = Experiment::parse(&text, "test", &[]).expect("valid");
        let r = exp
            .run(&no_files, &no_trace, &mut |_, _, _, _| {})
            .expect("runs");
        let e = r.energy.as_ref().expect("energy");
        let mut total = 0.0;
        for d in &r.disks {
            let s = d.state_s.as_ref().expect("states");
            let sum = s.active + s.idle + s.standby + s.unloaded + s.low_rpm + s.transition;
            assert!(
                (sum - r.window_s).abs() < 1e-6,
                "{power}: {sum} vs {}",
                r.window_s
            );
            assert!((s.active - d.utilization * r.window_s).abs() < 1e-6);
            total += d.energy_j.expect("energy");
        }
        assert!((e.total_j - total).abs() < 1e-6 * total);
        assert!((e.mean_w - e.total_j / r.window_s).abs() < 1e-9 * e.mean_w);
        // Two disks each between standby and active draw.
        assert!(
            e.mean_w > 2.0 * 4.15 && e.mean_w < 2.0 * 39.0,
            "{power}: {}",
            e.mean_w
        );
        if power.contains("never") {
            assert_eq!(e.spin_ups, 0);
            assert!(e.mean_w > 2.0 * 22.3);
        } else {
            assert!(e.spin_ups > 0, "{power}");
        }
    }
}

#[test]
fn no_power_data_reports_no_energy_and_never_is_the_default() {
    let text =
        "[drive]\nmodel = \"st39133lwv\"\n[workload]\nkind = \"closed\"\n[run]\nrequests = 300\n";
    let exp = Experiment::parse(text, "test", &[]).expect("valid");
    let r = exp
        .run(&no_files, &no_trace, &mut |_, _, _, _| {})
        .expect("runs");
    assert!(r.energy.is_none());
    assert!(r
        .disks
        .iter()
        .all(|d| d.energy_j.is_none() && d.state_s.is_none()));
    let json = serde_json::to_string(&r).expect("serialises");
    assert!(
        !json.contains("energy") && !json.contains("state_s"),
        "{json}"
    );
}

#[test]
fn power_configuration_errors_name_their_key() {
    let err = |power: &str, model: &str| {
        let text = text("layout = \"jbod\"", power).replace("ibm36z15", model);
        let e = Experiment::parse(&text, "x.toml", &[])
            .and_then(|e| e.build_array(&no_files).map(|_| ()))
            .expect_err("refused");
        e.to_string()
    };
    let e = err("policy = \"timeout\"\ntimeout = 3", "ibm36z15");
    assert!(e.contains("line 12") && e.contains("timeout"), "{e}");
    let e = err("policy = \"timeout\"", "ibm36z15");
    assert!(e.contains("power.timeout_s"), "{e}");
    let e = err("policy = \"timeout\"\ntimeout_s = -1.0", "ibm36z15");
    assert!(
        e.contains("line 12") && e.contains("power.timeout_s"),
        "{e}"
    );
    let e = err("policy = \"timeout\"\ntimeout_s = 10.0", "st39133lwv");
    assert!(e.contains("no power data"), "{e}");
    let e = err(
        "policy = \"timeout\"\ntimeout_s = 10.0\nstate = \"low_rpm\"",
        "ibm36z15",
    );
    assert!(e.contains("no low_rpm state"), "{e}");
    let e = err("policy = \"never\"\ntimeout_s = 10.0", "ibm36z15");
    assert!(e.contains("power.timeout_s"), "{e}");
    let e = err("policy = \"sometimes\"", "ibm36z15");
    assert!(e.contains("line 11") && e.contains("sometimes"), "{e}");
    // The mid-range drive's intermediate states.
    for state in ["unloaded", "low_rpm", "standby"] {
        let text = text(
            "layout = \"jbod\"",
            &format!("policy = \"timeout\"\ntimeout_s = 1.0\nstate = \"{state}\""),
        )
        .replace("ibm36z15", "t7k250");
        let exp = Experiment::parse(&text, "x.toml", &[]).expect("valid");
        let mut e = exp.build_array(&no_files).expect("builds").engine;
        let p = e.power(0, Nanos(100 * S)).expect("power data");
        let i = match state {
            "unloaded" => 1,
            "low_rpm" => 2,
            _ => 0,
        };
        assert!(p.low_ns[i] > 0 && p.low_ns.iter().filter(|&&v| v > 0).count() == 1);
        let _ = read_once(e.as_mut(), Nanos(100 * S), 0);
    }
}

#[test]
fn bad_drive_power_values_are_errors_with_the_line() {
    let drive = spindle::drive::library::builtin_spec("t7k250").expect("built in");
    for (from, to, key) in [
        ("idle_w = 5.24", "idle_w = -5.24", "power.idle_w"),
        ("\nload_s = 0.7", "\nload_s = 0.0", "power.load_s"),
        ("spin_up_j = 3.5", "spin_up_j = -1.0", "power.spin_up_j"),
        (
            "low_rpm_w = 2.72",
            "low_rpm_w = 2.72\nwatts = 3.0",
            "power.watts",
        ),
    ] {
        let bad = drive.replacen(from, to, 1);
        assert_ne!(bad, drive);
        let e = spindle::drive::parse_drive(&bad)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("line ") && e.contains(key), "{e}");
    }
}

/// Every library drive whose file gives `[power]`, with its validated model.
fn library_power_models() -> Vec<(&'static str, spindle::drive::PowerModel)> {
    spindle::drive::library::builtin_ids()
        .filter_map(|id| {
            let drive = spindle::drive::builtin_drive(id).expect("library drive validates");
            drive.power_model().map(|m| (id, *m))
        })
        .collect()
}

#[test]
fn library_drives_with_power_data_order_their_states() {
    let models = library_power_models();
    let ids: Vec<&str> = models.iter().map(|(id, _)| *id).collect();
    // The paper's two drives at least (Table 2); the list grows as data sheets are added.
    assert!(
        ids.contains(&"ibm36z15") && ids.contains(&"t7k250"),
        "{ids:?}"
    );
    for (id, m) in &models {
        assert!(m.idle_uw < m.active_uw, "{id}: idle >= active");
        for s in LowPower::ALL {
            let Some(st) = m.state(s) else { continue };
            assert!(st.power_uw < m.idle_uw, "{id}: {} >= idle", s.name());
            assert!(
                st.down.time > Span(0) && st.up.time > Span(0),
                "{id}: {} has a zero-time transition",
                s.name()
            );
            // A drive that spins down draws least when spun down.
            if let (Some(standby), false) = (m.state(LowPower::Standby), s == LowPower::Standby) {
                assert!(
                    standby.power_uw < st.power_uw,
                    "{id}: standby draws no less than {}",
                    s.name()
                );
            }
        }
    }
}

#[test]
fn a_request_to_a_low_power_library_drive_pays_its_transition_up() {
    // Every library drive with power data, every low-power state it has: the disk goes down
    // 1 s after time 0 (never used), a read arrives 100 s after the transition down ended
    // and completes exactly when the same read, arriving at that instant plus the
    // transition up on an always-spinning disk, completes.
    let mut checked = 0;
    for (id, m) in library_power_models() {
        for s in LowPower::ALL {
            let Some(st) = m.state(s) else { continue };
            let exp = |power: &str| {
                let text = text("layout = \"jbod\"", power).replace("ibm36z15", id);
                let exp = Experiment::parse(&text, "test", &[]).expect("valid experiment");
                exp.build_array(&no_files).expect("builds").engine
            };
            let arrival = Nanos(S) + st.down.time + Span(100 * S);
            let mut down = exp(&format!(
                "policy = \"timeout\"\ntimeout_s = 1.0\nstate = \"{}\"",
                s.name()
            ));
            let done_down = read_once(down.as_mut(), arrival, 4096);
            let mut up = exp("policy = \"never\"");
            let done_up = read_once(up.as_mut(), arrival + st.up.time, 4096);
            assert_eq!(done_down, done_up, "{id} {}", s.name());
            assert!(
                done_down.since(arrival) > st.up.time,
                "{id} {}: waited less than the transition up",
                s.name()
            );
            let p = down.power(0, done_down).expect("power data");
            let spin_ups = u64::from(s == LowPower::Standby);
            assert_eq!(p.spin_ups, spin_ups, "{id} {}", s.name());
            checked += 1;
        }
    }
    // The 36Z15's standby and the T7K250's three states at least.
    assert!(checked >= 4, "{checked}");
}

/// The drive ids a markdown section names as `` `id` ``, from its heading to the next one of
/// the same level or above; only in its table rows when `rows_only`.
fn ids_in_section(
    path: &str,
    heading: &str,
    rows_only: bool,
) -> std::collections::BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("{path}: no {heading:?}"));
    let level = heading.chars().take_while(|&c| c == '#').count();
    let body = &text[start + heading.len()..];
    let end = body
        .lines()
        .scan(0, |off, l| {
            let at = *off;
            *off += l.len() + 1;
            Some((at, l))
        })
        .find(|(_, l)| {
            let hashes = l.chars().take_while(|&c| c == '#').count();
            hashes > 0 && hashes <= level && l.chars().nth(hashes) == Some(' ')
        })
        .map_or(body.len(), |(at, _)| at);
    let known: Vec<&str> = spindle::drive::library::builtin_ids().collect();
    body[..end]
        .lines()
        .filter(|l| !rows_only || l.starts_with('|'))
        .flat_map(|l| l.split('`').skip(1).step_by(2))
        .filter(|w| known.contains(w))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_docs_list_exactly_the_library_drives_with_power_data() {
    // docs/power.md's table lists exactly the drives that have `[power]`, and drives/README.md
    // "Power states" names each of them (it also names drives without, saying why), so a
    // drive given power data without its figures documented fails here.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let with_power: std::collections::BTreeSet<String> = library_power_models()
        .into_iter()
        .map(|(id, _)| id.to_owned())
        .collect();
    let table = ids_in_section(
        &format!("{root}/docs/power.md"),
        "### The drives with power data",
        true,
    );
    assert_eq!(table, with_power, "docs/power.md table");
    let readme = ids_in_section(
        &format!("{root}/drives/README.md"),
        "## Power states",
        false,
    );
    assert!(
        with_power.is_subset(&readme),
        "drives/README.md Power states misses {:?}",
        with_power.difference(&readme).collect::<Vec<_>>()
    );
}
