//! The free-space index (being written).
