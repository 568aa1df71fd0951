//! `run-plan`'s GPU-count chart inputs: the scenario simulated again at
//! d/4, d/2, 2d and 4d data-parallel replicas, a preset topology sized to
//! the nodes each count needs (as the degraded run after a node failure
//! sizes it, `fewer_replicas.rs`).

use super::run_plan::RunPlanArgs;
use sim::scenario::Scenario;

/// The scenario again at d/4, d/2, 2d and 4d (with d itself), for the
/// GPU-count chart: counts the global batch cannot be split over are skipped.
pub(super) fn scale_inputs(
    args: &RunPlanArgs,
    fit: Option<&studies::fit::fit_file::FitRecord>,
    scenario: &Scenario,
) -> anyhow::Result<Vec<goodput::sweep::ScaleInput>> {
    let d = scenario.layout.data_parallel.get();
    let mut points = Vec::new();
    for candidate in [d / 4, d / 2, d, d.saturating_mul(2), d.saturating_mul(4)] {
        if candidate == 0 || points.iter().any(|p: &(u32, _)| p.0 == candidate) {
            continue;
        }
        let mut file = args.scenario.file()?;
        file.dp = Some(candidate);
        grow_topology(&mut file, scenario, candidate);
        let Ok(mut at) = file.resolve() else { continue };
        if let Some(record) = fit {
            record.values().apply(&mut at);
        }
        let report = sim::simulate(&at).map_err(crate::exit::simulation_error)?;
        let bytes = Some(sim::checkpoint_size::checkpoint_bytes_per_rank(
            &at,
            &report.memory,
        ));
        points.push((
            candidate,
            goodput::sweep::ScaleInput {
                gpus: u64::from(at.layout.gpus()),
                iteration_time_s: report.metrics.iteration_time_s,
                checkpoint_bytes_per_rank: bytes,
            },
        ));
    }
    Ok(points.into_iter().map(|(_, input)| input).collect())
}

/// A preset topology named by name (or `NAME:NODES`) grown to the nodes d
/// replicas need; a topology file stays as it is (counts it cannot hold are skipped).
pub(super) fn grow_topology(
    file: &mut sim::scenario::ScenarioFile,
    scenario: &Scenario,
    data_parallel: u32,
) {
    let Some(serde_json::Value::String(name)) = &file.topology else {
        return;
    };
    let preset = name.split(':').next().unwrap_or(name);
    if topologies::preset(preset).is_none() {
        return;
    }
    let per_replica = u64::from(scenario.layout.gpus() / scenario.layout.data_parallel.get());
    let gpus = per_replica * u64::from(data_parallel);
    let nodes = gpus.div_ceil(u64::from(scenario.topology.node.gpus_per_node));
    file.topology = Some(format!("{preset}:{nodes}").into());
}
