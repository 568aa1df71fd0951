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
//! | GEMM | cuBLAS fp16/bf16 GEMMs (fp32 accumulate) on the model's layer and head shapes, each in its role's layout (TN, NN, NT), plus a grid | [`gemm`] |
//! | FP8 GEMM | cuBLASLt FP8 GEMMs as Transformer Engine runs them (TN, E4M3 forward, E5M2 gradients, bf16 out) on the model's FP8 linear-layer shapes and 8192³/16384³, on GPUs with FP8 tensor cores; gives `gemm.fp8_relative_efficiency` | [`gemm_fp8`] |
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
//! ## Datasheets, bounds and remarks
//!
//! The driver's device name ("NVIDIA H100 80GB HBM3") picks the GPU's own
//! datasheet from `topologies::datasheets` and the embedded profile of that
//! GPU ([`base_profile`]; a stand-in of the nearest GPU when there is none,
//! said in the provenance). Efficiencies are the measured rates over that
//! datasheet, never another GPU's: a GPU the catalogue does not know is
//! measured, but its efficiencies are not computed and a remark says so.
//! Nothing is clamped: every measurement is held to the bounds of
//! [`plausibility`] (no efficiency above 1, a large GEMM at least 0.2 of
//! peak, a large copy at least 0.3 of HBM, PCIe from 1 to 128 GB/s,
//! collectives within what their bytes allow) and one out of bounds fails
//! the run with [`CalibrateError::Implausible`] naming it.
//!
//! What the run could not do or the reader should know (a skipped stage, an
//! NCCL error, a stand-in base) is a remark in `provenance.remarks`, which
//! `clustersim calibrate` also prints. An NCCL error in the collectives
//! stage is such a remark, and the run goes on ([`collectives_stage`]); when
//! NCCL loaded and reported none, every collective entry must be there. The
//! GPUs' clocks, power and temperature from `nvidia-smi` are recorded before
//! the first GPU stage and after the last ([`gpu_state`]), and the driver
//! version is read from `/proc/driver/nvidia/version` ([`provenance`]).
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
//! the profile's provenance (`provenance.remarks`) instead of failing the
//! whole run.
//!
//! ## Tests
//!
//! `cargo test -p calibrate` needs no GPU: Adam correctness and throughput,
//! the no-driver path, profile writing, every plausibility bound on crafted
//! findings, the NCCL-error remark through an injected failure, nvidia-smi
//! and driver-version parsing on captured text, and every pure helper. Tests that
//! need a GPU check for the driver and print "skipping: no CUDA driver".

pub mod base_profile;
pub mod collectives;
pub mod collectives_stage;
pub mod cpu_adam;
mod error;
pub mod findings;
pub mod gemm;
pub mod gemm_fp8;
pub mod gpu_state;
pub mod host_timing;
pub mod implausibility;
pub mod memory_bandwidth;
pub mod memory_classes;
pub mod memory_kernels;
pub mod memory_plans;
pub mod memory_reference;
mod options;
pub mod pcie;
pub mod plausibility;
pub mod profile_writer;
pub mod provenance;
mod run;
pub mod sustained;

pub use error::CalibrateError;
pub use gpu::GpuError;
pub use options::{CalibrateOptions, Progress};
pub use run::run;
