//! Memory formulas: model states per parameter (mixed-precision Adam, as the
//! ZeRO paper counts them) and activation bytes per layer (Korthikanti et al.
//! 2022, Sec. 4: s·b·h·(34 + 5·a·s/h) without parallelism, and
//! s·b·h·(10 + 24/t + 5·a·s/(h·t)) with tensor parallelism t).
//!
//! Today's blocks in the same accounting (fp16 bytes per token of one layer,
//! t = 1): replicated on tensor ranks, 10h — both norms' inputs (2h each;
//! RMSNorm keeps its input as LayerNorm does), the QKV and MLP-in GEMMs'
//! inputs (2h each), two 1-byte dropout masks (none without hidden dropout,
//! [`crate::dropout`]); split t ways, the attention's
//! Q (2h), K and V (2h each, or 2·kv·d each with grouped-query attention
//! when the core is recomputed and only its inputs are kept; without
//! recomputation the unfused core keeps the copies expanded to every query
//! head, 2h each), the projection's input (2h), and the MLP's activations:
//! GeLU 4·ffn (its input and output, 2·ffn each, Korthikanti's 16h at
//! ffn = 4h), SwiGLU 6·ffn (the gate+up GEMM's 2·ffn output, 4·ffn, and the
//! product, 2·ffn). RoPE keeps nothing more (its backward is the inverse
//! rotation; the rotated Q and K are the core's inputs above). The attention
//! core's 5·a·s/(h·t) is unchanged: it is per query head (2·a·s/(h·t)
//! without attention dropout: no mask, and the softmax output is the value
//! product's input). Heads wider than
//! h/a (`head_dim`, Qwen3) make Q, the expanded K and V and the projection's
//! input a·head_dim wide instead of h; per-head query/key norms (`qk_norm`)
//! keep their inputs, 2·(a + kv)·head_dim ([`crate::qk_norm`]). Multi-head
//! latent attention keeps its latents and its core's inputs in place of
//! Q, K, V and the projection's input
//! ([`crate::mla_ops::mla_attention_bytes_per_token`]).

use crate::spec::FfnType;
use crate::spec::ModelSpec;

/// fp16 weight bytes per parameter.
pub const WEIGHT_BYTES_PER_PARAM: u64 = 2;
/// fp16 gradient bytes per parameter.
pub const GRADIENT_BYTES_PER_PARAM: u64 = 2;
/// Adam optimizer states in mixed precision: fp32 master weights, momentum and
/// variance (ZeRO paper, Rajbhandari et al. 2020, Sec. 3.1: K = 12).
pub const OPTIMIZER_BYTES_PER_PARAM: u64 = 12;

/// Activation bytes stored by one layer for one microbatch of size `b`
/// with tensor parallelism `t`, without recomputation or sequence
/// parallelism (Korthikanti Eq. 2 for the GPT block).
pub fn activation_bytes_per_layer(model: &ModelSpec, microbatch: u64, tensor_parallel: u64) -> f64 {
    stored_activation_bytes_per_layer(
        model,
        microbatch,
        tensor_parallel,
        false,
        RecomputeKind::None,
    )
}

/// Activation bytes stored by one layer per microbatch for every recompute and
/// sequence-parallel choice (Korthikanti et al. 2022, Table 2):
/// - none: s·b·h·(10 + 24/t + 5·a·s/(h·t)); with sequence parallelism s·b·h·(34/t + 5·a·s/(h·t));
/// - selective (attention core recomputed): s·b·h·(10 + 24/t); with sequence parallelism s·b·h·34/t;
/// - full: the layer input, 2·s·b·h (÷t with sequence parallelism).
pub fn stored_activation_bytes_per_layer(
    model: &ModelSpec,
    microbatch: u64,
    tensor_parallel: u64,
    sequence_parallel: bool,
    recompute: RecomputeKind,
) -> f64 {
    stored_activation_bytes_per_layer_with(
        model,
        microbatch,
        tensor_parallel,
        sequence_parallel,
        recompute,
        false,
    )
}

/// Bytes of one fp32 softmax statistic a fused attention kernel keeps per
/// query row and head for its backward (the log-sum-exp).
pub const FUSED_ATTENTION_STAT_BYTES: u64 = 4;

/// [`stored_activation_bytes_per_layer`] with the attention core unfused or
/// fused (`models::attention`). A fused core keeps no s×s tensor: its inputs
/// Q, K, V (K and V kv-sized: the kernel reads each K/V head for its query
/// group, so no expanded copy exists) and its output (the projection's input,
/// already counted) — the selective-recompute accounting — plus one fp32
/// statistic per query row and head, 4·a/t bytes per token, unless the core
/// is recomputed (selective) or the whole layer is (full).
pub fn stored_activation_bytes_per_layer_with(
    model: &ModelSpec,
    microbatch: u64,
    tensor_parallel: u64,
    sequence_parallel: bool,
    recompute: RecomputeKind,
    fused_attention: bool,
) -> f64 {
    if fused_attention && recompute == RecomputeKind::None {
        let kept = stored_activation_bytes_per_layer(
            model,
            microbatch,
            tensor_parallel,
            sequence_parallel,
            RecomputeKind::Selective,
        );
        let stats = (model.seq_len * microbatch * model.heads * FUSED_ATTENTION_STAT_BYTES) as f64
            / tensor_parallel as f64;
        return kept + stats;
    }
    let (s, b, h, a, t) = (
        model.seq_len as f64,
        microbatch as f64,
        model.hidden as f64,
        model.heads as f64,
        tensor_parallel as f64,
    );
    // Korthikanti's 5 bytes per score: the softmax output (2), the dropout
    // mask (1) and the dropout output (2); without attention dropout the
    // softmax output is the value product's input: 2 ([`crate::dropout`]).
    let per_score = if model.attention_dropout.is_on() {
        5.0
    } else {
        2.0
    };
    let attention = per_score * a * s / (h * t);
    let (replicated, split) = linear_bytes_per_token(model, recompute);
    // Exact integers divided by h: 10.0 and 24.0 for the GPT block.
    let (replicated, split) = (replicated as f64 / h, split as f64 / h);
    let linear = if sequence_parallel {
        (replicated + split) / t
    } else {
        replicated + split / t
    };
    let split = if sequence_parallel { t } else { 1.0 };
    s * b
        * h
        * match recompute {
            RecomputeKind::None => linear + attention,
            RecomputeKind::Selective => linear,
            RecomputeKind::Full => 2.0 / split,
        }
}

/// Bytes one token keeps per layer outside the attention core, without
/// tensor parallelism: (replicated on tensor ranks, split across them); see
/// the module header. (10h, 24h) for the GPT block.
pub fn linear_bytes_per_token(model: &ModelSpec, recompute: RecomputeKind) -> (u64, u64) {
    let h = model.hidden;
    // Q and the projection's input are a·head_dim wide (h unless `head_dim`
    // widens the heads).
    let q = model.q_width();
    let key_value_width = match recompute {
        RecomputeKind::None => q,
        RecomputeKind::Selective | RecomputeKind::Full => model.kv_heads() * model.head_dim(),
    };
    let mlp = match model.ffn_type {
        FfnType::Gelu => 4 * model.ffn(),
        FfnType::Swiglu => 6 * model.ffn(),
    };
    let attention = match &model.mla {
        Some(mla) => crate::mla_ops::mla_attention_bytes_per_token(model, mla),
        None => 2 * q + 4 * key_value_width + 2 * q + crate::qk_norm::saved_bytes_per_token(model),
    };
    // The norms' and the QKV and MLP-in GEMMs' inputs (8h), and the two
    // one-byte dropout masks (2h) when hidden dropout runs.
    let masks = if model.hidden_dropout.is_on() {
        2 * h
    } else {
        0
    };
    (8 * h + masks, attention + mlp)
}

/// What is recomputed in the backward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecomputeKind {
    None,
    /// Only the attention core (scores, softmax, dropout, attention over values).
    Selective,
    Full,
}

/// Activation bytes one layer keeps under full recomputation: only its fp16
/// input, s·b·h·2 (Korthikanti Sec. 4.2; not split across tensor ranks).
pub fn checkpoint_bytes_per_layer(model: &ModelSpec, microbatch: u64) -> f64 {
    (model.seq_len * microbatch * model.hidden * 2) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn korthikanti_table_2_cases_agree_with_the_older_helpers() {
        let model = crate::presets::preset("gpt-530b").unwrap();
        let none = stored_activation_bytes_per_layer(&model, 1, 8, false, RecomputeKind::None);
        assert!((none - activation_bytes_per_layer(&model, 1, 8)).abs() < 1.0);
        let full = stored_activation_bytes_per_layer(&model, 1, 8, false, RecomputeKind::Full);
        assert!((full - checkpoint_bytes_per_layer(&model, 1)).abs() < 1.0);
        // Sequence parallel + selective: 34·s·b·h/t.
        let sp_selective =
            stored_activation_bytes_per_layer(&model, 1, 8, true, RecomputeKind::Selective);
        assert!((sp_selective - 34.0 * 2048.0 * 20480.0 / 8.0).abs() < 1.0);
    }

    #[test]
    fn llama_blocks_keep_their_own_tensors() {
        let model = crate::presets::preset("llama3-70b").unwrap();
        let (h, f, kvd) = (8192u64, 28672u64, 8 * 128u64);
        // No dropout masks: Llama trains without dropout.
        assert_eq!(
            linear_bytes_per_token(&model, RecomputeKind::Selective),
            (8 * h, 4 * h + 4 * kvd + 6 * f)
        );
        assert_eq!(
            linear_bytes_per_token(&model, RecomputeKind::None),
            (8 * h, 8 * h + 6 * f)
        );
        let (s, b, t) = (8192.0, 1.0, 8.0);
        let selective =
            stored_activation_bytes_per_layer(&model, 1, 8, true, RecomputeKind::Selective);
        let expected = s * b * (8 * h + 4 * h + 4 * kvd + 6 * f) as f64 / t;
        assert!(
            (selective - expected).abs() < 1.0,
            "{selective} vs {expected}"
        );
        let gpt = crate::presets::preset("gpt3-175b").unwrap();
        for kind in [RecomputeKind::None, RecomputeKind::Selective] {
            assert_eq!(
                linear_bytes_per_token(&gpt, kind),
                (10 * gpt.hidden, 24 * gpt.hidden)
            );
        }
    }

    #[test]
    fn fused_attention_keeps_inputs_and_statistics_only() {
        let model = crate::presets::preset("llama3-8b").unwrap();
        let (s, b, h, t) = (model.seq_len as f64, 2.0, model.hidden as f64, 4.0);
        let kv = (model.kv_heads() * model.head_dim()) as f64;
        let a = model.heads as f64;
        // Replicated 8h (no dropout masks); split Q 2h, K and V 2·kv each,
        // projection input 2h, SwiGLU 6·ffn; plus a 4-byte statistic per
        // query row and head.
        let split = 2.0 * h + 4.0 * kv + 2.0 * h + 6.0 * model.ffn() as f64;
        let expected = s * b * (8.0 * h + split / t) + s * b * 4.0 * a / t;
        let fused =
            stored_activation_bytes_per_layer_with(&model, 2, 4, false, RecomputeKind::None, true);
        assert_eq!(fused, expected);
        for recompute in [RecomputeKind::Selective, RecomputeKind::Full] {
            assert_eq!(
                stored_activation_bytes_per_layer_with(&model, 2, 4, true, recompute, true),
                stored_activation_bytes_per_layer(&model, 2, 4, true, recompute)
            );
        }
    }

    #[test]
    fn tensor_parallel_formula_reduces_to_serial_one_at_t_equal_1() {
        let model = crate::presets::preset("gpt3-175b").unwrap();
        let (s, b, h, a) = (2048.0, 1.0, 12288.0, 96.0);
        let serial = s * b * h * (34.0 + 5.0 * a * s / h);
        assert!((activation_bytes_per_layer(&model, 1, 1) - serial).abs() < 1.0);
    }
}
