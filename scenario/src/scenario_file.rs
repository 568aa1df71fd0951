//! The scenario file as written ([`ScenarioFile`]): every key optional,
//! unknown keys rejected; read from a file, the embedded default, and
//! merged over a base (CLI flags over a file).

use crate::kinds::Recompute;
use crate::options::TrainingOptionsFile;
use crate::resolved::ScenarioError;
use schedules::ScheduleKind;
use serde::{Deserialize, Serialize};

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
