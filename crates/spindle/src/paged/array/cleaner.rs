//! The paged disk's cleaner (paper 3.3 and 5.4: built here, issue 19): it moves bad tenants
//! back to their home tracks and restores replication.
//!
//! **A cleaning operation** of page `p`: read its newest copy (a bad tenant's one slot, or
//! the home replica reached first), unless it is already in memory (piggy-backing on a host
//! read of it), then write it, in one command in rotational order, to every home replica of
//! `p` that is unallocated (the writable home replicas not held by another page's valid bad
//! tenant). When the write ends, `p`'s state becomes `Home(mask)` with those replicas (a
//! bad tenant's slot becomes unallocated), logged through the page map's NVRAM log like any
//! other change, so recovery stays exact; a crash mid-clean finds the old state, whose copies
//! the clean never wrote. If `p` was rewritten in between (its write generation changed),
//! the clean is dropped. Both disk commands are charged to [`Cause::Cleaning`]; the read is
//! followed by its write before anything else but a map-log flush.
//!
//! **What is dirty**: each disk keeps the pages that are bad tenants and the pages at home
//! with fewer than all their replicas ("thin"), updated at every logged map change. Global
//! policies clean tenants first (nearest home track to the head), then thin pages.
//!
//! **Policies** (`[array] cleaner`):
//! - `idle`: a cleaning operation starts only when no host work is queued on the disk and
//!   the disk has seen no host work for `cleaner_idle_ms` (a timer wakes it); it never
//!   preempts a running operation, so a host request arriving meanwhile waits at most one
//!   cleaning command.
//! - `dirtiness`: when the disk's bad tenants exceed `cleaner_max_tenants`, cleaning is
//!   foreground-priority work — it alternates with host operations — until they are at
//!   most the threshold.
//! - `piggyback`: when a host operation ends on a track, one page is cleaned in the same
//!   visit, before the next host operation: the page just read if it is a bad tenant (in
//!   memory: no read), else a bad tenant sitting on that track, else a bad tenant whose home
//!   is that track — never the page a host write just placed there (that would undo the
//!   write's bad tenancy at the cost of a full replicated write and more).
//! - `nightly`: like `idle` without the threshold (whenever no host work is queued), only
//!   inside the window `cleaner_window = [start_s, length_s]` of virtual time, repeating
//!   every 24 h.

use super::*;
use std::collections::BTreeSet;

/// A day of virtual time (ns): the nightly window repeats.
pub const DAY_NS: u64 = 86_400 * 1_000_000_000;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum CleanerPolicy {
    #[default]
    None,
    /// Clean after the disk has been idle for `idle_ns`.
    Idle { idle_ns: u64 },
    /// Clean as foreground work while tenants exceed `max_tenants` (per disk).
    Dirtiness { max_tenants: u64 },
    /// Clean one page per host visit of a track.
    Piggyback,
    /// Clean when idle inside `[start_ns, start_ns + len_ns)` modulo a day.
    Nightly { start_ns: u64, len_ns: u64 },
}

impl CleanerPolicy {
    pub fn name(&self) -> &'static str {
        match self {
            CleanerPolicy::None => "none",
            CleanerPolicy::Idle { .. } => "idle",
            CleanerPolicy::Dirtiness { .. } => "dirtiness",
            CleanerPolicy::Piggyback => "piggyback",
            CleanerPolicy::Nightly { .. } => "nightly",
        }
    }

    /// Whether `now` is inside the nightly window.
    pub fn in_window(start_ns: u64, len_ns: u64, now: Nanos) -> bool {
        let t = now.0 % DAY_NS;
        (t + DAY_NS - start_ns % DAY_NS) % DAY_NS < len_ns
    }

    /// The next window start at or after `now`.
    pub fn next_window(start_ns: u64, now: Nanos) -> Nanos {
        let t = now.0 % DAY_NS;
        let s = start_ns % DAY_NS;
        let wait = (s + DAY_NS - t) % DAY_NS;
        Nanos(now.0 + wait)
    }
}

/// A page to clean: its write generation when chosen, and whether its bytes are in memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Cand {
    page: u32,
    gen: u32,
    in_memory: bool,
}

/// One disk's cleaner state.
#[derive(Clone, Debug, Default)]
pub(super) struct DiskCleaner {
    tenants: BTreeSet<u32>,
    thin: BTreeSet<u32>,
    /// The write after a cleaning read: served next.
    cont: Option<Cand>,
    /// Piggyback: the page to clean in this visit, and the track visited.
    piggy: Option<(Cand, usize)>,
    /// Dirtiness: cleaning engaged (tenants exceeded the threshold).
    engaged: bool,
    /// Dirtiness: the last operation started was a cleaning one (alternation).
    last_clean: bool,
    /// The last instant host work was queued or served on this disk.
    pub(super) last_host: Nanos,
    /// A wake-up already asked for.
    wake_at: Option<Nanos>,
    pub(super) cleaned: u64,
    #[cfg(test)]
    visiting: Option<usize>,
    /// Every cleaning operation started (tests check the policies' triggers).
    #[cfg(test)]
    pub(super) starts: Vec<CleanStart>,
}

/// A cleaning operation started (tests).
#[cfg(test)]
#[derive(Clone, Debug)]
pub(crate) struct CleanStart {
    pub at: Nanos,
    pub host_queued: usize,
    pub last_host: Nanos,
    /// Bad tenants on the disk when it started.
    pub tenants: u64,
    /// The page's slot then (a bad tenant's) and its home track.
    pub slot: u32,
    pub home_track: usize,
    /// Piggyback: the track the host visited.
    pub visited: Option<usize>,
    pub in_memory: bool,
}

impl DiskCleaner {
    /// A logged change of `page` to `st` (`full`: every replica's mask).
    pub(super) fn note(&mut self, page: u32, st: PageState, full: u8) {
        match st {
            PageState::Tenant(_) => {
                self.thin.remove(&page);
                self.tenants.insert(page);
            }
            PageState::Home(m) => {
                self.tenants.remove(&page);
                if m == full {
                    self.thin.remove(&page);
                } else {
                    self.thin.insert(page);
                }
            }
        }
    }

    /// Pages waiting for cleaning (bad tenants and thin pages).
    pub(super) fn pending(&self) -> u64 {
        (self.tenants.len() + self.thin.len()) as u64
    }

    /// Pages at home with fewer than all their replicas (a scan of the map: report edges).
    pub(super) fn thin_count(&self, map: &PageMap, replicas: u32) -> u64 {
        let full = ((1u32 << replicas) - 1) as u8;
        (0..map.pages())
            .filter(|&p| matches!(map.state(p), PageState::Home(m) if m != full))
            .count() as u64
    }

    /// Cleaning operations started or owed in flight.
    pub(super) fn in_progress(&self) -> u64 {
        u64::from(self.cont.is_some()) + u64::from(self.piggy.is_some())
    }
}

/// A cleaning command in flight.
#[derive(Clone, Debug)]
pub(super) enum CleanStep {
    Read(Cand),
    Write { cand: Cand, targets: Vec<u32> },
}

impl PagedArray {
    fn full_mask(&self) -> u8 {
        ((1u32 << self.cfg.replicas) - 1) as u8
    }

    /// The cleaner's hook at every logged map change.
    pub(super) fn clean_note(&mut self, d: usize, page: u32, st: PageState) {
        if self.cfg.cleaner != CleanerPolicy::None {
            let full = self.full_mask();
            self.disks[d].clean.note(page, st, full);
        }
    }

    /// The unallocated home replicas a clean of `page` would write.
    fn clean_targets(&self, d: usize, page: u32) -> Vec<u32> {
        let map = &self.disks[d].map;
        map.writable_home(page)
            .filter(|&(_, s)| map.page_at(s) == NONE)
            .map(|(_, s)| s)
            .collect()
    }

    fn cand(&self, d: usize, page: u32, in_memory: bool) -> Cand {
        Cand {
            page,
            gen: self.disks[d].gen[page as usize],
            in_memory,
        }
    }

    /// The dirty page to clean next, nearest the head's track first (`tenants_only`:
    /// dirtiness).
    fn pick(&self, d: usize, tenants_only: bool) -> Option<Cand> {
        let disk = &self.disks[d];
        let here = self
            .cut
            .tracks_at(disk.head.cylinder, disk.head.head)
            .next()
            .map_or(0, |t| self.cut.tracks[t].first_page);
        let sets: &[&BTreeSet<u32>] = if tenants_only {
            &[&disk.clean.tenants]
        } else {
            &[&disk.clean.tenants, &disk.clean.thin]
        };
        for set in sets {
            let up = set.range(here..).take(16);
            let down = set.range(..here).rev().take(16);
            let mut best: Option<(u32, u32)> = None;
            for p in up.chain(down) {
                let dist = p.abs_diff(here);
                if best.is_some_and(|(bd, _)| bd <= dist) {
                    continue;
                }
                if !self.clean_targets(d, *p).is_empty() {
                    best = Some((dist, *p));
                }
            }
            if let Some((_, p)) = best {
                return Some(self.cand(d, p, false));
            }
        }
        None
    }

    /// Piggyback: after a host operation on slot `slot` of disk `d` (`read_page`: the page a
    /// host read just brought into memory; `written`: the page a host write just placed,
    /// never cleaned in the same visit — that would undo its bad-tenant write).
    pub(super) fn clean_visit(
        &mut self,
        d: usize,
        slot: u32,
        read_page: Option<u32>,
        written: u32,
    ) {
        if self.cfg.cleaner != CleanerPolicy::Piggyback || self.disks[d].clean.piggy.is_some() {
            return;
        }
        let map = &self.disks[d].map;
        let mut c = None;
        if let Some(p) = read_page {
            if matches!(map.state(p), PageState::Tenant(_)) {
                c = Some((p, true));
            }
        }
        let t = self.cut.tracks[self.cut.track_of_slot(slot)];
        if c.is_none() {
            c = (t.first_slot..t.first_slot + t.slots)
                .map(|s| (s, map.page_at(s)))
                .find(|&(s, q)| q != NONE && q != written && map.state(q) == PageState::Tenant(s))
                .map(|(_, q)| (q, false));
        }
        if c.is_none() {
            c = (t.first_page..t.first_page + t.pages)
                .find(|&p| p != written && matches!(map.state(p), PageState::Tenant(_)))
                .map(|p| (p, false));
        }
        if let Some((p, mem)) = c {
            if !self.clean_targets(d, p).is_empty() {
                let cand = self.cand(d, p, mem);
                let track = self.cut.track_of_slot(slot);
                self.disks[d].clean.piggy = Some((cand, track));
            }
        }
    }

    /// Starts the cleaning command due before anything else but a flush (the write after a
    /// cleaning read). True if one started.
    pub(super) fn clean_urgent(&mut self, now: Nanos, d: usize) -> bool {
        match self.disks[d].clean.cont.take() {
            Some(c) => self.clean_start(now, d, c, true),
            None => false,
        }
    }

    /// Starts a cleaning operation if the policy wants one now (`room`: the NVRAM can take
    /// its record). True if one started.
    pub(super) fn clean_policy(&mut self, now: Nanos, d: usize, room: bool) -> bool {
        if !room {
            return false;
        }
        let host_waiting = !self.disks[d].fg.is_empty();
        let cand = match self.cfg.cleaner {
            CleanerPolicy::None => None,
            CleanerPolicy::Piggyback => self.disks[d].clean.piggy.take().map(|(c, _t)| {
                #[cfg(test)]
                {
                    self.disks[d].clean.visiting = Some(_t);
                }
                c
            }),
            CleanerPolicy::Dirtiness { max_tenants } => {
                let c = &mut self.disks[d].clean;
                let n = c.tenants.len() as u64;
                // Engaged above the threshold, until at most it again.
                c.engaged = n > max_tenants;
                if c.engaged && (!host_waiting || !c.last_clean) {
                    self.pick(d, true)
                } else {
                    None
                }
            }
            CleanerPolicy::Idle { idle_ns } => {
                if host_waiting || self.disks[d].clean.pending() == 0 {
                    None
                } else {
                    let due = Nanos(self.disks[d].clean.last_host.0.saturating_add(idle_ns));
                    if now >= due {
                        self.pick(d, false)
                    } else {
                        self.wake(d, due);
                        None
                    }
                }
            }
            CleanerPolicy::Nightly { start_ns, len_ns } => {
                if host_waiting || self.disks[d].clean.pending() == 0 || len_ns == 0 {
                    None
                } else if CleanerPolicy::in_window(start_ns, len_ns, now) {
                    self.pick(d, false)
                } else {
                    let at = CleanerPolicy::next_window(start_ns, now);
                    self.wake(d, at);
                    None
                }
            }
        };
        let started = match cand {
            Some(c) => {
                #[cfg(test)]
                let rec = {
                    let disk = &self.disks[d];
                    let slot = disk.map.copies(c.page).next().unwrap_or(NONE);
                    CleanStart {
                        at: now,
                        host_queued: disk.fg.len(),
                        last_host: disk.clean.last_host,
                        tenants: disk.map.tenants(),
                        slot,
                        home_track: self.cut.track_of_page(c.page),
                        visited: disk.clean.visiting,
                        in_memory: c.in_memory,
                    }
                };
                let ok = self.clean_start(now, d, c, false);
                #[cfg(test)]
                if ok {
                    self.disks[d].clean.starts.push(rec);
                }
                ok
            }
            None => false,
        };
        self.disks[d].clean.last_clean = started;
        started
    }

    fn wake(&mut self, d: usize, at: Nanos) {
        let c = &mut self.disks[d].clean;
        if c.wake_at.is_some_and(|w| w > self.out.now() && w <= at) {
            return;
        }
        c.wake_at = Some(at);
        self.out.push(Action::Wake { at });
    }

    /// Starts the read (or, `write` or in memory, the write) of a clean. False if the page
    /// needs no cleaning any more.
    fn clean_start(&mut self, now: Nanos, d: usize, c: Cand, write: bool) -> bool {
        if self.disks[d].gen[c.page as usize] != c.gen {
            return false;
        }
        let targets = self.clean_targets(d, c.page);
        if targets.is_empty() {
            return false;
        }
        let ps = u64::from(self.page_sectors);
        let lba = (u64::from(c.page) * u64::from(self.cfg.ds) + d as u64) * ps;
        if write || c.in_memory {
            return self.clean_write(now, d, c, targets, lba);
        }
        let copies: Vec<u32> = self.disks[d].map.copies(c.page).collect();
        let Some(src) = self.closest(now, d, Op::Read, copies.into_iter()) else {
            return false;
        };
        let run = Run {
            lba: self.cut.lba(src),
            sectors: self.page_sectors,
        };
        self.run(
            now,
            d,
            None,
            Op::Read,
            &[run],
            Cause::Cleaning,
            Place::Clean(CleanStep::Read(c)),
        );
        true
    }

    fn clean_write(
        &mut self,
        now: Nanos,
        d: usize,
        c: Cand,
        mut targets: Vec<u32>,
        lba: u64,
    ) -> bool {
        let Some(runs) = self.copy_page_to(now, d, c.page, lba, &mut targets) else {
            return false;
        };
        self.run(
            now,
            d,
            None,
            Op::Write,
            &runs,
            Cause::Cleaning,
            Place::Clean(CleanStep::Write { cand: c, targets }),
        );
        true
    }

    /// A cleaning command ended.
    pub(super) fn clean_done(&mut self, d: usize, step: CleanStep) {
        match step {
            CleanStep::Read(c) => self.disks[d].clean.cont = Some(c),
            CleanStep::Write { cand, targets } => {
                let page = cand.page;
                if self.disks[d].gen[page as usize] != cand.gen {
                    return;
                }
                let mut m = match self.disks[d].map.state(page) {
                    PageState::Home(m) => m,
                    PageState::Tenant(_) => 0,
                };
                for &s in &targets {
                    if let Some((p, j)) = self.cut.home_of_slot(s) {
                        debug_assert_eq!(p, page);
                        m |= 1 << j;
                    }
                }
                let st = PageState::Home(m);
                self.disks[d].map.set(page, st);
                self.disks[d].clean.cleaned += 1;
                self.log_record(d, page, st);
            }
        }
    }
}

#[cfg(test)]
impl PagedArray {
    /// Disk `d`'s cleaning operations started so far.
    pub(crate) fn clean_starts(&self, d: usize) -> &[CleanStart] {
        &self.disks[d].clean.starts
    }
}
