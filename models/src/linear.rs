//! A linear layer's GEMMs: the forward and its data- and weight-gradient
//! GEMMs, each in its cuBLAS operand layout, and the bias gradient.

use crate::element_bytes::FP16_BYTES;
use crate::gemm::{GemmLayout, GemmShape};
use crate::kernel_role::KernelRole;
use crate::step::{PassSteps, Step};

/// The forward GEMM and its data- and weight-gradient GEMMs, each with its
/// layout (see [`GemmLayout`]).
pub fn gemm_with_gradients(
    names: [&'static str; 3],
    shape: GemmShape,
    layout: GemmLayout,
) -> [Step; 3] {
    gemm_and_backward(names, shape, layout, KernelRole::WeightGradientGemm)
}

/// A product of two activations (the attention core's Q·Kᵀ and P·V) and
/// its two backward GEMMs, shaped as [`gemm_with_gradients`]'s but both
/// ordinary backward work: there is no weight.
pub fn activation_gemm_with_gradients(
    names: [&'static str; 3],
    shape: GemmShape,
    layout: GemmLayout,
) -> [Step; 3] {
    gemm_and_backward(names, shape, layout, KernelRole::Backward)
}

fn gemm_and_backward(
    names: [&'static str; 3],
    shape: GemmShape,
    layout: GemmLayout,
    second_gradient_role: KernelRole,
) -> [Step; 3] {
    let [name, dgrad, wgrad] = names;
    [
        Step::gemm(KernelRole::Forward, name, shape, layout),
        Step::gemm(
            KernelRole::Backward,
            dgrad,
            shape.data_gradient(),
            layout.data_gradient(),
        ),
        Step::gemm(
            second_gradient_role,
            wgrad,
            shape.weight_gradient(),
            layout.weight_gradient(),
        ),
    ]
}

/// A Transformer Engine linear layer's forward GEMM and its data- and
/// weight-gradient GEMMs ([`gemm_with_gradients`]), marked as such with the
/// names of the casts before the first two (`casts`: the forward input's,
/// the output gradient's) for an FP8 recipe ([`crate::fp8`]).
pub fn te_linear_gemms(
    names: [&'static str; 3],
    casts: [&'static str; 2],
    shape: GemmShape,
    layout: GemmLayout,
) -> [Step; 3] {
    let [forward, dgrad, wgrad] = gemm_with_gradients(names, shape, layout);
    [
        forward.te_linear(Some(casts[0])),
        dgrad.te_linear(Some(casts[1])),
        wgrad.te_linear(None),
    ]
}

/// Appends a Transformer Engine linear layer's forward GEMM (in `layout`)
/// and its two backward GEMMs ([`te_linear_gemms`]).
fn linear(
    pass: &mut PassSteps,
    names: [&'static str; 3],
    casts: [&'static str; 2],
    shape: GemmShape,
    layout: GemmLayout,
    backward: &mut Vec<Step>,
) {
    let [forward, dgrad, wgrad] = te_linear_gemms(names, casts, shape, layout);
    pass.forward.push(forward);
    backward.push(dgrad);
    backward.push(wgrad);
}

/// A linear layer with a bias: its backward also reduces the gradient of the
/// biased output over the tokens (`grad_output.sum(0)`, a separate kernel
/// reading `bias_output_elems` fp16 elements, whether the bias was added in the
/// GEMM or in a fused bias-GeLU / bias-dropout-add kernel). A column-parallel
/// layer's bias is added to its m×n output; a row-parallel layer's after the
/// all-reduce, to the full hidden activation (its 1/t sequence shard with
/// sequence parallelism).
pub(crate) fn linear_with_bias(
    pass: &mut PassSteps,
    names: [&'static str; 4],
    casts: [&'static str; 2],
    shape: GemmShape,
    bias_output_elems: Option<f64>,
    backward: &mut Vec<Step>,
) {
    let [name, dgrad, wgrad, bias_grad] = names;
    linear(
        pass,
        [name, dgrad, wgrad],
        casts,
        shape,
        GemmLayout::LINEAR_FORWARD,
        backward,
    );
    if let Some(elems) = bias_output_elems {
        backward.push(Step::memory(
            KernelRole::Backward,
            bias_grad,
            elems * FP16_BYTES as f64,
        ));
    }
}
