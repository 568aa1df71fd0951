//! Compiling the project's own CUDA kernels (calibrate's memory-bound
//! kernels, the executor's spin) with NVRTC into machine code for the
//! device's exact architecture, and loading them.
//!
//! Why a cubin and not PTX: NVRTC from a newer toolkit (a Python wheel, say)
//! emits PTX of a newer ISA version than an older driver can JIT
//! (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`). Machine code for `sm_XY` needs no
//! JIT, so it loads on any driver that supports the device. The architecture
//! is chosen by [`select_architecture`]: the device's own `sm_XY` when this
//! NVRTC can target it, else a clear error naming what NVRTC supports.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use crate::detect::{CudaLibrary, Device};
use crate::error::{CudaContextExt, GpuError};
use cudarc::driver::{CudaContext, CudaFunction};
use cudarc::nvrtc::{result, sys, Ptx};
use std::ffi::{CStr, CString};
use std::sync::Arc;

/// The `--gpu-architecture` value for a device of compute capability
/// `(major, minor)`, given the SM versions this NVRTC supports (e.g. 90 for
/// sm_90). Hopper and Blackwell data-centre parts (9.0, 10.0) get their
/// arch-specific `sm_90a`/`sm_100a` variants only when asked for; plain
/// `sm_XY` code is what these kernels need.
pub fn select_architecture(
    compute_capability: (i32, i32),
    supported_sm: &[i32],
) -> Result<String, GpuError> {
    let (major, minor) = compute_capability;
    if !(1..=99).contains(&major) || !(0..=9).contains(&minor) {
        return Err(GpuError::Nvrtc {
            context: "choosing the architecture to compile for".into(),
            message: format!(
                "the driver reports an implausible compute capability {major}.{minor}"
            ),
        });
    }
    let sm = major * 10 + minor;
    if supported_sm.contains(&sm) {
        return Ok(format!("sm_{sm}"));
    }
    let listed = supported_sm
        .iter()
        .map(|v| format!("sm_{v}"))
        .collect::<Vec<_>>()
        .join(", ");
    Err(GpuError::Nvrtc {
        context: format!("choosing the architecture to compile for (device sm_{sm})"),
        message: format!(
            "this NVRTC cannot generate code for sm_{sm} (it supports {listed}); load an NVRTC from a CUDA toolkit that supports the device (--cuda-lib-dir)"
        ),
    })
}

/// SM versions this NVRTC can compile for (`nvrtcGetSupportedArchs`).
pub fn supported_architectures() -> Result<Vec<i32>, GpuError> {
    let failed = |what: &str, status: sys::nvrtcResult| GpuError::Nvrtc {
        context: format!("asking NVRTC for {what}"),
        message: format!("{status:?}"),
    };
    let mut count: std::ffi::c_int = 0;
    // SAFETY: writes one int; the caller checked that NVRTC loads.
    let status = unsafe { sys::nvrtcGetNumSupportedArchs(&mut count) };
    if status != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(failed("the number of supported architectures", status));
    }
    let mut archs = vec![0 as std::ffi::c_int; count.max(0) as usize];
    // SAFETY: `archs` holds exactly `count` ints, as NVRTC requires.
    let status = unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) };
    if status != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(failed("the supported architectures", status));
    }
    Ok(archs)
}

/// A kernel compiled for one device: its function and the architecture it
/// was built for (for provenance).
pub struct CompiledKernel {
    pub function: CudaFunction,
    /// e.g. "sm_90".
    pub architecture: String,
}

/// Compiles `source` to a cubin for `device`'s architecture, loads it into
/// the device's context and returns `function_name`. `what` names the
/// kernel in errors ("the spin kernel").
pub fn compile_and_load(
    device: &Device,
    source: &str,
    function_name: &str,
    what: &str,
) -> Result<CompiledKernel, GpuError> {
    let mut loaded = compile_and_load_all(&device.ctx, source, &[function_name], what)?;
    Ok(CompiledKernel {
        function: loaded.functions.remove(0),
        architecture: loaded.architecture,
    })
}

/// Several functions of one source, compiled once for `ctx`'s device.
pub struct CompiledModule {
    /// In the order asked for.
    pub functions: Vec<CudaFunction>,
    pub architecture: String,
}

/// Like [`compile_and_load`], for every function in `function_names`.
pub fn compile_and_load_all(
    ctx: &Arc<CudaContext>,
    source: &str,
    function_names: &[&str],
    what: &str,
) -> Result<CompiledModule, GpuError> {
    CudaLibrary::Nvrtc.require(what)?;
    let compute_capability = ctx
        .compute_capability()
        .cuda(|| format!("reading the compute capability for {what}"))?;
    let architecture = select_architecture(compute_capability, &supported_architectures()?)?;
    let cubin = compile_cubin(source, &architecture, what)?;
    let module = ctx
        .load_module(Ptx::from_binary(cubin))
        .cuda(|| format!("loading {what} ({architecture} cubin)"))?;
    let functions = function_names
        .iter()
        .map(|name| {
            module
                .load_function(name)
                .cuda(|| format!("finding {name} in the module of {what}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CompiledModule {
        functions,
        architecture,
    })
}

/// NVRTC-compiles `source` for `architecture` ("sm_90") and returns the cubin.
pub fn compile_cubin(source: &str, architecture: &str, what: &str) -> Result<Vec<u8>, GpuError> {
    let nvrtc = |message: String| GpuError::Nvrtc {
        context: format!("compiling {what} for {architecture}"),
        message,
    };
    let source = CString::new(source).map_err(|_| nvrtc("source holds a NUL byte".into()))?;
    let program = result::create_program(&source, None).map_err(|e| nvrtc(format!("{e:?}")))?;
    let outcome = (|| {
        let options = [
            format!("--gpu-architecture={architecture}"),
            "-default-device".into(),
        ];
        // SAFETY: `program` was just created and is destroyed below, once.
        if let Err(error) = unsafe { result::compile_program(program, &options) } {
            // SAFETY: as above; the log exists after a failed compile.
            let log = unsafe { result::get_program_log(program) }
                .ok()
                .map(|raw| {
                    // SAFETY: NVRTC's log is NUL-terminated.
                    unsafe { CStr::from_ptr(raw.as_ptr()) }
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_default();
            return Err(nvrtc(format!("{error:?}: {}", log.trim())));
        }
        let mut size = 0usize;
        // SAFETY: the program compiled; writes one usize.
        let status = unsafe { sys::nvrtcGetCUBINSize(program, &mut size) };
        if status != sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
            return Err(nvrtc(format!(
                "no cubin was produced ({status:?}, {size} bytes)"
            )));
        }
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` holds exactly the size NVRTC reported.
        let status = unsafe { sys::nvrtcGetCUBIN(program, cubin.as_mut_ptr().cast()) };
        if status != sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(nvrtc(format!("reading the cubin failed ({status:?})")));
        }
        Ok(cubin)
    })();
    // SAFETY: created above and not destroyed before.
    let _ = unsafe { result::destroy_program(program) };
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_gets_its_own_sm_architecture() {
        let supported = [75, 80, 86, 87, 89, 90, 100, 120];
        assert_eq!(select_architecture((9, 0), &supported).unwrap(), "sm_90");
        assert_eq!(select_architecture((8, 0), &supported).unwrap(), "sm_80");
        assert_eq!(select_architecture((10, 0), &supported).unwrap(), "sm_100");
        assert_eq!(select_architecture((8, 9), &supported).unwrap(), "sm_89");
    }

    #[test]
    fn a_device_newer_than_nvrtc_is_refused_with_what_nvrtc_supports() {
        let error = select_architecture((10, 0), &[80, 86, 90]).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("sm_100"), "{message}");
        assert!(message.contains("sm_80, sm_86, sm_90"), "{message}");
        assert!(message.contains("--cuda-lib-dir"), "{message}");
        assert!(select_architecture((0, 0), &[90]).is_err());
        assert!(select_architecture((9, 12), &[90]).is_err());
    }
}
