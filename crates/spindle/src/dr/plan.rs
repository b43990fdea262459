//! Deferred log application (the paper's section 3.1): when the secondary's data volume
//! spins down, when it spins up to apply a batch, and the recovery time that costs.
//!
//! **Recovery time.** Were the primary lost at `t`, the secondary must get its data volume
//! spinning (the rest of a spin-down, then a spin-up; nothing if it spins) and apply every
//! byte of log not yet applied, window by window, as the applier does. A window's
//! application time `a_k` is measured (simulated) beforehand, and so is the time of each
//! of its first eighths (prefixes of its log): the window still filling is charged the
//! time of the smallest prefix that holds what it has received (its pages are a subset of
//! that prefix's, so their sorted application is no longer; the planner takes this
//! monotonicity as given). So the recovery time at `t` is bounded by `transition(t) + A(t)`
//! with `A(t) = Σ a_j` over the complete, unapplied windows, minus the progress on the one
//! being applied, plus the filling window's charge `F(t)`, a step function ([`plan`]'s
//! `filling`). `A` only jumps up at a step, and falls or stays level in between, so its
//! maximum is reached at the events the planner walks: that maximum is the **worst
//! recovery time**, reported per batch.
//!
//! **The plan** is greedy: whenever the applier has caught up, the volume spins down if
//! some later spin-up keeps the bound within the RTO through the spin-down, the standby, the
//! spin-up and the batch that follows, and if spinning down costs less energy than staying
//! idle until then; it then sleeps as long as it can (the latest such spin-up among the
//! instants aligned to the steps of `A`, found by binary search, every answer checked). Otherwise it stays spinning and applies each
//! window as it completes. The paper's closed form (`T_wnd = R_apl² T / ((R_apl − R_gen)
//! R_gen)`, `T_apl = R_apl T / (R_apl − R_gen)`, with `T` the RTO less the spin-up) is what
//! this plan comes to at constant rates; the report prints both.

use crate::{Nanos, Span};

/// Spin-down and spin-up penalties of the data volume's disks (for the mid-range drive's
/// unloaded and low-rpm modes: unload/load, rpm down/up), per disk; energy in fJ (ns × µW).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Penalties {
    pub spin_up: Span,
    pub spin_down: Span,
    pub spin_up_fj: u128,
    pub spin_down_fj: u128,
}

/// Power drawn per disk in the states the plan uses, µW.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Draw {
    pub active_uw: u64,
    pub idle_uw: u64,
    /// The low-power state the volume sleeps in (standby, or the mid-range drive's
    /// unloaded / low-rpm mode).
    pub sleep_uw: u64,
    /// Of the application time, the share the disks are busy (active); the rest idle.
    pub busy_share: f64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Idle,
    Applying,
    SpinningDown,
    Sleeping,
    SpinningUp,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    pub state: State,
    pub start: Nanos,
    pub end: Nanos,
}

pub use crate::metrics::dr::BatchReport as Batch;

#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    pub phases: Vec<Phase>,
    pub batches: Vec<Batch>,
    pub worst_recovery: Span,
    pub worst_at: Nanos,
    pub spin_ups: u64,
    pub end: Nanos,
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Infeasible {
    #[error(
        "applying one compacted window (window {window}) takes {cost_s:.3} s, more than the \
         RTO of {rto_s} s: even a data volume that never spins down misses the RTO; use a \
         smaller window"
    )]
    WindowTooSlow {
        window: usize,
        cost_s: f64,
        rto_s: f64,
    },
    #[error(
        "the applier cannot keep up with the log: at {at_s:.3} s the unapplied log would \
         take {recovery_s:.3} s to apply with the data volume spinning, more than the RTO of \
         {rto_s} s"
    )]
    CannotKeepUp {
        at_s: f64,
        recovery_s: f64,
        rto_s: f64,
    },
    #[error(
        "the RTO of {rto_s} s is below the spin-down and spin-up penalties ({down_s} s + \
         {up_s} s): a disaster during a spin-down could not be recovered in time, so the data \
         volume could never spin down"
    )]
    BelowPenalty { rto_s: f64, up_s: f64, down_s: f64 },
}

/// The plan's walk over the windows (see the module's documentation).
struct Walk<'a> {
    complete_at: &'a [Nanos],
    /// The filling window's charge from each time on (ascending; a later entry at the same
    /// time overrides).
    filling: &'a [(Nanos, Span)],
    cost: &'a [Span],
    /// `prefix[k]` = Σ cost[..k].
    prefix: Vec<u64>,
    rto: u64,
    pen: Penalties,
    end: Nanos,
}

/// The highest bound seen, and when.
#[derive(Copy, Clone, Debug, Default)]
struct Worst {
    bound: u64,
    at: Nanos,
}

impl Worst {
    fn see(&mut self, at: Nanos, bound: u64) {
        if bound > self.bound {
            *self = Worst { bound, at };
        }
    }
}

impl Walk<'_> {
    /// Windows complete by `t`.
    fn complete(&self, t: Nanos) -> usize {
        self.complete_at.partition_point(|&c| c <= t)
    }

    /// `A(t)`: the application time of everything unapplied at `t` (the complete windows
    /// from `applied` on, less `progress` on window `applied`, and the filling window's
    /// charge).
    fn backlog(&self, t: Nanos, applied: usize, progress: u64) -> u64 {
        let complete = self.complete(t);
        let filling = match self.filling.partition_point(|&(at, _)| at <= t) {
            0 => 0,
            i => self.filling[i - 1].1 .0,
        };
        debug_assert!(applied <= complete);
        self.prefix[complete] - self.prefix[applied] - progress + filling
    }

    /// The instants in `(from, to]`, before the run's end, at which `A` may jump: the
    /// filling window's steps (every window completion is one: the next window starts
    /// filling).
    fn completions(&self, from: Nanos, to: Nanos) -> impl Iterator<Item = Nanos> + '_ {
        let to = to.min(self.end);
        let i = self.filling.partition_point(|&(c, _)| c <= from);
        let mut last = None;
        self.filling[i..]
            .iter()
            .map(|&(c, _)| c)
            .take_while(move |&c| c <= to)
            .filter(move |&c| last.replace(c) != Some(c))
    }

    /// Applies every complete window from `applied` on, starting at `t` with the volume
    /// spinning: the caught-up instant, the windows applied by then, the worst bound.
    fn apply(&self, mut t: Nanos, mut applied: usize, worst: &mut Worst) -> (Nanos, usize) {
        while applied < self.complete(t) {
            if t <= self.end {
                worst.see(t, self.backlog(t, applied, 0));
            }
            let a = self.cost[applied].0;
            for c in self.completions(t, Nanos(t.0 + a)) {
                worst.see(c, self.backlog(c, applied, c.0 - t.0));
            }
            t = Nanos(t.0 + a);
            applied += 1;
        }
        if t <= self.end {
            worst.see(t, self.backlog(t, applied, 0));
        }
        (t, applied)
    }

    /// The bound while sleeping over `[d, s)` (every completion up to `s` excluded; a
    /// completion at `s` counts in the spin-up).
    fn sleeping(&self, d: Nanos, s: Nanos, applied: usize, worst: &mut Worst) {
        let up = self.pen.spin_up.0;
        if d <= self.end {
            worst.see(d, up + self.backlog(d, applied, 0));
        }
        for c in self.completions(d, s).filter(|&c| c < s) {
            worst.see(c, up + self.backlog(c, applied, 0));
        }
    }

    /// The bound over a spin-down from `f` and the sleep up to `s`.
    fn down_and_sleep(&self, f: Nanos, s: Nanos, applied: usize, worst: &mut Worst) {
        let (up, down) = (self.pen.spin_up.0, self.pen.spin_down.0);
        let d = Nanos(f.0 + down);
        worst.see(f, down + up + self.backlog(f, applied, 0));
        for c in self.completions(f, d) {
            worst.see(c, (d.0 - c.0) + up + self.backlog(c, applied, 0));
        }
        self.sleeping(d, s, applied, worst);
    }

    /// The bound over a spin-up from `s` and the batch it leads to: the caught-up instant
    /// and the windows applied by then.
    fn up_and_apply(&self, s: Nanos, applied: usize, worst: &mut Worst) -> (Nanos, usize) {
        let up = self.pen.spin_up.0;
        let spinning = Nanos(s.0 + up);
        if s <= self.end {
            worst.see(s, up + self.backlog(s, applied, 0));
        }
        for c in self.completions(s, spinning) {
            worst.see(c, (spinning.0 - c.0) + self.backlog(c, applied, 0));
        }
        self.apply(spinning, applied, worst)
    }

    /// Having caught up at `f` with `applied` windows applied: the latest spin-up instant
    /// that keeps the bound within the RTO from the spin-down on (`Some(None)`: sleep to
    /// the run's end), or None when no spin-down can.
    fn latest_spin_up(&self, f: Nanos, applied: usize) -> Option<Option<Nanos>> {
        let d = Nanos(f.0 + self.pen.spin_down.0);
        if d > self.end {
            return None;
        }
        let mut w = Worst::default();
        self.down_and_sleep(f, d, applied, &mut w);
        if w.bound > self.rto {
            return None;
        }
        // The sleep's horizon: the first instant at which sleeping on breaks the RTO.
        let up = self.pen.spin_up.0;
        let mut candidates = vec![d];
        let mut horizon = None;
        for c in self.completions(d, self.end) {
            if up + self.backlog(c, applied, 0) > self.rto {
                horizon = Some(c);
                break;
            }
            candidates.push(c);
        }
        // Nothing to come forces a spin-up: sleep to the end.
        let Some(h) = horizon else {
            return Some(None);
        };
        // A spin-up may also end at an instant before the horizon (start `up` earlier).
        let ends: Vec<Nanos> = candidates
            .iter()
            .chain([&h])
            .filter(|c| c.0 >= d.0 + up)
            .map(|c| Nanos(c.0 - up))
            .collect();
        candidates.extend(ends);
        candidates.retain(|&s| s < h);
        candidates.sort_unstable();
        candidates.dedup();
        // The latest candidate whose spin-up and batch keep the RTO: a binary search, as a
        // later spin-up only meets more backlog (each answer is checked, so a departure
        // from that only costs sleep, never the RTO).
        let feasible = |s: Nanos| {
            let mut w = Worst::default();
            self.up_and_apply(s, applied, &mut w);
            w.bound <= self.rto
        };
        if !feasible(candidates[0]) {
            return None;
        }
        let (mut lo, mut hi) = (0, candidates.len());
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if feasible(candidates[mid]) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(Some(candidates[lo]))
    }
}

/// Energy one disk spends in `phases`, fJ (a transition cut by the run's end is charged pro
/// rata, floor).
pub fn energy_fj(phases: &[Phase], pen: &Penalties, draw: &Draw) -> u128 {
    phases
        .iter()
        .map(|p| {
            let ns = p.end.0 - p.start.0;
            let part = |full: Span, fj: u128| {
                if ns >= full.0 {
                    fj
                } else {
                    fj * u128::from(ns) / u128::from(full.0)
                }
            };
            let at = |uw: u64, ns: u64| u128::from(uw) * u128::from(ns);
            match p.state {
                State::Idle => at(draw.idle_uw, ns),
                State::Applying => {
                    let busy = ((ns as f64 * draw.busy_share).round() as u64).min(ns);
                    at(draw.active_uw, busy) + at(draw.idle_uw, ns - busy)
                }
                State::Sleeping => at(draw.sleep_uw, ns),
                State::SpinningUp => part(pen.spin_up, pen.spin_up_fj),
                State::SpinningDown => part(pen.spin_down, pen.spin_down_fj),
            }
        })
        .sum()
}

/// Time in each state over `phases`, ns.
pub fn state_ns(phases: &[Phase], state: State) -> u64 {
    phases
        .iter()
        .filter(|p| p.state == state)
        .map(|p| p.end.0 - p.start.0)
        .sum()
}

/// Plans the secondary's data volume over `[0, end]`: windows complete at `complete_at`
/// (ascending; one fewer than `cost` when the last is still filling at the end) and take
/// `cost` to apply; `filling` is the charge of the window filling, as a step function of
/// time (`(from, charge)`, ascending; a later entry at the same instant overrides; zero
/// before the first; every completion is one of its steps). The volume spins at 0 with nothing applied.
pub fn plan(
    complete_at: &[Nanos],
    filling: &[(Nanos, Span)],
    cost: &[Span],
    end: Nanos,
    rto: Span,
    pen: Penalties,
    draw: &Draw,
) -> Result<Timeline, Infeasible> {
    assert!(!cost.is_empty(), "a stream has at least one window");
    assert!(complete_at.len() <= cost.len() && complete_at.is_sorted());
    assert!(filling.is_sorted_by_key(|&(t, _)| t));
    debug_assert!(
        complete_at
            .iter()
            .all(|c| filling.binary_search_by_key(c, |&(t, _)| t).is_ok()),
        "every completion is a step of the filling charge"
    );
    let s = |x: Span| x.0 as f64 / 1e9;
    if pen.spin_up.0 + pen.spin_down.0 > rto.0 {
        return Err(Infeasible::BelowPenalty {
            rto_s: s(rto),
            up_s: s(pen.spin_up),
            down_s: s(pen.spin_down),
        });
    }
    if let Some((k, a)) = cost.iter().enumerate().find(|(_, a)| **a > rto) {
        return Err(Infeasible::WindowTooSlow {
            window: k,
            cost_s: s(*a),
            rto_s: s(rto),
        });
    }
    let mut prefix = Vec::with_capacity(cost.len() + 1);
    prefix.push(0u64);
    for a in cost {
        prefix.push(prefix.last().copied().unwrap_or(0) + a.0);
    }
    let walk = Walk {
        complete_at,
        filling,
        cost,
        prefix,
        rto: rto.0,
        pen,
        end,
    };
    let mut tl = Timeline {
        phases: Vec::new(),
        batches: Vec::new(),
        worst_recovery: Span::ZERO,
        worst_at: Nanos::ZERO,
        spin_ups: 0,
        end,
    };
    let phase = |tl: &mut Timeline, state: State, start: Nanos, stop: Nanos| {
        let (start, stop) = (start.min(end), stop.min(end));
        if stop > start {
            match tl.phases.last_mut() {
                Some(p) if p.state == state && p.end == start => p.end = stop,
                _ => tl.phases.push(Phase {
                    state,
                    start,
                    end: stop,
                }),
            }
        }
    };
    let secs = |t: Nanos| t.0 as f64 / 1e9;
    let mut worst = Worst::default();
    let (mut t, mut applied) = (Nanos::ZERO, 0usize);
    while t < end {
        let mut batch_worst = Worst::default();
        let spin_up = match walk.latest_spin_up(t, applied) {
            Some(wake) => {
                let up_at = wake.unwrap_or(Nanos(end.0.saturating_add(1)));
                // Spinning down pays if its energy and the sleep's are below idling.
                let idle_until = Nanos(up_at.0 + pen.spin_up.0).min(end);
                let d = Nanos(t.0 + pen.spin_down.0);
                let idle = u128::from(draw.idle_uw) * u128::from(idle_until.0 - t.0);
                let sleep = pen.spin_down_fj
                    + u128::from(draw.sleep_uw) * u128::from(up_at.min(end).0.saturating_sub(d.0))
                    + if wake.is_some() { pen.spin_up_fj } else { 0 };
                (sleep < idle).then_some(wake)
            }
            None => None,
        };
        let from = match spin_up {
            Some(wake) => {
                let up_at = wake.unwrap_or(Nanos(end.0.saturating_add(1)));
                walk.down_and_sleep(t, up_at, applied, &mut batch_worst);
                let d = Nanos(t.0 + pen.spin_down.0);
                phase(&mut tl, State::SpinningDown, t, d);
                phase(&mut tl, State::Sleeping, d, up_at);
                if wake.is_none() {
                    worst.see(batch_worst.at, batch_worst.bound);
                    break;
                }
                tl.spin_ups += 1;
                phase(&mut tl, State::SpinningUp, up_at, up_at + pen.spin_up);
                let (f, a) = walk.up_and_apply(up_at, applied, &mut batch_worst);
                let from = up_at + pen.spin_up;
                phase(&mut tl, State::Applying, from, f);
                (Some(up_at), from, f, a)
            }
            None => {
                // Stay spinning until the next window completes, then apply it.
                let idle_until = complete_at
                    .get(walk.complete(t))
                    .copied()
                    .filter(|&next| next <= end);
                let mut idle_worst = Worst::default();
                idle_worst.see(t, walk.backlog(t, applied, 0));
                for c in walk.completions(t, idle_until.unwrap_or(end)) {
                    if Some(c) != idle_until {
                        idle_worst.see(c, walk.backlog(c, applied, 0));
                    }
                }
                let Some(next) = idle_until else {
                    phase(&mut tl, State::Idle, t, end);
                    worst.see(idle_worst.at, idle_worst.bound);
                    break;
                };
                phase(&mut tl, State::Idle, t, next);
                batch_worst.see(idle_worst.at, idle_worst.bound);
                let (f, a) = walk.apply(next, applied, &mut batch_worst);
                phase(&mut tl, State::Applying, next, f);
                (None, next, f, a)
            }
        };
        let (up_at, from, f, a) = from;
        tl.batches.push(Batch {
            spin_up_s: up_at.map(secs),
            apply_from_s: secs(from),
            apply_until_s: secs(f),
            first_window: applied,
            end_window: a,
            worst_recovery_s: batch_worst.bound as f64 / 1e9,
        });
        worst.see(batch_worst.at, batch_worst.bound);
        t = f;
        applied = a;
    }
    tl.worst_recovery = Span(worst.bound);
    tl.worst_at = worst.at;
    // Spin-downs are only planned within the RTO: a worse bound came while spinning.
    if worst.bound > rto.0 {
        return Err(Infeasible::CannotKeepUp {
            at_s: secs(worst.at),
            recovery_s: worst.bound as f64 / 1e9,
            rto_s: s(rto),
        });
    }
    Ok(tl)
}

#[cfg(test)]
mod tests;
