//! Kernel durations on one GPU.
//!
//! GEMM model: time = max(FLOPs ÷ (peak × e_large × e_quant), bytes ÷ (HBM ×
//! e_hbm)) plus the launch overhead, where e_quant is tile and wave quantization: the output
//! is cut into tiles (the profile lists the candidate tile shapes), tiles run
//! in waves of one per SM, and e_quant = useful output ÷ (waves × SMs × tile
//! area), taking the best candidate tile as cuBLAS's heuristics would.
//! Measured profile entries win: an exact shape match is used as is; a shape
//! differing from measured ones in one dimension is interpolated linearly
//! between the nearest measured neighbours on that dimension. Entries timed
//! in the kernel's own operand layout (`layout`, e.g. "tn" for a forward
//! linear layer) are searched first, exact then interpolated; only when they
//! give nothing are all entries searched the same way, whatever their layout
//! (profiles written before layouts were recorded have none).

//!
//! Memory-bound kernels are costed in [`super::memory_bound`]: from the
//! measured entries of their kernel class, or at achieved HBM bandwidth; the
//! fused attention kernel in [`super::attention`].

use super::memory_bound::MemoryCostModel;
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
    gemm_seconds_at(
        precision.peak_flops_per_s(&gpu.peak),
        1.0,
        shape,
        shape.bytes(),
        gpu,
        profile,
    )
}

/// Modeled seconds of one GEMM at `peak_flops_per_s` × `relative_efficiency`
/// moving `bytes` (without launch overhead): the same efficiency model
/// whatever the format.
fn gemm_seconds_at(
    peak_flops_per_s: f64,
    relative_efficiency: f64,
    shape: &GemmShape,
    bytes: f64,
    gpu: &GpuSpec,
    profile: &Profile,
) -> f64 {
    let efficiency = profile.gemm.large_gemm_efficiency.value
        * relative_efficiency
        * quantization_efficiency(shape, &profile.gemm.tile_shapes, gpu.sm_count);
    let compute = shape.flops() / (peak_flops_per_s * efficiency);
    compute.max(memory_bound_seconds(bytes, gpu, profile))
}

/// Modeled seconds of one FP8 GEMM (without launch overhead): the GPU's
/// dense FP8 rate with the bf16 GEMMs' large-GEMM efficiency times the
/// profile's `fp8_relative_efficiency` (a published FP8-to-bf16 kernel
/// ratio in the embedded profiles; measured by calibrate's FP8 stage in a
/// calibrated one) and tile quantization, or its
/// FP8-input bytes at HBM bandwidth if slower. A GPU without an FP8 rate is
/// refused at validation; here it falls back to its bf16 rate.
pub fn fp8_gemm_seconds(shape: &GemmShape, gpu: &GpuSpec, profile: &Profile) -> f64 {
    let peak = gpu
        .peak
        .fp8_flops_per_s
        .unwrap_or(gpu.peak.bf16_flops_per_s);
    gemm_seconds_at(
        peak,
        profile.gemm.fp8_relative_efficiency(),
        shape,
        models::fp8::fp8_gemm_bytes(shape),
        gpu,
        profile,
    )
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
                Some(seconds) => seconds,
                None => {
                    gemm_seconds_in(self.precision, &shape, self.gpu, self.profile)
                        + self.overhead_s
                }
            },
            KernelClass::Fp8Gemm { shape, layout } => {
                match self.measured_fp8_gemm_seconds(&shape, layout) {
                    Some(seconds) => seconds,
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
mod tests {
    use super::*;
    use profile::Source;

    fn a100() -> (GpuSpec, Profile) {
        (
            topologies::preset("selene").unwrap().gpu,
            Profile::builtin("a100-80gb").unwrap(),
        )
    }

    #[test]
    fn quantization_penalises_a_partial_last_wave() {
        // 108 SMs: 108 tiles of 128x128 fill one wave exactly; 109 need two.
        let full = GemmShape {
            batch: 1,
            m: 128 * 108,
            n: 128,
            k: 4096,
        };
        let spill = GemmShape {
            batch: 1,
            m: 128 * 109,
            n: 128,
            k: 4096,
        };
        assert_eq!(quantization_efficiency(&full, &[[128, 128]], 108), 1.0);
        let e = quantization_efficiency(&spill, &[[128, 128]], 108);
        assert!((e - 109.0 / 216.0).abs() < 1e-12, "{e}");
    }

    #[test]
    fn large_square_gemm_runs_at_the_profile_efficiency() {
        let (gpu, profile) = a100();
        let shape = GemmShape {
            batch: 1,
            m: 128 * 108 * 4,
            n: 128 * 8,
            k: 8192,
        };
        let achieved = shape.flops() / gemm_seconds(&shape, &gpu, &profile);
        assert!((achieved / 312e12 - 0.80).abs() < 1e-9, "{achieved}");
    }

    /// A 1×m×1024×1024 measurement in `layout` ("" for none).
    fn entry(m: u64, time_ns: u64, layout: &str) -> GemmMeasurement {
        GemmMeasurement {
            batch: 1,
            m,
            n: 1024,
            k: 1024,
            dtype: "fp16".into(),
            time_ns,
            spread_ns: None,
            source: Source::Measured,
            layout: (!layout.is_empty()).then(|| layout.to_string()),
        }
    }

    fn shape(m: u64, n: u64) -> GemmShape {
        GemmShape {
            batch: 1,
            m,
            n,
            k: 1024,
        }
    }

    #[test]
    fn measured_entries_win_and_are_interpolated_between_shapes() {
        let (gpu, mut profile) = a100();
        profile.gemm.measured = vec![entry(1024, 10_000, ""), entry(3072, 30_000, "")];
        let model = KernelCostModel::new(&gpu, &profile);
        let seconds = |m, n| model.measured_gemm_seconds(&shape(m, n), GemmLayout::Tn);
        let exact = seconds(1024, 1024).unwrap();
        assert!((exact - 10e-6).abs() < 1e-15);
        let between = seconds(2048, 1024).unwrap();
        assert!((between - 20e-6).abs() < 1e-12, "{between}");
        assert!(seconds(4096, 1024).is_none());
        assert!(seconds(2048, 512).is_none());
    }

    #[test]
    fn entries_of_the_kernels_own_layout_are_preferred() {
        let (gpu, mut profile) = a100();
        profile.gemm.measured = vec![
            entry(1024, 11_000, "nn"),
            entry(1024, 10_000, "tn"),
            entry(2048, 50_000, "nn"),
            entry(3072, 30_000, "tn"),
        ];
        let model = KernelCostModel::new(&gpu, &profile);
        let seconds = |m, layout| {
            model
                .measured_gemm_seconds(&shape(m, 1024), layout)
                .unwrap()
        };
        // Exact matches of each layout.
        assert!((seconds(1024, GemmLayout::Tn) - 10e-6).abs() < 1e-15);
        assert!((seconds(1024, GemmLayout::Nn) - 11e-6).abs() < 1e-15);
        // A TN kernel at m = 2048 interpolates its own layout's entries
        // rather than taking the NN entry of exactly its shape.
        assert!((seconds(2048, GemmLayout::Tn) - 20e-6).abs() < 1e-12);
        assert!((seconds(2048, GemmLayout::Nn) - 50e-6).abs() < 1e-15);
        // NN has nothing at 3072 (nor above it to interpolate): all layouts.
        assert!((seconds(3072, GemmLayout::Nn) - 30e-6).abs() < 1e-15);
        // No NT entry at all: every entry, as before layouts were recorded
        // (the first of equal shapes in profile order).
        assert!((seconds(1024, GemmLayout::Nt) - 11e-6).abs() < 1e-15);
    }

    #[test]
    fn fp16_entries_are_preferred_over_bf16_of_the_same_shape_and_layout() {
        let (gpu, mut profile) = a100();
        let with_dtype = |m, time_ns, layout: &str, dtype: &str| GemmMeasurement {
            dtype: dtype.into(),
            ..entry(m, time_ns, layout)
        };
        profile.gemm.measured = vec![
            with_dtype(1024, 9_000, "tn", "bf16"),
            with_dtype(1024, 10_000, "tn", "fp16"),
            with_dtype(2048, 19_000, "nn", "bf16"),
            with_dtype(2048, 22_000, "tn", "fp16"),
        ];
        let model = KernelCostModel::new(&gpu, &profile);
        let seconds = |m, layout| {
            model
                .measured_gemm_seconds(&shape(m, 1024), layout)
                .unwrap()
        };
        assert!((seconds(1024, GemmLayout::Tn) - 10e-6).abs() < 1e-15);
        // The layout outranks the dtype: NN at 2048 is the bf16 NN entry ...
        assert!((seconds(2048, GemmLayout::Nn) - 19e-6).abs() < 1e-15);
        // ... and with no entry of its layout, the fp16 entry of another.
        assert!((seconds(1024, GemmLayout::Nt) - 10e-6).abs() < 1e-15);
    }

    #[test]
    fn the_precision_picks_its_measurements_and_its_peak() {
        let (mut gpu, mut profile) = a100();
        let with_dtype = |time_ns, dtype: &str| GemmMeasurement {
            dtype: dtype.into(),
            ..entry(1024, time_ns, "tn")
        };
        profile.gemm.measured = vec![with_dtype(9_000, "bf16"), with_dtype(10_000, "fp16")];
        let bf16 = KernelCostModel::new(&gpu, &profile).with_precision(Precision::Bf16);
        let seconds = bf16
            .measured_gemm_seconds(&shape(1024, 1024), GemmLayout::Tn)
            .unwrap();
        assert!((seconds - 9e-6).abs() < 1e-15);
        // Unmeasured GEMMs divide by the precision's own peak.
        gpu.peak.bf16_flops_per_s = gpu.peak.fp16_flops_per_s / 2.0;
        let big = GemmShape {
            batch: 1,
            m: 8192,
            n: 8192,
            k: 8192,
        };
        let fp16_s = gemm_seconds_in(Precision::Fp16, &big, &gpu, &profile);
        let bf16_s = gemm_seconds_in(Precision::Bf16, &big, &gpu, &profile);
        assert!(
            (bf16_s / fp16_s - 2.0).abs() < 1e-12,
            "{bf16_s} vs {fp16_s}"
        );
        assert_eq!(gemm_seconds(&big, &gpu, &profile), fp16_s);
    }

    #[test]
    fn layout_less_entries_serve_every_layout() {
        let (gpu, mut profile) = a100();
        profile.gemm.measured = vec![entry(1024, 10_000, ""), entry(2048, 21_000, "nt")];
        let model = KernelCostModel::new(&gpu, &profile);
        for layout in GemmLayout::ALL {
            let exact = model
                .measured_gemm_seconds(&shape(1024, 1024), layout)
                .unwrap();
            assert!((exact - 10e-6).abs() < 1e-15, "{layout:?}");
        }
        // The kernel's cost goes through the same lookup.
        let kernel = |layout| Kernel {
            name: "g",
            class: KernelClass::Gemm {
                shape: shape(2048, 1024),
                layout,
            },
            flops: 0.0,
            bytes: 0.0,
        };
        assert!((model.kernel_seconds(&kernel(GemmLayout::Nt)) - 21e-6).abs() < 1e-15);
        // Another layout falls back to the NT entry of its exact shape.
        assert!((model.kernel_seconds(&kernel(GemmLayout::Tn)) - 21e-6).abs() < 1e-15);
    }

    #[test]
    fn fp8_gemms_take_only_fp8_measurements_else_the_fp8_peak() {
        let gpu = topologies::preset("h100").unwrap().gpu;
        let mut profile = Profile::builtin("h100-sxm").unwrap();
        let fp8_kernel = Kernel {
            name: "mlp_fc1",
            class: KernelClass::Fp8Gemm {
                shape: shape(1024, 1024),
                layout: GemmLayout::Tn,
            },
            flops: shape(1024, 1024).flops(),
            bytes: 0.0,
        };
        // A bf16 entry of the very shape says nothing of the FP8 rate.
        profile.gemm.measured = vec![GemmMeasurement {
            dtype: "bf16".into(),
            ..entry(1024, 10_000, "tn")
        }];
        let model = KernelCostModel::new(&gpu, &profile).with_precision(Precision::Fp8);
        let overhead_s = profile.gemm.kernel_overhead_ns.value * 1e-9;
        let modeled = fp8_gemm_seconds(&shape(1024, 1024), &gpu, &profile) + overhead_s;
        assert_eq!(model.kernel_seconds(&fp8_kernel), modeled);
        // The same GEMM in bf16 takes the bf16 entry.
        let bf16_kernel = Kernel {
            class: KernelClass::Gemm {
                shape: shape(1024, 1024),
                layout: GemmLayout::Tn,
            },
            ..fp8_kernel.clone()
        };
        assert!((model.kernel_seconds(&bf16_kernel) - 10e-6).abs() < 1e-15);
        // An fp8 entry wins.
        profile.gemm.measured.push(GemmMeasurement {
            dtype: "fp8".into(),
            ..entry(1024, 6_000, "tn")
        });
        let model = KernelCostModel::new(&gpu, &profile).with_precision(Precision::Fp8);
        assert!((model.kernel_seconds(&fp8_kernel) - 6e-6).abs() < 1e-15);
        // Unmeasured, a compute-bound FP8 GEMM runs at the FP8:bf16 peak
        // ratio (1979 vs 989 TFLOP/s dense on an H100) times the profile's
        // fp8_relative_efficiency (0.95): 1.901 times as fast.
        let big = GemmShape {
            batch: 1,
            m: 8192,
            n: 8192,
            k: 8192,
        };
        let ratio = gemm_seconds_in(Precision::Bf16, &big, &gpu, &profile)
            / fp8_gemm_seconds(&big, &gpu, &profile);
        assert_eq!(profile.gemm.fp8_relative_efficiency(), 0.95);
        assert!((ratio - 1979.0 / 989.0 * 0.95).abs() < 1e-12, "{ratio}");
        // Without the field, the bf16 efficiency unchanged.
        profile.gemm.fp8_relative_efficiency = None;
        let ratio = gemm_seconds_in(Precision::Bf16, &big, &gpu, &profile)
            / fp8_gemm_seconds(&big, &gpu, &profile);
        assert!((ratio - 1979.0 / 989.0).abs() < 1e-12, "{ratio}");
    }
    #[test]
    fn bf16_gemms_never_take_fp8_measurements() {
        let gpu = topologies::preset("h100").unwrap().gpu;
        let mut profile = Profile::builtin("h100-sxm").unwrap();
        // Only an FP8 entry of the very shape and layout (as calibrate now
        // writes): the bf16 GEMM is modeled, not read at the FP8 time.
        profile.gemm.measured = vec![GemmMeasurement {
            dtype: "fp8".into(),
            ..entry(1024, 6_000, "tn")
        }];
        let model = KernelCostModel::new(&gpu, &profile).with_precision(Precision::Bf16);
        let bf16_kernel = Kernel {
            name: "mlp_fc1",
            class: KernelClass::Gemm {
                shape: shape(1024, 1024),
                layout: GemmLayout::Tn,
            },
            flops: shape(1024, 1024).flops(),
            bytes: 0.0,
        };
        let overhead_s = profile.gemm.kernel_overhead_ns.value * 1e-9;
        let modeled =
            gemm_seconds_in(Precision::Bf16, &shape(1024, 1024), &gpu, &profile) + overhead_s;
        assert_eq!(model.kernel_seconds(&bf16_kernel), modeled);
        assert!(modeled > 6e-6 + overhead_s);
        // Nor in another layout, nor through interpolation.
        profile.gemm.measured.push(GemmMeasurement {
            dtype: "fp8".into(),
            ..entry(512, 2_000, "nn")
        });
        let model = KernelCostModel::new(&gpu, &profile).with_precision(Precision::Bf16);
        assert_eq!(
            model.measured_gemm_seconds(&shape(1024, 1024), GemmLayout::Nn),
            None
        );
        assert_eq!(
            model.measured_gemm_seconds(&shape(768, 1024), GemmLayout::Tn),
            None
        );
    }
}
