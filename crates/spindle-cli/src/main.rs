//! The `spindle` command line: parse, call the core, print.

mod trace_cmd;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "spindle", version, about = "Simulate, emulate and calibrate arrays of hard disks")]
struct Cli {
    /// No progress bars.
    #[arg(long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Read, summarise and convert block traces.
    #[command(subcommand)]
    Trace(trace_cmd::TraceCmd),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Trace(cmd) => trace_cmd::run(cmd, cli.quiet),
    };
    if let Err(err) = result {
        eprintln!("spindle: {err:#}");
        std::process::exit(2);
    }
}
