//! A Hugging Face `config.json` as a [`ModelSpec`]: `--model path/config.json`
//! works for the architectures below, recognised by the file's keys (a
//! `model_type` key; clustersim's own model files have none).
//!
//! | `model_type` | block |
//! |---|---|
//! | `llama`, `mistral` | RMSNorm, RoPE, SwiGLU, grouped-query attention, no biases (`attention_bias`, default false, adds QKV and output biases as in `LlamaAttention`) |
//! | `qwen2` | the same with QKV biases only (`Qwen2Attention`: q/k/v `bias=True`, o_proj `bias=False`) |
//! | `gpt2` | LayerNorm, learned positions, GeLU MLP (`n_inner`, default 4·h), biases, tied embeddings |
//! | `mixtral` | the Llama block with `num_local_experts` experts of `intermediate_size`, `num_experts_per_tok` per token |
//! | `qwen3_moe` | the Llama block with `head_dim`, q/k RMSNorms, `num_experts` experts of `moe_intermediate_size` in every layer (`decoder_sparse_step` 1, no `mlp_only_layers`) |
//! | `deepseek_v3` | MLA (`q_lora_rank`, `kv_lora_rank`, `qk_nope_head_dim`, `qk_rope_head_dim`, `v_head_dim`), `first_k_dense_replace` dense layers of `intermediate_size`, then `n_routed_experts` of `moe_intermediate_size` and `n_shared_experts`, sigmoid `noaux_tc` router |
//!
//! Mixtures of experts and MLA are read and counted; the simulator refuses
//! them. DeepSeek-V3's multi-token-prediction module (`num_nextn_predict_layers`)
//! is not part of the imported model (its 671 B exclude it).
//! Any other `model_type` (other mixtures of experts, Gemma, Falcon, …) is
//! refused by name. Choices the config leaves to the trainer:
//! - sequence length: the length the model pre-trained at, not its longest
//!   context: `max_position_embeddings` (`n_positions` for GPT-2), or
//!   `rope_scaling.original_max_position_embeddings` where the context was
//!   extended after pre-training (Llama 3.1, DeepSeek-V3), or Qwen's published
//!   4,096; then the `sliding_window` when it is shorter and in use (Mistral
//!   7B: 4096 of 32768), where full attention over the window is exact
//!   (`--seq-len` sets another);
//! - number format: `torch_dtype` (`dtype` in newer configs), which a
//!   scenario naming no precision trains in (`float16`, `bfloat16`);
//! - vocabulary: padded up to a multiple of 128 as Megatron-LM pads it
//!   (`--make-vocab-size-divisible-by`, default 128; its further factor of t
//!   is left to the layout check), with `vocab_unpadded` keeping the
//!   tokenizer's size for the published parameter count;
//! - dropout: `attention_dropout` (default 0.0) and no residual dropout for
//!   the Llama-style blocks, `attn_pdrop` and `resid_pdrop` (default 0.1) for
//!   GPT-2 ([`crate::dropout`]);
//! - name: the folder holding `config.json` (a Hugging Face snapshot is
//!   named after the model), else the file's stem.

use crate::hf_config_dense::{gpt2, llama_like};
pub use crate::hf_fields::VOCAB_PADDING_MULTIPLE;
use crate::hf_fields::{invalid, Fields};
use crate::spec::{ModelError, ModelSpec};
use serde_json::Value;

/// The `model_type`s this importer knows.
pub const SUPPORTED_MODEL_TYPES: [&str; 7] = [
    "llama",
    "mistral",
    "qwen2",
    "gpt2",
    "mixtral",
    "qwen3_moe",
    "deepseek_v3",
];

/// Whether a parsed JSON document is a Hugging Face config (it has `model_type`).
pub fn is_hf_config(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|object| object.contains_key("model_type"))
}

/// The model a Hugging Face config describes; `origin` is the file's path.
pub fn from_hf_config(value: &Value, origin: &str) -> Result<ModelSpec, ModelError> {
    let object = value
        .as_object()
        .ok_or_else(|| invalid(origin, "not a JSON object".into()))?;
    let model_type = object
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let fields = Fields { object, origin };
    let mut spec = match model_type.as_str() {
        "llama" | "mistral" | "qwen2" => llama_like(&fields, &model_type)?,
        "gpt2" => gpt2(&fields)?,
        "mixtral" => crate::hf_config_moe::mixtral(&fields)?,
        "qwen3_moe" => crate::hf_config_moe::qwen3_moe(&fields)?,
        "deepseek_v3" => crate::hf_config_moe::deepseek_v3(&fields)?,
        _ => {
            let architecture = object
                .get("architectures")
                .and_then(|a| a.get(0))
                .and_then(Value::as_str)
                .map(|a| format!(" ({a})"))
                .unwrap_or_default();
            return Err(ModelError::UnsupportedArchitecture {
                path: origin.to_string(),
                model_type: format!("{model_type}{architecture}"),
                supported: SUPPORTED_MODEL_TYPES.join(", "),
            });
        }
    };
    if let Some(tokens) = pretraining_tokens(&fields, &model_type)? {
        spec.seq_len = spec.seq_len.min(tokens);
    }
    spec.trained_dtype = fields.trained_dtype();
    spec.validate()?;
    Ok(spec)
}

/// Qwen2.5 and Qwen3 pre-train at 4,096 tokens before a long-context stage
/// (Qwen2.5 technical report, long-context pre-training: 4,096 then 32,768;
/// Qwen3 technical report, Sec. 3.2: 4,096 in the first two stages); their
/// configs give only the extended context (131,072 and 40,960).
const QWEN_PRETRAINING_TOKENS: u64 = 4096;

/// The sequence length a model pre-trained at, where the config's
/// `max_position_embeddings` is a context extended after pre-training:
/// `rope_scaling.original_max_position_embeddings` (Llama 3.1: 8,192 of
/// 131,072; DeepSeek-V3: 4,096 of 163,840), or the family's published
/// pre-training length (Qwen).
fn pretraining_tokens(fields: &Fields, model_type: &str) -> Result<Option<u64>, ModelError> {
    let original = match fields.object.get("rope_scaling") {
        Some(serde_json::Value::Object(scaling)) => Fields {
            object: scaling,
            origin: fields.origin,
        }
        .count("original_max_position_embeddings")?,
        _ => None,
    };
    Ok(original.or(match model_type {
        "qwen2" | "qwen3_moe" => Some(QWEN_PRETRAINING_TOKENS),
        _ => None,
    }))
}

#[cfg(test)]
#[path = "hf_config_tests.rs"]
mod tests;
