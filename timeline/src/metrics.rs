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

use crate::kinds::{CommClass, StreamKind, TaskKind};
use crate::{TaskRecord, Timeline, TimelineHeader};
use serde::Serialize;

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

/// Latest end of each iteration present, in iteration order (one entry,
/// 0, when there are no tasks): [`Timeline::iteration_ends_ns`] on any [`Spans`].
pub fn iteration_ends_ns(spans: &impl Spans) -> Vec<u64> {
    // Indexed by iteration (a handful): `None` for an iteration without tasks.
    let mut ends: Vec<Option<u64>> = Vec::new();
    for index in 0..spans.len() {
        let (iteration, end_ns) = spans.iteration_end(index);
        let iteration = iteration as usize;
        if ends.len() <= iteration {
            ends.resize(iteration + 1, None);
        }
        let end = ends[iteration].get_or_insert(0);
        *end = (*end).max(end_ns);
    }
    let ends: Vec<u64> = ends.into_iter().flatten().collect();
    if ends.is_empty() {
        return vec![0];
    }
    ends
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ExposedCommunication {
    pub tensor_s: f64,
    pub pipeline_s: f64,
    pub data_parallel_s: f64,
    /// ZeRO-Offload: compute idle while PCIe copies or CPU Adam of the rank run.
    pub offload_s: f64,
    /// Host-bound: compute idle while the rank's host thread is still issuing
    /// work (absent from the JSON when the timeline has no host lane).
    #[serde(skip_serializing_if = "is_zero")]
    pub host_s: f64,
    /// A mixture of experts' token all-to-alls over the expert-parallel
    /// group, blocking on the compute stream (absent when there are none).
    #[serde(skip_serializing_if = "is_zero")]
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

/// Sum of lengths of the intersection of two sorted, disjoint interval lists.
fn overlap_ns(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            total += hi - lo;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// Sorts and merges overlapping intervals.
fn union(mut intervals: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    intervals.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(intervals.len());
    for (start, end) in intervals {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// Gaps of `busy` (sorted, disjoint, inside the window) within [start, horizon).
fn gaps(busy: &[(u64, u64)], start: u64, horizon: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(busy.len() + 1);
    let mut cursor = start;
    for &(start, end) in busy {
        if start > cursor {
            out.push((cursor, start));
        }
        cursor = cursor.max(end);
    }
    if horizon > cursor {
        out.push((cursor, horizon));
    }
    out
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
    let header = timeline.header();
    let n_ranks = header.n_gpus as usize;
    let replicas = replicas.max(1);
    let tensor_parallel = header.layout.tensor_parallel.max(1);
    // Ranks whose tasks are in the timeline (all, without symmetry).
    let simulated = |rank: u32| replicas == 1 || (rank / tensor_parallel).is_multiple_of(replicas);
    let layout = &header.layout;
    let ranks_per_stage = layout.ranks_per_stage() as usize;
    let ends = iteration_ends_ns(timeline);
    let n_iterations = ends.len();
    // The steady-state window: the last iteration that another one follows
    // (with DPU the next iteration's forward and backward overlap it).
    let (window_start, window_end) = match ends.as_slice() {
        [.., before, measured, _last] => (*before, *measured),
        [previous, last] => (*previous, *last),
        // One iteration: its end is the latest end of all (the makespan).
        _ => (0, ends.iter().copied().max().unwrap_or(0)),
    };
    let iteration_ns = window_end - window_start;
    let clip = |(start, end): (u64, u64)| -> Option<(u64, u64)> {
        let (start, end) = (start.max(window_start), end.min(window_end));
        (end > start).then_some((start, end))
    };

    // Each group's simulated members, once (a division per member is
    // what the per-task loops below would otherwise pay).
    let members: Vec<Vec<u32>> = header
        .groups
        .iter()
        .map(|group| {
            group
                .iter()
                .copied()
                .filter(|&rank| simulated(rank))
                .collect()
        })
        .collect();
    // Tasks of each rank (groups expanded), in CSR form.
    let mut counts = vec![0usize; n_ranks + 1];
    for index in 0..timeline.len() {
        for &rank in &members[timeline.group(index) as usize] {
            counts[rank as usize + 1] += 1;
        }
    }
    for i in 0..n_ranks {
        counts[i + 1] += counts[i];
    }
    let mut fill = counts.clone();
    let mut by_rank = vec![0u32; counts[n_ranks]];
    for index in 0..timeline.len() {
        for &rank in &members[timeline.group(index) as usize] {
            by_rank[fill[rank as usize]] = index as u32;
            fill[rank as usize] += 1;
        }
    }

    // Compute tasks run on one replica's ranks: under symmetry each stands
    // for its `replicas` twins, numbered replica by replica in full
    // expansion, so the sums repeat the same terms in the same order (the
    // same bits); the terms are gathered once, 8 bytes each, a
    // recomputation's negated. Both sums run in one loop, two independent
    // chains: the total adds |term|, the model sum max(term, 0) — +0.0 or
    // −0.0 for a recomputation, which leaves a sum of non-negative terms
    // (from +0.0) as it is. abs and max are exact.
    let mut terms: Vec<f64> = Vec::new();
    for index in 0..timeline.len() {
        let (kind, group, flops) = timeline.flops(index);
        if kind.is_compute() {
            let term = flops * header.groups[group as usize].len() as f64;
            terms.push(if kind == TaskKind::Recompute {
                -term
            } else {
                term
            });
        }
    }
    let mut total_flops = 0.0;
    let mut model_flops = 0.0;
    for _ in 0..replicas {
        for &term in &terms {
            total_flops += term.abs();
            model_flops += term.max(0.0);
        }
    }
    drop(terms);

    let mut idle_sum_ns = 0u128;
    let mut compute_sum_ns = 0u128;
    let mut exposed_sum_ns = [0u128; 6];
    let mut in_flight_sum_ns = [0u128; 6];
    let mut stage_idle_ns = vec![0u128; layout.pipeline_parallel as usize];
    let mut expert_stream_exposed_ns = 0u128;
    for rank in (0..n_ranks).filter(|&rank| simulated(rank as u32)) {
        let tasks = &by_rank[counts[rank]..counts[rank + 1]];
        let mut busy = Vec::new();
        let mut comm: [Vec<(u64, u64)>; 5] = Default::default();
        // Expert all-to-alls on their own stream (overlapped F&B pairs):
        // exposed where the compute stream idles, as pipeline transfers are.
        let mut expert_stream: Vec<(u64, u64)> = Vec::new();
        for &index in tasks {
            let (kind, stream, start_ns, end_ns) = timeline.interval(index as usize);
            let duration_ns = end_ns - start_ns;
            let in_window = clip((start_ns, end_ns));
            if stream == StreamKind::Compute {
                busy.extend(in_window);
                if kind.is_compute() {
                    compute_sum_ns += duration_ns as u128;
                }
            }
            match kind.communication_class() {
                Some(CommClass::Tensor) => exposed_sum_ns[0] += duration_ns as u128,
                Some(CommClass::Pipeline) => comm[1].extend(in_window),
                Some(CommClass::DataParallel) => comm[2].extend(in_window),
                Some(CommClass::Offload) => comm[3].extend(in_window),
                Some(CommClass::Host) => comm[4].extend(in_window),
                Some(CommClass::ExpertParallel) if stream != StreamKind::Compute => {
                    expert_stream.extend(in_window)
                }
                Some(CommClass::ExpertParallel) => exposed_sum_ns[5] += duration_ns as u128,
                None => {}
            }
        }
        let busy = union(busy);
        let busy_ns: u64 = busy.iter().map(|(s, e)| e - s).sum();
        let idle_ns = iteration_ns.saturating_sub(busy_ns);
        idle_sum_ns += idle_ns as u128;
        stage_idle_ns[rank / ranks_per_stage] += idle_ns as u128;
        let idle = gaps(&busy, window_start, window_end);
        for class in 1..5 {
            let intervals = union(std::mem::take(&mut comm[class]));
            exposed_sum_ns[class] += overlap_ns(&idle, &intervals) as u128;
            in_flight_sum_ns[class] += intervals.iter().map(|(s, e)| (e - s) as u128).sum::<u128>();
        }
        if !expert_stream.is_empty() {
            expert_stream_exposed_ns += overlap_ns(&idle, &union(expert_stream)) as u128;
        }
    }

    // Every simulated rank stands for `replicas` ranks (its twins).
    if replicas > 1 {
        let weight = replicas as u128;
        idle_sum_ns *= weight;
        compute_sum_ns *= weight;
        expert_stream_exposed_ns *= weight;
        for sum in exposed_sum_ns.iter_mut().chain(in_flight_sum_ns.iter_mut()) {
            *sum *= weight;
        }
        for idle in stage_idle_ns.iter_mut() {
            *idle *= weight;
        }
    }
    // Work totals are per iteration; the TP all-reduce sum counts every iteration too.
    total_flops /= n_iterations as f64;
    model_flops /= n_iterations as f64;
    compute_sum_ns /= n_iterations as u128;
    exposed_sum_ns[0] /= n_iterations as u128;
    exposed_sum_ns[5] /= n_iterations as u128;
    // The steady-state window's exposure of the stream's all-to-alls (as
    // the other windowed classes), beside the per-iteration sum above.
    exposed_sum_ns[5] += expert_stream_exposed_ns;
    let iteration_s = iteration_ns as f64 * 1e-9;
    let per_rank = |sum: u128| sum as f64 * 1e-9 / n_ranks.max(1) as f64;
    let tflops_per_gpu = if iteration_s > 0.0 {
        total_flops / (iteration_s * n_ranks as f64) / 1e12
    } else {
        0.0
    };
    let fraction = |idle: u128, ranks: usize| {
        if iteration_ns == 0 {
            0.0
        } else {
            idle as f64 / (ranks as f64 * iteration_ns as f64)
        }
    };
    Metrics {
        iteration_time_s: iteration_s,
        iterations: n_iterations as u32,
        iteration_times_s: ends
            .iter()
            .scan(0u64, |previous, &end| {
                let span = end.saturating_sub(*previous);
                *previous = end;
                Some(span as f64 * 1e-9)
            })
            .collect(),
        samples_per_s: if iteration_s > 0.0 {
            layout.global_batch as f64 / iteration_s
        } else {
            0.0
        },
        tflops_per_gpu,
        model_tflops_per_gpu: if iteration_s > 0.0 {
            model_flops / (iteration_s * n_ranks as f64) / 1e12
        } else {
            0.0
        },
        percent_of_peak: 100.0 * tflops_per_gpu * 1e12 / peak_flops_per_s,
        bubble_fraction: fraction(idle_sum_ns, n_ranks),
        bubble_fraction_per_stage: stage_idle_ns
            .iter()
            .map(|&idle| fraction(idle, ranks_per_stage))
            .collect(),
        compute_time_s: per_rank(compute_sum_ns),
        exposed_communication: ExposedCommunication {
            tensor_s: per_rank(exposed_sum_ns[0]),
            pipeline_s: per_rank(exposed_sum_ns[1]),
            data_parallel_s: per_rank(exposed_sum_ns[2]),
            offload_s: per_rank(exposed_sum_ns[3]),
            host_s: per_rank(exposed_sum_ns[4]),
            expert_parallel_s: per_rank(exposed_sum_ns[5]),
        },
        communication: ExposedCommunication {
            tensor_s: per_rank(exposed_sum_ns[0]),
            pipeline_s: per_rank(in_flight_sum_ns[1]),
            data_parallel_s: per_rank(in_flight_sum_ns[2]),
            offload_s: per_rank(in_flight_sum_ns[3]),
            host_s: per_rank(in_flight_sum_ns[4]),
            expert_parallel_s: per_rank(exposed_sum_ns[5]),
        },
    }
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
mod tests {
    use super::*;

    #[test]
    fn interval_helpers_measure_overlaps() {
        let merged = union(vec![(5, 8), (0, 2), (1, 3), (8, 9)]);
        assert_eq!(merged, vec![(0, 3), (5, 9)]);
        assert_eq!(gaps(&merged, 0, 12), vec![(3, 5), (9, 12)]);
        assert_eq!(gaps(&[(4, 6)], 2, 8), vec![(2, 4), (6, 8)]);
        assert_eq!(overlap_ns(&[(3, 5), (9, 12)], &[(4, 10)]), 2);
    }
}
