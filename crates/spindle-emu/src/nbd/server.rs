//! Connection handling: the accept loops, the fixed newstyle handshake and the transmission
//! phase (a reader that parses and dispatches requests, one spawned task per backend call, and
//! a writer task that sends replies in completion order).

use std::future::Future;
use std::io;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::proto::*;
use super::OPTIONS_MAX;
use super::{bump, Backend, BoxFuture, NbdError, Server};
use super::{
    CONNECTIONS_MAX, DRAIN_TIMEOUT, HANDSHAKE_TIMEOUT, IN_FLIGHT_BYTES_MAX, IN_FLIGHT_MAX,
};

/// Why a connection ended.
#[derive(Debug)]
enum End {
    /// The client sent `NBD_CMD_DISC`.
    Disc,
    /// The client sent `NBD_OPT_ABORT`.
    Abort,
    /// The client closed the stream between messages.
    Eof,
    /// The server is shutting down.
    Shutdown,
    /// The client broke the protocol; the reason names the place.
    Violation(String),
    /// The socket failed.
    Io(io::Error),
}

type Step<T> = Result<T, End>;

fn violation<T>(reason: String) -> Step<T> {
    Err(End::Violation(reason))
}

/// A listening socket the accept loop can serve.
trait Listener {
    type Stream: AsyncRead + AsyncWrite + Send + 'static;
    fn accept_one(&self) -> impl Future<Output = io::Result<(Self::Stream, String)>> + Send;
}

impl Listener for TcpListener {
    type Stream = tokio::net::TcpStream;
    async fn accept_one(&self) -> io::Result<(Self::Stream, String)> {
        let (s, addr) = self.accept().await?;
        // Replies are flushed per batch already; Nagle would only add latency.
        s.set_nodelay(true)?;
        Ok((s, format!("tcp {addr}")))
    }
}

impl Listener for UnixListener {
    type Stream = tokio::net::UnixStream;
    async fn accept_one(&self) -> io::Result<(Self::Stream, String)> {
        let (s, _) = self.accept().await?;
        Ok((s, "unix".to_string()))
    }
}

/// Resolves once `rx` says shutdown; never if the sender is gone without saying it.
async fn shutdown_signalled(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

impl Server {
    /// Serves NBD on `listener` until `shutdown` completes, then stops reading requests,
    /// lets every connection's in-flight requests finish and their replies go out (at most
    /// [`DRAIN_TIMEOUT`](super::DRAIN_TIMEOUT)), and returns.
    pub async fn serve_tcp(self: Arc<Self>, listener: TcpListener, shutdown: impl Future) {
        self.serve(listener, shutdown).await;
    }

    /// As [`Server::serve_tcp`], on a Unix socket.
    pub async fn serve_unix(self: Arc<Self>, listener: UnixListener, shutdown: impl Future) {
        self.serve(listener, shutdown).await;
    }

    /// Serves one already-connected stream (handshake, then transmission) until it ends.
    pub async fn serve_connection<S>(self: Arc<Self>, stream: S, peer: String)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (_keep, stop) = watch::channel(false);
        self.run_connection(stream, peer, stop).await;
    }

    async fn serve<L: Listener>(self: Arc<Self>, listener: L, shutdown: impl Future) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut conns = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                biased;
                _ = &mut shutdown => break,
                Some(joined) = conns.join_next(), if !conns.is_empty() => {
                    if let Err(e) = joined {
                        tracing::error!("nbd: connection task failed: {e}");
                    }
                }
                accepted = listener.accept_one() => match accepted {
                    Ok((stream, peer)) => {
                        bump(&self.counters.connections, 1);
                        if conns.len() >= CONNECTIONS_MAX {
                            tracing::warn!("nbd {peer}: refused: {CONNECTIONS_MAX} connections open");
                            continue;
                        }
                        conns.spawn(self.clone().run_connection(stream, peer, stop_rx.clone()));
                    }
                    Err(e) => {
                        // EMFILE and friends pass; do not spin on them.
                        tracing::warn!("nbd: accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                },
            }
        }
        // Receivers only fail to see this if every connection is gone already.
        let _ = stop_tx.send(true);
        let drain = async { while conns.join_next().await.is_some() {} };
        if tokio::time::timeout(DRAIN_TIMEOUT, drain).await.is_err() {
            tracing::warn!(
                "nbd: {} connections still open after {DRAIN_TIMEOUT:?}; dropping them",
                conns.len()
            );
            conns.shutdown().await;
        }
    }

    async fn run_connection<S>(
        self: Arc<Self>,
        stream: S,
        peer: String,
        mut stop: watch::Receiver<bool>,
    ) where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        bump(&self.counters.connections_open, 1);
        let (rd, mut wr) = tokio::io::split(stream);
        let mut rd = BufReader::new(rd);
        let handshake = tokio::select! {
            biased;
            _ = shutdown_signalled(&mut stop) => Err(End::Shutdown),
            r = tokio::time::timeout(HANDSHAKE_TIMEOUT, self.handshake(&mut rd, &mut wr)) => {
                r.unwrap_or_else(|_| violation(format!("handshake: not complete after {HANDSHAKE_TIMEOUT:?}")))
            }
        };
        let end = match handshake {
            Ok(export) => {
                bump(&self.counters.handshakes, 1);
                self.transmission(rd, wr, export, &mut stop).await
            }
            Err(end) => {
                // The peer may be gone; nothing to do about a failed shutdown.
                let _ = wr.shutdown().await;
                end
            }
        };
        self.log_end(&peer, end);
        self.counters
            .connections_open
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn log_end(&self, peer: &str, end: End) {
        match end {
            End::Disc => {
                bump(&self.counters.disconnects, 1);
                tracing::debug!("nbd {peer}: client disconnected");
            }
            End::Abort => tracing::debug!("nbd {peer}: client aborted the handshake"),
            End::Eof => tracing::debug!("nbd {peer}: client closed the connection"),
            End::Shutdown => tracing::debug!("nbd {peer}: closed for shutdown"),
            End::Io(e) => tracing::info!("nbd {peer}: connection failed: {e}"),
            End::Violation(reason) => {
                bump(&self.counters.protocol_errors, 1);
                tracing::warn!("nbd {peer}: protocol violation: {reason}; closing the connection");
                let mut last = self
                    .last_violation
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                *last = Some(format!("{peer}: {reason}"));
            }
        }
    }

    fn find_export(&self, name: &[u8]) -> Option<usize> {
        if name.is_empty() {
            return Some(0);
        }
        self.exports.iter().position(|e| e.name.as_bytes() == name)
    }

    /// Runs option haggling; returns the selected export's index.
    async fn handshake<R, W>(&self, rd: &mut R, wr: &mut W) -> Step<usize>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let mut hello = Vec::with_capacity(18);
        hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
        hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
        hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
        send(wr, &hello).await?;
        let mut b4 = [0u8; 4];
        read_msg(rd, &mut b4, "handshake: client flags").await?;
        let client_flags = u32::from_be_bytes(b4);
        let unknown = client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
        if unknown != 0 {
            return violation(format!(
                "handshake: client flags {client_flags:#x} set unknown bits {unknown:#x}"
            ));
        }
        if client_flags & FLAG_C_FIXED_NEWSTYLE == 0 {
            return violation(format!(
                "handshake: client flags {client_flags:#x} lack NBD_FLAG_C_FIXED_NEWSTYLE (only fixed newstyle is served)"
            ));
        }
        let no_zeroes = client_flags & FLAG_C_NO_ZEROES != 0;
        for n in 0..OPTIONS_MAX {
            let mut h = [0u8; 16];
            read_msg(rd, &mut h, "handshake: option header").await?;
            let magic = u64::from_be_bytes(h[0..8].try_into().expect("8 bytes"));
            let opt = u32::from_be_bytes(h[8..12].try_into().expect("4 bytes"));
            let len = u32::from_be_bytes(h[12..16].try_into().expect("4 bytes"));
            let place = format!("handshake: option {n} ({} = {opt})", option_name(opt));
            if magic != IHAVEOPT {
                return violation(format!(
                    "{place}: bad magic {magic:#018x}, expected {IHAVEOPT:#018x}"
                ));
            }
            if len > OPTION_LEN_MAX {
                return violation(format!(
                    "{place}: data length {len} exceeds {OPTION_LEN_MAX}"
                ));
            }
            let mut data = vec![0u8; usize::try_from(len).expect("u32 fits usize")];
            read_part(rd, &mut data, &place).await?;
            if let Some(export) = self
                .handle_option(wr, opt, &data, no_zeroes, &place)
                .await?
            {
                return Ok(export);
            }
        }
        violation(format!("handshake: more than {OPTIONS_MAX} options"))
    }

    /// Answers one option; `Some(export)` when it enters transmission.
    async fn handle_option<W: AsyncWrite + Unpin>(
        &self,
        wr: &mut W,
        opt: u32,
        data: &[u8],
        no_zeroes: bool,
        place: &str,
    ) -> Step<Option<usize>> {
        match opt {
            OPT_EXPORT_NAME => {
                let Some(i) = self.find_export(data) else {
                    // The protocol gives this option no way to fail but closing.
                    let name = String::from_utf8_lossy(data);
                    return violation(format!("{place}: unknown export {name:?}"));
                };
                let b = self.exports[i].backend.as_ref();
                let mut out = Vec::with_capacity(134);
                out.extend_from_slice(&b.size_bytes().to_be_bytes());
                out.extend_from_slice(&transmission_flags(b).to_be_bytes());
                if !no_zeroes {
                    out.extend_from_slice(&[0u8; 124]);
                }
                send(wr, &out).await?;
                Ok(Some(i))
            }
            OPT_ABORT => {
                send(wr, &encode_option_reply(opt, REP_ACK, &[])).await?;
                Err(End::Abort)
            }
            OPT_LIST => {
                if !data.is_empty() {
                    let msg = format!("list: option data must be empty, got {} bytes", data.len());
                    send(
                        wr,
                        &encode_option_reply(opt, REP_ERR_INVALID, msg.as_bytes()),
                    )
                    .await?;
                    return Ok(None);
                }
                let mut out = Vec::new();
                for e in &self.exports {
                    let mut d = Vec::with_capacity(4 + e.name.len() + e.description.len());
                    let name_len = u32::try_from(e.name.len()).expect("name checked <= 4096");
                    d.extend_from_slice(&name_len.to_be_bytes());
                    d.extend_from_slice(e.name.as_bytes());
                    d.extend_from_slice(e.description.as_bytes());
                    out.extend_from_slice(&encode_option_reply(opt, REP_SERVER, &d));
                }
                out.extend_from_slice(&encode_option_reply(opt, REP_ACK, &[]));
                send(wr, &out).await?;
                Ok(None)
            }
            OPT_INFO | OPT_GO => self.handle_info(wr, opt, data).await,
            _ => {
                let msg = format!("option {opt} ({}) is not supported", option_name(opt));
                send(wr, &encode_option_reply(opt, REP_ERR_UNSUP, msg.as_bytes())).await?;
                Ok(None)
            }
        }
    }

    async fn handle_info<W: AsyncWrite + Unpin>(
        &self,
        wr: &mut W,
        opt: u32,
        data: &[u8],
    ) -> Step<Option<usize>> {
        let (name, infos) = match parse_info(data) {
            Ok(v) => v,
            Err(msg) => {
                let msg = format!("{}: {msg}", option_name(opt));
                send(
                    wr,
                    &encode_option_reply(opt, REP_ERR_INVALID, msg.as_bytes()),
                )
                .await?;
                return Ok(None);
            }
        };
        let Some(i) = self.find_export(name) else {
            let msg = format!("unknown export {:?}", String::from_utf8_lossy(name));
            send(
                wr,
                &encode_option_reply(opt, REP_ERR_UNKNOWN, msg.as_bytes()),
            )
            .await?;
            return Ok(None);
        };
        let e = &self.exports[i];
        let b = e.backend.as_ref();
        let mut out = Vec::new();
        let mut export = Vec::with_capacity(12);
        export.extend_from_slice(&INFO_EXPORT.to_be_bytes());
        export.extend_from_slice(&b.size_bytes().to_be_bytes());
        export.extend_from_slice(&transmission_flags(b).to_be_bytes());
        out.extend_from_slice(&encode_option_reply(opt, REP_INFO, &export));
        for t in [INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE] {
            if !infos.contains(&t) {
                continue;
            }
            let mut d = t.to_be_bytes().to_vec();
            match t {
                INFO_NAME => d.extend_from_slice(e.name.as_bytes()),
                INFO_DESCRIPTION if e.description.is_empty() => continue,
                INFO_DESCRIPTION => d.extend_from_slice(e.description.as_bytes()),
                _ => {
                    for v in [BLOCK_SIZE_MIN, BLOCK_SIZE_PREFERRED, PAYLOAD_MAX] {
                        d.extend_from_slice(&v.to_be_bytes());
                    }
                }
            }
            out.extend_from_slice(&encode_option_reply(opt, REP_INFO, &d));
        }
        out.extend_from_slice(&encode_option_reply(opt, REP_ACK, &[]));
        send(wr, &out).await?;
        Ok((opt == OPT_GO).then_some(i))
    }

    /// The transmission phase, from the first request to the last reply.
    async fn transmission<R, W>(
        self: &Arc<Self>,
        mut rd: R,
        wr: W,
        export: usize,
        stop: &mut watch::Receiver<bool>,
    ) -> End
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let backend = self.exports[export].backend.clone();
        let (tx, rx) = mpsc::channel::<Reply>(IN_FLIGHT_MAX);
        let writer = tokio::spawn(write_replies(wr, rx));
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
            Ok(Err(e)) if matches!(end, End::Violation(_)) => {
                tracing::debug!("nbd: replies after a violation not delivered: {e}");
                end
            }
            Ok(Err(e)) => End::Io(e),
            Err(e) => End::Io(io::Error::other(format!("reply writer failed: {e}"))),
        }
    }
}

/// The transmission flags of an export.
fn transmission_flags(b: &dyn Backend) -> u16 {
    let mut f = FLAG_HAS_FLAGS | FLAG_SEND_FLUSH | FLAG_SEND_FUA;
    if b.read_only() {
        f |= FLAG_READ_ONLY;
    } else {
        f |= FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES;
    }
    if b.multi_conn() {
        f |= FLAG_CAN_MULTI_CONN;
    }
    f
}

/// Splits `NBD_OPT_INFO`/`NBD_OPT_GO` data into the export name and the information
/// requests.
fn parse_info(data: &[u8]) -> Result<(&[u8], Vec<u16>), String> {
    if data.len() < 6 {
        return Err(format!("option data is {} bytes, less than 6", data.len()));
    }
    let name_len = u32::from_be_bytes(data[0..4].try_into().expect("4 bytes"));
    let name_len = usize::try_from(name_len).expect("u32 fits usize");
    let rest = &data[4..];
    let Some(name) = rest.get(..name_len).filter(|_| name_len + 2 <= rest.len()) else {
        return Err(format!(
            "name length {name_len} overruns the {} bytes of option data",
            data.len()
        ));
    };
    let count = u16::from_be_bytes([rest[name_len], rest[name_len + 1]]);
    let reqs = &rest[name_len + 2..];
    if reqs.len() != 2 * usize::from(count) {
        return Err(format!(
            "{count} information requests need {} bytes, got {}",
            2 * usize::from(count),
            reqs.len()
        ));
    }
    Ok((
        name,
        reqs.chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect(),
    ))
}

async fn send<W: AsyncWrite + Unpin>(wr: &mut W, b: &[u8]) -> Step<()> {
    wr.write_all(b).await.map_err(End::Io)?;
    wr.flush().await.map_err(End::Io)
}

/// Fills `buf` with the next message; `Eof` if the stream ends before its first byte.
async fn read_msg<R: AsyncRead + Unpin>(rd: &mut R, buf: &mut [u8], what: &str) -> Step<()> {
    let mut got = 0;
    while got < buf.len() {
        let n = rd.read(&mut buf[got..]).await.map_err(End::Io)?;
        if n == 0 {
            if got == 0 {
                return Err(End::Eof);
            }
            return violation(format!(
                "{what}: truncated: stream ended after {got} of {} bytes",
                buf.len()
            ));
        }
        got += n;
    }
    Ok(())
}

/// Fills `buf` with the rest of a message; any end of stream is a violation.
async fn read_part<R: AsyncRead + Unpin>(rd: &mut R, buf: &mut [u8], what: &str) -> Step<()> {
    match read_msg(rd, buf, what).await {
        Err(End::Eof) => violation(format!(
            "{what}: truncated: stream ended before its {} data bytes",
            buf.len()
        )),
        r => r,
    }
}

/// One reply on its way to the writer. The permits bound in-flight requests and bytes until
/// the reply is written.
struct Reply {
    cookie: u64,
    error: u32,
    data: Option<Vec<u8>>,
    _slot: OwnedSemaphorePermit,
    _bytes: Option<OwnedSemaphorePermit>,
}

async fn write_replies<W: AsyncWrite + Unpin>(
    wr: W,
    mut rx: mpsc::Receiver<Reply>,
) -> io::Result<()> {
    let mut wr = BufWriter::with_capacity(64 * 1024, wr);
    while let Some(r) = rx.recv().await {
        wr.write_all(&encode_simple_reply(r.error, r.cookie))
            .await?;
        if let Some(d) = &r.data {
            wr.write_all(d).await?;
        }
        drop(r);
        if rx.is_empty() {
            wr.flush().await?;
        }
    }
    wr.flush().await?;
    wr.shutdown().await
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
}

impl Conn {
    /// Reads one request and dispatches it; `Err` ends the connection.
    async fn next_request<R: AsyncRead + Unpin>(&self, rd: &mut R) -> Step<()> {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("semaphore never closed");
        let mut h = [0u8; REQUEST_LEN];
        read_msg(rd, &mut h, "request header").await?;
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
            bytes = Some(
                self.bytes
                    .clone()
                    .acquire_many_owned(req.length)
                    .await
                    .expect("semaphore never closed"),
            );
            let mut data = vec![0u8; usize::try_from(req.length).expect("u32 fits usize")];
            read_part(rd, &mut data, &place).await?;
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
            bytes = Some(
                self.bytes
                    .clone()
                    .acquire_many_owned(req.length)
                    .await
                    .expect("semaphore never closed"),
            );
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
        bytes: Option<OwnedSemaphorePermit>,
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

    #[test]
    fn parse_info_bounds() {
        let mut d = Vec::new();
        d.extend_from_slice(&3u32.to_be_bytes());
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&2u16.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        d.extend_from_slice(&INFO_NAME.to_be_bytes());
        let (name, infos) = parse_info(&d).unwrap();
        assert_eq!(name, b"abc");
        assert_eq!(infos, vec![INFO_BLOCK_SIZE, INFO_NAME]);
        assert!(parse_info(&d[..d.len() - 1]).is_err());
        let mut long = d.clone();
        long[3] = 200;
        assert!(parse_info(&long).is_err());
        let mut max = d.clone();
        max[0..4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse_info(&max).is_err());
        assert!(parse_info(&[0, 0, 0]).is_err());
    }
}
