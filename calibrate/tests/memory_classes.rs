//! The memory-bound class kernels on a real GPU: each one's output against
//! the CPU reference (outputs poisoned first, relative error < 1e-2, masks
//! exact), and a quick timing of every class with plausible bandwidths.
//! Both print "skipping: no CUDA driver" where the driver does not load; a
//! driver without NVRTC, or without a usable GPU, fails.

use calibrate::memory_classes::{self, MAX_RELATIVE_ERROR};
use calibrate::memory_plans;
use gpu::detect::{open_device, CudaLibrary, Device};
use models::memory_class::MemoryKernelClass;

fn device() -> Option<Device> {
    if !CudaLibrary::Driver.is_present() {
        println!(
            "skipping: no CUDA driver ({} cannot be loaded)",
            CudaLibrary::Driver.file_name()
        );
        return None;
    }
    CudaLibrary::Nvrtc
        .require("the memory-class kernels")
        .unwrap_or_else(|error| panic!("{error}"));
    Some(open_device(0).unwrap_or_else(|error| panic!("{error}")))
}

#[test]
fn every_memory_class_kernel_matches_its_cpu_reference_on_the_gpu() {
    let Some(device) = device() else { return };
    let mut failures = Vec::new();
    let mut checked = 0;
    for class in MemoryKernelClass::ALL {
        let kernels = memory_classes::load(&device, class)
            .unwrap_or_else(|error| panic!("{}: {error}", class.name()));
        let checks = memory_classes::check_class(&device, &kernels)
            .unwrap_or_else(|error| panic!("{}: {error}", class.name()));
        assert!(!checks.is_empty(), "{}", class.name());
        for (name, check) in checks {
            println!(
                "{name}: {} relative error {:.2e}, {} mask mismatches ({})",
                check.role, check.relative_error, check.mismatches, kernels.architecture
            );
            if !memory_classes::check_passes(&check) {
                failures.push(format!("{name}: {check:?}"));
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "outputs off by {MAX_RELATIVE_ERROR} or more:\n{}",
        failures.join("\n")
    );
    // y/mean/rstd, dx/dgamma/dbeta, two softmax variants, ...
    assert!(checked >= 20, "{checked} buffers checked");
}

#[test]
fn every_memory_class_times_its_quick_sizes_at_a_plausible_bandwidth() {
    let Some(device) = device() else { return };
    for class in MemoryKernelClass::ALL {
        let sizes = memory_plans::sizes(class, true);
        let mut steps = 0;
        let timings = memory_classes::measure_class(&device, class, &sizes, 1, 3, || steps += 1)
            .unwrap_or_else(|error| panic!("{}: {error}", class.name()));
        assert_eq!(steps, sizes.len(), "{}", class.name());
        assert!(timings.skipped.is_empty(), "{:?}", timings.skipped);
        assert_eq!(timings.measured.len(), sizes.len(), "{}", class.name());
        for (entry, size) in timings.measured.iter().zip(&sizes) {
            assert_eq!(entry.kernel, class.name());
            assert_eq!(
                entry.bytes,
                class.bytes_per_element() * size.rows * size.cols
            );
            let rate = entry.bytes as f64 / (entry.time_ns as f64 * 1e-9);
            println!(
                "{} {} x {}: {} ns, {:.0} GB/s",
                class.name(),
                size.rows,
                size.cols,
                entry.time_ns,
                rate / 1e9
            );
            // Above any HBM (H200: 4.8 TB/s; counted bytes may undercount a
            // little, e.g. gamma) means a broken timer or a kernel that did
            // not run; below 20 GB/s, a kernel far from memory-bound.
            assert!(rate < 6e12 && rate > 2e10, "{}: {rate:e} B/s", class.name());
        }
    }
}
