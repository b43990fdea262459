//! Drive model: geometry, seek curves, mechanics and the built-in drive library.
//!
//! A drive file ([`DriveSpec`]) is validated once into a [`Drive`]: integer-nanosecond
//! timings, a dense seek table and a zone table. A `Drive` is immutable and shared by every
//! disk of an array; per-disk state (head position, rotational phase, noise RNG) lives with
//! the disk.

pub mod cache_spec;
pub mod controller;
pub mod disksim;
pub mod geometry;
pub mod layout_spec;
pub mod library;
pub mod mech;
pub mod power;
mod sector_loop;
pub mod seek;
pub mod spec;

pub use cache_spec::{CacheSpec, ExtraWriteDisconnect};
pub use controller::{Controller, Service};
pub use geometry::{Chs, Geometry};
pub use layout_spec::LayoutSpec;
pub use mech::{Access, Drive, HeadState, Run, Target, Transfer};
pub use power::{
    LowPower, PowerClock, PowerCommand, PowerModel, PowerPolicy, PowerSpec, PowerTotals,
};
pub use seek::SeekCurve;
pub use spec::{DriveSpec, NoiseSpec, SeekSpec, SkewUnit, ZoneSpec};

/// A drive file that cannot be used, naming the offending key.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error("{key}: {msg}")]
    Invalid { key: String, msg: String },
    /// [`DriveError::Invalid`] found at a line of the drive file.
    #[error("line {line}: {key}: {msg}")]
    AtLine {
        line: usize,
        key: String,
        msg: String,
    },
    #[error("{0}")]
    Parse(String),
    #[error("unknown drive {name:?}; built-in drives: {known}")]
    Unknown { name: String, known: String },
}

/// Parses and validates a drive file's text.
///
/// Errors carry the line of the offending key when the file has it.
pub fn parse_drive(text: &str) -> Result<Drive, DriveError> {
    let spec: DriveSpec =
        serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
            let key = e.path().to_string();
            let line = e
                .inner()
                .span()
                .map(|s| crate::config::line_of(text, s.start));
            let msg = e.inner().message().to_string();
            match line {
                Some(line) if key != "." => DriveError::AtLine { line, key, msg },
                Some(line) => DriveError::Parse(format!("line {line}: {msg}")),
                None if key != "." => DriveError::Invalid { key, msg },
                None => DriveError::Parse(msg),
            }
        })?;
    Drive::from_spec(&spec).map_err(|e| match e {
        DriveError::Invalid { key, msg } => match crate::config::key_line(text, &key) {
            Some(line) => DriveError::AtLine { line, key, msg },
            None => DriveError::Invalid { key, msg },
        },
        other => other,
    })
}

/// A built-in drive by id.
pub fn builtin_drive(id: &str) -> Result<Drive, DriveError> {
    match library::builtin_spec(id) {
        Some(text) => parse_drive(text),
        None => Err(DriveError::Unknown {
            name: id.to_string(),
            known: library::builtin_ids().collect::<Vec<_>>().join(", "),
        }),
    }
}
