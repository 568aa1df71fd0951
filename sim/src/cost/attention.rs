//! Time of the fused attention kernel (`models::attention`).
//!
//! From the profile's `attention` rates when it has them for the kernel's
//! direction, head dimension and mask: FLOPs by FlashAttention's benchmark
//! convention ([`FusedAttentionShape::benchmark_flops`]) divided by the rate
//! at the kernel's sequence length (a rectangular ring-attention block's
//! √(s·s_kv)), interpolated linearly in log₂ of the sequence length between
//! the nearest rates. Past the longest tabulated
//! sequence the longest one's rate holds (the published rates are flat
//! there: 595–600 TFLOP/s from 8k to 16k on an H100); below the shortest the
//! rate falls in proportion to the sequence length (fewer tiles per head, as
//! the tabulated rates fall from 2k to 512), a model, not a measurement.
//!
//! Published sets often lack the causal backward (FlashAttention-3's paper
//! shows the backward without a mask only). It is then the non-causal
//! backward's rate scaled by the forward's causal ÷ non-causal ratio at the
//! same sequence length — the mask costing the backward what it costs the
//! forward, an assumption stated here and in `--explain`'s note.
//!
//! Rates timed in bursts (the profile's `attention.clock`: the
//! FlashAttention-3 paper's benchmark rests the GPU a second between
//! configurations "to avoid residual power throttling") are priced at the
//! GEMM tile model's sustained ratio, the share of the boost clock a GPU
//! holds at its power limit: the kernel is tensor-core bound as a GEMM is,
//! and a training step runs it for seconds among GEMMs. Without a tile model
//! (a profile written before it) the rates are taken as they are.
//!
//! Either time is stretched by dropout inside the kernel, where the model's
//! attention dropout is above 0 ([`super::attention_dropout`]: the
//! FlashAttention paper's measured ratio, 1.15–1.25).
//!
//! Without rates for the kernel (another GPU, another head dimension) the
//! kernel is costed as the score and value products it fuses, each at the
//! GEMM model's rate for its batched shape, halved with a causal mask and
//! 2.5 times as long backward, with no softmax traffic: what a fused kernel
//! at GEMM efficiency would take.

use super::attention_dropout::dropout_time_ratio;
use super::gemm_time::gemm_seconds_in;
use super::seq_len_table::between_in_log2;
use models::ops::{FusedAttentionShape, GemmShape};
use profile::{AttentionClock, AttentionMeasurement, Profile};
use scenario::Precision;
use topologies::GpuSpec;

/// Seconds of one fused attention kernel, without launch overhead.
pub fn fused_attention_seconds(
    shape: &FusedAttentionShape,
    precision: Precision,
    gpu: &GpuSpec,
    profile: &Profile,
) -> f64 {
    let without_dropout = match published_rate(shape, profile) {
        Some(flops_per_s) => shape.benchmark_flops() / (flops_per_s * sustained_share(profile)),
        None => gemm_equivalent_seconds(shape, precision, gpu, profile),
    };
    if shape.dropout {
        without_dropout * dropout_time_ratio(shape.equivalent_seq_len(), shape.backward)
    } else {
        without_dropout
    }
}

/// The share of the profile's attention rates a training step sustains: the
/// tile model's (bf16) sustained ratio for rates timed in bursts, else 1.
pub fn sustained_share(profile: &Profile) -> f64 {
    let timed_in_bursts = profile
        .attention
        .as_ref()
        .is_some_and(|attention| attention.clock == AttentionClock::Burst);
    match &profile.gemm.tile_model {
        Some(constants) if timed_in_bursts => constants.sustained_ratio.value,
        _ => 1.0,
    }
}

/// The profile's rate for this kernel, FLOP/s, if it has one.
pub fn published_rate(shape: &FusedAttentionShape, profile: &Profile) -> Option<f64> {
    let direct = rate(profile, shape, shape.backward, shape.causal);
    if direct.is_some() || !(shape.backward && shape.causal) {
        return direct;
    }
    let backward = rate(profile, shape, true, false)?;
    let causal_forward = rate(profile, shape, false, true)?;
    let plain_forward = rate(profile, shape, false, false)?;
    Some(backward * causal_forward / plain_forward)
}

/// The tabulated rate for (direction, head dimension, mask) at the kernel's
/// sequence length.
fn rate(
    profile: &Profile,
    shape: &FusedAttentionShape,
    backward: bool,
    causal: bool,
) -> Option<f64> {
    let direction = if backward { "backward" } else { "forward" };
    let mut points: Vec<&AttentionMeasurement> = profile
        .attention
        .iter()
        .flat_map(|attention| attention.measured.iter())
        .filter(|e| e.direction == direction && e.head_dim == shape.head_dim && e.causal == causal)
        .collect();
    points.sort_by_key(|e| e.seq_len);
    let (first, last) = (points.first()?, points.last()?);
    let s = shape.equivalent_seq_len();
    if s <= first.seq_len {
        return Some(first.flops_per_s * s as f64 / first.seq_len as f64);
    }
    if s >= last.seq_len {
        return Some(last.flops_per_s);
    }
    let upper = points.iter().position(|e| e.seq_len >= s)?;
    let (lo, hi) = (points[upper - 1], points[upper]);
    Some(between_in_log2(
        (lo.seq_len, lo.flops_per_s),
        (hi.seq_len, hi.flops_per_s),
        s,
    ))
}

/// The fused products at the GEMM model's rate (module docs).
fn gemm_equivalent_seconds(
    shape: &FusedAttentionShape,
    precision: Precision,
    gpu: &GpuSpec,
    profile: &Profile,
) -> f64 {
    let (bh, s, kv, d) = (
        shape.batch_heads,
        shape.seq_len,
        shape.kv_seq_len,
        shape.head_dim,
    );
    let scores = GemmShape {
        batch: bh,
        m: s,
        n: kv,
        k: d,
    };
    let values = GemmShape {
        batch: bh,
        m: s,
        n: d,
        k: kv,
    };
    let forward = gemm_seconds_in(precision, &scores, gpu, profile)
        + gemm_seconds_in(precision, &values, gpu, profile);
    let masked = if shape.causal { 0.5 } else { 1.0 };
    let direction = if shape.backward { 2.5 } else { 1.0 };
    forward * masked * direction
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> (GpuSpec, Profile) {
        let topology = topologies::preset("dgx-h100-superpod").unwrap();
        (topology.gpu, Profile::builtin("h100-sxm").unwrap())
    }

    fn shape(seq_len: u64, causal: bool, backward: bool) -> FusedAttentionShape {
        FusedAttentionShape {
            batch_heads: 64,
            seq_len,
            kv_seq_len: seq_len,
            head_dim: 128,
            causal,
            backward,
            dropout: false,
        }
    }

    #[test]
    fn dropout_stretches_the_kernel_by_the_measured_ratio() {
        let (gpu, profile) = h100();
        for backward in [false, true] {
            let plain = shape(2048, true, backward);
            let with_dropout = FusedAttentionShape {
                dropout: true,
                ..plain
            };
            let ratio = fused_attention_seconds(&with_dropout, Precision::Bf16, &gpu, &profile)
                / fused_attention_seconds(&plain, Precision::Bf16, &gpu, &profile);
            let expected = if backward { 6.5 / 5.45 } else { 2.81 / 2.4 };
            assert!((ratio - expected).abs() < 1e-9, "{ratio} vs {expected}");
        }
    }

    #[test]
    fn tabulated_points_are_the_published_rates() {
        let (_, profile) = h100();
        // FlashAttention-3 paper, cuDNN bars, head dim 128.
        assert_eq!(
            published_rate(&shape(8192, true, false), &profile),
            Some(529e12)
        );
        assert_eq!(
            published_rate(&shape(2048, false, false), &profile),
            Some(617e12)
        );
        assert_eq!(
            published_rate(&shape(4096, false, true), &profile),
            Some(499e12)
        );
    }

    #[test]
    fn between_points_linear_in_log_sequence_length() {
        let (_, profile) = h100();
        // 2896 ≈ 2^11.5: halfway between 2k (484) and 4k (518) in log2.
        let at = published_rate(&shape(2896, true, false), &profile).unwrap();
        let weight = ((2896f64).log2() - 11.0) / 1.0;
        assert!((at - (484e12 + weight * 34e12)).abs() < 1.0, "{at}");
    }

    #[test]
    fn outside_the_table() {
        let (_, profile) = h100();
        assert_eq!(
            published_rate(&shape(32768, true, false), &profile),
            Some(539e12)
        );
        assert_eq!(
            published_rate(&shape(256, true, false), &profile),
            Some(315e12 / 2.0)
        );
    }

    #[test]
    fn causal_backward_scales_the_plain_backward_by_the_forward_ratio() {
        let (_, profile) = h100();
        let derived = published_rate(&shape(8192, true, true), &profile).unwrap();
        assert!((derived - 518e12 * 529.0 / 600.0).abs() < 1.0, "{derived}");
    }

    #[test]
    fn seconds_are_benchmark_flops_over_the_rate_at_the_sustained_clock() {
        let (gpu, profile) = h100();
        let forward = shape(8192, true, false);
        // The published 529 TFLOP/s was timed in a burst; the H100's GEMMs
        // sustain 0.8581 of their burst rate at the power limit.
        assert_eq!(sustained_share(&profile), 0.8581);
        let expected = 4.0 * 64.0 * 8192f64.powi(2) * 128.0 * 0.5 / (529e12 * 0.8581);
        let got = fused_attention_seconds(&forward, Precision::Bf16, &gpu, &profile);
        assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
    }

    #[test]
    fn rates_timed_sustained_or_without_a_tile_model_are_taken_as_they_are() {
        let (gpu, mut profile) = h100();
        let forward = shape(8192, true, false);
        let published = forward.benchmark_flops() / 529e12;
        profile.attention.as_mut().unwrap().clock = AttentionClock::Sustained;
        let got = fused_attention_seconds(&forward, Precision::Bf16, &gpu, &profile);
        assert!((got - published).abs() < 1e-12, "{got} vs {published}");
        let (_, mut legacy) = h100();
        legacy.gemm.tile_model = None;
        assert_eq!(sustained_share(&legacy), 1.0);
    }

    #[test]
    fn without_rates_the_fused_products_at_gemm_rate() {
        let (gpu, profile) = h100();
        let other_head_dim = FusedAttentionShape {
            head_dim: 96,
            ..shape(4096, true, true)
        };
        assert_eq!(published_rate(&other_head_dim, &profile), None);
        let scores = GemmShape {
            batch: 64,
            m: 4096,
            n: 4096,
            k: 96,
        };
        let values = GemmShape {
            batch: 64,
            m: 4096,
            n: 96,
            k: 4096,
        };
        let forward = gemm_seconds_in(Precision::Bf16, &scores, &gpu, &profile)
            + gemm_seconds_in(Precision::Bf16, &values, &gpu, &profile);
        let got = fused_attention_seconds(&other_head_dim, Precision::Bf16, &gpu, &profile);
        assert!((got - forward * 0.5 * 2.5).abs() < 1e-15);
    }
}
