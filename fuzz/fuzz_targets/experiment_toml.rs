#![no_main]
//! See `spindle::fuzzing::experiment_toml` for the input layout.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| spindle::fuzzing::experiment_toml(data));
