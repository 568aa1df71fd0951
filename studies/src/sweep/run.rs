//! Running candidates: the memory model first (schedule + `memory_per_stage`,
//! no simulation), dropping layouts that do not fit; then one simulation per
//! remaining layout, in parallel with rayon. Each simulation is independent
//! and deterministic, so the parallelism cannot change any result.

use super::enumerate::ValidCandidate;
use super::memory_budget::MemoryBudget;
use super::space::Candidate;
use super::SweepError;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sim::memory::memory_per_stage;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One simulated layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepRecord {
    /// Candidate index (generation order among valid layouts).
    pub index: u32,
    pub layout: Candidate,
    /// Microbatches per pipeline m = B/(b·d).
    pub microbatches: u32,
    /// Iteration time in integer nanoseconds (the ranking key).
    pub iteration_time_ns: u64,
    pub iteration_time_s: f64,
    pub samples_per_s: f64,
    pub tflops_per_gpu: f64,
    pub model_tflops_per_gpu: f64,
    pub percent_of_peak: f64,
    pub bubble_fraction: f64,
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs utilisation over the precision's dense peak (`sim::throughput`).
    pub mfu_percent: f64,
    /// Mean compute time per GPU.
    pub compute_time_s: f64,
    /// Communication not hidden behind compute, per class (as `simulate --json`).
    pub exposed_communication_s: timeline::metrics::ExposedCommunication,
    /// Peak over stages of one rank's memory.
    pub peak_memory_bytes: u64,
    pub memory_capacity_bytes: u64,
    /// Every stage fits in HBM (false only in sweeps that ignore memory).
    pub fits_in_memory: bool,
    pub events: u64,
    /// With the sweep's `train_tokens`: the expected wall-clock time to
    /// train, failures, checkpoints and restarts included (`goodput`'s
    /// closed form at its defaults), seconds; the ranking key then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_time_to_train_s: Option<f64>,
}

/// Why a valid layout was not simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// Weights, gradients and optimizer states alone exceed HBM on some stage.
    ModelStatesExceedMemory,
    /// Model states fit, but with the activations of the microbatches in flight they do not.
    ActivationsExceedMemory,
}

impl DropReason {
    pub fn describe(self) -> &'static str {
        match self {
            DropReason::ModelStatesExceedMemory => {
                "weights + gradients + optimizer states alone exceed HBM"
            }
            DropReason::ActivationsExceedMemory => {
                "activations of the microbatches in flight push past HBM"
            }
        }
    }
}

/// A valid layout dropped by the memory model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DroppedRecord {
    pub index: u32,
    pub layout: Candidate,
    pub reason: DropReason,
    /// The stage with the most memory, and that memory.
    pub peak_memory_stage: u32,
    pub peak_memory_bytes: u64,
    pub memory_capacity_bytes: u64,
}

/// Simulated, dropped and pruned layouts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutcome {
    pub results: Vec<SweepRecord>,
    pub dropped: Vec<DroppedRecord>,
    /// Layouts `--prune` did not simulate ([`super::prune`]).
    pub pruned: Vec<super::prune::PrunedRecord>,
}

/// Drops what does not fit (as `memory` says), simulates the rest in
/// parallel within the host memory that was free (refusing the sweep when a
/// layout alone would need more); `on_simulated(done, total)` is called after each finished
/// simulation (from any thread; `total` is the number to simulate).
pub fn run_candidates(
    candidates: &[ValidCandidate],
    memory: MemoryRule,
    on_simulated: &(dyn Fn(usize, usize) + Sync),
) -> Result<RunOutcome, SweepError> {
    run_candidates_with(candidates, memory, sim::Expansion::Auto, on_simulated)
}

/// What a layout must leave free of its GPUs' memory to be simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryRule {
    /// Simulate every layout (`--ignore-memory`).
    Ignore,
    /// Drop a layout whose peak stage plus this many bytes exceeds a GPU.
    Fit { headroom_bytes: u64 },
}

impl MemoryRule {
    /// The rule a sweep space asks for.
    pub fn of(space: &super::space::SweepSpace) -> MemoryRule {
        if space.ignore_memory {
            MemoryRule::Ignore
        } else {
            MemoryRule::Fit {
                headroom_bytes: space.memory_headroom_bytes.unwrap_or(0),
            }
        }
    }
}

/// [`run_candidates`], each layout simulated as `expansion` asks (one
/// representative replica where exact, or every rank: the same records).
pub fn run_candidates_with(
    candidates: &[ValidCandidate],
    memory: MemoryRule,
    expansion: sim::Expansion,
    on_simulated: &(dyn Fn(usize, usize) + Sync),
) -> Result<RunOutcome, SweepError> {
    let (mut outcome, fitting, budget) = fitting_candidates(candidates, memory)?;
    let done = AtomicUsize::new(0);
    outcome.results = simulate_all(&fitting, &budget, expansion, &|| {
        on_simulated(done.fetch_add(1, Ordering::Relaxed) + 1, fitting.len())
    })?;
    Ok(outcome)
}

/// [`run_candidates_with`] simulating only the layouts that could rank
/// among the best `keep` by iteration time ([`super::prune`]): the rest are
/// returned as pruned. The ranked best `keep` are the exhaustive run's.
pub fn run_candidates_pruned(
    candidates: &[ValidCandidate],
    memory: MemoryRule,
    expansion: sim::Expansion,
    keep: usize,
    on_simulated: &(dyn Fn(usize, usize) + Sync),
) -> Result<RunOutcome, SweepError> {
    let (mut outcome, fitting, budget) = fitting_candidates(candidates, memory)?;
    let mut bounded: Vec<(u64, &ValidCandidate)> = fitting
        .par_iter()
        .map(|&candidate| {
            (
                super::prune::iteration_lower_bound_ns(&candidate.scenario),
                candidate,
            )
        })
        .collect();
    bounded.sort_by_key(|(bound, candidate)| (*bound, candidate.index));
    let done = AtomicUsize::new(0);
    // (iteration time, index) of every simulated layout, best first.
    let mut best: Vec<(u64, u32)> = Vec::new();
    let mut queue = bounded.into_iter().peekable();
    while queue.peek().is_some() {
        let batch: Vec<&ValidCandidate> = queue
            .by_ref()
            .take(super::prune::BATCH)
            .map(|(_, candidate)| candidate)
            .collect();
        let records = simulate_all(&batch, &budget, expansion, &|| {
            on_simulated(done.fetch_add(1, Ordering::Relaxed) + 1, fitting.len())
        })?;
        best.extend(records.iter().map(|r| (r.iteration_time_ns, r.index)));
        best.sort_unstable();
        outcome.results.extend(records);
        let Some(&(threshold_ns, _)) = best.get(keep.saturating_sub(1)) else {
            continue;
        };
        while let Some((bound, candidate)) = queue.next_if(|(bound, _)| *bound > threshold_ns) {
            outcome.pruned.push(super::prune::PrunedRecord {
                index: candidate.index,
                layout: candidate.candidate,
                lower_bound_ns: bound,
                top_k_time_ns: threshold_ns,
            });
            on_simulated(done.fetch_add(1, Ordering::Relaxed) + 1, fitting.len());
        }
    }
    outcome.results.sort_by_key(|r| r.index);
    outcome.pruned.sort_by_key(|p| p.index);
    Ok(outcome)
}

/// The memory model's verdict on every candidate: the dropped ones (in an
/// outcome) and those that fit, with the host memory the simulations may
/// share; refuses the sweep when one of those cannot be simulated on this
/// machine at all.
fn fitting_candidates(
    candidates: &[ValidCandidate],
    memory: MemoryRule,
) -> Result<(RunOutcome, Vec<&ValidCandidate>, MemoryBudget), SweepError> {
    let checked: Vec<Option<DroppedRecord>> = match memory {
        MemoryRule::Ignore => vec![None; candidates.len()],
        MemoryRule::Fit { headroom_bytes } => candidates
            .par_iter()
            .map(|candidate| check_memory(candidate, headroom_bytes))
            .collect(),
    };
    let mut outcome = RunOutcome::default();
    let mut fitting = Vec::new();
    for (candidate, dropped) in candidates.iter().zip(checked) {
        match dropped {
            Some(record) => outcome.dropped.push(record),
            None => fitting.push(candidate),
        }
    }
    // Refuse up front what this machine cannot simulate at all, then let the
    // workers take turns so that together they stay within what was free.
    let available = sim::host_memory::available();
    let too_large: Vec<_> = fitting
        .iter()
        .filter_map(|candidate| {
            sim::host_memory::check_fits(&candidate.scenario, available)
                .err()
                .map(|error| (candidate, error))
        })
        .collect();
    if let Some((candidate, error)) = too_large.first() {
        return Err(SweepError::HostMemory {
            layout: candidate.candidate.label(),
            count: too_large.len(),
            message: error.to_string(),
        });
    }
    Ok((
        outcome,
        fitting,
        MemoryBudget::new(available.map(|a| a.bytes)),
    ))
}

/// Simulates `candidates` in parallel within `budget`, returned in their
/// order; `finished` is called after each. The largest start first (by
/// estimated tasks per data-parallel replica: a run builds one replica's
/// graph where replicas are alike), so that the last ones each thread runs
/// are small and the threads finish close together; the order changes no
/// record.
fn simulate_all(
    candidates: &[&ValidCandidate],
    budget: &MemoryBudget,
    expansion: sim::Expansion,
    finished: &(dyn Fn() + Sync),
) -> Result<Vec<SweepRecord>, SweepError> {
    let mut largest_first: Vec<usize> = (0..candidates.len()).collect();
    largest_first.sort_by_key(|&index| {
        let scenario = &candidates[index].scenario;
        std::cmp::Reverse(scenario.estimated_tasks() / u64::from(scenario.layout.replicas()))
    });
    let mut simulated: Vec<(usize, Result<SweepRecord, SweepError>)> = largest_first
        .par_iter()
        .with_max_len(1)
        .map(|&index| {
            let candidate = candidates[index];
            let _reservation =
                budget.reserve(sim::host_memory::simulation_bytes(&candidate.scenario));
            let record = simulate_one(candidate, expansion);
            finished();
            (index, record)
        })
        .collect();
    // Back in the candidates' order.
    simulated.sort_unstable_by_key(|&(index, _)| index);
    simulated.into_iter().map(|(_, record)| record).collect()
}

/// `Some` when the layout does not fit on some stage with `headroom_bytes`
/// of its GPU memory left free.
pub fn check_memory(candidate: &ValidCandidate, headroom_bytes: u64) -> Option<DroppedRecord> {
    let scenario = &candidate.scenario;
    let stages = memory_per_stage(scenario, &sim::plan::Plan::of(scenario));
    let fits = |stage: &sim::memory::MemoryBreakdown| {
        stage.fits && stage.total_bytes.saturating_add(headroom_bytes) <= stage.capacity_bytes
    };
    if stages.iter().all(fits) {
        return None;
    }
    let peak = stages
        .iter()
        .max_by_key(|m| (m.total_bytes, std::cmp::Reverse(m.stage)))
        .expect("at least one stage");
    let states_too_big = stages
        .iter()
        .any(|m| m.weight_bytes + m.gradient_bytes + m.optimizer_state_bytes > m.capacity_bytes);
    Some(DroppedRecord {
        index: candidate.index,
        layout: candidate.candidate,
        reason: if states_too_big {
            DropReason::ModelStatesExceedMemory
        } else {
            DropReason::ActivationsExceedMemory
        },
        peak_memory_stage: peak.stage,
        peak_memory_bytes: peak.total_bytes,
        memory_capacity_bytes: peak.capacity_bytes,
    })
}

fn simulate_one(
    candidate: &ValidCandidate,
    expansion: sim::Expansion,
) -> Result<SweepRecord, SweepError> {
    let scenario = &candidate.scenario;
    // The summary alone: tensor ranks merged where that is exact
    // (`sim::simulate_summary`).
    let report = sim::simulate_summary(scenario, expansion).map_err(|error| {
        let (layout, message) = (candidate.candidate.label(), error.to_string());
        match error {
            sim::SimulationError::Deadlock(_) => SweepError::Deadlock { layout, message },
            _ => SweepError::Simulation { layout, message },
        }
    })?;
    let m = &report.metrics;
    let peak = report.peak_memory();
    let throughput = sim::throughput::Throughput::of(scenario, m);
    Ok(SweepRecord {
        index: candidate.index,
        layout: candidate.candidate,
        microbatches: scenario.layout.microbatches.get(),
        iteration_time_ns: report.makespan_ns,
        iteration_time_s: m.iteration_time_s,
        samples_per_s: m.samples_per_s,
        tflops_per_gpu: m.tflops_per_gpu,
        model_tflops_per_gpu: m.model_tflops_per_gpu,
        percent_of_peak: m.percent_of_peak,
        bubble_fraction: m.bubble_fraction,
        tokens_per_s_per_gpu: throughput.tokens_per_s_per_gpu,
        mfu_percent: throughput.mfu_percent,
        compute_time_s: m.compute_time_s,
        exposed_communication_s: m.exposed_communication,
        peak_memory_bytes: peak.total_bytes,
        memory_capacity_bytes: peak.capacity_bytes,
        fits_in_memory: report.memory.iter().all(|stage| stage.fits),
        events: report.n_events,
        expected_time_to_train_s: candidate
            .train_tokens
            .map(|tokens| expected_time_to_train_s(scenario, &report, tokens))
            .transpose()?,
    })
}

/// The expected time to train `tokens` on a simulated layout, at the
/// `goodput` crate's defaults (`goodput::defaults::default_plan`).
fn expected_time_to_train_s(
    scenario: &sim::scenario::Scenario,
    report: &sim::RunSummary,
    tokens: u64,
) -> Result<f64, SweepError> {
    let run = crate::run_plan_input::simulated_run_of(scenario, report);
    let plan = goodput::defaults::default_plan(&run, goodput::TrainingTarget::Tokens(tokens));
    goodput::expected_time(&plan)
        .map(|expected| expected.wall_clock_s)
        .map_err(|error| SweepError::Simulation {
            layout: format!("{} (time to train)", scenario.title()),
            message: error.to_string(),
        })
}
