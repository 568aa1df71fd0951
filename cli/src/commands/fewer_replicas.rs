//! `run-plan --recovery fewer-replicas`: what a job keeps when one node
//! fails — every data-parallel replica with a rank on that node drops out —
//! and the throughput of the replicas left, simulated: the same layout on
//! d − k replicas, each with the microbatches it had (the global batch
//! shrinks with them, as an elastic restart that keeps each rank's batch
//! does). Its work rate is (d − k)/d × T(d)/T(d − k).

use crate::exit::user_error;
use sim::ids::Rank;
use sim::placement::Placement;
use sim::scenario::Scenario;
use studies::fit::fit_file::FitRecord;

/// The job on the replicas a node failure leaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DegradedRun {
    /// Data-parallel replicas at full size.
    pub replicas: u32,
    /// Replicas left after one node fails.
    pub remaining: u32,
    /// Their iteration time, seconds.
    pub iteration_time_s: f64,
    /// Work done per second degraded ÷ at full size.
    pub work_rate: f64,
}

/// The replicas with a rank on node 0 (every node holds as many).
fn replicas_on_a_node(scenario: &Scenario) -> u32 {
    let gpus_per_node = scenario.topology.node.gpus_per_node;
    let placement = Placement::new(scenario.layout, gpus_per_node);
    let mut replicas: Vec<u32> = (0..gpus_per_node.min(scenario.layout.gpus()))
        .map(|rank| placement.coordinates(Rank(rank)).data_index)
        .collect();
    replicas.sort_unstable();
    replicas.dedup();
    replicas.len() as u32
}

/// Simulates `scenario` (read from `args`, with `fit`) on the replicas one
/// node failure leaves; `full_iteration_s` is its iteration time at full size.
pub fn degraded_run(
    args: &super::scenario_args::ScenarioArgs,
    fit: Option<&FitRecord>,
    scenario: &Scenario,
    full_iteration_s: f64,
) -> anyhow::Result<DegradedRun> {
    let replicas = scenario.layout.data_parallel.get();
    let lost = replicas_on_a_node(scenario);
    let Some(remaining) = replicas.checked_sub(lost).filter(|&left| left > 0) else {
        return Err(user_error(format!(
            "--recovery fewer-replicas: a node failure takes {lost} of the {replicas} data-parallel replicas, leaving none to continue on"
        )));
    };
    let mut file = args.file()?;
    file.dp = Some(remaining);
    let global_batch =
        u64::from(scenario.layout.global_batch.get()) * u64::from(remaining) / u64::from(replicas);
    // At most the global batch, a u32.
    file.global_batch = Some(global_batch as u32);
    super::run_plan_scale::grow_topology(&mut file, scenario, remaining);
    let mut smaller = file.resolve().map_err(|e| {
        user_error(format!(
            "--recovery fewer-replicas: the layout on {remaining} replicas is not valid: {e}"
        ))
    })?;
    if let Some(record) = fit {
        record.values().apply(&mut smaller);
    }
    let report = sim::simulate(&smaller).map_err(crate::exit::simulation_error)?;
    let iteration_time_s = report.metrics.iteration_time_s;
    // Fewer replicas can reduce a little faster; they never do more work
    // per second than the whole job (the policy's rate is at most 1).
    let work_rate =
        (f64::from(remaining) / f64::from(replicas) * full_iteration_s / iteration_time_s).min(1.0);
    Ok(DegradedRun {
        replicas,
        remaining,
        iteration_time_s,
        work_rate,
    })
}
