//! Track-aligned access, measured on the drive model: the disk efficiency of track-sized
//! accesses placed on track boundaries or not (Schindler et al., "Track-aligned extents",
//! FAST '02; Qian et al., "A Linux implementation validation of track-aligned extents and
//! track-aligned RAIDs", USENIX '08), and the bandwidth of whole-stripe accesses to RAID-0
//! and RAID-5 whose stripe unit is one track or a fixed size.
//!
//! Pure: the drive's mechanics ([`Drive::access`]) timed back to back, one request at a
//! time (queue depth 1), at random positions drawn by a seeded PCG; no on-disk buffer, no
//! bus. Efficiency is the papers' "fraction of time transferring": media transfer over the
//! whole service (overhead, seek, rotation, transfer, head and cylinder switches). Times are
//! integer nanoseconds; only the final ratios are floating point.

use crate::drive::{Drive, HeadState, Transfer};
use crate::{Nanos, Op, Span};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

/// The first LBA and the number of LBAs of the track holding `lba`.
///
/// spindle's own layouts answer directly ([`crate::drive::Geometry::track_of`]); a DiskSim
/// layout's track is found by walking its physical sectors (the smallest and largest LBA
/// stored on the same cylinder and head).
pub fn track_bounds(drive: &Drive, lba: u64) -> (u64, u64) {
    let geo = drive.geometry();
    if let Some(t) = geo.track_of(lba) {
        return t;
    }
    let chs = geo.lba_to_chs(lba);
    let spt = geo.sectors_per_track(chs.cylinder);
    let lbas = (0..spt).filter_map(|sector| geo.chs_to_lba(crate::drive::Chs { sector, ..chs }));
    let (lo, hi) = lbas.fold((lba, lba), |(lo, hi), l| (lo.min(l), hi.max(l)));
    assert!(lo <= lba && lba <= hi, "lba on its own track");
    (lo, hi - lo + 1)
}

/// Sums of one kind of access's breakdown.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub requests: u64,
    pub sectors: u64,
    pub overhead_ns: u64,
    pub seek_ns: u64,
    pub rotation_ns: u64,
    pub transfer_ns: u64,
    pub switches_ns: u64,
    /// Wall time from the first request's start to the last one's end.
    pub elapsed_ns: u64,
}

impl Totals {
    fn add(&mut self, a: &crate::drive::Access, sectors: u32) {
        self.requests += 1;
        self.sectors += u64::from(sectors);
        self.overhead_ns += a.overhead.0;
        self.seek_ns += a.seek.0;
        self.rotation_ns += a.rotation.0;
        self.transfer_ns += a.transfer.0;
        self.switches_ns += a.switches.0;
    }

    /// Media transfer over the whole service time.
    pub fn efficiency(&self) -> f64 {
        let service = self.overhead_ns
            + self.seek_ns
            + self.rotation_ns
            + self.transfer_ns
            + self.switches_ns;
        if service == 0 {
            return 0.0;
        }
        self.transfer_ns as f64 / service as f64
    }

    /// Mean rotational latency per request (ms).
    pub fn rotation_ms(&self) -> f64 {
        self.rotation_ns as f64 / self.requests.max(1) as f64 / 1e6
    }

    /// Bytes moved per second of elapsed time, in MB/s (10^6 bytes).
    pub fn bandwidth_mb_s(&self, sector_bytes: u32) -> f64 {
        if self.elapsed_ns == 0 {
            return 0.0;
        }
        (self.sectors * u64::from(sector_bytes)) as f64 / (self.elapsed_ns as f64 / 1e9) / 1e6
    }
}

/// Track-sized accesses on one drive: aligned to track starts, and the same sizes at
/// arbitrary starts.
#[derive(Clone, Debug, Serialize)]
pub struct TrackEfficiency {
    pub drive: String,
    pub zero_latency: bool,
    pub aligned: Totals,
    pub unaligned: Totals,
}

impl TrackEfficiency {
    /// Aligned efficiency over unaligned efficiency.
    pub fn ratio(&self) -> f64 {
        let u = self.unaligned.efficiency();
        if u == 0.0 {
            return 0.0;
        }
        self.aligned.efficiency() / u
    }
}

/// `requests` random track-sized accesses of `op` on `drive` at tracks among its first
/// `span` of capacity (1.0: the whole disk; less: shorter seeks), each started when the last
/// one ended with the arm where it left it (random seeks, random rotational phase): once at
/// the start of a random track (aligned) and once at a random sector of that track, with the
/// track's size (unaligned: it crosses into the next track). Both sequences see the same
/// tracks and the same offsets, whatever the drive.
pub fn track_efficiency(
    drive: &Drive,
    op: Op,
    span: f64,
    requests: u32,
    seed: u64,
) -> TrackEfficiency {
    assert!(requests > 0, "at least one request");
    assert!(span > 0.0 && span <= 1.0, "span within (0, 1], got {span}");
    let cap = drive.capacity_sectors();
    let within = ((cap as f64 * span) as u64).clamp(1, cap);
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let phase_ns = rng.gen_range(0..drive.period().0);
    let start = HeadState {
        cylinder: 0,
        head: 0,
        phase_ns,
    };
    let (mut head_a, mut head_u) = (start, start);
    let (mut now_a, mut now_u) = (Nanos::ZERO, Nanos::ZERO);
    let (mut aligned, mut unaligned) = (Totals::default(), Totals::default());
    for _ in 0..requests {
        let (track, len) = track_bounds(drive, rng.gen_range(0..within));
        let len = u32::try_from(len).expect("a track fits u32");
        let shift = rng.gen_range(0..u64::from(len));
        let unaligned_lba = (track + shift).min(cap - u64::from(len));
        for (lba, head, now, totals) in [
            (track, &mut head_a, &mut now_a, &mut aligned),
            (unaligned_lba, &mut head_u, &mut now_u, &mut unaligned),
        ] {
            let x = Transfer {
                op,
                lba,
                sectors: len,
            };
            let a = drive.access(*now, head, x, None, None::<&mut Pcg64Mcg>);
            totals.add(&a, len);
            (head.cylinder, head.head) = (a.end_cylinder, a.end_head);
            *now = a.end;
        }
    }
    aligned.elapsed_ns = now_a.0;
    unaligned.elapsed_ns = now_u.0;
    TrackEfficiency {
        drive: drive.id.clone(),
        zero_latency: drive.zero_latency(),
        aligned,
        unaligned,
    }
}

/// A striped array's stripe unit.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum StripeUnit {
    /// One track of the zone the stripe lies in (track-aligned RAID).
    Track,
    /// A track's worth from an arbitrary sector (a conventional array moving the same
    /// amount per disk without regard for track boundaries).
    UnalignedTrack,
    /// A fixed number of sectors.
    Sectors(u32),
}

/// Whole-stripe accesses to a RAID-0 (`parity = false`) or RAID-5 of `disks` identical
/// drives, one stripe at a time at random stripes: every disk of the stripe moves its unit
/// (a RAID-5 read leaves the parity unit alone; a full-stripe write writes it too), and the
/// stripe is done when its slowest disk is. Each disk has its own rotational phase.
#[derive(Clone, Debug, Serialize)]
pub struct StripeBandwidth {
    pub unit: StripeUnit,
    /// Mean stripe unit in KiB (a track-sized unit varies by zone).
    pub unit_kib: f64,
    /// Data moved per second (MB/s), parity not counted.
    pub mb_s: f64,
    /// Mean per-disk rotational latency per unit (ms).
    pub rotation_ms: f64,
}

/// [`StripeBandwidth`] of `requests` random whole-stripe accesses.
pub fn stripe_bandwidth(
    drive: &Drive,
    disks: u32,
    parity: bool,
    unit: StripeUnit,
    op: Op,
    requests: u32,
    seed: u64,
) -> Result<StripeBandwidth, String> {
    let min = if parity { 3 } else { 1 };
    if disks < min {
        return Err(format!(
            "a {} needs at least {min} disks, got {disks}",
            if parity { "RAID-5" } else { "RAID-0" }
        ));
    }
    if requests == 0 {
        return Err("at least one request".into());
    }
    let cap = drive.capacity_sectors();
    if let StripeUnit::Sectors(n) = unit {
        if n == 0 || u64::from(n) > cap {
            return Err(format!(
                "a stripe unit of {n} sectors does not fit on a {cap}-sector disk"
            ));
        }
    }
    let data_disks = if parity { disks - 1 } else { disks };
    // The disks a stripe access touches: a read skips the parity unit.
    let busy = if parity && op == Op::Write {
        disks
    } else {
        data_disks
    };
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut heads: Vec<HeadState> = (0..busy)
        .map(|_| HeadState {
            cylinder: 0,
            head: 0,
            phase_ns: rng.gen_range(0..drive.period().0),
        })
        .collect();
    let mut now = Nanos::ZERO;
    let (mut data_sectors, mut unit_sectors, mut rotation) = (0u64, 0u64, Span::ZERO);
    for _ in 0..requests {
        let (lba, len) = match unit {
            StripeUnit::Track => track_bounds(drive, rng.gen_range(0..cap)),
            StripeUnit::UnalignedTrack => {
                let (_, len) = track_bounds(drive, rng.gen_range(0..cap));
                (rng.gen_range(0..=cap - len), len)
            }
            StripeUnit::Sectors(n) => {
                let n = u64::from(n);
                (rng.gen_range(0..cap / n) * n, n)
            }
        };
        let sectors = u32::try_from(len).expect("a unit fits u32");
        let mut end = now;
        for head in heads.iter_mut() {
            let x = Transfer { op, lba, sectors };
            let a = drive.access(now, head, x, None, None::<&mut Pcg64Mcg>);
            (head.cylinder, head.head) = (a.end_cylinder, a.end_head);
            rotation += a.rotation;
            end = end.max(a.end);
        }
        data_sectors += len * u64::from(data_disks);
        unit_sectors += len;
        now = end;
    }
    let bytes = data_sectors * u64::from(drive.geometry().sector_bytes());
    Ok(StripeBandwidth {
        unit,
        unit_kib: unit_sectors as f64 * f64::from(drive.geometry().sector_bytes())
            / 1024.0
            / f64::from(requests),
        mb_s: bytes as f64 / (now.0 as f64 / 1e9) / 1e6,
        rotation_ms: rotation.0 as f64 / 1e6 / f64::from(requests) / f64::from(busy),
    })
}

#[cfg(test)]
mod tests;
