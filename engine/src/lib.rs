//! The event engine: a deterministic discrete-event simulation in integer
//! nanoseconds.
//!
//! A task starts the moment its last predecessor finishes (stream exclusivity
//! is already in the graph as program-order edges) and finishes `duration`
//! later. With fixed durations ([`run`]) that makes the times the graph's
//! longest paths, whatever order tasks finish in: one pass over a
//! topological order finds them, without an event queue. With a fabric,
//! task finishes live in a radix heap ([`crate::event_queue`]) ordered by
//! time, the lowest task id first among equal times, and the successors a
//! finish makes ready start lowest id first: the order of events is a
//! function of the graph's edges and the durations, not of the order
//! lowering added the edges in, so a run of full expansion from one
//! replica's graph ([`replicated`]) meets them in the same order. `events` counts starts, finishes and
//! (with a fabric) flow completions. The engine reads the graph's CSR
//! successor rows and its work column (one `u32` per task, the duration
//! through the work's cost) and owns its state in dense `Vec`s indexed by
//! task id (in-degree left, start, end: 20 bytes a task); no allocation per
//! event beyond the queue's amortized growth.
//!
//! With a fabric ([`run_with_fabric`]), tasks a [`crate::network::FlowPlanner`] turns into
//! flows (pipeline transfers, collectives and PCIe copies) share link bandwidth max-min fairly in
//! [`crate::network::FairShareNetwork`]: a flow task ends when its last flow
//! completes plus its fixed tail. Everything else keeps its fixed duration.
//! The event loop (`flow_loop.rs`) runs any graph that names its tasks by
//! full expansion's ids.
//!
//! [`replicated::run_replicated`] runs full expansion from one replica's
//! graph without building the others' (fixed durations: longest paths in
//! one topological pass); [`replicated_flows::run_replicated_with_fabric`]
//! does so with a fabric, in the event loop.

pub mod event_queue;
mod flow_loop;
mod folded_pass;
mod folded_twins;
mod lone_twins;
pub mod network;
pub mod progress;
pub mod replicated;
pub mod replicated_flows;

use crate::flow_loop::{EventGraph, FlowLoop, TaskPlan, Timing};
use crate::network::{FlowPlan, FlowPlanner, LinkUtilization, SharedFabric};
use taskgraph::ids::TaskId;
use taskgraph::task_graph::TaskGraph;
use timeline::time::{SimDuration, SimTime};

/// When every task ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskTimes {
    pub start: Vec<SimTime>,
    pub end: Vec<SimTime>,
    /// Events processed (starts + finishes).
    pub events: u64,
}

/// Tasks that never became ready: the graph has a cycle through some of them.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{stuck} of {total} tasks never became ready (deadlock); first stuck task: {first}")]
pub struct DeadlockError {
    pub stuck: usize,
    pub total: usize,
    pub first: String,
}

/// The built graph as the event loop sees it.
struct BuiltGraph<'a, D> {
    graph: &'a TaskGraph,
    duration_of: &'a D,
    planner: &'a dyn FlowPlanner,
}

impl<D: Fn(TaskId) -> SimDuration> EventGraph for BuiltGraph<'_, D> {
    type Task = u32;

    #[inline]
    fn key(&self, task: u32) -> u64 {
        u64::from(task) << 32
    }

    #[inline]
    fn task(&self, key: u64) -> u32 {
        (key >> 32) as u32
    }

    #[inline]
    fn slot(&self, task: u32) -> usize {
        task as usize
    }

    #[inline]
    fn for_each_successor(&self, task: u32, mut visit: impl FnMut(u32, SimDuration)) {
        for &successor in self.graph.successor_slice(task as usize) {
            visit(successor, SimDuration::ZERO);
        }
    }

    #[inline]
    fn duration(&self, task: u32) -> SimDuration {
        (self.duration_of)(TaskId(task))
    }

    #[inline]
    fn plan_into(&self, task: u32, plan: &mut FlowPlan) -> TaskPlan {
        TaskPlan::planned_if(self.planner.plan_into(TaskId(task), plan))
    }

    /// In order: which tasks the planner turns into flows is known only
    /// by planning them.
    #[inline]
    fn timing(&self, _task: u32) -> Timing {
        Timing::InOrder
    }
}

/// The fixed-duration run: no fabric, so a task starts at the latest end of
/// its predecessors whatever order they finish in, and the times are the
/// graph's longest paths, found in one pass over a topological order
/// (Kahn's algorithm, a stack of ready tasks) without the event queue. Each
/// task counts two events, its start and its finish, as the event loop
/// counts them.
fn run_fixed(
    graph: &TaskGraph,
    duration_of: &impl Fn(TaskId) -> SimDuration,
    start: &mut [SimTime],
    remaining: &mut [u32],
    end: &mut [SimTime],
) -> (u64, usize) {
    let mut ready: Vec<u32> = (0..remaining.len() as u32)
        .filter(|&task| remaining[task as usize] == 0)
        .collect();
    let mut finished = 0usize;
    while let Some(task) = ready.pop() {
        let finish = start[task as usize] + duration_of(TaskId(task));
        end[task as usize] = finish;
        finished += 1;
        progress::finished(finished as u64);
        for &successor in graph.successor_slice(task as usize) {
            let at = successor as usize;
            if start[at] < finish {
                start[at] = finish;
            }
            remaining[at] -= 1;
            if remaining[at] == 0 {
                ready.push(successor);
            }
        }
    }
    (2 * finished as u64, finished)
}

/// Runs the graph with a fixed duration per task.
pub fn run(
    graph: &TaskGraph,
    duration_of: impl Fn(TaskId) -> SimDuration,
) -> Result<TaskTimes, DeadlockError> {
    run_with_fabric(graph, duration_of, None).map(|(schedule, _)| schedule)
}

/// Runs the graph; tasks the planner turns into flows share the fabric's links
/// max-min fairly (contention), the others take their fixed duration. Network
/// completions at an instant are processed before other events at that instant.
pub fn run_with_fabric(
    graph: &TaskGraph,
    duration_of: impl Fn(TaskId) -> SimDuration,
    fabric: Option<SharedFabric<'_>>,
) -> Result<(TaskTimes, Option<LinkUtilization>), DeadlockError> {
    let n = graph.task_count();
    let mut remaining = graph.in_degrees();
    let mut start = vec![SimTime::ZERO; n];
    let mut end = vec![SimTime::ZERO; n];
    let (events, finished, utilization) = match fabric {
        None => {
            let (events, finished) =
                run_fixed(graph, &duration_of, &mut start, &mut remaining, &mut end);
            (events, finished, None)
        }
        Some(shared) => {
            let built = BuiltGraph {
                graph,
                duration_of: &duration_of,
                planner: shared.planner,
            };
            let mut flow_loop = FlowLoop::new(shared.fabric);
            let sources: Vec<u32> = (0..n as u32)
                .filter(|&task| remaining[task as usize] == 0)
                .collect();
            flow_loop.run(&built, sources, &mut start, &mut remaining, |task, time| {
                end[task as usize] = time;
            });
            let (events, finished) = (flow_loop.events, flow_loop.finished);
            let utilization = flow_loop.into_network().link_utilization();
            (events, finished, Some(utilization))
        }
    };
    if finished < n {
        let first = remaining
            .iter()
            .position(|&count| count > 0)
            .expect("some task is stuck");
        return Err(DeadlockError {
            stuck: n - finished,
            total: n,
            first: graph.describe(TaskId(first as u32)),
        });
    }
    Ok((TaskTimes { start, end, events }, utilization))
}
