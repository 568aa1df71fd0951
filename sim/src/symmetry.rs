//! Data-parallel symmetry: when the d·cp replicas of a layout are identical,
//! lower and simulate one of them and let it stand for all.
//!
//! **The rule.** A scenario is simulated *symmetric* when every replica
//! (every data index of the dp-cp group, its p·t ranks) lowers to the same
//! tasks with the same costs, and the only tasks joining replicas are
//! collectives over groups that contain the representative's ranks (the
//! data-parallel all-reduce, the distributed optimizer's reduce-scatter and
//! all-gather, the expert-data-parallel reduction, ZeRO-2/3's collectives
//! over the whole dp-cp group). That holds unless one of these breaks it
//! ([`symmetric_replicas`] says which):
//! - `--contention`: flows of different replicas share links;
//! - ZeRO-Offload: its program interleaves replicas step by step, and its
//!   PCIe links are shared between replicas;
//! - HSDP (`--shard-group-size` below d·cp): its cross-group all-reduces run
//!   on groups without the representative's ranks;
//! - placement: the replicas must sit on the nodes alike. For each replica
//!   the nodes of its ranks (stage by stage, tensor index by tensor index),
//!   renumbered by first appearance, must equal replica 0's, and likewise
//!   for every expert-parallel group (ep consecutive replicas) against the
//!   first (under expert tensor parallelism every rank's expert-parallel and
//!   expert tensor group must span as many nodes as replica 0's): then every group a replica forms (tensor group, pipeline peers,
//!   embedding pair, expert group) spans as many nodes as replica 0's, and
//!   every cost — a function of a work's shape, never of a rank — is equal.
//!
//! The topology is uniform by construction (every node alike, one fabric),
//! and expert routing costs every rank of an expert-parallel group as its
//! busiest one (`scenario::experts`), so routing is per-rank identical.
//!
//! **Why exact.** The engine starts a task when its last predecessor ends,
//! so start = max(predecessors' ends) and end = start + duration whatever the
//! event order. By induction over a topological order, a replica's task and
//! its twin in replica 0 start and end together (same durations, twin
//! predecessors), and a collective joining replicas starts at the latest of
//! its predecessors in all replicas, which are twins of the representative's:
//! at the representative's own arrival time. Program order on the ranks of
//! other replicas adds nothing (a shared collective's predecessor on their
//! ranks is the twin of the one on the representative's), so lowering keeps
//! only the representative's ranks in program order ([`Representative`]).
//!
//! Everything is then per representative rank times d·cp: metrics'
//! integer-nanosecond sums, the task, edge and event counts
//! ([`FullCounts`]); the FLOP total repeats the representative's compute
//! tasks d·cp times in full expansion's order (replica by replica), so even
//! its floating-point sum is the same. Memory never depended on the graph.
//! The Timeline of a symmetric run (every rank's records) is built by full
//! expansion when asked for.

use crate::placement::Placement;
pub use crate::placement::Representative;
use crate::plan::{Plan, ShardPlan};
use crate::symmetry_exceptions::ExceptionReplicas;
use scenario::Scenario;
use taskgraph::ids::Rank;
use taskgraph::task_graph::TaskGraph;

/// What a caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Expansion {
    /// One representative replica where that is exact, else every replica.
    #[default]
    Auto,
    /// Every replica (`--no-symmetry`): from the representative's graph
    /// where it stands for them ([`crate::replicated_run`]), else each
    /// replica's tasks built.
    Full,
    /// Every replica, each replica's tasks built and run by the event
    /// engine: the reference a replicated run is tested against.
    Built,
}

/// What ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimulationMode {
    /// Every rank lowered and simulated.
    Full,
    /// Replica 0 of `replicas` (d·cp) lowered and simulated.
    Symmetric { replicas: u32 },
    /// Replica 0 for the alike replicas and `exceptions` replicas holding
    /// slow ranks, each for itself ([`crate::symmetry_exceptions`]).
    Exceptions { replicas: u32, exceptions: u32 },
}

impl SimulationMode {
    /// `"full"` or `"symmetric (1 of N replicas)"`.
    pub fn describe(self) -> String {
        match self {
            SimulationMode::Full => "full".into(),
            SimulationMode::Symmetric { replicas } => {
                format!("symmetric (1 of {replicas} replicas)")
            }
            SimulationMode::Exceptions {
                replicas,
                exceptions,
            } => format!(
                "symmetric with exceptions ({} of {replicas} replicas: one for the {} alike, {exceptions} with stragglers)",
                exceptions + 1,
                replicas - exceptions
            ),
        }
    }

    /// The tasks a graph in this mode holds, of full expansion's
    /// `full_tasks` (rounded up).
    pub fn lowered_tasks(self, full_tasks: u64) -> u64 {
        match self {
            SimulationMode::Full => full_tasks,
            SimulationMode::Symmetric { replicas } => full_tasks.div_ceil(u64::from(replicas)),
            SimulationMode::Exceptions {
                replicas,
                exceptions,
            } => full_tasks.div_ceil(u64::from(replicas)) * u64::from(exceptions + 1),
        }
    }
}

/// The mode a scenario runs in when `expansion` is asked for.
pub fn mode(scenario: &Scenario, expansion: Expansion) -> SimulationMode {
    mode_of(expansion, symmetric_replicas(scenario))
}

/// [`mode`] from the scenario's [`Plan`] (its shard plan and placement).
pub fn mode_in(scenario: &Scenario, plan: &Plan, expansion: Expansion) -> SimulationMode {
    mode_of(expansion, symmetric_replicas_in(scenario, plan))
}

/// [`mode`] of a run with `stragglers`: without any, [`mode`]'s; with
/// stragglers in a few replicas, [`SimulationMode::Exceptions`] where
/// [`crate::symmetry_exceptions`] allows it; else full.
pub fn mode_with_stragglers(
    scenario: &Scenario,
    expansion: Expansion,
    stragglers: &crate::straggler::Stragglers,
) -> SimulationMode {
    planned_mode(
        scenario,
        symmetric_replicas(scenario),
        expansion,
        stragglers,
    )
    .0
}

/// [`mode_with_stragglers`] given what [`symmetric_replicas`] says of the
/// run (`symmetric`), with the exception replicas where the mode has them:
/// the one decision the host-memory check and lowering both take.
pub(crate) fn planned_mode(
    scenario: &Scenario,
    symmetric: Result<u32, &'static str>,
    expansion: Expansion,
    stragglers: &crate::straggler::Stragglers,
) -> (SimulationMode, Option<ExceptionReplicas>) {
    if stragglers.is_empty() {
        return (mode_of(expansion, symmetric), None);
    }
    if expansion != Expansion::Auto {
        return (SimulationMode::Full, None);
    }
    match crate::symmetry_exceptions::exception_replicas(scenario, symmetric, stragglers) {
        Ok(exceptions) => (
            SimulationMode::Exceptions {
                replicas: exceptions.replicas,
                exceptions: exceptions.lowered() - 1,
            },
            Some(exceptions),
        ),
        Err(_) => (SimulationMode::Full, None),
    }
}

/// [`symmetric_replicas`] from the scenario's [`Plan`] (its shard plan and placement).
pub(crate) fn symmetric_replicas_in(scenario: &Scenario, plan: &Plan) -> Result<u32, &'static str> {
    symmetric_replicas_with(scenario, plan.shard_plan, &plan.placement)
}

fn mode_of(expansion: Expansion, replicas: Result<u32, &'static str>) -> SimulationMode {
    match (expansion, replicas) {
        (Expansion::Auto, Ok(replicas)) => SimulationMode::Symmetric { replicas },
        _ => SimulationMode::Full,
    }
}

/// The replicas (d·cp ≥ 2) one representative stands for, or why the
/// scenario must run in full.
pub fn symmetric_replicas(scenario: &Scenario) -> Result<u32, &'static str> {
    symmetric_replicas_with(scenario, ShardPlan::new(scenario), &Placement::of(scenario))
}

/// [`symmetric_replicas`] with the scenario's shard plan and placement.
fn symmetric_replicas_with(
    scenario: &Scenario,
    shard_plan: Option<ShardPlan>,
    placement: &Placement,
) -> Result<u32, &'static str> {
    if scenario.layout.replicas() >= 2 && scenario.options.network_contention {
        return Err("--contention shares links between replicas");
    }
    replicas_alike_with(scenario, shard_plan, placement)
}

/// Whether the replicas (d·cp ≥ 2) lower alike, twin for twin, with every
/// task joining them over groups holding the representative's ranks: what
/// symmetry asks but that their flows run apart (`--contention`). Full
/// expansion can then keep one replica's graph ([`crate::replicated_run`]),
/// under contention too.
pub(crate) fn replicas_alike_in(scenario: &Scenario, plan: &Plan) -> Result<u32, &'static str> {
    replicas_alike_with(scenario, plan.shard_plan, &plan.placement)
}

/// [`replicas_alike_in`] without a plan.
pub(crate) fn replicas_alike(scenario: &Scenario) -> Result<u32, &'static str> {
    replicas_alike_with(scenario, ShardPlan::new(scenario), &Placement::of(scenario))
}

fn replicas_alike_with(
    scenario: &Scenario,
    shard_plan: Option<ShardPlan>,
    placement: &Placement,
) -> Result<u32, &'static str> {
    let replicas = scenario.layout.replicas();
    if replicas < 2 {
        return Err("a single replica");
    }
    if scenario.options.offload.is_some() {
        return Err("ZeRO-Offload interleaves replicas and shares PCIe links");
    }
    if shard_plan.is_some_and(|plan| plan.replicas > 1) {
        return Err("HSDP's cross-group all-reduces leave the representative's ranks out");
    }
    if scenario.options.zeropp.secondary_group().is_some() {
        return Err(
            "ZeRO++ hpZ's secondary gathers run on groups without the representative's ranks",
        );
    }
    if !placed_alike(placement) {
        return Err("replicas sit on the nodes differently");
    }
    Ok(replicas)
}

/// Node numbers renumbered by first appearance (0, 1, … in order).
fn canonical_nodes(placement: &Placement, ranks: impl Iterator<Item = Rank>) -> Vec<u32> {
    let mut seen: Vec<u32> = Vec::new();
    ranks
        .map(|rank| {
            let node = placement.node(rank);
            match seen.iter().position(|&n| n == node) {
                Some(index) => index as u32,
                None => {
                    seen.push(node);
                    seen.len() as u32 - 1
                }
            }
        })
        .collect()
}

/// Whether every replica, and every expert-parallel group of replicas,
/// sits on its nodes as the first does.
fn placed_alike(placement: &Placement) -> bool {
    let layout = placement.layout;
    let (t, p, replicas) = (
        layout.tensor_parallel.get(),
        layout.pipeline_parallel.get(),
        layout.replicas(),
    );
    let ep = layout.expert_parallel.get();
    // The ranks of replicas first..first+count, stage by stage.
    let pattern = |first: u32, count: u32| {
        canonical_nodes(
            placement,
            (0..p).flat_map(move |stage| {
                (first..first + count).flat_map(move |data_index| {
                    (0..t).map(move |tensor_index| {
                        placement.rank(crate::placement::Coordinates {
                            stage,
                            data_index,
                            tensor_index,
                        })
                    })
                })
            }),
        )
    };
    let replica = pattern(0, 1);
    if (1..replicas).any(|data_index| pattern(data_index, 1) != replica) {
        return false;
    }
    if ep > 1 {
        let group = pattern(0, ep);
        if (1..replicas / ep).any(|g| pattern(g * ep, ep) != group) {
            return false;
        }
    }
    if layout.expert_tensor_parallel.get() > 1 {
        // Expert-parallel groups etp apart and expert tensor groups: every
        // rank's must span as many nodes as the representative's (the
        // shapes its works are costed with).
        let spans = |stage, data_index, tensor_index| {
            (
                placement.nodes_spanned(&placement.expert_group(stage, data_index, tensor_index)),
                placement.nodes_spanned(&placement.expert_tensor_group(
                    stage,
                    data_index,
                    tensor_index,
                )),
            )
        };
        let first = spans(0, 0, 0);
        for stage in 0..p {
            for data_index in 0..replicas {
                for tensor_index in 0..t {
                    if spans(stage, data_index, tensor_index) != first {
                        return false;
                    }
                }
            }
        }
    }
    true
}

/// Task, edge and event counts of full expansion, from the lowered
/// replicas' graph: a task whose group holds only lowered ranks stands for
/// its replica's weight in twins (d·cp for replica 0 of a symmetric run), a
/// collective over several replicas for itself; an edge touching a
/// replica's task for that weight in edges, one between two collectives for
/// itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FullCounts {
    pub tasks: usize,
    pub edges: usize,
}

impl FullCounts {
    /// `weights[i]`: the replicas lowered replica i stands for.
    pub fn of(graph: &TaskGraph, lowered: Representative, weights: &[u32]) -> FullCounts {
        let task_weight = task_weights(graph, lowered, weights);
        let mut edges = 0usize;
        for (from, &from_weight) in task_weight.iter().enumerate() {
            for &to in graph.successor_slice(from) {
                edges += match (from_weight, task_weight[to as usize]) {
                    (0, 0) => 1,
                    (0, weight) | (weight, _) => weight as usize,
                };
            }
        }
        FullCounts {
            tasks: tasks_standing_for(&task_weight),
            edges,
        }
    }

    /// [`FullCounts::of`]'s tasks alone (the edges are not walked).
    pub fn tasks_of(graph: &TaskGraph, lowered: Representative, weights: &[u32]) -> usize {
        tasks_standing_for(&task_weights(graph, lowered, weights))
    }
}

/// How many full-expansion tasks the tasks of these weights ([`task_weights`]) stand for.
fn tasks_standing_for(task_weight: &[u32]) -> usize {
    task_weight
        .iter()
        .map(|&weight| match weight {
            // A collective over several replicas: itself.
            0 => 1,
            weight => weight as usize,
        })
        .sum()
}

/// Per task of `graph`: the replicas it stands for (its replica's weight),
/// or 0 for a task whose group has ranks outside the lowered replicas (a
/// collective standing for itself).
fn task_weights(graph: &TaskGraph, lowered: Representative, weights: &[u32]) -> Vec<u32> {
    debug_assert_eq!(weights.len() as u32, lowered.lowered);
    let group_weight: Vec<u32> = graph
        .groups()
        .iter()
        .map(|ranks| {
            if ranks.iter().all(|&rank| lowered.contains(rank)) {
                weights[lowered.data_index(ranks[0]) as usize]
            } else {
                0
            }
        })
        .collect();
    (0..graph.task_count())
        .map(|index| group_weight[graph.group_of(taskgraph::ids::TaskId(index as u32)).index()])
        .collect()
}
