//! Lowering: a schedule on a placement becomes a task graph, in three phases.
//!
//! 1. **Actions → program** ([`pipeline::program`], or [`offload::program`]
//!    under ZeRO-Offload): the schedule's per-stage action lists, walked per
//!    tensor-parallel group, become [`program::Step`]s in issue order (passes,
//!    gradient buckets, transfers, collectives, optimizer work) with the
//!    dependencies between them. Everything a training option changes is
//!    decided here, as data.
//! 2. **Program → tasks** ([`tasks::emit`]): each step becomes its tasks,
//!    numbered in step order; each step's tasks are a typed [`tasks::TaskRange`].
//! 3. **Tasks → edges** ([`edges::connect`]): program order on every (rank,
//!    stream), and each dependency between steps as edges between the tasks
//!    that share a rank.
//!
//! The engine needs nothing else: stream exclusivity is in the edges.
//!
//! ```
//! use sim::scenario::ScenarioFile;
//! let scenario = ScenarioFile::tiny_example().resolve().unwrap();
//! let plan = sim::plan::Plan::of(&scenario);
//! let graph = sim::lowering::lower(&scenario, &plan);
//! assert!(graph.check_acyclic().is_ok());
//! ```

pub mod edges;
mod end_context;
mod gradient_sums;
mod iteration_end;
pub mod offload;
mod optimizer_steps;
mod pair_overlap;
mod pass_lowering;
pub mod passes;
pub mod pipeline;
mod pipeline_sends;
pub mod post_validation;
pub mod program;
pub mod sharded;
mod stage_walk;
pub mod tasks;
mod walk_context;
mod zeropp;

use crate::plan::Plan;
use program::TensorRanks;
use scenario::Scenario;
use taskgraph::task_graph::{TaskGraph, TaskGraphBuilder};

/// Builds the task graph of a scenario's iteration (or iterations): every replica.
pub fn lower(scenario: &Scenario, plan: &Plan) -> TaskGraph {
    lower_replicas(scenario, plan, None, TensorRanks::Each).0
}

/// Builds the task graph of replica 0 alone (data index 0 of the dp-cp
/// group), its collectives across replicas still over their whole groups:
/// the graph [`crate::symmetry`] simulates in place of every replica. Only
/// for scenarios whose replicas lower alike
/// ([`crate::symmetry::replicas_alike_in`]).
pub fn lower_representative(scenario: &Scenario, plan: &Plan) -> TaskGraph {
    debug_assert!(crate::symmetry::replicas_alike_in(scenario, plan).is_ok());
    lower_replicas(scenario, plan, Some(plan.representative), TensorRanks::Each).0
}

/// Builds the task graph of the first `lowered.lowered` replicas (data
/// indices 0..lowered), program order on their ranks only, collectives
/// across replicas over their whole groups: replica 0 standing for the
/// alike replicas and the others holding slow ranks
/// ([`crate::symmetry_exceptions`]). No replica map: a Timeline of such a
/// run comes from full expansion.
pub fn lower_with_exceptions(
    scenario: &Scenario,
    plan: &Plan,
    lowered: crate::symmetry::Representative,
) -> TaskGraph {
    debug_assert!(lowered.lowered < scenario.layout.replicas());
    lower_replicas(scenario, plan, Some(lowered), TensorRanks::Each).0
}

/// The representative replica ([`lower_representative`]) with each tensor
/// group's per-rank tasks merged into one task on the group
/// ([`program::TensorRanks::Merged`]), and how many merged tasks it holds
/// (each stands for t): for a run that reports only its summary
/// (`crate::summary_run`). No replica map: its ids are not full expansion's.
pub fn lower_representative_merged(scenario: &Scenario, plan: &Plan) -> (TaskGraph, usize) {
    debug_assert!(crate::symmetry::replicas_alike_in(scenario, plan).is_ok());
    debug_assert!(scenario.options.offload.is_none());
    lower_replicas(
        scenario,
        plan,
        Some(plan.representative),
        TensorRanks::Merged,
    )
}

fn lower_replicas(
    scenario: &Scenario,
    plan: &Plan,
    representative: Option<crate::symmetry::Representative>,
    tensor_ranks: TensorRanks,
) -> (TaskGraph, usize) {
    let lowered_replicas = match representative {
        Some(representative) => representative.lowered,
        None => scenario.layout.replicas(),
    };
    let mut builder = TaskGraphBuilder::default();
    if tensor_ranks == TensorRanks::Each
        && representative.is_some_and(|representative| representative.lowered == 1)
    {
        builder.log_replicas();
    }
    let mut program = match scenario.options.offload {
        None => pipeline::program(scenario, plan, &mut builder, lowered_replicas, tensor_ranks),
        Some(_) => offload::program(scenario, plan, &mut builder),
    };
    // Tasks are added in `emit` alone, and the program counts them exactly.
    builder.reserve_tasks(program.task_count());
    let steps = tasks::emit(&program, &mut builder);
    let replica_map = builder.take_replica_log().map(|log| {
        let task_count = builder.task_count() as u32;
        taskgraph::replica_map::ReplicaMap::new(log, |step| {
            steps
                .get(step as usize)
                .map_or(task_count, |tasks| tasks.head.first().0)
        })
    });
    // Merged, each pass and per-rank kernels step is one task standing for t.
    let merged = match tensor_ranks {
        TensorRanks::Each => 0,
        TensorRanks::Merged => program.rank_task_steps(),
    };
    let dependencies = std::mem::take(&mut program.dependencies);
    drop(program);
    if builder.task_count() <= EDGE_LIST_MAX_TASKS {
        // Once, as a list that `finish` counting-sorts into CSR rows,
        // reserved once (untouched capacity costs no memory).
        builder.reserve_edges(builder.task_count() * EDGES_PER_TASK_RESERVED);
        edges::connect(&dependencies, &steps, &mut builder, representative);
    } else {
        // Twice: edges counted per task, then written into their CSR rows
        // (no edge list). The same rows either way.
        builder.count_edges();
        edges::connect(&dependencies, &steps, &mut builder, representative);
        builder.fill_edges();
        edges::connect(&dependencies, &steps, &mut builder, representative);
    }
    let mut graph = builder.finish(scenario.layout.gpus());
    graph.set_replica_map(replica_map);
    (graph, merged)
}

/// Up to this many tasks, lowering generates the edges once into a list
/// (9 bytes an edge while it lasts: about 3.3 edges a task, 24,268,248
/// edges for 7,272,368 tasks in `simulate --model gpt-1t --tp 8 --pp 64
/// --dp 6 --recompute full --global-batch 3072 --json`, so about 30 MB at
/// this size) instead of generating them twice to save the list: the
/// sweep's graphs, tens of thousands of tasks each, pay the second pass
/// for nothing.
const EDGE_LIST_MAX_TASKS: usize = 1 << 20;

/// Edges reserved per task for the edge list: above the 3.34 measured in
/// the densest graph at hand (24,268,248 edges for 7,272,368 tasks, the
/// 1T command above; 3.30 for `simulate --model gpt3-175b --tp 8 --pp 8
/// --dp 16 --schedule interleaved --chunks 2 --global-batch 1536`, 1.67
/// for Mixtral 8x7B at tp 2, ep 8, dp 32), so the list is not regrown
/// (copied) as it fills.
const EDGES_PER_TASK_RESERVED: usize = 4;
