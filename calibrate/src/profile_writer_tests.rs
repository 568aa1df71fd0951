//! The profile writer on crafted findings: which quantities become measured,
//! which datasheet they are divided by, what the profile is called, and what
//! is said in the remarks.

use super::*;
use crate::pcie::PcieMeasurement;
use profile::{CollectiveMeasurement, MemoryMeasurement};

const MIB: u64 = 1 << 20;

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

/// Built through serde so optional fields added later need no change here.
fn gemm(size: u64, time_ns: u64) -> GemmMeasurement {
    serde_json::from_value(serde_json::json!({
        "batch": 1, "m": size, "n": size, "k": size, "dtype": "bf16",
        "time_ns": time_ns, "spread_ns": 10_000, "source": "measured"
    }))
    .unwrap()
}

fn copy(bytes: u64, time_ns: u64) -> MemoryMeasurement {
    MemoryMeasurement {
        kernel: "copy".into(),
        bytes,
        time_ns,
        source: Source::Measured,
    }
}

/// One GPU's findings: an 8192³ bf16 GEMM (785 TFLOP/s), a 2 GiB-moving
/// copy in `copy_ns`, a one-GPU all-reduce and a pinned upload.
fn findings(copy_ns: u64) -> Findings {
    Findings {
        gemm: vec![gemm(8192, 1_400_000)],
        memory: vec![copy(2 << 30, copy_ns)],
        collectives: vec![CollectiveMeasurement {
            op: "all_reduce".into(),
            group_size: 1,
            bytes: 256 * MIB,
            time_ns: 200_000,
            source: Source::Measured,
        }],
        pcie: vec![PcieMeasurement {
            transfer: Transfer::HostToDevicePinned,
            bytes: 256 * MIB,
            time_ns: 5_000_000,
            spread_ns: 0,
        }],
        stages: vec!["gemm".into()],
        remarks: vec!["one local GPU".into()],
        ..Findings::default()
    }
}

fn provenance_with_sms(sm_count: u32) -> Provenance {
    Provenance {
        sm_count: Some(sm_count),
        ..Provenance::default()
    }
}

#[test]
fn gpu_findings_replace_exactly_the_measured_quantities() {
    let base = base_profile(Some("NVIDIA H200"), None).unwrap();
    assert!(base.reason.contains("detected NVIDIA H200"));
    let profile = write_profile(base, findings(500_000), provenance_with_sms(132), 2).unwrap();
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
    assert_eq!(quantity_sources(&profile), expect);
    let efficiency = profile.gemm.large_gemm_efficiency.value;
    assert!((efficiency - 2.0 * 8192f64.powi(3) / 1.4e-3 / 989e12).abs() < 1e-9);
    assert!(
        (profile.memory.hbm_efficiency.value - (2u64 << 30) as f64 / 5e-4 / 4.8e12).abs() < 1e-9
    );
    assert_eq!(profile.id, "h200-calibrated");
    assert_eq!(profile.gpu, "H200");
    assert_eq!(profile.communication.measured.len(), 1);
    assert_eq!(profile.provenance.statistic.as_deref(), Some("median"));
    assert_eq!(
        profile.provenance.remarks,
        vec!["one local GPU".to_string()]
    );
    assert!(!profile.provenance.method.contains("one local GPU"));
}

#[test]
fn an_h100_is_divided_by_the_h100_datasheet_and_named_h100() {
    let base = base_profile(Some("NVIDIA H100 80GB HBM3"), None).unwrap();
    // The lab H100's quick run: 2 GiB moved at 3007.7 GB/s.
    let copy_ns = ((2u64 << 30) as f64 / 3007.7e9 * 1e9).round() as u64;
    let profile = write_profile(base, findings(copy_ns), provenance_with_sms(132), 2).unwrap();
    assert_eq!(profile.id, "h100-sxm-calibrated");
    assert_eq!(profile.gpu, "H100-SXM5-80GB");
    let hbm = &profile.memory.hbm_efficiency;
    assert!((hbm.value - 0.8978).abs() < 1e-3, "{}", hbm.value);
    assert!(
        hbm.note
            .contains("of the H100-SXM5-80GB datasheet 3350.0 GB/s"),
        "{}",
        hbm.note
    );
    let gemm = &profile.gemm.large_gemm_efficiency;
    assert!(
        gemm.note
            .contains("H100-SXM5-80GB datasheet dense peak 989 TFLOP/s"),
        "{}",
        gemm.note
    );
    assert_eq!(
        profile.provenance.remarks,
        vec!["one local GPU".to_string()]
    );
}

#[test]
fn an_efficiency_above_one_is_an_error_naming_the_measurement() {
    // The H200's 4.3 TB/s copy on an H100 (3.35 TB/s): never clamped.
    let base = base_profile(Some("NVIDIA H100 80GB HBM3"), None).unwrap();
    let error = write_profile(base, findings(500_000), provenance_with_sms(132), 2).unwrap_err();
    let CalibrateError::Implausible { problems } = &error else {
        panic!("expected Implausible, got {error}");
    };
    assert_eq!(problems.len(), 1, "{problems:?}");
    let message = error.to_string();
    for part in [
        "device-to-device copy moving 2147483648 bytes",
        "median 500000 ns",
        "4295.0 GB/s",
        "H100-SXM5-80GB datasheet HBM bandwidth 3350.0 GB/s",
        "efficiency 1.282 > 1",
        "no profile was written",
    ] {
        assert!(message.contains(part), "{message}");
    }
}

#[test]
fn an_unknown_gpu_is_measured_but_no_efficiency_is_computed() {
    let base = base_profile(Some("NVIDIA GeForce RTX 4090"), None).unwrap();
    assert!(base.reason.contains("closest stand-in"));
    // A copy no H200 could do: with no datasheet it is not held to one.
    let profile = write_profile(base, findings(100_000), provenance_with_sms(128), 1).unwrap();
    assert_eq!(profile.gpu, "NVIDIA GeForce RTX 4090");
    assert_eq!(profile.id, "nvidia-geforce-rtx-4090-calibrated");
    let default = Profile::builtin("h200").unwrap();
    assert_eq!(
        profile.gemm.large_gemm_efficiency,
        default.gemm.large_gemm_efficiency
    );
    assert_eq!(profile.memory.hbm_efficiency, default.memory.hbm_efficiency);
    // The copy this run timed replaced the base's carried copies; the
    // base's other classes stay (carried from the lab H100).
    let copies: Vec<_> = profile
        .memory
        .measured
        .iter()
        .filter(|m| m.kernel == "copy")
        .collect();
    assert_eq!(copies.len(), 1);
    assert_eq!(copies[0].source, Source::Measured);
    assert_eq!(
        profile.memory.measured.len(),
        default.memory.measured.len() - default_copies(&default) + 1
    );
    assert_eq!(
        profile.pcie.host_to_device_bytes_per_s.source,
        Source::Measured
    );
    let remarks = profile.provenance.remarks.join("\n");
    assert!(
        remarks.contains("no datasheet for NVIDIA GeForce RTX 4090"),
        "{remarks}"
    );
    assert!(remarks.contains("were not computed"), "{remarks}");
    assert!(
        remarks.contains("the base profile 'h200' describes H200"),
        "{remarks}"
    );
    assert!(profile.provenance.method.contains("closest stand-in"));
}

#[test]
fn a_gpu_with_other_sms_than_its_datasheet_gets_no_efficiency() {
    let base = base_profile(Some("NVIDIA H100 80GB HBM3"), None).unwrap();
    let profile = write_profile(base, findings(700_000), provenance_with_sms(114), 1).unwrap();
    assert_eq!(profile.memory.hbm_efficiency.source, Source::Datasheet);
    let remarks = profile.provenance.remarks.join("\n");
    assert!(
        remarks.contains("reports 114 SMs but the H100-SXM5-80GB datasheet has 132"),
        "{remarks}"
    );
}

#[test]
fn a_base_of_another_gpu_still_describes_the_timed_gpu() {
    // Requested h200 on an H100; a stand-in v100-32gb on a V100 SXM2.
    let base = base_profile(Some("NVIDIA H100 80GB HBM3"), Some("h200")).unwrap();
    let profile = write_profile(base, findings(700_000), provenance_with_sms(132), 1).unwrap();
    assert_eq!(
        (profile.id.as_str(), profile.gpu.as_str()),
        ("h100-sxm-calibrated", "H100-SXM5-80GB")
    );
    let expected = (2u64 << 30) as f64 / 7e-4 / 3350e9;
    assert!((profile.memory.hbm_efficiency.value - expected).abs() < 1e-9);
    assert!(profile
        .provenance
        .remarks
        .iter()
        .any(|r| r.contains("'h200' describes H200")));

    let base = base_profile(Some("Tesla V100-SXM2-32GB"), None).unwrap();
    assert!(base.reason.contains("v100-32gb as the closest stand-in"));
    let mut v100 = findings(3_000_000);
    v100.gemm = vec![gemm(8192, 12_000_000)];
    v100.collectives[0].time_ns = 800_000;
    let profile = write_profile(base, v100, provenance_with_sms(80), 1).unwrap();
    assert_eq!(
        (profile.id.as_str(), profile.gpu.as_str()),
        ("v100-sxm2-32gb-calibrated", "V100-SXM2-32GB")
    );
    let expected = (2u64 << 30) as f64 / 3e-3 / 900e9;
    assert!((profile.memory.hbm_efficiency.value - expected).abs() < 1e-9);
}

#[test]
fn device_names_become_profile_ids() {
    assert_eq!(slug("NVIDIA GeForce RTX 4090"), "nvidia-geforce-rtx-4090");
    assert_eq!(
        slug("  NVIDIA  H100 NVL (MIG 1g.10gb) "),
        "nvidia-h100-nvl-mig-1g-10gb"
    );
    assert_eq!(slug("??"), "gpu");
}

fn fp8_gemm(size: u64, time_ns: u64) -> GemmMeasurement {
    GemmMeasurement {
        dtype: "fp8".into(),
        layout: Some("tn".into()),
        ..gemm(size, time_ns)
    }
}

#[test]
fn fp8_relative_efficiency_is_the_fp8_efficiency_over_this_runs_bf16_one() {
    let base = base_profile(Some("NVIDIA H100 80GB HBM3"), None).unwrap();
    let mut found = findings(800_000);
    // bf16 16384³ in 12.5 ms, FP8 16384³ in 7.5 ms (and a smaller FP8
    // square, and a non-square FP8 GEMM, neither of which counts).
    found.gemm = vec![
        gemm(16384, 12_500_000),
        fp8_gemm(8192, 1_000_000),
        fp8_gemm(16384, 7_500_000),
        GemmMeasurement {
            m: 32768,
            ..fp8_gemm(16384, 14_000_000)
        },
    ];
    let profile = write_profile(base, found, provenance_with_sms(132), 2).unwrap();
    // (F/7.5 ms / 1979 T) / (F/12.5 ms / 989 T) = (12.5/7.5)·(989/1979).
    let expected = (12.5 / 7.5) * (989.0 / 1979.0);
    let relative = profile.gemm.fp8_relative_efficiency.as_ref().unwrap();
    assert!(
        (relative.value - expected).abs() < 1e-12,
        "{}",
        relative.value
    );
    assert_eq!(relative.source, Source::Measured);
    for part in [
        "16384x16384x16384",
        "7500000 ns",
        "12500000 ns",
        "1979 TFLOP/s",
    ] {
        assert!(relative.note.contains(part), "{part}: {}", relative.note);
    }
    let flops = 2.0 * 16384f64.powi(3);
    assert!((profile.gemm.large_gemm_efficiency.value - flops / 12.5e-3 / 989e12).abs() < 1e-12);
    // The FP8 entries are kept as measured, for the FP8 cost lookup.
    assert_eq!(
        profile
            .gemm
            .measured
            .iter()
            .filter(|g| g.dtype == "fp8")
            .count(),
        3
    );
}

#[test]
fn fp8_relative_efficiency_is_not_written_without_its_inputs_or_above_one() {
    let h100 = topologies::datasheet_for_device("NVIDIA H100 80GB HBM3").unwrap();
    let a100 = topologies::datasheet_for_device("NVIDIA A100-SXM4-80GB").unwrap();
    let bf16 = gemm(16384, 12_500_000);
    let efficiency = 2.0 * 16384f64.powi(3) / 12.5e-3 / 989e12;
    let fp8 = vec![fp8_gemm(16384, 7_500_000)];
    // No FP8 square: nothing to say.
    assert!(fp8_relative_efficiency(
        std::slice::from_ref(&bf16),
        &h100,
        Some((&bf16, efficiency))
    )
    .is_none());
    let remark = |result: Option<Result<Quantity, String>>| result.unwrap().unwrap_err();
    assert!(remark(fp8_relative_efficiency(&fp8, &h100, None)).contains("no large-GEMM efficiency"));
    assert!(remark(fp8_relative_efficiency(
        &fp8,
        &a100,
        Some((&bf16, efficiency))
    ))
    .contains("no FP8 peak"));
    // FP8 at 5 ms: (12.5/5)·(989/1979) = 1.249 > 1.
    let fast = vec![fp8_gemm(16384, 5_000_000)];
    let above = remark(fp8_relative_efficiency(
        &fast,
        &h100,
        Some((&bf16, efficiency)),
    ));
    assert!(above.contains("outside (0, 1]"), "{above}");
    // Without an FP8 entry the base value stays (0.95 on the H100, a published ratio).
    let base = base_profile(Some("NVIDIA H100 80GB HBM3"), None).unwrap();
    let before = base.profile.gemm.fp8_relative_efficiency.clone();
    let profile = write_profile(base, findings(800_000), provenance_with_sms(132), 2).unwrap();
    assert_eq!(profile.gemm.fp8_relative_efficiency, before);
    assert_eq!(before.unwrap().value, 0.95);
}

/// How many `copy` entries a profile has.
fn default_copies(profile: &Profile) -> usize {
    profile
        .memory
        .measured
        .iter()
        .filter(|m| m.kernel == "copy")
        .count()
}
