//! Achieved HBM bandwidth: device-to-device copies (`cuMemcpyDtoDAsync`) over
//! a size sweep. The memory-bound kernels of the model (LayerNorm, softmax,
//! dropout, GeLU, the optimizer's phases, …) are timed class by class in
//! [`crate::memory_classes`].
//!
//! `bytes` in every [`MemoryMeasurement`] counts bytes read plus bytes
//! written, as `models::ops` does. Each size rotates through several
//! source/destination slots (together ≥ 4× L2) so repeats miss in L2.

use crate::error::CalibrateError;
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
    gpu::timing::slots_covering(l2_cache_bytes.saturating_mul(4), size_bytes, 16)
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
