//! The representative replica of a symmetric simulation: replica 0's
//! ranks, which stand for every data-parallel replica (with exceptions, the
//! first few replicas: replica 0 for the alike ones, the others each for
//! itself).

use crate::ids::Rank;

/// The ranks of replica 0 (data index 0 of the dp-cp group): `rank =
/// stage·t·D + data_index·t + tensor_index` (Megatron's rank order: `sim::placement::Placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Representative {
    pub tensor_parallel: u32,
    /// d·cp.
    pub replicas: u32,
    /// The replicas lowered (data indices 0..lowered): 1 in a symmetric
    /// run, more when replicas that differ are lowered beside replica 0
    /// (`sim::symmetry`'s exceptions).
    pub lowered: u32,
}

impl Representative {
    /// Whether `rank` belongs to a lowered replica (replica 0 in a
    /// symmetric run).
    #[inline]
    pub fn contains(self, rank: Rank) -> bool {
        self.data_index(rank) < self.lowered
    }

    /// The data index (replica) of `rank`.
    #[inline]
    pub fn data_index(self, rank: Rank) -> u32 {
        (rank.0 / self.tensor_parallel) % self.replicas
    }

    /// The twin in replica `copy` of `rank`, a rank of replica 0.
    #[inline]
    pub fn in_copy(self, rank: Rank, copy: u32) -> Rank {
        Rank(rank.0 + copy * self.tensor_parallel)
    }

    /// `rank`'s replica and its twin in replica 0 (the rank
    /// [`Representative::in_copy`] moves there).
    #[inline]
    pub fn twin_in_replica_0(self, rank: Rank) -> (u32, Rank) {
        let copy = self.data_index(rank);
        (copy, Rank(rank.0 - copy * self.tensor_parallel))
    }
}
