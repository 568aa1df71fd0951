//! What a layer's passes are made of: [`Step`]s, each a kernel with its
//! FLOPs, the bytes it moves through HBM and its role, or a collective with
//! its payload; a piece of the model's forward and backward steps is
//! [`PassSteps`]. [`crate::ops`] builds them for a transformer layer.
//!
//! What the cost model needs to know of a kernel beyond its class, FLOPs
//! and bytes is marked where the kernel is created, never read from its
//! name: its role, whether it belongs to the attention core, whether it is
//! a Transformer Engine linear layer's GEMM ([`Kernel::fp8_linear`]), and
//! which memory-bound class `calibrate` times it as
//! ([`Kernel::memory_class`]).

use crate::attention_shape::FusedAttentionShape;
use crate::gemm::{GemmLayout, GemmShape};
use crate::kernel_role::KernelRole;
use crate::memory_class::MemoryKernelClass;
use serde::Serialize;

/// What a kernel is, for the cost model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum KernelClass {
    /// A tensor-core GEMM (cost: FLOPs at shape-dependent efficiency, or
    /// bytes if memory-bound), with the operand layout cuBLAS is called with.
    Gemm {
        shape: GemmShape,
        layout: GemmLayout,
    },
    /// A GEMM on FP8 inputs (Transformer Engine's linear layers under
    /// `--precision fp8`, [`crate::fp8`]): costed at the GPU's FP8 rate.
    Fp8Gemm {
        shape: GemmShape,
        layout: GemmLayout,
    },
    /// An elementwise or reduction kernel (cost: bytes at achieved HBM bandwidth).
    MemoryBound,
    /// The attention core as one fused kernel ([`crate::attention`]).
    FusedAttention(FusedAttentionShape),
}

/// One kernel launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Kernel {
    /// Stable name, e.g. "qkv_gemm", "qkv_gemm.dgrad", "softmax.bwd".
    pub name: &'static str,
    pub class: KernelClass,
    /// Matrix-multiply FLOPs (0 for memory-bound kernels).
    pub flops: f64,
    /// Bytes read plus written in device memory.
    pub bytes: f64,
    /// Its part in the training step, set where it is created.
    pub role: KernelRole,
    /// Part of the attention core (scores, softmax, dropout, the product
    /// with the values, the key/value expansion before them; or the fused
    /// kernel): what selective recomputation re-runs. Set where the core's
    /// kernels are created ([`Step::in_attention_core`]).
    pub attention_core: bool,
    /// A Transformer Engine linear layer's GEMM, which an FP8 recipe runs in
    /// FP8 ([`crate::fp8`]). Set where the GEMM is created
    /// ([`Step::te_linear`]); `None` for every other kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fp8_linear: Option<Fp8Linear>,
    /// The memory-bound operation `calibrate` times that this kernel is
    /// ([`crate::memory_class`]): the cost model prices it from that class's
    /// measurements. Set where the kernel is created
    /// ([`Step::memory_of_class`]); `None` for every other kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_class: Option<MemoryKernelClass>,
}

/// What an FP8 recipe does to a Transformer Engine linear layer's GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Fp8Linear {
    /// The cast-transpose before it: of its input before the forward GEMM,
    /// of its output gradient before the data-gradient GEMM; none before
    /// the weight-gradient GEMM (its operands were cast for the other two).
    pub cast: Option<&'static str>,
}

/// One step of a layer's forward or backward pass.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Step {
    Kernel(Kernel),
    /// An all-reduce over the tensor-parallel group of this many bytes,
    /// blocking as Megatron SC21 issues it. `async_window` counts the kernels
    /// just before it that Megatron's asynchronous tensor all-reduce
    /// (`--async-tensor-model-parallel-allreduce`, 2022) overlaps it with: a
    /// column-parallel layer's backward launches the input-gradient all-reduce
    /// after its data-gradient GEMM and waits for it after the weight-gradient
    /// GEMM (and bias gradient). 0: always blocking.
    TensorAllReduce {
        bytes: u64,
        async_window: u32,
    },
    /// A mixture-of-experts layer's token dispatch or combine: an all-to-all
    /// over the expert-parallel group, blocking (Megatron-Core's all-to-all
    /// token dispatcher), of this many bytes sent by the busiest rank
    /// ([`crate::moe_ops`]); under expert tensor parallelism (etp > 1) with
    /// the collective over the expert tensor group that goes with it — the
    /// all-gather after a dispatch, the reduce-scatter before a combine —
    /// of `expert_tensor_bytes` (the gathered buffer; 0 at etp = 1).
    ExpertAllToAll {
        bytes: u64,
        expert_tensor_bytes: u64,
    },
    /// The host waits here until the GPU has run every step before this one:
    /// a device-to-host read the next launches depend on (Megatron-Core's
    /// all-to-all token dispatcher reads the tokens per expert on the host to
    /// size the all-to-all and the experts' GEMMs, [`crate::moe_ops`]). No
    /// GPU work; the simulator splits a pass here into segments whose host
    /// issue waits for the GPU's previous segment.
    HostSync,
}

impl Step {
    /// A GEMM kernel of this shape, called in this layout.
    pub fn gemm(
        role: KernelRole,
        name: &'static str,
        shape: GemmShape,
        layout: GemmLayout,
    ) -> Step {
        Step::Kernel(Kernel {
            name,
            class: KernelClass::Gemm { shape, layout },
            flops: shape.flops(),
            bytes: shape.bytes(),
            role,
            attention_core: false,
            fp8_linear: None,
            memory_class: None,
        })
    }
    /// A memory-bound kernel moving `bytes` through HBM, of no class
    /// `calibrate` times.
    pub fn memory(role: KernelRole, name: &'static str, bytes: f64) -> Step {
        Step::Kernel(Kernel {
            name,
            class: KernelClass::MemoryBound,
            flops: 0.0,
            bytes,
            role,
            attention_core: false,
            fp8_linear: None,
            memory_class: None,
        })
    }

    /// A memory-bound kernel moving `bytes` through HBM that is the
    /// operation `calibrate` times as `class`.
    pub fn memory_of_class(
        role: KernelRole,
        name: &'static str,
        class: MemoryKernelClass,
        bytes: f64,
    ) -> Step {
        Step::memory(role, name, bytes).with_memory_class(Some(class))
    }

    /// The same step marked as of memory-bound class `class` (a kernel;
    /// other steps are returned as they are). `None` leaves it unmarked.
    pub fn with_memory_class(self, class: Option<MemoryKernelClass>) -> Step {
        match self {
            Step::Kernel(kernel) => Step::Kernel(Kernel {
                memory_class: class,
                ..kernel
            }),
            other => other,
        }
    }

    /// The same step marked as part of the attention core (a kernel; other
    /// steps are returned as they are).
    pub fn in_attention_core(self) -> Step {
        match self {
            Step::Kernel(kernel) => Step::Kernel(Kernel {
                attention_core: true,
                ..kernel
            }),
            other => other,
        }
    }

    /// The same step marked as a Transformer Engine linear layer's GEMM,
    /// with the cast before it (a kernel; other steps are returned as they
    /// are).
    pub fn te_linear(self, cast: Option<&'static str>) -> Step {
        match self {
            Step::Kernel(kernel) => Step::Kernel(Kernel {
                fp8_linear: Some(Fp8Linear { cast }),
                ..kernel
            }),
            other => other,
        }
    }
}

/// Forward and backward steps of one piece of the model.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct PassSteps {
    pub forward: Vec<Step>,
    pub backward: Vec<Step>,
}

impl PassSteps {
    /// Sum of matrix FLOPs over the given steps.
    pub fn flops(steps: &[Step]) -> f64 {
        steps
            .iter()
            .map(|step| match step {
                Step::Kernel(kernel) => kernel.flops,
                Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => 0.0,
            })
            .sum()
    }
}
