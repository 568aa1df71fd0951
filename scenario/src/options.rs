//! Training options: the one declaration of every option a training run can
//! be simulated with, beyond the layout (t, p, d, v, b, B), schedule and
//! recompute mode.
//!
//! [`TrainingOptionsFile`] is the raw form (every key optional), shared by
//! the scenario file (flattened into [`crate::ScenarioFile`]), the sweep
//! space (flattened into its header) and the CLI (clap `flatten` in
//! `simulate`, `execute` and `sweep`): the doc comment of each field is both
//! its rustdoc and its `--help` text. [`TrainingOptionsFile::resolve`]
//! validates it into [`TrainingOptions`], which the lowering, the cost model
//! and titles read.
//!
//! Adding an option: a field in both structs below, its default and checks
//! in `resolve`, its label in `title_suffix` if titles should show it, the
//! code that uses it, and a test.

pub use crate::activation_compression::CompressionRatio;
use crate::moe_dispatcher::MoeDispatcher;
use crate::offload::{Offload, DEFAULT_DPU_WARMUP_ITERATIONS, DEFAULT_OFFLOAD_BUCKET_PARAMS};
pub use crate::optimizer::Optimizer;
pub use crate::precision::Precision;
use crate::userbuffers::UserbuffersConfig;
pub use crate::zero_stage::ZeroStage;
pub use crate::zeropp::ZeroPlusPlus;
use serde::{Deserialize, Serialize};

/// Iterations simulated by default with post-validation: the first (its
/// stages start (p−1)·F apart from cold), the measured one, and one whose
/// warm-up overlaps the measured one's end (as the next iteration's forwards
/// on the first stages run while the last stages finish), so the measured
/// one is the steady state ([`timeline::metrics`]'s window).
pub const POST_VALIDATION_ITERATIONS: u32 = 3;

/// Largest warm-up before the delayed update: warm-up + 3 iterations must fit
/// the 65,535 iterations a simulation can hold.
pub const MAX_DPU_WARMUP: u32 = u16::MAX as u32 - 3;

/// Training options as written. Booleans are flags on the command line
/// (`--sequence-parallel`, or `--sequence-parallel=false` to override a
/// scenario file); unset keys take their defaults at resolution.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct TrainingOptionsFile {
    /// Number format of the GEMMs and activations: fp16 (the default for the
    /// paper-era GPT models on A100 and V100, as in Megatron SC21), bf16 (the
    /// default for a model of 2023 or later or a Hopper or Blackwell GPU, or
    /// as a Hugging Face config's torch_dtype says), or fp8 (Transformer Engine's delayed-scaling
    /// recipe: linear-layer GEMMs in FP8, the rest in bf16; Hopper and
    /// Blackwell only); picks the GPU's peak rate and the calibrated GEMMs of
    /// that dtype.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_enum, value_name = "FORMAT"))]
    pub precision: Option<Precision>,
    /// Megatron's sequence parallelism: LayerNorm and dropout split across the
    /// tensor ranks; all-reduces become reduce-scatter + all-gather (default
    /// false; true at t > 1 for today's models and GPUs when no stack is named).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub sequence_parallel: Option<bool>,
    /// Start each model chunk's data-parallel gradient all-reduce as soon as its
    /// last backward ends, overlapping the remaining backwards, instead of after
    /// the last pass (default false, as in Megatron SC21).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub overlap_grad_reduce: Option<bool>,
    /// With overlap_grad_reduce: split each chunk's last backward into gradient
    /// buckets of at most PARAMS parameters (whole layers, at least one), each
    /// all-reduced as soon as its layers are done, as PyTorch DDP does (its
    /// 25 MB buckets: 12500000). Default: one all-reduce per chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_name = "PARAMS"))]
    pub grad_reduce_bucket_params: Option<u64>,
    /// Megatron's gradient-accumulation fusion with fp32 main gradients: weight
    /// gradients accumulate inside the GEMMs (no per-microbatch add kernel) and
    /// are all-reduced in fp32. Default false: unfused fp16 accumulation, as in
    /// the SC21 and Korthikanti et al. 2022 fp16 runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long = "grad-accumulation-fusion", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub gradient_accumulation_fusion: Option<bool>,
    /// Megatron-Core's `--grad-reduce-in-bf16`: under bf16 or fp8, the main
    /// gradients (fp32 otherwise, as Megatron keeps them) are kept,
    /// accumulated and reduce-scattered or all-reduced in bf16 (2 bytes per
    /// parameter instead of 4), and the optimizer copies them to fp32
    /// (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub grad_reduce_in_bf16: Option<bool>,
    /// Megatron's asynchronous tensor all-reduce (2022): each column-parallel
    /// layer's backward all-reduce overlaps its weight-gradient GEMM; only the
    /// part longer than that GEMM is exposed (default false: blocking, as in
    /// SC21; not with sequence parallelism, where Megatron turns it off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub async_tensor_allreduce: Option<bool>,
    /// Megatron-Core's `--tp-comm-overlap` (Transformer Engine userbuffers):
    /// with sequence parallelism, each linear layer's all-gather or
    /// reduce-scatter runs in chunks pipelined with its GEMM; only the part
    /// longer than that GEMM is exposed (default false; needs
    /// sequence_parallel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub tp_comm_overlap: Option<bool>,
    /// With tp_comm_overlap: the Transformer Engine userbuffers configuration
    /// whose SM counts the overlapped GEMMs pay (`te-defaults`, TE's own,
    /// unless given; NVIDIA's recipes name theirs, e.g.
    /// ub_cfg_h100_h6144_tp2_mbs2_seqlen2048 for NeMo's GPT-3 20B).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_enum, value_name = "NAME"))]
    pub tp_comm_overlap_config: Option<UserbuffersConfig>,
    /// Megatron's distributed optimizer (`--use-distributed-optimizer`, ZeRO
    /// stage 1): gradients are reduce-scattered over the data-parallel group
    /// instead of all-reduced, each rank updates its 1/d of the fp32 master
    /// weights and Adam states, then the updated fp16/bf16 parameters are
    /// all-gathered (not overlapped with the next forward). Default false;
    /// true at d·cp > 1 for today's models and GPUs when no stack is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub distributed_optimizer: Option<bool>,
    /// Sharded data parallelism by ZeRO stage: 0 (default, none), 1 (the
    /// optimizer states: the same as distributed_optimizer), 2 (and the
    /// gradients: buckets reduce-scattered during every backward) or 3 (and
    /// the parameters, as FSDP: one unit per layer, parameters all-gathered
    /// before its forward and backward with the next unit prefetched,
    /// gradients reduce-scattered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_name = "STAGE"))]
    pub zero_stage: Option<u8>,
    /// HSDP: shard within groups of N data-parallel ranks and replicate across
    /// the d/N groups (gradients reduce-scattered in the group, then the shard
    /// all-reduced across groups). Default: N = d. Needs zero_stage 2 or 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub shard_group_size: Option<u32>,
    /// Megatron-Core's `--overlap-param-gather` for the distributed optimizer:
    /// the updated parameters are all-gathered bucket by bucket at the start
    /// of the next iteration, each forward bucket waiting for its own (the
    /// next one's dispatched as it starts), instead of one all-gather after
    /// the optimizer. Needs distributed_optimizer and overlap_grad_reduce,
    /// as Megatron asserts (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub overlap_param_gather: Option<bool>,
    /// ZeRO++ qwZ (DeepSpeed's `zero_quantized_weights`; needs zero_stage 3):
    /// every parameter all-gather moves INT8 weights with one fp32 scale per
    /// 8000 elements (half of bf16's bytes), dequantized before the layer
    /// runs (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub zero_quantized_weights: Option<bool>,
    /// ZeRO++ hpZ (DeepSpeed's `zero_hpz_partition_size`; needs zero_stage 3
    /// and a purely data-parallel layout): each rank also keeps 1/N of every
    /// layer after its first gather, so every later gather of the iteration
    /// (recomputation, backward, later microbatches) runs inside groups of N
    /// consecutive ranks, one node's when N is its GPU count, as DeepSpeed
    /// advises (default 1: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub zero_hpz_partition_size: Option<u32>,
    /// ZeRO++ qgZ (DeepSpeed's `zero_quantized_gradients`; needs zero_stage 3,
    /// a purely data-parallel layout on whole nodes): each layer's gradient
    /// reduce-scatter becomes an INT4 all-to-all inside the node, a
    /// reduction, and an INT4 all-to-all across nodes (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub zero_quantized_gradients: Option<bool>,
    /// PowerSGD (PyTorch DDP's `powerSGD_hook`, `matrix_approximation_rank`
    /// R) after its warm-up: every gradient matrix the hook compresses goes
    /// as two rank-R factors in two small all-reduces, with an error buffer
    /// the size of the gradients; vectors are all-reduced whole. Needs
    /// plain DDP: no distributed optimizer, no overlapped reduction (the
    /// hook synchronizes per bucket). Default: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_name = "R"))]
    pub powersgd_rank: Option<u32>,
    /// Megatron's pipeline scatter/gather: split each cross-node p2p transfer
    /// across the t NICs of a node, then all-gather over NVLink (default true,
    /// as in SC21; =false sends whole activations on one NIC per rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long = "scatter-gather", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub pipeline_scatter_gather: Option<bool>,
    /// Run pipeline transfers, collectives and ZeRO-Offload's PCIe copies as
    /// flows sharing the fabric's links (NVSwitch ports, NICs, fat-tree cables,
    /// PCIe and host links; max-min fair) instead of costing each alone; adds
    /// the busiest links to --json (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long = "contention", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub network_contention: Option<bool>,
    /// ZeRO-Offload: fp16 parameters and activations on the GPU; gradients
    /// streamed to the CPU over PCIe, Adam on the CPU, parameters copied back
    /// (default false; needs pp = 1; with dp > 1, ZeRO-2 partitioning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub zero_offload: Option<bool>,
    /// ZeRO-Offload's delayed parameter update: step N's CPU update overlaps
    /// step N+1's forward and backward (default false; needs zero_offload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub delayed_update: Option<bool>,
    /// Iterations run without delay before the delayed update starts (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub dpu_warmup_iterations: Option<u32>,
    /// Gradient bucket size in parameters for the offload stream (default
    /// 500000000: DeepSpeed's reduce_bucket_size), rounded to whole layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_name = "PARAMS"))]
    pub offload_bucket_params: Option<u64>,
    /// Zero-bubble optimizer post-validation (Qi et al. 2024, Sec. 4; the
    /// source's `--enable-optimizer-post-validation`): each stage steps its
    /// optimizer once its own gradients are reduced and the partial gradient
    /// norm and inf/NaN flag have come from the previous stage, and
    /// validates the step during the next iteration's warm-up, so the stages
    /// never wait for a global sync. Simulates 3 consecutive iterations and
    /// reports the steady state. zb-h1, zb-h2, zb-v with fp16 and untied
    /// embeddings only, as the source requires (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub optimizer_post_validation: Option<bool>,
    /// DualPipe's overlapped F&B pairs (DeepSeek-V3 report, Sec. 3.2.1):
    /// with dualpipe or dualpipev and ep > 1, each pair's forward and
    /// backward are cut at their expert all-to-alls and interleaved, the
    /// all-to-alls on their own stream beside the other half's computation,
    /// which meanwhile runs on the SMs communication leaves (default false:
    /// the pair's two passes back to back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL"))]
    pub pair_overlap: Option<bool>,
    /// How a mixture of experts' tokens are dispatched and combined: nccl
    /// (default: NCCL's all-to-all over the EP group) or deepep (DeepEP's
    /// node-limited dispatch: each token to at most 4 nodes, sent once over
    /// InfiniBand to the same-index GPU, forwarded over NVLink).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_name = "DISPATCHER"))]
    pub moe_dispatcher: Option<MoeDispatcher>,
    /// The optimizer: adam (default) or adamw (two fp32 moments), adafactor
    /// (a factored second moment), adam8bit (bitsandbytes' block-wise 8-bit
    /// moments), lion (one momentum), sgd (with momentum), onebitadam or
    /// onebitlamb (DeepSpeed's 1-bit Adam and 1-bit LAMB after their warm-up:
    /// the momentum all-reduced as error-compensated signs, no ZeRO). Each keeps fp32
    /// master weights under mixed precision; it sets the optimizer states'
    /// memory, what ZeRO shards and checkpoints hold, and the optimizer
    /// step's kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_enum, value_name = "OPTIMIZER"))]
    pub optimizer: Option<Optimizer>,
    /// Megatron-Core's `--cpu-offloading --cpu-offloading-num-layers N`
    /// (Transformer Engine's CPU offloading): the saved activations of the
    /// first N layers go to host memory during the forward, on their own
    /// stream, and come back before their backward; the GPU keeps L − N + 1
    /// layers' at most, and a copy longer than the layers it overlaps stalls
    /// the pass. Megatron-Core allows it at p = 1, without recomputation, for
    /// N below the model's layers (default 0: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub cpu_offloading_num_layers: Option<u32>,
    /// Gist-style activation compression (Jain et al. 2018): the activations
    /// each layer saves for its backward are kept RATIO times smaller
    /// between the two, encoded after the forward and decoded before the
    /// backward (or the recomputation that reads them), each kernel priced
    /// by its bytes. No source gives a transformer's ratio (Gist averaged
    /// 1.8 on CNNs): give your encoding's (1 to 64; default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "clap", arg(long, value_name = "RATIO"))]
    pub activation_compression: Option<CompressionRatio>,
}

/// Training options, validated, with defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TrainingOptions {
    /// Number format of the GEMMs and activations (fp16 unless bf16 is asked).
    #[serde(skip_serializing_if = "Precision::is_default")]
    pub precision: Precision,
    /// LayerNorm/dropout split across tensor ranks (Megatron sequence parallelism).
    pub sequence_parallel: bool,
    /// Per-chunk data-parallel all-reduces start as each chunk's backward ends.
    pub overlap_grad_reduce: bool,
    /// With `overlap_grad_reduce`: gradient buckets of at most this many
    /// parameters (at least one layer) inside each chunk's last backward
    /// (None: one per chunk).
    pub grad_reduce_bucket_params: Option<u64>,
    /// Weight gradients accumulate in fp32 inside the GEMMs (no per-microbatch
    /// accumulation kernel; fp32 data-parallel all-reduce).
    pub gradient_accumulation_fusion: bool,
    /// The main gradients in bf16 (Megatron-Core `--grad-reduce-in-bf16`):
    /// 2-byte reductions and gradient memory.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub grad_reduce_in_bf16: bool,
    /// Column-parallel backward all-reduces overlap their weight-gradient GEMMs.
    pub async_tensor_allreduce: bool,
    /// Sequence-parallel all-gathers and reduce-scatters overlap the linear
    /// layers' GEMMs (Megatron-Core `--tp-comm-overlap`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tp_comm_overlap: bool,
    /// The userbuffers configuration whose SMs the overlapped GEMMs pay
    /// (meaningful with `tp_comm_overlap`).
    #[serde(skip_serializing_if = "UserbuffersConfig::is_default")]
    pub tp_comm_overlap_config: UserbuffersConfig,
    /// Cross-node pipeline transfers scatter over the t NICs and gather over NVLink.
    pub pipeline_scatter_gather: bool,
    /// Gradients reduce-scattered, optimizer states sharded over d, parameters all-gathered.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub distributed_optimizer: bool,
    /// Sharded data parallelism beyond the optimizer (ZeRO-2, ZeRO-3); with
    /// either, `distributed_optimizer` is true too.
    #[serde(
        rename = "zero_stage",
        skip_serializing_if = "ZeroStage::below_gradients"
    )]
    pub sharding: ZeroStage,
    /// HSDP: data-parallel ranks per shard group (None: all d).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard_group_size: Option<u32>,
    /// The distributed optimizer's parameter all-gather per bucket, overlapped
    /// with the next iteration's forward.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub overlap_param_gather: bool,
    /// ZeRO++'s quantized and hierarchical collectives over ZeRO-3.
    #[serde(flatten)]
    pub zeropp: ZeroPlusPlus,
    /// PowerSGD's matrix approximation rank, when on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub powersgd_rank: Option<std::num::NonZeroU32>,
    /// Communication shares the fabric's links (flow-level contention).
    pub network_contention: bool,
    /// ZeRO-Offload placement, when enabled.
    #[serde(rename = "zero_offload", skip_serializing_if = "Option::is_none")]
    pub offload: Option<Offload>,
    /// Zero-bubble optimizer post-validation: per-stage optimizer steps
    /// with the norm passed stage to stage, validated afterwards.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub optimizer_post_validation: bool,
    /// DualPipe's F&B pairs overlap their expert all-to-alls with computation.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pair_overlap: bool,
    /// The MoE token dispatcher's communication.
    #[serde(skip_serializing_if = "MoeDispatcher::is_default")]
    pub moe_dispatcher: MoeDispatcher,
    /// The optimizer (Adam unless another is asked).
    #[serde(skip_serializing_if = "Optimizer::is_default")]
    pub optimizer: Optimizer,
    /// Layers whose saved activations are offloaded to host memory between
    /// their forward and backward (0: none; [`crate::options`] field
    /// `cpu_offloading_num_layers`).
    #[serde(skip_serializing_if = "is_zero")]
    pub activation_offload_layers: u32,
    /// How many times smaller the saved activations are kept, when compressed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activation_compression: Option<CompressionRatio>,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

impl TrainingOptionsFile {
    /// Fills unset keys of `self` from `base`.
    pub fn or(self, base: TrainingOptionsFile) -> TrainingOptionsFile {
        TrainingOptionsFile {
            precision: self.precision.or(base.precision),
            sequence_parallel: self.sequence_parallel.or(base.sequence_parallel),
            overlap_grad_reduce: self.overlap_grad_reduce.or(base.overlap_grad_reduce),
            grad_reduce_bucket_params: self
                .grad_reduce_bucket_params
                .or(base.grad_reduce_bucket_params),
            gradient_accumulation_fusion: self
                .gradient_accumulation_fusion
                .or(base.gradient_accumulation_fusion),
            grad_reduce_in_bf16: self.grad_reduce_in_bf16.or(base.grad_reduce_in_bf16),
            async_tensor_allreduce: self.async_tensor_allreduce.or(base.async_tensor_allreduce),
            tp_comm_overlap: self.tp_comm_overlap.or(base.tp_comm_overlap),
            tp_comm_overlap_config: self.tp_comm_overlap_config.or(base.tp_comm_overlap_config),
            pipeline_scatter_gather: self
                .pipeline_scatter_gather
                .or(base.pipeline_scatter_gather),
            distributed_optimizer: self.distributed_optimizer.or(base.distributed_optimizer),
            zero_stage: self.zero_stage.or(base.zero_stage),
            shard_group_size: self.shard_group_size.or(base.shard_group_size),
            overlap_param_gather: self.overlap_param_gather.or(base.overlap_param_gather),
            zero_quantized_weights: self.zero_quantized_weights.or(base.zero_quantized_weights),
            zero_hpz_partition_size: self
                .zero_hpz_partition_size
                .or(base.zero_hpz_partition_size),
            zero_quantized_gradients: self
                .zero_quantized_gradients
                .or(base.zero_quantized_gradients),
            powersgd_rank: self.powersgd_rank.or(base.powersgd_rank),
            network_contention: self.network_contention.or(base.network_contention),
            zero_offload: self.zero_offload.or(base.zero_offload),
            delayed_update: self.delayed_update.or(base.delayed_update),
            dpu_warmup_iterations: self.dpu_warmup_iterations.or(base.dpu_warmup_iterations),
            offload_bucket_params: self.offload_bucket_params.or(base.offload_bucket_params),
            optimizer_post_validation: self
                .optimizer_post_validation
                .or(base.optimizer_post_validation),
            pair_overlap: self.pair_overlap.or(base.pair_overlap),
            moe_dispatcher: self.moe_dispatcher.or(base.moe_dispatcher),
            optimizer: self.optimizer.or(base.optimizer),
            cpu_offloading_num_layers: self
                .cpu_offloading_num_layers
                .or(base.cpu_offloading_num_layers),
            activation_compression: self.activation_compression.or(base.activation_compression),
        }
    }

    /// The options with defaults filled in, unchecked (titles of sweeps that
    /// have not resolved a scenario yet use it).
    pub fn with_defaults(&self) -> TrainingOptions {
        let zero_offload = self.zero_offload.unwrap_or(false);
        TrainingOptions {
            precision: self.precision.unwrap_or_default(),
            sequence_parallel: self.sequence_parallel.unwrap_or(false),
            overlap_grad_reduce: self.overlap_grad_reduce.unwrap_or(false),
            grad_reduce_bucket_params: self.grad_reduce_bucket_params,
            gradient_accumulation_fusion: self.gradient_accumulation_fusion.unwrap_or(false),
            grad_reduce_in_bf16: self.grad_reduce_in_bf16.unwrap_or(false),
            async_tensor_allreduce: self.async_tensor_allreduce.unwrap_or(false),
            tp_comm_overlap: self.tp_comm_overlap.unwrap_or(false),
            tp_comm_overlap_config: self.tp_comm_overlap_config.unwrap_or_default(),
            pipeline_scatter_gather: self.pipeline_scatter_gather.unwrap_or(true),
            distributed_optimizer: self.distributed_optimizer.unwrap_or(false)
                || self.sharding().unwrap_or_default() >= ZeroStage::Optimizer,
            sharding: self.sharding().unwrap_or_default().max(
                if self.distributed_optimizer == Some(true) {
                    ZeroStage::Optimizer
                } else {
                    ZeroStage::None
                },
            ),
            shard_group_size: self.shard_group_size,
            overlap_param_gather: self.overlap_param_gather.unwrap_or(false),
            zeropp: self.zeropp(),
            powersgd_rank: self.powersgd_rank.and_then(std::num::NonZeroU32::new),
            network_contention: self.network_contention.unwrap_or(false),
            offload: zero_offload.then_some(Offload {
                delayed_update: self.delayed_update.unwrap_or(false),
                dpu_warmup_iterations: self
                    .dpu_warmup_iterations
                    .unwrap_or(DEFAULT_DPU_WARMUP_ITERATIONS),
                bucket_params: self
                    .offload_bucket_params
                    .unwrap_or(DEFAULT_OFFLOAD_BUCKET_PARAMS)
                    .max(1),
            }),
            optimizer_post_validation: self.optimizer_post_validation.unwrap_or(false),
            pair_overlap: self.pair_overlap.unwrap_or(false),
            moe_dispatcher: self.moe_dispatcher.unwrap_or_default(),
            optimizer: self.optimizer.unwrap_or_default(),
            activation_offload_layers: self.cpu_offloading_num_layers.unwrap_or(0),
            activation_compression: self.activation_compression,
        }
    }
}

impl TrainingOptions {
    /// Whether the `main_grad` buffer is fp32 (4 bytes per parameter: what
    /// gradients occupy and what the data-parallel reduction moves) rather
    /// than 2-byte: with Megatron's fused accumulation
    /// (`gradient_accumulation_fusion`), and under bf16 or fp8 always —
    /// Megatron-LM forces `accumulate_allreduce_grads_in_fp32` under `--bf16`
    /// ("bfloat16 requires gradient accumulation and all-reduce to be done in
    /// fp32", `megatron/arguments.py` since 3d718bfc, Aug 2021) — unless
    /// `grad_reduce_in_bf16`.
    pub fn fp32_main_grads(&self) -> bool {
        (self.gradient_accumulation_fusion || self.precision != Precision::Fp16)
            && !self.grad_reduce_in_bf16
    }

    /// Data-parallel ranks that share one copy of the sharded model states
    /// (`data_parallel` unless HSDP groups are smaller).
    pub fn shard_group(&self, data_parallel: u32) -> u32 {
        self.shard_group_size.unwrap_or(data_parallel).max(1)
    }

    /// Consecutive iterations simulated unless the scenario says otherwise:
    /// 1, or with the delayed update its warm-up plus 3 (a first delayed
    /// iteration, the measured one and one after it), or with optimizer
    /// post-validation [`POST_VALIDATION_ITERATIONS`] (the first,
    /// the measured one, and one whose warm-up overlaps the measured one's end).
    pub fn default_iterations(&self) -> u32 {
        match self.offload {
            Some(offload) if offload.delayed_update => {
                offload.dpu_warmup_iterations.saturating_add(3)
            }
            _ if self.optimizer_post_validation => POST_VALIDATION_ITERATIONS,
            _ => 1,
        }
    }
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
