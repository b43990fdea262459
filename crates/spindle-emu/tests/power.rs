//! The emulator honours power states: a request reaching a disk that a spin-down policy has
//! put in a low-power state waits, in real time, for the transition back (docs/power.md).

use spindle::config::Experiment;
use spindle_emu::{BackingStore, Emulator, Request, StoreShape};
use std::time::{Duration, Instant};

fn no_files(p: &str) -> Result<Vec<u8>, String> {
    Err(format!("{p}: built-in drives only"))
}

#[test]
fn a_read_after_the_heads_unloaded_waits_for_them_to_load_in_real_time() {
    // The HGST Deskstar T7K250 unloads its heads in 0.7 s and loads them in 0.7 s (the power
    // paper's Table 2); a 0.2 s timeout unloads them after 0.2 s idle.
    let text = "seed = 1\n[drive]\nmodel = \"t7k250\"\n[array]\nlayout = \"jbod\"\ndisks = 1\n\
                data_set_bytes = 67108864\n[power]\npolicy = \"timeout\"\ntimeout_s = 0.2\n\
                state = \"unloaded\"\n[workload]\nkind = \"closed\"\n[run]\nrequests = 1\n";
    let exp = Experiment::parse(text, "test", &[]).unwrap();
    let built = exp.build_array(&no_files).unwrap();
    let engine = built.engine;
    let dir = tempfile::tempdir().unwrap();
    let shape = StoreShape {
        disks: engine.disk_count(),
        sector_bytes: engine.sector_bytes(),
        disk_sectors: built.disk_sectors,
        layout: built.layout_label,
        drive: built.drive_id,
    };
    let store = BackingStore::open(dir.path(), shape).unwrap();
    let emu = Emulator::start(engine, store).unwrap();
    let h = emu.handle();
    let data = vec![0x5a; 8192];
    h.call(Request::Write {
        offset: 1 << 20,
        data: data.clone(),
        fua: false,
    })
    .expect("write");
    let timed_read = || {
        let t = Instant::now();
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
        warm < Duration::from_millis(150),
        "a read of a spinning disk took {warm:?}"
    );
    // Idle 0.2 s, then 0.7 s unloading: after 1.5 s the heads are unloaded and the next read
    // waits 0.7 s for them to load, then its own access.
    std::thread::sleep(Duration::from_millis(1500));
    let cold = timed_read();
    assert!(
        cold >= Duration::from_millis(700),
        "a read of an unloaded disk took {cold:?}, less than the 0.7 s load"
    );
    // The emulator's lateness can add time, never remove it; a bound keeps the test honest
    // about what it measured (a load, not some other stall).
    assert!(cold < Duration::from_secs(3), "{cold:?}");
    drop(h);
    emu.stop().expect("clean stop");
}
