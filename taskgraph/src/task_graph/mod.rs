//! The task graph: a DAG whose nodes are [`Task`]s and whose edges are data
//! dependencies and per-stream program order, plus the side tables tasks
//! index (rank groups, distinct works). Built by `sim::lowering`, replayed
//! by `sim::engine` and by the GPU executor. Stored compactly
//! ([`crate::task_columns`]): task fields as columns, successors as CSR rows;
//! petgraph only finds a cycle's members when there is one.

use crate::ids::{GroupId, Rank, TaskId, WorkId};
use crate::task::Task;
pub use crate::task::{ComputePass, Dependency};
use crate::task_columns::{Csr, TaskColumns};
use std::collections::BTreeMap;

mod builder;
mod intern_hash;
pub use builder::TaskGraphBuilder;

/// A [`Work::Compute`]'s `segment` covering the whole pass: its host
/// synchronizations, if any, are not lowered (no host lane, or programs that
/// do not cut passes there).
pub const WHOLE_PASS: u16 = u16::MAX;

/// How a collective's group falls on nodes: the nodes it spans and the
/// fewest of its ranks on any one of them. Across nodes a ring enters and
/// leaves every node through the NICs of that node's own ranks, so the least
/// populated node bounds the rails it can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeSpread {
    pub nodes: u32,
    pub fewest_ranks_per_node: u32,
}

impl NodeSpread {
    /// `group_size` ranks spread as evenly as they can be over `nodes` nodes
    /// (at least 1): ⌈group_size / nodes⌉ on each, as every node held as
    /// many as the fullest.
    pub fn even(group_size: u32, nodes: u32) -> NodeSpread {
        let nodes = nodes.max(1);
        NodeSpread {
            nodes,
            fewest_ranks_per_node: group_size.div_ceil(nodes),
        }
    }
}

/// What a piece of work is; many tasks share one, so each is costed once.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Work {
    /// The kernels of one pass over a model chunk: `layers` transformer layers,
    /// plus the embedding (first virtual stage) and/or head (last virtual stage).
    Compute {
        pass: ComputePass,
        layers: u32,
        /// The piece's first model layer where the scenario routes each MoE
        /// layer its own way (`scenario::ExpertRouting::layers`), else 0, so
        /// that works which cost alike stay one.
        first_layer: u32,
        /// Of those, the dense layers of a model with experts (its
        /// `first_dense_layers`, `layer_frequency`), costed before its MoE
        /// layers; 0 for a dense model (its every layer is the one kind).
        dense_layers: u32,
        embedding: bool,
        head: bool,
        /// FP8 training only: this forward is its chunk's first microbatch of
        /// the iteration, which casts the layers' weights to FP8 first
        /// ([`models::fp8::weight_cast_steps`]).
        fp8_weight_cast: bool,
        /// Which part of the pass between host synchronizations
        /// ([`models::ops::Step::HostSync`]) this is, or [`WHOLE_PASS`].
        segment: u16,
    },
    /// A piece of an overlapped F&B pair's computation (`compute`, a
    /// [`Work::Compute`] of one all-to-all piece) issued beside an expert
    /// all-to-all of the pair's other half (`beside`, a
    /// [`Work::ExpertAllToAll`]), which holds some of the GPU's SMs while
    /// it runs (`sim::cost::pair_overlap`).
    ComputeBeside {
        compute: Box<Work>,
        beside: Box<Work>,
    },
    /// The blocking tensor-parallel all-reduces of that pass, over `group_size` ranks.
    TensorAllReduce {
        pass: ComputePass,
        layers: u32,
        /// The piece's first model layer where the scenario routes each MoE
        /// layer its own way (`scenario::ExpertRouting::layers`), else 0, so
        /// that works which cost alike stay one.
        first_layer: u32,
        dense_layers: u32,
        embedding: bool,
        head: bool,
        group_size: u32,
        nodes: u32,
        /// The pass's segment ([`Work::Compute`]'s `segment`).
        segment: u16,
    },
    /// The blocking expert-parallel all-to-alls of that pass (token dispatch
    /// and combine of every MoE layer), over `group_size` ranks spanning
    /// `nodes` nodes, and under expert tensor parallelism their all-gathers
    /// and reduce-scatters over the expert tensor group of
    /// `expert_tensor_group` (ranks, nodes); costed for the busiest rank of
    /// the group.
    ExpertAllToAll {
        pass: ComputePass,
        layers: u32,
        /// The piece's first model layer where the scenario routes each MoE
        /// layer its own way (`scenario::ExpertRouting::layers`), else 0, so
        /// that works which cost alike stay one.
        first_layer: u32,
        dense_layers: u32,
        embedding: bool,
        head: bool,
        group_size: u32,
        nodes: u32,
        expert_tensor_group: (u32, u32),
        /// The pass's segment ([`Work::Compute`]'s `segment`).
        segment: u16,
    },
    /// Activations or gradients between consecutive stages' tensor groups.
    PipelineTransfer {
        bytes: u64,
        tensor_parallel: u32,
        crosses_nodes: bool,
        scatter_gather: bool,
    },
    /// Data-parallel gradient all-reduce of `bytes` per rank over the group.
    DataParallelAllReduce {
        bytes: u64,
        group_size: u32,
        spread: NodeSpread,
    },
    /// The optimizer step over `params` parameters on one GPU.
    OptimizerStep { params: u64 },
    /// `kernels` memory-bound kernels on one GPU, each moving `bytes` through
    /// HBM: local DDP's flatten, divide and copy back around the
    /// data-parallel all-reduce (`sim::scenario::LocalDdpKernels`), or a
    /// compression's kernels (1-bit Adam, PowerSGD, ZeRO++).
    GradientCopy { bytes: u64, kernels: u32 },
    /// The host issuing a pass: its first kernel (`first`), or the rest of
    /// its kernels and its tensor all-reduce calls.
    HostIssuePass {
        pass: ComputePass,
        layers: u32,
        dense_layers: u32,
        embedding: bool,
        head: bool,
        first: bool,
        /// The pass's segment ([`Work::Compute`]'s `segment`): the host
        /// issues each segment after the GPU has run the one before.
        segment: u16,
    },
    /// The host issuing one point-to-point or collective call.
    HostCall,
    /// The host issuing the optimizer step's kernels.
    HostOptimizer,
    /// ZeRO-2 reduce-scatter of a `bytes` gradient bucket (the input per rank) over the group.
    DataParallelReduceScatter {
        bytes: u64,
        group_size: u32,
        spread: NodeSpread,
    },
    /// ZeRO-2 all-gather producing `bytes` of parameters per rank over the group.
    DataParallelAllGather {
        bytes: u64,
        group_size: u32,
        spread: NodeSpread,
    },
    /// One copy of `bytes` over a GPU's PCIe host link, shared by `sharing_gpus`
    /// GPUs that transfer at the same time.
    PcieTransfer {
        direction: PcieDirection,
        bytes: u64,
        sharing_gpus: u32,
    },
    /// An all-to-all of `bytes` per rank among `group_size` ranks on `nodes`
    /// nodes, run at once by every such group of a data-parallel group:
    /// the two exchanges of ZeRO++'s quantized gradient reduction (qgZ,
    /// `sim::cost::zeropp`), inside each node and then across nodes.
    DataParallelAllToAll {
        bytes: u64,
        group_size: u32,
        nodes: u32,
    },
    /// 1-bit Adam's compressed all-reduce of `elements` fp32 momentum values
    /// per rank over the data-parallel group (DeepSpeed's
    /// `NcclBackend.compressed_allreduce`: signs all-to-all'ed, averaged and
    /// re-compressed by each rank's chunk, all-gathered; `sim::cost::onebit`).
    OneBitAllReduce {
        elements: u64,
        group_size: u32,
        spread: NodeSpread,
    },
    /// PowerSGD's reduction of a rank's gradients (`elements` of
    /// `element_bytes`, `matrix_elements` of them in matrices compressed to
    /// rank `rank`, whose factors hold `p_elements` and `q_elements`) over
    /// the data-parallel group: three all-reduces and the hook's kernels
    /// (`sim::cost::powersgd`).
    PowerSgdAllReduce {
        elements: u64,
        matrix_elements: u64,
        p_elements: u64,
        q_elements: u64,
        element_bytes: u64,
        rank: u32,
        group_size: u32,
        spread: NodeSpread,
    },
    /// CPU Adam over `params` parameters (one tile) of a GPU whose whole step
    /// updates `step_params`, while `sharing_gpus` GPUs of the node step at once.
    CpuAdam {
        params: u64,
        step_params: u64,
        sharing_gpus: u32,
    },
}

/// Direction of a PCIe copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PcieDirection {
    DeviceToHost,
    HostToDevice,
}

/// A sealed task graph with its side tables, in compact form: task fields as
/// columns and successors as CSR rows ([`crate::task_columns`]). Read through
/// its methods.
#[derive(Debug, Clone)]
pub struct TaskGraph {
    tasks: TaskColumns,
    successors: Csr,
    /// Predecessor rows, built on first use (the executor and tests ask; the engine does not).
    predecessors: std::sync::OnceLock<Csr>,
    /// Ranks of each group.
    groups: Vec<Vec<Rank>>,
    /// Distinct works, indexed by `WorkId`.
    works: Vec<Work>,
    n_ranks: u32,
    /// A representative replica's graph: where full expansion repeats it
    /// ([`crate::replica_map`]).
    replica_map: Option<Box<crate::replica_map::ReplicaMap>>,
}

/// A cycle: the graph cannot be executed; these tasks wait on each other.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the task graph has a cycle (deadlock) through {} tasks, e.g. {}", tasks.len(), describe_tasks(tasks))]
pub struct CycleError {
    pub tasks: Vec<String>,
}

fn describe_tasks(tasks: &[String]) -> String {
    tasks
        .iter()
        .take(8)
        .cloned()
        .collect::<Vec<_>>()
        .join(" → ")
}

impl TaskGraph {
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    pub fn edge_count(&self) -> usize {
        self.successors.len()
    }

    /// GPUs the graph runs on.
    pub fn n_ranks(&self) -> u32 {
        self.n_ranks
    }

    /// Every task, by id.
    pub fn tasks(&self) -> impl ExactSizeIterator<Item = Task> + '_ {
        (0..self.tasks.len()).map(|index| self.tasks.get(index))
    }

    /// The ranks of a group.
    pub fn group_ranks(&self, group: GroupId) -> &[Rank] {
        &self.groups[group.index()]
    }

    /// Every group's ranks, by `GroupId` (the Timeline header lists them).
    pub fn groups(&self) -> &[Vec<Rank>] {
        &self.groups
    }

    /// Where full expansion repeats this representative replica's graph
    /// (set by `sim::lowering::lower_representative`).
    pub fn replica_map(&self) -> Option<&crate::replica_map::ReplicaMap> {
        self.replica_map.as_deref()
    }

    pub fn set_replica_map(&mut self, map: Option<crate::replica_map::ReplicaMap>) {
        self.replica_map = map.map(Box::new);
    }

    /// Distinct works, by `WorkId`.
    pub fn works(&self) -> &[Work] {
        &self.works
    }

    pub fn work(&self, work: WorkId) -> &Work {
        &self.works[work.index()]
    }

    /// The work of task `id` (one column read: what the engine needs for a duration).
    #[inline]
    pub fn work_of(&self, id: TaskId) -> WorkId {
        self.tasks.work(id.index())
    }

    /// Every task's work, by id.
    pub fn task_works(&self) -> &[WorkId] {
        self.tasks.works()
    }

    /// The kind of task `id` (one column read).
    #[inline]
    pub fn kind_of(&self, id: TaskId) -> crate::task::TaskKind {
        self.tasks.kind(id.index())
    }

    /// The stream of task `id` (one column read).
    #[inline]
    pub fn stream_of(&self, id: TaskId) -> crate::task::StreamKind {
        self.tasks.stream(id.index())
    }

    /// The iteration of task `id` (one column read).
    #[inline]
    pub fn iteration_of(&self, id: TaskId) -> u16 {
        self.tasks.iteration(id.index())
    }

    /// The group of task `id` (one column read).
    #[inline]
    pub fn group_of(&self, id: TaskId) -> GroupId {
        self.tasks.group(id.index())
    }

    /// The stage and chunk of task `id` (two column reads).
    #[inline]
    pub fn stage_and_chunk_of(&self, id: TaskId) -> (u32, u16) {
        (self.tasks.stage(id.index()), self.tasks.chunk(id.index()))
    }

    /// The tasks `id` waits for, sources in id order (rows built on first call).
    pub fn predecessors(&self, id: TaskId) -> impl Iterator<Item = TaskId> + '_ {
        self.predecessors
            .get_or_init(|| self.successors.transpose())
            .row(id.index())
            .iter()
            .map(|&index| TaskId(index))
    }

    /// The tasks waiting for `id` (most recently added edge first).
    pub fn successors(&self, id: TaskId) -> impl Iterator<Item = TaskId> + '_ {
        self.successors
            .row(id.index())
            .iter()
            .map(|&index| TaskId(index))
    }

    /// The successor ids of task `index` as a slice (the engine's inner loop).
    #[inline]
    pub fn successor_slice(&self, index: usize) -> &[u32] {
        self.successors.row(index)
    }

    /// How many edges enter each task.
    pub fn in_degrees(&self) -> Vec<u32> {
        let mut degrees = vec![0u32; self.task_count()];
        for &to in self.successors.targets() {
            degrees[to as usize] += 1;
        }
        degrees
    }

    /// A topological order of the tasks (Kahn's, ready tasks first in, first
    /// out), or the tasks of a cycle.
    pub fn topological_order(&self) -> Result<Vec<TaskId>, CycleError> {
        let mut remaining = self.in_degrees();
        let mut order: Vec<TaskId> = (0..self.task_count())
            .filter(|&index| remaining[index] == 0)
            .map(|index| TaskId(index as u32))
            .collect();
        let mut next = 0;
        while next < order.len() {
            let task = order[next];
            next += 1;
            for &successor in self.successor_slice(task.index()) {
                remaining[successor as usize] -= 1;
                if remaining[successor as usize] == 0 {
                    order.push(TaskId(successor));
                }
            }
        }
        if order.len() == self.task_count() {
            Ok(order)
        } else {
            Err(self.cycle(&remaining))
        }
    }

    /// The tasks of one cycle among those Kahn's algorithm could not order
    /// (`remaining` > 0), found with petgraph on that part of the graph.
    fn cycle(&self, remaining: &[u32]) -> CycleError {
        let stuck: Vec<u32> = (0..self.task_count() as u32)
            .filter(|&index| remaining[index as usize] > 0)
            .collect();
        let mut graph = petgraph::graph::DiGraph::<u32, (), u32>::with_capacity(stuck.len(), 0);
        let nodes: BTreeMap<u32, petgraph::graph::NodeIndex<u32>> = stuck
            .iter()
            .map(|&index| (index, graph.add_node(index)))
            .collect();
        for (&index, &node) in &nodes {
            for successor in self.successor_slice(index as usize) {
                if let Some(&target) = nodes.get(successor) {
                    graph.add_edge(node, target, ());
                }
            }
        }
        let members = petgraph::algo::tarjan_scc(&graph)
            .into_iter()
            .find(|component| {
                component.len() > 1
                    || component
                        .iter()
                        .any(|&node| graph.contains_edge(node, node))
            })
            .unwrap_or_default();
        CycleError {
            tasks: members
                .iter()
                .map(|&node| self.describe(TaskId(graph[node])))
                .collect(),
        }
    }

    /// Every edge as (from, to, why), grouped by source in id order (each
    /// source's in successor order).
    pub fn edges(&self) -> impl Iterator<Item = (TaskId, TaskId, Dependency)> + '_ {
        (0..self.task_count()).flat_map(move |from| {
            self.successors
                .row_with_why(from)
                .map(move |(to, why)| (TaskId(from as u32), TaskId(to), why))
        })
    }

    pub fn task(&self, id: TaskId) -> Task {
        self.tasks.get(id.index())
    }

    /// Fails with the tasks of one cycle if the graph is not a DAG.
    pub fn check_acyclic(&self) -> Result<(), CycleError> {
        self.topological_order().map(|_| ())
    }

    /// Frees the successor rows once the engine has run (the report keeps the
    /// task columns to describe and materialise its timeline).
    pub fn release_edges(&mut self) {
        self.successors = Csr::default();
        self.predecessors = std::sync::OnceLock::new();
    }

    /// "forward s3 mb5 c0 on ranks [24..31]"-style description of a task.
    pub fn describe(&self, id: TaskId) -> String {
        let task = self.task(id);
        let ranks = &self.groups[task.group.index()];
        let ranks = match ranks.as_slice() {
            [one] => format!("rank {}", one.0),
            [first, .., last] => format!("ranks {}..{}", first.0, last.0),
            [] => "no ranks".into(),
        };
        let microbatch = if task.microbatch == crate::task::NO_MICROBATCH {
            String::new()
        } else {
            format!(" mb{}", task.microbatch)
        };
        format!(
            "#{} {} s{}{} c{} on {}",
            id.0,
            task.kind.name(),
            task.stage,
            microbatch,
            task.chunk,
            ranks
        )
    }
}

#[cfg(test)]
mod tests;
