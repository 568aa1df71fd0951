//! The Timeline as a view: the records of chosen ranks in a chosen time
//! window, built from the engine's arrays without the others
//! (`--timeline-ranks`, `--timeline-window`, `--ranks`). In full expansion
//! a record is kept when its group holds a chosen rank; under symmetry the
//! records are the representative's twins, renumbered to full expansion's
//! task and group ids ([`taskgraph::replica_map`]), so they are byte for byte
//! the records full expansion would write for those ranks
//! (`tests/tests/it/symmetry.rs`), at the cost of the chosen ranks' records
//! and full expansion's group table (the header keeps every group, so
//! record group ids mean what they do in a whole Timeline).

use crate::cost::WorkCost;
use taskgraph::ids::{Rank, TaskId};
use taskgraph::replica_map::{Expanded, Twin};
use taskgraph::task::NO_MICROBATCH;
use taskgraph::task_graph::TaskGraph;
use timeline::TaskRecord;

/// Which records a Timeline keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimelineSelection {
    /// Ranks whose records are kept: a task is kept when its group holds
    /// one of them (`None`: every rank).
    pub ranks: Option<Vec<u32>>,
    /// Only tasks overlapping `[start, end]` nanoseconds (both ends
    /// included, so an instant task on an edge is kept), whole (`None`: all).
    pub window_ns: Option<(u64, u64)>,
}

impl TimelineSelection {
    /// Every record.
    pub fn all() -> TimelineSelection {
        TimelineSelection::default()
    }

    /// Whether every record is kept.
    pub fn is_all(&self) -> bool {
        self.ranks.is_none() && self.window_ns.is_none()
    }

    /// Per group of `groups`: whether it holds a chosen rank.
    pub(crate) fn groups_wanted(&self, groups: &[Vec<Rank>]) -> Vec<bool> {
        match &self.ranks {
            None => vec![true; groups.len()],
            Some(ranks) => {
                let chosen: std::collections::BTreeSet<u32> = ranks.iter().copied().collect();
                groups
                    .iter()
                    .map(|members| members.iter().any(|rank| chosen.contains(&rank.0)))
                    .collect()
            }
        }
    }

    /// Whether a task running over `[start_ns, end_ns]` is in the window.
    #[inline]
    pub(crate) fn in_window(&self, start_ns: u64, end_ns: u64) -> bool {
        self.window_ns
            .is_none_or(|(from, to)| start_ns <= to && end_ns >= from)
    }
}

/// Task `index`'s record, with the id and group it has in the Timeline.
#[inline]
pub(crate) fn record(
    graph: &TaskGraph,
    costs: &[WorkCost],
    iterations: bool,
    index: u32,
    id: u32,
    group: u32,
    (start_ns, end_ns): (u64, u64),
) -> TaskRecord {
    let task = graph.task(TaskId(index));
    let cost = &costs[task.work.index()];
    TaskRecord {
        id,
        kind: task.kind,
        stream: task.stream,
        group,
        stage: task.stage,
        chunk: task.chunk,
        microbatch: (task.microbatch != NO_MICROBATCH).then_some(task.microbatch),
        start_ns,
        end_ns,
        bytes: cost.bytes,
        flops: cost.flops,
        iteration: iterations.then_some(task.iteration as u32),
    }
}

/// The chosen records of a graph that is the whole run (full expansion).
pub(crate) fn full_records(
    graph: &TaskGraph,
    costs: &[WorkCost],
    iterations: bool,
    selection: &TimelineSelection,
    span: impl Fn(usize) -> (u64, u64),
) -> Vec<TaskRecord> {
    let wanted = selection.groups_wanted(graph.groups());
    (0..graph.task_count() as u32)
        .filter_map(|index| {
            let group = graph.group_of(TaskId(index)).0;
            let span = span(index as usize);
            (wanted[group as usize] && selection.in_window(span.0, span.1))
                .then(|| record(graph, costs, iterations, index, index, group, span))
        })
        .collect()
}

/// The chosen records of full expansion, from a representative's graph;
/// `span(twin)` is a twin's (start, end): its representative's under
/// symmetry, its own in a replicated run ([`crate::replicated_run`]).
pub(crate) fn expanded_records(
    graph: &TaskGraph,
    expanded: &Expanded,
    costs: &[WorkCost],
    iterations: bool,
    selection: &TimelineSelection,
    span: impl Fn(Twin) -> (u64, u64),
) -> Vec<TaskRecord> {
    let wanted = selection.groups_wanted(&expanded.groups);
    let mut records = Vec::new();
    expanded.for_each_twin(
        |task| graph.group_of(TaskId(task)),
        |group| wanted[group as usize],
        |twin| {
            let span = span(twin);
            if selection.in_window(span.0, span.1) {
                records.push(record(
                    graph,
                    costs,
                    iterations,
                    twin.representative,
                    twin.id,
                    twin.group,
                    span,
                ));
            }
        },
    );
    records
}
