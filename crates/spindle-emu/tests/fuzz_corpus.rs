//! The NBD fuzz targets of `fuzz/` on stable: every committed seed (`fuzz/seeds/TARGET/`)
//! and every input that once crashed a target (`fuzz/regressions/TARGET/`) goes through the
//! entry point the target calls (`spindle_emu::fuzzing`). See `docs/fuzzing.md`.

use std::path::{Path, PathBuf};

fn replay(target: &str, run: fn(&[u8])) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut count = 0;
    for dir in ["seeds", "regressions"] {
        let d = repo.join("fuzz").join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.map(|e| e.expect("dir entry").path()).collect();
        paths.sort();
        for p in paths {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            eprintln!("{target}: {}", p.display());
            run(&bytes);
            count += 1;
        }
    }
    assert!(count > 0, "no seeds for {target} in fuzz/seeds/{target}");
}

#[test]
fn nbd_handshake_seeds() {
    replay("nbd_handshake", spindle_emu::fuzzing::nbd_handshake);
}

#[test]
fn nbd_transmission_seeds() {
    replay("nbd_transmission", spindle_emu::fuzzing::nbd_transmission);
}

#[test]
fn nbd_empty_and_truncated_sessions_end_cleanly() {
    spindle_emu::fuzzing::nbd_handshake(b"");
    spindle_emu::fuzzing::nbd_transmission(b"");
    let hs = spindle_emu::fuzzing::go_handshake();
    for n in 0..hs.len() {
        spindle_emu::fuzzing::nbd_handshake(&hs[..n]);
    }
}
