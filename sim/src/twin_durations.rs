//! Each twin's duration in full expansion kept as one replica's graph
//! ([`crate::replicated_run`]): its representative task's priced duration,
//! or its slow links' closed form where one touches its group
//! ([`crate::slow_link_twins`]), a compute kernel's then stretched by its
//! own rank's factor (a slow rank's, a spread's draw), as
//! `sim::simulate`'s perturbed durations give a built graph's tasks.
//!
//! The engine asks once per task and the metrics once per rank a task runs
//! on, so a task whose twins all take its priced duration answers from one
//! array, and a rank's factor is read from a table.

use crate::cost::WorkCost;
use crate::slow_link_twins::TwinLinkCosts;
use crate::straggler::Stragglers;
use crate::symmetry::Representative;
use scenario::Scenario;
use taskgraph::ids::{Rank, TaskId};
use taskgraph::replica_ids::ReplicaIds;
use taskgraph::task_graph::TaskGraph;
use timeline::time::SimDuration;

/// Each twin's duration.
#[derive(Debug, Clone)]
pub(crate) struct TwinDurations {
    /// Each representative task's priced duration.
    priced: Vec<SimDuration>,
    /// Whether some twin of the task may take another duration (a slow
    /// link in its group, or it is a compute kernel with rank factors);
    /// empty when no twin does (no slow rank, spread or slow link), so
    /// that the engine's every start reads one array.
    varies: Vec<bool>,
    /// With slow links: their closed-form costs for each twin.
    links: Option<TwinLinkCosts>,
    /// With slow ranks or a spread: each representative task's rank when it
    /// is a compute kernel on one rank (a rank of replica 0: shared tasks
    /// run on several), and every rank's factor; empty without.
    kernel_rank: Vec<Option<u32>>,
    rank_factors: Vec<f64>,
    representative: Representative,
}

impl TwinDurations {
    pub fn new(
        scenario: &Scenario,
        graph: &TaskGraph,
        ids: &ReplicaIds,
        representative: Representative,
        costs: &[WorkCost],
        stragglers: &Stragglers,
    ) -> TwinDurations {
        let priced = graph
            .task_works()
            .iter()
            .map(|work| costs[work.index()].duration)
            .collect();
        let stretched = !stragglers.ranks().is_empty() || stragglers.spread().is_some();
        let (kernel_rank, rank_factors) = if stretched {
            let kernel_rank = (0..graph.task_count() as u32)
                .map(|task| {
                    let id = TaskId(task);
                    match graph.group_ranks(graph.group_of(id)) {
                        [rank] if graph.kind_of(id).is_compute() => Some(rank.0),
                        _ => None,
                    }
                })
                .collect();
            let factors = (0..scenario.layout.gpus())
                .map(|rank| stragglers.rank_factor(rank))
                .collect();
            (kernel_rank, factors)
        } else {
            (Vec::new(), Vec::new())
        };
        let links = stragglers.links();
        let links = (!links.is_empty())
            .then(|| TwinLinkCosts::new(scenario, graph, ids, representative, links));
        let varies = match stretched || links.is_some() {
            true => (0..graph.task_count() as u32)
                .map(|task| {
                    kernel_rank.get(task as usize).is_some_and(Option::is_some)
                        || links.as_ref().is_some_and(|links| links.varies(task))
                })
                .collect(),
            false => Vec::new(),
        };
        TwinDurations {
            priced,
            varies,
            links,
            kernel_rank,
            rank_factors,
            representative,
        }
    }

    /// Whether every twin takes its representative task's priced
    /// duration (no slow rank, spread or slow link).
    pub fn twins_alike(&self) -> bool {
        self.varies.is_empty()
    }

    /// The duration of representative task `task`'s twin in copy `copy`.
    #[inline]
    pub fn of(&self, ids: &ReplicaIds, task: u32, copy: u32) -> SimDuration {
        let priced = self.priced[task as usize];
        if !self.varies.get(task as usize).copied().unwrap_or(false) {
            return priced;
        }
        // A shared task is one task, whatever copy asks.
        let copy = if ids.is_shared(task) { 0 } else { copy };
        let priced = match &self.links {
            Some(links) => links.duration(task, copy, priced),
            None => priced,
        };
        let Some(Some(rank)) = self.kernel_rank.get(task as usize) else {
            return priced;
        };
        let factor = self.rank_factors[self.representative.in_copy(Rank(*rank), copy).index()];
        if factor == 1.0 {
            priced
        } else {
            SimDuration((priced.0 as f64 * factor).ceil() as u64)
        }
    }
}
