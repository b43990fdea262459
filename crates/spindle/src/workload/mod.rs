//! Workloads: synthetic generators (closed and open loop, process groups) and trace replay,
//! producing host requests for a driver.

pub mod process_groups;
pub mod synthetic;
pub mod trace;
