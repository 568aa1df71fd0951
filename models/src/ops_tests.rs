//! Tests of [`crate::ops`]: the layer's FLOPs against Megatron's Eq. 3 and its
//! tensor all-reduces.

use super::*;
use crate::formulas;

fn per_iteration_flops(
    model: &ModelSpec,
    t: u64,
    b: u64,
    global_batch: u64,
    recompute: bool,
) -> f64 {
    let layer = transformer_layer(model, b, crate::nz(t));
    let head = crate::pipeline_ends::head(model, b, crate::nz(t));
    let microbatches = (global_batch / b) as f64;
    let layer_fwd = PassSteps::flops(&layer.forward);
    let layer_bwd = PassSteps::flops(&layer.backward);
    let per_rank_microbatch = model.layers as f64
        * (layer_fwd * if recompute { 2.0 } else { 1.0 } + layer_bwd)
        + PassSteps::flops(&head.forward)
        + PassSteps::flops(&head.backward);
    per_rank_microbatch * t as f64 * microbatches
}

#[test]
fn kernel_flops_sum_to_megatron_eq3_with_and_without_recompute() {
    let model = crate::presets::preset("gpt-1t").unwrap();
    for t in [1, 8] {
        let with = per_iteration_flops(&model, t, 1, 3072, true);
        let eq3 = formulas::flops_per_iteration_full_recompute(&model, 3072);
        assert!((with - eq3).abs() / eq3 < 1e-12, "t={t}: {with} vs {eq3}");
        let without = per_iteration_flops(&model, t, 1, 3072, false);
        let eq = formulas::flops_per_iteration_no_recompute(&model, 3072);
        assert!(
            (without - eq).abs() / eq < 1e-12,
            "t={t}: {without} vs {eq}"
        );
    }
}

#[test]
fn layer_has_two_forward_and_two_backward_tensor_all_reduces() {
    let model = crate::presets::preset("gpt3-175b").unwrap();
    let layer = transformer_layer(&model, 1, crate::nz(8));
    let count = |steps: &[Step]| {
        steps
            .iter()
            .filter(|s| matches!(s, Step::TensorAllReduce { .. }))
            .count()
    };
    assert_eq!(count(&layer.forward), 2);
    assert_eq!(count(&layer.backward), 2);
    // Every forward GEMM has a data- and a weight-gradient GEMM.
    let gemms = |steps: &[Step]| {
        steps
            .iter()
            .filter(|s| {
                matches!(
                    s,
                    Step::Kernel(Kernel {
                        class: KernelClass::Gemm { .. },
                        ..
                    })
                )
            })
            .count()
    };
    assert_eq!(gemms(&layer.forward) * 2, gemms(&layer.backward));
}

/// The attention core's kernels, and only they, carry the marker selective
/// recompute reads, for every dense preset, unfused and fused.
#[test]
fn the_attention_core_is_marked_where_it_is_created() {
    let core_names = |fused: bool, model: &ModelSpec| -> Vec<&'static str> {
        let layer = transformer_layer_with(
            model,
            1,
            crate::nz(1),
            LayerOptions {
                fused_attention: fused,
                ..LayerOptions::default()
            },
        );
        layer
            .forward
            .iter()
            .filter_map(|step| match step {
                Step::Kernel(kernel) if kernel.attention_core => Some(kernel.name),
                _ => None,
            })
            .collect()
    };
    for name in crate::presets::preset_names() {
        let mut model = crate::presets::preset(&name).unwrap();
        if model.moe.is_some() || model.mla.is_some() {
            continue;
        }
        model.seq_len = model.seq_len.min(2048);
        let grouped = model.kv_heads() != model.heads;
        let expand = if grouped {
            vec!["gqa_expand_kv"]
        } else {
            vec![]
        };
        let dropout = if model.attention_dropout.is_on() {
            vec!["attention_dropout"]
        } else {
            vec![]
        };
        let unfused: Vec<&str> = expand
            .into_iter()
            .chain(["attention_scores", "softmax"])
            .chain(dropout)
            .chain(["attention_over_values"])
            .collect();
        assert_eq!(core_names(false, &model), unfused, "{name}");
        // The fused kernel reads each key/value head for its query group.
        assert_eq!(core_names(true, &model), ["fused_attention"], "{name}");
    }
}
