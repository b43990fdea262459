//! Progress bars on stderr: drawn only when stderr is a terminal and `--quiet` is off.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A bar for `total` items (a spinner when the total is unknown), hidden when not wanted.
pub fn bar(total: Option<u64>, quiet: bool, what: &str) -> ProgressBar {
    let pb = match total {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::new_spinner(),
    };
    if quiet || !std::io::stderr().is_terminal() {
        pb.set_draw_target(ProgressDrawTarget::hidden());
        return pb;
    }
    let template = match total {
        Some(_) => "{msg} [{bar:30}] {human_pos}/{human_len} {per_sec} eta {eta}",
        None => "{msg} {spinner} {human_pos} {per_sec}",
    };
    pb.set_style(
        ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

/// The closing speed line of `run` and `sweep` on stderr (unless `quiet`): how many requests
/// were simulated, in how long, and how many per second.
pub fn report_speed(quiet: bool, requests: u64, elapsed: std::time::Duration, threads: usize) {
    if quiet {
        return;
    }
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        requests as f64 / secs
    } else {
        0.0
    };
    let on = if threads > 1 {
        format!(" on {threads} threads")
    } else {
        String::new()
    };
    eprintln!("simulated {requests} requests in {secs:.3} s{on}: {rate:.0} requests/s");
}
