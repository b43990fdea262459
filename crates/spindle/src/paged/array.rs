//! The paged-disk controller (paged-disk paper, sections 3–4): one disk, or `ds` disks with
//! pages striped round-robin (page g on disk g mod ds). A sans-I/O state machine with the
//! call order of [`crate::array::Array`]: [`Engine::handle`], then drain
//! [`Engine::poll_action`].
//!
//! **Host requests** are cut into pages (`page_bytes`); a request that is not a whole
//! number of aligned pages moves every page it touches (no read-modify-write is modelled:
//! the controller places whole pages). With data moves on, unaligned requests are refused
//! ([`Engine::io_align_bytes`] is the page). Each page is a disk operation in its disk's
//! foreground queue, served first come first served.
//!
//! **Reads** (4) go, at dispatch, to the copy the head reaches first
//! ([`crate::drive::Drive::position_time`] over the valid copies).
//!
//! **Writes** (3.2, 4), chosen at dispatch: with bad tenants, the slot of the track under
//! the head that the head reaches first among those a bad tenant may take
//! ([`PageMap::tenant_ok`]); the page's old copies become unallocated. Otherwise (or with
//! `bad_tenants = false`) a full replicated write: the first copy to the writable home
//! replica reached first, acknowledged when written; the other writable home replicas
//! (those no valid bad tenant holds) are written next by a deferred operation charged to
//! [`Cause::DelayedWrite`], served before the next foreground operation (paper 4: "additional
//! internal writes are issued ... which ... will delay pending requests").
//!
//! **Page runs** (`page_runs`, not in the paper): a write of several consecutive pages of
//! one request takes, when the track under the head has one, a run of consecutive slots
//! each of which its page may take as a bad tenant — counting the copies the run itself
//! overwrites, so no page loses its last copy — and writes them in one command: the
//! longest such run, the one the head reaches first among equals. The rest of the request
//! follows as further runs or single pages.
//!
//! **Map** ([`super::log`]): every change is logged in NVRAM before the write it describes
//! can be seen: a slot about to be overwritten leaves its page's copies at dispatch, the new
//! location is recorded at completion, before the answer. Flushes and checkpoints are disk
//! writes charged to [`Cause::MapLogging`], served before everything else on their disk.

use super::log::{self, Flush, MapLog, Region};
use super::pages::{Cut, PageMap, PageState, NONE};
use crate::drive::{Access, Drive, HeadState, Run, Transfer};
use crate::engine::{
    Action, Backlog, Breakdown, Busy, Bytes, Cause, DataMove, DiskClock, DiskCounters, DiskReader,
    Engine, Event, HostRequest, HostSlot, HostTable, NvramWrite, Outbox, RecoverError, Slab,
};
use crate::{Nanos, Op, Span};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::VecDeque;
use std::sync::Arc;

pub const DEFAULT_PAGE_BYTES: u64 = 8192;
pub const DEFAULT_LOG_NVRAM_RECORDS: u64 = 4096;
pub const DEFAULT_LOG_SECTORS: u64 = 4096;
/// The page slots of all disks together, at most (the page maps' memory: ~1.6 GB).
pub const MAX_SLOTS_TOTAL: u64 = 1 << 27;

#[derive(Clone, Debug)]
pub struct PagedConfig {
    /// Disks the pages are striped over.
    pub ds: u32,
    pub page_bytes: u64,
    /// Copies of each page on its home track (1–8).
    pub replicas: u32,
    pub bad_tenants: bool,
    /// A write of consecutive pages of one request goes, when it can, as one run of bad
    /// tenants under the head (module doc).
    pub page_runs: bool,
    pub random_phase: bool,
    pub noise: bool,
    pub seed: u64,
    /// NVRAM records per disk for the map log.
    pub log_nvram_records: u64,
    /// Sectors of each disk's map log region (after the two checkpoint copies).
    pub log_sectors: u64,
    /// The cleaner's policy ([`cleaner`]).
    pub cleaner: CleanerPolicy,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    /// The deferred home replicas of a full replicated write.
    Replicas,
}

#[derive(Clone, Debug)]
struct PageOp {
    kind: Kind,
    slot: Option<usize>,
    host_id: u64,
    /// The page on its disk.
    page: u32,
    /// The page's array LBA.
    lba: u64,
    /// Replicas: the page's write generation it copies.
    gen: u32,
}

#[derive(Clone, Debug)]
enum Place {
    Read(u32),
    Write {
        slot: u32,
        tenant: bool,
    },
    /// A run of bad tenants: consecutive pages' ops and their consecutive slots.
    WriteRun(Vec<(usize, u32)>),
    Replicas(Vec<u32>),
    Flush(Flush),
    Clean(cleaner::CleanStep),
}

struct InFlight {
    op: Option<usize>,
    access: Access,
    place: Place,
}

/// Per-disk counters of the paged disk.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PagedCounters {
    pub tenant_writes: u64,
    pub full_writes: u64,
    /// Page runs: commands that wrote two or more pages as bad tenants.
    pub run_writes: u64,
    pub replica_ops: u64,
    pub replica_copies: u64,
    pub flushes: u64,
    pub checkpoints: u64,
}

impl PagedArray {
    /// Pages disk `d`'s cleaner has moved home or re-replicated.
    pub fn cleaned(&self, d: usize) -> u64 {
        self.disks[d].clean.cleaned
    }
}

struct Disk {
    head: HeadState,
    map: PageMap,
    gen: Vec<u32>,
    fg: VecDeque<usize>,
    deferred: VecDeque<usize>,
    busy: Option<InFlight>,
    clock: DiskClock,
    rng: Pcg64Mcg,
    log: MapLog,
    counters: PagedCounters,
    clean: cleaner::DiskCleaner,
}

pub struct PagedArray {
    drive: Arc<Drive>,
    cfg: PagedConfig,
    cut: Arc<Cut>,
    page_sectors: u32,
    disks: Vec<Disk>,
    host: HostTable<()>,
    ops: Slab<PageOp>,
    out: Outbox,
    data: Option<DataState>,
    /// Host requests that were not whole pages ([`crate::engine::PagedStatus::unaligned`]).
    unaligned: u64,
}

struct DataState {
    moves: VecDeque<DataMove>,
}

impl PagedArray {
    pub fn new(drive: Arc<Drive>, cfg: &PagedConfig) -> Result<PagedArray, String> {
        if cfg.ds == 0 {
            return Err("ds must be >= 1, got 0".into());
        }
        if !(1..=8).contains(&cfg.replicas) {
            return Err(format!(
                "replicas must be within 1..=8, got {}",
                cfg.replicas
            ));
        }
        let drive = if drive.cache().is_some() {
            // The controller chooses the replica and slot under the head: the drive's own
            // buffer would defeat it (as for the SR family and eager writing).
            Arc::new(drive.without_cache())
        } else {
            drive
        };
        let sb = u64::from(drive.geometry().sector_bytes());
        if cfg.page_bytes == 0 || !cfg.page_bytes.is_multiple_of(sb) {
            return Err(format!(
                "page_kb: a page must be a positive whole number of {sb}-byte sectors, got {} bytes",
                cfg.page_bytes
            ));
        }
        let page_sectors = u32::try_from(cfg.page_bytes / sb)
            .map_err(|_| format!("page_kb: {} bytes is too large", cfg.page_bytes))?;
        if cfg.log_nvram_records < 8 {
            return Err(format!(
                "map_nvram_records must be >= 8, got {}",
                cfg.log_nvram_records
            ));
        }
        let cap = drive.capacity_sectors();
        // The region: two checkpoints of 4 bytes per page (at most one per page sectors of
        // the disk) and the log, at the disk's end.
        let pages_max = cap / u64::from(page_sectors);
        let ckpt_sectors = (pages_max * 4).div_ceil(sb).max(1);
        let region_sectors = 2 * ckpt_sectors + cfg.log_sectors.max(1);
        if region_sectors * 4 > cap {
            return Err(format!(
                "the page map log region ({region_sectors} sectors) would take more than a quarter of the {}: the drive is too small for layout \"paged\"",
                drive.id
            ));
        }
        let cut = Cut::new(&drive, cap - region_sectors, page_sectors, cfg.replicas)
            .map_err(|e| format!("page_kb/replicas: {e}"))?;
        let cut = Arc::new(cut);
        // Each disk keeps its own page map (about 12 bytes a slot): bounded, so a large
        // `ds` is an error, not an allocation failure.
        let slots_total = u64::from(cut.slots) * u64::from(cfg.ds);
        if slots_total > MAX_SLOTS_TOTAL {
            return Err(format!(
                "ds: {} paged disks of the {} hold {slots_total} page slots; at most {MAX_SLOTS_TOTAL} (about {} disks)",
                cfg.ds,
                drive.id,
                MAX_SLOTS_TOTAL / u64::from(cut.slots).max(1)
            ));
        }
        let region = Region {
            first_lba: cap - region_sectors,
            ckpt_sectors,
            log_sectors: cfg.log_sectors.max(1),
        };
        let mut seeder = Pcg64Mcg::seed_from_u64(cfg.seed);
        let period = drive.period().0;
        let map = PageMap::new(cut.clone());
        let nv = MapLog::nvram_bytes(cfg.log_nvram_records);
        let disks = (0..cfg.ds as usize)
            .map(|d| {
                let phase_ns = if cfg.random_phase {
                    seeder.gen_range(0..period)
                } else {
                    0
                };
                Disk {
                    head: HeadState {
                        cylinder: 0,
                        head: 0,
                        phase_ns,
                    },
                    map: map.clone(),
                    gen: vec![0; cut.pages as usize],
                    fg: VecDeque::new(),
                    deferred: VecDeque::new(),
                    busy: None,
                    clock: DiskClock::new(drive.power_clock()),
                    rng: Pcg64Mcg::seed_from_u64(seeder.gen()),
                    log: MapLog::new(
                        region,
                        cfg.log_nvram_records,
                        drive.geometry().sector_bytes(),
                        d as u64 * nv,
                    ),
                    counters: PagedCounters::default(),
                    clean: cleaner::DiskCleaner::default(),
                }
            })
            .collect();
        Ok(PagedArray {
            out: Outbox::new(cfg.ds as usize),
            drive,
            cfg: cfg.clone(),
            cut,
            page_sectors,
            disks,
            host: HostTable::default(),
            ops: Slab::with_capacity(64),
            data: None,
            unaligned: 0,
        })
    }

    pub fn drive(&self) -> &Drive {
        &self.drive
    }

    /// Disk `d`'s page map.
    pub fn map(&self, d: usize) -> &PageMap {
        &self.disks[d].map
    }

    pub fn paged_counters(&self, d: usize) -> PagedCounters {
        self.disks[d].counters
    }

    /// Pages the array holds.
    pub fn pages(&self) -> u64 {
        u64::from(self.cut.pages) * u64::from(self.cfg.ds)
    }

    /// Disk and page on it of array page `g`.
    pub fn locate_page(&self, g: u64) -> (usize, u32) {
        let ds = u64::from(self.cfg.ds);
        ((g % ds) as usize, (g / ds) as u32)
    }

    /// The time a scan of every page's metadata (the alternative recovery, 3.4) would take:
    /// one disk's full-surface read from the outer edge.
    pub fn scan_time(&self) -> Span {
        let head = HeadState {
            cylinder: 0,
            head: 0,
            phase_ns: 0,
        };
        let sectors = u32::try_from(self.drive.capacity_sectors()).unwrap_or(u32::MAX);
        let a = self.drive.access(
            Nanos::ZERO,
            &head,
            Transfer {
                op: Op::Read,
                lba: 0,
                sectors,
            },
            None,
            None::<&mut Pcg64Mcg>,
        );
        a.service()
    }

    fn accept(&mut self, now: Nanos, req: HostRequest) {
        assert!(req.sectors > 0, "host request {} moves no data", req.id);
        let ps = u64::from(self.page_sectors);
        let end = req.lba + u64::from(req.sectors);
        assert!(
            end <= self.capacity(),
            "host request {} ends at {end}, beyond the array",
            req.id
        );
        let whole_pages = req.lba.is_multiple_of(ps) && u64::from(req.sectors).is_multiple_of(ps);
        self.unaligned += u64::from(!whole_pages);
        if self.data.is_some() {
            assert!(
                whole_pages,
                "host request {}: with data moves on, requests are whole pages",
                req.id
            );
        }
        let slot = self.host.admit(req, now, ());
        let kind = match req.op {
            Op::Read => Kind::Read,
            Op::Write => Kind::Write,
        };
        for g in req.lba / ps..end.div_ceil(ps) {
            let (d, page) = self.locate_page(g);
            self.host.add_part(slot);
            let id = self.ops.insert(PageOp {
                kind,
                slot: Some(slot),
                host_id: req.id,
                page,
                lba: g * ps,
                gen: 0,
            });
            self.disks[d].fg.push_back(id);
            self.disks[d].clean.last_host = now;
            if self.disks[d].busy.is_none() {
                self.out.mark_for_dispatch(d);
            }
        }
    }

    fn capacity(&self) -> u64 {
        self.pages() * u64::from(self.page_sectors)
    }

    /// The slot of `slots` the head reaches first for `op` at `now`.
    fn closest(
        &self,
        now: Nanos,
        d: usize,
        op: Op,
        slots: impl Iterator<Item = u32>,
    ) -> Option<u32> {
        let head = &self.disks[d].head;
        let mut best: Option<(Span, u32)> = None;
        for s in slots {
            let t = self
                .drive
                .position_time(now, head, op, &self.cut.target(&self.drive, s));
            if best.is_none_or(|(bt, _)| t < bt) {
                best = Some((t, s));
            }
        }
        best.map(|(_, s)| s)
    }

    /// Where a write of `page` goes (module doc): `(slot, as a bad tenant)`.
    fn place_write(&self, now: Nanos, d: usize, page: u32) -> (u32, bool) {
        let disk = &self.disks[d];
        if self.cfg.bad_tenants {
            let map = &disk.map;
            let cands = self
                .cut
                .tracks_at(disk.head.cylinder, disk.head.head)
                .flat_map(|t| {
                    let t = &self.cut.tracks[t];
                    t.first_slot..t.first_slot + t.slots
                })
                .filter(|&s| map.tenant_ok(page, s));
            if let Some(s) = self.closest(now, d, Op::Write, cands) {
                return (s, true);
            }
        }
        let s = self
            .closest(
                now,
                d,
                Op::Write,
                disk.map.writable_home(page).map(|(_, s)| s),
            )
            .expect("the home replica is always writable");
        (s, false)
    }

    /// Slot `slot`'s old contents stop being a copy before `page` overwrites them (a crash
    /// mid-write must not find them mapped), unless they are `page`'s only copy (an in-place
    /// update, as on a standard disk).
    fn vacate(&mut self, d: usize, slot: u32, page: u32) {
        let map = &self.disks[d].map;
        let q = map.page_at(slot);
        if q != NONE && (q != page || map.copy_count(q) >= 2) {
            let (q, st) = self.disks[d]
                .map
                .invalidate(slot)
                .expect("the slot held a page");
            self.log_record(d, q, st);
        }
    }

    /// Page runs (module doc): with write op `id` just taken from the queue, takes the
    /// queued writes of the pages that follow it in the same request and writes as many as
    /// it can as one run of bad tenants. `false`: no run of two or more; nothing changed.
    fn start_run(&mut self, now: Nanos, d: usize, id: usize) -> bool {
        let first = self.ops[id].clone();
        let disk = &self.disks[d];
        // Each page logs at most three records; the log must hold them all.
        let room = (disk.log.cap() - disk.log.pending()).saturating_sub(1) / 3;
        let mut pages = vec![(id, first.page)];
        for &next in &disk.fg {
            let o = &self.ops[next];
            let (_, last) = pages[pages.len() - 1];
            if pages.len() as u64 >= room
                || o.kind != Kind::Write
                || o.slot != first.slot
                || o.page != last + 1
            {
                break;
            }
            pages.push((next, o.page));
        }
        if pages.len() < 2 {
            return false;
        }
        let map = &disk.map;
        let mut taken: Vec<u32> = Vec::new();
        let mut best: Option<(usize, Span, u32)> = None;
        for t in self.cut.tracks_at(disk.head.cylinder, disk.head.head) {
            let t = self.cut.tracks[t];
            let end = t.first_slot + t.slots;
            for start in t.first_slot..end {
                // The longest run from `start`: page i in slot start + i.
                taken.clear();
                let mut len = 0;
                while len < pages.len() && start + (len as u32) < end {
                    let (s, p) = (start + len as u32, pages[len].1);
                    if !map.tenant_ok(p, s) {
                        break;
                    }
                    let q = map.page_at(s);
                    if q != NONE && q != p {
                        // Overwritten copies of one page must leave it at least one.
                        let gone = taken.iter().filter(|&&x| x == q).count() as u32;
                        if map.copy_count(q) < gone + 2 {
                            break;
                        }
                        taken.push(q);
                    }
                    len += 1;
                }
                if len < 2 || best.is_some_and(|(l, _, _)| l > len) {
                    continue;
                }
                let at = self.drive.position_time(
                    now,
                    &disk.head,
                    Op::Write,
                    &self.cut.target(&self.drive, start),
                );
                if best.is_none_or(|(l, bt, _)| len > l || at < bt) {
                    best = Some((len, at, start));
                }
            }
        }
        let Some((len, _, start)) = best else {
            return false;
        };
        let parts: Vec<(usize, u32)> = pages[..len]
            .iter()
            .enumerate()
            .map(|(i, &(op, _))| (op, start + i as u32))
            .collect();
        // `id` is already off the queue; its followers in the run leave it too.
        for _ in 1..len {
            self.disks[d].fg.pop_front();
        }
        for &(op, slot) in &parts {
            let o = self.ops[op].clone();
            self.vacate(d, slot, o.page);
            if let Some(data) = self.data.as_mut() {
                data.moves.push_back(DataMove {
                    disk: d,
                    op: Op::Write,
                    lba: o.lba,
                    sectors: self.page_sectors,
                    bytes: Bytes::Host(o.host_id),
                    copies: vec![vec![Run {
                        lba: self.cut.lba(slot),
                        sectors: self.page_sectors,
                    }]],
                });
            }
        }
        self.disks[d].counters.run_writes += 1;
        let run = Run {
            lba: self.cut.lba(start),
            sectors: self.page_sectors * len as u32,
        };
        self.run(
            now,
            d,
            None,
            Op::Write,
            &[run],
            Cause::HostWrite,
            Place::WriteRun(parts),
        );
        true
    }

    fn log_record(&mut self, d: usize, page: u32, st: PageState) {
        self.disks[d].log.append(page, st.encode());
        self.clean_note(d, page, st);
    }

    fn start_next(&mut self, now: Nanos, d: usize) {
        debug_assert!(self.disks[d].busy.is_none());
        let disk = &mut self.disks[d];
        if disk.log.flush_due() {
            let f = disk.log.start_flush(disk.map.raw_states());
            self.start_flush(now, d, f);
            return;
        }
        // A write logs at most two records at dispatch and one at completion.
        let room = disk.log.has_room(4);
        if room && self.clean_urgent(now, d) {
            return;
        }
        while let Some(id) = room.then(|| self.disks[d].deferred.pop_front()).flatten() {
            let op = self.ops[id].clone();
            let disk = &self.disks[d];
            let targets: Vec<u32> = if disk.gen[op.page as usize] != op.gen
                || !matches!(disk.map.state(op.page), PageState::Home(_))
            {
                Vec::new()
            } else {
                disk.map
                    .writable_home(op.page)
                    .filter(|&(_, s)| disk.map.page_at(s) == NONE)
                    .map(|(_, s)| s)
                    .collect()
            };
            if targets.is_empty() {
                // Rewritten since, or every replica held by a bad tenant.
                self.ops.remove(id);
                continue;
            }
            self.start_replicas(now, d, id, targets);
            return;
        }
        if self.clean_policy(now, d, room) {
            return;
        }
        let Some(&id) = self.disks[d].fg.front() else {
            return;
        };
        let op = self.ops[id].clone();
        if op.kind == Kind::Write && !room {
            // Waits for the flush in flight to free NVRAM.
            return;
        }
        self.disks[d].fg.pop_front();
        let place = match op.kind {
            Kind::Read => {
                let copies: Vec<u32> = self.disks[d].map.copies(op.page).collect();
                let s = self
                    .closest(now, d, Op::Read, copies.into_iter())
                    .expect("a page always has a copy");
                Place::Read(s)
            }
            Kind::Write => {
                if self.cfg.page_runs && self.start_run(now, d, id) {
                    return;
                }
                let (slot, tenant) = self.place_write(now, d, op.page);
                self.vacate(d, slot, op.page);
                Place::Write { slot, tenant }
            }
            Kind::Replicas => unreachable!("replica writes are deferred work"),
        };
        let (xop, slot) = match place {
            Place::Read(s) => (Op::Read, s),
            Place::Write { slot, .. } => (Op::Write, slot),
            _ => unreachable!(),
        };
        let run = Run {
            lba: self.cut.lba(slot),
            sectors: self.page_sectors,
        };
        if let Some(data) = self.data.as_mut() {
            data.moves.push_back(DataMove {
                disk: d,
                op: xop,
                lba: op.lba,
                sectors: self.page_sectors,
                bytes: Bytes::Host(op.host_id),
                copies: vec![vec![run]],
            });
        }
        let cause = if xop == Op::Read {
            Cause::HostRead
        } else {
            Cause::HostWrite
        };
        self.run(now, d, Some(id), xop, &[run], cause, place);
    }

    fn start_replicas(&mut self, now: Nanos, d: usize, id: usize, mut targets: Vec<u32>) {
        let op = self.ops[id].clone();
        let runs = self
            .copy_page_to(now, d, op.page, op.lba, &mut targets)
            .expect("a page always has a first copy");
        self.run(
            now,
            d,
            Some(id),
            Op::Write,
            &runs,
            Cause::DelayedWrite,
            Place::Replicas(targets),
        );
    }

    /// The runs that write `page` (array LBA `lba`) to `targets`, ordered by when the head
    /// reaches them (they are written in one pass); with data moves on, queues the copy of the
    /// page's first copy onto them. `None`: the page has no copy to copy from.
    fn copy_page_to(
        &mut self,
        now: Nanos,
        d: usize,
        page: u32,
        lba: u64,
        targets: &mut [u32],
    ) -> Option<Vec<Run>> {
        let head = self.disks[d].head;
        targets.sort_by_key(|&s| {
            self.drive
                .position_time(now, &head, Op::Write, &self.cut.target(&self.drive, s))
        });
        let runs: Vec<Run> = targets
            .iter()
            .map(|&s| Run {
                lba: self.cut.lba(s),
                sectors: self.page_sectors,
            })
            .collect();
        if let Some(data) = self.data.as_mut() {
            let from = self.disks[d].map.copies(page).next()?;
            data.moves.push_back(DataMove {
                disk: d,
                op: Op::Write,
                lba,
                sectors: self.page_sectors,
                bytes: Bytes::Copy {
                    disk: d,
                    runs: vec![Run {
                        lba: self.cut.lba(from),
                        sectors: self.page_sectors,
                    }],
                },
                copies: runs.iter().map(|&r| vec![r]).collect(),
            });
        }
        Some(runs)
    }

    fn start_flush(&mut self, now: Nanos, d: usize, f: Flush) {
        let region = self.disks[d].log.region;
        let (lba, sectors, bytes) = match &f {
            Flush::Log {
                at, sectors, bytes, ..
            } => (region.log_lba() + at, *sectors, bytes.clone()),
            Flush::Checkpoint {
                copy,
                sectors,
                bytes,
                ..
            } => (region.ckpt_lba(*copy), *sectors, bytes.clone()),
        };
        let sectors = u32::try_from(sectors).expect("a map log write fits u32 sectors");
        let run = Run { lba, sectors };
        if let Some(data) = self.data.as_mut() {
            data.moves.push_back(DataMove {
                disk: d,
                op: Op::Write,
                lba: 0,
                sectors,
                bytes: Bytes::Meta(bytes),
                copies: vec![vec![run]],
            });
        }
        self.run(
            now,
            d,
            None,
            Op::Write,
            &[run],
            Cause::MapLogging,
            Place::Flush(f),
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        now: Nanos,
        d: usize,
        op: Option<usize>,
        xop: Op,
        runs: &[Run],
        cause: Cause,
        place: Place,
    ) {
        let disk = &mut self.disks[d];
        let rng = if self.cfg.noise {
            Some(&mut disk.rng)
        } else {
            None
        };
        let now = disk.clock.wake(now);
        let access = self
            .drive
            .access_runs(now, &disk.head, xop, runs, None, rng);
        disk.head.cylinder = access.end_cylinder;
        disk.head.head = access.end_head;
        disk.clock
            .start(cause, Nanos(access.end.0 - access.service().0), access.end);
        disk.busy = Some(InFlight { op, access, place });
        self.out.push(Action::DiskBusy {
            disk: d,
            until: access.end,
        });
    }

    fn finish(&mut self, now: Nanos, d: usize) {
        let Some(f) = self.disks[d].busy.take() else {
            panic!("disk {d} completed with nothing in flight");
        };
        debug_assert_eq!(f.access.end, now, "disk {d} completion at the wrong time");
        self.disks[d].clock.finish();
        match f.place {
            Place::Read(s) => {
                let id = f.op.expect("a read op");
                self.disks[d].clean.last_host = now;
                let page = self.ops[id].page;
                self.clean_visit(d, s, Some(page), NONE);
                self.part_done(now, id, &f.access)
            }
            Place::Write { slot, tenant } => {
                let id = f.op.expect("a write op");
                self.write_done(now, d, id, slot, tenant, &f.access);
            }
            Place::WriteRun(parts) => {
                for (id, slot) in parts {
                    self.write_done(now, d, id, slot, true, &f.access);
                }
            }
            Place::Replicas(targets) => {
                let id = f.op.expect("a replicas op");
                let page = self.ops.remove(id).page;
                let disk = &mut self.disks[d];
                let PageState::Home(mut m) = disk.map.state(page) else {
                    panic!("page {page} left home during its replica writes");
                };
                for &s in &targets {
                    let (p, j) = self.cut.home_of_slot(s).expect("a home slot");
                    assert_eq!(p, page);
                    m |= 1 << j;
                }
                disk.map.set(page, PageState::Home(m));
                disk.counters.replica_ops += 1;
                disk.counters.replica_copies += targets.len() as u64;
                self.log_record(d, page, PageState::Home(m));
            }
            Place::Clean(step) => self.clean_done(d, step),
            Place::Flush(fl) => {
                let disk = &mut self.disks[d];
                disk.log.flush_done(&fl);
                match fl {
                    Flush::Log { .. } => disk.counters.flushes += 1,
                    Flush::Checkpoint { .. } => disk.counters.checkpoints += 1,
                }
            }
        }
        self.out.mark_for_dispatch(d);
    }

    /// Page write `id` is on the disk in `slot`: map it, log it, answer its part.
    fn write_done(
        &mut self,
        now: Nanos,
        d: usize,
        id: usize,
        slot: u32,
        tenant: bool,
        access: &Access,
    ) {
        let page = self.ops[id].page;
        let st = match self.cut.home_of_slot(slot) {
            Some((p, j)) if p == page => PageState::Home(1 << j),
            _ => PageState::Tenant(slot),
        };
        let disk = &mut self.disks[d];
        disk.map.set(page, st);
        disk.gen[page as usize] = disk.gen[page as usize].wrapping_add(1);
        if tenant {
            disk.counters.tenant_writes += 1;
        } else {
            disk.counters.full_writes += 1;
        }
        self.log_record(d, page, st);
        self.disks[d].clean.last_host = now;
        self.clean_visit(d, slot, None, page);
        if !tenant && self.cfg.replicas > 1 {
            let lba = self.ops[id].lba;
            let rid = self.ops.insert(PageOp {
                kind: Kind::Replicas,
                slot: None,
                host_id: 0,
                page,
                lba,
                gen: self.disks[d].gen[page as usize],
            });
            self.disks[d].deferred.push_back(rid);
        }
        self.part_done(now, id, access);
    }

    fn part_done(&mut self, now: Nanos, id: usize, access: &Access) {
        let op = self.ops.remove(id);
        let slot = op.slot.expect("a host operation");
        let breakdown = |s: &HostSlot<()>| {
            Breakdown::of(
                access,
                now.since(s.req.arrival).saturating_sub(access.service()),
            )
        };
        if let Some((c, _)) = self.host.part_done(slot, now, breakdown) {
            self.out.push(Action::Complete(c));
        }
    }
}

mod cleaner;
mod engine;

pub use cleaner::{CleanerPolicy, DAY_NS};
