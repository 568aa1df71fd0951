//! Fitting the GEMM tile model to a profile's own measured GEMMs: what
//! `clustersim calibrate` does with the grid it has just timed, so a
//! calibrated profile prices unmeasured shapes by its own GPU's constants.
//!
//! The five burst constants (main-loop efficiency, kernel and wave
//! latencies, memory efficiency, overlap exponent) minimize the mean squared
//! log error of the model (plus the profile's launch gap) over the bf16 and
//! fp16 GEMMs shorter than [`BURST_MAX_NS`], by Nelder–Mead from the
//! profile's own tile model (restarted once from the best point), each
//! constant held inside [`BOUNDS`]. The sustained ratio comes from
//! calibrate's sustained stage where the profile has one (the main-loop rate
//! at which the model stretches the run's GEMM as much as seconds at the
//! power limit stretched it), else from the GEMMs of [`SUSTAINED_MIN_NS`] or
//! more (their repeats keep the GPU at its power limit: the rate at which the
//! model matches each, averaged), else the profile's own is kept.
//! `scripts/derive-gemm-tile-model.py` is the same fit in Python (global
//! search), from which the embedded H100 constants come.

use super::gemm_tiles::TileModel;
use super::nelder_mead;
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
/// Bounds of the five burst constants, in the fit's order: wide around
/// physical values, set by hand, not fitted (the Python derivation's global
/// search uses narrower ones, 0.6–1, 5 µs, 3 µs, 0.6–1, 8, and reaches the
/// same optimum on the lab grid).
pub const BOUNDS: [(f64, f64); 5] = [
    (0.3, 1.0),      // mainloop_efficiency
    (0.0, 20_000.0), // kernel_latency_ns
    (0.0, 10_000.0), // wave_latency_ns
    (0.3, 1.0),      // memory_efficiency
    (1.0, 16.0),     // overlap_exponent
];

/// Nelder–Mead iterations of each of the fit's two passes (the second from
/// the first's best point): enough on the lab grid to reach the global
/// search's optimum from the A100's constants (`tile_fit_tests.rs`).
const NELDER_MEAD_ITERATIONS: usize = 600;

/// A fitted tile model and how well it reproduces its GEMMs.
#[derive(Debug, Clone, PartialEq)]
pub struct TileFit {
    pub constants: GemmTileModel,
    /// Burst GEMMs fitted.
    pub gemms: usize,
    /// Their mean |model / measured − 1|.
    pub mean_abs_error: f64,
    /// Where the sustained ratio came from.
    pub sustained_from: SustainedFrom,
}

/// Where a fit's sustained ratio came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SustainedFrom {
    /// calibrate's sustained stage (`gemm.sustained_run`).
    SustainedRun,
    /// This many grid GEMMs of 10 ms or more.
    LongGemms(usize),
    /// Neither: the profile's own ratio, kept.
    Kept,
}

/// One measured GEMM: shape, the peak of its dtype, seconds.
#[derive(Debug, Clone, Copy)]
struct Sample {
    shape: GemmShape,
    peak_flops_per_s: f64,
    seconds: f64,
}

/// A bf16 or fp16 GEMM of `shape` taking `seconds` (none for other types).
fn sample(shape: GemmShape, dtype: &str, seconds: f64, gpu: &GpuSpec) -> Option<Sample> {
    let peak_flops_per_s = match dtype {
        "bf16" => gpu.peak.bf16_flops_per_s,
        "fp16" => gpu.peak.fp16_flops_per_s,
        _ => return None,
    };
    Some(Sample {
        shape,
        peak_flops_per_s,
        seconds,
    })
}

/// The profile's bf16/fp16 GEMMs whose time `keep` accepts.
fn samples(profile: &Profile, gpu: &GpuSpec, keep: impl Fn(u64) -> bool) -> Vec<Sample> {
    profile
        .gemm
        .measured
        .iter()
        .filter(|e| keep(e.time_ns))
        .filter_map(|e| {
            let shape = GemmShape {
                batch: e.batch,
                m: e.m,
                n: e.n,
                k: e.k,
            };
            sample(shape, &e.dtype, e.time_ns as f64 * 1e-9, gpu)
        })
        .collect()
}

/// The model as the fit evaluates it: `start`'s constants replaced, plus
/// the launch gap a measured time includes.
struct Fitter<'a> {
    start: &'a GemmTileModel,
    tiles: &'a [[u64; 2]],
    gpu: &'a GpuSpec,
    launch_gap_s: f64,
}

impl Fitter<'_> {
    /// Seconds of `sample` with burst constants `x` at `sustained` ratio.
    fn seconds(&self, x: &[f64; 5], sample: &Sample, sustained: f64) -> f64 {
        let constants = with_values(self.start, x, sustained);
        let model = TileModel::new(
            &constants,
            self.tiles,
            self.gpu,
            sample.peak_flops_per_s,
            1.0,
        );
        model.estimate(&sample.shape, sample.shape.bytes()).seconds + self.launch_gap_s
    }

    /// Mean squared log error of the burst model `x` over `burst`.
    fn loss(&self, x: &[f64; 5], burst: &[Sample]) -> f64 {
        let x = clamp(x);
        burst
            .iter()
            .map(|s| (self.seconds(&x, s, 1.0) / s.seconds).ln().powi(2))
            .sum::<f64>()
            / burst.len() as f64
    }

    /// The sustained ratio for the fitted `best`: from the profile's
    /// sustained run, else its long GEMMs, else the start's.
    fn sustained_ratio(
        &self,
        best: &[f64; 5],
        run: Option<&profile::SustainedRun>,
        long: &[Sample],
    ) -> (f64, SustainedFrom) {
        let run_sample = run.and_then(|run| {
            let shape = GemmShape {
                batch: run.batch,
                m: run.m,
                n: run.n,
                k: run.k,
            };
            sample(shape, &run.dtype, 0.0, self.gpu).map(|s| (run, s))
        });
        if let Some((run, sample)) = run_sample {
            let stretch = run.sustained_ns as f64 / run.burst_ns as f64;
            let target = self.seconds(best, &sample, 1.0) * stretch;
            let at = |r: f64| self.seconds(best, &sample, r);
            (
                sustained_ratio_matching(&at, target),
                SustainedFrom::SustainedRun,
            )
        } else if !long.is_empty() {
            let ratios: Vec<f64> = long
                .iter()
                .map(|s| sustained_ratio_matching(&|r| self.seconds(best, s, r), s.seconds))
                .collect();
            let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
            (mean, SustainedFrom::LongGemms(long.len()))
        } else {
            (self.start.sustained_ratio.value, SustainedFrom::Kept)
        }
    }
}

/// Fits `profile`'s tile model to its measured bf16/fp16 GEMMs on `gpu`,
/// or says why it cannot (too few GEMMs, no tile model to start from).
pub fn fit_tile_model(profile: &Profile, gpu: &GpuSpec) -> Result<TileFit, String> {
    let start = profile
        .gemm
        .tile_model
        .as_ref()
        .ok_or("the base profile has no tile model to start from")?;
    let burst = samples(profile, gpu, |ns| ns < BURST_MAX_NS);
    if burst.len() < MIN_FIT_GEMMS {
        return Err(format!(
            "{} bf16/fp16 GEMMs under {} ms were measured, the fit needs {MIN_FIT_GEMMS}",
            burst.len(),
            BURST_MAX_NS / 1_000_000
        ));
    }
    let fitter = Fitter {
        start,
        tiles: &profile.gemm.tile_shapes,
        gpu,
        launch_gap_s: profile.gemm.kernel_overhead_ns.value * 1e-9,
    };
    let x0 = [
        start.mainloop_efficiency.value,
        start.kernel_latency_ns.value,
        start.wave_latency_ns.value,
        start.memory_efficiency.value,
        start.overlap_exponent.value,
    ];
    let loss = |x: &[f64; 5]| fitter.loss(x, &burst);
    let start_x = clamp(&x0);
    let first = nelder_mead::minimize(
        &loss,
        start_x,
        simplex_steps(&start_x),
        NELDER_MEAD_ITERATIONS,
    );
    let best = clamp(&nelder_mead::minimize(
        &loss,
        first,
        simplex_steps(&first),
        NELDER_MEAD_ITERATIONS,
    ));
    let mean_abs_error = burst
        .iter()
        .map(|s| (fitter.seconds(&best, s, 1.0) / s.seconds - 1.0).abs())
        .sum::<f64>()
        / burst.len() as f64;
    let long = samples(profile, gpu, |ns| ns >= SUSTAINED_MIN_NS);
    let run = profile.gemm.sustained_run.as_ref();
    let (sustained, sustained_from) = fitter.sustained_ratio(&best, run, &long);
    let mut constants = with_values(start, &best, sustained);
    annotate(
        &mut constants,
        burst.len(),
        mean_abs_error,
        sustained_from,
        run,
    );
    Ok(TileFit {
        constants,
        gemms: burst.len(),
        mean_abs_error,
        sustained_from,
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
        // The sustained stage runs bf16 only: FP8's ratio stays the base's.
        fp8_sustained_ratio: start.fp8_sustained_ratio.clone(),
    }
}

/// Each constant's source and note after a fit.
fn annotate(
    constants: &mut GemmTileModel,
    gemms: usize,
    error: f64,
    sustained_from: SustainedFrom,
    run: Option<&profile::SustainedRun>,
) {
    let fitted = format!(
        "fitted by clustersim calibrate to the profile's {gemms} bf16/fp16 GEMMs under 2 ms (least squares in log time; mean |error| {:.2} %)",
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
    let note = match (sustained_from, run) {
        (SustainedFrom::SustainedRun, Some(run)) => format!(
            "calibrate's sustained stage: {} {}x{}x{} back to back for {:.1} s went from {} ns (first window) to {} ns (last third's median); the fitted model stretches that GEMM as much at this ratio",
            run.dtype, run.m, run.n, run.k, run.duration_s, run.burst_ns, run.sustained_ns
        ),
        (SustainedFrom::LongGemms(long), _) => format!(
            "the profile's {long} GEMMs of 10 ms or more (their repeats at the power limit) against the fitted burst model: mean ratio of main-loop rates"
        ),
        _ => return,
    };
    constants.sustained_ratio.source = Source::Measured;
    constants.sustained_ratio.note = note;
}

/// The initial simplex's step of each constant from `x`: a tenth of its
/// bound's width, downward where upward would leave the bound.
fn simplex_steps(x: &[f64; 5]) -> [f64; 5] {
    std::array::from_fn(|i| {
        let (_, high) = BOUNDS[i];
        let step = 0.1 * (high - BOUNDS[i].0);
        if x[i] + step <= high {
            step
        } else {
            -step
        }
    })
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
/// by bisection (the model's time falls as the ratio grows); 0.3 is far
/// below any published power-limited clock (the lowest, 0.80 of boost).
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

#[cfg(test)]
#[path = "tile_fit_tests.rs"]
mod tests;
