//! What a run plan (the `goodput` crate) takes from one simulation: the
//! failure-free iteration, tokens per iteration, the job's GPUs and NICs,
//! the bytes each rank checkpoints and the GPU's datasheet entry. Shared by
//! `run-plan` and the sweep's time-to-train ranking.

use goodput::defaults::SimulatedRun;
use goodput::energy::GpuKind;
use sim::scenario::Scenario;
use sim::{RunSummary, SimulationReport};

/// The plan's inputs from a simulated scenario; a job smaller than a node
/// holds part of one.
pub fn simulated_run(scenario: &Scenario, report: &SimulationReport) -> SimulatedRun {
    simulated_run_of(scenario, &RunSummary::of(report))
}

/// [`simulated_run`] from a run's summary (the sweep's).
pub fn simulated_run_of(scenario: &Scenario, summary: &RunSummary) -> SimulatedRun {
    let gpus = u64::from(scenario.layout.gpus());
    SimulatedRun {
        iteration_time_s: summary.metrics.iteration_time_s,
        tokens_per_iteration: sim::throughput::Throughput::of(scenario, &summary.metrics)
            .tokens_per_iteration,
        gpus,
        gpus_per_node: u64::from(scenario.topology.node.gpus_per_node).min(gpus),
        nics_per_node: u64::from(scenario.topology.fabric.nics_per_node),
        checkpoint_bytes_per_rank: sim::checkpoint_size::checkpoint_bytes_per_rank(
            scenario,
            &summary.memory,
        ),
        gpu: GpuKind::from_device_name(&scenario.topology.gpu.name),
    }
}
