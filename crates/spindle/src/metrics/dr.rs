//! `report.dr`: the power-aware disaster-recovery secondary (`crate::dr`), deferred
//! application against the conventional secondary.

use serde::Serialize;

/// The stream as the secondary receives it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StreamReport {
    pub label: String,
    pub records: u64,
    pub page_updates: u64,
    pub log_mb: f64,
    pub duration_s: f64,
    /// R_gen: log bytes per second of the stream.
    pub rgen_mb_s: f64,
    /// Pages of the data volume the stream spans.
    pub data_pages: u64,
    pub page_bytes: u32,
}

/// The paper's closed form for this stream (section 3.1), with T = RTO − spin-up.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClosedForm {
    /// T_wnd = R_apl² T / ((R_apl − R_gen) R_gen)
    pub batch_interval_s: f64,
    /// T_apl = R_apl T / (R_apl − R_gen)
    pub apply_s: f64,
}

/// Seconds in each state of the data volume (per disk: the volume moves as one).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StateSeconds {
    pub idle: f64,
    pub applying: f64,
    pub spinning_down: f64,
    pub sleeping: f64,
    pub spinning_up: f64,
}

/// Energy of the data volume (all its disks) over the stream, deferred against immediate.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DrEnergy {
    pub deferred_j: f64,
    pub deferred_mean_w: f64,
    pub immediate_j: f64,
    pub immediate_mean_w: f64,
    /// 1 − deferred / immediate.
    pub saving: f64,
}

/// `report.dr`: the deferred secondary against the conventional one.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DrReport {
    pub stream: StreamReport,
    pub window_mb: f64,
    pub windows: u64,
    pub rto_s: f64,
    pub sleep_state: String,
    /// Of the page updates, the share folding removed (over all windows).
    pub folded_share: f64,
    /// R_apl: log bytes applied per second of application, over the complete windows.
    pub rapl_mb_s: f64,
    /// R_apl / R_gen.
    pub acceleration: f64,
    pub closed_form: Option<ClosedForm>,
    pub batches: u64,
    /// Mean time between the starts of consecutive batches' application.
    pub mean_batch_interval_s: Option<f64>,
    pub mean_apply_s: Option<f64>,
    pub spin_ups: u64,
    pub spin_ups_per_day: f64,
    pub worst_recovery_s: f64,
    pub worst_recovery_at_s: f64,
    pub state_s: StateSeconds,
    pub energy: DrEnergy,
    /// The conventional secondary could not keep up with the stream.
    pub immediate_saturated: bool,
    pub immediate_utilization: f64,
    pub batch_list: Vec<BatchReport>,
}

/// One application of the backlog.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BatchReport {
    /// When the spin-up before it began (None: the volume was spinning).
    pub spin_up_s: Option<f64>,
    pub apply_from_s: f64,
    pub apply_until_s: f64,
    /// Windows applied: `first..end`.
    pub first_window: usize,
    pub end_window: usize,
    /// The worst recovery time from the end of the previous batch to the end of this one.
    pub worst_recovery_s: f64,
}
