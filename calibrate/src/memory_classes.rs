//! Timing the memory-bound kernel classes on the GPU: for each class, its
//! NVRTC kernels ([`crate::memory_kernels`]) are compiled for the device,
//! checked once against the CPU reference on a small size
//! ([`crate::memory_reference`]), then timed at every size of the run
//! ([`crate::memory_plans::sizes`]) and recorded as `memory.measured`
//! entries named after the class, with the bytes `models::ops` counts.
//!
//! Inputs are seeded random values (never zeros), one random chunk tiled
//! over each buffer. Each size rotates through as many buffer slots as make
//! the slots together exceed twice the L2 cache, so every repeat reads from
//! HBM; a size whose slots would take more than half the free memory is
//! skipped and named. Times are the median of event-timed repeats behind
//! the gate ([`gpu::timing::time_launches`]); a class with several launches
//! (the LayerNorm backward, the gradient norm) is timed as all of them.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use crate::error::CalibrateError;
use crate::memory_kernels;
use crate::memory_plans::{self, ClassSize, Fill, Plan, Scalar};
use crate::memory_reference::{self, BufferCheck};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, CudaView, LaunchConfig, PushKernelArg};
use gpu::detect::Device;
use gpu::error::{CudaContextExt, GpuError};
use gpu::timing::{self, Summary};
use models::memory_class::MemoryKernelClass;
use profile::{MemoryMeasurement, Source};
use std::sync::Arc;

/// Elements of the random chunk tiled over each input buffer.
const RANDOM_CHUNK_ELEMS: usize = 1 << 20;

/// Seed of the timed inputs (the size's index is added).
const TIMING_SEED: u64 = 0x6d65_6d6f_7279;

/// Seed of the check's inputs.
const CHECK_SEED: u64 = 0xc4ec_0001;

/// Largest relative error a checked output may have: bf16 rounding of the
/// output alone is about 2⁻⁹ ≈ 0.002; a wrong formula or index is far above.
pub const MAX_RELATIVE_ERROR: f64 = 1e-2;

/// A class's kernels compiled and loaded for one device.
pub struct ClassKernels {
    pub class: MemoryKernelClass,
    functions: Vec<CudaFunction>,
    /// e.g. "sm_90".
    pub architecture: String,
}

/// Compiles and loads the kernels of `class` for `device`.
pub fn load(device: &Device, class: MemoryKernelClass) -> Result<ClassKernels, GpuError> {
    let what = format!("the {} kernels", class.name());
    let module = gpu::kernels::compile_and_load_all(
        &device.ctx,
        &memory_kernels::source(class),
        memory_kernels::function_names(class),
        &what,
    )?;
    Ok(ClassKernels {
        class,
        functions: module.functions,
        architecture: module.architecture,
    })
}

/// One device allocation per buffer of a plan, holding all its slots.
struct DeviceBuffer {
    bytes: CudaSlice<u8>,
    slot_bytes: usize,
    rotates: bool,
}

impl DeviceBuffer {
    fn view(&self, slot: usize) -> CudaView<'_, u8> {
        let offset = if self.rotates {
            slot * self.slot_bytes
        } else {
            0
        };
        self.bytes.slice(offset..offset + self.slot_bytes)
    }
}

/// Enqueues the launches of `plan` on rotation slot `slot` (no synchronisation).
fn launch_plan(
    stream: &Arc<CudaStream>,
    kernels: &ClassKernels,
    plan: &Plan,
    buffers: &[DeviceBuffer],
    slot: usize,
    what: &str,
) -> Result<(), GpuError> {
    for spec in &plan.launches {
        let function = kernels
            .functions
            .get(spec.function)
            .ok_or_else(|| GpuError::Nvrtc {
                context: format!("launching {what}"),
                message: format!("the module has no function {}", spec.function),
            })?;
        let views: Vec<CudaView<'_, u8>> = spec
            .buffers
            .iter()
            .map(|&index| buffers[index].view(slot))
            .collect();
        let mut launch = stream.launch_builder(function);
        for view in &views {
            launch.arg(view);
        }
        for scalar in &spec.scalars {
            match scalar {
                Scalar::U32(value) => launch.arg(value),
                Scalar::U64(value) => launch.arg(value),
                Scalar::F32(value) => launch.arg(value),
            };
        }
        let config = LaunchConfig {
            grid_dim: spec.grid,
            block_dim: spec.block,
            shared_mem_bytes: spec.shared_mem_bytes,
        };
        // SAFETY: the arguments are the kernel's, in its order and types
        // (checked against the CUDA source by the plan tests); every buffer
        // view holds the elements the kernel indexes for this plan's size
        // (buffer lengths and launch geometry come from the same plan).
        unsafe { launch.launch(config) }
            .map(|_| ())
            .cuda(|| format!("launching {what}"))?;
    }
    Ok(())
}

/// Allocates `slots` rotation slots of every buffer and fills the inputs
/// with a random chunk tiled over them.
fn allocate(
    stream: &Arc<CudaStream>,
    plan: &Plan,
    slots: usize,
    seed: u64,
    what: &str,
) -> Result<Vec<DeviceBuffer>, GpuError> {
    let mut buffers = Vec::with_capacity(plan.buffers.len());
    for (index, spec) in plan.buffers.iter().enumerate() {
        let slot_bytes = (spec.len * spec.elem.bytes()) as usize;
        let copies = if spec.rotates { slots } else { 1 };
        let mut bytes = stream
            .alloc_zeros::<u8>(slot_bytes * copies)
            .cuda(|| format!("allocating {} of the {what}", spec.role))?;
        if let Fill::Uniform { low, high } = spec.fill {
            let chunk = memory_reference::uniform_values(
                spec.elem,
                low,
                high,
                seed.wrapping_add(index as u64),
                (spec.len as usize).min(RANDOM_CHUNK_ELEMS),
            );
            gpu::gemm::fill_tiled(
                stream,
                &memory_reference::encode(spec.elem, &chunk),
                &mut bytes,
                what,
            )?;
        }
        buffers.push(DeviceBuffer {
            bytes,
            slot_bytes,
            rotates: spec.rotates,
        });
    }
    Ok(buffers)
}

/// Runs `plan` once on the check's host inputs (outputs poisoned) and
/// compares every checked buffer with the CPU reference.
pub fn check_plan(
    device: &Device,
    kernels: &ClassKernels,
    plan: &Plan,
) -> Result<Vec<BufferCheck>, CalibrateError> {
    let stream = &device.stream;
    let what = format!("the check of {}", plan.describe());
    let inputs = memory_reference::host_inputs(plan, CHECK_SEED);
    let mut buffers = Vec::with_capacity(plan.buffers.len());
    for (spec, values) in plan.buffers.iter().zip(&inputs) {
        let encoded = memory_reference::encode(spec.elem, values);
        let bytes = stream
            .clone_htod(&encoded)
            .cuda(|| format!("uploading {} for {what}", spec.role))?;
        buffers.push(DeviceBuffer {
            bytes,
            slot_bytes: encoded.len(),
            rotates: false,
        });
    }
    launch_plan(stream, kernels, plan, &buffers, 0, &what)?;
    stream
        .synchronize()
        .cuda(|| format!("waiting for {what}"))?;
    let mut outputs = Vec::new();
    for (index, spec) in plan.buffers.iter().enumerate() {
        if spec.checked {
            let bytes = stream
                .clone_dtoh(&buffers[index].bytes)
                .cuda(|| format!("reading {} back in {what}", spec.role))?;
            outputs.push((index, memory_reference::decode(spec.elem, &bytes)));
        }
    }
    stream
        .synchronize()
        .cuda(|| format!("reading back {what}"))?;
    Ok(memory_reference::compare(plan, &inputs, &outputs))
}

/// Checks a class's kernels at its check size (softmax with and without
/// the causal mask); returns every buffer's comparison, named by the plan.
pub fn check_class(
    device: &Device,
    kernels: &ClassKernels,
) -> Result<Vec<(String, BufferCheck)>, CalibrateError> {
    let class = kernels.class;
    let size = memory_plans::check_size(class);
    let variants: &[bool] = if class == MemoryKernelClass::Softmax {
        &[true, false]
    } else {
        &[true]
    };
    let mut checks = Vec::new();
    for &causal in variants {
        let plan = memory_plans::plan_with(class, size, device.info.sm_count, causal).map_err(
            |problem| CalibrateError::KernelCheck {
                what: format!("the {} kernels", class.name()),
                detail: problem,
            },
        )?;
        let name = if plan.causal {
            format!("{} (causal)", plan.describe())
        } else {
            plan.describe()
        };
        for check in check_plan(device, kernels, &plan)? {
            checks.push((name.clone(), check));
        }
    }
    Ok(checks)
}

/// Whether a buffer's comparison passes.
pub fn check_passes(check: &BufferCheck) -> bool {
    check.mismatches == 0 && check.relative_error < MAX_RELATIVE_ERROR
}

/// What timing one class produced.
#[derive(Debug, Default)]
pub struct ClassTimings {
    pub measured: Vec<MemoryMeasurement>,
    /// Sizes not timed, each with the reason.
    pub skipped: Vec<String>,
}

/// Compiles, checks and times `class` at `sizes`; `on_size` is called after
/// each size (timed or skipped). A kernel that fails its check is an error:
/// its timings would describe another computation.
pub fn measure_class(
    device: &Device,
    class: MemoryKernelClass,
    sizes: &[ClassSize],
    warmup: u32,
    repeats: u32,
    mut on_size: impl FnMut(),
) -> Result<ClassTimings, CalibrateError> {
    let kernels = load(device, class)?;
    let failed: Vec<String> = check_class(device, &kernels)?
        .into_iter()
        .filter(|(_, check)| !check_passes(check))
        .map(|(name, check)| {
            format!(
                "{name}: {} relative error {:.3e}, {} mask mismatches",
                check.role, check.relative_error, check.mismatches
            )
        })
        .collect();
    if !failed.is_empty() {
        return Err(CalibrateError::KernelCheck {
            what: format!("the {} kernels ({})", class.name(), kernels.architecture),
            detail: failed.join("; "),
        });
    }
    let stream = &device.stream;
    let mut timings = ClassTimings::default();
    for (number, &size) in sizes.iter().enumerate() {
        let plan = match memory_plans::plan(class, size, device.info.sm_count) {
            Ok(plan) => plan,
            Err(problem) => {
                timings.skipped.push(problem);
                on_size();
                continue;
            }
        };
        let what = plan.describe();
        let slots = memory_plans::rotation_slots(plan.slot_bytes(), device.info.l2_cache_bytes);
        let (free_bytes, _) = device
            .ctx
            .mem_get_info()
            .cuda(|| format!("querying free memory before the {what}"))?;
        let needed_bytes = plan.device_bytes(slots);
        if needed_bytes.saturating_mul(2) > free_bytes as u64 {
            timings.skipped.push(format!(
                "{what} (needs {needed_bytes} bytes, more than half of the {free_bytes} free)"
            ));
            on_size();
            continue;
        }
        let buffers = allocate(
            stream,
            &plan,
            slots as usize,
            TIMING_SEED.wrapping_add(number as u64),
            &what,
        )?;
        let samples = timing::time_launches(stream, warmup, repeats, &what, |i| {
            launch_plan(stream, &kernels, &plan, &buffers, i % slots as usize, &what)
        })?;
        if let Some(summary) = Summary::from_samples(&samples) {
            timings.measured.push(MemoryMeasurement {
                kernel: class.name().into(),
                bytes: plan.bytes,
                time_ns: summary.median_ns,
                source: Source::Measured,
            });
        }
        drop(buffers);
        stream
            .synchronize()
            .cuda(|| format!("freeing the buffers of the {what}"))?;
        on_size();
    }
    Ok(timings)
}
