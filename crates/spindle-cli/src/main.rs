//! The `spindle` command line: parse, call the core, print.
//!
//! Errors print as `spindle: <what>: <why>` on stderr and exit with status 2; a closed pipe
//! on stdout exits quietly.

mod advise_cmd;
mod bench;
mod burst_cmd;
mod calibrate_cmd;
mod differential_cmd;
mod drives_cmd;
mod output;
mod plot;
mod progress;
mod report_cmd;
mod run_cmd;
mod serve_cmd;
mod sweep_cmd;
mod trace_cmd;
mod track_align_cmd;
mod validate_cmd;

use clap::{Parser, Subcommand};
use spindle_files::replay;

#[derive(Parser)]
#[command(
    name = "spindle",
    version,
    about = "Simulate, emulate and calibrate arrays of hard disks"
)]
struct Cli {
    /// No progress bars.
    #[arg(long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run an experiment (no FILE: the built-in default) and print its report.
    Run(run_cmd::RunArgs),
    /// Run a power-aware disaster-recovery secondary (an experiment with workload.kind =
    /// "dr": deferred, compacted application of a forwarded update stream; docs/dr.md).
    Dr(run_cmd::RunArgs),
    /// Which array, and how many disks, for a workload: candidates ranked by the models,
    /// the best simulated (docs/advise.md).
    Advise(advise_cmd::AdviseArgs),
    /// Run an experiment over the product of its [[axis]] tables, one row per point.
    Sweep(sweep_cmd::SweepArgs),
    /// The shortest burst that overflows a write cache (parity arrays, process groups).
    Burst(burst_cmd::BurstArgs),
    /// List and show the built-in drive library.
    #[command(subcommand)]
    Drives(drives_cmd::DrivesCmd),
    /// Read, summarise and convert block traces.
    #[command(subcommand)]
    Trace(trace_cmd::TraceCmd),
    /// Measure the simulator's speed and memory on the standard scenarios.
    Bench(bench::BenchArgs),
    /// Replay real drives' measured traces and score the model against them.
    Validate(validate_cmd::ValidateArgs),
    /// Emulate an experiment's array in real time with real data, served over NBD.
    Serve(serve_cmd::ServeArgs),
    /// Track-sized accesses aligned vs unaligned on every drive, and track-aligned RAID
    /// bandwidth against the stripe unit (docs/track_aligned.md).
    TrackAlign(track_align_cmd::TrackAlignArgs),
    /// Measure a drive from request timing alone (NBD export, block device or file) and
    /// write it as a drive file (docs/calibrate.md).
    Calibrate(calibrate_cmd::CalibrateArgs),
    /// A figure of a results file (run, sweep, time series, validation CDF) as SVG or PNG
    /// (docs/plot.md).
    Plot(plot::PlotArgs),
    /// One self-contained HTML page of results files: tables, figures, the experiment and
    /// the recorded verdicts (docs/plot.md).
    Report(report_cmd::ReportArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Run(args) => run_cmd::run(args, cli.quiet),
        Cmd::Dr(args) => run_cmd::run_dr(args, cli.quiet),
        Cmd::Sweep(args) => sweep_cmd::run(args, cli.quiet),
        Cmd::Advise(args) => advise_cmd::run(args, cli.quiet),
        Cmd::Burst(args) => burst_cmd::run(args, cli.quiet),
        Cmd::Drives(cmd) => drives_cmd::run(cmd),
        Cmd::Trace(cmd) => trace_cmd::run(cmd, cli.quiet),
        Cmd::Bench(args) => bench::run(args, cli.quiet),
        Cmd::Validate(args) => validate_cmd::run(args, cli.quiet),
        Cmd::Serve(args) => serve_cmd::run(args),
        Cmd::TrackAlign(args) => track_align_cmd::run(args),
        Cmd::Calibrate(args) => calibrate_cmd::run(args, cli.quiet),
        Cmd::Plot(args) => plot::run(args),
        Cmd::Report(args) => report_cmd::run(args),
    };
    if let Err(err) = result {
        // A closed pipe on stdout (`spindle … | head`) is not an error.
        let pipe = Some(std::io::ErrorKind::BrokenPipe);
        let broken_pipe = err.chain().any(|e| {
            e.downcast_ref::<std::io::Error>().map(|e| e.kind()) == pipe
                || e.downcast_ref::<serde_json::Error>()
                    .and_then(|e| e.io_error_kind())
                    == pipe
        });
        if broken_pipe {
            std::process::exit(0);
        }
        eprintln!("spindle: {err:#}");
        std::process::exit(2);
    }
}
