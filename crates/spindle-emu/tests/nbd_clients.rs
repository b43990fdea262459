//! The NBD server against real clients: libnbd's nbdinfo and nbdcopy (Debian `libnbd-bin`),
//! qemu-io and qemu-img (`qemu-utils`), fio's nbd engine (`fio`).
//!
//! A test whose tool is missing prints why and passes, unless `SPINDLE_REQUIRE_NBD_TOOLS=1`
//! is set (CI sets it after installing the packages), in which case it fails. Every tool runs
//! under `timeout` as a hang guard only.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use spindle_emu::nbd::{Backend, MemBackend, MemOptions, Server};

mod common;
use common::have;

const SIZE: usize = 16 << 20;
/// Hang guard per tool run, seconds.
const TOOL_TIMEOUT_S: &str = "300";

/// A server on its own runtime thread, on TCP port 0 and a Unix socket; stops on drop.
struct Bg {
    server: Arc<Server>,
    mem: MemBackend,
    port: u16,
    sock: PathBuf,
    _dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Bg {
    fn start(opts: MemOptions) -> Bg {
        let mem = MemBackend::with_options(SIZE, opts);
        let backend: Arc<dyn Backend> = Arc::new(mem.clone());
        let exports = vec![("mem".to_string(), "test disk".to_string(), backend)];
        let server = Arc::new(Server::new(exports).expect("valid exports"));
        let dir = tempfile::tempdir().expect("tempdir");
        let sock = dir.path().join("nbd.sock");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let (srv, sock2) = (server.clone(), sock.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind tcp");
                let unix = tokio::net::UnixListener::bind(&sock2).expect("bind unix");
                port_tx
                    .send(tcp.local_addr().expect("addr").port())
                    .expect("send port");
                let (stop_unix, stopped_unix) = tokio::sync::oneshot::channel::<()>();
                let unix_task = tokio::spawn(srv.clone().serve_unix(unix, stopped_unix));
                srv.serve_tcp(tcp, stopped).await;
                let _ = stop_unix.send(());
                unix_task.await.expect("unix serve task");
            });
        });
        let port = port_rx.recv().expect("server thread reports its port");
        Bg {
            server,
            mem,
            port,
            sock,
            _dir: dir,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn uri(&self) -> String {
        format!("nbd://127.0.0.1:{}", self.port)
    }

    fn unix_uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.sock.display())
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let r = t.join();
            if !std::thread::panicking() {
                r.expect("server thread");
            }
        }
    }
}

fn run(tool: &str, args: &[&str]) -> Output {
    let out = Command::new("timeout")
        .arg(TOOL_TIMEOUT_S)
        .arg(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {tool}: {e}"));
    eprintln!(
        "$ {tool} {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn check_clean(bg: &Bg) {
    let st = bg.server.stats();
    assert_eq!(
        st.protocol_errors,
        0,
        "violations: {:?}",
        bg.server.last_violation()
    );
    assert_eq!(bg.mem.out_of_range(), 0);
}

#[test]
fn nbdinfo_reports_size_and_block_sizes() {
    if !have("nbdinfo", "libnbd-bin") {
        return;
    }
    let bg = Bg::start(MemOptions::default());
    let o = run("nbdinfo", &["--size", &bg.uri()]);
    assert!(o.status.success());
    assert_eq!(stdout(&o).trim(), SIZE.to_string());
    let o = run("nbdinfo", &[&bg.unix_uri()]);
    assert!(o.status.success());
    let text = stdout(&o);
    for want in [
        "export=\"mem\"",
        "description: test disk",
        "export-size: 16777216",
        "block_size_minimum: 512",
        "block_size_preferred: 4096",
        "block_size_maximum: 33554432",
        "can_flush: true",
        "can_fua: true",
        "can_trim: true",
        "can_zero: true",
        "is_read_only: false",
    ] {
        assert!(text.contains(want), "nbdinfo output lacks {want:?}");
    }
    let o = run("nbdinfo", &["--list", &bg.uri()]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("export=\"mem\""));
    check_clean(&bg);
}

#[test]
fn qemu_io_writes_and_verifies_patterns() {
    if !have("qemu-io", "qemu-utils") {
        return;
    }
    let bg = Bg::start(MemOptions::default());
    let uri = bg.uri();
    let args = [
        "-f",
        "raw",
        &uri,
        "-c",
        "write -P 0xab 0 1M",
        "-c",
        "read -P 0xab 0 1M",
    ];
    let o = run("qemu-io", &args);
    assert!(o.status.success(), "qemu-io write/read failed");
    assert!(stdout(&o).contains("read 1048576/1048576 bytes at offset 0"));
    assert!(!stdout(&o).contains("Pattern verification failed"));
    assert_eq!(&bg.mem.contents()[..1 << 20], &vec![0xab; 1 << 20][..]);
    // The check has teeth: the wrong pattern fails.
    let o = run("qemu-io", &["-f", "raw", &uri, "-c", "read -P 0xcd 0 1M"]);
    assert!(!o.status.success(), "qemu-io accepted the wrong pattern");
    assert!(stdout(&o).contains("Pattern verification failed at offset 0"));
    // Zeroes, discard, flush and parallel aio writes, over the Unix socket.
    let unix = bg.unix_uri();
    let cmds = [
        "write -z 4096 8192",
        "read -P 0 4096 8192",
        "read -P 0xab 0 4096",
        "read -P 0xab 12288 4096",
        "discard 65536 65536",
        "flush",
        "aio_write -P 0x11 2M 64k",
        "aio_write -P 0x22 3M 64k",
        "aio_write -P 0x33 4M 64k",
        "aio_flush",
        "read -P 0x22 3M 64k",
        "read -P 0x33 4M 64k",
        "read -P 0x11 2M 64k",
    ];
    let mut args = vec!["-f", "raw", &unix];
    for c in &cmds {
        args.extend(["-c", c]);
    }
    let o = run("qemu-io", &args);
    assert!(o.status.success(), "qemu-io command list failed");
    assert!(!stdout(&o).contains("failed"));
    assert!(bg.server.stats().flushes >= 2);
    check_clean(&bg);
}

#[test]
fn qemu_img_sees_the_size() {
    if !have("qemu-img", "qemu-utils") {
        return;
    }
    let bg = Bg::start(MemOptions::default());
    let o = run("qemu-img", &["info", &bg.uri()]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("virtual size: 16 MiB (16777216 bytes)"));
    check_clean(&bg);
}

#[test]
fn nbdcopy_round_trips_a_file() {
    if !have("nbdcopy", "libnbd-bin") {
        return;
    }
    // Delays reorder completions under nbdcopy's many requests in flight.
    let opts = MemOptions {
        delay_max: Duration::from_micros(300),
        seed: 7,
        multi_conn: true,
        ..MemOptions::default()
    };
    let bg = Bg::start(opts);
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("in.bin");
    let dst = dir.path().join("out.bin");
    let data: Vec<u8> = (0..SIZE as u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&src, &data).expect("write source file");
    let path = |p: &Path| p.to_str().expect("utf-8 path").to_string();
    let o = run("nbdcopy", &[&path(&src), &bg.uri()]);
    assert!(o.status.success(), "nbdcopy to the server failed");
    assert!(
        bg.mem.contents() == data,
        "server contents differ from the source file"
    );
    let o = run("nbdcopy", &[&bg.unix_uri(), &path(&dst)]);
    assert!(o.status.success(), "nbdcopy from the server failed");
    assert!(
        std::fs::read(&dst).expect("read copy") == data,
        "copied file differs"
    );
    check_clean(&bg);
}

#[test]
fn fio_randrw_verifies() {
    if !have("fio", "fio") {
        return;
    }
    let engines = Command::new("fio")
        .arg("--enghelp")
        .output()
        .expect("fio --enghelp");
    if !String::from_utf8_lossy(&engines.stdout)
        .lines()
        .any(|l| l.trim() == "nbd")
    {
        eprintln!("skipping: this fio has no nbd engine");
        return;
    }
    let opts = MemOptions {
        delay_max: Duration::from_micros(200),
        seed: 11,
        ..MemOptions::default()
    };
    let bg = Bg::start(opts);
    let uri = format!("--uri={}", bg.uri());
    let o = run(
        "fio",
        &[
            "--name=nbd-randrw",
            "--ioengine=nbd",
            &uri,
            "--rw=randrw",
            "--bs=4k",
            "--iodepth=32",
            "--size=16M",
            "--verify=crc32c",
            "--verify_fatal=1",
            "--randseed=42",
            "--verify_state_save=0",
        ],
    );
    assert!(o.status.success(), "fio failed");
    assert!(stdout(&o).contains("err= 0"), "fio reported an error");
    let st = bg.server.stats();
    assert!(st.writes > 0 && st.reads > 0, "fio did no i/o: {st:?}");
    check_clean(&bg);
}

/// spindle's own blocking client (`nbd::client`, used by `spindle calibrate`) over TCP and
/// a Unix socket: reads, writes, flush, a refused export name, out-of-range requests.
#[test]
fn own_client_reads_writes_and_flushes() {
    use spindle_emu::nbd::client::{NbdClient, NbdError, NbdUri};
    let bg = Bg::start(MemOptions::default());
    for uri in [format!("{}/mem", bg.uri()), bg.unix_uri()] {
        let mut c = NbdClient::connect(&NbdUri::parse(&uri).unwrap()).expect("connect");
        assert_eq!(c.size(), SIZE as u64);
        assert_eq!(c.block_min(), 512);
        assert!(!c.read_only());
        c.write(4096, &[0x5a; 8192]).expect("write");
        c.flush().expect("flush");
        let mut buf = vec![0u8; 8192 + 512];
        c.read(4096 - 512, &mut buf).expect("read");
        assert_eq!(&buf[..512], &[0u8; 512][..]);
        assert_eq!(&buf[512..], &[0x5a; 8192][..]);
        let err = c.read(SIZE as u64 - 512, &mut buf).unwrap_err();
        assert!(err.to_string().contains("beyond the export"), "{err}");
        c.disconnect().expect("disconnect");
    }
    assert_eq!(bg.mem.flushes(), 2);
    let bad = NbdUri::parse(&format!("{}/nope", bg.uri())).unwrap();
    match NbdClient::connect(&bad) {
        Err(NbdError::Refused(msg)) => assert!(msg.contains("no export named"), "{msg}"),
        Err(e) => panic!("expected a refusal, got {e}"),
        Ok(_) => panic!("expected a refusal, got a connection"),
    }
    // The server counts the refused export as a client error; nothing else went wrong.
    assert_eq!(bg.mem.out_of_range(), 0);
}
