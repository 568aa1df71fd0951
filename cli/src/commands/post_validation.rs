//! How `simulate` shows zero-bubble optimizer post-validation
//! (`--optimizer-post-validation`, `sim::lowering::post_validation`): the
//! steady-state iteration against the first one, in the summary and --json.

use sim::scenario::Scenario;
use sim::SimulationReport;

/// The first iteration's span and the steady state's (seconds).
fn first_and_steady(report: &SimulationReport) -> (f64, f64) {
    let m = &report.metrics;
    (
        m.iteration_times_s
            .first()
            .copied()
            .unwrap_or(m.iteration_time_s),
        m.iteration_time_s,
    )
}

/// `--json`'s `optimizer_post_validation` object (None without it).
pub fn json(scenario: &Scenario, report: &SimulationReport) -> Option<serde_json::Value> {
    if !scenario.options.optimizer_post_validation {
        return None;
    }
    let (first, steady) = first_and_steady(report);
    let p = scenario.layout.pipeline_parallel.get();
    Some(serde_json::json!({
        "iterations": report.metrics.iterations,
        "first_iteration_s": first,
        "steady_state_iteration_s": steady,
        "hidden_s": first - steady,
        "exchange_bytes_per_hop": sim::lowering::post_validation::EXCHANGE_BYTES,
        "norm_exchange_hops_per_pipeline": p - 1,
        "post_validation_hops_per_pipeline": p - 1,
        "pipelines": scenario.layout.tensor_parallel.get() * scenario.layout.replicas(),
        "rollback_state_bytes": 0,
        "rollback_simulated": false,
    }))
}

/// The summary's line (None without post-validation).
pub fn summary_line(scenario: &Scenario, report: &SimulationReport) -> Option<String> {
    if !scenario.options.optimizer_post_validation {
        return None;
    }
    let (first, steady) = first_and_steady(report);
    let p = scenario.layout.pipeline_parallel.get();
    Some(format!(
        "  post-validation     steady-state iteration {steady:.3} s (the first, {first:.3} s, shows the stages' start skew); \
         norm/inf exchanged over {} hops each way per pipeline, {} B each; no state kept for a rollback (never taken)",
        p - 1,
        sim::lowering::post_validation::EXCHANGE_BYTES
    ))
}
