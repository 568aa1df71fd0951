//! Metrics' view of a replicated run ([`crate::replicated_run`]): each
//! rank's tasks are its twin rank's in replica 0 at the twins' full ids,
//! the FLOP terms a loop's tasks give once per copy, in full expansion's id
//! order ([`timeline::metrics::RankView`]).

use crate::cost::WorkCost;
use crate::replicated_run::Replicated;
use crate::twin_ends::TwinEnds;
use rayon::prelude::*;
use std::sync::OnceLock;
use taskgraph::ids::{Rank, TaskId};
use timeline::metrics::{Interval, IterationEnds, RankView};
use timeline::time::SimTime;
use timeline::TimelineHeader;

/// Metrics' view of a replicated run: each rank's tasks are its twin rank's
/// in replica 0, at the twins' full ids.
pub(crate) struct ReplicatedView<'a> {
    header: &'a TimelineHeader,
    replicated: &'a Replicated,
    costs: &'a [WorkCost],
    ends: &'a TwinEnds,
    /// Every full task's start, by full id.
    start: &'a [SimTime],
    iterations: bool,
    /// Replica 0's ranks' representative tasks, in id order (CSR rows by rank).
    rank_offsets: Vec<usize>,
    rank_tasks: Vec<u32>,
    /// Each iteration's latest end, found on first use (a walk of every
    /// full task, which the makespan then reuses).
    iteration_ends: OnceLock<Vec<u64>>,
}

impl<'a> ReplicatedView<'a> {
    pub fn new(
        header: &'a TimelineHeader,
        replicated: &'a Replicated,
        costs: &'a [WorkCost],
        ends: &'a TwinEnds,
        start: &'a [SimTime],
        iterations: bool,
    ) -> ReplicatedView<'a> {
        let graph = &replicated.graph;
        let ranks = header.n_gpus as usize;
        let mut counts = vec![0usize; ranks + 1];
        let members = |task: u32| {
            graph
                .group_ranks(graph.group_of(TaskId(task)))
                .iter()
                .filter(|rank| replicated.representative.data_index(**rank) == 0)
        };
        for task in 0..graph.task_count() as u32 {
            for rank in members(task) {
                counts[rank.index() + 1] += 1;
            }
        }
        for i in 0..ranks {
            counts[i + 1] += counts[i];
        }
        let mut fill = counts[..ranks].to_vec();
        let mut rank_tasks = vec![0u32; counts[ranks]];
        for task in 0..graph.task_count() as u32 {
            for rank in members(task) {
                rank_tasks[fill[rank.index()]] = task;
                fill[rank.index()] += 1;
            }
        }
        ReplicatedView {
            header,
            replicated,
            costs,
            ends,
            start,
            iterations,
            rank_offsets: counts,
            rank_tasks,
            iteration_ends: OnceLock::new(),
        }
    }

    /// The latest end of any full task: the latest iteration end.
    pub fn makespan_ns(&self) -> u64 {
        self.iteration_ends_ns().into_iter().max().unwrap_or(0)
    }
}

impl ReplicatedView<'_> {
    /// Full task (task, copy)'s (start, end) in ns.
    #[inline]
    fn span(&self, task: u32, copy: u32) -> (u64, u64) {
        let ids = &self.replicated.ids;
        let start = self.start[ids.full_id(task, copy) as usize];
        let end = self.ends.end(ids, task, copy, start);
        (start.as_nanos(), end.as_nanos())
    }
}

impl RankView for ReplicatedView<'_> {
    fn header(&self) -> &TimelineHeader {
        self.header
    }

    fn iteration_ends_ns(&self) -> Vec<u64> {
        let graph = &self.replicated.graph;
        let ids = &self.replicated.ids;
        // Each copy's tasks gathered apart, in parallel (a maximum does not
        // depend on the order).
        self.iteration_ends
            .get_or_init(|| {
                (0..ids.copies())
                    .into_par_iter()
                    .map(|copy| {
                        let mut ends = IterationEnds::default();
                        for segment in ids.segments().iter().filter(|s| copy < s.copies) {
                            for task in segment.tasks.clone() {
                                let iteration = match self.iterations {
                                    true => u32::from(graph.iteration_of(TaskId(task))),
                                    false => 0,
                                };
                                ends.add(iteration, self.span(task, copy).1);
                            }
                        }
                        ends
                    })
                    .reduce(IterationEnds::default, IterationEnds::merge)
                    .finish()
            })
            .clone()
    }

    fn for_each_compute_flops(&self, mut visit: impl FnMut(timeline::TaskKind, f64)) {
        let graph = &self.replicated.graph;
        // A segment's compute tasks' terms, gathered once, visited per copy.
        let mut terms: Vec<(timeline::TaskKind, f64)> = Vec::new();
        for segment in self.replicated.ids.segments() {
            terms.clear();
            for task in segment.tasks.clone() {
                let id = TaskId(task);
                let kind = graph.kind_of(id);
                if kind.is_compute() {
                    let size = graph.group_ranks(graph.group_of(id)).len() as f64;
                    terms.push((kind, self.costs[graph.work_of(id).index()].flops * size));
                }
            }
            for _ in 0..segment.copies {
                for &(kind, term) in &terms {
                    visit(kind, term);
                }
            }
        }
    }

    fn rank_intervals(&self, rank: u32, out: &mut Vec<Interval>) {
        out.clear();
        let representative = self.replicated.representative;
        let (copy, twin) = representative.twin_in_replica_0(Rank(rank));
        let twin = twin.index();
        let graph = &self.replicated.graph;
        let tasks = &self.rank_tasks[self.rank_offsets[twin]..self.rank_offsets[twin + 1]];
        out.extend(tasks.iter().map(|&task| {
            let id = TaskId(task);
            let (start_ns, end_ns) = self.span(task, copy);
            (graph.kind_of(id), graph.stream_of(id), start_ns, end_ns)
        }));
    }
}
