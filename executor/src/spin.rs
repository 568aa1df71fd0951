//! The synthetic-mode kernel: one thread of one block spinning on the GPU's
//! global nanosecond timer (`%globaltimer`) until a given number of
//! nanoseconds has passed since the kernel started. It is the `gpu` crate's
//! gate kernel ([`gpu::gate::GateKernels::wait`], the one calibrate holds its
//! timed launches behind), compiled by NVRTC to a cubin for the device's own
//! architecture ([`gpu::kernels`]).
//!
//! One block keeps ranks folded onto one GPU from contending (each spin
//! occupies a single SM). `%globaltimer` counts wall-clock nanoseconds, so a
//! spin lasts its duration whatever the SM clock does: an earlier version
//! counted `clock64()` cycles converted with a clock rate calibrated once,
//! and on an H100 (idle at 435 MHz, boost 1980 MHz) the tiny t=2 p=4
//! iteration came out 19 % long. The SM clock is still read (the device's
//! `CLOCK_RATE`) and recorded in the notes, for provenance only.
//!
//! ## Resolution
//!
//! `%globaltimer` is a 64-bit nanosecond counter, but how often it advances
//! depends on the GPU and driver: every 32 ns on recent parts, every 1 µs
//! (1000 ns steps) on some older ones. A spin ends at the first read at
//! least `duration_ns` after its first read, so with a step of `r` ns it
//! lasts between `duration_ns − r` and `duration_ns + r` (plus one loop
//! iteration). [`SpinKernel::load`] measures the smallest step the timer
//! takes on this device (a second, bounded kernel) and the executor records
//! it in the notes as `globaltimer_step_ns`; it is an upper bound on the
//! resolution (a step cannot be seen finer than one read of the loop).
//!
//! The same kernel holds every stream at the start gate while the host
//! issues the iteration (see [`crate::runtime`] and [`crate::gate`]).
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use gpu::detect::Device;
use gpu::error::{CudaContextExt, GpuError};
use gpu::gate::GateKernels;
use gpu::kernels::compile_and_load;
use std::sync::Arc;

/// Writes to `out[0]` the smallest nonzero step `%globaltimer` was seen to
/// take over up to 64 steps (0 if it never moved in 2^26 reads, so the kernel
/// always ends).
pub const TIMER_STEP_KERNEL_SOURCE: &str = r#"
extern "C" __global__ void globaltimer_step(unsigned long long* out) {
    unsigned long long previous, now, smallest = 0ull;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(previous));
    int changes = 0;
    for (long long reads = 0; reads < (1ll << 26) && changes < 64; ++reads) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now != previous) {
            unsigned long long step = now - previous;
            if (smallest == 0ull || step < smallest) smallest = step;
            previous = now;
            ++changes;
        }
    }
    out[0] = smallest;
}
"#;

/// The timer-step kernel's function name in [`TIMER_STEP_KERNEL_SOURCE`].
pub const TIMER_STEP_FUNCTION: &str = "globaltimer_step";

/// The launch argument of a spin of `duration_ns` (`None`: launch nothing).
pub fn spin_argument(duration_ns: u64) -> Option<u64> {
    (duration_ns > 0).then_some(duration_ns)
}

/// The loaded spin kernel and what is known about the device's timer.
pub struct SpinKernel {
    kernels: Arc<GateKernels>,
    /// The architecture the kernel was compiled for ("sm_90").
    pub architecture: String,
    /// The device's `CLOCK_RATE` attribute (provenance only: spins do not
    /// depend on it).
    pub nominal_clock_hz: f64,
    /// The smallest step `%globaltimer` was seen to take on this device, in
    /// ns (an upper bound on its resolution); `None` if it never moved.
    pub globaltimer_step_ns: Option<u64>,
}

impl SpinKernel {
    /// Loads the spin kernel on `device` (compiled once per device) and
    /// measures the timer's step (uses the device's stream).
    pub fn load(device: &Device) -> Result<SpinKernel, GpuError> {
        let kernels = GateKernels::for_context(&device.ctx)?;
        let clock_khz = device
            .ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
            .cuda(|| "reading the SM clock rate".into())?;
        let globaltimer_step_ns = measure_timer_step(device)?;
        if globaltimer_step_ns.is_none() {
            return Err(GpuError::Unusable(
                "the GPU's %globaltimer did not advance in 2^26 reads: spins of a simulated duration cannot be timed on this GPU".into(),
            ));
        }
        Ok(SpinKernel {
            architecture: kernels.architecture.clone(),
            kernels,
            nominal_clock_hz: clock_khz as f64 * 1e3,
            globaltimer_step_ns,
        })
    }

    /// Launches a spin of `duration_ns` on `stream` (nothing for 0).
    pub fn launch(&self, stream: &Arc<CudaStream>, duration_ns: u64) -> Result<(), GpuError> {
        match spin_argument(duration_ns) {
            Some(duration_ns) => self.kernels.wait(stream, duration_ns),
            None => Ok(()),
        }
    }
}

/// One block of one thread.
fn single_thread() -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Runs [`TIMER_STEP_KERNEL_SOURCE`] once and reads its result back.
fn measure_timer_step(device: &Device) -> Result<Option<u64>, GpuError> {
    let kernel = compile_and_load(
        device,
        TIMER_STEP_KERNEL_SOURCE,
        TIMER_STEP_FUNCTION,
        "the executor's timer-step kernel",
    )?;
    let stream = &device.stream;
    let mut out = stream
        .alloc_zeros::<u64>(1)
        .cuda(|| "allocating the timer-step result".into())?;
    let mut launch = stream.launch_builder(&kernel.function);
    launch.arg(&mut out);
    // SAFETY: the kernel writes one `unsigned long long` to `out`, which holds one.
    unsafe { launch.launch(single_thread()) }.cuda(|| "launching the timer-step kernel".into())?;
    let step = stream
        .clone_dtoh(&out)
        .cuda(|| "reading the timer-step result".into())?;
    Ok(step.first().copied().filter(|&ns| ns > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spin_is_launched_for_every_nonzero_duration_and_takes_it_in_nanoseconds() {
        assert_eq!(spin_argument(0), None, "zero-cost work launches nothing");
        assert_eq!(spin_argument(1), Some(1));
        assert_eq!(spin_argument(57_658_254), Some(57_658_254));
    }

    #[test]
    fn the_kernels_read_the_global_timer_not_the_sm_clock() {
        let spin = gpu::gate::GATE_KERNEL_SOURCE;
        for source in [spin, TIMER_STEP_KERNEL_SOURCE] {
            assert!(source.contains("%%globaltimer"), "{source}");
            assert!(!source.contains("clock64"), "{source}");
        }
        assert!(spin.contains("void wait_ns(unsigned long long ns)"));
        // The gate and spin kernel's loop is bounded by its read count too.
        assert!(spin.contains("reads < ns"), "{spin}");
        assert!(TIMER_STEP_KERNEL_SOURCE.contains(&format!("void {TIMER_STEP_FUNCTION}(")));
        // The step kernel's loop is bounded, so a frozen timer cannot hang it.
        assert!(TIMER_STEP_KERNEL_SOURCE.contains("reads < (1ll << 26)"));
    }
}
