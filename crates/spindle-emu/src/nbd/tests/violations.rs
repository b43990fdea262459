//! Protocol violations and failing backends: the offending connection closes (or gets the
//! error reply the protocol asks for), the server and other connections go on, and the
//! backend sees nothing out of range.

use super::*;

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
