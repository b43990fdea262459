//! Workloads: synthetic generators and trace replay, producing host requests for a driver.

pub mod synthetic;
pub mod trace;
