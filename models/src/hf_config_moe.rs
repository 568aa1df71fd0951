//! Hugging Face configs of mixtures of experts as a [`ModelSpec`] with `moe`
//! (and DeepSeek-V3's `mla`): Mixtral (`MixtralSparseMoeBlock`), Qwen3-MoE
//! (`Qwen3MoeSparseMoeBlock`) and DeepSeek-V3 (`DeepseekV3MoE`,
//! `DeepseekV3Attention`). Their dense keys are read as the Llama import
//! reads them ([`crate::hf_config`]); the keys that decide which layers have
//! experts are refused where they describe layouts this model has no key for.

use crate::hf_config_dense::llama_like;
use crate::hf_fields::{invalid, Fields};
use crate::moe::{MlaSpec, MoeSpec, RouterType};
use crate::spec::{ModelError, ModelSpec};
use serde_json::Value;

/// Routed experts of the config's `experts_key`, `num_experts_per_tok` per
/// token, of `ffn_key` each; every layer, no shared expert, softmax router,
/// dropless (the `transformers` implementations drop no token).
fn routed(fields: &Fields, experts_key: &str, ffn_key: &str) -> Result<MoeSpec, ModelError> {
    Ok(MoeSpec {
        experts: fields.required(experts_key)?,
        top_k: fields.required("num_experts_per_tok")?,
        expert_ffn_hidden: fields.required(ffn_key)?,
        shared_experts: 0,
        shared_expert_ffn_hidden: None,
        first_dense_layers: 0,
        layer_frequency: 1,
        router: RouterType::Softmax,
        capacity_factor: None,
        pad_expert_input_to_capacity: false,
    })
}

/// Mixtral: the Mistral block whose MLP is `num_local_experts` SwiGLU experts
/// of `intermediate_size`, `num_experts_per_tok` per token, behind an h×E gate.
pub(crate) fn mixtral(fields: &Fields) -> Result<ModelSpec, ModelError> {
    let spec = llama_like(fields, "mixtral")?;
    Ok(ModelSpec {
        moe: Some(routed(fields, "num_local_experts", "intermediate_size")?),
        ..spec
    })
}

/// Qwen3-MoE: grouped-query attention with `head_dim`-wide heads and q/k
/// RMSNorms, experts of `moe_intermediate_size` in every layer.
pub(crate) fn qwen3_moe(fields: &Fields) -> Result<ModelSpec, ModelError> {
    // Qwen3MoeDecoderLayer: experts where the layer is not in
    // `mlp_only_layers` and (layer_idx + 1) % decoder_sparse_step == 0.
    if let Some(step) = fields.count("decoder_sparse_step")? {
        if step != 1 {
            return Err(invalid(
                fields.origin,
                format!("decoder_sparse_step {step}: only experts in every layer (1) are modeled for qwen3_moe"),
            ));
        }
    }
    match fields.object.get("mlp_only_layers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(layers)) if layers.is_empty() => {}
        Some(other) => {
            return Err(invalid(
                fields.origin,
                format!("mlp_only_layers {other}: dense layers among Qwen3-MoE's expert layers are not modeled"),
            ))
        }
    }
    if fields
        .count("shared_expert_intermediate_size")?
        .unwrap_or(0)
        > 0
    {
        return Err(invalid(
            fields.origin,
            "shared_expert_intermediate_size: Qwen3-MoE has no shared expert (Qwen2-MoE's gated one is not modeled)".into(),
        ));
    }
    let spec = llama_like(fields, "qwen3_moe")?;
    Ok(ModelSpec {
        qk_norm: true,
        moe: Some(routed(fields, "num_experts", "moe_intermediate_size")?),
        ..spec
    })
}

/// DeepSeek-V3: MLA, `first_k_dense_replace` dense layers, then every
/// `moe_layer_freq`-th layer with `n_routed_experts` and `n_shared_experts`,
/// and the sigmoid router with its `noaux_tc` correction bias.
pub(crate) fn deepseek_v3(fields: &Fields) -> Result<ModelSpec, ModelError> {
    let scoring = fields.text("scoring_func").unwrap_or("sigmoid");
    let method = fields.text("topk_method").unwrap_or("noaux_tc");
    if (scoring, method) != ("sigmoid", "noaux_tc") {
        return Err(invalid(
            fields.origin,
            format!("scoring_func '{scoring}' with topk_method '{method}': only DeepSeek-V3's sigmoid router with noaux_tc is modeled for deepseek_v3"),
        ));
    }
    let spec = llama_like(fields, "deepseek_v3")?;
    let heads = spec.heads;
    Ok(ModelSpec {
        // Latent attention has no key/value groups; the config restates the heads.
        kv_heads: spec.kv_heads.filter(|&kv| kv != heads),
        moe: Some(MoeSpec {
            experts: fields.required("n_routed_experts")?,
            shared_experts: fields.count("n_shared_experts")?.unwrap_or(0),
            first_dense_layers: fields.count("first_k_dense_replace")?.unwrap_or(0),
            layer_frequency: fields.count("moe_layer_freq")?.unwrap_or(1),
            router: RouterType::Sigmoid,
            ..routed(fields, "n_routed_experts", "moe_intermediate_size")?
        }),
        mla: Some(MlaSpec {
            q_lora_rank: fields.count("q_lora_rank")?,
            kv_lora_rank: fields.required("kv_lora_rank")?,
            qk_nope_head_dim: fields.required("qk_nope_head_dim")?,
            qk_rope_head_dim: fields.required("qk_rope_head_dim")?,
            v_head_dim: fields.required("v_head_dim")?,
        }),
        ..spec
    })
}
