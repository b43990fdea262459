//! The I/O thread: performs the core's NVRAM writes and data moves on the backing store in
//! the order the clock thread hands them over, and answers the host — after every job
//! before it, so a read's bytes, a write's copies and the NVRAM records an answer depends
//! on are in place — recording each answer's lateness (sent minus simulated completion).
//! Keeping file I/O here keeps the clock thread's deadlines free of page-cache stalls
//! (dirty-page throttling, block allocation in the sparse files).

use crate::backing::{BackingStore, StoreError};
use crate::driver::{EmuError, Reply, Stats};
use hdrhistogram::Histogram;
use spindle::array::{Bytes, DataMove, NvramWrite};
use spindle::{Nanos, Op};
use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
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
    },
    Nvram(NvramWrite),
    Move(DataMove),
    /// The core answered host request `id` at simulated instant `done`.
    Answer {
        id: u64,
        op: Op,
        done: Nanos,
        fua: bool,
        reply: oneshot::Sender<Reply>,
    },
    /// FLUSH: answered once everything answered before it is durable.
    Flush(oneshot::Sender<Reply>),
    /// The statistics, with the clock thread's mean of requests in the array (also sent,
    /// with a dropped receiver, just before the clock thread stops: the final figure).
    Stats {
        tx: oneshot::Sender<Stats>,
        in_array_mean: f64,
    },
}

pub(crate) struct IoThread {
    tx: Sender<Job>,
    thread: JoinHandle<Result<Stats, StoreError>>,
}

impl IoThread {
    /// Starts the thread over `store`; times are measured from `start` (the clock's origin).
    pub fn start(store: BackingStore, start: Instant, realtime: bool) -> Result<IoThread, String> {
        let syncer = Syncer::start(store.sync_handles().map_err(|e| e.to_string())?);
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("spindle-io".into())
            .spawn(move || {
                if realtime {
                    crate::driver::become_realtime("I/O", 49);
                }
                Worker::new(store, syncer, start).run(rx)
            })
            .map_err(|e| format!("cannot start the I/O thread: {e}"))?;
        Ok(IoThread { tx, thread })
    }

    pub fn send(&self, job: Job) {
        // The worker only stops once this sender is dropped: a send cannot fail here.
        let _ = self.tx.send(job);
    }

    /// Lets the worker finish every job, makes the store durable and closes it cleanly.
    pub fn stop(self) -> Result<Stats, StoreError> {
        drop(self.tx);
        self.thread.join().unwrap_or_else(|_| {
            Err(StoreError::Mismatch {
                path: PathBuf::from("spindle-io"),
                msg: "the I/O thread panicked".into(),
            })
        })
    }
}

/// A host request's buffer while the core works on it.
struct HostBuf {
    lba: u64,
    data: Vec<u8>,
    failed: Option<EmuError>,
}

struct Worker {
    store: BackingStore,
    syncer: Syncer,
    start: Instant,
    bufs: HashMap<u64, HostBuf>,
    sector_bytes: usize,
    lateness_ns: Histogram<u64>,
    stats: Stats,
    /// Set when the NVRAM image could not be written: durability is lost, writes fail.
    nvram_broken: Option<String>,
}

impl Worker {
    fn new(store: BackingStore, syncer: Syncer, start: Instant) -> Worker {
        let sector_bytes = store.shape().sector_bytes as usize;
        Worker {
            store,
            syncer,
            start,
            bufs: HashMap::new(),
            sector_bytes,
            lateness_ns: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("valid histogram bounds"),
            stats: Stats::default(),
            nvram_broken: None,
        }
    }

    fn run(mut self, rx: Receiver<Job>) -> Result<Stats, StoreError> {
        while let Ok(job) = rx.recv() {
            match job {
                Job::Host { id, lba, data } => {
                    self.bufs.insert(
                        id,
                        HostBuf {
                            lba,
                            data,
                            failed: None,
                        },
                    );
                }
                Job::Nvram(w) => {
                    if let Err(e) = self.store.write_nvram(&w) {
                        eprintln!("spindle serve: {e}: writes fail from now on");
                        self.nvram_broken.get_or_insert(e.to_string());
                    }
                }
                Job::Move(mv) => self.perform(mv),
                Job::Answer {
                    id,
                    op,
                    done,
                    fua,
                    reply,
                } => self.answer(id, op, done, fua, reply),
                Job::Flush(reply) => {
                    self.stats.flushes += 1;
                    self.syncer.sync_then_answer(reply, Ok(Vec::new()));
                }
                Job::Stats { tx, in_array_mean } => {
                    self.stats.in_array_mean = in_array_mean;
                    let _ = tx.send(self.snapshot());
                }
            }
        }
        let stats = self.snapshot();
        self.syncer.stop();
        self.store.close_clean()?;
        Ok(stats)
    }

    fn perform(&mut self, mv: DataMove) {
        let sb = self.sector_bytes;
        let n = mv.sectors as usize * sb;
        let result = match (mv.op, &mv.bytes) {
            (Op::Read, &Bytes::Host(id)) => {
                let b = self.bufs.get_mut(&id).expect("a read's buffer is live");
                let at = (mv.lba - b.lba) as usize * sb;
                self.store
                    .read_runs(mv.disk, &mv.copies[0], &mut b.data[at..at + n])
                    .map_err(|e| (Some(id), e))
            }
            (Op::Write, &Bytes::Host(id)) => {
                let b = &self.bufs[&id];
                let at = (mv.lba - b.lba) as usize * sb;
                let bytes = &b.data[at..at + n];
                mv.copies
                    .iter()
                    .try_for_each(|c| self.store.write_runs(mv.disk, c, bytes))
                    .map_err(|e| (Some(id), e))
            }
            (Op::Write, Bytes::Copy { disk: src, runs }) => self
                .store
                .copy_runs((*src, runs), mv.disk, &mv.copies)
                .map_err(|e| (None, e)),
            (Op::Write, Bytes::Meta(bytes)) => mv
                .copies
                .iter()
                .try_for_each(|c| self.store.write_runs(mv.disk, c, bytes))
                .map_err(|e| (None, e)),
            (Op::Read, _) => unreachable!("reads are for a host request"),
        };
        if let Err((id, e)) = result {
            eprintln!("spindle serve: {e}");
            if let Some(b) = id.and_then(|id| self.bufs.get_mut(&id)) {
                b.failed = Some(EmuError::Io(e.to_string()));
            }
        }
    }

    fn answer(&mut self, id: u64, op: Op, done: Nanos, fua: bool, reply: oneshot::Sender<Reply>) {
        let b = self
            .bufs
            .remove(&id)
            .expect("an answered request has a buffer");
        let now = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.lateness_ns
            .saturating_record(now.saturating_sub(done.0).max(1));
        self.stats.answered += 1;
        match op {
            Op::Read => self.stats.reads += 1,
            Op::Write => self.stats.writes += 1,
        }
        let failed = b.failed.or_else(|| {
            (op == Op::Write)
                .then(|| self.nvram_broken.clone().map(EmuError::Io))
                .flatten()
        });
        let answer = match failed {
            Some(e) => Err(e),
            None if op == Op::Read => Ok(b.data),
            None => Ok(Vec::new()),
        };
        if fua && answer.is_ok() {
            self.syncer.sync_then_answer(reply, answer);
        } else {
            let _ = reply.send(answer);
        }
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

/// Makes the disk files and the NVRAM image durable, off the I/O thread, then answers.
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
