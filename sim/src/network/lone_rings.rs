//! When a tensor all-reduce's ring inside a node has its NVSwitch ports to
//! itself, so that the engine can time its flows when they start instead of
//! sharing them (`engine::network::FlowPlan::alone`).
//!
//! The ring's hops run GPU i → GPU i+1 of the task's group, over GPU i's
//! NVLink up and GPU i+1's NVLink down (`engine::network::fabric`). The
//! proof, over every task of the planner's graph:
//! 1. **Only these rings use NVLink.** A flow between two GPUs of one node
//!    crosses NVLink and nothing else; every other planned flow (pipeline
//!    transfers, rings across nodes, all-to-alls, PCIe copies) must join
//!    GPUs of two nodes, or a GPU and its host. Checked on each task's plan.
//! 2. **Rings that share a GPU never overlap.** Every ring's ranks are
//!    distinct (each GPU sends once and receives once), and every such task
//!    runs on one stream: two rings that use one GPU's ports are then tasks
//!    of that GPU's rank on that stream, which its program order runs one
//!    after the other (`lowering::edges`; a task ends after its flows).
//!
//! Then each hop is alone on its two links from its start to its end, at
//! its route's slowest capacity throughout: exactly what the fair-share
//! network gives it. `Expansion::Built` shares every flow instead, and the
//! replicated and contention tests compare the two runs bit for bit.
//!
//! A twin's plan (`TwinPlanner`) is its representative's with the ranks
//! moved by whole replicas; the proof made on the representative's graph
//! holds for the twins when that move keeps node-mates together
//! (`FabricFlowPlanner::for_twins_moved_by`).

use super::FabricFlowPlanner;
use engine::network::{FlowEnds, FlowPlan};
use taskgraph::ids::{Rank, TaskId};
use taskgraph::task_graph::Work;

/// Whether every in-node tensor all-reduce ring `planner` plans runs alone
/// on its links (the module header's two conditions).
pub(super) fn tensor_rings_run_alone(planner: &FabricFlowPlanner) -> bool {
    let graph = planner.graph();
    let gpus_per_node = planner.gpus_per_node();
    let joins_one_node = |ends: FlowEnds| match ends {
        FlowEnds::Gpus(source, destination) => {
            source != destination
                && source.checked_div(gpus_per_node) == destination.checked_div(gpus_per_node)
        }
        FlowEnds::ToHost(_) | FlowEnds::FromHost(_) => false,
    };
    let mut ring_stream = None;
    // Whether a tensor all-reduce work runs as flows depends on the work
    // alone (its bytes, the pass and the options), its ring on its group.
    let mut work_planned: Vec<Option<bool>> = vec![None; graph.works().len()];
    let mut ring_checked = vec![false; graph.groups().len()];
    let mut plan = FlowPlan::default();
    for index in 0..graph.task_count() {
        let task = TaskId(index as u32);
        let group = graph.group_of(task);
        let ranks = graph.group_ranks(group);
        let work = graph.work_of(task);
        if !matches!(graph.work(work), Work::TensorAllReduce { nodes: 1, .. }) {
            if planner.plan_on_ranks(task, ranks, &mut plan)
                && plan.flows.iter().any(|&(ends, _)| joins_one_node(ends))
            {
                return false;
            }
            continue;
        }
        let planned = *work_planned[work.index()].get_or_insert_with(|| {
            planner.plan_on_ranks(task, ranks, &mut plan) && !plan.flows.is_empty()
        });
        if !planned {
            continue;
        }
        let stream = graph.stream_of(task);
        if *ring_stream.get_or_insert(stream) != stream {
            return false;
        }
        if !ring_checked[group.index()] {
            // The ring stays in its node and visits each GPU once.
            planner.plan_on_ranks(task, ranks, &mut plan);
            if !distinct(ranks) || !plan.flows.iter().all(|&(ends, _)| joins_one_node(ends)) {
                return false;
            }
            ring_checked[group.index()] = true;
        }
    }
    true
}

/// Whether no rank appears twice (a ring's group: a handful of ranks).
fn distinct(ranks: &[Rank]) -> bool {
    ranks
        .iter()
        .enumerate()
        .all(|(index, rank)| !ranks[..index].contains(rank))
}

#[cfg(test)]
mod tests {
    use crate::cost::{cost_works, ClosedFormNetwork};
    use crate::network::FabricFlowPlanner;
    use crate::plan::Plan;
    use scenario::{ScenarioFile, TrainingOptionsFile};

    /// Llama 2 7B on DGX H100 nodes (8 GPUs) under `--contention`: whether
    /// its planner proves the in-node tensor rings alone.
    fn rings_alone(tp: u32, pp: u32, dp: u32, ep: Option<u32>, model: &str) -> bool {
        let scenario = ScenarioFile {
            model: Some(model.into()),
            topology: Some("dgx-h100-superpod".into()),
            tp: Some(tp),
            pp: Some(pp),
            dp: Some(dp),
            ep,
            global_batch: Some(4 * pp * dp),
            options: TrainingOptionsFile {
                network_contention: Some(true),
                ..Default::default()
            },
            ..ScenarioFile::default()
        }
        .resolve()
        .unwrap();
        let plan = Plan::of(&scenario);
        let (_, graph) = crate::build_graph(&scenario);
        let network = ClosedFormNetwork::for_scenario(&scenario);
        let costs = cost_works(&scenario, graph.works(), &network);
        FabricFlowPlanner::new(&scenario, &plan.placement, &graph, &network, &costs)
            .rings_run_alone()
    }

    #[test]
    fn a_node_per_tensor_group_gives_its_rings_the_nvlink_ports() {
        // Stages and replicas on other nodes: pipeline transfers and
        // data-parallel rings leave the node.
        assert!(rings_alone(8, 2, 2, None, "llama2-7b"));
    }

    #[test]
    fn other_flows_inside_a_node_take_the_proof_away() {
        // Two stages on one node: the pipeline transfer crosses NVLink.
        assert!(!rings_alone(4, 2, 1, None, "llama2-7b"));
        // Four replicas on one node: the data-parallel ring crosses NVLink.
        assert!(!rings_alone(2, 1, 4, None, "llama2-7b"));
        // Expert all-to-alls between GPUs of one node.
        assert!(!rings_alone(1, 1, 8, Some(4), "mixtral-8x7b"));
    }
}
