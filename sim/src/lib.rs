//! # sim — from a scenario to a timeline
//!
//! The simulator's core, in the order data flows through it:
//! 1. [`scenario`]: model + topology + layout + schedule + training options
//!    ([`scenario::TrainingOptions`], declared once), validated (every
//!    problem reported at once, naming the field);
//! 2. [`placement`]: Megatron rank order (tensor innermost, then data, then pipeline);
//! 3. [`schedule`]: GPipe, 1F1B and interleaved 1F1B as per-rank action lists
//!    (data, with a compact text form that parses back);
//! 4. [`lowering`]: actions → a program of steps (pipeline or ZeRO-Offload)
//!    → tasks → edges: a sealed [`task_graph::TaskGraph`] of compute,
//!    tensor/pipeline/data-parallel communication, optimizer, PCIe and CPU
//!    tasks with data-dependency and per-stream program-order edges;
//! 5. [`cost`]: the duration of every distinct piece of work, from the
//!    calibration profile (the `profile` crate; measured entries win), the
//!    topology and, under `--contention`, the fabric of [`network`];
//! 6. [`engine`]: a deterministic discrete-event simulation in integer
//!    nanoseconds producing a `timeline::Timeline`;
//! 7. metrics (iteration time, TFLOP/s, bubble fraction, exposed
//!    communication) are computed from the Timeline alone by the `timeline`
//!    crate; [`memory`] adds memory per GPU.
//!
//! Studies over many simulations (sweeps, validation, the largest model that
//! fits) live in the `studies` crate.
//!
//! ```
//! use sim::scenario::ScenarioFile;
//! let scenario = ScenarioFile::tiny_example().resolve().unwrap();
//! let report = sim::simulate(&scenario).unwrap();
//! assert!(report.metrics.iteration_time_s > 0.0);
//! ```

pub mod checkpoint_size;
pub mod cost;
/// The event engine and the fabric's fair sharing (the `engine` crate).
pub use engine;
pub use engine::event_queue;
pub mod host_memory;
mod lowered_run;
pub mod lowering;
pub mod memory;
pub mod network;
pub mod placement;
pub mod plan;
pub mod rank_spread;
mod replicated_run;
mod replicated_view;
/// The training scenario and its validation (the `scenario` crate).
pub use scenario;
pub use schedules as schedule;
mod simulate;
mod simulated_run;
pub mod slow_link;
mod slow_link_twins;
pub mod slow_uplink;
pub mod straggler;
mod summary_run;
pub mod symmetry;
pub mod symmetry_exceptions;
pub mod throughput;
mod twin_durations;
mod twin_ends;
/// The task DAG (the `taskgraph` crate): ids, tasks, columns, the graph, the replica map.
pub use taskgraph::{ids, replica_map, task, task_columns, task_graph};
#[cfg(test)]
mod task_estimate_tests;
#[cfg(test)]
mod task_graph_tests;
mod timeline_view;

/// NCCL's collectives in closed form (the `collectives` crate).
pub use collectives as collective;
/// Simulated time (the `timeline` crate's integer nanoseconds).
pub use timeline::time;

pub use summary_run::{merges_tensor_ranks, simulate_summary, RunSummary};
pub use symmetry::{Expansion, SimulationMode};
pub use timeline_view::TimelineSelection;

pub use simulate::{
    build_graph, run_graph, run_graph_with_stragglers, simulate, simulate_with,
    simulate_with_stragglers, timeline_from_spans, uniform_costs, LinkLoad, SimulationError,
    SimulationReport,
};

/// A degree written in a test: `n`, which must not be 0.
#[cfg(test)]
pub(crate) fn degree(n: u32) -> std::num::NonZeroU32 {
    std::num::NonZeroU32::new(n).expect("a test's degree is at least 1")
}

/// [`degree`] as a `NonZeroU64`, as the `models` formulas take it.
#[cfg(test)]
pub(crate) fn nz(n: u64) -> std::num::NonZeroU64 {
    std::num::NonZeroU64::new(n).expect("a test's degree is at least 1")
}
