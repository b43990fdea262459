//! Connection handling: the accept loops, the connection lifecycle and the fixed newstyle
//! handshake (option haggling up to `NBD_OPT_GO` / `NBD_OPT_EXPORT_NAME`). The transmission
//! phase is in `transmission.rs`.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{watch, OwnedSemaphorePermit};
use tokio::task::JoinSet;

use super::limits::{refuse, REFUSING_MAX};
use super::proto::*;
use super::{bump, Backend, Server};
use super::{DRAIN_TIMEOUT, HANDSHAKE_TIMEOUT, OPTIONS_MAX};

/// Why a connection ended.
#[derive(Debug)]
pub(super) enum End {
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
    /// The idle timeout: the client sent nothing, or read nothing, for too long.
    Idle(String),
    /// The socket failed.
    Io(io::Error),
}

pub(super) type Step<T> = Result<T, End>;

pub(super) fn violation<T>(reason: String) -> Step<T> {
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
pub(super) async fn shutdown_signalled(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

impl Server {
    /// Serves NBD on `listener` until `shutdown` completes, then stops reading requests,
    /// lets every connection's in-flight requests finish and their replies go out (at most
    /// [`DRAIN_TIMEOUT`]), and returns.
    pub async fn serve_tcp(self: Arc<Self>, listener: TcpListener, shutdown: impl Future) {
        self.serve(listener, shutdown).await;
    }

    /// As [`Server::serve_tcp`], on a Unix socket.
    pub async fn serve_unix(self: Arc<Self>, listener: UnixListener, shutdown: impl Future) {
        self.serve(listener, shutdown).await;
    }

    /// Serves one already-connected stream (handshake, then transmission) until it ends. It
    /// counts against [`super::Limits::connections_max`]: beyond it the client is refused.
    pub async fn serve_connection<S>(self: Arc<Self>, stream: S, peer: String)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (_keep, stop) = watch::channel(false);
        match self.connection_slot(&peer) {
            Some(slot) => self.run_connection(stream, peer, stop, slot).await,
            None => refuse(stream, &self.busy_message()).await,
        }
    }

    /// A place for one more connection, or `None` (counted and logged) at the limit.
    fn connection_slot(&self, peer: &str) -> Option<OwnedSemaphorePermit> {
        bump(&self.counters.connections, 1);
        let slot = self.connection_slots.clone().try_acquire_owned().ok();
        if slot.is_none() {
            bump(&self.counters.connections_refused, 1);
            tracing::warn!(
                "nbd {peer}: refused: {} connections open, the limit",
                self.limits.connections_max
            );
        }
        slot
    }

    fn busy_message(&self) -> String {
        format!(
            "server busy: {} connections open, the limit; try again later",
            self.limits.connections_max
        )
    }

    async fn serve<L: Listener>(self: Arc<Self>, listener: L, shutdown: impl Future) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut conns = JoinSet::new();
        let mut refusing = JoinSet::new();
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
                Some(_) = refusing.join_next(), if !refusing.is_empty() => {}
                accepted = listener.accept_one() => match accepted {
                    Ok((stream, peer)) => match self.connection_slot(&peer) {
                        Some(slot) => {
                            conns.spawn(self.clone().run_connection(stream, peer, stop_rx.clone(), slot));
                        }
                        // Dropping the stream closes it without a word.
                        None if refusing.len() >= REFUSING_MAX => {}
                        None => {
                            let message = self.busy_message();
                            refusing.spawn(async move { refuse(stream, &message).await });
                        }
                    },
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
        refusing.shutdown().await;
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
        _slot: OwnedSemaphorePermit,
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
            End::Idle(reason) => {
                bump(&self.counters.idle_timeouts, 1);
                tracing::info!("nbd {peer}: idle timeout: {reason}; closing the connection");
            }
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
        read_msg(rd, &mut b4, "handshake: client flags", None).await?;
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
            let (opt, data, place) = read_option(rd, n).await?;
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
                    let min = b.block_size_min();
                    for v in [min, BLOCK_SIZE_PREFERRED.max(min), PAYLOAD_MAX] {
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
    if b.rotational() {
        f |= FLAG_ROTATIONAL;
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

/// Reads option `n` of the handshake: (option, data, a name of the place for errors).
pub(super) async fn read_option<R: AsyncRead + Unpin>(
    rd: &mut R,
    n: u32,
) -> Step<(u32, Vec<u8>, String)> {
    let mut h = [0u8; 16];
    read_msg(rd, &mut h, "handshake: option header", None).await?;
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
    read_part(rd, &mut data, &place, None).await?;
    Ok((opt, data, place))
}

pub(super) async fn send<W: AsyncWrite + Unpin>(wr: &mut W, b: &[u8]) -> Step<()> {
    wr.write_all(b).await.map_err(End::Io)?;
    wr.flush().await.map_err(End::Io)
}

/// Fills `buf` with the next message; `Eof` if the stream ends before its first byte. With
/// `stall`, waiting that long for a byte ends the connection (`Idle`).
pub(super) async fn read_msg<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut [u8],
    what: &str,
    stall: Option<Duration>,
) -> Step<()> {
    let mut got = 0;
    while got < buf.len() {
        let read = rd.read(&mut buf[got..]);
        let n = match stall {
            None => read.await,
            // `read` is cancel-safe: on a timeout no byte was taken.
            Some(d) => tokio::time::timeout(d, read).await.map_err(|_| {
                End::Idle(format!(
                    "{what}: no byte for {d:?} after {got} of its {} bytes",
                    buf.len()
                ))
            })?,
        }
        .map_err(End::Io)?;
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
pub(super) async fn read_part<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut [u8],
    what: &str,
    stall: Option<Duration>,
) -> Step<()> {
    match read_msg(rd, buf, what, stall).await {
        Err(End::Eof) => violation(format!(
            "{what}: truncated: stream ended before its {} data bytes",
            buf.len()
        )),
        r => r,
    }
}

#[cfg(test)]
mod unit {
    use super::*;

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
