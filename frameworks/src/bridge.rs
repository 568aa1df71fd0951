//! A Megatron-Bridge / NeMo 2 configuration YAML as a scenario
//! (`simulate --bridge-config`): a `ConfigContainer` dumped with
//! `to_yaml()` (model fields nested under `model.transformer`) or an
//! override file (flat `model.*` keys). Its keys are turned into the
//! Megatron-LM arguments they stand for, as Megatron-Bridge's own
//! `scripts/translate_mlm_to_bridge.py` maps them (`ARG_MAP`:
//! `model.tensor_model_parallel_size` ↔ `--tensor-model-parallel-size`,
//! `ddp.use_distributed_optimizer` ↔ `--use-distributed-optimizer`,
//! `dataset.seq_length` ↔ `--seq-length`, …; NVIDIA-NeMo/Megatron-Bridge
//! 067f987d), and read by [`crate::megatron_args`].
//!
//! A recipe is a Python function: what a file leaves out takes
//! Megatron-Core's defaults, not the recipe's, except the precision, which
//! every pre-training recipe sets to `bf16_mixed` (`_pretrain_common` in
//! `recipes/common.py`). The architecture, where the file has none, comes
//! from `--model`.

use crate::reading::{Ignored, Translation, TranslationError};
use crate::toml_keys::Keys;
use serde_json::Value;

/// The micro-batch size of Megatron-Bridge's Llama recipes, for a file
/// that does not set `train.micro_batch_size`.
const RECIPES_MICRO_BATCH: u32 = 1;

/// Reads the YAML `text` (`source` names it).
pub fn read(text: &str, source: &str) -> Result<Translation, TranslationError> {
    let refuse = |problem: String| TranslationError {
        source: source.to_string(),
        problems: vec![problem],
    };
    let document: Value =
        serde_yaml_ng::from_str(text).map_err(|e| refuse(format!("not YAML: {e}")))?;
    let table = match toml::Value::try_from(without_nulls(flat_model(document))) {
        Ok(toml::Value::Table(table)) => table,
        _ => {
            return Err(refuse(
                "not a mapping of sections (model:, train:, ddp:, …)".into(),
            ))
        }
    };
    let mut keys = Keys::of(&table);
    let mut problems = Vec::new();
    let mut arguments = megatron_arguments(&mut keys, &mut problems);
    // Every Llama H100 pre-training recipe sets micro_batch_size = 1
    // (recipes/llama/h100/llama3.py: all 27 recipes).
    let recipes_micro_batch = !keys.was_given("train.micro_batch_size");
    if recipes_micro_batch {
        arguments.extend(["--micro-batch-size".into(), RECIPES_MICRO_BATCH.to_string()]);
    }
    if !problems.is_empty() {
        return Err(TranslationError {
            source: source.to_string(),
            problems,
        });
    }
    let mut translation = crate::megatron_args::read(
        &shlex::try_join(arguments.iter().map(String::as_str)).unwrap_or_default(),
        source,
    )?;
    if recipes_micro_batch {
        translation.understood.push(crate::reading::Reading {
            argument: "(no train.micro_batch_size)".into(),
            meaning: format!("b = {RECIPES_MICRO_BATCH}, as every Llama H100 recipe sets it"),
        });
    }
    translation
        .ignored
        .extend(keys.unread().into_iter().map(|(key, argument)| Ignored {
            reason: ignored_because(&key).to_string(),
            argument,
        }));
    Ok(translation)
}

/// `model.transformer.*` (a `to_yaml()` dump) as `model.*` (an override
/// file), and the class names (`_target_`, `_builder_`) dropped.
fn flat_model(mut document: Value) -> Value {
    if let Some(model) = document.get_mut("model").and_then(Value::as_object_mut) {
        if let Some(Value::Object(transformer)) = model.remove("transformer") {
            for (key, value) in transformer {
                model.entry(key).or_insert(value);
            }
        }
    }
    drop_class_names(&mut document);
    document
}

fn drop_class_names(value: &mut Value) {
    if let Value::Object(object) = value {
        object.retain(|key, _| key != "_target_" && key != "_builder_");
        object.values_mut().for_each(drop_class_names);
    }
}

/// TOML has no null: a null key says nothing, as a missing one.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

/// How one key becomes Megatron arguments.
enum Maps {
    /// `--flag VALUE`.
    Value(&'static str),
    /// `--flag` when true.
    IfTrue(&'static str),
    /// `--flag` when false.
    IfFalse(&'static str),
    /// TransformerConfig's `num_query_groups` is the KV-head count itself;
    /// Megatron's command line also needs `--group-query-attention`.
    QueryGroups,
}

/// Megatron-Bridge's keys and the Megatron-LM arguments they stand for
/// (translate_mlm_to_bridge.py's `ARG_MAP`, and the config fields'
/// names in `training/config.py`).
const KEYS: [(&str, Maps); 40] = [
    (
        "model.tensor_model_parallel_size",
        Maps::Value("tensor-model-parallel-size"),
    ),
    (
        "model.pipeline_model_parallel_size",
        Maps::Value("pipeline-model-parallel-size"),
    ),
    (
        "model.virtual_pipeline_model_parallel_size",
        Maps::Value("num-virtual-stages-per-pipeline-rank"),
    ),
    (
        "model.context_parallel_size",
        Maps::Value("context-parallel-size"),
    ),
    (
        "model.expert_model_parallel_size",
        Maps::Value("expert-model-parallel-size"),
    ),
    (
        "model.expert_tensor_parallel_size",
        Maps::Value("expert-tensor-parallel-size"),
    ),
    (
        "model.pipeline_model_parallel_layout",
        Maps::Value("pipeline-model-parallel-layout"),
    ),
    ("model.sequence_parallel", Maps::IfTrue("sequence-parallel")),
    ("model.num_layers", Maps::Value("num-layers")),
    ("model.hidden_size", Maps::Value("hidden-size")),
    ("model.ffn_hidden_size", Maps::Value("ffn-hidden-size")),
    (
        "model.num_attention_heads",
        Maps::Value("num-attention-heads"),
    ),
    ("model.num_query_groups", Maps::QueryGroups),
    ("model.kv_channels", Maps::Value("kv-channels")),
    ("model.normalization", Maps::Value("normalization")),
    ("model.gated_linear_unit", Maps::IfTrue("swiglu")),
    (
        "model.add_bias_linear",
        Maps::IfFalse("disable-bias-linear"),
    ),
    ("model.add_qkv_bias", Maps::IfTrue("add-qkv-bias")),
    (
        "model.share_embeddings_and_output_weights",
        Maps::IfFalse("untie-embeddings-and-output-weights"),
    ),
    (
        "model.position_embedding_type",
        Maps::Value("position-embedding-type"),
    ),
    ("model.vocab_size", Maps::Value("vocab-size")),
    (
        "model.make_vocab_size_divisible_by",
        Maps::Value("make-vocab-size-divisible-by"),
    ),
    ("model.attention_dropout", Maps::Value("attention-dropout")),
    ("model.hidden_dropout", Maps::Value("hidden-dropout")),
    ("model.num_moe_experts", Maps::Value("num-experts")),
    ("model.moe_router_topk", Maps::Value("moe-router-topk")),
    (
        "model.moe_ffn_hidden_size",
        Maps::Value("moe-ffn-hidden-size"),
    ),
    (
        "model.moe_shared_expert_intermediate_size",
        Maps::Value("moe-shared-expert-intermediate-size"),
    ),
    (
        "model.moe_token_dispatcher_type",
        Maps::Value("moe-token-dispatcher-type"),
    ),
    (
        "model.recompute_granularity",
        Maps::Value("recompute-granularity"),
    ),
    (
        "model.gradient_accumulation_fusion",
        Maps::IfFalse("no-gradient-accumulation-fusion"),
    ),
    ("model.recompute_method", Maps::Value("recompute-method")),
    (
        "model.recompute_num_layers",
        Maps::Value("recompute-num-layers"),
    ),
    ("train.global_batch_size", Maps::Value("global-batch-size")),
    ("train.micro_batch_size", Maps::Value("micro-batch-size")),
    (
        "ddp.use_distributed_optimizer",
        Maps::IfTrue("use-distributed-optimizer"),
    ),
    (
        "optimizer.use_distributed_optimizer",
        Maps::IfTrue("use-distributed-optimizer"),
    ),
    (
        "ddp.overlap_grad_reduce",
        Maps::IfTrue("overlap-grad-reduce"),
    ),
    (
        "ddp.overlap_param_gather",
        Maps::IfTrue("overlap-param-gather"),
    ),
    (
        "comm_overlap.tp_comm_overlap",
        Maps::IfTrue("tp-comm-overlap"),
    ),
];

/// The Megatron arguments the file's keys stand for, with the sequence
/// length (`dataset.seq_length`, else `model.seq_length`) and the precision
/// (`mixed_precision`, else the recipes' `bf16_mixed`).
fn megatron_arguments(keys: &mut Keys, problems: &mut Vec<String>) -> Vec<String> {
    let mut arguments = Vec::new();
    for (key, maps) in &KEYS {
        let Some(value) = keys.scalar(key) else {
            continue;
        };
        match (maps, value.as_bool()) {
            (Maps::Value(flag), _) => arguments.extend([format!("--{flag}"), scalar_text(&value)]),
            (Maps::QueryGroups, _) => arguments.extend([
                "--group-query-attention".into(),
                "--num-query-groups".into(),
                scalar_text(&value),
            ]),
            (Maps::IfTrue(flag), Some(true)) | (Maps::IfFalse(flag), Some(false)) => {
                arguments.push(format!("--{flag}"))
            }
            (Maps::IfTrue(_) | Maps::IfFalse(_), Some(_)) => {}
            (_, None) => problems.push(format!("{key} = {value}: not true or false")),
        }
    }
    let seq_len = keys
        .scalar("dataset.seq_length")
        .or_else(|| keys.scalar("model.seq_length"));
    if let Some(seq_len) = seq_len {
        arguments.extend(["--seq-length".into(), scalar_text(&seq_len)]);
    }
    // A recipe's name, or a MixedPrecisionConfig's fields.
    let fields_say = |keys: &mut Keys, field: &str| {
        keys.scalar(&format!("mixed_precision.{field}"))
            .is_some_and(|v| v.as_bool() == Some(true) || v.is_str())
    };
    let precision = match keys.text("mixed_precision", problems) {
        Some(name) => name,
        None if fields_say(keys, "fp8") => "bf16_with_fp8".into(),
        None if fields_say(keys, "fp16") => "fp16_mixed".into(),
        None => "bf16_mixed".into(),
    };
    let base = if precision.contains("fp16") {
        "--fp16"
    } else {
        "--bf16"
    };
    arguments.push(base.into());
    if precision.contains("fp8") {
        arguments.extend(["--fp8-format".into(), "hybrid".into()]);
    }
    if !["bf16", "fp16", "fp8"]
        .iter()
        .any(|p| precision.contains(p))
    {
        problems.push(format!(
            "mixed_precision = {precision:?}: a bf16, fp16 or fp8 recipe is modeled"
        ));
    }
    arguments
}

fn scalar_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Why a key clustersim does not use is ignored, by its section.
fn ignored_because(key: &str) -> &'static str {
    match key.split('.').next().unwrap_or_default() {
        "logger"
        | "profiling"
        | "validation"
        | "rng"
        | "dist"
        | "ft"
        | "straggler"
        | "nvrx_straggler"
        | "rerun_state_machine"
        | "inprocess_restart"
        | "tensor_inspect"
        | "env_vars" => {
            "logging, evaluation, profiling and job settings are not part of a training iteration"
        }
        "optimizer" | "scheduler" => "a training hyperparameter: no effect on an iteration's time",
        "checkpoint" => "checkpoints are not part of a training iteration",
        "dataset" | "tokenizer" => "data loading and tokenization are not timed",
        "train" => "a training-loop setting: no effect on an iteration's time",
        _ => "not known to clustersim: check it does not change the step's time",
    }
}

#[cfg(test)]
#[path = "bridge_tests.rs"]
mod tests;
