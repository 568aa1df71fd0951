//! One GEMM through cuBLAS (`cublasGemmEx` / `cublasGemmStridedBatchedEx`
//! via cudarc), fp16 or bf16 inputs with fp32 accumulation
//! (`CUBLAS_COMPUTE_32F`): calibrate times these calls on a model's shapes
//! and a grid, the executor issues them for the GEMMs of a task.
//!
//! Shapes follow `models::ops`: `C[m,n] = A[m,k]·B[k,n]`, row-major, `batch`
//! times. cuBLAS is column-major, so each call computes Cᵀ = Bᵀ·Aᵀ with no
//! transposes (the layout PyTorch uses for a row-major `A @ B`); the backward
//! GEMMs are run in the same NN layout as their listed shapes.
//!
//! Inputs are seeded random values (tensor-core timing and power depend on
//! the bits): one random chunk, tiled over every input buffer by
//! [`fill_tiled`].

use crate::error::{CudaContextExt, GpuError};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use models::ops::GemmShape;
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
    pub fn for_shape(shape: &GemmShape) -> Result<Self, GpuError> {
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

/// Launches one GEMM (no synchronisation).
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(matches!(too_big, Err(GpuError::TooLarge { .. })));
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
}
