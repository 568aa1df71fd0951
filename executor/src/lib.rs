//! # executor — run the simulator's task graph on real GPUs
//!
//! `clustersim execute` builds the same sealed task graph `simulate` replays
//! ([`sim::build_graph`]), turns it into an [`ExecutionPlan`] (pure data,
//! checked on a CPU) and issues it on a GPU, recording one CUDA event pair per
//! task. The result is a [`timeline::Timeline`] in the simulator's format
//! with `producer = executor`, so `clustersim compare` can check the
//! simulator against the hardware.
//!
//! | step | module |
//! |---|---|
//! | graph → plan: streams, cross-stream waits, launches, issue order | [`plan`], [`launches`] |
//! | plan invariants (every task once, every cross-stream edge a wait, …) | [`check`] |
//! | the synthetic spin kernel (on `%globaltimer`) | [`spin`] |
//! | the start gate's length; a host that outran it fails the run | [`gate`] |
//! | `CUDA_DEVICE_MAX_CONNECTIONS`: set before the driver starts, checked after | [`queues`] |
//! | streams, scratch, event timing | [`runtime`] |
//! | measured spans → Timeline | [`record`] |
//!
//! What it shares with calibration comes from the `gpu` crate: library checks
//! and opening the device ([`gpu::detect`]), CUDA events with timing enabled
//! ([`gpu::timing`]), the cuBLAS GEMM call and its scratch ([`gpu::gemm`]),
//! and GPU errors ([`gpu::GpuError`], wrapped as [`ExecuteError::Gpu`]).
//! Without a CUDA driver everything but [`execute`] works, and [`execute`]
//! says so in one line ([`ExecuteError::NoGpu`]).
//!
//! ## One GPU, many ranks
//!
//! Ranks are folded onto the available devices in contiguous blocks (with
//! `--gpus 1`, the default, every rank shares GPU 0), each rank on its own
//! CUDA streams (one per (rank, [`sim::task::StreamKind`])). Two honest modes,
//! written to the header's `executor_mode`:
//! - `real`: tasks run their real kernels (cuBLAS GEMMs of the pass's shapes,
//!   memory-bound kernels as copies of their bytes); ranks sharing a GPU
//!   contend for it, and communication between ranks on one GPU is a
//!   device-to-device copy of the same bytes;
//! - `synthetic`: every task is a single-block spin on the GPU's nanosecond
//!   timer (`%globaltimer`) of the simulator's duration for it, so ranks do
//!   not contend: the run checks the schedule, dependency and overlap
//!   semantics on hardware. Every pipeline schedule the simulator has
//!   (GPipe, 1F1B, interleaved) plans and passes [`check()`].
//!
//! How the run was done (device, ranks per GPU, the spin's timer and its
//! step, the gate, hardware queues, what stood in for communication) is
//! written under `header.scenario["executor"]`.
//!
//! ## Running the GPU tests
//!
//! The tests that need a GPU skip with a message without a CUDA driver. They
//! run in-process after other CUDA use, so start them with
//! `CUDA_DEVICE_MAX_CONNECTIONS=32` in the environment (see [`queues`]);
//! they fail, saying so, without it. They find the repository's `examples/`
//! from `CLUSTERSIM_REPO`, else the current directory, else the source tree.
//!
//! ## Not yet
//!
//! Spreading ranks over several GPUs plans NCCL launches
//! ([`Launch::Collective`]) but the runtime refuses such plans with
//! [`ExecuteError::Unsupported`].
//!
//! ```
//! use executor::{prepare, ExecuteOptions, ExecutionMode};
//! let scenario = sim::scenario::ScenarioFile::tiny_example().resolve().unwrap();
//! let options = ExecuteOptions { mode: ExecutionMode::Synthetic, ..Default::default() };
//! let prepared = prepare(&scenario, &options).unwrap(); // no GPU needed
//! assert_eq!(prepared.plan.tasks.len(), prepared.graph.task_count());
//! ```

pub mod check;
mod error;
pub mod gate;
pub mod launches;
pub mod mode;
pub mod plan;
pub mod queues;
pub mod record;
pub mod runtime;
pub mod spin;
#[cfg(test)]
mod tests;

pub use check::{check, PlanCheck};
pub use error::ExecuteError;
pub use launches::{CollectiveKind, Launch};
pub use plan::{plan, ExecutionMode, ExecutionPlan, PlannedTask, StreamSlot};
pub use runtime::{execute, prepare, require_driver, ExecuteOptions, Execution, Prepared};
