//! The sustained stage: one large GEMM (8192³, TN; bf16, fp16 before
//! compute capability 8.0) launched back to
//! back for seconds, timed window by window, with the GPU's clock, power and
//! temperature sampled through the run by nvidia-smi on another thread. A
//! training step keeps the GPU at its power limit for seconds; the grid's
//! short repeats see its burst clock. The first window is the burst, the
//! median of the last third's windows the sustained time
//! ([`burst_and_sustained`]); `clustersim calibrate` turns the pair into
//! `gemm.tile_model.sustained_ratio` with the fitted tile model.
//!
//! Not yet run on a GPU (written 2026-11-27 without one): the lab run of
//! issue 38 is its first.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use crate::error::CalibrateError;
use crate::gemm::operand_chunk;
use crate::gemm::rotation::{self, RotatingBuffers};
use crate::gpu_state::read_gpu_state;
use cudarc::cublas::{CudaBlas, Gemm};
use gpu::detect::Device;
use gpu::error::CublasContextExt;
use gpu::error::CudaContextExt;
use gpu::gemm::{launch_on, ColumnMajorCall, GemmElement};
use gpu::timing::{self, Summary};
use half::{bf16, f16};
use models::ops::{GemmLayout, GemmShape};
use profile::{SustainedRun, SustainedSample};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The GEMM run back to back: large enough to be compute-bound on every GPU
/// the catalogue has (1.4 ms on an H100), small enough for 1 GiB of buffers.
pub const SUSTAINED_SHAPE: GemmShape = GemmShape {
    batch: 1,
    m: 8192,
    n: 8192,
    k: 8192,
};
/// Launches in the first window, whose median time is the burst.
pub const FIRST_WINDOW_LAUNCHES: u32 = 16;
/// Seconds each later window aims at: long against the gate `time_launches`
/// spins before each window (about 15 ms of one thread), so the load stays
/// on for over 95 % of the run.
pub const WINDOW_SECONDS: f64 = 0.5;
/// Seconds of load: a full run, and `--quick`.
pub const FULL_SECONDS: f64 = 20.0;
pub const QUICK_SECONDS: f64 = 5.0;
/// How long to wait between nvidia-smi reads.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// How long the stage waits for the sampler thread once the load stops
/// (nvidia-smi may hang; the thread is then left behind).
const SAMPLER_GRACE: Duration = Duration::from_secs(2);

/// The burst (first window) and sustained (median of the last third of the
/// windows) time of one launch from each window's median, in order; `None`
/// with fewer than three windows.
pub fn burst_and_sustained(window_ns: &[u64]) -> Option<(u64, u64)> {
    if window_ns.len() < 3 {
        return None;
    }
    let burst = window_ns[0];
    let mut tail: Vec<u64> = window_ns[window_ns.len() * 2 / 3..].to_vec();
    tail.sort_unstable();
    Some((burst, tail[tail.len() / 2]))
}

/// Launches per later window for a GEMM of `burst_ns`: [`WINDOW_SECONDS`]
/// of them, at least [`FIRST_WINDOW_LAUNCHES`], at most 100,000.
pub fn window_launches(burst_ns: u64) -> u32 {
    let launches = WINDOW_SECONDS / (burst_ns.max(1) as f64 * 1e-9);
    launches.clamp(FIRST_WINDOW_LAUNCHES as f64, 100_000.0) as u32
}

/// Runs the stage for `seconds`: bf16 on GPUs of compute capability 8.0 and
/// later, fp16 before (a V100 has no bf16 tensor cores).
pub fn run_sustained(
    device: &Device,
    blas: &CudaBlas,
    seconds: f64,
) -> Result<SustainedRun, CalibrateError> {
    if device.info.compute_capability.0 >= 8 {
        run_windows::<bf16>(device, blas, seconds, "bf16")
    } else {
        run_windows::<f16>(device, blas, seconds, "fp16")
    }
}

fn run_windows<T: GemmElement>(
    device: &Device,
    blas: &CudaBlas,
    seconds: f64,
    dtype: &str,
) -> Result<SustainedRun, CalibrateError>
where
    CudaBlas: Gemm<T>,
{
    let shape = SUSTAINED_SHAPE;
    let layout = GemmLayout::Tn;
    let what = format!("the sustained stage's {dtype} TN GEMM 8192x8192x8192");
    let stream = &device.stream;
    let call = ColumnMajorCall::for_shape(&shape, layout)?;
    let chunk = operand_chunk::<T>(0x5a57_a1e0);
    let element_bytes = std::mem::size_of::<T>() as u64;
    let free_bytes = device
        .ctx
        .mem_get_info()
        .cuda(|| format!("querying free memory before {what}"))?
        .0 as u64;
    let sets = rotation::size_rotation(
        rotation::set_bytes(&shape, element_bytes),
        device.info.l2_cache_bytes,
        free_bytes,
    )
    .map_or(1, |plan| plan.sets);
    let mut buffers = RotatingBuffers::<T>::new(stream, &shape, sets, &chunk, &what)?;
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let sampler = spawn_sampler(started, Arc::clone(&stop), Arc::clone(&samples));
    let mut window_ns: Vec<u64> = Vec::new();
    let mut launches_so_far = 0usize;
    let mut per_window = FIRST_WINDOW_LAUNCHES;
    let timed = loop {
        if started.elapsed().as_secs_f64() >= seconds {
            break Ok(());
        }
        let window = timing::time_launches(stream, 0, per_window, &what, |i| {
            buffers.with_set(launches_so_far + i, |a, b, c| {
                // SAFETY: each set's A, B and C views hold exactly the
                // m·k, k·n and m·n elements `call` addresses.
                unsafe { launch_on(blas, &call, a, b, c) }.cublas(|| format!("launching {what}"))
            })
        });
        let window = match window {
            Ok(window) => window,
            Err(error) => break Err(error),
        };
        launches_so_far += per_window as usize;
        let median_ns = Summary::from_samples(&window)
            .expect("a window has launches")
            .median_ns;
        if window_ns.is_empty() {
            per_window = window_launches(median_ns);
        }
        window_ns.push(median_ns);
    };
    let duration_s = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let waited = Instant::now();
    while !sampler.is_finished() && waited.elapsed() < SAMPLER_GRACE {
        std::thread::sleep(Duration::from_millis(10));
    }
    timed?;
    let (burst_ns, sustained_ns) = burst_and_sustained(&window_ns).ok_or_else(|| {
        CalibrateError::Sustained(format!(
            "{what}: only {} windows in {seconds} s (at least 3 needed)",
            window_ns.len()
        ))
    })?;
    // What the sampler has so far (a hung nvidia-smi leaves it behind).
    let samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
    Ok(SustainedRun {
        batch: shape.batch,
        m: shape.m,
        n: shape.n,
        k: shape.k,
        dtype: dtype.into(),
        layout: layout.name().into(),
        duration_s,
        window_launches: per_window,
        burst_ns,
        sustained_ns,
        window_ns,
        samples,
    })
}

/// Reads nvidia-smi every [`SAMPLE_EVERY`] until `stop`, keeping the clock,
/// power and temperature of the first GPU in nvidia-smi's order (the lab
/// machine has one) with the time since `started`; stops at the first read
/// that fails.
fn spawn_sampler(
    started: Instant,
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<SustainedSample>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let at_s = started.elapsed().as_secs_f64();
            let state = read_gpu_state();
            if let Some(gpu) = state.gpus.first() {
                samples.lock().expect("one writer").push(SustainedSample {
                    at_s,
                    sm_clock_mhz: gpu.sm_clock_mhz,
                    power_draw_w: gpu.power_draw_w,
                    temperature_c: gpu.temperature_c,
                });
            } else {
                // nvidia-smi missing or failing: no samples, the timing goes on.
                return;
            }
            std::thread::sleep(SAMPLE_EVERY);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_windows_last_about_half_a_second() {
        // 8192^3 at 1.4 ms: 357 launches; never fewer than the first window's.
        assert_eq!(window_launches(1_400_000), 357);
        assert_eq!(window_launches(2_000_000_000), FIRST_WINDOW_LAUNCHES);
        assert_eq!(window_launches(0), 100_000);
    }

    #[test]
    fn the_first_window_is_the_burst_and_the_last_thirds_median_the_sustained() {
        let windows = [
            1_400_000, 1_450_000, 1_500_000, 1_600_000, 1_620_000, 1_610_000,
        ];
        assert_eq!(burst_and_sustained(&windows), Some((1_400_000, 1_620_000)));
        assert_eq!(burst_and_sustained(&windows[..2]), None);
        assert_eq!(
            burst_and_sustained(&[1, 2, 3, 9, 9, 9, 4, 5, 6]),
            Some((1, 5))
        );
    }
}
