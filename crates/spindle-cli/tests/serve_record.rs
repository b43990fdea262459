//! `spindle serve --record`: a real client (qemu-io) sends a known sequence of requests to
//! the served array; after a clean stop (SIGINT) the recorded file holds exactly those
//! reads and writes, in order, with non-decreasing arrivals, its FLUSHes as comments; spindle's
//! own trace reader, `spindle trace stats` and `spindle run` read it. Bad record paths are
//! refused before anything is served.
//!
//! Without qemu-io the client test skips with a message, unless `SPINDLE_REQUIRE_NBD_TOOLS=1`
//! (CI installs the Debian packages and sets it), which makes it a failure.

use spindle::workload::trace::{self, TraceFormat, TraceRecord};
use spindle::Op;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{spindle, stderr, stdout};

/// A 4-disk RAID-10 of 64 MiB; `[workload]` is whatever `workload` says.
fn experiment(dir: &Path, name: &str, workload: &str) -> String {
    let text = format!(
        "seed = 3\n[drive]\nmodel = \"st39133lwv\"\n[array]\nlayout = \"raid-10\"\nds = 2\n\
         scheduler = \"satf\"\ndata_set_bytes = 67108864\n{workload}"
    );
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the experiment");
    path.to_string_lossy().into_owned()
}

const CLOSED: &str = "[workload]\nkind = \"closed\"\n[run]\nrequests = 100\n";

fn have_qemu_io() -> bool {
    let ok = Command::new("qemu-io")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let msg = "qemu-io not installed (Debian package qemu-utils)";
        assert!(
            std::env::var("SPINDLE_REQUIRE_NBD_TOOLS").map_or(true, |v| v != "1"),
            "{msg}, and SPINDLE_REQUIRE_NBD_TOOLS=1"
        );
        eprintln!("skipping: {msg}");
    }
    ok
}

/// Starts `spindle serve EXP --data DIR/data --unix DIR/sock --record REC` and waits for
/// its socket.
fn serve(exp: &str, dir: &Path, rec: &Path) -> Child {
    let sock = dir.join("sock");
    let mut child = Command::new(env!("CARGO_BIN_EXE_spindle"))
        .args(["serve", exp, "--data"])
        .arg(dir.join("data"))
        .arg("--unix")
        .arg(&sock)
        .arg("--record")
        .arg(rec)
        .stderr(Stdio::piped())
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

/// SIGINT, then the exit status and stderr.
fn stop(child: Child) -> (bool, String) {
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "kill -INT failed");
    let out = child.wait_with_output().expect("spindle serve exits");
    (out.status.success(), stderr(&out))
}

#[test]
fn a_recording_holds_exactly_the_requests_served_and_replays() {
    if !have_qemu_io() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let exp = experiment(dir.path(), "serve.toml", CLOSED);
    let rec = dir.path().join("served.trace");
    std::fs::write(&rec, "an older recording, overwritten\n").expect("write");
    let child = serve(&exp, dir.path(), &rec);
    let uri = format!(
        "nbd+unix:///spindle?socket={}",
        dir.path().join("sock").display()
    );
    // One command at a time, each answered before the next: the order is known. (offset,
    // length) in bytes; qemu-io issues each as one NBD request.
    let sent: [(Op, u64, u64); 6] = [
        (Op::Write, 0, 65536),
        (Op::Write, 1 << 20, 4096),
        (Op::Write, 33 << 20, 512),
        (Op::Read, 0, 65536),
        (Op::Read, 1 << 20, 4096),
        (Op::Read, 33 << 20, 512),
    ];
    let mut args = vec!["-f".to_string(), "raw".to_string(), uri];
    for (i, &(op, off, len)) in sent.iter().enumerate() {
        let cmd = match op {
            Op::Write => format!("write -P 0x{:x} {off} {len}", 0x30 + i),
            Op::Read => format!("read -P 0x{:x} {off} {len}", 0x30 + i - 3),
        };
        args.extend(["-c".to_string(), cmd]);
        if i == 2 {
            args.extend(["-c".to_string(), "flush".to_string()]);
        }
    }
    let o = Command::new("timeout")
        .arg("120")
        .arg("qemu-io")
        .args(&args)
        .output()
        .expect("qemu-io runs");
    let client = stdout(&o) + &stderr(&o);
    assert!(
        o.status.success() && !client.contains("fail"),
        "qemu-io: {client}"
    );
    let (ok, log) = stop(child);
    assert!(ok, "spindle serve did not stop cleanly:\n{log}");
    assert!(
        log.contains("recorded 6 requests (3 reads, 3 writes)"),
        "no record summary:\n{log}"
    );

    // spindle's reader: exactly the requests sent, in order, in 512-byte sectors.
    let text = std::fs::read_to_string(&rec).expect("the recording exists");
    let got: Vec<TraceRecord> = trace::open(TraceFormat::DiskSim, text.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}\n{text}", rec.display()));
    let ops: Vec<(Op, u64, u64)> = got
        .iter()
        .map(|r| (r.op, r.lba * 512, u64::from(r.sectors) * 512))
        .collect();
    assert_eq!(ops, sent, "recorded:\n{text}");
    assert!(got.iter().all(|r| r.device == 0), "{text}");
    assert!(
        got.windows(2).all(|w| w[0].arrival <= w[1].arrival),
        "arrivals go back:\n{text}"
    );
    // The flush between the writes and the reads, as a comment at its place (qemu-io may
    // flush again when it closes).
    let lines: Vec<&str> = text.lines().collect();
    let flush = lines
        .iter()
        .position(|l| l.starts_with("# flush "))
        .unwrap_or_else(|| panic!("no flush recorded:\n{text}"));
    let data_before = lines[..flush].iter().filter(|l| !l.starts_with('#'));
    assert_eq!(
        data_before.count(),
        3,
        "the flush follows the 3 writes:\n{text}"
    );
    assert!(!text.contains("older recording"), "not truncated:\n{text}");
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("# end: 6 requests")),
        "no summary line:\n{text}"
    );

    // `spindle trace stats` detects the format and counts the same.
    let rec_s = rec.to_string_lossy().into_owned();
    let o = spindle(&["trace", "stats", &rec_s, "--json"]);
    assert!(o.status.success(), "trace stats: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["format"].as_str(), Some("disksim"), "{v}");
    let stats = if v["stats"].is_object() {
        &v["stats"]
    } else {
        &v
    };
    assert_eq!(stats["requests"].as_u64(), Some(6), "{v}");
    assert_eq!(stats["reads"].as_u64(), Some(3), "{v}");
    assert_eq!(
        stats["time"]["nonmonotonic_records"].as_u64(),
        Some(0),
        "{v}"
    );

    // `spindle run` replays it on the same array.
    let workload = format!(
        "[workload]\nkind = \"trace\"\n[workload.trace]\npath = \"{}\"\nformat = \"disksim\"\n",
        rec.display()
    );
    let replay = experiment(dir.path(), "replay.toml", &workload);
    let o = spindle(&["run", &replay, "--json"]);
    assert!(o.status.success(), "spindle run: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["requests"].as_u64(), Some(6), "{v}");
}

/// A record path that cannot be a trace is refused, naming it, before anything is served.
#[test]
fn bad_record_paths_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exp = experiment(dir.path(), "serve.toml", CLOSED);
    let sock = dir.path().join("sock").to_string_lossy().into_owned();
    let data = dir.path().join("data").to_string_lossy().into_owned();
    let d = dir.path().to_string_lossy().into_owned();
    let missing = format!("{d}/no/such/dir/x.trace");
    for (path, why) in [
        (d.as_str(), "exists and is not a regular file (a directory)"),
        ("/dev/null", "is not a regular file (a character device)"),
        (
            missing.as_str(),
            "cannot create it: No such file or directory",
        ),
    ] {
        let o = spindle(&[
            "serve", &exp, "--data", &data, "--unix", &sock, "--record", path,
        ]);
        let err = stderr(&o);
        assert!(!o.status.success(), "{path}: accepted:\n{err}");
        assert!(err.contains(&format!("--record {path}: ")), "{path}: {err}");
        assert!(err.contains(why), "{path}: {err}");
        assert!(!Path::new(&sock).exists(), "{path}: it listened");
    }
    assert!(
        std::fs::metadata("/dev/null").is_ok_and(|m| !m.is_file()),
        "/dev/null is still a device"
    );
}
