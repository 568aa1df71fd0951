//! Finding the GPUs without crashing when there are none.
//!
//! cudarc loads CUDA libraries lazily and *panics* when one is missing
//! (`CudaContext::new` without `libcuda.so`, the first NCCL call without
//! `libnccl.so`). So before any call into a library this module asks cudarc
//! whether it can load it (`sys::is_culib_present()`), and turns a "no" into a
//! [`CalibrateError`] with one clear line. It also maps a device name to the
//! closest embedded default profile.

use crate::error::{CalibrateError, CudaContextExt};
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// The CUDA libraries calibration loads, each checked before first use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaLibrary {
    /// The driver, `libcuda.so` (installed with the NVIDIA driver).
    Driver,
    /// `libcublas.so` (cuBLAS; cudarc also tries `libcublas.so.13` etc.).
    Cublas,
    /// `libnccl.so` (NCCL; the Python wheel's `libnccl.so.2` needs a symlink).
    Nccl,
    /// `libnvrtc.so` (runtime compilation of the elementwise kernel).
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

    /// `Ok` when present, else [`CalibrateError::MissingLibrary`] for `stage`.
    pub fn require(self, stage: &str) -> Result<(), CalibrateError> {
        if self.is_present() {
            return Ok(());
        }
        let hint = match self {
            CudaLibrary::Nccl => "NCCL's Python wheel ships only libnccl.so.2: make a directory with a symlink libnccl.so -> .../nvidia/nccl/lib/libnccl.so.2 and put it on LD_LIBRARY_PATH (see the calibrate crate docs)",
            _ => "put the directory holding it (e.g. site-packages/nvidia/*/lib of the CUDA Python wheels) on LD_LIBRARY_PATH, adding a symlink without the version suffix if only a versioned file exists (see the calibrate crate docs)",
        };
        Err(CalibrateError::MissingLibrary {
            library: self.file_name().into(),
            stage: stage.into(),
            hint: hint.into(),
        })
    }
}

/// The one-line message for a machine without a usable CUDA driver.
pub const NO_DRIVER_MESSAGE: &str = "no CUDA driver found (libcuda.so could not be loaded); calibrate needs an NVIDIA GPU — run with --cpu-only to time the CPU optimizer alone";

/// Checks the driver can be loaded and sees at least one device; returns the
/// device count. Call before creating any context.
pub fn require_gpu() -> Result<usize, CalibrateError> {
    if !CudaLibrary::Driver.is_present() {
        return Err(CalibrateError::NoGpu(NO_DRIVER_MESSAGE.into()));
    }
    let count = CudaContext::device_count().map_err(|error| {
        CalibrateError::NoGpu(format!(
            "the CUDA driver loaded but found no usable GPU ({error}); run with --cpu-only to time the CPU optimizer alone"
        ))
    })?;
    if count <= 0 {
        return Err(CalibrateError::NoGpu(
            "the CUDA driver loaded but reports no GPU; run with --cpu-only to time the CPU optimizer alone".into(),
        ));
    }
    Ok(count as usize)
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

/// Opens GPU `ordinal`. Call [`require_gpu`] first.
pub fn open_device(ordinal: usize) -> Result<Device, CalibrateError> {
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

/// Which embedded default profile a device name maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinMatch {
    /// Name for `sim::profile::Profile::builtin`.
    pub profile_id: &'static str,
    /// False when the GPU is none of the embedded ones and this is a stand-in.
    pub exact: bool,
}

/// The embedded profile closest to a driver device name ("NVIDIA H200",
/// "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM3-32GB", …). Unknown GPUs get
/// `h200` (H100 shares its datasheet peak) with `exact: false`.
pub fn closest_builtin(device_name: &str) -> BuiltinMatch {
    let upper = device_name.to_ascii_uppercase();
    let (profile_id, exact) = if upper.contains("H200") {
        ("h200", true)
    } else if upper.contains("A100") {
        ("a100-80gb", upper.contains("80G"))
    } else if upper.contains("V100") {
        ("v100-32gb", upper.contains("32G"))
    } else if upper.contains("A800") {
        ("a100-80gb", false)
    } else {
        ("h200", false)
    };
    BuiltinMatch { profile_id, exact }
}

/// The datasheet GPU of the first topology preset whose GPU is `profile_gpu`
/// (a profile's `gpu` field, e.g. "H200").
pub fn datasheet_gpu(profile_gpu: &str) -> Option<topologies::GpuSpec> {
    topologies::preset_names()
        .into_iter()
        .filter_map(|name| topologies::preset(&name))
        .map(|topology| topology.gpu)
        .find(|gpu| gpu.name == profile_gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_map_to_the_closest_embedded_profile() {
        let exact = |profile_id| BuiltinMatch {
            profile_id,
            exact: true,
        };
        assert_eq!(closest_builtin("NVIDIA H200"), exact("h200"));
        assert_eq!(closest_builtin("NVIDIA A100-SXM4-80GB"), exact("a100-80gb"));
        assert_eq!(closest_builtin("Tesla V100-SXM3-32GB"), exact("v100-32gb"));
        assert!(!closest_builtin("NVIDIA A100-SXM4-40GB").exact);
        let unknown = closest_builtin("NVIDIA GeForce RTX 4090");
        assert_eq!(unknown.profile_id, "h200");
        assert!(!unknown.exact);
    }

    #[test]
    fn every_embedded_profile_has_a_datasheet_gpu() {
        for name in sim::profile::Profile::builtin_names() {
            let profile = sim::profile::Profile::builtin(name).unwrap();
            assert!(datasheet_gpu(&profile.gpu).is_some(), "{}", profile.gpu);
        }
    }
}
