//! A scenario: model + topology + profile + parallel layout + schedule +
//! options. Parsed in two phases, as ripgrep does: a raw [`ScenarioFile`]
//! (every key optional, unknown keys rejected; CLI flags override it) is
//! resolved into a validated [`Scenario`]. Resolution reports every problem at
//! once, each naming its field.

pub mod bucket_sizes;
mod context;
mod describe;
pub mod expert_capacity;
pub mod expert_imbalance;
mod expert_tensor;
pub mod experts;
mod kinds;
mod mla;
pub mod moe_comm;
mod offload;
mod options;
mod pipeline_layout;
pub mod post_validation;
mod problem;
mod resolve;
mod sharding;
mod stack;
mod stack_file;
mod task_count;
pub mod userbuffers;

pub use kinds::Recompute;
pub use offload::{Offload, DEFAULT_DPU_WARMUP_ITERATIONS, DEFAULT_OFFLOAD_BUCKET_PARAMS};
pub use options::{Precision, TrainingOptions, TrainingOptionsFile, ZeroStage};
pub use problem::{Problem, GPU_COUNT_FIELD};
pub use schedules::ScheduleKind;
pub use stack::{HostCosts, LocalDdpKernels, NotModeled, Stack, StackError, DEFAULT_STACK};
pub use task_count::{
    estimated_task_count, task_limit, GradientSplits, ADDRESS_BYTES_PER_GPU,
    ADDRESS_BYTES_PER_TASK, BYTES_PER_GPU, BYTES_PER_TASK, MAX_TASKS, TASK_LIMIT_VARIABLE,
};
pub use userbuffers::UserbuffersConfig;

use models::ModelSpec;
use profile::Profile;
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;
use topologies::TopologySpec;

/// The scenario file as written: every key optional (defaults fill in),
/// unknown keys rejected. `model` and `topology` are a preset name, a path to a
/// JSON file, or an inline object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<serde_json::Value>,
    /// Sequence length in tokens, overriding the model's `seq_len` (a
    /// Hugging Face config's is its longest context, not the training length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_len: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<serde_json::Value>,
    /// Profile name or path; default: the embedded profile of the topology's GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Software stack name or path (default megatron-2021): the defaults of
    /// the training options, as the software of that time had them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pp: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp: Option<u32>,
    /// Context-parallel degree cp (default 1): ring attention over cp ranks
    /// that each hold s/cp tokens (Megatron-Core `--context-parallel-size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp: Option<u32>,
    /// Expert-parallel degree ep (default 1) of a mixture-of-experts model:
    /// groups of ep ranks carved out of the dp × cp ranks, each holding E/ep
    /// of every MoE layer's experts, tokens exchanged by all-to-all
    /// (Megatron-Core `--expert-model-parallel-size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ep: Option<u32>,
    /// Expert tensor-parallel degree (default 1; only 1 is simulated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etp: Option<u32>,
    /// How routed tokens spread over the experts: uniform (default),
    /// skew:X (geometric, the first expert X times the last) or a file of
    /// tokens per expert (a histogram).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_imbalance: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<u32>,
    /// Interleaved schedule: microbatches per group N, p ≤ N ≤ m (Megatron-Core's
    /// `--microbatch-group-size-per-vp-stage`; default p). m need not be a
    /// multiple of p, but its last group must hold 0 or at least p microbatches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microbatch_group_size: Option<u32>,
    /// Megatron-Core's uneven pipeline split: the embedding and/or the loss
    /// counted as a layer (`{"embedding": true, "loss": true}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_split: Option<models::sharding::PipelineSplit>,
    /// Megatron-Core's pipeline layout string (`--pipeline-model-parallel-layout`):
    /// the layers of every virtual stage, e.g. `"Et*7|(t*8|)*14,t*7L"` (E
    /// embedding, t transformer layer, L loss, `|` between stages, `(…)*n`
    /// and `x*n` repeats); p·v stages, the embedding first, the loss last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_layout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microbatch_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_batch: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute: Option<Recompute>,
    /// Seed recorded in the timeline (the engine itself draws no random numbers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Consecutive iterations simulated (default 1; warm-up + 3, the minimum,
    /// with delayed_update). Metrics then describe the steady state (the last
    /// iteration that another one follows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
    /// Training options (sequence parallelism, overlapped gradient reduction,
    /// ZeRO-Offload, contention, …), flat keys of the same file.
    #[serde(flatten)]
    pub options: TrainingOptionsFile,
}

/// The parallel layout, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Tensor-parallel degree t.
    pub tensor_parallel: NonZeroU32,
    /// Pipeline stages p.
    pub pipeline_parallel: NonZeroU32,
    /// Data-parallel degree d.
    pub data_parallel: NonZeroU32,
    /// Model chunks per stage v (interleaved schedule), 1 otherwise.
    pub chunks: NonZeroU32,
    /// Interleaved: microbatches per group N when set (default p).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microbatch_group_size: Option<NonZeroU32>,
    /// Context-parallel degree cp (1: none); absent in older files.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub context_parallel: NonZeroU32,
    /// Expert-parallel degree ep (1: none); absent in older files.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub expert_parallel: NonZeroU32,
    /// Expert tensor-parallel degree etp (1: none); absent in older files.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub expert_tensor_parallel: NonZeroU32,
    /// How layers are split over the virtual stages (even unless the
    /// embedding or the loss count as a layer: `models::sharding::PipelineSplit`).
    #[serde(
        default,
        skip_serializing_if = "models::sharding::PipelineSplit::is_even"
    )]
    pub pipeline_split: models::sharding::PipelineSplit,
    /// Which rank holds which virtual stage: interleaved (k·p + r, the
    /// default, not written) or V (rank r holds stages r and 2p−1−r: the
    /// V-shaped schedules).
    #[serde(
        default,
        skip_serializing_if = "models::sharding::StageMap::is_interleaved"
    )]
    pub stage_map: models::sharding::StageMap,
    /// Microbatch size b.
    pub microbatch_size: NonZeroU32,
    /// Global batch B.
    pub global_batch: NonZeroU32,
    /// Microbatches per pipeline per iteration, m = B/(b·d).
    pub microbatches: NonZeroU32,
}

impl Layout {
    pub fn gpus(&self) -> u32 {
        self.tensor_parallel.get()
            * self.context_parallel.get()
            * self.pipeline_parallel.get()
            * self.data_parallel.get()
    }
    /// Ranks per stage and tensor index that hold the same weights: the
    /// data- and context-parallel group d·cp (Megatron's dp-cp group, over
    /// which gradients are reduced and the distributed optimizer shards).
    pub fn replicas(&self) -> u32 {
        self.data_parallel.get() * self.context_parallel.get()
    }
    /// Ranks that hold the same routed experts: the expert-data-parallel
    /// group t·d·cp/(ep·etp) (Megatron-Core's expert grid spans the stage's
    /// t·cp·d ranks, `parallel_state.py`: expert_data_parallel_size =
    /// world_size // (etp·ep·pp)), over which expert gradients are reduced
    /// and their optimizer states shard (at least 1; d·cp/ep at t = etp = 1).
    pub fn expert_replicas(&self) -> u32 {
        let ways = self.expert_parallel.get() * self.expert_tensor_parallel.get();
        (self.tensor_parallel.get() * self.replicas() / ways).max(1)
    }
    /// Virtual stages p·v.
    pub fn virtual_stages(&self) -> u32 {
        self.pipeline_parallel.get() * self.chunks.get()
    }
    /// Interleaved microbatch group size N: as set, else p.
    pub fn microbatch_group_size(&self) -> u32 {
        self.microbatch_group_size
            .unwrap_or(self.pipeline_parallel)
            .get()
    }
    /// How the model is cut up (t, p, v), for parameter counts.
    pub fn sharding(&self) -> models::sharding::Sharding {
        models::sharding::Sharding {
            tensor_parallel: self.tensor_parallel,
            pipeline_parallel: self.pipeline_parallel,
            chunks: self.chunks,
            split: self.pipeline_split,
            map: self.stage_map,
            expert_parallel: self.expert_parallel,
            expert_tensor_parallel: self.expert_tensor_parallel,
        }
    }
}

fn one() -> NonZeroU32 {
    NonZeroU32::MIN
}

fn is_one(value: &NonZeroU32) -> bool {
    value.get() == 1
}

/// A resolved, validated scenario: everything the simulator needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub model: ModelSpec,
    pub topology: TopologySpec,
    pub profile: Profile,
    pub layout: Layout,
    /// A mixture-of-experts model's routing over its expert-parallel ranks
    /// (None for dense models).
    pub experts: Option<experts::ExpertRouting>,
    pub schedule: ScheduleKind,
    pub recompute: Recompute,
    pub seed: u64,
    /// The software stack whose defaults the options took.
    pub stack: Stack,
    /// Whether the stack is the default one (the scenario named none).
    pub stack_is_default: bool,
    /// Training options, validated.
    pub options: TrainingOptions,
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
    #[error("invalid scenario:\n  - {}", problems.iter().map(Problem::to_string).collect::<Vec<_>>().join("\n  - "))]
    Invalid { problems: Vec<Problem> },
}

impl ScenarioFile {
    /// Reads a scenario JSON file (unknown keys are errors).
    pub fn from_file(path: &std::path::Path) -> Result<ScenarioFile, ScenarioError> {
        let text = input_file::read_to_string(path).map_err(|source| ScenarioError::Read {
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
            seq_len: self.seq_len.or(base.seq_len),
            topology: self.topology.or(base.topology),
            profile: self.profile.or(base.profile),
            stack: self.stack.or(base.stack),
            tp: self.tp.or(base.tp),
            pp: self.pp.or(base.pp),
            dp: self.dp.or(base.dp),
            cp: self.cp.or(base.cp),
            ep: self.ep.or(base.ep),
            etp: self.etp.or(base.etp),
            expert_imbalance: self.expert_imbalance.or(base.expert_imbalance),
            chunks: self.chunks.or(base.chunks),
            microbatch_group_size: self.microbatch_group_size.or(base.microbatch_group_size),
            pipeline_split: self.pipeline_split.or(base.pipeline_split),
            pipeline_layout: self.pipeline_layout.or(base.pipeline_layout),
            microbatch_size: self.microbatch_size.or(base.microbatch_size),
            global_batch: self.global_batch.or(base.global_batch),
            schedule: self.schedule.or(base.schedule),
            recompute: self.recompute.or(base.recompute),
            seed: self.seed.or(base.seed),
            iterations: self.iterations.or(base.iterations),
            options: self.options.or(base.options),
        }
    }
}

/// A degree written in a test: `n`, which must not be 0.
#[cfg(test)]
pub(crate) fn degree(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).expect("a test's degree is at least 1")
}
