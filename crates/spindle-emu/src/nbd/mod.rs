//! An NBD (Network Block Device) server: fixed newstyle handshake, simple replies, many
//! requests in flight per connection, TCP and Unix sockets. [`client`] is a small blocking
//! client, one request at a time, for `spindle calibrate`.
//!
//! The server knows nothing of disk arrays: each export is an [`Arc<dyn Backend>`] that
//! answers byte-addressed reads and writes. The emulator implements [`Backend`] on top of the
//! array; [`MemBackend`] is an in-memory one for tests and examples.
//!
//! Lifecycle:
//! 1. [`Server::new`] checks the export list (first export = default, selected by the empty
//!    name); [`Server::with_limits`] also sets the [`Limits`] (connections, idle timeout,
//!    in-flight bytes over all connections).
//! 2. [`Server::serve_tcp`] / [`Server::serve_unix`] accept connections until the `shutdown`
//!    future completes, then stop reading requests, let in-flight requests finish and their
//!    replies be sent (at most [`DRAIN_TIMEOUT`]) and return.
//! 3. [`Server::stats`] reads the counters at any time.
//!
//! Invariants: a backend is only called with `offset + len <= size_bytes()`, `len > 0`, and
//! READ/WRITE lengths of at most [`proto::PAYLOAD_MAX`]; a client's protocol violation closes
//! that connection only and is counted and logged (never a panic). Replies go out in
//! completion order. Per connection at most [`IN_FLIGHT_MAX`] requests and
//! [`IN_FLIGHT_BYTES_MAX`] bytes of payload are in flight, and over all connections at most
//! [`Limits::in_flight_bytes_max`] (a single larger request is admitted alone); a connection
//! over a bound stops reading its socket until some complete. At most
//! [`Limits::connections_max`] connections are open; a further client is refused during the
//! handshake (`NBD_REP_ERR_POLICY`). A connection idle for [`Limits::idle_timeout`] is
//! closed.
//!
//! ```no_run
//! use std::sync::Arc;
//! use spindle_emu::nbd::{MemBackend, Server};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let disk = MemBackend::new(64 << 20);
//! let server = Arc::new(Server::new(vec![("disk".into(), "in memory".into(), Arc::new(disk))])?);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:10809").await?;
//! // Serves until the future completes (here: never); then drains and returns.
//! server.clone().serve_tcp(listener, std::future::pending::<()>()).await;
//! println!("{:?}", server.stats());
//! # Ok(())
//! # }
//! ```
//!
//! Not implemented: TLS, structured replies, block status, extended headers, resize, the
//! cache command, oldstyle negotiation.

pub mod client;
mod limits;
mod mem;
pub mod proto;
mod server;
#[cfg(test)]
mod tests;
mod transmission;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use limits::Limits;
pub use mem::{MemBackend, MemOptions};

/// A boxed, sendable future, as [`Backend`] methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Most requests in flight on one connection.
pub const IN_FLIGHT_MAX: usize = 256;
/// Most READ/WRITE payload bytes in flight on one connection (requests wait beyond it).
pub const IN_FLIGHT_BYTES_MAX: u32 = 128 * 1024 * 1024;
/// Default of [`Limits::connections_max`].
pub const CONNECTIONS_MAX: usize = 256;
/// Default of [`Limits::idle_timeout`].
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// Default of [`Limits::in_flight_bytes_max`].
pub const BUDGET_BYTES: u64 = 256 * 1024 * 1024;
/// Most options one client may send during the handshake.
pub const OPTIONS_MAX: u32 = 1024;
/// How long a client may take to complete the handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a shutdown waits for connections to drain before dropping them.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// A failed request, as the NBD error value sent to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NbdError {
    #[error("i/o error (EIO)")]
    Io,
    #[error("invalid argument (EINVAL)")]
    Invalid,
    #[error("no space left (ENOSPC)")]
    NoSpace,
    #[error("operation not permitted (EPERM)")]
    Perm,
    #[error("out of memory (ENOMEM)")]
    NoMem,
    #[error("server shutting down (ESHUTDOWN)")]
    Shutdown,
}

impl NbdError {
    /// The error value on the wire.
    #[must_use]
    pub fn errno(self) -> u32 {
        match self {
            NbdError::Io => proto::EIO,
            NbdError::Invalid => proto::EINVAL,
            NbdError::NoSpace => proto::ENOSPC,
            NbdError::Perm => proto::EPERM,
            NbdError::NoMem => proto::ENOMEM,
            NbdError::Shutdown => proto::ESHUTDOWN,
        }
    }
}

/// What an export serves. Offsets and lengths are bytes; the server has checked
/// `0 < len`, `offset + len <= size_bytes()` (and READ `len <= PAYLOAD_MAX`) before calling.
/// Futures may complete in any order; a write's future completing means the write is visible
/// to later reads (and durable when `fua` is set, or after a completed `flush`).
pub trait Backend: Send + Sync + 'static {
    /// Export size in bytes; read when a client asks about or selects the export.
    fn size_bytes(&self) -> u64;
    /// Whether writes are refused (EPERM) and `NBD_FLAG_READ_ONLY` is advertised.
    fn read_only(&self) -> bool {
        false
    }
    /// Whether `NBD_FLAG_CAN_MULTI_CONN` is advertised (flush/FUA visible across connections).
    fn multi_conn(&self) -> bool {
        false
    }
    /// The minimum block size advertised (`NBD_INFO_BLOCK_SIZE`): requests should be
    /// multiples of it, at offsets aligned to it. A power of two, 512 to 64 KiB.
    fn block_size_min(&self) -> u32 {
        proto::BLOCK_SIZE_MIN
    }
    /// Whether `NBD_FLAG_ROTATIONAL` is advertised (the export behaves like a hard disk, so
    /// a client's elevator may sort requests).
    fn rotational(&self) -> bool {
        false
    }
    /// Reads `len` bytes at `offset`; the vector must hold exactly `len` bytes (else the
    /// client gets EIO).
    fn read(&self, offset: u64, len: u32) -> BoxFuture<'static, Result<Vec<u8>, NbdError>>;
    /// Writes `data` at `offset`.
    fn write(
        &self,
        offset: u64,
        data: Vec<u8>,
        fua: bool,
    ) -> BoxFuture<'static, Result<(), NbdError>>;
    /// Makes every completed write durable.
    fn flush(&self) -> BoxFuture<'static, Result<(), NbdError>>;
    /// Discards `len` bytes at `offset` (contents afterwards unspecified).
    fn trim(&self, offset: u64, len: u32, fua: bool) -> BoxFuture<'static, Result<(), NbdError>>;
    /// Writes `len` zero bytes at `offset`.
    fn write_zeroes(
        &self,
        offset: u64,
        len: u32,
        fua: bool,
    ) -> BoxFuture<'static, Result<(), NbdError>>;
}

/// A bad export list given to [`Server::new`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("nbd exports: the list is empty")]
    NoExports,
    #[error("nbd exports[{index}]: name {name:?} is used by exports[{first}] too")]
    DuplicateName {
        index: usize,
        first: usize,
        name: String,
    },
    #[error("nbd exports[{index}]: {field} is {len} bytes, more than {max}")]
    TooLong {
        index: usize,
        field: &'static str,
        len: usize,
        max: usize,
    },
    #[error("nbd exports[{index}]: {field} contains a NUL byte")]
    Nul { index: usize, field: &'static str },
    #[error("nbd limits: {0}")]
    Limits(String),
}

/// One named export.
pub(crate) struct Export {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) backend: Arc<dyn Backend>,
}

/// Counters of one server, all since [`Server::new`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Connections accepted (including the refused ones).
    pub connections: u64,
    /// Connections open now (not counting refused ones still being told so).
    pub connections_open: u64,
    /// Connections refused because [`Limits::connections_max`] were open.
    pub connections_refused: u64,
    /// Connections closed by the idle timeout: no request for [`Limits::idle_timeout`] with
    /// none in flight, a request cut off mid-way for that long, or replies not read for
    /// that long.
    pub idle_timeouts: u64,
    /// Handshakes that reached the transmission phase.
    pub handshakes: u64,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub trims: u64,
    pub write_zeroes: u64,
    pub disconnects: u64,
    /// Payload bytes read by clients.
    pub bytes_read: u64,
    /// Payload bytes written by clients.
    pub bytes_written: u64,
    /// Requests refused without reaching the backend (out of range, bad flags, unknown
    /// command, write to a read-only export).
    pub requests_refused: u64,
    /// Requests the backend failed (error reply sent).
    pub backend_errors: u64,
    /// Protocol violations that closed a connection.
    pub protocol_errors: u64,
    /// Requests that had to wait for in-flight bytes (their connection's
    /// [`IN_FLIGHT_BYTES_MAX`] or the server's [`Limits::in_flight_bytes_max`]) before their
    /// payload was read or the backend called.
    pub backpressure_waits: u64,
    /// READ/WRITE payload bytes in flight now, over all connections (from before a write's
    /// payload is read, or a read is passed to the backend, until the reply is sent).
    pub in_flight_bytes: u64,
    /// The most `in_flight_bytes` ever.
    pub in_flight_bytes_peak: u64,
}

impl std::fmt::Display for ServerStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "nbd: {} connections ({} open, {} refused, {} closed idle), {} handshakes; {} reads, \
             {} writes, {} flushes, {} trims, {} write_zeroes, {} disconnects; {} protocol \
             violations, {} requests refused, {} backend errors; {} backpressure waits, {} \
             bytes in flight (peak {})",
            self.connections,
            self.connections_open,
            self.connections_refused,
            self.idle_timeouts,
            self.handshakes,
            self.reads,
            self.writes,
            self.flushes,
            self.trims,
            self.write_zeroes,
            self.disconnects,
            self.protocol_errors,
            self.requests_refused,
            self.backend_errors,
            self.backpressure_waits,
            self.in_flight_bytes,
            self.in_flight_bytes_peak
        )
    }
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) connections: AtomicU64,
    pub(crate) connections_open: AtomicU64,
    pub(crate) connections_refused: AtomicU64,
    pub(crate) idle_timeouts: AtomicU64,
    pub(crate) handshakes: AtomicU64,
    pub(crate) reads: AtomicU64,
    pub(crate) writes: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) trims: AtomicU64,
    pub(crate) write_zeroes: AtomicU64,
    pub(crate) disconnects: AtomicU64,
    pub(crate) bytes_read: AtomicU64,
    pub(crate) bytes_written: AtomicU64,
    pub(crate) requests_refused: AtomicU64,
    pub(crate) backend_errors: AtomicU64,
    pub(crate) protocol_errors: AtomicU64,
    pub(crate) backpressure_waits: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// An NBD server over a fixed list of exports. Share it as `Arc<Server>`; any number of
/// listeners may serve it at once.
pub struct Server {
    pub(crate) exports: Vec<Export>,
    pub(crate) counters: Counters,
    pub(crate) last_violation: Mutex<Option<String>>,
    pub(crate) limits: Limits,
    /// One permit per connection that may be open.
    pub(crate) connection_slots: Arc<tokio::sync::Semaphore>,
    /// The in-flight bytes over all connections.
    pub(crate) budget: Arc<limits::Budget>,
}

impl Server {
    /// A server for `exports` given as `(name, description, backend)`; the first is the
    /// default export. Names must be unique; names and descriptions at most 4096 bytes, no NUL.
    pub fn new(exports: Vec<(String, String, Arc<dyn Backend>)>) -> Result<Server, ConfigError> {
        Server::with_limits(exports, Limits::default())
    }

    /// As [`Server::new`], with `limits` instead of the defaults.
    pub fn with_limits(
        exports: Vec<(String, String, Arc<dyn Backend>)>,
        limits: Limits,
    ) -> Result<Server, ConfigError> {
        limits.check().map_err(ConfigError::Limits)?;
        if exports.is_empty() {
            return Err(ConfigError::NoExports);
        }
        let mut out: Vec<Export> = Vec::with_capacity(exports.len());
        for (index, (name, description, backend)) in exports.into_iter().enumerate() {
            for (field, s) in [("name", &name), ("description", &description)] {
                if s.len() > proto::STRING_LEN_MAX {
                    let (len, max) = (s.len(), proto::STRING_LEN_MAX);
                    return Err(ConfigError::TooLong {
                        index,
                        field,
                        len,
                        max,
                    });
                }
                if s.contains('\0') {
                    return Err(ConfigError::Nul { index, field });
                }
            }
            if let Some(first) = out.iter().position(|e| e.name == name) {
                return Err(ConfigError::DuplicateName { index, first, name });
            }
            out.push(Export {
                name,
                description,
                backend,
            });
        }
        assert!(!out.is_empty());
        Ok(Server {
            exports: out,
            counters: Counters::default(),
            last_violation: Mutex::new(None),
            limits,
            connection_slots: Arc::new(tokio::sync::Semaphore::new(limits.connections_max)),
            budget: Arc::new(limits::Budget::new(limits.in_flight_bytes_max)),
        })
    }

    /// A snapshot of the counters.
    #[must_use]
    pub fn stats(&self) -> ServerStats {
        let c = &self.counters;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ServerStats {
            connections: g(&c.connections),
            connections_open: g(&c.connections_open),
            connections_refused: g(&c.connections_refused),
            idle_timeouts: g(&c.idle_timeouts),
            handshakes: g(&c.handshakes),
            reads: g(&c.reads),
            writes: g(&c.writes),
            flushes: g(&c.flushes),
            trims: g(&c.trims),
            write_zeroes: g(&c.write_zeroes),
            disconnects: g(&c.disconnects),
            bytes_read: g(&c.bytes_read),
            bytes_written: g(&c.bytes_written),
            requests_refused: g(&c.requests_refused),
            backend_errors: g(&c.backend_errors),
            protocol_errors: g(&c.protocol_errors),
            backpressure_waits: g(&c.backpressure_waits),
            in_flight_bytes: self.budget.in_flight(),
            in_flight_bytes_peak: self.budget.peak(),
        }
    }

    /// The reason of the latest protocol violation that closed a connection, if any.
    #[must_use]
    pub fn last_violation(&self) -> Option<String> {
        self.last_violation
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The limits this server enforces.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Export names in order (the first is the default).
    #[must_use]
    pub fn export_names(&self) -> Vec<String> {
        self.exports.iter().map(|e| e.name.clone()).collect()
    }
}
