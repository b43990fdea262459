//! Shared by the CLI tests: run the built binary and read what it printed.
#![allow(dead_code)] // each test file uses its own part

pub mod emulated_drive;

use std::process::{Command, Output};

pub fn spindle(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spindle"))
        .args(args)
        .output()
        .expect("spindle runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
