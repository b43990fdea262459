//! A DiskSim 4.0 `.parv` naming an experiment's array (`[array] parv`): a five-disk
//! `Parity_rotated` logical organisation over the Cheetah 9LP of the validation set runs as
//! a spindle RAID-5 of those five disks, with the `.parv`'s stripe unit.

mod common;
use common::*;

use spindle::config::Experiment;
use spindle::metrics::Report;
use std::path::{Path, PathBuf};

fn cheetah_dir() -> Option<PathBuf> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/validation/disksim/cheetah9LP");
    if dir.join("cheetah9LP.diskspecs").exists() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: the validation data is not at {} (see DESIGN.md: real data lives in ../shared)",
            dir.display()
        );
        None
    }
}

/// Stripe unit of the array below, in 512-byte blocks (32 KiB).
const UNIT: u64 = 64;

/// The array: five Cheetah 9LPs, each on its own bus behind one pass-through controller,
/// rotated parity (type 4, right symmetric) in 64-block units.
fn array_parv(diskspecs: &Path, redundancy: &str, disks: usize) -> String {
    let buses: Vec<String> = (0..disks)
        .map(|i| format!("disksim_bus bus{} [ disksim_disk disk{i} [] ]", i + 1))
        .collect();
    format!(
        "disksim_iodriver DRIVER0 {{ type = 1, Constant access time = 0.0,\n\
           Scheduler = disksim_ioqueue {{ Scheduling policy = 1, Cylinder mapping strategy = 1,\n\
             Write initiation delay = 0.0, Read initiation delay = 0.0, Sequential stream scheme = 0,\n\
             Maximum concat size = 128, Overlapping request scheme = 0,\n\
             Sequential stream diff maximum = 0, Scheduling timeout scheme = 0,\n\
             Timeout time/weight = 6, Timeout scheduling = 4, Scheduling priority scheme = 0,\n\
             Priority scheduling = 4 }},\n\
           Use queueing in subsystem = 1 }}\n\
         disksim_bus BUS0 {{ type = 1, Arbitration type = 1, Arbitration time = 0.0,\n\
           Read block transfer time = 0.0, Write block transfer time = 0.0, Print stats = 0 }}\n\
         disksim_ctlr CTLR0 {{ type = 1, Scale for delays = 0.0, Bulk sector transfer time = 0.0,\n\
           Maximum queue length = 0, Print stats = 0 }}\n\
         source {}\n\
         instantiate [ bus0 .. bus{disks} ] as BUS0\n\
         instantiate [ disk0 .. disk{last} ] as SEAGATE_ST39102LW_validate\n\
         instantiate [ driver0 ] as DRIVER0\n\
         instantiate [ ctlr0 ] as CTLR0\n\
         topology disksim_iodriver driver0 [ disksim_bus bus0 [ disksim_ctlr ctlr0 [\n\
           {} ] ] ]\n\
         disksim_logorg org0 {{\n\
           Addressing mode = Array, Distribution scheme = Striped,\n\
           Redundancy scheme = {redundancy}, devices = [ disk0 .. disk{last} ],\n\
           Stripe unit = {UNIT}, Synch writes for safety = 1, Number of copies = 2,\n\
           Copy choice on read = 6, RMW vs. reconstruct = 0.5, Parity stripe unit = {UNIT},\n\
           Parity rotation type = 4, Time stamp interval = 0.0 }}\n",
        diskspecs.display(),
        buses.join(",\n"),
        last = disks - 1,
    )
}

fn read_file(p: &str) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{p}: {e}"))
}

/// Writes the .parv and runs a closed-loop write-only workload of `size` blocks aligned to
/// `size` on it.
fn run(name: &str, redundancy: &str, size: u64, extra: &str) -> Result<Report, String> {
    run_on(name, redundancy, 5, size, extra)
}

fn run_on(
    name: &str,
    redundancy: &str,
    disks: usize,
    size: u64,
    extra: &str,
) -> Result<Report, String> {
    let exp = experiment(name, redundancy, disks, size, extra)?;
    exp.run(&read_file, &no_trace, &mut |_, _, _, _| {})
        .map_err(|e| e.to_string())
}

fn experiment(
    name: &str,
    redundancy: &str,
    disks: usize,
    size: u64,
    extra: &str,
) -> Result<Experiment, String> {
    let dir = cheetah_dir().expect("checked by the caller");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("disksim_array_{name}"));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let parv = tmp.join("array.parv");
    std::fs::write(
        &parv,
        array_parv(&dir.join("cheetah9LP.diskspecs"), redundancy, disks),
    )
    .map_err(|e| e.to_string())?;
    let text = format!(
        "[array]\nparv = \"{}\"\n{extra}\n[workload]\nkind = \"closed\"\nqueue_depth = 4\n\
         read_fraction = 0.0\nsize_bytes = {}\nalignment_bytes = {}\n[run]\nrequests = 400\n",
        parv.display(),
        size * 512,
        size * 512
    );
    Experiment::parse(&text, "disksim_array.toml", &[]).map_err(|e| e.to_string())
}

/// Disk operations per host request over the whole run.
fn ops_per_request(r: &Report) -> f64 {
    r.disks.iter().map(|d| d.ops).sum::<u64>() as f64 / r.requests_issued as f64
}

#[test]
fn a_parity_rotated_parv_runs_as_a_raid5_of_its_five_disks() {
    if cheetah_dir().is_none() {
        return;
    }
    // Full-stripe writes (4 data units of 64 blocks, stripe-aligned): one write per disk and
    // no reads, which holds only if the stripe unit is the .parv's and the group all five.
    let full = run("full", "Parity_rotated", 4 * UNIT, "").unwrap();
    assert_eq!(full.layout, "raid-5 1x5");
    assert_eq!(full.disks_count, 5);
    assert_eq!(full.disks.len(), 5);
    assert!(
        full.drive.contains("array"),
        "the drive comes from the .parv: {}",
        full.drive
    );
    assert!(full.cache.is_none(), "DiskSim's logorg has no write cache");
    assert_eq!(ops_per_request(&full), 5.0);
    // One-unit writes: read-modify-write (rmwpoint = (int)(0.5 x 5) = 2 units), two reads
    // and two writes each.
    let small = run("small", "Parity_rotated", UNIT, "").unwrap();
    assert_eq!(ops_per_request(&small), 4.0);
    // Two-unit writes reach rmwpoint: reconstruct-writes, reading the two other data units
    // and writing two data units and parity. (With a 128-block unit these would be
    // one-unit read-modify-writes, 4 operations; with 32 blocks full-stripe writes, 5 each
    // but 10 for the four-unit writes above.)
    let two = run("two", "Parity_rotated", 2 * UNIT, "").unwrap();
    assert_eq!(ops_per_request(&two), 5.0);
    // The same array as a dedicated parity disk is RAID-4.
    let raid4 = run("raid4", "Parity_disk", 4 * UNIT, "").unwrap();
    assert_eq!(raid4.layout, "raid-4 1x5");
}

#[test]
fn noredun_and_shadowed_parvs_run_as_striping_and_raid10_over_whole_disks() {
    if cheetah_dir().is_none() {
        return;
    }
    // Striping: each one-unit write is one disk write.
    let s = run_on("noredun", "Noredun", 4, UNIT, "").unwrap();
    assert_eq!(s.disks_count, 4);
    assert!(s.layout.starts_with("striping 4x1x1"), "{}", s.layout);
    assert_eq!(ops_per_request(&s), 1.0);
    // Two copies: every write goes to both (foreground writes).
    let m = run_on("shadowed", "Shadowed", 4, UNIT, "").unwrap();
    assert!(m.layout.starts_with("raid-10 2x1x2"), "{}", m.layout);
    assert_eq!(ops_per_request(&m), 2.0);
    // The data set is the whole disks in whole stripe units (DiskSim addresses every
    // block), unless given.
    for (scheme, columns) in [("Noredun", 4), ("Shadowed", 2)] {
        let built = experiment("cap", scheme, 4, UNIT, "")
            .unwrap()
            .build_array(&read_file)
            .unwrap();
        let whole = built.disk_sectors / UNIT * UNIT * columns;
        assert_eq!(built.engine.capacity_sectors(), whole, "{scheme}");
    }
    let e = run_on(
        "dataset",
        "Noredun",
        4,
        UNIT,
        "data_set_bytes = 1_000_000_000_000",
    )
    .unwrap_err();
    assert!(e.contains("data set"), "{e}");
}

#[test]
fn keys_given_twice_and_bad_arrays_are_errors_naming_the_key() {
    if cheetah_dir().is_none() {
        return;
    }
    let e = run("twice", "Parity_rotated", UNIT, "stripe_unit_bytes = 65536").unwrap_err();
    assert!(
        e.contains("line 3") && e.contains("array.stripe_unit_bytes: is set by the DiskSim array"),
        "{e}"
    );
    let e = run("parts", "Parity_declustered", UNIT, "").unwrap_err();
    assert!(
        e.contains("line 2") && e.contains("array.parv") && e.contains("Redundancy scheme"),
        "{e}"
    );
}
