//! The task graph: a petgraph DAG whose nodes are [`Task`]s and whose edges
//! are data dependencies and per-stream program order, plus the side tables
//! tasks index (rank groups, distinct works). Built by [`crate::lowering`],
//! replayed by [`crate::engine`] and (later) by the GPU executor.

use crate::ids::{GroupId, Rank, TaskId, WorkId};
use crate::schedule::Pass;
use crate::task::Task;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::BTreeMap;

/// What a piece of work is; many tasks share one, so each is costed once.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Work {
    /// The kernels of one pass over a model chunk: `layers` transformer layers,
    /// plus the embedding (first virtual stage) and/or head (last virtual stage).
    Compute {
        pass: ComputePass,
        layers: u32,
        embedding: bool,
        head: bool,
        /// FP8 training only: this forward is its chunk's first microbatch of
        /// the iteration, which casts the layers' weights to FP8 first
        /// ([`models::fp8::weight_cast_steps`]).
        fp8_weight_cast: bool,
    },
    /// The blocking tensor-parallel all-reduces of that pass, over `group_size` ranks.
    TensorAllReduce {
        pass: ComputePass,
        layers: u32,
        embedding: bool,
        head: bool,
        group_size: u32,
        nodes: u32,
    },
    /// The blocking expert-parallel all-to-alls of that pass (token dispatch
    /// and combine of every MoE layer), over `group_size` ranks spanning
    /// `nodes` nodes; costed for the busiest rank of the group.
    ExpertAllToAll {
        pass: ComputePass,
        layers: u32,
        embedding: bool,
        head: bool,
        group_size: u32,
        nodes: u32,
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
        nodes: u32,
    },
    /// The optimizer step over `params` parameters on one GPU.
    OptimizerStep { params: u64 },
    /// The host issuing a pass: its first kernel (`first`), or the rest of
    /// its kernels and its tensor all-reduce calls.
    HostIssuePass {
        pass: ComputePass,
        layers: u32,
        embedding: bool,
        head: bool,
        first: bool,
    },
    /// The host issuing one point-to-point or collective call.
    HostCall,
    /// The host issuing the optimizer step's kernels.
    HostOptimizer,
    /// ZeRO-2 reduce-scatter of a `bytes` gradient bucket (the input per rank) over the group.
    DataParallelReduceScatter {
        bytes: u64,
        group_size: u32,
        nodes: u32,
    },
    /// ZeRO-2 all-gather producing `bytes` of parameters per rank over the group.
    DataParallelAllGather {
        bytes: u64,
        group_size: u32,
        nodes: u32,
    },
    /// One copy of `bytes` over a GPU's PCIe host link, shared by `sharing_gpus`
    /// GPUs that transfer at the same time.
    PcieTransfer {
        direction: PcieDirection,
        bytes: u64,
        sharing_gpus: u32,
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

/// Which pass a compute task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ComputePass {
    Forward,
    Recompute,
    Backward,
    /// The input-gradient half of a split backward ([`crate::cost::split_backward`]).
    InputGradient,
    /// The weight-gradient half of a split backward.
    WeightGradient,
}

impl ComputePass {
    /// Short lowercase name (`simulate --explain`).
    pub fn name(self) -> &'static str {
        match self {
            ComputePass::Forward => "forward",
            ComputePass::Recompute => "recompute",
            ComputePass::Backward => "backward",
            ComputePass::InputGradient => "bwd_input",
            ComputePass::WeightGradient => "bwd_weight",
        }
    }

    /// Whether the pass runs (part of) the backward's kernels.
    pub fn is_backward(self) -> bool {
        matches!(
            self,
            ComputePass::Backward | ComputePass::InputGradient | ComputePass::WeightGradient
        )
    }
}

impl From<Pass> for ComputePass {
    fn from(pass: Pass) -> ComputePass {
        match pass {
            Pass::Forward => ComputePass::Forward,
            Pass::Backward => ComputePass::Backward,
            Pass::InputGradient => ComputePass::InputGradient,
            Pass::WeightGradient => ComputePass::WeightGradient,
            // A pair is two passes: lowering splits it first (`Action::halves`).
            Pass::ForwardBackward => unreachable!("an F&B pair is two passes, not one"),
        }
    }
}

/// Why an edge exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependency {
    /// The target needs the source's output.
    Data,
    /// The source precedes the target on a stream of some rank.
    ProgramOrder,
}

/// A sealed task graph with its side tables. Read through its methods; the
/// petgraph graph inside is an implementation detail.
#[derive(Debug, Clone)]
pub struct TaskGraph {
    graph: DiGraph<Task, Dependency, u32>,
    /// Ranks of each group.
    groups: Vec<Vec<Rank>>,
    /// Distinct works, indexed by `WorkId`.
    works: Vec<Work>,
    n_ranks: u32,
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

/// Incremental builder used by lowering.
#[derive(Debug, Default)]
pub struct TaskGraphBuilder {
    graph: DiGraph<Task, Dependency, u32>,
    groups: Vec<Vec<Rank>>,
    group_index: BTreeMap<Vec<Rank>, GroupId>,
    works: Vec<Work>,
    work_index: BTreeMap<Work, WorkId>,
}

impl TaskGraphBuilder {
    pub fn with_capacity(nodes: usize, edges: usize) -> TaskGraphBuilder {
        TaskGraphBuilder {
            graph: DiGraph::with_capacity(nodes, edges),
            ..TaskGraphBuilder::default()
        }
    }

    /// The id of this group of ranks, interning it on first use.
    pub fn group(&mut self, ranks: &[Rank]) -> GroupId {
        if let Some(&id) = self.group_index.get(ranks) {
            return id;
        }
        let id = GroupId(self.groups.len() as u32);
        self.groups.push(ranks.to_vec());
        self.group_index.insert(ranks.to_vec(), id);
        id
    }

    /// The id of this work, interning it on first use.
    pub fn work(&mut self, work: Work) -> WorkId {
        if let Some(&id) = self.work_index.get(&work) {
            return id;
        }
        let id = WorkId(self.works.len() as u32);
        self.works.push(work.clone());
        self.work_index.insert(work, id);
        id
    }

    pub fn add_task(&mut self, task: Task) -> TaskId {
        TaskId(self.graph.add_node(task).index() as u32)
    }

    pub fn add_edge(&mut self, from: TaskId, to: TaskId, why: Dependency) {
        self.graph.add_edge(
            NodeIndex::new(from.index()),
            NodeIndex::new(to.index()),
            why,
        );
    }

    pub fn task(&self, id: TaskId) -> &Task {
        &self.graph[NodeIndex::new(id.index())]
    }

    pub fn task_count(&self) -> usize {
        self.graph.node_count()
    }

    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// The ranks of an interned group.
    pub fn group_ranks(&self, group: GroupId) -> &[Rank] {
        &self.groups[group.index()]
    }

    pub fn finish(self, n_ranks: u32) -> TaskGraph {
        TaskGraph {
            graph: self.graph,
            groups: self.groups,
            works: self.works,
            n_ranks,
        }
    }
}

impl TaskGraph {
    pub fn task_count(&self) -> usize {
        self.graph.node_count()
    }

    pub fn edge_count(&self) -> usize {
        self.graph.edge_count()
    }

    /// GPUs the graph runs on.
    pub fn n_ranks(&self) -> u32 {
        self.n_ranks
    }

    /// Every task, by id.
    pub fn tasks(&self) -> impl Iterator<Item = &Task> + '_ {
        self.graph.node_weights()
    }

    /// The ranks of a group.
    pub fn group_ranks(&self, group: GroupId) -> &[Rank] {
        &self.groups[group.index()]
    }

    /// Every group's ranks, by `GroupId` (the Timeline header lists them).
    pub fn groups(&self) -> &[Vec<Rank>] {
        &self.groups
    }

    /// Distinct works, by `WorkId`.
    pub fn works(&self) -> &[Work] {
        &self.works
    }

    pub fn work(&self, work: WorkId) -> &Work {
        &self.works[work.index()]
    }

    /// The tasks `id` waits for (most recently added edge first).
    pub fn predecessors(&self, id: TaskId) -> impl Iterator<Item = TaskId> + '_ {
        self.graph
            .neighbors_directed(NodeIndex::new(id.index()), petgraph::Direction::Incoming)
            .map(|node| TaskId(node.index() as u32))
    }

    /// The tasks waiting for `id` (most recently added edge first).
    pub fn successors(&self, id: TaskId) -> impl Iterator<Item = TaskId> + '_ {
        self.graph
            .neighbors_directed(NodeIndex::new(id.index()), petgraph::Direction::Outgoing)
            .map(|node| TaskId(node.index() as u32))
    }

    /// A topological order of the tasks, or the tasks of a cycle.
    pub fn topological_order(&self) -> Result<Vec<TaskId>, CycleError> {
        self.check_acyclic()?;
        let order = petgraph::algo::toposort(&self.graph, None).expect("checked acyclic");
        Ok(order
            .into_iter()
            .map(|node| TaskId(node.index() as u32))
            .collect())
    }

    /// Every edge as (from, to, why), in insertion order.
    pub fn edges(&self) -> impl Iterator<Item = (TaskId, TaskId, Dependency)> + '_ {
        self.graph.raw_edges().iter().map(|edge| {
            (
                TaskId(edge.source().index() as u32),
                TaskId(edge.target().index() as u32),
                edge.weight,
            )
        })
    }

    pub fn task(&self, id: TaskId) -> &Task {
        &self.graph[NodeIndex::new(id.index())]
    }

    /// Fails with the tasks of one cycle if the graph is not a DAG.
    pub fn check_acyclic(&self) -> Result<(), CycleError> {
        match petgraph::algo::toposort(&self.graph, None) {
            Ok(_) => Ok(()),
            Err(cycle) => {
                let sccs = petgraph::algo::tarjan_scc(&self.graph);
                let members = sccs
                    .into_iter()
                    .find(|component| component.len() > 1 || component.contains(&cycle.node_id()))
                    .unwrap_or_else(|| vec![cycle.node_id()]);
                Err(CycleError {
                    tasks: members
                        .iter()
                        .map(|&n| self.describe(TaskId(n.index() as u32)))
                        .collect(),
                })
            }
        }
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
mod tests {
    use super::*;
    use crate::task::{StreamKind, TaskKind};

    fn task(builder: &mut TaskGraphBuilder, microbatch: u32) -> TaskId {
        let group = builder.group(&[Rank(0)]);
        let work = builder.work(Work::OptimizerStep { params: 1 });
        builder.add_task(Task {
            kind: TaskKind::Forward,
            stream: StreamKind::Compute,
            chunk: 0,
            stage: 0,
            microbatch,
            iteration: 0,
            group,
            work,
        })
    }

    #[test]
    fn a_cycle_is_reported_with_the_tasks_on_it_and_the_engine_refuses_to_run_it() {
        let mut builder = TaskGraphBuilder::default();
        let (a, b, c, d) = (
            task(&mut builder, 0),
            task(&mut builder, 1),
            task(&mut builder, 2),
            task(&mut builder, 3),
        );
        builder.add_edge(a, b, Dependency::Data);
        builder.add_edge(b, c, Dependency::Data);
        builder.add_edge(c, b, Dependency::ProgramOrder);
        builder.add_edge(c, d, Dependency::Data);
        let graph = builder.finish(1);
        let error = graph.check_acyclic().unwrap_err();
        assert_eq!(error.tasks.len(), 2, "{error}");
        assert!(
            error.to_string().contains("forward s0 mb1")
                && error.to_string().contains("forward s0 mb2"),
            "{error}"
        );
        let deadlock = crate::engine::run(&graph, |_| crate::time::SimDuration(1)).unwrap_err();
        assert_eq!(deadlock.stuck, 3, "{deadlock}");
    }

    #[test]
    fn lowered_graphs_are_acyclic() {
        let scenario = crate::scenario::ScenarioFile::tiny_example()
            .resolve()
            .unwrap();
        let (_, graph) = crate::build_graph(&scenario);
        graph.check_acyclic().unwrap();
    }
}
