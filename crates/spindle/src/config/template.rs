//! `spindle run --print-config`: an experiment file naming every key with its default. Keys
//! whose default depends on others (the layout, the workload kind) or that have none are
//! commented out with what happens when they are absent. The text loads back as an
//! experiment (one disk, closed-loop random 4 KiB reads) and its uncommented values are the
//! defaults the loader uses (tests below).

use crate::array::DEFAULT_NVRAM_ENTRIES;
use crate::ew::map_log::{DEFAULT_NVRAM_BYTES, DEFAULT_PORTIONS};
use crate::workload::process_groups as pg;

/// The template experiment (see the module documentation).
pub fn template() -> String {
    format!(
        r#"# Every key of an experiment file with its default (docs/experiment.md). Commented keys
# have no fixed default: the comment says what their absence means.
# name = "base"            # the first row's label
seed = 1

[drive]
model = "st39133lwv"       # required (unless array.parv names the drive): a built-in id
                           #   (`spindle drives list`) or a drive file
noise = false              # seek and overhead noise as the drive file gives it

[array]
layout = "jbod"            # jbod | striping | mirror | raid-10 | striped-mirror | sr-array |
                           #   sr-mirror | ew-array | ddm | raid-5 | raid-4 | paged
# disks = 1                # D; absent: the product of the dimensions (JBOD: 1)
# ds = 1                   # striping; a free dimension may be left out when disks is given
# dr = 1                   # rotational replicas
# dm = 1                   # mirrors
stripe_unit_bytes = 65536
track_aligned = false      # stripe unit = one track of its zone (striped, mirrored, parity)
placement = "track-group"  # rotational replicas: even | random | track-group
writes = "delayed"         # replicas: delayed | foreground
nvram_entries = {nvram}
# data_set_bytes = 0       # absent: one disk's capacity (JBOD: the whole array)
# scheduler = "fcfs"       # absent: fcfs; ew-array/ddm: satf-ew
# age_bound_ms = 200.0     # a request waiting this long is served first; absent: never
random_phase = true        # the disks' spindles are not synchronised
# parv = "array.parv"      # a DiskSim .parv array: sets the layout keys (docs/arrays.md)
# Eager writing (ew-array, ddm; docs/ew.md)
# dd = 1.25                # absent: follows from disks (give dd or disks)
# sync_copies = 1          # absent: 1 (ddm: 2)
map_nvram_bytes = {map_nvram}
map_portions = {portions}
# map_log_replicas = 1     # copies of the map log region (1..dm); 2 lets disk 0 fail
# free_layout = "even"     # even | random
# Paged disk (paged; docs/paged.md): ds disks, pages striped round-robin
# page_kb = 8              # page size; a page never spans a track
# replicas = 1             # copies of each page, evenly spaced around its home track (1-8)
# bad_tenants = true       # a write may land under the head over a replicated page
# page_runs = false        # paged: a multi-page write as one run of bad tenants
# cleaner = "none"         # none | idle | dirtiness | piggyback | nightly (moves tenants home)
# cleaner_idle_ms = 100.0  # idle: host-idle time before cleaning starts
# cleaner_max_tenants = 1000  # dirtiness: bad tenants per disk tolerated
# cleaner_window = [0.0, 3600.0]  # nightly: [start_s, length_s] of virtual time, every 24 h
# Parity arrays (raid-5, raid-4; docs/raid5.md)
# group_width = 5
# parity_rotation = "left-symmetric"
# reconstruct_fraction = 0.5
# write_cache_bytes = 1048576
# read_cache_bytes = 8388608
# parity_reserve_blocks = 3
# destage = "linear-threshold"  # fcfs | least-cost | high-low | linear-threshold | regions
# destage_high_mark = 0.9  # high-low only
# destage_low_mark = 0.5   # high-low only
# destage_estimate = "average"  # regions only: average | maximum | minimum
# io_bus_mb_s = 20.0       # 0: off
# cache_port_mb_s = 20.0   # 0: off
# drive_buffers = false
# A disk failure (raid-5, raid-4, mirror, raid-10, sr-mirror, ew-array with dm >= 2 and
# ddm but not their disk 0; docs/failures.md)
# failed_disk = 0          # absent: no disk fails
# fail_at_ms = 0.0
# rebuild = true
# rebuild_rate_mb_s = 10.0 # absent: as fast as the disks allow
# latent_error_rate = 1e-5 # jbod, striping, mirror, raid-10, sr-array, sr-mirror, ew-array, ddm: fraction of sectors unreadable

[workload]
kind = "closed"            # closed | open | trace | validate | groups (required)
queue_depth = 1            # closed loop: requests outstanding
# read_fraction = 1.0      # absent: 1.0 (groups: 0.6)
size_bytes = 4096
# sizes = [[4096, 0.5], [65536, 0.5]]  # (bytes, share) pairs instead of size_bytes
alignment_bytes = 4096
# data_set_bytes = 0       # absent: the whole array
sequential_fraction = 0.0
# rate_iops = 100.0        # required for open and groups

# [workload.trace]         # kind = "trace"
# path = "trace.txt"       # required; relative to the experiment file
# format = "mqsim"         # absent: detected from the content
# speedup = 1.0
# start_s = 0.0            # absent: from the first arrival
# end_s = 60.0             # absent: to the end
# devices = [0, 1]         # absent: every device
# concat = true
# fit = "error"            # error | scale
# max_outstanding = 16     # absent: no host queue limit
# split_kb = 8             # absent: requests as traced; else pages of N KiB

# [workload.validate]      # kind = "validate"
# path = "drive.trace"     # required

# [workload.dr]            # kind = "dr": a power-aware DR secondary (docs/dr.md)
# wal = "wal.txt.gz"       # pg_waldump text; absent: the writes of [workload.trace]
# window_mb = 32           # required: the compaction window W, MB of log
# rto_s = 100              # required: the recovery-time objective, s
# speedup = 1.0            # the stream replayed this many times faster
# repeat = 1               # the stream played this many times back to back
# queue_depth = 1          # writes the applier keeps outstanding
# max_write_kb = 256       # the longest write (a run of consecutive pages)
# page_bytes = 8192        # a block trace's page size

# [workload.groups]        # kind = "groups" (docs/workload.md)
# count = {count}
# global_groups = {global}
# subset_fraction = {subset:?}
# block_bytes = 4096
# mean_blocks = {mean_blocks:?}
# history_bytes = {history}
# read_history_fraction = {read_history:?}
# write_history_fraction = {write_history:?}
# write_from_writes_fraction = {from_writes:?}
# history_sigma_fraction = {sigma:?}
# arrival_cv = {cv:?}
# burst_factor = {burst:?}      # when bursts are on
# burst_length_s = 2.0     # absent: no bursts
# burst_period_s = 20.0    # absent: one burst
# burst_start_s = 18.0     # absent: period - length

[run]
requests = 10000           # synthetic workloads; a trace replays all its requests
# warmup_requests = 1500   # absent: 15 % of requests (synthetic), 0 (trace, validate)
# cooldown_requests = 1500 # absent: 15 % of requests (synthetic), 0 (trace, validate)
drain = false
# series_ms = 100.0        # absent: no time series (spindle run --series)
# give_up_mean_ms = 100.0  # absent: run to the end; else stop once the mean latency is proven above it

[power]                    # spin-down policy of every disk (docs/power.md)
policy = "never"           # never | timeout | adaptive | explicit
# timeout_s = 10.0         # timeout: the idle time before going down (required);
                           #   adaptive: the first one (absent: 10 s)
# state = "standby"        # the low-power state gone to: standby | unloaded | low_rpm
# timeout_min_s = 1.0      # adaptive: bounds of the timeout (absent: 1 s, 300 s)
# timeout_max_s = 300.0

# [[compare]]              # more rows: this experiment with keys changed
# label = "LOOK"
# set = {{ "array.scheduler" = "look" }}
"#,
        nvram = DEFAULT_NVRAM_ENTRIES,
        map_nvram = DEFAULT_NVRAM_BYTES,
        portions = DEFAULT_PORTIONS,
        count = pg::DEFAULT_GROUPS,
        global = pg::DEFAULT_GLOBAL_GROUPS,
        subset = pg::DEFAULT_SUBSET_FRACTION,
        mean_blocks = pg::DEFAULT_MEAN_BLOCKS,
        history = pg::DEFAULT_HISTORY_BYTES,
        read_history = pg::DEFAULT_READ_HISTORY_FRACTION,
        write_history = pg::DEFAULT_WRITE_HISTORY_FRACTION,
        from_writes = pg::DEFAULT_WRITE_FROM_WRITES_FRACTION,
        sigma = pg::DEFAULT_HISTORY_SIGMA_FRACTION,
        cv = pg::DEFAULT_ARRIVAL_CV,
        burst = pg::DEFAULT_BURST_FACTOR,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ArraySpec, Experiment, GroupsSpec, RunSpec};

    /// The fields a table accepts, from the loader's own "unknown field" message.
    fn fields(table: &str) -> Vec<String> {
        let text = match table {
            "workload" => "[workload]\nkind = \"closed\"\nno_such_key_zz = 1\n".to_string(),
            t if t.starts_with("workload.") => {
                format!("[workload]\nkind = \"trace\"\n[{t}]\nno_such_key_zz = 1\n")
            }
            t => format!("[workload]\nkind = \"closed\"\n[{t}]\nno_such_key_zz = 1\n"),
        };
        let e = Experiment::parse(&text, "t", &[]).expect_err("unknown key");
        let msg = e.msg;
        // "expected one of `a`, `b`, `c`" or "expected `a` or `b`".
        let list = msg
            .split("expected ")
            .nth(1)
            .unwrap_or_else(|| panic!("{table}: {msg}"));
        list.trim_start_matches("one of ")
            .split(", ")
            .flat_map(|f| f.split(" or "))
            .map(|f| f.trim_matches(|c| c == '`' || c == ' ').to_string())
            .collect()
    }

    #[test]
    fn the_template_names_every_key() {
        let t = template();
        let named = |table: &str, key: &str| {
            let header = format!("[{table}]");
            let section = t
                .split_once(&header)
                .map_or("", |(_, rest)| rest.split("\n[").next().unwrap_or(""));
            let section = section.split("\n# [").next().unwrap_or(section);
            section
                .lines()
                .any(|l| l.trim_start_matches("# ").starts_with(&format!("{key} =")))
        };
        for table in [
            "drive",
            "array",
            "workload",
            "workload.trace",
            "workload.groups",
            "workload.validate",
            "workload.dr",
            "run",
        ] {
            let keys = fields(table);
            assert!(!keys.is_empty(), "{table}: {keys:?}");
            for key in keys {
                let found = if table == "workload" {
                    // Sub-tables appear as their own headers.
                    named(table, &key) || t.contains(&format!("[workload.{key}]"))
                } else {
                    named(table, &key)
                };
                assert!(found, "the template lacks {table}.{key}");
            }
        }
        for key in ["name", "seed"] {
            assert!(
                t.lines()
                    .any(|l| l.trim_start_matches("# ").starts_with(&format!("{key} ="))),
                "the template lacks {key}"
            );
        }
        assert!(t.contains("# [[compare]]"));
    }

    #[test]
    fn the_template_loads_back_with_the_defaults() {
        let exp = Experiment::parse(&template(), "template", &[]).expect("loads");
        // The uncommented values are exactly the loader's defaults.
        assert_eq!(
            format!("{:?}", exp.spec.array),
            format!("{:?}", ArraySpec::default())
        );
        assert_eq!(
            format!("{:?}", exp.spec.run),
            format!("{:?}", RunSpec::default())
        );
        // The commented groups table, uncommented, is the groups defaults.
        let groups: String = template()
            .split("# [workload.groups]")
            .nth(1)
            .expect("groups table")
            .split("\n\n")
            .next()
            .expect("its lines")
            .lines()
            .skip(1)
            .map(|l| l.trim_start_matches("# ").split("  #").next().unwrap_or(""))
            .filter(|l| !l.starts_with("burst_"))
            .collect::<Vec<_>>()
            .join("\n");
        let spec: GroupsSpec = toml::from_str(&groups).expect("the groups lines parse");
        assert_eq!(
            format!("{spec:?}"),
            format!("{:?}", GroupsSpec::default()),
            "{groups}"
        );
        let empty = Experiment::parse("[workload]\nkind = \"closed\"\n", "t", &[]).unwrap();
        assert_eq!(exp.spec.seed, empty.spec.seed);
        assert_eq!(
            exp.spec.workload.queue_depth,
            empty.spec.workload.queue_depth
        );
        assert_eq!(exp.spec.workload.size_bytes, empty.spec.workload.size_bytes);
        assert_eq!(
            exp.spec.workload.alignment_bytes,
            empty.spec.workload.alignment_bytes
        );
        assert_eq!(exp.spec.drive.noise, empty.spec.drive.noise);
    }
}
