//! The encode and decode kernels of activation compression
//! (`scenario::activation_compression`): after a forward, each layer's
//! saved activations A (`memory::layer_activation_bytes`) are encoded to
//! A/ratio (A read, A/ratio written); before the pass that reads them they
//! are decoded (A/ratio read, A written). That pass is the recomputation
//! under full recompute (it rebuilds the layer from its saved input), else
//! the backward (or a split backward's input-gradient half). Both are
//! memory-bound kernels costed by their bytes; their math is Gist's
//! encodings', which no profile times.

use crate::memory::{layer_activation_bytes, recompute_kind};
use models::ops::{KernelRole, Step};
use scenario::{Recompute, Scenario};
use taskgraph::task_graph::ComputePass;

/// The codec's kernel before or after a pass over `layers` layers (none
/// without activation compression, or for a pass that neither saves nor
/// reads them).
pub fn codec_steps(scenario: &Scenario, pass: ComputePass, layers: u32) -> Vec<Step> {
    let Some(ratio) = scenario.options.activation_compression else {
        return Vec::new();
    };
    let kind = recompute_kind(scenario.recompute);
    let saved = layer_activation_bytes(scenario, kind) * f64::from(layers);
    let encoded = saved / ratio.get();
    let full = scenario.recompute == Recompute::Full;
    match pass {
        ComputePass::Forward => vec![Step::memory(
            KernelRole::Forward,
            "activation_encode",
            saved + encoded,
        )],
        ComputePass::Recompute if full => vec![Step::memory(
            KernelRole::Forward,
            "activation_decode",
            encoded + saved,
        )],
        ComputePass::Backward | ComputePass::InputGradient if !full => vec![Step::memory(
            KernelRole::Backward,
            "activation_decode",
            encoded + saved,
        )],
        _ => Vec::new(),
    }
}
