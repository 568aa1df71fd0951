//! Exact FLOPs and bytes of the MoE block ([`super::moe_block`]).

use super::*;
use crate::ops::{self, Kernel, KernelClass, LayerOptions, PassSteps};

fn kernel<'a>(steps: &'a [Step], name: &str) -> &'a Kernel {
    steps
        .iter()
        .find_map(|step| match step {
            Step::Kernel(kernel) if kernel.name == name => Some(kernel),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no kernel {name}"))
}

/// Mixtral 8x7B trained at s = 4096.
fn mixtral() -> crate::spec::ModelSpec {
    crate::spec::ModelSpec {
        seq_len: 4096,
        ..crate::presets::preset("mixtral-8x7b").unwrap()
    }
}

fn mixtral_layer(ep: u64, busiest_rank_tokens: u64) -> PassSteps {
    let model = mixtral();
    ops::transformer_layer_with(
        &model,
        1,
        crate::nz(1),
        LayerOptions {
            moe: Some(MoeLayerOptions {
                expert_parallel: crate::nz(ep),
                busiest_rank_tokens,
                expert_tensor_parallel: crate::nz(1),
                capacity: None,
            }),
            ..LayerOptions::default()
        },
    )
}

#[test]
fn uniform_routing_sums_to_six_active_weights_per_token_plus_the_core() {
    // Mixtral 8x7B, b = 1, s = 4096, ep = 8 (one expert per rank): every
    // rank computes T·k = 8192 routed token copies. Layers × (forward +
    // backward) + the head = training_flops_per_token × s exactly.
    let model = mixtral();
    let s = model.seq_len;
    let layer = mixtral_layer(8, s * 2);
    let head = crate::pipeline_ends::head(&model, 1, crate::nz(1));
    let per_microbatch = model.layers as f64
        * (PassSteps::flops(&layer.forward) + PassSteps::flops(&layer.backward))
        + PassSteps::flops(&head.forward)
        + PassSteps::flops(&head.backward);
    let expected = crate::formulas::training_flops_per_token(&model, false) * s as f64;
    assert!(
        (per_microbatch - expected).abs() / expected < 1e-12,
        "{per_microbatch} vs {expected}"
    );
}

#[test]
fn kernels_have_their_closed_form_shapes_flops_and_bytes() {
    // T = 4096, h = 4096, E = 8, k = 2, F = 14336; ep = 4: 2 local experts,
    // R = 8192 → 4096 tokens per expert.
    let layer = mixtral_layer(4, 8192);
    let forward = &layer.forward;
    let (t, h, e, k, f) = (4096f64, 4096f64, 8f64, 2f64, 14336f64);
    assert_eq!(kernel(forward, "moe_router").flops, 2.0 * t * e * h);
    assert_eq!(
        kernel(forward, "moe_router_topk").bytes,
        6.0 * t * e + 10.0 * t * k
    );
    assert_eq!(kernel(forward, "moe_permute").bytes, 4.0 * t * k * h);
    // One GEMM per local expert (TE GroupedLinear): 2 of each.
    let fc1 = kernel(forward, "expert_fc1");
    assert_eq!(
        fc1.class,
        KernelClass::Gemm {
            shape: GemmShape {
                batch: 1,
                m: 4096,
                n: 2 * 14336,
                k: 4096
            },
            layout: GemmLayout::LINEAR_FORWARD
        }
    );
    assert_eq!(fc1.flops, 2.0 * 4096.0 * 2.0 * f * h);
    assert_eq!(kernel(forward, "expert_fc2").flops, 2.0 * 4096.0 * h * f);
    for name in ["expert_fc1", "expert_fc2"] {
        assert_eq!(count(forward, name), 2, "{name}");
    }
    for name in [
        "expert_fc1.dgrad",
        "expert_fc1.wgrad",
        "expert_fc2.dgrad",
        "expert_fc2.wgrad",
    ] {
        assert_eq!(count(&layer.backward, name), 2, "{name}");
    }
    assert_eq!(kernel(forward, "expert_swiglu").bytes, 6.0 * 8192.0 * f);
    assert_eq!(
        kernel(forward, "moe_unpermute").bytes,
        2.0 * t * k * h + 2.0 * t * k + 2.0 * t * h
    );
    let backward = &layer.backward;
    assert_eq!(
        kernel(backward, "moe_unpermute.bwd").bytes,
        2.0 * t * h + 4.0 * t * k * h + 2.0 * t * k
    );
    assert_eq!(
        kernel(backward, "moe_permute.bwd").bytes,
        2.0 * t * k * h + 2.0 * t * h
    );
    assert_eq!(
        kernel(backward, "moe_router_topk.bwd").bytes,
        8.0 * t * e + 10.0 * t * k
    );
    // Two all-to-alls each way, each R·h·2 bytes; no tensor all-reduce at t = 1.
    let all_to_alls = |steps: &[Step]| -> Vec<u64> {
        steps
            .iter()
            .filter_map(|step| match step {
                Step::ExpertAllToAll { bytes, .. } => Some(*bytes),
                _ => None,
            })
            .collect()
    };
    assert_eq!(all_to_alls(forward), [8192 * 4096 * 2; 2]);
    assert_eq!(all_to_alls(backward), [8192 * 4096 * 2; 2]);
    // The backward mirrors the forward: combine's gradient first.
    let order: Vec<&str> = backward
        .iter()
        .filter_map(|step| match step {
            Step::Kernel(kernel)
                if kernel.name.starts_with("moe_") || kernel.name.starts_with("expert_fc") =>
            {
                Some(kernel.name)
            }
            Step::ExpertAllToAll { .. } => Some("all_to_all"),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "moe_unpermute.bwd",
            "all_to_all",
            "expert_fc2.dgrad",
            "expert_fc2.dgrad",
            "expert_fc2.wgrad",
            "expert_fc2.wgrad",
            "expert_fc1.dgrad",
            "expert_fc1.dgrad",
            "expert_fc1.wgrad",
            "expert_fc1.wgrad",
            "all_to_all",
            "moe_permute.bwd",
            "moe_router_topk.bwd",
            "moe_router.dgrad",
            "moe_router.wgrad"
        ]
    );
}

#[test]
fn the_busiest_rank_computes_its_tokens_rounded_up_per_expert() {
    // 12 289 routed copies on 2 local experts: ⌈12 289 / 2⌉ = 6145 each.
    let layer = mixtral_layer(4, 12_289);
    let fc1 = kernel(&layer.forward, "expert_fc1");
    assert_eq!(fc1.flops, 2.0 * 6145.0 * 2.0 * 14336.0 * 4096.0);
    assert_eq!(count(&layer.forward, "expert_fc1"), 2);
}

fn count(steps: &[Step], name: &str) -> usize {
    steps
        .iter()
        .filter(|step| matches!(step, Step::Kernel(kernel) if kernel.name == name))
        .count()
}

#[test]
fn the_dispatcher_synchronizes_the_host_once_per_forward_after_the_permute() {
    // token_dispatcher.py (core_r0.15.0): the tokens per expert are read on
    // the host before the dispatch all-to-all; the backward reuses them.
    for ep in [1, 4, 8] {
        let layer = mixtral_layer(ep, 8192);
        let syncs = |steps: &[Step]| steps.iter().filter(|s| matches!(s, Step::HostSync)).count();
        assert_eq!(syncs(&layer.forward), 1, "ep {ep}");
        assert_eq!(syncs(&layer.backward), 0, "ep {ep}");
        let at = layer
            .forward
            .iter()
            .position(|s| matches!(s, Step::HostSync))
            .unwrap();
        assert!(matches!(&layer.forward[at - 1], Step::Kernel(k) if k.name == "moe_permute"));
        // Next: the dispatch all-to-all (no task at ep = 1), then the GEMMs.
        assert!(matches!(layer.forward[at + 1], Step::ExpertAllToAll { .. }));
        assert!(matches!(&layer.forward[at + 2], Step::Kernel(k) if k.name == "expert_fc1"));
    }
}

#[test]
fn shared_experts_run_as_one_dense_mlp_on_every_token() {
    let mut model = crate::presets::preset("mixtral-8x7b").unwrap();
    let moe = model.moe.as_mut().unwrap();
    moe.shared_experts = 2;
    moe.shared_expert_ffn_hidden = Some(1000);
    let (forward, _) = moe_block(
        &model,
        100,
        MoeLayerOptions {
            expert_parallel: crate::nz(8),
            busiest_rank_tokens: 200,
            expert_tensor_parallel: crate::nz(1),
            capacity: None,
        },
    );
    assert_eq!(
        kernel(&forward, "shared_expert_fc1").flops,
        2.0 * 100.0 * 4000.0 * 4096.0
    );
    assert_eq!(
        kernel(&forward, "shared_expert_fc2").flops,
        2.0 * 100.0 * 4096.0 * 2000.0
    );
}
