//! # goodput — from one iteration to the whole run
//!
//! How long, how much energy and how much money to train a model on a number
//! of tokens, on a cluster, with the failures it will have. The simulator
//! gives the failure-free time of one iteration; this crate adds what a long
//! run adds to it:
//!
//! - failures per component, each rate with its public source, summed over
//!   the job's components ([`failure_rates`]);
//! - the checkpoint's save and restore times from the bytes each rank holds
//!   and the storage's bandwidths, synchronous or asynchronous
//!   ([`checkpoint`]);
//! - the recovery policy: full restart, hot spares, in-memory peer
//!   checkpoints, continuing on fewer replicas until repair ([`recovery`]);
//! - the expected wall-clock time, exactly, for exponential failures, and its
//!   decomposition into work, checkpoints, lost work and restarts
//!   ([`closed_form`]), checked against a seeded Monte-Carlo that also gives
//!   its spread ([`monte_carlo`]);
//! - the checkpoint interval that minimizes it, beside Young's and Daly's
//!   ([`interval`]);
//! - energy, cost and emissions ([`energy`]);
//! - a [`RunPlan`] in, a [`RunPlanReport`] out ([`plan`]), and series against
//!   interval and GPU count for charts ([`sweep`]).
//!
//! Times are `f64` seconds (`_s`) throughout: a run is weeks long and its
//! quantities are expectations, not events. The output is a pure function
//! of the inputs and the seed; nothing iterates a hash map.
//!
//! ```
//! use goodput::closed_form::{expected_run, Downtime, RunModel};
//!
//! // 30 days of work, checkpoints of 60 s every hour, a failure every 3 h
//! // on average, 20 minutes down per failure.
//! let run = expected_run(&RunModel {
//!     work_s: 30.0 * 86_400.0,
//!     interval_s: 3600.0,
//!     checkpoint_s: 60.0,
//!     failures_per_s: 1.0 / (3.0 * 3600.0),
//!     downtime: Downtime { immune_s: 600.0, exposed_s: 600.0 },
//!     durability_delay_s: 0.0,
//! })
//! .unwrap();
//! assert!(run.goodput > 0.6 && run.goodput < 0.9);
//! ```

pub mod checkpoint;
pub mod closed_form;
pub mod defaults;
pub mod energy;
pub mod error;
pub mod failure_distribution;
pub mod failure_rates;
pub mod interval;
pub mod monte_carlo;
pub mod plan;
pub mod recovery;
pub mod sweep;

pub use error::{GoodputError, InputProblem};
pub use plan::{
    evaluate, expected_time, IntervalChoice, MonteCarloSpec, RunPlan, RunPlanReport, TrainingTarget,
};
