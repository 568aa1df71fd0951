//! The calibration run: checks for a GPU before touching CUDA, runs each
//! stage in a fixed order (GEMM, kernel overhead, FP8 GEMM, memory, PCIe,
//! collectives, CPU Adam), reports progress, and hands the findings to the profile writer.
//! The GPUs' clocks, power and temperature are read before the first GPU
//! stage and right after the last one (not after the CPU Adam stage, during
//! which the GPUs idle back down).

use crate::error::CalibrateError;
use crate::findings::Findings;
use crate::options::{CalibrateOptions, Progress};
use crate::profile_writer;
use crate::{
    collectives, collectives_stage, cpu_adam, gemm, gemm_fp8, gpu_state, memory_bandwidth, pcie,
    provenance, sustained,
};
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaContext;
use gpu::detect::{open_device, CudaLibrary, Device};
use gpu::error::{CublasContextExt, GpuError};
use half::{bf16, f16};
use profile::{Profile, Provenance};

/// Empty kernels averaged per launch-gap sample, and samples (median kept).
const KERNEL_OVERHEAD_LAUNCHES: u32 = 100;
const KERNEL_OVERHEAD_REPEATS: u32 = 5;

/// Runs a calibration and returns the profile; `progress` is called as each
/// step of each stage finishes (starting with `done: 0`).
///
/// Without a loadable CUDA driver this returns [`CalibrateError::NoGpu`]
/// before any CUDA call, unless `options.cpu_only`.
pub fn run(
    options: &CalibrateOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Profile, CalibrateError> {
    options.validate()?;
    if options.cpu_only {
        let base = profile_writer::base_profile(None, options.base_profile.as_deref())?;
        let mut findings = Findings::default();
        run_cpu_adam(options, &mut findings, progress)?;
        findings
            .remarks
            .push("CPU-only run: no GPU quantity was measured".into());
        findings
            .remarks
            .push("FP8 GEMMs not timed: CPU-only run; gemm.fp8_relative_efficiency keeps the base profile's value".into());
        let provenance = Provenance {
            host_cpu: provenance::host_cpu(),
            repeats: Some(options.cpu_adam_repeats()),
            ..Provenance::default()
        };
        return profile_writer::write_profile(
            base,
            findings,
            provenance,
            options.effective_warmup(),
        );
    }

    let device_count = require_gpu()?;
    let gpu_state_before = gpu_state::read_gpu_state();
    CudaLibrary::Cublas.require("GEMM timing")?;
    CudaLibrary::Nvrtc.require("the timing gate kernels")?;
    let devices = (0..device_count)
        .map(open_device)
        .collect::<Result<Vec<Device>, GpuError>>()?;
    let primary = &devices[0];
    let base =
        profile_writer::base_profile(Some(&primary.info.name), options.base_profile.as_deref())?;
    let mut findings = Findings::default();
    if devices.iter().any(|d| d.info.name != primary.info.name) {
        findings.remarks.push(format!(
            "local GPUs differ ({}); single-GPU stages ran on GPU 0",
            devices
                .iter()
                .map(|d| d.info.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }

    let blas =
        CudaBlas::new(primary.stream.clone()).cublas(|| "creating a cuBLAS handle".into())?;
    run_gemm(options, primary, &blas, &mut findings, progress)?;
    run_sustained(options, primary, &blas, &mut findings, progress);
    let cublas_version = gemm::cublas_version();
    drop(blas);
    let datasheet = base
        .detected
        .as_ref()
        .and_then(|gpu| gpu.datasheet.as_ref());
    run_gemm_fp8(options, primary, datasheet, &mut findings, progress);
    run_memory(options, primary, &mut findings, progress)?;
    run_pcie(options, primary, &mut findings, progress)?;
    let nccl_version = run_collectives(options, &devices, &mut findings, progress)?;
    let gpu_state_after = gpu_state::read_gpu_state();
    run_cpu_adam(options, &mut findings, progress)?;

    let provenance = Provenance {
        gpu_name: Some(primary.info.name.clone()),
        sm_count: Some(primary.info.sm_count),
        clock_mhz: Some(primary.info.clock_mhz),
        driver_version: provenance::nvidia_driver_version(),
        cuda_version: provenance::cuda_driver_api_version().map(|v| format!("{v} (driver API)")),
        cublas_version,
        nccl_version,
        host_cpu: provenance::host_cpu(),
        repeats: Some(options.effective_repeats()),
        gpu_state_before: Some(gpu_state_before),
        gpu_state_after: Some(gpu_state_after),
        ..Provenance::default()
    };
    profile_writer::write_profile(base, findings, provenance, options.effective_warmup())
}

/// The one-line message for a machine without a usable CUDA driver.
const NO_DRIVER_MESSAGE: &str = "no CUDA driver found (libcuda.so could not be loaded); calibrate needs an NVIDIA GPU — run with --cpu-only to time the CPU optimizer alone";

/// Checks the driver can be loaded and sees at least one device; returns the
/// device count. Call before creating any context.
fn require_gpu() -> Result<usize, CalibrateError> {
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

/// Reports progress of one stage as a counter.
struct StageProgress<'a> {
    stage: &'static str,
    done: u64,
    total: u64,
    sink: &'a mut dyn FnMut(Progress),
}

impl<'a> StageProgress<'a> {
    fn start(stage: &'static str, total: usize, sink: &'a mut dyn FnMut(Progress)) -> Self {
        let mut this = Self {
            stage,
            done: 0,
            total: total as u64,
            sink,
        };
        this.report();
        this
    }
    fn report(&mut self) {
        (self.sink)(Progress {
            stage: self.stage.into(),
            done: self.done,
            total: self.total,
        });
    }
    fn step(&mut self) {
        self.done = (self.done + 1).min(self.total);
        self.report();
    }
}

fn run_gemm(
    options: &CalibrateOptions,
    device: &Device,
    blas: &CudaBlas,
    findings: &mut Findings,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), CalibrateError> {
    // Each GEMM with the layout it is called in: the grid's, and the model's
    // in their roles' layouts.
    let mut shapes = gemm::grid_shapes(options.quick);
    if let Some(model) = &options.model {
        shapes.extend(gemm::model_gemm_shapes(
            model,
            options.microbatch_size as u64,
            options.tensor_parallel_degree(),
        ));
        shapes.sort();
        shapes.dedup();
    }
    let sweep = gemm::GemmSweep {
        warmup: options.effective_warmup(),
        repeats: options.effective_repeats(),
    };
    let mut stage = StageProgress::start("gemm bf16", shapes.len(), progress);
    let bf16_timings = gemm::time_shapes::<bf16>(device, blas, &shapes, sweep, || stage.step())?;
    let progress = stage.sink;
    let mut stage = StageProgress::start("gemm fp16", shapes.len(), progress);
    let fp16_timings = gemm::time_shapes::<f16>(device, blas, &shapes, sweep, || stage.step())?;
    let progress = stage.sink;
    for timings in [bf16_timings, fp16_timings] {
        record_gemm_timings(findings, timings, "GEMMs not timed for lack of memory");
    }
    let mut stage = StageProgress::start("kernel overhead", 1, progress);
    findings.kernel_overhead_ns = Some(gpu::timing::launch_gap_ns(
        &device.stream,
        KERNEL_OVERHEAD_LAUNCHES,
        KERNEL_OVERHEAD_REPEATS,
    )?);
    findings.kernel_overhead_launches = KERNEL_OVERHEAD_LAUNCHES;
    stage.step();
    findings.stages.push(if options.model.is_some() {
        "gemm (model shapes + grid, bf16 and fp16)".into()
    } else {
        "gemm (grid, bf16 and fp16)".into()
    });
    findings.stages.push("kernel overhead".into());
    Ok(())
}

/// The sustained stage ([`sustained::run_sustained`]); a failure is a remark
/// and the run goes on (the ratio then comes from the grid's long GEMMs or
/// the base profile).
fn run_sustained(
    options: &CalibrateOptions,
    device: &Device,
    blas: &CudaBlas,
    findings: &mut Findings,
    progress: &mut dyn FnMut(Progress),
) {
    if options.skip_sustained {
        return;
    }
    let seconds = if options.quick {
        sustained::QUICK_SECONDS
    } else {
        sustained::FULL_SECONDS
    };
    let mut stage = StageProgress::start("sustained gemm", 1, progress);
    match sustained::run_sustained(device, blas, seconds) {
        Ok(run) => {
            findings.sustained = Some(run);
            findings
                .stages
                .push(format!("sustained GEMM ({seconds} s back to back)"));
        }
        Err(error) => findings
            .remarks
            .push(format!("the sustained stage was not recorded: {error}")),
    }
    stage.step();
}

/// The entries of one GEMM sweep, and remarks for what it skipped
/// (`skipped_title`: why) and what may be L2-resident.
fn record_gemm_timings(findings: &mut Findings, timings: gemm::GemmTimings, skipped_title: &str) {
    findings.gemm.extend(timings.measured);
    if !timings.skipped.is_empty() {
        findings
            .remarks
            .push(format!("{skipped_title}: {}", timings.skipped.join(", ")));
    }
    if !timings.maybe_l2_resident.is_empty() {
        findings.remarks.push(format!(
            "GEMM entries that may be L2-resident (free memory allowed no buffer rotation above twice the L2): {}",
            timings.maybe_l2_resident.join(", ")
        ));
    }
}

/// FP8 GEMMs through cuBLASLt, on GPUs with FP8 tensor cores
/// ([`gemm_fp8::fp8_skip_reason`]). Like NCCL errors, a failure is a
/// remark and the run goes on (no FP8 entry is then written).
fn run_gemm_fp8(
    options: &CalibrateOptions,
    device: &Device,
    datasheet: Option<&topologies::Datasheet>,
    findings: &mut Findings,
    progress: &mut dyn FnMut(Progress),
) {
    if let Some(reason) = gemm_fp8::fp8_skip_reason(
        options.skip_fp8,
        &device.info.name,
        datasheet,
        device.info.compute_capability,
        gpu::gemm_fp8::cublaslt_present(),
    ) {
        findings.remarks.push(reason);
        return;
    }
    let model = options.model.as_ref().map(|model| {
        (
            model,
            options.microbatch_size as u64,
            options.tensor_parallel_degree(),
        )
    });
    let cases = gemm_fp8::fp8_cases(options.quick, model);
    let sweep = gemm::GemmSweep {
        warmup: options.effective_warmup(),
        repeats: options.effective_repeats(),
    };
    let mut stage = StageProgress::start("gemm fp8", cases.len(), progress);
    let timings = gpu::gemm_fp8::LtContext::new(device.stream.clone())
        .map_err(CalibrateError::from)
        .and_then(|context| {
            gemm_fp8::time_fp8_shapes(device, &context, &cases, sweep, || stage.step())
        });
    match timings {
        Ok(timings) => {
            record_gemm_timings(findings, timings, "FP8 GEMMs not timed");
            findings.stages.push(if options.model.is_some() {
                "gemm fp8 (cuBLASLt, TN, E4M3/E5M2 by role, bf16 out; model's FP8 layers + 8192^3/16384^3)".into()
            } else {
                "gemm fp8 (cuBLASLt, TN, E4M3, bf16 out; squares)".into()
            });
        }
        Err(error) => findings.remarks.push(format!(
            "FP8 GEMMs not timed: {error}; gemm.fp8_relative_efficiency keeps the base profile's value"
        )),
    }
}

fn run_memory(
    options: &CalibrateOptions,
    device: &Device,
    findings: &mut Findings,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), CalibrateError> {
    let sizes = memory_bandwidth::copy_sizes_bytes(options.quick);
    let (warmup, repeats) = (options.effective_warmup(), options.effective_repeats());
    let mut stage = StageProgress::start("memory copy", sizes.len(), progress);
    let copies = memory_bandwidth::time_copies(device, &sizes, warmup, repeats, || stage.step())?;
    if copies.len() < sizes.len() {
        findings.remarks.push(format!(
            "{} of {} copy sizes not timed for lack of free GPU memory",
            sizes.len() - copies.len(),
            sizes.len()
        ));
    }
    findings.memory.extend(copies);
    findings.stages.push("device-to-device copies".into());
    let progress = stage.sink;
    // The kernel classes: a class that fails to compile, run or match its
    // CPU reference is a remark and the run goes on.
    use crate::{memory_classes, memory_plans};
    let classes = models::memory_class::MemoryKernelClass::ALL;
    let total = classes
        .iter()
        .map(|&class| memory_plans::sizes(class, options.quick).len())
        .sum();
    let mut stage = StageProgress::start("memory kernels", total, progress);
    let mut timed = Vec::new();
    for class in classes {
        let sizes = memory_plans::sizes(class, options.quick);
        let mut done = 0;
        let result = memory_classes::measure_class(device, class, &sizes, warmup, repeats, || {
            done += 1;
            stage.step();
        });
        for _ in done..sizes.len() {
            stage.step();
        }
        match result {
            Ok(timings) => {
                if !timings.measured.is_empty() {
                    timed.push(class.name());
                }
                findings.memory.extend(timings.measured);
                if !timings.skipped.is_empty() {
                    findings.remarks.push(format!(
                        "{} sizes not timed: {}",
                        class.name(),
                        timings.skipped.join(", ")
                    ));
                }
            }
            Err(error) => findings.remarks.push(format!(
                "memory kernel class {} not timed: {error}",
                class.name()
            )),
        }
    }
    if !timed.is_empty() {
        findings.stages.push(format!(
            "NVRTC memory-bound kernel classes ({})",
            timed.join(", ")
        ));
    }
    Ok(())
}

fn run_pcie(
    options: &CalibrateOptions,
    device: &Device,
    findings: &mut Findings,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), CalibrateError> {
    let sizes = pcie::sizes_bytes(options.quick);
    let mut stage = StageProgress::start("pcie", sizes.len() * 5, progress);
    findings.pcie = pcie::time_transfers(
        device,
        &sizes,
        options.effective_warmup(),
        options.effective_repeats(),
        || stage.step(),
    )?;
    findings.stages.push("PCIe copies".into());
    Ok(())
}

/// Returns the NCCL version when NCCL was loaded. An NCCL error becomes a
/// remark and the run goes on ([`collectives_stage::record_collectives`]).
fn run_collectives(
    options: &CalibrateOptions,
    devices: &[Device],
    findings: &mut Findings,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<String>, CalibrateError> {
    if let Err(missing) = CudaLibrary::Nccl.require("collectives") {
        findings
            .remarks
            .push(format!("collectives not timed: {missing}"));
        return Ok(None);
    }
    let sizes = collectives::sizes_bytes(options.quick);
    let mut stage = StageProgress::start(
        "collectives",
        sizes.len() * collectives::Collective::ALL.len(),
        progress,
    );
    let (warmup, repeats) = (options.effective_warmup(), options.effective_repeats());
    collectives_stage::record_collectives(findings, &sizes, devices.len() as u32, |measured| {
        collectives::time_collectives(devices, &sizes, warmup, repeats, || stage.step(), measured)
    })?;
    Ok(collectives::nccl_version())
}

fn run_cpu_adam(
    options: &CalibrateOptions,
    findings: &mut Findings,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), CalibrateError> {
    let threads = cpu_adam::thread_counts(
        options
            .max_cpu_threads
            .unwrap_or_else(cpu_adam::host_threads),
    );
    let params = options.cpu_adam_params() as usize;
    let mut stage = StageProgress::start("cpu adam", threads.len(), progress);
    findings.cpu_adam = cpu_adam::measure(params, &threads, options.cpu_adam_repeats(), || {
        stage.step()
    })?;
    findings
        .stages
        .push(format!("CPU Adam over {params} parameters"));
    Ok(())
}
