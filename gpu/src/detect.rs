//! Finding the GPUs without crashing when there are none.
//!
//! cudarc loads CUDA libraries lazily and *panics* when one is missing
//! (`CudaContext::new` without `libcuda.so`, the first NCCL call without
//! `libnccl.so`). So before any call into a library, calibrate and the
//! executor ask cudarc whether it can load it (`sys::is_culib_present()`,
//! through [`CudaLibrary`]) and turn a "no" into a [`GpuError`] with one
//! clear line. [`open_device`] opens a GPU and reads what the driver says
//! about it.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use crate::error::{CudaContextExt, GpuError};
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// The CUDA libraries calibrate and the executor load, each checked before first use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaLibrary {
    /// The driver, `libcuda.so` (installed with the NVIDIA driver).
    Driver,
    /// `libcublas.so` (cuBLAS; cudarc also tries `libcublas.so.13` etc.).
    Cublas,
    /// `libnccl.so` (NCCL; the Python wheel's `libnccl.so.2` needs a symlink).
    Nccl,
    /// `libnvrtc.so` (runtime compilation of calibrate's elementwise kernel and
    /// the executor's spin kernel).
    Nvrtc,
}

impl CudaLibrary {
    /// The file name cudarc looks for first.
    pub fn file_name(self) -> &'static str {
        match self {
            CudaLibrary::Driver => "libcuda.so",
            CudaLibrary::Cublas => "libcublas.so",
            CudaLibrary::Nccl => "libnccl.so",
            CudaLibrary::Nvrtc => "libnvrtc.so",
        }
    }

    /// Whether cudarc can load this library (tries every name it would).
    pub fn is_present(self) -> bool {
        // SAFETY: `is_culib_present` only tries `dlopen` on candidate names
        // and closes what it opened; it calls no function of the library.
        unsafe {
            match self {
                CudaLibrary::Driver => cudarc::driver::sys::is_culib_present(),
                CudaLibrary::Cublas => cudarc::cublas::sys::is_culib_present(),
                CudaLibrary::Nccl => cudarc::nccl::sys::is_culib_present(),
                CudaLibrary::Nvrtc => cudarc::nvrtc::sys::is_culib_present(),
            }
        }
    }

    /// `Ok` when present, else [`GpuError::MissingLibrary`] for `stage`.
    pub fn require(self, stage: &str) -> Result<(), GpuError> {
        if self.is_present() {
            return Ok(());
        }
        let hint = "pass --cuda-lib-dir DIR (the directory holding it) or set CLUSTERSIM_CUDA_LIB_DIR; `clustersim cuda-libs` shows where it was looked for";
        Err(GpuError::MissingLibrary {
            library: self.file_name().into(),
            stage: stage.into(),
            hint: hint.into(),
        })
    }
}

/// What the driver says about one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    pub ordinal: usize,
    /// e.g. "NVIDIA H200".
    pub name: String,
    pub sm_count: u32,
    /// Maximum SM clock reported by the driver.
    pub clock_mhz: u32,
    pub memory_bytes: u64,
    pub l2_cache_bytes: u64,
    pub compute_capability: (i32, i32),
}

/// An opened GPU: its context (event tracking off: every benchmark runs on
/// one stream per device, synchronised explicitly) and a work stream.
pub struct Device {
    pub info: GpuInfo,
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
}

/// Opens GPU `ordinal`. Check that the driver loads and sees the device
/// first (calibrate's `require_gpu`, the executor's `require_driver`).
pub fn open_device(ordinal: usize) -> Result<Device, GpuError> {
    let ctx = CudaContext::new(ordinal).cuda(|| format!("creating a context on GPU {ordinal}"))?;
    // SAFETY: calibration uses one stream per device (plus a second one in
    // the bidirectional PCIe test, which synchronises the context before and
    // after), frees nothing while work is in flight, and synchronises before
    // reading results; cudarc's per-buffer events would only add launches
    // between the timed ones.
    unsafe { ctx.disable_event_tracking() };
    let attribute = |attribute: CUdevice_attribute, what: &str| {
        ctx.attribute(attribute)
            .cuda(|| format!("reading {what} of GPU {ordinal}"))
    };
    let info = GpuInfo {
        ordinal,
        name: ctx
            .name()
            .cuda(|| format!("reading the name of GPU {ordinal}"))?,
        sm_count: attribute(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            "the SM count",
        )? as u32,
        clock_mhz: (attribute(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
            "the SM clock",
        )? / 1000) as u32,
        memory_bytes: ctx
            .total_mem()
            .cuda(|| format!("reading the memory size of GPU {ordinal}"))?
            as u64,
        l2_cache_bytes: attribute(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
            "the L2 size",
        )? as u64,
        compute_capability: ctx
            .compute_capability()
            .cuda(|| format!("reading the compute capability of GPU {ordinal}"))?,
    };
    let stream = ctx
        .new_stream()
        .cuda(|| format!("creating a stream on GPU {ordinal}"))?;
    Ok(Device { info, ctx, stream })
}
