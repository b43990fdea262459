//! The index against brute force (every free extent's `position_time`), its bookkeeping
//! against a naive model, the paper's fig. 1(a) claim, and an ignored timing run.

use super::*;
use crate::drive::{builtin_drive, parse_drive};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

fn st() -> Drive {
    builtin_drive("st39133lwv").unwrap()
}

/// A small plain drive with the awkward parts: two zones, skews, per-track and per-zone
/// spares, slips (tracks split in two), a negative write settle and a command overhead.
fn awkward() -> Drive {
    parse_drive(
        r#"
id = "awkward"
name = "awkward test drive"
rpm = 7200.0
surfaces = 3
cylinders = 40
head_switch_ms = 0.4
write_settle_ms = -0.1
overhead_read_ms = 0.3
overhead_write_ms = 0.5
slips = [3, 41, 1000, 2500, 2501, 4000]
zones = [
  { first_cylinder = 0, last_cylinder = 19, sectors_per_track = 50, track_skew = 7.0, cylinder_skew = 13.0, spare_sectors_per_track = 2, spare_sectors_per_zone = 9 },
  { first_cylinder = 20, last_cylinder = 39, sectors_per_track = 37, track_skew = 0.25, cylinder_skew = 0.5, skew_unit = "revolutions" },
]
[seek]
kind = "linear"
full_ms = 6.0
[cache]
segments = 1
segment_sectors = 64
read_hit_after_read_ms = 0.0
read_hit_after_write_ms = 0.0
read_miss_after_read_ms = 0.0
read_miss_after_write_ms = 0.0
write_hit_after_read_ms = 0.0
write_hit_after_write_ms = 0.0
write_miss_after_read_ms = 0.123
write_miss_after_write_ms = 0.0
"#,
    )
    .unwrap()
}

/// A drive where ties are everywhere: no skews, overheads or head switch, 100 sectors of
/// 0.1 ms each per revolution, and a seek of exactly 0.1 ms per cylinder.
fn lattice() -> Drive {
    parse_drive(
        r#"
id = "lattice"
name = "lattice test drive"
rpm = 6000.0
surfaces = 3
cylinders = 101
head_switch_ms = 0.0
overhead_read_ms = 0.0
overhead_write_ms = 0.0
zones = [{ first_cylinder = 0, last_cylinder = 100, sectors_per_track = 100, track_skew = 0.0, cylinder_skew = 0.0 }]
[seek]
kind = "linear"
full_ms = 10.0
"#,
    )
    .unwrap()
}

fn random_head(rng: &mut Pcg64Mcg, d: &Drive, fs: &FreeSpace) -> HeadState {
    let (lo, hi) = fs.cylinders();
    let cylinder = if rng.gen_bool(0.7) {
        rng.gen_range(lo.saturating_sub(30)..=(hi + 30).min(d.geometry().cylinders() - 1))
    } else {
        rng.gen_range(0..d.geometry().cylinders())
    };
    HeadState {
        cylinder,
        head: rng.gen_range(0..d.geometry().surfaces()),
        phase_ns: rng.gen_range(0..d.period().0),
    }
}

/// Free extents' starts, for brute force over a sparse region.
fn free_starts(fs: &FreeSpace) -> Vec<BlockId> {
    (0..fs.blocks()).filter(|&b| fs.is_free(b)).collect()
}

const SWEEPS: [Sweep; 3] = [Sweep::Any, Sweep::Up, Sweep::Down];

/// The definition, for each of [`SWEEPS`]: the minimum of `position_time` over every free
/// extent in the sweep, ties to the lowest id. (Under a limit the answer is the same if its
/// time is below the limit, and none otherwise.)
fn brute(
    fs: &FreeSpace,
    free: &[BlockId],
    d: &Drive,
    now: Nanos,
    head: &HeadState,
    len: u32,
) -> [Option<(BlockId, Span)>; 3] {
    let mut best: [Option<(Span, BlockId)>; 3] = [None; 3];
    for &b in free {
        if !fs.contiguous(b, len) || !(b..b + len).all(|x| fs.is_free(x)) {
            continue;
        }
        let c = fs.cylinder(b);
        let t = d.position_time(now, head, Op::Write, &d.locate(fs.lba(b)));
        for (i, sweep) in SWEEPS.into_iter().enumerate() {
            let inside = match sweep {
                Sweep::Any => true,
                Sweep::Up => c >= head.cylinder,
                Sweep::Down => c <= head.cylinder,
            };
            if inside && best[i].is_none_or(|x| (t, b) < x) {
                best[i] = Some((t, b));
            }
        }
    }
    best.map(|x| x.map(|(t, b)| (b, t)))
}

/// Leaves about `used` of the blocks allocated (exactly all but one for `used == 1.0`).
fn occupy(fs: &mut FreeSpace, rng: &mut Pcg64Mcg, used: f64) {
    for b in 0..fs.blocks() {
        if fs.is_free(b) && (used >= 1.0 || rng.gen_bool(used)) {
            fs.allocate(b, 1);
        }
    }
    if used >= 1.0 {
        let b = rng.gen_range(0..fs.blocks());
        fs.release(b, 1);
    }
}

/// Random queries at each occupancy, every sweep, `closest` and `closest_within` against
/// brute force.
fn check_against_brute(
    d: &Drive,
    make: impl Fn() -> FreeSpace,
    levels: &[f64],
    queries: usize,
    max_len: u32,
    seed: u64,
) {
    check_against_brute_quantised(d, make, levels, queries, max_len, seed, 1);
}

/// As [`check_against_brute`], with `now` and the phase multiples of `quantum` ns.
fn check_against_brute_quantised(
    d: &Drive,
    make: impl Fn() -> FreeSpace,
    levels: &[f64],
    queries: usize,
    max_len: u32,
    seed: u64,
    quantum: u64,
) {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut found = 0;
    for &used in levels {
        let mut fs = make();
        occupy(&mut fs, &mut rng, used);
        let free = free_starts(&fs);
        for _ in 0..queries {
            let mut head = random_head(&mut rng, d, &fs);
            let mut now = Nanos(rng.gen_range(0..1_000_000_000_000));
            if quantum > 1 {
                // On a sector boundary: rotational waits tie across tracks.
                now.0 -= now.0 % quantum;
                head.phase_ns -= head.phase_ns % quantum;
            }
            let len = if rng.gen_bool(0.9) {
                rng.gen_range(1..=4)
            } else {
                rng.gen_range(1..=max_len)
            };
            let wants = brute(&fs, &free, d, now, &head, len);
            for (sweep, want) in SWEEPS.into_iter().zip(wants) {
                let got = fs.closest(d, now, &head, len, sweep);
                assert_eq!(
                    got, want,
                    "used {used}, {head:?}, now {now:?}, len {len}, {sweep:?}"
                );
                found += usize::from(got.is_some());
                // Limits around the answer (strict: the answer itself is excluded) and random.
                let mut limits = vec![Span(rng.gen_range(0..2 * d.period().0 + 5_000_000))];
                if let Some((_, t)) = want {
                    limits.extend([t, t + Span(1), Span(t.0.saturating_sub(1))]);
                }
                for limit in limits {
                    let want = want.filter(|&(_, t)| t < limit);
                    let got = fs.closest_within(d, now, &head, len, sweep, limit);
                    assert_eq!(
                        got, want,
                        "used {used}, {head:?}, now {now:?}, len {len}, {sweep:?}, limit {limit:?}"
                    );
                }
            }
        }
    }
    assert!(
        found > 0,
        "every query found nothing: the test tests nothing"
    );
}

const LEVELS: [f64; 8] = [0.0, 0.01, 0.5, 0.8, 0.99, 0.9999, 1.0, 0.3];

#[test]
fn closest_equals_brute_force_on_a_st39133lwv_band() {
    let d = st();
    // A band of 1/32 of the disk in its middle (Ds = 32): ~69k blocks.
    let cap = d.capacity_sectors();
    let make = || FreeSpace::new(&d, cap / 2, cap / 32, 8).unwrap();
    check_against_brute(&d, make, &LEVELS, 60, 12, 1);
}

#[test]
fn closest_equals_brute_force_on_the_whole_st39133lwv_when_sparse() {
    // Nearly full whole disk: the search must jump over thousands of full cylinders.
    let d = st();
    let make = || FreeSpace::new(&d, 0, d.capacity_sectors(), 8).unwrap();
    check_against_brute(&d, make, &[1.0, 0.99999, 0.9999], 40, 4, 2);
}

#[test]
fn closest_breaks_exact_ties_by_lowest_id() {
    // Blocks on neighbouring cylinders and surfaces tie to the nanosecond here: the search
    // must not stop at, or skip, a cylinder whose bound equals the best time.
    let d = lattice();
    for bs in [1, 5, 7] {
        let make = || FreeSpace::new(&d, 0, d.capacity_sectors(), bs).unwrap();
        check_against_brute_quantised(&d, make, &LEVELS, 30, 9, 40 + u64::from(bs), 100_000);
    }
    // Directly: own cylinder full, equal blocks one cylinder up and down; arrival exactly
    // at their sector. The lower cylinder holds the lower id.
    let mut fs = FreeSpace::new(&d, 0, d.capacity_sectors(), 1).unwrap();
    for b in 0..fs.blocks() {
        fs.allocate(b, 1);
    }
    let at = |c: u64, sector: u64| fs.block_at((c * 3 + 1) * 100 + sector).unwrap();
    let (down, up) = (at(49, 1), at(51, 1));
    fs.release(up, 1);
    fs.release(down, 1);
    let head = HeadState {
        cylinder: 50,
        head: 1,
        phase_ns: 0,
    };
    // A one-cylinder seek is 0.1 ms, one sector: sector 1 arrives just as the arm settles.
    let got = fs.closest(&d, Nanos(0), &head, 1, Sweep::Any);
    assert_eq!(got, Some((down, Span(100_000))));
    assert_eq!(
        fs.closest(&d, Nanos(0), &head, 1, Sweep::Up),
        Some((up, Span(100_000)))
    );
}

#[test]
fn closest_equals_brute_force_on_awkward_geometry() {
    let d = awkward();
    for (start, bs) in [(0, 1), (0, 8), (17, 4), (1234, 3)] {
        let make = || FreeSpace::new(&d, start, d.capacity_sectors() - start, bs).unwrap();
        check_against_brute(&d, make, &LEVELS, 20, 20, 3 + start);
    }
}

#[test]
fn closest_equals_brute_force_with_many_blocks_per_track() {
    // 1302 sectors per track as 1-sector blocks: 21 words per track, extents cross words.
    let d = builtin_drive("t7k250").unwrap();
    let make = || FreeSpace::new(&d, 5_000_000, 120 * 1302, 1).unwrap();
    check_against_brute(&d, make, &[0.0, 0.5, 0.9, 0.999, 1.0], 30, 140, 4);
    // A 4Kn drive, 1-sector (4 KB) blocks, ~590 per track.
    let d = builtin_drive("exos_x24").unwrap();
    let make = || FreeSpace::new(&d, 3_000_000_000, 200 * 591, 1).unwrap();
    check_against_brute(&d, make, &[0.0, 0.5, 0.95, 1.0], 30, 70, 5);
}

#[test]
fn closest_equals_brute_force_on_disksim_layouts() {
    // DiskSim layouts: fixed-point angles, sparing, serpentine orders.
    for id in ["cheetah9lp", "atlas10k", "hp_c2247a", "dec_rz26"] {
        let d = builtin_drive(id).unwrap();
        let cap = d.capacity_sectors();
        let make = || FreeSpace::new(&d, cap / 3, cap / 100, 8).unwrap();
        check_against_brute(&d, make, &[0.0, 0.5, 0.9, 1.0], 12, 6, 6);
    }
}

#[test]
fn disksim_segments_follow_the_drives_angles() {
    for id in [
        "cheetah9lp",
        "atlas10k",
        "hp_c2247a",
        "hp_c2490a",
        "dec_rz26",
        "hp97560",
        "ibm18es",
    ] {
        let d = builtin_drive(id).unwrap();
        let fs = FreeSpace::new(&d, 0, d.capacity_sectors().min(400_000), 8).unwrap();
        for s in fs.segs.iter() {
            for j in 0..s.blocks {
                let lba = s.first_lba + u64::from(j) * 8;
                let (idx, spt) = d.geometry().angle_index(d.geometry().lba_to_chs(lba));
                assert_eq!(
                    (idx, spt),
                    ((s.base + j * 8) % s.spt, s.spt),
                    "{id} lba {lba}"
                );
            }
        }
    }
}

#[test]
fn empty_full_and_too_long_give_none() {
    let d = awkward();
    let mut fs = FreeSpace::new(&d, 0, d.capacity_sectors(), 8).unwrap();
    let head = HeadState {
        cylinder: 5,
        head: 1,
        phase_ns: 0,
    };
    // No track holds 7 blocks of 8 sectors (at most 48 data sectors a track).
    assert_eq!(fs.closest(&d, Nanos(0), &head, 7, Sweep::Any), None);
    assert!(fs.closest(&d, Nanos(0), &head, 6, Sweep::Any).is_some());
    assert_eq!(
        fs.closest_within(&d, Nanos(0), &head, 1, Sweep::Any, Span::ZERO),
        None
    );
    for b in 0..fs.blocks() {
        fs.allocate(b, 1);
    }
    assert_eq!(fs.free_blocks(), 0);
    assert_eq!(fs.free_cylinder_range(), None);
    for sweep in [Sweep::Any, Sweep::Up, Sweep::Down] {
        assert_eq!(fs.closest(&d, Nanos(0), &head, 1, sweep), None);
    }
    // Head beyond the region in the sweep's direction.
    fs.release(3, 1);
    let c = fs.cylinder(3);
    let above = HeadState {
        cylinder: c + 1,
        ..head
    };
    assert_eq!(fs.closest(&d, Nanos(0), &above, 1, Sweep::Up), None);
    assert_eq!(
        fs.closest(&d, Nanos(0), &above, 1, Sweep::Down).unwrap().0,
        3
    );
}

#[test]
fn empty_region_answers_within_one_block_of_rotation() {
    // Empty region, 8-sector blocks: the closest block is on the head's own track, less
    // than one block's time of rotation away.
    let d = st();
    let fs = FreeSpace::new(&d, 0, d.capacity_sectors(), 8).unwrap();
    let mut rng = Pcg64Mcg::seed_from_u64(9);
    for _ in 0..200 {
        let head = random_head(&mut rng, &d, &fs);
        let now = Nanos(rng.gen_range(0..1_000_000_000_000));
        let (b, t) = fs.closest(&d, now, &head, 1, Sweep::Any).unwrap();
        let before = d.overhead(Op::Write) + d.command_overhead(Op::Write);
        let spt = d.geometry().sectors_per_track(head.cylinder);
        // A block starts every 8 sectors, plus the track's leftover gap.
        let gap = d.period().0 * u64::from(8 + spt % 8) / u64::from(spt) + 1;
        assert!(t <= before + Span(gap), "{t:?} > {before:?} + {gap} ns");
        let _ = b;
    }
}

#[test]
fn block_at_and_lba_round_trip_and_blocks_stay_on_a_track() {
    for (d, bs) in [
        (st(), 8),
        (awkward(), 8),
        (awkward(), 3),
        (builtin_drive("cheetah9lp").unwrap(), 8),
    ] {
        let cap = d.capacity_sectors();
        let start = cap / 7 + 5;
        let fs = FreeSpace::new(&d, start, (cap - start).min(2_000_000), bs).unwrap();
        let mut prev = None;
        for b in 0..fs.blocks() {
            let lba = fs.lba(b);
            assert!(lba >= start && prev.is_none_or(|p| lba >= p + u64::from(bs)));
            prev = Some(lba);
            assert_eq!(fs.block_at(lba), Some(b));
            if bs > 1 {
                assert_eq!(fs.block_at(lba + 1), None);
            }
            assert!(
                d.geometry().run_on_track(lba) >= bs,
                "block {b} straddles a track"
            );
            let chs = d.locate(lba).chs;
            assert_eq!((chs.cylinder, chs.head), (fs.cylinder(b), fs.head(b)));
            if fs.contiguous(b, 2) {
                assert_eq!(fs.lba(b + 1), lba + u64::from(bs));
                assert!(d.geometry().run_on_track(lba) >= 2 * bs);
            }
        }
        assert_eq!(fs.block_at(start.saturating_sub(1)), None);
        assert!(fs.contiguous(0, 1));
        assert!(!fs.contiguous(0, 0));
        assert!(!fs.contiguous(fs.blocks() - 1, 2));
    }
}

#[test]
fn whole_st39133lwv_block_count_is_every_tracks_whole_blocks() {
    let d = st();
    let fs = FreeSpace::new(&d, 0, d.capacity_sectors(), 8).unwrap();
    let g = d.geometry();
    let want: u64 = (0..g.zone_count())
        .map(|z| {
            let (a, b, spt) = g.zone_bounds(z);
            u64::from(b - a + 1) * u64::from(g.surfaces()) * u64::from(spt / 8)
        })
        .sum();
    assert_eq!(u64::from(fs.blocks()), want);
    assert_eq!(fs.free_blocks(), fs.blocks());
    assert_eq!(fs.cylinders(), (0, g.cylinders() - 1));
    assert_eq!(fs.free_cylinder_range(), Some((0, g.cylinders() - 1)));
    // One segment per track: no slips, no DiskSim layout.
    assert_eq!(
        fs.segs.len() as u64,
        u64::from(g.cylinders()) * u64::from(g.surfaces())
    );
}

#[test]
fn allocate_and_release_keep_the_counts_against_a_model() {
    let d = awkward();
    let mut fs = FreeSpace::new(&d, 0, d.capacity_sectors(), 4).unwrap();
    let n = fs.blocks();
    let mut model = vec![true; n as usize];
    let mut rng = Pcg64Mcg::seed_from_u64(11);
    for step in 0..20_000 {
        let b = rng.gen_range(0..n);
        let len = rng.gen_range(1..=4u32).min(n - b);
        let range = b as usize..(b + len) as usize;
        if rng.gen_bool(0.55) {
            if fs.contiguous(b, len) && model[range.clone()].iter().all(|&f| f) {
                fs.allocate(b, len);
                model[range].fill(false);
            }
        } else if model[range.clone()].iter().all(|&f| !f) {
            fs.release(b, len);
            model[range].fill(true);
        }
        if step % 97 == 0 || fs.free_blocks() < 5 {
            let free = model.iter().filter(|&&f| f).count() as u32;
            assert_eq!(fs.free_blocks(), free);
            for (i, &f) in model.iter().enumerate() {
                assert_eq!(fs.is_free(i as u32), f, "block {i}");
            }
            let cyls: Vec<u32> = (0..n)
                .filter(|&b| model[b as usize])
                .map(|b| fs.cylinder(b))
                .collect();
            let want = cyls
                .iter()
                .min()
                .map(|&lo| (lo, *cyls.iter().max().unwrap()));
            assert_eq!(fs.free_cylinder_range(), want);
            for (ci, &cf) in fs.cyl_free.iter().enumerate() {
                let c = fs.cyl_lo + ci as u32;
                assert_eq!(cf, cyls.iter().filter(|&&x| x == c).count() as u32);
            }
            for (si, s) in fs.segs.iter().enumerate() {
                let free = fs.seg_free(si);
                let f = (s.first_block..s.first_block + s.blocks)
                    .filter(|&b| model[b as usize])
                    .count();
                assert_eq!(free as usize, f);
            }
        }
    }
}

#[test]
#[should_panic(expected = "is not free")]
fn allocating_a_used_block_panics() {
    let d = awkward();
    let mut fs = FreeSpace::new(&d, 0, 1000, 1).unwrap();
    fs.allocate(5, 1);
    fs.allocate(4, 2);
}

#[test]
#[should_panic(expected = "not consecutive on one track")]
fn allocating_across_tracks_panics() {
    let d = awkward();
    let mut fs = FreeSpace::new(&d, 0, 1000, 8).unwrap();
    // 48 data sectors a track (3 is slipped on the first): 5 blocks on track 0.
    let b = (0..fs.blocks()).find(|&b| !fs.contiguous(b, 2)).unwrap();
    fs.allocate(b, 2);
}

#[test]
#[should_panic(expected = "already free")]
fn releasing_a_free_block_panics() {
    let d = awkward();
    let mut fs = FreeSpace::new(&d, 0, 1000, 1).unwrap();
    fs.allocate(5, 1);
    fs.release(4, 2);
}

#[test]
fn new_rejects_bad_regions_naming_the_numbers() {
    let d = awkward();
    let cap = d.capacity_sectors();
    let err = FreeSpace::new(&d, 0, cap + 1, 8).unwrap_err();
    assert!(
        err.contains(&(cap + 1).to_string()) && err.contains(&cap.to_string()),
        "{err}"
    );
    let err = FreeSpace::new(&d, u64::MAX, 2, 8).unwrap_err();
    assert!(err.contains("exceeds"), "{err}");
    let err = FreeSpace::new(&d, 0, 100, 0).unwrap_err();
    assert!(err.contains("block_sectors"), "{err}");
    let err = FreeSpace::new(&d, 10, 7, 8).unwrap_err();
    assert!(
        err.contains("no block of 8 sectors") && err.contains("lba 10"),
        "{err}"
    );
    let err = FreeSpace::new(&d, 0, cap, 64).unwrap_err();
    assert!(err.contains("no block"), "{err}");
    let err = FreeSpace::new(&d, 0, 0, 1).unwrap_err();
    assert!(err.contains("no block"), "{err}");
    // More blocks than a BlockId counts: the 24 TB drive in 1-sector blocks.
    let big = builtin_drive("exos_x24").unwrap();
    let err = FreeSpace::new(&big, 0, big.capacity_sectors(), 1).unwrap_err();
    assert!(err.contains("4294967295"), "{err}");
}

#[test]
fn level_bits_find_next_and_previous_like_a_scan() {
    let mut rng = Pcg64Mcg::seed_from_u64(12);
    for n in [1usize, 63, 64, 65, 4097, 300_000] {
        let mut lb = LevelBits::new(n);
        let mut model = vec![false; n];
        for round in 0..2_000 {
            let i = rng.gen_range(0..n);
            // Mostly sparse, sometimes dense.
            let on = rng.gen_bool(if round < 1_000 { 0.2 } else { 0.8 });
            if on {
                lb.set(i);
            } else {
                lb.clear(i);
            }
            model[i] = on;
            let q = rng.gen_range(0..n);
            assert_eq!(lb.next(q), (q..n).find(|&k| model[k]), "n {n} next {q}");
            assert_eq!(
                lb.prev(q),
                (0..=q).rev().find(|&k| model[k]),
                "n {n} prev {q}"
            );
        }
    }
}

/// Mean rotational part (after overhead and seek) of the closest free block's positioning
/// over random heads, at random utilisation `used` of the whole ST39133LWV, in ms: (any
/// track, its mean seek, the head's own track only).
fn mean_rotation_at(used: f64, seed: u64) -> (f64, f64, f64) {
    let d = st();
    let g = d.geometry();
    let mut fs = FreeSpace::new(&d, 0, d.capacity_sectors(), 8).unwrap();
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    occupy(&mut fs, &mut rng, used);
    let before = d.overhead(Op::Write) + d.command_overhead(Op::Write);
    let (mut rot, mut seek, mut own, n) = (0u64, 0u64, 0u64, 2_000);
    for _ in 0..n {
        let head = HeadState {
            cylinder: rng.gen_range(0..g.cylinders()),
            head: rng.gen_range(0..g.surfaces()),
            phase_ns: rng.gen_range(0..d.period().0),
        };
        let now = Nanos(rng.gen_range(0..1_000_000_000_000));
        let (b, t) = fs.closest(&d, now, &head, 1, Sweep::Any).unwrap();
        let s = d.seek_span(head.cylinder, head.head, d.locate(fs.lba(b)).chs, Op::Write);
        rot += (t - before - s).0;
        seek += s.0;
        // The head's own track alone: what a write costs without moving the arm.
        let first = g
            .chs_to_lba(Chs {
                cylinder: head.cylinder,
                head: head.head,
                sector: 0,
            })
            .unwrap();
        let b0 = fs.block_at(first).unwrap();
        let own_best = (b0..fs.blocks())
            .take_while(|&b| (fs.cylinder(b), fs.head(b)) == (head.cylinder, head.head))
            .filter(|&b| fs.is_free(b))
            .map(|b| d.position_time(now, &head, Op::Write, &d.locate(fs.lba(b))) - before)
            .min()
            .unwrap_or(d.period());
        own += own_best.0;
    }
    let ms = |x: u64| x as f64 / f64::from(n) / 1e6;
    (ms(rot), ms(seek), ms(own))
}

#[test]
fn paper_fig1a_eager_write_rotation_is_well_below_a_millisecond() {
    // EW-Array 2.1: "Even at a relatively high disk utilization of 80% and a disk block
    // size of 4 KB, this latency is well below 1 ms and can be made even lower with lower
    // disk utilization" (fig. 1(a), ST39133LWV, Dm = Ds = 1).
    let (rot80, seek80, own80) = mean_rotation_at(0.8, 21);
    let (rot50, seek50, own50) = mean_rotation_at(0.5, 22);
    println!(
        "80 %: rotation {rot80:.4} ms, seek {seek80:.4} ms, own track {own80:.4} ms; \
         50 %: rotation {rot50:.4} ms, seek {seek50:.4} ms, own track {own50:.4} ms"
    );
    assert!(rot80 < 1.0, "mean rotation at 80 % is {rot80:.3} ms");
    assert!(
        rot50 < rot80,
        "50 % ({rot50:.4} ms) not below 80 % ({rot80:.4} ms)"
    );
    // Even confined to the head's own track (about 8 free blocks of 40 at 80 %).
    assert!(own80 < 1.0, "own-track rotation at 80 % is {own80:.3} ms");
    assert!(
        own50 < own80,
        "own track: 50 % ({own50:.4} ms) not below 80 % ({own80:.4} ms)"
    );
    // The search may use other tracks, so it never does worse than the own track.
    assert!(rot80 + seek80 <= own80 && rot50 + seek50 <= own50);
}

/// `cargo test -p spindle --release --lib ew::free_space::tests::timing -- --ignored --nocapture`
#[test]
#[ignore = "timing run: prints ns per closest() call"]
fn timing() {
    let levels = [
        ("1 %", 0.01),
        ("50 %", 0.5),
        ("80 %", 0.8),
        ("99.99 %", 0.9999),
        ("all but one", 1.0),
    ];
    let d = st();
    time_closest(
        &d,
        "st39133lwv whole disk",
        0,
        d.capacity_sectors(),
        8,
        &levels,
    );
    // A modern drive: a flat seek curve after a ~1 ms settle, 4 surfaces, 1302-632 sectors a
    // track. A band of 1/8 of the disk (Ds = 8) in 4 KB blocks.
    let d = builtin_drive("t7k250").unwrap();
    let cap = d.capacity_sectors();
    time_closest(&d, "t7k250 1/8 band", cap / 2, cap / 8, 8, &levels);
}

#[allow(clippy::disallowed_methods)] // Instant::now: a timing harness reads the clock
fn time_closest(d: &Drive, what: &str, start: u64, sectors: u64, bs: u32, levels: &[(&str, f64)]) {
    for &(label, used) in levels {
        let mut fs = FreeSpace::new(d, start, sectors, bs).unwrap();
        let mut rng = Pcg64Mcg::seed_from_u64(31);
        occupy(&mut fs, &mut rng, used);
        let queries: Vec<(HeadState, Nanos)> = (0..20_000)
            .map(|_| {
                let head = random_head(&mut rng, d, &fs);
                (head, Nanos(rng.gen_range(0..1_000_000_000_000)))
            })
            .collect();
        for (sweep, len) in [(Sweep::Any, 1), (Sweep::Up, 1), (Sweep::Any, 4)] {
            let start = std::time::Instant::now();
            let mut sum = 0u64;
            for (head, now) in &queries {
                if let Some((b, t)) = fs.closest(d, *now, head, len, sweep) {
                    sum = sum.wrapping_add(u64::from(b) ^ t.0);
                }
            }
            let ns = start.elapsed().as_nanos() as f64 / queries.len() as f64;
            println!(
                "{what}, {label} used ({} free of {}), {sweep:?} len {len}: {ns:.0} ns/call (checksum {sum})",
                fs.free_blocks(),
                fs.blocks()
            );
        }
    }
}

#[test]
fn allocate_sorted_is_allocate_of_each_block() {
    let d = awkward();
    let base = FreeSpace::new(&d, 0, d.capacity_sectors(), 2).unwrap();
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let chosen: Vec<BlockId> = (0..base.blocks()).filter(|_| rng.gen_bool(0.6)).collect();
    let (mut one, mut bulk) = (base.clone(), base.clone());
    for &b in &chosen {
        one.allocate(b, 1);
    }
    bulk.allocate_sorted(chosen.iter().map(|&b| (b, 1)));
    assert_eq!(one.free_blocks(), bulk.free_blocks());
    assert_eq!(one.bits, bulk.bits);
    assert_eq!(one.cyl_free, bulk.cyl_free);
    assert_eq!(one.free_cylinder_range(), bulk.free_cylinder_range());
    let head = HeadState {
        cylinder: 3,
        head: 1,
        phase_ns: 1234,
    };
    for t in [0u64, 1_000_000, 7_777_777] {
        for sweep in [Sweep::Any, Sweep::Up, Sweep::Down] {
            assert_eq!(
                one.closest(&d, Nanos(t), &head, 1, sweep),
                bulk.closest(&d, Nanos(t), &head, 1, sweep)
            );
        }
    }
}
