//! Everything that can stop a calibration run, each with the context needed
//! to act on it (which stage, which shape or size, which library).
//!
//! No CUDA, cuBLAS, NCCL or NVRTC failure panics: every call is mapped into a
//! [`CalibrateError`] naming what was being done when it failed. Calls made
//! through the `gpu` crate fail as a [`GpuError`], which becomes the variant
//! of the same name here (same message, same source).

use cudarc::cublas::result::CublasError;
use cudarc::driver::DriverError;
use gpu::GpuError;

/// Why calibration could not produce a profile.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// No usable CUDA driver or device; the string is one line for the user.
    #[error("{0}")]
    NoGpu(String),
    /// A CUDA library the requested stage needs could not be loaded.
    #[error("{library} could not be loaded (needed for {stage}); {hint}")]
    MissingLibrary {
        /// e.g. "libnccl.so".
        library: String,
        /// The calibration stage that needs it, e.g. "collectives".
        stage: String,
        /// How to fix it (see the crate docs on Python wheels).
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
    /// An NCCL call failed (NCCL's error code is given by name).
    #[error("NCCL error while {context}: {code}")]
    Nccl { context: String, code: String },
    /// NVRTC could not compile the elementwise benchmark kernel.
    #[error("NVRTC error while {context}: {message}")]
    Nvrtc { context: String, message: String },
    /// A rayon thread pool for the CPU Adam sweep could not be built.
    #[error("cannot build a {threads}-thread pool for the CPU Adam benchmark: {message}")]
    ThreadPool { threads: usize, message: String },
    /// The options cannot describe a calibration run; every problem is listed.
    #[error("invalid calibrate options: {}", problems.join("; "))]
    InvalidOptions { problems: Vec<String> },
    /// A shape or size does not fit the library's 32-bit arguments.
    #[error("{what} is too large for the library call ({value} > {limit})")]
    TooLarge {
        what: String,
        value: u64,
        limit: u64,
    },
    /// The profile built from the measurements failed validation (a bug or a
    /// nonsensical measurement; the problems are listed).
    #[error("the calibrated profile is invalid: {0}")]
    Profile(#[from] profile::ProfileError),
}

impl From<GpuError> for CalibrateError {
    fn from(error: GpuError) -> Self {
        match error {
            GpuError::MissingLibrary {
                library,
                stage,
                hint,
            } => CalibrateError::MissingLibrary {
                library,
                stage,
                hint,
            },
            GpuError::Cuda { context, source } => CalibrateError::Cuda { context, source },
            GpuError::Cublas { context, source } => CalibrateError::Cublas { context, source },
            GpuError::Nvrtc { context, message } => CalibrateError::Nvrtc { context, message },
            GpuError::TooLarge { what, value, limit } => {
                CalibrateError::TooLarge { what, value, limit }
            }
            GpuError::InvalidShape { problem } => CalibrateError::InvalidOptions {
                problems: vec![problem],
            },
        }
    }
}

/// Adds context to NCCL results (NCCL's error type has no `Display`).
pub(crate) trait NcclContextExt<T> {
    fn nccl(self, context: impl FnOnce() -> String) -> Result<T, CalibrateError>;
}

impl<T> NcclContextExt<T> for Result<T, cudarc::nccl::result::NcclError> {
    fn nccl(self, context: impl FnOnce() -> String) -> Result<T, CalibrateError> {
        self.map_err(|error| CalibrateError::Nccl {
            context: context(),
            code: format!("{:?}", error.0),
        })
    }
}
