//! Memory-bound kernels: the one place their time is decided, for a layer's
//! kernels (through [`super::KernelCostModel::kernel_seconds`]) and for the
//! optimizer step's phases alike.
//!
//! A kernel marked with a class `calibrate` times
//! ([`models::ops::Kernel::memory_class`], set where the kernel is created:
//! "layernorm_1" is a `layernorm`, "dropout_residual_2" a
//! `bias_dropout_add`, …; an optimizer phase carries its own) is costed from
//! the profile's `memory.measured` entries of that class, when it has any,
//! interpolated in bytes ([`interpolate_seconds`]); the measured times
//! include the kernel's launch and tail, so no overhead is added. Every other
//! memory-bound kernel, and every kernel of a class without entries, costs
//! what a device-to-device copy of its bytes cost on the profiled GPU (the
//! `"copy"` entries, interpolated the same way: a 2 MB copy ran at 0.5 TB/s
//! on the lab H100, a 4 GB one at 3.0), and without copy entries what it
//! always did: bytes ÷ (datasheet HBM bandwidth × `hbm_efficiency`) plus the
//! profile's kernel overhead. A kernel's name is never read here. The
//! embedded profiles carry the lab H100's measured classes and copies, their
//! byte-moving part scaled to each GPU's HBM bandwidth
//! (`scripts/carry-memory-classes.py`).

use super::optimizer_step;
use models::memory_class::MemoryKernelClass;
use profile::Profile;
use std::collections::BTreeMap;
use topologies::GpuSpec;

/// Seconds for a memory-bound transfer of `bytes` at achieved HBM bandwidth.
pub fn memory_bound_seconds(bytes: f64, gpu: &GpuSpec, profile: &Profile) -> f64 {
    bytes / (gpu.hbm_bandwidth_bytes_per_s * profile.memory.hbm_efficiency.value)
}

/// One measured size of a class: bytes moved and seconds taken.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasuredPoint {
    pub bytes: f64,
    pub seconds: f64,
}

/// Seconds for `bytes` of a class from its measured points (sorted by bytes,
/// one per byte count, all with positive bytes and seconds), where a kernel
/// launch with nothing to move costs `floor_s`:
///
/// - at or between measured sizes: linear in bytes between the two nearest;
/// - above the largest: the largest's achieved bandwidth (its time scaled by
///   bytes ÷ its bytes);
/// - below the smallest (B₀ bytes in t₀): linear from `min(floor_s, t₀)` at
///   zero bytes to t₀ at B₀. A smaller kernel is never faster than the
///   launch floor and never reaches a higher bandwidth than the smallest
///   measured one (t/B ≥ t₀/B₀), as small tensors that do not fill the GPU
///   do not.
///
/// `None` without points. Non-finite or negative `bytes` count as zero.
pub fn interpolate_seconds(points: &[MeasuredPoint], bytes: f64, floor_s: f64) -> Option<f64> {
    let first = points.first()?;
    let last = points.last()?;
    let bytes = if bytes.is_finite() {
        bytes.max(0.0)
    } else {
        0.0
    };
    if bytes >= last.bytes {
        return Some(last.seconds * (bytes / last.bytes));
    }
    if bytes <= first.bytes {
        let floor = floor_s.max(0.0).min(first.seconds);
        return Some(floor + (first.seconds - floor) * (bytes / first.bytes));
    }
    let above = points.partition_point(|p| p.bytes < bytes);
    let (low, high) = (points[above - 1], points[above]);
    let fraction = (bytes - low.bytes) / (high.bytes - low.bytes);
    Some(low.seconds + fraction * (high.seconds - low.seconds))
}

/// Sorted points from (bytes, ns) pairs: zero bytes or time ignored, equal
/// byte counts averaged.
fn points(mut sizes: Vec<(u64, u64)>) -> Vec<MeasuredPoint> {
    sizes.retain(|&(bytes, time_ns)| bytes > 0 && time_ns > 0);
    sizes.sort_unstable();
    let mut points: Vec<MeasuredPoint> = Vec::new();
    let mut index = 0;
    while index < sizes.len() {
        let bytes = sizes[index].0;
        let same = sizes[index..].iter().take_while(|s| s.0 == bytes).count();
        let total_ns: f64 = sizes[index..index + same].iter().map(|s| s.1 as f64).sum();
        points.push(MeasuredPoint {
            bytes: bytes as f64,
            seconds: total_ns / same as f64 / 1e9,
        });
        index += same;
    }
    points
}

/// The measured points of each class in a profile: entries with zero bytes
/// or time are ignored, and entries of equal bytes are averaged.
fn class_tables(profile: &Profile) -> BTreeMap<MemoryKernelClass, Vec<MeasuredPoint>> {
    let mut entries: BTreeMap<MemoryKernelClass, Vec<(u64, u64)>> = BTreeMap::new();
    for entry in &profile.memory.measured {
        if let Some(class) = MemoryKernelClass::from_name(&entry.kernel) {
            entries
                .entry(class)
                .or_default()
                .push((entry.bytes, entry.time_ns));
        }
    }
    entries
        .into_iter()
        .map(|(class, sizes)| (class, points(sizes)))
        .filter(|(_, points)| !points.is_empty())
        .collect()
}

/// The profile's device-to-device copies (`kernel: "copy"`) as points.
fn copy_table(profile: &Profile) -> Vec<MeasuredPoint> {
    points(
        profile
            .memory
            .measured
            .iter()
            .filter(|entry| entry.kernel == COPY_KERNEL)
            .map(|entry| (entry.bytes, entry.time_ns))
            .collect(),
    )
}

/// The name calibrate records device-to-device copies under.
pub const COPY_KERNEL: &str = "copy";

/// Memory-bound kernel costs for one GPU type and profile.
pub struct MemoryCostModel<'a> {
    gpu: &'a GpuSpec,
    profile: &'a Profile,
    overhead_s: f64,
    tables: BTreeMap<MemoryKernelClass, Vec<MeasuredPoint>>,
    /// Measured copies by size: the cost of a kernel without a class table.
    copies: Vec<MeasuredPoint>,
}

impl<'a> MemoryCostModel<'a> {
    /// `overhead_s` is the launch overhead added to bandwidth-modeled kernels.
    pub fn new(gpu: &'a GpuSpec, profile: &'a Profile, overhead_s: f64) -> MemoryCostModel<'a> {
        MemoryCostModel {
            gpu,
            profile,
            overhead_s,
            tables: class_tables(profile),
            copies: copy_table(profile),
        }
    }

    /// Seconds of `bytes` at achieved HBM bandwidth plus one launch overhead
    /// (the model for kernels without measurements).
    pub fn bandwidth_seconds(&self, bytes: f64) -> f64 {
        memory_bound_seconds(bytes, self.gpu, self.profile) + self.overhead_s
    }

    /// Seconds of a kernel of `class` moving `bytes`, from the class's
    /// measurements when the profile has them.
    pub fn measured_seconds(&self, class: MemoryKernelClass, bytes: f64) -> Option<f64> {
        interpolate_seconds(self.tables.get(&class)?, bytes, self.overhead_s)
    }

    /// Seconds of `bytes` moved by a kernel without class measurements: a
    /// device-to-device copy of those bytes as this GPU ran it, interpolated
    /// in bytes like a class (small copies do not reach the bandwidth of
    /// large ones), else the bandwidth model.
    pub fn unmeasured_seconds(&self, bytes: f64) -> f64 {
        interpolate_seconds(&self.copies, bytes, self.overhead_s)
            .unwrap_or_else(|| self.bandwidth_seconds(bytes))
    }

    /// Seconds of one memory-bound kernel of `class` (`None`: of no class
    /// calibrate times) moving `bytes`, launch included.
    pub fn kernel_seconds(&self, class: Option<MemoryKernelClass>, bytes: f64) -> f64 {
        class
            .and_then(|class| self.measured_seconds(class, bytes))
            .unwrap_or_else(|| self.unmeasured_seconds(bytes))
    }

    /// Seconds of the optimizer step over `params` parameters: each phase
    /// with measurements of its class from them; the phases without, together,
    /// as one bandwidth-modeled kernel with one launch overhead. Without any
    /// measured phase this is exactly the step's bytes at bandwidth plus one
    /// overhead.
    pub fn optimizer_seconds(
        &self,
        params: u64,
        fp32_main_grads: bool,
        optimizer: scenario::Optimizer,
    ) -> f64 {
        let params = params as f64;
        let mut measured_s = 0.0;
        let mut any_measured = false;
        let mut unmeasured_bytes = 0.0;
        for phase in optimizer_step::optimizer_phases(fp32_main_grads, optimizer) {
            let bytes = params * phase.bytes_per_param;
            match phase
                .class
                .and_then(|class| self.measured_seconds(class, bytes))
            {
                Some(seconds) => {
                    measured_s += seconds;
                    any_measured = true;
                }
                None => unmeasured_bytes += bytes,
            }
        }
        if !any_measured {
            return self.unmeasured_seconds(
                params * optimizer_step::optimizer_bytes_per_param(fp32_main_grads, optimizer),
            );
        }
        if unmeasured_bytes > 0.0 {
            measured_s + self.unmeasured_seconds(unmeasured_bytes)
        } else {
            measured_s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profile::{MemoryMeasurement, Source};

    fn point(bytes: f64, seconds: f64) -> MeasuredPoint {
        MeasuredPoint { bytes, seconds }
    }

    #[test]
    fn interpolation_is_linear_between_sizes_and_keeps_the_end_bandwidths() {
        let points = [point(1e6, 10e-6), point(3e6, 20e-6), point(7e6, 40e-6)];
        let at = |bytes: f64| interpolate_seconds(&points, bytes, 4e-6).unwrap();
        assert_eq!(at(1e6), 10e-6);
        assert_eq!(at(3e6), 20e-6);
        assert!((at(2e6) - 15e-6).abs() < 1e-18);
        assert!((at(5e6) - 30e-6).abs() < 1e-18);
        // Above the largest: its bandwidth (7e6 B in 40 µs).
        assert!((at(14e6) - 80e-6).abs() < 1e-18);
        // Below the smallest: from the 4 µs floor at 0 B to 10 µs at 1e6 B.
        assert!((at(0.5e6) - 7e-6).abs() < 1e-18);
        assert_eq!(at(0.0), 4e-6);
        assert_eq!(at(f64::NAN), 4e-6);
        // Never a higher bandwidth than the smallest entry's.
        for bytes in [1.0, 1e3, 1e5, 0.9e6] {
            assert!(bytes / at(bytes) <= 1e6 / 10e-6 * (1.0 + 1e-12), "{bytes}");
        }
        // A floor above the smallest time is capped at that time.
        assert_eq!(interpolate_seconds(&points, 0.5e6, 1.0).unwrap(), 10e-6);
        assert!(interpolate_seconds(&[], 1e6, 0.0).is_none());
    }

    fn entry(kernel: &str, bytes: u64, time_ns: u64) -> MemoryMeasurement {
        MemoryMeasurement {
            kernel: kernel.into(),
            bytes,
            time_ns,
            source: Source::Measured,
        }
    }

    #[test]
    fn tables_group_by_class_average_equal_sizes_and_skip_the_rest() {
        let mut profile = Profile::builtin("h200").unwrap();
        profile.memory.measured = vec![
            entry("layernorm", 4_000, 300),
            entry("copy", 1_000, 1),
            entry("layernorm", 2_000, 100),
            entry("layernorm", 4_000, 500),
            entry("layernorm", 0, 5),
            entry("softmax", 8_000, 0),
            entry("no-such-class", 8_000, 8),
        ];
        let tables = class_tables(&profile);
        assert_eq!(
            tables.keys().copied().collect::<Vec<_>>(),
            vec![MemoryKernelClass::LayerNorm]
        );
        assert_eq!(
            tables[&MemoryKernelClass::LayerNorm],
            vec![point(2_000.0, 100e-9), point(4_000.0, 400e-9)]
        );
    }

    /// The layer's kernels of GPT-3 175B at t = 8, b = 1.
    fn layer_kernels() -> Vec<models::ops::Kernel> {
        let model = models::preset("gpt3-175b").unwrap();
        let layer = models::ops::transformer_layer(&model, 1, crate::nz(8));
        layer
            .forward
            .into_iter()
            .chain(layer.backward)
            .filter_map(|step| match step {
                models::ops::Step::Kernel(kernel) => Some(kernel),
                models::ops::Step::TensorAllReduce { .. }
                | models::ops::Step::ExpertAllToAll { .. }
                | models::ops::Step::HostSync => None,
            })
            .collect()
    }

    #[test]
    fn class_entries_cost_their_class_and_measured_copies_cost_the_rest() {
        use crate::cost::KernelCostModel;
        let gpu = topologies::preset("h200").unwrap().gpu;
        // The H200's profile without its carried memory entries.
        let mut plain = Profile::builtin("h200").unwrap();
        plain.memory.measured.clear();
        let kernels = layer_kernels();
        let find = |name: &str| kernels.iter().find(|k| k.name == name).unwrap().clone();
        let layernorm = find("layernorm_1");
        let bytes = layernorm.bytes;
        assert!(bytes > 0.0);
        // Two measured sizes around the kernel's bytes: 10 µs at half, 30 µs at double.
        let mut measured = plain.clone();
        measured.memory.measured = vec![
            entry("layernorm", (bytes / 2.0) as u64, 10_000),
            entry("layernorm", (bytes * 2.0) as u64, 30_000),
            entry("copy", bytes as u64, 1),
        ];
        let before = KernelCostModel::new(&gpu, &plain);
        let after = KernelCostModel::new(&gpu, &measured);
        let low = (bytes / 2.0) as u64 as f64;
        let high = (bytes * 2.0) as u64 as f64;
        let expected = 10e-6 + (bytes - low) / (high - low) * 20e-6;
        let got = after.kernel_seconds(&layernorm);
        assert!((got - expected).abs() < 1e-15, "{got} vs {expected}");
        assert_ne!(got, before.kernel_seconds(&layernorm));
        // The second LayerNorm is the same class and size.
        assert_eq!(after.kernel_seconds(&find("layernorm_2")), got);
        // Without entries: today's formula, bytes at bandwidth plus overhead.
        let overhead_s = plain.gemm.kernel_overhead_ns.value * 1e-9;
        assert_eq!(
            before.kernel_seconds(&layernorm),
            memory_bound_seconds(bytes, &gpu, &plain) + overhead_s
        );
        // GEMMs are unchanged.
        for name in ["qkv_gemm", "mlp_fc2.wgrad"] {
            let kernel = find(name);
            assert_eq!(
                after.kernel_seconds(&kernel),
                before.kernel_seconds(&kernel),
                "{name}"
            );
        }
        // Unmapped kernels follow the copy table: the one copy entry here,
        // of exactly the LayerNorm's bytes, took 1 ns.
        for name in ["gelu.bwd", "qkv_gemm.bias_grad"] {
            let kernel = find(name);
            let expected = interpolate_seconds(
                &[point(bytes as u64 as f64, 1e-9)],
                kernel.bytes,
                overhead_s,
            )
            .unwrap();
            assert_eq!(after.kernel_seconds(&kernel), expected, "{name}");
        }
        // Without memory entries at all, every kernel costs what it did; with
        // copies only, every memory-bound kernel costs a copy of its bytes
        // and GEMMs are unchanged.
        let copies_only = Profile {
            memory: profile::MemoryProfile {
                measured: vec![
                    entry("copy", 1 << 20, 4_000),
                    entry("copy", 1 << 30, 300_000),
                ],
                ..plain.memory.clone()
            },
            ..plain.clone()
        };
        let copies = KernelCostModel::new(&gpu, &copies_only);
        let table = [
            point((1u64 << 20) as f64, 4e-6),
            point((1u64 << 30) as f64, 300e-6),
        ];
        for kernel in &kernels {
            let expected = match kernel.class {
                models::ops::KernelClass::MemoryBound => {
                    interpolate_seconds(&table, kernel.bytes, overhead_s).unwrap()
                }
                _ => before.kernel_seconds(kernel),
            };
            assert_eq!(copies.kernel_seconds(kernel), expected, "{}", kernel.name);
        }
    }

    #[test]
    fn optimizer_phases_with_measurements_replace_their_share_of_the_bandwidth_model() {
        let gpu = topologies::preset("h200").unwrap().gpu;
        let mut profile = Profile::builtin("h200").unwrap();
        profile.memory.measured.clear();
        let params = 100_000_000u64;
        let before = MemoryCostModel::new(&gpu, &profile, 5e-6);
        let unmeasured = before.optimizer_seconds(params, false, Default::default());
        assert_eq!(unmeasured, before.bandwidth_seconds(54.0 * params as f64));
        // Adam measured at exactly its bytes for these parameters: 1 ms.
        profile.memory.measured = vec![entry("optimizer.adam", 28 * params, 1_000_000)];
        let after = MemoryCostModel::new(&gpu, &profile, 5e-6);
        let expected = 1e-3 + after.bandwidth_seconds(26.0 * params as f64);
        assert!(
            (after.optimizer_seconds(params, false, Default::default()) - expected).abs() < 1e-15
        );
        // Every phase but the zeroing measured: the zeroing alone is modeled.
        // (1 MB in 1 µs: every phase is larger, so it runs at that bandwidth.)
        profile.memory.measured = ["optimizer.copy", "optimizer.unscale", "optimizer.l2norm"]
            .iter()
            .map(|kernel| entry(kernel, 1_000_000, 1_000))
            .chain([entry("optimizer.adam", 28 * params, 1_000_000)])
            .collect();
        let all = MemoryCostModel::new(&gpu, &profile, 5e-6);
        let per_byte = 1e-6 / 1e6;
        let expected = 1e-3
            + (6.0 + 8.0 + 4.0 + 6.0) * params as f64 * per_byte
            + all.bandwidth_seconds(2.0 * params as f64);
        let got = all.optimizer_seconds(params, false, Default::default());
        assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
    }
}
