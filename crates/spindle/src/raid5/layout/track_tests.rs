//! Track-aligned parity layouts on the library's drives: no data or parity unit crosses a
//! track, every unit is whole cache blocks, and the mapping is a bijection.

use super::*;
use crate::drive::{builtin_drive, library::builtin_ids, Drive};
use crate::raid5::block_sectors;
use std::collections::HashSet;

const ROTATIONS: [ParityRotation; 5] = [
    ParityRotation::LeftSymmetric,
    ParityRotation::LeftAsymmetric,
    ParityRotation::RightSymmetric,
    ParityRotation::RightAsymmetric,
    ParityRotation::Dedicated,
];

fn aligned(d: &Drive, groups: u32, width: u32, data: Option<u64>, rot: usize) -> ParityLayout {
    let bs = block_sectors(d.geometry().sector_bytes());
    ParityLayout::new_track_aligned(groups, width, d, bs, data, ROTATIONS[rot % 5])
        .expect("a valid track-aligned layout")
}

/// Stripe `s`'s row (every unit of it, data and parity) lies in one track and is whole
/// cache blocks.
fn assert_row_in_a_track(d: &Drive, l: &ParityLayout, s: u64) {
    let geo = d.geometry();
    let bs = u64::from(block_sectors(geo.sector_bytes()));
    let (a, n) = (l.stripe_lba(s), u64::from(l.unit_of(s)));
    let (start, len) = geo.track_of(a).expect("spindle's own layout");
    assert!(
        n > 0 && a + n <= start + len,
        "{}: stripe {s} at {a}+{n} crosses the track {start}+{len}",
        d.id
    );
    assert!(
        a.is_multiple_of(bs) && n.is_multiple_of(bs),
        "{}: stripe {s} at {a}+{n} is not whole blocks",
        d.id
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    // Every library drive, up to 4 GB per disk from its outer edge (the two 24 TB drives'
    // whole disks would be millions of rows per case; the data set leaves room for the
    // partial blocks left out): a host request's pieces stay in
    // their units, which stay in one track, and map back.
    #[test]
    fn no_data_or_parity_unit_crosses_a_track(drive in 0usize..64, groups in 1u32..3, width in 3u32..7, rot in 0usize..5, frac in 0.0f64..1.0, sectors in 1u32..5000) {
        let ids: Vec<_> = builtin_ids().collect();
        let d = builtin_drive(ids[drive % ids.len()]).unwrap();
        let per_disk = d.capacity_sectors().min((4u64 << 30) / u64::from(d.geometry().sector_bytes()));
        let data = per_disk * 3 / 4 * u64::from(groups) * u64::from(width - 1);
        let l = aligned(&d, groups, width, Some(data), rot);
        let cap = l.capacity_sectors();
        proptest::prop_assert!(cap >= data);
        let lba = ((cap - 1) as f64 * frac) as u64;
        let sectors = u32::try_from(u64::from(sectors).min(cap - lba)).unwrap();
        let mut out = vec![];
        l.pieces(lba, sectors, &mut out);
        let mut at = lba;
        for p in &out {
            assert_row_in_a_track(&d, &l, p.stripe);
            proptest::prop_assert!(p.offset + p.sectors <= l.unit_of(p.stripe));
            proptest::prop_assert_eq!(l.logical(p.group, p.stripe, p.unit, p.offset), at);
            let dlba = l.stripe_lba(p.stripe) + u64::from(p.offset);
            proptest::prop_assert_eq!(l.row_of(dlba), Some((p.stripe, p.offset)));
            at += u64::from(p.sectors);
        }
        proptest::prop_assert_eq!(at, lba + u64::from(sectors));
    }
}

/// The validation paper's drives, whole disks: every row is in one track, rows follow
/// each other, and only the partial blocks at each track's ends are left out.
#[test]
fn the_paper_drives_whole_disks_are_rows_of_whole_blocks_of_every_track() {
    for id in ["atlas10kv", "cheetah15k4", "map3367"] {
        let d = builtin_drive(id).unwrap();
        let l = aligned(&d, 1, 5, None, 0);
        let geo = d.geometry();
        let (mut prev_track, mut held) = (None, 0u64);
        for s in 0..l.stripes() {
            assert_row_in_a_track(&d, &l, s);
            let track = geo.track_of(l.stripe_lba(s)).unwrap();
            assert_ne!(prev_track, Some(track), "{id}: two rows in one track");
            prev_track = Some(track);
            // No whole block of the track is left out.
            let (start, len) = track;
            let whole = (start + len) / 8 * 8 - start.next_multiple_of(8);
            assert_eq!(u64::from(l.unit_of(s)), whole, "{id}: stripe {s}");
            held += whole;
        }
        assert_eq!(l.capacity_sectors(), 4 * held);
        // The last row is on the disk's last track holding a whole block.
        let (last, len) = geo.track_of(d.capacity_sectors() - 1).unwrap();
        assert!(l.disk_sectors_used() <= last + len);
        assert!(
            l.disk_sectors_used() + 16 > last + len,
            "{id}: rows end early"
        );
        // Units vary by zone: the outer track is the largest.
        assert!(l.unit_of(0) > l.unit_of(l.stripes() - 1), "{id}");
    }
}

/// Every array sector has one place, no two share one, none is a parity sector, and the
/// rows' data and parity sectors are all used.
#[test]
fn the_mapping_is_a_bijection_over_the_capacity() {
    for (id, groups, width, rot) in [
        ("atlas10kv", 2, 4, 0),
        ("map3367", 1, 5, 1),
        ("cheetah15k4", 3, 3, 2),
        ("hp97560", 2, 5, 3),
        ("t7k250", 1, 4, 4),
    ] {
        let d = builtin_drive(id).unwrap();
        let l = aligned(&d, groups, width, Some(150_000), rot);
        let mut data = HashSet::new();
        let mut out = vec![];
        for lba in 0..l.capacity_sectors() {
            out.clear();
            l.pieces(lba, 1, &mut out);
            let p = out[0];
            let place = (
                l.data_disk(p.group, p.stripe, p.unit),
                l.stripe_lba(p.stripe) + u64::from(p.offset),
            );
            assert!(data.insert(place), "{id}: {place:?} holds two sectors");
        }
        let mut rows = 0u64;
        for g in 0..groups {
            for s in 0..l.stripes() {
                let a = l.stripe_lba(s);
                let p = l.parity_disk(g, s);
                for o in a..a + u64::from(l.unit_of(s)) {
                    assert!(!data.contains(&(p, o)), "{id}: data on parity {p}:{o}");
                }
                rows += u64::from(l.unit_of(s));
            }
        }
        // Data units fill every row but the parity unit.
        assert_eq!(data.len() as u64, rows * u64::from(width - 1), "{id}");
    }
}

#[test]
fn a_data_set_beyond_the_disks_or_a_narrow_group_is_refused() {
    let d = builtin_drive("map3367").unwrap();
    let e = ParityLayout::new_track_aligned(
        1,
        5,
        &d,
        8,
        Some(d.capacity_sectors() * 4),
        ParityRotation::default(),
    )
    .unwrap_err();
    assert!(e.contains("exceeds"), "{e}");
    let e =
        ParityLayout::new_track_aligned(1, 2, &d, 8, None, ParityRotation::default()).unwrap_err();
    assert!(e.contains("at least 3 disks"), "{e}");
}

/// Rows of whole tracks (blocks of one sector) are not whole 4 KiB blocks on a drive whose
/// tracks are not: the caches refuse them.
#[test]
fn only_rows_of_whole_blocks_take_the_caches() {
    let d = builtin_drive("atlas10kv").unwrap();
    let rot = ParityRotation::default();
    let tracks = ParityLayout::new_track_aligned(1, 5, &d, 1, Some(100_000), rot).unwrap();
    assert!(!tracks.whole_blocks(8));
    assert!(aligned(&d, 1, 5, Some(100_000), 0).whole_blocks(8));
}
