//! The paged disk's invariants, randomized (proptest) with data moves on, against a model of
//! what each physical page slot holds (the page and host write whose bytes it has):
//!
//! - a read never returns an overwritten replica: its bytes are the page's last
//!   acknowledged write;
//! - no page's home replica is ever written with another page's bytes, and each home replica
//!   holds its page's last acknowledged version unless the page is mapped elsewhere, where
//!   every mapped copy holds it;
//! - after a crash at any instant (a running map-log write torn), recovery from the NVRAM image
//!   and the map log region rebuilds every disk's page map exactly.

use super::array::{CleanerPolicy, PagedArray, PagedConfig};
use super::pages::NONE;
use crate::drive::{parse_drive, Drive, Run};
use crate::engine::{Action, Bytes, DataMove, Engine, Event, HostRequest, NvramBytes};
use crate::{Nanos, Op};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A small drive with the awkward parts (zones, skews, spares, slips splitting tracks).
fn small_drive() -> Arc<Drive> {
    Arc::new(
        parse_drive(
            r#"
id = "small"
name = "small paged test drive"
rpm = 7200.0
surfaces = 3
cylinders = 40
head_switch_ms = 0.4
write_settle_ms = 0.1
overhead_read_ms = 0.3
overhead_write_ms = 0.5
slips = [3, 41, 1000, 2500, 2501, 4000]
zones = [
  { first_cylinder = 0, last_cylinder = 19, sectors_per_track = 50, track_skew = 7.0, cylinder_skew = 13.0, spare_sectors_per_track = 2, spare_sectors_per_zone = 9 },
  { first_cylinder = 20, last_cylinder = 39, sectors_per_track = 37, track_skew = 0.25, cylinder_skew = 0.5, skew_unit = "revolutions" },
]
[seek]
kind = "linear"
full_ms = 6.0
"#,
        )
        .expect("the small drive parses"),
    )
}

/// What a slot holds: (array page, host write id; 0 = the initial contents).
type Tag = (u64, u64);

pub(super) struct Harness {
    pub(super) array: PagedArray,
    page_sectors: u64,
    pub(super) now: Nanos,
    busy: BTreeMap<(Nanos, usize), ()>,
    /// Per disk: slot LBA → tag.
    tags: Vec<HashMap<u64, Tag>>,
    /// Per disk: metadata sector LBA → bytes.
    meta: Vec<HashMap<u64, Vec<u8>>>,
    nvram: Vec<u8>,
    acked: HashMap<u64, u64>,
    /// Host write id → its pages `(first, count)`.
    writes: HashMap<u64, (u64, u64)>,
    /// `(page, host write id)` → when that write's bytes went to the disk (a counter): two
    /// overlapping multi-page writes may be answered in the other order than their pages
    /// were written, and the later bytes are the page's version.
    applied: HashMap<(u64, u64), u64>,
    /// The moves each disk is performing now (one command; torn by a crash).
    running: Vec<Vec<DataMove>>,
    next_id: u64,
    rng: Pcg64Mcg,
    write_p: f64,
    hot: u64,
    done: u64,
    /// Timers the array asked for.
    wakes: std::collections::BTreeSet<Nanos>,
    /// Think time: each answer brings the next request after 0 ..= think_ns (0: at once).
    pub(super) think_ns: u64,
    /// Pages a request covers, 1 ..= this (consecutive pages from a random one).
    pub(super) max_pages: u64,
    /// Requests to issue at these instants.
    issues: BTreeMap<Nanos, u32>,
}

impl Harness {
    pub(super) fn new(cfg: &PagedConfig, seed: u64, write_p: f64, hot: u64) -> Harness {
        let mut array = PagedArray::new(small_drive(), cfg).expect("a valid paged disk");
        assert!(array.enable_data_moves());
        let disks = cfg.ds as usize;
        let page_sectors = cfg.page_bytes / 512;
        let mut h = Harness {
            array,
            page_sectors,
            now: Nanos::ZERO,
            busy: BTreeMap::new(),
            tags: vec![HashMap::new(); disks],
            meta: vec![HashMap::new(); disks],
            nvram: Vec::new(),
            acked: HashMap::new(),
            writes: HashMap::new(),
            applied: HashMap::new(),
            running: vec![Vec::new(); disks],
            next_id: 1,
            rng: Pcg64Mcg::seed_from_u64(seed),
            write_p,
            hot,
            done: 0,
            wakes: Default::default(),
            think_ns: 0,
            max_pages: 1,
            issues: BTreeMap::new(),
        };
        // The initial contents: every mapped copy holds version 0 of its page.
        for d in 0..disks {
            let map = h.array.map(d);
            for p in 0..map.pages() {
                let g = p as u64 * cfg.ds as u64 + d as u64;
                for s in map.copies(p) {
                    h.tags[d].insert(map.cut.lba(s), (g, 0));
                }
            }
        }
        h.pump();
        h
    }

    pub(super) fn issue(&mut self) {
        let pages = self.array.pages().min(self.hot);
        let g = self.rng.gen_range(0..pages);
        let n = if self.max_pages > 1 {
            self.rng
                .gen_range(1..=self.max_pages)
                .min(self.array.pages() - g)
        } else {
            1
        };
        let op = if self.rng.gen_bool(self.write_p) {
            Op::Write
        } else {
            Op::Read
        };
        let id = self.next_id;
        self.next_id += 1;
        if op == Op::Write {
            self.writes.insert(id, (g, n));
        }
        let req = HostRequest {
            id,
            op,
            lba: g * self.page_sectors,
            sectors: (n * self.page_sectors) as u32,
            arrival: self.now,
        };
        self.array.handle(self.now, Event::Host(req));
        self.pump();
    }

    fn pump(&mut self) {
        loop {
            while let Some(w) = self.array.poll_nvram() {
                let NvramBytes::Literal(b) = &w.bytes else {
                    panic!("the paged disk writes literal NVRAM records");
                };
                let end = w.offset as usize + b.len();
                if self.nvram.len() < end {
                    self.nvram.resize(end, 0);
                }
                self.nvram[w.offset as usize..end].copy_from_slice(b);
            }
            while let Some(m) = self.array.poll_data() {
                self.apply(m);
            }
            let Some(a) = self.array.poll_action() else {
                break;
            };
            match a {
                Action::DiskBusy { disk, until } => {
                    self.busy.insert((until, disk), ());
                }
                Action::Complete(c) => {
                    self.done += 1;
                    if c.op == Op::Write {
                        let (g, n) = self.writes.remove(&c.id).expect("a write issued");
                        for p in g..g + n {
                            let mine = self.applied[&(p, c.id)];
                            let newer = self
                                .acked
                                .get(&p)
                                .is_some_and(|&v| self.applied[&(p, v)] > mine);
                            if !newer {
                                self.acked.insert(p, c.id);
                            }
                        }
                    }
                }
                Action::Wake { at } => {
                    assert!(at >= self.now, "a wake-up in the past");
                    self.wakes.insert(at);
                }
            }
        }
    }

    /// Whether `tag` is page `g`'s last acknowledged version, or that of a write of `g` not
    /// yet acknowledged (its request has pages still to write; on a disk a write in progress
    /// may be seen in part).
    fn current(&self, g: u64, tag: Tag) -> bool {
        tag.0 == g
            && (tag.1 == self.acked.get(&g).copied().unwrap_or(0)
                || self
                    .writes
                    .get(&tag.1)
                    .is_some_and(|&(first, n)| (first..first + n).contains(&g)))
    }

    fn page_of(&self, lba: u64) -> u64 {
        lba / self.page_sectors
    }

    fn apply(&mut self, m: DataMove) {
        assert!(m.is_consistent(512), "inconsistent move {m:?}");
        let d = m.disk;
        match (&m.op, &m.bytes) {
            (Op::Read, Bytes::Host(_)) => {
                let g = self.page_of(m.lba);
                let at = m.copies[0][0].lba;
                let tag = self.tags[d].get(&at).copied();
                assert!(
                    tag.is_some_and(|t| self.current(g, t)),
                    "read of page {g} on disk {d} at lba {at}: {tag:?} is not its last \
                     acknowledged write (version {})",
                    self.acked.get(&g).copied().unwrap_or(0)
                );
            }
            (Op::Write, Bytes::Host(id)) => {
                let g = self.page_of(m.lba);
                let (first, n) = self.writes[id];
                assert!((first..first + n).contains(&g), "write {id} moves page {g}");
                assert_eq!(m.sectors as u64, self.page_sectors, "one page a move");
                let order = self.applied.len() as u64;
                self.applied.insert((g, *id), order);
                self.write_tags(d, &m.copies, (g, *id));
            }
            (Op::Write, Bytes::Copy { disk, runs }) => {
                let tag = self.tags[*disk][&runs[0].lba];
                assert_eq!(tag.0, self.page_of(m.lba), "a replica copies its own page");
                self.write_tags(d, &m.copies, tag);
            }
            (Op::Write, Bytes::Meta(bytes)) => {
                let run = m.copies[0][0];
                for (i, chunk) in bytes.chunks(512).enumerate() {
                    self.meta[d].insert(run.lba + i as u64, chunk.to_vec());
                }
            }
            other => panic!("unexpected move {other:?}"),
        }
        self.running[d].push(m);
    }

    fn write_tags(&mut self, d: usize, copies: &[Vec<Run>], tag: Tag) {
        let cut = self.array.map(d).cut.clone();
        for c in copies {
            let lba = c[0].lba;
            let s = (0..cut.slots)
                .find(|&s| cut.lba(s) == lba)
                .expect("a write to a page slot");
            // A home replica is written only with its own page's bytes.
            if let Some((p, 0)) = cut.home_of_slot(s) {
                let g = p as u64 * self.array.disk_count() as u64 + d as u64;
                assert_eq!(
                    g, tag.0,
                    "page {} written over page {g}'s home replica",
                    tag.0
                );
            }
            self.tags[d].insert(lba, tag);
        }
    }

    /// The next disk completion; false when none is pending.
    pub(super) fn step(&mut self) -> bool {
        // Timers and delayed requests due before the next completion come first.
        loop {
            let next_disk = self.busy.keys().next().map(|&(t, _)| t);
            let wake = self.wakes.iter().next().copied();
            let issue = self.issues.keys().next().copied();
            let timer = match (wake, issue) {
                (Some(w), Some(i)) => Some(w.min(i)),
                (w, i) => w.or(i),
            };
            match (timer, next_disk) {
                (Some(t), nd) if nd.is_none_or(|n| t < n) => {
                    self.now = t;
                    if wake == Some(t) {
                        self.wakes.remove(&t);
                        self.array.handle(t, Event::Wake);
                        self.pump();
                    } else {
                        let n = self.issues.remove(&t).unwrap_or(0);
                        for _ in 0..n {
                            self.issue();
                        }
                    }
                }
                (_, None) => return false,
                _ => break,
            }
        }
        let Some((&(t, d), _)) = self.busy.iter().next() else {
            return false;
        };
        self.busy.remove(&(t, d));
        self.now = t;
        self.running[d].clear();
        let before = self.done;
        self.array.handle(t, Event::DiskDone { disk: d });
        self.pump();
        // Closed loop: each answer brings the next request (after a think time).
        for _ in before..self.done {
            if self.think_ns == 0 {
                self.issue();
            } else {
                let at = Nanos(t.0 + self.rng.gen_range(0..=self.think_ns));
                *self.issues.entry(at).or_insert(0) += 1;
            }
        }
        true
    }

    /// Every mapped copy holds its page's last acknowledged write; home replicas are the
    /// page's or empty; the map is consistent.
    pub(super) fn check(&self) {
        let ds = self.array.disk_count() as u64;
        for d in 0..self.array.disk_count() {
            let map = self.array.map(d);
            map.check().expect("a consistent page map");
            for p in 0..map.pages() {
                let g = p as u64 * ds + d as u64;
                let home = map.cut.home_slot(p, 0);
                let h = map.page_at(home);
                assert!(
                    h == NONE || h == p,
                    "page {g}'s home replica holds another page"
                );
                let running = &self.running[d];
                for s in map.copies(p) {
                    let lba = map.cut.lba(s);
                    // An in-place rewrite of a page's only copy is in flight.
                    let rewriting = running
                        .iter()
                        .any(|m| m.op == Op::Write && m.copies.iter().any(|c| c[0].lba == lba));
                    let tag = self.tags[d].get(&lba).copied();
                    if !rewriting {
                        assert!(
                            tag.is_some_and(|t| self.current(g, t)),
                            "page {g} slot {s}: {tag:?}, acknowledged version {}",
                            self.acked.get(&g).copied().unwrap_or(0)
                        );
                    }
                }
                assert!(
                    map.copy_count(p) >= 1 || !running.is_empty(),
                    "page {g} has no copy"
                );
            }
        }
    }

    /// Recovers a fresh controller from the NVRAM image and the disks as a crash now leaves
    /// them (the running map-log write torn) and compares its maps with the live ones.
    pub(super) fn crash_and_compare(&self, cfg: &PagedConfig) {
        let mut fresh = PagedArray::new(small_drive(), cfg).expect("a valid paged disk");
        assert!(fresh.enable_data_moves());
        let torn: Vec<Vec<(u64, u32)>> = self
            .running
            .iter()
            .map(|ms| {
                ms.iter()
                    .filter(|m| matches!(m.bytes, Bytes::Meta(_)))
                    .flat_map(|m| m.copies[0].iter().map(|r| (r.lba, r.sectors)))
                    .collect()
            })
            .collect();
        let meta = &self.meta;
        let mut read = |d: usize, runs: &[Run], buf: &mut [u8]| -> Result<(), String> {
            let mut at = 0;
            for r in runs {
                for k in 0..u64::from(r.sectors) {
                    let lba = r.lba + k;
                    let in_torn = torn[d]
                        .iter()
                        .any(|&(l, n)| lba >= l && lba < l + u64::from(n));
                    let out = &mut buf[at..at + 512];
                    match meta[d].get(&lba) {
                        _ if in_torn => out.fill(0xA5),
                        Some(b) => out.copy_from_slice(b),
                        None => out.fill(0),
                    }
                    at += 512;
                }
            }
            Ok(())
        };
        let moves = fresh
            .recover(&self.nvram, &mut read)
            .expect("recovery succeeds");
        assert!(moves.is_empty());
        for d in 0..self.array.disk_count() {
            assert!(
                fresh.map(d) == self.array.map(d),
                "disk {d}: the recovered page map differs ({} vs {} tenants)",
                fresh.map(d).tenants(),
                self.array.map(d).tenants()
            );
        }
    }
}

pub(super) fn config(
    ds: u32,
    replicas: u32,
    bad_tenants: bool,
    records: u64,
    log_sectors: u64,
) -> PagedConfig {
    PagedConfig {
        ds,
        page_bytes: 2048,
        replicas,
        bad_tenants,
        page_runs: false,
        random_phase: true,
        noise: false,
        seed: 7,
        log_nvram_records: records,
        log_sectors,
        cleaner: super::CleanerPolicy::None,
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    cfg: &PagedConfig,
    seed: u64,
    write_p: f64,
    hot: u64,
    q: usize,
    steps: usize,
    crashes: usize,
    think_ns: u64,
) -> Harness {
    run_pages(cfg, seed, write_p, hot, q, steps, crashes, think_ns, 1)
}

/// [`run`] with requests of 1 ..= `max_pages` consecutive pages.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_pages(
    cfg: &PagedConfig,
    seed: u64,
    write_p: f64,
    hot: u64,
    q: usize,
    steps: usize,
    crashes: usize,
    think_ns: u64,
    max_pages: u64,
) -> Harness {
    let mut h = Harness::new(cfg, seed, write_p, hot);
    h.think_ns = think_ns;
    h.max_pages = max_pages;
    for _ in 0..q {
        h.issue();
    }
    let mut crash_rng = Pcg64Mcg::seed_from_u64(seed ^ 0xC0FFEE);
    let p_crash = crashes as f64 / steps as f64;
    for _ in 0..steps {
        assert!(h.step(), "the closed loop never runs dry");
        h.check();
        if crashes > 0 && crash_rng.gen_bool(p_crash.min(1.0)) {
            h.crash_and_compare(cfg);
        }
    }
    h
}

/// Every cleaner policy, with thresholds the small drive's runs cross.
pub(super) fn cleaners() -> impl Strategy<Value = CleanerPolicy> {
    prop_oneof![
        Just(CleanerPolicy::None),
        (0u64..=3_000_000).prop_map(|idle_ns| CleanerPolicy::Idle { idle_ns }),
        (0u64..=20).prop_map(|max_tenants| CleanerPolicy::Dirtiness { max_tenants }),
        Just(CleanerPolicy::Piggyback),
        (0u64..=200_000_000, 0u64..=300_000_000)
            .prop_map(|(start_ns, len_ns)| CleanerPolicy::Nightly { start_ns, len_ns }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, rng_seed: proptest::test_runner::RngSeed::Fixed(0x9A6E), ..ProptestConfig::default() })]

    #[test]
    fn reads_see_the_last_acknowledged_write_and_home_replicas_hold_their_page(
        seed in any::<u64>(),
        ds in 1u32..=2,
        replicas in 1u32..=8,
        bad_tenants in any::<bool>(),
        write_p in 0.0f64..=1.0,
        hot in prop_oneof![Just(40u64), Just(400), Just(u64::MAX)],
        q in 1usize..=4,
        cleaner in cleaners(),
        think_ns in prop_oneof![Just(0u64), Just(4_000_000), Just(30_000_000)],
    ) {
        let cfg = PagedConfig { cleaner, ..config(ds, replicas, bad_tenants, 64, 64) };
        run(&cfg, seed, write_p, hot, q, 1500, 0, think_ns);
    }

    #[test]
    fn page_runs_keep_every_invariant_and_recover_exactly(
        seed in any::<u64>(),
        ds in 1u32..=2,
        replicas in 2u32..=8,
        write_p in 0.3f64..=1.0,
        hot in prop_oneof![Just(40u64), Just(400), Just(u64::MAX)],
        q in 1usize..=4,
        max_pages in 2u64..=12,
        records in prop_oneof![Just(8u64), Just(40), Just(64)],
        cleaner in prop_oneof![
            Just(CleanerPolicy::None),
            Just(CleanerPolicy::Idle { idle_ns: 1_000_000 }),
            Just(CleanerPolicy::Dirtiness { max_tenants: 10 }),
        ],
        think_ns in prop_oneof![Just(0u64), Just(4_000_000)],
    ) {
        // Multi-page requests, so runs form; tiny NVRAM rings cap their length.
        let cfg = PagedConfig {
            cleaner,
            page_runs: true,
            ..config(ds, replicas, true, records, 6)
        };
        let h = run_pages(&cfg, seed, write_p, hot, q, 1200, 40, think_ns, max_pages);
        let runs: u64 = (0..ds as usize).map(|d| h.array.paged_counters(d).run_writes).sum();
        prop_assert!(write_p < 0.5 || runs > 0, "no run was written");
    }

    #[test]
    fn the_page_map_recovers_exactly_after_a_crash(
        seed in any::<u64>(),
        replicas in 1u32..=8,
        bad_tenants in any::<bool>(),
        write_p in 0.3f64..=1.0,
        records in 8u64..=40,
        log_sectors in 1u64..=6,
        cleaner in cleaners(),
        think_ns in prop_oneof![Just(0u64), Just(4_000_000), Just(30_000_000)],
    ) {
        // Small NVRAM and log region: flushes, full logs and checkpoints are frequent.
        let cfg = PagedConfig { cleaner, ..config(1, replicas, bad_tenants, records, log_sectors) };
        run(&cfg, seed, write_p, 200, 2, 1200, 60, think_ns);
    }
}

#[test]
fn a_thousand_crash_points_recover_exactly() {
    // 1,000+ crash points over one long run with 4-way pages and bad tenants, two disks.
    let cfg = config(2, 4, true, 16, 3);
    let mut h = Harness::new(&cfg, 11, 0.7, 300);
    for _ in 0..3 {
        h.issue();
    }
    let mut points = 0;
    for i in 0..6000 {
        assert!(h.step());
        if i % 5 == 0 {
            h.crash_and_compare(&cfg);
            points += 1;
        }
    }
    h.check();
    assert!(points >= 1000);
    let c = h.array.paged_counters(0);
    assert!(c.tenant_writes > 0 && c.full_writes > 0, "{c:?}");
    assert!(c.checkpoints > 0 && c.flushes > 0, "{c:?}");
}

#[test]
fn without_bad_tenants_every_write_is_a_full_replicated_write() {
    let cfg = config(1, 4, false, 64, 64);
    let mut h = Harness::new(&cfg, 3, 1.0, u64::MAX);
    h.issue();
    for _ in 0..500 {
        assert!(h.step());
    }
    h.check();
    let c = h.array.paged_counters(0);
    assert_eq!(c.tenant_writes, 0);
    // 500 disk operations: each write is its first copy and a replica write (few flushes).
    assert!(c.full_writes >= 200, "{c:?}");
    assert!(c.replica_ops + 1 >= c.full_writes, "{c:?}");
    assert_eq!(c.replica_copies, 3 * c.replica_ops, "{c:?}");
    assert_eq!(h.array.map(0).tenants(), 0);
}

#[test]
fn a_metadata_scan_reads_the_whole_surface_and_takes_minutes_where_the_log_takes_ms() {
    let drive = Arc::new(crate::drive::builtin_drive("ibm18es").expect("ibm18es"));
    let cfg = PagedConfig {
        page_bytes: 8192,
        log_sectors: super::array::DEFAULT_LOG_SECTORS,
        ..config(1, 4, true, 4096, 0)
    };
    let a = PagedArray::new(drive, &cfg).expect("a paged 18ES");
    let scan_s = a.scan_time().0 as f64 / 1e9;
    // 57,370 tracks, a revolution of 8.33 ms each plus the skew waited at every track and
    // cylinder switch: 558 s (docs/paged.md quotes this number).
    assert!((500.0..=620.0).contains(&scan_s), "scan {scan_s:.1} s");
    let log_ms = a.recovery_time().expect("a recovery time").0 as f64 / 1e6;
    assert!(log_ms < 1.0, "nothing logged yet: {log_ms} ms");
    eprintln!("metadata scan {scan_s:.1} s");
}
