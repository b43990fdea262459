//! On-disk buffer (cache) and interface parameters of a drive file (`[cache]`), named after
//! DiskSim's `disksim_disk` parameters. Absent: no buffer — every request goes to the media
//! and completes when its media transfer ends.

use serde::{Deserialize, Serialize};

/// The drive's buffer, controller overheads and interface transfer.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// Number of buffer segments.
    pub segments: u32,
    /// Size of one segment, in sectors.
    pub segment_sectors: u32,
    /// Segments that may hold write data at once.
    #[serde(default = "one")]
    pub write_segments: u32,
    /// One segment is reserved for writes.
    #[serde(default)]
    pub separate_write_segment: bool,
    /// DiskSim "Enable caching in buffer": 0 off, 1 on, 2 on with reads only cached from
    /// the media (no read hits on data the host wrote).
    #[serde(default = "one")]
    pub enable_caching: u32,
    /// DiskSim "Buffer continuous read": 0 no read-ahead; 1 to the end of the track;
    /// 2 to the end of the segment… (the modes as DiskSim numbers them, 0–4).
    #[serde(default)]
    pub continuous_read: u32,
    #[serde(default)]
    pub min_read_ahead_sectors: u32,
    #[serde(default)]
    pub max_read_ahead_sectors: u32,
    /// Read-ahead is counted past the requested sectors (not including them).
    #[serde(default)]
    pub read_ahead_over_requested: bool,
    #[serde(default)]
    pub read_ahead_on_idle_hit: bool,
    #[serde(default)]
    pub read_any_free_blocks: bool,
    /// With `read_any_free_blocks`: the sectors of the target track that pass under the
    /// head before the requested one are kept in the segment, as a real drive's
    /// zero-latency read keeps them. DiskSim 4.0 means to but reads nothing before the
    /// request (its `g1_access_block` always returns the requested sector); `false`
    /// reproduces that (docs/validation.md: the Atlas 10K scores 0.135 ms with them,
    /// 0.268 without, DiskSim 0.268).
    #[serde(default = "yes")]
    pub free_blocks_before_request: bool,
    /// DiskSim "Fast write level": 0 write-through; 1 and 2 completion once in the buffer
    /// (DiskSim 4.0's manual limits level 1 to sequential writes, but its code completes
    /// every write from the buffer at level 1 and only ranks appends in the disk's queue).
    #[serde(default)]
    pub fast_write_level: u32,
    #[serde(default)]
    pub immediate_buffer_read: bool,
    #[serde(default)]
    pub immediate_buffer_write: bool,
    #[serde(default)]
    pub combine_seq_writes: bool,
    #[serde(default)]
    pub stop_prefetch_in_sector: bool,
    #[serde(default = "yes")]
    pub write_hit_stop_prefetch: bool,
    #[serde(default = "yes")]
    pub read_directly_to_buffer: bool,
    #[serde(default = "yes")]
    pub immediate_transfer_partial_hit: bool,
    #[serde(default = "yes")]
    pub read_hits_on_write_data: bool,
    /// Fill levels (fractions of a segment) for bus reconnection on reads and writes.
    #[serde(default)]
    pub low_water_mark: f64,
    #[serde(default)]
    pub high_water_mark: f64,
    /// The water marks are fractions of the request's size rather than of a segment.
    #[serde(default)]
    pub watermark_by_request: bool,
    /// Controller overheads (ms) by what the request is and what the previous one was.
    pub read_hit_after_read_ms: f64,
    pub read_hit_after_write_ms: f64,
    pub read_miss_after_read_ms: f64,
    pub read_miss_after_write_ms: f64,
    pub write_hit_after_read_ms: f64,
    pub write_hit_after_write_ms: f64,
    pub write_miss_after_read_ms: f64,
    pub write_miss_after_write_ms: f64,
    #[serde(default)]
    pub read_completion_ms: f64,
    #[serde(default)]
    pub write_completion_ms: f64,
    #[serde(default)]
    pub data_preparation_ms: f64,
    #[serde(default)]
    pub first_reselect_ms: f64,
    #[serde(default)]
    pub other_reselect_ms: f64,
    #[serde(default)]
    pub read_disconnect_after_read_ms: f64,
    #[serde(default)]
    pub read_disconnect_after_write_ms: f64,
    #[serde(default)]
    pub write_disconnect_ms: f64,
    /// Time to move one sector over the interface (ms): the largest of the disk's bulk
    /// sector transfer time and the bus's and controller's per-block times.
    #[serde(default)]
    pub bus_sector_ms: f64,
    /// The same for writes when the interface is slower or faster that way (absent: equal).
    #[serde(default)]
    pub bus_sector_write_ms: Option<f64>,
    /// The bus is held for the whole read (or write) transfer instead of disconnecting.
    #[serde(default)]
    pub hold_bus_read: bool,
    #[serde(default)]
    pub hold_bus_write: bool,
    #[serde(default)]
    pub never_disconnect: bool,
    /// DiskSim's "Extra write disconnect" model (HP C2247A) and its parameters.
    #[serde(default)]
    pub extra_write_disconnect: Option<ExtraWriteDisconnect>,
    /// Lower bound on any seek (ms), DiskSim "Minimum seek delay".
    #[serde(default)]
    pub minimum_seek_ms: f64,
    /// DiskSim "Per-request overhead time" (ms): processing that delays each request's
    /// arrival at the controller (`disk_event_arrive`), before any command overhead; not a
    /// cost of each media access.
    #[serde(default)]
    pub per_request_ms: f64,
}

/// DiskSim's "Extradisc" parameters (ms).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExtraWriteDisconnect {
    pub command_ms: f64,
    pub disconnect_ms: f64,
    pub inter_disconnect_delay_ms: f64,
    pub second_disconnect_ms: f64,
    pub seek_delta_ms: f64,
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
