//! # calibrate — time the real hardware, write a calibration profile
//!
//! The simulator's cost model reads a [`profile::Profile`]: achieved
//! GEMM efficiency, HBM, NVLink and PCIe rates, kernel overhead and the CPU
//! Adam rate. This crate measures them on the machine it runs on and returns
//! the embedded default for the detected GPU with the measured entries added
//! (`source: measured`) and exactly the measured scalars replaced.
//!
//! | stage | what is timed | module |
//! |---|---|---|
//! | GEMM | cuBLAS fp16/bf16 GEMMs (fp32 accumulate) on the model's layer and head shapes plus a grid | [`gemm`] |
//! | memory | device-to-device copies over a size sweep | [`memory_bandwidth`] |
//! | memory kernels | NVRTC kernels of each memory-bound class (LayerNorm, softmax, dropout, bias-dropout-add, GeLU, SwiGLU, the optimizer's phases), checked against a CPU reference, at transformer sizes | [`memory_classes`] (timing), [`memory_kernels`] (CUDA source), [`memory_plans`] (sizes, launches, bytes), [`memory_reference`] (CPU reference) |
//! | PCIe | host↔device copies, pinned and pageable, each way and both at once | [`pcie`] |
//! | collectives | NCCL all-reduce, reduce-scatter, all-gather on all local GPUs | [`collectives`] |
//! | CPU Adam | a real multi-threaded fp32 Adam step vs thread count | [`cpu_adam`] |
//!
//! What calibration shares with the GPU executor (`clustersim execute`, the
//! `executor` crate) lives in the `gpu` crate: library checks and opening
//! devices ([`gpu::detect`]), CUDA-event timing ([`gpu::timing`]), the cuBLAS
//! GEMM call ([`gpu::gemm`]) and seeded inputs ([`gpu::random`]).
//!
//! GPU work is timed with CUDA events (timing enabled), after warm-up runs,
//! reporting the median of `repeats` (and the interquartile range for GEMMs).
//!
//! ```no_run
//! let options = calibrate::CalibrateOptions {
//!     quick: true,
//!     model: models::preset("gpt3-175b"),
//!     tensor_parallel: 8,
//!     ..Default::default()
//! };
//! let profile = calibrate::run(&options, &mut |p| {
//!     eprintln!("{} {}/{}", p.stage, p.done, p.total)
//! })?;
//! println!("{}", serde_json::to_string_pretty(&profile).unwrap());
//! # Ok::<(), calibrate::CalibrateError>(())
//! ```
//!
//! ## No GPU, no crash
//!
//! cudarc loads CUDA libraries at first use and panics if one is missing.
//! [`run`] first asks cudarc whether `libcuda.so` loads
//! (`cudarc::driver::sys::is_culib_present`) and returns
//! [`CalibrateError::NoGpu`] with one line if not; cuBLAS, NCCL and NVRTC are
//! checked the same way before their stage ([`gpu::detect::CudaLibrary`]).
//! With [`CalibrateOptions::cpu_only`] only the CPU Adam stage runs, on top
//! of the `h200` default unless [`CalibrateOptions::base_profile`] says
//! otherwise.
//!
//! ## CUDA and NCCL from Python wheels
//!
//! The binary is built with cudarc's `dynamic-loading`: nothing is linked,
//! libraries are found at run time through the normal `dlopen` search
//! (`LD_LIBRARY_PATH`, then the system cache). The driver (`libcuda.so`)
//! comes with the NVIDIA driver. cuBLAS, NCCL and NVRTC can come from the
//! pip wheels PyTorch installs (`nvidia-cublas-cu13`, `nvidia-nccl-cu13`,
//! `nvidia-cuda-nvrtc-cu13`, under `site-packages/nvidia/*/lib`).
//!
//! cudarc tries `libX.so`, then `libX.so.<CUDA major>` and a few older
//! majors, and `libX.so.1`. The NCCL wheel ships only `libnccl.so.2`, which
//! is none of those, so make a directory of unversioned symlinks and put it
//! on `LD_LIBRARY_PATH`:
//!
//! ```text
//! SP=$(python -c 'import site; print(site.getsitepackages()[0])')
//! mkdir -p ~/cuda-libs
//! ln -sf $SP/nvidia/nccl/lib/libnccl.so.2 ~/cuda-libs/libnccl.so
//! # only if the cuBLAS/NVRTC majors are not found by name (e.g. a CUDA 12 wheel):
//! ln -sf $SP/nvidia/cublas/lib/libcublas.so.12   ~/cuda-libs/libcublas.so
//! ln -sf $SP/nvidia/cublas/lib/libcublasLt.so.12 ~/cuda-libs/libcublasLt.so
//! ln -sf $SP/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 ~/cuda-libs/libnvrtc.so
//! export LD_LIBRARY_PATH=~/cuda-libs:$SP/nvidia/cublas/lib:$SP/nvidia/cuda_nvrtc/lib:$LD_LIBRARY_PATH
//! ```
//!
//! (With CUDA 13 wheels the directory may be `site-packages/nvidia/cu13/lib`;
//! `find $SP/nvidia -name 'libnccl.so*'` shows where they are.) A missing
//! library is reported as [`CalibrateError::Gpu(GpuError::MissingLibrary)`] naming the file
//! and the stage; a missing NCCL skips the collectives stage with a remark in
//! the profile's provenance instead of failing the whole run.
//!
//! ## Tests
//!
//! `cargo test -p calibrate` needs no GPU: Adam correctness and throughput,
//! the no-driver path, profile writing and every pure helper. Tests that
//! need a GPU check for the driver and print "skipping: no CUDA driver".

pub mod collectives;
pub mod cpu_adam;
mod error;
pub mod gemm;
pub mod host_timing;
pub mod memory_bandwidth;
pub mod memory_classes;
pub mod memory_kernels;
pub mod memory_plans;
pub mod memory_reference;
mod options;
pub mod pcie;
pub mod profile_writer;
pub mod provenance;
mod run;

pub use error::CalibrateError;
pub use gpu::GpuError;
pub use options::{CalibrateOptions, Progress};
pub use run::run;
