//! Every replica under `--contention` from one replica's graph: full
//! expansion's flows shared on the fabric, without building the other
//! replicas (`sim::replicated_run`).
//!
//! **The graph it runs** is [`crate::replicated`]'s: the representative's
//! tasks and edges, full expansion's ids as arithmetic ([`ReplicaIds`]), a
//! loop task standing for its twin in every copy, a shared task for itself.
//! Here it runs in the event loop with the fabric (`flow_loop.rs`), which
//! names tasks by full id: a finish's successors are the representative's,
//! moved to the finishing twin's copy (a shared task's reach every copy);
//! a twin's duration and flows are its own ([`TwinFlowPlanner`]: its
//! ranks are its copy's).
//!
//! **Exact.** The event loop's order depends on task ids alone (equal
//! times pop lowest id first, ready successors start lowest id first), so
//! with full expansion's ids, edges, durations and plans it meets every
//! event the built graph's run meets, in the same order, and every flow
//! gets the same id and rate (`tests/tests/it/replicated_run.rs` compares
//! every task's times with the built graph's).
//!
//! **State.** Per full task, its start (8 bytes) and its predecessors not
//! yet finished (4 bytes); per flow task, its end (8 bytes; any other
//! task's end is its start plus its duration). Per representative task,
//! where its twins' ends are kept ([`PlannedEnds`]).

use crate::flow_loop::{EventGraph, FlowLoop};
use crate::network::{Fabric, FlowPlan, LinkUtilization};
use crate::DeadlockError;
use taskgraph::ids::TaskId;
use taskgraph::replica_ids::ReplicaIds;
use taskgraph::task_graph::TaskGraph;
use timeline::time::{SimDuration, SimTime};

/// The flows of a representative task's twin in a copy.
pub trait TwinFlowPlanner {
    /// Representative task `task`'s twin in copy `copy` (copy 0 for a
    /// shared task): its flows and tail into `plan`, or false when its
    /// duration is fixed. Whether a task is planned does not depend on
    /// the copy.
    fn plan_twin_into(&self, task: u32, copy: u32, plan: &mut FlowPlan) -> bool;
}

/// Representative task of no flow plan in [`PlannedEnds`]'s `base`.
const NOT_PLANNED: u32 = u32::MAX;

/// The ends of the flow tasks' twins (the fabric decides them), laid out
/// as [`ReplicaIds`] lays out full ids, flow tasks only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEnds {
    /// Per representative task: its copy-0 twin's slot, or `NOT_PLANNED`.
    base: Vec<u32>,
    /// Distance between consecutive copies' slots (0 for a shared task).
    stride: Vec<u32>,
    end: Vec<SimTime>,
}

impl PlannedEnds {
    /// Slots for the tasks `planned` accepts (no more than full tasks,
    /// whose ids are 32-bit).
    fn new(ids: &ReplicaIds, mut planned: impl FnMut(u32) -> bool) -> PlannedEnds {
        let tasks = ids.segments().last().map_or(0, |s| s.tasks.end) as usize;
        let mut base = vec![NOT_PLANNED; tasks];
        let mut stride = vec![0u32; tasks];
        let mut slots = 0u32;
        for segment in ids.segments() {
            let mut in_segment = 0u32;
            for task in segment.tasks.clone() {
                if planned(task) {
                    base[task as usize] = slots + in_segment;
                    in_segment += 1;
                }
            }
            if segment.copies > 1 {
                for task in segment.tasks.clone() {
                    stride[task as usize] = in_segment;
                }
            }
            slots += in_segment * segment.copies;
        }
        PlannedEnds {
            base,
            stride,
            end: vec![SimTime::ZERO; slots as usize],
        }
    }

    #[inline]
    fn slot(&self, task: u32, copy: u32) -> Option<usize> {
        match self.base[task as usize] {
            NOT_PLANNED => None,
            base => Some((base + copy * self.stride[task as usize]) as usize),
        }
    }

    /// The end of representative task `task`'s twin in copy `copy`, if it
    /// ran as a flow task.
    #[inline]
    pub fn end(&self, task: u32, copy: u32) -> Option<SimTime> {
        self.slot(task, copy).map(|slot| self.end[slot])
    }

    /// Flow tasks' twins kept.
    pub fn len(&self) -> usize {
        self.end.len()
    }

    pub fn is_empty(&self) -> bool {
        self.end.is_empty()
    }
}

/// What a replicated run under contention gives.
#[derive(Debug, Clone)]
pub struct ReplicatedFlowTimes {
    /// Every full task's start, by full id.
    pub start: Vec<SimTime>,
    /// The flow tasks' ends (any other task ends at its start plus its duration).
    pub planned: PlannedEnds,
    /// Starts, finishes and flow completions.
    pub events: u64,
    pub utilization: LinkUtilization,
}

/// Full expansion as the event loop sees it.
struct ReplicatedGraph<'a, D> {
    graph: &'a TaskGraph,
    ids: &'a ReplicaIds,
    /// Full id of each segment's first task (segments in order).
    segment_starts: Vec<u32>,
    duration_of: D,
    planner: &'a dyn TwinFlowPlanner,
    planned: &'a PlannedEnds,
}

impl<D: Fn(u32, u32) -> SimDuration> ReplicatedGraph<'_, D> {
    /// (representative task, copy) of full task `id`.
    #[inline]
    fn twin(&self, id: u32) -> (u32, u32) {
        let segment = self.segment_starts.partition_point(|&first| first <= id) - 1;
        let tasks = &self.ids.segments()[segment].tasks;
        let offset = id - self.segment_starts[segment];
        let len = tasks.end - tasks.start;
        (tasks.start + offset % len, offset / len)
    }
}

impl<D: Fn(u32, u32) -> SimDuration> EventGraph for ReplicatedGraph<'_, D> {
    #[inline]
    fn for_each_successor(&self, id: u32, mut visit: impl FnMut(u32)) {
        let (task, copy) = self.twin(id);
        let ids = self.ids;
        let from_shared = ids.is_shared(task);
        for &successor in self.graph.successor_slice(task as usize) {
            if ids.is_shared(successor) {
                visit(ids.full_id(successor, 0));
            } else if from_shared {
                for copy in 0..ids.copies() {
                    visit(ids.full_id(successor, copy));
                }
            } else {
                visit(ids.full_id(successor, copy));
            }
        }
    }

    #[inline]
    fn duration(&self, id: u32) -> SimDuration {
        let (task, copy) = self.twin(id);
        (self.duration_of)(task, copy)
    }

    #[inline]
    fn plan_into(&self, id: u32, plan: &mut FlowPlan) -> bool {
        let (task, copy) = self.twin(id);
        self.planned.slot(task, copy).is_some() && self.planner.plan_twin_into(task, copy, plan)
    }
}

/// Runs full expansion of `graph` (the representative) as `ids` lays it
/// out, with the twins' flows on `fabric`: `duration_of(task, copy)` is
/// the fixed duration of representative task `task`'s twin in copy `copy`
/// (copy 0 for a shared task), `planner` its flows.
pub fn run_replicated_with_fabric(
    graph: &TaskGraph,
    ids: &ReplicaIds,
    duration_of: impl Fn(u32, u32) -> SimDuration,
    fabric: &Fabric,
    planner: &dyn TwinFlowPlanner,
) -> Result<ReplicatedFlowTimes, DeadlockError> {
    let mut scratch = FlowPlan::default();
    let mut planned = PlannedEnds::new(ids, |task| planner.plan_twin_into(task, 0, &mut scratch));
    let mut start = vec![SimTime::ZERO; ids.full_tasks() as usize];
    let mut remaining = full_in_degrees(graph, ids);
    let mut planned_ends = std::mem::take(&mut planned.end);
    let replicated = ReplicatedGraph {
        graph,
        ids,
        segment_starts: segment_starts(ids),
        duration_of,
        planner,
        planned: &planned,
    };
    let mut flow_loop = FlowLoop::new(fabric);
    for (id, &left) in remaining.iter().enumerate() {
        if left == 0 {
            flow_loop.start_task(&replicated, id as u32, SimTime::ZERO, &mut start);
        }
    }
    flow_loop.run(&replicated, &mut start, &mut remaining, |id, time| {
        let (task, copy) = replicated.twin(id);
        if let Some(slot) = replicated.planned.slot(task, copy) {
            planned_ends[slot] = time;
        }
    });
    let (events, finished) = (flow_loop.events, flow_loop.finished);
    let utilization = flow_loop.into_network().link_utilization();
    drop(replicated);
    planned.end = planned_ends;
    if finished < start.len() {
        return Err(deadlock(graph, ids, &remaining, finished));
    }
    Ok(ReplicatedFlowTimes {
        start,
        planned,
        events,
        utilization,
    })
}

/// Full id of each segment's first task.
fn segment_starts(ids: &ReplicaIds) -> Vec<u32> {
    let mut first = 0u32;
    ids.segments()
        .iter()
        .map(|segment| {
            let at = first;
            first += (segment.tasks.end - segment.tasks.start) * segment.copies;
            at
        })
        .collect()
}

/// Each full task's in-degree: a loop task's twin has its representative's
/// (its loop predecessors in its own copy, each shared one once); a shared
/// task has each shared predecessor once and each loop predecessor once
/// per copy.
fn full_in_degrees(graph: &TaskGraph, ids: &ReplicaIds) -> Vec<u32> {
    let mut per_task = vec![0u32; graph.task_count()];
    for task in 0..graph.task_count() as u32 {
        let weight = match ids.is_shared(task) {
            true => 1,
            false => ids.copies(),
        };
        for &successor in graph.successor_slice(task as usize) {
            per_task[successor as usize] += match ids.is_shared(successor) {
                true => weight,
                false => 1,
            };
        }
    }
    let mut full = vec![0u32; ids.full_tasks() as usize];
    ids.for_each_in_order(|task, copy| {
        full[ids.full_id(task, copy) as usize] = per_task[task as usize];
    });
    full
}

/// The deadlock of a run that finished `finished` full tasks.
fn deadlock(
    graph: &TaskGraph,
    ids: &ReplicaIds,
    remaining: &[u32],
    finished: usize,
) -> DeadlockError {
    let first = remaining
        .iter()
        .position(|&left| left > 0)
        .expect("some task is stuck") as u32;
    let mut twin = (0, 0);
    ids.for_each_in_order(|task, copy| {
        if ids.full_id(task, copy) == first {
            twin = (task, copy);
        }
    });
    let (task, copy) = twin;
    DeadlockError {
        stuck: remaining.len() - finished,
        total: remaining.len(),
        first: match ids.is_shared(task) {
            true => graph.describe(TaskId(task)),
            false => format!("{} (in replica {copy})", graph.describe(TaskId(task))),
        },
    }
}
