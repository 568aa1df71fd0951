//! Kernel durations on one GPU: measured profile entries where they exist,
//! the models otherwise.
//!
//! GEMMs: measured profile entries win: an exact shape match is used as is;
//! a shape differing from measured ones in one dimension is interpolated
//! linearly between the nearest measured neighbours on that dimension.
//! Entries timed in the kernel's own operand layout (`layout`, e.g. "tn" for
//! a forward linear layer) are searched first, exact then interpolated; only
//! when they give nothing are all entries searched the same way, whatever
//! their layout (profiles written before layouts were recorded have none).
//! Measured times shorter than 2 ms are bursts: with a tile model they are
//! stretched by the model's sustained-over-burst time of that shape, so a
//! shape on the measured grid is priced like its unmeasured neighbours; times
//! of 10 ms or more (repeats at the power limit) are taken as they are, with
//! a linear taper between. Unmeasured GEMMs are priced by
//! [`super::gemm_time`], plus the launch overhead.
//!
//! Memory-bound kernels are costed in [`super::memory_bound`]: from the
//! measured entries of the class their kernel is marked with
//! ([`Kernel::memory_class`]), or at achieved HBM bandwidth; the
//! fused attention kernel in [`super::attention`].

use super::gemm_time::{fp8_gemm_seconds, gemm_estimate, gemm_seconds_in};
use super::memory_bound::MemoryCostModel;
use super::tile_fit::{BURST_MAX_NS, SUSTAINED_MIN_NS};
use models::memory_class::MemoryKernelClass;
use models::ops::{GemmLayout, GemmShape, Kernel, KernelClass};
use profile::{GemmMeasurement, Profile};
use scenario::Precision;
use std::cell::RefCell;
use std::collections::BTreeMap;
use topologies::GpuSpec;

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
    /// GEMM prices already computed, by (FP8, shape, layout): a run's works
    /// repeat the same few shapes in every pass, and pricing one by the
    /// tile model is most of a work's cost.
    gemm_memo: RefCell<BTreeMap<(bool, GemmShape, GemmLayout), f64>>,
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
            gemm_memo: RefCell::default(),
        }
    }

    /// The same model for GEMMs in `precision` (fp16 unless told).
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        // Prices depend on the precision: none priced before stays.
        self.gemm_memo = RefCell::default();
        self
    }

    /// Seconds of one kernel including launch overhead, at the rates a fit
    /// applied to the profile ([`profile::FittedRates`]; 1 without one).
    pub fn kernel_seconds(&self, kernel: &Kernel) -> f64 {
        let fitted = &self.profile.fitted;
        let rate = match kernel.class {
            KernelClass::Gemm { .. } | KernelClass::Fp8Gemm { .. } => fitted.gemm,
            KernelClass::MemoryBound => fitted.memory_bound,
            KernelClass::FusedAttention(_) => fitted.attention,
        };
        self.calibrated_kernel_seconds(kernel) / rate
    }

    /// Seconds of one kernel including launch overhead, at the calibrated
    /// rates.
    fn calibrated_kernel_seconds(&self, kernel: &Kernel) -> f64 {
        let key = match kernel.class {
            KernelClass::Gemm { shape, layout } => Some((false, shape, layout)),
            KernelClass::Fp8Gemm { shape, layout } => Some((true, shape, layout)),
            _ => None,
        };
        let Some(key) = key else {
            return self.priced_kernel_seconds(kernel);
        };
        if let Some(&seconds) = self.gemm_memo.borrow().get(&key) {
            return seconds;
        }
        let seconds = self.priced_kernel_seconds(kernel);
        self.gemm_memo.borrow_mut().insert(key, seconds);
        seconds
    }

    /// [`Self::calibrated_kernel_seconds`] priced afresh.
    fn priced_kernel_seconds(&self, kernel: &Kernel) -> f64 {
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
            KernelClass::MemoryBound => self
                .memory
                .kernel_seconds(kernel.memory_class, kernel.bytes),
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
    pub fn optimizer_seconds(
        &self,
        params: u64,
        fp32_main_grads: bool,
        optimizer: scenario::Optimizer,
    ) -> f64 {
        self.memory
            .optimizer_seconds(params, fp32_main_grads, optimizer)
            / self.profile.fitted.memory_bound
    }

    /// Seconds of one memory-bound kernel of `class` (`None`: of no class
    /// calibrate times) moving `bytes` ([`MemoryCostModel::kernel_seconds`]).
    pub fn memory_kernel_seconds(&self, class: Option<MemoryKernelClass>, bytes: f64) -> f64 {
        self.memory.kernel_seconds(class, bytes) / self.profile.fitted.memory_bound
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
