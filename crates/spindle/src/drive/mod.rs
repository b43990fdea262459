//! Drive model: geometry, seek curves, mechanics and the built-in drive library.

pub mod library;
pub mod spec;

pub use spec::{DriveSpec, NoiseSpec, SeekSpec, SkewUnit, ZoneSpec};
