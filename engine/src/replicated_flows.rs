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
//! ranks are its copy's). A task whose twins all run alone at one
//! duration (tensor rings inside a node) is timed once before the run and
//! not planned at its starts (`lone_twins.rs`). Such tasks and those of
//! fixed durations (most of them) run ahead of the loop's time, off the
//! queue (`flow_loop.rs`).
//!
//! **Exact.** The event loop's order depends on task ids alone (equal
//! times pop lowest id first, ready successors start lowest id first), so
//! with full expansion's ids, edges, durations and plans it meets every
//! event the built graph's run meets, in the same order, and every flow
//! gets the same id and rate (`tests/tests/it/replicated_run.rs` compares
//! every task's times with the built graph's).
//!
//! **Folded.** Without stragglers (every twin at its copy-0 twin's
//! duration), the tasks no flow waits for are folded out of the loop
//! (`folded_twins.rs`): the loop runs the kept tasks over edges that carry
//! the folded tasks' fixed time, and the folded twins' times follow in
//! one pass per copy. The same times, events and traffic; the loop sees
//! about a sixth of the tasks.
//!
//! **State.** Per twin the loop runs, its start (8 bytes) and its
//! predecessors not yet finished (4 bytes), by twin slot
//! ([`ReplicaIds::twin_slot`], or the kept tasks' slots: a representative
//! task's twins side by side, which replicas running in step touch
//! together); per flow task, its end (8 bytes; any other task's end is
//! its start plus its duration). The starts are then laid out by full id
//! for the readers, who walk a rank's tasks copy by copy (8 bytes every
//! full task), where the folded pass adds the folded twins'. Per
//! representative task, where its twins' ends are kept ([`PlannedEnds`]).

use crate::flow_loop::{EventGraph, FlowLoop, TaskPlan, Timing};
use crate::folded_twins::FoldedTwins;
use crate::lone_twins::{LoneTask, LoneTwins};
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

    /// Where GPU `gpu`, an end of a flow of a copy-0 twin planned alone
    /// ([`FlowPlan::alone`]), is in copy `copy`'s twin: a loop task planned
    /// alone runs, in every copy, its copy-0 twin's flows (bytes, tail and
    /// `alone`) with each GPU moved so. `None` (the default) when twins'
    /// plans are not known to follow so: each twin is then planned when it
    /// starts. With it, twins that run alone at one duration in every copy
    /// are timed once (`lone_twins.rs`).
    fn moved_gpu(&self, gpu: u32, copy: u32) -> Option<u32> {
        let _ = (gpu, copy);
        None
    }
}

/// Representative task of no flow plan in [`PlannedEnds`]'s `base`.
const NOT_PLANNED: u32 = u32::MAX;

/// The ends of the flow tasks' twins (the fabric decides them): a flow
/// task's twins side by side, representative tasks in order (as
/// [`ReplicaIds::twin_slot`] keeps every task's start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEnds {
    /// Per representative task: its copy-0 twin's slot, or `NOT_PLANNED`.
    base: Vec<u32>,
    end: Vec<SimTime>,
}

impl PlannedEnds {
    /// Slots for the tasks `planned` accepts (no more than full tasks,
    /// whose ids are 32-bit).
    fn new(ids: &ReplicaIds, mut planned: impl FnMut(u32) -> bool) -> PlannedEnds {
        let mut slots = 0u32;
        let base = (0..ids.representative_tasks())
            .map(|task| {
                if !planned(task) {
                    return NOT_PLANNED;
                }
                let first = slots;
                slots += ids.twins_of(task);
                first
            })
            .collect();
        PlannedEnds {
            base,
            end: vec![SimTime::ZERO; slots as usize],
        }
    }

    /// The slot of representative task `task`'s twin in copy `copy` (any
    /// copy of a shared task: its one full task) in the layout `ids`.
    #[inline]
    fn slot(&self, ids: &ReplicaIds, task: u32, copy: u32) -> Option<usize> {
        match self.base[task as usize] {
            NOT_PLANNED => None,
            base if ids.is_shared(task) => Some(base as usize),
            base => Some((base + copy) as usize),
        }
    }

    /// The end of representative task `task`'s twin in copy `copy` (any
    /// copy of a shared task), if it ran as a flow task; `ids` is the
    /// layout the run had.
    #[inline]
    pub fn end(&self, ids: &ReplicaIds, task: u32, copy: u32) -> Option<SimTime> {
        self.slot(ids, task, copy).map(|slot| self.end[slot])
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

/// A full task as the replicated run locates it: its full id, its
/// representative task and its copy (copy 0 for a shared task).
#[derive(Debug, Clone, Copy)]
struct Twin {
    id: u32,
    task: u32,
    copy: u32,
}

/// Full expansion as the event loop sees it.
struct ReplicatedGraph<'a, D> {
    graph: &'a TaskGraph,
    ids: &'a ReplicaIds,
    duration_of: D,
    planner: &'a dyn TwinFlowPlanner,
    planned: &'a PlannedEnds,
    lone: &'a LoneTwins,
    /// The graph the loop runs when tasks are folded out of it; `None`:
    /// the representative's, every task in the loop.
    folded: Option<&'a FoldedTwins>,
}

impl<D> ReplicatedGraph<'_, D> {
    #[inline]
    fn twin(&self, task: u32, copy: u32) -> Twin {
        Twin {
            id: self.ids.full_id(task, copy),
            task,
            copy,
        }
    }

    /// The twins of representative task `successor` that an edge from
    /// `twin`'s task reaches: its own copy's, every copy's from a shared
    /// task, a shared task itself.
    #[inline]
    fn visit_twins(&self, twin: Twin, successor: u32, mut visit: impl FnMut(Twin)) {
        let ids = self.ids;
        if ids.is_shared(successor) {
            visit(self.twin(successor, 0));
        } else if ids.is_shared(twin.task) {
            for copy in 0..ids.copies() {
                visit(self.twin(successor, copy));
            }
        } else {
            visit(self.twin(successor, twin.copy));
        }
    }
}

impl<D: Fn(u32, u32) -> SimDuration> EventGraph for ReplicatedGraph<'_, D> {
    type Task = Twin;

    /// The full id, then the representative task.
    #[inline]
    fn key(&self, twin: Twin) -> u64 {
        (u64::from(twin.id) << 32) | u64::from(twin.task)
    }

    #[inline]
    fn task(&self, key: u64) -> Twin {
        let (id, task) = ((key >> 32) as u32, key as u32);
        Twin {
            id,
            task,
            copy: self.ids.copy_of(task, id),
        }
    }

    #[inline]
    fn slot(&self, twin: Twin) -> usize {
        match self.folded {
            Some(folded) => folded.slot(self.ids, twin.task, twin.copy),
            None => self.ids.twin_slot(twin.task, twin.copy) as usize,
        }
    }

    #[inline]
    fn for_each_successor(&self, twin: Twin, mut visit: impl FnMut(Twin, SimDuration)) {
        match self.folded {
            Some(folded) => {
                for &(successor, gap) in folded.edges(twin.task) {
                    self.visit_twins(twin, successor, |successor| visit(successor, gap));
                }
            }
            None => {
                for &successor in self.graph.successor_slice(twin.task as usize) {
                    self.visit_twins(twin, successor, |successor| {
                        visit(successor, SimDuration::ZERO)
                    });
                }
            }
        }
    }

    #[inline]
    fn duration(&self, twin: Twin) -> SimDuration {
        (self.duration_of)(twin.task, twin.copy)
    }

    #[inline]
    fn plan_into(&self, twin: Twin, plan: &mut FlowPlan) -> TaskPlan {
        if self.planned.slot(self.ids, twin.task, twin.copy).is_none() {
            return TaskPlan::Fixed;
        }
        if let Some(LoneTask { duration, flows }) = self.lone.of(twin.task) {
            return TaskPlan::Lone { duration, flows };
        }
        TaskPlan::planned_if(self.planner.plan_twin_into(twin.task, twin.copy, plan))
    }

    /// Ahead: a fixed duration, or a task timed once, longer than zero.
    #[inline]
    fn timing(&self, twin: Twin) -> Timing {
        let (duration, flow_events) = if self.planned.base[twin.task as usize] == NOT_PLANNED {
            ((self.duration_of)(twin.task, twin.copy), 0)
        } else if let Some(LoneTask { duration, flows }) = self.lone.of(twin.task) {
            (duration, flows)
        } else {
            return Timing::InOrder;
        };
        match duration > SimDuration::ZERO {
            true => Timing::Ahead {
                duration,
                flow_events,
            },
            false => Timing::InOrder,
        }
    }
}

/// Runs full expansion of `graph` (the representative) as `ids` lays it
/// out, with the twins' flows on `fabric`: `duration_of(task, copy)` is
/// the fixed duration of representative task `task`'s twin in copy `copy`
/// (copy 0 for a shared task), `planner` its flows. `twins_alike`: every
/// twin takes its copy-0 twin's duration, so the tasks no flow waits for
/// are folded out of the loop (`folded_twins.rs`).
pub fn run_replicated_with_fabric(
    graph: &TaskGraph,
    ids: &ReplicaIds,
    duration_of: impl Fn(u32, u32) -> SimDuration + Sync,
    twins_alike: bool,
    fabric: &Fabric,
    planner: &dyn TwinFlowPlanner,
) -> Result<ReplicatedFlowTimes, DeadlockError> {
    let mut scratch = FlowPlan::default();
    let mut planned = PlannedEnds::new(ids, |task| planner.plan_twin_into(task, 0, &mut scratch));
    let mut planned_ends = std::mem::take(&mut planned.end);
    let mut flow_loop = FlowLoop::new(fabric);
    let lone = LoneTwins::new(ids, planner, &mut flow_loop);
    let mut replicated = ReplicatedGraph {
        graph,
        ids,
        duration_of,
        planner,
        planned: &planned,
        lone: &lone,
        folded: None,
    };
    let folded = twins_alike
        .then(|| {
            FoldedTwins::new(graph, ids, |task| {
                replicated.timing(replicated.twin(task, 0))
            })
        })
        .flatten();
    replicated.folded = folded.as_ref();
    // Where the loop keeps each twin it runs (`None`: folded out).
    let slot_of = |task: u32, copy: u32| match &folded {
        Some(folded) => folded.is_kept(task).then(|| folded.slot(ids, task, copy)),
        None => Some(ids.twin_slot(task, copy) as usize),
    };
    // Each twin the loop runs: its predecessors there and its start (the
    // latest end of its predecessors so far, for a task run ahead).
    let (mut remaining, mut start) = match &folded {
        Some(folded) => (folded.in_degrees(ids), folded.earliest_starts(ids)),
        None => {
            let in_degrees = twin_in_degrees(
                ids,
                graph.task_count(),
                (0..graph.task_count() as u32).flat_map(|task| {
                    let successors = graph.successor_slice(task as usize);
                    successors.iter().map(move |&successor| (task, successor))
                }),
            );
            let start = vec![SimTime::ZERO; ids.full_tasks() as usize];
            (by_twin_slot(ids, &in_degrees, |_| true), start)
        }
    };
    // The tasks without predecessors, in full id order (a twin has its
    // copy-0 twin's in-degree): each segment's, copy by copy.
    let mut sources = Vec::new();
    for segment in ids.segments() {
        let tasks: Vec<u32> = segment
            .tasks
            .clone()
            .filter(|&task| slot_of(task, 0).is_some_and(|slot| remaining[slot] == 0))
            .collect();
        for copy in 0..segment.copies {
            sources.extend(tasks.iter().map(|&task| replicated.twin(task, copy)));
        }
    }
    flow_loop.run(
        &replicated,
        sources,
        &mut start,
        &mut remaining,
        |twin, time| {
            if let Some(slot) = planned.slot(ids, twin.task, twin.copy) {
                planned_ends[slot] = time;
            }
        },
    );
    let (mut events, finished) = (flow_loop.events, flow_loop.finished);
    lone.carry_into(planner, &mut flow_loop);
    let utilization = flow_loop.into_network().link_utilization();
    if finished < start.len() {
        return Err(deadlock(graph, ids, &remaining, finished, slot_of));
    }
    drop(remaining);
    let start = match &folded {
        None => by_full_id(ids, &start, |task| slot_of(task, 0)),
        Some(folded) => {
            let mut by_id = by_full_id(ids, &start, |task| slot_of(task, 0));
            drop(start);
            let duration_of = &replicated.duration_of;
            let (folded_events, _, flow_ends) =
                folded.pass().run(ids, &mut by_id, |task, copy, begin| {
                    match planned.slot(ids, task, copy) {
                        Some(slot) => planned_ends[slot],
                        None => begin + duration_of(task, copy),
                    }
                });
            for (task, copy, end) in flow_ends {
                let slot = planned
                    .slot(ids, task, copy)
                    .expect("a task timed once is planned");
                planned_ends[slot] = end;
            }
            events += folded_events;
            by_id
        }
    };
    drop(replicated);
    planned.end = planned_ends;
    Ok(ReplicatedFlowTimes {
        start,
        planned,
        events,
        utilization,
    })
}

/// `by_slot` indexed by full id, for readers that walk a rank's tasks
/// copy by copy (metrics, the Timeline): `first_slot(task)` is where
/// representative task `task`'s twins are, side by side (`None`: not
/// there, left zero).
///
/// Within a loop segment this is a transpose (slots run task by task, each
/// task's copies in a row; ids copy by copy, each copy's tasks in a row),
/// done a block of copies at a time: each task's block of slots is one or
/// two cache lines, read once, written to one run of ids per copy of the
/// block, each run advancing a task at a time.
fn by_full_id(
    ids: &ReplicaIds,
    by_slot: &[SimTime],
    first_slot: impl Fn(u32) -> Option<usize>,
) -> Vec<SimTime> {
    const COPIES_PER_BLOCK: u32 = 8;
    let mut by_id = vec![SimTime::ZERO; ids.full_tasks() as usize];
    for segment in ids.segments() {
        for first_copy in (0..segment.copies).step_by(COPIES_PER_BLOCK as usize) {
            let copies = first_copy..segment.copies.min(first_copy + COPIES_PER_BLOCK);
            for task in segment.tasks.clone() {
                let Some(first_slot) = first_slot(task) else {
                    continue;
                };
                let first_slot = first_slot + first_copy as usize;
                let block = &by_slot[first_slot..first_slot + copies.len()];
                for (copy, &start) in copies.clone().zip(block) {
                    by_id[ids.full_id(task, copy) as usize] = start;
                }
            }
        }
    }
    by_id
}

/// Each representative task's twins' in-degree over `edges` (pairs of
/// representative tasks, among `tasks`): a loop task's twin has its
/// representative's (its loop predecessors in its own copy, each shared
/// one once); a shared task has each shared predecessor once and each
/// loop predecessor once per copy.
pub(crate) fn twin_in_degrees(
    ids: &ReplicaIds,
    tasks: usize,
    edges: impl IntoIterator<Item = (u32, u32)>,
) -> Vec<u32> {
    let mut per_task = vec![0u32; tasks];
    for (task, successor) in edges {
        per_task[successor as usize] += match ids.is_shared(successor) {
            true => ids.twins_of(task),
            false => 1,
        };
    }
    per_task
}

/// Each twin's value from its representative task's, by twin slot
/// (representative task by task, each task's copies in a row), for the
/// representative tasks `keep` accepts.
pub(crate) fn by_twin_slot<V: Copy>(
    ids: &ReplicaIds,
    per_task: &[V],
    keep: impl Fn(u32) -> bool,
) -> Vec<V> {
    (0..per_task.len() as u32)
        .filter(|&task| keep(task))
        .flat_map(|task| std::iter::repeat_n(per_task[task as usize], ids.twins_of(task) as usize))
        .collect()
}

/// The deadlock of a run that finished `finished` of the twins the loop
/// keeps (at `slot_of`): the first (by id) with predecessors left. (With
/// tasks folded out it does not come: the fold is built only for an
/// acyclic representative, whose full expansion is acyclic.)
fn deadlock(
    graph: &TaskGraph,
    ids: &ReplicaIds,
    remaining: &[u32],
    finished: usize,
    slot_of: impl Fn(u32, u32) -> Option<usize>,
) -> DeadlockError {
    let mut first = None;
    ids.for_each_in_order(|task, copy| {
        if first.is_none() && slot_of(task, copy).is_some_and(|slot| remaining[slot] > 0) {
            first = Some((task, copy));
        }
    });
    let (task, copy) = first.expect("some task is stuck");
    DeadlockError {
        stuck: remaining.len() - finished,
        total: ids.full_tasks() as usize,
        first: match ids.is_shared(task) {
            true => graph.describe(TaskId(task)),
            false => format!("{} (in replica {copy})", graph.describe(TaskId(task))),
        },
    }
}
