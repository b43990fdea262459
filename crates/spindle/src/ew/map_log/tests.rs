use super::*;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// NVRAM holding exactly `records` update records per buffer.
fn nvram_for(records: u64) -> u64 {
    NVRAM_HEADER_BYTES + NVRAM_BUFFERS as u64 * RECORD_BYTES * records
}

/// One swarm run: a map log, an oracle map, the appends in flight (the "disk"), a seeded RNG.
struct Run {
    seed: u64,
    cfg: MapLogConfig,
    log: MapLog,
    model: L2pMap,
    in_flight: Vec<u64>,
    rng: Pcg64Mcg,
    crash_points: u64,
    /// Every append issued, for the determinism test.
    trace: Vec<Append>,
}

impl Run {
    fn new(seed: u64, cfg: MapLogConfig, blocks: u32, replicas: u32) -> Run {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut initial = L2pMap::new(blocks, replicas);
        for b in 0..blocks {
            for r in 0..replicas {
                if rng.gen_bool(0.5) {
                    initial.set(b, r, rng.gen());
                }
            }
        }
        let log = MapLog::new(cfg, initial.clone())
            .unwrap_or_else(|e| panic!("seed {seed}: {cfg:?} {blocks}×{replicas}: {e}"));
        Run {
            seed,
            cfg,
            log,
            model: initial,
            in_flight: Vec::new(),
            rng,
            crash_points: 0,
            trace: Vec::new(),
        }
    }

    /// Derives every option from the seed (swarm testing): small maps and NVRAM so appends
    /// and wraps are frequent.
    fn swarm(seed: u64, max_blocks: u32) -> Run {
        let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x5EED_0000);
        // Log-uniform map sizes: tiny maps wrap the region often, large ones checkpoint big
        // portions.
        let cap = 1u32 << rng.gen_range(0..=11);
        let blocks = rng.gen_range(1..=cap.min(max_blocks));
        let replicas = rng.gen_range(1..=3);
        let portions = rng.gen_range(1..=6u32).min(blocks);
        let records = rng.gen_range(1..=40);
        let sector_bytes = [512, 512, 512, 64, 8, 4096][rng.gen_range(0..6)];
        let cfg = MapLogConfig {
            nvram_bytes: nvram_for(records) + rng.gen_range(0..16),
            portions,
            sector_bytes,
        };
        Run::new(seed, cfg, blocks, replicas)
    }

    fn issue(&mut self, appends: Vec<Append>) {
        for a in appends {
            let region = self.log.region_sectors();
            assert!(a.sectors > 0, "seed {}: empty append {a:?}", self.seed);
            assert!(
                a.offset_sectors + u64::from(a.sectors) <= region,
                "seed {}: {a:?} past the {region}-sector region",
                self.seed
            );
            self.in_flight.push(a.id);
            self.trace.push(a);
        }
    }

    /// The disk completes one append in flight, chosen at random (any order).
    fn complete_one(&mut self) -> bool {
        if self.in_flight.is_empty() {
            return false;
        }
        let i = self.rng.gen_range(0..self.in_flight.len());
        let id = self.in_flight.swap_remove(i);
        let more = self.log.append_done(id);
        self.issue(more);
        true
    }

    fn complete_all(&mut self) {
        while self.complete_one() {}
    }

    /// A random update, retried after completions while NVRAM is full.
    fn update_one(&mut self) {
        let blocks = self.model.logical_blocks();
        // Hot blocks sometimes, so one entry is often in several records.
        let block = if self.rng.gen_bool(0.3) {
            self.rng.gen_range(0..blocks.min(4))
        } else {
            self.rng.gen_range(0..blocks)
        };
        let replica = self.rng.gen_range(0..self.model.replicas());
        let phys = if self.rng.gen_bool(0.05) {
            NOWHERE
        } else {
            self.rng.gen()
        };
        loop {
            match self.log.update(block, replica, phys) {
                Ok(appends) => {
                    self.model.set(block, replica, phys);
                    self.issue(appends);
                    return;
                }
                Err(NvramFull) => assert!(
                    self.complete_one(),
                    "seed {}: NVRAM full with nothing in flight",
                    self.seed
                ),
            }
        }
    }

    /// Crash now (each append in flight torn or landed at random), recover, compare with the
    /// oracle.
    fn crash_check(&mut self) {
        let landed: Vec<u64> = self
            .in_flight
            .iter()
            .copied()
            .filter(|_| self.rng.gen_bool(0.5))
            .collect();
        let p = self.log.crash_with(&landed);
        assert!(p.nvram_bytes_used() <= self.cfg.nvram_bytes);
        let (blocks, replicas) = (self.model.logical_blocks(), self.model.replicas());
        let (map, read) = MapLog::recover(&p, &self.cfg, blocks, replicas)
            .unwrap_or_else(|e| panic!("seed {}: {:?}: recovery failed: {e}", self.seed, self.cfg));
        if let Some(d) = map.first_difference(&self.model) {
            panic!(
                "seed {}: {:?}: recovered map differs at (block, replica, recovered, live) = {d:?}",
                self.seed, self.cfg
            );
        }
        assert!(
            read <= self.log.region_sectors() + 1,
            "seed {}: read {read}",
            self.seed
        );
        self.crash_points += 1;
    }

    /// The live appends never exceed the region less the wrap's slack; true when they reached
    /// that bound exactly (the formula is tight).
    fn check_window(&self) -> bool {
        let geo = self.log.geometry();
        let window = geo.region_sectors - (geo.checkpoint_append_sectors - 1);
        let max = self.log.stats().live_sectors_max;
        assert!(
            max <= window,
            "seed {}: live {max} > {window}: {geo:?}",
            self.seed
        );
        max == window
    }

    fn check_live(&self) {
        assert_eq!(
            self.log.map().first_difference(&self.model),
            None,
            "seed {}",
            self.seed
        );
    }
}

#[test]
fn recovery_rebuilds_the_live_map_at_random_crash_points() {
    let (mut crash_points, mut wraps, mut wrapped_thrice, mut refused) = (0, 0, 0, 0);
    let mut tight = 0;
    let seeds = 60;
    for seed in 0..seeds {
        let mut run = Run::swarm(seed, 2000);
        for _ in 0..3000 {
            match run.rng.gen_range(0..100) {
                0..=64 => run.update_one(),
                65..=91 => {
                    run.complete_one();
                }
                _ => run.crash_check(),
            }
        }
        run.check_live();
        run.crash_check();
        run.complete_all();
        run.crash_check();
        tight += u32::from(run.check_window());
        let s = run.log.stats();
        crash_points += run.crash_points;
        wraps += s.wraps;
        wrapped_thrice += u64::from(s.wraps >= 3);
        refused += s.refused;
        assert!(s.nvram_bytes_max <= run.cfg.nvram_bytes, "seed {seed}");
    }
    println!(
        "{seeds} seeds: {crash_points} crash points, {wraps} wraps \
         ({wrapped_thrice} seeds wrapped >= 3 times), {refused} NVRAM-full refusals, \
         {tight} seeds filled the region's bound exactly"
    );
    assert!(tight > 0, "the region size formula was never tight");
    assert!(crash_points >= 1000, "{crash_points} crash points");
    assert!(
        wrapped_thrice >= seeds / 2,
        "only {wrapped_thrice} seeds wrapped 3 times"
    );
    assert!(refused > 0, "NVRAM never filled");
}

/// Recovery at every step, on small maps: no append ever destroys what recovery needs, even
/// while torn.
#[test]
fn recovery_succeeds_after_every_step() {
    let mut crash_points = 0;
    for seed in 1000..1030 {
        let mut run = Run::swarm(seed, 64);
        for _ in 0..400 {
            if run.rng.gen_bool(0.6) {
                run.update_one();
            } else {
                run.complete_one();
            }
            run.crash_check();
        }
        assert!(run.log.stats().wraps > 0, "seed {seed}: never wrapped");
        run.check_window();
        crash_points += run.crash_points;
    }
    assert!(crash_points >= 10_000);
}

/// The paper's defaults (100 KB NVRAM, M = 4) on a 200 000-block mirrored map; appends complete
/// after random delays, so both buffers are often in flight.
#[test]
fn recovery_with_defaults_on_a_bigger_map() {
    let mut run = Run::new(7, MapLogConfig::default(), 200_000, 2);
    let geo = *run.log.geometry();
    assert_eq!(geo.records_per_buffer, 6396);
    for _ in 0..700_000 {
        run.update_one();
        if run.rng.gen_ratio(1, 5000) {
            run.complete_one();
        }
        if run.rng.gen_ratio(1, 20_000) {
            run.crash_check();
        }
    }
    run.crash_check();
    run.complete_all();
    run.crash_check();
    run.check_live();
    let s = run.log.stats();
    println!(
        "defaults, 200 000 × 2: {geo:?}\n{s:?}, {} crash points",
        run.crash_points
    );
    assert!(s.wraps >= 2, "{s:?}");
    assert!(s.refused > 0, "{s:?}");
    assert!(run.crash_points >= 20);
}

/// The paper's 2×9×2 EW-Array of 9 GB disks: 9 GB of 4 KB blocks, mirrored, 100 KB NVRAM,
/// M = 4. Map logging must cost a small fraction of the data written (the paper: < 1 %).
#[test]
fn overhead_of_the_papers_prototype() {
    let blocks = u32::try_from(9_000_000_000u64.div_ceil(4096)).unwrap();
    assert_eq!(blocks, 2_197_266);
    let cfg = MapLogConfig::default();
    let geo = MapLogGeometry::new(&cfg, blocks, 2).unwrap();
    // The module doc's numbers.
    assert_eq!(geo.records_per_buffer, 6396);
    assert_eq!(geo.log_append_sectors, 100);
    assert_eq!(geo.checkpoint_every, 86);
    assert_eq!(geo.checkpoint_append_sectors, 8684);
    assert_eq!(geo.region_sectors, 86_203);

    let mut log = MapLog::new(cfg, L2pMap::new(blocks, 2)).unwrap();
    let mut rng = Pcg64Mcg::seed_from_u64(2);
    let mut model = log.map().clone();
    // Two log cycles: every portion checkpointed twice, the region wrapped.
    let updates = 2 * u64::from(geo.portions * geo.checkpoint_every * geo.records_per_buffer);
    for _ in 0..updates {
        let (b, r, p) = (rng.gen_range(0..blocks), rng.gen_range(0..2), rng.gen());
        model.set(b, r, p);
        for a in log.update(b, r, p).unwrap() {
            log.append_done(a.id);
        }
    }
    let s = log.stats();
    let per_update = s.sectors_appended as f64 / s.updates as f64;
    // A 4 KB data write is 8 sectors per replica.
    let of_data = per_update / 8.0;
    let (map, read) = MapLog::recover(&log.crash(), &cfg, blocks, 2).unwrap();
    assert_eq!(map.first_difference(&model), None);
    println!(
        "2 197 266 × 2, 100 KB NVRAM, M = 4: {geo:?}\n{s:?}\n\
         {per_update:.4} sectors per update ({:.2} % of the data sectors), \
         recovery read {read} sectors",
        of_data * 100.0
    );
    // One cycle of K appends is (K·L + C − L) sectors for K·R updates.
    let k = u64::from(geo.checkpoint_every);
    let cycle = k * geo.log_append_sectors + geo.checkpoint_append_sectors - geo.log_append_sectors;
    let expected = cycle as f64 / (k * u64::from(geo.records_per_buffer)) as f64;
    assert!(
        (per_update - expected).abs() < 1e-3,
        "{per_update} vs {expected}"
    );
    assert!(
        of_data < 0.01,
        "map logging is {:.2} % of data",
        of_data * 100.0
    );
    assert!(s.wraps >= 1);
    assert!(read <= geo.region_sectors);
}

#[test]
fn nvram_full_refuses_until_the_oldest_append_is_durable() {
    let cfg = MapLogConfig {
        nvram_bytes: nvram_for(1),
        portions: 2,
        sector_bytes: 512,
    };
    let mut log = MapLog::new(cfg, L2pMap::new(10, 1)).unwrap();
    assert_eq!(log.geometry().records_per_buffer, 1);
    let a = log.update(0, 0, 5).unwrap();
    let b = log.update(1, 0, 6).unwrap();
    assert_eq!((a.len(), b.len()), (1, 1));
    assert_eq!(log.update(2, 0, 7), Err(NvramFull));
    assert_eq!(
        log.map().get(2, 0),
        NOWHERE,
        "a refused update changes nothing"
    );
    assert_eq!(
        log.nvram_bytes_used(),
        NVRAM_HEADER_BYTES + 2 * RECORD_BYTES
    );
    // The younger append lands first: its buffer must wait for the older one.
    assert!(log.append_done(b[0].id).is_empty());
    assert_eq!(log.update(2, 0, 7), Err(NvramFull));
    log.append_done(a[0].id);
    assert_eq!(log.update(2, 0, 7).map(|v| v.len()), Ok(1));
    assert_eq!(log.stats().refused, 2);
    let (map, _) = MapLog::recover(&log.crash(), &cfg, 10, 1).unwrap();
    assert_eq!(map.first_difference(log.map()), None);
}

#[test]
fn errors_for_impossible_configurations() {
    let ok = MapLogConfig::default();
    let cases = [
        (MapLogConfig { portions: 0, ..ok }, 100, 2, "portions = 0"),
        (MapLogConfig { portions: 5, ..ok }, 4, 2, "portions = 5 > 4"),
        (
            MapLogConfig {
                nvram_bytes: 79,
                ..ok
            },
            100,
            2,
            "nvram_bytes = 79",
        ),
        (
            MapLogConfig {
                sector_bytes: 0,
                ..ok
            },
            100,
            2,
            "sector_bytes = 0",
        ),
        (ok, 0, 2, "empty"),
        (ok, 100, 0, "empty"),
        (ok, u32::MAX, 2, "8589934590 entries"),
    ];
    for (cfg, blocks, replicas, want) in cases {
        let err = MapLogGeometry::new(&cfg, blocks, replicas).unwrap_err();
        assert!(err.contains(want), "{cfg:?} {blocks}×{replicas}: {err}");
        let err = MapLog::recover(&Run::new(0, ok, 8, 1).log.crash(), &cfg, blocks, replicas)
            .unwrap_err();
        assert!(err.contains(want), "recover: {err}");
    }
    let err = MapLog::new(MapLogConfig { portions: 0, ..ok }, L2pMap::new(3, 1)).unwrap_err();
    assert!(err.contains("portions = 0"), "{err}");
    // The smallest NVRAM works.
    assert!(MapLog::new(
        MapLogConfig {
            nvram_bytes: 80,
            ..ok
        },
        L2pMap::new(4, 1)
    )
    .is_ok());
}

/// Recovery reads only the region and NVRAM, and says so when records are missing.
#[test]
fn recovery_detects_a_damaged_log() {
    let cfg = MapLogConfig {
        nvram_bytes: nvram_for(4),
        portions: 3,
        sector_bytes: 512,
    };
    let mut run = Run::new(3, cfg, 50, 2);
    for _ in 0..200 {
        run.update_one();
        run.complete_all();
    }
    let good = run.log.crash();
    assert!(MapLog::recover(&good, &cfg, 50, 2).is_ok());

    // An append after the pointer, before NVRAM's buffers, is unreadable.
    let mut p = good.clone();
    let second = p
        .region
        .appends
        .values()
        .find(|w| w.seq == p.start.seq + 1)
        .unwrap()
        .seq;
    p.region.appends.retain(|_, w| w.seq != second);
    let err = MapLog::recover(&p, &cfg, 50, 2).unwrap_err();
    assert!(err.contains("records lost"), "{err}");

    // The pointer's append is gone.
    let mut p = good.clone();
    p.region.appends.remove(&p.start.offset);
    let err = MapLog::recover(&p, &cfg, 50, 2).unwrap_err();
    assert!(err.contains("no append"), "{err}");

    // A different map shape is refused rather than misread.
    let err = MapLog::recover(&good, &cfg, 40, 2).unwrap_err();
    assert!(err.contains("outside the 80-entry map"), "{err}");
    let err = MapLog::recover(&good, &cfg, 60, 2).unwrap_err();
    assert!(err.contains("not a portion"), "{err}");
}

#[test]
fn same_seed_same_appends() {
    let trace = |seed| {
        let mut run = Run::swarm(seed, 500);
        for _ in 0..2000 {
            if run.rng.gen_bool(0.6) {
                run.update_one();
            } else {
                run.complete_one();
            }
        }
        (run.trace, run.log.stats())
    };
    assert_eq!(trace(42), trace(42));
    assert_ne!(trace(42).0, trace(43).0);
}

/// The byte images alone: a region and an NVRAM image changed only by the bytes the log
/// hands out ([`MapLog::region_image`], [`MapLog::append_bytes`], the NVRAM writes).
/// Appends in flight land whole when done; at a crash each lands, is torn (a random prefix
/// of its sectors, stale bytes after) or vanishes. [`MapLog::recover_image`] must give the
/// live map; half the time the run goes on with the recovered log (its appends issued
/// again), so recovery also continues a recovered log. An update's NVRAM writes cut short
/// by a crash give the map before or after it.
#[test]
fn the_byte_images_recover_the_live_map_and_the_recovered_log_continues() {
    fn apply(image: &mut Vec<u8>, writes: Vec<(u64, Vec<u8>)>) {
        for (at, b) in writes {
            let end = at as usize + b.len();
            if image.len() < end {
                image.resize(end, 0);
            }
            image[at as usize..end].copy_from_slice(&b);
        }
    }
    let (mut crashes, mut torn, mut continued, mut cut, mut reissued) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    for seed in 0..60u64 {
        let run = Run::swarm(seed + 5000, 400);
        let (cfg, mut log, mut model, mut rng) = (run.cfg, run.log, run.model, run.rng);
        let geo = *log.geometry();
        let (blocks, replicas) = (model.logical_blocks(), model.replicas());
        let sb = geo.sector_bytes as usize;
        let mut region = vec![0u8; geo.region_sectors as usize * sb];
        let write = |region: &mut Vec<u8>, off: u64, b: &[u8]| {
            let at = off as usize * sb;
            region[at..at + b.len()].copy_from_slice(b);
        };
        for (off, b) in log.region_image() {
            write(&mut region, off, &b);
        }
        let mut nvram = Vec::new();
        apply(&mut nvram, log.enable_image());
        assert!(nvram.len() as u64 <= log.nvram_image_bytes());
        // In flight: (id, offset, bytes).
        let mut flying: Vec<(u64, u64, Vec<u8>)> = Vec::new();
        let recover = |nvram: &[u8], region: &[u8]| {
            MapLog::recover_image(cfg, blocks, replicas, nvram, &mut |off, buf| {
                let at = off as usize * sb;
                let src = region
                    .get(at..at + buf.len())
                    .ok_or_else(|| format!("read past the region at {off}"))?;
                buf.copy_from_slice(src);
                Ok(())
            })
        };
        for _ in 0..1500 {
            match rng.gen_range(0..100) {
                0..=59 => {
                    if log.is_full() {
                        let i = rng.gen_range(0..flying.len());
                        let (id, off, b) = flying.swap_remove(i);
                        write(&mut region, off, &b);
                        log.append_done(id);
                        apply(&mut nvram, log.take_nvram_writes());
                        continue;
                    }
                    let block = rng.gen_range(0..blocks);
                    let replica = rng.gen_range(0..replicas);
                    let phys = rng.gen_range(0..1000);
                    let before = model.clone();
                    for a in log.update(block, replica, phys).expect("not full") {
                        flying.push((a.id, a.offset_sectors, log.append_bytes(a.id)));
                    }
                    model.set(block, replica, phys);
                    let writes = log.take_nvram_writes();
                    if rng.gen_ratio(1, 25) {
                        // A crash among this update's NVRAM writes.
                        let k = rng.gen_range(0..writes.len());
                        let mut partial = nvram.clone();
                        apply(&mut partial, writes[..k].to_vec());
                        let got = recover(&partial, &region)
                            .unwrap_or_else(|e| panic!("seed {seed}: cut after {k}: {e}"));
                        assert!(
                            got.log.map() == &before || got.log.map() == &model,
                            "seed {seed}: a cut update gives neither map"
                        );
                        cut += 1;
                    }
                    apply(&mut nvram, writes);
                }
                60..=89 => {
                    if !flying.is_empty() {
                        let i = rng.gen_range(0..flying.len());
                        let (id, off, b) = flying.swap_remove(i);
                        write(&mut region, off, &b);
                        log.append_done(id);
                        apply(&mut nvram, log.take_nvram_writes());
                    }
                }
                _ => {
                    let mut crashed = region.clone();
                    for (_, off, b) in &flying {
                        match rng.gen_range(0..3) {
                            0 => write(&mut crashed, *off, b),
                            1 => {
                                let sectors = rng.gen_range(0..b.len() / sb);
                                write(&mut crashed, *off, &b[..sectors * sb]);
                                torn += 1;
                            }
                            _ => {}
                        }
                    }
                    let got = recover(&nvram, &crashed)
                        .unwrap_or_else(|e| panic!("seed {seed}: {cfg:?}: recovery failed: {e}"));
                    if let Some(d) = got.log.map().first_difference(&model) {
                        panic!("seed {seed}: {cfg:?}: recovered map differs at {d:?}");
                    }
                    assert!(
                        got.sectors_read <= geo.region_sectors + 4 * geo.checkpoint_append_sectors
                    );
                    crashes += 1;
                    if rng.gen_bool(0.5) {
                        // Go on from the crash with the recovered log.
                        let mut rec = got;
                        region = crashed;
                        nvram = Vec::new();
                        apply(&mut nvram, rec.log.enable_image());
                        flying = rec
                            .reissue
                            .iter()
                            .map(|a| (a.id, a.offset_sectors, rec.log.append_bytes(a.id)))
                            .collect();
                        reissued += rec.reissue.len() as u64;
                        log = rec.log;
                        continued += 1;
                    }
                }
            }
        }
        assert_eq!(log.map().first_difference(&model), None, "seed {seed}");
    }
    println!(
        "{crashes} crashes ({torn} torn appends, {continued} continued, {reissued} appends \
         issued again), {cut} updates cut short"
    );
    assert!(crashes >= 1000 && continued >= 400 && reissued > 50 && torn > 100 && cut > 100);
}

/// Garbage NVRAM or a damaged region is an error, never a panic.
#[test]
fn recover_image_refuses_garbage() {
    let cfg = MapLogConfig {
        nvram_bytes: nvram_for(6),
        portions: 3,
        sector_bytes: 512,
    };
    let mut log = MapLog::new(cfg, L2pMap::new(40, 2)).unwrap();
    let mut region = vec![0u8; log.region_sectors() as usize * 512];
    for (off, b) in log.region_image() {
        region[off as usize * 512..][..b.len()].copy_from_slice(&b);
    }
    let mut nvram = vec![0u8; log.nvram_image_bytes() as usize];
    let apply = |nvram: &mut Vec<u8>, w: Vec<(u64, Vec<u8>)>| {
        for (at, b) in w {
            nvram[at as usize..][..b.len()].copy_from_slice(&b);
        }
    };
    apply(&mut nvram, log.enable_image());
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    for _ in 0..100 {
        for a in log
            .update(
                rng.gen_range(0..40),
                rng.gen_range(0..2),
                rng.gen_range(0..99),
            )
            .unwrap()
        {
            let b = log.append_bytes(a.id);
            region[a.offset_sectors as usize * 512..][..b.len()].copy_from_slice(&b);
            log.append_done(a.id);
        }
        apply(&mut nvram, log.take_nvram_writes());
    }
    let recover = |nvram: &[u8], region: &[u8]| {
        MapLog::recover_image(cfg, 40, 2, nvram, &mut |off, buf| {
            let at = off as usize * 512;
            buf.copy_from_slice(region.get(at..at + buf.len()).ok_or("past the region")?);
            Ok(())
        })
    };
    let good = recover(&nvram, &region).expect("the real images recover");
    assert_eq!(good.log.map().first_difference(log.map()), None);
    // Zeros, random bytes, one flipped bit anywhere in the header: an error or a map, no panic.
    assert!(recover(&[], &region).is_err());
    assert!(recover(&vec![0; nvram.len()], &region).is_err());
    for _ in 0..300 {
        let junk: Vec<u8> = (0..nvram.len()).map(|_| rng.gen()).collect();
        assert!(recover(&junk, &region).is_err());
    }
    let mut errors = 0;
    for bit in 0..64 * 8 {
        let mut bad = nvram.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        errors += u32::from(recover(&bad, &region).is_err());
    }
    assert!(
        errors > 300,
        "only {errors} of 512 header bit flips refused"
    );
    // A region of garbage after the pointer: the chain ends, records are lost.
    let junk: Vec<u8> = (0..region.len()).map(|_| rng.gen()).collect();
    let err = recover(&nvram, &junk).unwrap_err();
    assert!(err.contains("no append"), "{err}");
    // Another map's shape.
    let other = MapLog::recover_image(cfg, 41, 2, &nvram, &mut |off, buf| {
        let at = off as usize * 512;
        buf.copy_from_slice(&region[at..at + buf.len()]);
        Ok(())
    });
    assert!(other.is_err());
    // A reader that fails.
    let err =
        MapLog::recover_image(cfg, 40, 2, &nvram, &mut |_, _| Err("disk gone".into())).unwrap_err();
    assert!(err.contains("disk gone"), "{err}");
}

/// The paper's 100 KB NVRAM is exactly the map log's image: a 64-byte header and two
/// buffers of 6,396 records.
#[test]
fn the_default_nvram_image_is_the_papers_100_kb() {
    let log = MapLog::new(MapLogConfig::default(), L2pMap::new(1000, 2)).unwrap();
    assert_eq!(log.nvram_image_bytes(), 100 * 1024);
    let mut log = log;
    let writes = log.enable_image();
    let end = writes
        .iter()
        .map(|(at, b)| at + b.len() as u64)
        .max()
        .unwrap();
    assert!(end <= log.nvram_image_bytes());
}
