//! `spindle trace …`: statistics and format conversion of block traces.

use clap::Subcommand;

#[derive(Subcommand)]
pub enum TraceCmd {}

pub fn run(cmd: TraceCmd, _quiet: bool) -> anyhow::Result<()> {
    match cmd {}
}
