//! The dense Hugging Face architectures as model specs: Llama, Mistral and
//! Qwen2 (one decoder block, biases aside), and GPT-2.

use crate::dropout::DropoutRate;
use crate::hf_fields::{invalid, padded_vocab, Fields};
use crate::spec::{FfnType, ModelError, ModelSpec, NormType};

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
        trained_dtype: None,
    })
}

/// OpenAI's GPT-2 as `transformers` stores it.
pub(crate) fn gpt2(fields: &Fields) -> Result<ModelSpec, ModelError> {
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
        trained_dtype: None,
    })
}
