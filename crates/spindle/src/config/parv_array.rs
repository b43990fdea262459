//! `[array] parv = "FILE.parv"`: the experiment's array is the logical organisation
//! (`disksim_logorg`) of a DiskSim 4.0 `.parv` (docs/arrays.md, "DiskSim arrays").
//!
//! The `.parv` sets the `[array]` keys of [`PARV_KEYS`] (those the experiment also gives are
//! an error naming the key) and, unless `[drive] model` is given, the drive: the array's
//! disk, imported from the same file. The mapping:
//!
//! | DiskSim | spindle |
//! |---|---|
//! | `Noredun` (`Striped`) over N devices | `striping`, `disks = N` |
//! | `Shadowed`, 1 copy | `striping`, `disks = N` |
//! | `Shadowed`, 2 copies | `raid-10`, `disks = N` (Ds = N/2), `writes = "foreground"` |
//! | `Shadowed`, C > 2 copies | `mirror` (N = C) or `striped-mirror` with `dm = C` |
//! | `Parity_disk` | `raid-4`, `group_width = disks = N` |
//! | `Parity_rotated` | `raid-5`, `group_width = disks = N`, `parity_rotation` from the type |
//!
//! Every layout takes `stripe_unit_bytes` = `Stripe unit` × 512. The parity layouts take
//! `reconstruct_fraction` from `RMW vs. reconstruct`, `write_cache_bytes = 0` (DiskSim's
//! logorg has no controller cache), `io_bus_mb_s = 0` (DiskSim's buses are in the
//! imported drives' transfer timing) and `drive_buffers = true` (DiskSim keeps them). The striped and mirrored layouts take, unless
//! `data_set_bytes` is given, the whole disks as their data set (DiskSim addresses every
//! block of the members; spindle's default would be one disk's worth).

use super::{
    key_line, resolve_drive, set_path, spec_from, ConfigError, Experiment, ReadFile, Setting,
};
use crate::drive::disksim::{import_logorg, DiskSimArray, Redundancy};

/// The `[array]` keys an `array.parv` sets.
pub const PARV_KEYS: &[&str] = &[
    "layout",
    "disks",
    "ds",
    "dr",
    "dm",
    "stripe_unit_bytes",
    "group_width",
    "parity_rotation",
    "reconstruct_fraction",
    "write_cache_bytes",
    "io_bus_mb_s",
    "drive_buffers",
    "writes",
];

/// The `[array]` keys and values of a DiskSim array.
pub fn array_keys(org: &DiskSimArray) -> Vec<(&'static str, toml::Value)> {
    use toml::Value::{Float, Integer, String as Str};
    let n = org.devices.len() as i64;
    let mut keys = vec![(
        "stripe_unit_bytes",
        Integer(i64::from(org.stripe_unit_sectors) * 512),
    )];
    let layout = match org.redundancy {
        Redundancy::Noredun => "striping",
        Redundancy::Shadowed if org.copies == 1 => "striping",
        Redundancy::Shadowed => {
            keys.push(("writes", Str("foreground".into())));
            match org.copies {
                2 => "raid-10",
                c if org.data_disks() == 1 => {
                    keys.push(("dm", Integer(i64::from(c))));
                    "mirror"
                }
                c => {
                    keys.push(("dm", Integer(i64::from(c))));
                    "striped-mirror"
                }
            }
        }
        Redundancy::ParityDisk | Redundancy::ParityRotated => {
            keys.push(("group_width", Integer(n)));
            keys.push(("write_cache_bytes", Integer(0)));
            // DiskSim's buses are part of the imported drives' transfer timing: no second
            // channel in the controller.
            keys.push(("io_bus_mb_s", Integer(0)));
            // DiskSim's logorg keeps its drives' buffers and controllers.
            keys.push(("drive_buffers", toml::Value::Boolean(true)));
            if let Some(f) = org.reconstruct_fraction {
                keys.push(("reconstruct_fraction", Float(f)));
            }
            if org.redundancy == Redundancy::ParityDisk {
                "raid-4"
            } else {
                if let Some(r) = org.rotation {
                    keys.push(("parity_rotation", Str(r.name().into())));
                }
                "raid-5"
            }
        }
    };
    keys.insert(0, ("layout", Str(layout.into())));
    keys.insert(1, ("disks", Integer(n)));
    keys
}

impl Experiment {
    /// With `array.parv`: this experiment with the array's keys (and the drive, unless
    /// `drive.model` is given) set from the DiskSim file; errors in them name the file.
    /// Without: `None` (after checking a drive is named).
    pub(super) fn with_parv_array(
        &self,
        read_file: ReadFile<'_>,
    ) -> Result<Option<Experiment>, ConfigError> {
        let model_given = !self.spec.drive.model.is_empty();
        let Some(path) = self.spec.array.parv.clone() else {
            if !model_given {
                return Err(self.error(
                    "drive.model",
                    "missing: give a built-in drive id or a drive file (or an [array] parv, \
                     whose disks are then the drive)",
                ));
            }
            return Ok(None);
        };
        let read = |p: &str| -> Result<String, String> {
            let bytes = read_file(p)?;
            String::from_utf8(bytes).map_err(|_| format!("{p}: not UTF-8 text"))
        };
        let org =
            import_logorg(&path, &read).map_err(|e| self.error("array.parv", e.to_string()))?;
        let from = format!("array.parv {path}, disksim_logorg {}", org.name);
        let array = self.doc.get("array").and_then(|a| a.as_table());
        if let Some(k) = PARV_KEYS
            .iter()
            .find(|k| array.is_some_and(|a| a.contains_key(**k)))
        {
            return Err(self.error(
                &format!("array.{k}"),
                format!("is set by the DiskSim array ({from}); give it in one place"),
            ));
        }
        let mut keys: Vec<(String, toml::Value)> = array_keys(&org)
            .into_iter()
            .map(|(k, v)| (format!("array.{k}"), v))
            .collect();
        let model = if model_given {
            self.spec.drive.model.clone()
        } else {
            keys.push(("drive.model".into(), toml::Value::String(path.clone())));
            path.clone()
        };
        let parity = org.redundancy.is_parity();
        if !parity && self.spec.array.data_set_bytes.is_none() {
            // The whole disks, in whole stripe units: DiskSim's logorg addresses every block.
            let drive = resolve_drive(&model, read_file).map_err(|m| {
                self.error(
                    if model_given {
                        "drive.model"
                    } else {
                        "array.parv"
                    },
                    m,
                )
            })?;
            let sector = u64::from(drive.geometry().sector_bytes());
            let unit = u64::from(org.stripe_unit_sectors) * 512;
            let disk = drive.capacity_sectors() * sector;
            if unit.is_multiple_of(sector) && unit <= disk {
                let bytes = disk / unit * unit * u64::from(org.data_disks());
                keys.push((
                    "array.data_set_bytes".into(),
                    toml::Value::Integer(i64::try_from(bytes).unwrap_or(i64::MAX)),
                ));
            }
        }
        let line = key_line(&self.text, "array.parv");
        let mut doc = self.doc.clone();
        if let Some(a) = doc.get_mut("array").and_then(|a| a.as_table_mut()) {
            a.remove("parv");
        }
        let mut settings = self.settings.clone();
        for (k, v) in keys {
            set_path(&mut doc, &k, v.clone()).map_err(|m| self.error("array.parv", m))?;
            settings.push(Setting {
                key: k,
                value: v,
                from: from.clone(),
                line,
            });
        }
        let spec = spec_from(&doc, &self.text, &self.origin, &self.sets, &settings)?;
        Ok(Some(Experiment {
            spec,
            origin: self.origin.clone(),
            doc,
            text: self.text.clone(),
            sets: self.sets.clone(),
            unsets: self.unsets.clone(),
            settings,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raid5::ParityRotation;

    fn org(redundancy: Redundancy, n: usize, copies: u32) -> DiskSimArray {
        DiskSimArray {
            file: "x.parv".into(),
            name: "org0".into(),
            devices: (0..n).map(|i| format!("disk{i}")).collect(),
            disk_spec: "D".into(),
            redundancy,
            stripe_unit_sectors: 64,
            copies,
            group_width: redundancy.is_parity().then_some(n as u32),
            rotation: match redundancy {
                Redundancy::ParityRotated => Some(ParityRotation::RightAsymmetric),
                Redundancy::ParityDisk => Some(ParityRotation::Dedicated),
                _ => None,
            },
            reconstruct_fraction: redundancy.is_parity().then_some(0.375),
            notes: Vec::new(),
        }
    }

    /// A logorg over stub disks `{devices}`; the experiments below name a built-in drive.
    fn parv(redundancy: &str, devices: &str) -> String {
        format!(
            "disksim_disk D {{ }}\ninstantiate [ disk0 .. disk4095 ] as D\n\
             instantiate [ more0 .. more9 ] as D\n\
             disksim_logorg org0 {{ Addressing mode = Array, Distribution scheme = Striped,\n\
             Redundancy scheme = {redundancy}, devices = [ {devices} ], Stripe unit = 16,\n\
             Synch writes for safety = 1, Number of copies = 2, Copy choice on read = 6,\n\
             RMW vs. reconstruct = 0.5, Parity stripe unit = 16, Parity rotation type = 2 }}\n"
        )
    }

    fn exp(toml: &str, parv_text: String) -> Result<crate::config::BuiltArray, String> {
        let read = move |p: &str| -> Result<Vec<u8>, String> {
            match p {
                "dir/a.parv" => Ok(parv_text.clone().into_bytes()),
                _ => Err(format!("{p}: no such file")),
            }
        };
        let e = Experiment::parse(toml, "exp.toml", &[]).map_err(|e| e.to_string())?;
        e.build_array(&read).map_err(|e| e.to_string())
    }

    fn fails(toml: &str, parv_text: String) -> String {
        exp(toml, parv_text).err().expect("should be refused")
    }

    const WITH_DRIVE: &str = "[drive]\nmodel = \"hp97560\"\n[array]\nparv = \"dir/a.parv\"\n\
                              [workload]\nkind = \"closed\"\n";

    #[test]
    fn an_experiment_runs_the_parvs_array_on_the_drive_it_names() {
        let b = exp(WITH_DRIVE, parv("Parity_rotated", "disk0 .. disk5")).unwrap();
        assert_eq!(b.layout_label, "raid-5 1x6");
        assert_eq!(b.drive_id, "hp97560");
        let b = exp(WITH_DRIVE, parv("Shadowed", "disk0 .. disk5")).unwrap();
        assert!(
            b.layout_label.starts_with("raid-10 3x1x2"),
            "{}",
            b.layout_label
        );
        // 16-block units over 3 columns, each a whole disk.
        assert_eq!(b.engine.capacity_sectors(), b.disk_sectors / 16 * 16 * 3);
    }

    #[test]
    fn errors_name_the_key_and_where_it_came_from() {
        // Both here and in the .parv.
        let twice = WITH_DRIVE.replace("[workload]", "layout = \"raid-4\"\n[workload]");
        let e = fails(&twice, parv("Parity_disk", "disk0 .. disk4"));
        assert_eq!(
            e,
            "exp.toml: line 5: array.layout: is set by the DiskSim array (array.parv dir/a.parv, \
             disksim_logorg org0); give it in one place"
        );
        // A value the .parv sets that the array refuses: attributed to the .parv's line.
        let e = fails(
            WITH_DRIVE,
            parv("Noredun", "disk0 .. disk4095, more0 .. more9"),
        );
        assert_eq!(
            e,
            "exp.toml: line 4: array.disks (from array.parv dir/a.parv, disksim_logorg org0): \
             must be within 1..=4096, got 4106"
        );
        // The DiskSim file's own errors name it, its block, parameter and line.
        let e = fails(WITH_DRIVE, parv("Parity_rotated", "disk0, disk1"));
        assert!(
            e.starts_with("exp.toml: line 4: array.parv: dir/a.parv: disksim_logorg org0: devices: line 5: Parity_rotated needs at least 3 devices"),
            "{e}"
        );
        let e = fails(
            WITH_DRIVE.replace("dir/a.parv", "dir/b.parv").as_str(),
            String::new(),
        );
        assert!(
            e.contains("array.parv: dir/b.parv: top level: file: cannot read"),
            "{e}"
        );
        // No drive at all.
        let e = fails("[workload]\nkind = \"closed\"\n", String::new());
        assert!(e.contains("drive.model: missing"), "{e}");
    }

    fn show(keys: &[(&str, toml::Value)]) -> String {
        keys.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn each_scheme_maps_to_its_layout_keys() {
        let cases = [
            (Redundancy::Noredun, 4, 1, "layout=\"striping\" disks=4 stripe_unit_bytes=32768"),
            (Redundancy::Shadowed, 3, 1, "layout=\"striping\" disks=3 stripe_unit_bytes=32768"),
            (
                Redundancy::Shadowed,
                4,
                2,
                "layout=\"raid-10\" disks=4 stripe_unit_bytes=32768 writes=\"foreground\"",
            ),
            (
                Redundancy::Shadowed,
                3,
                3,
                "layout=\"mirror\" disks=3 stripe_unit_bytes=32768 writes=\"foreground\" dm=3",
            ),
            (
                Redundancy::Shadowed,
                6,
                3,
                "layout=\"striped-mirror\" disks=6 stripe_unit_bytes=32768 writes=\"foreground\" dm=3",
            ),
            (
                Redundancy::ParityDisk,
                5,
                1,
                "layout=\"raid-4\" disks=5 stripe_unit_bytes=32768 group_width=5 write_cache_bytes=0 io_bus_mb_s=0 drive_buffers=true reconstruct_fraction=0.375",
            ),
            (
                Redundancy::ParityRotated,
                5,
                1,
                "layout=\"raid-5\" disks=5 stripe_unit_bytes=32768 group_width=5 write_cache_bytes=0 io_bus_mb_s=0 drive_buffers=true reconstruct_fraction=0.375 parity_rotation=\"right-asymmetric\"",
            ),
        ];
        for (r, n, c, want) in cases {
            let keys = array_keys(&org(r, n, c));
            assert_eq!(show(&keys), want, "{r:?} {n} {c}");
            for (k, _) in &keys {
                assert!(
                    PARV_KEYS.contains(k),
                    "{k} must be listed as set by the .parv"
                );
            }
        }
    }
}
