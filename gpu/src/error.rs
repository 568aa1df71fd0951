//! How a shared GPU call fails, with the context needed to act on it (what
//! was being done, which library, which shape).
//!
//! No CUDA, cuBLAS or NVRTC failure panics: every call is mapped into a
//! [`GpuError`] naming what was being done when it failed. Calibrate turns a
//! `GpuError` into `CalibrateError::Gpu` (wrapped, same message); the
//! executor wraps it as `ExecuteError::Gpu`. Both print the same line.

use cudarc::cublas::result::CublasError;
use cudarc::driver::DriverError;

/// Why a GPU call shared by calibrate and the executor failed.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// A CUDA library the caller needs could not be loaded.
    #[error("{library} could not be loaded (needed for {stage}); {hint}")]
    MissingLibrary {
        /// e.g. "libnccl.so".
        library: String,
        /// What needs it, e.g. "collectives" or "the executor's GEMMs".
        stage: String,
        /// How to fix it (see the calibrate crate docs on Python wheels).
        hint: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error while {context}: {source}")]
    Cuda {
        /// What was being done, e.g. "allocating 3 GEMM buffer sets for 8192x8192x8192 bf16".
        context: String,
        #[source]
        source: DriverError,
    },
    /// A cuBLAS call failed.
    #[error("cuBLAS error while {context}: {source}")]
    Cublas {
        context: String,
        #[source]
        source: CublasError,
    },
    /// A cuBLASLt call failed (the FP8 GEMMs, [`crate::gemm_fp8`]).
    #[error("cuBLASLt error while {context}: {source}")]
    CublasLt {
        context: String,
        #[source]
        source: cudarc::cublaslt::result::CublasError,
    },
    /// NVRTC could not compile a kernel.
    #[error("NVRTC error while {context}: {message}")]
    Nvrtc { context: String, message: String },
    /// The host could not enqueue the timed repeats before even the longest
    /// gate opened (an overloaded host, or a launch that blocks).
    #[error("the host was still enqueueing {what} when a {gate_ns} ns gate opened; the timing would include host time (is the host overloaded, or does a launch block?)")]
    HostTooSlow { what: String, gate_ns: u64 },
    /// The device cannot do what is needed (e.g. its timer does not advance).
    #[error("{0}")]
    Unusable(String),
    /// A shape or size does not fit the library's 32-bit arguments.
    #[error("{what} is too large for the library call ({value} > {limit})")]
    TooLarge {
        what: String,
        value: u64,
        limit: u64,
    },
    /// A GEMM shape no cuBLAS call can compute (a zero dimension). The
    /// wording is calibrate's, where such a shape comes from its options.
    #[error("invalid calibrate options: {problem}")]
    InvalidShape { problem: String },
}

/// Adds context to driver results: `ctx.alloc(..).cuda(|| "allocating x".into())?`.
pub trait CudaContextExt<T> {
    fn cuda(self, context: impl FnOnce() -> String) -> Result<T, GpuError>;
}

impl<T> CudaContextExt<T> for Result<T, DriverError> {
    fn cuda(self, context: impl FnOnce() -> String) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Cuda {
            context: context(),
            source,
        })
    }
}

/// Adds context to cuBLAS results.
pub trait CublasContextExt<T> {
    fn cublas(self, context: impl FnOnce() -> String) -> Result<T, GpuError>;
}

impl<T> CublasContextExt<T> for Result<T, CublasError> {
    fn cublas(self, context: impl FnOnce() -> String) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Cublas {
            context: context(),
            source,
        })
    }
}

/// Adds context to cuBLASLt results.
pub trait CublasLtContextExt<T> {
    fn cublaslt(self, context: impl FnOnce() -> String) -> Result<T, GpuError>;
}

impl<T> CublasLtContextExt<T> for Result<T, cudarc::cublaslt::result::CublasError> {
    fn cublaslt(self, context: impl FnOnce() -> String) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::CublasLt {
            context: context(),
            source,
        })
    }
}
