//! A CPU reference of the FP8 TN GEMM, what the GPU test holds
//! [`super::Fp8GemmPlan`] against, and CPU tests that the reference and its
//! tolerance catch a wrong layout or a wrong format. Test code: panics on a
//! malformed input.
//!
//! Tolerance ([`MAX_RELATIVE_ERROR`]): the decoded FP8 inputs are exact, and
//! so is each product (at most 4 × 4 significant bits); the GPU accumulates
//! in fp32, or with fast accumulation in Hopper's reduced-precision
//! accumulator (about 14 bits kept: DeepSeek-V3 technical report, section
//! 3.3.2), a relative error near √k·2⁻¹⁴ ≈ 7e-4 at k = 128 for random signs;
//! rounding C to bf16 adds at most 2⁻⁹ ≈ 2e-3 per element. So the relative
//! Frobenius error of a right result is below 3e-3; 1e-2 leaves margin,
//! while a transposed operand or a format read as the other gives errors
//! near 1 (tested below).

use super::format::Fp8Format;
use crate::gemm::reference::relative_frobenius_error;
use models::ops::GemmShape;

/// Largest relative Frobenius error of the GPU's bf16 C accepted.
pub const MAX_RELATIVE_ERROR: f64 = 1e-2;

/// Row-major C[m,n] = A[m,k]·B[k,n] in f64, `batch` times, from FP8 codes:
/// `a` holds A row-major (m×k per batch) in `a_format`, `b` holds B stored
/// transposed (n×k row-major per batch, the TN layout) in `b_format`.
pub fn tn_product(
    shape: &GemmShape,
    a: &[u8],
    a_format: Fp8Format,
    b: &[u8],
    b_format: Fp8Format,
) -> Vec<f64> {
    let (batch, m, n, k) = (
        shape.batch as usize,
        shape.m as usize,
        shape.n as usize,
        shape.k as usize,
    );
    assert_eq!(a.len(), batch * m * k);
    assert_eq!(b.len(), batch * n * k);
    let decode = |codes: &[u8], format: Fp8Format| -> Vec<f64> {
        codes.iter().map(|&c| format.decode(c) as f64).collect()
    };
    let (a, b) = (decode(a, a_format), decode(b, b_format));
    assert!(a.iter().chain(&b).all(|v| v.is_finite()), "finite inputs");
    let mut c = vec![0.0; batch * m * n];
    for matrix in 0..batch {
        let (a_at, b_at, c_at) = (matrix * m * k, matrix * n * k, matrix * m * n);
        for row in 0..m {
            for col in 0..n {
                c[c_at + row * n + col] = (0..k)
                    .map(|p| a[a_at + row * k + p] * b[b_at + col * k + p])
                    .sum();
            }
        }
    }
    c
}

/// `values` rounded to bf16 (the GEMM's output type) and back.
pub fn bf16_rounded(values: &[f64]) -> Vec<f64> {
    values
        .iter()
        .map(|&v| half::bf16::from_f64(v).to_f64())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::random_codes;
    use super::*;
    use Fp8Format::{E4M3, E5M2};

    #[test]
    fn tn_product_matches_a_hand_computed_product() {
        // A = [[1, 2], [−0.5, 0.25]] (E4M3), B = [[1, 0, 2], [4, −1, 0.5]]
        // stored transposed: Bᵀ = [[1, 4], [0, −1], [2, 0.5]] (E5M2).
        let shape = GemmShape {
            batch: 1,
            m: 2,
            n: 3,
            k: 2,
        };
        let a: Vec<u8> = [1.0, 2.0, -0.5, 0.25].map(|v| E4M3.encode(v)).to_vec();
        let b: Vec<u8> = [1.0, 4.0, 0.0, -1.0, 2.0, 0.5]
            .map(|v| E5M2.encode(v))
            .to_vec();
        let c = tn_product(&shape, &a, E4M3, &b, E5M2);
        // Row 0: [1 + 8, −2, 2 + 1]; row 1: [−0.5 + 1, −0.25, −1 + 0.125].
        assert_eq!(c, vec![9.0, -2.0, 3.0, 0.5, -0.25, -0.875]);
    }

    #[test]
    fn the_tolerance_passes_rounding_and_fails_a_wrong_layout_or_format() {
        let shape = GemmShape {
            batch: 2,
            m: 64,
            n: 64,
            k: 128,
        };
        let a = random_codes(1, 2 * 64 * 128, E5M2);
        let b = random_codes(2, 2 * 64 * 128, E4M3);
        let exact = tn_product(&shape, &a, E5M2, &b, E4M3);
        // What a right GPU result differs by: bf16 output rounding.
        let rounded = bf16_rounded(&exact);
        let error = relative_frobenius_error(&rounded, &exact);
        assert!(error > 0.0 && error < 2f64.powi(-9), "{error}");
        assert!(error < MAX_RELATIVE_ERROR);
        // B stored k×n (as NN would) but read as TN's n×k: a different
        // product of the same bytes (square, so the sizes agree).
        let square = GemmShape {
            batch: 1,
            m: 64,
            n: 64,
            k: 64,
        };
        let (a2, b2) = (
            random_codes(3, 64 * 64, E4M3),
            random_codes(4, 64 * 64, E4M3),
        );
        let mut b2_transposed = b2.clone();
        for row in 0..64 {
            for col in 0..64 {
                b2_transposed[col * 64 + row] = b2[row * 64 + col];
            }
        }
        let right = tn_product(&square, &a2, E4M3, &b2, E4M3);
        let transposed = tn_product(&square, &a2, E4M3, &b2_transposed, E4M3);
        assert!(relative_frobenius_error(&transposed, &right) > 0.5);
        // The gradient read as E4M3 instead of E5M2.
        let wrong_format = tn_product(&shape, &a, E4M3, &b, E4M3);
        assert!(relative_frobenius_error(&wrong_format, &exact) > 0.5);
        // A NaN in C gives a NaN error, which fails any `< bound` check.
        let mut poisoned = rounded.clone();
        poisoned[3] = f64::NAN;
        assert!(relative_frobenius_error(&poisoned, &exact).is_nan());
    }
}
