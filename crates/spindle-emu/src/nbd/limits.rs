//! What one server allows all its clients together: open connections (a client beyond the
//! limit is told so in the handshake and closed), how long a connection may stay idle, and
//! the READ/WRITE payload bytes in flight over all connections (a shared budget: a request
//! that would exceed it waits, without reading its connection's socket, until bytes are
//! released).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use super::proto::*;
use super::server::{read_msg, read_option, send, End, Step};
use super::{BUDGET_BYTES, CONNECTIONS_MAX, IDLE_TIMEOUT};

/// The limits of a [`super::Server`] (`Server::with_limits`); `Default` gives
/// [`CONNECTIONS_MAX`], [`IDLE_TIMEOUT`] and [`BUDGET_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most connections open at once, in the handshake or the transmission phase, over every
    /// listener of the server. A client beyond it gets `NBD_REP_ERR_POLICY` ("server busy")
    /// for each option it sends (at most [`REFUSE_OPTIONS`], within [`REFUSE_TIMEOUT`]) and
    /// is closed; at most [`REFUSING_MAX`] are answered at once, further ones are closed
    /// unanswered.
    pub connections_max: usize,
    /// A connection in the transmission phase that has sent no request for this long and
    /// has none in flight is closed (a TCP/Unix close: simple replies have no way to say it
    /// first). So is one that stops for this long in the middle of a request, or does not
    /// read its replies for this long (its in-flight bytes are released). (The handshake has
    /// its own bound, [`super::HANDSHAKE_TIMEOUT`].) `None`: never.
    pub idle_timeout: Option<Duration>,
    /// Most READ/WRITE payload bytes in flight over all connections (a write's from before
    /// its payload is read, a read's from before the backend is called, each until its
    /// reply is sent). A request that would exceed it waits; one larger than the whole
    /// budget is admitted once nothing else is in flight. At least 1.
    pub in_flight_bytes_max: u64,
}

/// Most options a refused client is answered before it is closed.
pub const REFUSE_OPTIONS: u32 = 16;
/// How long a refused client may take before it is closed.
pub const REFUSE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most refused clients answered at once; further ones are closed without a greeting.
pub const REFUSING_MAX: usize = 64;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections_max: CONNECTIONS_MAX,
            idle_timeout: Some(IDLE_TIMEOUT),
            in_flight_bytes_max: BUDGET_BYTES,
        }
    }
}

/// The largest budget a tokio semaphore holds (`Semaphore::MAX_PERMITS`).
const BUDGET_LIMIT: u64 = (usize::MAX >> 3) as u64;

impl Limits {
    /// Why these limits cannot be served, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.connections_max == 0 {
            return Err("the connection limit is 0: no client could connect".into());
        }
        if self.connections_max > 1 << 20 {
            return Err(format!(
                "the connection limit {} is more than 1048576",
                self.connections_max
            ));
        }
        if self.idle_timeout.is_some_and(|d| d.is_zero()) {
            return Err("the idle timeout is 0 (no timeout is None)".into());
        }
        if self.in_flight_bytes_max == 0 {
            return Err("the in-flight byte budget is 0: no request could be served".into());
        }
        if self.in_flight_bytes_max > BUDGET_LIMIT {
            return Err(format!(
                "the in-flight byte budget {} is more than {BUDGET_LIMIT}",
                self.in_flight_bytes_max
            ));
        }
        Ok(())
    }
}

/// The in-flight bytes over all connections: a semaphore of `max` permits (a request takes
/// `min(len, max)`, so one larger than the budget runs alone) and the accounted bytes.
pub(crate) struct Budget {
    permits: Arc<Semaphore>,
    max: u64,
    /// Payload bytes held now (a request's full length, whatever it took of the permits).
    in_flight: AtomicU64,
    peak: AtomicU64,
}

impl Budget {
    pub(crate) fn new(max: u64) -> Budget {
        let permits = usize::try_from(max.min(BUDGET_LIMIT)).expect("checked <= MAX_PERMITS");
        Budget {
            permits: Arc::new(Semaphore::new(permits)),
            max,
            in_flight: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        }
    }

    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Takes `len` bytes of the budget if they are free now.
    pub(crate) fn try_acquire(self: &Arc<Self>, len: u32) -> Option<BudgetPermit> {
        match self.permits.clone().try_acquire_many_owned(self.take(len)) {
            Ok(p) => Some(self.held(p, len)),
            Err(TryAcquireError::NoPermits) => None,
            Err(TryAcquireError::Closed) => unreachable!("the budget semaphore is never closed"),
        }
    }

    /// Takes `len` bytes of the budget, waiting while they are not free. Cancel-safe
    /// (nothing is taken until it returns).
    pub(crate) async fn acquire(self: &Arc<Self>, len: u32) -> BudgetPermit {
        let p = self
            .permits
            .clone()
            .acquire_many_owned(self.take(len))
            .await
            .expect("the budget semaphore is never closed");
        self.held(p, len)
    }

    /// The permits a request of `len` bytes takes: all of them at most.
    fn take(&self, len: u32) -> u32 {
        u32::try_from(u64::from(len).min(self.max)).expect("min with a u32")
    }

    fn held(self: &Arc<Self>, permit: OwnedSemaphorePermit, len: u32) -> BudgetPermit {
        let now = self.in_flight.fetch_add(u64::from(len), Ordering::Relaxed) + u64::from(len);
        self.peak.fetch_max(now, Ordering::Relaxed);
        BudgetPermit {
            budget: self.clone(),
            bytes: u64::from(len),
            _permit: permit,
        }
    }
}

/// Bytes of the budget a request holds until its reply is sent (or it is dropped).
pub(crate) struct BudgetPermit {
    budget: Arc<Budget>,
    bytes: u64,
    _permit: OwnedSemaphorePermit,
}

impl Drop for BudgetPermit {
    fn drop(&mut self) {
        self.budget
            .in_flight
            .fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// Tells a client beyond the connection limit so, the way the protocol allows: the greeting,
/// then `NBD_REP_ERR_POLICY` with `message` for every option (`NBD_REP_ACK` for ABORT, a
/// close for `EXPORT_NAME`, which cannot fail otherwise), until the client gives up, sends
/// [`REFUSE_OPTIONS`] options or [`REFUSE_TIMEOUT`] passes.
pub(crate) async fn refuse<S>(stream: S, message: &str)
where
    S: AsyncRead + AsyncWrite + Send,
{
    let (rd, mut wr) = tokio::io::split(stream);
    let mut rd = BufReader::new(rd);
    // Whatever ends the exchange, the connection closes; nothing to report.
    let _ = tokio::time::timeout(REFUSE_TIMEOUT, refuse_options(&mut rd, &mut wr, message)).await;
    let _ = wr.shutdown().await;
}

async fn refuse_options<R, W>(rd: &mut R, wr: &mut W, message: &str) -> Step<()>
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
    if u32::from_be_bytes(b4) & FLAG_C_FIXED_NEWSTYLE == 0 {
        return Err(End::Abort);
    }
    for n in 0..REFUSE_OPTIONS {
        let (opt, _data, _place) = read_option(rd, n).await?;
        match opt {
            OPT_ABORT => {
                send(wr, &encode_option_reply(opt, REP_ACK, &[])).await?;
                return Err(End::Abort);
            }
            OPT_EXPORT_NAME => return Err(End::Abort),
            _ => {
                let reply = encode_option_reply(opt, REP_ERR_POLICY, message.as_bytes());
                send(wr, &reply).await?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn limits_are_checked() {
        assert!(Limits::default().check().is_ok());
        let ok = Limits::default();
        for bad in [
            Limits {
                connections_max: 0,
                ..ok
            },
            Limits {
                idle_timeout: Some(Duration::ZERO),
                ..ok
            },
            Limits {
                in_flight_bytes_max: 0,
                ..ok
            },
            Limits {
                in_flight_bytes_max: u64::MAX,
                ..ok
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?} accepted");
        }
        let never = Limits {
            idle_timeout: None,
            ..ok
        };
        assert!(never.check().is_ok());
    }

    #[tokio::test]
    async fn a_request_larger_than_the_budget_runs_alone() {
        let b = Arc::new(Budget::new(1000));
        let small = b.try_acquire(10).expect("free");
        assert_eq!(b.in_flight(), 10);
        // 5000 > the budget: takes all of it, so waits for `small`.
        assert!(b.try_acquire(5000).is_none());
        let big = {
            let b = b.clone();
            tokio::spawn(async move { b.acquire(5000).await })
        };
        // The waiter holds the free permits while it waits for the rest.
        while b.permits.available_permits() != 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(b.in_flight(), 10);
        drop(small);
        let big = big.await.unwrap();
        assert_eq!(b.in_flight(), 5000);
        assert_eq!(b.peak(), 5000);
        drop(big);
        assert_eq!(b.in_flight(), 0);
    }
}
