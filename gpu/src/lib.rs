//! # gpu — what calibrate and the executor share about the GPU
//!
//! Two crates drive real GPUs: `calibrate` times them and writes a profile,
//! `executor` runs the simulator's task graph on them. This crate holds only
//! what both need, so neither depends on the other:
//!
//! | what | module |
//! |---|---|
//! | is a CUDA library loadable (without cudarc's panic), open a device and read its SM count, clock, memory, L2 | [`detect`] |
//! | CUDA-event timing of repeated launches behind a gate; the GPU-side launch gap; how many buffer slots rotate beyond L2; the median/IQR summary | [`timing`] |
//! | the gate (a `%globaltimer` wait kernel) and an empty kernel | [`gate`] |
//! | one cuBLAS GEMM of a row-major shape in its operand layout (TN, NN, NT column-major call, buffer sets, random inputs) | [`gemm`] |
//! | one FP8 GEMM through cuBLASLt as Transformer Engine issues it (E4M3/E5M2 by role, TN, bf16 out); the OCP FP8 encoder/decoder | [`gemm_fp8`] |
//! | seeded random inputs (SplitMix64) | [`random`] |
//! | find cuBLAS, NVRTC and NCCL (flags, env, loader, Python wheels) and the restart that makes cudarc load them | [`libraries`] |
//! | NVRTC-compile a kernel to a cubin for the device's own architecture, load it | [`kernels`] |
//! | the error of a failed CUDA, cuBLAS or NVRTC call, with context | [`error`] |
//!
//! Libraries are loaded at run time (cudarc's `dynamic-loading`), so this
//! builds and its tests run on a machine without CUDA. Only `gpu`,
//! `calibrate` and `executor` link cudarc; how to point it at CUDA and NCCL
//! from Python wheels is in the calibrate crate's docs.
//!
//! ```
//! use gpu::detect::CudaLibrary;
//! if !CudaLibrary::Driver.is_present() {
//!     println!("no CUDA driver: {} cannot be loaded", CudaLibrary::Driver.file_name());
//! }
//! ```

pub mod detect;
pub mod error;
pub mod gate;
pub mod gemm;
pub mod gemm_fp8;
pub mod kernels;
pub mod libraries;
pub mod random;
pub mod timing;

pub use error::GpuError;
