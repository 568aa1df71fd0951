//! Dense integer ids. Each indexes a side table held in a `Vec`.

use serde::{Deserialize, Serialize};

macro_rules! dense_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

dense_id!(
    /// A GPU's global rank, in Megatron order (tensor innermost, then data, then pipeline).
    Rank
);
dense_id!(
    /// A task in the task graph (equal to its petgraph node index).
    TaskId
);
dense_id!(
    /// A set of ranks a task runs on (one rank, a tensor-parallel group, a data-parallel group).
    GroupId
);
dense_id!(
    /// A distinct piece of work (what a task does); many tasks share one, so costs are computed once.
    WorkId
);
