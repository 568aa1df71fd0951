//! # models — what a decoder-only transformer is, in numbers
//!
//! GPT-style by default; Llama-style blocks (grouped-query attention, SwiGLU,
//! RMSNorm, RoPE, no biases, untied embeddings) by [`ModelSpec`]'s optional keys;
//! mixtures of experts and multi-head latent attention ([`moe`]) are counted
//! (parameters, active parameters, FLOPs per token) and lowered to kernels
//! ([`moe_ops`], [`mla_ops`]).
//!
//! This crate knows nothing of time, GPUs or events. It answers:
//! - what a model is ([`ModelSpec`], read from JSON, a Hugging Face
//!   `config.json` ([`hf_config`]) or a built-in [`preset`]);
//! - how many parameters it has and how many FLOPs an iteration costs
//!   ([`formulas`], Megatron-LM SC21 Eq. 2 and Eq. 3);
//! - which kernels one transformer layer runs forward and backward for a
//!   tensor-parallel degree `t` and microbatch `b`, with FLOPs and bytes moved
//!   ([`ops`]; GEMM shapes and cuBLAS operand layouts in [`gemm`]), including whether Megatron's fused softmax kernel applies
//!   ([`softmax`]);
//! - which of those memory-bound kernels are the same operation as a kernel
//!   `calibrate` times, and the bytes per element it moves ([`memory_class`]);
//! - how much memory weights, optimizer states and activations take ([`memory`]);
//! - which parameter tensors a layer, the embedding and the head register
//!   ([`parameter_tensors`]);
//! - how many parameters each GPU holds under tensor and pipeline sharding
//!   ([`sharding`]).
//!
//! ```
//! let gpt3 = models::preset("gpt3-175b").unwrap();
//! let params = models::formulas::parameter_count(&gpt3);
//! assert!((params as f64 - 174.6e9).abs() < 0.5e9);
//! ```

pub mod attention;
pub mod attention_shape;
pub mod dropout;
pub mod element_bytes;
pub mod formulas;
pub mod fp8;
pub mod gemm;
pub mod hf_config;
mod hf_config_dense;
mod hf_config_moe;
mod hf_fields;
pub mod kernel_role;
pub mod limits;
pub mod linear;
pub mod memory;
pub mod memory_class;
pub mod mla_ops;
pub mod moe;
pub mod moe_ops;
pub mod ops;
pub mod parameter_tensors;
pub mod pipeline_ends;
pub mod pipeline_layout;
mod presets;
pub mod qk_norm;
pub mod ring_attention;
pub mod sharding;
pub mod softmax;
mod spec;
mod spec_loading;
mod spec_validation;
pub mod stage_map;
pub mod step;
pub mod unfused_attention;

pub use dropout::DropoutRate;
pub use moe::{CapacityFactor, MlaSpec, MoeSpec, RouterType};
pub use presets::{preset, preset_names};
pub use spec::{FfnType, ModelError, ModelSpec, NormType, TrainedDtype};

/// A degree written in a test: `n`, which must not be 0.
#[cfg(test)]
pub(crate) fn degree(n: u32) -> std::num::NonZeroU32 {
    std::num::NonZeroU32::new(n).expect("a test's degree is at least 1")
}

/// A degree written in a test as a `NonZeroU64`: `n`, which must not be 0.
#[cfg(test)]
pub(crate) fn nz(n: u64) -> std::num::NonZeroU64 {
    std::num::NonZeroU64::new(n).expect("a test's degree is at least 1")
}
