//! Metrics computed from a [`Timeline`] alone, so simulated and measured
//! timelines are judged the same way.
//!
//! - iteration time: the latest task end;
//! - TFLOP/s per GPU: matrix FLOPs of every compute task (recompute included,
//!   as Megatron's Eq. 3 counts them) ÷ (iteration time × GPUs); model TFLOP/s
//!   leaves the recompute out;
//! - bubble fraction: compute-stream idle time ÷ iteration time, per rank,
//!   averaged per stage and overall (tensor all-reduces run on the compute
//!   stream, so they are busy time, reported as exposed TP communication);
//! - exposed communication per class: for TP the all-reduce time; for PP and
//!   DP the time a rank's compute stream is idle while that class's transfers
//!   of the rank are in flight (averaged over ranks);
//! - exposed offload time (ZeRO-Offload): the time a rank's compute stream is
//!   idle while its PCIe copies or CPU Adam run.
//!
//! When the timeline records several consecutive iterations (ZeRO-Offload with
//! the delayed parameter update), every metric describes the steady state:
//! the window from the end of iteration n−3 to the end of iteration n−2 (of
//! n, 0-based; the end of an iteration is its last task's end), i.e. the last
//! iteration that another one follows, because with DPU the next iteration's
//! forward and backward overlap it (with two iterations, the last one).
//! `iteration_time_s` is that span; FLOPs and compute time are per iteration
//! (all iterations do the same work); idle and exposed times are measured
//! inside that window. `iteration_times_s` lists every iteration's span.

mod rank_pass;
mod rank_view;
mod repeated_sum;
mod totals;

use crate::kinds::{StreamKind, TaskKind};
use crate::{TaskRecord, Timeline, TimelineHeader};
use rank_pass::RankPass;
pub use rank_view::{compute_rank_view, Interval, RankView};
use serde::{Deserialize, Serialize};
use totals::{FlopTotals, RankTotals};

/// What metrics read of one task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub kind: TaskKind,
    pub stream: StreamKind,
    /// Index into the header's groups.
    pub group: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Matrix FLOPs done by each rank of the group.
    pub flops: f64,
    /// Training iteration (0 when the record names none).
    pub iteration: u32,
}

impl Span {
    pub fn duration_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

impl From<&TaskRecord> for Span {
    fn from(task: &TaskRecord) -> Span {
        Span {
            kind: task.kind,
            stream: task.stream,
            group: task.group,
            start_ns: task.start_ns,
            end_ns: task.end_ns,
            flops: task.flops,
            iteration: task.iteration.unwrap_or(0),
        }
    }
}

/// A timeline as metrics read it: the header and every task's [`Span`] by
/// id. A [`Timeline`] is one; a producer can offer its own (the simulator's
/// view over the engine's start and end arrays) without building records.
pub trait Spans {
    fn header(&self) -> &TimelineHeader;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Task `index` (ids are dense, `0..len()`).
    fn span(&self, index: usize) -> Span;
    /// Task `index`'s group (what the per-rank index reads; a view may answer
    /// it without building the whole span).
    fn group(&self, index: usize) -> u32 {
        self.span(index).group
    }
    /// Task `index`'s kind, group and FLOPs per rank (what the FLOP count reads).
    fn flops(&self, index: usize) -> (TaskKind, u32, f64) {
        let span = self.span(index);
        (span.kind, span.group, span.flops)
    }
    /// Task `index`'s iteration and end (what [`iteration_ends_ns`] reads).
    fn iteration_end(&self, index: usize) -> (u32, u64) {
        let span = self.span(index);
        (span.iteration, span.end_ns)
    }
    /// Task `index`'s kind, stream, start and end (what the per-rank pass reads).
    fn interval(&self, index: usize) -> (TaskKind, StreamKind, u64, u64) {
        let span = self.span(index);
        (span.kind, span.stream, span.start_ns, span.end_ns)
    }
}

impl Spans for Timeline {
    fn header(&self) -> &TimelineHeader {
        &self.header
    }
    fn len(&self) -> usize {
        self.tasks.len()
    }
    fn span(&self, index: usize) -> Span {
        Span::from(&self.tasks[index])
    }
}

/// The steady-state window of a run whose iterations end at `ends` (in
/// order, at least one): the last iteration that another one follows (with
/// DPU the next iteration's forward and backward overlap it); with two, the
/// last; with one, from 0 to its end (the makespan).
pub fn steady_window_ns(ends: &[u64]) -> (u64, u64) {
    match ends {
        [.., before, measured, _last] => (*before, *measured),
        [previous, last] => (*previous, *last),
        _ => (0, ends.iter().copied().max().unwrap_or(0)),
    }
}

/// Latest end of each iteration present, in iteration order (one entry,
/// 0, when there are no tasks): [`Timeline::iteration_ends_ns`] on any [`Spans`].
pub fn iteration_ends_ns(spans: &impl Spans) -> Vec<u64> {
    let mut ends = IterationEnds::default();
    for index in 0..spans.len() {
        let (iteration, end_ns) = spans.iteration_end(index);
        ends.add(iteration, end_ns);
    }
    ends.finish()
}

/// Each iteration's latest end, gathered task by task ([`iteration_ends_ns`]).
#[derive(Debug, Default)]
pub struct IterationEnds {
    /// Indexed by iteration (a handful): `None` for an iteration without tasks.
    ends: Vec<Option<u64>>,
}

impl IterationEnds {
    /// A task of `iteration` ending at `end_ns`.
    pub fn add(&mut self, iteration: u32, end_ns: u64) {
        let iteration = iteration as usize;
        if self.ends.len() <= iteration {
            self.ends.resize(iteration + 1, None);
        }
        let end = self.ends[iteration].get_or_insert(0);
        *end = (*end).max(end_ns);
    }

    /// Both gatherings' tasks in one (the latest end of each iteration
    /// either saw): the same whichever order tasks were added in.
    pub fn merge(mut self, other: IterationEnds) -> IterationEnds {
        if self.ends.len() < other.ends.len() {
            self.ends.resize(other.ends.len(), None);
        }
        for (mine, theirs) in self.ends.iter_mut().zip(other.ends) {
            *mine = match (*mine, theirs) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        self
    }

    /// The latest end of each iteration present, in iteration order (one
    /// entry, 0, when no task was added).
    pub fn finish(self) -> Vec<u64> {
        let ends: Vec<u64> = self.ends.into_iter().flatten().collect();
        if ends.is_empty() {
            return vec![0];
        }
        ends
    }
}

/// Latest end over all tasks: [`Timeline::makespan_ns`] on any [`Spans`].
pub fn makespan_ns(spans: &impl Spans) -> u64 {
    (0..spans.len())
        .map(|index| spans.span(index).end_ns)
        .max()
        .unwrap_or(0)
}

fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

/// Seconds of communication not hidden behind compute, per class (mean per rank).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExposedCommunication {
    pub tensor_s: f64,
    pub pipeline_s: f64,
    pub data_parallel_s: f64,
    /// ZeRO-Offload: compute idle while PCIe copies or CPU Adam of the rank run.
    pub offload_s: f64,
    /// Host-bound: compute idle while the rank's host thread is still issuing
    /// work (absent from the JSON when the timeline has no host lane).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_s: f64,
    /// A mixture of experts' token all-to-alls over the expert-parallel
    /// group, blocking on the compute stream (absent when there are none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub expert_parallel_s: f64,
}

/// Headline numbers of one iteration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// The (last, steady-state) iteration's span.
    pub iteration_time_s: f64,
    /// Iterations recorded (1 unless several consecutive ones were simulated).
    pub iterations: u32,
    /// Span of each recorded iteration: its last task end minus the previous one's.
    pub iteration_times_s: Vec<f64>,
    pub samples_per_s: f64,
    pub tflops_per_gpu: f64,
    pub model_tflops_per_gpu: f64,
    pub percent_of_peak: f64,
    pub bubble_fraction: f64,
    pub bubble_fraction_per_stage: Vec<f64>,
    /// Mean per rank: forward, recompute, backward and optimizer kernels.
    pub compute_time_s: f64,
    /// Seconds not hidden behind compute, per class (mean per rank).
    pub exposed_communication: ExposedCommunication,
    /// Seconds each class was in flight on a rank (mean per rank); overlapped = this − exposed.
    pub communication: ExposedCommunication,
}

/// Computes the metrics; `peak_flops_per_s` is the GPU's dense fp16 peak.
/// The timeline must pass [`Timeline::check`] ([`Timeline::read`] and
/// [`crate::compare::compare`] check it; the producers build valid ones);
/// [`checked`] checks first.
pub fn compute(timeline: &Timeline, peak_flops_per_s: f64) -> Metrics {
    debug_assert!(
        timeline.check("timeline").is_ok(),
        "{:?}",
        timeline.check("timeline")
    );
    compute_spans(timeline, peak_flops_per_s)
}

/// [`compute`] on any [`Spans`] (the same arithmetic in the same order, so a
/// view and the Timeline it would materialise give identical metrics).
pub fn compute_spans(timeline: &impl Spans, peak_flops_per_s: f64) -> Metrics {
    compute_spans_replicated(timeline, peak_flops_per_s, 1)
}

/// [`compute_spans`] on the timeline of one representative data-parallel
/// replica standing for `replicas` identical ones (the simulator's symmetric
/// mode): `timeline` holds replica 0's tasks (data index 0 of the dp-cp
/// group, ranks with `(rank / t) % replicas == 0`) and the collectives that
/// join replicas, whose groups name every replica's ranks. Per-rank sums run
/// over replica 0's ranks and count `replicas` times (every other rank's
/// intervals equal its twin's), and the FLOP total adds replica 0's compute
/// tasks `replicas` times in id order, the order full expansion numbers the
/// replicas' passes in (replica by replica): the same arithmetic, so the same
/// bits, as [`compute_spans`] on the full timeline. `replicas` = 1 is
/// [`compute_spans`].
pub fn compute_spans_replicated(
    timeline: &impl Spans,
    peak_flops_per_s: f64,
    replicas: u32,
) -> Metrics {
    match replicas {
        0 | 1 => compute_spans_weighted(timeline, peak_flops_per_s, None),
        replicas => compute_spans_weighted(timeline, peak_flops_per_s, Some(&[replicas])),
    }
}

/// [`compute_spans`] on the timeline of the first `weights.len()`
/// data-parallel replicas, replica i standing for `weights[i]` replicas
/// (their sum: every replica): a symmetric run's `[d·cp]`, or with
/// exceptions replica 0 for the alike replicas and each one holding slow
/// ranks for itself. Per-rank sums count each rank `weights` of its replica
/// times; the FLOP total adds replica 0's compute tasks d·cp times in id
/// order (every replica runs the same FLOPs), as [`compute_spans_replicated`]
/// does. `None`: the full timeline, [`compute_spans`].
pub fn compute_spans_weighted(
    timeline: &impl Spans,
    peak_flops_per_s: f64,
    weights: Option<&[u32]>,
) -> Metrics {
    compute_spans_with(
        timeline,
        peak_flops_per_s,
        weights,
        TensorRanks::EachMeasured,
    )
}

/// [`compute_spans_weighted`] on a timeline whose tensor groups' ranks run
/// at the same times (a summary run's merged tasks, `sim::summary_run`):
/// each group's first rank is measured and counts t times. The per-rank
/// sums are integers, so that is what measuring all t gives; the FLOP total
/// is unchanged.
pub fn compute_spans_tensor_alike(
    timeline: &impl Spans,
    peak_flops_per_s: f64,
    weights: Option<&[u32]>,
) -> Metrics {
    compute_spans_with(timeline, peak_flops_per_s, weights, TensorRanks::Alike)
}

/// Whether every rank of a tensor group is measured, or its first for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TensorRanks {
    EachMeasured,
    Alike,
}

fn compute_spans_with(
    timeline: &impl Spans,
    peak_flops_per_s: f64,
    weights: Option<&[u32]>,
    tensor_ranks: TensorRanks,
) -> Metrics {
    let header = timeline.header();
    let n_ranks = header.n_gpus as usize;
    let replicas: u32 = weights.map_or(1, |weights| weights.iter().sum());
    let lowered = weights.map_or(1, |weights| weights.len() as u32);
    let tensor_parallel = header.layout.tensor_parallel.max(1);
    let data_index = |rank: u32| (rank / tensor_parallel) % replicas;
    let measured_tensor_rank = |rank: u32| match tensor_ranks {
        TensorRanks::EachMeasured => true,
        TensorRanks::Alike => rank.is_multiple_of(tensor_parallel),
    };
    // Ranks whose tasks are in the timeline (all, without symmetry) and
    // are measured.
    let simulated =
        |rank: u32| (replicas == 1 || data_index(rank) < lowered) && measured_tensor_rank(rank);
    // What a simulated rank's sums count for.
    let tensor_weight = match tensor_ranks {
        TensorRanks::EachMeasured => 1,
        TensorRanks::Alike => u128::from(tensor_parallel),
    };
    let weight_of = |rank: u32| {
        tensor_weight
            * match weights {
                Some(weights) if replicas > 1 => weights[data_index(rank) as usize] as u128,
                _ => 1,
            }
    };
    let layout = &header.layout;
    let ranks_per_stage = layout.ranks_per_stage() as usize;
    let ends = iteration_ends_ns(timeline);
    let (window_start, window_end) = steady_window_ns(&ends);
    // Compute tasks run on one replica's ranks: under symmetry each stands
    // for its `replicas` twins, numbered replica by replica in full
    // expansion, so the sums repeat the same terms in the same order (the
    // same bits); the terms are gathered once, 8 bytes each, a
    // recomputation's negated. Both sums run in one loop, two independent
    // chains: the total adds |term|, the model sum max(term, 0) — +0.0 or
    // −0.0 for a recomputation, which leaves a sum of non-negative terms
    // (from +0.0) as it is. abs and max are exact. The same pass counts
    // each group's tasks, which sizes the per-rank index below.
    let mut terms = repeated_sum::TermRuns::default();
    let mut tasks_of_group = vec![0usize; header.groups.len()];
    // Replica 0's compute tasks stand for every replica's: with exceptions,
    // the other lowered replicas' are left out (once per group).
    let counted_group: Vec<bool> = match lowered {
        1 => Vec::new(),
        _ => header
            .groups
            .iter()
            .map(|ranks| ranks.first().is_some_and(|&rank| data_index(rank) == 0))
            .collect(),
    };
    for index in 0..timeline.len() {
        let (kind, group, flops) = timeline.flops(index);
        tasks_of_group[group as usize] += 1;
        if kind.is_compute() && (lowered == 1 || counted_group[group as usize]) {
            // Once per rank of its group, as that many one-rank tasks with
            // consecutive ids add it (a merged summary run's tasks).
            let term = if kind == TaskKind::Recompute {
                -flops
            } else {
                flops
            };
            let ranks = header.groups[group as usize].len();
            terms.push(term, ranks as u64);
        }
    }
    // Every replica's terms again, in full expansion's order: the same
    // bits as adding them replica by replica (`repeated_sum.rs`).
    let (total_flops, model_flops) = repeated_sum::repeated_flop_sums_of_runs(&terms, replicas);
    drop(terms);

    // Each group's simulated members, once, in CSR form (a division per
    // member is what the per-task loop below would otherwise pay).
    let mut member_offsets = Vec::with_capacity(header.groups.len() + 1);
    let mut members: Vec<u32> = Vec::new();
    member_offsets.push(0);
    for group in &header.groups {
        members.extend(group.iter().copied().filter(|&rank| simulated(rank)));
        member_offsets.push(members.len());
    }
    let members_of = |group: usize| &members[member_offsets[group]..member_offsets[group + 1]];
    // Tasks of each rank (groups expanded), in CSR form: a rank's count is
    // the tasks of its groups.
    let mut counts = vec![0usize; n_ranks + 1];
    for (group, &tasks) in tasks_of_group.iter().enumerate() {
        for &rank in members_of(group) {
            counts[rank as usize + 1] += tasks;
        }
    }
    drop(tasks_of_group);
    for i in 0..n_ranks {
        counts[i + 1] += counts[i];
    }
    let mut fill = counts[..n_ranks].to_vec();
    let mut by_rank = vec![0u32; counts[n_ranks]];
    for index in 0..timeline.len() {
        for &rank in members_of(timeline.group(index) as usize) {
            by_rank[fill[rank as usize]] = index as u32;
            fill[rank as usize] += 1;
        }
    }
    drop(fill);

    // Ranks in order, each reusing the previous one's sums when its
    // intervals are the same (checked in full; see `rank_pass`).
    let mut totals = RankTotals::new(layout.pipeline_parallel as usize);
    let mut pass = RankPass::new(window_start, window_end);
    for rank in (0..n_ranks).filter(|&rank| simulated(rank as u32)) {
        let sums = pass.sums(timeline, &by_rank[counts[rank]..counts[rank + 1]]);
        // A simulated rank stands for its replica's weight in ranks (its twins).
        totals.add(&sums, rank / ranks_per_stage, weight_of(rank as u32));
    }
    totals.metrics(
        header,
        &ends,
        FlopTotals {
            total: total_flops,
            model: model_flops,
        },
        peak_flops_per_s,
    )
}

/// [`compute`] on a timeline that is first checked, for timelines from outside.
pub fn checked(
    timeline: &Timeline,
    name: &str,
    peak_flops_per_s: f64,
) -> Result<Metrics, crate::TimelineError> {
    timeline.check(name)?;
    Ok(compute(timeline, peak_flops_per_s))
}

#[cfg(test)]
mod iteration_ends_tests {
    use super::IterationEnds;

    /// Tasks split between two gatherings, merged, give one gathering's
    /// ends: iterations only one side saw, and one neither saw.
    #[test]
    fn merged_gatherings_give_one_gatherings_ends() {
        let tasks = [(0, 5), (2, 40), (0, 9), (3, 7), (2, 12), (0, 1)];
        let mut whole = IterationEnds::default();
        tasks.iter().for_each(|&(i, end)| whole.add(i, end));
        for split in 0..=tasks.len() {
            let (mut left, mut right) = (IterationEnds::default(), IterationEnds::default());
            tasks[..split].iter().for_each(|&(i, end)| left.add(i, end));
            tasks[split..]
                .iter()
                .for_each(|&(i, end)| right.add(i, end));
            let expected = vec![9, 40, 7];
            assert_eq!(left.merge(right).finish(), expected, "split at {split}");
        }
        assert_eq!(whole.finish(), vec![9, 40, 7]);
        let empty = IterationEnds::default().merge(IterationEnds::default());
        assert_eq!(empty.finish(), vec![0]);
    }
}
