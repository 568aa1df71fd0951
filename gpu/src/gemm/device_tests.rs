//! The GEMM call on a real GPU: every layout, three shapes, batch 1 and 3,
//! bf16 inputs, C read back and held against the f64 CPU product. Skips
//! with a printed line where no CUDA driver loads; a driver without cuBLAS,
//! or without a usable GPU, fails.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use super::reference::{relative_frobenius_error, row_major_product, stored};
use super::*;
use crate::detect::{open_device, CudaLibrary};
use crate::random;
use half::bf16;

/// Largest relative Frobenius error accepted: bf16 output rounding alone is
/// about 2⁻⁹ ≈ 0.002; a wrong layout or leading dimension gives about 1.4.
const MAX_RELATIVE_ERROR: f64 = 1e-2;

#[test]
fn every_layout_matches_the_cpu_product_on_the_gpu() {
    if !CudaLibrary::Driver.is_present() {
        println!(
            "skipping: no CUDA driver ({} cannot be loaded)",
            CudaLibrary::Driver.file_name()
        );
        return;
    }
    CudaLibrary::Cublas
        .require("the GEMM layout test")
        .unwrap_or_else(|error| panic!("{error}"));
    let device = open_device(0).unwrap_or_else(|error| panic!("{error}"));
    let stream = &device.stream;
    let blas = CudaBlas::new(stream.clone())
        .unwrap_or_else(|error| panic!("creating a cuBLAS handle: {error}"));
    let mut seed = 0x1a70_0000u64;
    let mut checked = 0;
    for (m, n, k) in [(64, 96, 128), (96, 128, 64), (128, 64, 96)] {
        for batch in [1, 3] {
            let gemm = GemmShape { batch, m, n, k };
            let (batch, m, n, k) = (batch as usize, m as usize, n as usize, k as usize);
            // Inputs rounded to bf16 first, so the reference multiplies
            // exactly the values the GPU reads.
            let mut values = |len: usize| -> Vec<f64> {
                seed += 1;
                random::signed_values(seed, len, 1.0)
                    .into_iter()
                    .map(|v| bf16::from_f32(v).to_f64())
                    .collect()
            };
            let a = values(batch * m * k);
            let b = values(batch * k * n);
            let expected = row_major_product(&gemm, &a, &b);
            for layout in GemmLayout::ALL {
                let what = format!("{} {layout:?}", describe(&gemm));
                let call = ColumnMajorCall::for_shape(&gemm, layout).unwrap();
                let upload = |values: Vec<f64>| {
                    let host: Vec<bf16> = values.into_iter().map(bf16::from_f64).collect();
                    stream
                        .clone_htod(&host)
                        .unwrap_or_else(|error| panic!("uploading {what}: {error}"))
                };
                let mut set = BufferSet {
                    a: upload(stored(&a, batch, m, k, layout.a_transposed())),
                    b: upload(stored(&b, batch, k, n, layout.b_transposed())),
                    // Poisoned: an element the GEMM does not write stays NaN.
                    c: upload(vec![f64::NAN; batch * m * n]),
                };
                // SAFETY: A, B and C hold exactly batch·m·k, batch·k·n and
                // batch·m·n elements, as `call` addresses.
                unsafe { launch(&blas, &call, &mut set) }
                    .unwrap_or_else(|error| panic!("launching {what}: {error}"));
                let c: Vec<bf16> = stream
                    .clone_dtoh(&set.c)
                    .unwrap_or_else(|error| panic!("reading back {what}: {error}"));
                stream
                    .synchronize()
                    .unwrap_or_else(|error| panic!("finishing {what}: {error}"));
                let got: Vec<f64> = c.iter().map(|v| v.to_f64()).collect();
                let unwritten = got.iter().filter(|v| v.is_nan()).count();
                assert_eq!(unwritten, 0, "{what}: {unwritten} elements of C are NaN");
                let error = relative_frobenius_error(&got, &expected);
                assert!(
                    error < MAX_RELATIVE_ERROR,
                    "{what}: relative Frobenius error {error:e} ≥ {MAX_RELATIVE_ERROR}"
                );
                println!("{what}: relative error {error:.2e}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 3 * 2 * GemmLayout::ALL.len());
}
