//! The kernels one transformer layer runs, in order, for tensor-parallel
//! degree `t` and microbatch size `b` (Megatron-LM's layer: Shoeybi et al.
//! 2019 Fig. 3; Korthikanti et al. 2022 Fig. 4 for the memory-bound ops).
//!
//! Each [`Step`] is either a kernel with its FLOPs and the bytes it moves
//! through HBM, or a tensor-parallel all-reduce with its payload. FLOPs count
//! only matrix multiplications, as Megatron's Eq. 3 does; elementwise kernels
//! are costed by bytes. All tensors are fp16 (2 bytes) unless noted; dropout
//! masks are 1 byte per element. Without sequence parallelism, LayerNorm,
//! dropout and residual adds run replicated on every tensor rank over the full
//! `b·s·h` activation.
//!
//! Today's blocks ([`ModelSpec`]'s `kv_heads`, `ffn_type`, `norm`, `bias`,
//! `rope`) change the layer as Megatron-Core runs them with its unfused
//! ("local") core attention: grouped-query attention narrows the QKV GEMM to
//! h + 2·kv·d columns and adds a copy expanding K and V to every query head
//! (`repeat_interleave`, backward a sum over each group) before the score
//! GEMM; RoPE adds a rotation of Q and K (read and write, 4 B per element,
//! the cos/sin table not counted); SwiGLU fuses gate and up into one GEMM of
//! 2·ffn/t columns followed by the `swiglu` kernel (6 B per output element;
//! its backward reads the gradient and both inputs and writes both input
//! gradients, 10 B); RMSNorm moves LayerNorm's bytes under its own names
//! (`rmsnorm_1`, ...: not the operation calibrate times as `layernorm`, so
//! not marked with its class and costed at achieved bandwidth); without
//! biases there are no bias-gradient kernels. Dropout kernels run where the
//! spec's rates are above 0
//! ([`crate::dropout`]: Megatron's default 0.1 for GPT-style specs, none for
//! the Llama-style presets). Under context parallelism
//! ([`LayerOptions::context_parallel`]) every kernel runs on the rank's s/cp
//! tokens and the attention core is Transformer Engine's ring attention
//! ([`ring_attention_steps`]). Multi-head latent attention
//! (`mla`) replaces the QKV GEMM and rotation by its latent projections
//! ([`crate::mla_ops`]); its core runs with d_qk and d_v apart and the
//! output projection maps a·d_v to h.

pub use crate::attention::FusedAttentionShape;
pub use crate::element_bytes::FP16_BYTES;
pub use crate::gemm::{GemmLayout, GemmShape};
pub use crate::kernel_role::KernelRole;
use crate::linear::linear_with_bias;
pub use crate::linear::{activation_gemm_with_gradients, gemm_with_gradients};
use crate::memory_class::MemoryKernelClass;
pub use crate::parameter_tensors::{
    embedding_parameter_tensors, head_parameter_tensors, layer_parameter_tensors,
    layer_parameter_tensors_with_experts, ParameterTensor,
};
pub use crate::ring_attention::{ring_attention_steps, RING_ATTENTION_KERNELS_PER_STEP};
use crate::spec::ModelSpec;
use crate::spec::{FfnType, NormType};
pub use crate::step::{Kernel, KernelClass, PassSteps, Step};
use crate::unfused_attention::UnfusedCore;
use crate::{attention, softmax};
use std::num::NonZeroU64;

/// Names of a layer's norms and the final norm, by the model's norm.
fn norm_names(norm: NormType) -> [&'static str; 4] {
    match norm {
        NormType::Layernorm => [
            "layernorm_1",
            "layernorm_1.bwd",
            "layernorm_2",
            "layernorm_2.bwd",
        ],
        NormType::Rmsnorm => ["rmsnorm_1", "rmsnorm_1.bwd", "rmsnorm_2", "rmsnorm_2.bwd"],
    }
}

/// The final norm's forward and backward kernel names (see [`norm_names`]).
pub fn final_norm_names(norm: NormType) -> [&'static str; 2] {
    match norm {
        NormType::Layernorm => ["final_layernorm", "final_layernorm.bwd"],
        NormType::Rmsnorm => ["final_rmsnorm", "final_rmsnorm.bwd"],
    }
}

/// The memory-bound classes of a norm's forward and backward kernels, the
/// layers' and the final one's: LayerNorm's are the operations calibrate
/// times as `layernorm` and `layernorm.bwd`; RMSNorm's are not (no class).
pub fn norm_classes(norm: NormType) -> [Option<MemoryKernelClass>; 2] {
    match norm {
        NormType::Layernorm => [
            Some(MemoryKernelClass::LayerNorm),
            Some(MemoryKernelClass::LayerNormBackward),
        ],
        NormType::Rmsnorm => [None, None],
    }
}

/// Implementation choices that change a layer's kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerOptions {
    /// Megatron's sequence parallelism (Korthikanti et al. 2022, Sec. 4.2.2).
    pub sequence_parallel: bool,
    /// The longest sequence the software's fused softmax kernel accepts
    /// (`None`: it has none); see [`crate::softmax`].
    pub fused_softmax_max_seq_len: Option<u64>,
    /// The attention core as one fused kernel forward and one backward
    /// ([`crate::attention`]) instead of score GEMM, softmax, dropout and
    /// value GEMM.
    pub fused_attention: bool,
    /// Context-parallel degree cp (1: none). With cp > 1 every kernel works
    /// on this rank's s/cp tokens and the attention core is Transformer
    /// Engine's ring attention ([`ring_attention_steps`]).
    pub context_parallel: NonZeroU64,
    /// A model with experts: its MLP block is the mixture of experts under
    /// this expert parallelism ([`crate::moe_ops`]).
    pub moe: Option<crate::moe_ops::MoeLayerOptions>,
}

impl Default for LayerOptions {
    /// No sequence parallelism; a fused softmax for any sequence length;
    /// the unfused attention core.
    fn default() -> Self {
        LayerOptions {
            sequence_parallel: false,
            fused_softmax_max_seq_len: Some(u64::MAX),
            fused_attention: false,
            context_parallel: NonZeroU64::MIN,
            moe: None,
        }
    }
}

/// Kernels of one transformer layer on one tensor-parallel rank with the
/// default [`LayerOptions`].
pub fn transformer_layer(
    model: &ModelSpec,
    microbatch: u64,
    tensor_parallel: NonZeroU64,
) -> PassSteps {
    transformer_layer_with(model, microbatch, tensor_parallel, LayerOptions::default())
}

/// Kernels of one transformer layer on one tensor-parallel rank. With
/// `sequence_parallel` (Korthikanti et al. 2022, Sec. 4.2.2) LayerNorm,
/// dropout and residual adds run on 1/t of the sequence, and each all-reduce
/// becomes a reduce-scatter plus an all-gather of the same tensor — listed here
/// still as one `TensorAllReduce`, which a ring costs identically (RS + AG = AR:
/// the same steps and the same bytes on the wire).
pub fn transformer_layer_with(
    model: &ModelSpec,
    microbatch: u64,
    tensor_parallel: NonZeroU64,
    options: LayerOptions,
) -> PassSteps {
    let sequence_parallel = options.sequence_parallel;
    let cp = options.context_parallel.get();
    // Each context-parallel rank holds s/cp tokens of every sequence.
    let (b, s, h, t) = (
        microbatch,
        model.seq_len / cp,
        model.hidden,
        tensor_parallel,
    );
    let heads_per_rank = model.heads / t;
    let kv_heads_per_rank = model.kv_heads() / t;
    let head_dim = model.head_dim();
    // The attention core's query/key and value head dimensions (both
    // head_dim but with latent attention).
    let (core_qk_dim, core_v_dim) = crate::mla_ops::core_head_dims(model);
    let ffn_per_rank = model.ffn() / t;
    let qkv_per_rank = model.qkv_width() / t;
    let [norm_1, norm_1_bwd, norm_2, norm_2_bwd] = norm_names(model.norm);
    let [norm_class, norm_bwd_class] = norm_classes(model.norm);
    // A bias's output elements, when the model has that bias.
    let bias = |elems: f64| model.bias.then_some(elems);
    // Every kernel before a column-parallel layer's input-gradient all-reduce
    // that overlaps it: the weight-gradient GEMM, and the bias gradient.
    let column_window = |has_bias: bool| 1 + u32::from(has_bias);
    let tokens = b * s;
    // Elementwise work on the full hidden activation, replicated on every tensor
    // rank unless the sequence is split across them.
    let hidden_elems = (tokens * h) as f64
        / if sequence_parallel {
            t.get() as f64
        } else {
            1.0
        };
    let ffn_elems = (tokens * ffn_per_rank) as f64;
    let allreduce_bytes = tokens * h * FP16_BYTES;

    let mut pass = PassSteps::default();
    // Backward steps are collected in forward order per block, then reversed
    // block by block so the backward runs in reverse layer order.
    let mut attention_bwd = Vec::new();
    let mut mlp_bwd = Vec::new();

    // --- attention block ---
    pass.forward.push(
        Step::memory(KernelRole::Forward, norm_1, 4.0 * hidden_elems).with_memory_class(norm_class),
    );
    attention_bwd.push(vec![Step::memory(
        KernelRole::Backward,
        norm_1_bwd,
        6.0 * hidden_elems,
    )
    .with_memory_class(norm_bwd_class)]);
    if let Some(mla) = &model.mla {
        // Multi-head latent attention's projections ([`crate::mla_ops`]).
        let (forward, backward) = crate::mla_ops::mla_projections(model, mla, tokens, t);
        pass.forward.extend(forward);
        attention_bwd.extend(backward);
    } else {
        let mut qkv_bwd = Vec::new();
        linear_with_bias(
            &mut pass,
            [
                "qkv_gemm",
                "qkv_gemm.dgrad",
                "qkv_gemm.wgrad",
                "qkv_gemm.bias_grad",
            ],
            ["qkv_gemm.cast_transpose", "qkv_gemm.dgrad.cast_transpose"],
            GemmShape {
                batch: 1,
                m: tokens,
                n: qkv_per_rank,
                k: h,
            },
            model
                .has_qkv_bias()
                .then_some((tokens * qkv_per_rank) as f64),
            &mut qkv_bwd,
        );
        // Column-parallel input: its gradient is all-reduced (Megatron's `f`).
        qkv_bwd.push(Step::TensorAllReduce {
            bytes: allreduce_bytes,
            async_window: column_window(model.has_qkv_bias()),
        });
        attention_bwd.push(qkv_bwd);
        // Qwen3's per-head query and key norms, between the QKV GEMM and RoPE.
        let (qk_norms, qk_norms_bwd) =
            crate::qk_norm::qk_norm_steps(model, tokens, heads_per_rank, kv_heads_per_rank);
        pass.forward.extend(qk_norms);
        attention_bwd.push(qk_norms_bwd);
        if model.rope {
            // Rotate Q and K: read and write each element once.
            let rotated = (tokens * (heads_per_rank + kv_heads_per_rank) * head_dim) as f64;
            pass.forward.push(Step::memory(
                KernelRole::Forward,
                "rope",
                2.0 * FP16_BYTES as f64 * rotated,
            ));
            attention_bwd.push(vec![Step::memory(
                KernelRole::Backward,
                "rope.bwd",
                2.0 * FP16_BYTES as f64 * rotated,
            )]);
        }
    }
    if cp > 1 {
        let (forward, backward) = ring_attention_steps(
            b,
            heads_per_rank,
            s * cp,
            head_dim,
            options.context_parallel,
            model.attention_dropout.is_on(),
        );
        pass.forward.extend(forward);
        attention_bwd.push(backward);
    } else if options.fused_attention {
        let (forward, backward) = attention::fused_attention_with_dims(
            b,
            s,
            heads_per_rank,
            kv_heads_per_rank,
            core_qk_dim,
            core_v_dim,
            model.attention_dropout.is_on(),
        );
        pass.forward.push(forward);
        attention_bwd.push(vec![backward]);
    } else {
        if kv_heads_per_rank < heads_per_rank {
            // K and V: read kv heads, write every query head's copy; backward
            // reads the copies' gradients and writes their sums.
            let copies = (2 * tokens * (heads_per_rank + kv_heads_per_rank) * head_dim) as f64;
            pass.forward.push(
                Step::memory(
                    KernelRole::Forward,
                    "gqa_expand_kv",
                    FP16_BYTES as f64 * copies,
                )
                .in_attention_core(),
            );
            attention_bwd.push(vec![Step::memory(
                KernelRole::Backward,
                "gqa_expand_kv.bwd",
                FP16_BYTES as f64 * copies,
            )
            .in_attention_core()]);
        }
        let core = UnfusedCore {
            batch: b,
            heads: heads_per_rank,
            seq_len: s,
            qk_dim: core_qk_dim,
            v_dim: core_v_dim,
            softmax: softmax::megatron_attention_softmax(
                b * heads_per_rank,
                s,
                options.fused_softmax_max_seq_len,
            ),
            dropout: model.attention_dropout.is_on(),
        }
        .steps();
        pass.forward.extend(core.forward);
        attention_bwd.extend(core.backward_groups);
    }
    let mut proj_bwd = Vec::new();
    linear_with_bias(
        &mut pass,
        [
            "output_projection",
            "output_projection.dgrad",
            "output_projection.wgrad",
            "output_projection.bias_grad",
        ],
        [
            "output_projection.cast_transpose",
            "output_projection.dgrad.cast_transpose",
        ],
        GemmShape {
            batch: 1,
            m: tokens,
            n: h,
            // The heads' outputs: a·head_dim/t (h/t unless `head_dim` widens
            // the heads), or MLA's a·v_head_dim/t.
            k: crate::mla_ops::attention_output_width(model, t),
        },
        bias(hidden_elems),
        &mut proj_bwd,
    );
    attention_bwd.push(proj_bwd);
    // Row-parallel output: partial sums all-reduced (Megatron's `g`).
    pass.forward.push(Step::TensorAllReduce {
        bytes: allreduce_bytes,
        async_window: 0,
    });
    let (residual, residual_bwd) = residual_add(
        model,
        hidden_elems,
        [
            "dropout_residual_1",
            "dropout_residual_1.bwd",
            "residual_add_1",
        ],
    );
    pass.forward.push(residual);
    attention_bwd.push(residual_bwd);

    // --- MLP block ---
    pass.forward.push(
        Step::memory(KernelRole::Forward, norm_2, 4.0 * hidden_elems).with_memory_class(norm_class),
    );
    mlp_bwd.push(vec![Step::memory(
        KernelRole::Backward,
        norm_2_bwd,
        6.0 * hidden_elems,
    )
    .with_memory_class(norm_bwd_class)]);
    if let (Some(moe), Some(_)) = (options.moe, &model.moe) {
        // Under t > 1 (with sequence parallelism) each tensor rank routes its
        // own 1/t of the tokens; the block has no tensor-parallel collective.
        let (forward, backward) =
            crate::moe_ops::moe_block(model, crate::moe_ops::tokens_per_rank(tokens, t), moe);
        pass.forward.extend(forward);
        mlp_bwd.extend(backward);
    } else {
        // SwiGLU's gate and up matrices run as one GEMM of twice the columns.
        let fc1_columns = match model.ffn_type {
            FfnType::Gelu => ffn_per_rank,
            FfnType::Swiglu => 2 * ffn_per_rank,
        };
        let mut fc1_bwd = Vec::new();
        linear_with_bias(
            &mut pass,
            [
                "mlp_fc1",
                "mlp_fc1.dgrad",
                "mlp_fc1.wgrad",
                "mlp_fc1.bias_grad",
            ],
            ["mlp_fc1.cast_transpose", "mlp_fc1.dgrad.cast_transpose"],
            GemmShape {
                batch: 1,
                m: tokens,
                n: fc1_columns,
                k: h,
            },
            bias((tokens * fc1_columns) as f64),
            &mut fc1_bwd,
        );
        fc1_bwd.push(Step::TensorAllReduce {
            bytes: allreduce_bytes,
            async_window: column_window(model.bias),
        });
        mlp_bwd.push(fc1_bwd);
        match model.ffn_type {
            FfnType::Gelu => {
                pass.forward.push(Step::memory_of_class(
                    KernelRole::Forward,
                    "gelu",
                    MemoryKernelClass::Gelu,
                    4.0 * ffn_elems,
                ));
                mlp_bwd.push(vec![Step::memory(
                    KernelRole::Backward,
                    "gelu.bwd",
                    6.0 * ffn_elems,
                )]);
            }
            FfnType::Swiglu => {
                pass.forward.push(Step::memory_of_class(
                    KernelRole::Forward,
                    "swiglu",
                    MemoryKernelClass::Swiglu,
                    6.0 * ffn_elems,
                ));
                mlp_bwd.push(vec![Step::memory(
                    KernelRole::Backward,
                    "swiglu.bwd",
                    10.0 * ffn_elems,
                )]);
            }
        }
        let mut fc2_bwd = Vec::new();
        linear_with_bias(
            &mut pass,
            [
                "mlp_fc2",
                "mlp_fc2.dgrad",
                "mlp_fc2.wgrad",
                "mlp_fc2.bias_grad",
            ],
            ["mlp_fc2.cast_transpose", "mlp_fc2.dgrad.cast_transpose"],
            GemmShape {
                batch: 1,
                m: tokens,
                n: h,
                k: ffn_per_rank,
            },
            bias(hidden_elems),
            &mut fc2_bwd,
        );
        mlp_bwd.push(fc2_bwd);
        pass.forward.push(Step::TensorAllReduce {
            bytes: allreduce_bytes,
            async_window: 0,
        });
    }
    let (residual, residual_bwd) = residual_add(
        model,
        hidden_elems,
        [
            "dropout_residual_2",
            "dropout_residual_2.bwd",
            "residual_add_2",
        ],
    );
    pass.forward.push(residual);
    mlp_bwd.push(residual_bwd);

    for block in mlp_bwd
        .into_iter()
        .rev()
        .chain(attention_bwd.into_iter().rev())
    {
        pass.backward.extend(block);
    }
    pass
}

/// The block's output joining the residual stream, named [with dropout,
/// its backward, without dropout], as Megatron's fused bias-dropout-add runs it
/// over `hidden_elems`: with hidden dropout, read the output and the
/// residual, write the sum and a one-byte mask (7 B per element), and a
/// backward through the mask (5 B); without ([`crate::dropout`]: p = 0 draws
/// no mask), the same kernel adds only (6 B) and the gradient passes
/// through both branches untouched, with no backward kernel.
fn residual_add(
    model: &ModelSpec,
    hidden_elems: f64,
    [forward, backward, plain]: [&'static str; 3],
) -> (Step, Vec<Step>) {
    if model.hidden_dropout.is_on() {
        (
            Step::memory_of_class(
                KernelRole::Forward,
                forward,
                MemoryKernelClass::BiasDropoutAdd,
                7.0 * hidden_elems,
            ),
            vec![Step::memory(
                KernelRole::Backward,
                backward,
                5.0 * hidden_elems,
            )],
        )
    } else {
        (
            Step::memory(KernelRole::Forward, plain, 6.0 * hidden_elems),
            Vec::new(),
        )
    }
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "ops_block_tests.rs"]
mod block_tests;
