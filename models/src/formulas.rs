//! Closed-form parameter and FLOP counts from Megatron-LM (Narayanan et al.,
//! SC21): Eq. 2 (parameters) and Eq. 3 (FLOPs per iteration with full
//! activation recomputation), plus the no-recompute variant. The per-kernel
//! decomposition in [`crate::ops`] must sum to these; tests check it.
//!
//! Counts are exact integers where the formula is a polynomial (Eq. 2 expands
//! to 12·l·h² + 13·l·h + (V+s)·h); FLOPs are `f64` because they reach 1e21.
//! Eq. 3 is for the GPT-style block only; with grouped-query attention or
//! SwiGLU the per-kernel sums of [`crate::ops`] are the FLOPs.
//!
//! The same counts cover today's blocks ([`ModelSpec`]'s `kv_heads`,
//! `ffn_type`, `norm`, `bias`, `qkv_bias`, `rope`, `tied_embeddings`):
//! [`published_parameter_count`] is the figure model cards state (final norm
//! included, the tokenizer's unpadded vocabulary), exact for Llama-2/3,
//! Mistral and Qwen2.5 (tests below).
//!
//! Mixtures of experts and multi-head latent attention ([`crate::moe`]) count
//! every expert in the total and only the router, top-k routed and shared
//! experts in the active count ([`active_parameter_count`],
//! [`published_active_parameter_count`]); [`training_flops_per_token`] is
//! Megatron's 6·N_active per token plus the attention core. Tests against
//! Mixtral, DeepSeek-V3 and Qwen3-MoE's published counts are in
//! `formulas_moe_tests.rs`.

use crate::moe::{MoeSpec, RouterType};
use crate::spec::FfnType;
use crate::spec::ModelSpec;

/// Parameters of one dense transformer layer (every layer of a model without
/// `moe`): QKV (h·(a·d + 2·kv·d) weights plus as many biases, 3h²+3h with
/// multi-head attention), projection (a·d·h + h), MLP (GeLU: 2·h·ffn + ffn + h;
/// SwiGLU: 3·h·ffn + 2·ffn + h), two norms (4h for LayerNorm, 2h for RMSNorm),
/// Qwen3's per-head query/key norms (`qk_norm`), or MLA's projections and
/// latent norms ([`crate::moe::MlaSpec`]); biases only where the model has
/// them. Equals Eq. 2's 12h² + 13h for the GPT block with ffn = 4h.
pub fn layer_parameters(model: &ModelSpec) -> u64 {
    narrow(dense_layer_wide(model))
}

/// Parameters of one layer with the mixture of experts: attention and norms
/// as [`layer_parameters`], the router (h·E weights, and E biases for
/// DeepSeek-V3's sigmoid router), every routed and shared expert's MLP.
pub fn moe_layer_parameters(model: &ModelSpec) -> u64 {
    narrow(moe_layer_wide(model, false))
}

/// Parameters of one MoE layer's routed experts (every expert's MLP), the
/// part expert parallelism splits over its ranks; 0 without `moe`.
pub fn routed_expert_parameters(model: &ModelSpec) -> u64 {
    model.moe.as_ref().map_or(0, |moe| {
        narrow(wide(moe.experts) * sum(mlp_wide(model, moe.expert_ffn_hidden)))
    })
}

/// Parameters of all `layers` layers: dense and MoE layers each at their size.
pub fn all_layers_parameters(model: &ModelSpec) -> u64 {
    narrow(layers_wide(model, false))
}

/// Word (V·h) and, without RoPE, position (s·h) embedding parameters.
pub fn embedding_parameters(model: &ModelSpec) -> u64 {
    word_and_position_parameters(model, model.vocab)
}

fn word_and_position_parameters(model: &ModelSpec, vocab: u64) -> u64 {
    let positions = if model.learned_positions() {
        model.seq_len
    } else {
        0
    };
    (vocab + positions) * model.hidden
}

/// The untied output layer's own V·h matrix (0 when tied to the word embedding).
pub fn output_layer_parameters(model: &ModelSpec) -> u64 {
    if model.tied_embeddings {
        0
    } else {
        model.vocab * model.hidden
    }
}

/// Total parameters as Megatron's Eq. 2 counts them:
/// P = 12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h)) = l·(12h² + 13h) + (V+s)·h,
/// with an untied output layer's V·h added. (The final norm's parameters are
/// not in Eq. 2 and not counted here; [`crate::memory`] adds them and
/// [`published_parameter_count`] counts them.) With experts, every expert of
/// every MoE layer.
pub fn parameter_count(model: &ModelSpec) -> u64 {
    narrow(
        layers_wide(model, false)
            + u128::from(embedding_parameters(model))
            + u128::from(output_layer_parameters(model)),
    )
}

/// The parameters one token passes through, counted as [`parameter_count`]
/// counts (padded vocabulary, no final norm): in MoE layers only the router,
/// the top-k routed and the shared experts. Equal to [`parameter_count`]
/// without `moe`.
pub fn active_parameter_count(model: &ModelSpec) -> u64 {
    narrow(
        layers_wide(model, true)
            + u128::from(embedding_parameters(model))
            + u128::from(output_layer_parameters(model)),
    )
}

/// Parameters as a model card states them: every layer, the embedding and
/// (untied) output tables over the tokenizer's vocabulary (`vocab_unpadded`
/// when given, else `vocab`), and the final norm.
pub fn published_parameter_count(model: &ModelSpec) -> u64 {
    narrow(published_parameter_count_wide(model))
}

/// Active parameters per token as MoE announcements state them (Mixtral's
/// 12.9 B, DeepSeek-V3's 37 B): [`published_parameter_count`] with only the
/// router, top-k routed and shared experts of each MoE layer, embedding and
/// output tables included.
pub fn published_active_parameter_count(model: &ModelSpec) -> u64 {
    narrow(published_wide(model, true))
}

/// [`published_parameter_count`] without a u64 limit, for validation to
/// refuse a model too large to count.
pub(crate) fn published_parameter_count_wide(model: &ModelSpec) -> u128 {
    published_wide(model, false)
}

fn published_wide(model: &ModelSpec, active: bool) -> u128 {
    let vocab = model.vocab_unpadded.unwrap_or(model.vocab);
    let output = if model.tied_embeddings {
        0
    } else {
        u128::from(vocab) * u128::from(model.hidden)
    };
    layers_wide(model, active)
        + u128::from(word_and_position_parameters(model, vocab))
        + output
        + u128::from(model.norm_parameters())
}

/// Counts past u64 only for unvalidated specs; saturate rather than wrap.
fn narrow(count: u128) -> u64 {
    u64::try_from(count).unwrap_or(u64::MAX)
}

fn wide(value: u64) -> u128 {
    u128::from(value)
}

/// Attention weights (W) and everything else of the attention block (norms, biases).
fn attention_wide(model: &ModelSpec) -> (u128, u128) {
    let h = wide(model.hidden);
    let a = wide(model.heads);
    let bias = wide(u64::from(model.bias));
    let norm = |width: u64| wide(model.norm_parameters_of(width));
    if let Some(mla) = &model.mla {
        let qk = wide(mla.qk_head_dim());
        let (r_kv, rope) = (wide(mla.kv_lora_rank), wide(mla.qk_rope_head_dim));
        let (nope, v) = (wide(mla.qk_nope_head_dim), wide(mla.v_head_dim));
        // DeepSeek-V3's DeepseekV3Attention: q_a_proj, q_a_layernorm, q_b_proj
        // (or q_proj without q_lora_rank), kv_a_proj_with_mqa (the latent and
        // the shared rotary key), kv_a_layernorm, kv_b_proj (keys without rope
        // and values for every head), o_proj.
        let (q_weights, q_norm) = match mla.q_lora_rank {
            Some(r) => (h * wide(r) + wide(r) * a * qk, norm(r)),
            None => (h * a * qk, 0),
        };
        let weights = q_weights + h * (r_kv + rope) + r_kv * a * (nope + v) + a * v * h;
        (weights, q_norm + norm(mla.kv_lora_rank))
    } else {
        let qkv = wide(model.qkv_width());
        let q = wide(model.q_width());
        let qkv_bias = wide(u64::from(model.has_qkv_bias()));
        let qk_norms = if model.qk_norm {
            2 * norm(model.head_dim())
        } else {
            0
        };
        (h * qkv + q * h, qkv_bias * qkv + bias * h + qk_norms)
    }
}

/// One MLP of inner size `f`: weights and biases.
fn mlp_wide(model: &ModelSpec, f: u64) -> (u128, u128) {
    let (h, f) = (wide(model.hidden), wide(f));
    let bias = wide(u64::from(model.bias));
    match model.ffn_type {
        FfnType::Gelu => (2 * h * f, bias * (f + h)),
        FfnType::Swiglu => (3 * h * f, bias * (2 * f + h)),
    }
}

fn sum(pair: (u128, u128)) -> u128 {
    pair.0 + pair.1
}

fn dense_layer_wide(model: &ModelSpec) -> u128 {
    sum(attention_wide(model))
        + sum(mlp_wide(model, model.ffn()))
        + 2 * wide(model.norm_parameters())
}

/// A MoE layer's parameters, or with `active` those one token uses.
fn moe_layer_wide(model: &ModelSpec, active: bool) -> u128 {
    let Some(moe) = &model.moe else {
        return dense_layer_wide(model);
    };
    let routed = if active { moe.top_k } else { moe.experts };
    sum(attention_wide(model))
        + 2 * wide(model.norm_parameters())
        + router_wide(model, moe)
        + wide(routed) * sum(mlp_wide(model, moe.expert_ffn_hidden))
        + wide(moe.shared_experts) * sum(mlp_wide(model, moe.shared_ffn()))
}

/// The router: an h×E linear layer without bias (Mixtral's and Qwen3-MoE's
/// `gate`), and for the sigmoid router DeepSeek-V3's E-element
/// `e_score_correction_bias`.
fn router_wide(model: &ModelSpec, moe: &MoeSpec) -> u128 {
    let correction = match moe.router {
        RouterType::Softmax => 0,
        RouterType::Sigmoid => wide(moe.experts),
    };
    wide(model.hidden) * wide(moe.experts) + correction
}

fn layers_wide(model: &ModelSpec, active: bool) -> u128 {
    let moe_layers = model
        .moe
        .as_ref()
        .map_or(0, |moe| moe.moe_layers(model.layers));
    wide(model.layers - moe_layers) * dense_layer_wide(model)
        + wide(moe_layers) * moe_layer_wide(model, active)
}

/// Weights of the linear layers one token passes through in one layer
/// (`moe_layer`: the router, top-k routed and shared experts): what a
/// token's forward pass multiplies, 2 FLOPs per weight.
fn layer_matmul_weights(model: &ModelSpec, moe_layer: bool) -> u128 {
    let attention = attention_wide(model).0;
    match (&model.moe, moe_layer) {
        (Some(moe), true) => {
            attention
                + wide(model.hidden) * wide(moe.experts)
                + wide(moe.top_k) * mlp_wide(model, moe.expert_ffn_hidden).0
                + wide(moe.shared_experts) * mlp_wide(model, moe.shared_ffn()).0
        }
        _ => attention + mlp_wide(model, model.ffn()).0,
    }
}

/// Query/key and value dimensions of one head in the attention core.
fn core_head_dims(model: &ModelSpec) -> (u64, u64) {
    match &model.mla {
        Some(mla) => (mla.qk_head_dim(), mla.v_head_dim),
        None => (model.head_dim(), model.head_dim()),
    }
}

/// Training FLOPs per token (forward and backward, and with
/// `full_recompute` the layers' forward again), Megatron's way (SC21 Sec.
/// 5.1, Eq. 3): 2 FLOPs per multiplied weight forward, twice that backward —
/// 6·N per token, N the active matmul weights of every layer (router, top-k
/// routed and shared experts in MoE layers) and the V×h logit layer (the
/// input embedding is a lookup, norms and biases are left out as Eq. 3
/// leaves them) — plus the attention core: 2·s·a·(d_qk + d_v) forward per
/// token and layer for the scores and the weighted values over the whole
/// sequence (no causal discount, as Eq. 3), d = h/a without MLA. For a GPT
/// block times B·s this is Eq. 3 exactly (tests below). Routing is taken
/// as dropless: with a `capacity_factor`, dropped tokens (fewer FLOPs) and
/// capacity padding (more, where an implementation pads) are not counted.
pub fn training_flops_per_token(model: &ModelSpec, full_recompute: bool) -> f64 {
    let moe_layers = model
        .moe
        .as_ref()
        .map_or(0, |moe| moe.moe_layers(model.layers));
    let weights = wide(model.layers - moe_layers) * layer_matmul_weights(model, false)
        + wide(moe_layers) * layer_matmul_weights(model, true);
    let (d_qk, d_v) = core_head_dims(model);
    let core = 2 * wide(model.seq_len) * wide(model.heads) * wide(d_qk + d_v) * wide(model.layers);
    // Forward 1, backward 2, the recomputed forward 1 more: of the layers only.
    let passes: u128 = if full_recompute { 4 } else { 3 };
    let logits = 2 * wide(model.vocab) * wide(model.hidden);
    (passes * (2 * weights + core) + 3 * logits) as f64
}

/// Eq. 2 evaluated literally in floating point, for cross-checking.
pub fn parameter_count_eq2(model: &ModelSpec) -> f64 {
    let (l, h, v, s) = (
        model.layers as f64,
        model.hidden as f64,
        model.vocab as f64,
        model.seq_len as f64,
    );
    12.0 * l * h * h * (1.0 + 13.0 / (12.0 * h) + (v + s) / (12.0 * l * h))
}

/// FLOPs per iteration with full activation recomputation, Eq. 3:
/// F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)), for global batch B.
pub fn flops_per_iteration_full_recompute(model: &ModelSpec, global_batch: u64) -> f64 {
    let (b, s, l, h, v) = dims(model, global_batch);
    96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h))
}

/// FLOPs per iteration without recomputation: 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)).
pub fn flops_per_iteration_no_recompute(model: &ModelSpec, global_batch: u64) -> f64 {
    let (b, s, l, h, v) = dims(model, global_batch);
    72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h))
}

fn dims(model: &ModelSpec, global_batch: u64) -> (f64, f64, f64, f64, f64) {
    (
        global_batch as f64,
        model.seq_len as f64,
        model.layers as f64,
        model.hidden as f64,
        model.vocab as f64,
    )
}

#[cfg(test)]
#[path = "formulas_moe_tests.rs"]
mod moe_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_count_equals_eq2_for_every_megatron_model() {
        for name in ["gpt3-175b", "gpt-530b", "gpt-1t", "gpt-22b"] {
            let model = crate::presets::preset(name).unwrap();
            let exact = parameter_count(&model) as f64;
            let eq2 = parameter_count_eq2(&model);
            assert!(
                (exact - eq2).abs() / eq2 < 1e-12,
                "{name}: {exact} vs {eq2}"
            );
        }
    }

    #[test]
    fn one_trillion_model_matches_table_1() {
        // Megatron-LM SC21 Table 1: 1008.0 billion parameters.
        let model = crate::presets::preset("gpt-1t").unwrap();
        let billions = parameter_count(&model) as f64 / 1e9;
        assert!((billions - 1008.0).abs() < 0.5, "{billions}");
        // GPT-3: 174.6 B in Table 1; 530B row: 529.6 B.
        let gpt3 = parameter_count(&crate::presets::preset("gpt3-175b").unwrap()) as f64 / 1e9;
        assert!((gpt3 - 174.6).abs() < 0.5, "{gpt3}");
        let mt = parameter_count(&crate::presets::preset("gpt-530b").unwrap()) as f64 / 1e9;
        assert!((mt - 529.6).abs() < 0.5, "{mt}");
    }

    #[test]
    fn todays_models_match_their_published_parameter_counts_exactly() {
        // Hugging Face model cards / `num_parameters()` of each checkpoint.
        for (name, published) in [
            ("llama2-7b", 6_738_415_616u64),
            ("llama2-13b", 13_015_864_320),
            ("llama2-70b", 68_976_648_192),
            ("llama3-8b", 8_030_261_248),
            ("llama3-70b", 70_553_706_496),
            ("llama3.1-405b", 405_853_388_800),
            ("mistral-7b", 7_241_732_096),
            ("qwen2.5-72b", 72_706_203_648),
        ] {
            let model = crate::presets::preset(name).unwrap();
            assert_eq!(published_parameter_count(&model), published, "{name}");
            // Unpadded presets: Eq. 2's count is the same less the final norm.
            assert_eq!(
                parameter_count(&model) + model.norm_parameters(),
                published,
                "{name}"
            );
        }
    }

    #[test]
    fn gpt_presets_count_eq2_plus_the_final_layernorm_when_published() {
        let gpt3 = crate::presets::preset("gpt3-175b").unwrap();
        assert_eq!(
            published_parameter_count(&gpt3),
            parameter_count(&gpt3) + 2 * gpt3.hidden
        );
    }

    #[test]
    fn each_block_option_changes_the_count_by_its_own_tensors() {
        let base = crate::presets::preset("gpt-22b").unwrap();
        let (h, f, l) = (base.hidden, base.ffn(), base.layers);
        let count = |edit: &dyn Fn(&mut ModelSpec)| {
            let mut model = base.clone();
            edit(&mut model);
            parameter_count(&model) as i128 - parameter_count(&base) as i128
        };
        let (h, f, l) = (h as i128, f as i128, l as i128);
        // 64 heads, 8 KV heads of dimension 96: K and V shrink from h to 8·96 columns.
        assert_eq!(
            count(&|m| m.kv_heads = Some(8)),
            -l * 2 * (h - 8 * 96) * (h + 1)
        );
        assert_eq!(count(&|m| m.ffn_type = FfnType::Swiglu), l * (h * f + f));
        assert_eq!(
            count(&|m| m.norm = crate::spec::NormType::Rmsnorm),
            -l * 2 * h
        );
        // No biases: QKV 3h, projection h, MLP ffn + h.
        assert_eq!(count(&|m| m.bias = false), -l * (5 * h + f));
        assert_eq!(
            count(&|m| {
                m.bias = false;
                m.qkv_bias = Some(true)
            }),
            -l * (2 * h + f)
        );
        assert_eq!(count(&|m| m.rope = true), -(base.seq_len as i128) * h);
        assert_eq!(
            count(&|m| m.tied_embeddings = false),
            base.vocab as i128 * h
        );
        let mut padded = base.clone();
        padded.vocab_unpadded = Some(50257);
        assert_eq!(parameter_count(&padded), parameter_count(&base));
        assert_eq!(
            published_parameter_count(&base) - published_parameter_count(&padded),
            (base.vocab - 50257) * base.hidden
        );
    }
}
