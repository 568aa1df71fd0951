//! Tests of multi-head latent attention's kernels against DeepSeek-V3's
//! shapes by hand, the parameter count `formulas` computes and the
//! per-token FLOPs of Megatron's accounting.

use super::*;
use crate::ops::{transformer_layer_with, Kernel, KernelClass, LayerOptions, PassSteps};
use crate::{formulas, memory};

/// DeepSeek-V3 with its MLP dense in every layer (MLA alone).
fn deepseek_dense() -> ModelSpec {
    let mut model = crate::presets::preset("deepseek-v3").unwrap();
    model.moe = None;
    model
}

fn layer(model: &ModelSpec, b: u64, t: u64, fused: bool) -> PassSteps {
    transformer_layer_with(
        model,
        b,
        crate::nz(t),
        LayerOptions {
            fused_attention: fused,
            ..LayerOptions::default()
        },
    )
}

fn kernel<'a>(steps: &'a [Step], name: &str) -> &'a Kernel {
    steps
        .iter()
        .find_map(|s| match s {
            Step::Kernel(k) if k.name == name => Some(k),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no kernel {name}"))
}

fn gemm_shape(kernel: &Kernel) -> GemmShape {
    match kernel.class {
        KernelClass::Gemm { shape, .. } => shape,
        other => panic!("{} is not a GEMM: {other:?}", kernel.name),
    }
}

#[test]
fn deepseek_v3_projections_have_their_shapes_and_flops() {
    let model = deepseek_dense();
    let (b, s) = (2u64, 4096u64);
    let tokens = b * s;
    let pass = layer(&model, b, 1, true);
    // (name, n, k) of each GEMM on T = b·s rows: h = 7168, r_q = 1536,
    // r_kv = 512, rope 64, 128 heads of d_qk = 192, nope 128, d_v = 128.
    for (name, n, k) in [
        ("mla_q_down", 1536, 7168),
        ("mla_kv_down", 512 + 64, 7168),
        ("mla_q_up", 128 * 192, 1536),
        ("mla_kv_up", 128 * (128 + 128), 512),
        ("output_projection", 7168, 128 * 128),
    ] {
        let forward = kernel(&pass.forward, name);
        assert_eq!(
            gemm_shape(forward),
            GemmShape {
                batch: 1,
                m: tokens,
                n,
                k
            },
            "{name}"
        );
        let flops = 2.0 * tokens as f64 * n as f64 * k as f64;
        assert_eq!(forward.flops, flops, "{name}");
        for suffix in ["dgrad", "wgrad"] {
            let backward = kernel(&pass.backward, &format!("{name}.{suffix}"));
            assert_eq!(backward.flops, flops, "{name}.{suffix}");
        }
    }
    // Memory-bound kernels by hand (2-byte elements).
    let tf = tokens as f64;
    assert_eq!(kernel(&pass.forward, "mla_q_norm").bytes, 4.0 * tf * 1536.0);
    assert_eq!(kernel(&pass.forward, "mla_kv_norm").bytes, 4.0 * tf * 512.0);
    assert_eq!(
        kernel(&pass.backward, "mla_kv_norm.bwd").bytes,
        6.0 * tf * 512.0
    );
    assert_eq!(
        kernel(&pass.forward, "mla_rope_q").bytes,
        4.0 * tf * 128.0 * 192.0
    );
    assert_eq!(
        kernel(&pass.forward, "mla_rope_kv").bytes,
        2.0 * tf * (128.0 * 256.0 + 64.0 + 128.0 * (192.0 + 128.0))
    );
    // No QKV GEMM, no separate rope, no tensor all-reduce at t = 1 besides
    // the layer's own two (projection and MLP).
    assert!(pass.forward.iter().chain(&pass.backward).all(|s| {
        !matches!(s, Step::Kernel(k) if k.name.starts_with("qkv_gemm") || k.name.starts_with("rope"))
    }));
}

#[test]
fn the_core_runs_with_qk_192_and_v_128() {
    let model = deepseek_dense();
    let (b, s, a) = (1u64, 4096u64, 128u64);
    // Fused: 2·b·a·s²·(d_qk + d_v) forward, costed at head dimension 160.
    let fused = layer(&model, b, 1, true);
    let core = kernel(&fused.forward, "fused_attention");
    let flops = 2.0 * (b * a) as f64 * (s * s) as f64 * 320.0;
    assert_eq!(core.flops, flops);
    assert_eq!(
        kernel(&fused.backward, "fused_attention.bwd").flops,
        2.0 * flops
    );
    let KernelClass::FusedAttention(shape) = core.class else {
        panic!("fused kernel expected");
    };
    assert_eq!(shape.head_dim, 160);
    assert_eq!(shape.model_forward_flops(), flops);
    // Q, K of 192 and V, O of 128 per head; one fp32 statistic per row and head.
    let tf = (b * s) as f64;
    let bytes = 2.0 * tf * a as f64 * (192.0 + 192.0 + 128.0 + 128.0) + 4.0 * tf * a as f64;
    assert_eq!(core.bytes, bytes);
    // Eager: the score GEMM over d_qk, the value GEMM over d_v.
    let eager = layer(&model, b, 1, false);
    let scores = gemm_shape(kernel(&eager.forward, "attention_scores"));
    assert_eq!(
        (scores.batch, scores.m, scores.n, scores.k),
        (b * a, s, s, 192)
    );
    let values = gemm_shape(kernel(&eager.forward, "attention_over_values"));
    assert_eq!(
        (values.batch, values.m, values.n, values.k),
        (b * a, s, 128, s)
    );
    assert_eq!(
        PassSteps::flops(&eager.forward),
        PassSteps::flops(&fused.forward)
    );
}

#[test]
fn layer_weights_equal_the_parameter_count_and_flops_megatrons_per_token_count() {
    let model = deepseek_dense();
    let pass = layer(&model, 1, 1, true);
    // Every GEMM of the layer is a linear layer (the core is fused): its
    // n·k weights, plus the input, post-attention and two latent norms.
    let weights: u64 = pass
        .forward
        .iter()
        .filter_map(|s| match s {
            Step::Kernel(k) => match k.class {
                KernelClass::Gemm { shape, .. } => Some(shape.n * shape.k),
                _ => None,
            },
            _ => None,
        })
        .sum();
    let norms = 2 * model.hidden + 1536 + 512;
    assert_eq!(weights + norms, formulas::layer_parameters(&model));
    // DeepSeek-V3's attention weights: 187,105,280 per layer by hand.
    let attention =
        7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168;
    assert_eq!(attention, 187_105_280u64);
    assert_eq!(
        formulas::layer_parameters(&model),
        attention + 3 * 7168 * 18432 + 2 * 7168 + 1536 + 512
    );
    // Forward plus backward FLOPs of every layer and the logits equal
    // `formulas`' training FLOPs per token times the tokens.
    let tokens = model.seq_len as f64;
    let per_layer = PassSteps::flops(&pass.forward) + PassSteps::flops(&pass.backward);
    let logits = 3.0 * 2.0 * (model.vocab * model.hidden) as f64 * tokens;
    let total = model.layers as f64 * per_layer + logits;
    let expected = formulas::training_flops_per_token(&model, false) * tokens;
    assert!(
        ((total - expected) / expected).abs() < 1e-12,
        "{total} vs {expected}"
    );
}

#[test]
fn under_tensor_parallelism_up_projections_split_and_latent_gradients_are_reduced() {
    let model = deepseek_dense();
    let (b, t) = (1u64, 4u64);
    let tokens = b * model.seq_len;
    let pass = layer(&model, b, t, true);
    // Down projections duplicated (whole), up projections a/t heads.
    assert_eq!(gemm_shape(kernel(&pass.forward, "mla_q_down")).n, 1536);
    assert_eq!(gemm_shape(kernel(&pass.forward, "mla_kv_down")).n, 576);
    assert_eq!(gemm_shape(kernel(&pass.forward, "mla_q_up")).n, 32 * 192);
    assert_eq!(gemm_shape(kernel(&pass.forward, "mla_kv_up")).n, 32 * 256);
    assert_eq!(
        gemm_shape(kernel(&pass.forward, "output_projection")).k,
        32 * 128
    );
    let reduced: Vec<u64> = pass
        .backward
        .iter()
        .filter_map(|s| match s {
            Step::TensorAllReduce { bytes, .. } => Some(*bytes),
            _ => None,
        })
        .collect();
    // MLP's input gradient (h), then (backward order) the kv and q latents.
    let h = model.hidden;
    assert_eq!(
        reduced,
        vec![tokens * h * 2, tokens * 512 * 2, tokens * 1536 * 2]
    );
}

#[test]
fn activations_keep_latents_and_core_inputs() {
    let model = deepseek_dense();
    let (a, h, f) = (128u64, 7168u64, 18432u64);
    let attention = 4 * 1536 + 4 * 512 + 4 * a * 192 + 2 * a * 128 + 2 * a * 128;
    for kind in [
        memory::RecomputeKind::None,
        memory::RecomputeKind::Selective,
    ] {
        assert_eq!(
            memory::linear_bytes_per_token(&model, kind),
            (8 * h, attention + 6 * f)
        );
    }
}

#[test]
fn registered_tensors_hold_the_layer_s_parameters() {
    let model = deepseek_dense();
    let tensors = crate::parameter_tensors::layer_parameter_tensors(&model, crate::nz(1));
    let sum: u64 = tensors.iter().map(|t| t.elements).sum();
    assert_eq!(sum, formulas::layer_parameters(&model));
    assert!(tensors.iter().any(|t| t.name == "mla_kv_up.weight"));
    assert!(tensors.iter().all(|t| t.name != "qkv.weight"));
}

#[test]
fn the_sigmoid_router_adds_its_group_limited_choice() {
    let model = crate::presets::preset("deepseek-v3").unwrap();
    let pass = transformer_layer_with(
        &model,
        1,
        crate::nz(1),
        LayerOptions {
            fused_attention: true,
            moe: Some(crate::moe_ops::MoeLayerOptions {
                expert_parallel: crate::nz(64),
                busiest_rank_tokens: 4096 * 8,
                expert_tensor_parallel: crate::nz(1),
                capacity: None,
            }),
            ..LayerOptions::default()
        },
    );
    let tokens = 4096.0;
    assert_eq!(
        kernel(&pass.forward, "moe_router_group_limit").bytes,
        10.0 * tokens * 256.0
    );
    assert!(!pass
        .backward
        .iter()
        .any(|s| matches!(s, Step::Kernel(k) if k.name.starts_with("moe_router_group_limit"))));
    let mixtral = crate::presets::preset("mixtral-8x7b").unwrap();
    let pass = transformer_layer_with(
        &mixtral,
        1,
        crate::nz(1),
        LayerOptions {
            moe: Some(crate::moe_ops::MoeLayerOptions {
                expert_parallel: crate::nz(8),
                busiest_rank_tokens: 4096 * 2,
                expert_tensor_parallel: crate::nz(1),
                capacity: None,
            }),
            ..LayerOptions::default()
        },
    );
    assert!(!pass
        .forward
        .iter()
        .any(|s| matches!(s, Step::Kernel(k) if k.name == "moe_router_group_limit")));
}
