//! GEMM timing through cuBLAS, fp16 and bf16 inputs with fp32 accumulation,
//! on the exact shapes a model layout produces plus a grid for
//! interpolation.
//!
//! The call itself (a row-major shape as a column-major cuBLAS call, buffer
//! sets, random inputs tiled over them) is [`gpu::gemm`], which the executor
//! shares. Each shape rotates through several buffer sets, together at least
//! four times the L2 size, so repeats do not find their inputs in L2.

use crate::error::CalibrateError;
use cudarc::cublas::{CudaBlas, Gemm};
use gpu::detect::Device;
use gpu::error::{CublasContextExt, CudaContextExt};
use gpu::gemm::{
    describe, fill_tiled, launch, BufferSet, ColumnMajorCall, GemmDtype, GemmElement,
    RANDOM_CHUNK_ELEMS,
};
use gpu::random;
use gpu::timing::{self, Summary};
use models::ops::{GemmShape, KernelClass, PassSteps, Step};
use profile::{GemmMeasurement, Source};
use std::collections::BTreeSet;

/// Every distinct GEMM shape of one transformer layer and of the head
/// (forward, data-gradient and weight-gradient), sorted.
pub fn model_gemm_shapes(
    model: &models::ModelSpec,
    microbatch: u64,
    tensor_parallel: u64,
) -> Vec<GemmShape> {
    let layer = models::ops::transformer_layer(model, microbatch, tensor_parallel);
    let head = models::pipeline_ends::head(model, microbatch, tensor_parallel);
    let steps = |pass: &PassSteps| -> Vec<Step> {
        pass.forward
            .iter()
            .chain(pass.backward.iter())
            .cloned()
            .collect()
    };
    let shapes: BTreeSet<GemmShape> = steps(&layer)
        .into_iter()
        .chain(steps(&head))
        .filter_map(|step| match step {
            Step::Kernel(kernel) => match kernel.class {
                KernelClass::Gemm(shape) => Some(shape),
                KernelClass::MemoryBound => None,
            },
            Step::TensorAllReduce { .. } => None,
        })
        .collect();
    shapes.into_iter().collect()
}

/// Shapes for interpolation: squares, and (full run) every combination of
/// three sizes per dimension. Sorted, no duplicates.
pub fn grid_shapes(quick: bool) -> Vec<GemmShape> {
    let shape = |m, n, k| GemmShape { batch: 1, m, n, k };
    let mut shapes = BTreeSet::new();
    let squares: &[u64] = if quick {
        &[1024, 4096, 8192]
    } else {
        &[512, 1024, 2048, 4096, 8192, 16384]
    };
    for &size in squares {
        shapes.insert(shape(size, size, size));
    }
    if !quick {
        let sides = [1024, 4096, 16384];
        for m in sides {
            for n in sides {
                for k in sides {
                    shapes.insert(shape(m, n, k));
                }
            }
        }
    }
    shapes.into_iter().collect()
}

/// The largest square single GEMM among `measured` of this dtype, with its
/// achieved FLOP/s.
pub fn largest_square(
    measured: &[GemmMeasurement],
    dtype: GemmDtype,
) -> Option<(&GemmMeasurement, f64)> {
    measured
        .iter()
        .filter(|g| g.dtype == dtype.name() && g.batch == 1 && g.m == g.n && g.n == g.k)
        .max_by_key(|g| g.m)
        .map(|g| {
            let flops = 2.0 * g.m as f64 * g.n as f64 * g.k as f64;
            (g, flops / (g.time_ns as f64 * 1e-9))
        })
}

/// How a GEMM sweep runs.
#[derive(Debug, Clone, Copy)]
pub struct GemmSweep {
    pub warmup: u32,
    pub repeats: u32,
    /// Upper bound on buffer sets per shape.
    pub max_buffer_sets: usize,
}

/// Result of timing a list of shapes in one dtype.
#[derive(Debug, Default)]
pub struct GemmTimings {
    /// One entry per timed shape, in the order given.
    pub measured: Vec<GemmMeasurement>,
    /// Shapes not timed because one buffer set does not fit in free memory.
    pub skipped: Vec<String>,
}

/// Times every shape in `T`'s dtype; `on_shape` is called after each.
pub fn time_shapes<T: GemmElement>(
    device: &Device,
    blas: &CudaBlas,
    shapes: &[GemmShape],
    sweep: GemmSweep,
    mut on_shape: impl FnMut(),
) -> Result<GemmTimings, CalibrateError>
where
    CudaBlas: Gemm<T>,
{
    let dtype = T::DTYPE.name();
    let stream = &device.stream;
    let chunk: Vec<T> =
        random::signed_values(0x6e6d_6d00 + T::DTYPE as u64, RANDOM_CHUNK_ELEMS, 1.0)
            .into_iter()
            .map(T::from_f32)
            .collect();
    let element_bytes = std::mem::size_of::<T>() as u64;
    let rotation_bytes = 4 * device.info.l2_cache_bytes.max(1 << 20);
    let mut timings = GemmTimings::default();
    for shape in shapes {
        let what = format!("{dtype} GEMM {}", describe(shape));
        let call = ColumnMajorCall::for_shape(shape)?;
        let (a_len, b_len, c_len) = (
            shape.batch * shape.m * shape.k,
            shape.batch * shape.k * shape.n,
            shape.batch * shape.m * shape.n,
        );
        let set_bytes = (a_len + b_len + c_len) * element_bytes;
        let (free_bytes, _) = device
            .ctx
            .mem_get_info()
            .cuda(|| format!("querying free memory before {what}"))?;
        let budget_bytes = free_bytes as u64 / 2;
        if set_bytes > budget_bytes {
            timings.skipped.push(format!(
                "{what} ({set_bytes} bytes > half of {free_bytes} free)"
            ));
            on_shape();
            continue;
        }
        let sets = (rotation_bytes.div_ceil(set_bytes) as usize)
            .clamp(1, sweep.max_buffer_sets.max(1))
            .min((budget_bytes / set_bytes) as usize);
        let mut buffers = Vec::with_capacity(sets);
        for _ in 0..sets {
            let alloc = |len: u64, name: &str| {
                stream
                    .alloc_zeros::<T>(len as usize)
                    .cuda(|| format!("allocating {name} ({len} elements) for {what}"))
            };
            let mut set = BufferSet {
                a: alloc(a_len, "A")?,
                b: alloc(b_len, "B")?,
                c: alloc(c_len, "C")?,
            };
            fill_tiled(stream, &chunk, &mut set.a, &what)?;
            fill_tiled(stream, &chunk, &mut set.b, &what)?;
            buffers.push(set);
        }
        let samples = timing::time_launches(stream, sweep.warmup, sweep.repeats, &what, |i| {
            let set = &mut buffers[i % sets];
            // SAFETY: each buffer was allocated with exactly the lengths
            // `call` addresses (a_len, b_len, c_len above).
            unsafe { launch(blas, &call, set) }.cublas(|| format!("launching {what}"))
        })?;
        let summary = Summary::from_samples(&samples).expect("repeats ≥ 1 (validated)");
        timings.measured.push(GemmMeasurement {
            batch: shape.batch,
            m: shape.m,
            n: shape.n,
            k: shape.k,
            dtype: dtype.into(),
            time_ns: summary.median_ns,
            spread_ns: Some(summary.spread_ns),
            source: Source::Measured,
        });
        drop(buffers);
        stream
            .synchronize()
            .cuda(|| format!("freeing the buffers of {what}"))?;
        on_shape();
    }
    Ok(timings)
}

/// Back-to-back launches of a tiny GEMM (1×128×128×128 bf16) between two
/// events: the time per launch is the fixed cost every kernel pays.
pub fn kernel_overhead_ns(
    device: &Device,
    blas: &CudaBlas,
    launches: u32,
) -> Result<u64, CalibrateError> {
    let shape = GemmShape {
        batch: 1,
        m: 128,
        n: 128,
        k: 128,
    };
    let what = "the kernel-overhead GEMM (1x128x128x128 bf16)";
    let call = ColumnMajorCall::for_shape(&shape)?;
    let stream = &device.stream;
    let len = (128 * 128) as usize;
    let alloc = || {
        stream
            .alloc_zeros::<half::bf16>(len)
            .cuda(|| format!("allocating {what}"))
    };
    let mut set = BufferSet {
        a: alloc()?,
        b: alloc()?,
        c: alloc()?,
    };
    let launches = launches.max(1);
    let samples = timing::time_launches(stream, 1, 3, what, |_| {
        for _ in 0..launches {
            // SAFETY: every buffer holds 128·128 elements, as `call` needs.
            unsafe { launch(blas, &call, &mut set) }.cublas(|| format!("launching {what}"))?;
        }
        Ok(())
    })?;
    let summary = Summary::from_samples(&samples).expect("three samples");
    Ok((summary.median_ns / launches as u64).max(1))
}

/// "major.minor.patch" of the loaded cuBLAS.
pub fn cublas_version() -> Option<String> {
    use cudarc::cublas::sys::{cublasGetProperty, libraryPropertyType};
    let property = |kind: libraryPropertyType| {
        let mut value = 0;
        // SAFETY: writes one int; the library presence was checked by the caller.
        let status = unsafe { cublasGetProperty(kind, &mut value) };
        status.result().ok().map(|_| value)
    };
    Some(format!(
        "{}.{}.{}",
        property(libraryPropertyType::MAJOR_VERSION)?,
        property(libraryPropertyType::MINOR_VERSION)?,
        property(libraryPropertyType::PATCH_LEVEL)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_shapes_include_forward_and_both_backward_gemms_once() {
        let model = models::preset("gpt3-175b").unwrap();
        let shapes = model_gemm_shapes(&model, 1, 8);
        let qkv = GemmShape {
            batch: 1,
            m: 2048,
            n: 3 * 12288 / 8,
            k: 12288,
        };
        assert!(shapes.contains(&qkv));
        assert!(shapes.contains(&qkv.data_gradient()));
        assert!(shapes.contains(&qkv.weight_gradient()));
        let logits = GemmShape {
            batch: 1,
            m: 2048,
            n: 51200 / 8,
            k: 12288,
        };
        assert!(shapes.contains(&logits.weight_gradient()));
        let mut sorted = shapes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, shapes, "sorted and distinct");
    }

    #[test]
    fn largest_square_picks_the_biggest_square_of_the_dtype() {
        let entry = |m, n, k, dtype: &str, time_ns| GemmMeasurement {
            batch: 1,
            m,
            n,
            k,
            dtype: dtype.into(),
            time_ns,
            spread_ns: None,
            source: Source::Measured,
        };
        let measured = vec![
            entry(4096, 4096, 4096, "bf16", 200_000),
            entry(8192, 8192, 8192, "bf16", 1_400_000),
            entry(16384, 16384, 1024, "bf16", 100),
            entry(16384, 16384, 16384, "fp16", 100),
        ];
        let (largest, flops_per_s) = largest_square(&measured, GemmDtype::Bf16).unwrap();
        assert_eq!(largest.m, 8192);
        assert!((flops_per_s - 2.0 * 8192f64.powi(3) / 1.4e-3).abs() < 1.0);
        assert!(grid_shapes(true).len() < grid_shapes(false).len());
    }
}
