//! What one simulated iteration leaves idle on each rank's compute stream,
//! with given per-pass times and everything else free: the bubble-formula
//! tests of the pipeline schedules (`zero_bubble.rs`, `v_schedules.rs`).

use sim::scenario::ScheduleKind;
use sim::task::{StreamKind, TaskKind};
use sim::task_graph::{ComputePass, Work};
use sim::time::SimDuration;

/// Idle time of one simulated iteration, per rank.
pub struct Idle {
    pub makespan: u64,
    /// makespan − busy, per rank.
    pub idle: Vec<u64>,
    /// (last pass end − first pass start) − busy, per rank: gaps inside the rank's span.
    pub inside: Vec<u64>,
    /// First pass start per rank.
    pub first_start: Vec<u64>,
    /// The whole run.
    pub timeline: timeline::Timeline,
}

/// Idle ns of every rank's compute stream of [`crate::small_scenario`]
/// (t = 2, d = 1) with the given F, B (whole backward), I and W times per
/// pass of one chunk, and everything else (transfers, optimizer) free.
pub fn idle_per_rank(
    schedule: ScheduleKind,
    pp: u32,
    chunks: u32,
    microbatches: u32,
    costs: [u64; 4],
) -> Idle {
    idle_per_rank_with_p2p(schedule, pp, chunks, microbatches, costs, 0)
}

/// [`idle_per_rank`] with every activation or gradient transfer between
/// stages taking `p2p_ns` (the formulas' c).
pub fn idle_per_rank_with_p2p(
    schedule: ScheduleKind,
    pp: u32,
    chunks: u32,
    microbatches: u32,
    costs: [u64; 4],
    p2p_ns: u64,
) -> Idle {
    let scenario = crate::small_scenario(schedule, 2, pp, 1, chunks, microbatches);
    idle_of(&scenario, costs, p2p_ns)
}

/// [`Idle`] of one iteration of `scenario` with the given F, B, I and W per
/// pass of one chunk, transfers between stages at `p2p_ns`, everything else free.
pub fn idle_of(scenario: &sim::scenario::Scenario, costs: [u64; 4], p2p_ns: u64) -> Idle {
    let (_, graph) = sim::build_graph(scenario);
    let costs = pass_costs(&graph, costs, p2p_ns);
    let (timeline, _) = sim::run_graph(scenario, &graph, &costs).unwrap();
    let makespan = timeline.makespan_ns();
    let ranks = timeline.header.n_gpus as usize;
    let mut busy = vec![0u64; ranks];
    let mut span = vec![(u64::MAX, 0u64); ranks];
    for task in timeline
        .tasks
        .iter()
        .filter(|t| t.stream == StreamKind::Compute)
    {
        let is_pass = task.kind.is_compute() && task.kind != TaskKind::OptimizerStep;
        for &rank in &timeline.header.groups[task.group as usize] {
            busy[rank as usize] += task.duration_ns();
            if is_pass {
                let (first, last) = &mut span[rank as usize];
                *first = (*first).min(task.start_ns);
                *last = (*last).max(task.end_ns);
            }
        }
    }
    Idle {
        makespan,
        idle: busy.iter().map(|b| makespan - b).collect(),
        inside: busy
            .iter()
            .zip(&span)
            .map(|(b, (first, last))| last - first - b)
            .collect(),
        first_start: span.iter().map(|(first, _)| *first).collect(),
        timeline,
    }
}

/// Several simulated iterations (optimizer post-validation): the steady
/// state as metrics measure it, in exact ns.
pub struct SteadyState {
    /// Each iteration's end (its last task's end).
    pub ends: Vec<u64>,
    /// The measured window, from the end of iteration n−3 to that of n−2.
    pub iteration_ns: u64,
    /// Compute-stream idle ns of every rank inside that window.
    pub idle: Vec<u64>,
    /// The whole run.
    pub timeline: timeline::Timeline,
}

/// [`SteadyState`] of `scenario` with the given F, B, I and W per pass of
/// one chunk and everything else (transfers, exchanges, optimizer) free.
pub fn steady_state(scenario: &sim::scenario::Scenario, costs: [u64; 4]) -> SteadyState {
    steady_state_with_p2p(scenario, costs, 0)
}

/// [`steady_state`] with every activation or gradient transfer between
/// stages taking `p2p_ns` (the formulas' c); post-validation's 8-byte
/// norm and state exchanges stay free (the source sends them over gloo,
/// off the GPU's streams).
pub fn steady_state_with_p2p(
    scenario: &sim::scenario::Scenario,
    costs: [u64; 4],
    p2p_ns: u64,
) -> SteadyState {
    let (_, graph) = sim::build_graph(scenario);
    let costs = pass_costs(&graph, costs, p2p_ns);
    let (timeline, _) = sim::run_graph(scenario, &graph, &costs).unwrap();
    let mut ends: Vec<u64> = Vec::new();
    for task in &timeline.tasks {
        let k = task.iteration.expect("several iterations are numbered") as usize;
        if ends.len() <= k {
            ends.resize(k + 1, 0);
        }
        ends[k] = ends[k].max(task.end_ns);
    }
    assert!(ends.len() >= 3, "{} iterations", ends.len());
    let (start, end) = (ends[ends.len() - 3], ends[ends.len() - 2]);
    let mut busy = vec![0u64; timeline.header.n_gpus as usize];
    for task in timeline
        .tasks
        .iter()
        .filter(|t| t.stream == StreamKind::Compute)
    {
        let (s, e) = (task.start_ns.max(start), task.end_ns.min(end));
        for &rank in &timeline.header.groups[task.group as usize] {
            busy[rank as usize] += e.saturating_sub(s);
        }
    }
    SteadyState {
        iteration_ns: end - start,
        idle: busy.iter().map(|b| (end - start) - b).collect(),
        ends,
        timeline,
    }
}

/// Every compute pass at its given F, B, I or W time (ns), every
/// activation or gradient transfer between stages at `p2p_ns`; everything
/// else free.
/// Every compute pass at its given time, transfers between stages at `p2p_ns`, everything else free.
pub fn pass_costs(
    graph: &sim::task_graph::TaskGraph,
    [f, b, i, w]: [u64; 4],
    p2p_ns: u64,
) -> Vec<sim::cost::WorkCost> {
    sim::uniform_costs(graph, |work| match work {
        Work::Compute { pass, .. } => SimDuration(match pass {
            ComputePass::Forward => f,
            ComputePass::Backward => b,
            ComputePass::InputGradient => i,
            ComputePass::WeightGradient => w,
            ComputePass::Recompute => unreachable!("no recompute"),
        }),
        Work::PipelineTransfer { bytes, .. }
            if *bytes != sim::lowering::post_validation::EXCHANGE_BYTES =>
        {
            SimDuration(p2p_ns)
        }
        _ => SimDuration::ZERO,
    })
}
