//! An in-memory [`Backend`] for tests and examples, with optional random per-request delays
//! (seeded) so that completions reorder.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::{Backend, BoxFuture, NbdError};

/// Options of a [`MemBackend`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemOptions {
    /// Refuse writes (EPERM) and advertise the export read-only.
    pub read_only: bool,
    /// Advertise `NBD_FLAG_CAN_MULTI_CONN` (true of this backend: it has no cache).
    pub multi_conn: bool,
    /// Each request first sleeps uniformly in `[0, delay_max]`.
    pub delay_max: Duration,
    /// Seed of the delay PRNG.
    pub seed: u64,
}

/// A byte vector behind a mutex. Every request first sleeps a random delay in
/// `[0, delay_max]` (if set), then acts. Out-of-range requests (which the server must never
/// forward) get EINVAL and are counted in [`MemBackend::out_of_range`].
#[derive(Clone)]
pub struct MemBackend {
    inner: Arc<Inner>,
}

struct Inner {
    data: Mutex<Vec<u8>>,
    size: u64,
    read_only: bool,
    multi_conn: bool,
    delay_max: Duration,
    rng: AtomicU64,
    requests: AtomicU64,
    out_of_range: AtomicU64,
    flushes: AtomicU64,
    fua_writes: AtomicU64,
}

impl MemBackend {
    /// A zero-filled writable export of `size_bytes` bytes, no delays.
    #[must_use]
    pub fn new(size_bytes: usize) -> MemBackend {
        MemBackend::with_options(size_bytes, MemOptions::default())
    }

    /// A zero-filled export of `size_bytes` bytes with `opts`.
    #[must_use]
    pub fn with_options(size_bytes: usize, opts: MemOptions) -> MemBackend {
        MemBackend {
            inner: Arc::new(Inner {
                data: Mutex::new(vec![0; size_bytes]),
                size: u64::try_from(size_bytes).expect("usize fits u64"),
                read_only: opts.read_only,
                multi_conn: opts.multi_conn,
                delay_max: opts.delay_max,
                rng: AtomicU64::new(opts.seed),
                requests: AtomicU64::new(0),
                out_of_range: AtomicU64::new(0),
                flushes: AtomicU64::new(0),
                fua_writes: AtomicU64::new(0),
            }),
        }
    }

    /// A copy of the contents.
    #[must_use]
    pub fn contents(&self) -> Vec<u8> {
        self.inner.data_lock().clone()
    }

    /// Requests received (all kinds).
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.inner.requests.load(Ordering::Relaxed)
    }

    /// Requests received that were empty or reached past the end (a server bug if non-zero).
    #[must_use]
    pub fn out_of_range(&self) -> u64 {
        self.inner.out_of_range.load(Ordering::Relaxed)
    }

    /// Flushes received.
    #[must_use]
    pub fn flushes(&self) -> u64 {
        self.inner.flushes.load(Ordering::Relaxed)
    }

    /// Writes, trims and write-zeroes received with FUA set.
    #[must_use]
    pub fn fua_writes(&self) -> u64 {
        self.inner.fua_writes.load(Ordering::Relaxed)
    }
}

impl Inner {
    fn data_lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.data.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// splitmix64 step; the delay for the next request.
    fn next_delay(&self) -> Duration {
        if self.delay_max.is_zero() {
            return Duration::ZERO;
        }
        let s = self.rng.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
        let mut z = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let max_ns = u64::try_from(self.delay_max.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(z % max_ns.saturating_add(1))
    }

    /// The byte range of a request, or `None` (counted) when it is empty or out of range.
    fn range(&self, offset: u64, len: u64) -> Option<std::ops::Range<usize>> {
        let end = offset
            .checked_add(len)
            .filter(|&e| len > 0 && e <= self.size);
        match end {
            Some(end) => {
                let start = usize::try_from(offset).expect("offset < size fits usize");
                let end = usize::try_from(end).expect("end <= size fits usize");
                Some(start..end)
            }
            None => {
                self.out_of_range.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    async fn start(&self, fua: bool) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if fua {
            self.fua_writes.fetch_add(1, Ordering::Relaxed);
        }
        let d = self.next_delay();
        if !d.is_zero() {
            tokio::time::sleep(d).await;
        }
    }

    fn fill(&self, offset: u64, len: u64, src: Option<&[u8]>) -> Result<(), NbdError> {
        let r = self.range(offset, len).ok_or(NbdError::Invalid)?;
        if self.read_only {
            return Err(NbdError::Perm);
        }
        let mut d = self.data_lock();
        match src {
            Some(s) => d[r].copy_from_slice(s),
            None => d[r].fill(0),
        }
        Ok(())
    }
}

impl Backend for MemBackend {
    fn size_bytes(&self) -> u64 {
        self.inner.size
    }

    fn read_only(&self) -> bool {
        self.inner.read_only
    }

    fn multi_conn(&self) -> bool {
        self.inner.multi_conn
    }

    fn read(&self, offset: u64, len: u32) -> BoxFuture<'static, Result<Vec<u8>, NbdError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            inner.start(false).await;
            let r = inner
                .range(offset, u64::from(len))
                .ok_or(NbdError::Invalid)?;
            Ok(inner.data_lock()[r].to_vec())
        })
    }

    fn write(
        &self,
        offset: u64,
        data: Vec<u8>,
        fua: bool,
    ) -> BoxFuture<'static, Result<(), NbdError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            inner.start(fua).await;
            let len = u64::try_from(data.len()).expect("usize fits u64");
            inner.fill(offset, len, Some(&data))
        })
    }

    fn flush(&self) -> BoxFuture<'static, Result<(), NbdError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            inner.start(false).await;
            inner.flushes.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
    }

    fn trim(&self, offset: u64, len: u32, fua: bool) -> BoxFuture<'static, Result<(), NbdError>> {
        // Trimmed bytes read back as zeroes here (the protocol allows any contents).
        self.write_zeroes(offset, len, fua)
    }

    fn write_zeroes(
        &self,
        offset: u64,
        len: u32,
        fua: bool,
    ) -> BoxFuture<'static, Result<(), NbdError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            inner.start(fua).await;
            inner.fill(offset, u64::from(len), None)
        })
    }
}
