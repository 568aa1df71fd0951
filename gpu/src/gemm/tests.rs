//! CPU tests of the GEMM call: each layout's `transa`/`transb` and leading
//! dimensions, run through a CPU model of cuBLAS (`reference`), compute the
//! row-major product of the shape, batched strides included.

use super::reference::{column_major_gemm, relative_frobenius_error, row_major_product, stored};
use super::*;

fn shape(batch: u64, m: u64, n: u64, k: u64) -> GemmShape {
    GemmShape { batch, m, n, k }
}

#[test]
fn row_major_shape_maps_to_the_transposed_column_major_call_in_each_layout() {
    // (layout, transa, lda, transb, ldb) for m = 10, n = 20, k = 30.
    let expected = [
        (GemmLayout::Nn, false, 20, false, 30),
        (GemmLayout::Nt, false, 20, true, 10),
        (GemmLayout::Tn, true, 30, false, 30),
        (GemmLayout::Tt, true, 30, true, 10),
    ];
    for (layout, transa, lda, transb, ldb) in expected {
        let call = ColumnMajorCall::for_shape(&shape(3, 10, 20, 30), layout).unwrap();
        assert_eq!(call.layout, layout);
        assert_eq!((call.m, call.n, call.k), (20, 10, 30));
        assert_eq!((call.lda, call.ldb, call.ldc), (lda, ldb, 20), "{layout:?}");
        assert_eq!(
            operation(layout.b_transposed()) == cublasOperation_t::CUBLAS_OP_T,
            transa
        );
        assert_eq!(
            operation(layout.a_transposed()) == cublasOperation_t::CUBLAS_OP_T,
            transb
        );
        assert_eq!(
            (call.stride_a, call.stride_b, call.stride_c),
            (600, 300, 200)
        );
        assert_eq!(call.batch, 3);
    }
    let too_big = ColumnMajorCall::for_shape(&shape(1, 1 << 31, 1, 1), GemmLayout::Tn);
    assert!(matches!(too_big, Err(GpuError::TooLarge { .. })));
    let empty = ColumnMajorCall::for_shape(&shape(1, 4, 0, 4), GemmLayout::Nt);
    assert!(matches!(empty, Err(GpuError::InvalidShape { .. })));
}

#[test]
fn the_reference_agrees_with_a_product_worked_by_hand() {
    // A = [1 2; 3 4], B = [5 6; 7 8]: A·B = [19 22; 43 50].
    let (a, b) = ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]);
    let square = shape(1, 2, 2, 2);
    assert_eq!(row_major_product(&square, &a, &b), [19.0, 22.0, 43.0, 50.0]);
    // TN stores B transposed (as a linear layer's [out, in] weight).
    let b_stored = stored(&b, 1, 2, 2, true);
    assert_eq!(b_stored, [5.0, 7.0, 6.0, 8.0]);
    let call = ColumnMajorCall::for_shape(&square, GemmLayout::Tn).unwrap();
    let mut c = [f64::NAN; 4];
    column_major_gemm(&call, &b_stored, &a, &mut c);
    assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
    assert_eq!(relative_frobenius_error(&c, &[19.0, 22.0, 43.0, 50.0]), 0.0);
    assert!(relative_frobenius_error(&[f64::NAN, 22.0, 43.0, 50.0], &c).is_nan());
}

/// Distinct small integers: every product and sum is exact in f64.
fn operand(len: usize, seed: usize) -> Vec<f64> {
    (0..len)
        .map(|i| ((i * 7 + seed * 13) % 23) as f64 - 11.0)
        .collect()
}

/// Runs `call` on A and B stored as `stored_as` says; C starts as NaN.
fn run(
    call: &ColumnMajorCall,
    gemm: &GemmShape,
    stored_as: GemmLayout,
    a: &[f64],
    b: &[f64],
) -> Vec<f64> {
    let (batch, m, n, k) = (
        gemm.batch as usize,
        gemm.m as usize,
        gemm.n as usize,
        gemm.k as usize,
    );
    let a_stored = stored(a, batch, m, k, stored_as.a_transposed());
    let b_stored = stored(b, batch, k, n, stored_as.b_transposed());
    let mut c = vec![f64::NAN; batch * m * n];
    column_major_gemm(call, &b_stored, &a_stored, &mut c);
    c
}

#[test]
fn column_major_call_computes_the_row_major_product_in_every_layout() {
    for gemm in [
        shape(1, 3, 4, 5),
        shape(3, 3, 4, 5),
        shape(2, 6, 2, 3),
        shape(3, 4, 7, 1),
    ] {
        let a = operand((gemm.batch * gemm.m * gemm.k) as usize, 1);
        let b = operand((gemm.batch * gemm.k * gemm.n) as usize, 2);
        let expected = row_major_product(&gemm, &a, &b);
        for layout in GemmLayout::ALL {
            let call = ColumnMajorCall::for_shape(&gemm, layout).unwrap();
            let c = run(&call, &gemm, layout, &a, &b);
            assert_eq!(c, expected, "{layout:?} {}", describe(&gemm));
        }
    }
}

#[test]
fn a_call_for_another_layout_computes_something_else() {
    // The check above can fail: reading operands stored for one layout with
    // another layout's call gives a different product.
    let gemm = shape(2, 3, 4, 5);
    let a = operand(30, 1);
    let b = operand(40, 2);
    let expected = row_major_product(&gemm, &a, &b);
    for stored_as in GemmLayout::ALL {
        for layout in GemmLayout::ALL.into_iter().filter(|l| *l != stored_as) {
            let call = ColumnMajorCall::for_shape(&gemm, layout).unwrap();
            let c = run(&call, &gemm, stored_as, &a, &b);
            assert_ne!(c, expected, "{stored_as:?} read as {layout:?}");
        }
    }
}
