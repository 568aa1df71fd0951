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
//!
//! [`replicated::run_replicated`] runs full expansion from one replica's
//! graph without building the others' (fixed durations: longest paths in
//! one topological pass).

pub mod event_queue;
pub mod network;
pub mod replicated;

use crate::event_queue::EventQueue;
use crate::network::{FairShareNetwork, FlowPlan, LinkUtilization, RouteCache, SharedFabric};
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

/// A running flow task: its flows still running and the fixed tail after them.
#[derive(Debug, Clone, Copy)]
struct FlowTask {
    task: u32,
    flows_left: u32,
    tail: SimDuration,
}

/// The engine's mutable state while it runs.
struct RunState {
    start: Vec<SimTime>,
    queue: EventQueue,
    network: Option<FairShareNetwork>,
    /// Per running flow task, in a slot reused once it ends: the task, its
    /// flows still running and the fixed tail after them.
    flow_tasks: Vec<FlowTask>,
    /// Slots of `flow_tasks` free for the next flow task.
    free_flow_tasks: Vec<u32>,
    /// Each pair of flow ends' route, computed once.
    routes: RouteCache,
    /// The plan of the flow task being started (one buffer for every task).
    plan: FlowPlan,
    /// The successors a finish makes ready (one buffer for every finish).
    ready: Vec<u32>,
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
        let Some(shared) = fabric else {
            self.queue.push(now + duration_of(TaskId(task)), task);
            return;
        };
        let mut plan = std::mem::take(&mut self.plan);
        let planned = shared.planner.plan_into(TaskId(task), &mut plan);
        match self.network.as_mut() {
            Some(network) if planned && !plan.flows.is_empty() => {
                let entry = FlowTask {
                    task,
                    flows_left: plan.flows.len() as u32,
                    tail: plan.tail,
                };
                let owner = match self.free_flow_tasks.pop() {
                    Some(free) => {
                        self.flow_tasks[free as usize] = entry;
                        free
                    }
                    None => {
                        self.flow_tasks.push(entry);
                        (self.flow_tasks.len() - 1) as u32
                    }
                };
                network.begin_group();
                for &(ends, bytes) in &plan.flows {
                    let links = self.routes.route(shared.fabric, ends);
                    network.start_flow_for(now, links, bytes, owner);
                }
                network.end_group();
            }
            _ if planned => self.queue.push(now + plan.tail, task),
            _ => self.queue.push(now + duration_of(TaskId(task)), task),
        }
        self.plan = plan;
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
    state: &mut RunState,
    remaining: &mut [u32],
    end: &mut [SimTime],
) -> (u64, usize) {
    let mut ready: Vec<u32> = (0..remaining.len() as u32)
        .filter(|&task| remaining[task as usize] == 0)
        .collect();
    let start = &mut state.start;
    let mut finished = 0usize;
    while let Some(task) = ready.pop() {
        let finish = start[task as usize] + duration_of(TaskId(task));
        end[task as usize] = finish;
        finished += 1;
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
    let mut state = RunState {
        start: vec![SimTime::ZERO; n],
        queue: EventQueue::with_capacity(1024),
        network: fabric
            .as_ref()
            .map(|f| FairShareNetwork::new(f.fabric.capacities_bytes_per_s())),
        flow_tasks: Vec::new(),
        free_flow_tasks: Vec::new(),
        routes: RouteCache::default(),
        plan: FlowPlan::default(),
        ready: Vec::new(),
    };
    let mut end = vec![SimTime::ZERO; n];
    let (events, finished) = if fabric.is_none() {
        run_fixed(graph, &duration_of, &mut state, &mut remaining, &mut end)
    } else {
        run_flows(
            graph,
            &duration_of,
            fabric.as_ref(),
            &mut state,
            &mut remaining,
            &mut end,
        )
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
    Ok((
        TaskTimes {
            start: state.start,
            end,
            events,
        },
        state.network.map(|network| network.link_utilization()),
    ))
}

/// The loop with a fabric: network completions at an instant are processed
/// before other events at that instant.
fn run_flows(
    graph: &TaskGraph,
    duration_of: &impl Fn(TaskId) -> SimDuration,
    fabric: Option<&SharedFabric<'_>>,
    state: &mut RunState,
    remaining: &mut [u32],
    end: &mut [SimTime],
) -> (u64, usize) {
    let mut events = 0u64;
    for (index, &left) in remaining.iter().enumerate() {
        if left == 0 {
            state.start_task(index as u32, SimTime::ZERO, fabric, duration_of);
            events += 1;
        }
    }
    let mut finished = 0usize;
    loop {
        if let Some(network) = state.network.as_mut() {
            if let Some(due) = network.next_due() {
                if state.queue.peek_time().is_none_or(|next| due <= next) {
                    let (due, owner) = network.complete_next().expect("a flow is pending");
                    events += 1;
                    let entry = &mut state.flow_tasks[owner as usize];
                    entry.flows_left -= 1;
                    if entry.flows_left == 0 {
                        let (task, tail) = (entry.task, entry.tail);
                        state.free_flow_tasks.push(owner);
                        state.queue.push(due + tail, task);
                    }
                    continue;
                }
            }
        }
        let Some((time, task)) = state.queue.pop() else {
            break;
        };
        events += 1;
        end[task as usize] = time;
        finished += 1;
        // Successors whose last predecessor this was start now, lowest id
        // first (each start counts as an event; it needs no trip through
        // the queue).
        let mut ready = std::mem::take(&mut state.ready);
        ready.clear();
        for &successor in graph.successor_slice(task as usize) {
            let slot = &mut remaining[successor as usize];
            *slot -= 1;
            if *slot == 0 {
                ready.push(successor);
            }
        }
        ready.sort_unstable();
        for &successor in &ready {
            state.start_task(successor, time, fabric, duration_of);
            events += 1;
        }
        state.ready = ready;
    }
    (events, finished)
}
