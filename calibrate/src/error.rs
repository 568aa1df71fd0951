//! Everything that can stop a calibration run, each with the context needed
//! to act on it (which stage, which shape or size, which library).
//!
//! No CUDA, cuBLAS, NCCL or NVRTC failure panics: every call is mapped into a
//! [`CalibrateError`] naming what was being done when it failed. Calls made
//! through the `gpu` crate fail as a [`GpuError`], wrapped as
//! [`CalibrateError::Gpu`] (same message, same source).

use crate::implausibility::Implausibility;
use gpu::GpuError;

/// Why calibration could not produce a profile.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// No usable CUDA driver or device; the string is one line for the user.
    #[error("{0}")]
    NoGpu(String),
    /// A CUDA, cuBLAS or NVRTC call shared with the executor failed, or a
    /// library it needs could not be loaded (the `gpu` crate's error, same message).
    #[error(transparent)]
    Gpu(GpuError),
    /// The sustained stage could not time enough windows.
    #[error("sustained stage: {0}")]
    Sustained(String),
    /// An NCCL call failed (NCCL's error code is given by name).
    #[error("NCCL error while {context}: {code}")]
    Nccl { context: String, code: String },
    /// A rayon thread pool for the CPU Adam sweep could not be built.
    #[error("cannot build a {threads}-thread pool for the CPU Adam benchmark: {message}")]
    ThreadPool { threads: usize, message: String },
    /// A kernel of calibrate's own disagreed with its CPU reference, so its
    /// timings would describe the wrong computation.
    #[error("{what} disagrees with its CPU reference: {detail}")]
    KernelCheck { what: String, detail: String },
    /// The options cannot describe a calibration run; every problem is listed.
    #[error("invalid calibrate options: {}", problems.join("; "))]
    InvalidOptions { problems: Vec<String> },
    /// The profile built from the measurements failed validation (a bug or a
    /// nonsensical measurement; the problems are listed).
    #[error("the calibrated profile is invalid: {0}")]
    Profile(#[from] profile::ProfileError),
    /// Measurements faster than the GPU's datasheet allows (an efficiency
    /// above 1, never clamped) or outside what a healthy machine shows: a
    /// broken timer, a wrong datasheet or GPU match, or a sick machine. Each
    /// names what was timed, its median time, its rate and the bound it
    /// broke ([`crate::plausibility`]); no profile is written.
    #[error(
        "{} measurement(s) cannot be right, so no profile was written: {}",
        problems.len(),
        problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    Implausible { problems: Vec<Implausibility> },
    /// NCCL loaded and reported no error, yet some collective entries were not
    /// measured (a bug in the stage: the missing ones are named).
    #[error(
        "NCCL loaded and reported no error, but {} of {expected} collective entries were not measured: {}",
        missing.len(),
        missing.join(", ")
    )]
    CollectivesIncomplete {
        expected: usize,
        missing: Vec<String>,
    },
}

impl From<GpuError> for CalibrateError {
    fn from(error: GpuError) -> Self {
        match error {
            // A shape no library call can take is an option the user chose.
            GpuError::InvalidShape { problem } => CalibrateError::InvalidOptions {
                problems: vec![problem],
            },
            other => CalibrateError::Gpu(other),
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
