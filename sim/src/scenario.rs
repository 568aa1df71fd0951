//! A scenario: model + topology + profile + parallel layout + schedule +
//! options. Parsed in two phases, as ripgrep does: a raw [`ScenarioFile`]
//! (every key optional, unknown keys rejected; CLI flags override it) is
//! resolved into a validated [`Scenario`]. Resolution reports every problem at
//! once, each naming its field.

use crate::profile::Profile;
use models::ModelSpec;
use serde::{Deserialize, Serialize};
use topologies::TopologySpec;

/// Pipeline schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleKind {
    /// All forwards, then all backwards (Huang et al. 2019).
    Gpipe,
    /// PipeDream-Flush: warm-up forwards, steady one-forward-one-backward, cool-down.
    #[serde(rename = "1f1b")]
    OneFOneB,
    /// Megatron's interleaved 1F1B over `chunks` model chunks per stage.
    Interleaved,
}

impl ScheduleKind {
    pub fn name(self) -> &'static str {
        match self {
            ScheduleKind::Gpipe => "gpipe",
            ScheduleKind::OneFOneB => "1f1b",
            ScheduleKind::Interleaved => "interleaved",
        }
    }

    pub fn parse(text: &str) -> Option<ScheduleKind> {
        match text {
            "gpipe" => Some(ScheduleKind::Gpipe),
            "1f1b" => Some(ScheduleKind::OneFOneB),
            "interleaved" => Some(ScheduleKind::Interleaved),
            _ => None,
        }
    }
}

/// Activation recomputation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recompute {
    /// Keep every activation.
    None,
    /// Recompute only the attention core (scores, softmax, dropout, attention
    /// over values) before each backward (Korthikanti et al. 2022, Sec. 5).
    Selective,
    /// Keep only each layer's input; recompute the forward before each backward.
    Full,
}

impl Recompute {
    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }

    pub fn parse(text: &str) -> Option<Recompute> {
        match text {
            "none" => Some(Recompute::None),
            "selective" => Some(Recompute::Selective),
            "full" => Some(Recompute::Full),
            _ => None,
        }
    }
}

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
    /// Megatron's sequence parallelism: LayerNorm and dropout split across the
    /// tensor ranks; all-reduces become reduce-scatter + all-gather (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_parallel: Option<bool>,
    /// Run cross-node communication as flows sharing the fat tree's links
    /// (max-min fair) instead of closed-form times (default false).
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

/// DeepSpeed's default `reduce_bucket_size` (elements), used as the offload bucket.
pub const DEFAULT_OFFLOAD_BUCKET_PARAMS: u64 = 500_000_000;
/// Default warm-up iterations before the delayed parameter update starts. The
/// paper warms up for N−1 steps to protect early training; for timing one
/// undelayed iteration is enough to show the transition.
pub const DEFAULT_DPU_WARMUP_ITERATIONS: u32 = 1;

/// ZeRO-Offload options, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offload {
    /// Delayed parameter update (DPU).
    pub delayed_update: bool,
    /// Iterations without delay before DPU starts.
    pub dpu_warmup_iterations: u32,
    /// Target gradient bucket size in parameters (rounded down to whole layers, at least one).
    pub bucket_params: u64,
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
    /// Cross-node communication shares the fabric's links (flow-level contention).
    pub network_contention: bool,
    /// LayerNorm/dropout split across tensor ranks (Megatron sequence parallelism).
    pub sequence_parallel: bool,
    /// Per-chunk data-parallel all-reduces start as each chunk's backward ends.
    pub overlap_grad_reduce: bool,
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
            overlap_grad_reduce: self.overlap_grad_reduce.or(base.overlap_grad_reduce),
            zero_offload: self.zero_offload.or(base.zero_offload),
            delayed_update: self.delayed_update.or(base.delayed_update),
            dpu_warmup_iterations: self.dpu_warmup_iterations.or(base.dpu_warmup_iterations),
            iterations: self.iterations.or(base.iterations),
            offload_bucket_params: self.offload_bucket_params.or(base.offload_bucket_params),
        }
    }

    /// Validates and resolves; every problem is reported at once.
    pub fn resolve(&self) -> Result<Scenario, ScenarioError> {
        let mut problems = Vec::new();
        let model = match &self.model {
            None => {
                problems.push(
                    "model: missing (a preset name, a model JSON file, or an inline object)".into(),
                );
                None
            }
            Some(value) => resolve_model(value)
                .map_err(|e| problems.push(format!("model: {e}")))
                .ok(),
        };
        let topology = match &self.topology {
            None => {
                problems.push(
                    "topology: missing (a preset name, a topology JSON file, or an inline object)"
                        .into(),
                );
                None
            }
            Some(value) => resolve_topology(value)
                .map_err(|e| problems.push(format!("topology: {e}")))
                .ok(),
        };
        let profile = match (&self.profile, &topology) {
            (Some(name), _) => Profile::resolve(name)
                .map_err(|e| problems.push(format!("profile: {e}")))
                .ok(),
            (None, Some(topology)) => {
                let found = Profile::default_for_gpu(&topology.gpu.name);
                if found.is_none() {
                    problems.push(format!(
                        "profile: no embedded profile for GPU '{}'; pass --profile (built-ins: {})",
                        topology.gpu.name,
                        Profile::builtin_names().join(", ")
                    ));
                }
                found
            }
            (None, None) => None,
        };
        if let (Some(profile), Some(topology)) = (&profile, &topology) {
            if profile.gpu != topology.gpu.name {
                problems.push(format!(
                    "profile: '{}' describes {} but topology '{}' has {}",
                    profile.id, profile.gpu, topology.name, topology.gpu.name
                ));
            }
        }

        let schedule = self.schedule.unwrap_or(ScheduleKind::OneFOneB);
        let recompute = self.recompute.unwrap_or(Recompute::None);
        let mut positive = |key: &str, value: Option<u32>, default: Option<u32>| -> u32 {
            match value.or(default) {
                None => {
                    problems.push(format!("{key}: missing"));
                    1
                }
                Some(0) => {
                    problems.push(format!("{key}: must be at least 1"));
                    1
                }
                Some(v) => v,
            }
        };
        let t = positive("tp", self.tp, Some(1));
        let p = positive("pp", self.pp, Some(1));
        let d = positive("dp", self.dp, Some(1));
        let v = positive("chunks", self.chunks, Some(1));
        let b = positive("microbatch_size", self.microbatch_size, Some(1));
        let global_batch = positive("global_batch", self.global_batch, None);
        // u64 arithmetic throughout: flags are u32 and their products can overflow.
        let samples_per_step = b as u64 * d as u64;
        let m = (global_batch as u64 / samples_per_step) as u32;

        if global_batch as u64 % samples_per_step != 0 {
            problems.push(format!(
                "global_batch: {global_batch} is not divisible by microbatch_size × dp = {b} × {d} = {samples_per_step}"
            ));
        } else if m == 0 {
            problems.push("global_batch: gives zero microbatches".into());
        }
        match schedule {
            ScheduleKind::Interleaved => {
                if v < 2 {
                    problems.push(format!(
                        "chunks: the interleaved schedule needs chunks ≥ 2 (got {v})"
                    ));
                }
                if p < 2 {
                    problems.push(
                        "pp: the interleaved schedule needs at least 2 pipeline stages".into(),
                    );
                }
                if m > 0 && m % p != 0 {
                    problems.push(format!(
                        "global_batch: the interleaved schedule needs microbatches m = B/(b·d) = {m} to be a multiple of pp = {p}"
                    ));
                }
            }
            _ => {
                if v != 1 {
                    problems.push(format!(
                        "chunks: {v} model chunks need --schedule interleaved ({} uses one chunk per stage)",
                        schedule.name()
                    ));
                }
            }
        }
        if let Some(model) = &model {
            if model.heads % t as u64 != 0 {
                problems.push(format!(
                    "tp: heads ({}) must be divisible by tp ({t})",
                    model.heads
                ));
            }
            if model.ffn() % t as u64 != 0 {
                problems.push(format!(
                    "tp: ffn_hidden ({}) must be divisible by tp ({t})",
                    model.ffn()
                ));
            }
            if model.vocab % t as u64 != 0 {
                problems.push(format!(
                    "tp: vocab ({}) must be divisible by tp ({t}) (pad the vocabulary)",
                    model.vocab
                ));
            }
            if model.layers % (p as u64 * v as u64) != 0 {
                problems.push(format!(
                    "pp: layers ({}) must be divisible by pp × chunks = {p} × {v} = {}",
                    model.layers,
                    p as u64 * v as u64
                ));
            }
        }
        if let Some(topology) = &topology {
            let needed = t as u64 * p as u64 * d as u64;
            if needed > topology.total_gpus() {
                problems.push(format!(
                    "tp × pp × dp = {t} × {p} × {d} = {needed} GPUs, but topology '{}' has {}",
                    topology.name,
                    topology.total_gpus()
                ));
            }
            let per_node = topology.node.gpus_per_node;
            if per_node % t != 0 && t % per_node != 0 {
                problems.push(format!(
                    "tp: {t} neither divides nor is a multiple of the {per_node} GPUs per node, so tensor groups would straddle nodes unevenly"
                ));
            }
        }
        let (offload, iterations) = self.resolve_offload(p, &mut problems);
        // Every task is held in memory (~170 bytes with its edges and timeline
        // record): refuse graphs that would not fit a workstation, before building them.
        let passes = if self.recompute.unwrap_or(Recompute::None) == Recompute::None {
            2
        } else {
            3
        };
        let estimated_tasks = [
            d as u64,
            p as u64,
            v as u64,
            m as u64,
            passes,
            t as u64 + 1,
            iterations.max(1) as u64,
        ]
        .into_iter()
        .fold(1u64, u64::saturating_mul);
        if estimated_tasks > MAX_TASKS {
            problems.push(format!(
                "global_batch: this layout needs about {estimated_tasks} tasks per simulation; the limit is {MAX_TASKS} (~10 GB); use fewer microbatches (a larger microbatch_size or smaller global_batch) or fewer GPUs"
            ));
        }
        if !problems.is_empty() {
            return Err(ScenarioError::Invalid { problems });
        }
        Ok(Scenario {
            model: model.expect("checked"),
            topology: topology.expect("checked"),
            profile: profile.expect("checked"),
            layout: Layout {
                tensor_parallel: t,
                pipeline_parallel: p,
                data_parallel: d,
                chunks: v,
                microbatch_size: b,
                global_batch,
                microbatches: m,
            },
            schedule,
            recompute,
            pipeline_scatter_gather: self.pipeline_scatter_gather.unwrap_or(true),
            seed: self.seed.unwrap_or(0),
            network_contention: self.network_contention.unwrap_or(false),
            sequence_parallel: self.sequence_parallel.unwrap_or(false),
            overlap_grad_reduce: self.overlap_grad_reduce.unwrap_or(false),
            offload,
            iterations,
        })
    }

    /// The ZeRO-Offload keys and the iteration count; problems are appended.
    fn resolve_offload(
        &self,
        pipeline_parallel: u32,
        problems: &mut Vec<String>,
    ) -> (Option<Offload>, u32) {
        let zero_offload = self.zero_offload.unwrap_or(false);
        let delayed_update = self.delayed_update.unwrap_or(false);
        if delayed_update && !zero_offload {
            problems.push(
                "delayed_update: needs zero_offload (the delayed parameter update overlaps ZeRO-Offload's CPU optimizer step; add --zero-offload)"
                    .into(),
            );
        }
        if self.dpu_warmup_iterations.is_some() && !delayed_update {
            problems.push(
                "dpu_warmup_iterations: only meaningful with delayed_update (--delayed-update)"
                    .into(),
            );
        }
        if self.offload_bucket_params.is_some() && !zero_offload {
            problems.push("offload_bucket_params: only meaningful with zero_offload".into());
        }
        if self.offload_bucket_params == Some(0) {
            problems.push("offload_bucket_params: must be at least 1".into());
        }
        if zero_offload && pipeline_parallel > 1 {
            problems.push(format!(
                "zero_offload: pipeline parallelism is not supported with ZeRO-Offload (pp = {pipeline_parallel}); it composes with data and tensor parallelism, as in the paper: use --pp 1"
            ));
        }
        let warmup = self
            .dpu_warmup_iterations
            .unwrap_or(DEFAULT_DPU_WARMUP_ITERATIONS);
        let default_iterations = if delayed_update && zero_offload {
            warmup + 3
        } else {
            1
        };
        let iterations = self.iterations.unwrap_or(default_iterations);
        if iterations == 0 {
            problems.push("iterations: must be at least 1".into());
        } else if iterations > u16::MAX as u32 {
            problems.push(format!(
                "iterations: at most {} can be simulated (got {iterations})",
                u16::MAX
            ));
        } else if iterations > 1 && !zero_offload {
            problems.push(
                "iterations: several consecutive iterations are simulated only with zero_offload (every other iteration is identical)"
                    .into(),
            );
        } else if delayed_update && zero_offload && iterations < warmup + 3 {
            problems.push(format!(
                "iterations: {iterations} cannot show the delayed steady state (warm-up, a first delayed iteration, the measured one and one after it); with dpu_warmup_iterations = {warmup} simulate at least {}",
                warmup + 3
            ));
        }
        let offload = zero_offload.then_some(Offload {
            delayed_update,
            dpu_warmup_iterations: warmup,
            bucket_params: self
                .offload_bucket_params
                .unwrap_or(DEFAULT_OFFLOAD_BUCKET_PARAMS)
                .max(1),
        });
        (offload, iterations.max(1))
    }
}

fn resolve_model(value: &serde_json::Value) -> Result<ModelSpec, String> {
    match value {
        serde_json::Value::String(name) => ModelSpec::resolve(name).map_err(|e| e.to_string()),
        serde_json::Value::Object(_) => {
            ModelSpec::from_json_str(&value.to_string(), "inline model").map_err(|e| e.to_string())
        }
        other => Err(format!("expected a name, a path or an object, got {other}")),
    }
}

fn resolve_topology(value: &serde_json::Value) -> Result<TopologySpec, String> {
    match value {
        serde_json::Value::String(name) => TopologySpec::resolve(name).map_err(|e| e.to_string()),
        serde_json::Value::Object(_) => {
            TopologySpec::from_json_str(&value.to_string(), "inline topology")
                .map_err(|e| e.to_string())
        }
        other => Err(format!("expected a name, a path or an object, got {other}")),
    }
}

impl Scenario {
    /// One-line description used as chart and report titles.
    pub fn title(&self) -> String {
        let l = &self.layout;
        let offload = match self.offload {
            None => String::new(),
            Some(Offload {
                delayed_update: false,
                ..
            }) => " · ZeRO-Offload".into(),
            Some(Offload {
                delayed_update: true,
                dpu_warmup_iterations,
                ..
            }) => format!(
                " · ZeRO-Offload + DPU (warm-up {dpu_warmup_iterations}, {} iterations)",
                self.iterations
            ),
        };
        let contention = if self.network_contention {
            " · contention"
        } else {
            ""
        };
        let sequence_parallel = match (self.sequence_parallel, self.overlap_grad_reduce) {
            (false, false) => "",
            (true, false) => " · sequence parallel",
            (false, true) => " · overlapped grad reduce",
            (true, true) => " · sequence parallel · overlapped grad reduce",
        };
        format!(
            "{} on {} · t={} p={} d={} v={} · b={} B={} · {} · recompute={}{sequence_parallel}{offload}{contention}",
            self.model.name,
            self.topology.name,
            l.tensor_parallel,
            l.pipeline_parallel,
            l.data_parallel,
            l.chunks,
            l.microbatch_size,
            l.global_batch,
            self.schedule.name(),
            self.recompute.name(),
        )
    }

    /// The resolved scenario as JSON (model and topology inline), for timeline headers.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::json!({
            "title": self.title(),
            "model": self.model,
            "topology": self.topology,
            "profile": self.profile.id,
            "layout": self.layout,
            "schedule": self.schedule,
            "recompute": self.recompute,
            "pipeline_scatter_gather": self.pipeline_scatter_gather,
            "network_contention": self.network_contention,
            "sequence_parallel": self.sequence_parallel,
            "overlap_grad_reduce": self.overlap_grad_reduce,
            "seed": self.seed,
        });
        if let Some(offload) = &self.offload {
            value["zero_offload"] = serde_json::json!(offload);
            value["iterations"] = self.iterations.into();
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_tiny_scenarios_resolve() {
        ScenarioFile::embedded_default().resolve().unwrap();
        ScenarioFile::tiny_example().resolve().unwrap();
    }

    #[test]
    fn every_layout_problem_is_reported_at_once() {
        let file = ScenarioFile {
            tp: Some(5),
            pp: Some(5),
            dp: Some(4),
            chunks: Some(2),
            global_batch: Some(10),
            schedule: Some(ScheduleKind::Interleaved),
            ..ScenarioFile::embedded_default()
        };
        let text = file.resolve().unwrap_err().to_string();
        for needle in [
            "heads (96) must be divisible by tp (5)",
            "layers (96) must be divisible by pp × chunks",
            "global_batch: 10 is not divisible",
            "tp: 5 neither divides",
        ] {
            assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
        }
    }

    #[test]
    fn too_many_gpus_and_interleaving_rules_are_named() {
        let file = ScenarioFile {
            dp: Some(64),
            global_batch: Some(1536),
            ..ScenarioFile::embedded_default()
        };
        assert!(file
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("8192 GPUs, but topology 'selene' has 4480"));
        let file = ScenarioFile {
            schedule: Some(ScheduleKind::Interleaved),
            chunks: Some(2),
            global_batch: Some(8 * 20),
            ..ScenarioFile::embedded_default()
        };
        assert!(file
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("multiple of pp = 16"));
        let file = ScenarioFile {
            chunks: Some(2),
            ..ScenarioFile::embedded_default()
        };
        assert!(file
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("need --schedule interleaved"));
    }

    #[test]
    fn bad_offload_combinations_are_named() {
        let single_gpu = ScenarioFile {
            model: Some("gpt2-1b".into()),
            topology: Some("dgx2-v100".into()),
            tp: Some(1),
            pp: Some(1),
            dp: Some(1),
            microbatch_size: Some(10),
            global_batch: Some(10),
            ..ScenarioFile::default()
        };
        let expect = |file: ScenarioFile, needle: &str| {
            let text = file.resolve().unwrap_err().to_string();
            assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
        };
        expect(
            ScenarioFile {
                delayed_update: Some(true),
                ..single_gpu.clone()
            },
            "delayed_update: needs zero_offload",
        );
        expect(
            ScenarioFile {
                zero_offload: Some(true),
                ..ScenarioFile::embedded_default()
            },
            "pipeline parallelism is not supported with ZeRO-Offload (pp = 16)",
        );
        expect(
            ScenarioFile {
                iterations: Some(3),
                ..single_gpu.clone()
            },
            "only with zero_offload",
        );
        expect(
            ScenarioFile {
                zero_offload: Some(true),
                delayed_update: Some(true),
                dpu_warmup_iterations: Some(2),
                iterations: Some(4),
                ..single_gpu.clone()
            },
            "simulate at least 5",
        );
        expect(
            ScenarioFile {
                dpu_warmup_iterations: Some(2),
                zero_offload: Some(true),
                ..single_gpu.clone()
            },
            "dpu_warmup_iterations: only meaningful with delayed_update",
        );
        let scenario = ScenarioFile {
            zero_offload: Some(true),
            delayed_update: Some(true),
            ..single_gpu
        }
        .resolve()
        .unwrap();
        assert_eq!(scenario.iterations, DEFAULT_DPU_WARMUP_ITERATIONS + 3);
        assert!(scenario.title().contains("ZeRO-Offload + DPU"));
    }

    #[test]
    fn unknown_keys_and_mismatched_profiles_are_rejected() {
        let err =
            serde_json::from_str::<ScenarioFile>(r#"{"tp": 8, "tensor_parallel": 8}"#).unwrap_err();
        assert!(err.to_string().contains("tensor_parallel"));
        let file = ScenarioFile {
            profile: Some("h200".into()),
            ..ScenarioFile::embedded_default()
        };
        assert!(file
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("describes H200"));
    }
}
