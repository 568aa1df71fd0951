//! The event loop of a run with a fabric (`--contention`): task finishes in
//! the event queue, flows in the fair-share network, network completions
//! at an instant before other events at that instant.
//!
//! It runs any [`EventGraph`]: the built graph ([`crate::run_with_fabric`])
//! or full expansion kept as one replica's graph
//! ([`crate::replicated_flows`]). Both name tasks by full expansion's ids,
//! and the order of events depends on the ids alone (the queue pops equal
//! times lowest task first; the successors a finish makes ready start
//! lowest id first), so two graphs with the same tasks, edges, durations
//! and plans run exactly alike.
//!
//! **Tasks run ahead.** Only the network needs events in time order: a
//! flow task's rate depends on which flows run beside it. A task whose
//! duration is known before it starts, is longer than zero, and shares no
//! link (a fixed duration, or flows timed once: [`Timing::Ahead`]) is
//! run as soon as its predecessors' ends are known: its start is their
//! latest end, its end that plus its duration, and its successors run
//! ahead learn of it at once (a stack, not the queue). Its finish goes
//! through the queue only when an in-order successor waits for it, and
//! pops there where it popped before. So every in-order task (flows, or
//! a duration of zero) starts at the same pop as before: after its last
//! predecessor's, at the same (time, task) position, with the same ready
//! siblings; the network sees the same starts and completions in the same
//! order, and every time is the same. Why the queue's order is kept: a
//! task run ahead ends after the loop's now (its start is known, its
//! duration not zero), so its queued finish is there before its time
//! comes, as when it was queued at its start; the finishes left out of
//! the queue (no in-order successor) only ever told successors run ahead,
//! which touch nothing else. Zero-duration tasks stay in order because
//! one started at its predecessor's pop pops right after it, ahead of
//! lower ids queued earlier, which a finish queued ahead would not.
//! `flow_loop_tests.rs` runs random graphs both ways.

use crate::event_queue::EventQueue;
use crate::network::{Fabric, FairShareNetwork, FlowEnds, FlowPlan, RouteCache, RouteId};
use timeline::time::{SimDuration, SimTime};

/// What the event loop asks of the graph it runs.
pub(crate) trait EventGraph {
    /// A task as the graph locates it (at least its id).
    type Task: Copy;

    /// The task's queue key: its id (full expansion's) in the high 32 bits,
    /// so keys order as ids do (the order among equal times), and whatever
    /// else locates it in the low 32.
    fn key(&self, task: Self::Task) -> u64;

    /// The task whose key is `key` (a queued finish).
    fn task(&self, key: u64) -> Self::Task;

    /// Where the run keeps the task's start and predecessors left.
    fn slot(&self, task: Self::Task) -> usize;

    /// Calls `visit` with each successor of `task` (any order) and the
    /// gap between `task`'s end and the successor's earliest start: zero
    /// for an edge of the graph, the fixed time of the tasks between them
    /// for an edge that stands for them (`folded_twins.rs`). An in-order
    /// successor's gap is zero (it starts at its last predecessor's pop).
    fn for_each_successor(&self, task: Self::Task, visit: impl FnMut(Self::Task, SimDuration));

    /// The task's duration when it does not run as flows.
    fn duration(&self, task: Self::Task) -> SimDuration;

    /// How the task runs: its flows and tail into `plan` (unspecified
    /// otherwise), its fixed duration, or alone at a duration known
    /// before it starts.
    fn plan_into(&self, task: Self::Task, plan: &mut FlowPlan) -> TaskPlan;

    /// Whether the loop may run the task ahead of time (see the module
    /// header); [`Timing::InOrder`] is always exact.
    fn timing(&self, task: Self::Task) -> Timing;
}

/// When the loop runs a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timing {
    /// Its duration, longer than zero, is known before it starts, and it
    /// shares no link with another flow (a fixed duration, or flows timed
    /// once, `lone_twins.rs`): it starts and finishes as soon as its
    /// predecessors' ends are known, ahead of the loop's time. Each of its
    /// `flow_events` flows' ends counts as an event.
    Ahead {
        duration: SimDuration,
        flow_events: u32,
    },
    /// It starts in the loop's order of events, when the finish of its
    /// last predecessor pops.
    InOrder,
}

/// How a task runs, as its graph plans it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskPlan {
    /// It takes its fixed duration ([`EventGraph::duration`]).
    Fixed,
    /// Its flows and tail are in the plan buffer.
    Flows,
    /// Its flows run alone ([`FlowPlan::alone`]) and it takes `duration`
    /// in all, whenever it starts (`lone_twins.rs`); each of its `flows`
    /// flows' ends counts as an event, as when it is planned.
    Lone { duration: SimDuration, flows: u32 },
}

impl TaskPlan {
    /// A planner's answer: flows when it planned the task, else fixed.
    pub fn planned_if(planned: bool) -> TaskPlan {
        match planned {
            true => TaskPlan::Flows,
            false => TaskPlan::Fixed,
        }
    }
}

/// A running flow task: its flows still running and the fixed tail after them.
#[derive(Debug, Clone, Copy)]
struct FlowTask {
    /// The task's queue key.
    task: u64,
    flows_left: u32,
    tail: SimDuration,
}

/// The loop's mutable state, for a graph whose tasks are `T`s.
pub(crate) struct FlowLoop<'f, T> {
    fabric: &'f Fabric,
    queue: EventQueue,
    network: FairShareNetwork,
    /// Per running flow task, in a slot reused once it ends: the task, its
    /// flows still running and the fixed tail after them.
    flow_tasks: Vec<FlowTask>,
    /// Slots of `flow_tasks` free for the next flow task.
    free_flow_tasks: Vec<u32>,
    /// Each pair of flow ends' route, computed once.
    routes: RouteCache,
    /// The plan of the flow task being started (one buffer for every task).
    plan: FlowPlan,
    /// The successors a finish makes ready, with their keys (one buffer
    /// for every finish).
    ready: Vec<(u64, T)>,
    /// Tasks run ahead whose predecessors have all ended, to run.
    ahead: Vec<T>,
    /// Starts, finishes and flow completions.
    pub events: u64,
    /// Tasks finished.
    pub finished: usize,
}

impl<'f, T: Copy> FlowLoop<'f, T> {
    pub fn new(fabric: &'f Fabric) -> FlowLoop<'f, T> {
        FlowLoop {
            fabric,
            queue: EventQueue::with_capacity(1024),
            network: FairShareNetwork::new(fabric.capacities_bytes_per_s()),
            flow_tasks: Vec::new(),
            free_flow_tasks: Vec::new(),
            routes: RouteCache::default(),
            plan: FlowPlan::default(),
            ready: Vec::new(),
            ahead: Vec::new(),
            events: 0,
            finished: 0,
        }
    }

    /// The network, once the run is over (its link utilization).
    pub fn into_network(self) -> FairShareNetwork {
        self.network
    }

    /// The route between `ends`, interned in the run's network.
    pub fn route(&mut self, ends: FlowEnds) -> RouteId {
        self.routes.route(self.fabric, &mut self.network, ends)
    }

    /// The run's network.
    pub fn network(&self) -> &FairShareNetwork {
        &self.network
    }

    /// The run's network, to change.
    pub fn network_mut(&mut self) -> &mut FairShareNetwork {
        &mut self.network
    }

    /// Starts `task` at `now` (one event): its flows join the fabric, or
    /// its finish is queued.
    fn start_task<G: EventGraph<Task = T>>(
        &mut self,
        graph: &G,
        task: T,
        now: SimTime,
        start: &mut [SimTime],
    ) {
        start[graph.slot(task)] = now;
        self.events += 1;
        let key = graph.key(task);
        let mut plan = std::mem::take(&mut self.plan);
        let planned = match graph.plan_into(task, &mut plan) {
            TaskPlan::Fixed => false,
            TaskPlan::Flows => true,
            TaskPlan::Lone { duration, flows } => {
                self.events += u64::from(flows);
                self.queue.push(now + duration, key);
                self.plan = plan;
                return;
            }
        };
        if planned && plan.alone && !plan.flows.is_empty() {
            // Each flow has its links to itself until it ends (the planner's
            // proof, `FlowPlan::alone`): its end is known now. The finish is
            // queued now instead of at the last flow's end; the queue pops by
            // (time, task) whenever an entry came, and the shared run queues
            // it before any pop at that time (the network's completions at an
            // instant come first), so the order of events is the same.
            let mut last_end = now;
            for &(ends, bytes) in &plan.flows {
                let route = self.routes.route(self.fabric, &mut self.network, ends);
                last_end = last_end.max(self.network.run_alone(now, route, bytes));
            }
            // Each flow's end is an event, as when it is shared.
            self.events += plan.flows.len() as u64;
            self.queue.push(last_end + plan.tail, key);
        } else if planned && !plan.flows.is_empty() {
            let entry = FlowTask {
                task: key,
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
            self.network.begin_group();
            for &(ends, bytes) in &plan.flows {
                let route = self.routes.route(self.fabric, &mut self.network, ends);
                self.network.start_flow_on(now, route, bytes, owner);
            }
            self.network.end_group();
        } else if planned {
            self.queue.push(now + plan.tail, key);
        } else {
            self.queue.push(now + graph.duration(task), key);
        }
        self.plan = plan;
    }

    /// Starts `sources` (the tasks without predecessors) at zero, then runs
    /// until nothing is left: `remaining` is each task's predecessors not
    /// yet finished, by slot; `finished_at(task, time)` hears each finish
    /// (a task run ahead's when it runs).
    pub fn run<G: EventGraph<Task = T>>(
        &mut self,
        graph: &G,
        sources: impl IntoIterator<Item = T>,
        start: &mut [SimTime],
        remaining: &mut [u32],
        mut finished_at: impl FnMut(T, SimTime),
    ) {
        for task in sources {
            match graph.timing(task) {
                Timing::InOrder => self.start_task(graph, task, SimTime::ZERO, start),
                Timing::Ahead { .. } => {
                    self.ahead.push(task);
                    self.run_ahead(graph, start, remaining, &mut finished_at);
                }
            }
        }
        loop {
            if let Some(due) = self.network.next_due() {
                if self.queue.peek_time().is_none_or(|next| due <= next) {
                    self.complete_next_flows();
                    continue;
                }
            }
            let Some((time, key)) = self.queue.pop() else {
                break;
            };
            self.finish(
                graph,
                graph.task(key),
                time,
                start,
                remaining,
                &mut finished_at,
            );
        }
    }

    /// The network's next completion: the flows of one task that end
    /// then; the task's finish queued once its last flow ends.
    fn complete_next_flows(&mut self) {
        let (due, owner, ended) = self
            .network
            .complete_next_of_owner()
            .expect("a flow is pending");
        self.events += u64::from(ended);
        let entry = &mut self.flow_tasks[owner as usize];
        entry.flows_left -= ended;
        if entry.flows_left == 0 {
            let (task, tail) = (entry.task, entry.tail);
            self.free_flow_tasks.push(owner);
            self.queue.push(due + tail, task);
        }
    }

    /// The popped finish of `task` at `time`: an in-order task finishes
    /// (one event) and its successors learn of it; a task run ahead
    /// finished when it ran and told its successors run ahead then, so its
    /// in-order successors learn of it now.
    fn finish<G: EventGraph<Task = T>>(
        &mut self,
        graph: &G,
        task: T,
        time: SimTime,
        start: &mut [SimTime],
        remaining: &mut [u32],
        finished_at: &mut impl FnMut(T, SimTime),
    ) {
        let ran_ahead = matches!(graph.timing(task), Timing::Ahead { .. });
        if !ran_ahead {
            self.events += 1;
            self.finished += 1;
            crate::progress::finished(self.finished as u64);
            finished_at(task, time);
        }
        // In-order successors whose last predecessor this was start now,
        // lowest id first (each start needs no trip through the queue).
        let mut ready = std::mem::take(&mut self.ready);
        let mut ahead = std::mem::take(&mut self.ahead);
        ready.clear();
        graph.for_each_successor(task, |successor, gap| {
            let slot = graph.slot(successor);
            match graph.timing(successor) {
                Timing::InOrder => {
                    debug_assert_eq!(gap, SimDuration::ZERO, "an in-order task starts at a pop");
                    remaining[slot] -= 1;
                    if remaining[slot] == 0 {
                        ready.push((graph.key(successor), successor));
                    }
                }
                Timing::Ahead { .. } if !ran_ahead => {
                    if tell_ahead(start, remaining, slot, time + gap) {
                        ahead.push(successor);
                    }
                }
                // Told when `task` ran ahead.
                Timing::Ahead { .. } => {}
            }
        });
        self.ahead = ahead;
        self.run_ahead(graph, start, remaining, finished_at);
        if ready.len() > 1 {
            ready.sort_unstable_by_key(|&(key, _)| key);
        }
        for &(_, successor) in &ready {
            self.start_task(graph, successor, time, start);
        }
        self.ready = ready;
    }

    /// Runs the tasks in `self.ahead` and those they make ready to run
    /// ahead: each starts at its `start` (the latest end of its
    /// predecessors, gathered there) and ends its duration later. Its
    /// successors run ahead learn of its end now; if it has an in-order
    /// successor, its finish is queued for them (at a time after the
    /// loop's now: a task runs ahead only once its start is known, and
    /// its duration is not zero).
    fn run_ahead<G: EventGraph<Task = T>>(
        &mut self,
        graph: &G,
        start: &mut [SimTime],
        remaining: &mut [u32],
        finished_at: &mut impl FnMut(T, SimTime),
    ) {
        let mut ahead = std::mem::take(&mut self.ahead);
        while let Some(task) = ahead.pop() {
            let Timing::Ahead {
                duration,
                flow_events,
            } = graph.timing(task)
            else {
                unreachable!("only tasks run ahead are queued to run ahead");
            };
            let finish = start[graph.slot(task)] + duration;
            self.events += 2 + u64::from(flow_events);
            self.finished += 1;
            crate::progress::finished(self.finished as u64);
            finished_at(task, finish);
            let mut in_order_successor = false;
            graph.for_each_successor(task, |successor, gap| match graph.timing(successor) {
                Timing::InOrder => in_order_successor = true,
                Timing::Ahead { .. } => {
                    if tell_ahead(start, remaining, graph.slot(successor), finish + gap) {
                        ahead.push(successor);
                    }
                }
            });
            if in_order_successor {
                self.queue.push(finish, graph.key(task));
            }
        }
        self.ahead = ahead;
    }
}

/// Tells the task run ahead in `slot` that a predecessor lets it start at
/// `earliest`: its start is the latest such time; true when that was its
/// last predecessor.
#[inline]
fn tell_ahead(
    start: &mut [SimTime],
    remaining: &mut [u32],
    slot: usize,
    earliest: SimTime,
) -> bool {
    if start[slot] < earliest {
        start[slot] = earliest;
    }
    remaining[slot] -= 1;
    remaining[slot] == 0
}

#[cfg(test)]
#[path = "flow_loop_tests.rs"]
mod tests;
