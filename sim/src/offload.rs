//! ZeRO-Offload lowering (Ren et al., USENIX ATC'21): the task graph of one
//! or several consecutive iterations with gradients, fp32 master weights and
//! Adam on the CPU.
//!
//! Placement (paper Sec. 4.1): fp16 parameters and activations stay on the
//! GPU; fp16 gradients go GPU→CPU, Adam runs on the CPU over fp32 master
//! weights, momentum and variance, and the updated fp16 parameters come back.
//! Per iteration, on every rank:
//! - forward (and recompute) passes as in [`crate::lowering`] (pp must be 1);
//! - each backward pass is split into gradient *buckets* of whole layers
//!   (about `bucket_params` parameters; the head is in the first bucket, the
//!   embedding and final LayerNorm in the last). After each bucket's kernels,
//!   its gradients are offloaded on the `pcie_d2h` stream while the backward
//!   goes on. With d > 1 (ZeRO-2) the bucket is first reduce-scattered over
//!   the data-parallel group (DP stream) and each rank copies only its 1/d
//!   shard. With m > 1 microbatches every backward offloads its gradients
//!   (DeepSpeed accumulates them on the CPU), so D2H bytes are m·2P/d;
//! - CPU Adam over the rank's shard in tiles of [`CPU_ADAM_TILE_PARAMS`] on
//!   the `cpu` stream, each tile's fp16 parameters copied back on `pcie_h2d`
//!   while the next tile is updated (DeepSpeed's tiled `adam_update_copy`);
//! - with d > 1, an all-gather of the fp16 parameters over the data-parallel
//!   group after every rank's last tile.
//!
//! Iterations and the delayed parameter update (paper Sec. 4.3): iteration
//! k's first forward waits for the parameters updated after iteration k−1;
//! with DPU, after `dpu_warmup_iterations` undelayed ones, it waits only for
//! those of iteration k−2, so the CPU step of k−1 overlaps the forward and
//! backward of k. On the data-parallel stream a delayed all-gather is ordered
//! after the next iteration's reduce-scatters (one NCCL communicator runs in
//! issue order; the parameters are issued after that backward).
//!
//! Not modelled: the global gradient-norm reduction before the CPU step, CPU
//! gradient accumulation time for m > 1. Under `--contention` the PCIe copies
//! and ZeRO-2 collectives run as fabric flows (`crate::network::FabricFlowPlanner`).

use crate::ids::{Rank, TaskId};
use crate::memory::parameters_on_rank;
use crate::placement::Placement;
use crate::scenario::{Recompute, Scenario};
use crate::schedule::{Pass, PipelineSchedule};
use crate::task::{StreamKind, Task, TaskKind, NO_MICROBATCH};
use crate::task_graph::{
    ComputePass, Dependency, PcieDirection, TaskGraph, TaskGraphBuilder, Work,
};
use crate::tensor_pass::{
    backward_buckets, emit_pass, layers_per_bucket, PassPiece, Tail, TensorGroup,
};
use models::formulas;

/// Parameters per CPU Adam tile: DeepSpeed's `TILE` (128 Mi elements) in
/// `csrc/includes/cpu_adam.h`; each tile is copied to the GPU as soon as it is updated.
pub const CPU_ADAM_TILE_PARAMS: u64 = 128 * 1024 * 1024;

/// fp16 bytes per parameter (gradients down, parameters up).
const FP16_BYTES: u64 = 2;

/// A gradient bucket: consecutive layers of the backward pass (in backward order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub layers: u32,
    /// Holds the output head's backward (the first bucket).
    pub head: bool,
    /// Holds the embedding's backward (the last bucket).
    pub embedding: bool,
    /// Gradient parameters of one rank in this bucket.
    pub params: u64,
    /// Parameters of the bucket this rank offloads and updates: params/d, rounded up (ZeRO-2 padding).
    pub shard_params: u64,
}

/// How a scenario's ZeRO-Offload step is cut up, per rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadPlan {
    /// Parameters one rank holds in fp16 (its 1/t of the model).
    pub params_per_rank: u64,
    /// Buckets in backward order.
    pub buckets: Vec<Bucket>,
    /// Parameters this rank offloads and updates per step (sum of bucket shards).
    pub shard_params: u64,
    /// CPU Adam tiles of the shard, in parameters.
    pub tiles: Vec<u64>,
    /// GPUs of the job on one node (they share the host's cores and memory).
    pub gpus_per_node_in_use: u32,
    /// GPUs of the job behind one PCIe host link.
    pub pcie_sharing_gpus: u32,
}

impl OffloadPlan {
    /// The plan for a scenario (pp must be 1; `bucket_params` from its offload options).
    pub fn new(scenario: &Scenario) -> OffloadPlan {
        let layout = &scenario.layout;
        let model = &scenario.model;
        let (t, d) = (layout.tensor_parallel as u64, layout.data_parallel as u64);
        let bucket_target = scenario
            .options
            .offload
            .map(|o| o.bucket_params)
            .unwrap_or(crate::scenario::DEFAULT_OFFLOAD_BUCKET_PARAMS);
        let params_per_rank = parameters_on_rank(model, layout, 0);
        let layer_params = formulas::layer_parameters(model) / t;
        let layers = model.layers as u32;
        let per_bucket = layers_per_bucket(bucket_target, layer_params, layers);
        let mut buckets: Vec<Bucket> = backward_buckets(layers, per_bucket, true, true)
            .into_iter()
            .map(|b| Bucket {
                layers: b.layers,
                head: b.head,
                embedding: b.embedding,
                params: b.layers as u64 * layer_params,
                shard_params: 0,
            })
            .collect();
        let others: u64 = buckets.iter().map(|b| b.params).sum::<u64>()
            - buckets.last().expect("non-empty").params;
        let last = buckets.last_mut().expect("non-empty");
        last.params = params_per_rank - others;
        for bucket in &mut buckets {
            bucket.shard_params = bucket.params.div_ceil(d);
        }
        let shard_params: u64 = buckets.iter().map(|b| b.shard_params).sum();
        let mut tiles = Vec::new();
        let mut left = shard_params;
        while left > 0 {
            let tile = left.min(CPU_ADAM_TILE_PARAMS);
            tiles.push(tile);
            left -= tile;
        }
        let gpus_per_node_in_use = layout
            .gpus()
            .min(scenario.topology.node.gpus_per_node)
            .max(1);
        OffloadPlan {
            params_per_rank,
            buckets,
            shard_params,
            tiles,
            gpus_per_node_in_use,
            pcie_sharing_gpus: scenario
                .topology
                .pcie
                .gpus_per_host_link
                .clamp(1, gpus_per_node_in_use),
        }
    }

    /// fp16 gradient bytes this rank copies to the CPU per backward pass.
    pub fn device_to_host_bytes_per_backward(&self) -> u64 {
        self.shard_params * FP16_BYTES
    }

    /// fp16 parameter bytes this rank receives from the CPU per step.
    pub fn host_to_device_bytes_per_step(&self) -> u64 {
        self.shard_params * FP16_BYTES
    }

    /// The largest bucket's gradient parameters (the GPU buffers hold two of them).
    pub fn largest_bucket_params(&self) -> u64 {
        self.buckets.iter().map(|b| b.params).max().unwrap_or(0)
    }
}

/// Mutable lowering state shared by the helpers below.
struct Lowering<'a> {
    scenario: &'a Scenario,
    plan: OffloadPlan,
    placement: Placement,
    builder: TaskGraphBuilder,
    /// Each data-parallel replica's tensor group (by data index).
    tensor_groups: Vec<TensorGroup>,
    /// Compute-stream tail of each tensor group (by data index).
    compute_tails: Vec<Option<Tail>>,
    /// Last task on each rank's D2H, CPU and H2D streams (by rank).
    last_d2h: Vec<Option<TaskId>>,
    last_cpu: Vec<Option<TaskId>>,
    last_h2d: Vec<Option<TaskId>>,
    /// Last task on each data group's DP stream (by tensor index).
    last_dp: Vec<Option<TaskId>>,
    /// Per iteration, the task each rank waits on before using its updated parameters.
    params_ready: Vec<Vec<Option<TaskId>>>,
}

impl Lowering<'_> {
    fn t(&self) -> u32 {
        self.scenario.layout.tensor_parallel
    }

    fn d(&self) -> u32 {
        self.scenario.layout.data_parallel
    }

    fn rank(&self, data_index: u32, tensor_index: u32) -> Rank {
        self.placement.tensor_group(0, data_index)[tensor_index as usize]
    }

    /// A task on one rank.
    fn rank_task(
        &mut self,
        rank: Rank,
        kind: TaskKind,
        stream: StreamKind,
        work: Work,
        microbatch: u32,
        iteration: u16,
    ) -> TaskId {
        let group = self.builder.group(&[rank]);
        let work = self.builder.work(work);
        self.builder.add_task(Task {
            kind,
            stream,
            chunk: 0,
            stage: 0,
            microbatch,
            group,
            work,
            iteration,
        })
    }

    /// One pass (or one bucket of a backward) on every tensor rank of a
    /// tensor group, plus its TP all-reduces when t > 1; the compute tasks
    /// also wait for `waits_for` (by rank) when given.
    fn add_pass(&mut self, data_index: u32, piece: PassPiece, waits_for: &[Option<TaskId>]) {
        let first = emit_pass(
            &mut self.builder,
            &self.tensor_groups[data_index as usize],
            piece,
            &mut self.compute_tails[data_index as usize],
            &mut Vec::new(),
        );
        for tensor_index in 0..self.t() {
            let rank = self.rank(data_index, tensor_index);
            if let Some(ready) = waits_for.get(rank.index()).copied().flatten() {
                self.builder
                    .add_edge(ready, TaskId(first.0 + tensor_index), Dependency::Data);
            }
        }
    }

    /// A group task over the data-parallel group of `tensor_index`, after the DP stream's last task.
    fn data_parallel_task(
        &mut self,
        tensor_index: u32,
        kind: TaskKind,
        work: Work,
        microbatch: u32,
        iteration: u16,
    ) -> TaskId {
        let ranks = self.placement.data_group(0, tensor_index);
        let group = self.builder.group(&ranks);
        let work = self.builder.work(work);
        let id = self.builder.add_task(Task {
            kind,
            stream: StreamKind::DataParallel,
            chunk: 0,
            stage: 0,
            microbatch,
            group,
            work,
            iteration,
        });
        if let Some(previous) = self.last_dp[tensor_index as usize].replace(id) {
            self.builder
                .add_edge(previous, id, Dependency::ProgramOrder);
        }
        id
    }

    /// Offloads one bucket's gradients just produced by every tensor group.
    fn offload_bucket(&mut self, bucket: Bucket, microbatch: u32, iteration: u16) {
        let (t, d) = (self.t(), self.d());
        let sources: Vec<Vec<TaskId>> = (0..t)
            .map(|tensor_index| {
                if d > 1 {
                    let ranks = self.placement.data_group(0, tensor_index);
                    let nodes = self.placement.nodes_spanned(&ranks);
                    let reduce_scatter = self.data_parallel_task(
                        tensor_index,
                        TaskKind::DataParallelReduceScatter,
                        Work::DataParallelReduceScatter {
                            bytes: bucket.params * FP16_BYTES,
                            group_size: d,
                            nodes,
                        },
                        microbatch,
                        iteration,
                    );
                    for data_index in 0..d {
                        let tail =
                            self.compute_tails[data_index as usize].expect("bucket computed");
                        self.builder.add_edge(
                            tail.of(tensor_index),
                            reduce_scatter,
                            Dependency::Data,
                        );
                    }
                    vec![reduce_scatter; d as usize]
                } else {
                    let tail = self.compute_tails[0].expect("bucket computed");
                    vec![tail.of(tensor_index)]
                }
            })
            .collect();
        let work = Work::PcieTransfer {
            direction: PcieDirection::DeviceToHost,
            bytes: bucket.shard_params * FP16_BYTES,
            sharing_gpus: self.plan.pcie_sharing_gpus,
        };
        for data_index in 0..d {
            for tensor_index in 0..t {
                let rank = self.rank(data_index, tensor_index);
                let copy = self.rank_task(
                    rank,
                    TaskKind::PcieDeviceToHost,
                    StreamKind::PcieDeviceToHost,
                    work.clone(),
                    microbatch,
                    iteration,
                );
                let source = sources[tensor_index as usize][data_index as usize];
                self.builder.add_edge(source, copy, Dependency::Data);
                if let Some(previous) = self.last_d2h[rank.index()].replace(copy) {
                    self.builder
                        .add_edge(previous, copy, Dependency::ProgramOrder);
                }
            }
        }
    }

    /// CPU Adam tiles and their uploads on every rank.
    fn optimizer_step(&mut self, iteration: u16) {
        let tiles = self.plan.tiles.clone();
        let step_params = self.plan.shard_params;
        let sharing_gpus = self.plan.gpus_per_node_in_use;
        for data_index in 0..self.d() {
            for tensor_index in 0..self.t() {
                let rank = self.rank(data_index, tensor_index);
                let gradients = self.last_d2h[rank.index()];
                for &tile in &tiles {
                    let adam = self.rank_task(
                        rank,
                        TaskKind::CpuAdam,
                        StreamKind::Cpu,
                        Work::CpuAdam {
                            params: tile,
                            step_params,
                            sharing_gpus,
                        },
                        NO_MICROBATCH,
                        iteration,
                    );
                    if let Some(gradients) = gradients {
                        self.builder.add_edge(gradients, adam, Dependency::Data);
                    }
                    if let Some(previous) = self.last_cpu[rank.index()].replace(adam) {
                        self.builder
                            .add_edge(previous, adam, Dependency::ProgramOrder);
                    }
                    let upload = self.rank_task(
                        rank,
                        TaskKind::PcieHostToDevice,
                        StreamKind::PcieHostToDevice,
                        Work::PcieTransfer {
                            direction: PcieDirection::HostToDevice,
                            bytes: tile * FP16_BYTES,
                            sharing_gpus: self.plan.pcie_sharing_gpus,
                        },
                        NO_MICROBATCH,
                        iteration,
                    );
                    self.builder.add_edge(adam, upload, Dependency::Data);
                    if let Some(previous) = self.last_h2d[rank.index()].replace(upload) {
                        self.builder
                            .add_edge(previous, upload, Dependency::ProgramOrder);
                    }
                }
                if self.d() == 1 {
                    self.params_ready[iteration as usize][rank.index()] =
                        self.last_h2d[rank.index()];
                }
            }
        }
    }

    /// ZeRO-2 all-gather of the updated parameters of `iteration` (d > 1).
    fn gather_parameters(&mut self, iteration: u16) {
        let d = self.d();
        for tensor_index in 0..self.t() {
            let ranks = self.placement.data_group(0, tensor_index);
            let nodes = self.placement.nodes_spanned(&ranks);
            let gather = self.data_parallel_task(
                tensor_index,
                TaskKind::DataParallelAllGather,
                Work::DataParallelAllGather {
                    bytes: self.plan.shard_params * d as u64 * FP16_BYTES,
                    group_size: d,
                    nodes,
                },
                NO_MICROBATCH,
                iteration,
            );
            for rank in ranks {
                let uploaded = self.last_h2d[rank.index()].expect("every rank uploads a tile");
                self.builder.add_edge(uploaded, gather, Dependency::Data);
                self.params_ready[iteration as usize][rank.index()] = Some(gather);
            }
        }
    }
}

/// Which update iteration `k`'s first forward waits for, if any.
fn awaited_update(k: u32, delayed_update: bool, warmup: u32) -> Option<u32> {
    if k == 0 {
        None
    } else if !delayed_update || k <= warmup {
        Some(k - 1)
    } else {
        k.checked_sub(2)
    }
}

/// Builds the task graph of `scenario.iterations` consecutive ZeRO-Offload iterations.
///
/// Panics if the scenario has no offload options or pp > 1 (validation rejects that).
pub fn lower(scenario: &Scenario, schedule: &PipelineSchedule) -> TaskGraph {
    let offload = scenario.options.offload.expect("an offload scenario");
    assert_eq!(
        scenario.layout.pipeline_parallel, 1,
        "validated: pp = 1 under ZeRO-Offload"
    );
    let layout = scenario.layout;
    let n_ranks = layout.gpus() as usize;
    let plan = OffloadPlan::new(scenario);
    let placement = Placement::new(layout, scenario.topology.node.gpus_per_node);
    let mut builder = TaskGraphBuilder::default();
    let tensor_groups = (0..layout.data_parallel)
        .map(|data_index| TensorGroup::new(&mut builder, &placement, 0, data_index))
        .collect();
    let mut state = Lowering {
        scenario,
        placement,
        builder,
        tensor_groups,
        compute_tails: vec![None; layout.data_parallel as usize],
        last_d2h: vec![None; n_ranks],
        last_cpu: vec![None; n_ranks],
        last_h2d: vec![None; n_ranks],
        last_dp: vec![None; layout.tensor_parallel as usize],
        params_ready: vec![vec![None; n_ranks]; scenario.iterations as usize],
        plan,
    };
    let recompute = scenario.recompute != Recompute::None;
    let layers = scenario.model.layers as u32;
    let buckets = state.plan.buckets.clone();
    let d = layout.data_parallel;
    // A delayed all-gather waiting to be issued after the next iteration's reduce-scatters.
    let mut deferred_gather: Option<u16> = None;

    for k in 0..scenario.iterations {
        let iteration = k as u16;
        let awaited = awaited_update(k, offload.delayed_update, offload.dpu_warmup_iterations)
            .map(|update| state.params_ready[update as usize].clone())
            .unwrap_or_default();
        let mut first_pass = true;
        for action in &schedule.actions[0] {
            let microbatch = action.microbatch;
            match action.pass {
                Pass::Forward => {
                    for data_index in 0..d {
                        let waits: &[Option<TaskId>] = if first_pass { &awaited } else { &[] };
                        state.add_pass(
                            data_index,
                            PassPiece {
                                pass: ComputePass::Forward,
                                chunk: 0,
                                microbatch,
                                iteration,
                                layers,
                                embedding: true,
                                head: true,
                            },
                            waits,
                        );
                    }
                    first_pass = false;
                }
                Pass::Backward => {
                    if recompute {
                        for data_index in 0..d {
                            state.add_pass(
                                data_index,
                                PassPiece {
                                    pass: ComputePass::Recompute,
                                    chunk: 0,
                                    microbatch,
                                    iteration,
                                    layers,
                                    embedding: false,
                                    head: false,
                                },
                                &[],
                            );
                        }
                    }
                    for &bucket in &buckets {
                        for data_index in 0..d {
                            state.add_pass(
                                data_index,
                                PassPiece {
                                    pass: ComputePass::Backward,
                                    chunk: 0,
                                    microbatch,
                                    iteration,
                                    layers: bucket.layers,
                                    embedding: bucket.embedding,
                                    head: bucket.head,
                                },
                                &[],
                            );
                        }
                        state.offload_bucket(bucket, microbatch, iteration);
                    }
                }
            }
        }
        if let Some(previous) = deferred_gather.take() {
            state.gather_parameters(previous);
        }
        state.optimizer_step(iteration);
        if d > 1 {
            // Delayed updates are awaited two iterations later; issue their
            // all-gather after the next iteration's reduce-scatters.
            let delayed = offload.delayed_update && k >= offload.dpu_warmup_iterations;
            if delayed && k + 1 < scenario.iterations {
                deferred_gather = Some(iteration);
            } else {
                state.gather_parameters(iteration);
            }
        }
    }
    state.builder.finish(layout.gpus())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ScenarioFile;

    fn scenario(dp: u32, tp: u32, bucket_params: u64) -> Scenario {
        ScenarioFile {
            model: Some("gpt2-10b".into()),
            topology: Some("dgx2-v100".into()),
            tp: Some(tp),
            pp: Some(1),
            dp: Some(dp),
            microbatch_size: Some(10),
            global_batch: Some(10 * dp),
            options: crate::scenario::TrainingOptionsFile {
                zero_offload: Some(true),
                offload_bucket_params: Some(bucket_params),
                ..Default::default()
            },
            ..ScenarioFile::default()
        }
        .resolve()
        .unwrap()
    }

    #[test]
    fn buckets_cover_every_layer_and_parameter_once() {
        for (dp, tp) in [(1, 1), (16, 1), (4, 4)] {
            let scenario = scenario(dp, tp, 500_000_000);
            let plan = OffloadPlan::new(&scenario);
            assert_eq!(
                plan.buckets.iter().map(|b| b.layers as u64).sum::<u64>(),
                scenario.model.layers
            );
            assert_eq!(
                plan.buckets.iter().map(|b| b.params).sum::<u64>(),
                plan.params_per_rank
            );
            assert!(plan.buckets[0].head && plan.buckets.last().unwrap().embedding);
            assert_eq!(plan.tiles.iter().sum::<u64>(), plan.shard_params);
            assert!(plan.shard_params * dp as u64 >= plan.params_per_rank);
        }
        // 10B: a layer has ~201M parameters, so 500M buckets hold two layers.
        assert_eq!(
            OffloadPlan::new(&scenario(1, 1, 500_000_000)).buckets[0].layers,
            2
        );
        // A tiny bucket still holds one layer.
        assert_eq!(OffloadPlan::new(&scenario(1, 1, 1)).buckets.len(), 50);
    }

    #[test]
    fn dgx2_links_are_shared_by_two_gpus_and_cores_by_the_node() {
        let plan = OffloadPlan::new(&scenario(16, 1, 500_000_000));
        assert_eq!((plan.pcie_sharing_gpus, plan.gpus_per_node_in_use), (2, 16));
        let plan = OffloadPlan::new(&scenario(1, 1, 500_000_000));
        assert_eq!((plan.pcie_sharing_gpus, plan.gpus_per_node_in_use), (1, 1));
    }

    #[test]
    fn delayed_update_waits_one_iteration_longer_after_warm_up() {
        let waits: Vec<Option<u32>> = (0..5).map(|k| awaited_update(k, true, 1)).collect();
        assert_eq!(waits, vec![None, Some(0), Some(0), Some(1), Some(2)]);
        let waits: Vec<Option<u32>> = (0..3).map(|k| awaited_update(k, false, 1)).collect();
        assert_eq!(waits, vec![None, Some(0), Some(1)]);
    }
}
