//! DiskSim-exact layout parameters of a drive file (`[layout]`): sparing schemes, defects,
//! zone-front space, first-block offsets, LBN-to-PBN mapping order. Absent: the plain
//! traditional layout of [`super::geometry`].

use serde::{Deserialize, Serialize};

/// Layout details beyond zones, skews and per-track/per-zone spares.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LayoutSpec {}

impl LayoutSpec {
    pub fn is_default(&self) -> bool {
        *self == LayoutSpec::default()
    }
}
