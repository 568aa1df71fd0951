//! `run-plan --routing-trace FILE` and `--seq-len-trace FILE`: a run whose
//! routing or sequence length varies iteration by iteration. The trace is
//! simulated (`super::routing_trace`, `super::seq_len_trace`), and the run
//! is planned at the trace's mean iteration time (and, for lengths, its mean
//! tokens per iteration, rounded to whole tokens): the rate a long run of
//! such iterations trains at. The summary and `--json` add the
//! distribution, and a traced iteration that does not fit in memory stops
//! the plan as an untraced one does.

use sim::scenario::Scenario;
use sim::straggler::Stragglers;
use studies::fit::fit_file::FitRecord;

use super::routing_trace::TraceRun;
use super::run_plan::{Recovery, RunPlanArgs};
use super::seq_len_trace::SeqLenRun;
use crate::exit::user_error;

/// The trace a run is planned on.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedTrace {
    Routing(TraceRun),
    Lengths(SeqLenRun),
}

impl PlannedTrace {
    /// The run's iteration time and tokens per iteration at the trace's means.
    pub fn apply(&self, plan: &mut goodput::RunPlan) {
        match self {
            PlannedTrace::Routing(trace) => plan.iteration_time_s = trace.times().mean,
            PlannedTrace::Lengths(lengths) => {
                plan.iteration_time_s = lengths.times().mean;
                plan.tokens_per_iteration = lengths.mean_tokens_per_iteration().round() as u64;
            }
        }
    }

    /// The summary's label and two lines.
    pub fn summary(&self) -> (&'static str, [String; 2]) {
        match self {
            PlannedTrace::Routing(trace) => ("routing trace", trace.lines()),
            PlannedTrace::Lengths(lengths) => ("sequence lengths", lengths.lines()),
        }
    }

    /// Its `--json` key and object.
    pub fn json(&self) -> (&'static str, serde_json::Value) {
        match self {
            PlannedTrace::Routing(trace) => ("routing_trace", trace.json()),
            PlannedTrace::Lengths(lengths) => ("seq_len_trace", lengths.json()),
        }
    }
}

/// The trace the flags name simulated on `scenario` (`report` its untraced
/// run), after refusing what run-plan cannot combine with it; `None`
/// without one.
pub fn planned_trace(
    args: &RunPlanArgs,
    fit: Option<&FitRecord>,
    scenario: &Scenario,
    expansion: sim::Expansion,
    stragglers: &Stragglers,
    report: &sim::SimulationReport,
) -> anyhow::Result<Option<PlannedTrace>> {
    let (flag, trace) = match (&args.routing_trace, &args.seq_len_trace) {
        (None, None) => return Ok(None),
        (Some(path), _) => {
            refuse_what_the_trace_cannot_join(args, "--routing-trace")?;
            let tokens =
                sim::throughput::Throughput::of(scenario, &report.metrics).tokens_per_iteration;
            let trace = super::routing_trace::run(scenario, expansion, stragglers, path, tokens)?;
            ("--routing-trace", PlannedTrace::Routing(trace))
        }
        (None, Some(path)) => {
            refuse_what_the_trace_cannot_join(args, "--seq-len-trace")?;
            let lengths = super::seq_len_trace::run(
                &args.scenario,
                fit,
                scenario,
                expansion,
                stragglers,
                path,
            )?;
            ("--seq-len-trace", PlannedTrace::Lengths(lengths))
        }
    };
    if !args.ignore_memory {
        let not_fitting = match &trace {
            PlannedTrace::Routing(trace) => trace.first_line_not_fitting(),
            PlannedTrace::Lengths(lengths) => lengths.first_not_fitting().map(|l| l.first_line),
        };
        if let Some(line) = not_fitting {
            return Err(user_error(format!(
                "{flag}: line {line}'s iteration does not fit in GPU memory, so the run \
                 cannot train it (see `simulate {flag}`, or --ignore-memory to plan it anyway)"
            )));
        }
    }
    Ok(Some(trace))
}

fn refuse_what_the_trace_cannot_join(args: &RunPlanArgs, flag: &str) -> anyhow::Result<()> {
    if args.recovery == Recovery::FewerReplicas {
        return Err(user_error(format!(
            "{flag} with --recovery fewer-replicas is not built: the degraded replicas' iterations are not traced"
        )));
    }
    if args.charts.plot_gpus.is_some() {
        return Err(user_error(format!(
            "{flag} with --plot-gpus is not built: the chart's other GPU counts would be simulated without the trace"
        )));
    }
    Ok(())
}
