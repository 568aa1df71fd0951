//! `run-plan --routing-trace FILE`: a mixture-of-experts run whose routing
//! varies iteration by iteration. Every line of the trace is simulated
//! (`super::routing_trace`), and the run is planned at the trace's mean
//! iteration time, the rate a long run of such iterations trains at; the
//! summary and `--json` add the distribution, and a traced iteration that
//! does not fit in memory stops the plan as an untraced one does.

use std::path::Path;

use sim::scenario::Scenario;
use sim::straggler::Stragglers;

use super::routing_trace::TraceRun;
use super::run_plan::{Recovery, RunPlanArgs};
use crate::exit::user_error;

/// The trace of `path` simulated on `scenario` (`report` its untraced
/// run), after refusing what run-plan cannot combine with it.
pub fn traced_run(
    args: &RunPlanArgs,
    path: &Path,
    scenario: &Scenario,
    expansion: sim::Expansion,
    stragglers: &Stragglers,
    report: &sim::SimulationReport,
) -> anyhow::Result<TraceRun> {
    if args.recovery == Recovery::FewerReplicas {
        return Err(user_error(
            "--routing-trace with --recovery fewer-replicas is not built: the degraded replicas' routing is not traced",
        ));
    }
    if args.charts.plot_gpus.is_some() {
        return Err(user_error(
            "--routing-trace with --plot-gpus is not built: the chart's other GPU counts would be simulated without the trace",
        ));
    }
    let tokens = sim::throughput::Throughput::of(scenario, &report.metrics).tokens_per_iteration;
    let trace = super::routing_trace::run(scenario, expansion, stragglers, path, tokens)?;
    if !args.ignore_memory {
        if let Some(line) = trace.first_line_not_fitting() {
            return Err(user_error(format!(
                "--routing-trace: line {line}'s iteration does not fit in GPU memory, so the run \
                 cannot train it (see `simulate --routing-trace`, or --ignore-memory to plan it anyway)"
            )));
        }
    }
    Ok(trace)
}
