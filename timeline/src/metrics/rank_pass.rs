//! The metrics' per-rank pass: one rank's task intervals reduced to integer
//! nanosecond sums (compute-stream idle time in the steady-state window,
//! compute time, exposed and in-flight time per communication class).
//!
//! Ranks are measured in rank order by one [`RankPass`], which keeps its
//! interval buffers across ranks and remembers the last rank it measured: a
//! rank whose tasks are the same task ids, or whose sequence of (kind, stream,
//! start, end) is the same sequence, gets that rank's sums without measuring
//! again (the t tensor ranks of a stage usually do). Equality is checked in
//! full, never assumed; the sums are integers, so adding a reused rank's sums
//! is exactly what adding its recomputed sums would be.

use super::{Interval, Spans};
use crate::kinds::{CommClass, StreamKind};

/// One rank's sums, integer nanoseconds. Classes are indexed as the metrics
/// index them: 0 tensor, 1 pipeline, 2 data parallel, 3 offload, 4 host,
/// 5 expert parallel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RankSums {
    /// Compute-stream idle time inside the window.
    pub idle_ns: u64,
    /// Compute kernels' time, every iteration.
    pub compute_ns: u128,
    /// Tensor all-reduce (0) and blocking expert all-to-all (5) time over
    /// every iteration; classes 1–4: time inside the window the compute stream idles
    /// while that class is in flight.
    pub exposed_ns: [u128; 6],
    /// Classes 1–4: time inside the window that class is in flight (0 and 5 unused).
    pub in_flight_ns: [u128; 6],
    /// Expert all-to-alls on their own stream: time inside the window the
    /// compute stream idles while they run.
    pub expert_stream_exposed_ns: u128,
}

/// Measures ranks one after another (see the module header).
pub(crate) struct RankPass<'a> {
    window_start_ns: u64,
    window_end_ns: u64,
    /// The last rank measured (or reused): its task ids and sums.
    last_tasks: &'a [u32],
    last_sums: Option<RankSums>,
    /// Clipped compute-stream intervals, then their union.
    busy: Vec<(u64, u64)>,
    /// Clipped intervals per windowed class: pipeline, data parallel,
    /// offload, host, and expert all-to-alls on their own stream.
    windowed: [Vec<(u64, u64)>; 5],
    /// The last rank measured by [`RankPass::sums_of_intervals`]: its
    /// intervals and sums (apart from `last_tasks`' and `last_sums`, so a
    /// pass may use either way).
    last_intervals: Vec<Interval>,
    last_interval_sums: Option<RankSums>,
    /// Ranks whose sums were reused (for tests).
    reused: usize,
}

impl<'a> RankPass<'a> {
    /// A pass measuring idle and exposed time inside [start, end).
    pub fn new(window_start_ns: u64, window_end_ns: u64) -> RankPass<'a> {
        RankPass {
            window_start_ns,
            window_end_ns,
            last_tasks: &[],
            last_sums: None,
            busy: Vec::new(),
            windowed: Default::default(),
            last_intervals: Vec::new(),
            last_interval_sums: None,
            reused: 0,
        }
    }

    /// Ranks so far whose sums were the previous rank's.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// The sums of the rank running `tasks` (ids into `timeline`, in id order).
    pub fn sums(&mut self, timeline: &impl Spans, tasks: &'a [u32]) -> RankSums {
        if let Some(sums) = self.last_sums {
            if same_intervals(timeline, tasks, self.last_tasks) {
                self.last_tasks = tasks;
                self.reused += 1;
                return sums;
            }
        }
        let sums = self.measure(timeline, tasks);
        self.last_tasks = tasks;
        self.last_sums = Some(sums);
        sums
    }

    /// The sums of the rank whose tasks run over `intervals` (any order):
    /// the previous call's when they are the same sequence.
    pub fn sums_of_intervals(&mut self, intervals: &[Interval]) -> RankSums {
        if let Some(sums) = self.last_interval_sums {
            if intervals == self.last_intervals.as_slice() {
                self.reused += 1;
                return sums;
            }
        }
        let sums = self.measure_intervals(intervals.iter().copied());
        self.last_intervals.clear();
        self.last_intervals.extend_from_slice(intervals);
        self.last_interval_sums = Some(sums);
        sums
    }

    /// Measures the rank running `tasks`.
    fn measure(&mut self, timeline: &impl Spans, tasks: &[u32]) -> RankSums {
        self.measure_intervals(tasks.iter().map(|&index| timeline.interval(index as usize)))
    }

    /// Measures the rank whose tasks run over `intervals`.
    fn measure_intervals(&mut self, intervals: impl Iterator<Item = Interval>) -> RankSums {
        let (window_start, window_end) = (self.window_start_ns, self.window_end_ns);
        let mut sums = RankSums::default();
        self.busy.clear();
        for intervals in &mut self.windowed {
            intervals.clear();
        }
        for (kind, stream, start_ns, end_ns) in intervals {
            let duration_ns = (end_ns - start_ns) as u128;
            let (clipped_start, clipped_end) = (start_ns.max(window_start), end_ns.min(window_end));
            let in_window = (clipped_end > clipped_start).then_some((clipped_start, clipped_end));
            if stream == StreamKind::Compute {
                self.busy.extend(in_window);
                if kind.is_compute() {
                    sums.compute_ns += duration_ns;
                }
            }
            match kind.communication_class() {
                Some(CommClass::Tensor) => sums.exposed_ns[0] += duration_ns,
                Some(CommClass::Pipeline) => self.windowed[0].extend(in_window),
                Some(CommClass::DataParallel) => self.windowed[1].extend(in_window),
                Some(CommClass::Offload) => self.windowed[2].extend(in_window),
                Some(CommClass::Host) => self.windowed[3].extend(in_window),
                Some(CommClass::ExpertParallel) if stream != StreamKind::Compute => {
                    self.windowed[4].extend(in_window)
                }
                Some(CommClass::ExpertParallel) => sums.exposed_ns[5] += duration_ns,
                None => {}
            }
        }
        let busy_ns = union_in_place(&mut self.busy);
        sums.idle_ns = (window_end - window_start).saturating_sub(busy_ns);
        // Every interval lies inside the window, which the busy intervals and
        // the idle gaps between them tile: the part of a class's union in the
        // gaps is its length less its overlap with the busy intervals.
        for class in 1..5 {
            let intervals = &mut self.windowed[class - 1];
            let in_flight_ns = union_in_place(intervals);
            sums.in_flight_ns[class] = in_flight_ns as u128;
            sums.exposed_ns[class] = (in_flight_ns - overlap_ns(&self.busy, intervals)) as u128;
        }
        let expert_stream = &mut self.windowed[4];
        let in_flight_ns = union_in_place(expert_stream);
        sums.expert_stream_exposed_ns =
            (in_flight_ns - overlap_ns(&self.busy, expert_stream)) as u128;
        sums
    }
}

/// Whether two ranks' tasks (ids in id order) have the same sequence of
/// (kind, stream, start, end): position by position, the same id or two ids
/// whose intervals are equal (only those are read).
fn same_intervals(timeline: &impl Spans, tasks: &[u32], other: &[u32]) -> bool {
    tasks.len() == other.len()
        && tasks.iter().zip(other).all(|(&task, &twin)| {
            task == twin || timeline.interval(task as usize) == timeline.interval(twin as usize)
        })
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

/// Sorts (unless already sorted) and merges overlapping or touching
/// intervals in place; returns the union's length.
fn union_in_place(intervals: &mut Vec<(u64, u64)>) -> u64 {
    if !intervals.is_sorted() {
        intervals.sort_unstable();
    }
    let mut merged = 0;
    for index in 0..intervals.len() {
        let (start, end) = intervals[index];
        if merged > 0 && start <= intervals[merged - 1].1 {
            let last = &mut intervals[merged - 1].1;
            *last = (*last).max(end);
        } else {
            intervals[merged] = (start, end);
            merged += 1;
        }
    }
    intervals.truncate(merged);
    intervals.iter().map(|(start, end)| end - start).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::TaskKind;
    use crate::{Producer, TaskRecord, Timeline, TimelineHeader, TimelineLayout};

    fn task(
        id: u32,
        kind: TaskKind,
        stream: StreamKind,
        group: u32,
        span_ns: (u64, u64),
    ) -> TaskRecord {
        TaskRecord {
            id,
            kind,
            stream,
            group,
            stage: 0,
            chunk: 0,
            microbatch: None,
            start_ns: span_ns.0,
            end_ns: span_ns.1,
            bytes: 0,
            flops: 0.0,
            iteration: None,
        }
    }

    /// Four tensor ranks of one stage sharing a forward and a backward
    /// (group 0), each with one task of its own (groups 1–4, one rank each)
    /// in the compute stream's gap [100, 150): rank 1's has rank 0's
    /// interval, rank 2's the same kind and stream with another end, rank
    /// 3's rank 2's times with another kind and stream.
    fn four_ranks() -> Timeline {
        use StreamKind::{Compute, DataParallel, PipelineSendNext};
        use TaskKind::{Backward, DataParallelAllReduce, Forward, PipelineActivation};
        Timeline {
            header: TimelineHeader {
                format_version: crate::TIMELINE_FORMAT_VERSION,
                producer: Producer::Sim,
                executor_mode: None,
                scenario: serde_json::json!({}),
                profile_id: "test".to_string(),
                seed: 0,
                n_gpus: 4,
                layout: TimelineLayout {
                    tensor_parallel: 4,
                    pipeline_parallel: 1,
                    data_parallel: 1,
                    context_parallel: 1,
                    chunks: 1,
                    microbatches: 1,
                    microbatch_size: 1,
                    global_batch: 1,
                    gpus_per_node: 4,
                },
                groups: vec![vec![0, 1, 2, 3], vec![0], vec![1], vec![2], vec![3]],
            },
            tasks: vec![
                task(0, Forward, Compute, 0, (0, 100)),
                task(1, PipelineActivation, PipelineSendNext, 1, (100, 140)),
                task(2, PipelineActivation, PipelineSendNext, 2, (100, 140)),
                task(3, PipelineActivation, PipelineSendNext, 3, (100, 145)),
                task(4, DataParallelAllReduce, DataParallel, 4, (100, 145)),
                task(5, Backward, Compute, 0, (150, 250)),
            ],
        }
    }

    #[test]
    fn a_rank_reuses_the_previous_sums_only_when_its_intervals_are_equal() {
        let timeline = four_ranks();
        timeline.check("four ranks").unwrap();
        // Every rank runs three tasks: equal counts, not equal intervals.
        let tasks: [[u32; 3]; 4] = [[0, 1, 5], [0, 2, 5], [0, 3, 5], [0, 4, 5]];
        let mut pass = RankPass::new(0, 250);
        let sums: Vec<RankSums> = tasks
            .iter()
            .map(|tasks| pass.sums(&timeline, tasks))
            .collect();
        // Rank 1 only (rank 0's intervals through other ids).
        assert_eq!(pass.reused(), 1);
        for (rank, tasks) in tasks.iter().enumerate() {
            // A fresh pass measures (it has nothing to reuse).
            let mut fresh = RankPass::new(0, 250);
            assert_eq!(sums[rank], fresh.sums(&timeline, tasks), "rank {rank}");
            assert_eq!(fresh.reused(), 0);
            assert_eq!(sums[rank].idle_ns, 50);
            assert_eq!(sums[rank].compute_ns, 200);
        }
        // The sends in the gap are exposed whole: 40, 40, 45 ns; rank 3's
        // 45 ns are data-parallel.
        let pipeline: Vec<u128> = sums.iter().map(|sums| sums.exposed_ns[1]).collect();
        assert_eq!(pipeline, [40, 40, 45, 0]);
        let data_parallel: Vec<u128> = sums.iter().map(|sums| sums.in_flight_ns[2]).collect();
        assert_eq!(data_parallel, [0, 0, 0, 45]);
        // The same task ids reuse without reading intervals.
        let mut pass = RankPass::new(0, 250);
        assert_eq!(pass.sums(&timeline, &tasks[2]), sums[2]);
        assert_eq!(pass.sums(&timeline, &tasks[2]), sums[2]);
        assert_eq!(pass.reused(), 1);
        // The metrics add every rank's own sums.
        let metrics = super::super::compute(&timeline, 1e15);
        assert_eq!(metrics.exposed_communication.pipeline_s, 125.0 * 1e-9 / 4.0);
        assert_eq!(
            metrics.exposed_communication.data_parallel_s,
            45.0 * 1e-9 / 4.0
        );
        assert_eq!(metrics.bubble_fraction, 200.0 / (4.0 * 250.0));
    }

    /// The per-rank computation as it was written before the pass: each
    /// class's intervals sorted and merged, the compute stream's gaps
    /// listed, exposure as the overlap with the gaps.
    fn plain_sums(intervals: &[(TaskKind, StreamKind, u64, u64)], window: (u64, u64)) -> RankSums {
        fn union(mut intervals: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
            intervals.sort();
            let mut merged: Vec<(u64, u64)> = Vec::new();
            for (start, end) in intervals {
                match merged.last_mut() {
                    Some(last) if start <= last.1 => last.1 = last.1.max(end),
                    _ => merged.push((start, end)),
                }
            }
            merged
        }
        let clip = |start: u64, end: u64| {
            let (start, end) = (start.max(window.0), end.min(window.1));
            (end > start).then_some((start, end))
        };
        let mut sums = RankSums::default();
        let mut busy = Vec::new();
        let mut classes: [Vec<(u64, u64)>; 6] = Default::default();
        for &(kind, stream, start, end) in intervals {
            if stream == StreamKind::Compute {
                busy.extend(clip(start, end));
                if kind.is_compute() {
                    sums.compute_ns += (end - start) as u128;
                }
            }
            let class = match kind.communication_class() {
                Some(CommClass::Tensor) => {
                    sums.exposed_ns[0] += (end - start) as u128;
                    continue;
                }
                Some(CommClass::ExpertParallel) if stream == StreamKind::Compute => {
                    sums.exposed_ns[5] += (end - start) as u128;
                    continue;
                }
                Some(CommClass::Pipeline) => 1,
                Some(CommClass::DataParallel) => 2,
                Some(CommClass::Offload) => 3,
                Some(CommClass::Host) => 4,
                Some(CommClass::ExpertParallel) => 5,
                None => continue,
            };
            classes[class].extend(clip(start, end));
        }
        let busy = union(busy);
        let busy_ns: u64 = busy.iter().map(|(start, end)| end - start).sum();
        sums.idle_ns = (window.1 - window.0).saturating_sub(busy_ns);
        let mut idle = Vec::new();
        let mut cursor = window.0;
        for &(start, end) in &busy {
            if start > cursor {
                idle.push((cursor, start));
            }
            cursor = end;
        }
        if window.1 > cursor {
            idle.push((cursor, window.1));
        }
        for (class, intervals) in classes.into_iter().enumerate().skip(1) {
            let merged = union(intervals);
            let exposed = overlap_ns(&idle, &merged) as u128;
            if class == 5 {
                sums.expert_stream_exposed_ns = exposed;
            } else {
                sums.exposed_ns[class] = exposed;
                sums.in_flight_ns[class] = merged.iter().map(|(s, e)| (e - s) as u128).sum();
            }
        }
        sums
    }

    #[test]
    fn the_pass_matches_the_plain_per_rank_computation() {
        use StreamKind as S;
        use TaskKind as K;
        let kinds = [
            (K::Forward, S::Compute),
            (K::Recompute, S::Compute),
            (K::BackwardWeight, S::Compute),
            (K::TensorAllReduce, S::Compute),
            (K::PipelineActivation, S::PipelineSendNext),
            (K::PipelineGradient, S::PipelineSendPrevious),
            (K::DataParallelAllReduce, S::DataParallel),
            (K::PcieDeviceToHost, S::PcieDeviceToHost),
            (K::CpuAdam, S::Cpu),
            (K::HostIssue, S::Host),
            (K::ExpertAllToAll, S::Compute),
            (K::ExpertAllToAll, S::ExpertParallel),
        ];
        // A fixed linear congruential sequence (Knuth's MMIX constants).
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |bound: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % bound
        };
        // 64 ranks of 40 tasks each; a rank copies the previous rank's tasks
        // (other ids, same intervals) or changes one field of one of them.
        let mut tasks = Vec::new();
        let mut by_rank: Vec<Vec<u32>> = Vec::new();
        for rank in 0..64u32 {
            let mut intervals: Vec<(TaskKind, StreamKind, u64, u64)> = match (rank, next(4)) {
                (0, _) | (_, 0) => (0..40)
                    .map(|_| {
                        let (kind, stream) = kinds[next(kinds.len() as u64) as usize];
                        let start = next(1000);
                        (kind, stream, start, start + 1 + next(120))
                    })
                    .collect(),
                (_, choice) => {
                    let mut copy: Vec<_> = by_rank[rank as usize - 1]
                        .iter()
                        .map(|&id| {
                            let task: &TaskRecord = &tasks[id as usize];
                            (task.kind, task.stream, task.start_ns, task.end_ns)
                        })
                        .collect();
                    let changed = next(40) as usize;
                    match choice {
                        1 => {}
                        2 => copy[changed].3 += 1,
                        _ => {
                            let (kind, stream) = kinds[next(kinds.len() as u64) as usize];
                            copy[changed].0 = kind;
                            copy[changed].1 = stream;
                        }
                    }
                    copy
                }
            };
            intervals.sort_by_key(|interval| interval.2);
            let mut ids = Vec::new();
            for (kind, stream, start, end) in intervals {
                ids.push(tasks.len() as u32);
                tasks.push(task(tasks.len() as u32, kind, stream, rank, (start, end)));
            }
            by_rank.push(ids);
        }
        let timeline = Timeline {
            header: four_ranks().header,
            tasks,
        };
        let window = (200, 900);
        let mut pass = RankPass::new(window.0, window.1);
        for (rank, ids) in by_rank.iter().enumerate() {
            let intervals: Vec<_> = ids
                .iter()
                .map(|&id| timeline.interval(id as usize))
                .collect();
            assert_eq!(
                pass.sums(&timeline, ids),
                plain_sums(&intervals, window),
                "rank {rank}"
            );
        }
        // Some ranks were reused, not all.
        assert!(pass.reused() > 4 && pass.reused() < 48, "{}", pass.reused());
    }

    #[test]
    fn interval_helpers_measure_overlaps() {
        let mut merged = vec![(5, 8), (0, 2), (1, 3), (8, 9)];
        assert_eq!(union_in_place(&mut merged), 7);
        assert_eq!(merged, vec![(0, 3), (5, 9)]);
        let mut sorted = vec![(0, 4), (1, 2), (6, 7), (7, 9)];
        assert_eq!(union_in_place(&mut sorted), 7);
        assert_eq!(sorted, vec![(0, 4), (6, 9)]);
        let mut empty = Vec::new();
        assert_eq!(union_in_place(&mut empty), 0);
        assert_eq!(overlap_ns(&[(3, 5), (9, 12)], &[(4, 10)]), 2);
        assert_eq!(overlap_ns(&[], &[(4, 10)]), 0);
    }
}
