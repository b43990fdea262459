//! The parity controller's bytes, checked against a model of the disks changed only by its
//! data moves and an NVRAM image changed only by its NVRAM writes. Every sector holds a
//! fingerprint (a host write's is a hash of its id and the sector's address, never 0; an
//! unwritten sector is 0) repeated over its bytes, so XORs of sectors are XORs of
//! fingerprints: after any run, every stripe's parity must be the XOR of its data, and every
//! read must return a write it may see.

use super::*;
use crate::engine::{xor_pieces, Bytes, DataMove, NvramBytes, NvramWrite, Source};

const SB: usize = 512;

fn fingerprint(id: u64, sector: u64) -> u64 {
    let mut z = (id << 40) ^ sector ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

fn fill(buf: &mut [u8], fps: impl Iterator<Item = u64>) {
    for (chunk, fp) in buf.chunks_mut(SB).zip(fps) {
        for w in chunk.chunks_mut(8) {
            w.copy_from_slice(&fp.to_le_bytes());
        }
    }
}

/// The fingerprints of `buf`'s sectors (each must be one repeated).
fn fingerprints(buf: &[u8]) -> Vec<u64> {
    buf.chunks(SB)
        .map(|c| {
            let fp = u64::from_le_bytes(c[..8].try_into().unwrap());
            assert!(
                c.chunks(8).all(|w| w == fp.to_le_bytes()),
                "a sector is not one fingerprint"
            );
            fp
        })
        .collect()
}

/// A write's life, for what a read may return, in ticks of the harness's event order (two
/// events at one instant are still ordered: the controller handled one first).
#[derive(Clone, Copy, Debug)]
struct Write {
    id: u64,
    arrival: u64,
    ack: Option<u64>,
}

#[derive(Default)]
struct Model {
    disks: Vec<HashMap<u64, u64>>,
    nvram: Vec<u8>,
    /// Live host writes: id → (first sector, sectors).
    live: HashMap<u64, (u64, u32)>,
    /// Writes per array sector, in arrival order.
    writes: HashMap<u64, Vec<Write>>,
    /// Reads in flight: id → (arrival, first sector, fingerprints got).
    reads: HashMap<u64, (u64, u64, Vec<Option<u64>>)>,
    /// Host arrivals handled and completions received so far.
    tick: u64,
    /// What each array sector held before the run (random, parity consistent).
    initial: HashMap<u64, u64>,
    checked_reads: u64,
    nvram_moves: u64,
    xor_moves: u64,
    recon_reads: u64,
}

impl Model {
    fn read_source(&self, from: &Source, buf: &mut [u8]) -> Result<(), String> {
        match from {
            Source::Host { id, lba } => {
                let (first, n) = self.live[id];
                assert!(*lba >= first && lba + (buf.len() / SB) as u64 <= first + u64::from(n));
                fill(buf, (*lba..).map(|s| fingerprint(*id, s)));
            }
            Source::Disk { disk, runs } => {
                let d = &self.disks[*disk];
                let secs = runs
                    .iter()
                    .flat_map(|r| r.lba..r.lba + u64::from(r.sectors));
                fill(buf, secs.map(|s| d.get(&s).copied().unwrap_or(0)));
            }
            Source::Nvram(offset) => {
                let o = *offset as usize;
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = self.nvram.get(o + i).copied().unwrap_or(0);
                }
            }
        }
        Ok(())
    }

    fn xor(&self, pieces: &[crate::engine::Piece], sectors: u32) -> Vec<u64> {
        let b = xor_pieces(pieces, sectors, SB as u32, &mut |f, buf| {
            self.read_source(f, buf)
        })
        .expect("an XOR of live sources");
        fingerprints(&b)
    }

    fn apply_nvram(&mut self, w: &NvramWrite) {
        let bytes = match &w.bytes {
            NvramBytes::Literal(b) => b.clone(),
            NvramBytes::Xor { sectors, pieces } => {
                let fps = self.xor(pieces, *sectors);
                let mut b = vec![0; fps.len() * SB];
                fill(&mut b, fps.into_iter());
                b
            }
        };
        let end = w.offset as usize + bytes.len();
        if self.nvram.len() < end {
            self.nvram.resize(end, 0);
        }
        self.nvram[w.offset as usize..end].copy_from_slice(&bytes);
    }

    fn write_runs(&mut self, disk: usize, runs: &[crate::drive::Run], fps: &[u64]) {
        let secs = runs
            .iter()
            .flat_map(|r| r.lba..r.lba + u64::from(r.sectors));
        for (s, fp) in secs.zip(fps) {
            self.disks[disk].insert(s, *fp);
        }
    }

    fn apply(&mut self, mv: &DataMove) {
        assert!(mv.is_consistent(SB as u32), "{mv:?}");
        match (&mv.op, &mv.bytes) {
            (Op::Read, Bytes::Host(id)) => {
                let d = &self.disks[mv.disk];
                let fps: Vec<u64> = mv.copies[0]
                    .iter()
                    .flat_map(|r| r.lba..r.lba + u64::from(r.sectors))
                    .map(|s| d.get(&s).copied().unwrap_or(0))
                    .collect();
                self.got(*id, mv.lba, &fps);
            }
            (Op::Read, Bytes::HostXor { id, pieces }) => {
                self.recon_reads += 1;
                let fps = self.xor(pieces, mv.sectors);
                self.got(*id, mv.lba, &fps);
            }
            (Op::Write, Bytes::Host(id)) => {
                let fps: Vec<u64> = (mv.lba..mv.lba + u64::from(mv.sectors))
                    .map(|s| fingerprint(*id, s))
                    .collect();
                for c in &mv.copies {
                    self.write_runs(mv.disk, c, &fps);
                }
            }
            (Op::Write, Bytes::Nvram(offset)) => {
                self.nvram_moves += 1;
                let from = Source::Nvram(*offset);
                let mut b = vec![0; mv.sectors as usize * SB];
                self.read_source(&from, &mut b).unwrap();
                let fps = fingerprints(&b);
                for c in &mv.copies {
                    self.write_runs(mv.disk, c, &fps);
                }
            }
            (Op::Write, Bytes::Xor(pieces)) => {
                self.xor_moves += 1;
                let fps = self.xor(pieces, mv.sectors);
                for c in &mv.copies {
                    self.write_runs(mv.disk, c, &fps);
                }
            }
            (op, b) => panic!("the parity controller moved {op:?} {b:?}"),
        }
    }

    fn got(&mut self, id: u64, lba: u64, fps: &[u64]) {
        let (_, first, got) = self.reads.get_mut(&id).expect("a live read");
        for (i, fp) in fps.iter().enumerate() {
            let at = (lba - *first) as usize + i;
            assert!(
                got[at].is_none(),
                "read {id}: sector {} read twice",
                lba + i as u64
            );
            got[at] = Some(*fp);
        }
    }

    /// The fingerprints sector `s` may hold for a reader that began at `from` and ended at
    /// `to` (ticks): what it may hold at rest at `from`, or any write that arrived before
    /// `to` and was not acknowledged before `from`.
    fn allowed(&self, s: u64, from: u64, to: u64) -> Vec<u64> {
        let ws = self.writes.get(&s).map_or(&[][..], |v| &v[..]);
        let mut ok = self.allowed_at_rest(s, from);
        ok.extend(
            ws.iter()
                .filter(|w| w.arrival < to && w.ack.is_none_or(|a| a > from))
                .map(|w| fingerprint(w.id, s)),
        );
        ok
    }

    /// What sector `s` may hold at `now` (ticks) by the writes acknowledged by then: one
    /// not superseded by a write that arrived after it was acknowledged and was itself
    /// acknowledged by `now` (writes that overlapped in time may land in either order), or
    /// the initial contents if none was acknowledged. At a crash, writes in flight may
    /// also have landed.
    fn allowed_at_rest(&self, s: u64, now: u64) -> Vec<u64> {
        let ws = self.writes.get(&s).map_or(&[][..], |v| &v[..]);
        let acked_later = |w: &Write| {
            ws.iter()
                .any(|x| x.ack.is_some_and(|a| a <= now) && w.ack.is_some_and(|wa| x.arrival > wa))
        };
        let mut ok: Vec<u64> = ws
            .iter()
            .filter(|w| !acked_later(w))
            .map(|w| fingerprint(w.id, s))
            .collect();
        if !ws.iter().any(|w| w.ack.is_some_and(|a| a <= now)) {
            ok.push(self.initial.get(&s).copied().unwrap_or(0));
        }
        ok
    }
}

/// A model of `a`'s disks holding random data and its parity.
fn prefilled(a: &Raid5Array, rng: &mut Pcg64Mcg) -> Model {
    let mut m = Model {
        disks: vec![HashMap::new(); a.disk_count()],
        ..Model::default()
    };
    let l = a.layout();
    for g in 0..l.groups() {
        for s in 0..l.stripes() {
            let lba = l.stripe_lba(s);
            for o in 0..l.unit_of(s) {
                let mut parity = 0;
                for k in 0..l.width() - 1 {
                    let fp: u64 = rng.gen::<u64>() | 1;
                    parity ^= fp;
                    m.disks[l.data_disk(g, s, k)].insert(lba + u64::from(o), fp);
                    m.initial.insert(l.logical(g, s, k, o), fp);
                }
                m.disks[l.parity_disk(g, s)].insert(lba + u64::from(o), parity);
            }
        }
    }
    m
}

/// Runs `reqs` on `a` with data moves on, performing every move and NVRAM write on `m` in
/// the order polled and checking each read as it is answered; stops after `crash_after`
/// NVRAM writes and moves if given (a crash between any two, as power can fail between
/// any two writes). Returns the instant of the last event.
fn run(a: &mut Raid5Array, m: &mut Model, reqs: &[HostRequest], crash_after: Option<u64>) -> u64 {
    use std::cmp::Reverse;
    let mut heap = std::collections::BinaryHeap::new();
    let mut next = reqs.iter().peekable();
    let mut effects = 0u64;
    loop {
        loop {
            while let Some(w) = a.poll_nvram() {
                effects += 1;
                if crash_after.is_some_and(|n| effects > n) {
                    return m.tick;
                }
                m.apply_nvram(&w);
            }
            while let Some(mv) = a.poll_data() {
                effects += 1;
                if crash_after.is_some_and(|n| effects > n) {
                    return m.tick;
                }
                m.apply(&mv);
            }
            match a.poll_action() {
                Some(Action::DiskBusy { disk, until }) => heap.push(Reverse((until, disk))),
                Some(Action::Wake { at }) => heap.push(Reverse((at, WAKE))),
                Some(Action::Complete(c)) => {
                    m.tick += 1;
                    if c.op == Op::Write {
                        let (first, n) = m.live.remove(&c.id).expect("a live write");
                        for s in first..first + u64::from(n) {
                            let w = m.writes.get_mut(&s).unwrap();
                            w.iter_mut().find(|w| w.id == c.id).unwrap().ack = Some(m.tick);
                        }
                    } else {
                        let (arrival, first, got) = m.reads.remove(&c.id).expect("a live read");
                        for (i, fp) in got.into_iter().enumerate() {
                            let s = first + i as u64;
                            let fp = fp
                                .unwrap_or_else(|| panic!("read {}: sector {s} never read", c.id));
                            let ok = m.allowed(s, arrival, m.tick);
                            assert!(
                                ok.contains(&fp),
                                "read {} (arrived at tick {arrival}, now {}) of sector {s} got {fp:#x}, may get {ok:#x?}; writes {:?}",
                                c.id,
                                m.tick,
                                m.writes.get(&s)
                            );
                            m.checked_reads += 1;
                        }
                    }
                }
                None => break,
            }
        }
        let disk_t = heap.peek().map(|Reverse((t, _))| *t);
        let host_first = match (next.peek(), disk_t) {
            (None, None) => return m.tick,
            (Some(r), Some(t)) => r.arrival <= t,
            (Some(_), None) => true,
            (None, Some(_)) => false,
        };
        if host_first {
            let r = *next.next().unwrap();
            m.tick += 1;
            if r.op == Op::Write {
                m.live.insert(r.id, (r.lba, r.sectors));
                for s in r.lba..r.lba + u64::from(r.sectors) {
                    m.writes.entry(s).or_default().push(Write {
                        id: r.id,
                        arrival: m.tick,
                        ack: None,
                    });
                }
            } else {
                m.reads
                    .insert(r.id, (m.tick, r.lba, vec![None; r.sectors as usize]));
            }
            a.handle(r.arrival, Event::Host(r));
        } else {
            let Reverse((t, disk)) = heap.pop().unwrap();
            if disk == WAKE {
                a.handle(t, Event::Wake);
            } else {
                a.handle(t, Event::DiskDone { disk });
            }
        }
    }
}

/// Every stripe's parity is the XOR of its data, on every disk but `lost` (a stripe whose
/// unit on it is not rebuilt is skipped).
/// Whether stripe `(g, s)` has data or parity in the write cache newer than its disks
/// (the threshold algorithms leave some at low occupancy).
fn cached_newer(a: &Raid5Array, g: u32, s: u64) -> bool {
    let Some(c) = a.cache.as_ref() else {
        return false;
    };
    let l = a.layout();
    let bs = u64::from(a.block_sectors);
    let first = (g * l.width()) as usize;
    c.dirty.contains_key(&(g, s))
        || (first..first + l.width() as usize).any(|d| {
            let b0 = l.stripe_lba(s) / bs;
            (b0..b0 + u64::from(l.unit_of(s)) / bs).any(|b| c.write.has_newer((d as u32, b)))
        })
}

fn assert_parity(a: &Raid5Array, m: &Model, skip_disk: Option<usize>) {
    let l = a.layout();
    for g in 0..l.groups() {
        for s in 0..l.stripes() {
            let unit = u64::from(l.unit_of(s));
            let disks: Vec<usize> = (0..l.width() - 1)
                .map(|k| l.data_disk(g, s, k))
                .chain(std::iter::once(l.parity_disk(g, s)))
                .collect();
            if skip_disk.is_some_and(|x| disks.contains(&x)) || cached_newer(a, g, s) {
                continue;
            }
            for o in 0..unit {
                let lba = l.stripe_lba(s) + o;
                let x = disks
                    .iter()
                    .map(|&d| m.disks[d].get(&lba).copied().unwrap_or(0))
                    .fold(0, |x, y| x ^ y);
                assert_eq!(
                    x, 0,
                    "group {g} stripe {s} row {o}: parity is not the XOR of the data"
                );
            }
        }
    }
}

/// Every array sector holds a write it may hold at rest (read through the layout).
fn assert_contents(a: &Raid5Array, m: &Model, now: u64, what: &str) {
    let l = a.layout();
    let sectors: Vec<u64> = m.initial.keys().chain(m.writes.keys()).copied().collect();
    for s in sectors {
        let mut pieces = Vec::new();
        l.pieces(s, 1, &mut pieces);
        let p = pieces[0];
        if cached_newer(a, p.group, p.stripe) {
            continue;
        }
        let d = l.data_disk(p.group, p.stripe, p.unit);
        let lba = l.stripe_lba(p.stripe) + u64::from(p.offset);
        let fp = m.disks[d].get(&lba).copied().unwrap_or(0);
        let ok = m.allowed_at_rest(s, now);
        assert!(
            ok.contains(&fp),
            "{what}: sector {s} holds {fp:#x}, may hold {ok:#x?}"
        );
    }
}

/// Random reads and writes on a small array: hot spots (same stripes, re-writes) and
/// anywhere, single sectors to two units, in bursts.
fn workload(cap: u64, rng: &mut Pcg64Mcg, n: u64) -> Vec<HostRequest> {
    let mut t = 0;
    (0..n)
        .map(|i| {
            t += if rng.gen_bool(0.3) {
                0
            } else {
                rng.gen_range(0..8_000_000)
            };
            let op = if rng.gen_bool(0.5) {
                Op::Read
            } else {
                Op::Write
            };
            let sectors = rng.gen_range(1..=40u32);
            let span = if rng.gen_bool(0.5) { 600 } else { cap };
            let lba = rng.gen_range(0..span.min(cap) - u64::from(sectors));
            req(i, op, lba, sectors, t)
        })
        .collect()
}

fn small(rotation: ParityRotation, seed: u64, failure: Option<FailureConfig>) -> Raid5Array {
    small_cached(rotation, seed, failure, None, 16)
}

fn small_cached(
    rotation: ParityRotation,
    seed: u64,
    failure: Option<FailureConfig>,
    cache: Option<CacheConfig>,
    unit: u32,
) -> Raid5Array {
    build_failing((2, 4, unit), Some(24_000), rotation, cache, seed, failure)
}

/// A write cache of 8–48 blocks (overflows come often) with a random destage algorithm.
fn random_cache(rng: &mut Pcg64Mcg) -> CacheConfig {
    use crate::cache::DestagePolicy;
    let policies = [
        DestagePolicy::Fcfs,
        DestagePolicy::LeastCost,
        DestagePolicy::high_low_default(),
        DestagePolicy::linear_threshold_default(),
        DestagePolicy::regions_default(),
    ];
    CacheConfig {
        write_blocks: rng.gen_range(8..48),
        read_blocks: rng.gen_range(0..64),
        parity_reserve: 3,
        policy: policies[rng.gen_range(0..policies.len())].clone(),
    }
}

/// Requests of whole 4 KiB blocks (what a cached array accepts with data moves on).
fn whole_blocks(reqs: Vec<HostRequest>, cap: u64) -> Vec<HostRequest> {
    reqs.into_iter()
        .map(|mut r| {
            r.lba = r.lba / 8 * 8;
            r.sectors = r.sectors.div_ceil(8) * 8;
            if r.lba + u64::from(r.sectors) > cap {
                r.lba = cap - u64::from(r.sectors);
            }
            r
        })
        .collect()
}

#[test]
fn parity_is_the_xor_of_the_data_and_reads_see_acknowledged_writes_through_failure_and_rebuild() {
    let rotations = [
        ParityRotation::LeftSymmetric,
        ParityRotation::LeftAsymmetric,
        ParityRotation::RightSymmetric,
        ParityRotation::Dedicated,
    ];
    let (mut recon, mut xors, mut reads, mut nvram) = (0, 0, 0, 0);
    for (unit, case) in [16, TRACKS]
        .into_iter()
        .flat_map(|u| (0..48u64).map(move |c| (u, c)))
    {
        let mut rng = Pcg64Mcg::seed_from_u64(500 + case);
        let rotation = rotations[case as usize % rotations.len()];
        // A third healthy, a third failing mid-run and rebuilt, a third failing for good.
        let failure = match case % 3 {
            0 => None,
            k => Some(FailureConfig {
                disk: rng.gen_range(0..8),
                at: Nanos(rng.gen_range(0..1_000_000_000)),
                rebuild: k == 1,
                rate_bytes_per_s: rng.gen_bool(0.5).then_some(2e6),
            }),
        };
        // Every other case with the write cache.
        let cache = (case % 2 == 1).then(|| random_cache(&mut rng));
        let mut a = small_cached(rotation, case, failure.clone(), cache.clone(), unit);
        assert!(a.enable_data_moves());
        let mut m = prefilled(&a, &mut rng);
        let cap = a.capacity_sectors();
        let mut reqs = workload(cap, &mut rng, 400);
        if cache.is_some() {
            reqs = whole_blocks(reqs, cap);
        }
        let end = run(&mut a, &mut m, &reqs, None);
        assert_eq!(a.outstanding(), 0, "case {case}");
        let lost = match &failure {
            Some(f) if !f.rebuild => Some(f.disk),
            _ => None,
        };
        if let Some(f) = &failure {
            let s = a.rebuild_status().expect("failed");
            assert_eq!(s.done.is_some(), f.rebuild, "case {case}: {s:?}");
        }
        // Stripes with newer data or parity still cached are left out.
        assert_parity(&a, &m, lost);
        if lost.is_none() {
            assert_contents(&a, &m, end, &format!("case {case}"));
        }
        recon += m.recon_reads;
        nvram += m.nvram_moves;
        xors += m.xor_moves;
        reads += m.checked_reads;
    }
    // The test exercised what it claims to.
    assert!(
        recon > 100 && xors > 1000 && reads > 10_000 && nvram > 1000,
        "{recon} {xors} {reads} {nvram}"
    );
}

#[test]
fn a_crash_anywhere_leaves_consistent_parity_after_recovery_and_every_acknowledged_write() {
    let mut repaired = 0;
    for (unit, case) in [16, TRACKS]
        .into_iter()
        .flat_map(|u| (0..120u64).map(move |c| (u, c)))
    {
        let mut rng = Pcg64Mcg::seed_from_u64(900 + case);
        let rotation =
            [ParityRotation::LeftSymmetric, ParityRotation::Dedicated][case as usize % 2];
        let cache = (case % 3 != 0).then(|| random_cache(&mut rng));
        let mut a = small_cached(rotation, case, None, cache.clone(), unit);
        assert!(a.enable_data_moves());
        let mut m = prefilled(&a, &mut rng);
        let cap = a.capacity_sectors();
        let mut reqs = workload(cap, &mut rng, 200);
        if cache.is_some() {
            reqs = whole_blocks(reqs, cap);
        }
        let crash = rng.gen_range(1..600);
        let now = run(&mut a, &mut m, &reqs, Some(crash));
        // Power fails: the disks and the NVRAM image are what the moves and NVRAM writes
        // made them. A new controller recovers from them.
        let mut b = small_cached(rotation, case, None, cache, unit);
        assert!(b.enable_data_moves());
        let mut read = |_: usize, _: &[crate::drive::Run], _: &mut [u8]| Ok(());
        let image = m.nvram.clone();
        let repairs = b
            .recover(&image, &mut read)
            .expect("a clean image recovers");
        repaired += repairs.len();
        // Repairs read the image recovery saw; then the image is replaced by the new
        // controller's.
        for mv in &repairs {
            m.apply(mv);
        }
        m.nvram.clear();
        while let Some(w) = b.poll_nvram() {
            m.apply_nvram(&w);
        }
        assert_parity(&b, &m, None);
        assert_contents(
            &b,
            &m,
            now,
            &format!("case {case} after a crash at event {crash}"),
        );
    }
    assert!(
        repaired > 20,
        "crashes found stripes mid-update: {repaired}"
    );
}

#[test]
fn malformed_or_foreign_nvram_images_are_refused() {
    let mut a = small(ParityRotation::LeftSymmetric, 1, None);
    assert!(a.enable_data_moves());
    let mut m = Model {
        disks: vec![HashMap::new(); a.disk_count()],
        ..Model::default()
    };
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let reqs = workload(a.capacity_sectors(), &mut rng, 50);
    run(&mut a, &mut m, &reqs, Some(40));
    let mut read = |_: usize, _: &[crate::drive::Run], _: &mut [u8]| Ok(());
    let fresh = || {
        let mut b = small(ParityRotation::LeftSymmetric, 1, None);
        b.enable_data_moves();
        b
    };
    assert!(fresh().recover(&m.nvram, &mut read).is_ok());
    // Another array's image.
    let mut other = build_failing(
        (1, 5, 16),
        Some(24_000),
        ParityRotation::LeftSymmetric,
        None,
        1,
        None,
    );
    assert!(other.enable_data_moves());
    let e = other.recover(&m.nvram, &mut read).unwrap_err();
    assert!(e.0.contains("different parity array"), "{e}");
    let mut bad = m.nvram.clone();
    bad[0] ^= 0xff;
    assert!(fresh()
        .recover(&bad, &mut read)
        .unwrap_err()
        .0
        .contains("magic"));
    let mut bad = m.nvram.clone();
    // The first intent slot (no cache: right after the header, at 4 KiB).
    bad.resize(4096 + 16, 0);
    bad[4096] = 7;
    assert!(fresh()
        .recover(&bad, &mut read)
        .unwrap_err()
        .0
        .contains("intent slot 0"));
    // A cached array's image is not a cacheless one's.
    let mut c = cached(
        crate::cache::DestagePolicy::Fcfs,
        16,
        16,
        3,
        ParityRotation::LeftSymmetric,
        1,
        16,
    );
    assert!(c.enable_data_moves());
    assert!(c
        .recover(&m.nvram, &mut read)
        .unwrap_err()
        .0
        .contains("different parity array"));
    // A cached block whose header is in the image but whose bytes are not: damaged.
    let mut mc = prefilled(&c, &mut rng);
    // Stopped right after the write is stored (header, block, slot header and state).
    run(&mut c, &mut mc, &[req(0, Op::Write, 0, 8, 0)], Some(4));
    let header_end = 48 + 16 * 16;
    assert_eq!(mc.nvram[48], 1, "the write's block is dirty in slot 0");
    mc.nvram.truncate(header_end);
    let mut fresh_cached = cached(
        crate::cache::DestagePolicy::Fcfs,
        16,
        16,
        3,
        ParityRotation::LeftSymmetric,
        1,
        16,
    );
    fresh_cached.enable_data_moves();
    let e = fresh_cached.recover(&mc.nvram, &mut read).unwrap_err();
    assert!(e.0.contains("beyond the image"), "{e}");
}

#[test]
fn data_moves_do_not_change_timing() {
    for (unit, case) in [16, TRACKS]
        .into_iter()
        .flat_map(|u| (0..6u64).map(move |c| (u, c)))
    {
        let mut rng = Pcg64Mcg::seed_from_u64(77 + case);
        let cache = (case % 2 == 1).then(|| random_cache(&mut rng));
        let rotation =
            [ParityRotation::LeftSymmetric, ParityRotation::Dedicated][case as usize % 2];
        let timing = |data: bool| {
            let mut a = small_cached(rotation, case, None, cache.clone(), unit);
            if data {
                assert!(a.enable_data_moves());
            }
            let cap = a.capacity_sectors();
            let mut r = Pcg64Mcg::seed_from_u64(case);
            let reqs = whole_blocks(workload(cap, &mut r, 300), cap);
            drain(&mut a, &reqs)
                .iter()
                .map(|c| (c.id, c.done))
                .collect::<Vec<_>>()
        };
        assert_eq!(timing(false), timing(true), "case {case}");
    }
}
