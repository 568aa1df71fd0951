//! A number with its provenance: where each figure of a profile comes from.

use serde::{Deserialize, Serialize};

/// Where a number comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Timed on real hardware by `clustersim calibrate`.
    Measured,
    /// A datasheet figure or a published measurement (the note cites it).
    Datasheet,
    /// An assumption or derivation (the note says which).
    Model,
}

/// A number with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quantity {
    pub value: f64,
    pub source: Source,
    pub note: String,
}
