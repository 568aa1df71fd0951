//! # studies — many simulations, one question
//!
//! Each study runs the simulator (`sim`) over many scenarios and turns the
//! results into an answer:
//! - [`sweep`]: every valid layout (t, p, d, b, schedule, v, recompute) of a
//!   model on N GPUs, memory-filtered, simulated in parallel (rayon), ranked;
//!   shardable, with shards that merge into the unsharded output byte for byte;
//! - [`fit`]: a few physical factors (GEMM rate, host costs, achieved
//!   bandwidths) learned from a user's measured runs, with each case's
//!   leave-one-out error (`clustersim fit`);
//! - [`kineto`]: a PyTorch profiler trace of one rank as GPU seconds per
//!   iteration by kernel class (`clustersim import-trace`);
//! - [`validation`]: published measurements (a dev-set JSON file) run through
//!   the simulator, predicted against published, with a reason for every
//!   figure that cannot be predicted; vTrain's single-node ground truth (a
//!   CSV of 1,440 measured runs) with its error table per (hidden size, t);
//! - [`nccl_tests`]: a collective's predicted time, algbw and busbw over a
//!   size range, in nccl-tests' columns (`clustersim collective`);
//! - [`bubble_chart`]: the schedules `plot bubble` simulates, each point's
//!   scenario and its analytical curve;
//! - [`max_model`]: the largest model of a family that fits in memory under
//!   ZeRO-Offload (the paper's Figure 7 question).
//!
//! ```
//! use studies::sweep::{enumerate, SweepSpace};
//! let space = SweepSpace::new("tiny", "dgx-a100", 4, 8);
//! let enumeration = enumerate(&space).unwrap();
//! assert!(!enumeration.candidates.is_empty());
//! ```

pub mod bubble_chart;
pub mod fit;
pub mod kineto;
pub mod max_model;
pub mod nccl_tests;
pub mod run_plan_input;
pub mod sweep;
pub mod validation;
