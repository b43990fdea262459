//! Array layouts: where each logical sector lives, on which disks and in which rotational
//! replicas (dissertation 2.2–2.3).
//!
//! Every layout but JBOD is an **SR-Mirror** Ds × Dr × Dm (2.3.4): the data set is striped
//! (stripe unit, default 64 KiB) over Ds·Dr *columns*; each column is a mirror set of Dm
//! disks holding the same data; on each disk every sector is stored Dr times (rotational
//! replicas). A Ds × 1 × 1 array is striping, 1 × 1 × D a D-way mirror, Ds × 1 × 2 RAID-10,
//! Ds × 1 × Dm striped mirroring, Ds × Dr × 1 an SR-Array. With D = Ds·Dr·Dm disks holding
//! a data set of one disk, each disk's share with its replicas fills 1/Ds of the disk: a
//! compact band of cylinders from the outer edge, so the seek span shrinks by Ds.
//!
//! JBOD concatenates whole disks.
//!
//! **Track-aligned** (`[array] track_aligned`, after Schindler et al.'s track-aligned
//! extents and Atropos): the stripe unit is one track, so it varies by zone. Stripe row `r`
//! is track `r` of every column (the disks are identical, so a row's units are equal), and
//! a unit never crosses a track boundary. Row `r` starts at logical sector `Ds · s_r`, where
//! `s_r` is track `r`'s first LBA: logical sector `l` lies in the row of the track holding
//! disk LBA `⌊l / Ds⌋`. No sector is skipped; a track with slipped sectors, or a zone's last
//! track cut short by its spares, is a shorter unit.

mod band;

pub use band::{Band, Placement};

use crate::drive::{Drive, Geometry};
use std::ops::Range;
use std::sync::Arc;

/// The array's shape, as configured.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Disks concatenated.
    Jbod { disks: u32 },
    /// Ds × Dr × Dm.
    SrMirror { ds: u32, dr: u32, dm: u32 },
}

impl Shape {
    pub fn disks(&self) -> u32 {
        match *self {
            Shape::Jbod { disks } => disks,
            Shape::SrMirror { ds, dr, dm } => ds * dr * dm,
        }
    }

    /// Ds × Dr × Dm (JBOD: D × 1 × 1).
    pub fn dims(&self) -> (u32, u32, u32) {
        match *self {
            Shape::Jbod { disks } => (disks, 1, 1),
            Shape::SrMirror { ds, dr, dm } => (ds, dr, dm),
        }
    }

    /// The shape's conventional name: `jbod`, `striping`, `mirror`, `raid-10`,
    /// `striped-mirror`, `sr-array` or `sr-mirror`, with its dimensions.
    pub fn describe(&self) -> String {
        match *self {
            Shape::Jbod { disks } => format!("jbod {disks}"),
            Shape::SrMirror { ds, dr, dm } => {
                let kind = match (ds, dr, dm) {
                    (_, 1, 1) => "striping",
                    (1, 1, _) => "mirror",
                    (_, 1, 2) => "raid-10",
                    (_, 1, _) => "striped-mirror",
                    (_, _, 1) => "sr-array",
                    _ => "sr-mirror",
                };
                format!("{kind} {ds}x{dr}x{dm}")
            }
        }
    }
}

/// A layout that cannot be built, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LayoutError(pub String);

/// `drive`'s geometry, when its tracks hold contiguous LBAs (spindle's own layout), as a
/// track-aligned layout needs.
pub fn track_geometry(drive: &Drive) -> Result<&Geometry, LayoutError> {
    let geo = drive.geometry();
    if geo.is_disksim() {
        return Err(LayoutError(format!(
            "track_aligned needs a drive with spindle's own layout; {}'s tracks are a \
             DiskSim layout, whose tracks need not hold contiguous LBAs",
            drive.id
        )));
    }
    Ok(geo)
}

/// A contiguous part of a host request that lies in one column and one band group, so
/// every replica of it is one run of sectors (or two, when a rotated replica wraps around
/// its track).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub column: u32,
    /// Offset in the column's data (before replication).
    pub offset: u64,
    pub sectors: u32,
}

/// A validated layout over identical drives.
#[derive(Clone, Debug)]
pub struct Layout {
    shape: Shape,
    columns: u32,
    dm: u32,
    stripe_unit: u64,
    column_sectors: u64,
    capacity: u64,
    band: Band,
    /// Track-aligned: the geometry whose tracks are the stripe units.
    tracks: Option<Arc<Geometry>>,
}

/// What a layout is built from.
#[derive(Clone, Debug)]
pub struct LayoutConfig {
    pub shape: Shape,
    pub stripe_unit_bytes: u64,
    pub placement: Placement,
    /// The data set in bytes; `None`: one disk's capacity (the dissertation's convention,
    /// "D disks hold one disk's worth of data"), or the whole array for JBOD.
    pub data_set_bytes: Option<u64>,
    /// Seeds the random placement.
    pub seed: u64,
}

impl Layout {
    pub fn new(drive: &Drive, cfg: &LayoutConfig) -> Result<Layout, LayoutError> {
        let err = |m: String| Err(LayoutError(m));
        let sector = u64::from(drive.geometry().sector_bytes());
        let disk_sectors = drive.capacity_sectors();
        let (ds, dr, dm) = cfg.shape.dims();
        if ds == 0 || dr == 0 || dm == 0 {
            return err(format!(
                "{}: every dimension must be at least 1",
                cfg.shape.describe()
            ));
        }
        if let Shape::Jbod { disks } = cfg.shape {
            let capacity = disk_sectors * u64::from(disks);
            if let Some(b) = cfg.data_set_bytes {
                if b.div_ceil(sector) > capacity {
                    return err(format!(
                        "data set of {b} bytes exceeds the {disks} disks' {} bytes",
                        capacity * sector
                    ));
                }
            }
            return Ok(Layout {
                shape: cfg.shape,
                columns: disks,
                dm: 1,
                stripe_unit: disk_sectors,
                column_sectors: disk_sectors,
                capacity,
                band: Band::identity(disk_sectors),
                tracks: None,
            });
        }
        if cfg.stripe_unit_bytes == 0 || !cfg.stripe_unit_bytes.is_multiple_of(sector) {
            return err(format!(
                "stripe unit of {} bytes is not a positive multiple of the {sector}-byte sector",
                cfg.stripe_unit_bytes
            ));
        }
        let stripe_unit = cfg.stripe_unit_bytes / sector;
        let columns = ds * dr;
        let (data_set, exact) = match cfg.data_set_bytes {
            Some(0) => return err("the data set is empty".into()),
            Some(b) => (b.div_ceil(sector), true),
            // One disk's worth, or as much of it as the replicas leave room for (a 1 x Dr
            // array loses the sectors that do not divide evenly among the replicas).
            None => (disk_sectors, false),
        };
        // Whole stripe units per column, so the striping arithmetic needs no remainders.
        let units = data_set.div_ceil(stripe_unit).div_ceil(u64::from(columns));
        let band = Band::build(
            drive,
            dr,
            cfg.placement,
            units * stripe_unit,
            exact,
            cfg.seed,
        )
        .map_err(|m| LayoutError(format!("{}: {m}", cfg.shape.describe())))?;
        let column_sectors =
            (units * stripe_unit).min(band.data_sectors() / stripe_unit * stripe_unit);
        if column_sectors == 0 {
            return err(format!(
                "{}: not one stripe unit fits on a disk",
                cfg.shape.describe()
            ));
        }
        Ok(Layout {
            shape: cfg.shape,
            columns,
            dm,
            stripe_unit,
            column_sectors,
            capacity: column_sectors * u64::from(columns),
            band,
            tracks: None,
        })
    }

    /// A track-aligned layout (module documentation): Ds × 1 × Dm whose stripe unit is one
    /// track of the zone it lies in; `cfg.stripe_unit_bytes` is not used.
    pub fn new_track_aligned(drive: &Drive, cfg: &LayoutConfig) -> Result<Layout, LayoutError> {
        let err = |m: String| Err(LayoutError(m));
        let geo = drive.geometry();
        let (ds, dr, dm) = cfg.shape.dims();
        if let Shape::Jbod { .. } = cfg.shape {
            return err("track_aligned stripes data over tracks: jbod has no stripe unit".into());
        }
        if ds == 0 || dr == 0 || dm == 0 {
            return err(format!(
                "{}: every dimension must be at least 1",
                cfg.shape.describe()
            ));
        }
        if dr != 1 {
            return err(format!(
                "{}: track_aligned needs Dr = 1 (rotational replicas place their own copies \
                 within each track)",
                cfg.shape.describe()
            ));
        }
        track_geometry(drive)?;
        let sector = u64::from(geo.sector_bytes());
        let disk_sectors = drive.capacity_sectors();
        let per_column = match cfg.data_set_bytes {
            Some(0) => return err("the data set is empty".into()),
            Some(b) => {
                let per = b.div_ceil(sector).div_ceil(u64::from(ds));
                if per > disk_sectors {
                    return err(format!(
                        "{}: data set of {b} bytes needs {per} sectors on each of {ds} \
                         columns; a disk holds {disk_sectors}",
                        cfg.shape.describe()
                    ));
                }
                per
            }
            // One disk's worth over the columns (the dissertation's convention).
            None => disk_sectors.div_ceil(u64::from(ds)),
        };
        // Whole tracks per column: up to the end of the track holding its last sector.
        let (last, len) = geo
            .track_of(per_column - 1)
            .expect("spindle's own layout has contiguous tracks");
        let column_sectors = last + len;
        let (_, first_track) = geo.track_of(0).expect("contiguous tracks");
        Ok(Layout {
            shape: cfg.shape,
            columns: ds,
            dm,
            stripe_unit: first_track,
            column_sectors,
            capacity: column_sectors * u64::from(ds),
            band: Band::identity(column_sectors),
            tracks: Some(Arc::new(geo.clone())),
        })
    }

    /// Whether the stripe unit is one track ([`Layout::new_track_aligned`]).
    pub fn track_aligned(&self) -> bool {
        self.tracks.is_some()
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn disks(&self) -> usize {
        self.shape.disks() as usize
    }

    /// Logical capacity in sectors.
    pub fn capacity_sectors(&self) -> u64 {
        self.capacity
    }

    /// Rotational replicas per sector on each disk (Dr).
    pub fn replicas(&self) -> u32 {
        self.band.replicas()
    }

    /// Disks per mirror set (Dm).
    pub fn mirrors(&self) -> u32 {
        self.dm
    }

    pub fn placement(&self) -> Placement {
        self.band.placement()
    }

    /// Columns the data is striped over, each held by a mirror set of Dm disks.
    pub fn columns(&self) -> u32 {
        self.columns
    }

    /// Data sectors of each column (before replication).
    pub fn column_sectors(&self) -> u64 {
        self.column_sectors
    }

    /// The mirror set holding `column`.
    pub fn disks_of(&self, column: u32) -> Range<usize> {
        let first = (column * self.dm) as usize;
        first..first + self.dm as usize
    }

    /// The band: where a column's data and its replicas lie on each of its disks.
    pub fn band(&self) -> &Band {
        &self.band
    }

    /// The logical sector where `piece` begins (the inverse of [`Layout::pieces`]).
    pub fn logical_of(&self, piece: &Piece) -> u64 {
        if let Some(geo) = &self.tracks {
            let (start, len) = geo
                .track_of(piece.offset)
                .expect("validated: contiguous tracks");
            let cols = u64::from(self.columns);
            return start * cols + u64::from(piece.column) * len + (piece.offset - start);
        }
        let unit = piece.offset / self.stripe_unit;
        let within = piece.offset % self.stripe_unit;
        (unit * u64::from(self.columns) + u64::from(piece.column)) * self.stripe_unit + within
    }

    /// The column holding logical sector `lba` and its offset in the column's data.
    #[inline]
    pub fn column_offset(&self, lba: u64) -> (u32, u64) {
        if let Some(geo) = &self.tracks {
            // The row of the track holding disk LBA ⌊lba / Ds⌋ starts at Ds × its first LBA.
            let cols = u64::from(self.columns);
            let (unit_start, unit) = geo
                .track_of(lba / cols)
                .expect("validated: contiguous tracks");
            let rel = lba - unit_start * cols;
            let column = u32::try_from(rel / unit).expect("column fits u32");
            assert!(column < self.columns, "a row holds one unit per column");
            return (column, unit_start + rel % unit);
        }
        let unit = lba / self.stripe_unit;
        let within = lba % self.stripe_unit;
        let cols = u64::from(self.columns);
        let column = u32::try_from(unit % cols).expect("column fits u32");
        (column, (unit / cols) * self.stripe_unit + within)
    }

    /// Splits `sectors` sectors from logical `lba` into pieces, appended to `out` in order.
    pub fn pieces(&self, lba: u64, sectors: u32, out: &mut Vec<Piece>) {
        assert!(
            lba + u64::from(sectors) <= self.capacity,
            "request beyond the layout"
        );
        let (mut lba, mut left) = (lba, u64::from(sectors));
        while left > 0 {
            let (column, offset) = self.column_offset(lba);
            let (unit_start, unit) = match &self.tracks {
                Some(geo) => geo.track_of(offset).expect("validated: contiguous tracks"),
                None => (
                    offset / self.stripe_unit * self.stripe_unit,
                    self.stripe_unit,
                ),
            };
            let within = offset - unit_start;
            let mut len = left.min(unit - within);
            len = len.min(self.band.contiguous(offset, len));
            debug_assert!(len > 0 && offset + len <= self.column_sectors);
            out.push(Piece {
                column,
                offset,
                sectors: u32::try_from(len).expect("piece fits u32"),
            });
            lba += len;
            left -= len;
        }
    }
}

#[cfg(test)]
mod tests;
