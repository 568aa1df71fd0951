//! A whole training run: the [`RunPlan`] a caller fills in, and the
//! [`RunPlanReport`] it evaluates to: useful time, expected wall-clock
//! (closed form and Monte-Carlo), goodput, interruptions, time lost to
//! checkpoints, restarts and recomputed work, the chosen checkpoint interval
//! beside Young's and Daly's, GPU-hours, energy, cost and emissions.

use serde::Serialize;

use crate::checkpoint::{
    checkpoint_cost, CheckpointCost, CheckpointMode, CheckpointSpec, StorageSpec,
};
use crate::closed_form::{expected_run, ExpectedRun, RunModel};
use crate::energy::{energy_report, EnergyInputs, EnergyReport};
use crate::error::{invalid, GoodputError, Problems};
use crate::failure_distribution::FailureDistribution;
use crate::failure_rates::{job_failure_rate, JobComponents, JobFailureRate, ReliabilitySpec};
use crate::interval::{daly_interval_s, optimal_interval_s, young_interval_s};
use crate::monte_carlo::{monte_carlo, MonteCarloSummary};
use crate::recovery::{resolve, RecoveryPolicy, ResolvedRecovery, RestartSpec};

/// How long the run trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrainingTarget {
    /// Train on this many tokens (rounded up to whole iterations).
    Tokens(u64),
    /// Train for this many iterations.
    Iterations(u64),
}

/// Where checkpoints fall.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalChoice {
    /// The interval minimizing the closed-form expected time, rounded to
    /// whole iterations (at least one).
    Optimal,
    /// Every so many iterations.
    EveryIterations(u64),
    /// Every so many seconds of work (need not be whole iterations).
    EverySeconds(f64),
}

/// The Monte-Carlo's size, seed and failure distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MonteCarloSpec {
    /// Trials; 0 skips the Monte-Carlo.
    pub trials: u32,
    /// Seed of the generator.
    pub seed: u64,
    /// The distribution of the times between failures (the closed form's
    /// exponential by default).
    pub failure_distribution: FailureDistribution,
}

/// Everything a run's expected time, energy and cost depend on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunPlan {
    /// Failure-free time of one iteration, seconds (from the simulator).
    pub iteration_time_s: f64,
    /// Tokens per iteration (global batch × sequence length).
    pub tokens_per_iteration: u64,
    /// How long to train.
    pub target: TrainingTarget,
    /// GPUs in the job.
    pub gpus: u64,
    /// GPUs per node (nodes = gpus / gpus_per_node, which must divide).
    pub gpus_per_node: u64,
    /// NICs per node, for NIC failure rates.
    pub nics_per_node: u64,
    /// Switches whose failure stops the job, for switch failure rates.
    pub switches: u64,
    /// Bytes each rank checkpoints.
    pub checkpoint_bytes_per_rank: u64,
    /// The checkpoint storage.
    pub storage: StorageSpec,
    /// Synchronous or asynchronous checkpoints.
    pub checkpoint_mode: CheckpointMode,
    /// Failure rates per component.
    pub reliability: ReliabilitySpec,
    /// Detection, rescheduling and initialization times.
    pub restart: RestartSpec,
    /// How a failure is recovered from.
    pub recovery: RecoveryPolicy,
    /// Where checkpoints fall.
    pub interval: IntervalChoice,
    /// Power, PUE, price and carbon inputs.
    pub energy: EnergyInputs,
    /// The Monte-Carlo's size and seed.
    pub monte_carlo: MonteCarloSpec,
}

/// The checkpoint interval used, beside Young's and Daly's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IntervalReport {
    /// How it was chosen: "optimal" or "user".
    pub choice: &'static str,
    /// Work between checkpoints, seconds.
    pub chosen_s: f64,
    /// The same in iterations (fractional for a user interval in seconds).
    pub chosen_iterations: f64,
    /// Training time each checkpoint blocks at this interval, seconds.
    pub checkpoint_blocking_s: f64,
    /// The numeric minimizer of the closed form, before rounding to whole
    /// iterations, seconds.
    pub numeric_optimum_s: f64,
    /// Young's √(2CM), seconds (`null` without failures).
    pub young_s: Option<f64>,
    /// Daly's higher-order estimate, seconds (`null` without failures).
    pub daly_s: Option<f64>,
}

/// What a [`RunPlan`] evaluates to. Field order is the JSON's order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunPlanReport {
    /// Iterations to train.
    pub iterations: u64,
    /// Nodes in the job.
    pub nodes: u64,
    /// Failure-free training time, seconds.
    pub useful_time_s: f64,
    /// The job's failure rate and its breakdown.
    pub failure_rate: JobFailureRate,
    /// One storage checkpoint's save and restore times.
    pub storage_checkpoint: CheckpointCost,
    /// The recovery policy, its downtime and the checkpoint level it uses.
    pub recovery: ResolvedRecovery,
    /// The interval used and the estimates beside it.
    pub interval: IntervalReport,
    /// The closed form's expected times and interruptions.
    pub expected: ExpectedRun,
    /// The Monte-Carlo's summary (`null` with 0 trials).
    pub monte_carlo: Option<MonteCarloSummary>,
    /// useful_time_s / expected wall-clock (closed form).
    pub goodput: f64,
    /// Expected wall-clock, days (closed form).
    pub expected_wall_clock_days: f64,
    /// GPU-hours, energy, cost and emissions (closed-form times).
    pub energy: EnergyReport,
}

/// The pieces of a plan every evaluation shares.
pub(crate) struct Resolved {
    pub iterations: u64,
    pub nodes: u64,
    pub work_s: f64,
    pub failure_rate: JobFailureRate,
    pub storage_checkpoint: CheckpointCost,
    pub recovery: ResolvedRecovery,
}

fn validate(plan: &RunPlan) -> Result<(), GoodputError> {
    let mut problems = Problems::new();
    problems.positive("iteration_time_s", plan.iteration_time_s);
    problems.nonzero("tokens_per_iteration", plan.tokens_per_iteration);
    problems.nonzero("gpus", plan.gpus);
    problems.nonzero("gpus_per_node", plan.gpus_per_node);
    match plan.target {
        TrainingTarget::Tokens(tokens) => problems.nonzero("target.tokens", tokens),
        TrainingTarget::Iterations(iterations) => problems.nonzero("target.iterations", iterations),
    };
    match plan.interval {
        IntervalChoice::EveryIterations(k) => {
            problems.nonzero("interval.every_iterations", k);
        }
        IntervalChoice::EverySeconds(s) => {
            problems.positive("interval.every_seconds", s);
        }
        IntervalChoice::Optimal => {}
    }
    problems.finish()
}

/// Resolves what does not depend on the interval.
pub(crate) fn resolve_plan(plan: &RunPlan) -> Result<Resolved, GoodputError> {
    validate(plan)?;
    let iterations = match plan.target {
        TrainingTarget::Tokens(tokens) => tokens.div_ceil(plan.tokens_per_iteration),
        TrainingTarget::Iterations(iterations) => iterations,
    };
    let job = JobComponents {
        gpus: plan.gpus,
        gpus_per_node: plan.gpus_per_node,
        nics_per_node: plan.nics_per_node,
        switches: plan.switches,
    };
    let nodes = job.nodes()?;
    let failure_rate = job_failure_rate(&plan.reliability, &job)?;
    let storage_checkpoint = checkpoint_cost(&CheckpointSpec {
        bytes_per_rank: plan.checkpoint_bytes_per_rank,
        ranks_per_node: plan.gpus_per_node,
        nodes,
        storage: plan.storage,
        mode: plan.checkpoint_mode,
    })?;
    let recovery = resolve(
        &plan.recovery,
        &plan.restart,
        &storage_checkpoint,
        plan.checkpoint_bytes_per_rank,
    )?;
    let work_s = iterations as f64 * plan.iteration_time_s;
    if !work_s.is_finite() {
        return Err(invalid("target", "the run's work in seconds is not finite"));
    }
    Ok(Resolved {
        iterations,
        nodes,
        work_s,
        failure_rate,
        storage_checkpoint,
        recovery,
    })
}

/// The run model at interval `interval_s`.
pub(crate) fn model_at(resolved: &Resolved, interval_s: f64) -> RunModel {
    RunModel {
        work_s: resolved.work_s,
        interval_s,
        checkpoint_s: resolved.recovery.checkpoint.blocking_s(interval_s),
        failures_per_s: resolved.failure_rate.failures_per_s,
        downtime: resolved.recovery.downtime,
        durability_delay_s: resolved.recovery.checkpoint.durability_delay_s(),
    }
}

/// The whole number of iterations (at least one) next to `numeric_s`,
/// below or above, whose closed-form expected time is lower, in seconds.
fn whole_iterations(
    plan: &RunPlan,
    resolved: &Resolved,
    numeric_s: f64,
) -> Result<f64, GoodputError> {
    let iterations = numeric_s / plan.iteration_time_s;
    let mut best: Option<(f64, f64)> = None;
    for k in [iterations.floor().max(1.0), iterations.ceil().max(1.0)] {
        let tau = (k * plan.iteration_time_s).min(resolved.work_s);
        let wall = expected_run(&model_at(resolved, tau))?.wall_clock_s;
        if best.is_none_or(|(_, best_wall)| wall < best_wall) {
            best = Some((tau, wall));
        }
    }
    Ok(best.map_or(numeric_s, |(tau, _)| tau))
}

/// Chooses the interval per the plan, with the estimates beside it.
pub(crate) fn choose_interval(
    plan: &RunPlan,
    resolved: &Resolved,
) -> Result<IntervalReport, GoodputError> {
    let checkpoint = resolved.recovery.checkpoint;
    let lambda = resolved.failure_rate.failures_per_s;
    let blocking = |tau: f64| checkpoint.blocking_s(tau);
    let shortest_s = plan.iteration_time_s.min(resolved.work_s);
    let numeric = optimal_interval_s(lambda, &blocking, shortest_s, resolved.work_s)?;
    let (choice, chosen_s) = match plan.interval {
        IntervalChoice::Optimal => ("optimal", whole_iterations(plan, resolved, numeric)?),
        IntervalChoice::EveryIterations(k) => {
            let iterations = (k.min(resolved.iterations)) as f64;
            ("user", iterations * plan.iteration_time_s)
        }
        IntervalChoice::EverySeconds(s) => ("user", s.min(resolved.work_s)),
    };
    // Young and Daly take the blocking cost at their own interval; for an
    // asynchronous checkpoint that is the copy (their τ exceeds the persist
    // whenever the persist is short against the MTBF).
    let c = checkpoint.copy_block_s;
    Ok(IntervalReport {
        choice,
        chosen_s,
        chosen_iterations: chosen_s / plan.iteration_time_s,
        checkpoint_blocking_s: checkpoint.blocking_s(chosen_s),
        numeric_optimum_s: numeric,
        young_s: young_interval_s(c, lambda),
        daly_s: daly_interval_s(c, lambda),
    })
}

/// The closed-form expected run at the plan's interval, without the
/// Monte-Carlo or the energy model (what a sweep ranks layouts by).
pub fn expected_time(plan: &RunPlan) -> Result<ExpectedRun, GoodputError> {
    let resolved = resolve_plan(plan)?;
    let interval = choose_interval(plan, &resolved)?;
    expected_run(&model_at(&resolved, interval.chosen_s))
}

/// Evaluates a plan: closed form, Monte-Carlo (unless 0 trials), energy.
pub fn evaluate(plan: &RunPlan) -> Result<RunPlanReport, GoodputError> {
    let resolved = resolve_plan(plan)?;
    let interval = choose_interval(plan, &resolved)?;
    let model = model_at(&resolved, interval.chosen_s);
    let expected = expected_run(&model)?;
    let monte_carlo = match plan.monte_carlo.trials {
        0 => None,
        trials => Some(monte_carlo(
            &model,
            trials,
            plan.monte_carlo.seed,
            plan.monte_carlo.failure_distribution,
        )?),
    };
    let energy = energy_report(&plan.energy, plan.gpus, resolved.nodes, &expected)?;
    Ok(RunPlanReport {
        iterations: resolved.iterations,
        nodes: resolved.nodes,
        useful_time_s: resolved.work_s,
        failure_rate: resolved.failure_rate,
        storage_checkpoint: resolved.storage_checkpoint,
        recovery: resolved.recovery,
        interval,
        goodput: expected.goodput,
        expected_wall_clock_days: expected.wall_clock_s / 86_400.0,
        expected,
        monte_carlo,
        energy,
    })
}
