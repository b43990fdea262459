//! The emulator's driver against real backing files: bytes written through every layout
//! family read back intact (from whichever copy the core chooses), bad requests are refused
//! with the reason, a data directory keeps its bytes across a clean restart and refuses
//! another array; a disk a power policy put to rest makes the next request wait for it.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use spindle::config::Experiment;
use spindle_emu::{BackingStore, EmuError, Emulator, Request, StoreShape};
use std::path::Path;

fn no_files(p: &str) -> Result<Vec<u8>, String> {
    Err(format!("{p}: built-in drives only"))
}

/// An emulator for `array` (the `[array]` table's body) over `dir`.
fn start(array: &str, dir: &Path) -> Result<Emulator, String> {
    start_experiment(
        &format!(
            "seed = 1\n[drive]\nmodel = \"st39133lwv\"\n[array]\n{array}\ndata_set_bytes = 67108864\n\
             [workload]\nkind = \"closed\"\n[run]\nrequests = 1\n"
        ),
        dir,
    )
}

/// An emulator for the experiment `text` (built-in drives only) over `dir`.
fn start_experiment(text: &str, dir: &Path) -> Result<Emulator, String> {
    let exp = Experiment::parse(text, "test", &[]).map_err(|e| e.to_string())?;
    let built = exp.build_array(&no_files).map_err(|e| e.to_string())?;
    let engine = built.engine;
    let shape = StoreShape {
        disks: engine.disk_count(),
        sector_bytes: engine.sector_bytes(),
        disk_sectors: built.disk_sectors,
        layout: built.layout_label,
        drive: built.drive_id,
    };
    let store = BackingStore::open(dir, shape).map_err(|e| e.to_string())?;
    Emulator::start(engine, store)
}

const LAYOUTS: [&str; 6] = [
    "layout = \"jbod\"\ndisks = 1",
    "layout = \"striping\"\nds = 3\nstripe_unit_bytes = 16384",
    "layout = \"mirror\"\ndm = 2\nscheduler = \"satf\"",
    "layout = \"raid-10\"\nds = 2\nscheduler = \"satf\"",
    "layout = \"sr-array\"\nds = 2\ndr = 2\nscheduler = \"rsatf\"",
    "layout = \"sr-mirror\"\nds = 1\ndr = 2\ndm = 2\nscheduler = \"rsatf\"\nwrites = \"foreground\"",
];

/// A block's pattern: its offset and a generation, so a stale copy cannot pass.
fn pattern(offset: u64, generation: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (offset as usize / 512 + i / 512) as u8 ^ generation ^ (i as u8).rotate_left(3))
        .collect()
}

#[test]
fn written_bytes_read_back_through_every_layout_family() {
    for layout in LAYOUTS {
        let dir = tempfile::tempdir().unwrap();
        let emu = start(layout, dir.path()).unwrap_or_else(|e| panic!("{layout}: {e}"));
        let h = emu.handle();
        // 8 writers at once over 256 blocks of 8 KiB in the first 2 MiB, each block written
        // twice (the second generation must win), then every block read back while other
        // threads read too: duplicates, delayed copies and replica choice all in play.
        let blocks = 256u64;
        std::thread::scope(|s| {
            for w in 0..8u64 {
                let h = h.clone();
                s.spawn(move || {
                    for generation in [1u8, 2] {
                        for b in (w..blocks).step_by(8) {
                            let off = b * 8192;
                            h.call(Request::Write {
                                offset: off,
                                data: pattern(off, generation, 8192),
                                fua: false,
                            })
                            .expect("write");
                        }
                    }
                });
            }
        });
        std::thread::scope(|s| {
            for r in 0..8u64 {
                let h = h.clone();
                s.spawn(move || {
                    let mut rng = Pcg64Mcg::seed_from_u64(r);
                    for _ in 0..64 {
                        let b = rng.gen_range(0..blocks);
                        let off = b * 8192;
                        let got = h
                            .call(Request::Read {
                                offset: off,
                                len: 8192,
                            })
                            .expect("read");
                        assert!(got == pattern(off, 2, 8192), "{layout}: block {b} differs");
                    }
                });
            }
        });
        let stats = h.stats().expect("running");
        assert_eq!(stats.writes, 2 * blocks, "{layout}");
        assert_eq!(stats.reads, 8 * 64, "{layout}");
        drop(h);
        emu.stop().expect("clean stop");
    }
}

#[test]
fn a_clean_restart_keeps_the_bytes_and_another_array_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let layout = LAYOUTS[4];
    let emu = start(layout, dir.path()).expect("starts");
    let h = emu.handle();
    let data = pattern(1 << 20, 7, 65536);
    h.call(Request::Write {
        offset: 1 << 20,
        data: data.clone(),
        fua: true,
    })
    .expect("write");
    h.call(Request::Flush).expect("flush");
    drop(h);
    emu.stop().expect("clean stop");
    let emu = start(layout, dir.path()).expect("restarts");
    let got = emu
        .handle()
        .call(Request::Read {
            offset: 1 << 20,
            len: 65536,
        })
        .expect("read");
    assert!(got == data, "bytes survived the restart");
    emu.stop().expect("clean stop");
    let e = start(LAYOUTS[3], dir.path()).err().expect("refused");
    assert!(
        e.contains("store.json") && e.contains("another --data"),
        "{e}"
    );
}

#[test]
fn unaligned_and_out_of_range_requests_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let emu = start(LAYOUTS[1], dir.path()).expect("starts");
    let h = emu.handle();
    let size = emu.size_bytes();
    let err = |r| match h.call(r) {
        Err(EmuError::Invalid(m)) => m,
        other => panic!("not refused: {other:?}"),
    };
    assert!(err(Request::Read {
        offset: 100,
        len: 512
    })
    .contains("aligned"));
    assert!(err(Request::Read {
        offset: size,
        len: 512
    })
    .contains("beyond"));
    assert!(err(Request::Write {
        offset: size - 512,
        data: vec![0; 1024],
        fua: false
    })
    .contains("beyond"));
    // Zero-length requests are answered at once; write-zeroes and trim write zeroes (a hole
    // punched through nbdfuse arrives as TRIM and must read back as zeroes).
    assert_eq!(h.call(Request::Read { offset: 0, len: 0 }), Ok(vec![]));
    h.call(Request::Write {
        offset: 16384,
        data: vec![0xCD; 8192],
        fua: false,
    })
    .expect("write");
    h.call(Request::Trim {
        offset: 16384,
        len: 4096,
    })
    .expect("trim");
    let got = h
        .call(Request::Read {
            offset: 16384,
            len: 8192,
        })
        .expect("read");
    assert_eq!(got[..4096], [0; 4096], "the trimmed half reads zeroes");
    assert_eq!(got[4096..], [0xCD; 4096], "the other half keeps its bytes");
    h.call(Request::Write {
        offset: 4096,
        data: vec![0xAB; 4096],
        fua: false,
    })
    .expect("write");
    h.call(Request::WriteZeroes {
        offset: 4096,
        len: 4096,
        fua: true,
    })
    .expect("zeroes");
    assert_eq!(
        h.call(Request::Read {
            offset: 4096,
            len: 4096
        }),
        Ok(vec![0; 4096])
    );
    drop(h);
    emu.stop().expect("clean stop");
}

#[test]
fn a_store_left_without_a_clean_stop_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let shape = StoreShape {
        disks: 2,
        sector_bytes: 512,
        disk_sectors: 1 << 20,
        layout: "mirror 1x1x2".into(),
        drive: "st39133lwv".into(),
    };
    let s = BackingStore::open(dir.path(), shape.clone()).expect("creates");
    assert!(!s.was_unclean(), "a new store");
    drop(s); // as a kill -9 would leave it
    let s = BackingStore::open(dir.path(), shape.clone()).expect("reopens");
    assert!(s.was_unclean(), "the marker of the run that did not stop");
    s.close_clean().expect("clean close");
    let s = BackingStore::open(dir.path(), shape).expect("reopens");
    assert!(!s.was_unclean(), "after a clean stop");
}

/// The emulator honours power states: a request reaching a disk that a spin-down policy put
/// in a low-power state waits, in real time, for the transition back (docs/power.md).
#[test]
fn a_read_after_the_heads_unloaded_waits_for_them_to_load_in_real_time() {
    // The HGST Deskstar T7K250 unloads its heads in 0.7 s and loads them in 0.7 s (the power
    // paper's Table 2); a 0.2 s timeout unloads them after 0.2 s idle.
    let text = "seed = 1\n[drive]\nmodel = \"t7k250\"\n[array]\nlayout = \"jbod\"\ndisks = 1\n\
                data_set_bytes = 67108864\n[power]\npolicy = \"timeout\"\ntimeout_s = 0.2\n\
                state = \"unloaded\"\n[workload]\nkind = \"closed\"\n[run]\nrequests = 1\n";
    let dir = tempfile::tempdir().unwrap();
    let emu = start_experiment(text, dir.path()).unwrap();
    let h = emu.handle();
    let data = vec![0x5a; 8192];
    h.call(Request::Write {
        offset: 1 << 20,
        data: data.clone(),
        fua: false,
    })
    .expect("write");
    let timed_read = || {
        let t = std::time::Instant::now();
        let got = h
            .call(Request::Read {
                offset: 1 << 20,
                len: 8192,
            })
            .expect("read");
        assert_eq!(got, data);
        t.elapsed()
    };
    // Spinning, heads loaded: a read takes milliseconds.
    let warm = timed_read();
    assert!(
        warm < std::time::Duration::from_millis(150),
        "a read of a spinning disk took {warm:?}"
    );
    // Idle 0.2 s, then 0.7 s unloading: after 1.5 s the heads are unloaded and the next read
    // waits 0.7 s for them to load, then its own access.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let cold = timed_read();
    assert!(
        cold >= std::time::Duration::from_millis(700),
        "a read of an unloaded disk took {cold:?}, less than the 0.7 s load"
    );
    // The emulator's lateness can add time, never remove it; a bound keeps the test honest
    // about what it measured (a load, not some other stall).
    assert!(cold < std::time::Duration::from_secs(3), "{cold:?}");
    drop(h);
    emu.stop().expect("clean stop");
}
