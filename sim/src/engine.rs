//! The event engine: a deterministic discrete-event simulation in integer
//! nanoseconds.
//!
//! Task finishes live in a binary heap ordered by (time, sequence number):
//! equal times pop in the order they were pushed (FIFO tie-break, as NeXosim
//! does), so the run is a pure function of the task graph and the durations.
//! A task starts the moment its last predecessor finishes (stream exclusivity
//! is already in the graph as program-order edges), without a trip through the
//! heap, and finishes `duration` later. `events` counts starts, finishes and
//! (with a fabric) flow completions. The engine
//! owns all its state in dense `Vec`s indexed by task id; no allocation per
//! event beyond the heap's amortized growth.
//!
//! With a fabric ([`run_with_fabric`]), tasks a [`crate::network::FlowPlanner`] turns into
//! flows (pipeline transfers, collectives and PCIe copies) share link bandwidth max-min fairly in
//! [`crate::network::FairShareNetwork`]: a flow task ends when its last flow
//! completes plus its fixed tail. Everything else keeps its fixed duration.

use crate::ids::TaskId;
use crate::network::{FairShareNetwork, FlowEnds, LinkUtilization, SharedFabric};
use crate::task_graph::TaskGraph;
use crate::time::{SimDuration, SimTime};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// A task finishing at `time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Event {
    time: SimTime,
    task: u32,
}

/// Min-heap of task finishes with FIFO tie-break among equal times (a
/// sequence number breaks ties in insertion order, so the run is deterministic).
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(SimTime, u64, u32)>>,
    next_sequence: u64,
}

impl EventQueue {
    pub fn with_capacity(capacity: usize) -> EventQueue {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            next_sequence: 0,
        }
    }

    fn push(&mut self, time: SimTime, task: u32) {
        self.heap.push(Reverse((time, self.next_sequence, task)));
        self.next_sequence += 1;
    }

    fn pop(&mut self) -> Option<Event> {
        self.heap
            .pop()
            .map(|Reverse((time, _, task))| Event { time, task })
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|Reverse((time, ..))| *time)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// Successor lists in compressed-sparse-row form: one pass over petgraph's
/// edges, then contiguous slices (petgraph's linked edge lists are slow to walk
/// at millions of tasks). Successors keep petgraph's per-node order.
struct Successors {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Successors {
    fn new(graph: &TaskGraph) -> Successors {
        let n = graph.task_count();
        let mut offsets = vec![0u32; n + 1];
        for (from, _, _) in graph.edges() {
            offsets[from.index() + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut targets = vec![0u32; graph.edge_count()];
        for (node, &offset) in offsets.iter().take(n).enumerate() {
            for (at, next) in (offset as usize..).zip(graph.successors(TaskId(node as u32))) {
                targets[at] = next.0;
            }
        }
        Successors { offsets, targets }
    }

    fn of(&self, task: usize) -> &[u32] {
        &self.targets[self.offsets[task] as usize..self.offsets[task + 1] as usize]
    }
}

/// When every task ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
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

/// The engine's mutable state while it runs.
struct RunState {
    start: Vec<SimTime>,
    queue: EventQueue,
    network: Option<FairShareNetwork>,
    /// Per flow: the task it belongs to.
    flow_owner: Vec<u32>,
    /// Per running flow task: flows still running and the fixed tail after them.
    flows_left: BTreeMap<u32, (u32, SimDuration)>,
}

impl RunState {
    /// Starts `task` at `now`: its flows join the fabric, or its finish is scheduled.
    fn start_task(
        &mut self,
        task: u32,
        now: SimTime,
        fabric: Option<&SharedFabric<'_>>,
        duration_of: &impl Fn(TaskId) -> SimDuration,
    ) {
        self.start[task as usize] = now;
        let plan = fabric.and_then(|f| f.planner.plan(TaskId(task)));
        match (plan, self.network.as_mut(), fabric) {
            (Some(plan), Some(network), Some(shared)) if !plan.flows.is_empty() => {
                self.flows_left
                    .insert(task, (plan.flows.len() as u32, plan.tail));
                for &(ends, bytes) in &plan.flows {
                    let route = match ends {
                        FlowEnds::Gpus(source, destination) => {
                            shared.fabric.route(source, destination)
                        }
                        FlowEnds::ToHost(gpu) => shared.fabric.route_to_host(gpu),
                        FlowEnds::FromHost(gpu) => shared.fabric.route_from_host(gpu),
                    };
                    let id = network.start_flow(now, &route.links, bytes);
                    debug_assert_eq!(id.index(), self.flow_owner.len());
                    self.flow_owner.push(task);
                }
            }
            (Some(plan), _, _) => self.queue.push(now + plan.tail, task),
            (None, _, _) => self.queue.push(now + duration_of(TaskId(task)), task),
        }
    }
}

/// Runs the graph with a fixed duration per task.
pub fn run(
    graph: &TaskGraph,
    duration_of: impl Fn(TaskId) -> SimDuration,
) -> Result<Schedule, DeadlockError> {
    run_with_fabric(graph, duration_of, None).map(|(schedule, _)| schedule)
}

/// Runs the graph; tasks the planner turns into flows share the fabric's links
/// max-min fairly (contention), the others take their fixed duration. Network
/// completions at an instant are processed before other events at that instant.
pub fn run_with_fabric(
    graph: &TaskGraph,
    duration_of: impl Fn(TaskId) -> SimDuration,
    fabric: Option<SharedFabric<'_>>,
) -> Result<(Schedule, Option<LinkUtilization>), DeadlockError> {
    let n = graph.task_count();
    let successors = Successors::new(graph);
    let mut remaining: Vec<u32> = vec![0; n];
    for (_, to, _) in graph.edges() {
        remaining[to.index()] += 1;
    }
    let mut state = RunState {
        start: vec![SimTime::ZERO; n],
        queue: EventQueue::with_capacity(1024),
        network: fabric
            .as_ref()
            .map(|f| FairShareNetwork::new(f.fabric.capacities_bytes_per_s())),
        flow_owner: Vec::new(),
        flows_left: BTreeMap::new(),
    };
    let mut end = vec![SimTime::ZERO; n];
    let mut events = 0u64;
    for (index, &count) in remaining.iter().enumerate() {
        if count == 0 {
            state.start_task(index as u32, SimTime::ZERO, fabric.as_ref(), &duration_of);
            events += 1;
        }
    }
    let mut finished = 0usize;
    loop {
        if let Some(network) = state.network.as_mut() {
            if let Some((due, flow)) = network.next_completion() {
                if state.queue.peek_time().is_none_or(|next| due <= next) {
                    network.complete(due, flow);
                    events += 1;
                    let task = state.flow_owner[flow.index()];
                    let entry = state
                        .flows_left
                        .get_mut(&task)
                        .expect("a running flow task");
                    entry.0 -= 1;
                    if entry.0 == 0 {
                        let tail = entry.1;
                        state.flows_left.remove(&task);
                        state.queue.push(due + tail, task);
                    }
                    continue;
                }
            }
        }
        let Some(event) = state.queue.pop() else {
            break;
        };
        events += 1;
        let task = event.task as usize;
        end[task] = event.time;
        finished += 1;
        // Successors whose last predecessor this was start now, in successor order
        // (each start counts as an event; it needs no trip through the heap).
        for &successor in successors.of(task) {
            let slot = &mut remaining[successor as usize];
            *slot -= 1;
            if *slot == 0 {
                state.start_task(successor, event.time, fabric.as_ref(), &duration_of);
                events += 1;
            }
        }
    }
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
    Ok((
        Schedule {
            start: state.start,
            end,
            events,
        },
        state.network.map(|network| network.link_utilization()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut queue = EventQueue::with_capacity(4);
        for task in [7, 3, 9, 1] {
            queue.push(SimTime(5), task);
        }
        queue.push(SimTime(2), 42);
        let order: Vec<u32> = std::iter::from_fn(|| queue.pop()).map(|e| e.task).collect();
        assert_eq!(order, vec![42, 7, 3, 9, 1]);
    }
}
