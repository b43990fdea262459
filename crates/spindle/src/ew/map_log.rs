//! The map log (being written).
