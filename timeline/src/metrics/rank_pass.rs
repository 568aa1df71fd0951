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

use super::Spans;
use crate::kinds::{CommClass, StreamKind, TaskKind};

/// What the pass reads of one task: kind, stream, start and end (ns).
type Interval = (TaskKind, StreamKind, u64, u64);

/// One rank's sums, integer nanoseconds. Classes are indexed as the metrics
/// index them: 0 tensor, 1 pipeline, 2 data parallel, 3 offload, 4 host,
/// 5 expert parallel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RankSums {
    /// Compute-stream idle time inside the window.
    pub idle_ns: u64,
    /// Compute kernels' time, every iteration.
    pub compute_ns: u128,
    /// Tensor (0) and blocking expert-parallel (5) all-to-all time over every
    /// iteration; classes 1–4: time inside the window the compute stream idles
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
    /// The last rank measured (or reused): its task ids, intervals and sums.
    last_tasks: &'a [u32],
    last_intervals: Vec<Interval>,
    last_sums: Option<RankSums>,
    /// The rank being measured.
    intervals: Vec<Interval>,
    /// Clipped compute-stream intervals, then their union.
    busy: Vec<(u64, u64)>,
    /// Clipped intervals per windowed class: pipeline, data parallel,
    /// offload, host, and expert all-to-alls on their own stream.
    windowed: [Vec<(u64, u64)>; 5],
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
            last_intervals: Vec::new(),
            last_sums: None,
            intervals: Vec::new(),
            busy: Vec::new(),
            windowed: Default::default(),
            reused: 0,
        }
    }

    /// Ranks so far whose sums were the previous rank's.
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// The sums of the rank running `tasks` (ids into `timeline`, in id order).
    pub fn sums(&mut self, timeline: &impl Spans, tasks: &'a [u32]) -> RankSums {
        if let Some(sums) = self.last_sums {
            if tasks == self.last_tasks {
                self.reused += 1;
                return sums;
            }
        }
        self.intervals.clear();
        self.intervals
            .extend(tasks.iter().map(|&index| timeline.interval(index as usize)));
        self.last_tasks = tasks;
        if let Some(sums) = self.last_sums {
            // Other tasks (a rank's own pipeline sends), the same intervals.
            if self.intervals == self.last_intervals {
                self.reused += 1;
                return sums;
            }
        }
        let sums = self.measure();
        std::mem::swap(&mut self.intervals, &mut self.last_intervals);
        self.last_sums = Some(sums);
        sums
    }

    /// Measures `self.intervals`.
    fn measure(&mut self) -> RankSums {
        let (window_start, window_end) = (self.window_start_ns, self.window_end_ns);
        let mut sums = RankSums::default();
        self.busy.clear();
        for intervals in &mut self.windowed {
            intervals.clear();
        }
        for &(kind, stream, start_ns, end_ns) in &self.intervals {
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
