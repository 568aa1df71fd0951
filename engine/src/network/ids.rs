//! Dense ids of the fabric's directed links and of flows, indexing
//! per-link and per-flow tables.

use serde::{Deserialize, Serialize};

/// A directed link of the fabric; indexes per-link tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LinkId(pub u32);

/// A flow, numbered in start order; indexes per-flow tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FlowId(pub u32);

impl LinkId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl FlowId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
