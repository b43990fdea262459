//! Opening an experiment's trace for replay (file I/O lives here, not in the core).
//!
//! The trace is streamed twice when it must be: a first pass finds each device's extent
//! (for the logical data set of concatenated devices) and counts the requests; the second
//! pass feeds the simulator. Gzip and bzip2 files are read transparently.

use spindle::config::{TraceFit, TraceSpec};
use spindle::engine::HostRequest;
use spindle::sim::Arrivals;
use spindle::workload::trace::{
    self, DeviceSet, TraceError, TraceFormat, TraceIterExt, TraceRecord,
};
use spindle::{Nanos, Op};
use std::io::BufRead;
use std::path::{Path, PathBuf};

type Records = Box<dyn Iterator<Item = Result<TraceRecord, TraceError>>>;

fn resolve(base: Option<&Path>, path: &str) -> PathBuf {
    let p = Path::new(path);
    match base {
        Some(dir) if p.is_relative() && dir.join(p).exists() => dir.join(p),
        _ => p.to_path_buf(),
    }
}

fn open_input(path: &Path) -> Result<Box<dyn BufRead>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (_, input) = trace::decompress(std::io::BufReader::with_capacity(1 << 16, file))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(input)
}

/// The records of one pass, filtered by device and time window as the spec asks.
fn pass(path: &Path, format: TraceFormat, spec: &TraceSpec) -> Result<Records, String> {
    let mut records: Records = Box::new(trace::open(format, open_input(path)?));
    if let Some(devices) = &spec.devices {
        records = Box::new(records.devices(DeviceSet::new(devices.iter().copied())));
    }
    // Checked by the core before the trace is opened (errors there name the key).
    if let Some((start, end)) = spec.window_ns().map_err(|(key, m)| format!("{key}: {m}"))? {
        // A replay needs a trace sorted by time, so reading can stop at the window's end.
        records = Box::new(records.window_sorted(start, end));
    }
    if let Some(ps) = spec
        .split_sectors()
        .map_err(|(key, m)| format!("{key}: {m}"))?
    {
        records = Box::new(records.pages(ps));
    }
    Ok(records)
}

/// The trace opener `spindle run` hands to the core: `base` is the experiment file's folder.
pub fn opener(
    base: Option<&Path>,
) -> impl Fn(&TraceSpec, u32, u32, u64) -> Result<(Arrivals<'static>, Option<u64>), String> + '_ {
    move |spec: &TraceSpec, sector_bytes: u32, disks: u32, per_disk: u64| {
        let path = resolve(base, &spec.path);
        let shown = path.display().to_string();
        let at = |e: TraceError| format!("{shown}: {e}");
        let keyed = |(key, m): (&str, String)| format!("{key}: {m}");
        let format = match spec.trace_format().map_err(keyed)? {
            Some(f) => f,
            None => {
                trace::detect_and_open(open_input(&path)?)
                    .map_err(|e| format!("{shown}: {e}"))?
                    .0
            }
        };
        let speedup = spec.speedup_factor().map_err(keyed)?;
        // Pass 1: count requests and find each device's extent.
        let mut extents = trace::DeviceExtents::new();
        let mut count = 0u64;
        for rec in pass(&path, format, spec)? {
            let rec = rec.map_err(at)?;
            extents.push(&rec);
            count += 1;
        }
        if count == 0 {
            return Err(format!(
                "{shown}: no requests to replay (check the device filter and time window)"
            ));
        }
        let mut records = pass(&path, format, spec)?;
        let scale = u64::from(sector_bytes / 512);
        // The traced address space (in drive sectors) that must fit on the target: the whole
        // array when concatenated, one disk per device otherwise.
        let (needed, room) = if spec.concat {
            let layout = trace::ConcatLayout::try_new(&extents, 0).map_err(|e| {
                format!("{shown}: {e}: the traced devices cannot be concatenated (workload.trace.concat = true; keep fewer devices with workload.trace.devices)")
            })?;
            let needed = layout.total_sectors().div_ceil(scale);
            records = Box::new(records.concat(layout));
            (needed, per_disk * u64::from(disks))
        } else {
            if let Some((device, _)) = extents.iter().find(|(d, _)| *d >= disks) {
                return Err(format!("{shown}: device {device} has no disk (the array has {disks}; use concat = true or more disks)"));
            }
            (
                extents
                    .iter()
                    .map(|(_, e)| e.div_ceil(scale))
                    .max()
                    .unwrap_or(0),
                per_disk,
            )
        };
        let shrink = needed > room;
        if shrink && spec.fit == TraceFit::Error {
            let what = if spec.concat {
                "the logical data set of the traced devices"
            } else {
                "a traced device"
            };
            return Err(format!(
                "{shown}: {what} spans {} bytes, more than the {} bytes it must fit in (add disks, pick a larger drive, or set workload.trace.fit = \"scale\")",
                u128::from(needed) * u128::from(sector_bytes),
                u128::from(room) * u128::from(sector_bytes)
            ));
        }
        let concat = spec.concat;
        let mut id = 0u64;
        let arrivals: Arrivals<'static> = Box::new(records.speed_up(speedup).map(move |rec| {
            let rec = rec.map_err(|e| format!("{shown}: {e}"))?;
            // 512-byte trace sectors onto the drive's sectors: floor the start, round the end up.
            let mut start = rec.lba / scale;
            let sectors = (rec.lba + u64::from(rec.sectors)).div_ceil(scale) - start;
            if shrink {
                // Linear scaling keeps every address's relative position (and so seek
                // distances as fractions of the stroke); the size is kept and clamped in.
                start = u64::try_from(u128::from(start) * u128::from(room) / u128::from(needed))
                    .expect("scaled below room");
                start = start.min(room.saturating_sub(sectors));
            }
            let base = if concat {
                0
            } else {
                u64::from(rec.device) * per_disk
            };
            let req = HostRequest {
                id,
                op: if rec.op == Op::Read {
                    Op::Read
                } else {
                    Op::Write
                },
                lba: base + start,
                sectors: u32::try_from(sectors)
                    .map_err(|_| format!("{shown}: request {id} is too large"))?,
                arrival: Nanos(rec.arrival.0),
            };
            id += 1;
            Ok(req)
        }));
        Ok((arrivals, Some(count)))
    }
}
