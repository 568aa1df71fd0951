//! # Sweeps: every valid layout of a model on N GPUs, simulated and ranked
//!
//! A sweep answers "which layout is best for N GPUs?" in five steps:
//! 1. [`space`]: the sweep's own rules generate (t, cp, p, d, b, schedule, v,
//!    recompute, ZeRO stage, precision) tuples — t·cp·p·d = N with cp from a
//!    list (default {1}), t at most a node unless cross-node tensor
//!    parallelism is allowed, b a power of two up to a maximum, v up to a
//!    maximum, ZeRO stages and precisions from lists (default: the shared
//!    options' own);
//! 2. [`enumerate`]: each tuple becomes a [`sim::scenario::ScenarioFile`] and
//!    [`sim::scenario::ScenarioFile::resolve`] alone decides validity; the
//!    survivors, in generation order, are the *candidates*, numbered 0, 1, …;
//! 3. [`shard`]: `--shard i/n` keeps candidate k when k mod n = i;
//! 4. [`run`]: the memory model drops layouts that do not fit (without
//!    simulating them); the rest are simulated in parallel (rayon), or with
//!    `--prune` only those whose lower bound could rank them in the top k
//!    ([`prune`]);
//! 5. [`ranking`]: results ordered by iteration time, ties broken by candidate
//!    index, and a sentence on why the best beats the runner-up.
//!
//! [`output`] is the JSON document a sweep or a shard writes (and its CSV
//! form); [`merge`] combines shard documents into exactly the document the
//! unsharded sweep writes. Nothing here iterates a `HashMap` into output.
//!
//! ```
//! use studies::sweep::{enumerate, run_candidates, MemoryRule, SweepOutput, SweepSpace};
//! let space = SweepSpace::new("tiny", "dgx-a100", 8, 16);
//! let enumeration = enumerate(&space).unwrap();
//! let memory = MemoryRule::of(&space);
//! let outcome = run_candidates(&enumeration.candidates, memory, &|_, _| {}).unwrap();
//! let output = SweepOutput::new(&space, &enumeration, None, outcome);
//! assert!(output.results[0].samples_per_s > 0.0);
//! ```

pub mod enumerate;
pub mod memory_budget;
pub mod merge;
pub mod output;
pub mod prune;
pub mod ranking;
pub mod run;
pub mod shard;
pub mod space;

#[cfg(test)]
mod dimensions_tests;
#[cfg(test)]
mod enumerate_tests;
#[cfg(test)]
mod prune_tests;
#[cfg(test)]
mod sweep_tests;

pub use enumerate::{enumerate, Enumeration, ValidCandidate};
pub use merge::merge;
pub use output::{SweepCounts, SweepOutput, SWEEP_SCHEMA_VERSION};
pub use prune::PrunedRecord;
pub use ranking::{explain_best, rank};
pub use run::{
    run_candidates, run_candidates_pruned, run_candidates_with, DropReason, DroppedRecord,
    MemoryRule, RunOutcome, SweepRecord,
};
pub use shard::Shard;
pub use space::{Candidate, SweepSpace};

use sim::scenario::ScenarioError;

/// Problems with a sweep, its shards or its files.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A sweep constraint is out of range (names the flag's key).
    #[error("{key}: {message}")]
    Constraint { key: &'static str, message: String },
    /// The model, topology or profile of the sweep does not resolve.
    #[error("the sweep's model, topology, profile or shared options are invalid: {0}")]
    Base(#[source] ScenarioError),
    /// More GPUs than the topology has.
    #[error("--gpus {gpus}: topology '{topology}' has only {available} GPUs")]
    TooManyGpus {
        gpus: u32,
        topology: String,
        available: u64,
    },
    /// Every generated tuple failed validation.
    #[error("no layout of {gpus} GPUs is valid for {model} with global batch {global_batch} ({examined} layouts examined; rejections by field: {reasons})")]
    NoValidLayout {
        gpus: u32,
        model: String,
        global_batch: u32,
        examined: usize,
        /// "field × count, …", most frequent first.
        reasons: String,
    },
    /// A shard specification that is not `i/n` with i < n.
    #[error("--shard {text}: expected i/n with 0 ≤ i < n (e.g. 3/16)")]
    ShardSyntax { text: String },
    /// The engine found a cycle: a lowering bug, reported with its layout.
    #[error("simulating {layout} deadlocked: {message}")]
    Deadlock { layout: String, message: String },
    /// A valid layout the simulator cannot run: durations beyond integer
    /// nanoseconds or a fabric it cannot build (the user's sizes or profile).
    #[error("cannot simulate {layout}: {message}")]
    Simulation { layout: String, message: String },
    /// Shard files that do not form one complete sweep.
    #[error("cannot merge: {0}")]
    Merge(String),
    /// Some layouts need more memory to simulate than the machine has free.
    #[error("{count} layout(s) of the sweep cannot be simulated on this machine, e.g. {layout}: {message}")]
    HostMemory {
        layout: String,
        count: usize,
        message: String,
    },
    /// Reading or parsing a sweep JSON file.
    #[error("{path}: {message}")]
    File { path: String, message: String },
}
