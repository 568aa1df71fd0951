//! Classes of memory-bound kernels: which model kernels are the same kind of
//! operation as a kernel `calibrate` times, and how many bytes that
//! operation moves per element as [`crate::ops`] counts them.
//!
//! A class name is what a calibration profile records in
//! `memory.measured[].kernel` ("layernorm", "softmax.bwd", "optimizer.adam");
//! the simulator costs every model kernel of a class from that class's
//! measured entries (interpolated in bytes) and every other memory-bound
//! kernel at achieved HBM bandwidth. Calibrate and the simulator both take
//! the class names and byte counts from here, so what is timed and what is
//! looked up cannot drift apart.
//!
//! A model kernel's class is marked where the kernel is created
//! ([`crate::step::Kernel::memory_class`], [`crate::step::Step::memory_of_class`];
//! the optimizer's phases carry theirs), and the cost model reads that mark,
//! never the kernel's name. Only kernels that *are* the timed operation are
//! marked: a backward pass only where its own backward is timed
//! (`layernorm.bwd`, `softmax.bwd`); the dropout and GeLU backwards, RMSNorm
//! and the eager softmax's sub-kernels keep the bandwidth model.
//! [`MemoryKernelClass::of_kernel`] lists the same classes by kernel name,
//! for the tests that check every mark against it.

use serde::Serialize;

/// A kind of memory-bound kernel that `calibrate` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum MemoryKernelClass {
    /// LayerNorm forward over rows of `hidden` bf16 values: read x, write y
    /// (4 B per element; gamma, beta and the per-row mean and 1/σ are
    /// negligible and not counted).
    LayerNorm,
    /// LayerNorm backward: read the output gradient and x, write the input
    /// gradient (6 B per element), plus the gamma/beta gradients.
    LayerNormBackward,
    /// Megatron's fused scale-(causal-)mask-softmax forward: read the scores,
    /// write the probabilities (4 B per element).
    Softmax,
    /// Its backward: read the gradient and the probabilities, write the
    /// gradient (6 B per element).
    SoftmaxBackward,
    /// Dropout: read x, write y and a one-byte mask (5 B per element).
    Dropout,
    /// Megatron's bias-dropout-add: read x and the residual, write the output
    /// and a one-byte mask (7 B per element; the bias row is negligible).
    BiasDropoutAdd,
    /// GeLU (Megatron's bias-GeLU): read x, write y (4 B per element).
    Gelu,
    /// SwiGLU, silu(a)·b: read a and b, write y (6 B per output element).
    Swiglu,
    /// The optimizer's gradient copy to fp32 main gradients (and the copy of
    /// fp32 weights back to 16 bits): 2 B read + 4 B written per parameter.
    OptimizerCopy,
    /// Unscale fp32 gradients by 1/loss-scale and check they are finite:
    /// 4 B read + 4 B written per parameter.
    OptimizerUnscale,
    /// The gradient norm: a reduction reading 4 B per parameter.
    OptimizerL2Norm,
    /// Fused Adam(W): read fp32 weight, gradient, momentum and variance
    /// (16 B), write weight, momentum and variance (12 B) per parameter.
    OptimizerAdam,
}

impl MemoryKernelClass {
    /// Every class, in the order calibrate times them.
    pub const ALL: [MemoryKernelClass; 12] = [
        MemoryKernelClass::LayerNorm,
        MemoryKernelClass::LayerNormBackward,
        MemoryKernelClass::Softmax,
        MemoryKernelClass::SoftmaxBackward,
        MemoryKernelClass::Dropout,
        MemoryKernelClass::BiasDropoutAdd,
        MemoryKernelClass::Gelu,
        MemoryKernelClass::Swiglu,
        MemoryKernelClass::OptimizerCopy,
        MemoryKernelClass::OptimizerUnscale,
        MemoryKernelClass::OptimizerL2Norm,
        MemoryKernelClass::OptimizerAdam,
    ];

    /// The name a profile's `memory.measured[].kernel` records.
    pub fn name(self) -> &'static str {
        match self {
            MemoryKernelClass::LayerNorm => "layernorm",
            MemoryKernelClass::LayerNormBackward => "layernorm.bwd",
            MemoryKernelClass::Softmax => "softmax",
            MemoryKernelClass::SoftmaxBackward => "softmax.bwd",
            MemoryKernelClass::Dropout => "dropout",
            MemoryKernelClass::BiasDropoutAdd => "bias_dropout_add",
            MemoryKernelClass::Gelu => "gelu",
            MemoryKernelClass::Swiglu => "swiglu",
            MemoryKernelClass::OptimizerCopy => "optimizer.copy",
            MemoryKernelClass::OptimizerUnscale => "optimizer.unscale",
            MemoryKernelClass::OptimizerL2Norm => "optimizer.l2norm",
            MemoryKernelClass::OptimizerAdam => "optimizer.adam",
        }
    }

    /// The class a profile entry's `kernel` names (`None` for "copy" and
    /// any other name).
    pub fn from_name(name: &str) -> Option<MemoryKernelClass> {
        MemoryKernelClass::ALL
            .into_iter()
            .find(|class| class.name() == name)
    }

    /// The class of a model kernel by its name in [`crate::ops`],
    /// [`crate::pipeline_ends`] or the optimizer's phases (`None`: the
    /// bandwidth model). Not read by the cost model, which reads the mark set
    /// where the kernel is created ([`crate::step::Kernel::memory_class`]):
    /// kept as the tests' cross-check that every mark is this class.
    pub fn of_kernel(kernel_name: &str) -> Option<MemoryKernelClass> {
        use MemoryKernelClass::*;
        Some(match kernel_name {
            "layernorm_1" | "layernorm_2" | "final_layernorm" => LayerNorm,
            "layernorm_1.bwd" | "layernorm_2.bwd" | "final_layernorm.bwd" => LayerNormBackward,
            "softmax" => Softmax,
            "softmax.bwd" => SoftmaxBackward,
            "attention_dropout" | "embedding.dropout" => Dropout,
            "dropout_residual_1" | "dropout_residual_2" => BiasDropoutAdd,
            "gelu" => Gelu,
            "swiglu" => Swiglu,
            "optimizer.copy" | "optimizer.copy_params" => OptimizerCopy,
            "optimizer.unscale" => OptimizerUnscale,
            "optimizer.l2norm" => OptimizerL2Norm,
            "optimizer.adam" => OptimizerAdam,
            _ => return None,
        })
    }

    /// Bytes read plus written per element (per parameter for the optimizer
    /// classes) as [`crate::ops`] counts the kernel: what calibrate records
    /// as a measurement's `bytes`, over the elements it timed.
    pub fn bytes_per_element(self) -> u64 {
        match self {
            MemoryKernelClass::LayerNorm => 4,
            MemoryKernelClass::LayerNormBackward => 6,
            MemoryKernelClass::Softmax => 4,
            MemoryKernelClass::SoftmaxBackward => 6,
            MemoryKernelClass::Dropout => 5,
            MemoryKernelClass::BiasDropoutAdd => 7,
            MemoryKernelClass::Gelu => 4,
            MemoryKernelClass::Swiglu => 6,
            MemoryKernelClass::OptimizerCopy => 6,
            MemoryKernelClass::OptimizerUnscale => 8,
            MemoryKernelClass::OptimizerL2Norm => 4,
            MemoryKernelClass::OptimizerAdam => 28,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{self, Step};

    #[test]
    fn names_round_trip_and_are_distinct() {
        for class in MemoryKernelClass::ALL {
            assert_eq!(MemoryKernelClass::from_name(class.name()), Some(class));
        }
        assert_eq!(MemoryKernelClass::from_name("copy"), None);
        let mut names: Vec<_> = MemoryKernelClass::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), MemoryKernelClass::ALL.len());
    }

    /// Every marked kernel of a layer (with and without sequence parallelism)
    /// and of the pipeline's ends moves its class's bytes per element of the
    /// tensor it works on, so a calibrated entry and the model kernel are
    /// compared at the same byte count.
    #[test]
    fn mapped_model_kernels_move_their_class_bytes_per_element() {
        let model = crate::presets::preset("gpt3-175b").unwrap();
        let (b, t) = (2u64, 8u64);
        let tokens = (b * model.seq_len) as f64;
        let scores = (b * model.heads / t * model.seq_len * model.seq_len) as f64;
        let ffn = tokens * (model.ffn() / t) as f64;
        let mut checked = Vec::new();
        for sequence_parallel in [false, true] {
            let options = ops::LayerOptions {
                sequence_parallel,
                ..Default::default()
            };
            let hidden = tokens * model.hidden as f64 / if sequence_parallel { 8.0 } else { 1.0 };
            let layer = ops::transformer_layer_with(&model, b, crate::nz(t), options);
            let head = crate::pipeline_ends::head(&model, b, crate::nz(t));
            let embedding = crate::pipeline_ends::embedding(&model, b, crate::nz(t));
            let steps = layer
                .forward
                .iter()
                .chain(&layer.backward)
                .chain(&head.forward)
                .chain(&head.backward)
                .chain(&embedding.forward)
                .chain(&embedding.backward);
            for step in steps {
                let Step::Kernel(kernel) = step else { continue };
                let Some(class) = kernel.memory_class else {
                    continue;
                };
                let elements = match kernel.name {
                    "softmax" | "softmax.bwd" | "attention_dropout" => scores,
                    "gelu" => ffn,
                    // The head and embedding work on the full b·s·h activation.
                    "final_layernorm" | "final_layernorm.bwd" | "embedding.dropout" => {
                        tokens * model.hidden as f64
                    }
                    _ => hidden,
                };
                assert_eq!(
                    kernel.bytes,
                    class.bytes_per_element() as f64 * elements,
                    "{}",
                    kernel.name
                );
                checked.push(kernel.name);
            }
        }
        checked.sort();
        checked.dedup();
        for name in [
            "layernorm_1",
            "layernorm_2.bwd",
            "final_layernorm",
            "final_layernorm.bwd",
            "softmax",
            "softmax.bwd",
            "attention_dropout",
            "embedding.dropout",
            "dropout_residual_1",
            "dropout_residual_2",
            "gelu",
        ] {
            assert!(checked.contains(&name), "{name} was not checked");
        }
    }

    /// Checks every kernel of `steps`: its mark is the class its name lists.
    /// Returns the names of the marked ones.
    fn marks_agree_with_names(steps: &[Step], case: &str) -> Vec<&'static str> {
        let mut marked = Vec::new();
        for step in steps {
            let Step::Kernel(kernel) = step else { continue };
            assert_eq!(
                kernel.memory_class,
                MemoryKernelClass::of_kernel(kernel.name),
                "{case}: {}",
                kernel.name
            );
            if kernel.memory_class.is_some() {
                marked.push(kernel.name);
            }
        }
        marked
    }

    /// The kernels of one layer of `model` and of the pipeline's ends at
    /// tensor parallelism `t` under `options`, as built and as FP8 runs them.
    fn layer_and_ends(model: &crate::ModelSpec, t: u64, options: ops::LayerOptions) -> Vec<Step> {
        let t = crate::nz(t);
        let layer = ops::transformer_layer_with(model, 1, t, options);
        let fp8 = crate::fp8::fp8_layer(layer.clone());
        let head = crate::pipeline_ends::head(model, 1, t);
        let embedding = crate::pipeline_ends::embedding(model, 1, t);
        let mut steps = crate::pipeline_ends::data_load(model, 1);
        for pass in [layer, fp8, head, embedding] {
            steps.extend(pass.forward);
            steps.extend(pass.backward);
        }
        steps
    }

    /// Where a kernel is created its mark is set to the class
    /// [`MemoryKernelClass::of_kernel`] lists for its name, for every preset
    /// (and a mixture's dense layers) under tensor parallelism 1 and 2 with
    /// and without sequence parallelism, fused and eager softmax, unfused and
    /// fused attention, context parallelism 1 and 2, in bf16 and FP8, and at
    /// the pipeline's ends: the cost model reads the mark, and it cannot
    /// drift from the names calibrate's classes were defined by.
    #[test]
    fn every_kernel_is_marked_with_the_class_its_name_lists() {
        let mut marked = std::collections::BTreeSet::new();
        let mut cases = 0;
        for name in crate::presets::preset_names() {
            let model = crate::presets::preset(&name).unwrap();
            let dense = crate::ModelSpec {
                moe: None,
                ..model.clone()
            };
            let tokens = model.seq_len * model.moe.as_ref().map_or(0, |moe| moe.top_k);
            let moe = model
                .moe
                .as_ref()
                .map(|_| crate::moe_ops::MoeLayerOptions::dropless(crate::nz(1), tokens));
            for t in [1, 2] {
                for sequence_parallel in [false, true] {
                    for fused_softmax_max_seq_len in [Some(u64::MAX), None] {
                        for fused_attention in [false, true] {
                            for cp in [1, 2] {
                                let options = ops::LayerOptions {
                                    sequence_parallel,
                                    fused_softmax_max_seq_len,
                                    fused_attention,
                                    context_parallel: crate::nz(cp),
                                    moe,
                                };
                                let case = format!("{name} t={t} {options:?}");
                                let steps = layer_and_ends(&model, t, options);
                                marked.extend(marks_agree_with_names(&steps, &case));
                                let options = ops::LayerOptions {
                                    moe: None,
                                    ..options
                                };
                                let steps = layer_and_ends(&dense, t, options);
                                marked.extend(marks_agree_with_names(&steps, &case));
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(cases >= 32 * 20, "{cases}");
        // Every name of_kernel lists but the optimizer's phases (checked
        // with them, `sim::cost::gradients`) is created marked somewhere.
        for name in [
            "layernorm_1",
            "layernorm_1.bwd",
            "layernorm_2",
            "layernorm_2.bwd",
            "final_layernorm",
            "final_layernorm.bwd",
            "softmax",
            "softmax.bwd",
            "attention_dropout",
            "embedding.dropout",
            "dropout_residual_1",
            "dropout_residual_2",
            "gelu",
            "swiglu",
        ] {
            assert!(marked.contains(name), "{name} was never marked");
        }
    }

    #[test]
    fn backwards_without_their_own_timed_kernel_keep_the_bandwidth_model() {
        for name in [
            "attention_dropout.bwd",
            "dropout_residual_1.bwd",
            "gelu.bwd",
            "softmax.softmax_fp32",
            "softmax.to_fp32",
            "qkv_gemm",
            "copy",
            "",
        ] {
            assert_eq!(MemoryKernelClass::of_kernel(name), None, "{name}");
        }
        assert_eq!(
            MemoryKernelClass::of_kernel("final_layernorm"),
            Some(MemoryKernelClass::LayerNorm)
        );
    }
}
