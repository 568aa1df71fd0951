//! GEMM timing through cuBLAS, fp16 and bf16 inputs with fp32 accumulation,
//! each GEMM in the operand layout Megatron calls it in, on the exact shapes
//! a model layout produces plus a grid for interpolation.
//!
//! The call itself (a row-major shape in a layout as a column-major cuBLAS
//! call, buffer sets, random inputs tiled over them) is [`gpu::gemm`], which
//! the executor shares; which GEMM runs in which layout (a linear layer's
//! forward TN, data gradient NN, weight gradient NT; attention's scores TN
//! and context NN) is `models::gemm::GemmLayout`'s table.
//!
//! Each shape rotates through buffer sets ([`rotation`]) that together
//! exceed twice the L2 (four times when memory allows), so repeats do not
//! find their inputs in L2; entries whose free memory did not allow that are
//! named so the run can say they may be L2-resident.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

pub mod rotation;

use crate::error::CalibrateError;
use cudarc::cublas::{CudaBlas, Gemm};
use gpu::detect::Device;
use gpu::error::{CublasContextExt, CudaContextExt};
use gpu::gemm::{describe, launch_on, ColumnMajorCall, GemmDtype, GemmElement, RANDOM_CHUNK_ELEMS};
use gpu::random;
use gpu::timing::{self, Summary};
use models::ops::{GemmLayout, GemmShape, KernelClass, PassSteps, Step};
use profile::{GemmMeasurement, Source};
use std::collections::BTreeSet;

/// A GEMM to time: its shape and the layout it is called in.
pub type GemmCase = (GemmShape, GemmLayout);

/// Every distinct GEMM of one transformer layer and of the head (forward,
/// data-gradient and weight-gradient), each with the layout its role is
/// called in, sorted.
pub fn model_gemm_shapes(
    model: &models::ModelSpec,
    microbatch: u64,
    tensor_parallel: std::num::NonZeroU64,
) -> Vec<GemmCase> {
    let layer = models::ops::transformer_layer(model, microbatch, tensor_parallel);
    let head = models::pipeline_ends::head(model, microbatch, tensor_parallel);
    let steps = |pass: &PassSteps| -> Vec<Step> {
        pass.forward
            .iter()
            .chain(pass.backward.iter())
            .cloned()
            .collect()
    };
    let cases: BTreeSet<GemmCase> = steps(&layer)
        .into_iter()
        .chain(steps(&head))
        .filter_map(|step| match step {
            Step::Kernel(kernel) => match kernel.class {
                KernelClass::Gemm { shape, layout } => Some((shape, layout)),
                // The model's layers are listed in fp16/bf16 here; their
                // FP8 GEMMs are crate::gemm_fp8's.
                KernelClass::Fp8Gemm { .. }
                | KernelClass::MemoryBound
                | KernelClass::FusedAttention(_) => None,
            },
            Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => None,
        })
        .collect();
    cases.into_iter().collect()
}

/// Attention batches (heads per tensor rank × microbatch) of the full grid.
pub const ATTENTION_BATCHES: [u64; 3] = [8, 32, 96];
/// Sequence lengths of the full grid's attention GEMMs.
pub const ATTENTION_SEQUENCES: [u64; 3] = [1024, 2048, 4096];
/// Head dimensions of the grid's attention GEMMs.
pub const ATTENTION_HEAD_DIMS: [u64; 2] = [64, 128];

/// The two forward attention GEMMs of `batch` heads over a sequence, as
/// `models::ops` lists them: the scores Q·Kᵀ (batch × seq × seq × head_dim,
/// TN) and the context P·V (batch × seq × head_dim × seq, NN).
pub fn attention_gemms(batch: u64, sequence: u64, head_dim: u64) -> [GemmCase; 2] {
    [
        (
            GemmShape {
                batch,
                m: sequence,
                n: sequence,
                k: head_dim,
            },
            GemmLayout::Tn,
        ),
        (
            GemmShape {
                batch,
                m: sequence,
                n: head_dim,
                k: sequence,
            },
            GemmLayout::Nn,
        ),
    ]
}

/// Shapes for interpolation, sorted, no duplicates. Single GEMMs are timed
/// in the forward layout (TN, a linear layer's `input @ weight.t()`):
/// squares, and (full run) every combination of three sizes per dimension,
/// plus the squares again in NN and NT (the backward layouts). Attention's
/// strided-batched scores and context GEMMs in their own layouts by head
/// dimension: quick runs one batch and sequence, the full run every
/// combination of [`ATTENTION_BATCHES`], [`ATTENTION_SEQUENCES`] and
/// [`ATTENTION_HEAD_DIMS`].
pub fn grid_shapes(quick: bool) -> Vec<GemmCase> {
    let shape = |m, n, k| GemmShape { batch: 1, m, n, k };
    let mut cases = BTreeSet::new();
    let squares: &[u64] = if quick {
        &[1024, 4096, 8192]
    } else {
        &[512, 1024, 2048, 4096, 8192, 16384]
    };
    let square_layouts: &[GemmLayout] = if quick {
        &[GemmLayout::LINEAR_FORWARD]
    } else {
        &[GemmLayout::Tn, GemmLayout::Nn, GemmLayout::Nt]
    };
    for &size in squares {
        for &layout in square_layouts {
            cases.insert((shape(size, size, size), layout));
        }
    }
    let (batches, sequences): (&[u64], &[u64]) = if quick {
        (&[32], &[2048])
    } else {
        (&ATTENTION_BATCHES, &ATTENTION_SEQUENCES)
    };
    for &batch in batches {
        for &sequence in sequences {
            for head_dim in ATTENTION_HEAD_DIMS {
                cases.extend(attention_gemms(batch, sequence, head_dim));
            }
        }
    }
    if !quick {
        let sides = [1024, 4096, 16384];
        for m in sides {
            for n in sides {
                for k in sides {
                    cases.insert((shape(m, n, k), GemmLayout::LINEAR_FORWARD));
                }
            }
        }
    }
    cases.into_iter().collect()
}

/// The largest square single GEMM among `measured` of this dtype, timed in
/// the forward layout (TN) or of unknown layout, with its achieved FLOP/s.
pub fn largest_square(
    measured: &[GemmMeasurement],
    dtype: GemmDtype,
) -> Option<(&GemmMeasurement, f64)> {
    let forward = GemmLayout::LINEAR_FORWARD.name();
    measured
        .iter()
        .filter(|g| g.dtype == dtype.name() && g.batch == 1 && g.m == g.n && g.n == g.k)
        .filter(|g| g.layout.as_deref().is_none_or(|layout| layout == forward))
        .max_by_key(|g| g.m)
        .map(|g| {
            let flops = 2.0 * g.m as f64 * g.n as f64 * g.k as f64;
            (g, flops / (g.time_ns as f64 * 1e-9))
        })
}

/// How a GEMM sweep runs. The number of buffer sets per shape follows from
/// bytes alone ([`rotation::size_rotation`]).
#[derive(Debug, Clone, Copy)]
pub struct GemmSweep {
    pub warmup: u32,
    pub repeats: u32,
}

/// Result of timing a list of GEMMs in one dtype.
#[derive(Debug, Default)]
pub struct GemmTimings {
    /// One entry per timed GEMM, in the order given.
    pub measured: Vec<GemmMeasurement>,
    /// GEMMs not timed because one buffer set does not fit in half of the
    /// free memory.
    pub skipped: Vec<String>,
    /// GEMMs timed with a rotation not above twice the L2 (free memory did
    /// not allow more): their entries may be L2-resident.
    pub maybe_l2_resident: Vec<String>,
}

/// A chunk of seeded random operand values in [-1, 1] that
/// [`rotation::RotatingBuffers`] tiles over a GEMM's A and B.
pub fn operand_chunk<T: GemmElement>(seed: u64) -> Vec<T> {
    random::signed_values(seed, RANDOM_CHUNK_ELEMS, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect()
}

/// Times every GEMM in `T`'s dtype, each in its layout; `on_shape` is
/// called after each.
pub fn time_shapes<T: GemmElement>(
    device: &Device,
    blas: &CudaBlas,
    cases: &[GemmCase],
    sweep: GemmSweep,
    mut on_shape: impl FnMut(),
) -> Result<GemmTimings, CalibrateError>
where
    CudaBlas: Gemm<T>,
{
    let dtype = T::DTYPE.name();
    let stream = &device.stream;
    let chunk = operand_chunk::<T>(0x6e6d_6d00 + T::DTYPE as u64);
    let element_bytes = std::mem::size_of::<T>() as u64;
    let l2_bytes = device.info.l2_cache_bytes;
    let mut timings = GemmTimings::default();
    for &(shape, layout) in cases {
        let what = format!("{dtype} {} GEMM {}", layout.name(), describe(&shape));
        let call = ColumnMajorCall::for_shape(&shape, layout)?;
        let set_bytes = rotation::set_bytes(&shape, element_bytes);
        let (free_bytes, _) = device
            .ctx
            .mem_get_info()
            .cuda(|| format!("querying free memory before {what}"))?;
        let Some(plan) = rotation::size_rotation(set_bytes, l2_bytes, free_bytes as u64) else {
            timings.skipped.push(format!(
                "{what} ({set_bytes} bytes > half of {free_bytes} free)"
            ));
            on_shape();
            continue;
        };
        if !plan.exceeds_twice_l2 {
            timings.maybe_l2_resident.push(format!(
                "{what} ({} sets of {set_bytes} bytes, L2 {l2_bytes} bytes)",
                plan.sets
            ));
        }
        let mut buffers =
            rotation::RotatingBuffers::<T>::new(stream, &shape, plan.sets, &chunk, &what)?;
        let samples = timing::time_launches(stream, sweep.warmup, sweep.repeats, &what, |i| {
            buffers.with_set(i, |a, b, c| {
                // SAFETY: each set's A, B and C views hold exactly the
                // batch·m·k, batch·k·n and batch·m·n elements `call` addresses.
                unsafe { launch_on(blas, &call, a, b, c) }.cublas(|| format!("launching {what}"))
            })
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
            layout: Some(layout.name().into()),
        });
        drop(buffers);
        stream
            .synchronize()
            .cuda(|| format!("freeing the buffers of {what}"))?;
        on_shape();
    }
    Ok(timings)
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
    use GemmLayout::{Nn, Nt, Tn};

    #[test]
    fn model_shapes_include_every_role_once_in_its_layout() {
        let model = models::preset("gpt3-175b").unwrap();
        let cases = model_gemm_shapes(&model, 1, std::num::NonZeroU64::new(8).expect("8 is not 0"));
        let qkv = GemmShape {
            batch: 1,
            m: 2048,
            n: 3 * 12288 / 8,
            k: 12288,
        };
        assert!(cases.contains(&(qkv, Tn)));
        assert!(cases.contains(&(qkv.data_gradient(), Nn)));
        assert!(cases.contains(&(qkv.weight_gradient(), Nt)));
        let logits = GemmShape {
            batch: 1,
            m: 2048,
            n: 51200 / 8,
            k: 12288,
        };
        assert!(cases.contains(&(logits, Tn)));
        assert!(cases.contains(&(logits.weight_gradient(), Nt)));
        // Attention: 96 / 8 = 12 heads per rank, sequence 2048, head dim 128.
        let [scores, context] = attention_gemms(12, 2048, 128);
        assert!(cases.contains(&scores) && scores.1 == Tn);
        assert!(cases.contains(&context) && context.1 == Nn);
        // dQ = dS·K has the context's shape and layout; dKᵀ = Qᵀ·dS is NT;
        // dP = dC·Vᵀ has the scores' shape and layout; dV = Pᵀ·dC is NT.
        assert!(cases.contains(&(scores.0.weight_gradient(), Nt)));
        assert!(cases.contains(&(context.0.weight_gradient(), Nt)));
        assert_eq!(scores.0.data_gradient(), context.0);
        assert_eq!(context.0.data_gradient(), scores.0);
        // Six linear-style GEMMs in three roles, two attention forwards, two
        // attention weight gradients; the attention data gradients coincide
        // with the forwards.
        assert_eq!(cases.len(), 5 * 3 + 2 + 2);
        let mut sorted = cases.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, cases, "sorted and distinct");
    }

    #[test]
    fn grid_times_single_gemms_in_the_forward_layout_and_attention_in_its_own() {
        for quick in [true, false] {
            let grid = grid_shapes(quick);
            let mut sorted = grid.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted, grid, "sorted and distinct");
            // Every non-square single GEMM is TN.
            assert!(grid
                .iter()
                .filter(|(s, _)| s.batch == 1 && !(s.m == s.n && s.n == s.k))
                .all(|(_, layout)| *layout == Tn));
            // Attention: the scores TN and the context NN, by head dimension.
            let batched: Vec<&GemmCase> = grid.iter().filter(|(s, _)| s.batch > 1).collect();
            for head_dim in ATTENTION_HEAD_DIMS {
                assert!(batched.iter().any(|(s, l)| s.k == head_dim && *l == Tn));
                assert!(batched.iter().any(|(s, l)| s.n == head_dim && *l == Nn));
            }
            for (shape, layout) in &batched {
                let (sequence, head_dim) = if *layout == Tn {
                    assert_eq!(shape.m, shape.n);
                    (shape.m, shape.k)
                } else {
                    assert_eq!((*layout, shape.m), (Nn, shape.k));
                    (shape.m, shape.n)
                };
                assert!(ATTENTION_SEQUENCES.contains(&sequence));
                assert!(ATTENTION_HEAD_DIMS.contains(&head_dim));
                assert!(ATTENTION_BATCHES.contains(&shape.batch));
            }
            let square_layouts = |size: u64| -> Vec<GemmLayout> {
                grid.iter()
                    .filter(|(s, _)| (s.batch, s.m, s.n, s.k) == (1, size, size, size))
                    .map(|(_, layout)| *layout)
                    .collect()
            };
            if quick {
                assert_eq!(batched.len(), 4, "one batch and sequence, two head dims");
                assert_eq!(square_layouts(4096), vec![Tn]);
            } else {
                assert_eq!(batched.len(), 3 * 3 * 2 * 2);
                assert_eq!(square_layouts(4096), vec![Nn, Nt, Tn]);
            }
        }
        assert!(grid_shapes(true).len() < grid_shapes(false).len());
    }

    #[test]
    fn largest_square_picks_the_biggest_forward_square_of_the_dtype() {
        let entry = |m, n, k, dtype: &str, time_ns, layout: Option<&str>| GemmMeasurement {
            batch: 1,
            m,
            n,
            k,
            dtype: dtype.into(),
            time_ns,
            spread_ns: None,
            source: Source::Measured,
            layout: layout.map(String::from),
        };
        let measured = vec![
            entry(4096, 4096, 4096, "bf16", 200_000, None),
            entry(8192, 8192, 8192, "bf16", 1_400_000, Some("tn")),
            entry(8192, 8192, 8192, "bf16", 1_000_000, Some("nt")),
            entry(16384, 16384, 16384, "bf16", 9_000_000, Some("nn")),
            entry(16384, 16384, 1024, "bf16", 100, Some("tn")),
            entry(16384, 16384, 16384, "fp16", 100, Some("tn")),
        ];
        let (largest, flops_per_s) = largest_square(&measured, GemmDtype::Bf16).unwrap();
        assert_eq!((largest.m, largest.layout.as_deref()), (8192, Some("tn")));
        assert!((flops_per_s - 2.0 * 8192f64.powi(3) / 1.4e-3).abs() < 1.0);
        // Layout-less entries (older runs) still count.
        let (old, _) = largest_square(&measured[..1], GemmDtype::Bf16).unwrap();
        assert_eq!(old.m, 4096);
    }
}
