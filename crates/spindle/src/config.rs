//! Experiment files: TOML → [`ExperimentSpec`] (serde, unknown keys rejected) → validated
//! run. `--set key=value` overrides edit the document before it is read. Every error names
//! the file, the line (when the key is in the file) and the key.
//!
//! Keys are documented in `docs/experiment.md`. The core never opens files: the caller passes
//! a `read_file` function used for drive files and traces named by an experiment.

use crate::array::{Array, ArrayConfig, WritePolicy, DEFAULT_NVRAM_ENTRIES};
use crate::cache::CostEstimate;
use crate::drive::{builtin_drive, parse_drive, Drive, LowPower, PowerPolicy};
use crate::engine::{Engine, HostRequest};
use crate::ew::map_log::{MapLogConfig, DEFAULT_NVRAM_BYTES, DEFAULT_PORTIONS};
use crate::ew::{EwArray, EwConfig, EwPolicy, EwShape, FreeLayout};
use crate::layout::{Layout, LayoutConfig, Placement, Shape};
use crate::metrics::Report;
use crate::raid5::ParityRotation;
use crate::sched::Policy;
use crate::sim::{self, Arrivals, ReplayRequests, SimError, Window, Workload};
use crate::workload::process_groups::{Burst, GroupsParams, ProcessGroups};
use crate::workload::synthetic::{Generator, Mix, Poisson};
use crate::{Nanos, Span};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Bounds that keep an experiment within memory: more disks or outstanding requests than
/// these is a configuration error, not an allocation failure.
pub const MAX_DISKS: u32 = 4_096;
pub const MAX_QUEUE_DEPTH: u32 = 1_048_576;
/// At most this many requests in a synthetic run (at ten million simulated requests a second,
/// more than three years): beyond it the counts derived from it could overflow.
pub const MAX_REQUESTS: u64 = 1_000_000_000_000_000;

/// The built-in default experiment of `spindle run` with no file.
pub const DEFAULT_EXPERIMENT: &str = include_str!("default_experiment.toml");

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSpec {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "one")]
    pub seed: u64,
    /// Absent only when `[array] parv` names the drive.
    #[serde(default)]
    pub drive: DriveRef,
    #[serde(default)]
    pub array: ArraySpec,
    pub workload: WorkloadSpec,
    #[serde(default)]
    pub run: RunSpec,
    /// The disks' spin-down policy (docs/power.md).
    #[serde(default)]
    pub power: PowerSection,
    /// Further configurations run and reported beside the base one.
    #[serde(default)]
    pub compare: Vec<CompareSpec>,
}

fn one() -> u64 {
    1
}

/// An experiment's `[power]`: when the disks go to a low-power state (docs/power.md).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSection {
    #[serde(default)]
    pub policy: PolicyName,
    /// `timeout`: idle time before going down; `adaptive`: the first one.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// The low-power state gone to (absent: standby).
    #[serde(default)]
    pub state: Option<LowPower>,
    /// `adaptive`: the timeout's bounds.
    #[serde(default)]
    pub timeout_min_s: Option<f64>,
    #[serde(default)]
    pub timeout_max_s: Option<f64>,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyName {
    #[default]
    Never,
    Timeout,
    Adaptive,
    Explicit,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriveRef {
    /// A built-in drive id (`spindle drives list`) or the path of a drive file; empty
    /// (absent): the disks of `[array] parv`.
    #[serde(default)]
    pub model: String,
    /// Turn on the drive file's seeded seek/rotation noise.
    #[serde(default)]
    pub noise: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArraySpec {
    /// Number of disks D; for the replicated layouts it may be left out (D = Ds·Dr·Dm) or
    /// given in place of one dimension.
    #[serde(default)]
    pub disks: Option<u32>,
    #[serde(default)]
    pub layout: LayoutName,
    /// Striping degree Ds, rotational replicas Dr, mirrors Dm (dissertation 2.3.4). For the
    /// eager-writing layouts Ds may be fractional (Ds·Dd whole).
    #[serde(default)]
    pub ds: Option<f64>,
    #[serde(default)]
    pub dr: Option<u32>,
    #[serde(default)]
    pub dm: Option<u32>,
    #[serde(default = "sixty_four_k")]
    pub stripe_unit_bytes: u64,
    /// Striped, mirrored (Dr = 1) and parity layouts: the stripe unit is one track of its
    /// zone instead of `stripe_unit_bytes`, so no unit crosses a track boundary
    /// (track-aligned extents and RAID; docs/track_aligned.md, docs/raid5.md).
    #[serde(default)]
    pub track_aligned: bool,
    #[serde(default)]
    pub placement: Placement,
    #[serde(default)]
    pub writes: WritePolicy,
    #[serde(default = "nvram_default")]
    pub nvram_entries: usize,
    /// The data set the layout spreads over the disks; absent: one disk's capacity (the
    /// dissertation's "D disks hold one disk's worth of data"), the whole array for JBOD.
    #[serde(default)]
    pub data_set_bytes: Option<u64>,
    /// Eager-writing layouts: the dilution Dd = 1 / utilisation (EW-Array paper, 3.1).
    #[serde(default)]
    pub dd: Option<f64>,
    /// Eager-writing layouts: copies written before a write is answered (1 or 2).
    #[serde(default)]
    pub sync_copies: Option<u32>,
    /// Eager-writing layouts: NVRAM buffering logical-to-physical map updates (bytes).
    #[serde(default = "map_nvram_default")]
    pub map_nvram_bytes: u64,
    /// Eager-writing layouts: portions M the map is checkpointed in.
    #[serde(default = "map_portions_default")]
    pub map_portions: u32,
    /// Eager-writing layouts: copies of the map log region, on column 0 of the first
    /// replicas (EW-Array paper, 5.2.2: "can be replicated"); absent: 1, on disk 0 only.
    #[serde(default)]
    pub map_log_replicas: Option<u32>,
    /// Eager-writing layouts: where the free blocks lie at the start (absent: even).
    #[serde(default)]
    pub free_layout: Option<FreeLayout>,
    /// Absent: FCFS, or SATF-EW for the eager-writing layouts.
    #[serde(default)]
    pub scheduler: Option<SchedulerName>,
    /// Serve a request first once it has waited this long (ms); absent: no bound.
    #[serde(default)]
    pub age_bound_ms: Option<f64>,
    #[serde(default = "yes")]
    pub random_phase: bool,
    /// A DiskSim 4.0 `.parv` whose logical organisation is the array: it sets the layout
    /// keys (`config/parv_array.rs`) and, unless `[drive] model` is given, the drive.
    #[serde(default)]
    pub parv: Option<String>,
    /// Paged disk: the page size in KiB (absent: 8).
    #[serde(default)]
    pub page_kb: Option<u64>,
    /// Paged disk: copies of each page around its home track, 1–8 (absent: 1).
    #[serde(default)]
    pub replicas: Option<u32>,
    /// Paged disk: writes may land as bad tenants under the head (absent: true).
    #[serde(default)]
    pub bad_tenants: Option<bool>,
    /// Paged disks with bad tenants: a write of several consecutive pages goes, when it can,
    /// as one run of bad tenants under the head, one disk command (docs/paged.md). Absent:
    /// false, one command per page as in the paper.
    #[serde(default)]
    pub page_runs: Option<bool>,
    /// Paged disk: the cleaner policy, none | idle | dirtiness | piggyback | nightly.
    #[serde(default)]
    pub cleaner: Option<String>,
    /// Paged disk, cleaner "idle": idle time before cleaning starts, ms (absent: 100).
    #[serde(default)]
    pub cleaner_idle_ms: Option<f64>,
    /// Paged disk, cleaner "dirtiness": bad tenants per disk tolerated (absent: 1000).
    #[serde(default)]
    pub cleaner_max_tenants: Option<u64>,
    /// Paged disk, cleaner "nightly": `[start_s, length_s]` of virtual time, every 24 h.
    #[serde(default)]
    pub cleaner_window: Option<Vec<f64>>,
    /// Parity layouts (raid-5, raid-4): disks per parity group G (absent: 5).
    #[serde(default)]
    pub group_width: Option<u32>,
    /// Parity layouts: where each stripe's parity unit lies (absent: left-symmetric for
    /// raid-5; raid-4 keeps it on a dedicated disk).
    #[serde(default)]
    pub parity_rotation: Option<ParityRotation>,
    /// Parity layouts: a partial-stripe write covering more than this fraction of its
    /// stripe's data is a reconstruct-write (absent: 0.5).
    #[serde(default)]
    pub reconstruct_fraction: Option<f64>,
    /// Parity layouts: the non-volatile write cache (absent: 1 MiB; 0: no caches, every
    /// write a classic update).
    #[serde(default)]
    pub write_cache_bytes: Option<u64>,
    /// Parity layouts: the volatile read cache (absent: 8 MiB).
    #[serde(default)]
    pub read_cache_bytes: Option<u64>,
    /// Parity layouts: write-cache blocks kept for newly computed parity (absent: 3).
    #[serde(default)]
    pub parity_reserve_blocks: Option<u32>,
    /// Parity layouts: the destage algorithm (absent: linear-threshold).
    #[serde(default)]
    pub destage: Option<DestageName>,
    /// `destage = "high-low"`: the marks (absent: 0.7 and 0.3).
    #[serde(default)]
    pub destage_high_mark: Option<f64>,
    #[serde(default)]
    pub destage_low_mark: Option<f64>,
    /// `destage = "regions"`: the destage-cost estimate (absent: average).
    #[serde(default)]
    pub destage_estimate: Option<CostEstimate>,
    /// Parity layouts: a disk (0-based) that fails; absent: none does.
    #[serde(default)]
    pub failed_disk: Option<u32>,
    /// With `failed_disk`: when it fails, ms of virtual time (absent: 0, from the start).
    #[serde(default)]
    pub fail_at_ms: Option<f64>,
    /// With `failed_disk`: rebuild it onto a spare (absent: true); false runs degraded.
    #[serde(default)]
    pub rebuild: Option<bool>,
    /// With `failed_disk`: the rebuild's pace in MB/s (10^6 bytes) of the spare (absent: as
    /// fast as the disks allow, one stripe at a time, competing with host I/O).
    #[serde(default)]
    pub rebuild_rate_mb_s: Option<f64>,
    /// Mirrored and rotationally replicated layouts: the fraction of sectors with a latent
    /// (unreadable) error, read from another copy and repaired (absent: none).
    #[serde(default)]
    pub latent_error_rate: Option<f64>,
    /// Parity layouts: the I/O channel between host and controller, MB/s (paper III.B:
    /// 20); absent or 0: not modelled.
    #[serde(default)]
    pub io_bus_mb_s: Option<f64>,
    /// Parity layouts with caches: the read cache's write port every disk read crosses,
    /// MB/s (paper III.B: 20); absent or 0: not modelled.
    #[serde(default)]
    pub cache_port_mb_s: Option<f64>,
    /// Parity layouts without a write cache: run the drives with their own buffer and
    /// controller (absent: false, as in the paper; a DiskSim `parv` array sets it).
    #[serde(default)]
    pub drive_buffers: Option<bool>,
}

/// A destage algorithm by name (Varma & Jacobson, section II).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DestageName {
    Fcfs,
    LeastCost,
    HighLow,
    LinearThreshold,
    Regions,
}

/// The layouts by name; all but JBOD are SR-Mirror shapes Ds × Dr × Dm.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayoutName {
    #[default]
    Jbod,
    #[serde(alias = "raid-0", alias = "stripe")]
    Striping,
    #[serde(alias = "raid-1")]
    Mirror,
    #[serde(rename = "raid-10", alias = "raid10")]
    Raid10,
    StripedMirror,
    SrArray,
    SrMirror,
    /// Eager-writing array Dm × Ds × Dd (EW-Array paper).
    EwArray,
    /// Doubly Distorted Mirror (EW-Array paper, 6.2).
    #[serde(alias = "doubly-distorted-mirror")]
    Ddm,
    /// Parity groups with rotated parity.
    #[serde(rename = "raid-5", alias = "raid5")]
    Raid5,
    /// Parity groups with a dedicated parity disk.
    #[serde(rename = "raid-4", alias = "raid4")]
    Raid4,
    /// Paged disk with bad tenants (paged-disk paper).
    Paged,
}

/// A scheduling policy by name: a disk policy of [`Policy`] or an eager-writing one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SchedulerName {
    Disk(Policy),
    Eager(EwPolicy),
}

impl std::fmt::Display for SchedulerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchedulerName::Disk(p) => p.fmt(f),
            SchedulerName::Eager(p) => p.fmt(f),
        }
    }
}

impl<'de> Deserialize<'de> for SchedulerName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        let value = toml::Value::String(name.clone());
        if let Ok(p) = value.clone().try_into::<Policy>() {
            return Ok(SchedulerName::Disk(p));
        }
        if let Ok(p) = value.try_into::<EwPolicy>() {
            return Ok(SchedulerName::Eager(p));
        }
        Err(serde::de::Error::custom(format!(
            "unknown scheduler {name:?}; expected one of fcfs, sstf, scan, look (rlook), \
             c-look, satf (rsatf), and for eager-writing layouts write-first, read-first, \
             satf-ew, freebw-satf, freebw-scan, freebw-hybrid"
        )))
    }
}

impl LayoutName {
    pub fn name(self) -> &'static str {
        match self {
            LayoutName::Jbod => "jbod",
            LayoutName::Striping => "striping",
            LayoutName::Mirror => "mirror",
            LayoutName::Raid10 => "raid-10",
            LayoutName::StripedMirror => "striped-mirror",
            LayoutName::SrArray => "sr-array",
            LayoutName::SrMirror => "sr-mirror",
            LayoutName::EwArray => "ew-array",
            LayoutName::Ddm => "ddm",
            LayoutName::Raid5 => "raid-5",
            LayoutName::Raid4 => "raid-4",
            LayoutName::Paged => "paged",
        }
    }

    /// The eager-writing layouts.
    pub fn is_eager(self) -> bool {
        matches!(self, LayoutName::EwArray | LayoutName::Ddm)
    }

    /// The parity layouts.
    pub fn is_parity(self) -> bool {
        matches!(self, LayoutName::Raid5 | LayoutName::Raid4)
    }
}

fn sixty_four_k() -> u64 {
    65536
}
fn nvram_default() -> usize {
    DEFAULT_NVRAM_ENTRIES
}

fn one_u32() -> u32 {
    1
}
fn map_nvram_default() -> u64 {
    DEFAULT_NVRAM_BYTES
}
fn map_portions_default() -> u32 {
    DEFAULT_PORTIONS
}
fn yes() -> bool {
    true
}

impl Default for ArraySpec {
    fn default() -> Self {
        ArraySpec {
            disks: None,
            layout: LayoutName::Jbod,
            ds: None,
            dr: None,
            dm: None,
            stripe_unit_bytes: sixty_four_k(),
            track_aligned: false,
            placement: Placement::default(),
            writes: WritePolicy::default(),
            nvram_entries: nvram_default(),
            data_set_bytes: None,
            dd: None,
            sync_copies: None,
            map_nvram_bytes: map_nvram_default(),
            map_portions: map_portions_default(),
            map_log_replicas: None,
            free_layout: None,
            scheduler: None,
            age_bound_ms: None,
            random_phase: true,
            parv: None,
            page_kb: None,
            replicas: None,
            bad_tenants: None,
            page_runs: None,
            cleaner: None,
            cleaner_idle_ms: None,
            cleaner_max_tenants: None,
            cleaner_window: None,
            group_width: None,
            parity_rotation: None,
            reconstruct_fraction: None,
            write_cache_bytes: None,
            read_cache_bytes: None,
            parity_reserve_blocks: None,
            destage: None,
            destage_high_mark: None,
            destage_low_mark: None,
            destage_estimate: None,
            failed_disk: None,
            latent_error_rate: None,
            fail_at_ms: None,
            rebuild: None,
            rebuild_rate_mb_s: None,
            io_bus_mb_s: None,
            cache_port_mb_s: None,
            drive_buffers: None,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    Closed,
    Open,
    Trace,
    /// A DiskSim validate trace replayed closed-loop with its think times.
    Validate,
    /// Process groups with history-buffer locality and bursts (Varma & Jacobson, ISCA '95).
    Groups,
    /// A power-aware disaster-recovery secondary applying a forwarded update stream
    /// (`[workload.dr]`, docs/dr.md).
    Dr,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub kind: WorkloadKind,
    #[serde(default = "one_u32")]
    pub queue_depth: u32,
    /// Absent: 1.0, or the paper's 0.6 for `groups` ([`WorkloadSpec::read_fraction`]).
    #[serde(default, rename = "read_fraction")]
    pub read_fraction_given: Option<f64>,
    #[serde(default = "four_k")]
    pub size_bytes: u64,
    /// A size distribution `[[bytes, weight], …]`; replaces `size_bytes`.
    #[serde(default)]
    pub sizes: Option<Vec<(u64, f64)>>,
    #[serde(default = "four_k")]
    pub alignment_bytes: u64,
    /// Size of the data set; absent: the whole array.
    #[serde(default)]
    pub data_set_bytes: Option<u64>,
    #[serde(default)]
    pub sequential_fraction: f64,
    /// Open loop: mean arrival rate (requests per second).
    #[serde(default)]
    pub rate_iops: Option<f64>,
    #[serde(default)]
    pub trace: Option<TraceSpec>,
    #[serde(default)]
    pub validate: Option<ValidateSpec>,
    /// `kind = "groups"`: the process groups; absent: the paper's defaults.
    #[serde(default)]
    pub groups: Option<GroupsSpec>,
    /// `kind = "dr"`: the update stream, window and RTO.
    #[serde(default)]
    pub dr: Option<dr::DrSpec>,
}

impl WorkloadSpec {
    /// The fraction of reads: as given, else 0.6 for `groups` (the paper's 40 % writes) and
    /// 1.0 for the other kinds.
    pub fn read_fraction(&self) -> f64 {
        self.read_fraction_given
            .unwrap_or(if self.kind == WorkloadKind::Groups {
                0.6
            } else {
                1.0
            })
    }
}

/// `[workload.groups]`: the process-group workload (docs/workload.md). The rate, the read
/// fraction and the data set are `[workload]`'s `rate_iops`, `read_fraction` and
/// `data_set_bytes`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupsSpec {
    /// Process groups N.
    #[serde(default = "groups_count")]
    pub count: u32,
    /// Groups addressing the whole data set (the last ones); the others a subset each.
    #[serde(default = "one_u32")]
    pub global_groups: u32,
    /// A subset group's share of the data set (one contiguous run at a random block).
    #[serde(default = "groups_subset")]
    pub subset_fraction: f64,
    /// The unit of addresses and sizes.
    #[serde(default = "four_k")]
    pub block_bytes: u64,
    /// Mean request size in blocks (a discretised half-normal from one block).
    #[serde(default = "groups_mean_blocks")]
    pub mean_blocks: f64,
    /// The history buffers' total size, split evenly among the groups.
    #[serde(default = "groups_history")]
    pub history_bytes: u64,
    /// Chance a read takes an address from its group's history.
    #[serde(default = "groups_read_history")]
    pub read_history_fraction: f64,
    /// Chance a write takes an address from its group's history.
    #[serde(default = "groups_write_history")]
    pub write_history_fraction: f64,
    /// Of the writes using the history, the share taking an old write (the rest an old read).
    #[serde(default = "groups_write_from_writes")]
    pub write_from_writes_fraction: f64,
    /// σ of the half-normal history position, as a fraction of the history's length.
    #[serde(default = "groups_sigma")]
    pub history_sigma_fraction: f64,
    /// Coefficient of variation (sd / mean) of each group's normal inter-arrival gaps.
    #[serde(default = "groups_cv")]
    pub arrival_cv: f64,
    /// Rate multiplier during bursts (default 3 when bursts are on).
    #[serde(default)]
    pub burst_factor: Option<f64>,
    /// Bursts: each lasts this long (seconds); absent: no bursts.
    #[serde(default)]
    pub burst_length_s: Option<f64>,
    /// Bursts repeat with this period (seconds).
    #[serde(default)]
    pub burst_period_s: Option<f64>,
    /// The first (or only) burst begins here (seconds); periodic default: period − length.
    #[serde(default)]
    pub burst_start_s: Option<f64>,
}

fn groups_count() -> u32 {
    crate::workload::process_groups::DEFAULT_GROUPS
}
fn groups_subset() -> f64 {
    crate::workload::process_groups::DEFAULT_SUBSET_FRACTION
}
fn groups_mean_blocks() -> f64 {
    crate::workload::process_groups::DEFAULT_MEAN_BLOCKS
}
fn groups_history() -> u64 {
    crate::workload::process_groups::DEFAULT_HISTORY_BYTES
}
fn groups_read_history() -> f64 {
    crate::workload::process_groups::DEFAULT_READ_HISTORY_FRACTION
}
fn groups_write_history() -> f64 {
    crate::workload::process_groups::DEFAULT_WRITE_HISTORY_FRACTION
}
fn groups_write_from_writes() -> f64 {
    crate::workload::process_groups::DEFAULT_WRITE_FROM_WRITES_FRACTION
}
fn groups_sigma() -> f64 {
    crate::workload::process_groups::DEFAULT_HISTORY_SIGMA_FRACTION
}
fn groups_cv() -> f64 {
    crate::workload::process_groups::DEFAULT_ARRIVAL_CV
}

impl Default for GroupsSpec {
    fn default() -> Self {
        GroupsSpec {
            count: groups_count(),
            global_groups: 1,
            subset_fraction: groups_subset(),
            block_bytes: four_k(),
            mean_blocks: groups_mean_blocks(),
            history_bytes: groups_history(),
            read_history_fraction: groups_read_history(),
            write_history_fraction: groups_write_history(),
            write_from_writes_fraction: groups_write_from_writes(),
            history_sigma_fraction: groups_sigma(),
            arrival_cv: groups_cv(),
            burst_factor: None,
            burst_length_s: None,
            burst_period_s: None,
            burst_start_s: None,
        }
    }
}

fn one_f64() -> f64 {
    1.0
}
fn four_k() -> u64 {
    4096
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    pub path: String,
    /// Format name; absent: detected from the content.
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default = "one_f64")]
    pub speedup: f64,
    /// Replay only arrivals within this window (seconds from the trace's first arrival).
    #[serde(default)]
    pub start_s: Option<f64>,
    #[serde(default)]
    pub end_s: Option<f64>,
    /// Keep only these traced devices.
    #[serde(default)]
    pub devices: Option<Vec<u32>>,
    /// Concatenate the traced devices into one logical data set (dissertation 4.2.1); when
    /// false, device d is replayed on disk d.
    #[serde(default = "yes")]
    pub concat: bool,
    /// What to do when the traced address space is larger than the array: `error` (default)
    /// or `scale` (map addresses linearly onto the array, keeping relative seek distances).
    #[serde(default)]
    pub fit: TraceFit,
    /// At most this many requests outstanding in the array (a host queue depth); requests
    /// arriving when it is full wait at the host and their latency counts from issue.
    #[serde(default)]
    pub max_outstanding: Option<u32>,
    /// Split every request into requests of at most one page of this many KiB, at multiples
    /// of it, all at the request's arrival: the page stream a buffer pool issues (the
    /// paged-disk paper's trace; docs/traces.md). Absent: requests as traced.
    #[serde(default)]
    pub split_kb: Option<u32>,
}

/// `kind = "validate"`: a DiskSim validate trace (`R|W Hit|Miss|Doub|Trip lbn nsectors
/// measured_us think_us`) replayed closed-loop with one request outstanding, each request
/// issued its predecessor's think time after the predecessor completes.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateSpec {
    pub path: String,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFit {
    #[default]
    Error,
    Scale,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Requests to issue (synthetic workloads; a trace replays all its requests).
    #[serde(default = "ten_thousand")]
    pub requests: u64,
    /// Requests excluded at the start; absent: 15 % of `requests` for synthetic workloads
    /// (the dissertation measures the middle 7,000 of 10,000), 0 for traces.
    #[serde(default)]
    pub warmup_requests: Option<u64>,
    #[serde(default)]
    pub cooldown_requests: Option<u64>,
    /// Go on after the last host request until no deferred work (delayed copies, eager
    /// propagations, map log appends) is left, and report how long that took (`drain_s`).
    #[serde(default)]
    pub drain: bool,
    /// Sample the array's state every this many ms of virtual time (`spindle run --series`).
    #[serde(default)]
    pub series_ms: Option<f64>,
    /// Stop once the measured requests' mean latency is proven to exceed this many ms (the
    /// report says so: `stopped`); for sweeps and the advisor, where a saturated
    /// configuration is out of the question long before its run would end.
    #[serde(default)]
    pub give_up_mean_ms: Option<f64>,
}

fn ten_thousand() -> u64 {
    10_000
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            requests: ten_thousand(),
            warmup_requests: None,
            cooldown_requests: None,
            drain: false,
            series_ms: None,
            give_up_mean_ms: None,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareSpec {
    pub label: String,
    /// Overrides of the base experiment: dotted key → value.
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
}

/// A configuration error: where, which key, what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{origin}{}: {msg}", line.map(|l| format!(": line {l}")).unwrap_or_default())]
pub struct ConfigError {
    pub origin: String,
    pub line: Option<usize>,
    pub msg: String,
}

/// A key set on top of a parsed experiment by a driver such as a sweep
/// ([`Experiment::with_settings`]): errors in it name where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// A dotted key, e.g. `workload.queue_depth`.
    pub key: String,
    pub value: toml::Value,
    /// Where the value came from, e.g. `axis workload.queue_depth`.
    pub from: String,
    /// The line of the file it came from, when known.
    pub line: Option<usize>,
}

impl Setting {
    /// Whether an error about `key` concerns this setting (the key itself or a key inside it).
    fn covers(&self, key: &str) -> bool {
        key == self.key
            || key
                .strip_prefix(self.key.as_str())
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    }
}

/// A parsed experiment with the text it came from (to point errors at lines).
#[derive(Clone, Debug)]
pub struct Experiment {
    pub spec: ExperimentSpec,
    origin: String,
    doc: toml::Table,
    text: String,
    sets: Vec<String>,
    /// Keys removed by `--unset` (or by `spindle run` for `--set array.…` on the default).
    unsets: Vec<String>,
    settings: Vec<Setting>,
}

impl Experiment {
    /// Parses `text` (from `origin`, a file name or "built-in default") and applies `sets`
    /// (`key=value`, value in TOML syntax; a bare word is taken as a string).
    pub fn parse(text: &str, origin: &str, sets: &[String]) -> Result<Experiment, ConfigError> {
        Self::parse_with(text, origin, &[], sets)
    }

    /// [`Experiment::parse`] that first removes the dotted keys `unsets` (`--unset`; a table
    /// goes with everything in it), then applies `sets`.
    pub fn parse_with(
        text: &str,
        origin: &str,
        unsets: &[String],
        sets: &[String],
    ) -> Result<Experiment, ConfigError> {
        let err = |line: Option<usize>, msg: String| ConfigError {
            origin: origin.to_string(),
            line,
            msg,
        };
        let mut doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e.span().map(|s| line_of(text, s.start));
            err(line, e.message().to_string())
        })?;
        if doc.contains_key("axis") {
            return Err(err(
                key_line(text, "axis"),
                "axis: [[axis]] tables make this a sweep file; run it with `spindle sweep FILE`"
                    .into(),
            ));
        }
        for key in unsets {
            remove_path(&mut doc, key).map_err(|m| err(None, format!("--unset {key}: {m}")))?;
        }
        for set in sets {
            apply_set(&mut doc, set).map_err(|m| err(None, format!("--set {set}: {m}")))?;
        }
        let spec = spec_from(&doc, text, origin, sets, &[])?;
        Ok(Experiment {
            spec,
            origin: origin.to_string(),
            doc,
            text: text.to_string(),
            sets: sets.to_vec(),
            unsets: unsets.to_vec(),
            settings: Vec::new(),
        })
    }

    /// This experiment with `settings` applied on top (after its `--set` overrides), as a
    /// sweep builds its points. An error in a setting names its key and where it came from.
    pub fn with_settings(&self, settings: &[Setting]) -> Result<Experiment, ConfigError> {
        let mut doc = self.doc.clone();
        let mut all = self.settings.clone();
        all.extend_from_slice(settings);
        for s in settings {
            let fail = |msg: &str| ConfigError {
                origin: self.origin.clone(),
                line: s.line,
                msg: format!("{} (from {}): {msg}", s.key, s.from),
            };
            if s.key.split('.').next() == Some("compare") {
                return Err(fail("`compare` cannot be set here"));
            }
            set_path(&mut doc, &s.key, s.value.clone()).map_err(|m| fail(&m))?;
        }
        let spec = spec_from(&doc, &self.text, &self.origin, &self.sets, &all)?;
        Ok(Experiment {
            spec,
            origin: self.origin.clone(),
            doc,
            text: self.text.clone(),
            sets: self.sets.clone(),
            unsets: self.unsets.clone(),
            settings: all,
        })
    }

    /// An error about `key`, pointing at its line in the file when it is there.
    pub fn error(&self, key: &str, msg: impl Into<String>) -> ConfigError {
        let from_set = self
            .sets
            .iter()
            .any(|s| s.split('=').next().map(str::trim) == Some(key));
        let msg = msg.into();
        if let Some(s) = self.settings.iter().rev().find(|s| s.covers(key)) {
            return ConfigError {
                origin: self.origin.clone(),
                line: s.line,
                msg: format!("{key} (from {}): {msg}", s.from),
            };
        }
        if from_set {
            return ConfigError {
                origin: self.origin.clone(),
                line: None,
                msg: format!("{key} (from --set): {msg}"),
            };
        }
        // A key the overrides removed has no line; overrides of the same table may be the
        // cause of an error about a key they left alone.
        let table = key.split(['.', '[']).next();
        let related: Vec<String> = self
            .sets
            .iter()
            .filter(|s| s.split(['.', '=']).next().map(str::trim) == table)
            .map(|s| format!("--set {s}"))
            .collect();
        let note = if related.is_empty() {
            String::new()
        } else {
            format!(" (with {})", related.join(" "))
        };
        ConfigError {
            origin: self.origin.clone(),
            line: (doc_has(&self.doc, key) && !self.removed(key))
                .then(|| key_line(&self.text, key))
                .flatten(),
            msg: format!("{key}: {msg}{note}"),
        }
    }

    /// Whether `key`, or a table holding it, was removed from the text: its line there is
    /// not where its value came from.
    fn removed(&self, key: &str) -> bool {
        self.unsets.iter().any(|u| {
            key == u
                || key
                    .strip_prefix(u.as_str())
                    .is_some_and(|rest| rest.starts_with(['.', '[']))
        })
    }

    /// The base experiment followed by one experiment per `[[compare]]` entry.
    pub fn variants(&self) -> Result<Vec<(String, Experiment)>, ConfigError> {
        let base_label = self.spec.name.clone().unwrap_or_else(|| "base".to_string());
        let mut out = vec![(base_label, self.clone())];
        for (i, c) in self.spec.compare.iter().enumerate() {
            let mut doc = self.doc.clone();
            doc.remove("compare");
            for (k, v) in &c.set {
                if k.starts_with("compare") {
                    return Err(self.error(
                        &format!("compare[{i}].set"),
                        "a comparison cannot set `compare`",
                    ));
                }
                set_path(&mut doc, k, v.clone())
                    .map_err(|m| self.error(&format!("compare[{i}].set.{k}"), m))?;
            }
            let spec = spec_from(&doc, &self.text, &self.origin, &self.sets, &self.settings)
                .map_err(|e| ConfigError {
                    msg: format!("compare[{i}] ({}): {}", c.label, e.msg),
                    ..e
                })?;
            out.push((
                c.label.clone(),
                Experiment {
                    spec,
                    origin: self.origin.clone(),
                    doc,
                    text: self.text.clone(),
                    sets: self.sets.clone(),
                    unsets: self.unsets.clone(),
                    settings: self.settings.clone(),
                },
            ));
        }
        Ok(out)
    }
}

fn spec_from(
    doc: &toml::Table,
    text: &str,
    origin: &str,
    sets: &[String],
    settings: &[Setting],
) -> Result<ExperimentSpec, ConfigError> {
    let located = |path: String, line: Option<usize>, msg: &str| {
        let key = if path.is_empty() || path == "." {
            String::new()
        } else {
            format!("{path}: ")
        };
        ConfigError {
            origin: origin.to_string(),
            line,
            msg: format!("{key}{msg}"),
        }
    };
    // The file as written first: its errors carry spans, hence line numbers.
    if let Err(e) =
        serde_path_to_error::deserialize::<_, ExperimentSpec>(toml::Deserializer::new(text))
    {
        let line = e.inner().span().map(|s| line_of(text, s.start));
        return Err(located(e.path().to_string(), line, e.inner().message()));
    }
    // Then with the overrides applied: an error now comes from an override.
    serde_path_to_error::deserialize::<_, ExperimentSpec>(toml::Value::Table(doc.clone())).map_err(
        |e| {
            let path = e.path().to_string();
            if let Some(s) = settings.iter().rev().find(|s| s.covers(&path)) {
                return ConfigError {
                    origin: origin.to_string(),
                    line: s.line,
                    msg: format!("{path} (from {}): {}", s.from, e.inner().message()),
                };
            }
            let mut note = if sets.is_empty() {
                String::new()
            } else {
                format!(" (with --set {})", sets.join(" "))
            };
            if !settings.is_empty() {
                let from: Vec<&str> = settings.iter().map(|s| s.from.as_str()).collect();
                note += &format!(" (with {})", from.join(", "));
            }
            located(path, None, &format!("{}{note}", e.inner().message()))
        },
    )
}

pub(crate) fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].matches('\n').count() + 1
}

/// Whether the dotted key (`a.b`, `a[0].b`) is in `doc`.
fn doc_has(doc: &toml::Table, key: &str) -> bool {
    let mut item: Option<&toml::Value> = None;
    for (i, part) in key.split('.').enumerate() {
        let (name, index) = match part.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        let next = if i == 0 {
            doc.get(name)
        } else {
            item.and_then(|v| v.get(name))
        };
        item = match index {
            Some(ix) => next.and_then(|v| v.get(ix)),
            None => next,
        };
        if item.is_none() {
            return false;
        }
    }
    true
}

/// The line where a dotted key is defined, found with toml_edit's spans.
pub(crate) fn key_line(text: &str, key: &str) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text.to_string()).ok()?;
    let mut item = doc.as_item();
    let mut span = None;
    for part in key.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        item = item.get(name)?;
        if let Some(i) = index {
            item = item.get(i)?;
        }
        span = item.span().or(span);
    }
    span.map(|s| line_of(text, s.start))
}

fn apply_set(doc: &mut toml::Table, set: &str) -> Result<(), String> {
    let (key, raw) = set.split_once('=').ok_or("expected key=value")?;
    let (key, raw) = (key.trim(), raw.trim());
    if key.is_empty() {
        return Err("empty key".into());
    }
    let value = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    set_path(doc, key, value)
}

/// Removes a dotted key (a value or a whole table) from `doc`.
fn remove_path(doc: &mut toml::Table, key: &str) -> Result<(), String> {
    let mut parts: Vec<&str> = key.trim().split('.').collect();
    let last = parts.pop().filter(|l| !l.is_empty()).ok_or("empty key")?;
    let mut table = doc;
    for p in parts {
        table = table
            .get_mut(p)
            .and_then(toml::Value::as_table_mut)
            .ok_or_else(|| format!("`{p}` is not a table of the experiment"))?;
    }
    table
        .remove(last)
        .map(|_| ())
        .ok_or_else(|| "not set in the experiment".to_string())
}

pub(crate) fn set_path(doc: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().ok_or("empty key")?;
    let mut table = doc;
    for p in parts {
        let entry = table
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        table = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{p}` is not a table"))?;
    }
    table.insert(last.to_string(), value);
    Ok(())
}

/// Reads a file named by an experiment (a drive file or a trace); the CLI supplies it.
pub type ReadFile<'a> = &'a dyn Fn(&str) -> Result<Vec<u8>, String>;

/// A trace opener: turns the experiment's trace spec into timed host requests (the CLI
/// provides it, since opening files is I/O). Arguments: the spec, the drive's sector size,
/// the array's disk count and per-disk capacity in sectors.
pub type OpenTrace<'a> =
    &'a dyn Fn(&TraceSpec, u32, u32, u64) -> Result<(Arrivals<'static>, Option<u64>), String>;

/// A validate-trace opener (the CLI provides it): the spec and the drive's sector size give
/// the replay's requests and their count when known.
pub type OpenValidate<'a> =
    &'a dyn Fn(&ValidateSpec, u32) -> Result<(ReplayRequests<'static>, Option<u64>), String>;

/// Resolves `drive.model`: a built-in id, else a drive file path.
pub fn resolve_drive(model: &str, read_file: ReadFile<'_>) -> Result<Drive, String> {
    if crate::drive::library::builtin_spec(model).is_some() {
        return builtin_drive(model).map_err(|e| format!("built-in drive {model}: {e}"));
    }
    if model.ends_with(".parv") {
        // A DiskSim 4.0 model: its `source` includes are read beside the .parv (the importer
        // joins each name to the including file's directory).
        let read = |p: &str| -> Result<String, String> {
            let bytes = read_file(p)?;
            String::from_utf8(bytes).map_err(|_| format!("{p}: not UTF-8 text"))
        };
        let spec = crate::drive::disksim::import_parv(model, &read).map_err(|e| e.to_string())?;
        return Drive::from_spec(&spec).map_err(|e| format!("{model}: {e}"));
    }
    if model.ends_with(".toml") || model.contains('/') {
        let bytes = read_file(model)?;
        let text = String::from_utf8(bytes).map_err(|_| format!("{model}: not UTF-8 text"))?;
        return parse_drive(&text).map_err(|e| format!("{model}: {e}"));
    }
    Err(builtin_drive(model)
        .expect_err("not a built-in id")
        .to_string())
}

impl Experiment {
    /// Validates and runs every variant; the first is the report, the rest its `compare`.
    /// A `kind = "validate"` workload needs [`Experiment::run_with`].
    pub fn run(
        &self,
        read_file: ReadFile<'_>,
        open_trace: OpenTrace<'_>,
        progress: &mut dyn FnMut(usize, usize, u64, Option<u64>),
    ) -> Result<Report, ConfigError> {
        let no_validate =
            |_: &ValidateSpec, _: u32| -> Result<(ReplayRequests<'static>, Option<u64>), String> {
                Err("this driver cannot open validate traces".into())
            };
        self.run_with(read_file, open_trace, &no_validate, progress)
    }

    /// [`Experiment::run`] with an opener for `kind = "validate"` traces too.
    pub fn run_with(
        &self,
        read_file: ReadFile<'_>,
        open_trace: OpenTrace<'_>,
        open_validate: OpenValidate<'_>,
        progress: &mut dyn FnMut(usize, usize, u64, Option<u64>),
    ) -> Result<Report, ConfigError> {
        let variants = self.variants()?;
        let count = variants.len();
        let mut reports = Vec::with_capacity(count);
        for (i, (label, exp)) in variants.into_iter().enumerate() {
            let mut report = exp.run_one(read_file, open_trace, open_validate, &mut |d, t| {
                progress(i, count, d, t)
            })?;
            report.label = label;
            reports.push(report);
        }
        // A run may bring rows of its own (a DR secondary's immediate secondary): each
        // follows its configuration's row.
        let mut base = reports.remove(0);
        for mut r in reports {
            let own = std::mem::take(&mut r.compare);
            base.compare.push(r);
            base.compare.extend(own);
        }
        Ok(base)
    }

    /// The array's shape from `[array]`: the layout's dimensions, each given or derived
    /// from `disks` (D = Ds·Dr·Dm).
    pub fn shape(&self) -> Result<Shape, ConfigError> {
        let a = &self.spec.array;
        let dim = |key: &str, v: Option<u32>| -> Result<Option<u32>, ConfigError> {
            match v {
                Some(0) => Err(self.error(&format!("array.{key}"), "must be >= 1, got 0")),
                v => Ok(v),
            }
        };
        if a.layout.is_eager() || a.layout.is_parity() || a.layout == LayoutName::Paged {
            return Err(self.error(
                "array.layout",
                format!("\"{}\" is not a Ds x Dr x Dm layout", a.layout.name()),
            ));
        }
        let ds = match a.ds {
            Some(v) if v.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&v) => {
                return Err(self.error(
                    "array.ds",
                    format!(
                        "must be a whole number for layout \"{}\", got {v}",
                        a.layout.name()
                    ),
                ))
            }
            v => v.map(|v| v as u32),
        };
        let (ds, dr, dm) = (dim("ds", ds)?, dim("dr", a.dr)?, dim("dm", a.dm)?);
        let disks = match a.disks {
            Some(d) if !(1..=MAX_DISKS).contains(&d) => {
                return Err(self.error(
                    "array.disks",
                    format!("must be within 1..={MAX_DISKS}, got {d}"),
                ))
            }
            d => d,
        };
        // Dimensions fixed by the layout's name, then the free ones.
        let fixed: [Option<u32>; 3] = match a.layout {
            LayoutName::Jbod => {
                for (k, v) in [("ds", ds), ("dr", dr), ("dm", dm)] {
                    if v.is_some() {
                        return Err(self.error(
                            &format!("array.{k}"),
                            "a JBOD has no striping, replication or mirroring dimensions",
                        ));
                    }
                }
                return Ok(Shape::Jbod {
                    disks: disks.unwrap_or(1),
                });
            }
            LayoutName::Striping => [None, Some(1), Some(1)],
            LayoutName::Mirror => [Some(1), Some(1), None],
            LayoutName::Raid10 => [None, Some(1), Some(2)],
            LayoutName::StripedMirror => [None, Some(1), None],
            LayoutName::SrArray => [None, None, Some(1)],
            LayoutName::SrMirror => [None, None, None],
            LayoutName::EwArray
            | LayoutName::Ddm
            | LayoutName::Raid5
            | LayoutName::Raid4
            | LayoutName::Paged => {
                unreachable!("handled above")
            }
        };
        let names = ["ds", "dr", "dm"];
        let mut dims = [ds, dr, dm];
        for i in 0..3 {
            if let (Some(f), Some(v)) = (fixed[i], dims[i]) {
                if f != v {
                    return Err(self.error(
                        &format!("array.{}", names[i]),
                        format!("is {f} for layout \"{}\", got {v}", a.layout.name()),
                    ));
                }
            }
            dims[i] = dims[i].or(fixed[i]);
        }
        let missing: Vec<usize> = (0..3).filter(|&i| dims[i].is_none()).collect();
        match (missing.as_slice(), disks) {
            ([], _) => {}
            ([i], Some(d)) => {
                let known: u32 = dims.iter().flatten().product();
                if d % known != 0 {
                    return Err(self.error(
                        "array.disks",
                        format!(
                            "{d} disks cannot be divided by the other dimensions' product {known} to find {}",
                            names[*i]
                        ),
                    ));
                }
                dims[*i] = Some(d / known);
            }
            (m, _) => {
                let keys: Vec<String> = m.iter().map(|&i| format!("array.{}", names[i])).collect();
                return Err(self.error(
                    "array.layout",
                    format!(
                        "give {}{}",
                        keys.join(" and "),
                        if m.len() == 1 { " or array.disks" } else { "" }
                    ),
                ));
            }
        }
        let [ds, dr, dm] = dims.map(|d| d.expect("every dimension resolved"));
        let shape = Shape::SrMirror { ds, dr, dm };
        let total = u64::from(ds) * u64::from(dr) * u64::from(dm);
        if let Some(d) = disks {
            if u64::from(d) != total {
                return Err(self.error(
                    "array.disks",
                    format!("{d} disks, but Ds x Dr x Dm = {ds} x {dr} x {dm} = {total}"),
                ));
            }
        }
        if total > u64::from(MAX_DISKS) {
            return Err(self.error(
                "array.layout",
                format!("{total} disks; at most {MAX_DISKS}"),
            ));
        }
        Ok(shape)
    }

    /// An eager-writing layout's shape Dm × Ds × Dd from `[array]`: all three given, or two
    /// and `disks` (D = Dm·Ds·Dd).
    pub fn ew_shape(&self) -> Result<EwShape, ConfigError> {
        let a = &self.spec.array;
        let ddm = a.layout == LayoutName::Ddm;
        if let Some(dr) = a.dr.filter(|&d| d != 1) {
            return Err(self.error(
                "array.dr",
                format!("eager-writing layouts have no rotational replicas: Dr is 1, got {dr}"),
            ));
        }
        let positive = |key: &str, v: Option<f64>| -> Result<Option<f64>, ConfigError> {
            match v {
                Some(x) if !(x.is_finite() && x > 0.0) => {
                    Err(self.error(&format!("array.{key}"), format!("must be > 0, got {x}")))
                }
                v => Ok(v),
            }
        };
        let mut dm = a.dm.map(f64::from);
        if ddm {
            match a.dm {
                Some(v) if v != 2 => {
                    return Err(self.error("array.dm", format!("is 2 for layout \"ddm\", got {v}")))
                }
                _ => dm = Some(2.0),
            }
        }
        let mut dims = [
            positive("dm", dm)?,
            positive("ds", a.ds)?,
            positive("dd", a.dd)?,
        ];
        let names = ["dm", "ds", "dd"];
        let missing: Vec<usize> = (0..3).filter(|&i| dims[i].is_none()).collect();
        match (missing.as_slice(), a.disks) {
            ([], _) => {}
            ([i], Some(d)) => {
                let known: f64 = dims.iter().flatten().product();
                dims[*i] = Some(f64::from(d) / known);
            }
            (m, _) => {
                let keys: Vec<String> = m.iter().map(|&i| format!("array.{}", names[i])).collect();
                return Err(self.error(
                    "array.layout",
                    format!(
                        "give {}{}",
                        keys.join(" and "),
                        if m.len() == 1 { " or array.disks" } else { "" }
                    ),
                ));
            }
        }
        let [dm, ds, dd] = dims.map(|d| d.expect("every dimension resolved"));
        if dm.fract() != 0.0 || dm < 1.0 {
            return Err(self.error(
                "array.dm",
                format!("must be a whole number of replicas >= 1, got {dm}"),
            ));
        }
        if dd.is_nan() || dd <= 1.0 {
            return Err(self.error(
                "array.dd",
                format!("must be > 1 (the dilution 1/utilisation: eager writing needs free blocks), got {dd}"),
            ));
        }
        let shape = EwShape {
            dm: dm as u32,
            ds,
            dd,
            ddm,
        };
        let total = shape.disks().ok_or_else(|| {
            self.error(
                "array.dd",
                format!(
                    "Ds x Dd = {ds} x {dd} = {} must be a whole number of disks",
                    ds * dd
                ),
            )
        })?;
        if let Some(d) = a.disks {
            if d != total {
                return Err(self.error(
                    "array.disks",
                    format!("{d} disks, but Dm x Ds x Dd = {dm} x {ds} x {dd} = {total}"),
                ));
            }
        }
        if total > MAX_DISKS {
            return Err(self.error(
                "array.layout",
                format!("{total} disks; at most {MAX_DISKS}"),
            ));
        }
        Ok(shape)
    }

    /// Checks every variant as [`Experiment::run_with`] would before simulating (the drive,
    /// the array, the workload, opening its trace, the measurement window), without running.
    pub fn check(
        &self,
        read_file: ReadFile<'_>,
        open_trace: OpenTrace<'_>,
        open_validate: OpenValidate<'_>,
    ) -> Result<(), ConfigError> {
        for (_, exp) in self.variants()? {
            if exp.spec.workload.kind == WorkloadKind::Dr {
                exp.check_dr(read_file)?;
                continue;
            }
            exp.prepare(read_file, open_trace, open_validate)?;
        }
        Ok(())
    }

    fn run_one(
        &self,
        read_file: ReadFile<'_>,
        open_trace: OpenTrace<'_>,
        open_validate: OpenValidate<'_>,
        progress: &mut dyn FnMut(u64, Option<u64>),
    ) -> Result<Report, ConfigError> {
        if self.spec.workload.kind == WorkloadKind::Dr {
            return self.run_dr(read_file, open_trace, progress);
        }
        let Prepared {
            array,
            layout_label,
            scheduler_label,
            workload,
            window,
            drive_id,
            workload_label,
        } = self.prepare(read_file, open_trace, open_validate)?;
        let s = &self.spec;
        let trace_key = match s.workload.kind {
            WorkloadKind::Validate => "workload.validate.path",
            WorkloadKind::Groups => "workload.groups",
            _ => "workload.trace.path",
        };
        let array_disks = array.disk_count();
        let mut report = sim::run(array, workload, window, progress).map_err(|e| match e {
            SimError::Workload(m) => self.error(trace_key, m),
            other => self.error("workload", other.to_string()),
        })?;
        report.drive = drive_id;
        report.disks_count = array_disks;
        report.layout = layout_label;
        report.scheduler = scheduler_label;
        report.workload = workload_label;
        report.seed = s.seed;
        Ok(report)
    }

    /// Everything up to the simulation: the array and workload built and checked.
    fn prepare(
        &self,
        read_file: ReadFile<'_>,
        open_trace: OpenTrace<'_>,
        open_validate: OpenValidate<'_>,
    ) -> Result<Prepared, ConfigError> {
        let s = &self.spec;
        let (drive, built) = self.build(read_file)?;
        let sector_bytes = u64::from(drive.geometry().sector_bytes());
        let per_disk = drive.capacity_sectors();
        let Built {
            array,
            jbod_disks,
            layout_label,
            scheduler_label,
            ..
        } = built;
        let capacity_bytes = array.capacity_sectors() * sector_bytes;
        let w = &s.workload;
        let r = &s.run;
        let synthetic = !matches!(w.kind, WorkloadKind::Trace | WorkloadKind::Validate);
        if synthetic && r.requests == 0 {
            return Err(self.error("run.requests", "must be >= 1, got 0"));
        }
        if synthetic && r.requests > MAX_REQUESTS {
            return Err(self.error(
                "run.requests",
                format!("must be at most {MAX_REQUESTS} (10^15), got {}", r.requests),
            ));
        }
        let warmup = r
            .warmup_requests
            .unwrap_or(if synthetic { r.requests * 15 / 100 } else { 0 });
        let cooldown =
            r.cooldown_requests
                .unwrap_or(if synthetic { r.requests * 15 / 100 } else { 0 });
        if synthetic && warmup.checked_add(cooldown).is_none_or(|n| n >= r.requests) {
            return Err(self.error("run.warmup_requests", format!("warm-up ({warmup}) plus cool-down ({cooldown}) leave no measured requests of {}", r.requests)));
        }
        if w.groups.is_some() && w.kind != WorkloadKind::Groups {
            return Err(self.error("workload.groups", "applies to kind = \"groups\""));
        }
        let workload_label;
        let workload = match w.kind {
            WorkloadKind::Dr => {
                return Err(self.error(
                    "workload.kind",
                    "a \"dr\" workload runs through the DR secondary, not this driver",
                ))
            }
            WorkloadKind::Closed | WorkloadKind::Open => {
                let mix = self.mix(w, sector_bytes, capacity_bytes)?;
                let size_label = if w.sizes.is_some() {
                    "mixed sizes".to_string()
                } else {
                    format!("{} KiB", w.size_bytes as f64 / 1024.0)
                };
                let seq = if w.sequential_fraction > 0.0 {
                    format!(", {:.0}% sequential", 100.0 * w.sequential_fraction)
                } else {
                    String::new()
                };
                if w.kind == WorkloadKind::Closed {
                    if w.queue_depth == 0 {
                        return Err(self.error("workload.queue_depth", "must be >= 1, got 0"));
                    }
                    if w.queue_depth > MAX_QUEUE_DEPTH {
                        return Err(self.error(
                            "workload.queue_depth",
                            format!("must be at most {MAX_QUEUE_DEPTH}, got {}", w.queue_depth),
                        ));
                    }
                    workload_label = format!(
                        "closed Q={}, {:.0}% reads, {size_label}{seq}",
                        w.queue_depth,
                        100.0 * w.read_fraction()
                    );
                    Workload::Closed {
                        generator: Generator::new(mix, w.queue_depth as usize, s.seed),
                        queue_depth: w.queue_depth as usize,
                        requests: r.requests,
                    }
                } else {
                    let rate = w.rate_iops.ok_or_else(|| {
                        self.error(
                            "workload.rate_iops",
                            "an open-loop workload needs an arrival rate",
                        )
                    })?;
                    // Below 0.001/s the gaps of a long run overflow 64-bit nanoseconds.
                    if !(rate.is_finite() && (1e-3..=1e9).contains(&rate)) {
                        return Err(self.error(
                            "workload.rate_iops",
                            format!("must be within 0.001..=1e9 requests per second, got {rate:?}"),
                        ));
                    }
                    workload_label = format!(
                        "open {rate} IOPS, {:.0}% reads, {size_label}{seq}",
                        100.0 * w.read_fraction()
                    );
                    let mut generator = Generator::new(mix, 1, s.seed);
                    let mut poisson = Poisson::new(rate, s.seed ^ 0x9e37_79b9_7f4a_7c15);
                    let n = r.requests;
                    let arrivals: Arrivals<'_> = Box::new((0..n).map(move |id| {
                        let d = generator.draw(0);
                        Ok(HostRequest {
                            id,
                            op: d.op,
                            lba: d.lba,
                            sectors: d.sectors,
                            arrival: poisson.next_arrival(),
                        })
                    }));
                    Workload::Timed {
                        arrivals,
                        requests: Some(n),
                        max_outstanding: None,
                    }
                }
            }
            WorkloadKind::Trace => {
                let t = w.trace.as_ref().ok_or_else(|| {
                    self.error(
                        "workload.trace",
                        "a trace workload needs [workload.trace] with a path",
                    )
                })?;
                t.check().map_err(|(key, m)| self.error(key, m))?;
                // A JBOD's devices may map to its disks; any other layout is one volume.
                let (devices, device_sectors) = match jbod_disks {
                    Some(disks) => (disks, per_disk),
                    None => (1, array.capacity_sectors()),
                };
                let (arrivals, count) =
                    open_trace(t, drive.geometry().sector_bytes(), devices, device_sectors)
                        .map_err(|m| self.error("workload.trace.path", m))?;
                if cooldown > 0 && count.is_none() {
                    return Err(self.error(
                        "run.cooldown_requests",
                        "a cool-down needs the trace's request count",
                    ));
                }
                workload_label = format!("trace {} ×{}", t.path, t.speedup);
                let max_outstanding = match t.max_outstanding {
                    Some(0) => {
                        return Err(
                            self.error("workload.trace.max_outstanding", "must be >= 1, got 0")
                        )
                    }
                    m => m.map(|m| m as usize),
                };
                Workload::Timed {
                    arrivals,
                    requests: count,
                    max_outstanding,
                }
            }
            WorkloadKind::Validate => {
                let v = w.validate.as_ref().ok_or_else(|| {
                    self.error(
                        "workload.validate",
                        "a validate workload needs [workload.validate] with a path",
                    )
                })?;
                let (requests, count) = open_validate(v, drive.geometry().sector_bytes())
                    .map_err(|m| self.error("workload.validate.path", m))?;
                if cooldown > 0 && count.is_none() {
                    return Err(self.error(
                        "run.cooldown_requests",
                        "a cool-down needs the trace's request count",
                    ));
                }
                workload_label = format!("validate trace {} (closed loop, think times)", v.path);
                Workload::Replay { requests, count }
            }
            WorkloadKind::Groups => {
                let params = self.groups_params(w, sector_bytes, capacity_bytes)?;
                let block_bytes = w.groups.as_ref().map_or(4096, |g| g.block_bytes);
                workload_label = groups_label(&params, block_bytes);
                let n = r.requests;
                let mut stream = ProcessGroups::new(params, s.seed);
                let arrivals: Arrivals<'_> = Box::new((0..n).map(move |id| {
                    let g = stream.next().ok_or_else(|| {
                        format!("request {id}: arrival times passed 2^64 ns (about 584 years)")
                    })?;
                    Ok(HostRequest {
                        id,
                        op: g.op,
                        lba: g.lba,
                        sectors: g.sectors,
                        arrival: g.arrival,
                    })
                }));
                Workload::Timed {
                    arrivals,
                    requests: Some(n),
                    max_outstanding: None,
                }
            }
        };
        let give_up = match r.give_up_mean_ms {
            None => None,
            Some(ms) if !(ms.is_finite() && ms > 0.0) => {
                return Err(self.error("run.give_up_mean_ms", format!("must be > 0, got {ms}")))
            }
            Some(_) if workload.count().is_none() => {
                return Err(self.error(
                    "run.give_up_mean_ms",
                    "needs the workload's request count (the bound is a mean over all of them)",
                ))
            }
            Some(ms) => Some(Span::from_ms_f64(ms)),
        };
        Ok(Prepared {
            array,
            layout_label,
            scheduler_label,
            workload,
            window: Window {
                warmup,
                cooldown,
                drain: r.drain,
                series: match r.series_ms {
                    None => None,
                    Some(ms) if ms.is_finite() && ms > 0.0 => Some(Span::from_ms_f64(ms)),
                    Some(ms) => {
                        return Err(self.error("run.series_ms", format!("must be > 0, got {ms}")))
                    }
                },
                give_up,
            },
            drive_id: drive.id.clone(),
            workload_label,
        })
    }

    /// The drive and the array controller of `[drive]` and `[array]`, checked.
    fn build(&self, read_file: ReadFile<'_>) -> Result<(Arc<Drive>, Built), ConfigError> {
        if let Some(exp) = self.with_parv_array(read_file)? {
            return exp.build(read_file);
        }
        let s = &self.spec;
        let drive =
            resolve_drive(&s.drive.model, read_file).map_err(|m| self.error("drive.model", m))?;
        let a = &s.array;
        if a.nvram_entries == 0 {
            return Err(self.error("array.nvram_entries", "must be >= 1"));
        }
        let age_bound = match a.age_bound_ms {
            None => None,
            Some(ms) if ms.is_finite() && ms > 0.0 => Some(Span::from_ms_f64(ms)),
            Some(ms) => {
                return Err(self.error("array.age_bound_ms", format!("must be > 0 ms, got {ms}")))
            }
        };
        let policy = self.power_policy()?;
        let drive = drive
            .with_power_policy(policy)
            .map_err(|m| self.error("power.policy", m))?;
        let drive = Arc::new(drive);
        if !a.layout.is_parity() {
            for (key, given) in [
                ("array.group_width", a.group_width.is_some()),
                ("array.parity_rotation", a.parity_rotation.is_some()),
                (
                    "array.reconstruct_fraction",
                    a.reconstruct_fraction.is_some(),
                ),
                // A write cache of 0 bytes is true of every layout (a comparison may say so).
                (
                    "array.write_cache_bytes",
                    a.write_cache_bytes.is_some_and(|b| b > 0),
                ),
                ("array.read_cache_bytes", a.read_cache_bytes.is_some()),
                (
                    "array.parity_reserve_blocks",
                    a.parity_reserve_blocks.is_some(),
                ),
                ("array.destage", a.destage.is_some()),
                ("array.destage_high_mark", a.destage_high_mark.is_some()),
                ("array.destage_low_mark", a.destage_low_mark.is_some()),
                ("array.destage_estimate", a.destage_estimate.is_some()),
                ("array.io_bus_mb_s", a.io_bus_mb_s.is_some_and(|r| r != 0.0)),
                (
                    "array.cache_port_mb_s",
                    a.cache_port_mb_s.is_some_and(|r| r != 0.0),
                ),
                ("array.drive_buffers", a.drive_buffers.is_some()),
            ] {
                if given {
                    return Err(self.error(
                        key,
                        format!(
                            "applies to the parity layouts (raid-5, raid-4), not \"{}\"",
                            a.layout.name()
                        ),
                    ));
                }
            }
        }
        self.refuse_paged_keys()?;
        if a.track_aligned && (a.layout.is_eager() || a.layout == LayoutName::Paged) {
            return Err(self.error(
                "array.track_aligned",
                format!(
                    "is built for the striped, mirrored and parity layouts (striping, mirror, \
                     raid-10, striped-mirror, raid-5, raid-4), not \"{}\"",
                    a.layout.name()
                ),
            ));
        }
        let built = if a.layout == LayoutName::Paged {
            self.build_paged(&drive)?
        } else if a.layout.is_eager() {
            self.build_ew(&drive, age_bound)?
        } else if a.layout.is_parity() {
            self.build_parity(&drive, age_bound)?
        } else {
            self.build_sr(&drive, age_bound)?
        };
        Ok((drive, built))
    }

    /// The spin-down policy of `[power]`, checked.
    fn power_policy(&self) -> Result<PowerPolicy, ConfigError> {
        let p = &self.spec.power;
        let secs = |key: &str, v: f64| {
            if v.is_finite() && v > 0.0 && v <= 1e9 {
                Ok(Span((v * 1e9).round() as u64))
            } else {
                Err(self.error(
                    key,
                    format!("must be a time within 0..1e9 s, more than 0, got {v}"),
                ))
            }
        };
        let state = p.state.unwrap_or_default();
        let refuse = |key: &str, given: bool, why: &str| {
            if given {
                Err(self.error(key, format!("applies to {why}")))
            } else {
                Ok(())
            }
        };
        let adaptive_only = "policy = \"adaptive\" only";
        if p.policy != PolicyName::Adaptive {
            refuse(
                "power.timeout_min_s",
                p.timeout_min_s.is_some(),
                adaptive_only,
            )?;
            refuse(
                "power.timeout_max_s",
                p.timeout_max_s.is_some(),
                adaptive_only,
            )?;
        }
        Ok(match p.policy {
            PolicyName::Never | PolicyName::Explicit => {
                let which = "policy = \"timeout\" or \"adaptive\"";
                refuse("power.timeout_s", p.timeout_s.is_some(), which)?;
                // A DR secondary's applier puts its volume to sleep in this state itself.
                let dr =
                    p.policy == PolicyName::Explicit && self.spec.workload.kind == WorkloadKind::Dr;
                refuse(
                    "power.state",
                    p.state.is_some() && !dr,
                    "policy = \"timeout\" or \"adaptive\", or policy = \"explicit\" in a DR secondary (workload.kind = \"dr\", docs/dr.md)",
                )?;
                if p.policy == PolicyName::Never {
                    PowerPolicy::Never
                } else {
                    PowerPolicy::Explicit
                }
            }
            PolicyName::Timeout => {
                let Some(t) = p.timeout_s else {
                    return Err(self.error("power.timeout_s", "policy = \"timeout\" needs it"));
                };
                PowerPolicy::Timeout {
                    timeout: secs("power.timeout_s", t)?,
                    state,
                }
            }
            PolicyName::Adaptive => {
                let initial = secs("power.timeout_s", p.timeout_s.unwrap_or(10.0))?;
                let min = secs("power.timeout_min_s", p.timeout_min_s.unwrap_or(1.0))?;
                let max = secs("power.timeout_max_s", p.timeout_max_s.unwrap_or(300.0))?;
                if min > max {
                    return Err(self.error("power.timeout_min_s", "must be <= timeout_max_s"));
                }
                if initial < min || initial > max {
                    return Err(self.error(
                        "power.timeout_s",
                        "must lie within timeout_min_s..timeout_max_s",
                    ));
                }
                PowerPolicy::Adaptive {
                    initial,
                    min,
                    max,
                    state,
                }
            }
        })
    }

    /// The array alone, for a driver that brings its own host (the emulator).
    pub fn build_array(&self, read_file: ReadFile<'_>) -> Result<BuiltArray, ConfigError> {
        let (drive, b) = self.build(read_file)?;
        Ok(BuiltArray {
            engine: b.array,
            layout_label: b.layout_label,
            scheduler_label: b.scheduler_label,
            drive_id: drive.id.clone(),
            disk_sectors: drive.capacity_sectors(),
            drive,
        })
    }

    /// An eager-writing array (`ew-array`, `ddm`) from `[array]`.
    fn build_ew(&self, drive: &Arc<Drive>, age_bound: Option<Span>) -> Result<Built, ConfigError> {
        let s = &self.spec;
        let a = &s.array;
        let shape = self.ew_shape()?;
        let map_log_replicas = a.map_log_replicas.unwrap_or(1);
        if map_log_replicas == 0 || map_log_replicas > shape.dm {
            return Err(self.error(
                "array.map_log_replicas",
                format!(
                    "{map_log_replicas} copies of the map log region: give 1 to Dm = {} (one \
                     per mirror, on its first disk)",
                    shape.dm
                ),
            ));
        }
        let failure = self.failure(a, shape.disks().unwrap_or(0))?;
        if let Some(f) = &failure {
            EwArray::check_failure(&shape, map_log_replicas, f)
                .map_err(|m| self.error("array.failed_disk", m))?;
        }
        let policy = match a.scheduler {
            None => EwPolicy::SatfEw,
            Some(SchedulerName::Eager(p)) => p,
            Some(SchedulerName::Disk(p)) => {
                return Err(self.error(
                    "array.scheduler",
                    format!(
                        "{p} is not an eager-writing policy; {} needs write-first, \
                         read-first, satf-ew, freebw-satf, freebw-scan or freebw-hybrid",
                        a.layout.name()
                    ),
                ))
            }
        };
        let sync_copies = a.sync_copies.unwrap_or(if shape.ddm { 2 } else { 1 });
        let ew = EwArray::new(
            drive.clone(),
            &EwConfig {
                shape,
                stripe_unit_bytes: a.stripe_unit_bytes,
                data_set_bytes: a.data_set_bytes,
                sync_copies,
                policy,
                age_bound,
                random_phase: a.random_phase,
                noise: s.drive.noise,
                seed: s.seed,
                nvram_entries: a.nvram_entries,
                map: MapLogConfig {
                    nvram_bytes: a.map_nvram_bytes,
                    portions: a.map_portions,
                    sector_bytes: drive.geometry().sector_bytes(),
                },
                free_layout: a.free_layout.unwrap_or_default(),
                map_log_replicas,
                failure,
                latent_error_rate: a.latent_error_rate,
            },
        )
        .map_err(|m| {
            let key = if m.contains("latent sector error") {
                "array.latent_error_rate"
            } else {
                "array"
            };
            self.error(key, m)
        })?;
        let label = format!("{} sync-{sync_copies}", shape.describe());
        Ok(Built {
            array: Box::new(ew),
            jbod_disks: None,
            layout_label: label,
            scheduler_label: policy.to_string(),
        })
    }

    /// An SR-Mirror family array (or JBOD) from `[array]`.
    fn build_sr(&self, drive: &Arc<Drive>, age_bound: Option<Span>) -> Result<Built, ConfigError> {
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
                        "applies to the eager-writing layouts (ew-array, ddm), not \"{}\"",
                        a.layout.name()
                    ),
                ));
            }
        }
        let shape = self.shape()?;
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
        let layout_cfg = LayoutConfig {
            shape,
            stripe_unit_bytes: a.stripe_unit_bytes,
            placement: a.placement,
            data_set_bytes: a.data_set_bytes,
            seed: s.seed,
        };
        let layout = match a.track_aligned {
            false => Layout::new(drive, &layout_cfg).map_err(|e| self.error("array", e.0))?,
            true => Layout::new_track_aligned(drive, &layout_cfg)
                .map_err(|e| self.error("array.track_aligned", e.0))?,
        };
        let failure = self.failure(a, shape.disks())?;
        if let Some(f) = &failure {
            Array::check_failure(&layout, f, drive.geometry().sector_bytes())
                .map_err(|m| self.error("array.failed_disk", m))?;
        }
        if let Some(rate) = a.latent_error_rate {
            if !(rate.is_finite() && rate > 0.0 && rate <= 1.0) {
                return Err(self.error(
                    "array.latent_error_rate",
                    format!("a fraction of sectors in (0, 1], got {rate}"),
                ));
            }
        }
        let array = Array::new(
            drive.clone(),
            &ArrayConfig {
                layout: Some(layout),
                disks: shape.disks() as usize,
                policy,
                age_bound,
                random_phase: a.random_phase,
                noise: s.drive.noise,
                seed: s.seed,
                writes: a.writes,
                nvram_entries: a.nvram_entries,
                failure,
                latent_error_rate: a.latent_error_rate,
            },
        )
        .map_err(|e| self.error("array", e.0))?;
        let label = describe_layout(&array, a.writes);
        // With rotational replicas LOOK and SATF are the dissertation's RLOOK and RSATF.
        let sched = match (array.layout().replicas() > 1, policy) {
            (true, Policy::Look) => "rlook".to_string(),
            (true, Policy::Satf) => "rsatf".to_string(),
            (_, p) => p.to_string(),
        };
        let jbod = match shape {
            Shape::Jbod { disks } => Some(disks),
            Shape::SrMirror { .. } => None,
        };
        Ok(Built {
            array: Box::new(array),
            jbod_disks: jbod,
            layout_label: label,
            scheduler_label: sched,
        })
    }

    fn mix(
        &self,
        w: &WorkloadSpec,
        sector_bytes: u64,
        capacity_bytes: u64,
    ) -> Result<Mix, ConfigError> {
        if !(0.0..=1.0).contains(&w.read_fraction()) {
            return Err(self.error(
                "workload.read_fraction",
                format!("must be within 0..1, got {}", w.read_fraction()),
            ));
        }
        if !(0.0..=1.0).contains(&w.sequential_fraction) {
            return Err(self.error(
                "workload.sequential_fraction",
                format!("must be within 0..1, got {}", w.sequential_fraction),
            ));
        }
        if w.alignment_bytes == 0 || !w.alignment_bytes.is_multiple_of(sector_bytes) {
            return Err(self.error(
                "workload.alignment_bytes",
                format!(
                    "must be a positive multiple of the {sector_bytes}-byte sector, got {}",
                    w.alignment_bytes
                ),
            ));
        }
        let data_set = w.data_set_bytes.unwrap_or(capacity_bytes);
        if data_set > capacity_bytes {
            return Err(self.error(
                "workload.data_set_bytes",
                format!("{data_set} bytes do not fit the array's {capacity_bytes} bytes"),
            ));
        }
        let raw_sizes = w.sizes.clone().unwrap_or_else(|| vec![(w.size_bytes, 1.0)]);
        let key = if w.sizes.is_some() {
            "workload.sizes"
        } else {
            "workload.size_bytes"
        };
        let mut sizes = Vec::with_capacity(raw_sizes.len());
        for (bytes, weight) in raw_sizes {
            if bytes == 0 || !bytes.is_multiple_of(sector_bytes) {
                return Err(self.error(key, format!("sizes must be positive multiples of the {sector_bytes}-byte sector, got {bytes}")));
            }
            if bytes > data_set {
                return Err(self.error(
                    key,
                    format!("a {bytes}-byte request does not fit the {data_set}-byte data set"),
                ));
            }
            if !(weight.is_finite() && weight > 0.0) {
                return Err(self.error(key, format!("weights must be > 0, got {weight}")));
            }
            sizes.push((
                u32::try_from(bytes / sector_bytes)
                    .map_err(|_| self.error(key, "request too large"))?,
                weight,
            ));
        }
        Ok(Mix {
            read_fraction: w.read_fraction(),
            sizes,
            alignment_sectors: w.alignment_bytes / sector_bytes,
            span_start: 0,
            span_sectors: data_set / sector_bytes,
            sequential_fraction: w.sequential_fraction,
        })
    }
}

impl Experiment {
    /// `kind = "groups"`: `[workload]` and `[workload.groups]` in blocks and nanoseconds,
    /// checked; every error names its key.
    fn groups_params(
        &self,
        w: &WorkloadSpec,
        sector_bytes: u64,
        capacity_bytes: u64,
    ) -> Result<GroupsParams, ConfigError> {
        let default = GroupsSpec::default();
        let g = w.groups.as_ref().unwrap_or(&default);
        let key = |k: &str| format!("workload.groups.{k}");
        if g.block_bytes == 0 || !g.block_bytes.is_multiple_of(sector_bytes) {
            return Err(self.error(
                &key("block_bytes"),
                format!(
                    "must be a positive multiple of the {sector_bytes}-byte sector, got {}",
                    g.block_bytes
                ),
            ));
        }
        let block_sectors = u32::try_from(g.block_bytes / sector_bytes)
            .map_err(|_| self.error(&key("block_bytes"), "must be below 2^32 sectors"))?;
        let data_set = w.data_set_bytes.unwrap_or(capacity_bytes);
        if data_set > capacity_bytes {
            return Err(self.error(
                "workload.data_set_bytes",
                format!("{data_set} bytes do not fit the array's {capacity_bytes} bytes"),
            ));
        }
        let data_set_blocks = data_set / g.block_bytes;
        if data_set_blocks == 0 {
            return Err(self.error(
                "workload.data_set_bytes",
                format!(
                    "{data_set} bytes hold no whole {}-byte block",
                    g.block_bytes
                ),
            ));
        }
        let rate_per_s = w.rate_iops.ok_or_else(|| {
            self.error(
                "workload.rate_iops",
                "a groups workload needs an arrival rate (all groups together)",
            )
        })?;
        let params = GroupsParams {
            groups: g.count,
            global_groups: g.global_groups,
            subset_fraction: g.subset_fraction,
            rate_per_s,
            read_fraction: w.read_fraction(),
            block_sectors,
            data_set_blocks,
            mean_blocks: g.mean_blocks,
            history_blocks: g.history_bytes / g.block_bytes,
            read_history_fraction: g.read_history_fraction,
            write_history_fraction: g.write_history_fraction,
            write_from_writes_fraction: g.write_from_writes_fraction,
            history_sigma_fraction: g.history_sigma_fraction,
            arrival_cv: g.arrival_cv,
            burst: self.groups_burst(g)?,
        };
        params.check().map_err(|e| {
            let k = match e.key {
                "rate_iops" | "read_fraction" => format!("workload.{}", e.key),
                other => key(other),
            };
            self.error(&k, e.msg)
        })?;
        Ok(params)
    }

    /// The bursts of `[workload.groups]`: none without `burst_length_s`.
    fn groups_burst(&self, g: &GroupsSpec) -> Result<Option<Burst>, ConfigError> {
        let key = |k: &str| format!("workload.groups.{k}");
        // Seconds to nanoseconds, within 0 ..= 10^9 s (2^64 ns is 1.8·10^10 s).
        let ns = |k: &str, v: f64, zero_ok: bool| -> Result<u64, ConfigError> {
            if v.is_finite() && v <= 1e9 && (v > 0.0 || (zero_ok && v == 0.0)) {
                return Ok((v * 1e9).round() as u64);
            }
            let rule = if zero_ok { ">= 0" } else { "> 0" };
            Err(self.error(
                &key(k),
                format!("must be {rule} and at most 1e9 seconds, got {v}"),
            ))
        };
        let Some(length_s) = g.burst_length_s else {
            for (k, given) in [
                ("burst_factor", g.burst_factor.is_some()),
                ("burst_period_s", g.burst_period_s.is_some()),
                ("burst_start_s", g.burst_start_s.is_some()),
            ] {
                if given {
                    return Err(self.error(
                        &key(k),
                        "needs workload.groups.burst_length_s (bursts are off without it)",
                    ));
                }
            }
            return Ok(None);
        };
        let length = ns("burst_length_s", length_s, false)?;
        let period = match g.burst_period_s {
            None => None,
            Some(p) => {
                let p = ns("burst_period_s", p, false)?;
                if p <= length {
                    return Err(self.error(
                        &key("burst_period_s"),
                        format!(
                            "must be longer than burst_length_s ({length_s}), got {}",
                            g.burst_period_s.unwrap_or_default()
                        ),
                    ));
                }
                Some(p)
            }
        };
        let start = match (g.burst_start_s, period) {
            (Some(s), _) => ns("burst_start_s", s, true)?,
            (None, Some(p)) => p - length,
            (None, None) => {
                return Err(self.error(
                    &key("burst_length_s"),
                    "needs burst_start_s (one burst) or burst_period_s (periodic bursts)",
                ))
            }
        };
        Ok(Some(Burst {
            factor: g
                .burst_factor
                .unwrap_or(crate::workload::process_groups::DEFAULT_BURST_FACTOR),
            start: Nanos(start),
            length: Span(length),
            period: period.map(Span),
        }))
    }
}

/// A groups workload as a report names it.
fn groups_label(p: &GroupsParams, block_bytes: u64) -> String {
    let subset = p.groups - p.global_groups;
    let mut s = format!(
        "groups {} ({subset} × {}% + {} whole), {} IOPS, {:.0}% reads, mean {} × {} KiB blocks",
        p.groups,
        100.0 * p.subset_fraction,
        p.global_groups,
        p.rate_per_s,
        100.0 * p.read_fraction,
        p.mean_blocks,
        block_bytes as f64 / 1024.0,
    );
    if let Some(b) = p.burst {
        let secs = |n: u64| n as f64 / 1e9;
        s += &format!(
            ", bursts ×{} of {} s from {} s",
            b.factor,
            secs(b.length.0),
            secs(b.start.0)
        );
        if let Some(period) = b.period {
            s += &format!(" every {} s", secs(period.0));
        }
    }
    s
}

/// An experiment ready to simulate ([`Experiment::prepare`]).
/// The layout as a report names it: shape, and for replicated layouts the placement and
/// the write policy.
fn describe_layout(array: &Array, writes: WritePolicy) -> String {
    let l = array.layout();
    let mut s = l.shape().describe();
    if l.track_aligned() {
        s += " track-aligned";
    }
    if l.replicas() > 1 {
        s += &format!(" {}", l.placement().name());
    }
    if l.replicas() * l.mirrors() > 1 {
        s += &format!(" {}-writes", writes.name());
    }
    s
}

/// An array controller for a driver that brings its own host ([`Experiment::build_array`]).
pub struct BuiltArray {
    pub engine: Box<dyn Engine>,
    pub layout_label: String,
    pub scheduler_label: String,
    pub drive_id: String,
    /// One physical disk's capacity in sectors.
    pub disk_sectors: u64,
    /// The drive model every disk is (a real driver tracks real disks with it).
    pub drive: Arc<Drive>,
}

/// The controller [`Experiment::prepare`] built, with what a report names it.
struct Built {
    array: Box<dyn Engine>,
    /// JBOD: the disks a trace's devices may map to.
    jbod_disks: Option<u32>,
    layout_label: String,
    scheduler_label: String,
}

struct Prepared {
    array: Box<dyn Engine>,
    layout_label: String,
    scheduler_label: String,
    workload: Workload<'static>,
    window: Window,
    drive_id: String,
    workload_label: String,
}

mod dr;
mod paged;
mod parity;
mod parv_array;
mod template;
#[cfg(test)]
mod tests;
mod trace_spec;

pub use template::template;
