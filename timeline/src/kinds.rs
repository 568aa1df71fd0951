//! What a task is, as every producer and consumer of a Timeline names it:
//! its kind, its communication class and the stream it occupies.

use serde::{Deserialize, Serialize};

/// What a task does, as reports and metrics see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// Forward pass of one model chunk for one microbatch.
    Forward,
    /// Recomputation of the forward pass before a backward (full recompute).
    Recompute,
    /// Backward pass of one model chunk for one microbatch.
    Backward,
    /// The blocking tensor-parallel all-reduces of one forward/recompute/backward.
    TensorAllReduce,
    /// Activations sent to the next pipeline stage.
    PipelineActivation,
    /// Gradients sent to the previous pipeline stage.
    PipelineGradient,
    /// Data-parallel gradient all-reduce of one stage's chunk.
    DataParallelAllReduce,
    /// The word embedding's gradient all-reduced between the first and the
    /// last pipeline stage (tied embedding and output layer), before the optimizer.
    EmbeddingAllReduce,
    /// The optimizer step on the GPU.
    OptimizerStep,
    /// ZeRO-2 reduce-scatter of one gradient bucket over the data-parallel group (ZeRO-Offload).
    DataParallelReduceScatter,
    /// ZeRO-2 all-gather of the updated fp16 parameters over the data-parallel group (ZeRO-Offload).
    DataParallelAllGather,
    /// fp16 gradients of one bucket copied GPU → CPU over PCIe (ZeRO-Offload).
    #[serde(rename = "pcie_d2h")]
    PcieDeviceToHost,
    /// Updated fp16 parameters of one tile copied CPU → GPU over PCIe (ZeRO-Offload).
    #[serde(rename = "pcie_h2d")]
    PcieHostToDevice,
    /// Adam on the CPU over one tile of fp32 master weights, momentum and variance (ZeRO-Offload).
    CpuAdam,
    /// The host thread issuing kernels and collective calls (Python, autograd,
    /// dispatcher, launch): the GPU cannot run what was not issued yet.
    HostIssue,
    /// The input-gradient half of a split backward (zero-bubble schedules,
    /// Qi et al. 2024): data-gradient GEMMs and the non-GEMM backward.
    BackwardInput,
    /// The weight-gradient half of a split backward: weight-gradient GEMMs
    /// (and their gradient accumulation), deferred by the schedule.
    BackwardWeight,
    /// The blocking expert-parallel all-to-alls (token dispatch and combine)
    /// of one forward/recompute/backward of a mixture-of-experts chunk.
    ExpertAllToAll,
    /// Memory-bound kernels over the gradients around the data-parallel
    /// all-reduce: local DDP's flatten, divide and copy back (Megatron-LM 2021)
    /// or its in-place divide of the contiguous buffer (2022).
    GradientCopy,
    /// Compression kernels around a compressed exchange: 1-bit Adam's sign
    /// compression and unpacking and PowerSGD's error feedback and factor
    /// products (compute stream), ZeRO++'s weight dequantization (compute
    /// stream) and its shard quantization and gradient quantize/reduce/
    /// dequantize kernels (data-parallel stream, where DeepSpeed runs them).
    Compression,
    /// Optimizer post-validation (Qi et al. 2024, Sec. 4; zero-bubble
    /// schedules): a stage's partially reduced gradient norm and inf/NaN
    /// flag, sent to the next stage before its optimizer step.
    NormExchange,
    /// Optimizer post-validation: the fully reduced norm and inf/NaN flag
    /// sent back to the previous stage, which validates its (already taken)
    /// step during the next iteration's warm-up.
    PostValidation,
}

impl TaskKind {
    pub const ALL: [TaskKind; 22] = [
        TaskKind::Forward,
        TaskKind::Recompute,
        TaskKind::Backward,
        TaskKind::TensorAllReduce,
        TaskKind::PipelineActivation,
        TaskKind::PipelineGradient,
        TaskKind::DataParallelAllReduce,
        TaskKind::EmbeddingAllReduce,
        TaskKind::OptimizerStep,
        TaskKind::DataParallelReduceScatter,
        TaskKind::DataParallelAllGather,
        TaskKind::PcieDeviceToHost,
        TaskKind::PcieHostToDevice,
        TaskKind::CpuAdam,
        TaskKind::HostIssue,
        TaskKind::BackwardInput,
        TaskKind::BackwardWeight,
        TaskKind::ExpertAllToAll,
        TaskKind::GradientCopy,
        TaskKind::Compression,
        TaskKind::NormExchange,
        TaskKind::PostValidation,
    ];

    /// Kernels that do math (the compute stream's useful work).
    pub fn is_compute(self) -> bool {
        matches!(
            self,
            TaskKind::Forward
                | TaskKind::Recompute
                | TaskKind::Backward
                | TaskKind::BackwardInput
                | TaskKind::BackwardWeight
                | TaskKind::OptimizerStep
                | TaskKind::GradientCopy
                | TaskKind::Compression
        )
    }

    /// The communication class, for exposed-communication metrics.
    pub fn communication_class(self) -> Option<CommClass> {
        match self {
            TaskKind::TensorAllReduce => Some(CommClass::Tensor),
            TaskKind::PipelineActivation
            | TaskKind::PipelineGradient
            | TaskKind::NormExchange
            | TaskKind::PostValidation => Some(CommClass::Pipeline),
            TaskKind::DataParallelAllReduce
            | TaskKind::EmbeddingAllReduce
            | TaskKind::DataParallelReduceScatter
            | TaskKind::DataParallelAllGather => Some(CommClass::DataParallel),
            TaskKind::PcieDeviceToHost | TaskKind::PcieHostToDevice | TaskKind::CpuAdam => {
                Some(CommClass::Offload)
            }
            TaskKind::HostIssue => Some(CommClass::Host),
            TaskKind::ExpertAllToAll => Some(CommClass::ExpertParallel),
            _ => None,
        }
    }

    /// Snake-case name as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Forward => "forward",
            TaskKind::Recompute => "recompute",
            TaskKind::Backward => "backward",
            TaskKind::TensorAllReduce => "tensor_all_reduce",
            TaskKind::PipelineActivation => "pipeline_activation",
            TaskKind::PipelineGradient => "pipeline_gradient",
            TaskKind::DataParallelAllReduce => "data_parallel_all_reduce",
            TaskKind::EmbeddingAllReduce => "embedding_all_reduce",
            TaskKind::OptimizerStep => "optimizer_step",
            TaskKind::DataParallelReduceScatter => "data_parallel_reduce_scatter",
            TaskKind::DataParallelAllGather => "data_parallel_all_gather",
            TaskKind::PcieDeviceToHost => "pcie_d2h",
            TaskKind::PcieHostToDevice => "pcie_h2d",
            TaskKind::CpuAdam => "cpu_adam",
            TaskKind::HostIssue => "host_issue",
            TaskKind::BackwardInput => "backward_input",
            TaskKind::BackwardWeight => "backward_weight",
            TaskKind::ExpertAllToAll => "expert_all_to_all",
            TaskKind::GradientCopy => "gradient_copy",
            TaskKind::Compression => "compression",
            TaskKind::NormExchange => "norm_exchange",
            TaskKind::PostValidation => "post_validation",
        }
    }
}

/// Communication classes reported separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommClass {
    Tensor,
    Pipeline,
    DataParallel,
    /// ZeRO-Offload traffic and work off the GPU: PCIe copies and the CPU optimizer.
    Offload,
    /// The host issuing work: compute idle while it runs is host-bound time.
    Host,
    /// Expert-parallel all-to-alls (token dispatch and combine).
    ExpertParallel,
}

/// A stream of a GPU: tasks on one (rank, stream) run one at a time, in program order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    /// Kernels, and the tensor-parallel all-reduces Megatron issues synchronously between them.
    Compute,
    /// Sends to the next pipeline stage.
    PipelineSendNext,
    /// Sends to the previous pipeline stage.
    PipelineSendPrevious,
    /// Data-parallel gradient communication.
    DataParallel,
    /// The GPU's PCIe host link, device → host direction (ZeRO-Offload gradients).
    #[serde(rename = "pcie_d2h")]
    PcieDeviceToHost,
    /// The GPU's PCIe host link, host → device direction (ZeRO-Offload parameters).
    #[serde(rename = "pcie_h2d")]
    PcieHostToDevice,
    /// This GPU's share of the host CPU cores (ZeRO-Offload's CPU Adam).
    Cpu,
    /// The host thread that issues this GPU's kernels and collective calls.
    Host,
    /// Expert-parallel all-to-alls run beside the compute stream (DualPipe's
    /// overlapped F&B pairs, `sim`'s `pair_overlap`).
    #[serde(rename = "ep")]
    ExpertParallel,
}

impl StreamKind {
    pub const ALL: [StreamKind; 9] = [
        StreamKind::Compute,
        StreamKind::PipelineSendNext,
        StreamKind::PipelineSendPrevious,
        StreamKind::DataParallel,
        StreamKind::PcieDeviceToHost,
        StreamKind::PcieHostToDevice,
        StreamKind::Cpu,
        StreamKind::Host,
        StreamKind::ExpertParallel,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            StreamKind::Compute => "compute",
            StreamKind::PipelineSendNext => "pp_send_next",
            StreamKind::PipelineSendPrevious => "pp_send_prev",
            StreamKind::DataParallel => "dp",
            StreamKind::PcieDeviceToHost => "pcie_d2h",
            StreamKind::PcieHostToDevice => "pcie_h2d",
            StreamKind::Cpu => "cpu",
            StreamKind::Host => "host",
            StreamKind::ExpertParallel => "ep",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offload_kinds_and_streams_serialise_as_reports_expect() {
        for (kind, name) in [
            (TaskKind::PcieDeviceToHost, "pcie_d2h"),
            (TaskKind::PcieHostToDevice, "pcie_h2d"),
            (TaskKind::CpuAdam, "cpu_adam"),
        ] {
            assert_eq!(kind.name(), name);
            assert_eq!(serde_json::to_value(kind).unwrap(), name);
            assert!(!kind.is_compute());
            assert_eq!(kind.communication_class(), Some(CommClass::Offload));
        }
        for stream in StreamKind::ALL {
            assert_eq!(StreamKind::ALL[stream.index()], stream);
        }
        for (stream, name) in [
            (StreamKind::PcieDeviceToHost, "pcie_d2h"),
            (StreamKind::PcieHostToDevice, "pcie_h2d"),
            (StreamKind::Cpu, "cpu"),
        ] {
            assert_eq!(stream.name(), name);
            assert_eq!(serde_json::to_value(stream).unwrap(), name);
        }
        for kind in TaskKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
    }
}
