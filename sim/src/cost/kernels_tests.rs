//! Tests of the kernel cost model: the whole-GEMM formula, measured
//! entries and their lookup, FP8, and the sustained stretch of bursts.
use super::*;
use crate::cost::gemm_time::{gemm_seconds, quantization_efficiency};
use profile::Source;

/// The A100 profile without its tile model: measured times as they are
/// (the tile model's sustained stretch is tested on its own below).
fn a100() -> (GpuSpec, Profile) {
    let mut profile = Profile::builtin("a100-80gb").unwrap();
    profile.gemm.tile_model = None;
    (topologies::preset("selene").unwrap().gpu, profile)
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
fn without_a_tile_model_a_large_square_gemm_runs_at_the_profile_efficiency() {
    let (gpu, mut profile) = a100();
    profile.gemm.tile_model = None;
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
    // The whole-GEMM formula, whose time is exactly inverse to the peak.
    profile.gemm.tile_model = None;
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
        role: models::ops::KernelRole::Forward,
        attention_core: false,
        fp8_linear: None,
        memory_class: None,
    };
    assert!((model.kernel_seconds(&kernel(GemmLayout::Nt)) - 21e-6).abs() < 1e-15);
    // Another layout falls back to the NT entry of its exact shape.
    assert!((model.kernel_seconds(&kernel(GemmLayout::Tn)) - 21e-6).abs() < 1e-15);
}

#[test]
fn fp8_gemms_take_only_fp8_measurements_else_the_fp8_peak() {
    let gpu = topologies::preset("h100").unwrap().gpu;
    let mut profile = Profile::builtin("h100-sxm").unwrap();
    // Measured times as they are and the whole-GEMM formula's exact
    // FP8:bf16 ratio (the tile model's stretch is tested below).
    profile.gemm.tile_model = None;
    let fp8_kernel = Kernel {
        name: "mlp_fc1",
        class: KernelClass::Fp8Gemm {
            shape: shape(1024, 1024),
            layout: GemmLayout::Tn,
        },
        flops: shape(1024, 1024).flops(),
        bytes: 0.0,
        role: models::ops::KernelRole::Forward,
        attention_core: false,
        fp8_linear: None,
        memory_class: None,
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
        role: models::ops::KernelRole::Forward,
        attention_core: false,
        fp8_linear: None,
        memory_class: None,
    };
    let overhead_s = profile.gemm.kernel_overhead_ns.value * 1e-9;
    let modeled = gemm_seconds_in(Precision::Bf16, &shape(1024, 1024), &gpu, &profile) + overhead_s;
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

#[test]
fn measured_bursts_are_stretched_to_the_sustained_rate() {
    let gpu = topologies::preset("h100").unwrap().gpu;
    let mut profile = Profile::builtin("h100-sxm").unwrap();
    let big = GemmShape {
        batch: 1,
        m: 8192,
        n: 8192,
        k: 8192,
    };
    profile.gemm.measured = vec![GemmMeasurement {
        batch: 1,
        m: 8192,
        n: 8192,
        k: 8192,
        dtype: "bf16".into(),
        time_ns: 1_400_000,
        spread_ns: None,
        source: Source::Measured,
        layout: Some("tn".into()),
    }];
    let model = KernelCostModel::new(&gpu, &profile).with_precision(Precision::Bf16);
    let kernel = Kernel {
        name: "mlp_fc1",
        class: KernelClass::Gemm {
            shape: big,
            layout: GemmLayout::Tn,
        },
        flops: big.flops(),
        bytes: 0.0,
        role: models::ops::KernelRole::Forward,
        attention_core: false,
        fp8_linear: None,
        memory_class: None,
    };
    let estimate = gemm_estimate(Precision::Bf16, &big, &gpu, &profile).unwrap();
    let overhead_s = profile.gemm.kernel_overhead_ns.value * 1e-9;
    let stretch = (estimate.seconds + overhead_s) / (estimate.burst_s + overhead_s);
    assert!((model.kernel_seconds(&kernel) - 1.4e-3 * stretch).abs() < 1e-12);
    // Compute-bound: the stretch is nearly 1 / sustained_ratio.
    assert!((stretch - 1.0 / 0.8581).abs() < 0.01, "{stretch}");
    // On the grid and beside it the price differs by the shapes' work,
    // not by burst against sustained: the unmeasured model is within 5%.
    let modeled = estimate.seconds + overhead_s;
    assert!((model.kernel_seconds(&kernel) / modeled - 1.0).abs() < 0.05);
}
