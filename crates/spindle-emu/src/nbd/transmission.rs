//! The transmission phase: a reader that parses, checks and dispatches requests (one spawned
//! task per backend call), and a writer task that sends simple replies in completion order.
//! In-flight requests and payload bytes are bounded per connection, payload bytes also over
//! all connections (the server's budget); a request that fails its check gets an error reply
//! without reaching the backend. With an idle timeout, a connection that sends nothing (with
//! nothing in flight), stops mid-request or reads no reply for that long is closed.

use std::future::Future;
use std::io;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};

use super::limits::BudgetPermit;
use super::proto::*;
use super::server::{read_msg, read_part, shutdown_signalled, violation, End, Step};
use super::{bump, Backend, BoxFuture, NbdError, Server, IN_FLIGHT_BYTES_MAX, IN_FLIGHT_MAX};

impl Server {
    /// The transmission phase, from the first request to the last reply.
    pub(super) async fn transmission<R, W>(
        self: &Arc<Self>,
        mut rd: R,
        wr: W,
        export: usize,
        stop: &mut watch::Receiver<bool>,
    ) -> End
    where
        R: AsyncBufRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let backend = self.exports[export].backend.clone();
        let (tx, rx) = mpsc::channel::<Reply>(IN_FLIGHT_MAX);
        let idle = self.limits.idle_timeout;
        let writer = tokio::spawn(write_replies(wr, rx, idle));
        let conn = Conn {
            server: self.clone(),
            size: backend.size_bytes(),
            read_only: backend.read_only(),
            backend,
            tx,
            slots: Arc::new(Semaphore::new(IN_FLIGHT_MAX)),
            bytes: Arc::new(Semaphore::new(
                usize::try_from(IN_FLIGHT_BYTES_MAX).expect("fits usize"),
            )),
            idle,
        };
        let end = loop {
            let step = tokio::select! {
                biased;
                _ = shutdown_signalled(stop) => Err(End::Shutdown),
                _ = conn.tx.closed() => Err(End::Io(io::Error::new(io::ErrorKind::BrokenPipe, "reply writer stopped"))),
                r = conn.next_request(&mut rd) => r,
            };
            if let Err(end) = step {
                break end;
            }
        };
        // In-flight tasks hold senders; the writer ends after their replies are out.
        drop(conn);
        match writer.await {
            Ok(Ok(())) => end,
            Ok(Err(e)) if e.kind() == io::ErrorKind::TimedOut => End::Idle(e.to_string()),
            Ok(Err(e)) if matches!(end, End::Violation(_)) => {
                tracing::debug!("nbd: replies after a violation not delivered: {e}");
                end
            }
            Ok(Err(e)) => End::Io(e),
            Err(e) => End::Io(io::Error::other(format!("reply writer failed: {e}"))),
        }
    }
}

/// One reply on its way to the writer. The permits bound in-flight requests and bytes until
/// the reply is written.
struct Reply {
    cookie: u64,
    error: u32,
    data: Option<Vec<u8>>,
    _slot: OwnedSemaphorePermit,
    _bytes: Option<Held>,
}

/// The payload bytes a request holds: of its connection's bound and of the server's budget.
struct Held {
    _conn: OwnedSemaphorePermit,
    _server: BudgetPermit,
}

/// The piece of a read reply that must go out within the idle timeout.
const STALL_PIECE: usize = 1 << 20;

/// Sends the replies; with `stall`, a write the client does not take for that long fails
/// with `TimedOut` (and the replies still queued are dropped, releasing their bytes).
async fn write_replies<W: AsyncWrite + Unpin>(
    wr: W,
    mut rx: mpsc::Receiver<Reply>,
    stall: Option<Duration>,
) -> io::Result<()> {
    async fn within<F: Future<Output = io::Result<()>>>(
        stall: Option<Duration>,
        f: F,
    ) -> io::Result<()> {
        let Some(d) = stall else { return f.await };
        tokio::time::timeout(d, f).await.unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("replies not read for {d:?}"),
            ))
        })
    }
    let mut wr = BufWriter::with_capacity(64 * 1024, wr);
    while let Some(r) = rx.recv().await {
        within(stall, wr.write_all(&encode_simple_reply(r.error, r.cookie))).await?;
        if let Some(d) = &r.data {
            // In pieces, so that a client reading slowly but steadily is not "not reading".
            for piece in d.chunks(STALL_PIECE) {
                within(stall, wr.write_all(piece)).await?;
            }
        }
        drop(r);
        if rx.is_empty() {
            within(stall, wr.flush()).await?;
        }
    }
    within(stall, wr.flush()).await?;
    within(stall, wr.shutdown()).await
}

/// The state of one connection in the transmission phase.
struct Conn {
    server: Arc<Server>,
    backend: Arc<dyn Backend>,
    size: u64,
    read_only: bool,
    tx: mpsc::Sender<Reply>,
    slots: Arc<Semaphore>,
    bytes: Arc<Semaphore>,
    idle: Option<Duration>,
}

impl Conn {
    /// Waits until the next request's first byte is buffered. With an idle timeout, a
    /// connection with nothing in flight that receives nothing for that long ends; while
    /// requests are in flight the client is waiting for us, so the wait starts over once
    /// they are answered.
    async fn wait_request<R: AsyncBufRead + Unpin>(&self, rd: &mut R) -> Step<()> {
        async fn filled<R: AsyncBufRead + Unpin>(rd: &mut R) -> Step<()> {
            // Cancel-safe: buffers bytes without taking them.
            match rd.fill_buf().await {
                Ok([]) => Err(End::Eof),
                Ok(_) => Ok(()),
                Err(e) => Err(End::Io(e)),
            }
        }
        let Some(idle) = self.idle else {
            return filled(rd).await;
        };
        loop {
            if let Ok(r) = tokio::time::timeout(idle, filled(rd)).await {
                return r;
            }
            // The caller holds one slot; the others taken are requests in flight.
            let others = u32::try_from(IN_FLIGHT_MAX - 1).expect("fits u32");
            if self.slots.available_permits() == IN_FLIGHT_MAX - 1 {
                return Err(End::Idle(format!(
                    "no request for {idle:?} with none in flight"
                )));
            }
            tokio::select! {
                r = filled(rd) => return r,
                all = self.slots.acquire_many(others) => drop(all),
            }
        }
    }

    /// Takes `len` payload bytes of the connection's bound and of the server's budget,
    /// waiting (without reading the socket) while they are not free.
    async fn hold(&self, len: u32, place: &str) -> Held {
        let mut waits = false;
        let mut wait = || {
            if !std::mem::replace(&mut waits, true) {
                bump(&self.server.counters.backpressure_waits, 1);
                tracing::debug!("nbd: {place}: waiting for {len} bytes of the in-flight bounds");
            }
        };
        let conn = match self.bytes.clone().try_acquire_many_owned(len) {
            Ok(p) => p,
            Err(_) => {
                wait();
                self.bytes
                    .clone()
                    .acquire_many_owned(len)
                    .await
                    .expect("semaphore never closed")
            }
        };
        let budget = &self.server.budget;
        let server = match budget.try_acquire(len) {
            Some(p) => p,
            None => {
                wait();
                budget.acquire(len).await
            }
        };
        Held {
            _conn: conn,
            _server: server,
        }
    }

    /// Reads one request and dispatches it; `Err` ends the connection.
    async fn next_request<R: AsyncBufRead + Unpin>(&self, rd: &mut R) -> Step<()> {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("semaphore never closed");
        self.wait_request(rd).await?;
        let mut h = [0u8; REQUEST_LEN];
        read_msg(rd, &mut h, "request header", self.idle).await?;
        let req = Request::decode(&h);
        if req.magic != REQUEST_MAGIC {
            return violation(format!(
                "request header: bad magic {:#010x}, expected {REQUEST_MAGIC:#010x}",
                req.magic
            ));
        }
        let place = format!("request {:#x} ({})", req.cookie, command_name(req.kind));
        // Read the payload before judging the request, so the stream stays framed.
        let mut bytes = None;
        let mut payload = None;
        if req.kind == CMD_WRITE {
            if req.length > PAYLOAD_MAX {
                return violation(format!(
                    "{place}: payload length {} exceeds {PAYLOAD_MAX}",
                    req.length
                ));
            }
            bytes = Some(self.hold(req.length, &place).await);
            let mut data = vec![0u8; usize::try_from(req.length).expect("u32 fits usize")];
            read_part(rd, &mut data, &place, self.idle).await?;
            payload = Some(data);
        }
        if req.kind == CMD_DISC {
            return Err(End::Disc);
        }
        let c = &self.server.counters;
        if let Err((e, why)) = check(&req, self.size, self.read_only) {
            tracing::debug!("nbd: {place}: refused with {e}: {why}");
            bump(&c.requests_refused, 1);
            return self.reply(req.cookie, e.errno(), None, slot, bytes).await;
        }
        match req.kind {
            CMD_READ => bump(&c.reads, 1),
            CMD_WRITE => bump(&c.writes, 1),
            CMD_FLUSH => bump(&c.flushes, 1),
            CMD_TRIM => bump(&c.trims, 1),
            _ => bump(&c.write_zeroes, 1),
        }
        if req.length == 0 && req.kind != CMD_FLUSH {
            // A no-op the backend never sees.
            let data = (req.kind == CMD_READ).then(Vec::new);
            return self.reply(req.cookie, 0, data, slot, bytes).await;
        }
        if req.kind == CMD_READ {
            bytes = Some(self.hold(req.length, &place).await);
        }
        let fut = self.call(&req, payload);
        let (server, tx, kind, len) = (self.server.clone(), self.tx.clone(), req.kind, req.length);
        tokio::spawn(async move {
            let (error, data) = match CatchUnwind(fut).await {
                Some(Ok(d)) => (0, d),
                Some(Err(e)) => (e.errno(), None),
                None => {
                    tracing::error!(
                        "nbd: backend panicked serving a {} request",
                        command_name(kind)
                    );
                    (EIO, None)
                }
            };
            let (error, data) = match data {
                Some(d) if d.len() != usize::try_from(len).expect("u32 fits usize") => {
                    tracing::error!("nbd: backend read returned {} bytes, {len} asked", d.len());
                    (EIO, None)
                }
                d => (error, d),
            };
            let c = &server.counters;
            if error != 0 {
                bump(&c.backend_errors, 1);
            } else if kind == CMD_READ {
                bump(&c.bytes_read, u64::from(len));
            } else if kind == CMD_WRITE {
                bump(&c.bytes_written, u64::from(len));
            }
            let reply = Reply {
                cookie: req.cookie,
                error,
                data,
                _slot: slot,
                _bytes: bytes,
            };
            // A closed channel means the client is gone; nobody to answer.
            let _ = tx.send(reply).await;
        });
        Ok(())
    }

    /// Starts the backend call of a checked request.
    fn call(
        &self,
        req: &Request,
        payload: Option<Vec<u8>>,
    ) -> BoxFuture<'static, Result<Option<Vec<u8>>, NbdError>> {
        let b = &self.backend;
        let fua = req.flags & CMD_FLAG_FUA != 0;
        let (off, len) = (req.offset, req.length);
        assert!(
            req.kind == CMD_FLUSH
                || off
                    .checked_add(u64::from(len))
                    .is_some_and(|e| e <= self.size)
        );
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| -> BoxFuture<'static, _> {
            match req.kind {
                CMD_READ => {
                    let f = b.read(off, len);
                    Box::pin(async move { f.await.map(Some) })
                }
                CMD_WRITE => {
                    let f = b.write(off, payload.expect("write has a payload"), fua);
                    Box::pin(async move { f.await.map(|()| None) })
                }
                CMD_FLUSH => {
                    let f = b.flush();
                    Box::pin(async move { f.await.map(|()| None) })
                }
                CMD_TRIM => {
                    let f = b.trim(off, len, fua);
                    Box::pin(async move { f.await.map(|()| None) })
                }
                _ => {
                    assert_eq!(req.kind, CMD_WRITE_ZEROES);
                    let f = b.write_zeroes(off, len, fua);
                    Box::pin(async move { f.await.map(|()| None) })
                }
            }
        }));
        started.unwrap_or_else(|_| Box::pin(async { Err(NbdError::Io) }))
    }

    async fn reply(
        &self,
        cookie: u64,
        error: u32,
        data: Option<Vec<u8>>,
        slot: OwnedSemaphorePermit,
        bytes: Option<Held>,
    ) -> Step<()> {
        let r = Reply {
            cookie,
            error,
            data,
            _slot: slot,
            _bytes: bytes,
        };
        self.tx.send(r).await.map_err(|_| {
            End::Io(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "reply writer stopped",
            ))
        })
    }
}

/// Whether a request (not DISC) may reach the backend; else the error to reply and why.
fn check(req: &Request, size: u64, read_only: bool) -> Result<(), (NbdError, String)> {
    let unknown = req.flags & !(CMD_FLAG_FUA | CMD_FLAG_NO_HOLE);
    if unknown != 0 {
        return Err((
            NbdError::Invalid,
            format!("unknown command flags {unknown:#x}"),
        ));
    }
    if req.flags & CMD_FLAG_NO_HOLE != 0 && req.kind != CMD_WRITE_ZEROES {
        return Err((
            NbdError::Invalid,
            "NBD_CMD_FLAG_NO_HOLE outside write_zeroes".to_string(),
        ));
    }
    match req.kind {
        CMD_FLUSH => Ok(()),
        CMD_READ | CMD_WRITE | CMD_TRIM | CMD_WRITE_ZEROES => {
            let writes = req.kind != CMD_READ;
            if writes && read_only {
                return Err((NbdError::Perm, "export is read-only".to_string()));
            }
            if req.kind == CMD_READ && req.length > PAYLOAD_MAX {
                return Err((
                    NbdError::Invalid,
                    format!("length {} exceeds {PAYLOAD_MAX}", req.length),
                ));
            }
            let end = req.offset.checked_add(u64::from(req.length));
            if end.map_or(true, |e| e > size) {
                // The protocol asks ENOSPC for writes past the end, EINVAL for the rest.
                let e = if matches!(req.kind, CMD_WRITE | CMD_WRITE_ZEROES) {
                    NbdError::NoSpace
                } else {
                    NbdError::Invalid
                };
                return Err((
                    e,
                    format!(
                        "offset {} + length {} passes the export size {size}",
                        req.offset, req.length
                    ),
                ));
            }
            Ok(())
        }
        k => Err((
            NbdError::Invalid,
            format!("unknown or unsupported command {k}"),
        )),
    }
}

/// Polls a future, turning a panic into `None`.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *inner).poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Some(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(None),
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn req(kind: u16, flags: u16, offset: u64, length: u32) -> Request {
        Request {
            magic: REQUEST_MAGIC,
            flags,
            kind,
            cookie: 1,
            offset,
            length,
        }
    }

    #[test]
    fn check_ranges_and_flags() {
        assert!(check(&req(CMD_READ, 0, 0, 4096), 4096, false).is_ok());
        assert_eq!(
            check(&req(CMD_READ, 0, 1, 4096), 4096, false)
                .unwrap_err()
                .0,
            NbdError::Invalid
        );
        assert_eq!(
            check(&req(CMD_WRITE, 0, 4096, 1), 4096, false)
                .unwrap_err()
                .0,
            NbdError::NoSpace
        );
        assert_eq!(
            check(&req(CMD_WRITE_ZEROES, 0, u64::MAX, 2), 4096, false)
                .unwrap_err()
                .0,
            NbdError::NoSpace
        );
        assert_eq!(
            check(&req(CMD_TRIM, 0, 4000, 200), 4096, false)
                .unwrap_err()
                .0,
            NbdError::Invalid
        );
        assert_eq!(
            check(&req(CMD_WRITE, 0, 0, 1), 4096, true).unwrap_err().0,
            NbdError::Perm
        );
        assert!(check(
            &req(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE | CMD_FLAG_FUA, 0, 8),
            4096,
            false
        )
        .is_ok());
        assert_eq!(
            check(&req(CMD_WRITE, CMD_FLAG_NO_HOLE, 0, 8), 4096, false)
                .unwrap_err()
                .0,
            NbdError::Invalid
        );
        assert_eq!(
            check(&req(CMD_READ, 1 << 9, 0, 8), 4096, false)
                .unwrap_err()
                .0,
            NbdError::Invalid
        );
        assert_eq!(
            check(&req(CMD_BLOCK_STATUS, 0, 0, 8), 4096, false)
                .unwrap_err()
                .0,
            NbdError::Invalid
        );
        assert_eq!(
            check(&req(99, 0, 0, 8), 4096, false).unwrap_err().0,
            NbdError::Invalid
        );
        let big = req(CMD_READ, 0, 0, PAYLOAD_MAX + 1);
        assert_eq!(
            check(&big, u64::MAX, false).unwrap_err().0,
            NbdError::Invalid
        );
        assert!(check(&req(CMD_FLUSH, 0, 0, 0), 0, true).is_ok());
    }
}
