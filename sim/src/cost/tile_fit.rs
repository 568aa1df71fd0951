//! Fitting the GEMM tile model to a profile's own measured GEMMs: what
//! `clustersim calibrate` does with the grid it has just timed, so a
//! calibrated profile prices unmeasured shapes by its own GPU's constants.
//!
//! The five burst constants (main-loop efficiency, kernel and wave
//! latencies, memory efficiency, overlap exponent) minimize the mean squared
//! log error of the model (plus the profile's launch gap) over the bf16 and
//! fp16 GEMMs shorter than [`BURST_MAX_NS`], by Nelder–Mead from the
//! profile's own tile model (restarted once from the best point), each
//! constant held inside [`BOUNDS`]. The sustained ratio comes from the
//! GEMMs of [`SUSTAINED_MIN_NS`] or more (their repeats keep the GPU at its
//! power limit): the main-loop rate at which the model matches each, averaged.
//! `scripts/derive-gemm-tile-model.py` is the same fit in Python (global
//! search), from which the embedded H100 constants come.

use super::gemm_tiles::TileModel;
use models::ops::GemmShape;
use profile::{GemmTileModel, Profile, Quantity, Source};
use topologies::GpuSpec;

/// GEMMs at least this long are not bursts (20 repeats of them hold the GPU
/// at its power limit): left out of the burst fit.
pub const BURST_MAX_NS: u64 = 2_000_000;
/// GEMMs at least this long give the sustained ratio.
pub const SUSTAINED_MIN_NS: u64 = 10_000_000;
/// Fewest burst GEMMs the fit needs: five constants, with room to spare.
pub const MIN_FIT_GEMMS: usize = 30;
/// Bounds of the five burst constants, in the fit's order.
pub const BOUNDS: [(f64, f64); 5] = [
    (0.3, 1.0),      // mainloop_efficiency
    (0.0, 20_000.0), // kernel_latency_ns
    (0.0, 10_000.0), // wave_latency_ns
    (0.3, 1.0),      // memory_efficiency
    (1.0, 16.0),     // overlap_exponent
];

/// A fitted tile model and how well it reproduces its GEMMs.
#[derive(Debug, Clone, PartialEq)]
pub struct TileFit {
    pub constants: GemmTileModel,
    /// Burst GEMMs fitted.
    pub gemms: usize,
    /// Their mean |model / measured − 1|.
    pub mean_abs_error: f64,
    /// Long GEMMs that set the sustained ratio (0: the profile's kept).
    pub sustained_gemms: usize,
}

/// One measured GEMM: shape, the peak of its dtype, seconds.
#[derive(Debug, Clone, Copy)]
struct Sample {
    shape: GemmShape,
    peak_flops_per_s: f64,
    seconds: f64,
}

/// Fits `profile`'s tile model to its measured bf16/fp16 GEMMs on `gpu`,
/// or says why it cannot (too few GEMMs, no tile model to start from).
pub fn fit_tile_model(profile: &Profile, gpu: &GpuSpec) -> Result<TileFit, String> {
    let start = profile
        .gemm
        .tile_model
        .as_ref()
        .ok_or("the base profile has no tile model to start from")?;
    let samples = |keep: &dyn Fn(u64) -> bool| -> Vec<Sample> {
        profile
            .gemm
            .measured
            .iter()
            .filter(|e| keep(e.time_ns))
            .filter_map(|e| {
                let peak = match e.dtype.as_str() {
                    "bf16" => gpu.peak.bf16_flops_per_s,
                    "fp16" => gpu.peak.fp16_flops_per_s,
                    _ => return None,
                };
                Some(Sample {
                    shape: GemmShape {
                        batch: e.batch,
                        m: e.m,
                        n: e.n,
                        k: e.k,
                    },
                    peak_flops_per_s: peak,
                    seconds: e.time_ns as f64 * 1e-9,
                })
            })
            .collect()
    };
    let burst = samples(&|ns| ns < BURST_MAX_NS);
    if burst.len() < MIN_FIT_GEMMS {
        return Err(format!(
            "{} bf16/fp16 GEMMs under {} ms were measured, the fit needs {MIN_FIT_GEMMS}",
            burst.len(),
            BURST_MAX_NS / 1_000_000
        ));
    }
    let launch_gap_s = profile.gemm.kernel_overhead_ns.value * 1e-9;
    let tiles = &profile.gemm.tile_shapes;
    let evaluate = |x: &[f64; 5], sample: &Sample, sustained: f64| -> f64 {
        let constants = with_values(start, x, sustained);
        let model = TileModel::new(&constants, tiles, gpu, sample.peak_flops_per_s, 1.0);
        model.estimate(&sample.shape, sample.shape.bytes()).seconds + launch_gap_s
    };
    let loss = |x: &[f64; 5]| -> f64 {
        let x = clamp(x);
        burst
            .iter()
            .map(|s| (evaluate(&x, s, 1.0) / s.seconds).ln().powi(2))
            .sum::<f64>()
            / burst.len() as f64
    };
    let x0 = [
        start.mainloop_efficiency.value,
        start.kernel_latency_ns.value,
        start.wave_latency_ns.value,
        start.memory_efficiency.value,
        start.overlap_exponent.value,
    ];
    let first = nelder_mead(&loss, clamp(&x0));
    let best = clamp(&nelder_mead(&loss, first));
    let mean_abs_error = burst
        .iter()
        .map(|s| (evaluate(&best, s, 1.0) / s.seconds - 1.0).abs())
        .sum::<f64>()
        / burst.len() as f64;
    let long = samples(&|ns| ns >= SUSTAINED_MIN_NS);
    let sustained = if long.is_empty() {
        start.sustained_ratio.value
    } else {
        let ratios: Vec<f64> = long
            .iter()
            .map(|s| sustained_ratio_matching(&|r| evaluate(&best, s, r), s.seconds))
            .collect();
        ratios.iter().sum::<f64>() / ratios.len() as f64
    };
    let mut constants = with_values(start, &best, sustained);
    annotate(&mut constants, burst.len(), mean_abs_error, long.len());
    Ok(TileFit {
        constants,
        gemms: burst.len(),
        mean_abs_error,
        sustained_gemms: long.len(),
    })
}

/// `start` with the five burst constants `x` and `sustained_ratio`.
fn with_values(start: &GemmTileModel, x: &[f64; 5], sustained_ratio: f64) -> GemmTileModel {
    let set = |q: &Quantity, value: f64| Quantity { value, ..q.clone() };
    GemmTileModel {
        mainloop_efficiency: set(&start.mainloop_efficiency, x[0]),
        kernel_latency_ns: set(&start.kernel_latency_ns, x[1]),
        wave_latency_ns: set(&start.wave_latency_ns, x[2]),
        memory_efficiency: set(&start.memory_efficiency, x[3]),
        overlap_exponent: set(&start.overlap_exponent, x[4]),
        sustained_ratio: set(&start.sustained_ratio, sustained_ratio),
    }
}

/// Each constant's source and note after a fit.
fn annotate(constants: &mut GemmTileModel, gemms: usize, error: f64, long: usize) {
    let fitted = format!(
        "fitted by clustersim calibrate to this run's {gemms} bf16/fp16 GEMMs under 2 ms (least squares in log time; mean |error| {:.2} %)",
        100.0 * error
    );
    for q in [
        &mut constants.mainloop_efficiency,
        &mut constants.kernel_latency_ns,
        &mut constants.wave_latency_ns,
        &mut constants.memory_efficiency,
        &mut constants.overlap_exponent,
    ] {
        q.source = Source::Measured;
        q.note = fitted.clone();
    }
    if long > 0 {
        constants.sustained_ratio.source = Source::Measured;
        constants.sustained_ratio.note = format!(
            "this run's {long} GEMMs of 10 ms or more (their repeats at the power limit) against the fitted burst model: mean ratio of main-loop rates"
        );
    }
}

fn clamp(x: &[f64; 5]) -> [f64; 5] {
    let mut out = *x;
    for (value, (low, high)) in out.iter_mut().zip(BOUNDS) {
        *value = if value.is_finite() {
            value.clamp(low, high)
        } else {
            low
        };
    }
    out
}

/// The ratio in (0.3, 1] at which `seconds_at(ratio)` equals `measured`,
/// by bisection (the model's time falls as the ratio grows).
fn sustained_ratio_matching(seconds_at: &dyn Fn(f64) -> f64, measured: f64) -> f64 {
    let (mut low, mut high) = (0.3, 1.0);
    if seconds_at(high) >= measured {
        return 1.0;
    }
    for _ in 0..50 {
        let middle = 0.5 * (low + high);
        if seconds_at(middle) > measured {
            low = middle;
        } else {
            high = middle;
        }
    }
    0.5 * (low + high)
}

/// Nelder–Mead minimization of `f` from `x0` (initial simplex: each
/// coordinate moved by a tenth of its bound's width), 600 iterations.
fn nelder_mead(f: &dyn Fn(&[f64; 5]) -> f64, x0: [f64; 5]) -> [f64; 5] {
    let mut simplex: Vec<([f64; 5], f64)> = vec![(x0, f(&x0))];
    for (i, (low, high)) in BOUNDS.iter().enumerate() {
        let mut x = x0;
        let step = 0.1 * (high - low);
        x[i] = if x[i] + step <= *high {
            x[i] + step
        } else {
            x[i] - step
        };
        simplex.push((x, f(&x)));
    }
    let along = |a: &[f64; 5], b: &[f64; 5], t: f64| -> [f64; 5] {
        std::array::from_fn(|i| a[i] + t * (b[i] - a[i]))
    };
    for _ in 0..600 {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let worst = simplex[5];
        let centroid: [f64; 5] =
            std::array::from_fn(|i| simplex[..5].iter().map(|(x, _)| x[i]).sum::<f64>() / 5.0);
        let reflected = along(&centroid, &worst.0, -1.0);
        let reflected_f = f(&reflected);
        if reflected_f < simplex[0].1 {
            let expanded = along(&centroid, &worst.0, -2.0);
            let expanded_f = f(&expanded);
            simplex[5] = if expanded_f < reflected_f {
                (expanded, expanded_f)
            } else {
                (reflected, reflected_f)
            };
        } else if reflected_f < simplex[4].1 {
            simplex[5] = (reflected, reflected_f);
        } else {
            let contracted = along(&centroid, &worst.0, 0.5);
            let contracted_f = f(&contracted);
            if contracted_f < worst.1 {
                simplex[5] = (contracted, contracted_f);
            } else {
                let best = simplex[0].0;
                for point in simplex.iter_mut().skip(1) {
                    point.0 = along(&best, &point.0, 0.5);
                    point.1 = f(&point.0);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    simplex[0].0
}

#[cfg(test)]
#[path = "tile_fit_tests.rs"]
mod tests;
