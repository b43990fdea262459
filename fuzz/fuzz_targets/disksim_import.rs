#![no_main]
//! See `spindle::fuzzing::disksim_import` for the input layout.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| spindle::fuzzing::disksim_import(data));
