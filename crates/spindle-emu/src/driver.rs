//! The real-time driver: the unchanged sans-I/O array core driven by the wall clock.
//!
//! The clock thread owns the [`Engine`]. Simulated time is the wall time since the driver
//! started, in integer nanoseconds. A host request is handed to the core the moment the
//! thread receives it; each disk operation's completion is fed back at its simulated
//! instant (the thread sleeps to that absolute deadline with a 1 ns timer slack, spinning
//! for the last 200 µs). The core's data moves (every copy, propagation and read, in the
//! order the core started them, so a read returns the bytes of the copy the core chose) go
//! to the I/O thread (`io.rs`). NVRAM writes (a memory-mapped image) and answers are made by
//! the clock thread itself when what they depend on is performed, else queued behind it
//! (the rules are in `io.rs`); the lateness — answer sent minus simulated completion — goes
//! into an HDR histogram.
//!
//! Durability: writes reach the backing files (the OS page cache) when their disk operation
//! starts; the controller's NVRAM writes reach `nvram.img` before any answer that follows
//! them; FLUSH and FUA writes are answered after `fsync` of every disk file and the NVRAM
//! image, done by a third thread. Before serving, [`Emulator::start`] recovers from what a
//! crash left: the controller rebuilds its state from the NVRAM image and the disks, and
//! its repair copies are made durable first.

use crate::backing::{BackingStore, StoreError};
use crate::io::{Answer, IoThread, Job};
use crate::record::{Entry, Recorded, Recorder};
use spindle::engine::{xor_pieces, Action, Bytes, DataMove, Engine, Event, HostRequest, Source};
use spindle::{Nanos, Op};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The heap's key for a controller's timer ([`Action::Wake`]) instead of a disk.
const WAKE: usize = usize::MAX;
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
    /// Host requests in the array (accepted, not yet answered by the core), averaged from
    /// the first request to the last answer (to now while requests are in the array): the
    /// queue depth the array really saw, whatever the client asked for (idle time between
    /// requests counts as zero).
    pub in_array_mean: f64,
    pub lateness_mean_us: f64,
    pub lateness_p50_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_p999_us: f64,
    pub lateness_max_us: f64,
    /// Seconds since the driver started.
    pub elapsed_s: f64,
    /// What `--record` wrote (final statistics only).
    pub recorded: Option<Recorded>,
    /// The NBD server's counters (final statistics of `spindle serve` only; not in the
    /// `Display` line, which `ServerStats`' own `Display` follows).
    pub nbd: Option<crate::nbd::ServerStats>,
    /// A paged disk's bad tenants, thin pages and pages cleaned so far (docs/paged.md).
    pub paged: Option<spindle::engine::PagedStatus>,
    /// Latent sector errors met, repaired and lost so far (docs/failures.md).
    pub latent: Option<spindle::engine::LatentCounters>,
    /// Real disks (`serve --disks`): throughput and each disk's head tracking; the
    /// lateness fields do not apply then (a real disk answers when it answers).
    pub real: Option<crate::real::RealStats>,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(r) = &self.real {
            return write!(
                f,
                "{} requests ({} reads, {} writes, {} flushes) in {:.1} s; {r}",
                self.answered, self.reads, self.writes, self.flushes, self.elapsed_s
            );
        }
        write!(
            f,
            "{} requests ({} reads, {} writes, {} flushes) in {:.1} s, {:.0} IOPS; lateness \
             mean {:.1} µs, p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs; {:.1} \
             requests in the array on average",
            self.answered,
            self.reads,
            self.writes,
            self.flushes,
            self.elapsed_s,
            (self.reads + self.writes) as f64 / self.elapsed_s.max(1e-9),
            self.lateness_mean_us,
            self.lateness_p50_us,
            self.lateness_p99_us,
            self.lateness_p999_us,
            self.lateness_max_us,
            self.in_array_mean
        )?;
        if let Some(l) = &self.latent {
            write!(
                f,
                "; latent sector errors: {} met, {} repaired, {} superseded, {} unrecoverable",
                l.errors, l.repairs, l.superseded, l.unrecoverable
            )?;
        }
        if let Some(p) = &self.paged {
            write!(
                f,
                "; paged: {} bad tenants, {} pages short of replicas, {} cleaned",
                p.tenants, p.thin, p.cleaned
            )?;
        }
        Ok(())
    }
}

pub(crate) enum Cmd {
    Io(Request, oneshot::Sender<Reply>),
    Stats(oneshot::Sender<Stats>),
    /// Stop accepting host commands (the real driver's stop; the emulator's is every
    /// handle dropped).
    Close,
}

/// What recovery found and did before the emulator served.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Whether the previous run over the data directory did not stop cleanly.
    pub unclean: bool,
    /// Repair copies performed (copies of the newest acknowledged bytes over stale ones).
    pub repairs: usize,
    pub repaired_sectors: u64,
    pub elapsed: Duration,
}

impl std::fmt::Display for Recovered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "recovered from an unclean stop: {} repair copies ({} sectors) in {:.1} ms",
            self.repairs,
            self.repaired_sectors,
            self.elapsed.as_secs_f64() * 1e3
        )
    }
}

/// A running emulated array. Cloneable handles ([`Emulator::handle`]) submit commands.
pub struct Emulator {
    tx: Option<Sender<Cmd>>,
    thread: Option<JoinHandle<Result<Stats, StoreError>>>,
    size_bytes: u64,
    sector_bytes: u32,
    align_bytes: u32,
    recovered: Recovered,
}

/// Submits commands to a running [`Emulator`]; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Handle {
    tx: Sender<Cmd>,
    pub size_bytes: u64,
    pub sector_bytes: u32,
    /// Requests are multiples of this, at offsets aligned to it (`Engine::io_align_bytes`).
    pub align_bytes: u32,
}

impl Handle {
    pub(crate) fn new(
        tx: Sender<Cmd>,
        size_bytes: u64,
        sector_bytes: u32,
        align_bytes: u32,
    ) -> Handle {
        Handle {
            tx,
            size_bytes,
            sector_bytes,
            align_bytes,
        }
    }

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

/// How the clock thread keeps time.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ClockOptions {
    /// Run the clock and I/O threads under `SCHED_FIFO`, so they run on time however busy
    /// the other threads are (needs CAP_SYS_NICE; without it they stay normal and say so).
    pub realtime: bool,
}

impl Emulator {
    /// [`Emulator::start_with`] with a normal-priority clock thread.
    pub fn start(engine: Box<dyn Engine>, store: BackingStore) -> Result<Emulator, String> {
        Emulator::start_with(engine, store, ClockOptions::default())
    }

    /// Recovers what the store's last run left (nothing after a clean stop), then starts
    /// the clock thread on `engine` over `store`. Fails if the engine cannot describe the
    /// bytes of its operations or cannot recover.
    pub fn start_with(
        engine: Box<dyn Engine>,
        store: BackingStore,
        clock: ClockOptions,
    ) -> Result<Emulator, String> {
        Emulator::start_recording(engine, store, clock, None)
    }

    /// [`Emulator::start_with`], recording every host request it accepts to `record`
    /// (`record.rs`); its arrival times are the clock's, from the same origin.
    pub fn start_recording(
        mut engine: Box<dyn Engine>,
        mut store: BackingStore,
        clock: ClockOptions,
        record: Option<(crate::record::RecordFile, Vec<String>)>,
    ) -> Result<Emulator, String> {
        if !engine.enable_data_moves() {
            return Err(format!(
                "the emulator cannot serve this layout yet ({}): its controller does not \
                 describe the bytes of its disk operations",
                store.shape().layout
            ));
        }
        let recovered = recover(engine.as_mut(), &mut store).map_err(|e| e.to_string())?;
        let sector_bytes = engine.sector_bytes();
        let align_bytes = engine.io_align_bytes();
        let size_bytes = engine.capacity_sectors() * u64::from(sector_bytes);
        let recorder = match record {
            Some((file, header)) => Some(Recorder::start(file, &header, sector_bytes)?),
            None => None,
        };
        let (tx, rx) = mpsc::channel();
        let start = Instant::now();
        let io = IoThread::start(store, start, clock.realtime)?;
        let thread = std::thread::Builder::new()
            .name("spindle-clock".into())
            .spawn(move || {
                tight_timer_slack();
                if clock.realtime {
                    become_realtime("clock", 50);
                }
                Driver::new(engine, io, start, spin_ns(), recorder).run(rx)
            })
            .map_err(|e| format!("cannot start the clock thread: {e}"))?;
        Ok(Emulator {
            tx: Some(tx),
            thread: Some(thread),
            size_bytes,
            sector_bytes,
            align_bytes,
            recovered,
        })
    }

    /// What recovery did before serving.
    pub fn recovered(&self) -> &Recovered {
        &self.recovered
    }

    pub fn handle(&self) -> Handle {
        Handle {
            tx: self.tx.clone().expect("running"),
            size_bytes: self.size_bytes,
            sector_bytes: self.sector_bytes,
            align_bytes: self.align_bytes,
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

/// The data contract's crash recovery (`spindle::engine::data`), on every start but the
/// first (an empty image: a new directory): the controller rebuilds its state from the
/// NVRAM image and the disks — the EW-Array its map, from the map log — and its repair
/// copies are performed. Then whatever the controller writes before its first event (a new
/// EW-Array formats its map log region) is performed, the disks are made durable, and the
/// image is replaced by the one the controller needs from now on.
fn recover(engine: &mut dyn Engine, store: &mut BackingStore) -> Result<Recovered, StoreError> {
    let t0 = Instant::now();
    let image = store.read_nvram()?;
    let repairs = if image.is_empty() {
        Vec::new()
    } else {
        let mut read = |disk: usize, runs: &[spindle::drive::Run], buf: &mut [u8]| {
            store.read_runs(disk, runs, buf).map_err(|e| e.to_string())
        };
        engine
            .recover(&image, &mut read)
            .map_err(|e| StoreError::Mismatch {
                path: store.nvram_path(),
                msg: e.to_string(),
            })?
    };
    let mut repaired_sectors = 0;
    for mv in &repairs {
        write_offline(store, &image, mv)?;
        repaired_sectors += u64::from(mv.sectors) * mv.copies.len() as u64;
    }
    let mut writes = Vec::new();
    while let Some(w) = engine.poll_nvram() {
        writes.push(w);
    }
    while let Some(mv) = engine.poll_data() {
        write_offline(store, &image, &mv)?;
    }
    while let Some(w) = engine.poll_nvram() {
        writes.push(w);
    }
    store.replace_nvram(writes)?;
    Ok(Recovered {
        unclean: store.was_unclean(),
        repairs: repairs.len(),
        repaired_sectors,
        elapsed: t0.elapsed(),
    })
}

/// Performs a write the controller asks for while no host request is live (recovery's
/// repairs, its moves before the first event), with `image` the NVRAM image it recovered
/// from.
fn write_offline(store: &mut BackingStore, image: &[u8], mv: &DataMove) -> Result<(), StoreError> {
    let sb = store.shape().sector_bytes as usize;
    let n = mv.sectors as usize * sb;
    let from_image = |offset: u64, buf: &mut [u8]| {
        buf.fill(0);
        let start = (offset as usize).min(image.len());
        let end = (offset as usize + buf.len()).min(image.len());
        buf[..end - start].copy_from_slice(&image[start..end]);
    };
    let bytes = match &mv.bytes {
        Bytes::Copy { disk, runs } => return store.copy_runs((*disk, runs), mv.disk, &mv.copies),
        Bytes::Meta(bytes) => bytes.clone(),
        Bytes::Nvram(offset) => {
            let mut b = vec![0; n];
            from_image(*offset, &mut b);
            b
        }
        Bytes::Xor(pieces) => {
            let mut failed = None;
            let r = xor_pieces(pieces, mv.sectors, sb as u32, &mut |from, buf| match from {
                Source::Disk { disk, runs } => store.read_runs(*disk, runs, buf).map_err(|e| {
                    let m = e.to_string();
                    failed = Some(e);
                    m
                }),
                Source::Nvram(offset) => {
                    from_image(*offset, buf);
                    Ok(())
                }
                Source::Host { id, .. } => Err(format!("no host request {id} while recovering")),
            });
            match (r, failed) {
                (Ok(b), _) => b,
                (Err(_), Some(e)) => return Err(e),
                (Err(msg), None) => {
                    return Err(StoreError::Mismatch {
                        path: store.nvram_path(),
                        msg,
                    })
                }
            }
        }
        Bytes::Host(_) | Bytes::HostXor { .. } => {
            return Err(StoreError::Mismatch {
                path: store.nvram_path(),
                msg: format!("recovery asked for a move of host bytes: {mv:?}"),
            })
        }
    };
    for c in &mv.copies {
        store.write_runs(mv.disk, c, &bytes)?;
    }
    Ok(())
}

/// A host command as an array takes it.
pub(crate) enum Checked {
    Flush,
    /// A read (`buf` zeroed, to be filled) or a write of `buf` at byte `offset`; TRIM and
    /// WRITE_ZEROES are writes of zeroes.
    Io {
        op: Op,
        offset: u64,
        buf: Vec<u8>,
        fua: bool,
    },
}

/// `req` checked against `engine`'s array: aligned to its blocks, within its capacity, and
/// under 4 GiB (NBD's lengths are 32-bit). A command refused, or of no bytes, is answered
/// here (`None`); otherwise it is returned with its reply channel.
pub(crate) fn checked(
    req: Request,
    reply: oneshot::Sender<Reply>,
    engine: &dyn Engine,
) -> Option<(Checked, oneshot::Sender<Reply>)> {
    let (op, offset, buf, fua) = match req {
        Request::Flush => return Some((Checked::Flush, reply)),
        // TRIM zeroes, as a timed write: NBD makes it advisory, but nbdfuse turns a hole
        // punched in its file into TRIM, and a punched hole must read back as zeroes.
        Request::Trim { offset, len } => (Op::Write, offset, vec![0; len as usize], false),
        Request::Read { offset, len } => (Op::Read, offset, vec![0; len as usize], false),
        Request::Write { offset, data, fua } => (Op::Write, offset, data, fua),
        Request::WriteZeroes { offset, len, fua } => {
            (Op::Write, offset, vec![0; len as usize], fua)
        }
    };
    let len = buf.len() as u64;
    let align = u64::from(engine.io_align_bytes());
    let capacity = engine.capacity_sectors() * u64::from(engine.sector_bytes());
    let refused = if offset % align != 0 || len % align != 0 {
        Some(format!(
            "{offset}+{len}: not aligned to the array's {align}-byte blocks"
        ))
    } else if !matches!(offset.checked_add(len), Some(e) if e <= capacity) {
        Some(format!(
            "{offset}+{len}: beyond the array's {capacity} bytes"
        ))
    } else if u32::try_from(len).is_err() {
        Some(format!("{offset}+{len}: over 4 GiB"))
    } else {
        None
    };
    if let Some(msg) = refused {
        let _ = reply.send(Err(EmuError::Invalid(msg)));
        return None;
    }
    if len == 0 {
        let _ = reply.send(Ok(Vec::new()));
        return None;
    }
    let io = Checked::Io {
        op,
        offset,
        buf,
        fua,
    };
    Some((io, reply))
}

/// A host request the core is working on, as the clock thread keeps it.
struct Pending {
    op: Op,
    fua: bool,
    reply: oneshot::Sender<Reply>,
}

struct Driver {
    engine: Box<dyn Engine>,
    io: IoThread,
    start: Instant,
    heap: BinaryHeap<Reverse<(Nanos, usize)>>,
    pending: HashMap<u64, Pending>,
    next_id: u64,
    sector_bytes: u64,
    spin_ns: u64,
    /// ∫ pending.len() dt, in request·ns, from the first request to `counted_to`.
    in_array_ns: u128,
    first_request: Option<Nanos>,
    counted_to: Nanos,
    /// `--record`: every request accepted, at its arrival.
    recorder: Option<Recorder>,
    /// A failed disk: marked failed in the store when it fails, its spare's file emptied
    /// when the rebuild starts, and the rebuild marked finished when it ends (what has been
    /// done of the three).
    spare: (bool, bool, bool),
}

/// Sleeping gives way to spinning this long before a deadline. With a 1 ns timer slack a
/// sleep still overshoots by the wake-up from idle: measured on this project's 2-core
/// virtual machine, p50 40 µs, p99 50–90 µs, p99.9 130–270 µs, normal or `SCHED_FIFO`.
/// Overridable with `SPINDLE_SPIN_US` (to measure the trade-off: a longer spin costs CPU).
const SPIN_NS: u64 = 200_000;

fn spin_ns() -> u64 {
    let Ok(v) = std::env::var("SPINDLE_SPIN_US") else {
        return SPIN_NS;
    };
    match v.parse::<u64>() {
        Ok(us) if us <= 10_000 => us * 1000,
        _ => {
            eprintln!(
                "spindle serve: SPINDLE_SPIN_US={v:?} is not a whole number of microseconds \
                 up to 10000; spinning the default {} µs",
                SPIN_NS / 1000
            );
            SPIN_NS
        }
    }
}

/// Sets the calling thread's timer slack to 1 ns (the default 50 µs would be added to every
/// sleep); needs no privilege.
fn tight_timer_slack() {
    // SAFETY: a plain system call on the calling thread with valid arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Puts the calling thread (the `what` thread) under `SCHED_FIFO` at `priority`; says on
/// stderr why not if it cannot (the thread then runs at normal priority).
pub(crate) fn become_realtime(what: &str, priority: i32) {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: a plain system call on the calling thread; `param` outlives the call.
    let fifo = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if fifo != 0 {
        eprintln!(
            "spindle: --realtime: cannot put the {what} thread under SCHED_FIFO ({}); \
             it runs at normal priority",
            std::io::Error::last_os_error()
        );
    }
}

impl Driver {
    fn new(
        engine: Box<dyn Engine>,
        io: IoThread,
        start: Instant,
        spin_ns: u64,
        recorder: Option<Recorder>,
    ) -> Driver {
        let sector_bytes = u64::from(engine.sector_bytes());
        Driver {
            engine,
            io,
            start,
            heap: BinaryHeap::new(),
            pending: HashMap::new(),
            next_id: 0,
            sector_bytes,
            spin_ns,
            in_array_ns: 0,
            first_request: None,
            counted_to: Nanos::ZERO,
            recorder,
            spare: (false, false, false),
        }
    }

    /// Adds the requests in the array since the last change, before it changes.
    fn count_in_array(&mut self, now: Nanos) {
        let dt = now.0.saturating_sub(self.counted_to.0);
        self.in_array_ns += u128::from(dt) * self.pending.len() as u128;
        self.counted_to = self.counted_to.max(now);
    }

    /// From the first request to now, or to the last answer if the array is empty: the
    /// idle time after a client's run does not dilute it.
    fn in_array_mean(&mut self) -> f64 {
        if !self.pending.is_empty() {
            self.count_in_array(self.now());
        }
        let from = self.first_request.unwrap_or(self.counted_to);
        self.in_array_ns as f64 / self.counted_to.0.saturating_sub(from.0).max(1) as f64
    }

    /// Asks the I/O thread for the statistics, with what only this thread knows.
    fn send_stats(&mut self, tx: oneshot::Sender<Stats>) {
        let in_array_mean = self.in_array_mean();
        let paged = self.engine.paged();
        let latent = self.engine.latent();
        self.io.send(Job::Stats {
            tx,
            in_array_mean,
            paged,
            latent,
        });
    }

    fn now(&self) -> Nanos {
        Nanos(u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn run(mut self, rx: Receiver<Cmd>) -> Result<Stats, StoreError> {
        let mut open = true;
        loop {
            self.fire_due(self.now());
            if !open && self.heap.is_empty() && self.pending.is_empty() {
                let (tx, _) = oneshot::channel();
                self.send_stats(tx);
                break;
            }
            match self.wait(&rx, &mut open) {
                Some(Cmd::Io(req, reply)) => self.accept(req, reply),
                Some(Cmd::Stats(tx)) => self.send_stats(tx),
                Some(Cmd::Close) | None => {}
            }
        }
        let recorded = self.recorder.take().map(Recorder::finish);
        let mut stats = self.io.stop()?;
        stats.recorded = recorded;
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
            if disk == WAKE {
                self.engine.handle(t, Event::Wake);
            } else {
                self.io.completed(disk);
                self.engine.handle(t, Event::DiskDone { disk });
            }
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
            let got = if left > self.spin_ns {
                match rx.recv_timeout(Duration::from_nanos(left - self.spin_ns)) {
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
            if left > self.spin_ns {
                std::thread::sleep(Duration::from_nanos(left - self.spin_ns));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    fn accept(&mut self, req: Request, reply: oneshot::Sender<Reply>) {
        let Some((checked, reply)) = checked(req, reply, self.engine.as_ref()) else {
            return;
        };
        let (op, offset, data, fua) = match checked {
            Checked::Io {
                op,
                offset,
                buf,
                fua,
            } => (op, offset, buf, fua),
            Checked::Flush => {
                let arrival = self.now();
                self.io.flush(reply);
                if let Some(r) = &mut self.recorder {
                    r.record(Entry::Flush { arrival });
                }
                return;
            }
        };
        let sb = self.sector_bytes;
        let len = data.len() as u32;
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
        self.count_in_array(now);
        self.first_request.get_or_insert(now);
        self.pending.insert(req.id, Pending { op, fua, reply });
        self.io.send(Job::Host {
            id: req.id,
            lba: req.lba,
            data,
            track: op == Op::Read && self.engine.latent().is_some(),
        });
        self.engine.handle(now, Event::Host(req));
        self.drain();
        // After the core has the request: recording never delays its start.
        if let Some(r) = &mut self.recorder {
            r.record(Entry::Io {
                arrival: now,
                op,
                offset,
                len,
            });
        }
    }

    /// A failed disk: marked failed when it fails (before any move after the failure,
    /// handed over next), its spare emptied when the core starts the rebuild (before the
    /// rebuild's first move), marked rebuilt when the core says it is.
    fn follow_rebuild(&mut self) {
        let Some(r) = self.engine.rebuild() else {
            return;
        };
        if !self.spare.0 {
            self.spare.0 = true;
            self.io.send(Job::Failed(r.disk));
        }
        if r.started.is_some() && !self.spare.1 {
            self.spare.1 = true;
            self.io.send(Job::Replace(r.disk));
        }
        if r.done.is_some() && !self.spare.2 {
            self.spare.2 = true;
            self.io.send(Job::Rebuilt(r.disk));
        }
    }

    /// Hands the core's NVRAM writes, then its data moves, to the I/O thread before acting
    /// on each of its actions, until it has none (the order `spindle::engine::data` asks for).
    fn drain(&mut self) {
        self.follow_rebuild();
        loop {
            let mut effects = false;
            while let Some(w) = self.engine.poll_nvram() {
                effects = true;
                self.io.nvram(w);
            }
            while let Some(mv) = self.engine.poll_data() {
                effects = true;
                self.io.send(Job::Move(mv));
            }
            match self.engine.poll_action() {
                Some(Action::DiskBusy { disk, until }) => self.heap.push(Reverse((until, disk))),
                Some(Action::Wake { at }) => self.heap.push(Reverse((at, WAKE))),
                Some(Action::Complete(c)) => {
                    self.count_in_array(c.done);
                    let p = self
                        .pending
                        .remove(&c.id)
                        .expect("an answered request is pending");
                    self.io.answer(Answer {
                        id: c.id,
                        op: p.op,
                        done: c.done,
                        fua: p.fua,
                        reply: p.reply,
                    });
                }
                None if effects => {}
                None => return,
            }
        }
    }
}
