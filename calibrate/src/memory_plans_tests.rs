//! Tests of the memory-class plans: launch arguments against the CUDA
//! signatures, geometry, byte counts and sizes.

use super::*;
use crate::memory_kernels::{function_names, source};

const H100_SMS: u32 = 132;
const A100_SMS: u32 = 108;

/// One kernel parameter as declared in the CUDA source.
#[derive(Debug, PartialEq)]
enum Param {
    Pointer,
    U32,
    U64,
    F32,
}

/// The parameters of `function` in `source`, read from its declaration.
fn parameters(source: &str, function: &str) -> Vec<Param> {
    let start = source
        .find(&format!("void {function}("))
        .unwrap_or_else(|| panic!("{function} not declared"))
        + function.len()
        + 6;
    let end = start + source[start..].find(')').unwrap();
    source[start..end]
        .split(',')
        .map(|param| {
            let param = param.split_whitespace().collect::<Vec<_>>().join(" ");
            if param.contains('*') {
                Param::Pointer
            } else if param.starts_with("u32 ") {
                Param::U32
            } else if param.starts_with("u64 ") || param.starts_with("unsigned long long ") {
                Param::U64
            } else if param.starts_with("float ") {
                Param::F32
            } else {
                panic!("{function}: unexpected parameter {param:?}")
            }
        })
        .collect()
}

fn every_plan() -> Vec<Plan> {
    let mut plans = Vec::new();
    for class in MemoryKernelClass::ALL {
        for quick in [false, true] {
            for size in sizes(class, quick) {
                for sm_count in [H100_SMS, A100_SMS] {
                    plans.push(plan(class, size, sm_count).unwrap());
                }
            }
        }
        plans.push(plan(class, check_size(class), H100_SMS).unwrap());
        plans.push(plan_with(class, check_size(class), H100_SMS, false).unwrap());
    }
    plans
}

#[test]
fn launch_arguments_match_the_kernel_signatures() {
    for plan in every_plan() {
        let source = source(plan.class);
        let names = function_names(plan.class);
        for launch in &plan.launches {
            let name = names[launch.function];
            let declared = parameters(&source, name);
            let mut passed = vec![];
            for &index in &launch.buffers {
                assert!(index < plan.buffers.len(), "{name}: buffer {index}");
                passed.push(Param::Pointer);
            }
            for scalar in &launch.scalars {
                passed.push(match scalar {
                    Scalar::U32(_) => Param::U32,
                    Scalar::U64(_) => Param::U64,
                    Scalar::F32(_) => Param::F32,
                });
            }
            assert_eq!(passed, declared, "{name} in {}", plan.describe());
        }
        // Every function of the class is launched.
        let mut launched: Vec<usize> = plan.launches.iter().map(|l| l.function).collect();
        launched.sort();
        launched.dedup();
        assert_eq!(launched.len(), names.len(), "{}", plan.class.name());
    }
}

#[test]
fn launch_geometry_fits_the_hardware_limits_and_the_kernels_assumptions() {
    for plan in every_plan() {
        let what = plan.describe();
        for launch in &plan.launches {
            let (bx, by, bz) = launch.block;
            let (gx, gy, gz) = launch.grid;
            assert!(bx * by * bz <= 1024 && bx * by * bz >= 32, "{what}");
            // Block reductions need whole warps of a one-dimensional block.
            assert!(by == 8 || (by == 1 && bx % 32 == 0), "{what}");
            assert!(gx >= 1 && (1..=65535).contains(&gy) && gz == 1, "{what}");
            assert!(
                launch.shared_mem_bytes as u64 <= MAX_SHARED_MEM_BYTES,
                "{what}"
            );
        }
        assert_eq!(
            plan.bytes,
            plan.class.bytes_per_element() * plan.size.elements(),
            "{what}"
        );
        // Each rotating byte is read and written at most once: the recorded
        // bytes are at most twice the footprint (Adam updates in place).
        assert!(plan.slot_bytes() * 2 >= plan.bytes, "{what}");
        assert!(plan.buffers.iter().any(|b| b.checked), "{what}");
        assert!(plan.buffers.iter().all(|b| b.len > 0), "{what}");
    }
}

#[test]
fn row_kernels_cover_every_row_and_every_word() {
    use MemoryKernelClass::*;
    for class in [LayerNorm, LayerNormBackward, Softmax, SoftmaxBackward] {
        for size in sizes(class, false) {
            let plan = plan(class, size, H100_SMS).unwrap();
            let first = &plan.launches[0];
            assert_eq!(first.grid.0 as u64, size.rows, "{}", plan.describe());
            assert_eq!(first.block.0, row_threads(size.cols / 4));
        }
    }
    // The gamma/beta partial sums cover every column tile and row slab.
    let plan = plan(
        LayerNormBackward,
        ClassSize {
            rows: 5,
            cols: 1300,
        },
        H100_SMS,
    )
    .unwrap();
    let partial = &plan.launches[1];
    assert_eq!(partial.grid.0, 11); // 325 words in tiles of 32
    let Scalar::U32(rows_per_slab) = partial.scalars[2] else {
        panic!("rows per slab")
    };
    assert!(partial.grid.1 * rows_per_slab >= 5);
    assert!((partial.grid.1 - 1) * rows_per_slab < 5);
    assert_eq!(plan.buffers[6].len, 2 * partial.grid.1 as u64 * 1300);
    assert_eq!(row_threads(1), 64);
    assert_eq!(row_threads(256), 64);
    assert_eq!(row_threads(1000), 256);
    assert_eq!(row_threads(4096), 1024);
    assert_eq!(row_threads(1 << 20), 1024);
}

#[test]
fn check_sizes_exercise_loops_and_partial_warps() {
    use MemoryKernelClass::*;
    for class in [LayerNorm, LayerNormBackward, Softmax, SoftmaxBackward] {
        let size = check_size(class);
        let words = size.cols / 4;
        assert!(words > row_threads(words) as u64, "{}", class.name());
        assert!(
            !words.is_multiple_of(32) && size.rows > 1,
            "{}",
            class.name()
        );
    }
    // Softmax checks square score matrices, several of them.
    let softmax = check_size(Softmax);
    assert_eq!(softmax.rows % softmax.cols, 0);
    assert!(softmax.rows / softmax.cols > 1);
    for class in MemoryKernelClass::ALL {
        assert!(check_size(class).elements() < 1 << 20, "{}", class.name());
    }
}

#[test]
fn sizes_grow_with_distinct_bytes_and_fit_a_large_gpu() {
    for class in MemoryKernelClass::ALL {
        for quick in [false, true] {
            let bytes: Vec<u64> = sizes(class, quick)
                .into_iter()
                .map(|size| plan(class, size, H100_SMS).unwrap().bytes)
                .collect();
            assert!(
                bytes.windows(2).all(|w| w[0] < w[1]),
                "{} {bytes:?}",
                class.name()
            );
            assert!(!bytes.is_empty() && (!quick || bytes.len() <= 2));
        }
        let largest = *sizes(class, false).last().unwrap();
        let plan = plan(class, largest, H100_SMS).unwrap();
        // One slot of the largest size fits half of an 80 GB GPU's memory with room.
        assert!(plan.device_bytes(1) <= 16 << 30, "{}", plan.describe());
    }
}

#[test]
fn impossible_sizes_are_refused_with_a_reason() {
    use MemoryKernelClass::*;
    let refused = |class, rows, cols| plan(class, ClassSize { rows, cols }, H100_SMS).unwrap_err();
    assert!(refused(Gelu, 4, 1022).contains("multiple of 4"));
    assert!(refused(LayerNorm, 0, 1024).contains("multiple of 4"));
    // A 16384-long softmax backward row needs 64 KiB of shared memory.
    assert!(refused(SoftmaxBackward, 16, 16384).contains("shared memory"));
    assert!(refused(Softmax, 1, 1 << 33).contains("32-bit"));
    assert!(refused(LayerNorm, 1 << 20, 1 << 20).contains("32-bit"));
}

#[test]
fn rotation_exceeds_twice_the_l2_cache() {
    let l2 = 50 << 20;
    for slot in [1u64 << 20, 3 << 20, 99 << 20, 100 << 20, 101 << 20, 1 << 30] {
        let slots = rotation_slots(slot, l2);
        assert!(
            slots * slot > 2 * l2 || slots == 1 && slot > 2 * l2,
            "{slot}"
        );
        assert!(
            slots == 1 || (slots - 1) * slot <= 2 * l2,
            "{slot}: not more than needed"
        );
    }
    assert_eq!(rotation_slots(0, l2), 1);
    assert_eq!(rotation_slots(1 << 30, 0), 1);
}

#[test]
fn dropout_keeps_nine_tenths_at_the_kernel_scale() {
    let threshold = dropout_threshold() as f64 / 4_294_967_296.0;
    assert!((threshold - 0.1).abs() < 1e-9);
    assert!((dropout_keep_scale() - 1.0 / 0.9).abs() < 1e-6);
}
