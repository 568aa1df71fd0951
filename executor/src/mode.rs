//! How the executor runs compute tasks: their real kernels, or spins of
//! the simulated duration.

use serde::Serialize;

/// How compute tasks run: their real kernels, or spins of the simulated duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionMode {
    /// Every task runs its real kernels (cuBLAS GEMMs, memory-bound kernels as
    /// device copies of their bytes); ranks folded onto one GPU contend for it.
    Real,
    /// Every task with a nonzero simulated duration is one single-block
    /// spin on `%globaltimer` of exactly that duration (communication
    /// included: the folded ranks have no real network between them), so ranks
    /// do not contend and the run checks schedule, dependency and overlap
    /// semantics.
    Synthetic,
}

impl ExecutionMode {
    /// The name written to `executor_mode` in the Timeline header.
    pub fn name(self) -> &'static str {
        match self {
            ExecutionMode::Real => "real",
            ExecutionMode::Synthetic => "synthetic",
        }
    }

    /// Parses `real` or `synthetic`.
    pub fn parse(text: &str) -> Option<ExecutionMode> {
        match text {
            "real" => Some(ExecutionMode::Real),
            "synthetic" => Some(ExecutionMode::Synthetic),
            _ => None,
        }
    }
}
