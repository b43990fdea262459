//! Server tests through a small fixed-newstyle client over TCP, Unix sockets and in-memory
//! pipes. No timing assertions: reordering is forced with gates, waits have only hang guards.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::oneshot;

use super::proto::*;
use super::*;

type Exports = Vec<(String, String, Arc<dyn Backend>)>;
type Gates = Vec<(u64, oneshot::Sender<()>)>;

/// Hang guard for a whole test step; never a performance bound.
const GUARD: Duration = Duration::from_secs(60);

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

async fn guard<F: std::future::Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(GUARD, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: still waiting after {GUARD:?}"),
    }
}

/// Polls `cond` until true (hang-guarded).
async fn wait_until(what: &str, cond: impl Fn() -> bool) {
    guard(what, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// Servers under test

struct Running {
    server: Arc<Server>,
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    async fn tcp(exports: Exports) -> Running {
        let server = Arc::new(Server::new(exports).expect("valid exports"));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.clone().serve_tcp(listener, stopped));
        Running {
            server,
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.expect("connect")
    }

    async fn stop(mut self) {
        let _ = self.stop.take().expect("running").send(());
        guard("serve_tcp returns", self.task.take().expect("running"))
            .await
            .expect("serve task");
    }
}

fn one(name: &str, b: impl Backend) -> Exports {
    vec![(name.to_string(), format!("{name} export"), Arc::new(b))]
}

// ---------------------------------------------------------------------------------------
// A small client

async fn read_u16<S: Stream>(s: &mut S) -> u16 {
    s.read_u16().await.expect("read u16")
}

/// Reads the server greeting and sends client flags.
async fn greet<S: Stream>(s: &mut S, client_flags: u32) {
    assert_eq!(s.read_u64().await.expect("NBDMAGIC"), NBDMAGIC);
    assert_eq!(s.read_u64().await.expect("IHAVEOPT"), IHAVEOPT);
    assert_eq!(read_u16(s).await, FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
    s.write_u32(client_flags).await.expect("client flags");
}

async fn send_opt<S: Stream>(s: &mut S, opt: u32, data: &[u8]) {
    let mut b = Vec::new();
    b.extend_from_slice(&IHAVEOPT.to_be_bytes());
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&u32::try_from(data.len()).unwrap().to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b).await.expect("send option");
}

/// One option reply: (option, reply type, data).
async fn read_opt_reply<S: Stream>(s: &mut S) -> (u32, u32, Vec<u8>) {
    assert_eq!(s.read_u64().await.expect("reply magic"), OPT_REPLY_MAGIC);
    let opt = s.read_u32().await.expect("reply option");
    let rep = s.read_u32().await.expect("reply type");
    let len = s.read_u32().await.expect("reply length");
    assert!(len <= 65536, "option reply length {len}");
    let mut data = vec![0; len as usize];
    s.read_exact(&mut data).await.expect("reply data");
    (opt, rep, data)
}

fn info_data(name: &str, infos: &[u16]) -> Vec<u8> {
    let mut d = Vec::new();
    d.extend_from_slice(&u32::try_from(name.len()).unwrap().to_be_bytes());
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&u16::try_from(infos.len()).unwrap().to_be_bytes());
    for i in infos {
        d.extend_from_slice(&i.to_be_bytes());
    }
    d
}

/// What NBD_OPT_INFO/GO answered: (size, transmission flags, block sizes, other infos), or
/// the error reply type.
#[derive(Debug, Default)]
struct Info {
    size: u64,
    flags: u16,
    block: Option<(u32, u32, u32)>,
    name: Option<String>,
    description: Option<String>,
}

async fn info_or_go<S: Stream>(
    s: &mut S,
    opt: u32,
    name: &str,
    infos: &[u16],
) -> Result<Info, u32> {
    send_opt(s, opt, &info_data(name, infos)).await;
    let mut info = Info::default();
    let mut saw_export = false;
    loop {
        let (o, rep, d) = read_opt_reply(s).await;
        assert_eq!(o, opt);
        match rep {
            REP_ACK => break,
            REP_INFO => {
                let t = u16::from_be_bytes([d[0], d[1]]);
                match t {
                    INFO_EXPORT => {
                        assert_eq!(d.len(), 12);
                        info.size = u64::from_be_bytes(d[2..10].try_into().unwrap());
                        info.flags = u16::from_be_bytes([d[10], d[11]]);
                        saw_export = true;
                    }
                    INFO_BLOCK_SIZE => {
                        assert_eq!(d.len(), 14);
                        let g = |i: usize| u32::from_be_bytes(d[i..i + 4].try_into().unwrap());
                        info.block = Some((g(2), g(6), g(10)));
                    }
                    INFO_NAME => info.name = Some(String::from_utf8(d[2..].to_vec()).unwrap()),
                    INFO_DESCRIPTION => {
                        info.description = Some(String::from_utf8(d[2..].to_vec()).unwrap())
                    }
                    _ => panic!("unexpected info type {t}"),
                }
            }
            e => return Err(e),
        }
    }
    assert!(saw_export, "no NBD_INFO_EXPORT before ACK");
    Ok(info)
}

/// Handshake with NBD_OPT_GO; returns the export info.
async fn go<S: Stream>(s: &mut S, name: &str) -> Info {
    greet(s, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).await;
    info_or_go(s, OPT_GO, name, &[INFO_BLOCK_SIZE])
        .await
        .expect("NBD_OPT_GO succeeds")
}

async fn send_req<S: AsyncWrite + Unpin>(
    s: &mut S,
    kind: u16,
    flags: u16,
    cookie: u64,
    offset: u64,
    length: u32,
    payload: &[u8],
) {
    let r = Request {
        magic: REQUEST_MAGIC,
        flags,
        kind,
        cookie,
        offset,
        length,
    };
    let mut b = r.encode().to_vec();
    b.extend_from_slice(payload);
    s.write_all(&b).await.expect("send request");
}

/// Reads one simple reply; `reads` maps cookies of pending reads to their lengths.
async fn read_reply<S: AsyncRead + Unpin>(
    s: &mut S,
    reads: &HashMap<u64, u32>,
) -> (u64, u32, Vec<u8>) {
    let mut h = [0u8; SIMPLE_REPLY_LEN];
    s.read_exact(&mut h).await.expect("reply header");
    assert_eq!(
        u32::from_be_bytes(h[0..4].try_into().unwrap()),
        SIMPLE_REPLY_MAGIC
    );
    let error = u32::from_be_bytes(h[4..8].try_into().unwrap());
    let cookie = u64::from_be_bytes(h[8..16].try_into().unwrap());
    let mut data = Vec::new();
    if error == 0 {
        if let Some(&len) = reads.get(&cookie) {
            data = vec![0; len as usize];
            s.read_exact(&mut data).await.expect("read data");
        }
    }
    (cookie, error, data)
}

/// One request, one reply: (error, data).
async fn call<S: Stream>(
    s: &mut S,
    kind: u16,
    flags: u16,
    offset: u64,
    length: u32,
    payload: &[u8],
) -> (u32, Vec<u8>) {
    send_req(s, kind, flags, 77, offset, length, payload).await;
    let reads: HashMap<u64, u32> = if kind == CMD_READ {
        [(77, length)].into()
    } else {
        HashMap::new()
    };
    let (cookie, e, d) = read_reply(s, &reads).await;
    assert_eq!(cookie, 77);
    (e, d)
}

async fn read_at<S: Stream>(s: &mut S, offset: u64, len: u32) -> Vec<u8> {
    let (e, d) = call(s, CMD_READ, 0, offset, len, &[]).await;
    assert_eq!(e, 0, "read {offset}+{len}");
    d
}

async fn write_at<S: Stream>(s: &mut S, offset: u64, data: &[u8], flags: u16) {
    let len = u32::try_from(data.len()).unwrap();
    let (e, _) = call(s, CMD_WRITE, flags, offset, len, data).await;
    assert_eq!(e, 0, "write {offset}+{len}");
}

async fn disconnect<S: Stream>(mut s: S) {
    send_req(&mut s, CMD_DISC, 0, 0, 0, 0, &[]).await;
    expect_closed(&mut s).await;
}

/// The server closes: EOF (or a reset) with no further bytes.
async fn expect_closed<S: Stream>(s: &mut S) {
    let mut rest = Vec::new();
    let r = guard("server closes", s.read_to_end(&mut rest)).await;
    assert!(
        rest.is_empty(),
        "{} unexpected bytes before close ({r:?})",
        rest.len()
    );
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Basic I/O

/// Writes patterns at assorted offsets and lengths, reads them back, compares with a model.
async fn pattern_round_trip<S: Stream>(s: &mut S, mem: &MemBackend) {
    let size = mem.contents().len();
    let mut model = vec![0u8; size];
    let spots: [(usize, usize); 6] = [
        (0, 4096),
        (512, 512),
        (8192, 65536),
        (size - 4096, 4096),
        (1000, 3),
        (70000, 131072),
    ];
    for (i, &(off, len)) in spots.iter().enumerate() {
        let p = pattern(i as u64 + 1, len);
        write_at(s, off as u64, &p, 0).await;
        model[off..off + len].copy_from_slice(&p);
    }
    for &(off, len) in &spots {
        assert_eq!(
            read_at(s, off as u64, len as u32).await,
            model[off..off + len],
            "read back {off}+{len}"
        );
    }
    assert_eq!(read_at(s, 0, 262144).await, model[..262144]);
    assert_eq!(mem.contents(), model);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_pattern_writes_read_back() {
    let mem = MemBackend::new(1 << 20);
    let srv = Running::tcp(one("disk", mem.clone())).await;
    let mut s = srv.connect().await;
    let info = go(&mut s, "disk").await;
    assert_eq!(info.size, 1 << 20);
    pattern_round_trip(&mut s, &mem).await;
    disconnect(s).await;
    wait_until("connection closed", || {
        srv.server.stats().connections_open == 0
    })
    .await;
    let st = srv.server.stats();
    assert_eq!(
        (st.handshakes, st.writes, st.reads, st.disconnects),
        (1, 6, 7, 1)
    );
    assert_eq!(st.protocol_errors, 0);
    assert_eq!(mem.out_of_range(), 0);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_socket_pattern_writes_read_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nbd.sock");
    let mem = MemBackend::new(1 << 20);
    let server = Arc::new(Server::new(one("disk", mem.clone())).unwrap());
    let listener = UnixListener::bind(&path).expect("bind unix socket");
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.clone().serve_unix(listener, stopped));
    let mut s = UnixStream::connect(&path)
        .await
        .expect("connect unix socket");
    let info = go(&mut s, "").await;
    assert_eq!(info.size, 1 << 20);
    pattern_round_trip(&mut s, &mem).await;
    disconnect(s).await;
    stop.send(()).unwrap();
    guard("serve_unix returns", task).await.unwrap();
    assert_eq!(server.stats().disconnects, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_stream_is_served() {
    let mem = MemBackend::new(65536);
    let server = Arc::new(Server::new(one("m", mem.clone())).unwrap());
    let (mut c, s) = tokio::io::duplex(1 << 16);
    let task = tokio::spawn(server.clone().serve_connection(s, "duplex".to_string()));
    go(&mut c, "m").await;
    write_at(&mut c, 4096, &[7; 4096], 0).await;
    assert_eq!(read_at(&mut c, 4096, 4096).await, vec![7; 4096]);
    disconnect(c).await;
    guard("serve_connection returns", task).await.unwrap();
}

// ---------------------------------------------------------------------------------------
// Many requests in flight

/// 64 writes then 64 reads all in flight at once over random delays: every reply matches
/// one cookie exactly once and the data are right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_in_flight_with_reordering() {
    let opts = MemOptions {
        delay_max: Duration::from_millis(3),
        seed: 0x5EED,
        ..MemOptions::default()
    };
    let mem = MemBackend::with_options(64 * 8192, opts);
    let srv = Running::tcp(one("d", mem.clone())).await;
    let mut s = srv.connect().await;
    go(&mut s, "d").await;
    let (mut rd, mut wr) = tokio::io::split(s);
    const N: u64 = 64;
    let len = 8192u32;
    let sender = async {
        for i in 0..N {
            send_req(
                &mut wr,
                CMD_WRITE,
                0,
                1000 + i,
                i * 8192,
                len,
                &pattern(i, 8192),
            )
            .await;
        }
    };
    let receiver = async {
        let mut seen = Vec::new();
        for _ in 0..N {
            let (cookie, e, _) = read_reply(&mut rd, &HashMap::new()).await;
            assert_eq!(e, 0, "write {cookie}");
            seen.push(cookie);
        }
        seen
    };
    let ((), mut seen) = guard("64 writes", async { tokio::join!(sender, receiver) }).await;
    seen.sort_unstable();
    assert_eq!(
        seen,
        (1000..1000 + N).collect::<Vec<_>>(),
        "each write cookie exactly once"
    );
    let reads: HashMap<u64, u32> = (0..N).map(|i| (2000 + i, len)).collect();
    let sender = async {
        for i in (0..N).rev() {
            send_req(&mut wr, CMD_READ, 0, 2000 + i, i * 8192, len, &[]).await;
        }
    };
    let receiver = async {
        let mut got = HashMap::new();
        for _ in 0..N {
            let (cookie, e, d) = read_reply(&mut rd, &reads).await;
            assert_eq!(e, 0, "read {cookie}");
            assert!(
                got.insert(cookie, d).is_none(),
                "cookie {cookie} answered twice"
            );
        }
        got
    };
    let ((), got) = guard("64 reads", async { tokio::join!(sender, receiver) }).await;
    for i in 0..N {
        assert_eq!(got[&(2000 + i)], pattern(i, 8192), "read {i} data");
    }
    disconnect(tokio::io::join(rd, wr)).await;
    assert_eq!(mem.out_of_range(), 0);
    srv.stop().await;
}

/// A backend whose reads wait until the test opens their gate: forces any completion order.
#[derive(Clone, Default)]
struct GateBackend {
    gates: Arc<Mutex<Gates>>,
}

impl GateBackend {
    fn waiting(&self) -> usize {
        self.gates.lock().unwrap().len()
    }

    fn open(&self, offset: u64) {
        let mut g = self.gates.lock().unwrap();
        let i = g
            .iter()
            .position(|(o, _)| *o == offset)
            .expect("a read waits at that offset");
        let (_, tx) = g.swap_remove(i);
        tx.send(()).expect("read still waiting");
    }
}

impl Backend for GateBackend {
    fn size_bytes(&self) -> u64 {
        1 << 20
    }
    fn read(&self, offset: u64, len: u32) -> BoxFuture<'static, Result<Vec<u8>, NbdError>> {
        let (tx, rx) = oneshot::channel();
        self.gates.lock().unwrap().push((offset, tx));
        Box::pin(async move {
            rx.await.map_err(|_| NbdError::Io)?;
            Ok(vec![(offset / 4096) as u8; len as usize])
        })
    }
    fn write(&self, _: u64, _: Vec<u8>, _: bool) -> BoxFuture<'static, Result<(), NbdError>> {
        Box::pin(async { Ok(()) })
    }
    fn flush(&self) -> BoxFuture<'static, Result<(), NbdError>> {
        Box::pin(async { Ok(()) })
    }
    fn trim(&self, _: u64, _: u32, _: bool) -> BoxFuture<'static, Result<(), NbdError>> {
        Box::pin(async { Ok(()) })
    }
    fn write_zeroes(&self, _: u64, _: u32, _: bool) -> BoxFuture<'static, Result<(), NbdError>> {
        Box::pin(async { Ok(()) })
    }
}

/// All 64 reads reach the backend at once, and the replies go out exactly in the order the
/// backend completes them (here: reversed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_follow_completion_order() {
    let gate = GateBackend::default();
    let srv = Running::tcp(one("g", gate.clone())).await;
    let mut s = srv.connect().await;
    go(&mut s, "g").await;
    let reads: HashMap<u64, u32> = (0..64).map(|i| (i, 4096)).collect();
    for i in 0..64u64 {
        send_req(&mut s, CMD_READ, 0, i, i * 4096, 4096, &[]).await;
    }
    wait_until("64 reads at the backend", || gate.waiting() == 64).await;
    for i in (0..64u64).rev() {
        gate.open(i * 4096);
        let (cookie, e, d) = guard("reply", read_reply(&mut s, &reads)).await;
        assert_eq!((cookie, e), (i, 0), "reply order follows completion");
        assert_eq!(d, vec![i as u8; 4096]);
    }
    disconnect(s).await;
    srv.stop().await;
}

/// NBD_CMD_DISC waits for the requests before it: their replies arrive, then the close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disc_drains_in_flight_requests() {
    let gate = GateBackend::default();
    let srv = Running::tcp(one("g", gate.clone())).await;
    let mut s = srv.connect().await;
    go(&mut s, "g").await;
    for i in 0..4u64 {
        send_req(&mut s, CMD_READ, 0, i, i * 4096, 4096, &[]).await;
    }
    send_req(&mut s, CMD_DISC, 0, 99, 0, 0, &[]).await;
    wait_until("4 reads at the backend", || gate.waiting() == 4).await;
    for i in [2u64, 0, 3, 1] {
        gate.open(i * 4096);
    }
    let reads: HashMap<u64, u32> = (0..4).map(|i| (i, 4096)).collect();
    let mut got = Vec::new();
    for _ in 0..4 {
        let (cookie, e, d) = read_reply(&mut s, &reads).await;
        assert_eq!(e, 0);
        assert_eq!(d, vec![cookie as u8; 4096]);
        got.push(cookie);
    }
    got.sort_unstable();
    assert_eq!(got, vec![0, 1, 2, 3]);
    expect_closed(&mut s).await;
    srv.stop().await;
}

// ---------------------------------------------------------------------------------------
// FUA, FLUSH, TRIM, WRITE_ZEROES

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fua_flush_trim_write_zeroes() {
    let mem = MemBackend::new(1 << 20);
    let srv = Running::tcp(one("d", mem.clone())).await;
    let mut s = srv.connect().await;
    let info = go(&mut s, "d").await;
    let want =
        FLAG_HAS_FLAGS | FLAG_SEND_FLUSH | FLAG_SEND_FUA | FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES;
    assert_eq!(info.flags, want, "transmission flags {:#x}", info.flags);
    let ones = vec![0xffu8; 65536];
    write_at(&mut s, 0, &ones, CMD_FLAG_FUA).await;
    assert_eq!(mem.fua_writes(), 1);
    assert_eq!(call(&mut s, CMD_FLUSH, 0, 0, 0, &[]).await.0, 0);
    assert_eq!(mem.flushes(), 1);
    // write_zeroes (with NO_HOLE and FUA) in the middle: zeroes there, ones around.
    assert_eq!(
        call(
            &mut s,
            CMD_WRITE_ZEROES,
            CMD_FLAG_NO_HOLE | CMD_FLAG_FUA,
            4096,
            8192,
            &[]
        )
        .await
        .0,
        0
    );
    assert_eq!(mem.fua_writes(), 2);
    let d = read_at(&mut s, 0, 16384).await;
    assert_eq!(&d[..4096], &ones[..4096]);
    assert!(
        d[4096..12288].iter().all(|&b| b == 0),
        "write_zeroes range reads zeroes"
    );
    assert_eq!(&d[12288..], &ones[..4096]);
    // TRIM: MemBackend zeroes trimmed bytes.
    assert_eq!(call(&mut s, CMD_TRIM, 0, 32768, 4096, &[]).await.0, 0);
    let d = read_at(&mut s, 28672, 12288).await;
    assert_eq!(&d[..4096], &ones[..4096]);
    assert!(d[4096..8192].iter().all(|&b| b == 0));
    assert_eq!(&d[8192..], &ones[..4096]);
    // Zero-length requests are answered without reaching the backend.
    let before = mem.requests();
    assert_eq!(call(&mut s, CMD_WRITE, 0, 4096, 0, &[]).await, (0, vec![]));
    assert_eq!(
        call(&mut s, CMD_READ, 0, 1 << 20, 0, &[]).await,
        (0, vec![])
    );
    assert_eq!(mem.requests(), before);
    disconnect(s).await;
    let st = srv.server.stats();
    assert_eq!((st.flushes, st.trims, st.write_zeroes), (1, 1, 1));
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_export_refuses_writes() {
    let opts = MemOptions {
        read_only: true,
        multi_conn: true,
        ..MemOptions::default()
    };
    let mem = MemBackend::with_options(65536, opts);
    let srv = Running::tcp(one("ro", mem.clone())).await;
    let mut s = srv.connect().await;
    let info = go(&mut s, "ro").await;
    assert_ne!(info.flags & FLAG_READ_ONLY, 0);
    assert_ne!(info.flags & FLAG_CAN_MULTI_CONN, 0);
    assert_eq!(info.flags & (FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES), 0);
    assert_eq!(call(&mut s, CMD_WRITE, 0, 0, 512, &[1; 512]).await.0, EPERM);
    assert_eq!(
        call(&mut s, CMD_WRITE_ZEROES, 0, 0, 512, &[]).await.0,
        EPERM
    );
    assert_eq!(read_at(&mut s, 0, 512).await, vec![0; 512]);
    assert_eq!(mem.requests(), 1, "only the read reached the backend");
    disconnect(s).await;
    srv.stop().await;
}

// ---------------------------------------------------------------------------------------
// Options

fn two_exports() -> (MemBackend, MemBackend, Exports) {
    let a = MemBackend::new(1 << 20);
    let b = MemBackend::new(3 << 20);
    let ex: Exports = vec![
        ("alpha".into(), "first disk".into(), Arc::new(a.clone())),
        ("beta".into(), String::new(), Arc::new(b.clone())),
    ];
    (a, b, ex)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_names_exports_and_abort_acks() {
    let (_, _, ex) = two_exports();
    let srv = Running::tcp(ex).await;
    let mut s = srv.connect().await;
    greet(&mut s, FLAG_C_FIXED_NEWSTYLE).await;
    send_opt(&mut s, OPT_LIST, &[]).await;
    let mut names = Vec::new();
    loop {
        let (opt, rep, d) = read_opt_reply(&mut s).await;
        assert_eq!(opt, OPT_LIST);
        if rep == REP_ACK {
            break;
        }
        assert_eq!(rep, REP_SERVER);
        let n = u32::from_be_bytes(d[0..4].try_into().unwrap()) as usize;
        names.push((
            String::from_utf8(d[4..4 + n].to_vec()).unwrap(),
            String::from_utf8(d[4 + n..].to_vec()).unwrap(),
        ));
    }
    assert_eq!(
        names,
        vec![
            ("alpha".into(), "first disk".into()),
            ("beta".into(), String::new())
        ]
    );
    // LIST with data is invalid, and the session goes on.
    send_opt(&mut s, OPT_LIST, b"x").await;
    assert_eq!(read_opt_reply(&mut s).await.1, REP_ERR_INVALID);
    send_opt(&mut s, OPT_ABORT, &[]).await;
    let (opt, rep, d) = read_opt_reply(&mut s).await;
    assert_eq!((opt, rep, d.len()), (OPT_ABORT, REP_ACK, 0));
    expect_closed(&mut s).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_gives_size_and_block_sizes_then_go() {
    let (_, b, ex) = two_exports();
    let srv = Running::tcp(ex).await;
    let mut s = srv.connect().await;
    greet(&mut s, FLAG_C_FIXED_NEWSTYLE).await;
    let all = [INFO_BLOCK_SIZE, INFO_NAME, INFO_DESCRIPTION];
    let i = info_or_go(&mut s, OPT_INFO, "alpha", &all).await.unwrap();
    assert_eq!(i.size, 1 << 20);
    assert_eq!(i.block, Some((512, 4096, 32 << 20)));
    assert_eq!(i.name.as_deref(), Some("alpha"));
    assert_eq!(i.description.as_deref(), Some("first disk"));
    // The default export answers to the empty name; nothing asked, nothing extra sent.
    let i = info_or_go(&mut s, OPT_INFO, "", &[]).await.unwrap();
    assert_eq!((i.size, i.block, i.name), (1 << 20, None, None));
    // Malformed INFO data is an error reply, not a close.
    send_opt(&mut s, OPT_INFO, &[0, 0, 0, 9, b'a']).await;
    assert_eq!(read_opt_reply(&mut s).await.1, REP_ERR_INVALID);
    assert_eq!(
        info_or_go(&mut s, OPT_INFO, "nope", &[]).await.unwrap_err(),
        REP_ERR_UNKNOWN
    );
    let i = info_or_go(&mut s, OPT_GO, "beta", &[INFO_BLOCK_SIZE])
        .await
        .unwrap();
    assert_eq!(i.size, 3 << 20);
    assert_eq!(i.block, Some((512, 4096, 32 << 20)));
    write_at(&mut s, (3 << 20) - 4096, &[9; 4096], 0).await;
    assert_eq!(b.contents()[(3 << 20) - 4096..], [9; 4096]);
    disconnect(s).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_export_and_unsupported_options() {
    let (a, _, ex) = two_exports();
    let srv = Running::tcp(ex).await;
    let mut s = srv.connect().await;
    greet(&mut s, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).await;
    assert_eq!(
        info_or_go(&mut s, OPT_GO, "gamma", &[]).await.unwrap_err(),
        REP_ERR_UNKNOWN
    );
    for opt in [OPT_STRUCTURED_REPLY, OPT_STARTTLS, 42, 0xdead_beef] {
        send_opt(&mut s, opt, &[]).await;
        let (o, rep, _) = read_opt_reply(&mut s).await;
        assert_eq!((o, rep), (opt, REP_ERR_UNSUP), "option {opt}");
    }
    // Still negotiating: GO on the default export works.
    assert_eq!(
        info_or_go(&mut s, OPT_GO, "", &[]).await.unwrap().size,
        1 << 20
    );
    write_at(&mut s, 0, &[5; 512], 0).await;
    assert_eq!(a.contents()[..512], [5; 512]);
    disconnect(s).await;
    // NBD_OPT_EXPORT_NAME for an unknown export can only close.
    let mut s = srv.connect().await;
    greet(&mut s, FLAG_C_FIXED_NEWSTYLE).await;
    send_opt(&mut s, OPT_EXPORT_NAME, b"gamma").await;
    expect_closed(&mut s).await;
    wait_until("violation counted", || {
        srv.server.stats().protocol_errors == 1
    })
    .await;
    assert!(srv
        .server
        .last_violation()
        .unwrap()
        .contains("unknown export \"gamma\""));
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_name_with_and_without_zeroes() {
    let (_, b, ex) = two_exports();
    let srv = Running::tcp(ex).await;
    for (client_flags, tail) in [
        (FLAG_C_FIXED_NEWSTYLE, 124usize),
        (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES, 0),
    ] {
        let mut s = srv.connect().await;
        greet(&mut s, client_flags).await;
        send_opt(&mut s, OPT_EXPORT_NAME, b"beta").await;
        assert_eq!(s.read_u64().await.unwrap(), 3 << 20);
        let flags = read_u16(&mut s).await;
        assert_ne!(flags & FLAG_HAS_FLAGS, 0);
        let mut zeroes = vec![1u8; tail];
        s.read_exact(&mut zeroes).await.unwrap();
        assert!(zeroes.iter().all(|&z| z == 0));
        // The next bytes must be the reply to our first request, not more zeroes.
        write_at(&mut s, 512, &[3; 512], 0).await;
        assert_eq!(read_at(&mut s, 512, 512).await, vec![3; 512]);
        disconnect(s).await;
    }
    assert_eq!(b.contents()[512..1024], [3; 512]);
    srv.stop().await;
}

#[test]
fn server_new_rejects_bad_export_lists() {
    let m = || -> Arc<dyn Backend> { Arc::new(MemBackend::new(512)) };
    assert_eq!(Server::new(vec![]).err(), Some(ConfigError::NoExports));
    let dup = Server::new(vec![
        ("a".into(), String::new(), m()),
        ("a".into(), String::new(), m()),
    ]);
    assert_eq!(
        dup.err().unwrap().to_string(),
        "nbd exports[1]: name \"a\" is used by exports[0] too"
    );
    let long = Server::new(vec![("x".repeat(4097), String::new(), m())]);
    assert_eq!(
        long.err().unwrap().to_string(),
        "nbd exports[0]: name is 4097 bytes, more than 4096"
    );
    let nul = Server::new(vec![("a".into(), "b\0".into(), m())]);
    assert_eq!(
        nul.err().unwrap().to_string(),
        "nbd exports[0]: description contains a NUL byte"
    );
    assert!(Server::new(vec![(String::new(), String::new(), m())]).is_ok());
}

// ---------------------------------------------------------------------------------------
// Protocol violations: the offending connection closes (or gets the error reply the
// protocol asks for), the server and other connections go on, the backend sees nothing bad.

/// Runs `bad` on one connection while a second, well-behaved connection is open; afterwards
/// the good connection and a new one both still work.
async fn violation_case<F, Fut>(bad: F, reason: &str)
where
    F: FnOnce(TcpStream) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mem = MemBackend::new(1 << 20);
    let srv = Running::tcp(one("d", mem.clone())).await;
    let mut good = srv.connect().await;
    go(&mut good, "d").await;
    write_at(&mut good, 0, &[1; 4096], 0).await;
    bad(srv.connect().await).await;
    wait_until("violation counted", || {
        srv.server.stats().protocol_errors == 1
    })
    .await;
    let last = srv.server.last_violation().expect("a violation recorded");
    assert!(
        last.contains(reason),
        "violation {last:?} does not mention {reason:?}"
    );
    assert_eq!(read_at(&mut good, 0, 4096).await, vec![1; 4096]);
    let mut fresh = srv.connect().await;
    go(&mut fresh, "d").await;
    write_at(&mut fresh, 4096, &[2; 4096], 0).await;
    assert_eq!(read_at(&mut good, 4096, 4096).await, vec![2; 4096]);
    disconnect(fresh).await;
    disconnect(good).await;
    assert_eq!(mem.out_of_range(), 0, "backend saw an out-of-range request");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_magic_mid_stream_closes() {
    violation_case(
        |mut s| async move {
            go(&mut s, "d").await;
            write_at(&mut s, 8192, &[4; 512], 0).await;
            let mut r = Request {
                magic: 0x1234_5678,
                flags: 0,
                kind: CMD_READ,
                cookie: 5,
                offset: 0,
                length: 512,
            }
            .encode();
            s.write_all(&r).await.unwrap();
            r[0] = 0; // more bytes after the bad header must not be parsed
            s.write_all(&r).await.unwrap();
            expect_closed(&mut s).await;
        },
        "bad magic 0x12345678",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_write_closes() {
    violation_case(
        |mut s| async move {
            go(&mut s, "d").await;
            send_req(&mut s, CMD_WRITE, 0, 9, 0, PAYLOAD_MAX + 1, &[0; 1024]).await;
            expect_closed(&mut s).await;
        },
        "payload length 33554433 exceeds 33554432",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_header_then_eof_closes() {
    violation_case(
        |mut s| async move {
            go(&mut s, "d").await;
            let r = Request {
                magic: REQUEST_MAGIC,
                flags: 0,
                kind: CMD_READ,
                cookie: 5,
                offset: 0,
                length: 512,
            };
            s.write_all(&r.encode()[..10]).await.unwrap();
            s.shutdown().await.unwrap();
            expect_closed(&mut s).await;
        },
        "request header: truncated: stream ended after 10 of 28 bytes",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_write_payload_closes() {
    violation_case(
        |mut s| async move {
            go(&mut s, "d").await;
            send_req(&mut s, CMD_WRITE, 0, 9, 0, 4096, &[7; 100]).await;
            s.shutdown().await.unwrap();
            expect_closed(&mut s).await;
        },
        "request 0x9 (write): truncated: stream ended after 100 of 4096 bytes",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_client_flags_close() {
    violation_case(
        |mut s| async move {
            greet(&mut s, 0xdead_beef).await;
            expect_closed(&mut s).await;
        },
        "client flags 0xdeadbeef set unknown bits",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_fixed_newstyle_client_closes() {
    violation_case(
        |mut s| async move {
            greet(&mut s, 0).await;
            expect_closed(&mut s).await;
        },
        "lack NBD_FLAG_C_FIXED_NEWSTYLE",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_option_closes() {
    violation_case(
        |mut s| async move {
            greet(&mut s, FLAG_C_FIXED_NEWSTYLE).await;
            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            expect_closed(&mut s).await;
        },
        "handshake: option 0 (unknown = 1414541105): bad magic 0x474554202f204854",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_option_closes() {
    violation_case(
        |mut s| async move {
            greet(&mut s, FLAG_C_FIXED_NEWSTYLE).await;
            let mut h = IHAVEOPT.to_be_bytes().to_vec();
            h.extend_from_slice(&OPT_GO.to_be_bytes());
            h.extend_from_slice(&(OPTION_LEN_MAX + 1).to_be_bytes());
            s.write_all(&h).await.unwrap();
            expect_closed(&mut s).await;
        },
        "option 0 (go = 7): data length 4097 exceeds 4096",
    )
    .await;
}

/// Out-of-range, unknown and badly flagged requests get the error the protocol names, never
/// reach the backend, and leave the connection usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_error_replies() {
    let mem = MemBackend::new(1 << 20);
    let srv = Running::tcp(one("d", mem.clone())).await;
    let mut s = srv.connect().await;
    go(&mut s, "d").await;
    let end = 1u64 << 20;
    let cases: [(u16, u16, u64, u32, u32); 9] = [
        (CMD_READ, 0, end - 512, 1024, EINVAL),
        (CMD_READ, 0, end, 1, EINVAL),
        (CMD_READ, 0, u64::MAX - 10, 4096, EINVAL),
        (CMD_READ, 0, 0, PAYLOAD_MAX + 1, EINVAL),
        (CMD_TRIM, 0, end - 4096, 8192, EINVAL),
        (CMD_WRITE_ZEROES, 0, end, 4096, ENOSPC),
        (CMD_CACHE, 0, 0, 4096, EINVAL),
        (42, 0, 0, 4096, EINVAL),
        (CMD_READ, 1 << 7, 0, 4096, EINVAL),
    ];
    for (kind, flags, off, len, want) in cases {
        let (e, d) = call(&mut s, kind, flags, off, len, &[]).await;
        assert_eq!(
            (e, d.len()),
            (want, 0),
            "{} flags {flags:#x} at {off}+{len}",
            command_name(kind)
        );
    }
    // A write past the end: its payload is consumed, ENOSPC comes back, framing holds.
    let (e, _) = call(&mut s, CMD_WRITE, 0, end - 512, 1024, &[8; 1024]).await;
    assert_eq!(e, ENOSPC);
    let (e, _) = call(&mut s, CMD_WRITE, CMD_FLAG_NO_HOLE, 0, 512, &[8; 512]).await;
    assert_eq!(e, EINVAL);
    write_at(&mut s, end - 512, &[6; 512], 0).await;
    assert_eq!(read_at(&mut s, end - 512, 512).await, vec![6; 512]);
    assert_eq!(
        mem.requests(),
        2,
        "only the two good requests reached the backend"
    );
    assert_eq!(mem.out_of_range(), 0);
    assert_eq!(mem.contents()[..512], [0; 512]);
    disconnect(s).await;
    let st = srv.server.stats();
    assert_eq!((st.requests_refused, st.protocol_errors), (11, 0));
    srv.stop().await;
}

/// A backend that fails in every way it can: error results, wrong read lengths, panics.
struct BrokenBackend;

impl Backend for BrokenBackend {
    fn size_bytes(&self) -> u64 {
        1 << 20
    }
    fn read(&self, offset: u64, len: u32) -> BoxFuture<'static, Result<Vec<u8>, NbdError>> {
        match offset {
            0 => Box::pin(async move { Ok(vec![0; len as usize + 1]) }),
            4096 => Box::pin(async { panic!("backend read panics inside its future") }),
            _ => panic!("backend read panics before its future"),
        }
    }
    fn write(&self, _: u64, _: Vec<u8>, _: bool) -> BoxFuture<'static, Result<(), NbdError>> {
        Box::pin(async { Err(NbdError::NoSpace) })
    }
    fn flush(&self) -> BoxFuture<'static, Result<(), NbdError>> {
        Box::pin(async { Err(NbdError::Io) })
    }
    fn trim(&self, _: u64, _: u32, _: bool) -> BoxFuture<'static, Result<(), NbdError>> {
        Box::pin(async { Err(NbdError::Shutdown) })
    }
    fn write_zeroes(&self, _: u64, _: u32, _: bool) -> BoxFuture<'static, Result<(), NbdError>> {
        Box::pin(async { Err(NbdError::NoMem) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_failures_become_error_replies() {
    let srv = Running::tcp(one("b", BrokenBackend)).await;
    let mut s = srv.connect().await;
    go(&mut s, "b").await;
    assert_eq!(call(&mut s, CMD_READ, 0, 0, 512, &[]).await, (EIO, vec![]));
    assert_eq!(
        call(&mut s, CMD_READ, 0, 4096, 512, &[]).await,
        (EIO, vec![])
    );
    assert_eq!(
        call(&mut s, CMD_READ, 0, 8192, 512, &[]).await,
        (EIO, vec![])
    );
    assert_eq!(
        call(&mut s, CMD_WRITE, 0, 0, 512, &[1; 512]).await.0,
        ENOSPC
    );
    assert_eq!(call(&mut s, CMD_FLUSH, 0, 0, 0, &[]).await.0, EIO);
    assert_eq!(call(&mut s, CMD_TRIM, 0, 0, 512, &[]).await.0, ESHUTDOWN);
    assert_eq!(
        call(&mut s, CMD_WRITE_ZEROES, 0, 0, 512, &[]).await.0,
        ENOMEM
    );
    disconnect(s).await;
    assert_eq!(srv.server.stats().backend_errors, 7);
    srv.stop().await;
}

/// Shutdown closes idle connections and returns; a later connect is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_connections_and_returns() {
    let mem = MemBackend::new(65536);
    let srv = Running::tcp(one("d", mem)).await;
    let mut in_transmission = srv.connect().await;
    go(&mut in_transmission, "d").await;
    let mut in_handshake = srv.connect().await;
    greet(&mut in_handshake, FLAG_C_FIXED_NEWSTYLE).await;
    wait_until("both connections open", || {
        srv.server.stats().connections_open == 2
    })
    .await;
    let (server, addr) = (srv.server.clone(), srv.addr);
    srv.stop().await;
    expect_closed(&mut in_transmission).await;
    expect_closed(&mut in_handshake).await;
    assert_eq!(server.stats().connections_open, 0);
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "listener closed after shutdown"
    );
}
