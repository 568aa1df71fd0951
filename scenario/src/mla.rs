//! What multi-head latent attention (MLA, [`models::mla_ops`]) may be
//! combined with: the simulator lowers it as Megatron-Core's
//! `MLASelfAttention` at tensor parallelism 1 without context parallelism,
//! in bf16/fp16. Tensor parallelism (the partial gradient of the rotary key
//! every tensor rank shares is not built), context parallelism (ring
//! attention over d_qk ≠ d_v is not built) and FP8 (the projections' casts
//! and FP8 weight copies are not built) are refused, each naming its field.

use crate::options::{Precision, TrainingOptions};
use crate::problem::Problem;
use models::ModelSpec;

/// Problems of an MLA model with this layout and these options.
pub fn check(
    model: &ModelSpec,
    tp: u32,
    cp: u32,
    options: &TrainingOptions,
    problems: &mut Vec<Problem>,
) {
    if model.mla.is_none() {
        return;
    }
    if tp > 1 {
        problems.push(Problem::new("tp", format!(
            "tensor parallelism ({tp}) with multi-head latent attention is not simulated yet (the rotary key's gradient shared across tensor ranks is not built); use tp 1"
        )));
    }
    if cp > 1 {
        problems.push(Problem::new("cp", format!(
            "context parallelism ({cp}) with multi-head latent attention is not simulated yet (ring attention with d_qk != d_v is not built); use cp 1"
        )));
    }
    if options.precision == Precision::Fp8 {
        problems.push(Problem::new("precision", "fp8 with multi-head latent attention is not simulated yet (the latent projections' FP8 casts are not built); use bf16"));
    }
}
