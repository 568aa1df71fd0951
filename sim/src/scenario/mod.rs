//! A scenario: model + topology + profile + parallel layout + schedule +
//! options. Parsed in two phases, as ripgrep does: a raw [`ScenarioFile`]
//! (every key optional, unknown keys rejected; CLI flags override it) is
//! resolved into a validated [`Scenario`]. Resolution reports every problem at
//! once, each naming its field.

mod describe;
mod kinds;
mod offload;
mod resolve;
#[cfg(test)]
mod tests;

pub use describe::TrainingOptionLabels;
pub use kinds::{Recompute, ScheduleKind};
pub use offload::{Offload, DEFAULT_DPU_WARMUP_ITERATIONS, DEFAULT_OFFLOAD_BUCKET_PARAMS};

use crate::profile::Profile;
use models::ModelSpec;
use serde::{Deserialize, Serialize};
use topologies::TopologySpec;

/// The scenario file as written: every key optional (defaults fill in),
/// unknown keys rejected. `model` and `topology` are a preset name, a path to a
/// JSON file, or an inline object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<serde_json::Value>,
    /// Profile name or path; default: the embedded profile of the topology's GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pp: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microbatch_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_batch: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute: Option<Recompute>,
    /// Megatron's pipeline scatter/gather: split each p2p transfer across the
    /// t NICs of a node, then all-gather over NVLink (default true, as in SC21).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_scatter_gather: Option<bool>,
    /// Seed recorded in the timeline (the engine itself draws no random numbers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Start each model chunk's data-parallel gradient all-reduce as soon as its
    /// last backward is done, overlapping the remaining backwards (default false,
    /// as in Megatron SC21).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_grad_reduce: Option<bool>,
    /// With overlap_grad_reduce, also split each chunk's last backward into
    /// gradient buckets of at most this many parameters (whole layers, at
    /// least one per bucket), each
    /// all-reduced as soon as its layers' backward is done, as PyTorch DDP
    /// does (bucket_cap_mb 25 = 12.5 M fp16 parameters). Default: one
    /// all-reduce per chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grad_reduce_bucket_params: Option<u64>,
    /// Megatron's sequence parallelism: LayerNorm and dropout split across the
    /// tensor ranks; all-reduces become reduce-scatter + all-gather (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_parallel: Option<bool>,
    /// Megatron's gradient-accumulation fusion with fp32 main gradients: weight
    /// gradients accumulate inside the GEMM and are all-reduced in fp32
    /// (default false: the fp16 runs of SC21 and Korthikanti et al. 2022 add
    /// each microbatch's fp16 gradient in a separate kernel; see `cost::gradients`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gradient_accumulation_fusion: Option<bool>,
    /// Megatron's asynchronous tensor all-reduce (2022): a column-parallel
    /// layer's backward all-reduce overlaps its weight-gradient GEMM; only the
    /// part longer than that GEMM is exposed (default false: blocking, as in
    /// SC21; not with sequence_parallel, where Megatron turns it off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub async_tensor_allreduce: Option<bool>,
    /// Run pipeline transfers, collectives and PCIe copies as flows sharing
    /// the fabric's links — NVSwitch ports, NICs, fat-tree cables, PCIe and
    /// host links — max-min fairly, instead of closed-form times (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_contention: Option<bool>,
    /// ZeRO-Offload: fp16 parameters and activations on the GPU; gradients,
    /// fp32 master weights and Adam on the CPU (default false; pp must be 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_offload: Option<bool>,
    /// ZeRO-Offload's delayed parameter update: step N's CPU update overlaps
    /// step N+1's forward and backward (default false; needs zero_offload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delayed_update: Option<bool>,
    /// Iterations run without delay before the delayed update starts (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpu_warmup_iterations: Option<u32>,
    /// Consecutive iterations simulated (default 1; warm-up + 3, the minimum,
    /// with delayed_update). Metrics then describe the steady state (the last
    /// iteration that another one follows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
    /// Gradient bucket size in parameters for the offload stream (default
    /// 500,000,000: DeepSpeed's `reduce_bucket_size`); rounded to whole layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload_bucket_params: Option<u64>,
}

/// Largest task graph a simulation will build (the 1T model on 3072 GPUs
/// needs 5.7 million tasks and ~1 GB).
pub const MAX_TASKS: u64 = 60_000_000;

/// The parallel layout, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Tensor-parallel degree t.
    pub tensor_parallel: u32,
    /// Pipeline stages p.
    pub pipeline_parallel: u32,
    /// Data-parallel degree d.
    pub data_parallel: u32,
    /// Model chunks per stage v (interleaved schedule), 1 otherwise.
    pub chunks: u32,
    /// Microbatch size b.
    pub microbatch_size: u32,
    /// Global batch B.
    pub global_batch: u32,
    /// Microbatches per pipeline per iteration, m = B/(b·d).
    pub microbatches: u32,
}

impl Layout {
    pub fn gpus(&self) -> u32 {
        self.tensor_parallel * self.pipeline_parallel * self.data_parallel
    }
    /// Virtual stages p·v.
    pub fn virtual_stages(&self) -> u32 {
        self.pipeline_parallel * self.chunks
    }
}

/// A resolved, validated scenario: everything the simulator needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub model: ModelSpec,
    pub topology: TopologySpec,
    pub profile: Profile,
    pub layout: Layout,
    pub schedule: ScheduleKind,
    pub recompute: Recompute,
    pub pipeline_scatter_gather: bool,
    pub seed: u64,
    /// Communication shares the fabric's links (flow-level contention).
    pub network_contention: bool,
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
    /// Column-parallel backward all-reduces overlap their weight-gradient GEMMs.
    pub async_tensor_allreduce: bool,
    /// ZeRO-Offload placement, when enabled.
    pub offload: Option<Offload>,
    /// Consecutive iterations simulated (1 unless offload asks for more).
    pub iterations: u32,
}

/// Problems with a scenario, all reported together.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("scenario file {path} is not a valid scenario: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("invalid scenario:\n  - {}", problems.join("\n  - "))]
    Invalid { problems: Vec<String> },
}

impl ScenarioFile {
    /// Reads a scenario JSON file (unknown keys are errors).
    pub fn from_file(path: &std::path::Path) -> Result<ScenarioFile, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            path: path.display().to_string(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| ScenarioError::Parse {
            path: path.display().to_string(),
            source,
        })
    }

    /// The embedded default: GPT-3 175B on 1024 Selene GPUs with Megatron-LM's
    /// SC21 Table 1 layout (t=8, p=16, d=8, b=1, B=1536), 1F1B, full recompute.
    pub fn embedded_default() -> ScenarioFile {
        ScenarioFile {
            model: Some("gpt3-175b".into()),
            topology: Some("selene".into()),
            tp: Some(8),
            pp: Some(16),
            dp: Some(8),
            chunks: Some(1),
            microbatch_size: Some(1),
            global_batch: Some(1536),
            schedule: Some(ScheduleKind::OneFOneB),
            recompute: Some(Recompute::Full),
            ..ScenarioFile::default()
        }
    }

    /// A small scenario for tests and examples: the `tiny` model on one DGX A100.
    pub fn tiny_example() -> ScenarioFile {
        ScenarioFile {
            model: Some("tiny".into()),
            topology: Some("dgx-a100".into()),
            tp: Some(2),
            pp: Some(4),
            dp: Some(1),
            chunks: Some(1),
            microbatch_size: Some(1),
            global_batch: Some(8),
            schedule: Some(ScheduleKind::OneFOneB),
            recompute: Some(Recompute::None),
            ..ScenarioFile::default()
        }
    }

    /// Fills unset keys of `self` from `base`.
    pub fn or(self, base: ScenarioFile) -> ScenarioFile {
        ScenarioFile {
            model: self.model.or(base.model),
            topology: self.topology.or(base.topology),
            profile: self.profile.or(base.profile),
            tp: self.tp.or(base.tp),
            pp: self.pp.or(base.pp),
            dp: self.dp.or(base.dp),
            chunks: self.chunks.or(base.chunks),
            microbatch_size: self.microbatch_size.or(base.microbatch_size),
            global_batch: self.global_batch.or(base.global_batch),
            schedule: self.schedule.or(base.schedule),
            recompute: self.recompute.or(base.recompute),
            pipeline_scatter_gather: self
                .pipeline_scatter_gather
                .or(base.pipeline_scatter_gather),
            seed: self.seed.or(base.seed),
            network_contention: self.network_contention.or(base.network_contention),
            sequence_parallel: self.sequence_parallel.or(base.sequence_parallel),
            gradient_accumulation_fusion: self
                .gradient_accumulation_fusion
                .or(base.gradient_accumulation_fusion),
            async_tensor_allreduce: self.async_tensor_allreduce.or(base.async_tensor_allreduce),
            overlap_grad_reduce: self.overlap_grad_reduce.or(base.overlap_grad_reduce),
            grad_reduce_bucket_params: self
                .grad_reduce_bucket_params
                .or(base.grad_reduce_bucket_params),
            zero_offload: self.zero_offload.or(base.zero_offload),
            delayed_update: self.delayed_update.or(base.delayed_update),
            dpu_warmup_iterations: self.dpu_warmup_iterations.or(base.dpu_warmup_iterations),
            iterations: self.iterations.or(base.iterations),
            offload_bucket_params: self.offload_bucket_params.or(base.offload_bucket_params),
        }
    }
}
