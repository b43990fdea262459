//! `spindle serve`: an experiment's array, emulated in real time over a data directory
//! (or running real disks: [`Disks::Real`], `crate::real`), served as an NBD export on TCP or a Unix socket until SIGINT or SIGTERM; SIGUSR1 prints
//! the statistics so far (the array's and the NBD server's). A clean stop lets the array finish its background work and
//! makes the disk files durable before the final statistics are printed.

use crate::backing::{BackingStore, StoreShape};
use crate::driver::{ClockOptions, Emulator, Stats};
use crate::export::EmuExport;
use crate::nbd::{Backend, Limits, Server};
use crate::real::{RealArray, RealOptions};
use crate::record::RecordFile;
use spindle::config::{BuiltArray, Experiment, ReadFile};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// Where the export listens.
#[derive(Clone, Debug)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// What the array's disks are.
#[derive(Clone, Debug)]
pub enum Disks {
    /// Emulated, one backing file per disk in this data directory.
    Emulated(PathBuf),
    /// Real disks (block devices, files, `nbd://` URIs), one per disk of the array, that
    /// the experiment's drive file describes (a calibrated drive: `spindle calibrate`).
    Real(Vec<String>),
}

pub struct ServeOptions {
    pub disks: Disks,
    pub listen: Listen,
    /// The export's name (clients may also ask for the empty name).
    pub export_name: String,
    pub clock: ClockOptions,
    /// `--record FILE`: every host request served, as a DiskSim trace (`record.rs`).
    pub record: Option<PathBuf>,
    /// The NBD server's connection limit, idle timeout and in-flight byte budget.
    pub limits: Limits,
}

/// Builds the experiment's array over `opts.data_dir` and serves it until a signal.
/// `ready` receives the address clients connect to (e.g. `nbd://127.0.0.1:10809`) once the
/// socket is bound. Returns the final statistics (with the NBD server's counters).
pub fn serve(
    exp: &Experiment,
    read_file: ReadFile<'_>,
    opts: ServeOptions,
    ready: impl FnOnce(&str),
) -> Result<Stats, String> {
    serve_until(exp, read_file, opts, ready, None)
}

/// [`serve`], stopping when `stop` fires (or its sender is dropped) instead of on a signal
/// when it is given.
pub fn serve_until(
    exp: &Experiment,
    read_file: ReadFile<'_>,
    opts: ServeOptions,
    ready: impl FnOnce(&str),
    stop: Option<tokio::sync::oneshot::Receiver<()>>,
) -> Result<Stats, String> {
    opts.limits
        .check()
        .map_err(|e| format!("nbd limits: {e}"))?;
    // The record file first: a bad path is refused before anything starts.
    let record = opts.record.as_deref().map(RecordFile::create).transpose()?;
    let BuiltArray {
        mut engine,
        layout_label,
        scheduler_label,
        drive_id,
        disk_sectors,
        drive,
    } = exp.build_array(read_file).map_err(|e| e.to_string())?;
    let built = Labels {
        layout_label,
        scheduler_label,
        drive_id,
        disk_sectors,
    };
    if !engine.enable_data_moves() {
        return Err(format!(
            "the emulator cannot serve {} yet: its controller does not describe the bytes \
             of its disk operations",
            built.layout_label
        ));
    }
    let description;
    let running = match &opts.disks {
        Disks::Real(names) => {
            if record.is_some() {
                return Err("--record: not with real disks (--disks) yet".into());
            }
            description = format!(
                "{} on {} real disks of {} ({} scheduler), run by spindle",
                built.layout_label,
                names.len(),
                built.drive_id,
                built.scheduler_label
            );
            let real = RealArray::start(
                engine,
                &drive,
                &built.drive_id,
                names,
                &RealOptions {
                    realtime: opts.clock.realtime,
                },
            )?;
            Running::Real(real)
        }
        Disks::Emulated(data_dir) => {
            let (emu, d) = start_emulator(exp, engine, &built, data_dir, opts.clock, record)?;
            description = d;
            Running::Emu(emu)
        }
    };
    let handle = running.handle();
    let export: Arc<dyn Backend> = Arc::new(EmuExport::new(handle.clone()));
    let server = Arc::new(
        Server::with_limits(
            vec![(opts.export_name.clone(), description, export)],
            opts.limits,
        )
        .map_err(|e| e.to_string())?,
    );
    // One worker: the NBD side only parses and copies, and every thread wake-up between
    // tokio workers adds to the turnaround between an answer and the client's next request
    // (measured: 61-63 of 64 requests in the array with one worker, 50-60 with two).
    // Under `--realtime` the NBD worker is SCHED_FIFO too (below the clock and I/O
    // threads): an answer the clock sends on time must not then wait behind the host's
    // other work to be written to the socket (measured: the calibrator's interval noise
    // under two CPU hogs, docs/calibrate.md).
    let realtime = opts.clock.realtime;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .thread_name("spindle-nbd")
        .on_thread_start(move || {
            if realtime {
                crate::driver::become_realtime("NBD", 45);
            }
        })
        .build()
        .map_err(|e| format!("cannot start the NBD runtime: {e}"))?;
    let served: Result<(), String> = rt.block_on(async {
        let signalled = shutdown_signal()?;
        let stop = async move {
            match stop {
                Some(rx) => {
                    tokio::select! {
                        _ = rx => {}
                        () = signalled => {}
                    }
                }
                None => signalled.await,
            }
        };
        tokio::spawn(report_on_sigusr1(handle.clone(), server.clone()));
        match &opts.listen {
            Listen::Tcp(addr) => {
                let l = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| format!("--listen {addr}: {e}"))?;
                let at = l.local_addr().map_err(|e| e.to_string())?;
                ready(&format!("nbd://{at}/{}", opts.export_name));
                server.clone().serve_tcp(l, stop).await;
            }
            Listen::Unix(path) => {
                let l = tokio::net::UnixListener::bind(path)
                    .map_err(|e| format!("--unix {}: {e}", path.display()))?;
                ready(&format!(
                    "nbd+unix:///{}?socket={}",
                    opts.export_name,
                    path.display()
                ));
                server.clone().serve_unix(l, stop).await;
                let _ = std::fs::remove_file(path);
            }
        }
        Ok(())
    });
    let nbd = server.stats();
    drop(server);
    drop(handle);
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    let mut stats = running.stop()?;
    stats.nbd = Some(nbd);
    served.map(|()| stats)
}

/// What the export's description and the backing store name the array by.
struct Labels {
    layout_label: String,
    scheduler_label: String,
    drive_id: String,
    /// One physical disk's capacity in sectors.
    disk_sectors: u64,
}

/// A running array: emulated disks, or real ones.
enum Running {
    Emu(Emulator),
    Real(RealArray),
}

impl Running {
    fn handle(&self) -> crate::driver::Handle {
        match self {
            Running::Emu(e) => e.handle(),
            Running::Real(r) => r.handle(),
        }
    }

    fn stop(self) -> Result<Stats, String> {
        match self {
            Running::Emu(e) => e.stop(),
            Running::Real(r) => r.stop(),
        }
    }
}

/// The emulator over `data_dir`'s backing files (opened or created for this array), and
/// the export's description.
fn start_emulator(
    exp: &Experiment,
    engine: Box<dyn spindle::engine::Engine>,
    built: &Labels,
    data_dir: &std::path::Path,
    clock: ClockOptions,
    record: Option<RecordFile>,
) -> Result<(Emulator, String), String> {
    let a = &exp.spec.array;
    let shape = StoreShape {
        disks: engine.disk_count(),
        sector_bytes: engine.sector_bytes(),
        disk_sectors: built.disk_sectors,
        // The data's layout: a configured failure (the parity layouts' label names it) is
        // not part of it, so a store outlives the failure and its rebuild.
        layout: built
            .layout_label
            .split(" fail d")
            .next()
            .unwrap_or_default()
            .to_string(),
        drive: built.drive_id.clone(),
    };
    let store = BackingStore::open(data_dir, shape).map_err(|e| e.to_string())?;
    if let Some(d) = store.interrupted_rebuild() {
        // The disk's file is stale (it failed) or holds only what a rebuild wrote: it must
        // stay failed from the start, degraded or rebuilt again, before anything reads it.
        let failed_again = a.failed_disk == Some(d as u32) && a.fail_at_ms.unwrap_or(0.0) == 0.0;
        if !failed_again {
            return Err(format!(
                "{}: disk {d} had failed and was not rebuilt when the emulator last served \
                 this directory, so its file is stale: serve with array.failed_disk = {d} \
                 and array.fail_at_ms = 0 (array.rebuild = true rebuilds it onto a spare; \
                 false runs degraded)",
                data_dir.display()
            ));
        }
    }
    let description = format!(
        "{} on {} ({} scheduler), emulated by spindle",
        built.layout_label, built.drive_id, built.scheduler_label
    );
    let capacity_bytes = engine.capacity_sectors() * u64::from(engine.sector_bytes());
    let record = record.map(|file| {
        let header = record_header(&description, capacity_bytes);
        (file, header)
    });
    let emu = Emulator::start_recording(engine, store, clock, record)?;
    if emu.recovered().unclean {
        eprintln!("spindle serve: {}", emu.recovered());
    }
    Ok((emu, description))
}

/// The comment lines that open a `--record` file.
fn record_header(description: &str, capacity_bytes: u64) -> Vec<String> {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    vec![
        "spindle serve --record: the host requests an emulated array served, in DiskSim ASCII:"
            .into(),
        "arrival_ms device lba sectors flags -- ms since the server started (exact to the ns),"
            .into(),
        "512-byte sectors, flags 1 = read, 0 = write. TRIM and WRITE_ZEROES are recorded as".into(),
        "writes, a FLUSH as a comment: `# flush ARRIVAL_MS`.".into(),
        format!("array: {description}, {capacity_bytes} bytes"),
        format!("started: {started} s since the Unix epoch"),
    ]
}

/// Completes on SIGINT or SIGTERM.
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>, String> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    })
}

async fn report_on_sigusr1(handle: crate::driver::Handle, server: Arc<Server>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut usr1) = signal(SignalKind::user_defined1()) else {
        return;
    };
    while usr1.recv().await.is_some() {
        if let Some(rx) = handle.request_stats() {
            if let Ok(s) = rx.await {
                eprintln!("spindle serve: {s}");
            }
        }
        eprintln!("spindle serve: {}", server.stats());
    }
}
