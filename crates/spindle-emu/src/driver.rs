//! The real-time driver: the unchanged sans-I/O array core driven by the wall clock.
//!
//! One thread owns the [`Engine`] and the [`BackingStore`]. Simulated time is the wall
//! time since the driver started, in integer nanoseconds. A host request is handed to the
//! core the moment the thread receives it; each disk operation's completion is fed back at
//! its simulated instant (the thread sleeps to that absolute deadline, spinning for the
//! last ~150 µs); the host is answered when the core answers, and the lateness — actual
//! minus simulated completion — goes into an HDR histogram. The bytes follow the core's
//! data moves: every copy, propagation and read is performed on the backing files in the
//! order the core started them, so a read returns the bytes of the copy the core chose.
//!
//! Durability: writes reach the backing files (the OS page cache) when their disk operation
//! starts; FLUSH and FUA writes are answered after `fsync` of every disk file, done by a
//! second thread so the clock thread never blocks on it.

use crate::backing::{BackingStore, StoreError};
use hdrhistogram::Histogram;
use spindle::array::{Action, Bytes, DataMove, Engine, Event, HostRequest};
use spindle::{Nanos, Op};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// A host command, in bytes.
#[derive(Debug)]
pub enum Request {
    Read {
        offset: u64,
        len: u32,
    },
    Write {
        offset: u64,
        data: Vec<u8>,
        fua: bool,
    },
    WriteZeroes {
        offset: u64,
        len: u32,
        fua: bool,
    },
    Trim {
        offset: u64,
        len: u32,
    },
    Flush,
}

/// Why a command failed (each maps to an NBD error).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EmuError {
    #[error("{0}")]
    Invalid(String),
    #[error("i/o error: {0}")]
    Io(String),
    #[error("the emulator is shutting down")]
    Shutdown,
}

/// A command's answer: the bytes of a read, empty otherwise.
pub type Reply = Result<Vec<u8>, EmuError>;

/// Lateness and counts so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub answered: u64,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub lateness_p50_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_p999_us: f64,
    pub lateness_max_us: f64,
    /// Seconds since the driver started.
    pub elapsed_s: f64,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} requests ({} reads, {} writes, {} flushes) in {:.1} s, {:.0} IOPS; lateness \
             p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs",
            self.answered,
            self.reads,
            self.writes,
            self.flushes,
            self.elapsed_s,
            (self.reads + self.writes) as f64 / self.elapsed_s.max(1e-9),
            self.lateness_p50_us,
            self.lateness_p99_us,
            self.lateness_p999_us,
            self.lateness_max_us
        )
    }
}

enum Cmd {
    Io(Request, oneshot::Sender<Reply>),
    Stats(oneshot::Sender<Stats>),
}

/// A running emulated array. Cloneable handles ([`Emulator::handle`]) submit commands.
pub struct Emulator {
    tx: Option<Sender<Cmd>>,
    thread: Option<JoinHandle<Result<Stats, StoreError>>>,
    size_bytes: u64,
    sector_bytes: u32,
}

/// Submits commands to a running [`Emulator`]; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Handle {
    tx: Sender<Cmd>,
    pub size_bytes: u64,
    pub sector_bytes: u32,
}

impl Handle {
    /// Submits `req`; the answer arrives on the returned channel.
    pub fn submit(&self, req: Request) -> oneshot::Receiver<Reply> {
        let (tx, rx) = oneshot::channel();
        if let Err(mpsc::SendError(Cmd::Io(_, reply))) = self.tx.send(Cmd::Io(req, tx)) {
            let _ = reply.send(Err(EmuError::Shutdown));
        }
        rx
    }

    /// Submits `req` and waits for its answer (not from inside an async runtime).
    pub fn call(&self, req: Request) -> Reply {
        self.submit(req)
            .blocking_recv()
            .unwrap_or(Err(EmuError::Shutdown))
    }

    /// The statistics so far (not from inside an async runtime: use [`Handle::request_stats`]).
    pub fn stats(&self) -> Option<Stats> {
        self.request_stats()?.blocking_recv().ok()
    }

    /// Asks for the statistics so far; they arrive on the returned channel.
    pub fn request_stats(&self) -> Option<oneshot::Receiver<Stats>> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(Cmd::Stats(tx)).ok()?;
        Some(rx)
    }
}

impl Emulator {
    /// Starts the clock thread on `engine` over `store`. Fails if the engine cannot
    /// describe the bytes of its operations.
    pub fn start(mut engine: Box<dyn Engine>, store: BackingStore) -> Result<Emulator, String> {
        if !engine.enable_data_moves() {
            return Err(format!(
                "the emulator cannot serve this layout yet ({}): its controller does not \
                 describe the bytes of its disk operations",
                store.shape().layout
            ));
        }
        // Not yet: persisting an NVRAM image and recovering from it (the EW-Array).
        if engine.poll_nvram().is_some() {
            return Err(format!(
                "the emulator cannot serve this layout yet ({}): its controller keeps an \
                 NVRAM image, which the emulator does not persist or recover from yet",
                store.shape().layout
            ));
        }
        let sector_bytes = engine.sector_bytes();
        let size_bytes = engine.capacity_sectors() * u64::from(sector_bytes);
        let (tx, rx) = mpsc::channel();
        let syncer = Syncer::start(store.sync_handles().map_err(|e| e.to_string())?);
        let thread = std::thread::Builder::new()
            .name("spindle-clock".into())
            .spawn(move || Driver::new(engine, store, syncer).run(rx))
            .map_err(|e| format!("cannot start the clock thread: {e}"))?;
        Ok(Emulator {
            tx: Some(tx),
            thread: Some(thread),
            size_bytes,
            sector_bytes,
        })
    }

    pub fn handle(&self) -> Handle {
        Handle {
            tx: self.tx.clone().expect("running"),
            size_bytes: self.size_bytes,
            sector_bytes: self.sector_bytes,
        }
    }

    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Stops accepting commands once every handle is dropped, lets the array finish all
    /// its work (answers and background propagation), makes the files durable and returns
    /// the final statistics.
    pub fn stop(mut self) -> Result<Stats, String> {
        self.tx = None;
        let t = self.thread.take().expect("running");
        t.join()
            .map_err(|_| "the clock thread panicked".to_string())?
            .map_err(|e| e.to_string())
    }
}

/// Makes the disk files durable, off the clock thread, then answers.
struct Syncer {
    tx: Sender<(oneshot::Sender<Reply>, Reply)>,
    thread: JoinHandle<()>,
}

impl Syncer {
    fn start(files: Vec<(PathBuf, File)>) -> Syncer {
        let (tx, rx) = mpsc::channel::<(oneshot::Sender<Reply>, Reply)>();
        let thread = std::thread::spawn(move || {
            while let Ok((reply, answer)) = rx.recv() {
                let synced = files.iter().try_for_each(|(path, f)| {
                    f.sync_data()
                        .map_err(|e| EmuError::Io(format!("{}: {e}", path.display())))
                });
                let _ = reply.send(synced.and(answer));
            }
        });
        Syncer { tx, thread }
    }

    fn sync_then_answer(&self, reply: oneshot::Sender<Reply>, answer: Reply) {
        if let Err(mpsc::SendError((reply, _))) = self.tx.send((reply, answer)) {
            let _ = reply.send(Err(EmuError::Shutdown));
        }
    }

    fn stop(self) {
        drop(self.tx);
        let _ = self.thread.join();
    }
}

struct Pending {
    req: HostRequest,
    /// A write's bytes, or a read's buffer being filled.
    data: Vec<u8>,
    fua: bool,
    failed: Option<EmuError>,
    reply: oneshot::Sender<Reply>,
}

struct Driver {
    engine: Box<dyn Engine>,
    store: BackingStore,
    syncer: Syncer,
    start: Instant,
    heap: BinaryHeap<Reverse<(Nanos, usize)>>,
    pending: HashMap<u64, Pending>,
    next_id: u64,
    sector_bytes: u64,
    lateness_ns: Histogram<u64>,
    stats: Stats,
}

/// Sleeping gives way to spinning this long before a deadline.
const SPIN_NS: u64 = 150_000;

impl Driver {
    fn new(engine: Box<dyn Engine>, store: BackingStore, syncer: Syncer) -> Driver {
        let sector_bytes = u64::from(engine.sector_bytes());
        Driver {
            engine,
            store,
            syncer,
            start: Instant::now(),
            heap: BinaryHeap::new(),
            pending: HashMap::new(),
            next_id: 0,
            sector_bytes,
            lateness_ns: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("valid histogram bounds"),
            stats: Stats::default(),
        }
    }

    fn now(&self) -> Nanos {
        Nanos(u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn run(mut self, rx: Receiver<Cmd>) -> Result<Stats, StoreError> {
        let mut open = true;
        loop {
            self.fire_due(self.now());
            if !open && self.heap.is_empty() && self.pending.is_empty() {
                break;
            }
            match self.wait(&rx, &mut open) {
                Some(Cmd::Io(req, reply)) => self.accept(req, reply),
                Some(Cmd::Stats(tx)) => {
                    let _ = tx.send(self.snapshot());
                }
                None => {}
            }
        }
        let stats = self.snapshot();
        self.syncer.stop();
        self.store.close_clean()?;
        Ok(stats)
    }

    /// Feeds every disk completion whose simulated instant has passed, each at its own
    /// instant (the core sees exact simulated times whatever the wall clock did).
    fn fire_due(&mut self, now: Nanos) {
        while let Some(&Reverse((t, disk))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            self.engine.handle(t, Event::DiskDone { disk });
            self.drain();
        }
    }

    /// Waits for a command until the next deadline (forever if the disks are idle).
    fn wait(&mut self, rx: &Receiver<Cmd>, open: &mut bool) -> Option<Cmd> {
        if !*open {
            if let Some(&Reverse((t, _))) = self.heap.peek() {
                self.sleep_until(t);
            }
            return None;
        }
        let Some(&Reverse((deadline, _))) = self.heap.peek() else {
            return match rx.recv() {
                Ok(c) => Some(c),
                Err(_) => {
                    *open = false;
                    None
                }
            };
        };
        loop {
            let now = self.now();
            if now >= deadline {
                return None;
            }
            let left = deadline.0 - now.0;
            let got = if left > SPIN_NS {
                match rx.recv_timeout(Duration::from_nanos(left - SPIN_NS)) {
                    Ok(c) => Ok(c),
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => Err(()),
                }
            } else {
                match rx.try_recv() {
                    Ok(c) => Ok(c),
                    Err(TryRecvError::Empty) => {
                        std::hint::spin_loop();
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => Err(()),
                }
            };
            return match got {
                Ok(c) => Some(c),
                Err(()) => {
                    *open = false;
                    None
                }
            };
        }
    }

    fn sleep_until(&self, t: Nanos) {
        loop {
            let now = self.now();
            if now >= t {
                return;
            }
            let left = t.0 - now.0;
            if left > SPIN_NS {
                std::thread::sleep(Duration::from_nanos(left - SPIN_NS));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    fn accept(&mut self, req: Request, reply: oneshot::Sender<Reply>) {
        let (op, offset, data, len, fua) = match req {
            Request::Flush => {
                self.stats.flushes += 1;
                self.syncer.sync_then_answer(reply, Ok(Vec::new()));
                return;
            }
            // Trimming is advisory (NBD): the blocks keep their bytes.
            Request::Trim { .. } => {
                let _ = reply.send(Ok(Vec::new()));
                return;
            }
            Request::Read { offset, len } => (Op::Read, offset, vec![0; len as usize], len, false),
            Request::Write { offset, data, fua } => {
                let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
                (Op::Write, offset, data, len, fua)
            }
            Request::WriteZeroes { offset, len, fua } => {
                (Op::Write, offset, vec![0; len as usize], len, fua)
            }
        };
        let sb = self.sector_bytes;
        let capacity = self.engine.capacity_sectors() * sb;
        let end = offset.checked_add(u64::from(len));
        if offset % sb != 0 || u64::from(len) % sb != 0 {
            let _ = reply.send(Err(EmuError::Invalid(format!(
                "{offset}+{len}: not aligned to the {sb}-byte sector"
            ))));
            return;
        }
        if !matches!(end, Some(e) if e <= capacity) {
            let _ = reply.send(Err(EmuError::Invalid(format!(
                "{offset}+{len}: beyond the array's {capacity} bytes"
            ))));
            return;
        }
        if len == 0 {
            let _ = reply.send(Ok(Vec::new()));
            return;
        }
        // Completions due before the arrival first: the core's time never goes back.
        let now = self.now();
        self.fire_due(now);
        let req = HostRequest {
            id: self.next_id,
            op,
            lba: offset / sb,
            sectors: (u64::from(len) / sb) as u32,
            arrival: now,
        };
        self.next_id += 1;
        self.pending.insert(
            req.id,
            Pending {
                req,
                data,
                fua,
                failed: None,
                reply,
            },
        );
        self.engine.handle(now, Event::Host(req));
        self.drain();
    }

    /// Performs the core's data moves and acts on its actions until it has none.
    fn drain(&mut self) {
        loop {
            while let Some(mv) = self.engine.poll_data() {
                self.perform(mv);
            }
            match self.engine.poll_action() {
                Some(Action::DiskBusy { disk, until }) => self.heap.push(Reverse((until, disk))),
                Some(Action::Complete(c)) => self.answer(c.id, c.done),
                None => {
                    if let Some(mv) = self.engine.poll_data() {
                        self.perform(mv);
                        continue;
                    }
                    return;
                }
            }
        }
    }

    fn perform(&mut self, mv: DataMove) {
        let sb = self.sector_bytes as usize;
        let n = mv.sectors as usize * sb;
        let result = match (mv.op, &mv.bytes) {
            (Op::Read, &Bytes::Host(id)) => {
                let p = self
                    .pending
                    .get_mut(&id)
                    .expect("a read's host request is pending");
                let at = (mv.lba - p.req.lba) as usize * sb;
                self.store
                    .read_runs(mv.disk, &mv.copies[0], &mut p.data[at..at + n])
                    .map_err(|e| (Some(id), e))
            }
            (Op::Write, &Bytes::Host(id)) => {
                let p = &self.pending[&id];
                let at = (mv.lba - p.req.lba) as usize * sb;
                let bytes = &p.data[at..at + n];
                mv.copies
                    .iter()
                    .try_for_each(|c| self.store.write_runs(mv.disk, c, bytes))
                    .map_err(|e| (Some(id), e))
            }
            (Op::Write, Bytes::Copy { disk: src, runs }) => {
                let mut bytes = vec![0; n];
                self.store
                    .read_runs(*src, runs, &mut bytes)
                    .and_then(|()| {
                        mv.copies
                            .iter()
                            .try_for_each(|c| self.store.write_runs(mv.disk, c, &bytes))
                    })
                    .map_err(|e| (None, e))
            }
            (Op::Write, Bytes::Meta(bytes)) => mv
                .copies
                .iter()
                .try_for_each(|c| self.store.write_runs(mv.disk, c, bytes))
                .map_err(|e| (None, e)),
            (Op::Read, _) => unreachable!("reads are for a host request"),
        };
        if let Err((id, e)) = result {
            eprintln!("spindle serve: {e}");
            if let Some(p) = id.and_then(|id| self.pending.get_mut(&id)) {
                p.failed = Some(EmuError::Io(e.to_string()));
            }
        }
    }

    fn answer(&mut self, id: u64, done: Nanos) {
        let p = self
            .pending
            .remove(&id)
            .expect("an answered request is pending");
        let late = self.now().0.saturating_sub(done.0).max(1);
        self.lateness_ns.saturating_record(late);
        self.stats.answered += 1;
        match p.req.op {
            Op::Read => self.stats.reads += 1,
            Op::Write => self.stats.writes += 1,
        }
        let answer = match p.failed {
            Some(e) => Err(e),
            None if p.req.op == Op::Read => Ok(p.data),
            None => Ok(Vec::new()),
        };
        if p.fua && answer.is_ok() {
            self.syncer.sync_then_answer(p.reply, answer);
        } else {
            let _ = p.reply.send(answer);
        }
    }

    fn snapshot(&self) -> Stats {
        let h = &self.lateness_ns;
        let us = |ns: u64| ns as f64 / 1e3;
        Stats {
            lateness_p50_us: us(h.value_at_quantile(0.5)),
            lateness_p99_us: us(h.value_at_quantile(0.99)),
            lateness_p999_us: us(h.value_at_quantile(0.999)),
            lateness_max_us: us(h.max()),
            elapsed_s: self.start.elapsed().as_secs_f64(),
            ..self.stats.clone()
        }
    }
}
