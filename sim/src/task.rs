//! What a task is: its kind, the stream it occupies on each rank of its
//! group, its place in the schedule, and the work it does.

use crate::ids::{GroupId, WorkId};
use serde::{Deserialize, Serialize};
pub use timeline::{CommClass, StreamKind, TaskKind};

/// One node of the task graph. 24 bytes (a test checks it); millions of these exist at 3072 GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub kind: TaskKind,
    pub stream: StreamKind,
    /// Model chunk (virtual stage index on this rank), 0 unless interleaved.
    pub chunk: u16,
    /// Pipeline stage of the ranks that run it.
    pub stage: u32,
    /// Microbatch, or `u32::MAX` for per-iteration tasks (DP all-reduce, optimizer).
    pub microbatch: u32,
    /// Training iteration (0 unless several consecutive iterations are simulated, as
    /// ZeRO-Offload's delayed parameter update needs); fits the struct's padding.
    pub iteration: u16,
    /// The ranks that run it; the task occupies `stream` on each.
    pub group: GroupId,
    /// What it does (its cost is computed once per work).
    pub work: WorkId,
}

/// Microbatch value of tasks that are not tied to one microbatch.
pub const NO_MICROBATCH: u32 = u32::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_stays_24_bytes() {
        assert_eq!(std::mem::size_of::<Task>(), 24);
    }
}
