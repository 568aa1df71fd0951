//! Host ↔ device copies over PCIe: pinned (page-locked, `cuMemHostAlloc`
//! without write-combining) and pageable (`Vec`) host memory, each
//! direction, and both directions at once on two streams (pinned).
//!
//! Pinned copies are timed with CUDA events. Pageable copies are timed with
//! the host clock around copy + stream synchronisation, because the driver
//! stages them through its own pinned buffers and an event pair would miss
//! the host-side staging. The profile's `pcie` rates are the pinned ones at
//! the largest size (what ZeRO-Offload's pinned buffers get); pageable and
//! bidirectional rates go into the notes.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use crate::error::CalibrateError;
use crate::host_timing::time_on_host;
use cudarc::driver::{CudaSlice, PinnedHostSlice};
use gpu::detect::Device;
use gpu::error::CudaContextExt;
use gpu::timing::{self, Summary};

const MIB: u64 = 1 << 20;

/// Copy sizes in bytes.
pub fn sizes_bytes(quick: bool) -> Vec<u64> {
    if quick {
        vec![16 * MIB, 256 * MIB]
    } else {
        vec![MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB]
    }
}

/// Direction and host memory kind of one timed transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Transfer {
    HostToDevicePinned,
    DeviceToHostPinned,
    HostToDevicePageable,
    DeviceToHostPageable,
    /// Both directions at once (pinned); bytes count both.
    BidirectionalPinned,
}

impl Transfer {
    pub fn name(self) -> &'static str {
        match self {
            Transfer::HostToDevicePinned => "host-to-device pinned",
            Transfer::DeviceToHostPinned => "device-to-host pinned",
            Transfer::HostToDevicePageable => "host-to-device pageable",
            Transfer::DeviceToHostPageable => "device-to-host pageable",
            Transfer::BidirectionalPinned => "bidirectional pinned",
        }
    }
}

/// One timed transfer size.
#[derive(Debug, Clone, PartialEq)]
pub struct PcieMeasurement {
    pub transfer: Transfer,
    /// Bytes moved (both directions together for bidirectional).
    pub bytes: u64,
    pub time_ns: u64,
    pub spread_ns: u64,
}

impl PcieMeasurement {
    pub fn bytes_per_s(&self) -> f64 {
        self.bytes as f64 / (self.time_ns as f64 * 1e-9)
    }
}

/// The measurement of `transfer` with the most bytes.
pub fn largest(measured: &[PcieMeasurement], transfer: Transfer) -> Option<&PcieMeasurement> {
    measured
        .iter()
        .filter(|m| m.transfer == transfer)
        .max_by_key(|m| m.bytes)
}

fn pinned(device: &Device, len: usize, what: &str) -> Result<PinnedHostSlice<u8>, CalibrateError> {
    // SAFETY: the contents are never read before a copy writes them; flags 0
    // is plain page-locked memory (no write-combining, which slows host reads).
    let buffer = unsafe { device.ctx.alloc_pinned_with_flags::<u8>(len, 0) }
        .cuda(|| format!("allocating {len} bytes of pinned host memory for {what}"))?;
    Ok(buffer)
}

/// Times every transfer kind at every size; `on_step` after each (size, kind).
pub fn time_transfers(
    device: &Device,
    sizes_bytes: &[u64],
    warmup: u32,
    repeats: u32,
    mut on_step: impl FnMut(),
) -> Result<Vec<PcieMeasurement>, CalibrateError> {
    let stream = &device.stream;
    let mut measured = Vec::new();
    let mut record = |transfer: Transfer, bytes: u64, samples: Vec<u64>| {
        let summary = Summary::from_samples(&samples).expect("repeats ≥ 1 (validated)");
        measured.push(PcieMeasurement {
            transfer,
            bytes,
            time_ns: summary.median_ns,
            spread_ns: summary.spread_ns,
        });
    };
    for &size_bytes in sizes_bytes {
        let len = size_bytes as usize;
        let what = format!("PCIe copies of {size_bytes} bytes");
        let mut device_a: CudaSlice<u8> = stream
            .alloc_zeros(len)
            .cuda(|| format!("allocating device memory for {what}"))?;
        let device_b: CudaSlice<u8> = stream
            .alloc_zeros(len)
            .cuda(|| format!("allocating device memory for {what}"))?;
        let mut pinned_a = pinned(device, len, &what)?;
        let mut pinned_b = pinned(device, len, &what)?;
        // Touch every page of the pageable buffer so first-touch faults are
        // not timed.
        let mut pageable = vec![1u8; len];

        let name = format!("{} ({what})", Transfer::HostToDevicePinned.name());
        let samples = timing::time_launches(stream, warmup, repeats, &name, |_| {
            stream
                .memcpy_htod(&pinned_a, &mut device_a)
                .cuda(|| format!("copying {name}"))
        })?;
        record(Transfer::HostToDevicePinned, size_bytes, samples);
        on_step();

        let name = format!("{} ({what})", Transfer::DeviceToHostPinned.name());
        let samples = timing::time_launches(stream, warmup, repeats, &name, |_| {
            stream
                .memcpy_dtoh(&device_a, &mut pinned_a)
                .cuda(|| format!("copying {name}"))
        })?;
        record(Transfer::DeviceToHostPinned, size_bytes, samples);
        on_step();

        let name = format!("{} ({what})", Transfer::HostToDevicePageable.name());
        let samples = time_on_host(warmup, repeats, |_| {
            stream
                .memcpy_htod(&pageable, &mut device_a)
                .and_then(|_| stream.synchronize())
                .cuda(|| format!("copying {name}"))
        })?;
        record(Transfer::HostToDevicePageable, size_bytes, samples);
        on_step();

        let name = format!("{} ({what})", Transfer::DeviceToHostPageable.name());
        let samples = time_on_host(warmup, repeats, |_| {
            stream
                .memcpy_dtoh(&device_a, &mut pageable)
                .and_then(|_| stream.synchronize())
                .cuda(|| format!("copying {name}"))
        })?;
        record(Transfer::DeviceToHostPageable, size_bytes, samples);
        on_step();

        let name = format!("{} ({what})", Transfer::BidirectionalPinned.name());
        let second = device
            .ctx
            .new_stream()
            .cuda(|| format!("creating a second stream for {name}"))?;
        // Allocations above were made on `stream`; make them visible to `second`.
        device
            .ctx
            .synchronize()
            .cuda(|| format!("synchronising before {name}"))?;
        let samples = time_on_host(warmup, repeats, |_| {
            stream
                .memcpy_htod(&pinned_a, &mut device_a)
                .and_then(|_| second.memcpy_dtoh(&device_b, &mut pinned_b))
                .and_then(|_| stream.synchronize())
                .and_then(|_| second.synchronize())
                .cuda(|| format!("copying {name}"))
        })?;
        record(Transfer::BidirectionalPinned, 2 * size_bytes, samples);
        on_step();

        drop((device_a, device_b, pinned_a, pinned_b, pageable, second));
        device
            .ctx
            .synchronize()
            .cuda(|| format!("freeing the buffers of {what}"))?;
    }
    Ok(measured)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_picks_the_biggest_transfer_of_its_kind() {
        let entry = |transfer, bytes, time_ns| PcieMeasurement {
            transfer,
            bytes,
            time_ns,
            spread_ns: 0,
        };
        let measured = [
            entry(Transfer::HostToDevicePinned, 1_000, 1),
            entry(Transfer::HostToDevicePinned, 50_000_000, 1_000_000),
            entry(Transfer::DeviceToHostPinned, 1_000_000_000, 1),
        ];
        let h2d = largest(&measured, Transfer::HostToDevicePinned).unwrap();
        assert_eq!(h2d.bytes, 50_000_000);
        assert!((h2d.bytes_per_s() - 50e9).abs() < 1.0);
        assert!(largest(&measured, Transfer::BidirectionalPinned).is_none());
    }
}
