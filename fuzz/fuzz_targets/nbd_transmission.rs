#![no_main]
//! See `spindle_emu::fuzzing` for what a session is.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| spindle_emu::fuzzing::nbd_transmission(data));
