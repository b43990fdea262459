//! Building a paged disk (`layout = "paged"`, docs/paged.md) from `[array]`.

use super::{Built, ConfigError, Experiment, LayoutName, SchedulerName, MAX_DISKS};
use crate::drive::Drive;
use crate::paged::array::{DEFAULT_LOG_SECTORS, DEFAULT_PAGE_BYTES};
use crate::paged::log::HEADER_BYTES;
use crate::paged::{CleanerPolicy, PagedArray, PagedConfig};
use crate::sched::Policy;
use std::sync::Arc;

/// The page map log's NVRAM per disk, at most (its ring is allocated whole).
const MAX_MAP_NVRAM_BYTES: u64 = 64 << 20;

impl Experiment {
    /// The paged-disk keys given to another layout are errors naming the key.
    pub(super) fn refuse_paged_keys(&self) -> Result<(), ConfigError> {
        let a = &self.spec.array;
        if a.layout == LayoutName::Paged {
            return Ok(());
        }
        for (key, given) in [
            ("array.page_kb", a.page_kb.is_some()),
            ("array.replicas", a.replicas.is_some()),
            ("array.bad_tenants", a.bad_tenants.is_some()),
            ("array.page_runs", a.page_runs.is_some()),
            ("array.cleaner", a.cleaner.is_some()),
            ("array.cleaner_idle_ms", a.cleaner_idle_ms.is_some()),
            ("array.cleaner_max_tenants", a.cleaner_max_tenants.is_some()),
            ("array.cleaner_window", a.cleaner_window.is_some()),
        ] {
            if given {
                return Err(self.error(
                    key,
                    format!("applies to layout \"paged\", not \"{}\"", a.layout.name()),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn build_paged(&self, drive: &Arc<Drive>) -> Result<Built, ConfigError> {
        let s = &self.spec;
        let a = &s.array;
        for (key, given, why) in [
            (
                "array.dr",
                a.dr.is_some(),
                "replicas sets the copies per page",
            ),
            ("array.dm", a.dm.is_some(), "a paged disk has no mirrors"),
            (
                "array.dd",
                a.dd.is_some(),
                "dilution is an eager-writing key",
            ),
            (
                "array.sync_copies",
                a.sync_copies.is_some(),
                "the first copy written acknowledges",
            ),
            (
                "array.free_layout",
                a.free_layout.is_some(),
                "free space is the leftover slots",
            ),
            (
                "array.map_log_replicas",
                a.map_log_replicas.is_some(),
                "each disk keeps its own page map",
            ),
            (
                "array.data_set_bytes",
                a.data_set_bytes.is_some(),
                "the data set is every page the disks hold",
            ),
            (
                "array.failed_disk",
                a.failed_disk.is_some(),
                "disk failures are not simulated for it",
            ),
            (
                "array.fail_at_ms",
                a.fail_at_ms.is_some(),
                "disk failures are not simulated for it",
            ),
            (
                "array.rebuild",
                a.rebuild.is_some(),
                "disk failures are not simulated for it",
            ),
            (
                "array.rebuild_rate_mb_s",
                a.rebuild_rate_mb_s.is_some(),
                "disk failures are not simulated for it",
            ),
            (
                "array.age_bound_ms",
                a.age_bound_ms.is_some(),
                "its queues are first come first served",
            ),
            (
                "array.latent_error_rate",
                a.latent_error_rate.is_some(),
                "latent sector errors are not simulated for it",
            ),
        ] {
            if given {
                return Err(self.error(key, format!("does not apply to layout \"paged\": {why}")));
            }
        }
        match a.scheduler {
            None | Some(SchedulerName::Disk(Policy::Fcfs)) => {}
            Some(p) => {
                return Err(self.error(
                    "array.scheduler",
                    format!("layout \"paged\" serves its queues fcfs (replica and slot chosen under the head), got {p}"),
                ))
            }
        }
        let ds = match (a.ds, a.disks) {
            (None, None) => 1,
            (Some(v), d) => {
                if !(v.is_finite() && v >= 1.0 && v.fract() == 0.0 && v <= f64::from(MAX_DISKS)) {
                    return Err(self.error(
                        "array.ds",
                        format!("must be a whole number of disks within 1..={MAX_DISKS}, got {v}"),
                    ));
                }
                let v = v as u32;
                if d.is_some_and(|d| d != v) {
                    return Err(self.error(
                        "array.disks",
                        format!("must equal ds ({v}) for layout \"paged\""),
                    ));
                }
                v
            }
            (None, Some(d)) => {
                if d == 0 || d > MAX_DISKS {
                    return Err(self.error(
                        "array.disks",
                        format!("must be within 1..={MAX_DISKS}, got {d}"),
                    ));
                }
                d
            }
        };
        let page_bytes = match a.page_kb {
            None => DEFAULT_PAGE_BYTES,
            Some(kb) if (1..=1024).contains(&kb) => kb * 1024,
            Some(kb) => {
                return Err(self.error(
                    "array.page_kb",
                    format!("must be within 1..=1024 KiB, got {kb}"),
                ))
            }
        };
        let replicas = a.replicas.unwrap_or(1);
        if !(1..=8).contains(&replicas) {
            return Err(self.error(
                "array.replicas",
                format!("must be within 1..=8, got {replicas}"),
            ));
        }
        // The ring is allocated whole, per disk: 64 MiB at most.
        if a.map_nvram_bytes > MAX_MAP_NVRAM_BYTES {
            return Err(self.error(
                "array.map_nvram_bytes",
                format!(
                    "layout \"paged\" keeps at most {MAX_MAP_NVRAM_BYTES} bytes of map NVRAM per disk, got {}",
                    a.map_nvram_bytes
                ),
            ));
        }
        let records = a.map_nvram_bytes.saturating_sub(HEADER_BYTES) / 8;
        if records < 8 {
            return Err(self.error(
                "array.map_nvram_bytes",
                format!(
                    "layout \"paged\" needs room for 8 map records (96 bytes), got {}",
                    a.map_nvram_bytes
                ),
            ));
        }
        let bad_tenants = a.bad_tenants.unwrap_or(true);
        let cleaner = self.paged_cleaner()?;
        let page_runs = a.page_runs.unwrap_or(false);
        if page_runs && !bad_tenants {
            return Err(self.error(
                "array.page_runs",
                "writes runs of bad tenants: it needs bad_tenants = true",
            ));
        }
        if page_runs && cleaner == CleanerPolicy::Piggyback {
            return Err(self.error(
                "array.page_runs",
                "is not built with cleaner = \"piggyback\", which cleans after every page \
                 command and could undo a run's bad tenants",
            ));
        }
        let p = PagedArray::new(
            drive.clone(),
            &PagedConfig {
                ds,
                page_bytes,
                replicas,
                bad_tenants,
                page_runs,
                random_phase: a.random_phase,
                noise: s.drive.noise,
                seed: s.seed,
                log_nvram_records: records,
                log_sectors: DEFAULT_LOG_SECTORS,
                cleaner,
            },
        )
        .map_err(|m| {
            // The one limit that is about the number of disks names it.
            match m.strip_prefix("ds: ") {
                Some(why) => self.error("array.ds", why),
                None => self.error("array", m),
            }
        })?;
        let label = format!(
            "paged {ds}x{replicas}-way {}kb{}{}",
            page_bytes / 1024,
            match (bad_tenants, page_runs) {
                (true, true) => " bad-tenants runs",
                (true, false) => " bad-tenants",
                _ => "",
            },
            match cleaner {
                CleanerPolicy::None => String::new(),
                c => format!(" cleaner={}", c.name()),
            }
        );
        Ok(Built {
            array: Box::new(p),
            jbod_disks: None,
            layout_label: label,
            scheduler_label: "fcfs".into(),
        })
    }
}

impl Experiment {
    /// The cleaner policy and its keys (docs/paged.md); a key of another policy is an error.
    fn paged_cleaner(&self) -> Result<CleanerPolicy, ConfigError> {
        let a = &self.spec.array;
        let name = a.cleaner.as_deref().unwrap_or("none");
        let policy = match name {
            "none" => CleanerPolicy::None,
            "idle" => {
                let ms = a.cleaner_idle_ms.unwrap_or(100.0);
                if !(ms.is_finite() && (0.0..=86_400_000.0).contains(&ms)) {
                    return Err(self.error(
                        "array.cleaner_idle_ms",
                        format!("must be within 0 ..= 86400000 ms, got {ms}"),
                    ));
                }
                CleanerPolicy::Idle {
                    idle_ns: (ms * 1e6).round() as u64,
                }
            }
            "dirtiness" => CleanerPolicy::Dirtiness {
                max_tenants: a.cleaner_max_tenants.unwrap_or(1000),
            },
            "piggyback" => CleanerPolicy::Piggyback,
            "nightly" => {
                let w = a.cleaner_window.as_deref().unwrap_or(&[0.0, 3600.0]);
                let ok = |v: f64| v.is_finite() && (0.0..=86_400.0).contains(&v);
                match w {
                    &[start, len] if ok(start) && ok(len) => CleanerPolicy::Nightly {
                        start_ns: (start * 1e9).round() as u64 % crate::paged::array::DAY_NS,
                        len_ns: (len * 1e9).round() as u64,
                    },
                    _ => {
                        return Err(self.error(
                            "array.cleaner_window",
                            format!(
                                "must be [start_s, length_s], each within 0 ..= 86400, got {w:?}"
                            ),
                        ))
                    }
                }
            }
            other => {
                return Err(self.error(
                    "array.cleaner",
                    format!(
                        "must be one of none, idle, dirtiness, piggyback, nightly; got \"{other}\""
                    ),
                ))
            }
        };
        for (key, given, applies) in [
            ("array.cleaner_idle_ms", a.cleaner_idle_ms.is_some(), "idle"),
            (
                "array.cleaner_max_tenants",
                a.cleaner_max_tenants.is_some(),
                "dirtiness",
            ),
            (
                "array.cleaner_window",
                a.cleaner_window.is_some(),
                "nightly",
            ),
        ] {
            if given && name != applies {
                return Err(self.error(
                    key,
                    format!("applies to cleaner = \"{applies}\", not \"{name}\""),
                ));
            }
        }
        Ok(policy)
    }
}
