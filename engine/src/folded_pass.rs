//! The folded twins' times, once the event loop is over
//! (`folded_twins.rs`): in each copy, one pass over a topological order
//! of the representative, each folded twin starting at the latest end of
//! its predecessors (kept twins' ends come from the loop) and ending its
//! duration later.
//!
//! A folded task is a loop task and its predecessors are in its copy or
//! shared, so the copies are independent: they run in parallel (rayon),
//! each writing only its own twins' starts (its part of each loop
//! segment of the full ids) and reading the shared tasks'. The results
//! are gathered in copy order, so they do not depend on the threads.

use crate::flow_loop::Timing;
use rayon::prelude::*;
use taskgraph::replica_ids::ReplicaIds;
use taskgraph::task_graph::TaskGraph;
use timeline::time::{SimDuration, SimTime};

/// Where a representative task's twins' starts are in the full ids: in
/// each copy's part of loop segment `region`, or in shared segment
/// `region` (`shared`), at `offset`.
#[derive(Debug, Clone, Copy)]
struct Place {
    shared: bool,
    region: u32,
    offset: u32,
}

/// A representative task the pass visits in each copy: a folded one, or
/// a kept one with folded successors.
#[derive(Debug, Clone, Copy)]
struct Step {
    task: u32,
    place: Place,
    /// A folded task's duration and flows' ends; `KEPT` for a kept task.
    duration: SimDuration,
    flow_events: u32,
    /// Its folded successors end at `successors[successors_end]`.
    successors_end: u32,
}

/// [`Step::flow_events`] of a kept task.
const KEPT: u32 = u32::MAX;

/// What a copy's pass gives: the folded twins' events and count, and the
/// ends of those that ran flows (timed once, `lone_twins.rs`) by
/// representative task.
type CopyPass = (u64, u64, Vec<(u32, SimTime)>);

/// The pass's steps, in a topological order, and their folded successors.
#[derive(Debug, Clone)]
pub(crate) struct FoldedPass {
    steps: Vec<Step>,
    successors: Vec<Place>,
}

impl FoldedPass {
    /// The steps over `order` (topological) of `graph`'s tasks, `kept` or
    /// folded, running as `timings` says.
    pub fn new(
        graph: &TaskGraph,
        ids: &ReplicaIds,
        order: &[u32],
        kept: &[bool],
        timings: &[Timing],
    ) -> FoldedPass {
        let places = places(ids, graph.task_count());
        let mut steps = Vec::new();
        let mut successors = Vec::new();
        for &task in order {
            let before = successors.len();
            successors.extend(
                graph
                    .successor_slice(task as usize)
                    .iter()
                    .filter(|&&successor| !kept[successor as usize])
                    .map(|&successor| places[successor as usize]),
            );
            let (duration, flow_events) = match (kept[task as usize], timings[task as usize]) {
                (
                    false,
                    Timing::Ahead {
                        duration,
                        flow_events,
                    },
                ) => (duration, flow_events),
                _ if successors.len() > before => (SimDuration::ZERO, KEPT),
                _ => continue,
            };
            steps.push(Step {
                task,
                place: places[task as usize],
                duration,
                flow_events,
                successors_end: successors.len() as u32,
            });
        }
        FoldedPass { steps, successors }
    }

    /// The folded twins' starts, written into `start` (by full id, the
    /// kept twins' already there). `kept_end(task, copy, start)` is a
    /// kept twin's end. Returns the events the folded twins count (a
    /// start, a finish and each flow's end), how many there are, and the
    /// ends of those that ran flows as (representative task, copy, end).
    pub fn run(
        &self,
        ids: &ReplicaIds,
        start: &mut [SimTime],
        kept_end: impl Fn(u32, u32, SimTime) -> SimTime + Sync,
    ) -> (u64, u64, Vec<(u32, u32, SimTime)>) {
        let (shared, per_copy) = split_by_copy(ids, start);
        let passes: Vec<CopyPass> = per_copy
            .into_par_iter()
            .enumerate()
            .map(|(copy, mut chunks)| self.run_copy(copy as u32, &shared, &mut chunks, &kept_end))
            .collect();
        let (mut events, mut folded, mut flow_ends) = (0u64, 0u64, Vec::new());
        for (copy, (copy_events, copy_folded, ends)) in passes.into_iter().enumerate() {
            events += copy_events;
            folded += copy_folded;
            flow_ends.extend(ends.into_iter().map(|(task, end)| (task, copy as u32, end)));
        }
        (events, folded, flow_ends)
    }

    /// Copy `copy`'s pass: `chunks` are its parts of the loop segments.
    fn run_copy(
        &self,
        copy: u32,
        shared: &[&[SimTime]],
        chunks: &mut [&mut [SimTime]],
        kept_end: &impl Fn(u32, u32, SimTime) -> SimTime,
    ) -> CopyPass {
        let (mut events, mut folded, mut flow_ends) = (0u64, 0u64, Vec::new());
        let mut successors_start = 0usize;
        for step in &self.steps {
            let Place {
                shared: in_shared,
                region,
                offset,
            } = step.place;
            let begin = match in_shared {
                true => shared[region as usize][offset as usize],
                false => chunks[region as usize][offset as usize],
            };
            let end = match step.flow_events {
                KEPT => kept_end(step.task, copy, begin),
                flow_events => {
                    events += 2 + u64::from(flow_events);
                    folded += 1;
                    let end = begin + step.duration;
                    if flow_events > 0 {
                        flow_ends.push((step.task, end));
                    }
                    end
                }
            };
            let successors = successors_start..step.successors_end as usize;
            successors_start = successors.end;
            for place in &self.successors[successors] {
                let at = &mut chunks[place.region as usize][place.offset as usize];
                if *at < end {
                    *at = end;
                }
            }
        }
        (events, folded, flow_ends)
    }
}

/// Each representative task's [`Place`].
fn places(ids: &ReplicaIds, tasks: usize) -> Vec<Place> {
    let mut places = vec![
        Place {
            shared: true,
            region: 0,
            offset: 0,
        };
        tasks
    ];
    let (mut loops, mut shared) = (0u32, 0u32);
    for segment in ids.segments() {
        let Some(first) = segment.tasks.clone().next() else {
            continue;
        };
        let in_shared = ids.is_shared(first);
        let region = match in_shared {
            true => &mut shared,
            false => &mut loops,
        };
        for task in segment.tasks.clone() {
            places[task as usize] = Place {
                shared: in_shared,
                region: *region,
                offset: task - first,
            };
        }
        *region += 1;
    }
    places
}

/// `start` (by full id) cut into the shared segments (read by every copy)
/// and, per copy, its part of each loop segment, in segment order.
fn split_by_copy<'a>(
    ids: &ReplicaIds,
    start: &'a mut [SimTime],
) -> (Vec<&'a [SimTime]>, Vec<Vec<&'a mut [SimTime]>>) {
    let mut shared = Vec::new();
    let mut per_copy: Vec<Vec<&mut [SimTime]>> = (0..ids.copies()).map(|_| Vec::new()).collect();
    let mut rest = start;
    for segment in ids.segments() {
        let Some(first) = segment.tasks.clone().next() else {
            continue;
        };
        let length = segment.tasks.len();
        let (region, tail) = rest.split_at_mut(length * segment.copies as usize);
        rest = tail;
        match ids.is_shared(first) {
            true => shared.push(&*region),
            false => {
                for (copy, chunk) in region.chunks_mut(length).enumerate() {
                    per_copy[copy].push(chunk);
                }
            }
        }
    }
    (shared, per_copy)
}
