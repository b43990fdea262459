//! One real disk of `spindle serve --disks`: a thread that owns the target (an NBD export,
//! a block device or a file), keeps its head tracker (dissertation 3.3.2,
//! `spindle::calib::track`) and performs the core's disk operations one at a time, timing
//! every request it sends.
//!
//! Start: the tracker is synchronized on the target ([`synchronize`]: the drive file's
//! rotation checked against the target's, an anchor on the reference sector, each zone's
//! first sector). Then each operation's runs are sent one request each (a rotational
//! replica that wraps its track is two), each predicted by the tracker when issued and
//! judged when answered (hit, rotation miss, or a revolution early). While the disk has
//! nothing to do and the tracker asks for it, it re-anchors on the reference sector — a
//! burst given up the moment an operation arrives (the operation is not held up by more
//! than the read in progress).

use super::{Answered, DiskAnswer, Done};
use crate::calibrate::check::{class_name, synchronize};
use crate::calibrate::probe::{Probe, ANCHOR_READS, REFERENCE_LBA};
use crate::calibrate::{target, Event};
use serde::Serialize;
use spindle::calib::accuracy::{accuracy, Accuracy};
use spindle::calib::rotation;
use spindle::calib::track::{Tracker, Verdict};
use spindle::drive::{Drive, HeadState, Transfer};
use spindle::engine::CopyRuns;
use spindle::{Nanos, Op};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the core asks of a disk.
pub(crate) enum Job {
    /// One disk operation: read `copies[0]` (the bytes come back), or write `data` to every
    /// copy.
    Op {
        op: Op,
        copies: Vec<CopyRuns>,
        data: Vec<u8>,
    },
    Flush,
}

/// How often an idle disk asks its tracker whether to re-anchor.
const IDLE_POLL: Duration = Duration::from_millis(20);

/// One disk's head tracking so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DiskTracking {
    pub target: String,
    /// Disk operations performed, and the requests they took (a wrapped replica is two).
    pub ops: u64,
    pub requests: u64,
    /// The drive file's period, and the target's as the synchronized burst measured it.
    pub period_ms: f64,
    pub measured_period_ms: f64,
    pub interval_sigma_us: f64,
    /// Each zone's first sector after the model's angle (µs; the core schedules with the
    /// model's angles, these are for the tracker's predictions).
    pub zone_offsets_us: Vec<f64>,
    /// Anchorings on the reference sector (the start's included).
    pub anchors: u64,
    /// The disk's time answering requests (issue to answer), over the run (s).
    pub busy_s: f64,
    /// Operations the core started on the disk the moment it answered the one before, and
    /// the mean time from that answer to the next request's issue (µs): the part of the
    /// host's turnaround the model's overhead does not hold.
    pub back_to_back: u64,
    pub turnaround_us: f64,
    /// The lead added to the platter phase the schedulers see: the host's delay the model
    /// leaves out and the tracker's median slack, at most a tenth of a revolution.
    pub lead_us: f64,
    /// The tracker's slack per seek-distance class with any (class, µs), and its fit of the
    /// host's delay: constant (µs) and slope (share of the service time).
    pub slack_us: Vec<(String, f64)>,
    pub delay_constant_us: f64,
    pub delay_slope: f64,
    /// Table 3.2's statistics of the tracker's predictions over the latest
    /// [`ACCURACY_WINDOW`] requests: rotation misses (answers a revolution late), early
    /// answers, the error's spread. `None` before any request.
    pub accuracy: Option<Accuracy>,
}

/// Requests the accuracy statistics are kept over (the latest; 24 MiB a disk): a server
/// that runs for days must not grow without bound.
pub const ACCURACY_WINDOW: usize = 1 << 20;

/// The counts a disk keeps while it runs (read by the core for statistics).
#[derive(Default)]
pub(crate) struct Tally {
    pub tracking: DiskTracking,
    /// The tracker's slack per seek class this drive has (ns), named only in a snapshot.
    slack_ns: Vec<i64>,
    /// (measured, predicted) service of the latest requests (ns) and their verdicts.
    latest: std::collections::VecDeque<(f64, f64, Verdict)>,
    misses: u64,
    early: u64,
}

impl Tally {
    fn record(&mut self, measured: f64, predicted: f64, verdict: Verdict) {
        if self.latest.len() == ACCURACY_WINDOW {
            if let Some((_, _, v)) = self.latest.pop_front() {
                self.misses -= u64::from(v == Verdict::Miss);
                self.early -= u64::from(v == Verdict::Early);
            }
        }
        self.misses += u64::from(verdict == Verdict::Miss);
        self.early += u64::from(verdict == Verdict::Early);
        self.latest.push_back((measured, predicted, verdict));
    }

    /// The statistics so far.
    pub fn snapshot(&self) -> DiskTracking {
        let mut t = self.tracking.clone();
        t.slack_us = slack_classes(&self.slack_ns);
        let pairs: Vec<(f64, f64)> = self.latest.iter().map(|&(m, p, _)| (m, p)).collect();
        t.accuracy = (!pairs.is_empty()).then(|| accuracy(&pairs, self.misses, self.early));
        t
    }
}

pub(crate) struct Disk {
    pub index: usize,
    pub name: String,
    pub drive: Drive,
    pub drive_name: String,
    pub epoch: Instant,
    pub realtime: bool,
}

impl Disk {
    /// Opens and synchronizes the disk, then says so on `ready` (or why not) and serves
    /// jobs until `jobs` closes.
    pub fn run(
        self,
        jobs: Receiver<Job>,
        answered: Answered,
        tally: Arc<Mutex<Tally>>,
        ready: Sender<Result<(), String>>,
    ) {
        if self.realtime {
            crate::driver::become_realtime("disk", 48);
        }
        let mut quiet = |_: Event| {};
        let mut worker = match self.start(&mut quiet, &tally) {
            Ok(w) => {
                let _ = ready.send(Ok(()));
                w
            }
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        worker.serve(&jobs, answered);
    }

    fn start<'a>(
        self,
        events: &'a mut dyn FnMut(Event),
        tally: &Arc<Mutex<Tally>>,
    ) -> Result<Worker<'a>, String> {
        let t = target::open(&self.name, true).map_err(|e| e.to_string())?;
        let capacity = self.drive.capacity_sectors();
        if t.sectors() < capacity || t.sector_bytes() != self.drive.geometry().sector_bytes() {
            return Err(format!(
                "{}: {} sectors of {} bytes, the drive file {} describes {} of {}: not this \
                 drive",
                t.describe(),
                t.sectors(),
                t.sector_bytes(),
                self.drive_name,
                capacity,
                self.drive.geometry().sector_bytes()
            ));
        }
        let mut p = Probe::with_epoch(t, self.epoch, events);
        let sync = synchronize(&mut p, &self.drive, &self.drive_name).map_err(|e| e.to_string())?;
        {
            let mut t = tally.lock().expect("tally");
            t.tracking = DiskTracking {
                target: p.target.describe(),
                period_ms: self.drive.period().0 as f64 / 1e6,
                measured_period_ms: sync.measured_period_ns / 1e6,
                interval_sigma_us: sync.sigma_ns / 1e3,
                zone_offsets_us: sync
                    .zone_offsets_ns
                    .iter()
                    .map(|o| *o as f64 / 1e3)
                    .collect(),
                anchors: 1,
                ..DiskTracking::default()
            };
        }
        Ok(Worker {
            answered_at: Nanos::ZERO,
            chained: false,
            index: self.index,
            epoch: self.epoch,
            sector_bytes: self.drive.geometry().sector_bytes() as usize,
            period_ns: self.drive.period().0,
            tracker: sync.tracker,
            probe: p,
            tally: tally.clone(),
        })
    }
}

struct Worker<'a> {
    /// The last answer, and whether the operation at hand was started by it.
    answered_at: Nanos,
    chained: bool,
    index: usize,
    epoch: Instant,
    sector_bytes: usize,
    period_ns: u64,
    tracker: Tracker,
    probe: Probe<'a>,
    tally: Arc<Mutex<Tally>>,
}

/// Each seek class's slack, named (µs).
fn slack_classes(slack_ns: &[i64]) -> Vec<(String, f64)> {
    slack_ns
        .iter()
        .enumerate()
        .map(|(i, s)| (class_name(i), *s as f64 / 1e3))
        .collect()
}

fn ns(x: f64) -> Nanos {
    Nanos(x.max(0.0).round() as u64)
}

impl Worker<'_> {
    fn serve(&mut self, jobs: &Receiver<Job>, mut answered: Answered) {
        let disk = self.index;
        let mut send = |done: Done| answered(DiskAnswer { disk, done });
        let mut next = send(Done::Head(self.scheduling_head()));
        loop {
            self.chained = next.is_some();
            let job = match next.take() {
                Some(j) => j,
                None => match jobs.recv_timeout(IDLE_POLL) {
                    Ok(j) => j,
                    Err(RecvTimeoutError::Timeout) => {
                        if self.tracker.poll_resync(ns(self.probe.now_ns())) {
                            match self.anchor_while_idle(jobs) {
                                Ok(None) => {}
                                Ok(Some(j)) => next = Some(j),
                                // The next operation's request meets the same error.
                                Err(_) => {}
                            }
                            // The arm is on the reference sector's track now.
                            if let Some(j) = send(Done::Head(self.scheduling_head())) {
                                next.get_or_insert(j);
                            }
                        }
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                },
            };
            let done = match job {
                Job::Op { op, copies, data } => {
                    let bytes = self.perform(op, &copies, &data);
                    Done::Op {
                        bytes,
                        head: self.scheduling_head(),
                    }
                }
                Job::Flush => Done::Flush(self.probe.target.flush().map_err(|e| e.to_string())),
            };
            next = send(done);
        }
    }

    /// The head the core's schedulers see: the tracker's arm, and the anchor's phase plus
    /// a lead — the host's delay the model leaves out (the tracker's fitted constant) and
    /// the slack the tracker keeps against rotation misses (the median over the seek
    /// classes this drive has). A sector the request would reach within the lead of the
    /// head's arrival is then, to the scheduler, already past: the dissertation's slack
    /// (3.3.2), one value per disk since the core's model has no seek classes. At most a
    /// tenth of a revolution.
    fn scheduling_head(&mut self) -> HeadState {
        let head = self.tracker.head_state().expect("synchronized");
        let (c, b) = self.tracker.delay_coefficients();
        let cylinders = self.tracker.drive().geometry().cylinders();
        let all = self.tracker.slack_ns();
        let classes = (2 + cylinders.max(1).ilog2() as usize + 1).min(all.len());
        let mut slack = all[..classes].to_vec();
        slack.sort_unstable();
        let median = slack[slack.len() / 2];
        let lead_ns = (c.max(0.0) + median.max(0) as f64) as u64;
        let lead = lead_ns.min(self.period_ns / 10);
        let mut t = self.tally.lock().expect("tally");
        t.tracking.lead_us = lead as f64 / 1e3;
        t.slack_ns.clear();
        t.slack_ns.extend_from_slice(&all[..classes]);
        t.tracking.delay_constant_us = c / 1e3;
        t.tracking.delay_slope = b;
        drop(t);
        HeadState {
            phase_ns: (head.phase_ns + lead) % self.period_ns,
            ..head
        }
    }

    /// Sends each run of the operation, one request at a time; a read's bytes come back.
    fn perform(&mut self, op: Op, copies: &[CopyRuns], data: &[u8]) -> Result<Vec<u8>, String> {
        let sb = self.sector_bytes;
        let mut read = Vec::new();
        if op == Op::Read {
            let n: usize = copies.iter().flatten().map(|r| r.sectors as usize).sum();
            read = vec![0; n * sb];
        }
        let mut requests = 0;
        let mut turnaround = None;
        // (measured, predicted, verdict) of each request; an operation has one per run.
        let mut seen = Vec::with_capacity(2);
        for copy in copies {
            let mut at = 0;
            for run in copy {
                let n = run.sectors as usize * sb;
                let issued = ns(self.probe.now_ns());
                if std::mem::take(&mut self.chained) {
                    turnaround = Some(issued.since(self.answered_at));
                }
                let pred = self.tracker.predict(
                    issued,
                    Transfer {
                        op,
                        lba: run.lba,
                        sectors: run.sectors,
                    },
                );
                let answer = match op {
                    Op::Read => self.probe.target.read_into(run.lba, &mut read[at..at + n]),
                    Op::Write => {
                        let bytes = data
                            .get(at..at + n)
                            .ok_or_else(|| "a write with fewer bytes than its runs".to_string())?;
                        self.probe.target.write(run.lba, bytes)
                    }
                }
                .map_err(|e| e.to_string())?;
                let answered = ns(answer.duration_since(self.epoch).as_nanos() as f64);
                let verdict = self.tracker.handle_completion(&pred, answered);
                seen.push((
                    answered.since(issued).0 as f64,
                    pred.service.0 as f64,
                    verdict,
                ));
                self.answered_at = answered;
                requests += 1;
                at += n;
            }
        }
        let mut t = self.tally.lock().expect("tally");
        t.tracking.ops += 1;
        t.tracking.requests += requests;
        t.tracking.busy_s += seen.iter().map(|p| p.0).sum::<f64>() / 1e9;
        if let Some(d) = turnaround {
            let tr = &mut t.tracking;
            tr.turnaround_us = (tr.turnaround_us * tr.back_to_back as f64 + d.0 as f64 / 1e3)
                / (tr.back_to_back + 1) as f64;
            tr.back_to_back += 1;
        }
        for (m, p, v) in seen {
            t.record(m, p, v);
        }
        Ok(read)
    }

    /// Re-anchors on the reference sector (the burst `Probe::reanchor` reads), cut short
    /// as soon as a job arrives: anchored on the reads made so far, and the job returned.
    fn anchor_while_idle(&mut self, jobs: &Receiver<Job>) -> Result<Option<Job>, String> {
        let first = self
            .probe
            .read(REFERENCE_LBA, 1)
            .map_err(|e| e.to_string())?;
        let mut completions = Vec::with_capacity(ANCHOR_READS);
        let mut arrived = None;
        for _ in 0..ANCHOR_READS {
            match jobs.try_recv() {
                Ok(j) => {
                    arrived = Some(j);
                    break;
                }
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => break,
            }
            completions.push(
                self.probe
                    .read(REFERENCE_LBA, 1)
                    .map_err(|e| e.to_string())?,
            );
        }
        // The first read's answer marks the sector too (a burst leaves it out only because
        // it ends no revolution); it is the anchor when a job cut the burst at once.
        if completions.is_empty() {
            completions.push(first);
        }
        let (a, _) = rotation::anchor(&completions, self.period_ns as f64);
        self.tracker.handle_anchor(ns(self.probe.now_ns()), ns(a));
        self.tally.lock().expect("tally").tracking.anchors += 1;
        Ok(arrived)
    }
}
