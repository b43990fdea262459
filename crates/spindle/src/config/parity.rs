//! Building a parity array (`raid-5`, `raid-4`) from `[array]`.

use super::{
    ArraySpec, Built, ConfigError, DestageName, Experiment, LayoutName, SchedulerName, MAX_DISKS,
};
use crate::cache::{DestagePolicy, HighLowGate};
use crate::drive::Drive;
use crate::raid5::{
    block_sectors, CacheConfig, FailureConfig, ParityLayout, ParityRotation, Raid5Array,
    Raid5Config, BLOCK_BYTES,
};
use crate::sched::Policy;
use crate::{Nanos, Span};
use std::sync::Arc;

/// The paper's parity group: five disks (Varma & Jacobson, III.A).
const DEFAULT_GROUP_WIDTH: u32 = 5;
const DEFAULT_RECONSTRUCT_FRACTION: f64 = 0.5;
/// The paper's caches (III.A): a 1 MB write cache, an 8 MB read cache, 3 blocks of the
/// write cache kept for parity.
const DEFAULT_WRITE_CACHE_BYTES: u64 = 1 << 20;
const DEFAULT_READ_CACHE_BYTES: u64 = 8 << 20;
const DEFAULT_PARITY_RESERVE: u32 = 3;
/// The paper's I/O channel and cache ports (III.B): 20 Mbytes/s.
const DEFAULT_CHANNEL_MB_S: f64 = 20.0;

impl Experiment {
    pub(super) fn build_parity(
        &self,
        drive: &Arc<Drive>,
        age_bound: Option<Span>,
    ) -> Result<Built, ConfigError> {
        let s = &self.spec;
        let a = &s.array;
        for (key, given) in [
            ("array.dd", a.dd.is_some()),
            ("array.sync_copies", a.sync_copies.is_some()),
            ("array.free_layout", a.free_layout.is_some()),
            ("array.map_log_replicas", a.map_log_replicas.is_some()),
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
        if a.latent_error_rate.is_some() {
            return Err(self.error(
                "array.latent_error_rate",
                format!(
                    "latent sector errors are simulated for the mirrored, SR and \
                     eager-writing layouts, not yet for \"{}\"",
                    a.layout.name()
                ),
            ));
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
        // The SR family's dimensions, when given (a comparison row may inherit them), must
        // be what a parity array is: Ds data disks, no rotational replicas, no mirrors.
        let data_disks = f64::from(disks - disks / width);
        for (key, given, want) in [
            ("array.ds", a.ds, data_disks),
            ("array.dr", a.dr.map(f64::from), 1.0),
            ("array.dm", a.dm.map(f64::from), 1.0),
        ] {
            if let Some(v) = given {
                if v != want {
                    return Err(self.error(
                        key,
                        format!(
                            "is {want} for \"{}\" with {disks} disks in groups of {width}, got {v}",
                            a.layout.name()
                        ),
                    ));
                }
            }
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
        let data_sectors = a.data_set_bytes.map(|b| b.div_ceil(sector));
        let layout = if a.track_aligned {
            // Whole cache blocks of each track (docs/raid5.md, track-aligned).
            let block = block_sectors(drive.geometry().sector_bytes());
            ParityLayout::new_track_aligned(
                disks / width,
                width,
                drive,
                block,
                data_sectors,
                rotation,
            )
            .map_err(|m| self.error("array.track_aligned", m))?
        } else {
            ParityLayout::new(
                disks / width,
                width,
                unit_sectors,
                drive.capacity_sectors(),
                data_sectors,
                rotation,
            )
            .map_err(|m| self.error("array", m))?
        };
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
        let cache = self.parity_cache(a, drive)?;
        let failure = self.failure(a, disks)?;
        // The paper's channel and cache ports (III.B): 20 MB/s each, unless set (0: off).
        let rate = |key: &str, v: Option<f64>| -> Result<Option<f64>, ConfigError> {
            match v {
                None => Ok(Some(DEFAULT_CHANNEL_MB_S * 1e6)),
                Some(0.0) => Ok(None),
                Some(r) if r.is_finite() && r >= 0.001 => Ok(Some(r * 1e6)),
                Some(r) => Err(self.error(
                    key,
                    format!("must be 0 (off) or at least 0.001 MB/s, got {r}"),
                )),
            }
        };
        let io_bus = rate("array.io_bus_mb_s", a.io_bus_mb_s)?;
        let drive_buffers = a.drive_buffers.unwrap_or(false);
        if drive_buffers && cache.is_some() {
            return Err(self.error(
                "array.drive_buffers",
                "needs array.write_cache_bytes = 0 (the controller's caches stand in for the \
                 drives' own buffers)",
            ));
        }
        let cache_port = if cache.is_some() {
            rate("array.cache_port_mb_s", a.cache_port_mb_s)?
        } else if a.cache_port_mb_s.is_some_and(|r| r != 0.0) {
            return Err(self.error(
                "array.cache_port_mb_s",
                "is the read cache's port, but array.write_cache_bytes = 0 leaves no caches",
            ));
        } else {
            None
        };
        let label = format!(
            "{} {}x{}{}{}{}",
            a.layout.name(),
            disks / width,
            width,
            if a.track_aligned {
                " track-aligned"
            } else {
                ""
            },
            match &cache {
                Some(c) => format!(" wc{}K {}", c.write_blocks * 4, destage_label(a)),
                None => String::new(),
            },
            match &failure {
                Some(f) if f.rebuild => format!(" fail d{} rebuild", f.disk),
                Some(f) => format!(" fail d{}", f.disk),
                None => String::new(),
            }
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
                cache,
                failure,
                io_bus_bytes_per_s: io_bus,
                cache_port_bytes_per_s: cache_port,
                drive_buffers,
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

fn destage_label(a: &ArraySpec) -> &'static str {
    match a.destage.unwrap_or(DestageName::LinearThreshold) {
        DestageName::Fcfs => "fcfs",
        DestageName::LeastCost => "least-cost",
        DestageName::HighLow => "high-low",
        DestageName::LinearThreshold => "linear",
        DestageName::Regions => "regions",
    }
}

impl Experiment {
    /// The failed disk and its rebuild, from `failed_disk` and the keys that need it.
    pub(super) fn failure(
        &self,
        a: &ArraySpec,
        disks: u32,
    ) -> Result<Option<FailureConfig>, ConfigError> {
        let Some(disk) = a.failed_disk else {
            for (key, given) in [
                ("array.fail_at_ms", a.fail_at_ms.is_some()),
                ("array.rebuild", a.rebuild.is_some()),
                ("array.rebuild_rate_mb_s", a.rebuild_rate_mb_s.is_some()),
            ] {
                if given {
                    return Err(self.error(key, "needs array.failed_disk (the disk that fails)"));
                }
            }
            return Ok(None);
        };
        if disk >= disks {
            return Err(self.error(
                "array.failed_disk",
                format!("must name one of the array's disks 0..{disks}, got {disk}"),
            ));
        }
        let at = match a.fail_at_ms {
            None => Nanos::ZERO,
            Some(ms) if ms.is_finite() && ms >= 0.0 => Nanos(Span::from_ms_f64(ms).0),
            Some(ms) => {
                return Err(self.error("array.fail_at_ms", format!("must be >= 0 ms, got {ms}")))
            }
        };
        let rebuild = a.rebuild.unwrap_or(true);
        let rate = match a.rebuild_rate_mb_s {
            None => None,
            Some(_) if !rebuild => {
                return Err(self.error(
                    "array.rebuild_rate_mb_s",
                    "is the rebuild's pace, but array.rebuild is false",
                ))
            }
            // At least 1 kB/s: a slower rebuild of a large disk would outlast the 584 years
            // of virtual time a run can span.
            Some(r) if r.is_finite() && r >= 0.001 => Some(r * 1e6),
            Some(r) => {
                return Err(self.error(
                    "array.rebuild_rate_mb_s",
                    format!("must be at least 0.001 MB/s, got {r}"),
                ))
            }
        };
        Ok(Some(FailureConfig {
            disk: disk as usize,
            at,
            rebuild,
            rate_bytes_per_s: rate,
        }))
    }

    /// The write and read caches of a parity array; `None` with `write_cache_bytes = 0`.
    fn parity_cache(
        &self,
        a: &ArraySpec,
        drive: &Drive,
    ) -> Result<Option<CacheConfig>, ConfigError> {
        let write = a.write_cache_bytes.unwrap_or(DEFAULT_WRITE_CACHE_BYTES);
        let block = u64::from(BLOCK_BYTES);
        if write == 0 {
            for (key, given) in [
                ("array.read_cache_bytes", a.read_cache_bytes.is_some()),
                (
                    "array.parity_reserve_blocks",
                    a.parity_reserve_blocks.is_some(),
                ),
                ("array.destage", a.destage.is_some()),
            ] {
                if given {
                    return Err(self.error(key, "needs a write cache (write_cache_bytes > 0)"));
                }
            }
            return Ok(None);
        }
        let read = a.read_cache_bytes.unwrap_or(DEFAULT_READ_CACHE_BYTES);
        for (key, v) in [
            ("array.write_cache_bytes", write),
            ("array.read_cache_bytes", read),
        ] {
            if !v.is_multiple_of(block) {
                return Err(self.error(key, format!("must be whole {block}-byte blocks, got {v}")));
            }
        }
        let reserve = a.parity_reserve_blocks.unwrap_or(DEFAULT_PARITY_RESERVE);
        if reserve == 0 || u64::from(reserve) >= write / block {
            return Err(self.error(
                "array.parity_reserve_blocks",
                format!(
                    "must be at least 1 and fewer than the write cache's {} blocks, got {reserve}",
                    write / block
                ),
            ));
        }
        let name = a.destage.unwrap_or(DestageName::LinearThreshold);
        for (key, given, needs) in [
            (
                "array.destage_high_mark",
                a.destage_high_mark.is_some(),
                DestageName::HighLow,
            ),
            (
                "array.destage_low_mark",
                a.destage_low_mark.is_some(),
                DestageName::HighLow,
            ),
            (
                "array.destage_estimate",
                a.destage_estimate.is_some(),
                DestageName::Regions,
            ),
        ] {
            if given && name != needs {
                return Err(self.error(key, "does not apply to this destage algorithm"));
            }
        }
        let policy = match name {
            DestageName::Fcfs => DestagePolicy::Fcfs,
            DestageName::LeastCost => DestagePolicy::LeastCost,
            DestageName::HighLow => DestagePolicy::HighLow {
                high: a.destage_high_mark.unwrap_or(HighLowGate::HIGH_DEFAULT),
                low: a.destage_low_mark.unwrap_or(HighLowGate::LOW_DEFAULT),
            },
            DestageName::LinearThreshold => DestagePolicy::linear_threshold_default(),
            DestageName::Regions => match DestagePolicy::regions_default() {
                DestagePolicy::Regions {
                    bands,
                    regions_per_band,
                    steps,
                    controller_overhead,
                    ..
                } => DestagePolicy::Regions {
                    bands,
                    regions_per_band,
                    steps,
                    controller_overhead,
                    estimate: a.destage_estimate.unwrap_or_default(),
                },
                other => other,
            },
        };
        policy
            .validate(drive)
            .map_err(|e| self.error("array.destage", e.to_string()))?;
        Ok(Some(CacheConfig {
            write_blocks: (write / block) as usize,
            read_blocks: (read / block) as usize,
            parity_reserve: reserve as usize,
            policy,
        }))
    }
}
