//! Building a parity array (`raid-5`, `raid-4`) from `[array]`.

use super::{Built, ConfigError, Experiment, LayoutName, SchedulerName, MAX_DISKS};
use crate::drive::Drive;
use crate::raid5::{ParityLayout, ParityRotation, Raid5Array, Raid5Config};
use crate::sched::Policy;
use crate::Span;
use std::sync::Arc;

/// The paper's parity group: five disks (Varma & Jacobson, III.A).
const DEFAULT_GROUP_WIDTH: u32 = 5;
const DEFAULT_RECONSTRUCT_FRACTION: f64 = 0.5;

impl Experiment {
    pub(super) fn build_parity(
        &self,
        drive: &Arc<Drive>,
        age_bound: Option<Span>,
    ) -> Result<Built, ConfigError> {
        let s = &self.spec;
        let a = &s.array;
        for (key, given) in [
            ("array.ds", a.ds.is_some()),
            ("array.dr", a.dr.is_some()),
            ("array.dm", a.dm.is_some()),
            ("array.dd", a.dd.is_some()),
            ("array.sync_copies", a.sync_copies.is_some()),
            ("array.free_layout", a.free_layout.is_some()),
        ] {
            if given {
                return Err(self.error(
                    key,
                    format!(
                        "is not a dimension of a parity layout (\"{}\": disks, group_width)",
                        a.layout.name()
                    ),
                ));
            }
        }
        let width = a.group_width.unwrap_or(DEFAULT_GROUP_WIDTH);
        if !(3..=MAX_DISKS).contains(&width) {
            return Err(self.error(
                "array.group_width",
                format!("must be within 3..={MAX_DISKS} (two data disks and parity), got {width}"),
            ));
        }
        let disks = a.disks.unwrap_or(width);
        if disks == 0 || disks > MAX_DISKS || !disks.is_multiple_of(width) {
            return Err(self.error(
                "array.disks",
                format!(
                    "must be a whole number of parity groups of {width} disks (at most \
                     {MAX_DISKS}), got {disks}"
                ),
            ));
        }
        let rotation = match (a.layout, a.parity_rotation) {
            (LayoutName::Raid4, None | Some(ParityRotation::Dedicated)) => {
                ParityRotation::Dedicated
            }
            (LayoutName::Raid4, Some(r)) => {
                return Err(self.error(
                    "array.parity_rotation",
                    format!(
                        "raid-4 keeps parity on a dedicated disk; {} is a raid-5 rotation",
                        r.name()
                    ),
                ))
            }
            (_, Some(ParityRotation::Dedicated)) => {
                return Err(self.error(
                    "array.parity_rotation",
                    "a dedicated parity disk is layout raid-4",
                ))
            }
            (_, r) => r.unwrap_or_default(),
        };
        let sector = u64::from(drive.geometry().sector_bytes());
        if a.stripe_unit_bytes == 0 || !a.stripe_unit_bytes.is_multiple_of(sector) {
            return Err(self.error(
                "array.stripe_unit_bytes",
                format!(
                    "must be a positive multiple of the {sector}-byte sector, got {}",
                    a.stripe_unit_bytes
                ),
            ));
        }
        let unit_sectors = u32::try_from(a.stripe_unit_bytes / sector)
            .map_err(|_| self.error("array.stripe_unit_bytes", "is too large"))?;
        let reconstruct_fraction = a
            .reconstruct_fraction
            .unwrap_or(DEFAULT_RECONSTRUCT_FRACTION);
        if !(0.0..=1.0).contains(&reconstruct_fraction) {
            return Err(self.error(
                "array.reconstruct_fraction",
                format!("must be within [0, 1], got {reconstruct_fraction}"),
            ));
        }
        let layout = ParityLayout::new(
            disks / width,
            width,
            unit_sectors,
            drive.capacity_sectors(),
            a.data_set_bytes.map(|b| b.div_ceil(sector)),
            rotation,
        )
        .map_err(|m| self.error("array", m))?;
        let policy = match a.scheduler {
            None => Policy::Fcfs,
            Some(SchedulerName::Disk(p)) => p,
            Some(SchedulerName::Eager(p)) => {
                return Err(self.error(
                    "array.scheduler",
                    format!("{p} is an eager-writing policy: it needs layout ew-array or ddm"),
                ))
            }
        };
        let label = format!(
            "{} {}x{} {} unit {} KiB",
            a.layout.name(),
            disks / width,
            width,
            rotation.name(),
            a.stripe_unit_bytes / 1024
        );
        let array = Raid5Array::new(
            drive.clone(),
            &Raid5Config {
                layout,
                policy,
                age_bound,
                random_phase: a.random_phase,
                noise: s.drive.noise,
                seed: s.seed,
                reconstruct_fraction,
            },
        )
        .map_err(|m| self.error("array", m))?;
        Ok(Built {
            array: Box::new(array),
            jbod_disks: None,
            layout_label: label,
            scheduler_label: policy.to_string(),
        })
    }
}
