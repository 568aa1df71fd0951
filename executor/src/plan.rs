//! The execution plan: what the GPU executor issues, as data.
//!
//! [`plan`] turns a sealed task graph into a list of tasks in a valid
//! topological *issue order*, each with
//! - its stream: one CUDA stream per (rank, [`StreamKind`]); a group task
//!   (tensor or data-parallel all-reduce, pipeline send) runs on the stream of
//!   the lowest rank of its group, and the graph's edges hold the other ranks'
//!   streams back until it is done;
//! - the tasks whose end events it waits on: one per predecessor on another
//!   stream (a predecessor on the same stream is implicit in stream order);
//! - its launches ([`Launch`]): real GEMM shapes and copy sizes, or a spin of
//!   the simulated duration, or an NCCL collective.
//!
//! Issue order matters on a GPU: `cuStreamWaitEvent` on an event that has not
//! been recorded yet returns at once, so a wait issued before its event is
//! recorded would silently drop the dependency. Issuing in topological order
//! makes every wait refer to an already recorded event. Among ready tasks the
//! one the simulator starts first is issued first (ties by task id), so the
//! host issues in roughly the order the GPU will run.
//!
//! Everything here is pure and runs on a CPU; [`crate::check`] verifies a plan.

use crate::error::ExecuteError;
use crate::launches::{work_launches, Launch};
pub use crate::mode::ExecutionMode;
use serde::Serialize;
use sim::cost::{cost_works, ClosedFormNetwork, WorkCost};
use sim::ids::TaskId;
use sim::scenario::Scenario;
use sim::task::{StreamKind, TaskKind};
use sim::task_graph::TaskGraph;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// One CUDA stream: a stream kind of one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct StreamSlot {
    pub rank: u32,
    pub kind: StreamKind,
    /// The device ordinal the rank is mapped to.
    pub gpu: u32,
}

/// One task as the executor issues it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedTask {
    /// The task's id in the graph (and in the Timeline).
    pub task: u32,
    pub kind: TaskKind,
    /// Index into [`ExecutionPlan::streams`].
    pub stream: u32,
    /// Tasks (ids) on other streams whose end events this task waits on; all
    /// issued earlier. Sorted.
    pub waits: Vec<u32>,
    /// What it launches, in order (empty for zero-cost work).
    pub launches: Vec<Launch>,
    /// The simulator's duration of the task's work.
    pub simulated_duration_ns: u64,
    /// When the simulator starts it.
    pub simulated_start_ns: u64,
}

/// A whole iteration, ready to issue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionPlan {
    pub mode: ExecutionMode,
    /// Devices used (ranks are folded onto them in contiguous blocks).
    pub gpu_count: u32,
    /// Device ordinal of each rank.
    pub rank_gpu: Vec<u32>,
    /// Streams used, sorted by (rank, kind).
    pub streams: Vec<StreamSlot>,
    /// Every task once, in issue order.
    pub tasks: Vec<PlannedTask>,
    /// The simulator's iteration time with the same costs.
    pub simulated_iteration_ns: u64,
}

impl ExecutionPlan {
    /// Total launches of each class: (GEMMs, copies, spins, collectives).
    pub fn launch_counts(&self) -> LaunchCounts {
        let mut counts = LaunchCounts::default();
        for launch in self.tasks.iter().flat_map(|t| &t.launches) {
            match launch {
                Launch::Gemm { .. } => counts.gemms += 1,
                Launch::DeviceCopy { .. } => counts.copies += 1,
                Launch::Spin { .. } => counts.spins += 1,
                Launch::Collective { .. } => counts.collectives += 1,
            }
        }
        counts
    }

    /// How many ranks share a device (the most on any one).
    pub fn ranks_per_gpu(&self) -> u32 {
        let mut per_gpu = vec![0u32; self.gpu_count as usize];
        for &gpu in &self.rank_gpu {
            per_gpu[gpu as usize] += 1;
        }
        per_gpu.into_iter().max().unwrap_or(0)
    }
}

/// Launch totals of a plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LaunchCounts {
    pub gemms: usize,
    pub copies: usize,
    pub spins: usize,
    pub collectives: usize,
}

/// Device of `rank` when `n_ranks` ranks are folded onto `gpus` devices in
/// contiguous, balanced blocks (tensor groups, innermost, stay together).
pub fn rank_gpu(rank: u32, n_ranks: u32, gpus: u32) -> u32 {
    (rank as u64 * gpus as u64 / n_ranks.max(1) as u64) as u32
}

/// The simulator's per-work costs (closed-form network), as `simulate` uses them.
pub fn simulated_costs(scenario: &Scenario, graph: &TaskGraph) -> Vec<WorkCost> {
    let network = ClosedFormNetwork::for_scenario(scenario);
    cost_works(scenario, graph.works(), &network)
}

/// Plans one iteration of `graph` on `gpu_count` devices (clamped to
/// 1..=ranks). Fails only if the graph has a cycle.
pub fn plan(
    graph: &TaskGraph,
    scenario: &Scenario,
    mode: ExecutionMode,
    gpu_count: u32,
) -> Result<ExecutionPlan, ExecuteError> {
    if scenario.options.offload.is_some() {
        return Err(ExecuteError::Unsupported(
            "ZeRO-Offload scenarios cannot be executed yet: PCIe copies and CPU Adam tasks have no launches in the executor".into(),
        ));
    }
    if scenario.options.precision == sim::scenario::Precision::Fp8 {
        return Err(ExecuteError::Unsupported(
            "precision fp8 cannot be executed yet: the executor launches cuBLAS fp16/bf16 GEMMs only, not Transformer Engine's FP8 GEMMs and casts".into(),
        ));
    }
    if scenario.options.pair_overlap {
        return Err(ExecuteError::Unsupported(
            "pair_overlap cannot be executed yet: the executor runs each pass whole, not cut at its expert all-to-alls".into(),
        ));
    }
    if scenario.options.moe_dispatcher != sim::scenario::moe_comm::MoeDispatcher::Nccl {
        return Err(ExecuteError::Unsupported(
            "moe_dispatcher deepep cannot be executed: the executor has no DeepEP kernels".into(),
        ));
    }
    if scenario.options.tp_comm_overlap {
        return Err(ExecuteError::Unsupported(
            "tp_comm_overlap cannot be executed yet: the executor runs tensor all-reduces blocking on the compute stream".into(),
        ));
    }
    if scenario.options.async_tensor_allreduce {
        return Err(ExecuteError::Unsupported(
            "async_tensor_allreduce cannot be executed yet: the executor runs tensor all-reduces blocking on the compute stream".into(),
        ));
    }
    if scenario.stack.fused_attention && mode == ExecutionMode::Real {
        return Err(ExecuteError::Unsupported(format!(
            "stack {} runs the attention core as one fused kernel, which the executor has no real kernel for: use --mode synthetic, or a stack without fused attention",
            scenario.stack.name
        )));
    }
    if scenario.layout.context_parallel.get() > 1 && mode == ExecutionMode::Real {
        return Err(ExecuteError::Unsupported(
            "context parallelism (cp > 1) cannot be executed in real mode yet: the ring attention's K/V exchanges have no launches and its fused steps would run as cuBLAS GEMMs; use --mode synthetic".into(),
        ));
    }
    let costs = simulated_costs(scenario, graph);
    let schedule = sim::engine::run(graph, |id| costs[graph.task(id).work.index()].duration)
        .map_err(|error| ExecuteError::Graph(error.to_string()))?;
    let n_ranks = graph.n_ranks().max(1);
    let gpus = gpu_count.clamp(1, n_ranks);
    let rank_gpu: Vec<u32> = (0..n_ranks).map(|r| rank_gpu(r, n_ranks, gpus)).collect();

    // Stream of every task: the lowest rank of its group, its stream kind.
    let slot_of = |index: usize| -> (u32, StreamKind) {
        let task = graph.task(TaskId(index as u32));
        let lead = graph
            .group_ranks(task.group)
            .iter()
            .map(|r| r.0)
            .min()
            .unwrap_or(0);
        (lead, task.stream)
    };
    let slots: BTreeSet<(u32, StreamKind)> = (0..graph.task_count()).map(slot_of).collect();
    let streams: Vec<StreamSlot> = slots
        .iter()
        .map(|&(rank, kind)| StreamSlot {
            rank,
            kind,
            gpu: rank_gpu[rank as usize],
        })
        .collect();
    let stream_index: BTreeMap<(u32, StreamKind), u32> = slots
        .iter()
        .enumerate()
        .map(|(index, &slot)| (slot, index as u32))
        .collect();
    let task_stream: Vec<u32> = (0..graph.task_count())
        .map(|index| stream_index[&slot_of(index)])
        .collect();

    let mut launch_cache: BTreeMap<(u32, Vec<u32>), Vec<Launch>> = BTreeMap::new();
    let order = issue_order(graph, |index| schedule.start[index].as_nanos())?;
    let tasks = order
        .into_iter()
        .map(|index| {
            let task = graph.task(TaskId(index as u32));
            let stream = task_stream[index];
            let waits: BTreeSet<u32> = graph
                .predecessors(TaskId(index as u32))
                .filter(|p| task_stream[p.index()] != stream)
                .map(|p| p.0)
                .collect();
            let gpus = devices_touched(graph, index, &rank_gpu);
            let work = task.work;
            let launches = launch_cache
                .entry((work.0, gpus.clone()))
                .or_insert_with(|| {
                    work_launches(
                        scenario,
                        graph.work(work),
                        &costs[work.index()],
                        mode,
                        &gpus,
                    )
                })
                .clone();
            PlannedTask {
                task: index as u32,
                kind: task.kind,
                stream,
                waits: waits.into_iter().collect(),
                launches,
                simulated_duration_ns: costs[work.index()].duration.as_nanos(),
                simulated_start_ns: schedule.start[index].as_nanos(),
            }
        })
        .collect();
    Ok(ExecutionPlan {
        mode,
        gpu_count: gpus,
        rank_gpu,
        streams,
        tasks,
        simulated_iteration_ns: schedule.end.iter().map(|t| t.as_nanos()).max().unwrap_or(0),
    })
}

/// Devices a task's work touches, sorted: its group's, plus the receivers'
/// for a pipeline transfer (the compute tasks its data edges feed).
fn devices_touched(graph: &TaskGraph, index: usize, rank_gpu: &[u32]) -> Vec<u32> {
    let task = graph.task(TaskId(index as u32));
    let mut gpus: BTreeSet<u32> = graph
        .group_ranks(task.group)
        .iter()
        .map(|r| rank_gpu[r.index()])
        .collect();
    if matches!(
        task.kind,
        TaskKind::PipelineActivation | TaskKind::PipelineGradient
    ) {
        for next in graph.successors(TaskId(index as u32)) {
            let receiver = graph.task(next);
            if receiver.stage != task.stage && receiver.kind.is_compute() {
                gpus.extend(
                    graph
                        .group_ranks(receiver.group)
                        .iter()
                        .map(|r| rank_gpu[r.index()]),
                );
            }
        }
    }
    gpus.into_iter().collect()
}

/// Kahn's algorithm: a topological order in which, among ready tasks, the
/// one with the smallest (`priority`, id) comes first.
fn issue_order(
    graph: &TaskGraph,
    priority: impl Fn(usize) -> u64,
) -> Result<Vec<usize>, ExecuteError> {
    let n = graph.task_count();
    let mut missing: Vec<usize> = (0..n)
        .map(|i| graph.predecessors(TaskId(i as u32)).count())
        .collect();
    let mut ready: BinaryHeap<Reverse<(u64, usize)>> = (0..n)
        .filter(|&i| missing[i] == 0)
        .map(|i| Reverse((priority(i), i)))
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse((_, index))) = ready.pop() {
        order.push(index);
        for next in graph.successors(TaskId(index as u32)) {
            let next = next.index();
            missing[next] -= 1;
            if missing[next] == 0 {
                ready.push(Reverse((priority(next), next)));
            }
        }
    }
    if order.len() != n {
        return Err(ExecuteError::Graph(format!(
            "{} of {n} tasks are on a cycle",
            n - order.len()
        )));
    }
    Ok(order)
}
