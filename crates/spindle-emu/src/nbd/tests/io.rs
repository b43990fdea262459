//! Reads and writes: round trips, many requests in flight, completion order, DISC draining,
//! FUA/FLUSH/TRIM/WRITE_ZEROES, read-only exports.

use super::*;

use std::sync::atomic::{AtomicUsize, Ordering};

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
pub(super) struct GateBackend {
    gates: Arc<Mutex<Gates>>,
    /// Most reads ever waiting at once.
    pub(super) max_waiting: Arc<AtomicUsize>,
}

impl GateBackend {
    pub(super) fn waiting(&self) -> usize {
        self.gates.lock().unwrap().len()
    }

    pub(super) fn open(&self, offset: u64) {
        let mut g = self.gates.lock().unwrap();
        let i = g
            .iter()
            .position(|(o, _)| *o == offset)
            .expect("a read waits at that offset");
        let (_, tx) = g.swap_remove(i);
        tx.send(()).expect("read still waiting");
    }

    /// Opens every waiting gate; returns how many.
    pub(super) fn open_all(&self) -> usize {
        let opened: Vec<_> = self.gates.lock().unwrap().drain(..).collect();
        let n = opened.len();
        for (_, tx) in opened {
            tx.send(()).expect("read still waiting");
        }
        n
    }
}

impl Backend for GateBackend {
    fn size_bytes(&self) -> u64 {
        1 << 20
    }
    fn read(&self, offset: u64, len: u32) -> BoxFuture<'static, Result<Vec<u8>, NbdError>> {
        let (tx, rx) = oneshot::channel();
        let mut g = self.gates.lock().unwrap();
        g.push((offset, tx));
        self.max_waiting.fetch_max(g.len(), Ordering::Relaxed);
        drop(g);
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

/// With 300 reads sent at once, at most `IN_FLIGHT_MAX` (256) reach the backend before
/// replies go out; all 300 are answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_requests_are_bounded() {
    let gate = GateBackend::default();
    let srv = Running::tcp(one("g", gate.clone())).await;
    let mut s = srv.connect().await;
    go(&mut s, "g").await;
    const N: u64 = 300;
    for i in 0..N {
        send_req(&mut s, CMD_READ, 0, i, i * 512, 512, &[]).await;
    }
    wait_until("the bound reached", || gate.waiting() >= IN_FLIGHT_MAX).await;
    let (rd, wr) = tokio::io::split(s);
    let opener = {
        let gate = gate.clone();
        tokio::spawn(async move {
            let mut opened = 0;
            while opened < N as usize {
                opened += gate.open_all();
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
    };
    let reads: HashMap<u64, u32> = (0..N).map(|i| (i, 512)).collect();
    let mut rd = rd;
    let mut seen = vec![false; N as usize];
    for _ in 0..N {
        let (cookie, e, d) = guard("reply", read_reply(&mut rd, &reads)).await;
        assert_eq!((e, d.len()), (0, 512));
        assert!(
            !std::mem::replace(&mut seen[cookie as usize], true),
            "cookie {cookie} twice"
        );
    }
    guard("opener", opener).await.unwrap();
    assert_eq!(gate.max_waiting.load(Ordering::Relaxed), IN_FLIGHT_MAX);
    disconnect(tokio::io::join(rd, wr)).await;
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
