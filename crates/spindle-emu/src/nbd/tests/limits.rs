//! The server's limits (issue 24): the connection limit refuses further clients in the
//! handshake, idle connections close after the idle timeout (never with a request in
//! flight), a client stalled mid-request or not reading its replies is closed too, and the
//! in-flight byte budget over all connections holds with many connections writing at once.
//! Timing: the timeouts are short, but the tests only wait for things to happen (with hang
//! guards) and check lower bounds, never speed.

use super::io::GateBackend;
use super::*;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use tokio::sync::watch;

fn limits(connections_max: usize, idle_ms: Option<u64>, in_flight_bytes_max: u64) -> Limits {
    Limits {
        connections_max,
        idle_timeout: idle_ms.map(Duration::from_millis),
        in_flight_bytes_max,
    }
}

/// Greets as a client would and asks for the export; the server must refuse with
/// `NBD_REP_ERR_POLICY` saying it is busy, ACK an abort, and close.
async fn expect_refused(mut s: TcpStream) {
    greet(&mut s, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).await;
    send_opt(&mut s, OPT_GO, &info_data("", &[])).await;
    let (opt, rep, msg) = guard("refusal", read_opt_reply(&mut s)).await;
    assert_eq!((opt, rep), (OPT_GO, REP_ERR_POLICY));
    let msg = String::from_utf8_lossy(&msg).into_owned();
    assert!(msg.contains("server busy"), "refusal message {msg:?}");
    send_opt(&mut s, OPT_ABORT, &[]).await;
    let (opt, rep, _) = guard("abort ack", read_opt_reply(&mut s)).await;
    assert_eq!((opt, rep), (OPT_ABORT, REP_ACK));
    expect_closed(&mut s).await;
}

/// Two connections, the limit, each with a read held at the backend: a third client is
/// refused (twice, the second time with `EXPORT_NAME`), and neither busy connection is
/// closed although they send nothing for several idle timeouts. Once answered they go idle
/// and close (no sooner than the timeout after their last request), and a new client is
/// served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_limit_refuses_and_idle_connections_close() {
    const IDLE: Duration = Duration::from_secs(1);
    let gate = GateBackend::default();
    let srv = Running::tcp_with(one("g", gate.clone()), limits(2, Some(1000), 1 << 30)).await;
    let mut busy = Vec::new();
    let mut sent = Vec::new();
    for i in 0..2u64 {
        let mut s = srv.connect().await;
        go(&mut s, "g").await;
        send_req(&mut s, CMD_READ, 0, i, i * 4096, 4096, &[]).await;
        sent.push(Instant::now());
        busy.push(s);
    }
    wait_until("both reads at the backend", || gate.waiting() == 2).await;
    expect_refused(srv.connect().await).await;
    let mut s = srv.connect().await;
    greet(&mut s, FLAG_C_FIXED_NEWSTYLE).await;
    send_opt(&mut s, OPT_EXPORT_NAME, b"").await;
    expect_closed(&mut s).await;
    assert_eq!(srv.server.stats().connections_refused, 2);
    // Requests in flight: not idle, however long the backend takes.
    tokio::time::sleep(IDLE * 3).await;
    assert_eq!(srv.server.stats().idle_timeouts, 0);
    assert_eq!(srv.server.stats().connections_open, 2);
    gate.open_all();
    for (i, s) in busy.iter_mut().enumerate() {
        let reads: HashMap<u64, u32> = [(i as u64, 4096)].into();
        let (cookie, e, d) = guard("held read answered", read_reply(s, &reads)).await;
        assert_eq!((cookie, e, d), (i as u64, 0, vec![i as u8; 4096]));
    }
    for (s, sent) in busy.iter_mut().zip(sent) {
        expect_closed(s).await;
        assert!(
            sent.elapsed() >= IDLE,
            "closed {:?} after its last request",
            sent.elapsed()
        );
    }
    wait_until("both idle timeouts counted", || {
        srv.server.stats().idle_timeouts == 2
    })
    .await;
    wait_until("their places free", || {
        srv.server.stats().connections_open == 0
    })
    .await;
    let mut fresh = srv.connect().await;
    go(&mut fresh, "g").await;
    disconnect(fresh).await;
    let st = srv.server.stats();
    assert_eq!((st.connections_refused, st.idle_timeouts), (2, 2));
    assert_eq!(st.protocol_errors, 0);
    srv.stop().await;
}

/// A client that stops in the middle of a request header, or of a write's payload, is closed
/// after the idle timeout (and counted), and its bytes go back to the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_requests_are_closed() {
    let mem = MemBackend::new(1 << 20);
    let srv = Running::tcp_with(one("d", mem.clone()), limits(8, Some(2000), 1 << 30)).await;
    let mut half_header = srv.connect().await;
    go(&mut half_header, "d").await;
    let h = Request {
        magic: REQUEST_MAGIC,
        flags: 0,
        kind: CMD_WRITE,
        cookie: 1,
        offset: 0,
        length: 65536,
    }
    .encode();
    half_header.write_all(&h[..10]).await.unwrap();
    let mut half_payload = srv.connect().await;
    go(&mut half_payload, "d").await;
    half_payload.write_all(&h).await.unwrap();
    half_payload.write_all(&[7; 1000]).await.unwrap();
    expect_closed(&mut half_header).await;
    expect_closed(&mut half_payload).await;
    wait_until("both counted", || srv.server.stats().idle_timeouts == 2).await;
    wait_until("bytes released", || srv.server.stats().in_flight_bytes == 0).await;
    assert_eq!(srv.server.stats().writes, 0);
    assert_eq!(mem.requests(), 0, "a cut-off request reached the backend");
    srv.stop().await;
}

/// A client that sends reads and never reads the replies holds their bytes only until the
/// idle timeout: the connection closes and the budget is whole again, so other clients are
/// never locked out by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_replies_release_the_budget() {
    const MIB: u32 = 1 << 20;
    let mem = MemBackend::new(8 << 20);
    let srv = Running::tcp_with(one("d", mem.clone()), limits(8, Some(2000), 16 << 20)).await;
    let mut deaf = srv.connect().await;
    go(&mut deaf, "d").await;
    // 64 MiB of replies: far more than the socket buffers hold.
    for i in 0..8u64 {
        send_req(&mut deaf, CMD_READ, 0, i, 0, 8 * MIB, &[]).await;
    }
    wait_until("the reader timed out", || {
        srv.server.stats().idle_timeouts == 1
    })
    .await;
    wait_until("bytes released", || srv.server.stats().in_flight_bytes == 0).await;
    let mut other = srv.connect().await;
    go(&mut other, "d").await;
    write_at(&mut other, 0, &vec![9; 8 * MIB as usize], 0).await;
    assert_eq!(read_at(&mut other, 0, 4096).await, vec![9; 4096]);
    disconnect(other).await;
    assert!(srv.server.stats().in_flight_bytes_peak <= 16 << 20);
    srv.stop().await;
}

/// A backend whose writes wait until the test opens the gate, then go to a [`MemBackend`].
#[derive(Clone)]
struct HoldBackend {
    mem: MemBackend,
    open: watch::Sender<bool>,
    waiting: Arc<AtomicUsize>,
    max_waiting: Arc<AtomicUsize>,
}

impl HoldBackend {
    fn new(size: usize) -> HoldBackend {
        HoldBackend {
            mem: MemBackend::new(size),
            open: watch::channel(false).0,
            waiting: Arc::default(),
            max_waiting: Arc::default(),
        }
    }
}

impl Backend for HoldBackend {
    fn size_bytes(&self) -> u64 {
        self.mem.size_bytes()
    }
    fn read(&self, offset: u64, len: u32) -> BoxFuture<'static, Result<Vec<u8>, NbdError>> {
        self.mem.read(offset, len)
    }
    fn write(
        &self,
        offset: u64,
        data: Vec<u8>,
        fua: bool,
    ) -> BoxFuture<'static, Result<(), NbdError>> {
        let (mem, mut open) = (self.mem.clone(), self.open.subscribe());
        let (waiting, max) = (self.waiting.clone(), self.max_waiting.clone());
        let now = waiting.fetch_add(1, Ordering::SeqCst) + 1;
        max.fetch_max(now, Ordering::SeqCst);
        Box::pin(async move {
            let opened = open.wait_for(|o| *o).await.is_ok();
            waiting.fetch_sub(1, Ordering::SeqCst);
            if !opened {
                return Err(NbdError::Io);
            }
            mem.write(offset, data, fua).await
        })
    }
    fn flush(&self) -> BoxFuture<'static, Result<(), NbdError>> {
        self.mem.flush()
    }
    fn trim(&self, offset: u64, len: u32, fua: bool) -> BoxFuture<'static, Result<(), NbdError>> {
        self.mem.trim(offset, len, fua)
    }
    fn write_zeroes(
        &self,
        offset: u64,
        len: u32,
        fua: bool,
    ) -> BoxFuture<'static, Result<(), NbdError>> {
        self.mem.write_zeroes(offset, len, fua)
    }
}

/// 8 connections each send 4 writes of 256 KiB at once (8 MiB) to a server with a 1 MiB
/// budget and a backend that holds every write: exactly 4 reach the backend, the others
/// wait (counted), the accounted in-flight bytes never pass 1 MiB, and once the backend lets
/// writes through every one completes with its bytes in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_bytes_stay_within_the_budget() {
    const LEN: usize = 256 << 10;
    const BUDGET: u64 = 1 << 20;
    const CONNS: u64 = 8;
    const WRITES: u64 = 4;
    let hold = HoldBackend::new((CONNS * WRITES) as usize * LEN);
    let srv = Running::tcp_with(one("h", hold.clone()), limits(64, None, BUDGET)).await;
    let mut clients = Vec::new();
    for c in 0..CONNS {
        let mut s = srv.connect().await;
        go(&mut s, "h").await;
        clients.push(tokio::spawn(async move {
            let (mut rd, mut wr) = tokio::io::split(s);
            let sender = tokio::spawn(async move {
                for w in 0..WRITES {
                    let i = c * WRITES + w;
                    let data = pattern(i, LEN);
                    send_req(&mut wr, CMD_WRITE, 0, i, i * LEN as u64, LEN as u32, &data).await;
                }
                wr
            });
            let mut answered = Vec::new();
            for _ in 0..WRITES {
                let (cookie, e, _) = read_reply(&mut rd, &HashMap::new()).await;
                assert_eq!(e, 0, "write {cookie}");
                answered.push(cookie);
            }
            let wr = sender.await.expect("sender");
            answered.sort_unstable();
            assert_eq!(answered, (c * WRITES..(c + 1) * WRITES).collect::<Vec<_>>());
            tokio::io::join(rd, wr)
        }));
    }
    let per_budget = (BUDGET / LEN as u64) as usize;
    let waiting = || hold.waiting.load(Ordering::SeqCst);
    wait_until("the budget's worth at the backend", || {
        waiting() >= per_budget
    })
    .await;
    wait_until("others waiting for the budget", || {
        srv.server.stats().backpressure_waits >= 1 || waiting() > per_budget
    })
    .await;
    assert_eq!(
        waiting(),
        per_budget,
        "more writes at the backend than the budget holds"
    );
    assert_eq!(srv.server.stats().in_flight_bytes, BUDGET);
    hold.open.send_replace(true);
    let mut streams = Vec::new();
    for c in clients {
        streams.push(guard("client done", c).await.expect("client"));
    }
    let st = srv.server.stats();
    assert_eq!(st.writes, CONNS * WRITES);
    assert!(
        st.in_flight_bytes_peak <= BUDGET,
        "peak {} bytes in flight, budget {BUDGET}",
        st.in_flight_bytes_peak
    );
    assert_eq!(hold.max_waiting.load(Ordering::SeqCst), per_budget);
    assert_eq!(st.in_flight_bytes, 0);
    let contents = hold.mem.contents();
    for i in 0..CONNS * WRITES {
        let at = i as usize * LEN;
        assert!(contents[at..at + LEN] == pattern(i, LEN), "write {i} lost");
    }
    for s in streams {
        disconnect(s).await;
    }
    srv.stop().await;
}

/// With a 64 KiB budget, 1 MiB reads and writes (larger than the whole budget) are admitted,
/// one at a time, alongside small requests on other connections: no deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_larger_than_the_budget_is_served_alone() {
    const MIB: usize = 1 << 20;
    let mem = MemBackend::with_options(
        4 * MIB,
        MemOptions {
            delay_max: Duration::from_millis(2),
            seed: 5,
            ..MemOptions::default()
        },
    );
    let srv = Running::tcp_with(one("d", mem.clone()), limits(8, None, 64 << 10)).await;
    let mut tasks = Vec::new();
    for c in 0..4u64 {
        let mut s = srv.connect().await;
        go(&mut s, "d").await;
        tasks.push(tokio::spawn(async move {
            for round in 0..3u64 {
                let (off, len) = if c % 2 == 0 {
                    (c * MIB as u64, MIB)
                } else {
                    (c * MIB as u64 + round * 4096, 4096)
                };
                let data = pattern(c * 10 + round, len);
                write_at(&mut s, off, &data, 0).await;
                assert_eq!(read_at(&mut s, off, len as u32).await, data);
            }
            disconnect(s).await;
        }));
    }
    for t in tasks {
        guard("client done", t).await.expect("client");
    }
    let st = srv.server.stats();
    assert_eq!(st.in_flight_bytes, 0);
    assert_eq!(
        st.in_flight_bytes_peak, MIB as u64,
        "a large request shared the budget"
    );
    srv.stop().await;
}
