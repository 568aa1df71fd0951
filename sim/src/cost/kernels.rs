//! Kernel durations on one GPU.
//!
//! GEMM model: with the profile's `gemm.tile_model`, tiles and waves at the
//! sustained clock ([`super::gemm_tiles`]); without one (a profile written
//! before it), time = max(FLOPs ÷ (peak × e_large × e_quant), bytes ÷ (HBM ×
//! e_hbm)), where e_quant is tile and wave quantization: the output is cut
//! into tiles, tiles run in waves of one per SM, and e_quant = useful
//! output ÷ (waves × SMs × tile area), taking the best candidate tile.
//! Either adds the launch overhead.
//! Measured profile entries win: an exact shape match is used as is; a shape
//! differing from measured ones in one dimension is interpolated linearly
//! between the nearest measured neighbours on that dimension. Entries timed
//! in the kernel's own operand layout (`layout`, e.g. "tn" for a forward
//! linear layer) are searched first, exact then interpolated; only when they
//! give nothing are all entries searched the same way, whatever their layout
//! (profiles written before layouts were recorded have none). Measured
//! times shorter than 2 ms are bursts: with a tile model they are stretched
//! by the model's sustained-over-burst time of that shape, so a shape on the
//! measured grid is priced like its unmeasured neighbours; times of 10 ms or
//! more (repeats at the power limit) are taken as they are, with a linear
//! taper between.
//!
//! Memory-bound kernels are costed in [`super::memory_bound`]: from the
//! measured entries of their kernel class, or at achieved HBM bandwidth; the
//! fused attention kernel in [`super::attention`].

use super::gemm_tiles::{GemmEstimate, TileModel};
use super::memory_bound::MemoryCostModel;
use super::tile_fit::{BURST_MAX_NS, SUSTAINED_MIN_NS};
use crate::scenario::Precision;
use models::ops::{GemmLayout, GemmShape, Kernel, KernelClass};
use profile::{GemmMeasurement, Profile};
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

/// Seconds for a memory-bound transfer of `bytes` at achieved HBM bandwidth.
pub fn memory_bound_seconds(bytes: f64, gpu: &GpuSpec, profile: &Profile) -> f64 {
    bytes / (gpu.hbm_bandwidth_bytes_per_s * profile.memory.hbm_efficiency.value)
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

/// Measured GEMMs are looked up in the scenario's precision (`--precision`,
/// fp16 by default as the SC21 and dev-set runs trained): a calibration
/// times bf16 and fp16, which differ by ~5% on an H100 (8192^3: 794 vs 759
/// TFLOP/s, lab H100 2026-11-22).
///
/// Kernel costs for one GPU type and profile.
pub struct KernelCostModel<'a> {
    gpu: &'a GpuSpec,
    profile: &'a Profile,
    overhead_s: f64,
    /// The GEMMs' number format: their peak rate and the dtype of the
    /// measurements preferred.
    precision: Precision,
    /// Measured GEMMs sorted by (batch, m, n, k) for lookup.
    measured: Vec<GemmMeasurement>,
    memory: MemoryCostModel<'a>,
}

impl<'a> KernelCostModel<'a> {
    pub fn new(gpu: &'a GpuSpec, profile: &'a Profile) -> KernelCostModel<'a> {
        let mut measured = profile.gemm.measured.clone();
        measured.sort_by_key(|e| (e.batch, e.m, e.n, e.k));
        let overhead_s = profile.gemm.kernel_overhead_ns.value * 1e-9;
        KernelCostModel {
            gpu,
            profile,
            overhead_s,
            precision: Precision::Fp16,
            measured,
            memory: MemoryCostModel::new(gpu, profile, overhead_s),
        }
    }

    /// The same model for GEMMs in `precision` (fp16 unless told).
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// Seconds of one kernel including launch overhead.
    pub fn kernel_seconds(&self, kernel: &Kernel) -> f64 {
        match kernel.class {
            KernelClass::Gemm { shape, layout } => match self.measured_gemm_seconds(&shape, layout)
            {
                Some(seconds) => {
                    seconds
                        * self.sustained_stretch(self.precision.high_precision(), &shape, seconds)
                }
                None => {
                    gemm_seconds_in(self.precision, &shape, self.gpu, self.profile)
                        + self.overhead_s
                }
            },
            KernelClass::Fp8Gemm { shape, layout } => {
                match self.measured_fp8_gemm_seconds(&shape, layout) {
                    Some(seconds) => {
                        seconds * self.sustained_stretch(Precision::Fp8, &shape, seconds)
                    }
                    None => fp8_gemm_seconds(&shape, self.gpu, self.profile) + self.overhead_s,
                }
            }
            KernelClass::MemoryBound => self.memory.kernel_seconds(kernel.name, kernel.bytes),
            KernelClass::FusedAttention(shape) => {
                super::attention::fused_attention_seconds(
                    &shape,
                    self.precision,
                    self.gpu,
                    self.profile,
                ) + self.overhead_s
            }
        }
    }

    /// What a measured time of `measured_s` for `shape` is stretched by: the
    /// tile model's sustained over burst time of the shape, launch gap
    /// included (a measured time includes it), in full for a measurement
    /// shorter than [`BURST_MAX_NS`] (its repeats were a burst), not at all
    /// from [`SUSTAINED_MIN_NS`] on (its repeats held the GPU at its power
    /// limit: the lab H100's 16384³ GEMMs), linearly in between. 1 without a
    /// tile model.
    fn sustained_stretch(&self, precision: Precision, shape: &GemmShape, measured_s: f64) -> f64 {
        let Some(estimate) = gemm_estimate(precision, shape, self.gpu, self.profile) else {
            return 1.0;
        };
        let full = (estimate.seconds + self.overhead_s) / (estimate.burst_s + self.overhead_s);
        let (burst_s, sustained_s) = (BURST_MAX_NS as f64 * 1e-9, SUSTAINED_MIN_NS as f64 * 1e-9);
        let share = ((sustained_s - measured_s) / (sustained_s - burst_s)).clamp(0.0, 1.0);
        1.0 + (full - 1.0) * share
    }

    /// Measured time of an FP8 GEMM: entries of dtype "fp8" only (a bf16
    /// measurement says nothing of the FP8 rate), its layout first. calibrate
    /// writes them (cuBLASLt, TN, on a GPU with FP8 tensor cores); the
    /// embedded profiles have none.
    pub fn measured_fp8_gemm_seconds(&self, shape: &GemmShape, layout: GemmLayout) -> Option<f64> {
        let name = layout.name();
        let fp8 = |e: &GemmMeasurement| e.dtype == "fp8";
        self.measured_seconds_among(shape, |e| fp8(e) && e.layout.as_deref() == Some(name))
            .or_else(|| self.measured_seconds_among(shape, fp8))
    }

    /// Seconds of the optimizer step over `params` parameters
    /// ([`MemoryCostModel::optimizer_seconds`]).
    pub fn optimizer_seconds(&self, params: u64, fused_accumulation: bool) -> f64 {
        self.memory.optimizer_seconds(params, fused_accumulation)
    }

    /// Seconds of one memory-bound kernel named `kernel_name` moving `bytes`
    /// ([`MemoryCostModel::kernel_seconds`]).
    pub fn memory_kernel_seconds(&self, kernel_name: &str, bytes: f64) -> f64 {
        self.memory.kernel_seconds(kernel_name, bytes)
    }

    /// Measured time of a GEMM shape called in `layout`: exact, or
    /// interpolated along one dimension, from the first of these sets of
    /// entries that gives one: that layout in the model's precision, that
    /// layout in any dtype, any layout in that precision, all entries; FP8
    /// entries never (an FP8 GEMM runs at about twice the bf16 rate).
    pub fn measured_gemm_seconds(&self, shape: &GemmShape, layout: GemmLayout) -> Option<f64> {
        if self.measured.is_empty() {
            return None;
        }
        let name = layout.name();
        let not_fp8 = |e: &GemmMeasurement| e.dtype != "fp8";
        let same_layout = |e: &GemmMeasurement| e.layout.as_deref() == Some(name) && not_fp8(e);
        let dtype = self.precision.high_precision().name();
        let same_dtype = |e: &GemmMeasurement| e.dtype == dtype;
        self.measured_seconds_among(shape, |e| same_layout(e) && same_dtype(e))
            .or_else(|| self.measured_seconds_among(shape, same_layout))
            .or_else(|| self.measured_seconds_among(shape, same_dtype))
            .or_else(|| self.measured_seconds_among(shape, not_fp8))
    }

    /// Exact or interpolated time from the entries `accept` keeps.
    fn measured_seconds_among(
        &self,
        shape: &GemmShape,
        accept: impl Fn(&GemmMeasurement) -> bool,
    ) -> Option<f64> {
        if let Some(entry) = self.measured.iter().find(|e| {
            accept(e) && (e.batch, e.m, e.n, e.k) == (shape.batch, shape.m, shape.n, shape.k)
        }) {
            return Some(entry.time_ns as f64 * 1e-9);
        }
        type Key = fn(&GemmMeasurement) -> (u64, [u64; 3]);
        let dimensions: [(Key, u64, [u64; 3]); 3] = [
            (
                |e| (e.m, [e.batch, e.n, e.k]),
                shape.m,
                [shape.batch, shape.n, shape.k],
            ),
            (
                |e| (e.n, [e.batch, e.m, e.k]),
                shape.n,
                [shape.batch, shape.m, shape.k],
            ),
            (
                |e| (e.k, [e.batch, e.m, e.n]),
                shape.k,
                [shape.batch, shape.m, shape.n],
            ),
        ];
        for (key, value, others) in dimensions {
            let line: Vec<(u64, f64)> = self
                .measured
                .iter()
                .filter(|e| accept(e) && key(e).1 == others)
                .map(|e| (key(e).0, e.time_ns as f64))
                .collect();
            let below = line
                .iter()
                .filter(|(x, _)| *x < value)
                .max_by_key(|(x, _)| *x);
            let above = line
                .iter()
                .filter(|(x, _)| *x > value)
                .min_by_key(|(x, _)| *x);
            if let (Some(&(x0, y0)), Some(&(x1, y1))) = (below, above) {
                let fraction = (value - x0) as f64 / (x1 - x0) as f64;
                return Some((y0 + fraction * (y1 - y0)) * 1e-9);
            }
        }
        None
    }
}

#[cfg(test)]
#[path = "kernels_tests.rs"]
mod tests;
