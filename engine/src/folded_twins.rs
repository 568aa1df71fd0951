//! The replicated run under `--contention` with the tasks no flow waits
//! for folded out of the event loop: the loop runs a graph of the tasks it
//! must see, whose edges carry the fixed time of the tasks between them;
//! the folded tasks' times follow in one pass per copy once it is over
//! (`folded_pass.rs`, the copies in parallel; `replicated_flows.rs` runs
//! both).
//!
//! **Which tasks the loop keeps.** Shared tasks; in-order tasks (flows
//! planned at their start, or a duration of zero: `flow_loop.rs`); and the
//! tasks run ahead that an in-order task waits for (their finish pops in
//! the queue). Every other task (most: compute kernels, tensor rings
//! timed once) is *folded*: it runs ahead and no in-order task waits for
//! it, so it only ever tells other tasks run ahead when it ends.
//!
//! **Why it is exact.** A task run ahead starts at the latest end of its
//! predecessors, and a folded task's end is its start plus a duration
//! known before the run (every twin takes its copy-0 twin's: no
//! stragglers). So a kept task's earliest start through folded tasks is
//! the latest, over the paths from a kept predecessor through folded
//! tasks, of that predecessor's end plus the paths' durations (longest
//! paths: max-plus), or the paths' durations alone from a folded task
//! with no predecessor. The folded edge from each kept task to each kept
//! task it reaches through folded tasks only carries that longest sum
//! (its *gap*; zero for an edge of the graph), and every kept task's
//! start is as before. An in-order task's predecessors are all kept (a
//! task run ahead that it waits for is kept), so it waits on the same
//! pops, in the same order, and the network sees what it saw. Folded
//! tasks' times are then their longest paths from kept tasks' ends, one
//! pass over a topological order per copy: a folded task is a loop task
//! (shared tasks are kept), so its paths stay in its copy.
//!
//! **When.** Twins take one duration (no slow rank, spread or slow link)
//! and the representative is acyclic; the folded edges are found by a
//! walk from each kept task through the folded tasks it reaches first, in
//! topological order, and the fold is given up (every task run in the
//! loop, as before) if the walks would visit more than
//! [`WALK_VISITS_PER_TASK`] folded tasks per task of the representative.

use crate::flow_loop::Timing;
pub(crate) use crate::folded_pass::FoldedPass;
use std::collections::BinaryHeap;
use taskgraph::replica_ids::ReplicaIds;
use taskgraph::task_graph::TaskGraph;
use timeline::time::{SimDuration, SimTime};

/// The walks' budget, in folded tasks visited per representative task: a
/// folded task is visited once per kept task that reaches it first, a few
/// in a pipeline's streams.
const WALK_VISITS_PER_TASK: usize = 8;

/// Representative task folded out of the loop in [`FoldedTwins`]'s `slot`.
const FOLDED: u32 = u32::MAX;

/// The loop's graph of kept tasks and the folded tasks' order.
pub(crate) struct FoldedTwins {
    /// Per representative task: its kept twins' first slot (twins side
    /// by side), or `FOLDED`.
    slot: Vec<u32>,
    /// Per representative task, its folded edges to kept tasks
    /// (successor, gap), in `edges[edge_start[task]..edge_start[task + 1]]`
    /// (none for a folded task).
    edge_start: Vec<u32>,
    edges: Vec<(u32, SimDuration)>,
    /// Per kept representative task: the latest end of paths of folded
    /// tasks from a folded task without predecessors (zero if none).
    earliest: Vec<SimTime>,
    /// Per kept representative task: its twins' predecessors in the
    /// folded graph (a shared task counts each loop predecessor once per
    /// copy).
    in_degree: Vec<u32>,
    /// The folded twins' times, after the loop.
    pass: FoldedPass,
}

impl FoldedTwins {
    /// The fold of `graph` (the representative, laid out by `ids`), whose
    /// tasks run as `timing_of` says for every copy; `None` where it does
    /// not apply (a cycle, or walks over budget).
    pub fn new(
        graph: &TaskGraph,
        ids: &ReplicaIds,
        timing_of: impl Fn(u32) -> Timing,
    ) -> Option<FoldedTwins> {
        let n = graph.task_count();
        let timings: Vec<Timing> = (0..n as u32).map(&timing_of).collect();
        let kept: Vec<bool> = (0..n as u32)
            .map(|task| {
                ids.is_shared(task)
                    || timings[task as usize] == Timing::InOrder
                    || graph
                        .successor_slice(task as usize)
                        .iter()
                        .any(|&successor| timings[successor as usize] == Timing::InOrder)
            })
            .collect();
        let order = lowest_first_order(graph)?;
        let mut walk = Walk::new(&order, n * WALK_VISITS_PER_TASK);
        let mut edge_start = Vec::with_capacity(n + 1);
        let mut edges = Vec::new();
        for task in 0..n as u32 {
            edge_start.push(u32::try_from(edges.len()).ok()?);
            if kept[task as usize] {
                let successors = graph.successor_slice(task as usize).iter().copied();
                edges.extend(walk.kept_reached(graph, &kept, &timings, successors)?);
            }
        }
        edge_start.push(u32::try_from(edges.len()).ok()?);
        let mut earliest = vec![SimTime::ZERO; n];
        let folded_sources: Vec<u32> = {
            let in_degrees = graph.in_degrees();
            (0..n as u32)
                .filter(|&task| !kept[task as usize] && in_degrees[task as usize] == 0)
                .collect()
        };
        for (task, gap) in walk.kept_reached(graph, &kept, &timings, folded_sources)? {
            earliest[task as usize] = earliest[task as usize].max(SimTime::ZERO + gap);
        }
        let mut next = 0u32;
        let slot = kept
            .iter()
            .enumerate()
            .map(|(task, &kept)| {
                if !kept {
                    return Some(FOLDED);
                }
                let first = next;
                next = next.checked_add(ids.twins_of(task as u32))?;
                Some(first)
            })
            .collect::<Option<Vec<u32>>>()?;
        let in_degree = crate::replicated_flows::twin_in_degrees(
            ids,
            n,
            (0..n as u32).flat_map(|task| {
                let range =
                    edge_start[task as usize] as usize..edge_start[task as usize + 1] as usize;
                edges[range]
                    .iter()
                    .map(move |&(successor, _)| (task, successor))
            }),
        );
        let pass = FoldedPass::new(graph, ids, &order, &kept, &timings);
        Some(FoldedTwins {
            slot,
            edge_start,
            edges,
            earliest,
            in_degree,
            pass,
        })
    }
}

/// Longest-path walks through folded tasks, in topological order.
struct Walk {
    /// Each task's position in the topological order.
    position: Vec<u32>,
    /// Per task: the walk that last reached it, and its latest end then
    /// (folded) or the longest gap to it (kept).
    stamp: Vec<u32>,
    longest: Vec<SimDuration>,
    walks: u32,
    /// Folded tasks the walks may still visit.
    budget: usize,
    /// Folded tasks reached, by topological position (a min-heap).
    reached: BinaryHeap<std::cmp::Reverse<(u32, u32)>>,
    kept_reached: Vec<u32>,
}

impl Walk {
    fn new(order: &[u32], budget: usize) -> Walk {
        let mut position = vec![0u32; order.len()];
        for (at, &task) in order.iter().enumerate() {
            position[task as usize] = at as u32;
        }
        Walk {
            position,
            stamp: vec![u32::MAX; order.len()],
            longest: vec![SimDuration::ZERO; order.len()],
            walks: 0,
            budget,
            reached: BinaryHeap::new(),
            kept_reached: Vec::new(),
        }
    }

    /// The kept tasks reached from `seeds` (each reached at gap zero)
    /// through folded tasks only, by id, each with the longest gap: the
    /// latest end of the folded tasks on a path to it. `None` over budget.
    fn kept_reached(
        &mut self,
        graph: &TaskGraph,
        kept: &[bool],
        timings: &[Timing],
        seeds: impl IntoIterator<Item = u32>,
    ) -> Option<impl Iterator<Item = (u32, SimDuration)> + '_> {
        self.walks += 1;
        self.kept_reached.clear();
        for seed in seeds {
            self.reach(seed, SimDuration::ZERO, kept);
        }
        self.walk(graph, kept, timings)?;
        self.kept_reached.sort_unstable();
        let longest = &self.longest;
        Some(
            self.kept_reached
                .iter()
                .map(move |&task| (task, longest[task as usize])),
        )
    }

    /// `task` reached by a path whose folded tasks end at `gap`.
    fn reach(&mut self, task: u32, gap: SimDuration, kept: &[bool]) {
        let at = task as usize;
        if self.stamp[at] != self.walks {
            self.stamp[at] = self.walks;
            self.longest[at] = gap;
            match kept[at] {
                true => self.kept_reached.push(task),
                false => self
                    .reached
                    .push(std::cmp::Reverse((self.position[at], task))),
            }
        } else if self.longest[at] < gap {
            self.longest[at] = gap;
        }
    }

    /// Visits the folded tasks reached, each once all its reached
    /// predecessors are (topological order), passing on its end.
    fn walk(&mut self, graph: &TaskGraph, kept: &[bool], timings: &[Timing]) -> Option<()> {
        while let Some(std::cmp::Reverse((_, task))) = self.reached.pop() {
            self.budget = self.budget.checked_sub(1)?;
            let Timing::Ahead { duration, .. } = timings[task as usize] else {
                unreachable!("a folded task runs ahead");
            };
            let end = self.longest[task as usize] + duration;
            for &successor in graph.successor_slice(task as usize) {
                self.reach(successor, end, kept);
            }
        }
        Some(())
    }
}

impl FoldedTwins {
    /// Whether representative task `task` is kept in the loop.
    #[inline]
    pub fn is_kept(&self, task: u32) -> bool {
        self.slot[task as usize] != FOLDED
    }

    /// The slot of kept representative task `task`'s twin in copy `copy`.
    #[inline]
    pub fn slot(&self, ids: &ReplicaIds, task: u32, copy: u32) -> usize {
        let first = self.slot[task as usize];
        debug_assert_ne!(first, FOLDED);
        match ids.is_shared(task) {
            true => first as usize,
            false => (first + copy) as usize,
        }
    }

    /// Kept task `task`'s folded edges: (kept successor, gap).
    #[inline]
    pub fn edges(&self, task: u32) -> &[(u32, SimDuration)] {
        let at = task as usize;
        &self.edges[self.edge_start[at] as usize..self.edge_start[at + 1] as usize]
    }

    /// Each kept twin's predecessors in the folded graph, by slot.
    pub fn in_degrees(&self, ids: &ReplicaIds) -> Vec<u32> {
        crate::replicated_flows::by_twin_slot(ids, &self.in_degree, |task| self.is_kept(task))
    }

    /// Each kept twin's earliest start through folded tasks alone, by slot.
    pub fn earliest_starts(&self, ids: &ReplicaIds) -> Vec<SimTime> {
        crate::replicated_flows::by_twin_slot(ids, &self.earliest, |task| self.is_kept(task))
    }

    /// The pass that times the folded twins once the loop is over.
    pub fn pass(&self) -> &FoldedPass {
        &self.pass
    }
}

/// The representative's tasks in a topological order, the lowest ready
/// id first (lowering's order where edges allow: a copy's full ids run in
/// it, so the folded pass reads them nearly in turn); `None` with a cycle.
fn lowest_first_order(graph: &TaskGraph) -> Option<Vec<u32>> {
    let mut remaining = graph.in_degrees();
    let mut ready: BinaryHeap<std::cmp::Reverse<u32>> = (0..remaining.len() as u32)
        .filter(|&task| remaining[task as usize] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(remaining.len());
    while let Some(std::cmp::Reverse(task)) = ready.pop() {
        order.push(task);
        for &successor in graph.successor_slice(task as usize) {
            remaining[successor as usize] -= 1;
            if remaining[successor as usize] == 0 {
                ready.push(std::cmp::Reverse(successor));
            }
        }
    }
    (order.len() == remaining.len()).then_some(order)
}
