//! `spindle serve`'s NBD limits and log (issue 24), through the binary and a raw client on
//! its Unix socket: a client beyond `--max-connections` is refused in the handshake, an idle
//! connection is closed after `--idle-timeout`, a protocol violation is logged as a warning
//! on stderr (not with `--log error`), and the final statistics count all three.
//!
//! No tool needed. Timing: only lower bounds and hang guards.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::stderr;

const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const OPT_GO: u32 = 7;
const REP_ACK: u32 = 1;
const REP_INFO: u32 = 3;
const REP_ERR_POLICY: u32 = (1 << 31) + 2;
/// NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES.
const CLIENT_FLAGS: u32 = 3;
/// Hang guard for every read; never a performance bound.
const GUARD: Duration = Duration::from_secs(60);

/// Starts `spindle serve` on a 4-disk RAID-10 of 64 MiB in `dir` with `flags`, and waits
/// for its socket.
fn serve(dir: &Path, flags: &[&str]) -> Child {
    let exp = dir.join("exp.toml");
    std::fs::write(
        &exp,
        "seed = 3\n[drive]\nmodel = \"st39133lwv\"\n[array]\nlayout = \"raid-10\"\nds = 2\n\
         scheduler = \"satf\"\ndata_set_bytes = 67108864\n[workload]\nkind = \"closed\"\n\
         [run]\nrequests = 100\n",
    )
    .expect("write the experiment");
    let sock = dir.join("sock");
    let mut child = Command::new(env!("CARGO_BIN_EXE_spindle"))
        .arg("serve")
        .arg(&exp)
        .arg("--data")
        .arg(dir.join("data"))
        .arg("--unix")
        .arg(&sock)
        .args(flags)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spindle serve starts");
    let deadline = Instant::now() + GUARD;
    while !sock.exists() {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).ok();
            panic!("spindle serve exited with {status} before listening: {err}");
        }
        assert!(Instant::now() < deadline, "no socket within {GUARD:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// SIGINT; then whether it exited 0, and its stderr.
fn stop(child: Child) -> (bool, String) {
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "kill -INT failed");
    let out = child.wait_with_output().expect("spindle serve exits");
    (out.status.success(), stderr(&out))
}

fn connect(dir: &Path) -> UnixStream {
    let s = UnixStream::connect(dir.join("sock")).expect("connect");
    s.set_read_timeout(Some(GUARD)).expect("read timeout");
    s
}

fn read_n<const N: usize>(s: &mut UnixStream) -> [u8; N] {
    let mut b = [0u8; N];
    s.read_exact(&mut b)
        .expect("read (or the hang guard fired)");
    b
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes(b[i..i + 4].try_into().unwrap())
}

/// Reads the server's greeting.
fn greeting(s: &mut UnixStream) {
    let b = read_n::<18>(s);
    assert_eq!(u64::from_be_bytes(b[0..8].try_into().unwrap()), NBDMAGIC);
    assert_eq!(u64::from_be_bytes(b[8..16].try_into().unwrap()), IHAVEOPT);
}

/// Sends NBD_OPT_GO for the default export.
fn send_go(s: &mut UnixStream) {
    let mut b = Vec::new();
    b.extend_from_slice(&IHAVEOPT.to_be_bytes());
    b.extend_from_slice(&OPT_GO.to_be_bytes());
    b.extend_from_slice(&6u32.to_be_bytes());
    b.extend_from_slice(&[0; 6]); // empty name, no information requests
    s.write_all(&b).expect("send NBD_OPT_GO");
}

/// One option reply: (reply type, data).
fn option_reply(s: &mut UnixStream) -> (u32, Vec<u8>) {
    let h = read_n::<20>(s);
    assert_eq!(
        u64::from_be_bytes(h[0..8].try_into().unwrap()),
        OPT_REPLY_MAGIC
    );
    assert_eq!(u32_at(&h, 8), OPT_GO);
    let mut data = vec![0; u32_at(&h, 16) as usize];
    s.read_exact(&mut data).expect("reply data");
    (u32_at(&h, 12), data)
}

/// The server closes `s` without sending anything more.
fn expect_closed(s: &mut UnixStream) {
    let mut rest = Vec::new();
    s.read_to_end(&mut rest)
        .expect("EOF (or the hang guard fired)");
    assert!(rest.is_empty(), "{} unexpected bytes", rest.len());
}

#[test]
fn serve_refuses_beyond_the_limit_and_closes_idle_connections() {
    let dir = tempfile::tempdir().expect("tempdir");
    let child = serve(
        dir.path(),
        &["--max-connections", "1", "--idle-timeout", "1"],
    );
    // The one place: a client still in the handshake holds it (for up to 60 s).
    let mut first = connect(dir.path());
    greeting(&mut first);
    let mut second = connect(dir.path());
    greeting(&mut second);
    second.write_all(&CLIENT_FLAGS.to_be_bytes()).unwrap();
    send_go(&mut second);
    let (rep, msg) = option_reply(&mut second);
    let msg = String::from_utf8_lossy(&msg).into_owned();
    assert_eq!(rep, REP_ERR_POLICY, "{msg}");
    assert!(msg.contains("server busy"), "refusal message {msg:?}");
    drop(second);
    // The first finishes its handshake, then sends nothing: closed after the idle timeout.
    first.write_all(&CLIENT_FLAGS.to_be_bytes()).unwrap();
    send_go(&mut first);
    loop {
        match option_reply(&mut first) {
            (REP_INFO, _) => {}
            (REP_ACK, _) => break,
            (rep, d) => panic!(
                "NBD_OPT_GO failed: {rep:#x} {}",
                String::from_utf8_lossy(&d)
            ),
        }
    }
    let idle_from = Instant::now();
    expect_closed(&mut first);
    assert!(
        idle_from.elapsed() >= Duration::from_secs(1),
        "closed before the timeout"
    );
    let (ok, log) = stop(child);
    assert!(ok, "spindle serve failed:\n{log}");
    assert!(
        log.contains("WARN") && log.contains("refused: 1 connections open"),
        "no warning for the refusal:\n{log}"
    );
    let nbd = log
        .lines()
        .find(|l| l.starts_with("spindle serve: nbd: "))
        .unwrap_or_else(|| panic!("no NBD statistics:\n{log}"));
    assert!(
        nbd.contains("1 refused, 1 closed idle"),
        "counters in {nbd:?}"
    );
    assert!(nbd.contains("0 protocol violations"), "counters in {nbd:?}");
}

/// Bad client flags: the violation closes the connection and is logged at warn (the
/// default), or not with `--log error`; the statistics count it either way.
#[test]
fn serve_logs_protocol_violations_at_warn() {
    for (flags, logged) in [(&[][..], true), (&["--log", "error"][..], false)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let child = serve(dir.path(), flags);
        let mut s = connect(dir.path());
        greeting(&mut s);
        s.write_all(&0x8000_0000u32.to_be_bytes()).unwrap();
        expect_closed(&mut s);
        let (ok, log) = stop(child);
        assert!(ok, "spindle serve {flags:?} failed:\n{log}");
        let warned = log.lines().any(|l| {
            l.contains("WARN") && l.contains("protocol violation: handshake: client flags")
        });
        assert_eq!(warned, logged, "{flags:?}: warning logged: {warned}\n{log}");
        let nbd = log
            .lines()
            .find(|l| l.starts_with("spindle serve: nbd: "))
            .unwrap_or_else(|| panic!("no NBD statistics:\n{log}"));
        assert!(nbd.contains("1 protocol violations"), "counters in {nbd:?}");
    }
}

#[test]
fn serve_refuses_bad_limits_and_log_levels() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (flags, says) in [
        (&["--max-connections", "0"][..], "connection limit is 0"),
        (&["--idle-timeout=-1"][..], "--idle-timeout -1"),
        (&["--max-in-flight-mib", "0"][..], "--max-in-flight-mib 0"),
        (&["--log", "wrn"][..], "--log \"wrn\""),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_spindle"))
            .args(["serve", "no-such.toml", "--data"])
            .arg(dir.path().join("data"))
            .arg("--unix")
            .arg(dir.path().join("sock"))
            .args(flags)
            .output()
            .expect("spindle runs");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
    }
}
