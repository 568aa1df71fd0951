//! One GEMM through cuBLAS (`cublasGemmEx` / `cublasGemmStridedBatchedEx`
//! via cudarc), fp16 or bf16 inputs with fp32 accumulation
//! (`CUBLAS_COMPUTE_32F`): calibrate times these calls on a model's shapes
//! and a grid, the executor issues them for the GEMMs of a task.
//!
//! Shapes follow `models::ops`: `C[m,n] = A[m,k]·B[k,n]`, row-major, `batch`
//! times. cuBLAS is column-major, so each call computes Cᵀ = Bᵀ·Aᵀ as PyTorch
//! does for a row-major product: cuBLAS's A is our B and its B is our A.
//! The [`GemmLayout`] says how those operands are stored, and so which
//! `transa`/`transb` and leading dimensions the call gets ([`ColumnMajorCall`]):
//! a linear layer's forward runs TN, its data gradient NN, its weight
//! gradient NT, as Megatron issues them. C is always row-major m×n.
//!
//! Inputs are seeded random values (tensor-core timing and power depend on
//! the bits): one random chunk, tiled over every input buffer by
//! [`fill_tiled`].
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use crate::error::{CudaContextExt, GpuError};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits};
use models::ops::{GemmLayout, GemmShape};
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

/// Arguments of the column-major cuBLAS call computing a row-major shape in
/// a layout.
///
/// | layout letter | operand | stored row-major as | cuBLAS arguments |
/// |---|---|---|---|
/// | first N | our B | k×n | `transa` = N, `lda` = n |
/// | first T | our B | n×k | `transa` = T, `lda` = k |
/// | second N | our A | m×k | `transb` = N, `ldb` = k |
/// | second T | our A | k×m | `transb` = T, `ldb` = m |
///
/// C is m×n row-major (`ldc` = n) in every layout; batches are packed
/// (strides k·n, m·k, m·n), so the buffers have the same sizes whatever the
/// layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnMajorCall {
    pub layout: GemmLayout,
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
    /// The call for `shape` in `layout`, or an error when a dimension is
    /// zero or exceeds `i32`.
    pub fn for_shape(shape: &GemmShape, layout: GemmLayout) -> Result<Self, GpuError> {
        let int = |what: &str, value: u64| {
            i32::try_from(value).map_err(|_| GpuError::TooLarge {
                what: format!("GEMM {what} of {}", describe(shape)),
                value,
                limit: i32::MAX as u64,
            })
        };
        if shape.batch == 0 || shape.m == 0 || shape.n == 0 || shape.k == 0 {
            return Err(GpuError::InvalidShape {
                problem: format!("GEMM shape {} has a zero dimension", describe(shape)),
            });
        }
        let (m, n, k) = (int("m", shape.m)?, int("n", shape.n)?, int("k", shape.k)?);
        Ok(ColumnMajorCall {
            layout,
            m: n,
            n: m,
            k,
            lda: if layout.b_transposed() { k } else { n },
            ldb: if layout.a_transposed() { m } else { k },
            ldc: n,
            // Products of two i32 values always fit in i64.
            stride_a: k as i64 * n as i64,
            stride_b: m as i64 * k as i64,
            stride_c: m as i64 * n as i64,
            batch: int("batch", shape.batch)?,
        })
    }
}

/// cuBLAS's operation for an operand stored transposed or not.
fn operation(transposed: bool) -> cublasOperation_t {
    if transposed {
        cublasOperation_t::CUBLAS_OP_T
    } else {
        cublasOperation_t::CUBLAS_OP_N
    }
}

/// "batch×m×n×k", for messages.
pub fn describe(shape: &GemmShape) -> String {
    format!("{}x{}x{}x{}", shape.batch, shape.m, shape.n, shape.k)
}

/// Element types the GEMMs run in (calibrate times both).
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
pub const RANDOM_CHUNK_ELEMS: usize = 1 << 22;

/// Fills `buffer` with the random `chunk`, uploading it once and doubling the
/// filled prefix with device-to-device copies.
pub fn fill_tiled<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    chunk: &[T],
    buffer: &mut CudaSlice<T>,
    what: &str,
) -> Result<(), GpuError> {
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
pub struct BufferSet<T> {
    pub a: CudaSlice<T>,
    pub b: CudaSlice<T>,
    pub c: CudaSlice<T>,
}

/// Launches one GEMM (no synchronisation): `set.a` holds our A and `set.b`
/// our B, each stored as `call.layout` says; `set.c` receives row-major C.
///
/// # Safety
/// The buffers must hold at least `batch·m·k`, `batch·k·n`, `batch·m·n`
/// elements for the shape `call` was built from.
pub unsafe fn launch<T: GemmElement>(
    blas: &CudaBlas,
    call: &ColumnMajorCall,
    set: &mut BufferSet<T>,
) -> Result<(), cudarc::cublas::result::CublasError>
where
    CudaBlas: Gemm<T>,
{
    launch_on(blas, call, &set.a, &set.b, &mut set.c)
}

/// [`launch`] on any device memory (slices or views of a larger buffer):
/// `a` holds our A, `b` our B, `c` receives C.
///
/// # Safety
/// As [`launch`]: `a`, `b`, `c` must hold at least `batch·m·k`, `batch·k·n`,
/// `batch·m·n` elements for the shape `call` was built from.
pub unsafe fn launch_on<T, A, B, C>(
    blas: &CudaBlas,
    call: &ColumnMajorCall,
    a: &A,
    b: &B,
    c: &mut C,
) -> Result<(), cudarc::cublas::result::CublasError>
where
    T: GemmElement,
    A: DevicePtr<T>,
    B: DevicePtr<T>,
    C: DevicePtrMut<T>,
    CudaBlas: Gemm<T>,
{
    let gemm = GemmConfig {
        transa: operation(call.layout.b_transposed()),
        transb: operation(call.layout.a_transposed()),
        m: call.m,
        n: call.n,
        k: call.k,
        alpha: T::from_f32(1.0),
        lda: call.lda,
        ldb: call.ldb,
        beta: T::from_f32(0.0),
        ldc: call.ldc,
    };
    // cuBLAS's A is our B and its B our A (Cᵀ = Bᵀ·Aᵀ).
    if call.batch == 1 {
        blas.gemm(gemm, b, a, c)
    } else {
        let batched = StridedBatchedConfig {
            gemm,
            batch_size: call.batch,
            stride_a: call.stride_a,
            stride_b: call.stride_b,
            stride_c: call.stride_c,
        };
        blas.gemm_strided_batched(batched, b, a, c)
    }
}

#[cfg(test)]
mod device_tests;
#[cfg(test)]
pub(crate) mod reference;
#[cfg(test)]
mod tests;
