//! Everything that can stop `clustersim execute`, each naming what was being
//! done. GPU failures are the `gpu` crate's [`GpuError`] (the cudarc wrappers
//! the executor shares with calibrate); the executor adds its own no-driver
//! line, unsupported layouts, plan-check failures and a timed iteration the
//! host could not issue within its start gate.

use gpu::GpuError;

/// Why a task graph could not be executed.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    /// No usable CUDA driver or device; one line for the user.
    #[error("{0}")]
    NoGpu(String),
    /// The plan asks for something this executor does not run yet (e.g. NCCL
    /// across several GPUs); the string says what and what to do instead.
    #[error("cannot execute this plan: {0}")]
    Unsupported(String),
    /// The execution plan violates an invariant (a bug in planning or
    /// lowering): every problem is listed.
    #[error("the execution plan is inconsistent: {}", problems.join("; "))]
    InvalidPlan { problems: Vec<String> },
    /// The host was still issuing the timed iteration when the start gate
    /// opened, so the GPU ran part of it while the host issued: its times
    /// would include host issue time. Nothing was recorded.
    #[error("{}", crate::gate::host_outran_gate_message(*issue_ns, *gate_ns, *waited, *tasks, *first_task))]
    HostOutranGate {
        issue_ns: u64,
        gate_ns: u64,
        /// Tasks the GPU reached before the host had finished issuing them.
        waited: usize,
        tasks: usize,
        first_task: u32,
    },
    /// The simulator could not order the graph (a cycle: a lowering bug).
    #[error("cannot order the task graph: {0}")]
    Graph(String),
    /// A CUDA, cuBLAS or NVRTC call failed, or a library is missing.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

impl ExecuteError {
    /// True when the cause is the machine or the input, not a bug or a
    /// failing GPU call: no driver, a missing library, an unsupported plan, a
    /// host too slow or busy to issue the iteration within its gate.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            ExecuteError::NoGpu(_)
                | ExecuteError::Unsupported(_)
                | ExecuteError::HostOutranGate { .. }
                | ExecuteError::Gpu(GpuError::MissingLibrary { .. })
        )
    }
}
