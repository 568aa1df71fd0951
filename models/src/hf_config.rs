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
//! - sequence length: `max_position_embeddings` (`n_positions` for GPT-2), or
//!   the `sliding_window` when it is shorter and in use (Mistral 7B: 4096 of
//!   32768), where full attention over the window is exact;
//! - vocabulary: padded up to a multiple of 128 as Megatron-LM pads it
//!   (`--make-vocab-size-divisible-by`, default 128; its further factor of t
//!   is left to the layout check), with `vocab_unpadded` keeping the
//!   tokenizer's size for the published parameter count;
//! - dropout: `attention_dropout` (default 0.0) and no residual dropout for
//!   the Llama-style blocks, `attn_pdrop` and `resid_pdrop` (default 0.1) for
//!   GPT-2 ([`crate::dropout`]);
//! - name: the folder holding `config.json` (a Hugging Face snapshot is
//!   named after the model), else the file's stem.

use crate::spec::{FfnType, ModelError, ModelSpec, NormType};
use crate::DropoutRate;
use serde_json::{Map, Value};
use std::path::Path;

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

/// Megatron-LM's `--make-vocab-size-divisible-by` default.
pub const VOCAB_PADDING_MULTIPLE: u64 = 128;

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
    let spec = match model_type.as_str() {
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
    spec.validate()?;
    Ok(spec)
}

pub(crate) fn invalid(origin: &str, problem: String) -> ModelError {
    ModelError::Invalid {
        name: origin.to_string(),
        problems: vec![problem],
    }
}

/// Typed reads of a config's keys, with the file named in errors.
pub(crate) struct Fields<'a> {
    pub(crate) object: &'a Map<String, Value>,
    pub(crate) origin: &'a str,
}

impl Fields<'_> {
    pub(crate) fn count(&self, key: &str) -> Result<Option<u64>, ModelError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value.as_u64().map(Some).ok_or_else(|| {
                invalid(
                    self.origin,
                    format!("config key {key} is {value}, not a whole number"),
                )
            }),
        }
    }

    pub(crate) fn required(&self, key: &str) -> Result<u64, ModelError> {
        self.count(key)?.ok_or_else(|| {
            invalid(
                self.origin,
                format!("config key {key} is missing (a Hugging Face config.json has it)"),
            )
        })
    }

    pub(crate) fn flag(&self, key: &str, default: bool) -> Result<bool, ModelError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(value)) => Ok(*value),
            Some(value) => Err(invalid(
                self.origin,
                format!("config key {key} is {value}, not true or false"),
            )),
        }
    }

    /// A dropout probability (a number; validated with the spec).
    pub(crate) fn dropout(&self, key: &str, default: f64) -> Result<DropoutRate, ModelError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(DropoutRate::new(default)),
            Some(value) => value.as_f64().map(DropoutRate::new).ok_or_else(|| {
                invalid(
                    self.origin,
                    format!("config key {key} is {value}, not a probability"),
                )
            }),
        }
    }

    pub(crate) fn text(&self, key: &str) -> Option<&str> {
        self.object.get(key).and_then(Value::as_str)
    }

    /// The model's name: the folder of a `config.json`, else the file stem.
    pub(crate) fn name(&self) -> String {
        let path = Path::new(self.origin);
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        match (stem.as_deref(), path.parent().and_then(Path::file_name)) {
            (Some("config"), Some(folder)) => folder.to_string_lossy().into_owned(),
            (Some(stem), _) => stem.trim_end_matches(".config").to_string(),
            (None, _) => "hf-model".into(),
        }
    }
}

/// The vocabulary padded to Megatron's multiple, and the tokenizer's size
/// when padding changed it; sizes past any padding's reach are left as they
/// are for the model's limit check to name.
pub(crate) fn padded_vocab(vocab: u64) -> (u64, Option<u64>) {
    match vocab
        .div_ceil(VOCAB_PADDING_MULTIPLE)
        .checked_mul(VOCAB_PADDING_MULTIPLE)
    {
        Some(padded) => (padded, (padded != vocab).then_some(vocab)),
        None => (vocab, None),
    }
}

/// Llama, Mistral and Qwen2: the same decoder block, biases aside.
pub(crate) fn llama_like(fields: &Fields, model_type: &str) -> Result<ModelSpec, ModelError> {
    let hidden = fields.required("hidden_size")?;
    let heads = fields.required("num_attention_heads")?;
    if let Some(act) = fields.text("hidden_act") {
        if act != "silu" {
            return Err(invalid(
                fields.origin,
                format!("hidden_act '{act}': only SwiGLU (silu) MLPs are modeled for {model_type}"),
            ));
        }
    }
    // Qwen3 declares heads wider than hidden/heads; the others may only
    // restate hidden/heads.
    let wide_heads = model_type == "qwen3_moe";
    let head_dim = fields.count("head_dim")?;
    if let Some(head_dim) = head_dim.filter(|_| !wide_heads) {
        if head_dim.checked_mul(heads) != Some(hidden) {
            return Err(invalid(
                fields.origin,
                format!("head_dim {head_dim} × {heads} heads is not hidden_size {hidden}: attention wider than the hidden size is not modeled"),
            ));
        }
    }
    let context = fields.required("max_position_embeddings")?;
    let window = match (
        fields.count("sliding_window")?,
        fields.flag("use_sliding_window", true)?,
    ) {
        (Some(window), true) if window > 0 => Some(window),
        _ => None,
    };
    let attention_bias = fields.flag("attention_bias", false)?;
    let (bias, qkv_bias) = match model_type {
        "qwen2" => (false, Some(true)),
        _ => (attention_bias, None),
    };
    let (vocab, vocab_unpadded) = padded_vocab(fields.required("vocab_size")?);
    Ok(ModelSpec {
        name: fields.name(),
        layers: fields.required("num_hidden_layers")?,
        hidden,
        heads,
        seq_len: window.map_or(context, |w| w.min(context)),
        vocab,
        ffn_hidden: Some(fields.required("intermediate_size")?),
        kv_heads: Some(fields.count("num_key_value_heads")?.unwrap_or(heads)),
        ffn_type: FfnType::Swiglu,
        norm: NormType::Rmsnorm,
        bias,
        qkv_bias,
        rope: true,
        tied_embeddings: fields.flag("tie_word_embeddings", false)?,
        vocab_unpadded,
        head_dim: head_dim.filter(|&d| wide_heads && hidden.checked_div(heads) != Some(d)),
        qk_norm: false,
        moe: None,
        mla: None,
        // `LlamaConfig` and its kin: `attention_dropout` (default 0.0); the
        // decoder layer has no residual dropout.
        attention_dropout: fields.dropout("attention_dropout", 0.0)?,
        hidden_dropout: DropoutRate::NONE,
    })
}

/// OpenAI's GPT-2 as `transformers` stores it.
fn gpt2(fields: &Fields) -> Result<ModelSpec, ModelError> {
    if let Some(act) = fields.text("activation_function") {
        if !act.starts_with("gelu") {
            return Err(invalid(
                fields.origin,
                format!("activation_function '{act}': only GeLU MLPs are modeled for gpt2"),
            ));
        }
    }
    let hidden = fields.required("n_embd")?;
    let (vocab, vocab_unpadded) = padded_vocab(fields.required("vocab_size")?);
    Ok(ModelSpec {
        name: fields.name(),
        layers: fields.required("n_layer")?,
        hidden,
        heads: fields.required("n_head")?,
        seq_len: fields.required("n_positions")?,
        vocab,
        ffn_hidden: fields.count("n_inner")?,
        kv_heads: None,
        ffn_type: FfnType::Gelu,
        norm: NormType::Layernorm,
        bias: true,
        qkv_bias: None,
        rope: false,
        tied_embeddings: fields.flag("tie_word_embeddings", true)?,
        vocab_unpadded,
        head_dim: None,
        qk_norm: false,
        moe: None,
        mla: None,
        // `GPT2Config`'s defaults, 0.1 each; `embd_pdrop` is taken to be
        // `resid_pdrop` (one hidden rate for the residual and the embeddings).
        attention_dropout: fields.dropout("attn_pdrop", 0.1)?,
        hidden_dropout: fields.dropout("resid_pdrop", 0.1)?,
    })
}

#[cfg(test)]
#[path = "hf_config_tests.rs"]
mod tests;
