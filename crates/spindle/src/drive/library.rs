//! The built-in drive library: the drive files of `drives/`, compiled in.
//!
//! Each entry is `(id, file text)`; the text is a [`super::DriveSpec`] in TOML, parsed and
//! validated by the caller like any user-supplied drive file. The ids are lowercase and equal
//! the file's `id` field and its file name (`drives/<id>.toml`).
//!
//! Every drive file cites a source for every value in `[provenance]` (dotted field name →
//! text) and gives the full citation for each key in `[sources]`. A provenance text starts with
//! its citation: one or more `KEY` or `KEY:detail` items joined by `+` and ended by whitespace
//! (`"DSV:cheetah9LP.model \"Head switch time = 0.03\" (measured)"`,
//! `"HECIOS+TH99-97560P: 19 data heads"`); an estimate starts with `estimate:` and lists its keys
//! in square brackets at the end (`"estimate: 10 platters x 2 surfaces [BF-X24]"`). A file with
//! any estimate sets `estimated = true`. See `drives/README.md` for the table of drives and how to
//! add one.
//!
//! This module does no I/O: the files are embedded with `include_str!`.

/// `(id, drive file text)` for every built-in drive, DiskSim-validated drives first.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "st39133lwv",
        include_str!("../../../../drives/st39133lwv.toml"),
    ),
    ("hp97560", include_str!("../../../../drives/hp97560.toml")),
    ("ibm18es", include_str!("../../../../drives/ibm18es.toml")),
    (
        "cheetah9lp",
        include_str!("../../../../drives/cheetah9lp.toml"),
    ),
    ("atlas10k", include_str!("../../../../drives/atlas10k.toml")),
    (
        "hp_c2247a",
        include_str!("../../../../drives/hp_c2247a.toml"),
    ),
    (
        "hp_c2490a",
        include_str!("../../../../drives/hp_c2490a.toml"),
    ),
    ("dec_rz26", include_str!("../../../../drives/dec_rz26.toml")),
    ("ibm36z15", include_str!("../../../../drives/ibm36z15.toml")),
    ("t7k250", include_str!("../../../../drives/t7k250.toml")),
    ("exos_x24", include_str!("../../../../drives/exos_x24.toml")),
    ("hc580", include_str!("../../../../drives/hc580.toml")),
    (
        "atlas10kv",
        include_str!("../../../../drives/atlas10kv.toml"),
    ),
    (
        "cheetah15k4",
        include_str!("../../../../drives/cheetah15k4.toml"),
    ),
    ("map3367", include_str!("../../../../drives/map3367.toml")),
];

/// The drive file text of a built-in drive, or `None` for an unknown id. Ids are lowercase.
pub fn builtin_spec(id: &str) -> Option<&'static str> {
    BUILTIN
        .iter()
        .find(|(k, _)| *k == id)
        .map(|(_, text)| *text)
}

/// The ids of the built-in drives, in library order.
pub fn builtin_ids() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|(k, _)| *k)
}

#[cfg(test)]
mod tests {
    use super::super::{DriveSpec, SeekSpec};
    use super::*;
    use std::collections::BTreeSet;

    /// Scalar fields that must carry a provenance entry in every drive file.
    const REQUIRED: &[&str] = &[
        "rpm",
        "surfaces",
        "cylinders",
        "zones",
        "seek",
        "head_switch_ms",
        "write_settle_ms",
        "overhead_read_ms",
        "overhead_write_ms",
    ];

    fn parse(id: &str, text: &str) -> DriveSpec {
        match toml::from_str::<DriveSpec>(text) {
            Ok(spec) => spec,
            Err(e) => panic!("drives/{id}.toml does not parse: {e}"),
        }
    }

    /// The citation keys of a provenance text (see the module docs for the two forms).
    fn citation_keys(text: &str) -> Vec<&str> {
        if let Some(rest) = text.strip_prefix("estimate:") {
            let rest = rest.trim_end();
            let Some(open) = rest.rfind('[') else {
                return Vec::new();
            };
            if !rest.ends_with(']') {
                return Vec::new();
            }
            rest[open + 1..rest.len() - 1]
                .split([',', ';'])
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .collect()
        } else {
            let head = text.split_whitespace().next().unwrap_or("");
            let head = head.strip_suffix(':').unwrap_or(head);
            head.split('+')
                .map(|item| item.split(':').next().unwrap_or(""))
                .collect()
        }
    }

    #[test]
    fn citation_keys_forms() {
        assert_eq!(citation_keys("DSV:a.model \"x = 1\" (measured)"), ["DSV"]);
        assert_eq!(
            citation_keys("HECIOS+TH99-97560P: 19 heads"),
            ["HECIOS", "TH99-97560P"]
        );
        assert_eq!(citation_keys("DSV:a.model+DMG1: text"), ["DSV", "DMG1"]);
        assert_eq!(
            citation_keys("estimate: two [BF-X24, DERIVED]"),
            ["BF-X24", "DERIVED"]
        );
        assert!(citation_keys("estimate: no keys").is_empty());
    }

    #[test]
    fn ids_are_unique_lowercase_and_found() {
        let ids: Vec<&str> = builtin_ids().collect();
        let unique: BTreeSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len(), "duplicate id in BUILTIN");
        for id in &ids {
            assert!(!id.is_empty());
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "id {id:?} is not lowercase"
            );
            assert!(builtin_spec(id).is_some());
        }
        assert!(builtin_spec("no_such_drive").is_none());
        assert!(
            builtin_spec("Cheetah9LP").is_none(),
            "ids are case-sensitive"
        );
    }

    #[test]
    fn every_file_parses_and_its_id_matches() {
        for (id, text) in BUILTIN {
            let spec = parse(id, text);
            assert_eq!(
                spec.id, *id,
                "drives/{id}.toml: id field differs from its key"
            );
            assert!(!spec.name.is_empty(), "drives/{id}.toml: empty name");
            assert!(
                !spec.description.trim().is_empty(),
                "drives/{id}.toml: empty description"
            );
        }
    }

    #[test]
    fn zones_cover_every_cylinder_once() {
        for (id, text) in BUILTIN {
            let spec = parse(id, text);
            assert!(!spec.zones.is_empty(), "{id}: no zones");
            assert!(
                spec.zones.len() <= 30,
                "{id}: {} zones > 30",
                spec.zones.len()
            );
            let mut next = 0u32;
            for (i, z) in spec.zones.iter().enumerate() {
                assert_eq!(
                    z.first_cylinder, next,
                    "{id}: zone {i} does not start where the last ended"
                );
                assert!(
                    z.last_cylinder >= z.first_cylinder,
                    "{id}: zone {i} is empty"
                );
                assert!(
                    z.sectors_per_track > z.spare_sectors_per_track,
                    "{id}: zone {i} all spare"
                );
                assert!(
                    z.track_skew >= 0.0 && z.cylinder_skew >= 0.0,
                    "{id}: zone {i} negative skew"
                );
                next = z.last_cylinder + 1;
            }
            assert_eq!(
                next,
                spec.cylinders,
                "{id}: zones end at {} not cylinders - 1",
                next - 1
            );
        }
    }

    #[test]
    fn scalars_are_in_range() {
        for (id, text) in BUILTIN {
            let spec = parse(id, text);
            assert!(spec.rpm > 0.0, "{id}: rpm");
            assert!(
                spec.sector_bytes == 512 || spec.sector_bytes == 4096,
                "{id}: sector_bytes"
            );
            assert!(spec.surfaces > 0 && spec.cylinders > 0, "{id}: geometry");
            for (name, v) in [
                ("head_switch_ms", spec.head_switch_ms),
                ("write_settle_ms", spec.write_settle_ms),
                ("overhead_read_ms", spec.overhead_read_ms),
                ("overhead_write_ms", spec.overhead_write_ms),
            ] {
                assert!(v >= 0.0 && v.is_finite(), "{id}: {name} = {v}");
            }
            assert!(spec.slips.is_empty(), "{id}: slips come in a later issue");
            match spec.seek {
                SeekSpec::TwoPiece { boundary, .. } => assert!(boundary > 0, "{id}: boundary"),
                SeekSpec::Linear { full_ms, .. } => assert!(full_ms > 0.0, "{id}: full_ms"),
                SeekSpec::ThreePoint {
                    single_ms,
                    average_ms,
                    full_ms,
                } => {
                    assert!(single_ms > 0.0, "{id}: single_ms");
                    assert!(single_ms < average_ms, "{id}: single >= average");
                    assert!(average_ms < full_ms, "{id}: average >= full");
                }
                SeekSpec::Table { ref points, .. } => assert!(!points.is_empty(), "{id}: table"),
            }
        }
    }

    #[test]
    fn every_value_cites_a_known_source() {
        for (id, text) in BUILTIN {
            let spec = parse(id, text);
            let raw: toml::Table = text.parse().expect("parsed above");
            let mut required: Vec<&str> = REQUIRED.to_vec();
            if raw.contains_key("sector_bytes") {
                required.push("sector_bytes");
            }
            if raw.contains_key("power") {
                required.push("power");
            }
            for field in required {
                assert!(
                    spec.provenance.contains_key(field),
                    "drives/{id}.toml: no provenance for {field}"
                );
            }
            for (field, cite) in &spec.provenance {
                let keys = citation_keys(cite);
                assert!(
                    !keys.is_empty(),
                    "drives/{id}.toml: provenance {field:?} cites no key"
                );
                for key in keys {
                    assert!(
                        spec.sources.contains_key(key),
                        "drives/{id}.toml: provenance {field:?} cites {key:?}, not in [sources]"
                    );
                }
            }
            for (key, citation) in &spec.sources {
                assert!(
                    !citation.trim().is_empty(),
                    "drives/{id}.toml: empty source {key}"
                );
            }
        }
    }

    #[test]
    fn estimates_are_flagged() {
        for (id, text) in BUILTIN {
            let spec = parse(id, text);
            let any_estimate = spec.provenance.values().any(|v| v.starts_with("estimate:"));
            assert_eq!(
                spec.estimated, any_estimate,
                "drives/{id}.toml: estimated = {} but estimate entries: {any_estimate}",
                spec.estimated
            );
        }
    }

    #[test]
    fn every_drive_validates() {
        for id in builtin_ids() {
            let drive = super::super::builtin_drive(id);
            assert!(
                drive.is_ok(),
                "{id}: {}",
                drive.err().map(|e| e.to_string()).unwrap_or_default()
            );
        }
    }

    /// The LBA count DiskSim computes from each validated model's zone table (its declared
    /// `Block count` is overridden by this sum); see the files' `capacity` provenance.
    const DISKSIM_BLOCKS: &[(&str, u64)] = &[
        ("ibm18es", 18_033_753),
        ("cheetah9lp", 17_918_387),
        ("atlas10k", 17_966_953),
        ("hp_c2247a", 2_054_864),
        ("hp_c2490a", 4_165_272),
        ("dec_rz26", 2_050_860),
    ];

    #[test]
    fn disksim_drives_have_disksims_block_count() {
        for (id, blocks) in DISKSIM_BLOCKS {
            let drive = super::super::builtin_drive(id).expect("validates");
            assert_eq!(drive.capacity_sectors(), *blocks, "{id}");
        }
    }

    #[test]
    fn library_lists_every_drive_file() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../drives");
        let on_disk: BTreeSet<String> = std::fs::read_dir(dir)
            .expect("drives/ exists")
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter_map(|n| n.strip_suffix(".toml").map(str::to_owned))
            .collect();
        let listed: BTreeSet<String> = builtin_ids().map(str::to_owned).collect();
        assert_eq!(on_disk, listed, "drives/*.toml and BUILTIN differ");
    }
}
