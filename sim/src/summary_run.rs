//! A simulation for its summary alone: the metrics, memory, iteration time
//! and counts a sweep records, without a Timeline.
//!
//! Where nothing tells a tensor group's ranks apart (one representative
//! replica, fixed durations, no slow rank or link), each rank's task of a
//! pass has the same work, so the same duration, and waits for the same
//! times: its own rank's previous task, the group's collectives, transfers
//! and host lane, all of which end alike on every rank of the group (by
//! induction over the graph's order). So the lowering makes one task on the
//! whole group per pass (`lowering::lower_representative_merged`), which
//! starts and ends when each of them would; the metrics add its FLOPs once
//! per rank in its place, as the separate tasks' consecutive ids would, and
//! measure each group's first rank for all t (its intervals are theirs;
//! `metrics::compute_spans_tensor_alike`). A t = 8 layout then runs
//! about a third of the tasks. The counts are full expansion's: a merged
//! task counts its t tasks (edges are not counted: the summary has none).
//!
//! Everywhere else the run is [`crate::simulate_with`]'s, summarized.
//! `tests/tests/it/summary_run.rs` compares the two bit for bit.

use crate::cost::ClosedFormNetwork;
use crate::memory::{memory_per_stage, MemoryBreakdown};
use crate::plan::Plan;
use crate::simulate::{priced_works, SimulationError, SimulationReport};
use crate::simulated_run::SimulatedRun;
use crate::straggler::Stragglers;
use crate::symmetry::{Expansion, FullCounts, SimulationMode};
use scenario::Scenario;
use timeline::metrics::{self, Metrics};

/// What a sweep keeps of a simulation.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub metrics: Metrics,
    /// Per pipeline stage.
    pub memory: Vec<MemoryBreakdown>,
    /// The iteration's end (the last task's).
    pub makespan_ns: u64,
    /// Full expansion's tasks ([`SimulationReport::n_tasks`]).
    pub n_tasks: usize,
    /// Full expansion's events ([`SimulationReport::n_events`]).
    pub n_events: u64,
}

impl RunSummary {
    /// The summary of a full report.
    pub fn of(report: &SimulationReport) -> RunSummary {
        RunSummary {
            metrics: report.metrics.clone(),
            memory: report.memory.clone(),
            makespan_ns: report.makespan_ns(),
            n_tasks: report.n_tasks,
            n_events: report.n_events,
        }
    }

    /// The peak over stages.
    pub fn peak_memory(&self) -> &MemoryBreakdown {
        crate::memory::peak_of(&self.memory)
    }
}

/// The run `expansion` asks for, summarized: with tensor ranks merged
/// where that is exact (the module header), else [`crate::simulate_with`]'s.
pub fn simulate_summary(
    scenario: &Scenario,
    expansion: Expansion,
) -> Result<RunSummary, SimulationError> {
    let plan = Plan::of(scenario);
    let Some(replicas) = merged_replicas(scenario, &plan, expansion) else {
        return crate::simulate_with(scenario, expansion).map(|report| RunSummary::of(&report));
    };
    let (graph, merged) = crate::lowering::lower_representative_merged(scenario, &plan);
    let network = ClosedFormNetwork::for_scenario(scenario);
    let costs = priced_works(scenario, &graph, &network, &Stragglers::none())?;
    let outcome = engine::run(&graph, |id| costs[graph.work_of(id).index()].duration)?;
    let weights = [replicas];
    // Each merged task stands for t tasks in each of the replicas.
    let t = scenario.layout.tensor_parallel.get() as usize;
    let n_tasks = FullCounts::tasks_of(&graph, plan.representative, &weights)
        + (t - 1) * merged * replicas as usize;
    let run = SimulatedRun::of(scenario, graph, costs, outcome);
    let metrics =
        metrics::compute_spans_tensor_alike(&run, scenario.peak_flops_per_s(), Some(&weights));
    Ok(RunSummary {
        metrics,
        memory: memory_per_stage(scenario, &plan),
        makespan_ns: run.makespan_ns(),
        n_tasks,
        // Each task starts and finishes once.
        n_events: 2 * n_tasks as u64,
    })
}

/// Whether [`simulate_summary`] merges tensor ranks for this run.
pub fn merges_tensor_ranks(scenario: &Scenario, expansion: Expansion) -> bool {
    merged_replicas(scenario, &Plan::of(scenario), expansion).is_some()
}

/// The replicas one representative stands for, when the run `expansion`
/// asks for is that representative with fixed durations and tensor groups
/// of more than one rank (ZeRO-Offload's program is left as it is).
fn merged_replicas(scenario: &Scenario, plan: &Plan, expansion: Expansion) -> Option<u32> {
    if scenario.layout.tensor_parallel.get() < 2
        || scenario.options.network_contention
        || scenario.options.offload.is_some()
    {
        return None;
    }
    let symmetric = crate::symmetry::symmetric_replicas_in(scenario, plan);
    match crate::symmetry::planned_mode(scenario, symmetric, expansion, &Stragglers::none()) {
        (SimulationMode::Symmetric { replicas }, None) => Some(replicas),
        _ => None,
    }
}
