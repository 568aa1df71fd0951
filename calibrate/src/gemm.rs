//! GEMM timing through cuBLAS (`cublasGemmEx` / `cublasGemmStridedBatchedEx`
//! via cudarc), fp16 and bf16 inputs with fp32 accumulation
//! (`CUBLAS_COMPUTE_32F`), on the exact shapes a model layout produces plus a
//! grid for interpolation.
//!
//! Shapes follow `models::ops`: `C[m,n] = A[m,k]·B[k,n]`, row-major, `batch`
//! times. cuBLAS is column-major, so each call computes Cᵀ = Bᵀ·Aᵀ with no
//! transposes (the layout PyTorch uses for a row-major `A @ B`); the backward
//! GEMMs are timed in the same NN layout as their listed shapes.
//!
//! Inputs are seeded random values (tensor-core timing and power depend on
//! the bits). Each shape rotates through several buffer sets, together at
//! least four times the L2 size, so repeats do not find their inputs in L2.

use crate::error::{CalibrateError, CublasContextExt, CudaContextExt};
use crate::gpu_detect::Device;
use crate::random;
use crate::timing::{self, Summary};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use models::ops::{GemmShape, KernelClass, PassSteps, Step};
use sim::profile::{GemmMeasurement, Source};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Input/output element type (accumulation is always fp32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GemmDtype {
    Fp16,
    Bf16,
}

impl GemmDtype {
    /// The name written to `GemmMeasurement::dtype`.
    pub fn name(self) -> &'static str {
        match self {
            GemmDtype::Fp16 => "fp16",
            GemmDtype::Bf16 => "bf16",
        }
    }
}

/// Every distinct GEMM shape of one transformer layer and of the head
/// (forward, data-gradient and weight-gradient), sorted.
pub fn model_gemm_shapes(
    model: &models::ModelSpec,
    microbatch: u64,
    tensor_parallel: u64,
) -> Vec<GemmShape> {
    let layer = models::ops::transformer_layer(model, microbatch, tensor_parallel);
    let head = models::ops::head(model, microbatch, tensor_parallel);
    let steps = |pass: &PassSteps| -> Vec<Step> {
        pass.forward
            .iter()
            .chain(pass.backward.iter())
            .cloned()
            .collect()
    };
    let shapes: BTreeSet<GemmShape> = steps(&layer)
        .into_iter()
        .chain(steps(&head))
        .filter_map(|step| match step {
            Step::Kernel(kernel) => match kernel.class {
                KernelClass::Gemm(shape) => Some(shape),
                KernelClass::MemoryBound => None,
            },
            Step::TensorAllReduce { .. } => None,
        })
        .collect();
    shapes.into_iter().collect()
}

/// Shapes for interpolation: squares, and (full run) every combination of
/// three sizes per dimension. Sorted, no duplicates.
pub fn grid_shapes(quick: bool) -> Vec<GemmShape> {
    let shape = |m, n, k| GemmShape { batch: 1, m, n, k };
    let mut shapes = BTreeSet::new();
    let squares: &[u64] = if quick {
        &[1024, 4096, 8192]
    } else {
        &[512, 1024, 2048, 4096, 8192, 16384]
    };
    for &size in squares {
        shapes.insert(shape(size, size, size));
    }
    if !quick {
        let sides = [1024, 4096, 16384];
        for m in sides {
            for n in sides {
                for k in sides {
                    shapes.insert(shape(m, n, k));
                }
            }
        }
    }
    shapes.into_iter().collect()
}

/// The largest square single GEMM among `measured` of this dtype, with its
/// achieved FLOP/s.
pub fn largest_square(
    measured: &[GemmMeasurement],
    dtype: GemmDtype,
) -> Option<(&GemmMeasurement, f64)> {
    measured
        .iter()
        .filter(|g| g.dtype == dtype.name() && g.batch == 1 && g.m == g.n && g.n == g.k)
        .max_by_key(|g| g.m)
        .map(|g| {
            let flops = 2.0 * g.m as f64 * g.n as f64 * g.k as f64;
            (g, flops / (g.time_ns as f64 * 1e-9))
        })
}

/// Arguments of the column-major cuBLAS call computing a row-major shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnMajorCall {
    /// cuBLAS m, n, k: (shape.n, shape.m, shape.k).
    pub m: i32,
    pub n: i32,
    pub k: i32,
    /// Leading dimensions of cuBLAS's A (our B), B (our A) and C.
    pub lda: i32,
    pub ldb: i32,
    pub ldc: i32,
    /// Element strides between batches of cuBLAS's A, B and C.
    pub stride_a: i64,
    pub stride_b: i64,
    pub stride_c: i64,
    pub batch: i32,
}

impl ColumnMajorCall {
    /// The call for `shape`, or an error when a dimension exceeds `i32`.
    pub fn for_shape(shape: &GemmShape) -> Result<Self, CalibrateError> {
        let int = |what: &str, value: u64| {
            i32::try_from(value).map_err(|_| CalibrateError::TooLarge {
                what: format!("GEMM {what} of {}", describe(shape)),
                value,
                limit: i32::MAX as u64,
            })
        };
        if shape.batch == 0 || shape.m == 0 || shape.n == 0 || shape.k == 0 {
            return Err(CalibrateError::InvalidOptions {
                problems: vec![format!(
                    "GEMM shape {} has a zero dimension",
                    describe(shape)
                )],
            });
        }
        Ok(ColumnMajorCall {
            m: int("n", shape.n)?,
            n: int("m", shape.m)?,
            k: int("k", shape.k)?,
            lda: int("n", shape.n)?,
            ldb: int("k", shape.k)?,
            ldc: int("n", shape.n)?,
            stride_a: (shape.k * shape.n) as i64,
            stride_b: (shape.m * shape.k) as i64,
            stride_c: (shape.m * shape.n) as i64,
            batch: int("batch", shape.batch)?,
        })
    }
}

/// "batch×m×n×k", for messages.
pub fn describe(shape: &GemmShape) -> String {
    format!("{}x{}x{}x{}", shape.batch, shape.m, shape.n, shape.k)
}

/// Element types cuBLAS times here.
pub trait GemmElement: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync + 'static {
    const DTYPE: GemmDtype;
    fn from_f32(value: f32) -> Self;
}

impl GemmElement for half::f16 {
    const DTYPE: GemmDtype = GemmDtype::Fp16;
    fn from_f32(value: f32) -> Self {
        half::f16::from_f32(value)
    }
}

impl GemmElement for half::bf16 {
    const DTYPE: GemmDtype = GemmDtype::Bf16;
    fn from_f32(value: f32) -> Self {
        half::bf16::from_f32(value)
    }
}

/// Elements in the random chunk that is tiled over every input buffer.
pub(crate) const RANDOM_CHUNK_ELEMS: usize = 1 << 22;

/// Fills `buffer` with the random `chunk`, uploading it once and doubling the
/// filled prefix with device-to-device copies.
pub fn fill_tiled<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    chunk: &[T],
    buffer: &mut CudaSlice<T>,
    what: &str,
) -> Result<(), CalibrateError> {
    let len = buffer.len();
    let first = chunk.len().min(len);
    if first == 0 {
        return Ok(());
    }
    {
        let mut head = buffer.slice_mut(..first);
        stream
            .memcpy_htod(&chunk[..first], &mut head)
            .cuda(|| format!("uploading random inputs for {what}"))?;
    }
    let mut filled = first;
    while filled < len {
        let count = filled.min(len - filled);
        let (done, mut rest) = buffer.split_at_mut(filled);
        let source = done.slice(..count);
        let mut target = rest.slice_mut(..count);
        stream
            .memcpy_dtod(&source, &mut target)
            .cuda(|| format!("replicating random inputs for {what}"))?;
        filled += count;
    }
    Ok(())
}

/// One set of A, B, C buffers for a shape (also the executor's GEMM scratch).
pub(crate) struct BufferSet<T> {
    pub(crate) a: CudaSlice<T>,
    pub(crate) b: CudaSlice<T>,
    pub(crate) c: CudaSlice<T>,
}

/// Launches one GEMM (no synchronisation).
///
/// # Safety
/// The buffers must hold at least `batch·m·k`, `batch·k·n`, `batch·m·n`
/// elements for the shape `call` was built from.
pub(crate) unsafe fn launch<T: GemmElement>(
    blas: &CudaBlas,
    call: &ColumnMajorCall,
    set: &mut BufferSet<T>,
) -> Result<(), cudarc::cublas::result::CublasError>
where
    CudaBlas: Gemm<T>,
{
    let gemm = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: call.m,
        n: call.n,
        k: call.k,
        alpha: T::from_f32(1.0),
        lda: call.lda,
        ldb: call.ldb,
        beta: T::from_f32(0.0),
        ldc: call.ldc,
    };
    if call.batch == 1 {
        blas.gemm(gemm, &set.b, &set.a, &mut set.c)
    } else {
        let batched = StridedBatchedConfig {
            gemm,
            batch_size: call.batch,
            stride_a: call.stride_a,
            stride_b: call.stride_b,
            stride_c: call.stride_c,
        };
        blas.gemm_strided_batched(batched, &set.b, &set.a, &mut set.c)
    }
}

/// How a GEMM sweep runs.
#[derive(Debug, Clone, Copy)]
pub struct GemmSweep {
    pub warmup: u32,
    pub repeats: u32,
    /// Upper bound on buffer sets per shape.
    pub max_buffer_sets: usize,
}

/// Result of timing a list of shapes in one dtype.
#[derive(Debug, Default)]
pub struct GemmTimings {
    /// One entry per timed shape, in the order given.
    pub measured: Vec<GemmMeasurement>,
    /// Shapes not timed because one buffer set does not fit in free memory.
    pub skipped: Vec<String>,
}

/// Times every shape in `T`'s dtype; `on_shape` is called after each.
pub fn time_shapes<T: GemmElement>(
    device: &Device,
    blas: &CudaBlas,
    shapes: &[GemmShape],
    sweep: GemmSweep,
    mut on_shape: impl FnMut(),
) -> Result<GemmTimings, CalibrateError>
where
    CudaBlas: Gemm<T>,
{
    let dtype = T::DTYPE.name();
    let stream = &device.stream;
    let chunk: Vec<T> =
        random::signed_values(0x6e6d_6d00 + T::DTYPE as u64, RANDOM_CHUNK_ELEMS, 1.0)
            .into_iter()
            .map(T::from_f32)
            .collect();
    let element_bytes = std::mem::size_of::<T>() as u64;
    let rotation_bytes = 4 * device.info.l2_cache_bytes.max(1 << 20);
    let mut timings = GemmTimings::default();
    for shape in shapes {
        let what = format!("{dtype} GEMM {}", describe(shape));
        let call = ColumnMajorCall::for_shape(shape)?;
        let (a_len, b_len, c_len) = (
            shape.batch * shape.m * shape.k,
            shape.batch * shape.k * shape.n,
            shape.batch * shape.m * shape.n,
        );
        let set_bytes = (a_len + b_len + c_len) * element_bytes;
        let (free_bytes, _) = device
            .ctx
            .mem_get_info()
            .cuda(|| format!("querying free memory before {what}"))?;
        let budget_bytes = free_bytes as u64 / 2;
        if set_bytes > budget_bytes {
            timings.skipped.push(format!(
                "{what} ({set_bytes} bytes > half of {free_bytes} free)"
            ));
            on_shape();
            continue;
        }
        let sets = (rotation_bytes.div_ceil(set_bytes) as usize)
            .clamp(1, sweep.max_buffer_sets.max(1))
            .min((budget_bytes / set_bytes) as usize);
        let mut buffers = Vec::with_capacity(sets);
        for _ in 0..sets {
            let alloc = |len: u64, name: &str| {
                stream
                    .alloc_zeros::<T>(len as usize)
                    .cuda(|| format!("allocating {name} ({len} elements) for {what}"))
            };
            let mut set = BufferSet {
                a: alloc(a_len, "A")?,
                b: alloc(b_len, "B")?,
                c: alloc(c_len, "C")?,
            };
            fill_tiled(stream, &chunk, &mut set.a, &what)?;
            fill_tiled(stream, &chunk, &mut set.b, &what)?;
            buffers.push(set);
        }
        let samples = timing::time_launches(stream, sweep.warmup, sweep.repeats, &what, |i| {
            let set = &mut buffers[i % sets];
            // SAFETY: each buffer was allocated with exactly the lengths
            // `call` addresses (a_len, b_len, c_len above).
            unsafe { launch(blas, &call, set) }.cublas(|| format!("launching {what}"))
        })?;
        let summary = Summary::from_samples(&samples).expect("repeats ≥ 1 (validated)");
        timings.measured.push(GemmMeasurement {
            batch: shape.batch,
            m: shape.m,
            n: shape.n,
            k: shape.k,
            dtype: dtype.into(),
            time_ns: summary.median_ns,
            spread_ns: Some(summary.spread_ns),
            source: Source::Measured,
        });
        drop(buffers);
        stream
            .synchronize()
            .cuda(|| format!("freeing the buffers of {what}"))?;
        on_shape();
    }
    Ok(timings)
}

/// Back-to-back launches of a tiny GEMM (1×128×128×128 bf16) between two
/// events: the time per launch is the fixed cost every kernel pays.
pub fn kernel_overhead_ns(
    device: &Device,
    blas: &CudaBlas,
    launches: u32,
) -> Result<u64, CalibrateError> {
    let shape = GemmShape {
        batch: 1,
        m: 128,
        n: 128,
        k: 128,
    };
    let what = "the kernel-overhead GEMM (1x128x128x128 bf16)";
    let call = ColumnMajorCall::for_shape(&shape)?;
    let stream = &device.stream;
    let len = (128 * 128) as usize;
    let alloc = || {
        stream
            .alloc_zeros::<half::bf16>(len)
            .cuda(|| format!("allocating {what}"))
    };
    let mut set = BufferSet {
        a: alloc()?,
        b: alloc()?,
        c: alloc()?,
    };
    let launches = launches.max(1);
    let samples = timing::time_launches(stream, 1, 3, what, |_| {
        for _ in 0..launches {
            // SAFETY: every buffer holds 128·128 elements, as `call` needs.
            unsafe { launch(blas, &call, &mut set) }.cublas(|| format!("launching {what}"))?;
        }
        Ok(())
    })?;
    let summary = Summary::from_samples(&samples).expect("three samples");
    Ok((summary.median_ns / launches as u64).max(1))
}

/// "major.minor.patch" of the loaded cuBLAS.
pub fn cublas_version() -> Option<String> {
    use cudarc::cublas::sys::{cublasGetProperty, libraryPropertyType};
    let property = |kind: libraryPropertyType| {
        let mut value = 0;
        // SAFETY: writes one int; the library presence was checked by the caller.
        let status = unsafe { cublasGetProperty(kind, &mut value) };
        status.result().ok().map(|_| value)
    };
    Some(format!(
        "{}.{}.{}",
        property(libraryPropertyType::MAJOR_VERSION)?,
        property(libraryPropertyType::MINOR_VERSION)?,
        property(libraryPropertyType::PATCH_LEVEL)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_shapes_include_forward_and_both_backward_gemms_once() {
        let model = models::preset("gpt3-175b").unwrap();
        let shapes = model_gemm_shapes(&model, 1, 8);
        let qkv = GemmShape {
            batch: 1,
            m: 2048,
            n: 3 * 12288 / 8,
            k: 12288,
        };
        assert!(shapes.contains(&qkv));
        assert!(shapes.contains(&qkv.data_gradient()));
        assert!(shapes.contains(&qkv.weight_gradient()));
        let logits = GemmShape {
            batch: 1,
            m: 2048,
            n: 51200 / 8,
            k: 12288,
        };
        assert!(shapes.contains(&logits.weight_gradient()));
        let mut sorted = shapes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, shapes, "sorted and distinct");
    }

    #[test]
    fn row_major_shape_maps_to_the_transposed_column_major_call() {
        let call = ColumnMajorCall::for_shape(&GemmShape {
            batch: 3,
            m: 10,
            n: 20,
            k: 30,
        })
        .unwrap();
        assert_eq!((call.m, call.n, call.k), (20, 10, 30));
        assert_eq!((call.lda, call.ldb, call.ldc), (20, 30, 20));
        assert_eq!(
            (call.stride_a, call.stride_b, call.stride_c),
            (600, 300, 200)
        );
        assert_eq!(call.batch, 3);
        let too_big = ColumnMajorCall::for_shape(&GemmShape {
            batch: 1,
            m: 1 << 31,
            n: 1,
            k: 1,
        });
        assert!(matches!(too_big, Err(CalibrateError::TooLarge { .. })));
    }

    /// A CPU reference of the mapping: column-major Cᵀ = Bᵀ·Aᵀ over the
    /// row-major buffers equals the row-major product A·B.
    #[test]
    fn column_major_call_computes_the_row_major_product() {
        let (m, n, k) = (3usize, 4usize, 5usize);
        let a: Vec<f32> = (0..m * k).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32) * 0.5 - 2.0).collect();
        let call = ColumnMajorCall::for_shape(&GemmShape {
            batch: 1,
            m: m as u64,
            n: n as u64,
            k: k as u64,
        })
        .unwrap();
        // Column-major GEMM with cuBLAS's A = our B, cuBLAS's B = our A.
        let (cm, cn, ck) = (call.m as usize, call.n as usize, call.k as usize);
        let (lda, ldb, ldc) = (call.lda as usize, call.ldb as usize, call.ldc as usize);
        let mut c = vec![0.0f32; m * n];
        for j in 0..cn {
            for i in 0..cm {
                let mut sum = 0.0;
                for p in 0..ck {
                    sum += b[i + p * lda] * a[p + j * ldb];
                }
                c[i + j * ldc] = sum;
            }
        }
        for row in 0..m {
            for col in 0..n {
                let expected: f32 = (0..k).map(|p| a[row * k + p] * b[p * n + col]).sum();
                assert_eq!(c[row * n + col], expected);
            }
        }
    }

    #[test]
    fn largest_square_picks_the_biggest_square_of_the_dtype() {
        let entry = |m, n, k, dtype: &str, time_ns| GemmMeasurement {
            batch: 1,
            m,
            n,
            k,
            dtype: dtype.into(),
            time_ns,
            spread_ns: None,
            source: Source::Measured,
        };
        let measured = vec![
            entry(4096, 4096, 4096, "bf16", 200_000),
            entry(8192, 8192, 8192, "bf16", 1_400_000),
            entry(16384, 16384, 1024, "bf16", 100),
            entry(16384, 16384, 16384, "fp16", 100),
        ];
        let (largest, flops_per_s) = largest_square(&measured, GemmDtype::Bf16).unwrap();
        assert_eq!(largest.m, 8192);
        assert!((flops_per_s - 2.0 * 8192f64.powi(3) / 1.4e-3).abs() < 1.0);
        assert!(grid_shapes(true).len() < grid_shapes(false).len());
    }
}
