//! The representative replica of a symmetric simulation: replica 0's
//! ranks, which stand for every data-parallel replica.

use crate::ids::Rank;

/// The ranks of replica 0 (data index 0 of the dp-cp group): `rank =
/// stage·t·D + data_index·t + tensor_index` (Megatron's rank order: `sim::placement::Placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Representative {
    pub tensor_parallel: u32,
    /// d·cp.
    pub replicas: u32,
}

impl Representative {
    /// Whether `rank` belongs to replica 0.
    #[inline]
    pub fn contains(self, rank: Rank) -> bool {
        (rank.0 / self.tensor_parallel).is_multiple_of(self.replicas)
    }
}
