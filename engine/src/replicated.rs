//! Every replica's times from one replica's graph: full expansion run
//! without building it (`sim::replicated_run`).
//!
//! **The graph it runs.** A representative replica's graph and full
//! expansion's ids as arithmetic on it ([`ReplicaIds`]): a task in a loop
//! over replicas stands for its twin in every copy, a task outside loops (a
//! collective joining replicas) for itself. Full expansion's edges are the
//! representative's, copied as its lowering copies the loop bodies:
//! - between two loop tasks, copy c's twins (the same loop body, ranks moved
//!   by c replicas);
//! - from a loop task to a shared one, each copy's twin (every replica's
//!   program order and data meet in the collective);
//! - from a shared task to a loop task, to every copy's twin;
//! - between two shared tasks, once.
//!
//! `sim::replicated_run` runs this only where the representative's loops
//! describe full expansion (its tests compare every task's times with full
//! expansion's, built and run).
//!
//! **Why no event queue.** Durations are fixed, so a task starts at the
//! latest end of its predecessors, whatever order they finish in (the
//! engine's own argument, `sim::symmetry`): the times are the longest paths
//! of the graph, found here in one pass over a topological order. That
//! order comes from the representative's: its tasks in a topological order,
//! each stretch of loop tasks run copy by copy (see [`representative_order`]).
//! The event queue orders finishes by time, which only a run with flows
//! sharing links needs. Each task counts two events (its start and its
//! finish), as the event loop counts them.
//!
//! **State.** 8 bytes a full task, its start (its end is its start plus
//! its duration, which the caller prices again when it reads it). The
//! representative's order and in-degrees are per representative task.

use crate::DeadlockError;
use taskgraph::ids::TaskId;
use taskgraph::replica_ids::ReplicaIds;
use taskgraph::task_graph::TaskGraph;
use timeline::time::{SimDuration, SimTime};

/// Runs full expansion of `graph` (the representative) as `ids` lays it
/// out; `duration_of(task, copy)` is the duration of representative task
/// `task`'s twin in copy `copy` (copy 0 for a shared task). Returns every
/// full task's start, by full id (its end is its start plus its duration;
/// the run counts two events a task).
pub fn run_replicated(
    graph: &TaskGraph,
    ids: &ReplicaIds,
    duration_of: impl Fn(u32, u32) -> SimDuration,
) -> Result<Vec<SimTime>, DeadlockError> {
    let order = representative_order(graph, ids)?;
    let mut start = vec![SimTime::ZERO; ids.full_tasks() as usize];
    let mut finished = 0u64;
    let mut run = |task: u32, copy: u32| {
        let id = ids.full_id(task, copy) as usize;
        let finish = start[id] + duration_of(task, copy);
        finished += 1;
        crate::progress::finished(finished);
        let mut arrive = |successor: u32, copy: u32| {
            let id = ids.full_id(successor, copy) as usize;
            if start[id] < finish {
                start[id] = finish;
            }
        };
        let from_shared = ids.is_shared(task);
        for &successor in graph.successor_slice(task as usize) {
            if ids.is_shared(successor) {
                arrive(successor, 0);
            } else if from_shared {
                for copy in 0..ids.copies() {
                    arrive(successor, copy);
                }
            } else {
                arrive(successor, copy);
            }
        }
    };
    for piece in &order {
        match piece {
            Piece::Shared(task) => run(*task, 0),
            Piece::Loops(tasks) => {
                for copy in 0..ids.copies() {
                    for &task in tasks {
                        run(task, copy);
                    }
                }
            }
        }
    }
    Ok(start)
}

/// A stretch of the representative's topological order: a shared task, or
/// loop tasks between two shared ones (run copy by copy: no edge joins two
/// copies' loop tasks).
enum Piece {
    Shared(u32),
    Loops(Vec<u32>),
}

/// The representative's tasks in a topological order cut into [`Piece`]s,
/// shared tasks as late as their successors allow (Kahn's algorithm taking
/// a ready loop task first), so the stretches of loop tasks are long. Every
/// full task then follows its predecessors: a loop task's are in its own
/// copy or shared, both earlier. A cycle in full expansion maps onto one in
/// the representative (each twin onto its task), and back (copy 0's twins),
/// so the graph deadlocks exactly when this order cannot be completed.
fn representative_order(graph: &TaskGraph, ids: &ReplicaIds) -> Result<Vec<Piece>, DeadlockError> {
    let n = graph.task_count();
    let mut remaining = graph.in_degrees();
    let (mut ready_loops, mut ready_shared): (Vec<u32>, Vec<u32>) = (0..n as u32)
        .filter(|&task| remaining[task as usize] == 0)
        .partition(|&task| !ids.is_shared(task));
    let mut pieces = Vec::new();
    let mut stretch = Vec::new();
    let mut placed = 0usize;
    loop {
        let task = match ready_loops.pop() {
            Some(task) => {
                stretch.push(task);
                task
            }
            None => {
                let Some(task) = ready_shared.pop() else {
                    break;
                };
                if !stretch.is_empty() {
                    pieces.push(Piece::Loops(std::mem::take(&mut stretch)));
                }
                pieces.push(Piece::Shared(task));
                task
            }
        };
        placed += 1;
        for &successor in graph.successor_slice(task as usize) {
            let slot = &mut remaining[successor as usize];
            *slot -= 1;
            if *slot == 0 {
                match ids.is_shared(successor) {
                    true => ready_shared.push(successor),
                    false => ready_loops.push(successor),
                }
            }
        }
    }
    if !stretch.is_empty() {
        pieces.push(Piece::Loops(stretch));
    }
    if placed < n {
        return Err(deadlock(graph, ids, &remaining));
    }
    Ok(pieces)
}

/// The deadlock of full expansion when the representative's tasks with
/// `remaining` predecessors never became ready: their twins never do.
fn deadlock(graph: &TaskGraph, ids: &ReplicaIds, remaining: &[u32]) -> DeadlockError {
    let stuck_tasks = (0..graph.task_count() as u32).filter(|&task| remaining[task as usize] > 0);
    let stuck = stuck_tasks
        .clone()
        .map(|task| ids.twins_of(task) as usize)
        .sum();
    let first = stuck_tasks
        .min_by_key(|&task| ids.full_id(task, 0))
        .expect("some task is stuck");
    DeadlockError {
        stuck,
        total: ids.full_tasks() as usize,
        first: match ids.is_shared(first) {
            true => graph.describe(TaskId(first)),
            false => format!("{} (in every replica)", graph.describe(TaskId(first))),
        },
    }
}
