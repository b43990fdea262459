//! The advisor's prediction for one candidate configuration under one workload: mean and
//! 99th-percentile latency, utilisation, the throughput the array can sustain, and whether
//! the model expects it to fall behind (saturate). Built from the chapter 2 equations
//! ([`super::sr_array`], [`super::mirror`], [`super::queueing`]) and the eager-writing model
//! ([`super::ew`]); docs/advise.md lists what each family's prediction leaves out.
//!
//! The queueing form: a closed loop with Q outstanding uses eq. 2.42's per-disk seek
//! (q = Q·ops/D queued per disk) and eq. 2.45's busy disks, latency Q/X (Little); timed
//! arrivals at a rate λ load each disk with ρ = λ·W/D (W: disk work per host request) and wait
//! as a G/G/1 queue (Kingman), the trace's burstiness entering as the arrivals' squared
//! coefficient of variation.

use serde::Serialize;

use super::queueing::{array_iops, fluid_wait_ms, kingman_wait_ms, look_divisor, wait_p99_ms};
use super::{ew, mirror, paged, sr_array, DiskModel};

/// A layout family the engine simulates and the advisor enumerates.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    Striping,
    Raid10,
    SrArray,
    SrMirror,
    EwArray,
    Raid5,
    Paged,
}

/// One configuration: the family and its dimensions (Ds may be fractional for EW-Arrays).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Candidate {
    pub family: Family,
    pub disks: u32,
    pub ds: f64,
    pub dr: u32,
    pub dm: u32,
    pub dd: f64,
    /// RAID-5: disks per parity group.
    pub group_width: u32,
}

/// The paged disk's page: the advisor's block (4 KiB), so 4 KiB-aligned requests are whole
/// pages.
pub const PAGE_BYTES: u32 = 4096;

impl Candidate {
    /// A Ds × Dr × Dm member of the SR-Mirror family, named by its family.
    pub fn sr(ds: u32, dr: u32, dm: u32) -> Candidate {
        let family = match (ds, dr, dm) {
            (_, 1, 1) => Family::Striping,
            (_, 1, _) => Family::Raid10,
            (_, _, 1) => Family::SrArray,
            _ => Family::SrMirror,
        };
        Candidate {
            family,
            disks: ds * dr * dm,
            ds: f64::from(ds),
            dr,
            dm,
            dd: 1.0,
            group_width: 0,
        }
    }

    /// An EW-Array Dm × Ds × Dd (Ds·Dd whole).
    pub fn ew(dm: u32, ds: f64, dd: f64) -> Candidate {
        let disks = (f64::from(dm) * ds * dd).round();
        Candidate {
            family: Family::EwArray,
            disks: disks as u32,
            ds,
            dr: 1,
            dm,
            dd,
            group_width: 0,
        }
    }

    /// A RAID-5 of `disks` in groups of `group_width`, with the default write and read caches.
    pub fn raid5(disks: u32, group_width: u32) -> Candidate {
        Candidate {
            family: Family::Raid5,
            disks,
            ds: f64::from(disks),
            dr: 1,
            dm: 1,
            dd: 1.0,
            group_width,
        }
    }

    /// `disks` paged disks, each page with `replicas` copies on its track, bad tenants on
    /// (docs/paged.md); Dr holds the replicas.
    pub fn paged(disks: u32, replicas: u32) -> Candidate {
        Candidate {
            family: Family::Paged,
            disks,
            ds: f64::from(disks),
            dr: replicas,
            dm: 1,
            dd: 1.0,
            group_width: 0,
        }
    }

    /// A short name: `SR-Array 3x2`, `RAID-10 3x1x2`, `EW-Array 2x1.5x2`, `RAID-5 6 (G 6)`.
    pub fn label(&self) -> String {
        match self.family {
            Family::Striping => format!("striping {}", self.disks),
            Family::Raid10 => format!("RAID-10 {}x1x{}", self.ds, self.dm),
            Family::SrArray => format!("SR-Array {}x{}", self.ds, self.dr),
            Family::SrMirror => format!("SR-Mirror {}x{}x{}", self.ds, self.dr, self.dm),
            Family::EwArray => format!(
                "EW-Array {}x{}x{}",
                self.dm,
                fmt_dim(self.ds),
                fmt_dim(self.dd)
            ),
            Family::Raid5 => format!("RAID-5 {} (G {})", self.disks, self.group_width),
            Family::Paged => format!("paged {} (r {})", self.disks, self.dr),
        }
    }

    /// The `--set`s that make an experiment this configuration: (key, TOML value text).
    pub fn settings(&self) -> Vec<(String, String)> {
        let kv = |k: &str, v: String| (k.to_string(), v);
        match self.family {
            Family::Striping | Family::Raid10 | Family::SrArray | Family::SrMirror => vec![
                kv("array.layout", "\"sr-mirror\"".into()),
                kv("array.ds", format!("{}", self.ds)),
                kv("array.dr", self.dr.to_string()),
                kv("array.dm", self.dm.to_string()),
                kv("array.scheduler", "\"satf\"".into()),
            ],
            Family::EwArray => vec![
                kv("array.layout", "\"ew-array\"".into()),
                kv("array.dm", self.dm.to_string()),
                kv("array.ds", format!("{}", self.ds)),
                kv("array.dd", format!("{}", self.dd)),
                kv("array.scheduler", "\"satf-ew\"".into()),
            ],
            Family::Raid5 => vec![
                kv("array.layout", "\"raid-5\"".into()),
                kv("array.disks", self.disks.to_string()),
                kv("array.group_width", self.group_width.to_string()),
                kv("array.scheduler", "\"satf\"".into()),
            ],
            Family::Paged => vec![
                kv("array.layout", "\"paged\"".into()),
                kv("array.ds", self.disks.to_string()),
                kv("array.replicas", self.dr.to_string()),
                kv("array.page_kb", (PAGE_BYTES / 1024).to_string()),
                kv("array.scheduler", "\"fcfs\"".into()),
            ],
        }
    }
}

fn fmt_dim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The workload as the models see it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Load {
    /// Reads over all requests.
    pub read_fraction: f64,
    /// Seek locality L (table 4.2).
    pub locality: f64,
    /// Mean request size.
    pub size_bytes: f64,
    /// A closed loop: requests kept outstanding (Q).
    pub queue: Option<f64>,
    /// Timed arrivals: host requests per second.
    pub rate_iops: Option<f64>,
    /// Timed arrivals: squared coefficient of variation of the inter-arrival gaps (1 for a
    /// Poisson stream; a bursty trace has more).
    pub arrival_cv2: f64,
    /// Timed arrivals from a trace: arrivals per consecutive window of `window_ms`, at the
    /// replayed rate (empty: no bursts beyond the CV).
    #[serde(skip)]
    pub window_counts: Vec<u32>,
    #[serde(skip)]
    pub window_ms: f64,
}

/// What the models predict for one candidate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// Host-visible mean latency without queueing (ms).
    pub service_ms: f64,
    pub mean_ms: f64,
    pub p99_ms: f64,
    /// Mean disk utilisation, at most 1.
    pub utilization: f64,
    /// The host requests per second the array can serve at most.
    pub max_iops: f64,
    /// The model expects the array to fall behind the arrivals.
    pub saturated: bool,
    /// p of eq. 2.25: the share of requests costing a read.
    pub p: f64,
    /// Which terms dominate, for the advisor's "why" column.
    pub why: String,
}

/// Per-family parts, ms: a read; the first copy of a write (answered then when the rest can
/// be propagated in idle time); a write with every copy in the foreground; disk work per read
/// and per write (summed over the disks it occupies); disk operations per write; the mean
/// seek and rotational terms of a read (for the service variance).
struct Parts {
    read: f64,
    /// Disk operations per read (1 but for the paged disk: one per page).
    ops_read: f64,
    write_first: f64,
    write_fg: f64,
    work_read: f64,
    work_write: f64,
    ops_write: f64,
    seek: f64,
    rot: f64,
}

fn parts(d: &DiskModel, c: &Candidate, l: f64, seek_div: f64, size_bytes: f64) -> Parts {
    let xfer = d.transfer_ms(size_bytes);
    // seek_div: eq. 2.42's (1.5q + 1 + 0.5/q)/3 gain of a scheduler over q queued (1 at q ≤ 1).
    let l_eff = l * seek_div;
    let seek = sr_array::mean_seek_ms(d, l_eff) / c.ds;
    match c.family {
        Family::Striping | Family::Raid10 | Family::SrArray | Family::SrMirror => {
            let read = mirror::sr_mirror_read_rot_ms(d, c.ds, c.dr, c.dm, l_eff) + xfer;
            let first = sr_array::read_ms(d, c.ds, c.dr, l_eff) + d.two_ms + xfer;
            let fg = mirror::sr_mirror_write_ms(d, c.ds, c.dr, c.dm, l_eff) + d.two_ms + xfer;
            let per_copy = sr_array::write_ms(d, c.ds, c.dr, l_eff) + d.two_ms + xfer;
            Parts {
                read,
                ops_read: 1.0,
                write_first: first.min(fg),
                write_fg: fg,
                work_read: read,
                work_write: f64::from(c.dm) * per_copy,
                ops_write: f64::from(c.dm),
                seek,
                rot: read - seek - d.to_ms - xfer,
            }
        }
        Family::EwArray => {
            let read = ew::read_ms(d, c.dm, c.ds, l_eff) + xfer;
            let w = ew::eager_write_ms(d, c.ds, c.dd, 4096.0, l_eff) + xfer;
            Parts {
                read,
                ops_read: 1.0,
                write_first: w,
                write_fg: w,
                work_read: read,
                work_write: f64::from(c.dm) * w,
                ops_write: f64::from(c.dm),
                seek,
                rot: d.r_ms / f64::from(c.dm + 1),
            }
        }
        Family::Paged => {
            // Each page of a request is its own disk command, the pages striped over the
            // disks (in parallel); first come first served: no gain from a queue (l, not
            // l_eff).
            let page = f64::from(PAGE_BYTES);
            let pages = (size_bytes / page).max(1.0);
            let xfer = d.transfer_ms(page);
            let read = paged::read_ms(d, c.disks, c.dr, l) + xfer;
            let w = paged::write_ms(d, c.disks, c.dr, page, l) + xfer;
            Parts {
                read,
                ops_read: pages,
                write_first: w,
                write_fg: w,
                work_read: pages * read,
                work_write: pages * w,
                ops_write: pages,
                seek: sr_array::mean_seek_ms(d, l) / paged::band_ds(c.disks, c.dr),
                rot: d.r_ms / f64::from(c.dr + 1),
            }
        }
        Family::Raid5 => {
            // Data of one disk over the groups' data disks: each disk holds 1/(D (G−1)/G).
            let g = f64::from(c.group_width.max(2));
            let ds = f64::from(c.disks) * (g - 1.0) / g;
            let read = sr_array::read_ms(d, ds, 1, l_eff) + xfer;
            let seek = sr_array::mean_seek_ms(d, l_eff) / ds;
            // The small-write update: read old data and parity, write both (4 accesses).
            let access = read + d.two_ms / 2.0;
            Parts {
                read,
                ops_read: 1.0,
                // The non-volatile write cache answers a write (its copy in NVRAM).
                write_first: 0.0,
                write_fg: 2.0 * access,
                work_read: read,
                work_write: 4.0 * access,
                ops_write: 4.0,
                seek,
                rot: d.r_ms / 2.0,
            }
        }
    }
}

/// The prediction for `c` under `load` on disks modelled by `d`.
pub fn predict(d: &DiskModel, c: &Candidate, load: &Load) -> Prediction {
    let rf = load.read_fraction.clamp(0.0, 1.0);
    let disks = f64::from(c.disks.max(1));
    let l = load.locality.max(0.01);
    let ops_per_req = |p: &Parts| rf * p.ops_read + (1.0 - rf) * p.ops_write;
    // Scheduling gain from the requests queued at each disk.
    let q_disk = match (load.queue, load.rate_iops) {
        (Some(q), _) => {
            let p1 = parts(d, c, l, 1.0, load.size_bytes);
            (q * ops_per_req(&p1) / disks).max(1.0)
        }
        _ => 1.0,
    };
    let gain = look_divisor(q_disk) / 3.0;
    let p = parts(d, c, l, gain, load.size_bytes);
    let work = rf * p.work_read + (1.0 - rf) * p.work_write;
    let ops = ops_per_req(&p);
    let service_op = work / ops;
    // Service variance: a linear seek's is mean²/2, a uniform wait's mean²/3.
    let cs2 = ((p.seek * p.seek) / 2.0 + (p.rot * p.rot) / 3.0) / (service_op * service_op);
    let max_iops = disks / work * 1000.0;
    let why_terms = format!(
        "seek {:.2} + rotation {:.2} ms per read, {:.1} disk ops per write",
        p.seek, p.rot, p.ops_write
    );
    match (load.queue, load.rate_iops) {
        (Some(q), _) => {
            // Closed loop: eq. 2.45's busy disks over the Q·ops disk operations outstanding,
            // Little's law for the latency.
            let x = (array_iops(disks, q * ops, service_op) / ops).min(max_iops);
            let busy = x * work / disks / 1000.0;
            let host = rf * p.read + (1.0 - rf) * p.write_fg;
            let mean = (q / x * 1000.0).max(host);
            Prediction {
                service_ms: host,
                mean_ms: mean,
                p99_ms: mean + 2.33 * cs2.sqrt() * service_op,
                utilization: busy.min(1.0),
                max_iops: x,
                saturated: false,
                p: rf,
                why: why_terms,
            }
        }
        (None, Some(rate)) => {
            let rho = rate * work / disks / 1000.0;
            // Writes propagate their other copies in idle time, which a disk busy ρ of the
            // time lacks: a share ρ of writes waits for every copy (eq. 2.25's Xwf).
            let bg = (1.0 - rho).clamp(0.0, 1.0);
            let p_eff = rf + (1.0 - rf) * bg;
            let write = bg * p.write_first + (1.0 - bg) * p.write_fg;
            let host = rf * p.read + (1.0 - rf) * write;
            // Splitting the stream over D disks thins its burstiness (Bernoulli splitting).
            let per_disk_share = (ops / disks).min(1.0);
            let ca2 = per_disk_share * load.arrival_cv2 + 1.0 - per_disk_share;
            match kingman_wait_ms(rho, service_op, ca2, cs2) {
                Some(wq) => {
                    // Bursts beyond the CV: a fluid queue at the array's capacity.
                    let wq = wq + fluid_wait_ms(&load.window_counts, load.window_ms, max_iops);
                    // The cached writes of RAID-5 do not wait for the disks.
                    let waiting = if c.family == Family::Raid5 { rf } else { 1.0 };
                    Prediction {
                        service_ms: host,
                        mean_ms: host + waiting * wq,
                        p99_ms: host + 2.33 * cs2.sqrt() * service_op + wait_p99_ms(rho, wq),
                        utilization: rho,
                        max_iops,
                        saturated: rho >= 0.98,
                        p: p_eff,
                        why: format!("{why_terms}; utilisation {:.0} %", rho * 100.0),
                    }
                }
                None => Prediction {
                    service_ms: host,
                    mean_ms: f64::INFINITY,
                    p99_ms: f64::INFINITY,
                    utilization: 1.0,
                    max_iops,
                    saturated: true,
                    p: rf,
                    why: format!(
                        "needs {:.0} % of its disks' time: can serve {:.0} of {:.0} IOPS",
                        rho * 100.0,
                        max_iops,
                        rate
                    ),
                },
            }
        }
        (None, None) => {
            let host = rf * p.read + (1.0 - rf) * p.write_first;
            Prediction {
                service_ms: host,
                mean_ms: host,
                p99_ms: host + 2.33 * cs2.sqrt() * service_op,
                utilization: 0.0,
                max_iops,
                saturated: false,
                p: 1.0,
                why: why_terms,
            }
        }
    }
}
