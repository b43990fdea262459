//! `spindle serve FILE --data DIR (--listen ADDR | --unix PATH) [--record TRACE]`: the
//! experiment's array, emulated in real time with real data, as an NBD export; `--record`
//! writes every host request served as a DiskSim trace (docs/emulator.md).

use crate::run_cmd::reader_relative_to;
use anyhow::{bail, Context};
use clap::Args;
use spindle::config::Experiment;
use spindle_emu::driver::ClockOptions;
use spindle_emu::serve::{serve, Listen, ServeOptions};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct ServeArgs {
    /// Experiment file (TOML): its [drive] and [array] are emulated; [workload] and [run]
    /// are what `spindle run` would use to predict the same load.
    file: PathBuf,
    /// Override a key of the experiment, e.g. `--set array.ds=2`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Directory of the disks' backing files (created if absent; must match the array).
    #[arg(long, value_name = "DIR")]
    data: PathBuf,
    /// TCP address to listen on, e.g. 127.0.0.1:10809.
    #[arg(long, value_name = "ADDR", conflicts_with = "unix")]
    listen: Option<std::net::SocketAddr>,
    /// Unix socket path to listen on.
    #[arg(long, value_name = "PATH")]
    unix: Option<PathBuf>,
    /// The export's name.
    #[arg(long, default_value = "spindle")]
    export: String,
    /// Run the clock thread under SCHED_FIFO with a 1 ns timer slack (needs root or
    /// CAP_SYS_NICE): lower lateness on a busy machine.
    #[arg(long)]
    realtime: bool,
    /// Record every host request served (arrival, read/write, offset, length) to FILE as a
    /// DiskSim ASCII trace that `spindle run` replays; FLUSHes become comment lines.
    /// A regular file is overwritten; anything else is refused.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let listen = match (args.listen, args.unix) {
        (Some(a), None) => Listen::Tcp(a),
        (None, Some(p)) => Listen::Unix(p),
        _ => bail!("give --listen ADDR or --unix PATH"),
    };
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("{}", args.file.display()))?;
    let exp = Experiment::parse(&text, &args.file.display().to_string(), &args.sets)?;
    let base = args.file.parent().map(Path::to_path_buf);
    let read_file = reader_relative_to(base.as_deref());
    let opts = ServeOptions {
        data_dir: args.data,
        listen,
        export_name: args.export,
        clock: ClockOptions {
            realtime: args.realtime,
        },
        record: args.record,
    };
    let stats = serve(&exp, &read_file, opts, |uri| {
        eprintln!("spindle serve: listening at {uri} (SIGUSR1: statistics, SIGINT/SIGTERM: stop)")
    })
    .map_err(anyhow::Error::msg)?;
    eprintln!("spindle serve: stopped: {stats}");
    if let Some(rec) = &stats.recorded {
        eprintln!("spindle serve: {rec}");
        if let Some(e) = &rec.error {
            bail!("--record: the recording is incomplete: {e}");
        }
    }
    Ok(())
}
