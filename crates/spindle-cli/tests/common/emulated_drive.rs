//! One emulated drive served over NBD on a Unix socket, for the calibration tests: the
//! experiment, the server, and where its socket and disk file live.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A one-disk jbod of the drive file `drive_text` (noise on), written to `dir`; returns the
/// experiment's path.
pub fn one_disk_experiment(dir: &Path, drive_text: &str) -> String {
    let drive = dir.join("drive.toml");
    std::fs::write(&drive, drive_text).expect("write the drive");
    let exp = format!(
        "seed = 11\n[drive]\nmodel = \"{}\"\nnoise = true\n[array]\nlayout = \"jbod\"\ndisks = 1\n\
         [workload]\nkind = \"closed\"\nqueue_depth = 1\n[run]\nrequests = 100\n",
        drive.display()
    );
    let path = dir.join("exp.toml");
    std::fs::write(&path, exp).expect("write the experiment");
    path.to_string_lossy().into_owned()
}

/// `spindle serve EXP` on `DIR/sock`, waited for.
pub fn serve(exp: &str, dir: &Path) -> Child {
    let sock = dir.join("sock");
    let mut child = Command::new(env!("CARGO_BIN_EXE_spindle"))
        // SCHED_FIFO when allowed (root, CI): the emulator answers on time however busy the
        // machine; without it, it says so and runs at normal priority.
        .args(["serve", exp, "--realtime", "--data"])
        .arg(dir.join("data"))
        .arg("--unix")
        .arg(&sock)
        .stderr(Stdio::null())
        .spawn()
        .expect("spindle serve starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sock.exists() {
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("spindle serve exited with {status} before listening");
        }
        assert!(Instant::now() < deadline, "no socket within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// A directory for the emulated disk's file: on tmpfs when there is one, so a busy disk
/// (other tests, builds) does not delay the emulator's data moves and with them its answers.
pub fn workdir() -> tempfile::TempDir {
    match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").expect("tempdir in /dev/shm"),
        false => tempfile::tempdir().expect("tempdir"),
    }
}

/// The NBD URI of the server in `dir`.
pub fn uri(dir: &Path) -> String {
    format!("nbd+unix:///spindle?socket={}", dir.join("sock").display())
}

/// `spindle calibrate URI -o OUT` over the first two zones (`--zones 2`, 4 s of rotation
/// refinement, `--realtime`: about 50 s here), as the calibration and real-driver tests run
/// it.
pub fn calibrate_two_zones(uri: &str, out: &Path) -> std::process::Output {
    super::spindle(&[
        "calibrate",
        uri,
        "-o",
        out.to_str().expect("a UTF-8 path"),
        "--zones",
        "2",
        "--rotation-secs",
        "4",
        "--realtime",
        "--quiet",
    ])
}

/// Whether `err` (a calibration's stderr) is a refusal for noise that the tool's stated
/// limit justifies: it names the measured timing noise, and that noise is over 1 % of the
/// revolution (`period_ns`), the level at which docs/calibrate.md says no track switch can
/// be told from it. Any other refusal is a failure of the scan, not of the host.
pub fn refused_for_measured_noise(err: &str, period_ns: f64) -> bool {
    if !err.contains("too noisy to calibrate") {
        return false;
    }
    // Every number followed by " µs" after the word "sigma": the noise the scan measured.
    let limit_us = period_ns / 100.0 / 1e3;
    err.split("sigma ")
        .skip(1)
        .filter_map(|rest| rest.split(" µs").next()?.trim().parse::<f64>().ok())
        .any(|us| us > limit_us)
}
