//! A CPU model of cuBLAS's strided-batched column-major GEMM with
//! transposes, and the row-major product it must reproduce: what the layout
//! tests (on the CPU, and on a GPU when there is one) hold
//! [`super::ColumnMajorCall`] against. Test code: it panics on a malformed
//! call instead of returning an error.

use super::ColumnMajorCall;
use models::ops::GemmShape;

/// cuBLAS's `gemmStridedBatched` with alpha 1 and beta 0, in f64: for each
/// batch i, C_i = op(A_i)·op(B_i), column-major, with op(X) = X for
/// `CUBLAS_OP_N` and Xᵀ for `CUBLAS_OP_T`. `a` and `b` are cuBLAS's operands
/// (our B and our A). Panics where cuBLAS would return
/// `CUBLAS_STATUS_INVALID_VALUE` (a leading dimension too small) and when an
/// element lies outside a buffer.
pub fn column_major_gemm(call: &ColumnMajorCall, a: &[f64], b: &[f64], c: &mut [f64]) {
    let size = |value: i32| usize::try_from(value).expect("non-negative call argument");
    let (m, n, k) = (size(call.m), size(call.n), size(call.k));
    let (lda, ldb, ldc) = (size(call.lda), size(call.ldb), size(call.ldc));
    let transa = call.layout.b_transposed();
    let transb = call.layout.a_transposed();
    assert!(lda >= if transa { k } else { m }.max(1), "lda {lda}");
    assert!(ldb >= if transb { n } else { k }.max(1), "ldb {ldb}");
    assert!(ldc >= m.max(1), "ldc {ldc}");
    let stride = |value: i64| usize::try_from(value).expect("non-negative stride");
    for batch in 0..size(call.batch) {
        let a_at = batch * stride(call.stride_a);
        let b_at = batch * stride(call.stride_b);
        let c_at = batch * stride(call.stride_c);
        for j in 0..n {
            for i in 0..m {
                let mut sum = 0.0;
                for p in 0..k {
                    let op_a = if transa {
                        a[a_at + p + i * lda]
                    } else {
                        a[a_at + i + p * lda]
                    };
                    let op_b = if transb {
                        b[b_at + j + p * ldb]
                    } else {
                        b[b_at + p + j * ldb]
                    };
                    sum += op_a * op_b;
                }
                c[c_at + i + j * ldc] = sum;
            }
        }
    }
}

/// The buffer holding `batch` packed row-major rows×cols matrices `x` as a
/// layout stores them: as they are, or each transposed (cols×rows row-major).
pub fn stored(x: &[f64], batch: usize, rows: usize, cols: usize, transposed: bool) -> Vec<f64> {
    assert_eq!(x.len(), batch * rows * cols);
    if !transposed {
        return x.to_vec();
    }
    let mut out = vec![0.0; x.len()];
    for matrix in 0..batch {
        let at = matrix * rows * cols;
        for row in 0..rows {
            for col in 0..cols {
                out[at + col * rows + row] = x[at + row * cols + col];
            }
        }
    }
    out
}

/// Row-major C[m,n] = A[m,k]·B[k,n], `batch` times, from row-major A and B.
pub fn row_major_product(shape: &GemmShape, a: &[f64], b: &[f64]) -> Vec<f64> {
    let (batch, m, n, k) = (
        shape.batch as usize,
        shape.m as usize,
        shape.n as usize,
        shape.k as usize,
    );
    assert_eq!(a.len(), batch * m * k);
    assert_eq!(b.len(), batch * k * n);
    let mut c = vec![0.0; batch * m * n];
    for matrix in 0..batch {
        let (a_at, b_at, c_at) = (matrix * m * k, matrix * k * n, matrix * m * n);
        for row in 0..m {
            for col in 0..n {
                c[c_at + row * n + col] = (0..k)
                    .map(|p| a[a_at + row * k + p] * b[b_at + p * n + col])
                    .sum();
            }
        }
    }
    c
}

/// ‖got − expected‖_F ÷ ‖expected‖_F; NaN when `got` holds a NaN (so a
/// `< bound` check fails on it).
pub fn relative_frobenius_error(got: &[f64], expected: &[f64]) -> f64 {
    assert_eq!(got.len(), expected.len());
    let squared = |values: &mut dyn Iterator<Item = f64>| values.map(|v| v * v).sum::<f64>();
    let difference = squared(&mut got.iter().zip(expected).map(|(g, e)| g - e));
    let norm = squared(&mut expected.iter().copied());
    (difference / norm).sqrt()
}
