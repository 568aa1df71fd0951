//! Checks a plan against its graph before anything is issued: a violated
//! invariant here would be a silent wrong answer (a dropped dependency) or a
//! hang on the GPU, so the executor refuses to run a plan that fails.
//!
//! Invariants: every task appears exactly once; the issue order respects
//! every edge (so each wait refers to an event already recorded, and each
//! stream runs its tasks in an order consistent with the graph); every edge
//! between two streams is a wait; waits name only earlier tasks on other
//! streams; a task with a nonzero simulated duration launches something; in
//! synthetic mode a task's spins add up to its simulated duration.

use crate::error::ExecuteError;
use crate::launches::Launch;
use crate::mode::ExecutionMode;
use crate::plan::ExecutionPlan;
use sim::task_graph::TaskGraph;
use timeline::TaskKind;

/// At most this many problems are listed (with the total).
const MAX_LISTED: usize = 20;

/// What a passing check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanCheck {
    /// Cross-stream waits issued.
    pub waits: usize,
    /// Consecutive tasks of one stream with no path between them in the graph:
    /// the stream orders them although the graph does not (the simulator could
    /// overlap them). Lowering encodes program order as edges, so 0 is expected.
    pub implicit_orderings: usize,
}

/// Verifies `plan` against `graph`; lists every problem (up to 20) on failure.
pub fn check(plan: &ExecutionPlan, graph: &TaskGraph) -> Result<PlanCheck, ExecuteError> {
    let n = graph.task_count();
    let mut problems = Vec::new();
    let mut position = vec![usize::MAX; n];
    for (at, planned) in plan.tasks.iter().enumerate() {
        let index = planned.task as usize;
        if index >= n {
            problems.push(format!("planned task #{index} is not in the graph"));
        } else if position[index] != usize::MAX {
            problems.push(format!("{} is planned twice", graph.describe(id(index))));
        } else {
            position[index] = at;
        }
    }
    for (index, &at) in position.iter().enumerate() {
        if at == usize::MAX {
            problems.push(format!("{} is never issued", graph.describe(id(index))));
        }
    }
    if !problems.is_empty() {
        return Err(invalid(problems));
    }

    let stream_of = |index: usize| plan.tasks[position[index]].stream;
    let mut waits = 0;
    for planned in &plan.tasks {
        let at = position[planned.task as usize];
        for &waited in &planned.waits {
            waits += 1;
            let waited = waited as usize;
            if waited >= n || position[waited] >= at {
                problems.push(format!(
                    "{} waits on #{waited}, which is not issued before it",
                    graph.describe(id(planned.task as usize))
                ));
            } else if stream_of(waited) == planned.stream {
                problems.push(format!(
                    "{} waits on #{waited} on its own stream",
                    graph.describe(id(planned.task as usize))
                ));
            }
        }
    }
    for (from, to, _) in graph.edges() {
        let (from, to) = (from.index(), to.index());
        if position[from] >= position[to] {
            problems.push(format!(
                "{} is issued before its predecessor {}",
                graph.describe(id(to)),
                graph.describe(id(from))
            ));
        } else if stream_of(from) != stream_of(to)
            && plan.tasks[position[to]]
                .waits
                .binary_search(&(from as u32))
                .is_err()
        {
            problems.push(format!(
                "{} does not wait on {} (another stream)",
                graph.describe(id(to)),
                graph.describe(id(from))
            ));
        }
    }
    for planned in &plan.tasks {
        let describe = || graph.describe(id(planned.task as usize));
        // Simulated host issue is what the executor's own host thread does.
        let issued_by_this_host = planned.kind == TaskKind::HostIssue;
        if planned.simulated_duration_ns > 0 && planned.launches.is_empty() && !issued_by_this_host
        {
            problems.push(format!(
                "{} costs {} ns but launches nothing",
                describe(),
                planned.simulated_duration_ns
            ));
        }
        if plan.mode == ExecutionMode::Synthetic {
            let spun: u64 = planned
                .launches
                .iter()
                .map(|launch| match launch {
                    Launch::Spin { duration_ns } => *duration_ns,
                    _ => 0,
                })
                .sum();
            if spun != planned.simulated_duration_ns {
                problems.push(format!(
                    "{} spins {spun} ns, simulated {} ns",
                    describe(),
                    planned.simulated_duration_ns
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Err(invalid(problems));
    }

    let mut last_on_stream: Vec<Option<usize>> = vec![None; plan.streams.len()];
    let mut implicit_orderings = 0;
    for planned in &plan.tasks {
        let index = planned.task as usize;
        if let Some(previous) = last_on_stream[planned.stream as usize].replace(index) {
            if !reaches(graph, &position, previous, index) {
                implicit_orderings += 1;
            }
        }
    }
    Ok(PlanCheck {
        waits,
        implicit_orderings,
    })
}

/// Whether a path leads from `from` to `to` (issued later). Searches back from
/// `to` through tasks issued after `from` only: in a topological order every
/// task on such a path lies between the two.
fn reaches(graph: &TaskGraph, position: &[usize], from: usize, to: usize) -> bool {
    let floor = position[from];
    let mut seen = std::collections::BTreeSet::from([to]);
    let mut stack = vec![to];
    while let Some(index) = stack.pop() {
        for previous in graph.predecessors(sim::ids::TaskId(index as u32)) {
            let previous = previous.index();
            if previous == from {
                return true;
            }
            if position[previous] > floor && seen.insert(previous) {
                stack.push(previous);
            }
        }
    }
    false
}

fn id(index: usize) -> sim::ids::TaskId {
    sim::ids::TaskId(index as u32)
}

fn invalid(mut problems: Vec<String>) -> ExecuteError {
    let total = problems.len();
    if total > MAX_LISTED {
        problems.truncate(MAX_LISTED);
        problems.push(format!("… {} more", total - MAX_LISTED));
    }
    ExecuteError::InvalidPlan { problems }
}
