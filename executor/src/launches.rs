//! What one task launches on the GPU, per execution mode.
//!
//! Real mode:
//! - a compute pass: its kernels from [`sim::cost::pass_steps`] — every GEMM
//!   as a cuBLAS call of the same shape, every memory-bound kernel as a
//!   device-to-device copy moving the same HBM bytes (a copy of `n` bytes
//!   reads `n` and writes `n`, so it copies half the kernel's bytes);
//! - the optimizer step: a memory-bound kernel of its bytes (a copy, as above);
//! - communication (tensor all-reduces of a pass, a pipeline transfer, the
//!   data-parallel all-reduce): an NCCL call when the ranks involved sit on
//!   several devices, else a device-to-device copy of the payload;
//! - the software stack's host costs (host-issue tasks): spins of their
//!   modeled duration, since the executor's own issue is not the framework's.
//!
//! Synthetic mode: one spin of the simulator's duration for every task whose
//! duration is nonzero (nothing for zero-cost work).

use crate::mode::ExecutionMode;
use models::ops::{GemmLayout, GemmShape, KernelClass, Step};
use serde::Serialize;
use sim::cost::{optimizer_step, pass_steps_of, WorkCost};
use sim::scenario::Scenario;
use sim::task_graph::Work;

/// The NCCL operation of a [`Launch::Collective`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveKind {
    /// Sum all-reduce of `bytes` per rank.
    AllReduce,
    /// A point-to-point transfer of `bytes` (pipeline send/receive).
    SendReceive,
    /// Reduce-scatter of `bytes` per rank (the distributed optimizer's gradients).
    ReduceScatter,
    /// All-gather producing `bytes` per rank (the distributed optimizer's parameters).
    AllGather,
    /// All-to-all of `bytes` sent per rank (a mixture of experts' token
    /// dispatch and combine): `ncclGroupStart`, an `ncclSend` and `ncclRecv`
    /// of bytes/n per peer, `ncclGroupEnd` (cudarc's `Comm::send`/`recv`).
    AllToAll,
}

/// One launch on the task's stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Launch {
    /// A cuBLAS fp16 GEMM (fp32 accumulate) of this row-major shape, called
    /// in the operand layout Megatron calls it in.
    Gemm {
        shape: GemmShape,
        layout: GemmLayout,
    },
    /// A device-to-device copy of `bytes` (2 × bytes through HBM).
    DeviceCopy { bytes: u64 },
    /// A single-block kernel spinning on `%globaltimer` for this long.
    Spin { duration_ns: u64 },
    /// An NCCL collective over the devices `gpus`.
    Collective {
        op: CollectiveKind,
        bytes: u64,
        gpus: Vec<u32>,
    },
}

/// The launches of one task doing `work`, whose ranks (and receivers) sit on `gpus`.
pub fn work_launches(
    scenario: &Scenario,
    work: &Work,
    cost: &WorkCost,
    mode: ExecutionMode,
    gpus: &[u32],
) -> Vec<Launch> {
    if mode == ExecutionMode::Synthetic {
        let duration_ns = cost.duration.as_nanos();
        return if duration_ns == 0 {
            Vec::new()
        } else {
            vec![Launch::Spin { duration_ns }]
        };
    }
    let communication = |op: CollectiveKind, bytes: u64| -> Option<Launch> {
        if bytes == 0 {
            None
        } else if gpus.len() > 1 {
            Some(Launch::Collective {
                op,
                bytes,
                gpus: gpus.to_vec(),
            })
        } else {
            Some(Launch::DeviceCopy { bytes })
        }
    };
    match *work {
        // FP8 scenarios are refused by `plan` before launches are built, so
        // no FP8 weight cast or FP8 GEMM reaches here.
        Work::Compute {
            pass,
            layers,
            dense_layers,
            embedding,
            head,
            ..
        } => pass_steps_of(scenario, pass, layers, dense_layers, embedding, head)
            .into_iter()
            .filter_map(|step| match step {
                Step::Kernel(kernel) => match kernel.class {
                    KernelClass::Gemm { shape, layout }
                    | KernelClass::Fp8Gemm { shape, layout } => {
                        Some(Launch::Gemm { shape, layout })
                    }
                    KernelClass::MemoryBound => memory_bound(kernel.bytes),
                    // Refused for real runs by `plan` (no real kernel).
                    KernelClass::FusedAttention(_) => None,
                },
                Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => None,
            })
            .collect(),
        Work::TensorAllReduce {
            pass,
            layers,
            dense_layers,
            embedding,
            head,
            ..
        } => pass_steps_of(scenario, pass, layers, dense_layers, embedding, head)
            .into_iter()
            .filter_map(|step| match step {
                Step::TensorAllReduce { bytes, .. } => {
                    communication(CollectiveKind::AllReduce, bytes)
                }
                Step::Kernel(_) | Step::ExpertAllToAll { .. } | Step::HostSync => None,
            })
            .collect(),
        Work::ExpertAllToAll {
            pass,
            layers,
            dense_layers,
            embedding,
            head,
            ..
        } => pass_steps_of(scenario, pass, layers, dense_layers, embedding, head)
            .into_iter()
            .flat_map(|step| match step {
                // Under expert tensor parallelism each all-to-all goes with
                // an all-gather (or reduce-scatter, planned as its equal)
                // over the expert tensor group.
                Step::ExpertAllToAll {
                    bytes,
                    expert_tensor_bytes,
                } => [
                    communication(CollectiveKind::AllToAll, bytes),
                    communication(CollectiveKind::AllGather, expert_tensor_bytes),
                ],
                _ => [None, None],
            })
            .flatten()
            .collect(),
        Work::PipelineTransfer { bytes, .. } => communication(CollectiveKind::SendReceive, bytes)
            .into_iter()
            .collect(),
        Work::DataParallelAllReduce { bytes, .. } => {
            communication(CollectiveKind::AllReduce, bytes)
                .into_iter()
                .collect()
        }
        Work::GradientCopy { bytes, kernels } => (0..kernels)
            .map(|_| Launch::DeviceCopy { bytes: bytes / 2 })
            .collect(),
        Work::OptimizerStep { params } => memory_bound(
            params as f64
                * optimizer_step::optimizer_bytes_per_param(
                    scenario.options.fp32_main_grads(),
                    scenario.options.optimizer,
                ),
        )
        .into_iter()
        .collect(),
        // The software stack's host costs (issuing a pass's kernels, a
        // synchronising call, the optimizer's host loop) are the framework's,
        // not this executor's, which queues everything behind a gate: they
        // run as spins of their modeled duration on the rank's host stream,
        // so the GPU work that waits on them waits as it would for the host.
        Work::HostIssuePass { .. } | Work::HostCall | Work::HostOptimizer => {
            let duration_ns = cost.duration.as_nanos();
            if duration_ns == 0 {
                Vec::new()
            } else {
                vec![Launch::Spin { duration_ns }]
            }
        }
        // The distributed optimizer's collectives (ZeRO-Offload's too, but
        // `plan` refuses offload scenarios before launches are built).
        Work::DataParallelReduceScatter { bytes, .. } => {
            communication(CollectiveKind::ReduceScatter, bytes)
                .into_iter()
                .collect()
        }
        Work::DataParallelAllGather { bytes, .. } => {
            communication(CollectiveKind::AllGather, bytes)
                .into_iter()
                .collect()
        }
        // 1-bit Adam: the signs' all-to-all and all-gather (`sim::cost::onebit`).
        Work::OneBitAllReduce {
            elements,
            group_size,
            ..
        } => {
            let signs = sim::cost::onebit::sign_bytes(elements, group_size);
            [
                communication(CollectiveKind::AllToAll, signs),
                communication(CollectiveKind::AllGather, signs),
            ]
            .into_iter()
            .flatten()
            .collect()
        }
        // PowerSGD: its three all-reduces (`sim::cost::powersgd`).
        Work::PowerSgdAllReduce {
            elements,
            matrix_elements,
            p_elements,
            q_elements,
            element_bytes,
            ..
        } => [elements - matrix_elements, p_elements, q_elements]
            .into_iter()
            .filter_map(|count| {
                communication(
                    CollectiveKind::AllReduce,
                    count.saturating_mul(element_bytes),
                )
            })
            .collect(),
        // ZeRO++ qgZ: each of its two all-to-alls (`sim::cost::zeropp`).
        Work::DataParallelAllToAll { bytes, .. } => communication(CollectiveKind::AllToAll, bytes)
            .into_iter()
            .collect(),
        Work::PcieTransfer { .. } | Work::CpuAdam { .. } => Vec::new(),
        // `plan` refuses pair_overlap before launches are built.
        Work::ComputeBeside { .. } => Vec::new(),
    }
}

/// A memory-bound kernel moving `hbm_bytes` (read + written) as a copy of half
/// of them, rounded up; nothing for zero bytes.
fn memory_bound(hbm_bytes: f64) -> Option<Launch> {
    let bytes = (hbm_bytes / 2.0).ceil() as u64;
    (bytes > 0).then_some(Launch::DeviceCopy { bytes })
}
