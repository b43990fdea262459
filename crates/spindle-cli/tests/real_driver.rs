//! The real driver, `spindle serve EXPERIMENT --disks A,B` (issue 21, dissertation 3.3.2 and
//! fig. 3.3): a 2-disk SR-Array (1 x 2 x 1, RSATF) whose disks are two emulated drives
//! served over NBD — the only "real drives" here — scheduled with a drive file calibrated
//! blind from one of them. It must store real data (written bytes read back through the
//! array), report each disk's head tracking with its rotation misses, and reach at least
//! 90 % of the throughput the simulator predicts for the same workload.
//!
//! The simulator's prediction is `spindle run` of the same experiment, with the calibrated
//! drive file and the drive's timing noise configured into it — the dissertation's way
//! (3.5.1: "the type and the size of these random noise can be measured when the system is
//! running on real disk arrays and these measurements can be then configured into the
//! simulator"); here the noise is the emulator's own, known from its drive file, since the
//! calibration measures minimum read times, not their spread. docs/calibrate.md ("The real
//! driver") gives the noiseless prediction too.

use spindle_emu::nbd::client::{NbdClient, NbdUri};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::emulated_drive::{
    calibrate_two_zones, one_disk_experiment, refused_for_measured_noise, serve, uri, workdir,
};
use common::{spindle, stderr, stdout};

/// The emulated drives: `cheetah9lp` (10,045 rpm, 11 zones) with 2 % seek and 10 µs
/// rotational noise, the calibration tests' drive.
const SEEK_NOISE: f64 = 0.02;
const ROTATION_NOISE_MS: f64 = 0.01;

/// One emulated drive in `dir` (its own seed: its own platter phase).
fn emulated(dir: &Path, seed: u64) -> Child {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../drives/cheetah9lp.toml");
    let mut text = std::fs::read_to_string(lib).expect("library drive file");
    text.push_str(&format!(
        "\n[noise]\nseek_rel_sigma = {SEEK_NOISE}\nrotation_sigma_ms = {ROTATION_NOISE_MS}\n"
    ));
    let exp = one_disk_experiment(dir, &text);
    let with_seed = std::fs::read_to_string(&exp)
        .unwrap()
        .replace("seed = 11", &format!("seed = {seed}"));
    std::fs::write(&exp, with_seed).unwrap();
    serve(&exp, dir)
}

/// Blind calibration of the drive at `uri` over its first two zones (as the calibration
/// test: ~50 s); `None` when every try was refused for timing noise over the tool's limit
/// (said on stderr: the calibration test covers that refusal). Any other refusal fails.
fn calibrate(uri: &str, out: &Path) -> Option<String> {
    // cheetah9lp's period as the emulator turns it.
    let period_ns = (60e9_f64 / 10045.0).round();
    for attempt in 1..=3 {
        let o = calibrate_two_zones(uri, out);
        if o.status.success() {
            return Some(std::fs::read_to_string(out).expect("drive file written"));
        }
        let err = stderr(&o);
        assert!(
            refused_for_measured_noise(&err, period_ns),
            "calibration failed other than by a refusal for measured noise over 1 % of a \
             revolution: {err}"
        );
        eprintln!("calibration try {attempt} refused: {err}");
    }
    None
}

/// Random aligned 4 KiB reads from `clients` connections, one request outstanding on each
/// (a closed loop of that depth), for `secs`; returns the requests answered.
fn random_reads(uri: &str, clients: usize, secs: f64) -> u64 {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let uri = NbdUri::parse(uri).expect("uri");
            let (done, stop) = (done.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut c = NbdClient::connect(&uri).expect("connect to the real array");
                let blocks = c.size() / 4096;
                let mut buf = vec![0u8; 4096];
                // A small LCG per client: the workload needs no more than uniform offsets.
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (i as u64 + 1);
                while !stop.load(Ordering::Relaxed) {
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    let block = (x >> 33) % blocks;
                    c.read(block * 4096, &mut buf)
                        .expect("read through the array");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("client");
    }
    done.load(Ordering::Relaxed)
}

#[test]
fn a_2_disk_sr_array_on_two_emulated_drives_reaches_90_percent_of_the_simulator() {
    let d0 = workdir();
    let d1 = workdir();
    let mut e0 = emulated(d0.path(), 11);
    let mut e1 = emulated(d1.path(), 12);
    let work = workdir();
    let cal = work.path().join("cal.toml");
    let Some(cal_text) = calibrate(&uri(d0.path()), &cal) else {
        eprintln!(
            "SKIPPED: NOT RUN: every calibration try was refused for this host's timing noise"
        );
        let _ = (e0.kill(), e1.kill());
        let _ = (e0.wait(), e1.wait());
        return;
    };
    let exp = work.path().join("sr.toml");
    std::fs::write(
        &exp,
        format!(
            "seed = 1\n[drive]\nmodel = \"{}\"\n[array]\nlayout = \"sr-mirror\"\nds = 1\ndr = 2\n\
             dm = 1\nscheduler = \"rsatf\"\nwrites = \"foreground\"\n[workload]\nkind = \
             \"closed\"\nqueue_depth = 8\nread_fraction = 1.0\nsize_bytes = 4096\n[run]\n\
             requests = 40000\n",
            cal.display()
        ),
    )
    .unwrap();
    let sock = work.path().join("real.sock");
    let json = work.path().join("real.json");
    let disks = format!("{},{}", uri(d0.path()), uri(d1.path()));
    let mut real = Command::new(env!("CARGO_BIN_EXE_spindle"))
        .args([
            "serve",
            exp.to_str().unwrap(),
            "--realtime",
            "--disks",
            &disks,
        ])
        .arg("--unix")
        .arg(&sock)
        .arg("--json")
        .arg(&json)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spindle serve --disks starts");
    // Synchronizing each disk's tracker takes a few seconds.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !sock.exists() {
        if let Some(status) = real.try_wait().expect("wait") {
            let mut err = String::new();
            std::io::Read::read_to_string(real.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("spindle serve --disks exited with {status}: {err}");
        }
        assert!(Instant::now() < deadline, "no socket within 120 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let array = format!("nbd+unix:///spindle?socket={}", sock.display());

    // Real data: bytes written through the array read back, across both disks' stripes.
    let mut c = NbdClient::connect(&NbdUri::parse(&array).unwrap()).expect("connect");
    let size = c.size();
    for k in 0..16u64 {
        let offset = (size / 16 * k) / 4096 * 4096;
        let data: Vec<u8> = (0..65536u32).map(|i| (i as u64 * 31 + k) as u8).collect();
        c.write(offset, &data).expect("write through the array");
        let mut back = vec![0u8; data.len()];
        c.read(offset, &mut back).expect("read back");
        assert!(back == data, "the bytes at {offset} read back differ");
    }
    c.flush().expect("flush");
    drop(c);

    let secs = 15.0;
    let answered = random_reads(&array, 8, secs);
    assert!(answered > 0, "no read answered");
    // A clean stop (SIGINT) writes the final statistics.
    let sent = Command::new("kill")
        .args(["-INT", &real.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "SIGINT sent");
    let status = real.wait().expect("wait");
    assert!(
        status.success(),
        "spindle serve --disks stopped with {status}"
    );
    let _ = (e0.kill(), e1.kill());
    let _ = (e0.wait(), e1.wait());
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("--json written")).unwrap();
    let real_iops = r["real"]["iops"].as_f64().expect("real.iops");
    eprintln!("real driver: {:#}", r["real"]);

    // The simulator on the same experiment, the drive's noise configured into it.
    let noisy = cal_text.replace(
        "seek_rel_sigma = 0.0\nrotation_sigma_ms = 0.0",
        &format!("seek_rel_sigma = {SEEK_NOISE}\nrotation_sigma_ms = {ROTATION_NOISE_MS}"),
    );
    assert_ne!(
        noisy, cal_text,
        "the calibrated file's [noise] section was found"
    );
    std::fs::write(&cal, noisy).unwrap();
    let o = spindle(&[
        "run",
        exp.to_str().unwrap(),
        "--set",
        "drive.noise=true",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sim: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("run JSON");
    let sim_iops = sim["throughput_iops"]
        .as_f64()
        .unwrap_or_else(|| panic!("throughput in {sim}"));
    eprintln!(
        "real {real_iops:.1} IOPS, simulated {sim_iops:.1} IOPS: {:.1} %",
        100.0 * real_iops / sim_iops
    );
    // The bar. Measured 93-94 % here (the host's delay and the drive's noise the
    // model leaves out; docs/calibrate.md).
    assert!(
        real_iops >= 0.9 * sim_iops,
        "the real driver reached {real_iops:.1} IOPS, under 90 % of the simulator's {sim_iops:.1}"
    );

    // Rotation misses are reported per disk, with table 3.2's statistics; a tracker that
    // lost the platter would miss on a large share of requests (a few percent expected:
    // the drive's own seek noise against the tracker's slack).
    for (i, d) in r["real"]["disks"]
        .as_array()
        .expect("disks")
        .iter()
        .enumerate()
    {
        let a = &d["accuracy"];
        let requests = a["requests"].as_u64().expect("requests");
        let misses = a["misses"].as_u64().expect("rotation misses reported");
        assert!(requests > 500, "disk {i}: {requests} requests");
        assert!(
            (misses as f64) < 0.05 * requests as f64,
            "disk {i}: {misses} rotation misses of {requests}"
        );
    }
}

/// An experiment over two disks of the library `cheetah9lp` with `array` keys.
fn two_disk_experiment(dir: &Path, array: &str) -> String {
    let p = dir.join("exp.toml");
    std::fs::write(
        &p,
        format!(
            "seed = 1\n[drive]\nmodel = \"cheetah9lp\"\n[array]\n{array}\n[workload]\nkind = \
             \"closed\"\n[run]\nrequests = 10\n"
        ),
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

/// What a real array cannot run yet is refused before anything is served, naming the key;
/// so is a disk list of the wrong length, and a disk the drive file does not describe.
#[test]
fn arrays_and_disks_the_real_driver_cannot_run_are_refused() {
    let dir = workdir();
    let sock = dir.path().join("s.sock");
    let serve = |exp: &str, disks: &str| {
        spindle(&[
            "serve",
            exp,
            "--disks",
            disks,
            "--unix",
            sock.to_str().unwrap(),
        ])
    };
    // Delayed writes copy between a disk's replicas: the key is named.
    let exp = two_disk_experiment(
        dir.path(),
        "layout = \"sr-mirror\"\nds = 1\ndr = 2\ndm = 1\nwrites = \"delayed\"",
    );
    let o = serve(&exp, "/nonexistent/a,/nonexistent/b");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("array.writes"), "{}", stderr(&o));
    // Eager writing: its controller cannot run real disks.
    let exp = two_disk_experiment(
        dir.path(),
        "layout = \"ew-array\"\nds = 2\ndd = 1.5\ndm = 1",
    );
    let o = serve(&exp, "/nonexistent/a,/nonexistent/b");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("real disks"), "{}", stderr(&o));
    // One disk named for a two-disk array.
    let exp = two_disk_experiment(
        dir.path(),
        "layout = \"sr-mirror\"\nds = 1\ndr = 2\ndm = 1\nwrites = \"foreground\"",
    );
    let o = serve(&exp, "/nonexistent/a");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("names 1 disks, the array has 2"),
        "{}",
        stderr(&o)
    );
    // Files far smaller than the drive: refused for their size, naming it.
    let small: Vec<String> = (0..2)
        .map(|i| {
            let f = dir.path().join(format!("disk{i}"));
            std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
            f.to_string_lossy().into_owned()
        })
        .collect();
    let o = serve(&exp, &small.join(","));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("not this drive"), "{}", stderr(&o));
    assert!(!sock.exists(), "nothing served");
}
