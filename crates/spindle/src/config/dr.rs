//! `workload.kind = "dr"`: the power-aware disaster-recovery secondary (`crate::dr`,
//! docs/dr.md) on the experiment's drive and array as its data volume.

use super::{Built, ConfigError, Experiment, OpenTrace, ReadFile};
use crate::dr::plan::{Draw, Penalties};
use crate::dr::{self, stream::Stream, DrConfig, VolumePower};
use crate::drive::Drive;
use crate::metrics::Report;
use crate::sim::Arrivals;
use crate::{Op, Span};
use serde::Deserialize;
use std::sync::Arc;

/// `[workload.dr]`: the update stream (a PostgreSQL WAL as `pg_waldump` prints it, or the
/// writes of `[workload.trace]`), the compaction window and the RTO.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrSpec {
    /// `pg_waldump` text (`scripts/pgbench_wal.sh`), optionally gzip- or bzip2-compressed;
    /// absent: the writes of `[workload.trace]`.
    #[serde(default)]
    pub wal: Option<String>,
    /// The compaction window W, MB of log (10^6 bytes).
    pub window_mb: f64,
    pub rto_s: f64,
    /// The stream replayed this many times faster (0.5: at half the primary's rate).
    #[serde(default = "one")]
    pub speedup: f64,
    /// The stream played this many times back to back (a long run from a short capture).
    #[serde(default = "one_u32")]
    pub repeat: u32,
    /// The longest write the applier issues, KiB (a run of consecutive pages is one write).
    #[serde(default = "max_write_kb")]
    pub max_write_kb: u64,
    /// Writes the applier keeps outstanding (1: a redo applier's, one at a time in sorted
    /// order; more let a striped data volume apply in parallel).
    #[serde(default = "one_u32")]
    pub queue_depth: u32,
    /// Page size for a block-trace stream, bytes (a WAL's pages are PostgreSQL's 8 KiB).
    #[serde(default = "page_bytes")]
    pub page_bytes: u32,
}

fn one() -> f64 {
    1.0
}
fn one_u32() -> u32 {
    1
}
fn max_write_kb() -> u64 {
    256
}
fn page_bytes() -> u32 {
    8192
}

/// `[workload.dr]` checked.
pub(super) struct Checked {
    window_bytes: u64,
    rto: f64,
    speedup: f64,
    power: VolumePower,
    sleep_state: String,
}

impl Experiment {
    /// Checks `[workload.dr]` and builds the data volume, without reading the stream.
    pub(super) fn check_dr(
        &self,
        read_file: ReadFile<'_>,
    ) -> Result<(Arc<Drive>, Built, Checked), ConfigError> {
        let w = &self.spec.workload;
        let Some(d) = &w.dr else {
            return Err(self.error("workload.dr", "kind = \"dr\" needs a [workload.dr] table"));
        };
        if d.wal.is_some() && w.trace.is_some() {
            return Err(self.error(
                "workload.dr.wal",
                "give either a WAL (workload.dr.wal) or a block trace ([workload.trace]), not both",
            ));
        }
        if d.wal.is_none() && w.trace.is_none() {
            return Err(self.error(
                "workload.dr",
                "no update stream: give workload.dr.wal or a [workload.trace]",
            ));
        }
        let positive = |key: &str, v: f64| -> Result<f64, ConfigError> {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(self.error(
                    &format!("workload.dr.{key}"),
                    format!("must be a positive number, got {v}"),
                ))
            }
        };
        let window_mb = positive("window_mb", d.window_mb)?;
        if window_mb > 1e9 {
            return Err(self.error(
                "workload.dr.window_mb",
                format!("{window_mb} MB is beyond any log"),
            ));
        }
        let rto = positive("rto_s", d.rto_s)?;
        if rto > 1e9 {
            return Err(self.error("workload.dr.rto_s", format!("{rto} s is beyond any run")));
        }
        let speedup = positive("speedup", d.speedup)?;
        if d.queue_depth == 0 || d.queue_depth > 65_536 {
            return Err(self.error(
                "workload.dr.queue_depth",
                format!("must be within 1..=65536, got {}", d.queue_depth),
            ));
        }
        if d.repeat == 0 || d.repeat > 10_000 {
            return Err(self.error(
                "workload.dr.repeat",
                format!("must be within 1..=10000, got {}", d.repeat),
            ));
        }
        if !(1e-6..=1e6).contains(&speedup) {
            return Err(self.error(
                "workload.dr.speedup",
                format!("must be within 1e-6..1e6, got {speedup}"),
            ));
        }
        if d.page_bytes == 0 || d.page_bytes % 512 != 0 || d.page_bytes > 1 << 20 {
            return Err(self.error(
                "workload.dr.page_bytes",
                format!(
                    "must be a multiple of 512 up to 1 MiB, got {}",
                    d.page_bytes
                ),
            ));
        }
        if d.max_write_kb == 0 || d.max_write_kb > 1 << 20 {
            return Err(self.error(
                "workload.dr.max_write_kb",
                format!("must be within 1..=1048576, got {}", d.max_write_kb),
            ));
        }
        let (drive, built) = self.build(read_file)?;
        let (power, sleep_state) = self.dr_power(&drive)?;
        let checked = Checked {
            window_bytes: (window_mb * 1e6).round() as u64,
            rto,
            speedup,
            power,
            sleep_state,
        };
        Ok((drive, built, checked))
    }

    /// The DR secondary: its application run with `dr`, the conventional secondary as the
    /// `compare` row labelled `immediate`.
    pub(super) fn run_dr(
        &self,
        read_file: ReadFile<'_>,
        open_trace: OpenTrace<'_>,
        progress: &mut dyn FnMut(u64, Option<u64>),
    ) -> Result<Report, ConfigError> {
        let s = &self.spec;
        let w = &s.workload;
        let (drive, built, c) = self.check_dr(read_file)?;
        let d = w.dr.as_ref().expect("checked");
        let sector = built.array.sector_bytes();
        let disk_count = built.array.disk_count();
        let stream = match (&d.wal, &w.trace) {
            (Some(path), _) => {
                let bytes = read_file(path).map_err(|e| self.error("workload.dr.wal", e))?;
                let (_, input) = crate::workload::trace::decompress(std::io::Cursor::new(bytes))
                    .map_err(|e| self.error("workload.dr.wal", format!("{path}: {e}")))?;
                dr::stream::from_waldump(input, path)
                    .map_err(|e| self.error("workload.dr.wal", e))?
            }
            (None, t) => {
                let t = t.as_ref().expect("checked");
                let disks = u32::try_from(disk_count).unwrap_or(u32::MAX);
                let (arrivals, _): (Arrivals<'static>, _) =
                    open_trace(t, sector, disks, drive.capacity_sectors())
                        .map_err(|e| self.error("workload.trace.path", e))?;
                let sb = u64::from(sector);
                let writes = arrivals.filter_map(|r| match r {
                    Ok(r) if r.op == Op::Write => {
                        Some(Ok((r.arrival, r.lba * sb, u64::from(r.sectors) * sb)))
                    }
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                });
                dr::stream::from_writes(writes, d.page_bytes, format!("{} (writes)", t.path))
                    .map_err(|e| self.error("workload.trace.path", e))?
            }
        };
        let stream = stream
            .repeated(d.repeat)
            .map_err(|e| self.error("workload.dr.repeat", e))?;
        let stream: Stream = if c.speedup == 1.0 {
            stream
        } else {
            stream.with_speedup(c.speedup)
        };
        let max_write_pages =
            u32::try_from((d.max_write_kb * 1024 / u64::from(stream.page_bytes)).max(1))
                .unwrap_or(u32::MAX);
        let cfg = DrConfig {
            window_bytes: c.window_bytes,
            rto: Span((c.rto * 1e9).round() as u64),
            max_write_pages,
            queue_depth: d.queue_depth as usize,
            sleep_state: c.sleep_state,
        };
        let (layout, scheduler) = (built.layout_label.clone(), built.scheduler_label.clone());
        let mut first = Some(built.array);
        let mut volume = || match first.take() {
            Some(e) => Ok(e),
            None => self
                .build(read_file)
                .map(|(_, b)| b.array)
                .map_err(|e| e.to_string()),
        };
        let (mut report, mut immediate) = dr::run(&stream, &cfg, &mut volume, c.power, progress)
            .map_err(|e| self.error("workload.dr", e.to_string()))?;
        let label = format!(
            "dr: W {} MB, RTO {} s, {}",
            d.window_mb, c.rto, stream.label
        );
        for (r, name) in [(&mut report, "deferred"), (&mut immediate, "immediate")] {
            r.drive = drive.id.clone();
            r.disks_count = disk_count;
            r.layout = layout.clone();
            r.scheduler = scheduler.clone();
            r.workload = format!("{label}: {name}");
            r.seed = s.seed;
        }
        immediate.label = "immediate".into();
        report.compare = vec![immediate];
        Ok(report)
    }

    /// The data volume's power: the drive's `[power]` data, sleeping in `[power] state`
    /// (standby when absent).
    fn dr_power(&self, drive: &Drive) -> Result<(VolumePower, String), ConfigError> {
        let Some(m) = drive.power_model() else {
            return Err(self.error(
                "drive.model",
                format!(
                    "drive {} has no [power] data: a DR secondary's energy needs its power \
                     states (docs/power.md)",
                    drive.id
                ),
            ));
        };
        let sleep = self.spec.power.state.unwrap_or_default();
        let Some(st) = m.state(sleep) else {
            return Err(self.error(
                "power.state",
                format!("drive {} has no {} state", drive.id, sleep.name()),
            ));
        };
        let power = VolumePower {
            draw: Draw {
                active_uw: m.active_uw,
                idle_uw: m.idle_uw,
                sleep_uw: st.power_uw,
                busy_share: 1.0,
            },
            penalties: Penalties {
                spin_up: st.up.time,
                spin_down: st.down.time,
                spin_up_fj: st.up.energy_fj,
                spin_down_fj: st.down.energy_fj,
            },
        };
        Ok((power, sleep.name().to_string()))
    }
}
