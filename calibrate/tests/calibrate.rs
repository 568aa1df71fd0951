//! End-to-end tests of `calibrate::run`. Those that need a GPU check for the
//! CUDA driver first and print "skipping: no CUDA driver" without one; the
//! no-driver test does the opposite.

use calibrate::{CalibrateError, CalibrateOptions, Progress};
use gpu::detect::CudaLibrary;
use profile::{Profile, Source};

fn small_cpu_options() -> CalibrateOptions {
    CalibrateOptions {
        quick: true,
        cpu_only: true,
        repeats: 2,
        cpu_adam_params: Some(1 << 16),
        max_cpu_threads: Some(2),
        ..Default::default()
    }
}

/// Every scalar quantity of a profile with its source.
fn scalar_sources(profile: &Profile) -> Vec<(&'static str, Source)> {
    vec![
        (
            "gemm.large_gemm_efficiency",
            profile.gemm.large_gemm_efficiency.source,
        ),
        (
            "gemm.kernel_overhead_ns",
            profile.gemm.kernel_overhead_ns.source,
        ),
        (
            "memory.hbm_efficiency",
            profile.memory.hbm_efficiency.source,
        ),
        (
            "communication.nvlink_bus_bandwidth_bytes_per_s",
            profile
                .communication
                .nvlink_bus_bandwidth_bytes_per_s
                .source,
        ),
        (
            "communication.nvlink_step_latency_ns",
            profile.communication.nvlink_step_latency_ns.source,
        ),
        (
            "communication.nic_bandwidth_bytes_per_s",
            profile.communication.nic_bandwidth_bytes_per_s.source,
        ),
        (
            "communication.network_step_latency_ns",
            profile.communication.network_step_latency_ns.source,
        ),
        (
            "pcie.host_to_device_bytes_per_s",
            profile.pcie.host_to_device_bytes_per_s.source,
        ),
        (
            "pcie.device_to_host_bytes_per_s",
            profile.pcie.device_to_host_bytes_per_s.source,
        ),
        (
            "cpu_adam.params_per_s",
            profile.cpu_adam.params_per_s.source,
        ),
    ]
}

#[test]
fn without_a_driver_run_returns_no_gpu_in_one_line() {
    if CudaLibrary::Driver.is_present() {
        println!("skipping: a CUDA driver is present, the no-driver path cannot be exercised");
        return;
    }
    let options = CalibrateOptions {
        quick: true,
        ..Default::default()
    };
    let mut reports = Vec::new();
    let error = calibrate::run(&options, &mut |p| reports.push(p)).unwrap_err();
    let CalibrateError::NoGpu(message) = &error else {
        panic!("expected NoGpu, got {error}");
    };
    assert!(message.contains("libcuda.so"), "{message}");
    assert!(message.contains("--cpu-only"), "{message}");
    assert!(!message.contains('\n'));
    assert_eq!(error.to_string(), *message);
    assert!(reports.is_empty(), "no stage started");
}

#[test]
fn cpu_only_profile_validates_and_marks_only_cpu_adam_measured() {
    let mut reports: Vec<Progress> = Vec::new();
    let profile = calibrate::run(&small_cpu_options(), &mut |p| reports.push(p)).unwrap();
    profile.validate("cpu-only").unwrap();
    // Round-trips through JSON as the CLI will write it.
    let text = serde_json::to_string_pretty(&profile).unwrap();
    let reread = Profile::from_json_str(&text, "cpu-only.json").unwrap();
    assert_eq!(reread.cpu_adam.measured, profile.cpu_adam.measured);
    let rate = profile.cpu_adam.params_per_s.value;
    // serde_json's default float parsing may differ in the last digit.
    assert!((reread.cpu_adam.params_per_s.value - rate).abs() <= 1e-9 * rate);

    let default = Profile::builtin("h200").unwrap();
    assert_eq!(profile.gpu, default.gpu);
    assert_eq!(profile.id, "h200-calibrated");
    for ((key, source), (_, default_source)) in scalar_sources(&profile)
        .into_iter()
        .zip(scalar_sources(&default))
    {
        if key == "cpu_adam.params_per_s" {
            assert_eq!(source, Source::Measured, "{key}");
        } else {
            assert_eq!(source, default_source, "{key} keeps its source");
        }
    }
    assert_eq!(profile.gemm, default.gemm);
    assert_eq!(profile.memory, default.memory);
    assert_eq!(profile.communication, default.communication);
    assert_eq!(profile.pcie, default.pcie);

    let adam = &profile.cpu_adam;
    assert!(adam.params_per_s.value > 0.0);
    assert!(adam.params_per_s.note.contains("65536 parameters"));
    assert_eq!(
        adam.measured.iter().map(|m| m.threads).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!(adam
        .measured
        .iter()
        .all(|m| m.source == Source::Measured && m.params == 1 << 16 && m.time_ns > 0));

    let provenance = &profile.provenance;
    assert!(provenance.tool.contains(env!("CARGO_PKG_VERSION")));
    assert!(provenance.created.ends_with('Z'));
    assert_eq!(
        provenance.remarks,
        vec![
            "CPU-only run: no GPU quantity was measured".to_string(),
            "FP8 GEMMs not timed: CPU-only run; gemm.fp8_relative_efficiency keeps the base profile's value".to_string()
        ]
    );
    // The base (h200) FP8 ratio is kept, and no FP8 entry is invented.
    assert_eq!(
        profile.gemm.fp8_relative_efficiency,
        default.gemm.fp8_relative_efficiency
    );
    assert!(profile.gemm.measured.iter().all(|g| g.dtype != "fp8"));
    assert!(provenance.gpu_state_before.is_none() && provenance.gpu_state_after.is_none());
    assert_eq!(provenance.statistic.as_deref(), Some("median"));
    assert_eq!(provenance.repeats, Some(2));
    assert!(provenance.gpu_name.is_none());

    // Progress: the one stage, from 0 to its total.
    assert!(reports
        .iter()
        .all(|p| p.stage == "cpu adam" && p.total == 2));
    assert_eq!(reports.first().unwrap().done, 0);
    assert_eq!(reports.last().unwrap().done, 2);
}

#[test]
fn cpu_only_run_can_start_from_another_builtin() {
    let options = CalibrateOptions {
        base_profile: Some("a100-80gb".into()),
        ..small_cpu_options()
    };
    let profile = calibrate::run(&options, &mut |_| {}).unwrap();
    assert_eq!(profile.gpu, "A100-SXM4-80GB");
    assert_eq!(profile.id, "a100-80gb-calibrated");
    let unknown = CalibrateOptions {
        base_profile: Some("no-such-profile".into()),
        ..small_cpu_options()
    };
    let error = calibrate::run(&unknown, &mut |_| {}).unwrap_err();
    assert!(matches!(error, CalibrateError::Profile(_)), "{error}");
}

#[test]
fn invalid_options_are_rejected_before_anything_runs() {
    let options = CalibrateOptions {
        repeats: 0,
        ..small_cpu_options()
    };
    let mut called = false;
    let error = calibrate::run(&options, &mut |_| called = true).unwrap_err();
    assert!(matches!(error, CalibrateError::InvalidOptions { .. }));
    assert!(!called);
}

/// The whole quick run on a real GPU (the lab H200 when lent).
#[test]
fn quick_gpu_run_measures_every_stage() {
    if !CudaLibrary::Driver.is_present() {
        println!("skipping: no CUDA driver");
        return;
    }
    let options = CalibrateOptions {
        quick: true,
        model: models::preset("gpt3-175b"),
        tensor_parallel: 8,
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let profile = calibrate::run(&options, &mut |p| {
        if p.done == p.total {
            eprintln!(
                "{}: {}/{} at {:?}",
                p.stage,
                p.done,
                p.total,
                started.elapsed()
            );
        }
    })
    .unwrap();
    let elapsed = started.elapsed();
    println!("{}", serde_json::to_string_pretty(&profile).unwrap());
    eprintln!("quick run took {elapsed:?}");
    assert!(elapsed.as_secs() < 120, "quick run took {elapsed:?}");
    profile.validate("gpu quick").unwrap();
    assert_eq!(profile.gemm.large_gemm_efficiency.source, Source::Measured);
    assert_eq!(profile.memory.hbm_efficiency.source, Source::Measured);
    assert_eq!(
        profile.pcie.host_to_device_bytes_per_s.source,
        Source::Measured
    );
    assert_eq!(profile.cpu_adam.params_per_s.source, Source::Measured);
    assert!(profile.gemm.measured.iter().any(|g| g.dtype == "fp16"));
    assert!(profile.gemm.measured.iter().any(|g| g.dtype == "bf16"));
    assert!(profile.memory.measured.iter().any(|m| m.kernel == "copy"));
    assert!(profile.provenance.gpu_name.is_some());
    // Clocks before and after, or why nvidia-smi could not say.
    for state in [
        &profile.provenance.gpu_state_before,
        &profile.provenance.gpu_state_after,
    ] {
        let state = state.as_ref().expect("GPU state recorded");
        assert!(state.unavailable.is_some() || !state.gpus.is_empty());
    }
    // NCCL loaded without error: every collective entry is there; with an
    // error, a remark says so.
    if CudaLibrary::Nccl.is_present() {
        let remarked = profile
            .provenance
            .remarks
            .iter()
            .any(|r| r.contains("NCCL error"));
        assert!(remarked || profile.communication.measured.len() == 9);
    }
    // The timed GPU's own name; an H100 is divided by its own datasheet.
    if profile.provenance.gpu_name.as_deref() == Some("NVIDIA H100 80GB HBM3") {
        assert_eq!(profile.gpu, "H100-SXM5-80GB");
        assert_eq!(profile.id, "h100-sxm-calibrated");
    }
    for remark in &profile.provenance.remarks {
        eprintln!("remark: {remark}");
    }
    // A GPU whose datasheet has an FP8 peak (Hopper): every FP8 case timed
    // in TN, faster than bf16 at 8192³, and the FP8 ratio measured.
    let fp8_peak = profile
        .provenance
        .gpu_name
        .as_deref()
        .and_then(topologies::datasheet_for_device)
        .and_then(|sheet| sheet.gpu.peak.fp8_flops_per_s);
    let fp8: Vec<_> = profile
        .gemm
        .measured
        .iter()
        .filter(|g| g.dtype == "fp8")
        .collect();
    if fp8_peak.is_some() {
        let model = options.model.as_ref().unwrap();
        let cases = calibrate::gemm_fp8::fp8_cases(
            true,
            Some((model, 1, std::num::NonZeroU64::new(8).expect("8 is not 0"))),
        );
        assert_eq!(fp8.len(), cases.len(), "{:?}", profile.provenance.remarks);
        assert!(fp8.iter().all(|g| g.layout.as_deref() == Some("tn")));
        let square = |dtype: &str| {
            profile
                .gemm
                .measured
                .iter()
                .find(|g| {
                    g.dtype == dtype
                        && g.layout.as_deref() == Some("tn")
                        && (g.batch, g.m, g.n, g.k) == (1, 8192, 8192, 8192)
                })
                .unwrap()
                .time_ns
        };
        assert!(
            square("fp8") < square("bf16"),
            "FP8 8192³ not faster than bf16"
        );
        let relative = profile.gemm.fp8_relative_efficiency.as_ref().unwrap();
        assert_eq!(relative.source, Source::Measured, "{}", relative.note);
        eprintln!(
            "fp8_relative_efficiency {:.4}: {}",
            relative.value, relative.note
        );
    } else {
        assert!(fp8.is_empty());
        assert!(profile
            .provenance
            .remarks
            .iter()
            .any(|r| r.starts_with("FP8 GEMMs not timed")));
    }
}
