//! The CPU optimizer of ZeRO-Offload: a real multi-threaded Adam step over
//! fp32 parameters, gradients, momentum and variance (Kingma & Ba, with bias
//! correction, as `torch.optim.Adam` with no weight decay), and its
//! throughput in parameters per second against the number of threads.
//!
//! The parallel step splits the four arrays into equal chunks with rayon's
//! `par_chunks_mut`; each chunk runs a loop the compiler vectorises. Thread
//! counts are swept with one `rayon::ThreadPool` per count.

use crate::error::CalibrateError;
use crate::host_timing::time_on_host;
use gpu::random;
use gpu::timing::Summary;
use profile::{CpuAdamMeasurement, Source};
use rayon::prelude::*;

/// Adam hyper-parameters (PyTorch defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamConfig {
    pub learning_rate: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub epsilon: f32,
}

impl Default for AdamConfig {
    fn default() -> Self {
        Self {
            learning_rate: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
        }
    }
}

/// The optimizer state of `len` parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct AdamState {
    pub params: Vec<f32>,
    pub momentum: Vec<f32>,
    pub variance: Vec<f32>,
    /// Steps taken so far (the next step is `step + 1`).
    pub step: u32,
}

impl AdamState {
    /// Seeded random parameters, zero moments.
    pub fn random(len: usize, seed: u64) -> Self {
        Self {
            params: random::signed_values(seed, len, 1.0),
            momentum: vec![0.0; len],
            variance: vec![0.0; len],
            step: 0,
        }
    }
}

/// Parameters per rayon task: large enough to amortise scheduling, small
/// enough to balance across threads.
pub const CHUNK_PARAMS: usize = 1 << 16;

/// Per-step constants: step size lr/(1−β₁ᵗ) and 1/√(1−β₂ᵗ).
fn step_constants(config: &AdamConfig, step: u32) -> (f32, f32) {
    let t = step as i32;
    let bias1 = 1.0 - (config.beta1 as f64).powi(t);
    let bias2 = 1.0 - (config.beta2 as f64).powi(t);
    (
        (config.learning_rate as f64 / bias1) as f32,
        (1.0 / bias2.sqrt()) as f32,
    )
}

/// One chunk of the update (the hot loop).
#[inline]
fn update_chunk(
    config: &AdamConfig,
    step_size: f32,
    inv_sqrt_bias2: f32,
    params: &mut [f32],
    grads: &[f32],
    momentum: &mut [f32],
    variance: &mut [f32],
) {
    let (b1, b2, eps) = (config.beta1, config.beta2, config.epsilon);
    for (((p, &g), m), v) in params
        .iter_mut()
        .zip(grads)
        .zip(momentum.iter_mut())
        .zip(variance.iter_mut())
    {
        *m = b1 * *m + (1.0 - b1) * g;
        *v = b2 * *v + (1.0 - b2) * g * g;
        let denom = v.sqrt() * inv_sqrt_bias2 + eps;
        *p -= step_size * *m / denom;
    }
}

/// One Adam step over all parameters, in parallel on the current rayon pool.
///
/// # Panics
/// If `grads` is not as long as the parameters.
pub fn adam_step(config: &AdamConfig, state: &mut AdamState, grads: &[f32]) {
    assert_eq!(
        grads.len(),
        state.params.len(),
        "one gradient per parameter"
    );
    state.step += 1;
    let (step_size, inv_sqrt_bias2) = step_constants(config, state.step);
    state
        .params
        .par_chunks_mut(CHUNK_PARAMS)
        .zip(grads.par_chunks(CHUNK_PARAMS))
        .zip(state.momentum.par_chunks_mut(CHUNK_PARAMS))
        .zip(state.variance.par_chunks_mut(CHUNK_PARAMS))
        .for_each(|(((p, g), m), v)| update_chunk(config, step_size, inv_sqrt_bias2, p, g, m, v));
}

/// The textbook scalar step (m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ),
/// p −= lr·m̂/(√v̂ + ε)), in f64 arithmetic: the reference for tests.
#[allow(clippy::needless_range_loop)] // indexed like the paper's algorithm
pub fn adam_step_reference(config: &AdamConfig, state: &mut AdamState, grads: &[f32]) {
    state.step += 1;
    let t = state.step as i32;
    let (b1, b2) = (config.beta1 as f64, config.beta2 as f64);
    for i in 0..state.params.len() {
        let g = grads[i] as f64;
        let m = b1 * state.momentum[i] as f64 + (1.0 - b1) * g;
        let v = b2 * state.variance[i] as f64 + (1.0 - b2) * g * g;
        let m_hat = m / (1.0 - b1.powi(t));
        let v_hat = v / (1.0 - b2.powi(t));
        let p = state.params[i] as f64
            - config.learning_rate as f64 * m_hat / (v_hat.sqrt() + config.epsilon as f64);
        state.momentum[i] = m as f32;
        state.variance[i] = v as f32;
        state.params[i] = p as f32;
    }
}

/// Thread counts to sweep: powers of two below `max_threads`, then
/// `max_threads` itself; ascending, distinct.
pub fn thread_counts(max_threads: usize) -> Vec<usize> {
    let max_threads = max_threads.max(1);
    let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |t| Some(t * 2))
        .take_while(|&t| t < max_threads)
        .collect();
    counts.push(max_threads);
    counts
}

/// Threads of this host (`std::thread::available_parallelism`, 1 if unknown).
pub fn host_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Times Adam steps over `params` parameters for each thread count: one
/// warm-up step, then the median of `repeats`. `on_count` after each count.
pub fn measure(
    params: usize,
    threads: &[usize],
    repeats: u32,
    mut on_count: impl FnMut(),
) -> Result<Vec<CpuAdamMeasurement>, CalibrateError> {
    let config = AdamConfig::default();
    let mut state = AdamState::random(params, 0xada0);
    let grads = random::signed_values(0xada1, params, 1e-2);
    let mut measured = Vec::with_capacity(threads.len());
    for &count in threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(count)
            .build()
            .map_err(|error| CalibrateError::ThreadPool {
                threads: count,
                message: error.to_string(),
            })?;
        let samples = pool.install(|| {
            time_on_host::<std::convert::Infallible>(1, repeats.max(1), |_| {
                adam_step(&config, &mut state, &grads);
                Ok(())
            })
        });
        let samples = match samples {
            Ok(samples) => samples,
            Err(never) => match never {},
        };
        let summary = Summary::from_samples(&samples).expect("at least one repeat");
        measured.push(CpuAdamMeasurement {
            params: params as u64,
            threads: count as u32,
            time_ns: summary.median_ns,
            source: Source::Measured,
        });
        on_count();
    }
    Ok(measured)
}

/// Parameters per second of one measurement.
pub fn params_per_s(measurement: &CpuAdamMeasurement) -> f64 {
    measurement.params as f64 / (measurement.time_ns as f64 * 1e-9)
}

/// The fastest measurement (ties: fewer threads first).
pub fn best(measured: &[CpuAdamMeasurement]) -> Option<&CpuAdamMeasurement> {
    measured.iter().max_by(|a, b| {
        params_per_s(a)
            .total_cmp(&params_per_s(b))
            .then(b.threads.cmp(&a.threads))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_step_matches_the_scalar_reference_over_several_steps() {
        let config = AdamConfig::default();
        // Not a multiple of the chunk size, so the last chunk is partial.
        let len = 3 * CHUNK_PARAMS + 1234;
        let mut fast = AdamState::random(len, 1);
        let mut reference = fast.clone();
        for step in 0..3u64 {
            let grads = random::signed_values(100 + step, len, 0.1);
            adam_step(&config, &mut fast, &grads);
            adam_step_reference(&config, &mut reference, &grads);
        }
        assert_eq!(fast.step, 3);
        for i in 0..len {
            let (a, b) = (fast.params[i], reference.params[i]);
            assert!(
                (a - b).abs() <= 1e-6 * b.abs().max(1.0),
                "param {i}: {a} vs {b}"
            );
            let (a, b) = (fast.variance[i], reference.variance[i]);
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1e-12), "variance {i}");
        }
    }

    #[test]
    fn first_step_moves_each_parameter_by_about_the_learning_rate() {
        // With zero moments, step 1 gives m̂ = g and v̂ = g², so the update is
        // lr·g/(|g| + ε) ≈ lr·sign(g).
        let config = AdamConfig::default();
        let mut state = AdamState {
            params: vec![1.0, 1.0, 1.0],
            momentum: vec![0.0; 3],
            variance: vec![0.0; 3],
            step: 0,
        };
        adam_step(&config, &mut state, &[0.5, -2.0, 0.0]);
        assert!((state.params[0] - (1.0 - 1e-3)).abs() < 1e-6);
        assert!((state.params[1] - (1.0 + 1e-3)).abs() < 1e-6);
        assert_eq!(state.params[2], 1.0);
    }

    #[test]
    fn throughput_is_measured_for_every_thread_count() {
        let threads = thread_counts(2);
        assert_eq!(threads, vec![1, 2]);
        let mut calls = 0;
        let measured = measure(1 << 16, &threads, 2, || calls += 1).unwrap();
        assert_eq!(calls, 2);
        assert_eq!(measured.len(), 2);
        for (entry, &count) in measured.iter().zip(&threads) {
            assert_eq!(entry.threads as usize, count);
            assert_eq!(entry.source, Source::Measured);
            assert!(entry.time_ns > 0 && params_per_s(entry) > 0.0);
        }
        assert!(best(&measured).is_some());
    }

    #[test]
    fn thread_counts_are_powers_of_two_then_the_host() {
        assert_eq!(thread_counts(1), vec![1]);
        assert_eq!(thread_counts(16), vec![1, 2, 4, 8, 16]);
        assert_eq!(thread_counts(12), vec![1, 2, 4, 8, 12]);
    }
}
