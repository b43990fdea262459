//! Zero-latency access in the mechanics, track-aligned layouts, and the efficiency analysis.

use super::*;
use crate::config::{Experiment, TraceSpec};
use crate::drive::{builtin_drive, parse_drive};
use crate::layout::{Layout, LayoutConfig, Placement, Shape};
use crate::sim::Arrivals;

/// One zone, 100 sectors a track at 10,000 rpm (a sector is exactly 60 µs), skewed tracks.
const DRIVE: &str = r#"
id = "zl"
name = "zero-latency test drive"
rpm = 10000
surfaces = 4
cylinders = 500
head_switch_ms = 0.3
overhead_read_ms = 0.5
overhead_write_ms = 0.5
zero_latency = true
[[zones]]
first_cylinder = 0
last_cylinder = 499
sectors_per_track = 100
track_skew = 7
cylinder_skew = 13
[seek]
kind = "linear"
full_ms = 8.0
intercept_ms = 0.8
"#;

fn zl_drive(on: bool) -> Drive {
    parse_drive(DRIVE).unwrap().with_zero_latency(on).unwrap()
}

fn none() -> Option<&'static mut Pcg64Mcg> {
    None
}

const SECTOR_NS: u64 = 60_000;

#[test]
fn a_whole_track_access_waits_at_most_for_a_sector_boundary_with_zero_latency() {
    let (zl, plain) = (zl_drive(true), zl_drive(false));
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let (mut rot_zl, mut rot_plain) = (0u64, 0u64);
    for _ in 0..500 {
        let track = rng.gen_range(0..zl.capacity_sectors() / 100) * 100;
        let head = HeadState {
            cylinder: rng.gen_range(0..500),
            head: rng.gen_range(0..4),
            phase_ns: rng.gen_range(0..zl.period().0),
        };
        let now = Nanos(rng.gen_range(0..1_000_000_000));
        for op in [Op::Read, Op::Write] {
            let x = Transfer {
                op,
                lba: track,
                sectors: 100,
            };
            let a = zl.access(now, &head, x, None, none());
            let b = plain.access(now, &head, x, None, none());
            // The same positioning; the zero-latency access waits only for the next sector
            // boundary and then moves the track in exactly one revolution.
            assert_eq!((a.overhead, a.seek), (b.overhead, b.seek));
            assert!(a.rotation.0 < SECTOR_NS, "{a:?}");
            assert_eq!(a.transfer, zl.period());
            assert_eq!(a.end, now + a.service());
            assert!(a.end <= b.end, "zero latency is never slower: {a:?} {b:?}");
            rot_zl += a.rotation.0;
            rot_plain += b.rotation.0;
        }
    }
    // Without it, the wait for the track's first sector averages half a revolution.
    let half = zl.period().0 / 2;
    assert!(rot_plain / 1000 > half * 8 / 10, "{}", rot_plain / 1000);
    assert!(rot_zl / 1000 < SECTOR_NS, "{}", rot_zl / 1000);
}

#[test]
fn a_partial_track_access_comes_round_for_the_sectors_it_passed() {
    let d = zl_drive(true);
    // Track 0 (no skew): sector i starts at i·60 µs. The head lands (overhead 0.5 ms, no
    // seek) at angle 0.51 ms = sector 8 + 30 µs, inside the run of sectors 0..50.
    let head = HeadState {
        cylinder: 0,
        head: 0,
        phase_ns: 10_000,
    };
    let x = Transfer {
        op: Op::Read,
        lba: 0,
        sectors: 50,
    };
    let a = d.access(Nanos::ZERO, &head, x, None, none());
    assert_eq!(a.seek, Span::ZERO);
    // Sector 9 starts 30 µs later; 9..50, the 50 sectors not wanted, then 0..9: a revolution.
    assert_eq!(a.transfer.0, 50 * SECTOR_NS);
    assert_eq!(a.rotation.0, 30_000 + 50 * SECTOR_NS);
    assert_eq!(a.end.0, 500_000 + 30_000 + d.period().0);
    // Landing outside the run: the usual wait for its first sector.
    let late = HeadState {
        phase_ns: 3_100_000,
        ..head
    };
    let b = d.access(Nanos::ZERO, &late, x, None, none());
    let plain = zl_drive(false).access(Nanos::ZERO, &late, x, None, none());
    assert_eq!(b, plain);
}

#[test]
fn zero_latency_is_refused_where_it_is_not_modelled() {
    let with_cache = DRIVE.replace(
        "[seek]",
        "[cache]\nsegments = 1\nsegment_sectors = 100\nread_hit_after_read_ms = 0.0\n\
         read_hit_after_write_ms = 0.0\nread_miss_after_read_ms = 0.0\n\
         read_miss_after_write_ms = 0.0\nwrite_hit_after_read_ms = 0.0\n\
         write_hit_after_write_ms = 0.0\nwrite_miss_after_read_ms = 0.0\n\
         write_miss_after_write_ms = 0.0\n[seek]",
    );
    let err = parse_drive(&with_cache).unwrap_err().to_string();
    assert!(
        err.contains("zero_latency") && err.contains("line 10"),
        "{err}"
    );
}

fn ta_layout(drive: &Drive, ds: u32, dm: u32, data_set_bytes: Option<u64>) -> Layout {
    Layout::new_track_aligned(
        drive,
        &LayoutConfig {
            shape: Shape::SrMirror { ds, dr: 1, dm },
            stripe_unit_bytes: 65536,
            placement: Placement::default(),
            data_set_bytes,
            seed: 1,
        },
    )
    .unwrap()
}

proptest::proptest! {
    // On every library drive (zones, spares, the last partial track of a zone): a piece of a
    // track-aligned layout never crosses a track, starts a unit where its row starts one,
    // and maps back to the logical sector it came from.
    #[test]
    fn track_aligned_pieces_never_cross_a_track(drive in 0usize..64, ds in 1u32..6, frac in 0.0f64..1.0, sectors in 1u32..2000) {
        let ids: Vec<_> = crate::drive::library::builtin_ids().collect();
        let d = builtin_drive(ids[drive % ids.len()]).unwrap();
        let l = ta_layout(&d, ds, 1, None);
        let cap = l.capacity_sectors();
        let lba = ((cap - 1) as f64 * frac) as u64;
        let sectors = u32::try_from(u64::from(sectors).min(cap - lba)).unwrap();
        let mut out = vec![];
        l.pieces(lba, sectors, &mut out);
        let mut at = lba;
        for p in &out {
            let (start, len) = d.geometry().track_of(p.offset).unwrap();
            proptest::prop_assert!(p.offset + u64::from(p.sectors) <= start + len, "{p:?} crosses the track {start}+{len}");
            proptest::prop_assert_eq!(l.logical_of(p), at);
            proptest::prop_assert_eq!(l.column_offset(at), (p.column, p.offset));
            at += u64::from(p.sectors);
        }
        proptest::prop_assert_eq!(at, lba + u64::from(sectors));
    }
}

#[test]
fn a_track_aligned_row_is_one_track_of_every_column() {
    let d = builtin_drive("atlas10k").unwrap();
    let l = ta_layout(&d, 3, 2, None);
    assert!(l.track_aligned());
    assert_eq!(l.disks(), 6);
    let (_, spt0) = d.geometry().track_of(0).unwrap();
    assert_eq!(spt0, 334);
    // Row 0: logical 0..334 on column 0, 334..668 on column 1, … all at disk LBA 0.
    let mut out = vec![];
    l.pieces(0, 3 * 334 + 1, &mut out);
    let cols: Vec<_> = out
        .iter()
        .map(|p| (p.column, p.offset, p.sectors))
        .collect();
    assert_eq!(
        cols,
        vec![(0, 0, 334), (1, 0, 334), (2, 0, 334), (0, 334, 1)]
    );
    // A data set of one disk: whole tracks per column, the last one completed.
    assert_eq!(l.capacity_sectors() % 3, 0);
    let per_column = l.capacity_sectors() / 3;
    assert!(per_column >= d.capacity_sectors().div_ceil(3));
    let (s, n) = d.geometry().track_of(per_column - 1).unwrap();
    assert_eq!(s + n, per_column);
}

#[test]
fn impossible_track_aligned_layouts_say_why() {
    let d = builtin_drive("atlas10k").unwrap();
    let cfg = |shape| LayoutConfig {
        shape,
        stripe_unit_bytes: 65536,
        placement: Placement::default(),
        data_set_bytes: None,
        seed: 1,
    };
    let err = |shape| Layout::new_track_aligned(&d, &cfg(shape)).unwrap_err().0;
    assert!(err(Shape::Jbod { disks: 2 }).contains("jbod"));
    assert!(err(Shape::SrMirror {
        ds: 2,
        dr: 2,
        dm: 1
    })
    .contains("Dr = 1"));
    let big = LayoutConfig {
        data_set_bytes: Some(u64::MAX / 2),
        ..cfg(Shape::SrMirror {
            ds: 2,
            dr: 1,
            dm: 1,
        })
    };
    assert!(Layout::new_track_aligned(&d, &big)
        .unwrap_err()
        .0
        .contains("a disk holds"));
}

fn read_file(path: &str) -> Result<Vec<u8>, String> {
    match path {
        "zl.toml" => Ok(DRIVE.as_bytes().to_vec()),
        "plain.toml" => Ok(DRIVE
            .replace("zero_latency = true", "zero_latency = false")
            .into_bytes()),
        "sync.toml" => Ok(DRIVE
            .replace("head_switch_ms = 0.3", "head_switch_ms = 0.06")
            .replace("overhead_read_ms = 0.5", "overhead_read_ms = 0.0")
            .replace("overhead_write_ms = 0.5", "overhead_write_ms = 0.0")
            .into_bytes()),
        // 96 sectors a track: whole 4 KiB blocks, so a RAID-5 unit is the whole track.
        "zl96.toml" => Ok(DRIVE
            .replace("sectors_per_track = 100", "sectors_per_track = 96")
            .into_bytes()),
        "plain96.toml" => Ok(DRIVE
            .replace("sectors_per_track = 100", "sectors_per_track = 96")
            .replace("zero_latency = true", "zero_latency = false")
            .into_bytes()),
        other => Err(format!("{other}: no such file")),
    }
}

fn no_trace(
    _: &TraceSpec,
    _: u32,
    _: u32,
    _: u64,
) -> Result<(Arrivals<'static>, Option<u64>), String> {
    Err("no traces in this test".into())
}

/// Whole-track reads and writes (100 sectors, track-aligned) on a track-aligned striping.
fn whole_tracks(model: &str, extra: &str) -> crate::metrics::Report {
    let text = format!(
        "seed = 5\n[drive]\nmodel = \"{model}\"\n[array]\nlayout = \"striping\"\ndisks = 2\n\
         track_aligned = true\n{extra}\n[workload]\nkind = \"closed\"\nqueue_depth = 2\n\
         read_fraction = 0.5\nsize_bytes = 51200\nalignment_bytes = 51200\n[run]\n\
         requests = 400\n"
    );
    let exp = Experiment::parse(&text, "exp.toml", &[]).unwrap();
    exp.run(&read_file, &no_trace, &mut |_, _, _, _| {})
        .unwrap()
}

#[test]
fn whole_track_requests_on_a_track_aligned_array_pay_no_rotational_latency() {
    let zl = whole_tracks("zl.toml", "");
    let plain = whole_tracks("plain.toml", "");
    assert!(zl.layout.contains("track-aligned"), "{}", zl.layout);
    // Without zero latency a whole track waits for its first sector: about half a turn.
    assert!(
        plain.breakdown_ms.rotation > 2.0,
        "{:?}",
        plain.breakdown_ms
    );
    // With it, only the wait for a sector boundary is left: under one sector (60 µs).
    assert!(zl.breakdown_ms.rotation < 0.06, "{:?}", zl.breakdown_ms);
    assert!(zl.throughput_iops > plain.throughput_iops * 1.2);
    // On one cylinder of a drive whose every time is whole sectors (no overhead, a
    // one-sector head switch, the spindles in phase), the head always lands on a sector
    // boundary: the rotation component is exactly zero.
    let sync = whole_tracks("sync.toml", "random_phase = false\ndata_set_bytes = 409600");
    assert_eq!(sync.breakdown_ms.rotation, 0.0, "{:?}", sync.breakdown_ms);
    assert!(sync.breakdown_ms.transfer > 5.9, "{:?}", sync.breakdown_ms);
}

/// Random whole-unit reads (one 96-sector track) on a track-aligned RAID-5 of five disks.
fn raid5_whole_units(model: &str) -> crate::metrics::Report {
    let text = format!(
        "seed = 5\n[drive]\nmodel = \"{model}\"\n[array]\nlayout = \"raid-5\"\ndisks = 5\n\
         track_aligned = true\nwrite_cache_bytes = 0\n[workload]\nkind = \"closed\"\n\
         queue_depth = 4\nread_fraction = 1.0\nsize_bytes = 49152\nalignment_bytes = 49152\n\
         [run]\nrequests = 400\n"
    );
    let exp = Experiment::parse(&text, "exp.toml", &[]).unwrap();
    exp.run(&read_file, &no_trace, &mut |_, _, _, _| {})
        .unwrap()
}

#[test]
fn whole_track_reads_through_a_track_aligned_raid5_pay_no_rotational_latency() {
    let zl = raid5_whole_units("zl96.toml");
    let plain = raid5_whole_units("plain96.toml");
    assert!(zl.layout.contains("track-aligned"), "{}", zl.layout);
    assert!(
        plain.breakdown_ms.rotation > 2.0,
        "{:?}",
        plain.breakdown_ms
    );
    // Under one sector (60 µs): the wait for a sector boundary only.
    assert!(zl.breakdown_ms.rotation < 0.06, "{:?}", zl.breakdown_ms);
    assert!(zl.throughput_iops > plain.throughput_iops * 1.2);
}

#[test]
fn track_aligned_is_refused_where_it_is_not_built() {
    for (layout, key) in [
        ("ddm", "array.track_aligned"),
        ("ew-array", "array.track_aligned"),
        ("jbod", "array.track_aligned"),
    ] {
        let text = format!(
            "[drive]\nmodel = \"zl.toml\"\n[array]\nlayout = \"{layout}\"\ndisks = 5\n\
             track_aligned = true\n[workload]\nkind = \"closed\"\n"
        );
        let err = match Experiment::parse(&text, "exp.toml", &[]) {
            Err(e) => e.to_string(),
            Ok(exp) => exp
                .run(&read_file, &no_trace, &mut |_, _, _, _| {})
                .unwrap_err()
                .to_string(),
        };
        assert!(err.contains(key), "{layout}: {err}");
    }
}

#[test]
fn aligned_track_reads_are_more_efficient_and_zero_latency_widens_the_gap() {
    let d = builtin_drive("atlas10k").unwrap();
    let plain = track_efficiency(&d, Op::Read, 1.0, 400, 1);
    let zl = track_efficiency(&d.with_zero_latency(true).unwrap(), Op::Read, 1.0, 400, 1);
    // Aligned saves the head switch; with zero latency it also saves the rotational wait.
    assert!(plain.ratio() > 1.0, "{plain:?}");
    assert!(
        zl.ratio() > plain.ratio(),
        "{} vs {}",
        zl.ratio(),
        plain.ratio()
    );
    assert!(
        zl.aligned.rotation_ms() < 0.05,
        "{}",
        zl.aligned.rotation_ms()
    );
    // The same seed gives the same numbers.
    let again = track_efficiency(&d, Op::Read, 1.0, 400, 1);
    assert_eq!(again.aligned, plain.aligned);
    assert_eq!(again.unaligned, plain.unaligned);
}

#[test]
fn track_aligned_stripes_beat_unaligned_units_of_the_same_size() {
    let d = builtin_drive("atlas10k")
        .unwrap()
        .with_zero_latency(true)
        .unwrap();
    let track = stripe_bandwidth(&d, 4, false, StripeUnit::Track, Op::Read, 200, 3).unwrap();
    let fixed = stripe_bandwidth(&d, 4, false, StripeUnit::Sectors(334), Op::Read, 200, 3).unwrap();
    assert!(track.mb_s > fixed.mb_s * 1.1, "{track:?} {fixed:?}");
    let unaligned =
        stripe_bandwidth(&d, 4, false, StripeUnit::UnalignedTrack, Op::Read, 200, 3).unwrap();
    assert!(track.mb_s > unaligned.mb_s * 1.2, "{track:?} {unaligned:?}");
    assert!(stripe_bandwidth(&d, 2, true, StripeUnit::Track, Op::Read, 1, 3).is_err());
}
