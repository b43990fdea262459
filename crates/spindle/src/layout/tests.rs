use super::*;
use crate::drive::builtin_drive;
use std::collections::HashSet;

fn st() -> Drive {
    builtin_drive("st39133lwv").expect("built-in drive")
}

fn layout(drive: &Drive, ds: u32, dr: u32, dm: u32, placement: Placement) -> Layout {
    Layout::new(
        drive,
        &LayoutConfig {
            shape: Shape::SrMirror { ds, dr, dm },
            stripe_unit_bytes: 65536,
            placement,
            data_set_bytes: None,
            seed: 3,
        },
    )
    .map_err(|e| e.0)
    .unwrap()
}

#[test]
fn striping_deals_stripe_units_round_robin() {
    let d = st();
    let l = layout(&d, 4, 1, 1, Placement::TrackGroup);
    let mut out = vec![];
    // 64 KiB = 128 sectors: a 256-sector request from 100 touches columns 0, 1, 2.
    l.pieces(100, 256, &mut out);
    assert_eq!(
        out,
        vec![
            Piece {
                column: 0,
                offset: 100,
                sectors: 28
            },
            Piece {
                column: 1,
                offset: 0,
                sectors: 128
            },
            Piece {
                column: 2,
                offset: 0,
                sectors: 100
            },
        ]
    );
    // Pieces map back to where they start.
    let mut lba = 100;
    for p in &out {
        assert_eq!(l.logical_of(p), lba);
        lba += u64::from(p.sectors);
    }
    // Unit 4 is the second unit of column 0.
    out.clear();
    l.pieces(4 * 128 + 5, 1, &mut out);
    assert_eq!(
        out,
        vec![Piece {
            column: 0,
            offset: 133,
            sectors: 1
        }]
    );
    // One disk's worth of data over 4 disks: each holds a quarter, in its outer band.
    assert!(l.capacity_sectors() >= d.capacity_sectors());
    assert!(l.capacity_sectors() < d.capacity_sectors() + 4 * 128);
}

#[test]
fn mirror_sets_are_consecutive_disks() {
    let d = st();
    let l = layout(&d, 3, 1, 2, Placement::TrackGroup);
    assert_eq!(l.disks(), 6);
    assert_eq!(l.disks_of(0), 0..2);
    assert_eq!(l.disks_of(2), 4..6);
    assert_eq!(l.shape().describe(), "raid-10 3x1x2");
}

/// No two replicas of any data sectors share a physical sector, and each replica run stays
/// on its track: checked over the first groups of every placement.
#[test]
fn replicas_never_overlap() {
    let d = st();
    for placement in [Placement::Even, Placement::Random, Placement::TrackGroup] {
        for dr in [2, 3, 4] {
            let l = layout(&d, 2, dr, 1, placement);
            let band = l.band();
            let mut seen = HashSet::new();
            let mut off = 0u64;
            while off < 20_000 {
                let len = band.contiguous(off, 8) as u32;
                for k in 0..dr {
                    let r = band.replica(off, len, k);
                    for run in std::iter::once(r.first).chain(r.wrap) {
                        assert!(
                            d.geometry().run_on_track(run.lba) >= run.sectors,
                            "{placement:?} Dr={dr}: a run leaves its track"
                        );
                        for s in run.lba..run.lba + u64::from(run.sectors) {
                            assert!(seen.insert(s), "{placement:?} Dr={dr}: sector {s} twice");
                        }
                    }
                }
                off += u64::from(len);
            }
        }
    }
}

fn angle(d: &Drive, lba: u64) -> (i64, i64) {
    let (i, spt) = d.geometry().angle_index(d.geometry().lba_to_chs(lba));
    (i64::from(i), i64::from(spt))
}

/// Replica k starts k/Dr of a rotation after replica 0 (to the sector) for the even and
/// track-group placements.
#[test]
fn even_and_track_group_replicas_are_evenly_spaced() {
    let d = st();
    for placement in [Placement::Even, Placement::TrackGroup] {
        for dr in [2u32, 3, 5] {
            let l = layout(&d, 1, dr, 1, placement);
            for off in [0u64, 7, 100, 1_000_003, 3_000_000] {
                let (a0, spt) = angle(&d, l.band().replica(off, 1, 0).first.lba);
                for k in 1..dr {
                    let (ak, _) = angle(&d, l.band().replica(off, 1, k).first.lba);
                    let got = (ak - a0).rem_euclid(spt);
                    let want = i64::from(k) * spt / i64::from(dr);
                    assert!(
                        (got - want).abs() <= 1,
                        "{placement:?} Dr={dr} off={off} k={k}: {got} vs {want} of {spt}"
                    );
                }
            }
        }
    }
}

#[test]
fn too_many_track_group_replicas_are_refused_with_the_limit() {
    let d = st();
    // Track switch allowance 55 of 364 sectors (0.91 ms): six replicas are 0.97 ms apart,
    // seven 0.84 ms (the dissertation's limit was Dr <= 6).
    let cfg = |dr| LayoutConfig {
        shape: Shape::SrMirror { ds: 1, dr, dm: 1 },
        stripe_unit_bytes: 65536,
        placement: Placement::TrackGroup,
        data_set_bytes: Some(1 << 30),
        seed: 1,
    };
    assert!(Layout::new(&d, &cfg(6)).is_ok());
    let e = Layout::new(&d, &cfg(7)).map(|_| ()).unwrap_err().0;
    assert!(e.contains("at most Dr = 6"), "{e}");
    let e = Layout::new(&d, &cfg(9)).map(|_| ()).unwrap_err().0;
    assert!(e.contains("at most 8"), "{e}");
}

#[test]
fn a_data_set_larger_than_the_disks_is_refused() {
    let d = st();
    let e = Layout::new(
        &d,
        &LayoutConfig {
            shape: Shape::SrMirror {
                ds: 1,
                dr: 2,
                dm: 1,
            },
            stripe_unit_bytes: 65536,
            placement: Placement::Even,
            data_set_bytes: Some(d.geometry().capacity_bytes()),
            seed: 1,
        },
    );
    let Err(LayoutError(e)) = e else {
        panic!("a data set of a whole disk fit on a 1x2 SR-Array")
    };
    assert!(e.contains("does not fit"), "{e}");
}

#[test]
fn track_group_pieces_may_wrap_but_keep_their_length() {
    let d = st();
    let l = layout(&d, 2, 3, 1, Placement::TrackGroup);
    let mut wrapped = 0;
    for off in (0..50_000u64).step_by(8) {
        let len = l.band().contiguous(off, 8) as u32;
        for k in 0..3 {
            let r = l.band().replica(off, len, k);
            let total = r.first.sectors + r.wrap.map_or(0, |w| w.sectors);
            assert_eq!(total, len);
            wrapped += usize::from(r.wrap.is_some());
        }
    }
    assert!(wrapped > 0, "some rotated replicas wrap around their track");
}
