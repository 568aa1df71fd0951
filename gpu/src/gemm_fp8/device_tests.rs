//! The FP8 GEMM on a real GPU: every role (its formats and accumulation
//! mode), three shapes, batch 1 and 2, C read back and held against the f64
//! CPU product of the decoded inputs ([`super::reference`]). Skips with a
//! printed line where no CUDA driver loads, or where the GPU has no FP8
//! tensor cores (compute capability below 8.9); a driver without cuBLASLt
//! fails.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use super::reference::{tn_product, MAX_RELATIVE_ERROR};
use super::*;
use crate::detect::{open_device, CudaLibrary};
use crate::gemm::reference::relative_frobenius_error;

#[test]
fn every_role_matches_the_cpu_product_on_the_gpu() {
    if !CudaLibrary::Driver.is_present() {
        println!(
            "skipping: no CUDA driver ({} cannot be loaded)",
            CudaLibrary::Driver.file_name()
        );
        return;
    }
    assert!(
        cublaslt_present(),
        "libcublasLt.so cannot be loaded (it sits beside libcublas.so; set LD_LIBRARY_PATH)"
    );
    let device = open_device(0).unwrap_or_else(|error| panic!("{error}"));
    // FP8 tensor cores: Ada (8.9) and Hopper (9.0) onwards.
    if device.info.compute_capability < (8, 9) {
        println!(
            "skipping: {} (compute capability {:?}) has no FP8 tensor cores",
            device.info.name, device.info.compute_capability
        );
        return;
    }
    let stream = &device.stream;
    let context = LtContext::new(stream.clone()).unwrap_or_else(|error| panic!("{error}"));
    let mut seed = 0xf8_0000u64;
    let mut checked = 0;
    for (m, n, k) in [(64, 96, 128), (96, 128, 64), (128, 64, 96)] {
        for batch in [1, 2] {
            let shape = GemmShape { batch, m, n, k };
            let (b_, m_, n_, k_) = (batch as usize, m as usize, n as usize, k as usize);
            for role in Fp8Role::ALL {
                let what = format!("FP8 {} {}", role.name(), describe(&shape));
                let (a_format, b_format) = role.operand_formats();
                seed += 2;
                let a = random_codes(seed, b_ * m_ * k_, a_format);
                let b = random_codes(seed + 1, b_ * n_ * k_, b_format);
                let expected = tn_product(&shape, &a, a_format, &b, b_format);
                let plan = Fp8GemmPlan::new(&context, &shape, role)
                    .unwrap_or_else(|error| panic!("{what}: {error}"));
                let upload = |codes: &[u8]| {
                    stream
                        .clone_htod(codes)
                        .unwrap_or_else(|error| panic!("uploading {what}: {error}"))
                };
                let (a_device, b_device) = (upload(&a), upload(&b));
                // Poisoned: an element the GEMM does not write stays NaN.
                let mut c_device = stream
                    .clone_htod(&vec![bf16::NAN; b_ * m_ * n_])
                    .unwrap_or_else(|error| panic!("uploading {what}: {error}"));
                // SAFETY: A, B and C hold exactly batch·m·k, batch·n·k and
                // batch·m·n elements, as the plan addresses; same context.
                unsafe { plan.launch(&context, &a_device, &b_device, &mut c_device) }
                    .unwrap_or_else(|error| panic!("{what}: {error}"));
                let c: Vec<bf16> = stream
                    .clone_dtoh(&c_device)
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
    assert_eq!(checked, 3 * 2 * Fp8Role::ALL.len());
}
