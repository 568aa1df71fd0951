//! FP8 GEMM timing through cuBLASLt ([`gpu::gemm_fp8`]), as Transformer
//! Engine runs a linear layer's GEMMs under `--precision fp8`: every FP8 GEMM
//! in the TN layout, E4M3 activations and weights, E5M2 output gradients,
//! bf16 output. Entries are written as `dtype: "fp8"`, `layout: "tn"`, which
//! is what the simulator's FP8 GEMM cost looks up first.
//!
//! Which GEMMs ([`fp8_cases`]): the `KernelClass::Fp8Gemm` kernels of the
//! model's layer as a `--precision fp8` scenario lowers it
//! (`models::fp8::fp8_layer` of the same layer the bf16 stage takes its
//! shapes from: QKV, projection, FC1, FC2, each forward, data gradient and
//! weight gradient), plus the squares of [`grid_fp8_shapes`]. Where two roles
//! share a shape the first (forward before data gradient before weight
//! gradient) is timed: a measurement is keyed by shape alone, and the roles
//! differ only in which operand is E5M2 and in the accumulation mode.
//!
//! Buffers rotate as the bf16 stage's do ([`crate::gemm::rotation`]): sets
//! of A, B (1 byte per element) and C (bf16) together above 2× (aiming at
//! 4×) the L2.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use crate::error::CalibrateError;
use crate::gemm::rotation;
use crate::gemm::{GemmSweep, GemmTimings};
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut};
use gpu::detect::Device;
use gpu::error::CudaContextExt;
use gpu::gemm::{describe, fill_tiled, RANDOM_CHUNK_ELEMS};
use gpu::gemm_fp8::format::Fp8Format;
use gpu::gemm_fp8::{random_codes, Fp8GemmPlan, Fp8Role, LtContext, FP8_DTYPE, FP8_LAYOUT};
use gpu::timing::{self, Summary};
use half::bf16;
use models::ops::{GemmShape, KernelClass, Step};
use profile::{GemmMeasurement, Source};
use std::collections::BTreeMap;
use std::sync::Arc;

/// An FP8 GEMM to time: its row-major shape and its role.
pub type Fp8Case = (GemmShape, Fp8Role);

/// Squares timed in FP8 besides the model's shapes (forward role): quick
/// runs stop at 8192³ as the bf16 grid does, full runs add 16384³, so the
/// largest FP8 square is the largest bf16 one and
/// `gemm.fp8_relative_efficiency` compares like with like.
pub fn grid_fp8_shapes(quick: bool) -> Vec<Fp8Case> {
    let sides: &[u64] = if quick { &[8192] } else { &[8192, 16384] };
    sides
        .iter()
        .map(|&side| {
            (
                GemmShape {
                    batch: 1,
                    m: side,
                    n: side,
                    k: side,
                },
                Fp8Role::Forward,
            )
        })
        .collect()
}

/// The FP8 GEMMs of one transformer layer of `model` as a `--precision fp8`
/// scenario runs them (the head stays bf16), each with its role; sorted by
/// shape, one per shape.
pub fn model_fp8_shapes(
    model: &models::ModelSpec,
    microbatch: u64,
    tensor_parallel: std::num::NonZeroU64,
) -> Vec<Fp8Case> {
    let layer = models::fp8::fp8_layer(models::ops::transformer_layer(
        model,
        microbatch,
        tensor_parallel,
    ));
    let cases = layer
        .forward
        .iter()
        .chain(layer.backward.iter())
        .filter_map(|step| match step {
            Step::Kernel(kernel) => match kernel.class {
                KernelClass::Fp8Gemm { shape, layout } => {
                    debug_assert_eq!(layout, FP8_LAYOUT);
                    Some((shape, Fp8Role::of_kernel(kernel.name)))
                }
                _ => None,
            },
            Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => None,
        });
    dedup_by_shape(cases)
}

/// One case per shape, the least role kept, sorted by shape.
fn dedup_by_shape(cases: impl IntoIterator<Item = Fp8Case>) -> Vec<Fp8Case> {
    let mut by_shape: BTreeMap<GemmShape, Fp8Role> = BTreeMap::new();
    for (shape, role) in cases {
        by_shape
            .entry(shape)
            .and_modify(|kept| *kept = (*kept).min(role))
            .or_insert(role);
    }
    by_shape.into_iter().collect()
}

/// Everything the FP8 stage times: the grid's squares and, with a model,
/// its layer's FP8 GEMMs; one per shape.
pub fn fp8_cases(
    quick: bool,
    model: Option<(&models::ModelSpec, u64, std::num::NonZeroU64)>,
) -> Vec<Fp8Case> {
    let mut cases = grid_fp8_shapes(quick);
    if let Some((model, microbatch, tensor_parallel)) = model {
        cases.extend(model_fp8_shapes(model, microbatch, tensor_parallel));
    }
    dedup_by_shape(cases)
}

/// Bytes each slot of an operand starts on (cuBLASLt picks kernels by
/// pointer alignment; FP8 needs at least 16).
const SLOT_ALIGN_BYTES: u64 = 256;

/// Elements of A, B (1 byte each) and C (2 bytes) per set, each rounded up
/// to a slot; saturating (such a shape is then skipped for memory).
pub fn fp8_slot_elems(shape: &GemmShape) -> [u64; 3] {
    let product = |x: u64, y: u64| shape.batch.saturating_mul(x).saturating_mul(y);
    let round = |elems: u64, bytes_per: u64| {
        elems
            .checked_next_multiple_of(SLOT_ALIGN_BYTES / bytes_per)
            .unwrap_or(u64::MAX)
    };
    [
        round(product(shape.m, shape.k), 1),
        round(product(shape.n, shape.k), 1),
        round(product(shape.m, shape.n), 2),
    ]
}

/// Bytes of one set (slots included); saturating.
pub fn fp8_set_bytes(shape: &GemmShape) -> u64 {
    let [a, b, c] = fp8_slot_elems(shape);
    a.saturating_add(b).saturating_add(c.saturating_mul(2))
}

/// `sets` copies of an FP8 GEMM's A and B (random codes of each operand's
/// format) and C, one allocation per operand.
struct Fp8Buffers {
    a: CudaSlice<u8>,
    b: CudaSlice<u8>,
    c: CudaSlice<bf16>,
    slots: [usize; 3],
    lens: [usize; 3],
    sets: usize,
}

impl Fp8Buffers {
    fn new(
        stream: &Arc<CudaStream>,
        shape: &GemmShape,
        sets: u64,
        chunks: (&[u8], &[u8]),
        what: &str,
    ) -> Result<Self, CalibrateError> {
        let sets = sets.max(1);
        let size = |value: u64| {
            usize::try_from(value).map_err(|_| {
                CalibrateError::Gpu(gpu::GpuError::TooLarge {
                    what: format!("the buffers of {what}"),
                    value,
                    limit: usize::MAX as u64,
                })
            })
        };
        let slots = fp8_slot_elems(shape);
        let product = |x: u64, y: u64| shape.batch.saturating_mul(x).saturating_mul(y);
        let lens = [
            product(shape.m, shape.k),
            product(shape.n, shape.k),
            product(shape.m, shape.n),
        ];
        let total = |slot: u64| size(slot.saturating_mul(sets));
        let allocate = |len: usize, name: &str| {
            stream
                .alloc_zeros::<u8>(len)
                .cuda(|| format!("allocating {sets} sets of {name} ({len} bytes) for {what}"))
        };
        let mut a = allocate(total(slots[0])?, "A")?;
        let mut b = allocate(total(slots[1])?, "B")?;
        let c_len = total(slots[2])?;
        let c = stream
            .alloc_zeros::<bf16>(c_len)
            .cuda(|| format!("allocating {sets} sets of C ({c_len} elements) for {what}"))?;
        fill_tiled(stream, chunks.0, &mut a, what)?;
        fill_tiled(stream, chunks.1, &mut b, what)?;
        Ok(Fp8Buffers {
            a,
            b,
            c,
            slots: [size(slots[0])?, size(slots[1])?, size(slots[2])?],
            lens: [size(lens[0])?, size(lens[1])?, size(lens[2])?],
            sets: size(sets)?,
        })
    }

    fn with_set<R>(
        &mut self,
        i: usize,
        launch: impl FnOnce(&CudaView<'_, u8>, &CudaView<'_, u8>, &mut CudaViewMut<'_, bf16>) -> R,
    ) -> R {
        let set = i % self.sets;
        let range = |operand: usize| {
            let start = set * self.slots[operand];
            start..start + self.lens[operand]
        };
        let (a_range, b_range, c_range) = (range(0), range(1), range(2));
        let a = self.a.slice(a_range);
        let b = self.b.slice(b_range);
        let mut c = self.c.slice_mut(c_range);
        launch(&a, &b, &mut c)
    }
}

/// Times every FP8 GEMM of `cases` in its role; `on_shape` is called after
/// each. A shape cuBLASLt has no FP8 algorithm for is listed in `skipped`
/// with cuBLASLt's answer; any other failure ends the stage with an error.
pub fn time_fp8_shapes(
    device: &Device,
    context: &LtContext,
    cases: &[Fp8Case],
    sweep: GemmSweep,
    mut on_shape: impl FnMut(),
) -> Result<GemmTimings, CalibrateError> {
    let stream = &device.stream;
    let chunk =
        |format: Fp8Format| random_codes(0xf8f8_0000 + format as u64, RANDOM_CHUNK_ELEMS, format);
    let (e4m3, e5m2) = (chunk(Fp8Format::E4M3), chunk(Fp8Format::E5M2));
    let chunk_of = |format: Fp8Format| match format {
        Fp8Format::E4M3 => e4m3.as_slice(),
        Fp8Format::E5M2 => e5m2.as_slice(),
    };
    let l2_bytes = device.info.l2_cache_bytes;
    let mut timings = GemmTimings::default();
    for &(shape, role) in cases {
        let what = format!(
            "fp8 {} GEMM {} ({})",
            FP8_LAYOUT.name(),
            describe(&shape),
            role.name()
        );
        let plan = match Fp8GemmPlan::new(context, &shape, role) {
            Ok(plan) => plan,
            Err(gpu::GpuError::CublasLt { source, .. }) => {
                timings
                    .skipped
                    .push(format!("{what} (cuBLASLt found no algorithm: {source})"));
                on_shape();
                continue;
            }
            Err(other) => return Err(other.into()),
        };
        let set_bytes = fp8_set_bytes(&shape);
        let (free_bytes, _) = device
            .ctx
            .mem_get_info()
            .cuda(|| format!("querying free memory before {what}"))?;
        let Some(rotation) = rotation::size_rotation(set_bytes, l2_bytes, free_bytes as u64) else {
            timings.skipped.push(format!(
                "{what} ({set_bytes} bytes > half of {free_bytes} free)"
            ));
            on_shape();
            continue;
        };
        if !rotation.exceeds_twice_l2 {
            timings.maybe_l2_resident.push(format!(
                "{what} ({} sets of {set_bytes} bytes, L2 {l2_bytes} bytes)",
                rotation.sets
            ));
        }
        let (a_format, b_format) = role.operand_formats();
        let mut buffers = Fp8Buffers::new(
            stream,
            &shape,
            rotation.sets,
            (chunk_of(a_format), chunk_of(b_format)),
            &what,
        )?;
        let samples = timing::time_launches(stream, sweep.warmup, sweep.repeats, &what, |i| {
            buffers.with_set(i, |a, b, c| {
                // SAFETY: each set's views hold exactly batch·m·k, batch·n·k
                // and batch·m·n elements, as the plan addresses; the plan was
                // built with `context`.
                unsafe { plan.launch(context, a, b, c) }
            })
        })?;
        let summary = Summary::from_samples(&samples).expect("repeats ≥ 1 (validated)");
        timings.measured.push(GemmMeasurement {
            batch: shape.batch,
            m: shape.m,
            n: shape.n,
            k: shape.k,
            dtype: FP8_DTYPE.into(),
            time_ns: summary.median_ns,
            spread_ns: Some(summary.spread_ns),
            source: Source::Measured,
            layout: Some(FP8_LAYOUT.name().into()),
        });
        drop(buffers);
        drop(plan);
        stream
            .synchronize()
            .cuda(|| format!("freeing the buffers of {what}"))?;
        on_shape();
    }
    Ok(timings)
}

/// Compute capability from which NVIDIA GPUs have FP8 tensor cores (Ada
/// 8.9, Hopper 9.0; CUDA C++ Programming Guide, "Compute Capabilities").
pub const MIN_FP8_COMPUTE_CAPABILITY: (i32, i32) = (8, 9);

/// Why the FP8 stage does not run, as a remark; `None` when it runs: not
/// when asked not to (`--no-fp8`), nor on a GPU whose datasheet has no FP8
/// peak (or that has no datasheet: nothing to hold the rates against), nor
/// below compute capability 8.9, nor without a loadable cuBLASLt.
pub fn fp8_skip_reason(
    skip_requested: bool,
    gpu_name: &str,
    datasheet: Option<&topologies::Datasheet>,
    compute_capability: (i32, i32),
    cublaslt_loadable: bool,
) -> Option<String> {
    let reason = if skip_requested {
        "--no-fp8 was given".to_string()
    } else if let Some(sheet) = datasheet {
        if sheet.gpu.peak.fp8_flops_per_s.is_none() {
            format!(
                "the {} datasheet has no FP8 tensor-core peak",
                sheet.gpu.name
            )
        } else if compute_capability < MIN_FP8_COMPUTE_CAPABILITY {
            format!(
                "{gpu_name} has compute capability {}.{}, below the {}.{} of FP8 tensor cores",
                compute_capability.0,
                compute_capability.1,
                MIN_FP8_COMPUTE_CAPABILITY.0,
                MIN_FP8_COMPUTE_CAPABILITY.1
            )
        } else if !cublaslt_loadable {
            "libcublasLt.so could not be loaded (it ships beside libcublas.so: put that directory on LD_LIBRARY_PATH or pass --cuda-lib-dir)".to_string()
        } else {
            return None;
        }
    } else {
        format!("{gpu_name} has no datasheet in the catalogue, so no FP8 peak to hold FP8 rates against")
    };
    Some(format!(
        "FP8 GEMMs not timed: {reason}; gemm.fp8_relative_efficiency keeps the base profile's value"
    ))
}

#[cfg(test)]
#[path = "gemm_fp8_tests.rs"]
mod tests;
