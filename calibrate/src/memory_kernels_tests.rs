//! Tests of `memory_kernels.rs`: each class's CUDA source defines its
//! functions, and compiles where NVRTC loads.

use super::*;
use gpu::detect::CudaLibrary;

#[test]
fn every_function_is_defined_in_its_class_source_with_c_linkage() {
    for class in MemoryKernelClass::ALL {
        let source = source(class);
        for name in function_names(class) {
            let declaration = format!("extern \"C\" __global__ void {name}(");
            assert_eq!(
                source.matches(&declaration).count(),
                1,
                "{} lacks {name}",
                class.name()
            );
        }
        assert_eq!(
            source.matches("extern \"C\" __global__").count(),
            function_names(class).len(),
            "{} has functions nobody launches",
            class.name()
        );
        assert!(!source.contains("#include"), "{}", class.name());
    }
}

/// NVRTC needs no GPU: where it loads (a CUDA toolkit or the
/// nvidia-cuda-nvrtc wheel on LD_LIBRARY_PATH), every class compiles to a
/// cubin for Ampere and Hopper.
#[test]
fn every_class_compiles_to_a_cubin_where_nvrtc_loads() {
    if !CudaLibrary::Nvrtc.is_present() {
        println!(
            "skipping: NVRTC cannot be loaded ({})",
            CudaLibrary::Nvrtc.file_name()
        );
        return;
    }
    let supported = gpu::kernels::supported_architectures().unwrap();
    for architecture in ["sm_80", "sm_90"] {
        let sm: i32 = architecture[3..].parse().unwrap();
        if !supported.contains(&sm) {
            println!("skipping {architecture}: this NVRTC does not support it");
            continue;
        }
        for class in MemoryKernelClass::ALL {
            let what = format!("the {} kernels", class.name());
            let cubin = gpu::kernels::compile_cubin(&source(class), architecture, &what)
                .unwrap_or_else(|error| panic!("{error}"));
            assert!(cubin.len() > 100, "{what}: {} bytes", cubin.len());
        }
    }
}
