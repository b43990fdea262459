//! Power states of a drive and the spin-down policies that move a disk between them.
//!
//! A drive file's `[power]` ([`PowerSpec`]) gives the draw of each state in watts and each
//! transition's time and energy; it validates into an integer [`PowerModel`] (µW, ns, fJ).
//! An experiment's `[power]` picks a [`PowerPolicy`]. Each disk keeps a [`PowerClock`]
//! (inside its [`crate::engine::DiskClock`]).
//!
//! States: **active** (an operation runs: seeking, transferring, rotating for it), **idle**
//! (spinning, no operation), and the low-power states of [`LowPower`]: **standby** (spun
//! down), **unloaded** (heads unloaded, still spinning) and **low rpm**, each entered by a
//! transition down (spin-down, unload, rpm down) and left by a transition up (spin-up,
//! load, rpm up) with their own time and energy. A transition is never cut short: a request
//! arriving during a transition down waits for it to end, then for the transition up.
//!
//! **No timers.** Between two events a disk's state is a function of time alone (idle until
//! the timeout, then the transition down, then the low state), and nothing outside the disk
//! sees the moment it changes. So the clock keeps the *tail* of the disk's timeline — when it
//! went idle and when it will go down — and evaluates it lazily: at the next operation
//! ([`PowerClock::wake`], which returns when the disk can start it) and at a report's window
//! edges ([`PowerClock::totals`]). A policy of `never` keeps no tail at all.
//!
//! Units: time is integer ns; power is integer µW; energy is integer fJ (ns × µW), so a total
//! is exact and never drifts. A transition cut by a window edge is charged pro rata (floor).

use crate::{Nanos, Span};
use serde::{Deserialize, Serialize};

/// A drive file's `[power]` section, as written.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PowerSpec {
    /// Draw while an operation runs (seeking, transferring, rotating for it), W.
    pub active_w: f64,
    /// Draw while spinning with no operation, W.
    pub idle_w: f64,
    /// Draw when spun down, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standby_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_down_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_down_j: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_up_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_up_j: Option<f64>,
    /// Draw with the heads unloaded (still spinning), W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unloaded_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unload_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unload_j: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_j: Option<f64>,
    /// Draw spinning at the low rpm, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_rpm_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm_down_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm_down_j: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm_up_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm_up_j: Option<f64>,
}

/// A low-power state.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LowPower {
    /// Spun down (the paper's non-spinning mode).
    #[default]
    Standby,
    /// Heads unloaded, platters spinning.
    Unloaded,
    /// Spinning at a lower rpm.
    LowRpm,
}

impl LowPower {
    pub const ALL: [LowPower; 3] = [LowPower::Standby, LowPower::Unloaded, LowPower::LowRpm];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            LowPower::Standby => "standby",
            LowPower::Unloaded => "unloaded",
            LowPower::LowRpm => "low_rpm",
        }
    }
}

/// A transition's time and energy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    pub time: Span,
    pub energy_fj: u128,
}

impl Transition {
    /// Energy of the first `part` of this transition (pro rata, floor; all of it when
    /// `part >= time`).
    fn energy_of(&self, part: Span) -> u128 {
        if part.0 >= self.time.0 {
            self.energy_fj
        } else {
            self.energy_fj * u128::from(part.0) / u128::from(self.time.0)
        }
    }
}

/// A low-power state's draw and its transitions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LowState {
    pub power_uw: u64,
    pub down: Transition,
    pub up: Transition,
}

/// A drive's validated power data: integer µW, ns, fJ.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PowerModel {
    pub active_uw: u64,
    pub idle_uw: u64,
    /// By [`LowPower::index`]; `None` when the drive has no such state.
    pub low: [Option<LowState>; 3],
}

/// A `[power]` value that cannot be used: the key (relative to `power.`) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerError {
    pub key: String,
    pub msg: String,
}

fn watts(key: &str, v: f64) -> Result<u64, PowerError> {
    if v.is_finite() && (0.0..=10_000.0).contains(&v) {
        Ok((v * 1e6).round() as u64)
    } else {
        Err(PowerError {
            key: key.into(),
            msg: format!("must be a power within 0..10000 W, got {v}"),
        })
    }
}

fn seconds(key: &str, v: f64) -> Result<Span, PowerError> {
    if v.is_finite() && v > 0.0 && v <= 3600.0 {
        Ok(Span((v * 1e9).round() as u64))
    } else {
        Err(PowerError {
            key: key.into(),
            msg: format!("must be a time within 0..3600 s, more than 0, got {v}"),
        })
    }
}

fn joules(key: &str, v: f64) -> Result<u128, PowerError> {
    if v.is_finite() && (0.0..=1e6).contains(&v) {
        // J → µJ rounded, then exact to fJ.
        Ok(u128::from((v * 1e6).round() as u64) * 1_000_000_000)
    } else {
        Err(PowerError {
            key: key.into(),
            msg: format!("must be an energy within 0..1000000 J, got {v}"),
        })
    }
}

impl PowerModel {
    /// Validates a drive file's `[power]`: every draw within 0..10000 W, every transition
    /// time above 0 s, every energy ≥ 0 J; a low state is given with all five of its keys or
    /// none of them.
    pub fn from_spec(s: &PowerSpec) -> Result<PowerModel, PowerError> {
        let state =
            |names: [&str; 5], vals: [Option<f64>; 5]| -> Result<Option<LowState>, PowerError> {
                let given = vals.iter().filter(|v| v.is_some()).count();
                if given == 0 {
                    return Ok(None);
                }
                if given < 5 {
                    let missing = names
                        .iter()
                        .zip(vals)
                        .filter(|(_, v)| v.is_none())
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ");
                    return Err(PowerError {
                        key: names[0].into(),
                        msg: format!(
                            "a low-power state needs all of {}; missing {missing}",
                            names.join(", ")
                        ),
                    });
                }
                let v = |i: usize| vals[i].unwrap_or_default();
                Ok(Some(LowState {
                    power_uw: watts(names[0], v(0))?,
                    down: Transition {
                        time: seconds(names[1], v(1))?,
                        energy_fj: joules(names[2], v(2))?,
                    },
                    up: Transition {
                        time: seconds(names[3], v(3))?,
                        energy_fj: joules(names[4], v(4))?,
                    },
                }))
            };
        let m = PowerModel {
            active_uw: watts("active_w", s.active_w)?,
            idle_uw: watts("idle_w", s.idle_w)?,
            low: [
                state(
                    [
                        "standby_w",
                        "spin_down_s",
                        "spin_down_j",
                        "spin_up_s",
                        "spin_up_j",
                    ],
                    [
                        s.standby_w,
                        s.spin_down_s,
                        s.spin_down_j,
                        s.spin_up_s,
                        s.spin_up_j,
                    ],
                )?,
                state(
                    ["unloaded_w", "unload_s", "unload_j", "load_s", "load_j"],
                    [s.unloaded_w, s.unload_s, s.unload_j, s.load_s, s.load_j],
                )?,
                state(
                    [
                        "low_rpm_w",
                        "rpm_down_s",
                        "rpm_down_j",
                        "rpm_up_s",
                        "rpm_up_j",
                    ],
                    [
                        s.low_rpm_w,
                        s.rpm_down_s,
                        s.rpm_down_j,
                        s.rpm_up_s,
                        s.rpm_up_j,
                    ],
                )?,
            ],
        };
        Ok(m)
    }

    pub fn state(&self, s: LowPower) -> Option<&LowState> {
        self.low[s.index()].as_ref()
    }

    /// The break-even time of `s` (Benini, Bogliolo and De Micheli, "A survey of design
    /// techniques for system-level dynamic power management", IEEE Trans. VLSI Systems 8(3),
    /// 2000, eq. 1): the shortest idle period, counted from the start of the transition down,
    /// for which going down saves energy over idling: `(E_tr − P_low·T_tr) / (P_idle −
    /// P_low)` with `E_tr`, `T_tr` the transitions' energy and time, at least `T_tr`. `None`
    /// when the state draws no less than idle (never worth it).
    pub fn break_even(&self, s: LowPower) -> Option<Span> {
        let st = self.state(s)?;
        if st.power_uw >= self.idle_uw {
            return None;
        }
        let t_tr = st.down.time.0 + st.up.time.0;
        let e_tr = st.down.energy_fj + st.up.energy_fj;
        let low = u128::from(st.power_uw) * u128::from(t_tr);
        let ns = e_tr.saturating_sub(low) / u128::from(self.idle_uw - st.power_uw);
        let ns = u64::try_from(ns).unwrap_or(u64::MAX);
        Some(Span(ns.max(t_tr)))
    }
}

/// When a disk goes to a low-power state by itself (an experiment's `[power] policy`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum PowerPolicy {
    /// Always spinning (the default: results as without power states).
    #[default]
    Never,
    /// Down to `state` after `timeout` idle.
    Timeout { timeout: Span, state: LowPower },
    /// Down to `state` after an idle time that adapts: at each wake-up, doubled (up to
    /// `max`) when the stay down was shorter than the break-even time, halved (down to
    /// `min`) otherwise — the multiplicative increase/decrease of Douglis, Krishnan and
    /// Bershad, "Adaptive Disk Spin-down Policies for Mobile Computers" (USENIX MLICS 1995).
    Adaptive {
        initial: Span,
        min: Span,
        max: Span,
        state: LowPower,
    },
    /// Only on command ([`PowerCommand`]).
    Explicit,
}

/// A command to a disk's power state (the explicit policy; accepted under every policy).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PowerCommand {
    /// Go down to this state now, or as soon as the running operation ends; ignored when
    /// the disk is already down or going down.
    Down(LowPower),
    /// Come back up now (after a transition down that is still running); ignored when the
    /// disk is spinning.
    Up,
}

/// A disk's cumulative time outside the spinning states, transitions and their energy, up to
/// an instant; with the draws to turn a window of them into joules.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PowerTotals {
    /// Time in each low state, by [`LowPower::index`], ns.
    pub low_ns: [u64; 3],
    /// Time in transitions (down and up), ns.
    pub transition_ns: u64,
    pub transition_fj: u128,
    /// Spin-ups begun (transitions up from standby).
    pub spin_ups: u64,
    /// The draws (copied from the model).
    pub active_uw: u64,
    pub idle_uw: u64,
    pub low_uw: [u64; 3],
}

impl PowerTotals {
    /// What accrued between `earlier` and `self`.
    pub fn since(&self, earlier: &PowerTotals) -> PowerTotals {
        let mut d = *self;
        for i in 0..3 {
            d.low_ns[i] = self.low_ns[i].saturating_sub(earlier.low_ns[i]);
        }
        d.transition_ns = self.transition_ns.saturating_sub(earlier.transition_ns);
        d.transition_fj = self.transition_fj.saturating_sub(earlier.transition_fj);
        d.spin_ups = self.spin_ups.saturating_sub(earlier.spin_ups);
        d
    }

    /// Time spinning idle in a window of `window_ns` with `busy_ns` of operations: what is
    /// left after operations, low states and transitions.
    pub fn idle_ns(&self, busy_ns: u64, window_ns: u64) -> u64 {
        let low: u64 = self.low_ns.iter().sum();
        window_ns.saturating_sub(busy_ns + low + self.transition_ns)
    }

    /// Energy of a window of `window_ns` (these totals taken over it) with `busy_ns` of
    /// operations, fJ.
    pub fn energy_fj(&self, busy_ns: u64, window_ns: u64) -> u128 {
        let mut e = u128::from(busy_ns) * u128::from(self.active_uw)
            + u128::from(self.idle_ns(busy_ns, window_ns)) * u128::from(self.idle_uw)
            + self.transition_fj;
        for i in 0..3 {
            e += u128::from(self.low_ns[i]) * u128::from(self.low_uw[i]);
        }
        e
    }
}

/// The part of a disk's timeline not yet folded into the totals, from `from` on: optionally
/// the rest of a transition down and the low state after it (`prior`, begun before a
/// transition up), a transition up, spinning, and an optional transition down (with the low
/// state after it, for ever).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Tail {
    from: Nanos,
    /// The transition down to this state that began at this instant (≤ `from`), the disk in
    /// the state from its end until `up` begins.
    prior: Option<(Nanos, LowPower)>,
    /// A transition up from this state over `[start, end)` (`start` ≥ `from`).
    up: Option<(LowPower, Nanos, Nanos)>,
    /// A transition down to this state beginning at this instant (≥ the end of `up`).
    down: Option<(Nanos, LowPower)>,
}

impl Tail {
    /// When the transition up ends (`from` without one).
    fn up_end(&self) -> Nanos {
        self.up.map_or(self.from, |(_, _, e)| e)
    }
}

/// One disk's power state over time (see the module doc). Call order: [`PowerClock::wake`]
/// before an operation starts (it starts at the instant returned), [`PowerClock::idle`] when
/// it ends; [`PowerClock::totals`] and [`PowerClock::command`] at any instant not before the
/// last one given.
#[derive(Clone, Debug)]
pub struct PowerClock {
    model: PowerModel,
    policy: PowerPolicy,
    /// The adaptive policy's current idle time before going down.
    timeout: Span,
    acc: PowerTotals,
    tail: Tail,
    /// A [`PowerCommand::Down`] that waits for the running operation to end.
    pending_down: Option<LowPower>,
}

impl PowerClock {
    /// A disk that is idle (spinning) at time zero.
    ///
    /// Panics if `policy` names a low state the model lacks (the configuration checks it).
    pub fn new(model: PowerModel, policy: PowerPolicy) -> PowerClock {
        let (timeout, down) = match policy {
            PowerPolicy::Never | PowerPolicy::Explicit => (Span::ZERO, None),
            PowerPolicy::Timeout { timeout, state } => (timeout, Some(state)),
            PowerPolicy::Adaptive { initial, state, .. } => (initial, Some(state)),
        };
        if let Some(s) = down {
            assert!(
                model.state(s).is_some(),
                "policy state {s:?} not in the model"
            );
        }
        let acc = PowerTotals {
            active_uw: model.active_uw,
            idle_uw: model.idle_uw,
            low_uw: model.low.map(|s| s.map_or(0, |s| s.power_uw)),
            ..PowerTotals::default()
        };
        let mut c = PowerClock {
            model,
            policy,
            timeout,
            acc,
            tail: Tail {
                from: Nanos::ZERO,
                prior: None,
                up: None,
                down: None,
            },
            pending_down: None,
        };
        c.idle(Nanos::ZERO);
        c
    }

    pub fn model(&self) -> &PowerModel {
        &self.model
    }

    /// The adaptive policy's current timeout (the fixed one for `timeout`).
    pub fn timeout(&self) -> Span {
        self.timeout
    }

    fn low(&self, s: LowPower) -> &LowState {
        self.model.state(s).expect("a state the model has")
    }

    /// Cumulative totals up to `t` (t ≥ the last instant given).
    pub fn totals(&self, t: Nanos) -> PowerTotals {
        let mut a = self.acc;
        let tail = &self.tail;
        if t <= tail.from {
            return a;
        }
        if let (Some((at, s)), Some((_, up_from, _))) = (tail.prior, tail.up) {
            let st = self.low(s);
            let down_end = at + st.down.time;
            if tail.from < down_end {
                let x = t.min(down_end);
                a.transition_ns += x.since(tail.from).0;
                // Cumulative floors: the part before `from` is already in `acc`.
                a.transition_fj +=
                    st.down.energy_of(x.since(at)) - st.down.energy_of(tail.from.since(at));
            }
            let (lo, hi) = (tail.from.max(down_end), t.min(up_from));
            if hi > lo {
                a.low_ns[s.index()] += hi.since(lo).0;
            }
        }
        if let Some((s, start, end)) = tail.up {
            if t > start {
                let part = t.min(end).since(start);
                a.transition_ns += part.0;
                a.transition_fj += self.low(s).up.energy_of(part);
                if s == LowPower::Standby {
                    a.spin_ups += 1;
                }
            }
        }
        if let Some((at, s)) = tail.down {
            if t > at {
                let st = self.low(s);
                let part = Span((t.0 - at.0).min(st.down.time.0));
                a.transition_ns += part.0;
                a.transition_fj += st.down.energy_of(part);
                let low_from = at.0 + st.down.time.0;
                if t.0 > low_from {
                    a.low_ns[s.index()] += t.0 - low_from;
                }
            }
        }
        a
    }

    /// An operation is to start at `now`: returns when the disk can start it (`now` when
    /// spinning; after the transition down that is running, if any, and a transition up,
    /// when down). A pending transition down is called off.
    #[cold]
    #[inline(never)]
    pub fn wake(&mut self, now: Nanos) -> Nanos {
        assert!(
            now >= self.tail.from,
            "time went backwards: {now:?} < {:?}",
            self.tail.from
        );
        self.pending_down = None;
        match self.tail.down {
            Some((at, s)) if at <= now => self.go_up(now, at, s),
            _ => {
                self.tail.down = None;
                now.max(self.tail.up_end())
            }
        }
    }

    /// The transition down to `s` began at `at` (≤ `now`): fold the tail up to when the
    /// transition up can begin, begin it, return when it ends.
    fn go_up(&mut self, now: Nanos, at: Nanos, s: LowPower) -> Nanos {
        let st = *self.low(s);
        let up_from = now.max(at + st.down.time);
        self.acc = self.totals(now);
        if let PowerPolicy::Adaptive { min, max, .. } = self.policy {
            // The idle period after the disk began going down, until it was needed.
            let stayed = now.since(at);
            let short = self.model.break_even(s).is_none_or(|be| stayed < be);
            self.timeout = if short {
                Span(self.timeout.0.saturating_mul(2).min(max.0))
            } else {
                Span((self.timeout.0 / 2).max(min.0))
            };
        }
        let end = up_from + st.up.time;
        self.tail = Tail {
            from: now,
            prior: Some((at, s)),
            up: Some((s, up_from, end)),
            down: None,
        };
        assert!(end >= now, "a disk comes up after it is asked to");
        end
    }

    /// The disk's operation ended at `at`: it idles, and the policy decides when it goes
    /// down.
    #[cold]
    #[inline(never)]
    pub fn idle(&mut self, at: Nanos) {
        let down = match (self.pending_down.take(), self.policy) {
            (Some(s), _) => Some((at, s)),
            (None, PowerPolicy::Timeout { state, .. } | PowerPolicy::Adaptive { state, .. }) => {
                Some((at + self.timeout, state))
            }
            (None, PowerPolicy::Never | PowerPolicy::Explicit) => None,
        };
        // Never before the transition up ends.
        let up_end = self.tail.up_end();
        self.tail.down = down.map(|(t, s)| (t.max(up_end), s));
    }

    /// A command at `now`; `busy`: an operation is running (a down waits for its end).
    /// A `Down` to a state the drive lacks is ignored (the caller checks it).
    pub fn command(&mut self, now: Nanos, busy: bool, cmd: PowerCommand) {
        assert!(
            now >= self.tail.from,
            "time went backwards: {now:?} < {:?}",
            self.tail.from
        );
        let down_began = self.tail.down.is_some_and(|(at, _)| at <= now);
        match cmd {
            PowerCommand::Down(s) if self.model.state(s).is_some() => {
                if busy {
                    self.pending_down = Some(s);
                } else if !down_began {
                    self.tail.down = Some((self.tail.up_end().max(now), s));
                }
            }
            PowerCommand::Down(_) => {}
            PowerCommand::Up => {
                self.pending_down = None;
                if let Some((at, s)) = self.tail.down.filter(|_| down_began) {
                    let end = self.go_up(now, at, s);
                    // Spinning after the transition up; the policy's clock starts then.
                    self.idle(end);
                } else if !busy {
                    self.tail.down = None;
                    let end = self.tail.up_end().max(now);
                    self.idle(end);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// The paper's IBM Ultrastar 36Z15 (drives/ibm36z15.toml).
    fn z15() -> PowerModel {
        PowerModel::from_spec(&PowerSpec {
            active_w: 39.0,
            idle_w: 22.3,
            standby_w: Some(4.15),
            spin_down_s: Some(15.0),
            spin_down_j: Some(62.25),
            spin_up_s: Some(26.0),
            spin_up_j: Some(904.8),
            ..PowerSpec::default()
        })
        .expect("valid")
    }

    fn timeout(s: u64) -> PowerPolicy {
        PowerPolicy::Timeout {
            timeout: Span(s * S),
            state: LowPower::Standby,
        }
    }

    #[test]
    fn an_idle_disk_under_a_timeout_uses_exactly_idle_then_spin_down_then_standby_for_30_days() {
        let m = z15();
        let c = PowerClock::new(m, timeout(10));
        let t = 30 * 86_400 * S;
        let tot = c.totals(Nanos(t));
        let st = m.state(LowPower::Standby).expect("standby");
        // 22.3 W × 10 s + 62.25 J + 4.15 W × (30 days − 25 s), in fJ (ns × µW).
        let want = u128::from(22_300_000u64) * u128::from(10 * S)
            + 62_250_000u128 * 1_000_000_000
            + u128::from(4_150_000u64) * u128::from(t - 25 * S);
        assert_eq!(tot.energy_fj(0, t), want);
        assert_eq!(tot.low_ns[0], t - 10 * S - st.down.time.0);
        assert_eq!(tot.transition_ns, 15 * S);
        assert_eq!(tot.idle_ns(0, t), 10 * S);
        assert_eq!(tot.spin_ups, 0);
        // No drift: the 30 daily windows add up to the whole, to the femtojoule.
        let mut sum = 0u128;
        let mut prev = c.totals(Nanos::ZERO);
        for day in 1..=30u64 {
            let now = c.totals(Nanos(day * 86_400 * S));
            sum += now.since(&prev).energy_fj(0, 86_400 * S);
            prev = now;
        }
        assert_eq!(sum, want);
    }

    #[test]
    fn a_window_cutting_a_transition_charges_it_pro_rata() {
        let m = z15();
        let c = PowerClock::new(m, timeout(10));
        let a = c.totals(Nanos(10 * S));
        let b = c.totals(Nanos(10 * S + 5 * S));
        let d = b.since(&a);
        assert_eq!(d.transition_ns, 5 * S);
        assert_eq!(d.transition_fj, 62_250_000u128 * 1_000_000_000 / 3);
        assert_eq!(d.energy_fj(0, 5 * S), d.transition_fj);
    }

    #[test]
    fn a_request_to_a_standby_disk_waits_for_the_spin_up() {
        let m = z15();
        let mut c = PowerClock::new(m, timeout(10));
        // Spun down over [10 s, 25 s); at 100 s a request arrives: ready at 126 s.
        assert_eq!(c.wake(Nanos(100 * S)), Nanos(126 * S));
        // Arriving during the spin-down: it ends first (25 s), then 26 s up.
        let mut c = PowerClock::new(m, timeout(10));
        assert_eq!(c.wake(Nanos(12 * S)), Nanos(51 * S));
        // Before the timeout: no wait.
        let mut c = PowerClock::new(m, timeout(10));
        assert_eq!(c.wake(Nanos(9 * S)), Nanos(9 * S));
        let tot = c.totals(Nanos(9 * S));
        assert_eq!(tot.spin_ups, 0);
    }

    #[test]
    fn a_spin_up_and_an_operation_are_charged_to_their_states() {
        let m = z15();
        let mut c = PowerClock::new(m, timeout(10));
        let ready = c.wake(Nanos(100 * S));
        assert_eq!(ready, Nanos(126 * S));
        // The operation runs [126 s, 127 s); the disk idles 10 s, spins down again.
        c.idle(Nanos(127 * S));
        let t = 200 * S;
        let tot = c.totals(Nanos(t));
        assert_eq!(tot.spin_ups, 1);
        assert_eq!(tot.transition_ns, (15 + 26 + 15) * S);
        assert_eq!(tot.low_ns[0], (100 - 25) * S + (200 - 152) * S);
        assert_eq!(tot.idle_ns(S, t), 10 * S + 10 * S);
        let want = u128::from(39_000_000u64) * u128::from(S)
            + u128::from(22_300_000u64) * u128::from(20 * S)
            + (2 * 62_250_000u128 + 904_800_000) * 1_000_000_000
            + u128::from(4_150_000u64) * u128::from(123 * S);
        assert_eq!(tot.energy_fj(S, t), want);
    }

    #[test]
    fn explicit_commands_move_the_disk_down_and_up() {
        let m = z15();
        let mut c = PowerClock::new(m, PowerPolicy::Explicit);
        // Never goes down by itself.
        assert_eq!(c.totals(Nanos(1000 * S)).low_ns, [0; 3]);
        c.command(
            Nanos(1000 * S),
            false,
            PowerCommand::Down(LowPower::Standby),
        );
        let tot = c.totals(Nanos(1100 * S));
        assert_eq!(tot.transition_ns, 15 * S);
        assert_eq!(tot.low_ns[0], 85 * S);
        // Up at 1100 s: ready at 1126 s; a request then does not wait.
        c.command(Nanos(1100 * S), false, PowerCommand::Up);
        assert_eq!(c.wake(Nanos(1126 * S)), Nanos(1126 * S));
        c.idle(Nanos(1127 * S));
        assert_eq!(c.totals(Nanos(5000 * S)).low_ns[0], 85 * S);
        assert_eq!(c.totals(Nanos(5000 * S)).spin_ups, 1);
        // A request during the spin-up waits for its end.
        c.command(
            Nanos(5000 * S),
            false,
            PowerCommand::Down(LowPower::Standby),
        );
        c.command(Nanos(5100 * S), false, PowerCommand::Up);
        assert_eq!(c.wake(Nanos(5110 * S)), Nanos(5126 * S));
        // A down while an operation runs waits for its end.
        c.command(Nanos(5127 * S), true, PowerCommand::Down(LowPower::Standby));
        c.idle(Nanos(5130 * S));
        let a = c.totals(Nanos(5130 * S));
        let b = c.totals(Nanos(5145 * S));
        assert_eq!(b.since(&a).transition_ns, 15 * S);
        // A down to a state the drive lacks is ignored.
        let mut c = PowerClock::new(m, PowerPolicy::Explicit);
        c.command(Nanos(0), false, PowerCommand::Down(LowPower::LowRpm));
        assert_eq!(c.totals(Nanos(100 * S)).transition_ns, 0);
    }

    #[test]
    fn the_adaptive_timeout_doubles_after_a_short_stay_and_halves_after_a_long_one() {
        let m = z15();
        let be = m.break_even(LowPower::Standby).expect("standby saves");
        // (62.25 + 904.8 − 4.15 × 41) J / (22.3 − 4.15) W ≈ 43.9 s.
        assert_eq!(be.0 / S, 43);
        let mut c = PowerClock::new(
            m,
            PowerPolicy::Adaptive {
                initial: Span(10 * S),
                min: Span(S),
                max: Span(80 * S),
                state: LowPower::Standby,
            },
        );
        // Down at 10 s, needed at 30 s: 20 s < 43.9 s, too soon: 20 s.
        let r = c.wake(Nanos(30 * S));
        assert_eq!(c.timeout(), Span(20 * S));
        c.idle(r);
        // Down at r + 20 s, needed 1000 s later: 10 s.
        let mut r = c.wake(r + Span(1020 * S));
        assert_eq!(c.timeout(), Span(10 * S));
        c.idle(r);
        // Needed 1 s after each spin-down: doubles up to its bound.
        for _ in 0..10 {
            r = c.wake(r + Span(c.timeout().0 + S));
            c.idle(r);
        }
        assert_eq!(c.timeout(), Span(80 * S));
    }

    #[test]
    fn a_never_policy_never_waits_and_charges_only_active_and_idle() {
        let m = z15();
        let mut c = PowerClock::new(m, PowerPolicy::Never);
        assert_eq!(c.wake(Nanos(1_000_000 * S)), Nanos(1_000_000 * S));
        c.idle(Nanos(1_000_001 * S));
        let t = 2_000_000 * S;
        let tot = c.totals(Nanos(t));
        assert_eq!(
            tot.energy_fj(S, t),
            u128::from(39_000_000u64) * u128::from(S)
                + u128::from(22_300_000u64) * u128::from(t - S)
        );
    }

    #[test]
    fn an_up_command_during_a_spin_down_then_a_request_before_it_ends() {
        let m = z15();
        let mut c = PowerClock::new(m, PowerPolicy::Explicit);
        c.command(
            Nanos(4000 * S),
            false,
            PowerCommand::Down(LowPower::Standby),
        );
        // Up at 4005 s: the spin-down ends at 4015 s, the spin-up at 4041 s.
        c.command(Nanos(4005 * S), false, PowerCommand::Up);
        // A window edge inside the spin-down sees only what happened so far.
        let a = c.totals(Nanos(4010 * S));
        assert_eq!(a.transition_ns, 10 * S);
        assert_eq!(a.spin_ups, 0);
        assert_eq!(c.wake(Nanos(4010 * S)), Nanos(4041 * S));
        let b = c.totals(Nanos(4041 * S));
        assert_eq!(b.transition_ns, 41 * S);
        assert_eq!(b.spin_ups, 1);
        assert_eq!(
            b.transition_fj,
            (62_250_000u128 + 904_800_000) * 1_000_000_000
        );
    }

    /// Random operations, commands and window edges under every policy: the totals never
    /// decrease, never exceed the time elapsed, and a transition's energy adds up exactly
    /// whatever the edges.
    #[test]
    fn totals_are_monotonic_and_bounded_under_random_schedules() {
        let mut x: u64 = 0x5EED;
        let mut rnd = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let policies = [
            PowerPolicy::Never,
            timeout(5),
            PowerPolicy::Adaptive {
                initial: Span(5 * S),
                min: Span(S),
                max: Span(60 * S),
                state: LowPower::Standby,
            },
            PowerPolicy::Explicit,
        ];
        for policy in policies {
            let m = z15();
            let mut c = PowerClock::new(m, policy);
            let mut now = Nanos::ZERO;
            let mut busy_ns = 0u64;
            let mut prev = c.totals(now);
            for _ in 0..2000 {
                now += Span(rnd(60 * S));
                match rnd(4) {
                    0 | 1 => {
                        let ready = c.wake(now);
                        assert!(ready >= now);
                        let t = c.totals(now);
                        let used = t.low_ns.iter().sum::<u64>() + t.transition_ns + busy_ns;
                        assert!(used <= now.0, "{policy:?}");
                        let service = rnd(S / 50) + 1;
                        now = ready + Span(service);
                        busy_ns += service;
                        c.idle(now);
                    }
                    2 => c.command(now, false, PowerCommand::Down(LowPower::Standby)),
                    _ => c.command(now, false, PowerCommand::Up),
                }
                let t = c.totals(now);
                for i in 0..3 {
                    assert!(t.low_ns[i] >= prev.low_ns[i]);
                }
                assert!(t.transition_ns >= prev.transition_ns);
                assert!(t.transition_fj >= prev.transition_fj);
                assert!(t.spin_ups >= prev.spin_ups);
                let used = t.low_ns.iter().sum::<u64>() + t.transition_ns + busy_ns;
                assert!(used <= now.0, "{policy:?}: {used} > {}", now.0);
                prev = t;
            }
            // Completed transitions are charged their whole energy, nothing more.
            let st = m.state(LowPower::Standby).expect("standby");
            let end = c.totals(now + Span(3600 * S));
            let downs = end.transition_fj - u128::from(end.spin_ups) * st.up.energy_fj;
            assert_eq!(downs % st.down.energy_fj, 0, "{policy:?}");
        }
    }

    #[test]
    fn bad_power_values_are_refused_with_their_key() {
        let base = PowerSpec {
            active_w: 9.7,
            idle_w: 5.24,
            ..PowerSpec::default()
        };
        let e = PowerModel::from_spec(&PowerSpec {
            idle_w: -1.0,
            ..base.clone()
        })
        .unwrap_err();
        assert_eq!(e.key, "idle_w");
        let e = PowerModel::from_spec(&PowerSpec {
            standby_w: Some(0.9),
            spin_down_s: Some(1.0),
            spin_down_j: Some(3.0),
            spin_up_s: Some(0.0),
            spin_up_j: Some(3.0),
            ..base.clone()
        })
        .unwrap_err();
        assert_eq!(e.key, "spin_up_s");
        let e = PowerModel::from_spec(&PowerSpec {
            unloaded_w: Some(4.0),
            ..base.clone()
        })
        .unwrap_err();
        assert_eq!(e.key, "unloaded_w");
        assert!(e.msg.contains("missing unload_s"), "{}", e.msg);
        assert!(PowerModel::from_spec(&base).is_ok());
    }
}
