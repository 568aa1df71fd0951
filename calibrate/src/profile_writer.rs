//! Turns measurements into a [`Profile`]: the embedded default for the GPU
//! (or the closest one, said in the provenance) with every measured list
//! appended and exactly the scalar quantities that were measured replaced,
//! each with `source: measured` and a note saying how. Everything else keeps
//! its original value, source and note. The result must pass
//! `Profile::validate`. Which embedded default a driver device name maps to
//! ([`closest_builtin`]) and the datasheet GPU a profile names
//! ([`datasheet_gpu`]) are decided here.

use crate::collectives::{self, Collective};
use crate::error::CalibrateError;
use crate::gemm;
use crate::memory_bandwidth;
use crate::pcie::{self, PcieMeasurement, Transfer};
use crate::{cpu_adam, provenance};
use gpu::gemm::GemmDtype;
use profile::{
    CollectiveMeasurement, CpuAdamMeasurement, GemmMeasurement, MemoryMeasurement, Profile,
    Provenance, Quantity, Source,
};

/// The profile measurements start from, and why that one.
#[derive(Debug, Clone)]
pub struct BaseProfile {
    pub profile: Profile,
    /// e.g. "embedded default h200 (detected NVIDIA H200)".
    pub reason: String,
}

/// Picks the base: `requested` (a built-in name or a profile file) wins;
/// otherwise the embedded default closest to the detected device name;
/// otherwise `h200`.
pub fn base_profile(
    detected_gpu: Option<&str>,
    requested: Option<&str>,
) -> Result<BaseProfile, CalibrateError> {
    if let Some(name) = requested {
        return Ok(BaseProfile {
            profile: Profile::resolve(name)?,
            reason: format!("base profile '{name}' as requested"),
        });
    }
    let (id, reason) = match detected_gpu {
        Some(device) => {
            let found = closest_builtin(device);
            let reason = if found.exact {
                format!("embedded default {} (detected {device})", found.profile_id)
            } else {
                format!(
                    "embedded default {} as the closest stand-in: detected {device} has no embedded profile, so unmeasured quantities are another GPU's",
                    found.profile_id
                )
            };
            (found.profile_id, reason)
        }
        None => ("h200", "embedded default h200 (no GPU timed)".to_string()),
    };
    let profile = Profile::builtin(id).expect("closest_builtin names an embedded profile");
    Ok(BaseProfile { profile, reason })
}

/// Which embedded default profile a device name maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinMatch {
    /// Name for `profile::Profile::builtin`.
    pub profile_id: &'static str,
    /// False when the GPU is none of the embedded ones and this is a stand-in.
    pub exact: bool,
}

/// The embedded profile closest to a driver device name ("NVIDIA H200",
/// "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM3-32GB", …). Unknown GPUs get
/// `h200` (H100 shares its datasheet peak) with `exact: false`.
pub fn closest_builtin(device_name: &str) -> BuiltinMatch {
    let upper = device_name.to_ascii_uppercase();
    let (profile_id, exact) = if upper.contains("H200") {
        ("h200", true)
    } else if upper.contains("A100") {
        ("a100-80gb", upper.contains("80G"))
    } else if upper.contains("V100") {
        ("v100-32gb", upper.contains("32G"))
    } else if upper.contains("A800") {
        ("a100-80gb", false)
    } else {
        ("h200", false)
    };
    BuiltinMatch { profile_id, exact }
}

/// The datasheet GPU of the first topology preset whose GPU is `profile_gpu`
/// (a profile's `gpu` field, e.g. "H200").
pub fn datasheet_gpu(profile_gpu: &str) -> Option<topologies::GpuSpec> {
    topologies::preset_names()
        .into_iter()
        .filter_map(|name| topologies::preset(&name))
        .map(|topology| topology.gpu)
        .find(|gpu| gpu.name == profile_gpu)
}

/// Everything one run measured; empty lists for stages not run.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub gemm: Vec<GemmMeasurement>,
    pub kernel_overhead_ns: Option<u64>,
    /// Launches averaged per kernel-overhead sample.
    pub kernel_overhead_launches: u32,
    pub memory: Vec<MemoryMeasurement>,
    pub collectives: Vec<CollectiveMeasurement>,
    pub pcie: Vec<PcieMeasurement>,
    pub cpu_adam: Vec<CpuAdamMeasurement>,
    /// Stages that ran, for the provenance ("gemm", "cpu_adam", …).
    pub stages: Vec<String>,
    /// Remarks for the provenance (skipped shapes, one-GPU collectives, …).
    pub remarks: Vec<String>,
}

fn measured(value: f64, note: String) -> Quantity {
    Quantity {
        value,
        source: Source::Measured,
        note,
    }
}

/// A fraction for an efficiency field, clamped to (0, 1] with a remark when
/// clamping was needed (the device is faster than the base's datasheet).
fn efficiency(raw: f64, note: String) -> Quantity {
    if raw > 1.0 {
        measured(
            1.0,
            format!("{note}; the raw ratio {raw:.3} exceeds 1 (device faster than this profile's datasheet GPU) and was clamped"),
        )
    } else {
        measured(raw, note)
    }
}

fn gb_per_s(bytes_per_s: f64) -> String {
    format!("{:.1} GB/s", bytes_per_s / 1e9)
}

/// Builds the calibrated profile. `provenance` carries the device fields;
/// tool, created, method and statistic are filled here.
pub fn write_profile(
    base: BaseProfile,
    findings: Findings,
    mut provenance: Provenance,
    warmup: u32,
) -> Result<Profile, CalibrateError> {
    let mut profile = base.profile;
    let datasheet = datasheet_gpu(&profile.gpu);

    // GEMM efficiency from the largest square GEMM (bf16 first).
    let square = [GemmDtype::Bf16, GemmDtype::Fp16]
        .into_iter()
        .find_map(|dtype| gemm::largest_square(&findings.gemm, dtype).map(|(g, r)| (dtype, g, r)));
    if let (Some((dtype, largest, flops_per_s)), Some(gpu)) = (square, datasheet.as_ref()) {
        let peak = match dtype {
            GemmDtype::Bf16 => gpu.peak.bf16_flops_per_s,
            GemmDtype::Fp16 => gpu.peak.fp16_flops_per_s,
        };
        profile.gemm.large_gemm_efficiency = efficiency(
            flops_per_s / peak,
            format!(
                "cuBLAS {} {}x{}x{} GEMM (fp32 accumulate, random inputs, median {} ns) ran at {:.0} TFLOP/s of the {} datasheet peak {:.0} TFLOP/s",
                dtype.name(),
                largest.m,
                largest.n,
                largest.k,
                largest.time_ns,
                flops_per_s / 1e12,
                gpu.name,
                peak / 1e12
            ),
        );
    }
    if let Some(overhead_ns) = findings.kernel_overhead_ns {
        profile.gemm.kernel_overhead_ns = measured(
            overhead_ns as f64,
            format!(
                "event-timed span of {} back-to-back 1x128x128x128 bf16 cuBLAS GEMMs divided by their number (launch gap plus a minimal kernel)",
                findings.kernel_overhead_launches
            ),
        );
    }
    profile.gemm.measured.extend(findings.gemm);

    // HBM efficiency from the largest device-to-device copy.
    if let (Some((bytes, rate)), Some(gpu)) = (
        memory_bandwidth::largest_rate(&findings.memory, "copy"),
        datasheet.as_ref(),
    ) {
        profile.memory.hbm_efficiency = efficiency(
            rate / gpu.hbm_bandwidth_bytes_per_s,
            format!(
                "device-to-device copy moving {bytes} bytes (read + written) reached {} of the {} datasheet {}",
                gb_per_s(rate),
                gpu.name,
                gb_per_s(gpu.hbm_bandwidth_bytes_per_s)
            ),
        );
    }
    profile.memory.measured.extend(findings.memory);

    // NVLink bus bandwidth only from a real multi-GPU all-reduce.
    if let Some(largest) = collectives::largest_all_reduce(&findings.collectives) {
        if let Some(bus) = collectives::bus_bandwidth_bytes_per_s(Collective::AllReduce, largest) {
            profile.communication.nvlink_bus_bandwidth_bytes_per_s = measured(
                bus,
                format!(
                    "NCCL bf16 all-reduce of {} bytes over {} local GPUs: median {} ns, bus bandwidth = bytes/time x 2(n-1)/n",
                    largest.bytes, largest.group_size, largest.time_ns
                ),
            );
        }
    }
    profile.communication.measured.extend(findings.collectives);

    // PCIe: pinned rates at the largest size; the others in the note.
    let rate_of = |transfer: Transfer| pcie::largest(&findings.pcie, transfer);
    let context = |transfer: Transfer| {
        rate_of(transfer)
            .map(|m| {
                format!(
                    "; {} {} bytes: {}",
                    transfer.name(),
                    m.bytes,
                    gb_per_s(m.bytes_per_s())
                )
            })
            .unwrap_or_default()
    };
    let both = context(Transfer::BidirectionalPinned);
    if let Some(h2d) = rate_of(Transfer::HostToDevicePinned) {
        profile.pcie.host_to_device_bytes_per_s = measured(
            h2d.bytes_per_s(),
            format!(
                "event-timed cuMemcpyHtoDAsync of {} bytes from pinned host memory (median){}{}",
                h2d.bytes,
                context(Transfer::HostToDevicePageable),
                both
            ),
        );
    }
    if let Some(d2h) = rate_of(Transfer::DeviceToHostPinned) {
        profile.pcie.device_to_host_bytes_per_s = measured(
            d2h.bytes_per_s(),
            format!(
                "event-timed cuMemcpyDtoHAsync of {} bytes into pinned host memory (median){}{}",
                d2h.bytes,
                context(Transfer::DeviceToHostPageable),
                both
            ),
        );
    }

    if let Some(best) = cpu_adam::best(&findings.cpu_adam) {
        profile.cpu_adam.params_per_s = measured(
            cpu_adam::params_per_s(best),
            format!(
                "fp32 Adam step (bias-corrected, rayon) over {} parameters on this host: best rate at {} threads, median of the timed steps",
                best.params, best.threads
            ),
        );
    }
    profile.cpu_adam.measured.extend(findings.cpu_adam);

    let repeats = provenance.repeats.unwrap_or(0);
    let mut method = format!(
        "timed by clustersim calibrate ({}); each entry is the median of {repeats} repeats after {warmup} warm-up runs (GEMM spread_ns = interquartile range); started from {}; quantities not measured keep the base profile's source",
        if findings.stages.is_empty() {
            "nothing".to_string()
        } else {
            findings.stages.join(", ")
        },
        base.reason
    );
    for remark in &findings.remarks {
        method.push_str("; ");
        method.push_str(remark);
    }
    provenance.tool = provenance::tool();
    provenance.created = provenance::utc_now();
    provenance.method = method;
    provenance.statistic = Some("median".into());
    profile.provenance = provenance;
    profile.id = format!("{}-calibrated", profile.id);
    profile.validate("calibrated profile")?;
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quantity_sources(profile: &Profile) -> Vec<(&'static str, Source)> {
        vec![
            (
                "large_gemm_efficiency",
                profile.gemm.large_gemm_efficiency.source,
            ),
            ("kernel_overhead_ns", profile.gemm.kernel_overhead_ns.source),
            ("hbm_efficiency", profile.memory.hbm_efficiency.source),
            (
                "nvlink_bus_bandwidth",
                profile
                    .communication
                    .nvlink_bus_bandwidth_bytes_per_s
                    .source,
            ),
            ("h2d", profile.pcie.host_to_device_bytes_per_s.source),
            ("d2h", profile.pcie.device_to_host_bytes_per_s.source),
            ("cpu_adam", profile.cpu_adam.params_per_s.source),
        ]
    }

    #[test]
    fn gpu_findings_replace_exactly_the_measured_quantities() {
        let base = base_profile(Some("NVIDIA H200"), None).unwrap();
        assert!(base.reason.contains("detected NVIDIA H200"));
        let findings = Findings {
            gemm: vec![GemmMeasurement {
                batch: 1,
                m: 8192,
                n: 8192,
                k: 8192,
                dtype: "bf16".into(),
                time_ns: 1_400_000,
                spread_ns: Some(10_000),
                source: Source::Measured,
                layout: Some("tn".into()),
            }],
            memory: vec![MemoryMeasurement {
                kernel: "copy".into(),
                bytes: 2 << 30,
                time_ns: 500_000,
                source: Source::Measured,
            }],
            collectives: vec![CollectiveMeasurement {
                op: "all_reduce".into(),
                group_size: 1,
                bytes: 1 << 28,
                time_ns: 100_000,
                source: Source::Measured,
            }],
            pcie: vec![PcieMeasurement {
                transfer: Transfer::HostToDevicePinned,
                bytes: 1 << 28,
                time_ns: 5_000_000,
                spread_ns: 0,
            }],
            stages: vec!["gemm".into()],
            ..Findings::default()
        };
        let profile = write_profile(base, findings, Provenance::default(), 2).unwrap();
        let sources = quantity_sources(&profile);
        let expect = [
            ("large_gemm_efficiency", Source::Measured),
            ("kernel_overhead_ns", Source::Model),
            ("hbm_efficiency", Source::Measured),
            // One GPU: NVLink stays the datasheet figure.
            ("nvlink_bus_bandwidth", Source::Datasheet),
            ("h2d", Source::Measured),
            ("d2h", Source::Model),
            ("cpu_adam", Source::Model),
        ];
        assert_eq!(sources, expect);
        let efficiency = profile.gemm.large_gemm_efficiency.value;
        assert!((efficiency - 2.0 * 8192f64.powi(3) / 1.4e-3 / 989e12).abs() < 1e-9);
        assert!(
            (profile.memory.hbm_efficiency.value - (2u64 << 30) as f64 / 5e-4 / 4.8e12).abs()
                < 1e-9
        );
        assert_eq!(profile.id, "h200-calibrated");
        assert_eq!(profile.gpu, "H200");
        assert_eq!(profile.communication.measured.len(), 1);
        assert_eq!(profile.provenance.statistic.as_deref(), Some("median"));
    }

    #[test]
    fn efficiencies_above_one_are_clamped_and_said() {
        let base = base_profile(Some("NVIDIA GeForce RTX 9999"), None).unwrap();
        assert!(base.reason.contains("closest stand-in"));
        let findings = Findings {
            memory: vec![MemoryMeasurement {
                kernel: "copy".into(),
                bytes: 1 << 30,
                time_ns: 1,
                source: Source::Measured,
            }],
            ..Findings::default()
        };
        let profile = write_profile(base, findings, Provenance::default(), 1).unwrap();
        assert_eq!(profile.memory.hbm_efficiency.value, 1.0);
        assert!(profile.memory.hbm_efficiency.note.contains("clamped"));
        assert!(profile.provenance.method.contains("closest stand-in"));
    }

    #[test]
    fn device_names_map_to_the_closest_embedded_profile() {
        let exact = |profile_id| BuiltinMatch {
            profile_id,
            exact: true,
        };
        assert_eq!(closest_builtin("NVIDIA H200"), exact("h200"));
        assert_eq!(closest_builtin("NVIDIA A100-SXM4-80GB"), exact("a100-80gb"));
        assert_eq!(closest_builtin("Tesla V100-SXM3-32GB"), exact("v100-32gb"));
        assert!(!closest_builtin("NVIDIA A100-SXM4-40GB").exact);
        let unknown = closest_builtin("NVIDIA GeForce RTX 4090");
        assert_eq!(unknown.profile_id, "h200");
        assert!(!unknown.exact);
    }

    #[test]
    fn every_embedded_profile_has_a_datasheet_gpu() {
        for name in profile::Profile::builtin_names() {
            let profile = profile::Profile::builtin(name).unwrap();
            assert!(datasheet_gpu(&profile.gpu).is_some(), "{}", profile.gpu);
        }
    }
}
