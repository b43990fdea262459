//! `spindle serve FILE --data DIR (--listen ADDR | --unix PATH) [--record TRACE]`: the
//! experiment's array, emulated in real time with real data, as an NBD export; `--record`
//! writes every host request served as a DiskSim trace (docs/emulator.md). With
//! `--disks DEV_OR_URI,…` instead of `--data`, the array runs real disks that the
//! experiment's (calibrated) drive file describes (docs/calibrate.md, "The real driver";
//! `--json FILE`: its final statistics). The NBD server's
//! limits (`--max-connections`, `--idle-timeout`, `--max-in-flight-mib`) and its log
//! (`--log`, `RUST_LOG`; warnings by default, on stderr) are in docs/nbd.md.

use crate::run_cmd::reader_relative_to;
use anyhow::{bail, Context};
use clap::Args;
use spindle::config::Experiment;
use spindle_emu::driver::ClockOptions;
use spindle_emu::nbd::{Limits, BUDGET_BYTES, CONNECTIONS_MAX, IDLE_TIMEOUT};
use spindle_emu::serve::{serve, Disks, Listen, ServeOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct ServeArgs {
    /// Experiment file (TOML): its [drive] and [array] are emulated; [workload] and [run]
    /// are what `spindle run` would use to predict the same load.
    file: PathBuf,
    /// Override a key of the experiment, e.g. `--set array.ds=2`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Directory of the disks' backing files (created if absent; must match the array).
    #[arg(long, value_name = "DIR", required_unless_present = "disks")]
    data: Option<PathBuf>,
    /// Real disks instead of emulated ones: one block device, file or `nbd://` /
    /// `nbd+unix://` URI per disk of the array, in order, each described by the
    /// experiment's drive file (a calibrated one: `spindle calibrate`). Their data is
    /// overwritten by what clients write (docs/calibrate.md, "The real driver").
    #[arg(long, value_name = "DEV_OR_URI,...", value_delimiter = ',', conflicts_with_all = ["data", "record"])]
    disks: Vec<String>,
    /// With --disks: write the final statistics (throughput, each disk's head tracking and
    /// rotation misses) to FILE as JSON. A regular file is overwritten; anything else is
    /// refused.
    #[arg(long, value_name = "FILE", requires = "disks")]
    json: Option<PathBuf>,
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
    /// Most NBD connections open at once; a further client is refused in the handshake
    /// ("server busy", NBD_REP_ERR_POLICY).
    #[arg(long, value_name = "N", default_value_t = CONNECTIONS_MAX)]
    max_connections: usize,
    /// Close a connection that sent no request for SECS seconds and has none in flight (or
    /// stopped mid-request, or reads no reply, for that long); 0: never. A client that keeps
    /// an idle connection open (a file system mounted through nbd-client or nbdfuse) needs 0
    /// or more than its idle periods.
    #[arg(long, value_name = "SECS", default_value_t = IDLE_TIMEOUT.as_secs_f64())]
    idle_timeout: f64,
    /// Most READ/WRITE payload MiB in flight over all connections; a request beyond it waits
    /// (its connection is not read) until replies have gone out.
    #[arg(long, value_name = "MIB", default_value_t = BUDGET_BYTES >> 20)]
    max_in_flight_mib: u64,
    /// What to log on stderr: a level (error, warn, info, debug, trace, off) or tracing
    /// directives such as `warn,spindle_emu::nbd=debug`. Default: RUST_LOG if set, else warn
    /// (protocol violations and refused clients).
    #[arg(long, value_name = "LEVEL")]
    log: Option<String>,
}

/// The NBD limits the flags give.
fn limits(args: &ServeArgs) -> anyhow::Result<Limits> {
    let secs = args.idle_timeout;
    let idle_timeout = if secs == 0.0 {
        None
    } else {
        match Duration::try_from_secs_f64(secs) {
            Ok(d) if secs > 0.0 => Some(d),
            _ => bail!("--idle-timeout {secs}: give seconds > 0, or 0 for none"),
        }
    };
    if args.max_in_flight_mib == 0 {
        bail!("--max-in-flight-mib 0: give at least 1");
    }
    let Some(in_flight_bytes_max) = args.max_in_flight_mib.checked_mul(1 << 20) else {
        bail!("--max-in-flight-mib {}: too large", args.max_in_flight_mib);
    };
    let limits = Limits {
        connections_max: args.max_connections,
        idle_timeout,
        in_flight_bytes_max,
    };
    if let Err(e) = limits.check() {
        bail!("--max-connections/--idle-timeout/--max-in-flight-mib: {e}");
    }
    Ok(limits)
}

/// Logs `tracing` events on stderr: `--log`, else `RUST_LOG`, else warnings.
fn init_logging(flag: Option<&str>) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    let filter = match flag {
        Some(d) => {
            // A lone word must be a level: `--log wrn` would otherwise name a target.
            let word = !d.contains(['=', ',', ':']);
            if word && !LEVELS.contains(&d.to_ascii_lowercase().as_str()) {
                bail!(
                    "--log {d:?}: give a level ({}) or tracing directives",
                    LEVELS.join(", ")
                );
            }
            EnvFilter::try_new(d).with_context(|| format!("--log {d:?}"))?
        }
        None => match std::env::var("RUST_LOG") {
            Ok(v) if !v.trim().is_empty() => EnvFilter::try_new(&v).unwrap_or_else(|e| {
                eprintln!("spindle serve: RUST_LOG={v:?} ignored ({e}); logging warnings");
                EnvFilter::new("warn")
            }),
            _ => EnvFilter::new("warn"),
        },
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    init_logging(args.log.as_deref())?;
    let limits = limits(&args)?;
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
    let disks = match args.data {
        _ if !args.disks.is_empty() => Disks::Real(args.disks),
        Some(d) => Disks::Emulated(d),
        None => bail!("give --data DIR (emulated disks) or --disks DEV_OR_URI,... (real ones)"),
    };
    if let Some(j) = &args.json {
        crate::output::check_writable(j).with_context(|| format!("--json {}", j.display()))?;
    }
    let opts = ServeOptions {
        disks,
        listen,
        export_name: args.export,
        clock: ClockOptions {
            realtime: args.realtime,
        },
        record: args.record,
        limits,
    };
    let stats = serve(&exp, &read_file, opts, |uri| {
        eprintln!("spindle serve: listening at {uri} (SIGUSR1: statistics, SIGINT/SIGTERM: stop)")
    })
    .map_err(anyhow::Error::msg)?;
    eprintln!("spindle serve: stopped: {stats}");
    if let (Some(path), Some(real)) = (&args.json, &stats.real) {
        let out = serde_json::json!({
            "answered": stats.answered,
            "reads": stats.reads,
            "writes": stats.writes,
            "flushes": stats.flushes,
            "elapsed_s": stats.elapsed_s,
            "in_array_mean": stats.in_array_mean,
            "real": real,
        });
        crate::output::write_atomically(path, format!("{out:#}\n").as_bytes())
            .with_context(|| format!("--json {}", path.display()))?;
    }
    if let Some(nbd) = &stats.nbd {
        eprintln!("spindle serve: {nbd}");
    }
    if let Some(rec) = &stats.recorded {
        eprintln!("spindle serve: {rec}");
        if let Some(e) = &rec.error {
            bail!("--record: the recording is incomplete: {e}");
        }
    }
    Ok(())
}
