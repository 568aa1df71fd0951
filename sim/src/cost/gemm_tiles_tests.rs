//! The tile model against the lab H100 grid it was fitted to and XLA's
//! public H100 table, which set no constant.

use super::*;
use profile::Profile;

fn h100() -> (GpuSpec, Profile) {
    (
        topologies::preset("h100").unwrap().gpu,
        Profile::builtin("h100-sxm").unwrap(),
    )
}

fn shape(batch: u64, m: u64, n: u64, k: u64) -> GemmShape {
    GemmShape { batch, m, n, k }
}

/// The lab H100's calibrated profile: its grid and its measured launch gap.
fn lab() -> Profile {
    Profile::from_json_str(
        include_str!("../../../calibrate/profiles/h100-sxm.json"),
        "lab",
    )
    .unwrap()
}

/// Burst seconds of `shape` with the lab's measured launch gap (1,628 ns),
/// as calibrate times a GEMM and as the constants were fitted.
fn burst_with_launch(model: &TileModel, s: &GemmShape) -> f64 {
    model.estimate(s, s.bytes()).burst_s + lab().gemm.kernel_overhead_ns.value * 1e-9
}

fn mean_abs_error(pairs: &[(f64, f64)]) -> f64 {
    pairs
        .iter()
        .map(|(model, measured)| (model / measured - 1.0).abs())
        .sum::<f64>()
        / pairs.len() as f64
}

#[test]
fn the_lab_h100_grid_is_reproduced_within_three_percent() {
    let (gpu, profile) = h100();
    let lab = lab();
    let constants = profile.gemm.tile_model.as_ref().unwrap();
    let model = TileModel::new(constants, &profile.gemm.tile_shapes, &gpu, 989e12, 1.0);
    let pairs: Vec<(f64, f64)> = lab
        .gemm
        .measured
        .iter()
        .filter(|e| (e.dtype == "bf16" || e.dtype == "fp16") && e.time_ns < 2_000_000)
        .map(|e| {
            let s = shape(e.batch, e.m, e.n, e.k);
            (burst_with_launch(&model, &s), e.time_ns as f64 * 1e-9)
        })
        .collect();
    assert_eq!(pairs.len(), 182);
    let error = mean_abs_error(&pairs);
    // scripts/derive-gemm-tile-model.py: 2.87% in sample, 2.94% cross-validated.
    assert!(error < 0.030, "mean |error| {error}");
}

#[test]
fn xla_h100_table_within_its_measured_error() {
    // XLA's table holds kernel durations from a tracer: no launch gap.
    let (gpu, profile) = h100();
    let constants = profile.gemm.tile_model.as_ref().unwrap();
    let model = TileModel::new(constants, &profile.gemm.tile_shapes, &gpu, 989e12, 1.0);
    let table = include_str!("../../../validation/kernels/xla-h100-matmul.csv");
    let pairs: Vec<(f64, f64)> = table
        .lines()
        .filter(|line| !line.starts_with('#') && !line.starts_with("b,"))
        .map(|line| line.split(',').collect::<Vec<_>>())
        .filter(|fields| fields[4] == "bf16xbf16->bf16")
        .map(|fields| {
            let n: Vec<u64> = fields[..4].iter().map(|f| f.parse().unwrap()).collect();
            let s = shape(n[0], n[1], n[2], n[3]);
            let flops_per_s: f64 = fields[5].parse().unwrap();
            (
                model.estimate(&s, s.bytes()).burst_s,
                s.flops() / flops_per_s,
            )
        })
        .collect();
    assert_eq!(pairs.len(), 375);
    let error = mean_abs_error(&pairs);
    // Measured 10.65 % (7.06 % if the lab's launch gap were added, which a
    // tracer's durations do not hold); issue 30's target of 6 % is not met.
    assert!(error < 0.11, "mean |error| {error}");
}

#[test]
fn a_large_gemm_is_priced_at_the_sustained_rate() {
    let (gpu, profile) = h100();
    let constants = profile.gemm.tile_model.as_ref().unwrap();
    let model = TileModel::new(constants, &profile.gemm.tile_shapes, &gpu, 989e12, 1.0);
    let s = shape(1, 16384, 16384, 16384);
    let estimate = model.estimate(&s, s.bytes());
    let ratio = estimate.burst_s / estimate.seconds;
    // Compute-bound: nearly the whole time stretches by the ratio.
    assert!((ratio - 0.8581).abs() < 0.01, "{ratio}");
    let sustained_tflops = s.flops() / estimate.seconds / 1e12;
    // The lab measured 670-744 TFLOP/s for 16384^3 under load.
    assert!(
        (670.0..745.0).contains(&sustained_tflops),
        "{sustained_tflops}"
    );
}

#[test]
fn few_deep_tiles_split_k_and_more_k_is_never_faster() {
    let (gpu, profile) = h100();
    let constants = profile.gemm.tile_model.as_ref().unwrap();
    let model = TileModel::new(constants, &profile.gemm.tile_shapes, &gpu, 989e12, 1.0);
    let deep = shape(1, 256, 256, 16384);
    let estimate = model.estimate(&deep, deep.bytes());
    assert!(estimate.split_k > 1, "{estimate:?}");
    let mut previous = 0.0;
    for k in [64, 128, 512, 1024, 4096, 8192, 16384] {
        let s = shape(1, 1024, 1024, k);
        let seconds = model.estimate(&s, s.bytes()).seconds;
        assert!(seconds >= previous, "k = {k}: {seconds} < {previous}");
        previous = seconds;
    }
}

#[test]
fn a_memory_bound_gemm_is_no_faster_than_its_bytes() {
    // Attention scores at head dimension 64: the output dominates.
    let (gpu, profile) = h100();
    let constants = profile.gemm.tile_model.as_ref().unwrap();
    let model = TileModel::new(constants, &profile.gemm.tile_shapes, &gpu, 989e12, 1.0);
    let s = shape(96, 4096, 4096, 64);
    let floor = s.bytes() / (gpu.hbm_bandwidth_bytes_per_s * constants.memory_efficiency.value);
    let estimate = model.estimate(&s, s.bytes());
    assert!(estimate.seconds > floor);
    // The lab measured 1,226 µs (bf16, TN); the model is within 5%.
    assert!(
        (estimate.seconds + 1.628e-6) / 1.226e-3 - 1.0 < 0.05,
        "{estimate:?}"
    );
}
