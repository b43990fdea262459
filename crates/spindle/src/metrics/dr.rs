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
pub struct VolumeSeconds {
    pub idle: f64,
    pub applying: f64,
    pub spinning_down: f64,
    pub sleeping: f64,
    pub spinning_up: f64,
}

/// Energy of the data volume (all its disks), deferred over the stream's duration against
/// immediate over its run (the two runs' lengths differ when the immediate secondary falls
/// behind, so the saving compares mean power, as the paper's figures do).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DrEnergy {
    pub deferred_j: f64,
    pub deferred_mean_w: f64,
    pub immediate_j: f64,
    pub immediate_mean_w: f64,
    /// 1 − deferred mean power / immediate mean power.
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
    /// The conventional secondary: its data volume's mean power, utilisation, and whether it
    /// falls behind the stream.
    pub immediate_mean_w: f64,
    pub immediate_utilization: f64,
    pub immediate_saturated: bool,
    /// The deferred secondary's plan; None when the RTO cannot be kept (`infeasible`).
    pub plan: Option<DrPlanReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub infeasible: Option<Infeasibility>,
}

/// Why no plan keeps the RTO: the experiment key to change, and the reason.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Infeasibility {
    pub key: String,
    pub reason: String,
}

/// `report.dr.plan`: the batches, the recovery time they keep, the volume's states and
/// energy.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DrPlanReport {
    pub batches: u64,
    /// Mean time between the starts of consecutive batches' application.
    pub mean_batch_interval_s: Option<f64>,
    pub mean_apply_s: Option<f64>,
    pub spin_ups: u64,
    pub spin_ups_per_day: f64,
    pub worst_recovery_s: f64,
    pub worst_recovery_at_s: f64,
    pub state_s: VolumeSeconds,
    pub energy: DrEnergy,
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

impl DrReport {
    /// Lines for the report's table.
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let st = &self.stream;
        let _ = writeln!(
            s,
            "DR secondary (docs/dr.md): {} records, {:.1} MB of log over {:.1} s (R_gen {:.3} MB/s), \
             {} page updates; window {} MB ({} windows; folding removed {:.1} % of the updates)",
            st.records,
            st.log_mb,
            st.duration_s,
            st.rgen_mb_s,
            st.page_updates,
            self.window_mb,
            self.windows,
            100.0 * self.folded_share
        );
        let _ = write!(
            s,
            "  R_apl {:.2} MB/s = {:.1} x R_gen",
            self.rapl_mb_s, self.acceleration
        );
        match &self.closed_form {
            Some(c) => {
                let _ = writeln!(
                    s,
                    "; paper's closed form: batch interval {:.0} s, application {:.1} s",
                    c.batch_interval_s, c.apply_s
                );
            }
            None => {
                let _ = writeln!(s, "; no closed form (R_apl <= R_gen or RTO <= spin-up)");
            }
        }
        let Some(p) = &self.plan else {
            let why = self.infeasible.as_ref().map_or("", |i| i.reason.as_str());
            let _ = writeln!(
                s,
                "  INFEASIBLE: {why} (the immediate secondary draws {:.2} W)",
                self.immediate_mean_w
            );
            return s;
        };
        let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1} s"));
        let _ = writeln!(
            s,
            "  plan: {} batches, mean interval {}, mean application {}; {} spin-ups ({:.1} per day)",
            p.batches,
            opt(p.mean_batch_interval_s),
            opt(p.mean_apply_s),
            p.spin_ups,
            p.spin_ups_per_day
        );
        let _ = writeln!(
            s,
            "  worst recovery time {:.2} s (RTO {} s), at {:.1} s",
            p.worst_recovery_s, self.rto_s, p.worst_recovery_at_s
        );
        let t = &p.state_s;
        let _ = writeln!(
            s,
            "  data volume: applying {:.1} s, idle {:.1} s, {} {:.1} s, spinning down {:.1} s, up {:.1} s",
            t.applying, t.idle, self.sleep_state, t.sleeping, t.spinning_down, t.spinning_up
        );
        let e = &p.energy;
        let _ = writeln!(
            s,
            "  energy of the data volume: deferred {:.0} J ({:.2} W) against immediate {:.0} J ({:.2} W): saving {:.1} %{}",
            e.deferred_j,
            e.deferred_mean_w,
            e.immediate_j,
            e.immediate_mean_w,
            100.0 * e.saving,
            if self.immediate_saturated {
                " (the immediate secondary is SATURATED: it falls behind the stream)"
            } else {
                ""
            }
        );
        s
    }
}
