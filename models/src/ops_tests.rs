//! Tests of one layer's kernels: FLOPs against Megatron's Eq. 3 and the
//! tensor all-reduces per layer.

use super::*;
use crate::formulas;

fn per_iteration_flops(
    model: &ModelSpec,
    t: u64,
    b: u64,
    global_batch: u64,
    recompute: bool,
) -> f64 {
    let layer = transformer_layer(model, b, t);
    let head = crate::pipeline_ends::head(model, b, t);
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
    let model = crate::preset("gpt-1t").unwrap();
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
    let model = crate::preset("gpt3-175b").unwrap();
    let layer = transformer_layer(&model, 1, 8);
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
