//! A torchtitan training TOML as a scenario (`simulate --torchtitan`):
//! the llama3 flavor as its preset, the batch and sequence length, the
//! tensor, pipeline, context and data-parallel degrees with FSDP2 as ZeRO
//! stage 3 (HSDP: shard groups of `data_parallel_shard_degree`), mixed
//! precision and activation checkpointing; torchtitan's defaults for what
//! the file leaves out (pytorch/torchtitan 238fa995,
//! `torchtitan/config/job_config.py`: `frameworks/fixtures/torchtitan/README.md`).
//!
//! torchtitan's own kernels and host costs were never measured here: the run
//! is priced under `megatron-core-2024` (fused attention, bf16), and says so.

use crate::reading::{Ignored, Reading, Translation, TranslationError};
use crate::toml_keys::Keys;
use scenario::{Precision, Recompute, ScenarioFile, ScheduleKind};

/// The stack a torchtitan run is priced under.
pub const TORCHTITAN_STACK: &str = "megatron-core-2024";

/// torchtitan's llama3 flavors and the presets with the same blocks
/// (`torchtitan/models/llama3/__init__.py` `llama3_args`: dim, layers,
/// heads, KV heads 8, FFN from `ffn_dim_multiplier` and `multiple_of`,
/// vocabulary 128,256, untied output, no dropout).
const LLAMA3_FLAVORS: [(&str, &str); 3] = [
    ("8B", "llama3-8b"),
    ("70B", "llama3-70b"),
    ("405B", "llama3.1-405b"),
];

/// Reads the TOML `text` (`source` names it).
pub fn read(text: &str, source: &str) -> Result<Translation, TranslationError> {
    let refuse = |problems: Vec<String>| TranslationError {
        source: source.to_string(),
        problems,
    };
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| refuse(vec![format!("not TOML: {}", e.message())]))?;
    let mut problems = Vec::new();
    let mut reader = Reader {
        keys: Keys::of(&table),
        local_batch: None,
        problems: &mut problems,
        understood: Vec::new(),
        file: ScenarioFile {
            stack: Some(TORCHTITAN_STACK.into()),
            ..ScenarioFile::default()
        },
    };
    reader.note("(torchtitan)".into(), format!("priced under {TORCHTITAN_STACK}: torchtitan's own kernels and host costs were not measured"));
    reader.model();
    let fsdp = reader.parallelism();
    reader.batch();
    reader.precision(fsdp);
    reader.checkpointing();
    let local_batch = reader.local_batch;
    let Reader {
        keys,
        understood,
        file,
        ..
    } = reader;
    if !problems.is_empty() {
        return Err(refuse(problems));
    }
    let ignored = keys
        .unread()
        .into_iter()
        .map(|(key, argument)| Ignored {
            reason: ignored_because(&key).to_string(),
            argument,
        })
        .collect();
    Ok(Translation {
        world_size: None,
        samples_per_replica: if file.global_batch.is_none() {
            local_batch
        } else {
            None
        },
        scenario: file,
        understood,
        ignored,
    })
}

struct Reader<'a> {
    keys: Keys,
    /// `training.local_batch_size`, once read.
    local_batch: Option<u32>,
    problems: &'a mut Vec<String>,
    understood: Vec<Reading>,
    file: ScenarioFile,
}

impl Reader<'_> {
    fn note(&mut self, argument: String, meaning: String) {
        self.understood.push(Reading { argument, meaning });
    }

    fn model(&mut self) {
        let name = self
            .keys
            .text("model.name", self.problems)
            .unwrap_or("llama3".into());
        let flavor = self
            .keys
            .text("model.flavor", self.problems)
            .unwrap_or("debugmodel".into());
        if name != "llama3" {
            self.problems.push(format!(
                "model.name = {name:?}: only torchtitan's llama3 flavors are read"
            ));
            return;
        }
        match LLAMA3_FLAVORS.iter().find(|(f, _)| *f == flavor) {
            Some((_, preset)) => {
                self.note(
                    format!("model.flavor = {flavor:?}"),
                    format!("the {preset} preset (the same block)"),
                );
                self.file.model = Some((*preset).into());
            }
            None => self.problems.push(format!(
                "model.flavor = {flavor:?}: the llama3 flavors read are 8B, 70B and 405B"
            )),
        }
        if let Some(seq_len) = self.keys.count("training.seq_len", self.problems) {
            self.note(
                format!("training.seq_len = {seq_len}"),
                format!("{seq_len} tokens per sample"),
            );
            self.file.seq_len = Some(seq_len);
        } else {
            // torchtitan's default.
            self.file.seq_len = Some(2048);
        }
    }

    /// `key`'s degree (default 1), noted as `name = d` where given.
    fn degree(&mut self, key: &str, name: &str) -> u32 {
        let value = self.keys.integer(key, self.problems).unwrap_or(1);
        match u32::try_from(value).ok().filter(|&d| d > 0) {
            Some(d) => {
                if self.keys.was_given(key) {
                    self.note(format!("{key} = {d}"), format!("{name} = {d}"));
                }
                d
            }
            None => {
                self.problems
                    .push(format!("{key} = {value}: not a parallel degree"));
                1
            }
        }
    }

    /// The degrees; FSDP (`data_parallel_shard_degree` > 1) as ZeRO stage 3.
    /// Returns whether FSDP shards (which turns mixed precision on).
    fn parallelism(&mut self) -> bool {
        self.file.tp = Some(self.degree("parallelism.tensor_parallel_degree", "tp"));
        self.file.pp = Some(self.degree("parallelism.pipeline_parallel_degree", "pp"));
        self.file.cp = Some(self.degree("parallelism.context_parallel_degree", "cp"));
        self.file.ep = Some(self.degree("parallelism.expert_parallel_degree", "ep"));
        self.file.chunks = Some(1);
        let replicate = self.degree(
            "parallelism.data_parallel_replicate_degree",
            "data-parallel replicas",
        );
        let shard = self
            .keys
            .integer("parallelism.data_parallel_shard_degree", self.problems)
            .unwrap_or(-1);
        if self.file.tp.is_some_and(|t| t > 1) {
            // torchtitan's tensor parallelism always shards the norms' inputs.
            self.file.options.sequence_parallel = Some(true);
            self.note(
                "(tensor parallelism)".into(),
                "sequence parallelism (torchtitan's TP always has it)".into(),
            );
        }
        if self
            .keys
            .boolean("parallelism.enable_async_tensor_parallel", self.problems)
            == Some(true)
        {
            self.note(
                "parallelism.enable_async_tensor_parallel = true".into(),
                "tensor-parallel communication overlap".into(),
            );
            self.file.options.tp_comm_overlap = Some(true);
        }
        self.schedule();
        let shard = match shard {
            -1 => None,
            n => match u32::try_from(n).ok().filter(|&n| n > 0) {
                Some(n) => Some(n),
                None => {
                    self.problems.push(format!(
                        "parallelism.data_parallel_shard_degree = {n}: -1 or a degree"
                    ));
                    return false;
                }
            },
        };
        let fsdp = shard.is_none_or(|n| n > 1);
        match shard {
            Some(n) => {
                self.file.dp = replicate.checked_mul(n);
                self.note(
                    format!("parallelism.data_parallel_shard_degree = {n}"),
                    format!("dp = replicas {replicate} × shards {n}"),
                );
            }
            None => self.note(
                "parallelism.data_parallel_shard_degree = -1".into(),
                "every rank left (the GPUs are not in the file: --dp sets d)".into(),
            ),
        }
        if fsdp {
            self.file.options.zero_stage = Some(3);
            if replicate > 1 {
                self.file.options.shard_group_size = shard;
            }
            self.note(
                "(FSDP2)".into(),
                format!(
                    "ZeRO stage 3{}",
                    if replicate > 1 {
                        " in shard groups (HSDP)"
                    } else {
                        ""
                    }
                ),
            );
        }
        fsdp
    }

    fn schedule(&mut self) {
        let pipelined = self.file.pp.is_some_and(|p| p > 1);
        let name = self
            .keys
            .text("parallelism.pipeline_parallel_schedule", self.problems)
            .unwrap_or("1F1B".into());
        let (kind, chunks) = match name.as_str() {
            "1F1B" => (ScheduleKind::OneFOneB, 1),
            "GPipe" => (ScheduleKind::Gpipe, 1),
            "Interleaved1F1B" => (ScheduleKind::Interleaved, 2),
            "LoopedBFS" => (ScheduleKind::LoopedBfs, 2),
            "ZBVZeroBubble" => (ScheduleKind::ZbV, 2),
            "DualPipeV" => (ScheduleKind::DualPipeV, 2),
            other => {
                self.problems.push(format!("parallelism.pipeline_parallel_schedule = {other:?}: 1F1B, GPipe, Interleaved1F1B, LoopedBFS, ZBVZeroBubble and DualPipeV are read"));
                return;
            }
        };
        self.file.schedule = Some(kind);
        if pipelined {
            self.file.chunks = Some(chunks);
            self.note(
                format!("parallelism.pipeline_parallel_schedule = {name:?}"),
                format!(
                    "{} (v = {chunks}: torchtitan's stages per rank)",
                    kind.name()
                ),
            );
        }
    }

    /// The microbatch and the global batch: `local_batch_size` per data-
    /// parallel rank, split into `pipeline_parallel_microbatch_size` under
    /// pipelining; the global batch its value or local × d.
    fn batch(&mut self) {
        let local = self
            .keys
            .count("training.local_batch_size", self.problems)
            .unwrap_or(8);
        let microbatch = if self.file.pp.is_some_and(|p| p > 1) {
            self.keys
                .count(
                    "parallelism.pipeline_parallel_microbatch_size",
                    self.problems,
                )
                .unwrap_or(1)
        } else {
            local
        };
        self.file.microbatch_size = u32::try_from(microbatch).ok();
        self.local_batch = u32::try_from(local).ok();
        let global = self
            .keys
            .integer("training.global_batch_size", self.problems)
            .unwrap_or(-1);
        self.file.global_batch = match (global, self.file.dp) {
            (-1, Some(dp)) => u32::try_from(local).ok().and_then(|l| l.checked_mul(dp)),
            (-1, None) => None,
            (n, _) => u32::try_from(n).ok(),
        };
        self.note(
            format!("training.local_batch_size = {local}"),
            match global {
                -1 => format!("b = {microbatch}; B = {local} × d (global_batch_size -1)"),
                n => format!("b = {microbatch}; B = {n}"),
            },
        );
    }

    fn precision(&mut self, fsdp: bool) {
        let param = self
            .keys
            .text("training.mixed_precision_param", self.problems)
            .unwrap_or("bfloat16".into());
        let dtype = self
            .keys
            .text("training.dtype", self.problems)
            .unwrap_or("float32".into());
        let converters = self
            .keys
            .strings("model.converters", self.problems)
            .unwrap_or_default();
        let float8 = converters
            .iter()
            .any(|c| c == "float8" || c == "quantize.linear.float8");
        let model_parallel =
            self.file.tp.is_some_and(|t| t > 1) || self.file.pp.is_some_and(|p| p > 1);
        let precision = match (dtype.as_str(), param.as_str()) {
            ("bfloat16", _) => {
                self.problems.push("training.dtype = \"bfloat16\": pure bf16 training (no fp32 master weights) is not modeled".into());
                return;
            }
            (_, "bfloat16") if fsdp || !model_parallel => Precision::Bf16,
            (_, "bfloat16") => {
                self.problems.push("tensor or pipeline parallelism without FSDP: torchtitan then turns mixed precision off and trains in fp32, which is not modeled".into());
                return;
            }
            (_, other) => {
                self.problems.push(format!(
                    "training.mixed_precision_param = {other:?}: bfloat16 is modeled"
                ));
                return;
            }
        };
        let precision = if float8 { Precision::Fp8 } else { precision };
        self.note(
            format!("training.mixed_precision_param = {param:?}"),
            if float8 {
                "fp8 linear layers (torchao's float8, priced as Transformer Engine's delayed scaling), the rest bf16".into()
            } else {
                "bf16 (fp32 master weights and reduction)".into()
            },
        );
        self.file.options.precision = Some(precision);
    }

    fn checkpointing(&mut self) {
        let mode = self
            .keys
            .text("activation_checkpoint.mode", self.problems)
            .unwrap_or("selective".into());
        let option = self
            .keys
            .text("activation_checkpoint.selective_ac_option", self.problems)
            .unwrap_or("2".into());
        let recompute = match (mode.as_str(), option.as_str()) {
            ("none", _) => Recompute::None,
            ("full", _) | ("selective", "1") => Recompute::Full,
            ("selective", other) => {
                self.problems.push(format!("activation_checkpoint.mode = \"selective\" with selective_ac_option = {other:?} (torchtitan's default is \"2\"): recomputing every n-th block, or op-level policies, is not modeled; \"full\" or \"none\" are"));
                return;
            }
            (other, _) => {
                self.problems.push(format!(
                    "activation_checkpoint.mode = {other:?}: none or full are modeled"
                ));
                return;
            }
        };
        self.note(
            format!("activation_checkpoint.mode = {mode:?}"),
            format!("recompute = {}", recompute.name()),
        );
        self.file.recompute = Some(recompute);
    }
}

/// Why a key clustersim does not use is ignored, by its section.
fn ignored_because(key: &str) -> &'static str {
    let section = key.split('.').next().unwrap_or_default();
    match section {
        "job" | "profiling" | "metrics" | "validation" | "debug" | "comm" => {
            "logging, evaluation, profiling and job settings are not part of a training iteration"
        }
        "optimizer" | "lr_scheduler" => {
            "a training hyperparameter: no effect on an iteration's time (AdamW is priced)"
        }
        "checkpoint" => "checkpoints are not part of a training iteration",
        "compile" => "torch.compile's fusions are not modeled: priced as the stack's kernels",
        "quantize" => "float8's options: only whether the float8 converter is on is read",
        _ if key == "model.hf_assets_path"
            || key.starts_with("training.dataset")
            || key.starts_with("training.dataloader") =>
        {
            "data, tokenizer and weights are not timed"
        }
        _ if key == "training.steps" || key == "training.max_norm" || key == "training.gc_freq" => {
            "a training hyperparameter: no effect on an iteration's time"
        }
        _ => "not known to clustersim: check it does not change the step's time",
    }
}

#[cfg(test)]
#[path = "torchtitan_tests.rs"]
mod tests;
