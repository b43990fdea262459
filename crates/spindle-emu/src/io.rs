//! The I/O thread: performs the core's NVRAM writes and data moves on the backing store in
//! the order the clock thread hands them over. Keeping file I/O here keeps the clock
//! thread's deadlines free of page-cache stalls (dirty-page throttling, block allocation in
//! the sparse files).
//!
//! The NVRAM image is memory (`nvram.rs`): the clock thread stores an NVRAM write itself
//! when every NVRAM write queued before it and every move of an operation that has completed
//! are performed, so it overtakes neither (a record cleared before the copy it protected is
//! written would lose that copy in a crash); otherwise the write queues behind them
//! ([`IoThread::nvram`]).
//!
//! An answer to the host depends on what was handed over before it that concerns it: its
//! own request's moves (a read's bytes, a write's copies) and every queued NVRAM write (the
//! records recovery needs). The worker performs jobs in order, so a read's move also comes
//! after every earlier write to its sectors. When the worker has performed those — nearly
//! always: a disk operation's moves are handed over when it starts, milliseconds before it
//! completes — the clock thread answers itself ([`IoThread::answer`]); otherwise the answer
//! queues behind them. Answering on the clock thread saves a thread wake-up (tens of µs on
//! a virtual machine) on every answer. Either way the answer's lateness (sent minus
//! simulated completion) goes into one histogram.

use crate::backing::{BackingStore, StoreError};
use crate::driver::{EmuError, Reply, Stats};
use crate::nvram::NvramImage;
use hdrhistogram::Histogram;
use spindle::engine::{xor_pieces, Bytes, DataMove, NvramBytes, NvramWrite, Piece, Source};
use spindle::{Nanos, Op};
use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;
use tokio::sync::oneshot;

/// What the clock thread hands over, in the core's order.
pub(crate) enum Job {
    /// A host request entered the core: a write's bytes, or a read's buffer to fill;
    /// `lba` is its first sector.
    Host {
        id: u64,
        lba: u64,
        data: Vec<u8>,
        /// A read whose sectors are tracked: one no move fills (a latent sector error on
        /// every replica: the core answers it without its data) fails the read.
        track: bool,
    },
    Nvram(NvramWrite),
    Move(DataMove),
    /// The core answered a host request.
    Answer(Answer),
    /// FLUSH: answered once everything answered before it is durable.
    Flush(oneshot::Sender<Reply>),
    /// A failed disk's spare takes its place ([`BackingStore::replace_disk`]): before any
    /// move of the rebuild.
    Replace(usize),
    /// A disk failed ([`BackingStore::mark_failed`]): before any move after the failure.
    Failed(usize),
    /// The spare of this disk is rebuilt ([`BackingStore::rebuilt`]).
    Rebuilt(usize),
    /// The statistics, with the clock thread's mean of requests in the array and the paged
    /// disk's state (also sent, with a dropped receiver, just before the clock thread stops:
    /// the final figures).
    Stats {
        tx: oneshot::Sender<Stats>,
        in_array_mean: f64,
        paged: Option<spindle::engine::PagedStatus>,
        latent: Option<spindle::engine::LatentCounters>,
    },
}

/// The core answered host request `id` at simulated instant `done`.
pub(crate) struct Answer {
    pub id: u64,
    pub op: Op,
    pub done: Nanos,
    pub fua: bool,
    pub reply: oneshot::Sender<Reply>,
}

pub(crate) struct IoThread {
    tx: Sender<Job>,
    thread: JoinHandle<Result<Stats, StoreError>>,
    answers: Arc<Mutex<Answers>>,
    /// Jobs handed over, and jobs the worker has finished (jobs are numbered from 1).
    sent: u64,
    performed: Arc<AtomicU64>,
    /// The number of the last NVRAM write handed over.
    last_nvram: u64,
    /// Per disk, the number of the last move of an operation on it.
    last_move_on_disk: Vec<u64>,
    /// The number of the last move of an operation that has completed.
    completed_floor: u64,
    nvram: Arc<Mutex<NvramImage>>,
    /// For each host request in the core, the number of the last job about its bytes.
    last_of_request: HashMap<u64, u64>,
}

impl IoThread {
    /// Starts the thread over `store`; times are measured from `start` (the clock's origin).
    pub fn start(store: BackingStore, start: Instant, realtime: bool) -> Result<IoThread, String> {
        let (syncer, sync_tx) = Syncer::start(store.sync_handles().map_err(|e| e.to_string())?);
        let answers = Arc::new(Mutex::new(Answers::new(start, sync_tx)));
        let nvram = Arc::new(Mutex::new(store.nvram_image().map_err(|e| e.to_string())?));
        let performed = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel();
        let worker = Worker {
            sector_bytes: store.shape().sector_bytes as usize,
            store,
            answers: answers.clone(),
            nvram: nvram.clone(),
            performed: performed.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("spindle-io".into())
            .spawn(move || {
                if realtime {
                    crate::driver::become_realtime("I/O", 49);
                }
                worker.run(rx, syncer)
            })
            .map_err(|e| format!("cannot start the I/O thread: {e}"))?;
        Ok(IoThread {
            tx,
            thread,
            answers,
            sent: 0,
            performed,
            last_nvram: 0,
            last_move_on_disk: Vec::new(),
            completed_floor: 0,
            nvram,
            last_of_request: HashMap::new(),
        })
    }

    pub fn send(&mut self, job: Job) {
        self.sent += 1;
        // Every job that reads or fills a host request's buffer: the answer waits for it
        // (and the buffer lives until then).
        let host_of = |ps: &[Piece]| -> Vec<u64> {
            ps.iter()
                .filter_map(|p| match p.from {
                    Source::Host { id, .. } => Some(id),
                    _ => None,
                })
                .collect()
        };
        let ids: Vec<u64> = match &job {
            Job::Host { id, .. } => vec![*id],
            Job::Move(mv) => match &mv.bytes {
                Bytes::Host(id) => vec![*id],
                Bytes::HostXor { id, pieces } => {
                    let mut v = host_of(pieces);
                    v.push(*id);
                    v
                }
                Bytes::Xor(pieces) => host_of(pieces),
                _ => Vec::new(),
            },
            Job::Nvram(w) => match &w.bytes {
                NvramBytes::Xor { pieces, .. } => host_of(pieces),
                NvramBytes::Literal(_) => Vec::new(),
            },
            _ => Vec::new(),
        };
        for id in ids {
            self.last_of_request.insert(id, self.sent);
        }
        if let Job::Nvram(_) = &job {
            self.last_nvram = self.sent;
        }
        if let Job::Move(mv) = &job {
            if self.last_move_on_disk.len() <= mv.disk {
                self.last_move_on_disk.resize(mv.disk + 1, 0);
            }
            self.last_move_on_disk[mv.disk] = self.sent;
        }
        // The worker only stops once this sender is dropped: a send cannot fail here.
        let _ = self.tx.send(job);
    }

    /// Whether the worker has performed every job up to number `n`.
    fn performed(&self, n: u64) -> bool {
        self.performed.load(Ordering::Acquire) >= n
    }

    /// Says the operation on `disk` has completed (before the core handles its completion):
    /// its moves are the last handed over for that disk, as a disk runs one operation at a
    /// time.
    pub fn completed(&mut self, disk: usize) {
        let last = self.last_move_on_disk.get(disk).copied().unwrap_or(0);
        self.completed_floor = self.completed_floor.max(last);
    }

    /// Stores an NVRAM write now, on the calling thread, if nothing it must not overtake is
    /// pending; otherwise after it, on the I/O thread. It must not overtake an earlier
    /// NVRAM write, nor a move of a completed operation: the controller records an
    /// operation's effect in NVRAM once it has completed. It may overtake moves of
    /// operations still running, as a crash may find those not yet written on a real
    /// array too, and the controller's recovery must cope with that already.
    pub fn nvram(&mut self, w: NvramWrite) {
        // An XOR write reads host buffers and disks: the worker has them, in order.
        let literal = w.as_literal().is_some();
        if literal && self.performed(self.completed_floor.max(self.last_nvram)) {
            store_nvram(&self.nvram, &self.answers, &w);
        } else {
            self.send(Job::Nvram(w));
        }
    }

    /// Answers now, on the calling thread, if the jobs the answer depends on are performed;
    /// otherwise after them, on the I/O thread.
    pub fn answer(&mut self, a: Answer) {
        let own = self.last_of_request.remove(&a.id).unwrap_or(0);
        if self.performed(own.max(self.last_nvram)) {
            lock(&self.answers).answer(a);
        } else {
            self.send(Job::Answer(a));
        }
    }

    /// FLUSH, the same way: the syncer takes it once every write answered before is in the
    /// files.
    pub fn flush(&mut self, reply: oneshot::Sender<Reply>) {
        if self.performed(self.sent) {
            lock(&self.answers).flush(reply);
        } else {
            self.send(Job::Flush(reply));
        }
    }

    /// Lets the worker finish every job, makes the store durable and closes it cleanly.
    pub fn stop(self) -> Result<Stats, StoreError> {
        let IoThread {
            tx,
            thread,
            answers,
            ..
        } = self;
        // The worker stops the syncer once it holds the last reference to the answers.
        drop(answers);
        drop(tx);
        thread.join().unwrap_or_else(|_| {
            Err(StoreError::Mismatch {
                path: PathBuf::from("spindle-io"),
                msg: "the I/O thread panicked".into(),
            })
        })
    }
}

/// Applies an NVRAM write; a failure (the image cannot grow) fails every write from then on.
fn store_nvram(image: &Mutex<NvramImage>, answers: &Mutex<Answers>, w: &NvramWrite) {
    let mut image = image.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = image.write(w) {
        let e = format!("{}: {e}", image.path().display());
        eprintln!("spindle serve: {e}: writes fail from now on");
        lock(answers).nvram_broken.get_or_insert(e);
    }
}

/// The answers' state cannot be left inconsistent by a panic (every update is a single
/// insert, remove or count), so a poisoned lock is used as it is.
fn lock(answers: &Mutex<Answers>) -> MutexGuard<'_, Answers> {
    answers.lock().unwrap_or_else(|e| e.into_inner())
}

/// A host request's buffer while the core works on it.
struct HostBuf {
    lba: u64,
    data: Vec<u8>,
    failed: Option<EmuError>,
    /// A tracked read's sectors filled so far.
    filled: Option<Vec<bool>>,
}

/// Everything answering needs, shared by the clock thread and the I/O thread.
struct Answers {
    start: Instant,
    bufs: HashMap<u64, HostBuf>,
    lateness_ns: Histogram<u64>,
    stats: Stats,
    /// Set when the NVRAM image could not be written: durability is lost, writes fail.
    nvram_broken: Option<String>,
    sync: SyncSender,
}

impl Answers {
    fn new(start: Instant, sync: SyncSender) -> Answers {
        Answers {
            start,
            bufs: HashMap::new(),
            lateness_ns: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("valid histogram bounds"),
            stats: Stats::default(),
            nvram_broken: None,
            sync,
        }
    }

    fn answer(&mut self, a: Answer) {
        let b = self
            .bufs
            .remove(&a.id)
            .expect("an answered request has a buffer");
        let now = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.lateness_ns
            .saturating_record(now.saturating_sub(a.done.0).max(1));
        self.stats.answered += 1;
        match a.op {
            Op::Read => self.stats.reads += 1,
            Op::Write => self.stats.writes += 1,
        }
        let unread = b.filled.as_ref().is_some_and(|f| f.contains(&false));
        let failed = b
            .failed
            .or_else(|| {
                unread.then(|| {
                    EmuError::Io(format!(
                        "latent sector error: the data at sector {} is unreadable on every replica",
                        b.lba
                            + b.filled
                                .as_ref()
                                .and_then(|f| f.iter().position(|&x| !x))
                                .unwrap_or(0) as u64
                    ))
                })
            })
            .or_else(|| {
                (a.op == Op::Write)
                    .then(|| self.nvram_broken.clone().map(EmuError::Io))
                    .flatten()
            });
        let answer = match failed {
            Some(e) => Err(e),
            None if a.op == Op::Read => Ok(b.data),
            None => Ok(Vec::new()),
        };
        if a.fua && answer.is_ok() {
            self.sync.sync_then_answer(a.reply, answer);
        } else {
            let _ = a.reply.send(answer);
        }
    }

    fn flush(&mut self, reply: oneshot::Sender<Reply>) {
        self.stats.flushes += 1;
        self.sync.sync_then_answer(reply, Ok(Vec::new()));
    }

    fn snapshot(&self) -> Stats {
        let h = &self.lateness_ns;
        let us = |ns: u64| ns as f64 / 1e3;
        Stats {
            lateness_mean_us: h.mean() / 1e3,
            lateness_p50_us: us(h.value_at_quantile(0.5)),
            lateness_p99_us: us(h.value_at_quantile(0.99)),
            lateness_p999_us: us(h.value_at_quantile(0.999)),
            lateness_max_us: us(h.max()),
            elapsed_s: self.start.elapsed().as_secs_f64(),
            ..self.stats.clone()
        }
    }
}

struct Worker {
    store: BackingStore,
    answers: Arc<Mutex<Answers>>,
    nvram: Arc<Mutex<NvramImage>>,
    performed: Arc<AtomicU64>,
    sector_bytes: usize,
}

impl Worker {
    fn run(self, rx: Receiver<Job>, syncer: Syncer) -> Result<Stats, StoreError> {
        let Worker {
            mut store,
            answers,
            nvram,
            performed,
            sector_bytes,
        } = self;
        // File I/O is done without the lock, so the clock thread never waits on it: a host
        // request's buffer is taken out of the shared map while its move is performed (the
        // clock thread does not answer that request meanwhile: the move is not performed).
        while let Ok(job) = rx.recv() {
            match job {
                Job::Host {
                    id,
                    lba,
                    data,
                    track,
                } => {
                    let filled = track.then(|| vec![false; data.len() / sector_bytes]);
                    let buf = HostBuf {
                        lba,
                        data,
                        failed: None,
                        filled,
                    };
                    lock(&answers).bufs.insert(id, buf);
                }
                Job::Nvram(w) => match &w.bytes {
                    NvramBytes::Literal(_) => store_nvram(&nvram, &answers, &w),
                    NvramBytes::Xor { sectors, pieces } => {
                        let ctx = Ctx {
                            answers: &answers,
                            nvram: &nvram,
                            sector_bytes,
                        };
                        match ctx.xor(&mut store, pieces, *sectors) {
                            Ok(bytes) => {
                                store_nvram(&nvram, &answers, &NvramWrite::literal(w.offset, bytes))
                            }
                            Err(e) => {
                                eprintln!("spindle serve: NVRAM: {e}: writes fail from now on");
                                lock(&answers).nvram_broken.get_or_insert(e);
                            }
                        }
                    }
                },
                Job::Move(mv) => {
                    let ctx = Ctx {
                        answers: &answers,
                        nvram: &nvram,
                        sector_bytes,
                    };
                    match mv.bytes {
                        Bytes::Host(id) | Bytes::HostXor { id, .. } => {
                            let mut buf = lock(&answers)
                                .bufs
                                .remove(&id)
                                .expect("a move's host buffer is live");
                            perform(&mut store, Some(&mut buf), &ctx, mv);
                            lock(&answers).bufs.insert(id, buf);
                        }
                        _ => perform(&mut store, None, &ctx, mv),
                    }
                }
                Job::Failed(disk) => {
                    if let Err(e) = store.mark_failed(disk) {
                        eprintln!("spindle serve: marking disk {disk} failed: {e}");
                    }
                }
                Job::Replace(disk) => {
                    if let Err(e) = store.replace_disk(disk) {
                        eprintln!("spindle serve: replacing disk {disk} by a spare: {e}");
                    }
                }
                Job::Rebuilt(disk) => {
                    if let Err(e) = store.rebuilt(disk) {
                        eprintln!("spindle serve: disk {disk} rebuilt: {e}");
                    }
                }
                Job::Answer(x) => lock(&answers).answer(x),
                Job::Flush(reply) => lock(&answers).flush(reply),
                Job::Stats {
                    tx,
                    in_array_mean,
                    paged,
                    latent,
                } => {
                    let mut a = lock(&answers);
                    a.stats.in_array_mean = in_array_mean;
                    a.stats.paged = paged;
                    a.stats.latent = latent;
                    let _ = tx.send(a.snapshot());
                }
            }
            performed.fetch_add(1, Ordering::Release);
        }
        let stats = lock(&answers).snapshot();
        // The clock thread's reference is gone (IoThread::stop): this drops the last
        // sender to the syncer.
        drop(answers);
        syncer.stop();
        store.close_clean()?;
        Ok(stats)
    }
}

/// What an XOR's sources are read from besides the disks.
struct Ctx<'a> {
    answers: &'a Mutex<Answers>,
    nvram: &'a Mutex<NvramImage>,
    sector_bytes: usize,
}

impl Ctx<'_> {
    /// The XOR of `pieces` over `sectors` sectors: host writes' buffers (live while their
    /// request is), disk runs as they are now, the NVRAM image.
    fn xor(
        &self,
        store: &mut BackingStore,
        pieces: &[Piece],
        sectors: u32,
    ) -> Result<Vec<u8>, String> {
        let sb = self.sector_bytes;
        xor_pieces(pieces, sectors, sb as u32, &mut |from, buf| match from {
            Source::Host { id, lba } => {
                let a = lock(self.answers);
                let b = a
                    .bufs
                    .get(id)
                    .ok_or_else(|| format!("host request {id} is not live"))?;
                let at = (lba - b.lba) as usize * sb;
                buf.copy_from_slice(&b.data[at..at + buf.len()]);
                Ok(())
            }
            Source::Disk { disk, runs } => {
                store.read_runs(*disk, runs, buf).map_err(|e| e.to_string())
            }
            Source::Nvram(offset) => {
                self.nvram
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .read(*offset, buf);
                Ok(())
            }
        })
    }
}

/// Performs one data move on the store; `buf` is the host request's buffer for a move of a
/// host request's bytes. A failure fails that request.
fn perform(store: &mut BackingStore, buf: Option<&mut HostBuf>, ctx: &Ctx<'_>, mv: DataMove) {
    let sb = ctx.sector_bytes;
    let n = mv.sectors as usize * sb;
    let result = match (mv.op, &mv.bytes, buf) {
        (Op::Read, Bytes::HostXor { pieces, .. }, Some(b)) => {
            let at = (mv.lba - b.lba) as usize * sb;
            match ctx.xor(store, pieces, mv.sectors) {
                Ok(bytes) => {
                    b.data[at..at + n].copy_from_slice(&bytes);
                    Ok(())
                }
                Err(e) => {
                    b.failed = Some(EmuError::Io(e.clone()));
                    eprintln!("spindle serve: {e}");
                    return;
                }
            }
        }
        (Op::Write, Bytes::Xor(pieces), None) => match ctx.xor(store, pieces, mv.sectors) {
            Ok(bytes) => mv
                .copies
                .iter()
                .try_for_each(|c| store.write_runs(mv.disk, c, &bytes))
                .map_err(|e| (None, e)),
            Err(e) => {
                eprintln!("spindle serve: {e}");
                return;
            }
        },
        (Op::Write, Bytes::Nvram(offset), None) => {
            let mut bytes = vec![0; n];
            ctx.nvram
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .read(*offset, &mut bytes);
            mv.copies
                .iter()
                .try_for_each(|c| store.write_runs(mv.disk, c, &bytes))
                .map_err(|e| (None, e))
        }
        (Op::Read, Bytes::Host(_), Some(b)) => {
            let at = (mv.lba - b.lba) as usize * sb;
            if let Some(f) = b.filled.as_mut() {
                let first = (mv.lba - b.lba) as usize;
                f[first..first + mv.sectors as usize].fill(true);
            }
            store
                .read_runs(mv.disk, &mv.copies[0], &mut b.data[at..at + n])
                .map_err(|e| (Some(b), e))
        }
        (Op::Write, Bytes::Host(_), Some(b)) => {
            let at = (mv.lba - b.lba) as usize * sb;
            let bytes = &b.data[at..at + n];
            match mv
                .copies
                .iter()
                .try_for_each(|c| store.write_runs(mv.disk, c, bytes))
            {
                Ok(()) => Ok(()),
                Err(e) => Err((Some(b), e)),
            }
        }
        (Op::Write, Bytes::Copy { disk: src, runs }, None) => store
            .copy_runs((*src, runs), mv.disk, &mv.copies)
            .map_err(|e| (None, e)),
        (Op::Write, Bytes::Meta(bytes), None) => mv
            .copies
            .iter()
            .try_for_each(|c| store.write_runs(mv.disk, c, bytes))
            .map_err(|e| (None, e)),
        (op, bytes, _) => unreachable!("no such data move: {op:?} of {bytes:?}"),
    };
    if let Err((buf, e)) = result {
        eprintln!("spindle serve: {e}");
        if let Some(b) = buf {
            b.failed = Some(EmuError::Io(e.to_string()));
        }
    }
}

/// Makes the disk files and the NVRAM image durable, off the I/O thread, then answers.
struct Syncer {
    thread: JoinHandle<()>,
}

/// Hands answers to the [`Syncer`].
struct SyncSender(Sender<(oneshot::Sender<Reply>, Reply)>);

impl Syncer {
    fn start(files: Vec<(PathBuf, File)>) -> (Syncer, SyncSender) {
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
        (Syncer { thread }, SyncSender(tx))
    }

    /// Waits for the syncs asked for so far (every [`SyncSender`] must be gone).
    fn stop(self) {
        let _ = self.thread.join();
    }
}

impl SyncSender {
    fn sync_then_answer(&self, reply: oneshot::Sender<Reply>, answer: Reply) {
        if let Err(mpsc::SendError((reply, _))) = self.0.send((reply, answer)) {
            let _ = reply.send(Err(EmuError::Shutdown));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backing::StoreShape;
    use spindle::drive::Run;
    use std::os::unix::fs::FileExt;
    use std::path::Path;
    use std::time::Duration;

    fn nvram_at_0(dir: &Path) -> Vec<u8> {
        let image = std::fs::read(dir.join("nvram.img")).expect("the image exists");
        image[..4].to_vec()
    }

    fn nvram_write(b: u8) -> NvramWrite {
        NvramWrite::literal(0, vec![b; 4])
    }

    /// The ordering rule of [`IoThread::nvram`], with the worker held up (as by a page-cache
    /// stall) by holding the answers' lock, which it needs for a move of host bytes.
    #[test]
    fn an_nvram_write_overtakes_a_running_operation_but_not_a_completed_one() {
        let dir = tempfile::tempdir().unwrap();
        let shape = StoreShape {
            disks: 2,
            sector_bytes: 512,
            disk_sectors: 64,
            layout: "test".into(),
            drive: "test".into(),
        };
        let store = BackingStore::open(dir.path(), shape).unwrap();
        let mut io = IoThread::start(store, Instant::now(), false).unwrap();
        io.nvram(nvram_write(1));
        assert_eq!(
            nvram_at_0(dir.path()),
            [1; 4],
            "nothing pending: stored at once"
        );

        let answers = io.answers.clone();
        let held = lock(&answers);
        io.send(Job::Host {
            id: 7,
            lba: 0,
            data: vec![0xab; 512],
            track: false,
        });
        io.send(Job::Move(DataMove {
            disk: 0,
            op: Op::Write,
            lba: 0,
            sectors: 1,
            bytes: Bytes::Host(7),
            copies: vec![vec![Run { lba: 8, sectors: 1 }]],
        }));
        // The write to disk 0 is running: a crash may find it unwritten anyway.
        io.nvram(nvram_write(2));
        assert_eq!(
            nvram_at_0(dir.path()),
            [2; 4],
            "overtakes a running operation"
        );
        // Once it has completed, a record of its effect must wait for its bytes, and a
        // later NVRAM write must not overtake the queued one.
        io.completed(0);
        io.nvram(nvram_write(3));
        io.nvram(nvram_write(4));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            nvram_at_0(dir.path()),
            [2; 4],
            "waits for the completed move"
        );
        drop(held);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !io.performed(io.sent) {
            assert!(Instant::now() < deadline, "the worker never caught up");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            nvram_at_0(dir.path()),
            [4; 4],
            "applied in order after the move"
        );
        let mut disk = vec![0u8; 512];
        std::fs::File::open(dir.path().join("disk-000.img"))
            .unwrap()
            .read_exact_at(&mut disk, 8 * 512)
            .unwrap();
        assert_eq!(disk, vec![0xab; 512]);
        // A completion on disk 1, which ran nothing, holds nothing up.
        io.completed(1);
        io.nvram(nvram_write(5));
        assert_eq!(nvram_at_0(dir.path()), [5; 4]);
        lock(&io.answers).bufs.remove(&7);
        // The syncer stops once the last reference to the answers is gone.
        drop(answers);
        io.stop().unwrap();
    }
}
