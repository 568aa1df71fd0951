//! Lowering's first phase under ZeRO-Offload (Ren et al., USENIX ATC'21):
//! the program of one or several consecutive iterations with gradients, fp32
//! master weights and Adam on the CPU. The same passes as the pipeline
//! program ([`super::pipeline`]); what differs is what follows each backward
//! bucket and the optimizer step ([`crate::plan::offload_plan`] cuts them up).
//!
//! Placement (paper Sec. 4.1): fp16 parameters and activations stay on the
//! GPU; fp16 gradients go GPU→CPU, Adam runs on the CPU over fp32 master
//! weights, momentum and variance, and the updated fp16 parameters come back.
//! Per iteration, on every rank:
//! - forward (and recompute) passes as in the pipeline program (pp must be 1);
//! - each backward pass is split into gradient *buckets* of whole layers
//!   (about `bucket_params` parameters; the head is in the first bucket, the
//!   embedding and final LayerNorm in the last). After each bucket's kernels,
//!   its gradients are offloaded on the `pcie_d2h` stream while the backward
//!   goes on. With d > 1 (ZeRO-2) the bucket is first reduce-scattered over
//!   the data-parallel group (DP stream) and each rank copies only its 1/d
//!   shard. With m > 1 microbatches every backward offloads its gradients
//!   (DeepSpeed accumulates them on the CPU), so D2H bytes are m·2P/d;
//! - CPU Adam over the rank's shard in tiles of [`scenario::bucket_sizes::CPU_ADAM_TILE_PARAMS`] on
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

use super::passes::PassPiece;
use super::program::{Program, StepId, TensorGroup, TensorGroupId, TensorRanks};
use crate::placement::Placement;
use crate::plan::offload_plan::{Bucket, OffloadPlan};
use crate::plan::Plan;
use models::ops::FP16_BYTES;
use scenario::{Recompute, Scenario};
use schedules::Pass;
use taskgraph::ids::Rank;
use taskgraph::task::{StreamKind, Task, TaskKind, NO_MICROBATCH};
use taskgraph::task_graph::{ComputePass, Dependency, PcieDirection, TaskGraphBuilder, Work};

/// What the program is being built from, and the steps later ones wait for.
struct OffloadProgram<'a> {
    scenario: &'a Scenario,
    plan: OffloadPlan,
    placement: Placement,
    builder: &'a mut TaskGraphBuilder,
    program: Program,
    /// Each data-parallel replica's tensor group (by data index).
    tensor_groups: Vec<TensorGroupId>,
    /// Last compute step of each replica (by data index).
    compute_tails: Vec<Option<StepId>>,
    /// Last gradient copy of each rank (by rank).
    last_d2h: Vec<Option<StepId>>,
    /// Last parameter upload of each rank (by rank).
    last_h2d: Vec<Option<StepId>>,
    /// Per iteration, the step each rank waits on before using its updated parameters.
    params_ready: Vec<Vec<Option<StepId>>>,
}

impl OffloadProgram<'_> {
    fn t(&self) -> u32 {
        self.scenario.layout.tensor_parallel.get()
    }

    fn d(&self) -> u32 {
        self.scenario.layout.data_parallel.get()
    }

    fn rank(&self, data_index: u32, tensor_index: u32) -> Rank {
        self.placement.tensor_group(0, data_index)[tensor_index as usize]
    }

    /// One pass (or one bucket of a backward) of replica `data_index`; it also
    /// waits for the steps in `waits_for` (by rank) when given.
    fn add_pass(&mut self, data_index: u32, piece: PassPiece, waits_for: &[Option<StepId>]) {
        let group = self.tensor_groups[data_index as usize];
        let step = self.program.pass(self.builder, group, piece);
        for tensor_index in 0..self.t() {
            let rank = self.rank(data_index, tensor_index);
            if let Some(ready) = waits_for.get(rank.index()).copied().flatten() {
                self.program.depend(ready, step, Dependency::Data);
            }
        }
        self.compute_tails[data_index as usize] = Some(step);
    }

    /// A collective over the data-parallel group of `tensor_index`.
    fn data_parallel_task(
        &mut self,
        tensor_index: u32,
        kind: TaskKind,
        work: Work,
        microbatch: u32,
        iteration: u16,
    ) -> StepId {
        let ranks = self.placement.data_group(0, tensor_index);
        let group = self.builder.group(&ranks);
        let work = self.builder.work(work);
        self.program.task(Task {
            kind,
            stream: StreamKind::DataParallel,
            chunk: 0,
            stage: 0,
            microbatch,
            group,
            work,
            iteration,
        })
    }

    /// Offloads one bucket's gradients just produced by every replica.
    fn offload_bucket(&mut self, bucket: Bucket, microbatch: u32, iteration: u16) {
        let (t, d) = (self.t(), self.d());
        // Where each tensor index's gradients come from: the ZeRO-2
        // reduce-scatter over its data-parallel group, or the pass itself.
        let sources: Vec<Option<StepId>> = (0..t)
            .map(|tensor_index| {
                (d > 1).then(|| {
                    let ranks = self.placement.data_group(0, tensor_index);
                    let spread = self.placement.spread(&ranks);
                    let reduce_scatter = self.data_parallel_task(
                        tensor_index,
                        TaskKind::DataParallelReduceScatter,
                        Work::DataParallelReduceScatter {
                            bytes: bucket.params * FP16_BYTES,
                            group_size: d,
                            spread,
                        },
                        microbatch,
                        iteration,
                    );
                    for data_index in 0..d {
                        let tail =
                            self.compute_tails[data_index as usize].expect("bucket computed");
                        self.program.depend(tail, reduce_scatter, Dependency::Data);
                    }
                    reduce_scatter
                })
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
                let copy = self.program.rank_task(
                    self.builder,
                    rank,
                    TaskKind::PcieDeviceToHost,
                    StreamKind::PcieDeviceToHost,
                    work.clone(),
                    0,
                    microbatch,
                    iteration,
                );
                let source = sources[tensor_index as usize]
                    .or(self.compute_tails[data_index as usize])
                    .expect("bucket computed");
                self.program.depend(source, copy, Dependency::Data);
                self.last_d2h[rank.index()] = Some(copy);
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
                    let adam = self.program.rank_task(
                        self.builder,
                        rank,
                        TaskKind::CpuAdam,
                        StreamKind::Cpu,
                        Work::CpuAdam {
                            params: tile,
                            step_params,
                            sharing_gpus,
                        },
                        0,
                        NO_MICROBATCH,
                        iteration,
                    );
                    if let Some(gradients) = gradients {
                        self.program.depend(gradients, adam, Dependency::Data);
                    }
                    let upload = self.program.rank_task(
                        self.builder,
                        rank,
                        TaskKind::PcieHostToDevice,
                        StreamKind::PcieHostToDevice,
                        Work::PcieTransfer {
                            direction: PcieDirection::HostToDevice,
                            bytes: tile * FP16_BYTES,
                            sharing_gpus: self.plan.pcie_sharing_gpus,
                        },
                        0,
                        NO_MICROBATCH,
                        iteration,
                    );
                    self.program.depend(adam, upload, Dependency::Data);
                    self.last_h2d[rank.index()] = Some(upload);
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
            let spread = self.placement.spread(&ranks);
            let gather = self.data_parallel_task(
                tensor_index,
                TaskKind::DataParallelAllGather,
                Work::DataParallelAllGather {
                    bytes: self.plan.shard_params * d as u64 * FP16_BYTES,
                    group_size: d,
                    spread,
                },
                NO_MICROBATCH,
                iteration,
            );
            for rank in ranks {
                let uploaded = self.last_h2d[rank.index()].expect("every rank uploads a tile");
                self.program.depend(uploaded, gather, Dependency::Data);
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

/// The program of `scenario.iterations` consecutive ZeRO-Offload iterations.
///
/// Panics if the scenario has no offload options or pp > 1 (validation rejects that).
pub fn program(scenario: &Scenario, plan: &Plan, builder: &mut TaskGraphBuilder) -> Program {
    let schedule = &plan.schedule;
    let offload = scenario.options.offload.expect("an offload scenario");
    assert_eq!(
        scenario.layout.pipeline_parallel.get(),
        1,
        "validated: pp = 1 under ZeRO-Offload"
    );
    let layout = scenario.layout;
    let n_ranks = layout.gpus() as usize;
    let placement = plan.placement;
    let mut program = Program::default();
    let tensor_groups = (0..layout.data_parallel.get())
        .map(|data_index| {
            program.add_tensor_group(TensorGroup::new(
                builder,
                &placement,
                (0, data_index),
                TensorRanks::Each,
            ))
        })
        .collect();
    let mut state = OffloadProgram {
        scenario,
        plan: plan.offload().clone(),
        placement,
        builder,
        program,
        tensor_groups,
        compute_tails: vec![None; layout.data_parallel.get() as usize],
        last_d2h: vec![None; n_ranks],
        last_h2d: vec![None; n_ranks],
        params_ready: vec![vec![None; n_ranks]; scenario.iterations as usize],
    };
    let recompute = scenario.recompute != Recompute::None;
    let layers = scenario.model.layers as u32;
    let buckets = state.plan.buckets.clone();
    let d = layout.data_parallel.get();
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
            let piece = |pass, layers, embedding, head| PassPiece {
                pass,
                chunk: 0,
                microbatch,
                iteration,
                layers,
                // Mixtures of experts are refused under ZeRO-Offload.
                dense_layers: 0,
                first_layer: 0,
                embedding,
                head,
                // FP8 training is refused under ZeRO-Offload.
                fp8_weight_cast: false,
                // No host lane in ZeRO-Offload programs.
                segment: taskgraph::task_graph::WHOLE_PASS,
            };
            match action.pass {
                Pass::Forward => {
                    for data_index in 0..d {
                        let waits: &[Option<StepId>] = if first_pass { &awaited } else { &[] };
                        state.add_pass(
                            data_index,
                            piece(ComputePass::Forward, layers, true, true),
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
                                piece(ComputePass::Recompute, layers, false, false),
                                &[],
                            );
                        }
                    }
                    for &bucket in &buckets {
                        for data_index in 0..d {
                            state.add_pass(
                                data_index,
                                piece(
                                    ComputePass::Backward,
                                    bucket.layers,
                                    bucket.embedding,
                                    bucket.head,
                                ),
                                &[],
                            );
                        }
                        state.offload_bucket(bucket, microbatch, iteration);
                    }
                }
                Pass::InputGradient | Pass::WeightGradient | Pass::ForwardBackward => {
                    unreachable!("validation refuses split-backward schedules under ZeRO-Offload")
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
    state.program
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delayed_update_waits_one_iteration_longer_after_warm_up() {
        let waits: Vec<Option<u32>> = (0..5).map(|k| awaited_update(k, true, 1)).collect();
        assert_eq!(waits, vec![None, Some(0), Some(0), Some(1), Some(2)]);
        let waits: Vec<Option<u32>> = (0..3).map(|k| awaited_update(k, false, 1)).collect();
        assert_eq!(waits, vec![None, Some(0), Some(1)]);
    }
}
