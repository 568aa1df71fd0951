//! The model specification: a decoder-only transformer, GPT-style by default
//! (multi-head attention, GeLU MLP, LayerNorm, biases, learned position
//! embeddings, tied embeddings) or with today's blocks (grouped-query
//! attention, SwiGLU, RMSNorm, RoPE, no biases, untied embeddings) as Llama,
//! Mistral and Qwen use them, and the keys of today's larger models: heads
//! wider than hidden/heads (`head_dim`) with per-head query/key norms
//! (`qk_norm`, Qwen3), mixtures of experts (`moe`) and multi-head latent
//! attention (`mla`), both in [`crate::moe`], and dropout rates
//! (`attention_dropout`, `hidden_dropout`: [`crate::dropout`]). Every new key is optional and its
//! default is the GPT-style block, so a spec without them means what it
//! always meant (and serializes to the same bytes).

use crate::dropout::DropoutRate;
use crate::moe::{MlaSpec, MoeSpec};
use serde::{Deserialize, Serialize};

/// The MLP's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FfnType {
    /// Two matrices, h×ffn and ffn×h, with a GeLU between (GPT).
    #[default]
    Gelu,
    /// Gated: gate and up (h×ffn each, fused into one h×2·ffn GEMM as
    /// Megatron does), silu(gate)·up, then down (ffn×h) (Llama, Mistral, Qwen).
    Swiglu,
}

/// The normalization before attention, before the MLP and after the last layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NormType {
    /// LayerNorm: a weight and a bias of h elements each.
    #[default]
    Layernorm,
    /// RMSNorm: a weight of h elements only.
    Rmsnorm,
}

fn yes() -> bool {
    true
}
fn is_true(value: &bool) -> bool {
    *value
}
fn is_false(value: &bool) -> bool {
    !*value
}
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// A decoder-only transformer. JSON keys match the field names; unknown keys
/// are rejected; keys left out take the GPT-style default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Human-readable name, e.g. "gpt3-175b".
    pub name: String,
    /// Number of transformer layers `l`.
    pub layers: u64,
    /// Hidden size `h`.
    pub hidden: u64,
    /// Attention heads `a`.
    pub heads: u64,
    /// Sequence length `s` in tokens.
    pub seq_len: u64,
    /// Vocabulary size `V` (after padding).
    pub vocab: u64,
    /// MLP inner size; 4·hidden when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ffn_hidden: Option<u64>,
    /// Key/value heads (grouped-query attention; 1 is multi-query); `heads` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_heads: Option<u64>,
    /// The MLP: "gelu" (default) or "swiglu".
    #[serde(default, skip_serializing_if = "is_default")]
    pub ffn_type: FfnType,
    /// The normalization: "layernorm" (default) or "rmsnorm".
    #[serde(default, skip_serializing_if = "is_default")]
    pub norm: NormType,
    /// Biases on every linear layer (default true; Llama has none).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub bias: bool,
    /// Biases on the QKV projection only; `bias` when absent (Qwen2: bias
    /// false, qkv_bias true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qkv_bias: Option<bool>,
    /// Rotary position embeddings: no learned position table, a rope kernel on
    /// Q and K (default false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub rope: bool,
    /// The output layer shares the word embedding's matrix (default true);
    /// untied, it has its own V×h matrix and gradient.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub tied_embeddings: bool,
    /// The tokenizer's vocabulary when `vocab` is padded past it (e.g. GPT-2's
    /// 50257 padded to 51200): the published parameter count
    /// ([`crate::formulas::published_parameter_count`]) uses it, compute and
    /// memory the padded `vocab`. Absent: `vocab` is not padded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocab_unpadded: Option<u64>,
    /// Per-head dimension of queries, keys and values when heads·head_dim is
    /// not the hidden size (Qwen3: 32 heads of 128 on h = 2048); hidden/heads
    /// when absent. Not with `mla`, which has its own head dimensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_dim: Option<u64>,
    /// A norm over each head's query and key after their projections (Qwen3's
    /// `q_norm`/`k_norm`, of head_dim each; default false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub qk_norm: bool,
    /// Mixture-of-experts MLPs ([`MoeSpec`]); absent: every layer is dense.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe: Option<MoeSpec>,
    /// Multi-head latent attention ([`MlaSpec`], DeepSeek-V3); absent: the
    /// QKV projection of `heads`/`kv_heads`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mla: Option<MlaSpec>,
    /// Dropout on the attention probabilities ([`crate::dropout`]); absent:
    /// Megatron-LM's 0.1.
    #[serde(
        default = "crate::dropout::megatron_default",
        skip_serializing_if = "crate::dropout::is_megatron_default"
    )]
    pub attention_dropout: DropoutRate,
    /// Dropout after the attention projection and the MLP and on the
    /// embeddings ([`crate::dropout`]); absent: Megatron-LM's 0.1.
    #[serde(
        default = "crate::dropout::megatron_default",
        skip_serializing_if = "crate::dropout::is_megatron_default"
    )]
    pub hidden_dropout: DropoutRate,
    /// The number format the model was trained in, where its file says so (a
    /// Hugging Face config's `torch_dtype`): a scenario that names no
    /// precision trains in it. Absent: the scenario's era decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trained_dtype: Option<TrainedDtype>,
}

/// A model's training number format, by Hugging Face's `torch_dtype` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrainedDtype {
    Float16,
    Bfloat16,
    /// fp32 weights (`"float32"`): no mixed-precision format is implied.
    Float32,
}

impl TrainedDtype {
    /// `torch_dtype`'s value (`"bfloat16"`, also `"torch.bfloat16"`); None
    /// for a name this does not know.
    pub fn parse(name: &str) -> Option<TrainedDtype> {
        match name.strip_prefix("torch.").unwrap_or(name) {
            "float16" | "half" => Some(TrainedDtype::Float16),
            "bfloat16" => Some(TrainedDtype::Bfloat16),
            "float32" | "float" => Some(TrainedDtype::Float32),
            _ => None,
        }
    }
}

/// Everything that can be wrong with a model spec or its file.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file could not be read.
    #[error("cannot read model file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// The file is not a valid model JSON (syntax, unknown key, wrong type).
    #[error("model file {path} is not a valid model: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    /// The name is neither a preset nor an existing file.
    #[error("{message}")]
    Unknown { message: String },
    /// A Hugging Face config of an architecture the importer does not model.
    #[error("model file {path} is a Hugging Face config of model_type '{model_type}', which clustersim cannot model yet (supported: {supported})")]
    UnsupportedArchitecture {
        path: String,
        model_type: String,
        supported: String,
    },
    /// Field values that cannot describe a transformer; every problem is listed.
    #[error("invalid model '{name}': {}", problems.join("; "))]
    Invalid { name: String, problems: Vec<String> },
}

impl ModelSpec {
    /// MLP inner size (`ffn_hidden`, default 4·hidden).
    pub fn ffn(&self) -> u64 {
        self.ffn_hidden.unwrap_or(4 * self.hidden)
    }

    /// Per-head dimension: `head_dim` when given, else h/a.
    pub fn head_dim(&self) -> u64 {
        self.head_dim.unwrap_or(self.hidden / self.heads.max(1))
    }

    /// Output columns of the query projection (and input rows of the output
    /// projection): heads·head_dim, the hidden size unless `head_dim` widens it.
    pub fn q_width(&self) -> u64 {
        self.heads * self.head_dim()
    }

    /// Key/value heads (`kv_heads`, default `heads`).
    pub fn kv_heads(&self) -> u64 {
        self.kv_heads.unwrap_or(self.heads)
    }

    /// Output columns of the QKV projection: a·d + 2·kv_heads·d (3h
    /// without grouped-query attention or a wider `head_dim`).
    pub fn qkv_width(&self) -> u64 {
        self.q_width() + 2 * self.kv_heads() * self.head_dim()
    }

    /// Whether the QKV projection has a bias (`qkv_bias`, default `bias`).
    pub fn has_qkv_bias(&self) -> bool {
        self.qkv_bias.unwrap_or(self.bias)
    }

    /// Whether the model has a learned position-embedding table (not with RoPE).
    pub fn learned_positions(&self) -> bool {
        !self.rope
    }

    /// Parameters of one normalization: 2h for LayerNorm, h for RMSNorm.
    pub fn norm_parameters(&self) -> u64 {
        self.norm_parameters_of(self.hidden)
    }

    /// Parameters of one normalization over `width` elements (2·width for
    /// LayerNorm, width for RMSNorm): Qwen3's per-head norms, MLA's latent norms.
    pub fn norm_parameters_of(&self, width: u64) -> u64 {
        match self.norm {
            NormType::Layernorm => 2 * width,
            NormType::Rmsnorm => width,
        }
    }

    /// Whether the model has anything beyond the dense blocks the simulator
    /// lowers: experts, latent attention, a `head_dim` other than hidden/heads,
    /// or per-head query/key norms.
    pub fn has_unsimulated_blocks(&self) -> bool {
        self.moe.is_some()
            || self.mla.is_some()
            || self.qk_norm
            || self
                .head_dim
                .is_some_and(|d| Some(d) != self.hidden.checked_div(self.heads))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(json: &str) -> Vec<String> {
        match ModelSpec::from_json_str(json, "test") {
            Err(ModelError::Invalid { problems, .. }) => problems,
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    const BASE: &str = r#""name":"m","layers":2,"hidden":64,"heads":8,"seq_len":16,"vocab":128"#;

    #[test]
    fn absent_keys_are_the_gpt_block() {
        let spec = ModelSpec::from_json_str(&format!("{{{BASE}}}"), "test").unwrap();
        assert_eq!(spec.kv_heads(), 8);
        assert_eq!(spec.qkv_width(), 3 * 64);
        assert_eq!(
            (spec.ffn_type, spec.norm),
            (FfnType::Gelu, NormType::Layernorm)
        );
        assert!(spec.bias && spec.has_qkv_bias() && spec.tied_embeddings && !spec.rope);
        assert_eq!(spec.norm_parameters(), 128);
    }

    #[test]
    fn llama_keys_parse() {
        let spec = ModelSpec::from_json_str(
            &format!(
                r#"{{{BASE},"kv_heads":2,"ffn_type":"swiglu","norm":"rmsnorm","bias":false,"qkv_bias":true,"rope":true,"tied_embeddings":false,"vocab_unpadded":100}}"#
            ),
            "test",
        )
        .unwrap();
        assert_eq!(spec.qkv_width(), 64 + 2 * 2 * 8);
        assert!(!spec.bias && spec.has_qkv_bias());
        assert_eq!(spec.norm_parameters(), 64);
    }

    #[test]
    fn each_bad_new_field_gets_its_own_message() {
        assert_eq!(
            problems(&format!(r#"{{{BASE},"kv_heads":3}}"#)),
            ["heads (8) must be divisible by kv_heads (3): each key/value head serves a whole group of query heads"]
        );
        assert_eq!(problems(&format!(r#"{{{BASE},"kv_heads":16}}"#)).len(), 1);
        assert_eq!(
            problems(&format!(r#"{{{BASE},"kv_heads":0}}"#)),
            ["kv_heads must be positive when given"]
        );
        assert_eq!(
            problems(
                r#"{"name":"m","layers":2,"hidden":24,"heads":8,"seq_len":16,"vocab":128,"rope":true}"#
            ),
            ["rope needs an even head dimension, not hidden/heads = 3"]
        );
        assert_eq!(
            problems(&format!(r#"{{{BASE},"vocab_unpadded":129}}"#)),
            ["vocab_unpadded (129) must not exceed the padded vocab (128)"]
        );
        let unknown = ModelSpec::from_json_str(&format!(r#"{{{BASE},"ffn_type":"relu"}}"#), "test")
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("unknown variant `relu`, expected `gelu` or `swiglu`"),
            "{unknown}"
        );
        let unknown =
            ModelSpec::from_json_str(&format!(r#"{{{BASE},"norm":"batchnorm"}}"#), "test")
                .unwrap_err()
                .to_string();
        assert!(
            unknown.contains("expected `layernorm` or `rmsnorm`"),
            "{unknown}"
        );
        let typo = ModelSpec::from_json_str(&format!(r#"{{{BASE},"kv_head":2}}"#), "test")
            .unwrap_err()
            .to_string();
        assert!(typo.contains("unknown field `kv_head`"), "{typo}");
    }

    #[test]
    fn moe_and_mla_keys_parse_round_trip_and_name_each_bad_key() {
        let json = format!(
            r#"{{{BASE},"ffn_type":"swiglu","norm":"rmsnorm","bias":false,"rope":true,"moe":{{"experts":8,"top_k":2,"expert_ffn_hidden":32,"shared_experts":1,"first_dense_layers":1,"router":"sigmoid","capacity_factor":1.25}},"mla":{{"q_lora_rank":16,"kv_lora_rank":8,"qk_nope_head_dim":8,"qk_rope_head_dim":4,"v_head_dim":8}}}}"#
        );
        let spec = ModelSpec::from_json_str(&json, "test").unwrap();
        let moe = spec.moe.as_ref().unwrap();
        assert_eq!(
            (moe.layer_frequency, moe.shared_ffn(), moe.moe_layers(2)),
            (1, 32, 1)
        );
        assert!(spec.has_unsimulated_blocks());
        let text = serde_json::to_string(&spec).unwrap();
        assert_eq!(ModelSpec::from_json_str(&text, "test").unwrap(), spec);
        assert!(text.contains(r#""capacity_factor":1.25"#), "{text}");
        let moe_problems = |moe: &str| problems(&format!(r#"{{{BASE},"moe":{moe}}}"#));
        assert_eq!(
            moe_problems(r#"{"experts":0,"top_k":2,"expert_ffn_hidden":32}"#),
            ["moe.experts must be positive"]
        );
        assert_eq!(
            moe_problems(r#"{"experts":4,"top_k":5,"expert_ffn_hidden":32}"#),
            ["moe.top_k (5) must not exceed moe.experts (4): a token goes to distinct experts"]
        );
        assert_eq!(
            moe_problems(r#"{"experts":4,"top_k":1,"expert_ffn_hidden":32,"capacity_factor":-1}"#),
            ["moe.capacity_factor -1 must be a positive number of at most 1024 (leave it out for dropless routing)"]
        );
        assert_eq!(
            moe_problems(
                r#"{"experts":4,"top_k":1,"expert_ffn_hidden":32,"shared_expert_ffn_hidden":8}"#
            ),
            ["moe.shared_expert_ffn_hidden is given but moe.shared_experts is 0"]
        );
        assert_eq!(
            moe_problems(r#"{"experts":4,"top_k":1,"expert_ffn_hidden":32,"layer_frequency":0}"#),
            ["moe.layer_frequency must be positive"]
        );
        let typo = ModelSpec::from_json_str(
            &format!(r#"{{{BASE},"moe":{{"experts":4,"topk":1,"expert_ffn_hidden":32}}}}"#),
            "test",
        )
        .unwrap_err()
        .to_string();
        assert!(typo.contains("unknown field `topk`"), "{typo}");
        let mla =
            r#""mla":{"kv_lora_rank":8,"qk_nope_head_dim":8,"qk_rope_head_dim":3,"v_head_dim":8}"#;
        assert_eq!(
            problems(&format!(r#"{{{BASE},"kv_heads":2,"qk_norm":true,{mla}}}"#)),
            [
                "mla.qk_rope_head_dim (3) must be even: rotary embedding turns pairs of dimensions",
                "kv_heads (2) must equal heads (8) with mla: latent attention has no key/value groups",
                "qk_norm with mla is not a known model: latent attention normalizes its latents instead",
                "mla needs rope: true (its mla.qk_rope_head_dim part carries the rotary embedding)",
                "mla with biases is not a known model: set bias false (and leave qkv_bias out)",
            ]
        );
    }

    #[test]
    fn head_dim_widens_the_heads_and_keeps_its_checks() {
        let spec =
            ModelSpec::from_json_str(&format!(r#"{{{BASE},"kv_heads":2,"head_dim":16}}"#), "test")
                .unwrap();
        assert_eq!((spec.q_width(), spec.qkv_width()), (128, 128 + 2 * 2 * 16));
        assert!(spec.has_unsimulated_blocks());
        // Restating hidden/heads is the dense block.
        let same =
            ModelSpec::from_json_str(&format!(r#"{{{BASE},"head_dim":8}}"#), "test").unwrap();
        assert!(!same.has_unsimulated_blocks());
        assert_eq!(
            problems(&format!(r#"{{{BASE},"head_dim":0}}"#)),
            ["head_dim must be positive when given"]
        );
        assert_eq!(
            problems(&format!(r#"{{{BASE},"head_dim":7,"rope":true}}"#)),
            ["rope needs an even head dimension, not head_dim = 7"]
        );
    }
}
