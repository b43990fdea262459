//! Serves an in-memory disk over NBD until Ctrl-C, for trying clients by hand:
//!
//! ```text
//! cargo run -p spindle-emu --example nbd_mem -- 127.0.0.1:10809 64
//! nbdinfo nbd://127.0.0.1:10809
//! ```
//!
//! Arguments: listen address (default `127.0.0.1:10809`; a path serves a Unix socket) and
//! size in MiB (default 64).

use std::sync::Arc;

use spindle_emu::nbd::{MemBackend, Server};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:10809".to_string());
    let size_mib: usize = match args.next() {
        Some(s) => s.parse().map_err(|e| format!("size in MiB {s:?}: {e}"))?,
        None => 64,
    };
    let mem = MemBackend::new(size_mib << 20);
    let server = Arc::new(Server::new(vec![(
        "mem".into(),
        format!("{size_mib} MiB in memory"),
        Arc::new(mem),
    )])?);
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    if addr.contains('/') {
        let listener =
            tokio::net::UnixListener::bind(&addr).map_err(|e| format!("bind {addr}: {e}"))?;
        eprintln!("serving {size_mib} MiB on unix socket {addr}");
        server.clone().serve_unix(listener, ctrl_c).await;
        let _ = std::fs::remove_file(&addr);
    } else {
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|e| format!("bind {addr}: {e}"))?;
        eprintln!("serving {size_mib} MiB on nbd://{}", listener.local_addr()?);
        server.clone().serve_tcp(listener, ctrl_c).await;
    }
    eprintln!("{:?}", server.stats());
    Ok(())
}
