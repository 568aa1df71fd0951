//! Symmetry with exceptions (issue 37, item 1): a run whose stragglers
//! (`--slow-rank`, `--slow-nvlink`, `--slow-pcie`, `--slow-nic`) sit in a few
//! data-parallel replicas lowers the representative replica 0 for all the
//! alike ones plus one replica for each replica they touch, instead of
//! every replica.
//!
//! **The rule.** It applies when the run would be symmetric without its
//! stragglers ([`crate::symmetry::symmetric_replicas`]), there is no spread
//! of speeds (which makes every rank differ), every slow NIC's GPUs sit in
//! one tensor group (so in one replica), fewer than d·cp − 1 replicas hold
//! a slow GPU, NVLink or NIC, and every group of the lowered graph either
//! stays inside one replica or spans all of them (the data-parallel
//! reductions, the distributed optimizer's and ZeRO's collectives). A
//! collective over all replicas with a slow member is costed at the slowest
//! member's rate ([`crate::slow_link`]): it has the moved member as it had
//! the original, so its time is the same.
//! Context-parallel exchanges, expert-parallel groups and ZeRO++'s
//! node-local all-to-alls span some replicas but not all, so runs with them
//! stay in full expansion.
//!
//! **Why exact.** The slow replicas are renumbered to data indices 1..=k
//! (their stragglers with them, a slow NIC to the NIC its GPUs' new ranks
//! send through; [`ExceptionReplicas::stragglers`]) and the
//! first k + 1 replicas lowered. Renumbering replicas changes nothing:
//! placement puts every replica on the nodes alike (the symmetric rule), so
//! a group inside a replica is costed the same in any replica, and a group
//! over all replicas is the same group. In the lowered graph the alike
//! replicas' tasks are replica 0's twins, as in a symmetric run (the same
//! induction over a topological order), and a collective over all replicas
//! starts at the latest of its lowered members' arrivals, the slow replicas'
//! included: the same times as full expansion. Metrics count replica 0's
//! ranks d·cp − k times and each slow replica's once
//! ([`ExceptionReplicas::weights`]); the FLOP total, which a slow-down does
//! not change, repeats replica 0's d·cp times as a symmetric run's does.

use crate::slow_link::{nic_of, ResolvedSlowNic, ResolvedSlowNvlink, ResolvedSlowPcie};
use crate::straggler::{SlowRank, Stragglers};
use scenario::Scenario;
use taskgraph::ids::Rank;
use taskgraph::representative::Representative;
use taskgraph::task_graph::TaskGraph;

/// The replicas a run with stragglers lowers: replica 0 for the alike ones
/// and one per replica holding slow ranks, renumbered after it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExceptionReplicas {
    /// d·cp.
    pub replicas: u32,
    /// The data indices in the layout of the replicas stragglers touch, in
    /// order: the one lowered as data index i + 1 is `slow_replicas[i]`.
    pub slow_replicas: Vec<u32>,
    /// The stragglers with every slow rank, NVLink and NIC moved to its
    /// lowered replica.
    pub stragglers: Stragglers,
    tensor_parallel: u32,
}

impl ExceptionReplicas {
    /// The replicas lowered: replica 0 and the slow ones.
    pub fn lowered(&self) -> u32 {
        self.slow_replicas.len() as u32 + 1
    }

    /// What each lowered replica counts for in the metrics: replica 0 for
    /// the d·cp − k alike replicas, each slow one for itself.
    pub fn weights(&self) -> Vec<u32> {
        std::iter::once(self.replicas - self.slow_replicas.len() as u32)
            .chain(self.slow_replicas.iter().map(|_| 1))
            .collect()
    }

    /// The lowered replicas' ranks (data indices 0..=k).
    pub fn representative(&self) -> Representative {
        Representative {
            tensor_parallel: self.tensor_parallel,
            replicas: self.replicas,
            lowered: self.lowered(),
        }
    }
}

/// The exception replicas of a run with `stragglers`, or why it runs in
/// full expansion. `symmetric` is what [`crate::symmetry::symmetric_replicas`]
/// says of the run without stragglers.
pub fn exception_replicas(
    scenario: &Scenario,
    symmetric: Result<u32, &'static str>,
    stragglers: &Stragglers,
) -> Result<ExceptionReplicas, &'static str> {
    let replicas = symmetric?;
    if stragglers.spread().is_some() {
        return Err("a spread of GPU speeds makes every replica differ");
    }
    if !stragglers.uplinks().is_empty() {
        return Err("a slow switch uplink slows groups by where all their members sit, which renumbering replicas does not keep");
    }
    // Groups over some replicas but not all (checked again on the lowered
    // graph: [`groups_allow_renumbering`]).
    let layout = scenario.layout;
    if layout.context_parallel.get() > 1 {
        return Err("context-parallel exchanges join some replicas, not all");
    }
    if layout.expert_parallel.get() > 1 {
        return Err("expert-parallel groups join some replicas, not all");
    }
    if scenario.options.zeropp.quantized_gradients {
        return Err("ZeRO++ qgZ's node-local all-to-alls join some replicas, not all");
    }
    let tensor_parallel = layout.tensor_parallel.get();
    let (gpus_per_node, nics_per_node) = (
        scenario.topology.node.gpus_per_node,
        scenario.topology.fabric.nics_per_node,
    );
    if !stragglers.nics().is_empty() && !nics_stay_in_tensor_groups(scenario) {
        return Err("GPUs of several replicas share a slow NIC");
    }
    let data_index = |rank: u32| (rank / tensor_parallel) % replicas;
    // Every rank a straggler touches: slow GPUs, GPUs with a slow NVLink,
    // GPUs sending through a slow NIC.
    let behind_nic = |nic: u32| {
        let node = nic / nics_per_node;
        (node * gpus_per_node..(node + 1) * gpus_per_node)
            .filter(move |&rank| nic_of(rank, gpus_per_node, nics_per_node) == nic)
            .filter(|&rank| rank < layout.gpus())
    };
    let mut slow_replicas: Vec<u32> = stragglers
        .ranks()
        .iter()
        .map(|slow| slow.rank)
        .chain(stragglers.nvlinks().iter().map(|slow| slow.rank))
        .chain(stragglers.pcies().iter().map(|slow| slow.rank))
        .chain(
            stragglers
                .nics()
                .iter()
                .flat_map(|slow| behind_nic(slow.nic)),
        )
        .map(data_index)
        .collect();
    slow_replicas.sort_unstable();
    slow_replicas.dedup();
    if slow_replicas.len() as u32 + 1 >= replicas {
        return Err("stragglers in nearly every replica");
    }
    // Lowered replica 0 stands for the alike replicas (any of them: they
    // are twins), the i-th slow replica is lowered as data index i + 1.
    let moved = |rank: u32| {
        let index = data_index(rank);
        let at = slow_replicas
            .binary_search(&index)
            .expect("a straggler's replica is a slow replica");
        rank - index * tensor_parallel + (at as u32 + 1) * tensor_parallel
    };
    let ranks: Vec<SlowRank> = stragglers
        .ranks()
        .iter()
        .map(|slow| SlowRank {
            rank: moved(slow.rank),
            factor: slow.factor,
        })
        .collect();
    // A GPU's own slow link moves with it: (its moved rank, that rank's node).
    let moved_gpu = |rank: u32| {
        let rank = moved(rank);
        (rank, rank / gpus_per_node)
    };
    let nvlinks: Vec<ResolvedSlowNvlink> = stragglers
        .nvlinks()
        .iter()
        .map(|slow| {
            let (rank, node) = moved_gpu(slow.rank);
            ResolvedSlowNvlink {
                rank,
                node,
                factor: slow.factor,
            }
        })
        .collect();
    // Each slow NIC at the NIC its GPUs' moved ranks send through (one
    // tensor group's, so one NIC).
    let mut nics: Vec<ResolvedSlowNic> = stragglers
        .nics()
        .iter()
        .map(|slow| {
            let rank = moved(behind_nic(slow.nic).next().expect("a NIC serves a GPU"));
            ResolvedSlowNic {
                rank,
                node: rank / gpus_per_node,
                nic: nic_of(rank, gpus_per_node, nics_per_node),
                factor: slow.factor,
            }
        })
        .collect();
    nics.sort_by_key(|slow| slow.nic);
    let pcies: Vec<ResolvedSlowPcie> = stragglers
        .pcies()
        .iter()
        .map(|slow| {
            let (rank, node) = moved_gpu(slow.rank);
            ResolvedSlowPcie {
                rank,
                node,
                factor: slow.factor,
            }
        })
        .collect();
    let stragglers = Stragglers::moved(ranks, nics, nvlinks, pcies);
    Ok(ExceptionReplicas {
        replicas,
        slow_replicas,
        stragglers,
        tensor_parallel,
    })
}

/// Whether every NIC's GPUs sit in one tensor group (so in one replica):
/// a node's GPUs share its NICs in order, g = GPUs ÷ NICs each, and g
/// divides t.
fn nics_stay_in_tensor_groups(scenario: &Scenario) -> bool {
    let (gpus_per_node, nics_per_node) = (
        scenario.topology.node.gpus_per_node,
        scenario.topology.fabric.nics_per_node,
    );
    nics_per_node >= gpus_per_node
        || (gpus_per_node.is_multiple_of(nics_per_node)
            && scenario
                .layout
                .tensor_parallel
                .get()
                .is_multiple_of(gpus_per_node / nics_per_node))
}

/// Whether every group of `graph` (lowered for `exceptions`) stays inside
/// one replica or spans all of them: what renumbering replicas needs.
pub fn groups_allow_renumbering(graph: &TaskGraph, exceptions: &ExceptionReplicas) -> bool {
    let representative = exceptions.representative();
    let replicas = exceptions.replicas as usize;
    let mut seen = vec![false; replicas];
    graph.groups().iter().all(|ranks| {
        let first = representative.data_index(ranks[0]);
        if ranks
            .iter()
            .all(|&rank: &Rank| representative.data_index(rank) == first)
        {
            return true;
        }
        seen.iter_mut().for_each(|s| *s = false);
        for &rank in ranks {
            seen[representative.data_index(rank) as usize] = true;
        }
        seen.iter().all(|&s| s)
    })
}
