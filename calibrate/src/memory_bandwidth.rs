//! Achieved HBM bandwidth: device-to-device copies (`cuMemcpyDtoDAsync`) over
//! a size sweep, and an elementwise bf16 GeLU kernel compiled with NVRTC
//! (the model's "gelu" kernel: 2 bytes read + 2 written per element).
//!
//! `bytes` in every [`MemoryMeasurement`] counts bytes read plus bytes
//! written, as `models::ops` does. Each size rotates through several
//! source/destination slots (together ≥ 4× L2) so repeats miss in L2.

use crate::error::CalibrateError;
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use gpu::detect::Device;
use gpu::error::CudaContextExt;
use gpu::timing::{self, Summary};
use profile::{MemoryMeasurement, Source};

const MIB: u64 = 1 << 20;

/// Copy sizes (bytes copied; twice that moves through HBM).
pub fn copy_sizes_bytes(quick: bool) -> Vec<u64> {
    if quick {
        vec![16 * MIB, 256 * MIB, 1024 * MIB]
    } else {
        vec![
            MIB,
            4 * MIB,
            16 * MIB,
            64 * MIB,
            256 * MIB,
            1024 * MIB,
            2048 * MIB,
        ]
    }
}

/// Slots of `size_bytes` needed so that rotating among them covers 4× L2.
fn rotation_slots(size_bytes: u64, l2_cache_bytes: u64) -> u64 {
    (4 * l2_cache_bytes).div_ceil(size_bytes).clamp(1, 16)
}

/// Times device-to-device copies for each size (skipping sizes that do not
/// fit in half the free memory); `on_size` is called after each.
pub fn time_copies(
    device: &Device,
    sizes_bytes: &[u64],
    warmup: u32,
    repeats: u32,
    mut on_size: impl FnMut(),
) -> Result<Vec<MemoryMeasurement>, CalibrateError> {
    let stream = &device.stream;
    let mut measured = Vec::new();
    for &size_bytes in sizes_bytes {
        let what = format!("device-to-device copy of {size_bytes} bytes");
        let slots = rotation_slots(size_bytes, device.info.l2_cache_bytes);
        let (free_bytes, _) = device
            .ctx
            .mem_get_info()
            .cuda(|| format!("querying free memory before the {what}"))?;
        if 2 * slots * size_bytes > free_bytes as u64 / 2 {
            on_size();
            continue;
        }
        let len = (slots * size_bytes) as usize;
        let source = stream
            .alloc_zeros::<u8>(len)
            .cuda(|| format!("allocating the source of the {what}"))?;
        let mut target = stream
            .alloc_zeros::<u8>(len)
            .cuda(|| format!("allocating the target of the {what}"))?;
        let size = size_bytes as usize;
        let samples = timing::time_launches(stream, warmup, repeats, &what, |i| {
            let offset = (i % slots as usize) * size;
            let from = source.slice(offset..offset + size);
            let mut to = target.slice_mut(offset..offset + size);
            stream
                .memcpy_dtod(&from, &mut to)
                .cuda(|| format!("launching the {what}"))
        })?;
        let summary = Summary::from_samples(&samples).expect("repeats ≥ 1 (validated)");
        measured.push(MemoryMeasurement {
            kernel: "copy".into(),
            bytes: 2 * size_bytes,
            time_ns: summary.median_ns,
            source: Source::Measured,
        });
        drop((source, target));
        stream
            .synchronize()
            .cuda(|| format!("freeing the buffers of the {what}"))?;
        on_size();
    }
    Ok(measured)
}

/// Bytes per second moved by the measurement with the most bytes of `kernel`.
pub fn largest_rate(measured: &[MemoryMeasurement], kernel: &str) -> Option<(u64, f64)> {
    measured
        .iter()
        .filter(|m| m.kernel == kernel)
        .max_by_key(|m| m.bytes)
        .map(|m| (m.bytes, m.bytes as f64 / (m.time_ns as f64 * 1e-9)))
}

/// GeLU (tanh form, as Megatron's `bias_gelu` without the bias) over bf16
/// values packed four to a 64-bit word; round-to-nearest-even back to bf16.
/// Written without cuda_bf16.h so NVRTC needs no include path.
pub const GELU_KERNEL_SOURCE: &str = r#"
extern "C" __global__ void gelu_bf16x4(const unsigned long long* __restrict__ x,
                                       unsigned long long* __restrict__ y,
                                       unsigned long long words) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < words; i += stride) {
        unsigned long long in = x[i];
        unsigned long long out = 0;
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
            unsigned int half_bits = (unsigned int)((in >> (16 * lane)) & 0xFFFFull);
            float v = __uint_as_float(half_bits << 16);
            float g = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
            unsigned int bits = __float_as_uint(g);
            bits += 0x7FFFu + ((bits >> 16) & 1u);
            out |= ((unsigned long long)(bits >> 16)) << (16 * lane);
        }
        y[i] = out;
    }
}
"#;

/// Compiles the GeLU kernel to a cubin for this device's architecture and loads it.
fn load_gelu(device: &Device) -> Result<CudaFunction, CalibrateError> {
    let kernel = gpu::kernels::compile_and_load(
        device,
        GELU_KERNEL_SOURCE,
        "gelu_bf16x4",
        "the bf16 GeLU kernel",
    )?;
    Ok(kernel.function)
}

/// Times the GeLU kernel over `sizes_bytes` of bf16 input (each a multiple
/// of 8 bytes); records `kernel: "gelu"` with bytes = input + output.
pub fn time_gelu(
    device: &Device,
    sizes_bytes: &[u64],
    warmup: u32,
    repeats: u32,
    mut on_size: impl FnMut(),
) -> Result<Vec<MemoryMeasurement>, CalibrateError> {
    let function = load_gelu(device)?;
    let stream = &device.stream;
    let mut measured = Vec::new();
    for &size_bytes in sizes_bytes {
        let what = format!("bf16 GeLU over {size_bytes} bytes");
        let slots = rotation_slots(size_bytes, device.info.l2_cache_bytes);
        let (free_bytes, _) = device
            .ctx
            .mem_get_info()
            .cuda(|| format!("querying free memory before the {what}"))?;
        if 2 * slots * size_bytes > free_bytes as u64 / 2 || size_bytes % 8 != 0 {
            on_size();
            continue;
        }
        let words = (size_bytes / 8) as usize;
        let input = stream
            .alloc_zeros::<u64>(slots as usize * words)
            .cuda(|| format!("allocating the input of the {what}"))?;
        let mut output = stream
            .alloc_zeros::<u64>(slots as usize * words)
            .cuda(|| format!("allocating the output of the {what}"))?;
        let blocks = (device.info.sm_count.max(1) * 8).min(words.div_ceil(256) as u32);
        let config = LaunchConfig {
            grid_dim: (blocks.max(1), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let words_arg = words as u64;
        let samples = timing::time_launches(stream, warmup, repeats, &what, |i| {
            let offset = (i % slots as usize) * words;
            let from = input.slice(offset..offset + words);
            let mut to = output.slice_mut(offset..offset + words);
            let mut launch = stream.launch_builder(&function);
            launch.arg(&from).arg(&mut to).arg(&words_arg);
            // SAFETY: the kernel reads `words` u64 from `from` and writes
            // `words` u64 to `to`, both views of exactly that length.
            unsafe { launch.launch(config) }
                .map(|_| ())
                .cuda(|| format!("launching the {what}"))
        })?;
        let summary = Summary::from_samples(&samples).expect("repeats ≥ 1 (validated)");
        measured.push(MemoryMeasurement {
            kernel: "gelu".into(),
            bytes: 2 * size_bytes,
            time_ns: summary.median_ns,
            source: Source::Measured,
        });
        drop((input, output));
        stream
            .synchronize()
            .cuda(|| format!("freeing the buffers of the {what}"))?;
        on_size();
    }
    Ok(measured)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_covers_four_times_l2_within_bounds() {
        assert_eq!(rotation_slots(MIB, 60 * MIB), 16);
        assert_eq!(rotation_slots(16 * MIB, 60 * MIB), 15);
        assert_eq!(rotation_slots(1024 * MIB, 60 * MIB), 1);
    }

    #[test]
    fn largest_rate_uses_the_biggest_transfer() {
        let entry = |bytes, time_ns| MemoryMeasurement {
            kernel: "copy".into(),
            bytes,
            time_ns,
            source: Source::Measured,
        };
        let measured = [entry(2_000, 1), entry(4_000_000_000, 1_000_000)];
        let (bytes, rate) = largest_rate(&measured, "copy").unwrap();
        assert_eq!(bytes, 4_000_000_000);
        assert!((rate - 4e12).abs() < 1.0);
        assert!(largest_rate(&measured, "gelu").is_none());
        assert!(copy_sizes_bytes(true).iter().all(|s| s % 8 == 0));
    }
}
