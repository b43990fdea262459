//! The virtual-time driver: an event heap keyed by `(Nanos, seq)` drives the [`Array`] state
//! machine with a workload, and a [`Collector`] measures the result.
//!
//! Workloads come in three shapes: a closed loop (Q requests outstanding; each completion
//! issues the next request at the completion instant), timed arrivals (Poisson or a
//! trace, any iterator of requests with non-decreasing arrival times) and a closed-loop
//! replay with think times (one request outstanding; the next is issued its predecessor's
//! think time after the predecessor completes, as DiskSim's validate mode does). Nothing
//! here reads a clock or a file; progress is reported through a callback so a CLI can draw
//! a bar, and [`run_observed`] hands every completion to a second callback.

use crate::engine::{Action, Completion, Engine, Event, HostRequest};
use crate::metrics::{Collector, Edge, RebuildWatch, Report, SeriesPoint, StoppedReport};
use crate::workload::synthetic::Generator;
use crate::{Nanos, Op, Span};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// A request stream with its own arrival times.
pub type Arrivals<'a> = Box<dyn Iterator<Item = Result<HostRequest, String>> + 'a>;

/// One request of a closed-loop replay ([`Workload::Replay`]): what to issue, and how long
/// the host waits after it completes before issuing the next one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReplayRequest {
    pub op: Op,
    pub lba: u64,
    pub sectors: u32,
    /// Idle time between this request's completion and the next request's issue.
    pub think: Span,
}

/// A closed-loop replay's request stream, in issue order.
pub type ReplayRequests<'a> = Box<dyn Iterator<Item = Result<ReplayRequest, String>> + 'a>;

pub enum Workload<'a> {
    /// Iometer style: `queue_depth` requests outstanding until `requests` have been issued.
    Closed {
        generator: Generator,
        queue_depth: usize,
        requests: u64,
    },
    /// Requests arriving at their own times (open loop, trace replay); `requests` is the
    /// count when known (needed for a cool-down window). With `max_outstanding`, at most that
    /// many requests are in the array at once (a host queue depth): a request arriving when
    /// the array is full is issued at the next completion, and its latency counts from then.
    Timed {
        arrivals: Arrivals<'a>,
        requests: Option<u64>,
        max_outstanding: Option<usize>,
    },
    /// A closed-loop replay with one request outstanding (DiskSim's validate mode): the
    /// first request is issued at t = 0, request i+1 at (completion of i) + `think` of i.
    /// `count` is the number of requests when known (progress, cool-down window).
    Replay {
        requests: ReplayRequests<'a>,
        count: Option<u64>,
    },
}

impl Workload<'_> {
    /// The number of requests the workload issues, when known.
    pub fn count(&self) -> Option<u64> {
        match self {
            Workload::Closed { requests, .. } => Some(*requests),
            Workload::Timed { requests, .. } => *requests,
            Workload::Replay { count, .. } => *count,
        }
    }
}

/// What to measure (see [`crate::metrics`]): requests by issue index, and whether the run
/// goes on after the last host request to finish deferred work.
#[derive(Copy, Clone, Debug, Default)]
pub struct Window {
    pub warmup: u64,
    pub cooldown: u64,
    /// Run until no deferred work is left (and report how long that took); otherwise the
    /// run stops at the last host completion and reports the backlog.
    pub drain: bool,
    /// Sample the array's state every this long of virtual time, from 0 ([`SeriesPoint`]s
    /// in [`Report::series`]).
    pub series: Option<Span>,
    /// Give up once the measured requests' mean latency is proven to exceed this (their
    /// latencies so far already sum past it times their number: [`Report::stopped`]). A
    /// saturated configuration's queue, and the scheduler's work per request, grows without
    /// bound; its run can stop as soon as it is out of the question. Needs the request count.
    pub give_up: Option<Span>,
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("{0}")]
    Workload(String),
    #[error("request {index} (arrival {arrival}) lies at sectors {lba}..{end}, beyond the array's {capacity} sectors")]
    OutOfRange {
        index: u64,
        arrival: Nanos,
        lba: u64,
        end: u64,
        capacity: u64,
    },
    #[error("request {index} arrives at {arrival}, before the previous request ({previous}): arrivals must not go back in time")]
    Unordered {
        index: u64,
        arrival: Nanos,
        previous: Nanos,
    },
}

/// The heap's key for a controller's timer ([`Action::Wake`]) instead of a disk.
const WAKE: usize = usize::MAX;

/// Pending disk completions and timers, keyed by `(time, insertion order)` so ties resolve the same
/// way on every run.
struct DiskEvents {
    heap: BinaryHeap<Reverse<(Nanos, u64, usize)>>,
    seq: u64,
    /// Timers in the heap.
    wakes: usize,
}

impl DiskEvents {
    fn with_capacity(n: usize) -> DiskEvents {
        DiskEvents {
            heap: BinaryHeap::with_capacity(n),
            seq: 0,
            wakes: 0,
        }
    }

    /// Drains the array's actions: disk starts become pending completions; the first host
    /// completion is returned (the caller may answer it before the array dispatches again).
    fn pump(&mut self, array: &mut impl Engine) -> Option<Completion> {
        while let Some(action) = array.poll_action() {
            match action {
                Action::DiskBusy { disk, until } => {
                    self.seq += 1;
                    self.heap.push(Reverse((until, self.seq, disk)));
                }
                Action::Complete(c) => return Some(c),
                Action::Wake { at } => {
                    self.wakes += 1;
                    self.seq += 1;
                    self.heap.push(Reverse((at, self.seq, WAKE)));
                }
            }
        }
        None
    }

    /// Only timers are pending and none paces a rebuild: a drain is over (the disks are
    /// idle, so the work left is work the controller chose to defer, as without timers; a
    /// disk failure scheduled after the workload never happens).
    fn only_idle_timers(&self, array: &impl Engine) -> bool {
        self.heap.len() == self.wakes
            && array
                .rebuild()
                .is_none_or(|r| r.started.is_none() || r.done.is_some())
    }

    fn peek(&self) -> Option<Nanos> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// The next event: a disk completion or a controller's timer.
    fn pop(&mut self) -> Option<(Nanos, Event)> {
        self.heap.pop().map(|Reverse((t, _, disk))| {
            let ev = if disk == WAKE {
                self.wakes -= 1;
                Event::Wake
            } else {
                Event::DiskDone { disk }
            };
            (t, ev)
        })
    }
}

/// Runs `workload` on `array` to completion. `progress(done, total)` is called every 2^14
/// completions.
pub fn run(
    array: impl Engine,
    workload: Workload<'_>,
    window: Window,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Report, SimError> {
    run_observed(array, workload, window, progress, &mut |_| {})
}

/// The state of `array` at `at` for a time series.
fn sample(array: &dyn Engine, at: Nanos) -> SeriesPoint {
    let b = array.backlog();
    let c = array.cache(at);
    SeriesPoint {
        t_s: at.0 as f64 / 1e9,
        outstanding: array.outstanding() as u64,
        backlog_ops: b.ops,
        nvram_entries: b.nvram_entries,
        occupied_blocks: c.map(|c| c.occupied_blocks),
        occupancy: c.map(|c| {
            if c.capacity_blocks == 0 {
                0.0
            } else {
                c.occupied_blocks as f64 / c.capacity_blocks as f64
            }
        }),
        overflows: c.map(|c| c.overflows),
    }
}

/// A window edge of `array` at `at` (no event after `at` handled yet).
fn edge(array: &dyn Engine, at: Nanos) -> Edge {
    Edge {
        at,
        busy: (0..array.disk_count()).map(|d| array.busy(d, at)).collect(),
        backlog: array.backlog(),
        cache: array.cache(at),
        paged: array.paged(),
        power: (0..array.disk_count())
            .map(|d| array.power(d, at))
            .collect(),
        latent: array.latent(),
    }
}

/// [`run`], also handing every host completion (warm-up and cool-down included) to
/// `on_complete` in completion order: `c.latency()` is the request's issue-to-completion time
/// (a trace request that waited for a host slot was issued after its arrival).
pub fn run_observed(
    mut array: impl Engine,
    workload: Workload<'_>,
    window: Window,
    progress: &mut dyn FnMut(u64, Option<u64>),
    on_complete: &mut dyn FnMut(&Completion),
) -> Result<Report, SimError> {
    let (total, timed) = (workload.count(), matches!(workload, Workload::Timed { .. }));
    let mut collector = Collector::new(window.warmup, total, window.cooldown, timed);
    let mut events = DiskEvents::with_capacity(array.disk_count() * 2);
    let mut issued = 0u64;
    let mut done = 0u64;
    let mut last_host_done = Nanos::ZERO;
    let mut last_event = Nanos::ZERO;
    // Requests issued after their arrival (they waited in the host): id → arrival.
    let mut held: HashMap<u64, Nanos> = HashMap::new();
    let capacity = array.capacity_sectors();
    let mut rebuild_watch = RebuildWatch::default();
    // A timed run that gave up: requests still waiting for a host slot, and not yet arrived.
    let mut unanswered_in_host = 0u64;
    let mut not_arrived: Option<u64> = None;

    let mut series: Vec<SeriesPoint> = Vec::new();
    let mut next_sample = window.series.map(|_| Nanos::ZERO);
    // Set when the run gives up (`window.give_up`): the instant and the proven bound (ns).
    let mut gave_up: Option<(Nanos, f64)> = None;
    // Before the array handles anything at `t`: the window may open; samples due up to `t`
    // see the state the last event left (nothing changes between events).
    macro_rules! reach {
        ($t:expr) => {{
            let t: Nanos = $t;
            while let (Some(at), Some(step)) = (next_sample, window.series) {
                if at > t || step.0 == 0 {
                    break;
                }
                series.push(sample(&array, at));
                next_sample = Some(at + step);
            }
            collector.reach(t, |at| edge(&array, at));
            last_event = t;
            if let Some(limit) = window.give_up {
                if gave_up.is_none() {
                    if let Some(b) = collector.mean_latency_at_least(t) {
                        if b > limit.0 as f64 {
                            gave_up = Some((t, b));
                        }
                    }
                }
            }
        }};
    }
    // Issues `r` at `at` (its arrival, or later if it waited in the host).
    macro_rules! issue {
        ($req:expr, $at:expr) => {{
            let mut r: HostRequest = $req;
            let at: Nanos = $at;
            let end = r.lba + u64::from(r.sectors);
            if r.sectors == 0 || end > capacity {
                return Err(SimError::OutOfRange {
                    index: r.id,
                    arrival: r.arrival,
                    lba: r.lba,
                    end,
                    capacity,
                });
            }
            if at > r.arrival {
                held.insert(r.id, r.arrival);
                r.arrival = at;
            }
            reach!(at);
            array.handle(at, Event::Host(r));
            issued += 1;
        }};
    }
    macro_rules! record {
        ($c:expr) => {{
            let c: Completion = $c;
            let arrived = if held.is_empty() {
                c.arrival
            } else {
                held.remove(&c.id).unwrap_or(c.arrival)
            };
            collector.on_complete(&c, arrived, |at| edge(&array, at));
            rebuild_watch.observe(array.rebuild(), &c, arrived);
            on_complete(&c);
            last_host_done = last_host_done.max(c.done);
            done += 1;
            if done & 0x3fff == 0 {
                progress(done, total);
            }
        }};
    }
    // Without draining, the run ends once every host request is answered.
    let stop_early = !window.drain;

    match workload {
        Workload::Closed {
            mut generator,
            queue_depth,
            requests,
        } => {
            assert!(queue_depth >= 1, "queue depth is validated to be >= 1");
            let first = (queue_depth as u64).min(requests);
            for i in 0..first {
                let d = generator.draw(i as usize);
                collector.on_arrival(i, Nanos::ZERO);
                let r = HostRequest {
                    id: i,
                    op: d.op,
                    lba: d.lba,
                    sectors: d.sectors,
                    arrival: Nanos::ZERO,
                };
                issue!(r, Nanos::ZERO);
            }
            // Closed-loop streams: request i belongs to stream i mod Q.
            loop {
                if gave_up.is_some() {
                    break;
                }
                while let Some(c) = events.pump(&mut array) {
                    record!(c);
                    if issued < requests {
                        let d = generator.draw((c.id % queue_depth as u64) as usize);
                        collector.on_arrival(issued, c.done);
                        let r = HostRequest {
                            id: issued,
                            op: d.op,
                            lba: d.lba,
                            sectors: d.sectors,
                            arrival: c.done,
                        };
                        issue!(r, c.done);
                    }
                }
                if (stop_early || events.only_idle_timers(&array))
                    && issued == requests
                    && array.outstanding() == 0
                {
                    break;
                }
                let Some((t, ev)) = events.pop() else {
                    break;
                };
                reach!(t);
                array.handle(t, ev);
            }
        }
        Workload::Timed {
            mut arrivals,
            max_outstanding,
            ..
        } => {
            let mut next = arrivals.next().transpose().map_err(SimError::Workload)?;
            let mut previous = Nanos::ZERO;
            let mut now = Nanos::ZERO;
            let limit = max_outstanding.unwrap_or(usize::MAX);
            assert!(limit >= 1, "max_outstanding is validated to be >= 1");
            // Arrived requests waiting for a free slot, in arrival order.
            let mut host: VecDeque<HostRequest> = VecDeque::new();
            let mut arrived = 0u64;
            if next.is_none() {
                collector.set_total(0);
            }
            loop {
                if gave_up.is_some() {
                    unanswered_in_host = host.len() as u64;
                    not_arrived = total.map(|n| n.saturating_sub(arrived));
                    break;
                }
                while let Some(c) = events.pump(&mut array) {
                    record!(c);
                }
                // A slot freed by a completion goes to the longest-waiting request; what
                // the array does with it is polled before anything else happens (its disk
                // may start now, before the next arrival or completion).
                let mut from_host = false;
                while array.outstanding() < limit {
                    let Some(r) = host.pop_front() else { break };
                    issue!(r, now);
                    from_host = true;
                }
                if from_host {
                    continue;
                }
                if (stop_early || events.only_idle_timers(&array))
                    && next.is_none()
                    && host.is_empty()
                    && array.outstanding() == 0
                {
                    break;
                }
                // Completions at the same instant as an arrival are handled first.
                let take_arrival = match (&next, events.peek()) {
                    (None, None) => break,
                    (Some(r), Some(t)) => r.arrival < t,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                };
                if take_arrival {
                    let r = next.take().expect("an arrival is pending");
                    if r.arrival < previous {
                        return Err(SimError::Unordered {
                            index: r.id,
                            arrival: r.arrival,
                            previous,
                        });
                    }
                    previous = r.arrival;
                    now = r.arrival;
                    reach!(now);
                    collector.on_arrival(r.id, now);
                    arrived += 1;
                    if host.is_empty() && array.outstanding() < limit {
                        issue!(r, now);
                    } else {
                        host.push_back(r);
                    }
                    next = arrivals.next().transpose().map_err(SimError::Workload)?;
                    match &next {
                        Some(n) => array.prefetch(n.lba),
                        None => collector.set_total(arrived),
                    }
                } else {
                    let (t, ev) = events.pop().expect("a disk completion is pending");
                    now = t;
                    reach!(t);
                    array.handle(t, ev);
                }
            }
            assert!(
                host.is_empty() || gave_up.is_some(),
                "the run ended with requests waiting in the host"
            );
        }
        Workload::Replay { mut requests, .. } => {
            // `next_at`: when the next request is due (None while one is outstanding);
            // `think`: the outstanding request's think time.
            let mut next_at = Some(Nanos::ZERO);
            let mut think = Span::ZERO;
            let mut outstanding: Option<u64> = None;
            let mut exhausted = false;
            loop {
                if gave_up.is_some() {
                    break;
                }
                while let Some(c) = events.pump(&mut array) {
                    if outstanding == Some(c.id) {
                        outstanding = None;
                        next_at = Some(c.done + think);
                    }
                    record!(c);
                }
                if (stop_early || events.only_idle_timers(&array))
                    && exhausted
                    && outstanding.is_none()
                {
                    break;
                }
                // Disk events at the instant the next request is due are handled first (a
                // drive may keep working after it answered, e.g. a buffered write).
                let take_next = match (next_at, events.peek()) {
                    (None, None) => break,
                    (Some(at), Some(t)) => at < t,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                };
                if take_next {
                    let at = next_at.take().expect("a request is due");
                    assert!(
                        outstanding.is_none(),
                        "replay keeps one request outstanding"
                    );
                    let Some(r) = requests.next().transpose().map_err(SimError::Workload)? else {
                        exhausted = true;
                        collector.set_total(issued);
                        continue;
                    };
                    think = r.think;
                    outstanding = Some(issued);
                    collector.on_arrival(issued, at);
                    let r = HostRequest {
                        id: issued,
                        op: r.op,
                        lba: r.lba,
                        sectors: r.sectors,
                        arrival: at,
                    };
                    issue!(r, at);
                } else {
                    let (t, ev) = events.pop().expect("a disk completion is pending");
                    reach!(t);
                    array.handle(t, ev);
                }
            }
            assert!(
                outstanding.is_none() || gave_up.is_some(),
                "the replay ended with its request unanswered"
            );
        }
    }
    assert!(
        array.outstanding() == 0 || gave_up.is_some(),
        "the run ended with host requests unanswered"
    );
    assert!(
        held.is_empty() || gave_up.is_some(),
        "every held request was answered"
    );
    if let Some((at, _)) = gave_up {
        collector.stop(at, |at| edge(&array, at));
    }
    progress(done, total);
    let counters: Vec<_> = (0..array.disk_count()).map(|d| array.counters(d)).collect();
    let busy: u64 = (0..array.disk_count())
        .map(|d| array.busy(d, last_event).total().0)
        .sum();
    let logging: u64 = counters.iter().map(|c| c.map_logging.0).sum();
    let drained_s = window
        .drain
        .then(|| last_event.saturating_since(last_host_done).0 as f64 / 1e9);
    let mut report = collector.finish(counters, array.sector_bytes(), issued, drained_s);
    report.series = series;
    if let (Some((at, bound)), Some(limit)) = (gave_up, window.give_up) {
        report.stopped = Some(StoppedReport {
            at_s: at.0 as f64 / 1e9,
            limit_ms: limit.as_ms_f64(),
            mean_ms_at_least: bound / 1e6,
            unanswered: array.outstanding() as u64 + unanswered_in_host,
            not_arrived: if timed {
                not_arrived
            } else {
                total.map(|n| n.saturating_sub(issued))
            },
        });
    }
    report.rebuild = rebuild_watch.finish(array.rebuild());
    if let Some(r) = &report.rebuild {
        report.rebuild_s = Some(r.started_s.zip(r.done_s).map(|(a, b)| b - a));
    }
    if let Some(t) = array.recovery_time() {
        report.map_recovery_ms = Some(t.as_ms_f64());
        report.map_logging_share = Some(if busy == 0 {
            0.0
        } else {
            logging as f64 / busy as f64
        });
    }
    Ok(report)
}
