//! The GEMM model: how long one GEMM takes when no profile entry measured it.
//!
//! With the profile's `gemm.tile_model`, tiles and waves at the sustained
//! clock ([`super::gemm_tiles`]); without one (a profile written before it),
//! time = max(FLOPs ÷ (peak × e_large × e_quant), bytes ÷ (HBM × e_hbm)),
//! where e_quant is tile and wave quantization: the output is cut into
//! tiles, tiles run in waves of one per SM, and e_quant = useful output ÷
//! (waves × SMs × tile area), taking the best candidate tile. Neither adds
//! the launch overhead ([`super::kernels`] does).

use super::gemm_tiles::{GemmEstimate, TileModel};
use super::memory_bound::memory_bound_seconds;
use models::ops::GemmShape;
use profile::Profile;
use scenario::Precision;
use topologies::GpuSpec;

/// Tile + wave quantization efficiency of a GEMM for one tile shape.
fn tile_efficiency(shape: &GemmShape, tile: [u64; 2], sm_count: u64) -> f64 {
    let tiles_m = shape.m.div_ceil(tile[0]);
    let tiles_n = shape.n.div_ceil(tile[1]);
    let tiles = shape.batch * tiles_m * tiles_n;
    let waves = tiles.div_ceil(sm_count);
    let useful = (shape.batch * shape.m * shape.n) as f64;
    useful / (waves * sm_count * tile[0] * tile[1]) as f64
}

/// The best tile+wave quantization efficiency over the candidate tiles.
pub fn quantization_efficiency(shape: &GemmShape, tiles: &[[u64; 2]], sm_count: u32) -> f64 {
    tiles
        .iter()
        .map(|&tile| tile_efficiency(shape, tile, sm_count as u64))
        .fold(0.0, f64::max)
}

/// Modeled seconds of one fp16 GEMM (without launch overhead).
pub fn gemm_seconds(shape: &GemmShape, gpu: &GpuSpec, profile: &Profile) -> f64 {
    gemm_seconds_in(Precision::Fp16, shape, gpu, profile)
}

/// Modeled seconds of one GEMM in `precision` (without launch overhead): the
/// GPU's peak in that format × the profile's large-GEMM efficiency × the
/// tile quantization, or the bytes at HBM bandwidth if slower.
pub fn gemm_seconds_in(
    precision: Precision,
    shape: &GemmShape,
    gpu: &GpuSpec,
    profile: &Profile,
) -> f64 {
    gemm_seconds_at(GemmInputs::High(precision), shape, gpu, profile)
}

/// What a GEMM's tensor cores take in: the run's high precision (fp16 or
/// bf16; FP8 runs keep it for their unconverted GEMMs), or FP8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GemmInputs {
    High(Precision),
    Fp8,
}

impl GemmInputs {
    /// The datasheet dense peak these inputs run against.
    fn peak_flops_per_s(self, gpu: &GpuSpec) -> f64 {
        match self {
            GemmInputs::High(precision) => precision.peak_flops_per_s(&gpu.peak),
            GemmInputs::Fp8 => gemm_peak_flops_per_s(Precision::Fp8, gpu),
        }
    }

    /// The main loop's efficiency relative to a bf16 GEMM's.
    fn relative_efficiency(self, profile: &Profile) -> f64 {
        match self {
            GemmInputs::High(_) => 1.0,
            GemmInputs::Fp8 => profile.gemm.fp8_relative_efficiency(),
        }
    }

    /// HBM bytes of `shape` in these inputs.
    fn bytes(self, shape: &GemmShape) -> f64 {
        match self {
            GemmInputs::High(_) => shape.bytes(),
            GemmInputs::Fp8 => models::fp8::fp8_gemm_bytes(shape),
        }
    }

    /// The tile model's sustained ratio for these inputs.
    fn sustained_ratio(self, constants: &profile::GemmTileModel) -> f64 {
        match self {
            GemmInputs::High(_) => constants.sustained_ratio.value,
            GemmInputs::Fp8 => constants.fp8_sustained_ratio(),
        }
    }
}

/// Modeled seconds of one GEMM on `inputs` (without launch overhead): the
/// tile model at the sustained clock where the profile has one, else the
/// whole-GEMM formula; the same model whatever the format.
fn gemm_seconds_at(inputs: GemmInputs, shape: &GemmShape, gpu: &GpuSpec, profile: &Profile) -> f64 {
    if let Some(estimate) = tile_estimate(inputs, shape, gpu, profile) {
        return estimate.seconds;
    }
    let relative_efficiency = inputs.relative_efficiency(profile);
    let efficiency = profile.gemm.large_gemm_efficiency.value
        * relative_efficiency
        * quantization_efficiency(shape, &profile.gemm.tile_shapes, gpu.sm_count);
    let compute = shape.flops() / (inputs.peak_flops_per_s(gpu) * efficiency);
    compute.max(memory_bound_seconds(inputs.bytes(shape), gpu, profile))
}

/// The tile model's run of one GEMM on `inputs`, or `None` for a profile
/// without a tile model.
fn tile_estimate(
    inputs: GemmInputs,
    shape: &GemmShape,
    gpu: &GpuSpec,
    profile: &Profile,
) -> Option<GemmEstimate> {
    let constants = profile.gemm.tile_model.as_ref()?;
    let model = TileModel::new(
        constants,
        &profile.gemm.tile_shapes,
        gpu,
        inputs.peak_flops_per_s(gpu),
        inputs.relative_efficiency(profile),
    )
    .with_sustained_ratio(inputs.sustained_ratio(constants));
    Some(model.estimate(shape, inputs.bytes(shape)))
}

/// How the tile model runs one GEMM in `precision` (FP8 at the FP8 peak,
/// bytes and sustained ratio), or `None` for a profile without a tile model.
pub fn gemm_estimate(
    precision: Precision,
    shape: &GemmShape,
    gpu: &GpuSpec,
    profile: &Profile,
) -> Option<GemmEstimate> {
    let inputs = if precision == Precision::Fp8 {
        GemmInputs::Fp8
    } else {
        GemmInputs::High(precision)
    };
    tile_estimate(inputs, shape, gpu, profile)
}

/// The datasheet dense peak a GEMM in `precision` runs against: the FP8
/// rate for FP8 (the bf16 rate on a GPU without one: validation refuses FP8
/// there), else the high precision's.
pub fn gemm_peak_flops_per_s(precision: Precision, gpu: &GpuSpec) -> f64 {
    match precision {
        Precision::Fp8 => gpu
            .peak
            .fp8_flops_per_s
            .unwrap_or(gpu.peak.bf16_flops_per_s),
        other => other.peak_flops_per_s(&gpu.peak),
    }
}

/// Modeled seconds of one FP8 GEMM (without launch overhead): the GPU's
/// dense FP8 rate with the bf16 GEMMs' large-GEMM efficiency times the
/// profile's `fp8_relative_efficiency` (a published FP8-to-bf16 kernel
/// ratio in the embedded profiles; measured by calibrate's FP8 stage in a
/// calibrated one) and tile quantization, or its
/// FP8-input bytes at HBM bandwidth if slower. A GPU without an FP8 rate is
/// refused at validation; here it falls back to its bf16 rate.
pub fn fp8_gemm_seconds(shape: &GemmShape, gpu: &GpuSpec, profile: &Profile) -> f64 {
    gemm_seconds_at(GemmInputs::Fp8, shape, gpu, profile)
}
