//! The real driver (DESIGN.md's third driver, "real: block devices + calibration";
//! dissertation 3.3.2): the unchanged sans-I/O array core running real disks — block
//! devices, files or NBD exports — that a calibrated drive file describes.
//!
//! Each disk is a thread ([`disk`]) that synchronizes a head tracker on its disk, then
//! performs the core's disk operations one at a time. The core ([`Core`]: the engine and
//! what this driver keeps beside it) is shared under a lock by a host thread — host
//! commands from the NBD server, the controller's timers, the stop — and the disks'
//! threads. A host request is handed to the engine on arrival; each disk operation it
//! starts (its [`spindle::engine::DataMove`] says which runs, and which host bytes) goes to
//! that disk's thread, and the engine hears [`Event::DiskDone`] when the disk has answered —
//! the `until` it computed is only its prediction. The disk's thread hands in the answer
//! itself and performs at once whatever the engine starts on that disk in turn. The
//! schedulers (SATF, RSATF, the SR-Array's replica choice) decide with the core's drive
//! model on the head each tracker reports: its arm, and its platter phase with a lead (the
//! host's delay and the tracker's slack).
//!
//! What this driver does not do (refused by [`spindle::engine::Engine::enable_real_disks`]
//! or by [`RealArray::start`]): copies between disks (delayed writes, rebuilds, latent
//! error repairs), parity and eager-writing controllers, on-board drive caches. The
//! controller's NVRAM writes are not kept: a real array has no crash recovery yet
//! (docs/calibrate.md, "The real driver").

mod disk;

pub use disk::DiskTracking;

use crate::driver::{checked, Checked, Cmd, EmuError, Handle, Reply, Request, Stats};
use disk::{Disk, Job, Tally};
use serde::Serialize;
use spindle::drive::{Drive, HeadState};
use spindle::engine::{Action, Bytes, DataMove, Engine, Event, HostRequest};
use spindle::{Nanos, Op};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// What a disk's thread tells the core.
pub(crate) struct DiskAnswer {
    pub disk: usize,
    pub done: Done,
}

pub(crate) enum Done {
    /// An operation answered (a read's bytes), with the head the tracker has after it.
    Op {
        bytes: Result<Vec<u8>, String>,
        head: HeadState,
    },
    Flush(Result<(), String>),
    /// The head after synchronizing or re-anchoring.
    Head(HeadState),
}

/// The real array's statistics (with the host's counts in [`Stats`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RealStats {
    /// Host requests answered per second, from the first request to the last answer.
    pub iops: f64,
    pub mean_latency_ms: f64,
    /// Host requests answered with an error (a disk's request failed).
    pub errors: u64,
    /// Each disk's head tracking (dissertation table 3.2's statistics).
    pub disks: Vec<DiskTracking>,
}

/// How to run the real disks.
#[derive(Clone, Debug)]
pub struct RealOptions {
    /// `--realtime`: the clock and disk threads under `SCHED_FIFO`.
    pub realtime: bool,
}

/// A running real array; [`RealArray::handle`] submits host commands as to the emulator.
pub struct RealArray {
    tx: Option<Sender<Cmd>>,
    thread: Option<JoinHandle<Stats>>,
    size_bytes: u64,
    sector_bytes: u32,
    align_bytes: u32,
}

impl RealArray {
    /// Opens every disk of `names` (one per disk of the array, in order), synchronizes its
    /// tracker on `drive` (the drive file named `drive_name`, which must describe them all)
    /// and starts serving. Refuses an engine that cannot run real disks.
    pub fn start(
        mut engine: Box<dyn Engine>,
        drive: &Drive,
        drive_name: &str,
        names: &[String],
        opts: &RealOptions,
    ) -> Result<RealArray, String> {
        if !engine.enable_data_moves() {
            return Err(
                "this array's controller does not describe the bytes of its disk \
                        operations"
                    .into(),
            );
        }
        engine.enable_real_disks()?;
        if names.len() != engine.disk_count() {
            return Err(format!(
                "--disks names {} disks, the array has {}",
                names.len(),
                engine.disk_count()
            ));
        }
        let (tx, rx) = mpsc::channel();
        let epoch = Instant::now();
        let sector_bytes = engine.sector_bytes();
        let align_bytes = engine.io_align_bytes();
        let size_bytes = engine.capacity_sectors() * u64::from(sector_bytes);
        let mut slots = Vec::new();
        let mut receivers = Vec::new();
        for _ in names {
            let (jtx, jrx) = mpsc::channel();
            slots.push(DiskSlot {
                jobs: Some(jtx),
                tally: Arc::new(Mutex::new(Tally::default())),
                sent: None,
                flushes_answered: 0,
            });
            receivers.push(jrx);
        }
        let tallies: Vec<_> = slots.iter().map(|d| d.tally.clone()).collect();
        let core = Arc::new(Mutex::new(Core {
            engine,
            epoch,
            disks: slots,
            staged: HashMap::new(),
            pending: HashMap::new(),
            next_id: 0,
            sector_bytes: u64::from(sector_bytes),
            last: Nanos::ZERO,
            wakes: BinaryHeap::new(),
            barriers: VecDeque::new(),
            barriers_done: 0,
            counts: Counts::default(),
            own: None,
        }));
        let mut threads = Vec::new();
        let mut readies = Vec::new();
        for (i, (name, jobs)) in names.iter().zip(receivers).enumerate() {
            let (rtx, rrx) = mpsc::channel();
            let d = Disk {
                index: i,
                name: name.clone(),
                drive: drive.clone(),
                drive_name: drive_name.to_string(),
                epoch,
                realtime: opts.realtime,
            };
            let c = core.clone();
            // The disk's thread gives the core its answers itself, and performs at once the
            // operation the core then starts on it: no other thread between an answer and
            // the next request.
            let answered: Answered = Box::new(move |a| lock(&c).disk_answered(a));
            let t = tallies[i].clone();
            let thread = std::thread::Builder::new()
                .name(format!("spindle-disk{i}"))
                .spawn(move || d.run(jobs, answered, t, rtx))
                .map_err(|e| format!("cannot start disk {i}'s thread: {e}"))?;
            threads.push(thread);
            readies.push(rrx);
        }
        // Every disk synchronized (in parallel) before anything is served.
        let mut failed = Vec::new();
        for (i, r) in readies.iter().enumerate() {
            match r.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failed.push(format!("disk {i}: {e}")),
                Err(_) => failed.push(format!("disk {i}: its thread stopped")),
            }
        }
        if !failed.is_empty() {
            lock(&core).close_disks();
            for t in threads {
                let _ = t.join();
            }
            return Err(failed.join("; "));
        }
        let realtime = opts.realtime;
        let thread = std::thread::Builder::new()
            .name("spindle-host".into())
            .spawn(move || {
                if realtime {
                    crate::driver::become_realtime("host", 50);
                }
                host_loop(&core, &rx, threads)
            })
            .map_err(|e| format!("cannot start the host thread: {e}"))?;
        Ok(RealArray {
            tx: Some(tx),
            thread: Some(thread),
            size_bytes,
            sector_bytes,
            align_bytes,
        })
    }

    pub fn handle(&self) -> Handle {
        Handle::new(
            self.tx.clone().expect("running"),
            self.size_bytes,
            self.sector_bytes,
            self.align_bytes,
        )
    }

    /// Stops accepting commands, lets the array answer what it holds, flushes the disks
    /// and returns the final statistics.
    pub fn stop(mut self) -> Result<Stats, String> {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Cmd::Close);
        }
        let t = self.thread.take().expect("running");
        t.join()
            .map_err(|_| "the real array's host thread panicked".to_string())
    }
}

/// How a disk's thread hands the core an answer; returns the operation the core started
/// on that disk in turn, for the thread to perform at once.
pub(crate) type Answered = Box<dyn FnMut(DiskAnswer) -> Option<Job> + Send>;

fn lock(core: &Mutex<Core>) -> std::sync::MutexGuard<'_, Core> {
    // A disk thread that panicked holding the core is a bug; the state is still whole
    // enough to stop.
    core.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The host thread: host commands to the core, the controller's timers, and the stop.
fn host_loop(core: &Mutex<Core>, rx: &Receiver<Cmd>, disks: Vec<JoinHandle<()>>) -> Stats {
    let mut open = true;
    loop {
        let next_wake = {
            let mut c = lock(core);
            c.fire_wakes();
            if !open && c.idle() {
                break;
            }
            let now = c.now();
            c.wakes
                .peek()
                .map(|&Reverse(at)| at.0.saturating_sub(now.0))
        };
        // Closing: the disks' answers come on their own threads; look again soon.
        let wait = match (next_wake, open) {
            (Some(ns), true) => Some(Duration::from_nanos(ns)),
            (Some(ns), false) => Some(Duration::from_nanos(ns).min(CLOSING_POLL)),
            (None, true) => None,
            (None, false) => Some(CLOSING_POLL),
        };
        let got = match wait {
            Some(d) => match rx.recv_timeout(d) {
                Ok(c) => Some(c),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => None,
            },
            None => rx.recv().ok(),
        };
        let mut c = lock(core);
        match got {
            Some(Cmd::Io(req, reply)) if open => c.accept(req, reply),
            Some(Cmd::Io(_, reply)) => {
                let _ = reply.send(Err(EmuError::Shutdown));
            }
            Some(Cmd::Stats(tx)) => {
                let _ = tx.send(c.stats());
            }
            // Every sender gone (no handle left) closes as `Close` does.
            Some(Cmd::Close) | None if open => {
                open = false;
                // The disks' writes made durable before the final statistics.
                c.barrier(Vec::new());
            }
            Some(Cmd::Close) => {}
            None => {
                // Closed, the disks still at work: wait for them without spinning.
                drop(c);
                std::thread::sleep(CLOSING_POLL);
            }
        }
    }
    let stats = lock(core).stats();
    lock(core).close_disks();
    for t in disks {
        let _ = t.join();
    }
    stats
}

/// How often a closing host thread checks whether the disks are done.
const CLOSING_POLL: Duration = Duration::from_millis(5);

struct DiskSlot {
    jobs: Option<Sender<Job>>,
    tally: Arc<Mutex<Tally>>,
    /// The operation sent to the disk and not answered yet: the host request it serves
    /// and, for a read, the byte offset its bytes go to.
    sent: Option<(u64, Option<usize>)>,
    flushes_answered: u64,
}

/// A host request in the array.
struct Pending {
    op: Op,
    lba: u64,
    fua: bool,
    /// A write's bytes, or a read's buffer.
    buf: Vec<u8>,
    error: Option<String>,
    reply: oneshot::Sender<Reply>,
    arrival: Nanos,
    /// Its operations sent to disks and not answered yet.
    waiting: u32,
    /// The core has answered it (its answer goes out once `waiting` is 0).
    completed: bool,
}

/// Answers waiting for every disk to flush (a FLUSH, or a FUA write once written).
struct Barrier {
    left: usize,
    error: Option<String>,
    replies: Vec<(oneshot::Sender<Reply>, Vec<u8>)>,
}

#[derive(Default)]
struct Counts {
    answered: u64,
    reads: u64,
    writes: u64,
    flushes: u64,
    errors: u64,
    first: Option<Nanos>,
    last_answer: Nanos,
    latency_ns: u128,
    /// ∫ requests in the array dt (request·ns), and where it was counted to.
    in_array_ns: u128,
    counted_to: Nanos,
}

struct Core {
    engine: Box<dyn Engine>,
    epoch: Instant,
    disks: Vec<DiskSlot>,
    /// Each disk's data move for the operation it is about to start.
    staged: HashMap<usize, DataMove>,
    pending: HashMap<u64, Pending>,
    next_id: u64,
    sector_bytes: u64,
    /// The last instant the core was given (its time never goes back).
    last: Nanos,
    /// The controller's own timers.
    wakes: BinaryHeap<Reverse<Nanos>>,
    barriers: VecDeque<Barrier>,
    /// Barriers popped from the front so far (a disk's n-th flush answers barrier n).
    barriers_done: u64,
    counts: Counts,
    /// While a disk's thread hands in its answer: that disk, and the operation the core
    /// starts on it (kept for the thread instead of sent).
    own: Option<(usize, Option<Job>)>,
}

impl Core {
    fn now(&mut self) -> Nanos {
        let t = Nanos(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX));
        self.last = self.last.max(t);
        self.last
    }

    /// Nothing in the array, at the disks or waiting for a flush.
    fn idle(&self) -> bool {
        self.pending.is_empty()
            && self.disks.iter().all(|d| d.sent.is_none())
            && self.barriers.is_empty()
    }

    /// Closes the disks' job channels: their threads end.
    fn close_disks(&mut self) {
        for d in &mut self.disks {
            d.jobs = None;
        }
    }

    fn fire_wakes(&mut self) {
        while let Some(&Reverse(at)) = self.wakes.peek() {
            if at > self.now() {
                break;
            }
            self.wakes.pop();
            let now = self.now();
            self.engine.handle(now, Event::Wake);
            self.drain();
        }
    }

    fn count_in_array(&mut self, now: Nanos) {
        let c = &mut self.counts;
        let dt = now.0.saturating_sub(c.counted_to.0);
        c.in_array_ns += u128::from(dt) * self.pending.len() as u128;
        c.counted_to = c.counted_to.max(now);
    }

    fn stats(&mut self) -> Stats {
        let now = self.now();
        if !self.pending.is_empty() {
            self.count_in_array(now);
        }
        let c = &self.counts;
        let from = c.first.unwrap_or(c.counted_to);
        let span = c.last_answer.0.saturating_sub(from.0);
        let served = c.reads + c.writes;
        Stats {
            answered: c.answered,
            reads: c.reads,
            writes: c.writes,
            flushes: c.flushes,
            in_array_mean: c.in_array_ns as f64
                / c.counted_to.0.saturating_sub(from.0).max(1) as f64,
            elapsed_s: now.0 as f64 / 1e9,
            real: Some(RealStats {
                iops: served as f64 / (span.max(1) as f64 / 1e9),
                mean_latency_ms: c.latency_ns as f64 / served.max(1) as f64 / 1e6,
                errors: c.errors,
                disks: self
                    .disks
                    .iter()
                    .map(|d| d.tally.lock().expect("tally").snapshot())
                    .collect(),
            }),
            ..Stats::default()
        }
    }

    fn accept(&mut self, req: Request, reply: oneshot::Sender<Reply>) {
        let Some((checked, reply)) = checked(req, reply, self.engine.as_ref()) else {
            return;
        };
        let (op, offset, buf, fua) = match checked {
            Checked::Io {
                op,
                offset,
                buf,
                fua,
            } => (op, offset, buf, fua),
            Checked::Flush => {
                self.counts.flushes += 1;
                self.barrier(vec![(reply, Vec::new())]);
                return;
            }
        };
        let sb = self.sector_bytes;
        let now = self.now();
        let sectors = (buf.len() as u64 / sb) as u32;
        let req = HostRequest {
            id: self.next_id,
            op,
            lba: offset / sb,
            sectors,
            arrival: now,
        };
        self.next_id += 1;
        self.count_in_array(now);
        self.counts.first.get_or_insert(now);
        self.pending.insert(
            req.id,
            Pending {
                op,
                lba: req.lba,
                fua,
                buf,
                error: None,
                reply,
                arrival: now,
                waiting: 0,
                completed: false,
            },
        );
        self.engine.handle(now, Event::Host(req));
        self.drain();
    }

    /// Waits for every disk to flush, then sends `replies`.
    fn barrier(&mut self, replies: Vec<(oneshot::Sender<Reply>, Vec<u8>)>) {
        let mut left = 0;
        for d in &self.disks {
            if let Some(j) = &d.jobs {
                if j.send(Job::Flush).is_ok() {
                    left += 1;
                }
            }
        }
        self.barriers.push_back(Barrier {
            left,
            error: None,
            replies,
        });
        self.settle_barriers();
    }

    fn settle_barriers(&mut self) {
        while self.barriers.front().is_some_and(|b| b.left == 0) {
            let b = self.barriers.pop_front().expect("a barrier");
            self.barriers_done += 1;
            for (reply, bytes) in b.replies {
                let _ = reply.send(match &b.error {
                    Some(e) => Err(EmuError::Io(e.clone())),
                    None => Ok(bytes),
                });
            }
        }
    }

    /// The core's NVRAM writes are dropped (no crash recovery yet), its data moves staged
    /// for the operation each disk starts next; every action is acted on.
    fn drain(&mut self) {
        loop {
            let mut effects = false;
            while self.engine.poll_nvram().is_some() {
                effects = true;
            }
            effects |= self.stage_moves();
            match self.engine.poll_action() {
                Some(Action::DiskBusy { disk, .. }) => self.start_op(disk),
                Some(Action::Wake { at }) => self.wakes.push(Reverse(at)),
                Some(Action::Complete(c)) => {
                    let p = self
                        .pending
                        .get_mut(&c.id)
                        .expect("an answered request is pending");
                    p.completed = true;
                    self.answer_if_ready(c.id);
                }
                None if effects => {}
                None => return,
            }
        }
    }

    /// Answers host request `id` once the core has and every disk operation serving it was
    /// answered by its disk.
    fn answer_if_ready(&mut self, id: u64) {
        let ready = self
            .pending
            .get(&id)
            .is_some_and(|p| p.completed && p.waiting == 0);
        if !ready {
            return;
        }
        let now = self.now();
        self.count_in_array(now);
        let p = self.pending.remove(&id).expect("pending");
        let counts = &mut self.counts;
        counts.answered += 1;
        counts.last_answer = counts.last_answer.max(now);
        counts.latency_ns += u128::from(now.since(p.arrival).0);
        match p.op {
            Op::Read => counts.reads += 1,
            Op::Write => counts.writes += 1,
        }
        let bytes = match p.op {
            Op::Read => p.buf,
            Op::Write => Vec::new(),
        };
        if let Some(e) = p.error {
            counts.errors += 1;
            let _ = p.reply.send(Err(EmuError::Io(e)));
        } else if p.fua {
            self.barrier(vec![(p.reply, bytes)]);
        } else {
            let _ = p.reply.send(Ok(bytes));
        }
    }

    /// Keeps the data moves polled for the operations their disks start; whether any was.
    fn stage_moves(&mut self) -> bool {
        let mut any = false;
        while let Some(mv) = self.engine.poll_data() {
            any = true;
            let disk = mv.disk;
            let earlier = self.staged.insert(disk, mv);
            assert!(
                earlier.is_none(),
                "disk {disk}: two operations started at once"
            );
        }
        any
    }

    /// Sends the operation disk `disk` just started to its thread.
    fn start_op(&mut self, disk: usize) {
        let sb = self.sector_bytes as usize;
        // An idle disk starts its operation as the action is polled: its move comes with it.
        self.stage_moves();
        let mv = self.staged.remove(&disk);
        let (job, busy) = match mv {
            Some(DataMove {
                op,
                lba,
                sectors,
                bytes: Bytes::Host(id),
                copies,
                ..
            }) => {
                let p = self
                    .pending
                    .get_mut(&id)
                    .expect("a host move's request is pending");
                p.waiting += 1;
                let at = (lba - p.lba) as usize * sb;
                let n = sectors as usize * sb;
                let data = match op {
                    Op::Write => p.buf[at..at + n].to_vec(),
                    Op::Read => Vec::new(),
                };
                let read_at = (op == Op::Read).then_some(at);
                (Job::Op { op, copies, data }, (id, read_at))
            }
            // `enable_real_disks` refused every controller whose operations move other
            // bytes: reaching here is a bug in that check.
            other => panic!("disk {disk}: a real disk cannot perform {other:?}"),
        };
        let slot = &mut self.disks[disk];
        let earlier = slot.sent.replace(busy);
        assert!(earlier.is_none(), "disk {disk}: one operation at a time");
        match &mut self.own {
            Some((d, own)) if *d == disk => *own = Some(job),
            _ => {
                if let Some(j) = &slot.jobs {
                    let _ = j.send(job);
                }
            }
        }
    }

    /// A disk's answer; returns the operation the core started on that disk in turn.
    fn disk_answered(&mut self, a: DiskAnswer) -> Option<Job> {
        self.own = Some((a.disk, None));
        self.take_answer(a);
        self.own.take().and_then(|(_, job)| job)
    }

    fn take_answer(&mut self, a: DiskAnswer) {
        match a.done {
            Done::Head(head) => self.engine.set_disk_head(a.disk, head),
            Done::Flush(r) => {
                let slot = &mut self.disks[a.disk];
                let i = (slot.flushes_answered - self.barriers_done) as usize;
                slot.flushes_answered += 1;
                let b = &mut self.barriers[i];
                b.left -= 1;
                if let Err(e) = r {
                    b.error.get_or_insert(e);
                }
                self.settle_barriers();
            }
            Done::Op { bytes, head } => {
                let (id, read_at) = self.disks[a.disk]
                    .sent
                    .take()
                    .expect("an answer to an operation sent");
                if let Some(p) = self.pending.get_mut(&id) {
                    p.waiting -= 1;
                    match (bytes, read_at) {
                        (Ok(b), Some(at)) => p.buf[at..at + b.len()].copy_from_slice(&b),
                        (Ok(_), None) => {}
                        (Err(e), _) => {
                            p.error.get_or_insert(e);
                        }
                    }
                }
                self.engine.set_disk_head(a.disk, head);
                // The core's `until` was its prediction: the operation ends now.
                let now = self.now();
                self.engine.handle(now, Event::DiskDone { disk: a.disk });
                self.drain();
                self.answer_if_ready(id);
            }
        }
    }
}

impl std::fmt::Display for RealStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.0} IOPS, mean latency {:.2} ms, {} errors",
            self.iops, self.mean_latency_ms, self.errors
        )?;
        for (i, d) in self.disks.iter().enumerate() {
            write!(
                f,
                "; disk {i} ({}): {} operations, {} requests, {} anchors, lead {:.0} µs",
                d.target, d.ops, d.requests, d.anchors, d.lead_us
            )?;
            if let Some(a) = &d.accuracy {
                write!(
                    f,
                    ", {} rotation misses, {} early, prediction error mean {:.1} µs, sd {:.1} \
                     µs, |error| p50 {:.1} µs, demerit {:.2} %",
                    a.misses,
                    a.early,
                    a.mean_error_us,
                    a.stdev_error_us,
                    a.abs_error_p50_us,
                    a.demerit_share * 100.0
                )?;
            }
        }
        Ok(())
    }
}
