//! Per-disk schedulers.
