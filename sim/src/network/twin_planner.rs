//! The flows of a twin in another replica, for full expansion under
//! `--contention` kept as one replica's graph (`sim::replicated_run`): the
//! representative task's plan with its ranks moved to the twin's copy.

use super::FabricFlowPlanner;
use crate::placement::Representative;
use engine::network::FlowPlan;
use engine::replicated_flows::TwinFlowPlanner;
use std::cell::RefCell;
use taskgraph::ids::{Rank, TaskId};
use taskgraph::replica_ids::ReplicaIds;
use taskgraph::task_graph::TaskGraph;

/// Plans a twin as full expansion's planner plans it: a loop task's twin
/// in copy c runs on its group's ranks moved by c replicas (the group full
/// expansion gives it, `taskgraph::replica_map`), a shared task on its own
/// group.
pub(crate) struct TwinPlanner<'a> {
    planner: FabricFlowPlanner<'a>,
    graph: &'a TaskGraph,
    ids: &'a ReplicaIds,
    representative: Representative,
    /// The moved ranks (one buffer for every plan).
    ranks: RefCell<Vec<Rank>>,
}

impl<'a> TwinPlanner<'a> {
    pub fn new(
        planner: FabricFlowPlanner<'a>,
        graph: &'a TaskGraph,
        ids: &'a ReplicaIds,
        representative: Representative,
    ) -> TwinPlanner<'a> {
        TwinPlanner {
            planner,
            graph,
            ids,
            representative,
            ranks: RefCell::new(Vec::new()),
        }
    }
}

impl TwinFlowPlanner for TwinPlanner<'_> {
    fn plan_twin_into(&self, task: u32, copy: u32, plan: &mut FlowPlan) -> bool {
        let id = TaskId(task);
        let ranks = self.graph.group_ranks(self.graph.group_of(id));
        if copy == 0 || self.ids.is_shared(task) {
            return self.planner.plan_on_ranks(id, ranks, plan);
        }
        let mut moved = self.ranks.borrow_mut();
        moved.clear();
        moved.extend(
            ranks
                .iter()
                .map(|&rank| self.representative.in_copy(rank, copy)),
        );
        self.planner.plan_on_ranks(id, &moved, plan)
    }

    /// A twin's ranks are its representative's moved by whole replicas
    /// ([`Representative::in_copy`]), and a flow's GPUs are its ranks. The
    /// only plans said to run alone are tensor rings inside a node
    /// ([`super::lone_rings`]), whose hops, bytes and tail follow the
    /// ranks and the work alone.
    fn moved_gpu(&self, gpu: u32, copy: u32) -> Option<u32> {
        Some(self.representative.in_copy(Rank(gpu), copy).0)
    }
}
