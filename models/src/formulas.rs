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

use crate::spec::FfnType;
use crate::ModelSpec;

/// Parameters of one transformer layer: QKV (h·(h + 2·kv·d) weights plus as
/// many biases, 3h²+3h with multi-head attention), projection (h² + h), MLP
/// (GeLU: 2·h·ffn + ffn + h; SwiGLU: 3·h·ffn + 2·ffn + h), two norms (4h for
/// LayerNorm, 2h for RMSNorm); biases only where the model has them. Equals
/// Eq. 2's 12h² + 13h for the GPT block with ffn = 4h.
pub fn layer_parameters(model: &ModelSpec) -> u64 {
    let h = model.hidden;
    let f = model.ffn();
    let qkv = model.qkv_width();
    let bias = u64::from(model.bias);
    let qkv_bias = u64::from(model.has_qkv_bias());
    let mlp = match model.ffn_type {
        FfnType::Gelu => 2 * h * f + bias * (f + h),
        FfnType::Swiglu => 3 * h * f + bias * (2 * f + h),
    };
    (h * qkv + qkv_bias * qkv) + (h * h + bias * h) + mlp + 2 * model.norm_parameters()
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
/// [`published_parameter_count`] counts them.)
pub fn parameter_count(model: &ModelSpec) -> u64 {
    model.layers * layer_parameters(model)
        + embedding_parameters(model)
        + output_layer_parameters(model)
}

/// Parameters as a model card states them: every layer, the embedding and
/// (untied) output tables over the tokenizer's vocabulary (`vocab_unpadded`
/// when given, else `vocab`), and the final norm.
pub fn published_parameter_count(model: &ModelSpec) -> u64 {
    let vocab = model.vocab_unpadded.unwrap_or(model.vocab);
    let output = if model.tied_embeddings {
        0
    } else {
        vocab * model.hidden
    };
    model.layers * layer_parameters(model)
        + word_and_position_parameters(model, vocab)
        + output
        + model.norm_parameters()
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
mod tests {
    use super::*;

    #[test]
    fn integer_count_equals_eq2_for_every_megatron_model() {
        for name in ["gpt3-175b", "gpt-530b", "gpt-1t", "gpt-22b"] {
            let model = crate::preset(name).unwrap();
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
        let model = crate::preset("gpt-1t").unwrap();
        let billions = parameter_count(&model) as f64 / 1e9;
        assert!((billions - 1008.0).abs() < 0.5, "{billions}");
        // GPT-3: 174.6 B in Table 1; 530B row: 529.6 B.
        let gpt3 = parameter_count(&crate::preset("gpt3-175b").unwrap()) as f64 / 1e9;
        assert!((gpt3 - 174.6).abs() < 0.5, "{gpt3}");
        let mt = parameter_count(&crate::preset("gpt-530b").unwrap()) as f64 / 1e9;
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
            let model = crate::preset(name).unwrap();
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
        let gpt3 = crate::preset("gpt3-175b").unwrap();
        assert_eq!(
            published_parameter_count(&gpt3),
            parameter_count(&gpt3) + 2 * gpt3.hidden
        );
    }

    #[test]
    fn each_block_option_changes_the_count_by_its_own_tensors() {
        let base = crate::preset("gpt-22b").unwrap();
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
