#![no_main]
//! See `spindle::fuzzing::trace_reader` for the input layout.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| spindle::fuzzing::trace_reader(data));
