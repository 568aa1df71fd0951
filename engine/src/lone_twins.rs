//! Representative tasks whose every twin runs its flows alone, at one
//! duration in every copy: timed once, before the replicated run under
//! `--contention` (`replicated_flows.rs`) starts.
//!
//! **Why it is exact.** A task planned alone ([`FlowPlan::alone`]) has its
//! links to itself from its start until each flow ends, so the event loop
//! times it when it starts: each flow at its route's slowest capacity,
//! the task ending max over flows of ⌈bytes ÷ slowest⌉, then its tail,
//! after its start, whenever that is. When the planner says how a twin's
//! plan follows from its copy-0 twin's ([`TwinFlowPlanner::moved_gpu`]:
//! the same flows, bytes and tail, each GPU moved), and each flow's moved
//! route has the copy-0 route's slowest capacity in every copy (checked
//! here, once per distinct pair of ends and copy), every twin takes its
//! copy-0 twin's duration. The loop then queues its finish at its start
//! plus that duration without planning it or looking up its routes,
//! which is what it did after planning it.
//!
//! **What the loop no longer does for them** is done here in bulk: each
//! flow's end is still an event (the loop counts `flows` per start), and
//! each flow's bytes count on its route for the links' utilization:
//! summed per pair of copy-0 ends over the tasks, then carried on that
//! pair's moved route in every copy once the run is over
//! ([`LoneTwins::carry_into`]). Traffic is a `u64` sum per route, so the
//! totals are the ones flow-by-flow carrying gives.
//!
//! Shared tasks (one full task each) and tasks with any pair whose moved
//! routes differ in slowest capacity (a slow NVLink, say) are planned at
//! every start, as before.

use crate::flow_loop::FlowLoop;
use crate::network::{time_alone, FlowEnds, FlowPlan};
use crate::replicated_flows::TwinFlowPlanner;
use std::collections::BTreeMap;
use taskgraph::replica_ids::ReplicaIds;
use timeline::time::SimDuration;

/// A task whose twins all run alone: how long each takes, start to
/// finish, and how many flows it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoneTask {
    pub duration: SimDuration,
    pub flows: u32,
}

/// Per representative task, its twins' [`LoneTask`] where they are
/// timed once; the traffic they carry.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoneTwins {
    /// Per representative task; `flows` 0: planned at every start.
    per_task: Vec<LoneTask>,
    /// Per pair of copy-0 ends: the bytes the timed tasks' flows carry
    /// over it in each copy.
    carried: Vec<(FlowEnds, u64)>,
    copies: u32,
}

/// A pair of copy-0 ends: its route's slowest capacity and whether every
/// copy's moved route has the same; bytes carried so far.
struct Pair {
    ends: FlowEnds,
    slowest_bytes_per_s: f64,
    alike: bool,
    carried_bytes: u64,
}

/// The pairs of ends met so far, and the last plan's (a group's tasks
/// follow one another, so most plans repeat the last one's ends).
#[derive(Default)]
struct Pairs {
    pairs: Vec<Pair>,
    index_of: BTreeMap<FlowEnds, usize>,
    /// The last plan's ends and their pairs.
    last_ends: Vec<FlowEnds>,
    last: Vec<usize>,
}

impl Pairs {
    /// Into `last`: the pair of each of `plan`'s flows, routing pairs met
    /// for the first time.
    fn route<T: Copy>(
        &mut self,
        plan: &FlowPlan,
        copies: u32,
        planner: &dyn TwinFlowPlanner,
        flow_loop: &mut FlowLoop<'_, T>,
    ) {
        let same = self.last_ends.len() == plan.flows.len()
            && plan
                .flows
                .iter()
                .zip(&self.last_ends)
                .all(|(&(ends, _), &last)| ends == last);
        if !same {
            self.last_ends.clear();
            self.last.clear();
            for &(ends, _) in &plan.flows {
                let pairs = &mut self.pairs;
                let index = *self.index_of.entry(ends).or_insert_with(|| {
                    pairs.push(pair_of(ends, copies, planner, flow_loop));
                    pairs.len() - 1
                });
                self.last_ends.push(ends);
                self.last.push(index);
            }
        }
    }
}

impl LoneTwins {
    /// Finds the tasks whose twins all run alone at one duration (none
    /// when `planner` does not say how twins' GPUs move), routing their
    /// pairs of ends in every copy through `flow_loop`'s route cache.
    pub fn new<T: Copy>(
        ids: &ReplicaIds,
        planner: &dyn TwinFlowPlanner,
        flow_loop: &mut FlowLoop<'_, T>,
    ) -> LoneTwins {
        let copies = ids.copies();
        let none = LoneTask {
            duration: SimDuration::ZERO,
            flows: 0,
        };
        let mut per_task = vec![none; ids.representative_tasks() as usize];
        let mut pairs = Pairs::default();
        let mut plan = FlowPlan::default();
        for task in 0..ids.representative_tasks() {
            if ids.is_shared(task)
                || !planner.plan_twin_into(task, 0, &mut plan)
                || !plan.alone
                || plan.flows.is_empty()
            {
                continue;
            }
            pairs.route(&plan, copies, planner, flow_loop);
            let mut longest = SimDuration::ZERO;
            let mut alike = true;
            for (&(_, bytes), &index) in plan.flows.iter().zip(&pairs.last) {
                let pair = &pairs.pairs[index];
                alike &= pair.alike;
                longest = longest.max(time_alone(bytes as f64, pair.slowest_bytes_per_s));
            }
            if !alike {
                continue;
            }
            for (&(_, bytes), &index) in plan.flows.iter().zip(&pairs.last) {
                pairs.pairs[index].carried_bytes += bytes;
            }
            per_task[task as usize] = LoneTask {
                duration: longest + plan.tail,
                flows: plan.flows.len() as u32,
            };
        }
        let carried = pairs
            .pairs
            .into_iter()
            .filter(|pair| pair.carried_bytes > 0)
            .map(|pair| (pair.ends, pair.carried_bytes))
            .collect();
        LoneTwins {
            per_task,
            carried,
            copies,
        }
    }

    /// Representative task `task`'s twins' duration and flows, when they
    /// are timed once.
    #[inline]
    pub fn of(&self, task: u32) -> Option<LoneTask> {
        let lone = self.per_task[task as usize];
        (lone.flows > 0).then_some(lone)
    }

    /// Carries every timed twin's flows' bytes on its route in
    /// `flow_loop`'s network (once the run is over: each twin ran once).
    pub fn carry_into<T: Copy>(
        &self,
        planner: &dyn TwinFlowPlanner,
        flow_loop: &mut FlowLoop<'_, T>,
    ) {
        for &(ends, bytes) in &self.carried {
            for copy in 0..self.copies {
                let moved = moved(ends, copy, planner).expect("the planner moves GPUs");
                let route = flow_loop.route(moved);
                flow_loop.network_mut().carry_alone(route, bytes);
            }
        }
    }
}

/// `ends` of a copy-0 twin's flow as copy `copy`'s twin has them.
fn moved(ends: FlowEnds, copy: u32, planner: &dyn TwinFlowPlanner) -> Option<FlowEnds> {
    if copy == 0 {
        return Some(ends);
    }
    Some(match ends {
        FlowEnds::Gpus(source, destination) => FlowEnds::Gpus(
            planner.moved_gpu(source, copy)?,
            planner.moved_gpu(destination, copy)?,
        ),
        FlowEnds::ToHost(gpu) => FlowEnds::ToHost(planner.moved_gpu(gpu, copy)?),
        FlowEnds::FromHost(gpu) => FlowEnds::FromHost(planner.moved_gpu(gpu, copy)?),
    })
}

/// The pair `ends` routed in copy 0 and, moved, in every other copy.
fn pair_of<T: Copy>(
    ends: FlowEnds,
    copies: u32,
    planner: &dyn TwinFlowPlanner,
    flow_loop: &mut FlowLoop<'_, T>,
) -> Pair {
    let route = flow_loop.route(ends);
    let slowest_bytes_per_s = flow_loop.network().slowest_bytes_per_s(route);
    let alike = (1..copies).all(|copy| match moved(ends, copy, planner) {
        Some(moved) => {
            let route = flow_loop.route(moved);
            flow_loop.network().slowest_bytes_per_s(route) == slowest_bytes_per_s
        }
        None => false,
    });
    Pair {
        ends,
        slowest_bytes_per_s,
        alike,
        carried_bytes: 0,
    }
}
