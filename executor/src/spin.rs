//! The synthetic-mode kernel: one thread of one block spinning on
//! `clock64()` for a given number of SM cycles, compiled with NVRTC.
//!
//! One block keeps ranks folded onto one GPU from contending (each spin
//! occupies a single SM). Durations become cycles with the SM clock: the
//! nominal rate is the device's `CLOCK_RATE` attribute, then a 20 ms spin
//! timed with CUDA events gives the rate the GPU actually ran at, which is
//! the one used (boost clocks vary; the spin must last the simulated time).
//! The same kernel holds every stream at a start gate while the host issues
//! the iteration (see [`crate::runtime`]).

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use gpu::detect::{CudaLibrary, Device};
use gpu::error::{CudaContextExt, GpuError};
use gpu::timing::{self, Summary};
use std::sync::Arc;

/// Spins until `cycles` SM cycles have passed since the kernel started.
pub const SPIN_KERNEL_SOURCE: &str = r#"
extern "C" __global__ void spin_cycles(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"#;

/// How long the clock-rate calibration spin lasts at the nominal clock.
const CALIBRATION_SPIN_NS: u64 = 20_000_000;

/// SM cycles for `duration_ns` at `clock_hz` (rounded to nearest, ≥ 1 for a
/// nonzero duration).
pub fn spin_cycles(duration_ns: u64, clock_hz: f64) -> i64 {
    if duration_ns == 0 {
        return 0;
    }
    ((duration_ns as f64 * clock_hz * 1e-9).round() as i64).max(1)
}

/// The loaded kernel and the clock it is calibrated to.
pub struct SpinKernel {
    function: CudaFunction,
    /// From the device's `CLOCK_RATE` attribute.
    pub nominal_clock_hz: f64,
    /// Measured while spinning: the rate durations are converted with.
    pub clock_hz: f64,
}

impl SpinKernel {
    /// Compiles, loads and calibrates the kernel on `device` (uses its stream).
    pub fn load(device: &Device) -> Result<SpinKernel, GpuError> {
        CudaLibrary::Nvrtc.require("the executor's spin kernel")?;
        let (major, minor) = device.info.compute_capability;
        let options = cudarc::nvrtc::CompileOptions {
            options: vec![format!("--gpu-architecture=compute_{major}{minor}")],
            ..Default::default()
        };
        let ptx =
            cudarc::nvrtc::compile_ptx_with_opts(SPIN_KERNEL_SOURCE, options).map_err(|error| {
                GpuError::Nvrtc {
                    context: "compiling the spin kernel".into(),
                    message: error.to_string(),
                }
            })?;
        let module = device
            .ctx
            .load_module(ptx)
            .cuda(|| "loading the spin kernel module".into())?;
        let function = module
            .load_function("spin_cycles")
            .cuda(|| "finding spin_cycles in its module".into())?;
        let clock_khz = device
            .ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
            .cuda(|| "reading the SM clock rate".into())?;
        let nominal_clock_hz = clock_khz as f64 * 1e3;
        let mut kernel = SpinKernel {
            function,
            nominal_clock_hz,
            clock_hz: nominal_clock_hz,
        };
        let cycles = spin_cycles(CALIBRATION_SPIN_NS, nominal_clock_hz);
        let samples =
            timing::time_launches(&device.stream, 1, 3, "the spin-clock calibration", |_| {
                kernel.launch_cycles(&device.stream, cycles)
            })?;
        let median_ns = Summary::from_samples(&samples)
            .expect("three samples")
            .median_ns;
        kernel.clock_hz = cycles as f64 / (median_ns as f64 * 1e-9);
        Ok(kernel)
    }

    /// Launches a spin of `duration_ns` on `stream` (nothing for 0).
    pub fn launch(&self, stream: &Arc<CudaStream>, duration_ns: u64) -> Result<(), GpuError> {
        match spin_cycles(duration_ns, self.clock_hz) {
            0 => Ok(()),
            cycles => self.launch_cycles(stream, cycles),
        }
    }

    fn launch_cycles(&self, stream: &Arc<CudaStream>, cycles: i64) -> Result<(), GpuError> {
        let config = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(&self.function);
        launch.arg(&cycles);
        // SAFETY: the kernel takes one `long long` by value and touches no memory.
        unsafe { launch.launch(config) }
            .map(|_| ())
            .cuda(|| format!("launching a spin of {cycles} cycles"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_become_cycles_at_the_clock_rate() {
        assert_eq!(spin_cycles(1_000_000, 1.98e9), 1_980_000);
        assert_eq!(spin_cycles(0, 1.98e9), 0);
        assert_eq!(
            spin_cycles(1, 1e6),
            1,
            "nonzero durations spin at least one cycle"
        );
    }
}
