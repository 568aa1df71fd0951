//! The event engine: a deterministic discrete-event simulation in integer
//! nanoseconds.
//!
//! Events live in a binary heap ordered by (time, sequence number): equal
//! times pop in the order they were pushed (FIFO tie-break, as NeXosim does),
//! so the run is a pure function of the task graph and the durations. A task
//! starts when its last predecessor finishes (stream exclusivity is already in
//! the graph as program-order edges) and finishes `duration` later. The engine
//! owns all its state in dense `Vec`s indexed by task id; no allocation per
//! event beyond the heap's amortized growth.

use crate::ids::TaskId;
use crate::task_graph::TaskGraph;
use crate::time::{SimDuration, SimTime};
use petgraph::graph::NodeIndex;
use petgraph::Direction;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EventKind {
    Start,
    Finish,
}

/// A heap entry: ordered by time, then insertion sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    time: SimTime,
    sequence: u64,
    kind: EventKind,
    task: u32,
}

/// Min-heap of events with FIFO tie-break among equal times.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(SimTime, u64, u32, bool)>>,
    next_sequence: u64,
}

impl EventQueue {
    pub fn with_capacity(capacity: usize) -> EventQueue {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            next_sequence: 0,
        }
    }

    fn push(&mut self, time: SimTime, kind: EventKind, task: u32) {
        self.heap.push(Reverse((
            time,
            self.next_sequence,
            task,
            kind == EventKind::Finish,
        )));
        self.next_sequence += 1;
    }

    fn pop(&mut self) -> Option<Event> {
        self.heap
            .pop()
            .map(|Reverse((time, sequence, task, finish))| Event {
                time,
                sequence,
                kind: if finish {
                    EventKind::Finish
                } else {
                    EventKind::Start
                },
                task,
            })
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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

/// Runs the graph with a duration per task.
pub fn run(
    graph: &TaskGraph,
    duration_of: impl Fn(TaskId) -> SimDuration,
) -> Result<Schedule, DeadlockError> {
    let g = &graph.graph;
    let n = g.node_count();
    let mut remaining: Vec<u32> = vec![0; n];
    for edge in g.raw_edges() {
        remaining[edge.target().index()] += 1;
    }
    let mut start = vec![SimTime::ZERO; n];
    let mut end = vec![SimTime::ZERO; n];
    let mut queue = EventQueue::with_capacity(1024);
    for (index, &count) in remaining.iter().enumerate() {
        if count == 0 {
            queue.push(SimTime::ZERO, EventKind::Start, index as u32);
        }
    }
    let mut events = 0u64;
    let mut finished = 0usize;
    while let Some(event) = queue.pop() {
        events += 1;
        let task = event.task as usize;
        match event.kind {
            EventKind::Start => {
                start[task] = event.time;
                queue.push(
                    event.time + duration_of(TaskId(event.task)),
                    EventKind::Finish,
                    event.task,
                );
            }
            EventKind::Finish => {
                end[task] = event.time;
                finished += 1;
                let mut successors = g
                    .neighbors_directed(NodeIndex::new(task), Direction::Outgoing)
                    .detach();
                while let Some(successor) = successors.next_node(g) {
                    let slot = &mut remaining[successor.index()];
                    *slot -= 1;
                    if *slot == 0 {
                        queue.push(event.time, EventKind::Start, successor.index() as u32);
                    }
                }
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
    Ok(Schedule { start, end, events })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut queue = EventQueue::with_capacity(4);
        for task in [7, 3, 9, 1] {
            queue.push(SimTime(5), EventKind::Start, task);
        }
        queue.push(SimTime(2), EventKind::Finish, 42);
        let order: Vec<u32> = std::iter::from_fn(|| queue.pop()).map(|e| e.task).collect();
        assert_eq!(order, vec![42, 7, 3, 9, 1]);
    }
}
