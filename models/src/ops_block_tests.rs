//! Tests of the layer's kernels for today's blocks (grouped-query attention,
//! SwiGLU, RMSNorm, RoPE, no biases): FLOPs equal to 2 × the multiply-adds of
//! each GEMM, the memory-bound kernels' bytes, and their calibrate classes.

use super::*;
use crate::memory_class::MemoryKernelClass;

fn kernel<'a>(steps: &'a [Step], name: &str) -> Option<&'a Kernel> {
    steps.iter().find_map(|s| match s {
        Step::Kernel(k) if k.name == name => Some(k),
        _ => None,
    })
}

fn names(steps: &[Step]) -> Vec<&'static str> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Kernel(k) => Some(k.name),
            Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => None,
        })
        .collect()
}

#[test]
fn llama_layer_flops_are_twice_the_multiply_adds_of_its_gemms() {
    let model = crate::presets::preset("llama3-70b").unwrap();
    let (b, t) = (1u64, 8u64);
    let (s, h, a, kv, d, f) = (8192u64, 8192u64, 64u64, 8u64, 128u64, 28672u64);
    let tokens = b * s;
    let layer = transformer_layer(&model, b, crate::nz(t));
    // Forward multiply-adds: QKV, scores, attention over values, projection,
    // gate+up, down.
    let macs = tokens * h * (h + 2 * kv * d) / t
        + b * (a / t) * s * s * d
        + b * (a / t) * s * s * d
        + tokens * (h / t) * h
        + tokens * h * 2 * f / t
        + tokens * (f / t) * h;
    assert_eq!(PassSteps::flops(&layer.forward), 2.0 * macs as f64);
    assert_eq!(PassSteps::flops(&layer.backward), 4.0 * macs as f64);
    let qkv = kernel(&layer.forward, "qkv_gemm").unwrap();
    assert_eq!(
        qkv.class,
        KernelClass::Gemm {
            shape: GemmShape {
                batch: 1,
                m: tokens,
                n: (h + 2 * kv * d) / t,
                k: h
            },
            layout: GemmLayout::LINEAR_FORWARD
        }
    );
    let fc1 = kernel(&layer.forward, "mlp_fc1").unwrap();
    assert_eq!(fc1.flops, 2.0 * (tokens * h * 2 * f / t) as f64);
}

#[test]
fn llama_layer_has_its_own_memory_bound_kernels_and_no_bias_gradients() {
    let model = crate::presets::preset("llama2-70b").unwrap();
    let (b, t) = (2u64, 4u64);
    let (s, h, a, kv, d, f) = (4096u64, 8192u64, 64u64, 8u64, 128u64, 28672u64);
    let tokens = b * s;
    let layer = transformer_layer(&model, b, crate::nz(t));
    let forward = names(&layer.forward);
    let backward = names(&layer.backward);
    for name in ["rmsnorm_1", "rope", "gqa_expand_kv", "rmsnorm_2", "swiglu"] {
        assert!(forward.contains(&name), "{name} in {forward:?}");
    }
    for name in ["layernorm_1", "gelu"] {
        assert!(!forward.contains(&name), "{name}");
    }
    assert!(
        backward.iter().all(|n| !n.ends_with("bias_grad")),
        "{backward:?}"
    );
    for name in [
        "rope.bwd",
        "gqa_expand_kv.bwd",
        "swiglu.bwd",
        "rmsnorm_1.bwd",
    ] {
        assert!(backward.contains(&name), "{name}");
    }
    let bytes = |steps: &[Step], name| kernel(steps, name).unwrap().bytes;
    let ffn_elems = (tokens * f / t) as f64;
    assert_eq!(bytes(&layer.forward, "swiglu"), 6.0 * ffn_elems);
    assert_eq!(bytes(&layer.backward, "swiglu.bwd"), 10.0 * ffn_elems);
    assert_eq!(
        bytes(&layer.forward, "rope"),
        4.0 * (tokens * (a + kv) / t * d) as f64
    );
    assert_eq!(
        bytes(&layer.forward, "gqa_expand_kv"),
        2.0 * (2 * tokens * (a + kv) / t * d) as f64
    );
    assert_eq!(
        bytes(&layer.forward, "rmsnorm_1"),
        4.0 * (tokens * h) as f64
    );
    // The swiglu kernel is marked as calibrate's `swiglu` class, at its bytes
    // per output element; RMSNorm is not LayerNorm's timed kernel.
    let class = kernel(&layer.forward, "swiglu").unwrap().memory_class;
    assert_eq!(class, Some(MemoryKernelClass::Swiglu));
    assert_eq!(
        MemoryKernelClass::Swiglu.bytes_per_element() as f64 * ffn_elems,
        6.0 * ffn_elems
    );
    assert_eq!(
        kernel(&layer.forward, "rmsnorm_1").unwrap().memory_class,
        None
    );
    assert_eq!(MemoryKernelClass::of_kernel("swiglu"), class);
    assert_eq!(MemoryKernelClass::of_kernel("rmsnorm_1"), None);
    assert_eq!(MemoryKernelClass::of_kernel("final_rmsnorm"), None);
}

#[test]
fn without_biases_the_input_gradient_all_reduce_overlaps_only_the_weight_gradient() {
    let windows = |model: &ModelSpec| -> Vec<u32> {
        transformer_layer(model, 1, crate::nz(8))
            .backward
            .iter()
            .filter_map(|s| match s {
                Step::TensorAllReduce { async_window, .. } => Some(*async_window),
                Step::Kernel(_) | Step::ExpertAllToAll { .. } | Step::HostSync => None,
            })
            .collect()
    };
    let gpt = crate::presets::preset("gpt3-175b").unwrap();
    assert_eq!(windows(&gpt), [2, 2]);
    assert_eq!(
        windows(&crate::presets::preset("llama3-8b").unwrap()),
        [1, 1]
    );
    // Qwen2.5: a QKV bias only (backward runs the MLP first).
    assert_eq!(
        windows(&crate::presets::preset("qwen2.5-72b").unwrap()),
        [1, 2]
    );
    let qwen = transformer_layer(
        &crate::presets::preset("qwen2.5-72b").unwrap(),
        1,
        crate::nz(8),
    );
    assert_eq!(
        names(&qwen.backward)
            .iter()
            .filter(|n| n.ends_with("bias_grad"))
            .collect::<Vec<_>>(),
        [&"qkv_gemm.bias_grad"]
    );
}

#[test]
fn multi_head_attention_has_no_expansion_and_the_gpt_layer_is_unchanged() {
    let mut model = crate::presets::preset("gpt3-175b").unwrap();
    let before = transformer_layer(&model, 1, crate::nz(8));
    model.kv_heads = Some(model.heads);
    assert_eq!(transformer_layer(&model, 1, crate::nz(8)), before);
    assert!(kernel(&before.forward, "gqa_expand_kv").is_none());
    assert!(kernel(&before.forward, "rope").is_none());
}
