//! Entry points for the NBD `cargo fuzz` targets in `fuzz/` (and the stable test that replays
//! their seeds and past crashes, `tests/fuzz_corpus.rs`). Not an API.
//!
//! A session: the fuzz bytes are what a client sends on one connection (then it closes its
//! side), served in-process over an in-memory pipe by [`Server::serve_connection`] with two
//! in-memory exports (`disk`, 1 MiB, the default; `ro`, 64 KiB, read-only). Everything the
//! server sends is read and dropped. The server must end the session without a panic and
//! never call a backend out of range.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::nbd::proto::{FLAG_C_FIXED_NEWSTYLE, FLAG_C_NO_ZEROES, IHAVEOPT, OPT_GO};
use crate::nbd::{Backend, MemBackend, MemOptions, Server};

/// A client's fixed-newstyle handshake selecting the default export with `NBD_OPT_GO`:
/// [`nbd_transmission`] puts it in front of its input.
pub fn go_handshake() -> Vec<u8> {
    let mut b = Vec::with_capacity(26);
    b.extend_from_slice(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes());
    b.extend_from_slice(&IHAVEOPT.to_be_bytes());
    b.extend_from_slice(&OPT_GO.to_be_bytes());
    b.extend_from_slice(&6u32.to_be_bytes());
    b.extend_from_slice(&0u32.to_be_bytes()); // export name length: the default export
    b.extend_from_slice(&0u16.to_be_bytes()); // no information requests
    b
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread tokio runtime");
}

/// One connection whose client sends `input` from its first byte (the handshake phase).
pub fn nbd_handshake(input: &[u8]) {
    session(input.to_vec());
}

/// One connection that first completes [`go_handshake`], then sends `input` (the
/// transmission phase: request headers and write payloads).
pub fn nbd_transmission(input: &[u8]) {
    let mut all = go_handshake();
    all.extend_from_slice(input);
    session(all);
}

fn session(input: Vec<u8>) {
    let disk = MemBackend::new(1 << 20);
    let ro = MemBackend::with_options(
        64 << 10,
        MemOptions {
            read_only: true,
            multi_conn: true,
            ..MemOptions::default()
        },
    );
    let exports: Vec<(String, String, Arc<dyn Backend>)> = vec![
        ("disk".into(), "fuzz disk".into(), Arc::new(disk.clone())),
        ("ro".into(), String::new(), Arc::new(ro.clone())),
    ];
    let server = Arc::new(Server::new(exports).expect("a valid export list"));
    RUNTIME.with(|rt| {
        rt.block_on(async {
            let (client, served) = tokio::io::duplex(64 << 10);
            let (mut from_server, mut to_server) = tokio::io::split(client);
            let send = async move {
                // The server may close first (a violation): then writing fails; that is fine.
                let _ = to_server.write_all(&input).await;
                let _ = to_server.shutdown().await;
            };
            let drain = async move {
                let mut buf = vec![0u8; 64 << 10];
                while let Ok(n) = from_server.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
            };
            let serve = server.clone().serve_connection(served, "fuzz".into());
            tokio::join!(send, drain, serve);
        });
    });
    assert_eq!(
        disk.out_of_range(),
        0,
        "the server called `disk` out of range"
    );
    assert_eq!(ro.out_of_range(), 0, "the server called `ro` out of range");
    assert_eq!(
        server.stats().connections_open,
        0,
        "the connection is still open"
    );
}
