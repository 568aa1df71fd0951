//! The start gate: a one-thread kernel that holds a stream for a number of
//! nanoseconds (spinning on the GPU's `%globaltimer`, so clock boost does
//! not change its length), and an empty kernel.
//!
//! Timing short work with one event pair per repeat measures the host too:
//! if the GPU is idle, the start event completes at once and the end event
//! only after the host has issued the launch (5–10 µs per cuBLAS call).
//! Enqueueing every repeat behind a gate instead lets the GPU run them back
//! to back, so each event pair spans only what the GPU did
//! ([`crate::timing::time_launches`]). Back-to-back empty kernels behind the
//! gate give the launch-to-launch gap as the GPU sees it
//! ([`crate::timing::launch_gap_ns`]).
//!
//! The kernels are compiled once per device (cubin, [`crate::kernels`]) and
//! kept for the life of the process.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use crate::error::{CudaContextExt, GpuError};
use crate::kernels;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

/// `wait_ns` spins one thread until `ns` nanoseconds of `%globaltimer` have
/// passed since it started, or after `ns` reads of the timer (each takes
/// far more than a nanosecond), so a timer that never advances cannot hold
/// the GPU forever; `empty` does nothing.
pub const GATE_KERNEL_SOURCE: &str = r#"
extern "C" __global__ void wait_ns(unsigned long long ns) {
    unsigned long long start, now, reads = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        reads++;
    } while (now - start < ns && reads < ns);
}
extern "C" __global__ void empty() {}
"#;

/// The loaded gate kernels of one device.
pub struct GateKernels {
    wait: CudaFunction,
    empty: CudaFunction,
    /// e.g. "sm_90".
    pub architecture: String,
}

const ONE_THREAD: LaunchConfig = LaunchConfig {
    grid_dim: (1, 1, 1),
    block_dim: (1, 1, 1),
    shared_mem_bytes: 0,
};

impl GateKernels {
    /// The kernels for `ctx`'s device, compiled on first use.
    pub fn for_context(ctx: &Arc<CudaContext>) -> Result<Arc<GateKernels>, GpuError> {
        static LOADED: OnceLock<Mutex<BTreeMap<usize, Arc<GateKernels>>>> = OnceLock::new();
        let loaded = LOADED.get_or_init(|| Mutex::new(BTreeMap::new()));
        let mut loaded = loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(kernels) = loaded.get(&ctx.ordinal()) {
            return Ok(kernels.clone());
        }
        let mut module = kernels::compile_and_load_all(
            ctx,
            GATE_KERNEL_SOURCE,
            &["wait_ns", "empty"],
            "the timing gate kernels",
        )?;
        let kernels = Arc::new(GateKernels {
            empty: module.functions.pop().expect("two functions asked for"),
            wait: module.functions.pop().expect("two functions asked for"),
            architecture: module.architecture,
        });
        loaded.insert(ctx.ordinal(), kernels.clone());
        Ok(kernels)
    }

    /// Holds `stream` for `ns` nanoseconds of GPU time.
    pub fn wait(&self, stream: &Arc<CudaStream>, ns: u64) -> Result<(), GpuError> {
        let mut launch = stream.launch_builder(&self.wait);
        launch.arg(&ns);
        // SAFETY: the kernel takes one u64 by value and touches no memory.
        unsafe { launch.launch(ONE_THREAD) }
            .map(|_| ())
            .cuda(|| format!("launching a {ns} ns gate"))
    }

    /// Launches the empty kernel on `stream`.
    pub fn empty(&self, stream: &Arc<CudaStream>) -> Result<(), GpuError> {
        let mut launch = stream.launch_builder(&self.empty);
        // SAFETY: no arguments, no memory touched.
        unsafe { launch.launch(ONE_THREAD) }
            .map(|_| ())
            .cuda(|| "launching an empty kernel".into())
    }
}

/// The gate length to try first for `repeats` timed repeats: 2 ms plus
/// 200 µs a repeat (cuBLAS issues a GEMM in 5–10 µs; a repeat of many
/// launches may need more, which the retry in `time_launches` gives).
pub fn initial_gate_ns(repeats: u32) -> u64 {
    (2_000_000 + 200_000 * repeats as u64).min(MAX_GATE_NS)
}

/// The longest gate `time_launches` tries before giving up.
pub const MAX_GATE_NS: u64 = 20_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_gate_grows_with_the_repeats_and_stays_under_the_cap() {
        assert_eq!(initial_gate_ns(0), 2_000_000);
        assert_eq!(initial_gate_ns(20), 6_000_000);
        assert_eq!(initial_gate_ns(u32::MAX), MAX_GATE_NS);
        assert!(initial_gate_ns(1000) < MAX_GATE_NS);
    }
}
