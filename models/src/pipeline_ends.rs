//! What a pipeline's ends run around the transformer layers, kernel by
//! kernel, as Megatron's code of 2021–2023 issues them: the batch loading of
//! every forward microbatch on a stage that holds the embedding or the head
//! (`pretrain_gpt.py` `get_batch`/`get_batch_pipe`: `mpu.broadcast_data` and
//! `get_ltor_masks_and_position_ids`), the embedding (`VocabParallelEmbedding`
//! plus position embedding, add, transpose, dropout), and the head (final
//! LayerNorm, the logits GEMM, `.float()`, `vocab_parallel_cross_entropy` and
//! the loss average), forward and backward.
//!
//! Many of these kernels are tiny (over b·s tokens, not b·s·h or b·s·V); they
//! are listed one by one because each costs a launch on the GPU and an issue
//! on the host, and at small hidden sizes those dominate. Large kernels carry
//! the bytes they move. The tensor-parallel all-reduces inside the
//! cross-entropy are the code's three `torch.distributed.all_reduce` calls.
//!
//! With RoPE there is no position table: no position lookup, add or table
//! gradient. With RMSNorm the final norm is `final_rmsnorm` (same bytes). An
//! untied output layer runs the same logits GEMMs on its own matrix.

use crate::kernel_role::KernelRole;
use crate::memory_class::MemoryKernelClass;
use crate::ops::{
    final_norm_names, gemm_with_gradients, norm_classes, GemmLayout, GemmShape, PassSteps, Step,
    FP16_BYTES,
};
use crate::spec::ModelSpec;
use std::num::NonZeroU64;

/// Bytes of one fp32 element.
const FP32_BYTES: f64 = 4.0;

/// PyTorch's embedding backward (`aten/src/ATen/native/cuda/Embedding.cu`,
/// `embedding_dense_backward_cuda`) runs one direct kernel when a microbatch
/// has at most this many indices (and no `scale_grad_by_freq`), else sorts
/// the indices (cub radix sort) and reduces per segment
/// (`EmbeddingBackwardKernel.cu`).
pub const EMBEDDING_BACKWARD_DIRECT_MAX_INDICES: u64 = 3072;

/// Kernels of the sorted embedding backward, counted from
/// `EmbeddingBackwardKernel.cu` (radix sort of the indices: 2; segment
/// offsets, partial counts and their scans: 4; per-segment gradient sums and
/// the scatter into the table: 2).
const EMBEDDING_BACKWARD_SORTED_KERNELS: usize = 8;

/// One tiny kernel per name, each reading and writing `elements` 4-byte
/// values (token ids, masks, per-token losses).
fn tiny(steps: &mut Vec<Step>, role: KernelRole, names: &[&'static str], elements: u64) {
    for name in names {
        steps.push(Step::memory(role, name, 2.0 * FP32_BYTES * elements as f64));
    }
}

/// What a stage that holds the embedding or the head runs before every
/// forward microbatch to load it: `mpu.broadcast_data` (`torch.cuda.LongTensor`
/// of the sizes, `.cpu()` of it, `torch.cat(...).cuda()` of the data; its two
/// `torch.distributed.broadcast` calls over the tensor group are not
/// counted), the shifted `tokens`/`labels` copies, and
/// `get_ltor_masks_and_position_ids`: `torch.tril(torch.ones((1, s, s)))`, the
/// loss mask, the position ids and `attention_mask < 0.5`.
pub fn data_load(model: &ModelSpec, microbatch: u64) -> Vec<Step> {
    let tokens = microbatch * model.seq_len;
    let mask_elems = (model.seq_len * model.seq_len) as f64;
    let mut steps = Vec::new();
    tiny(
        &mut steps,
        KernelRole::Forward,
        &[
            "data.sizes_to_gpu",
            "data.sizes_to_cpu",
            "data.batch_to_gpu",
            "data.tokens_copy",
            "data.labels_copy",
        ],
        tokens,
    );
    steps.push(Step::memory(
        KernelRole::Forward,
        "data.mask_ones",
        FP32_BYTES * mask_elems,
    ));
    steps.push(Step::memory(
        KernelRole::Forward,
        "data.mask_tril",
        2.0 * FP32_BYTES * mask_elems,
    ));
    tiny(
        &mut steps,
        KernelRole::Forward,
        &["data.loss_mask_ones", "data.position_ids"],
        tokens,
    );
    steps.push(Step::memory(
        KernelRole::Forward,
        "data.mask_compare",
        (FP32_BYTES + 1.0) * mask_elems,
    ));
    steps
}

/// The embedding on the first stage: vocab-parallel word lookup (with t > 1
/// the out-of-range ids masked before and the rows zeroed after, then the
/// output all-reduced), position lookup, add, transpose to [s, b, h] and
/// dropout (at a hidden dropout rate above 0). Backward: the same in
/// reverse, each table's gradient zeroed and scattered (directly, or sorted
/// above [`EMBEDDING_BACKWARD_DIRECT_MAX_INDICES`]).
pub fn embedding(model: &ModelSpec, microbatch: u64, tensor_parallel: NonZeroU64) -> PassSteps {
    let tensor_parallel = tensor_parallel.get();
    let tokens = microbatch * model.seq_len;
    let hidden_elems = (tokens * model.hidden) as f64;
    let fp16 = FP16_BYTES as f64;
    let split = tensor_parallel > 1;
    let mut forward = Vec::new();
    if split {
        tiny(
            &mut forward,
            KernelRole::Forward,
            &[
                "embedding.ids_below",
                "embedding.ids_above",
                "embedding.ids_out_of_range",
                "embedding.ids_clone",
                "embedding.ids_shift",
                "embedding.ids_zero_masked",
            ],
            tokens,
        );
    }
    // Gather b·s rows: read and write them.
    forward.push(Step::memory(
        KernelRole::Forward,
        "embedding.word_lookup",
        2.0 * fp16 * hidden_elems,
    ));
    if split {
        forward.push(Step::memory(
            KernelRole::Forward,
            "embedding.zero_masked_rows",
            2.0 * fp16 * hidden_elems,
        ));
        forward.push(Step::TensorAllReduce {
            bytes: tokens * model.hidden * FP16_BYTES,
            async_window: 0,
        });
    }
    if model.learned_positions() {
        forward.push(Step::memory(
            KernelRole::Forward,
            "embedding.position_lookup",
            2.0 * fp16 * hidden_elems,
        ));
        forward.push(Step::memory(
            KernelRole::Forward,
            "embedding.add",
            3.0 * fp16 * hidden_elems,
        ));
    }
    forward.push(Step::memory(
        KernelRole::Forward,
        "embedding.transpose",
        2.0 * fp16 * hidden_elems,
    ));
    let mut backward = Vec::new();
    // Megatron's embedding dropout takes the hidden rate; at 0 it runs no
    // kernel ([`crate::dropout`]).
    if model.hidden_dropout.is_on() {
        // Read fp16, write fp16 and a 1-byte mask.
        forward.push(Step::memory_of_class(
            KernelRole::Forward,
            "embedding.dropout",
            MemoryKernelClass::Dropout,
            (2.0 * fp16 + 1.0) * hidden_elems,
        ));
        backward.push(Step::memory(
            KernelRole::Backward,
            "embedding.dropout.bwd",
            (2.0 * fp16 + 1.0) * hidden_elems,
        ));
    }
    backward.push(Step::memory(
        KernelRole::Backward,
        "embedding.transpose.bwd",
        2.0 * fp16 * hidden_elems,
    ));
    let tables = [
        ("embedding.position_grad_zero", model.seq_len * model.hidden),
        (
            "embedding.word_grad_zero",
            model.vocab / tensor_parallel * model.hidden,
        ),
    ];
    let skip_positions = usize::from(!model.learned_positions());
    for (zero, table_elems) in tables.into_iter().skip(skip_positions) {
        backward.push(Step::memory(
            KernelRole::Backward,
            zero,
            fp16 * table_elems as f64,
        ));
        if tokens > EMBEDDING_BACKWARD_DIRECT_MAX_INDICES {
            for _ in 1..EMBEDDING_BACKWARD_SORTED_KERNELS {
                backward.push(Step::memory(
                    KernelRole::Backward,
                    "embedding.grad_sort",
                    2.0 * FP32_BYTES * tokens as f64,
                ));
            }
        }
        backward.push(Step::memory(
            KernelRole::Backward,
            "embedding.grad_scatter",
            2.0 * fp16 * hidden_elems,
        ));
    }
    if split {
        backward.push(Step::memory(
            KernelRole::Backward,
            "embedding.zero_masked_rows.bwd",
            2.0 * fp16 * hidden_elems,
        ));
    }
    PassSteps { forward, backward }
}

/// The head on the last stage: transpose back to [b, s, h], final LayerNorm,
/// the vocab-parallel logits GEMM (weights tied with the embedding),
/// `.float()` of the logits, Megatron's `vocab_parallel_cross_entropy` (max,
/// all-reduce, subtract, the target masking and gather, all-reduce, exp, sum,
/// all-reduce, log, divide: `megatron/mpu/cross_entropy.py`) and the
/// loss-mask average; backward: the loss average's gradient, the
/// cross-entropy's (subtract one at the targets, scale), `.half()`, both
/// logits GEMMs with the input gradient all-reduced across tensor ranks, the
/// LayerNorm and the transpose.
pub fn head(model: &ModelSpec, microbatch: u64, tensor_parallel: NonZeroU64) -> PassSteps {
    let tensor_parallel = tensor_parallel.get();
    let tokens = microbatch * model.seq_len;
    let hidden_elems = (tokens * model.hidden) as f64;
    let logit_elems = (tokens * model.vocab / tensor_parallel) as f64;
    let fp16 = FP16_BYTES as f64;
    let [final_norm, final_norm_bwd] = final_norm_names(model.norm);
    let [final_norm_class, final_norm_bwd_class] = norm_classes(model.norm);
    let logits = GemmShape {
        batch: 1,
        m: tokens,
        n: model.vocab / tensor_parallel,
        k: model.hidden,
    };
    // `parallel_lm_logits`: F.linear(hidden, word_embedding), a linear layer's layouts.
    let [logits_forward, logits_dgrad, logits_wgrad] = gemm_with_gradients(
        ["logits_gemm", "logits_gemm.dgrad", "logits_gemm.wgrad"],
        logits,
        GemmLayout::LINEAR_FORWARD,
    );
    let reduction = Step::TensorAllReduce {
        bytes: tokens * 4,
        async_window: 0,
    };
    let mut forward = vec![
        Step::memory(
            KernelRole::Forward,
            "head.transpose",
            2.0 * fp16 * hidden_elems,
        ),
        Step::memory(KernelRole::Forward, final_norm, 2.0 * fp16 * hidden_elems)
            .with_memory_class(final_norm_class),
        logits_forward,
        Step::memory(
            KernelRole::Forward,
            "logits.to_fp32",
            (fp16 + FP32_BYTES) * logit_elems,
        ),
        Step::memory(
            KernelRole::Forward,
            "cross_entropy.max",
            FP32_BYTES * logit_elems,
        ),
        reduction.clone(),
        Step::memory(
            KernelRole::Forward,
            "cross_entropy.subtract_max",
            2.0 * FP32_BYTES * logit_elems,
        ),
    ];
    tiny(
        &mut forward,
        KernelRole::Forward,
        &[
            "cross_entropy.target_below",
            "cross_entropy.target_above",
            "cross_entropy.target_out_of_range",
            "cross_entropy.target_clone",
            "cross_entropy.target_shift",
            "cross_entropy.target_zero_masked",
            "cross_entropy.arange",
            "cross_entropy.gather_predicted",
            "cross_entropy.predicted_clone",
            "cross_entropy.predicted_zero_masked",
        ],
        tokens,
    );
    forward.push(reduction.clone());
    forward.push(Step::memory(
        KernelRole::Forward,
        "cross_entropy.exp",
        2.0 * FP32_BYTES * logit_elems,
    ));
    forward.push(Step::memory(
        KernelRole::Forward,
        "cross_entropy.sum",
        FP32_BYTES * logit_elems,
    ));
    forward.push(reduction);
    tiny(
        &mut forward,
        KernelRole::Forward,
        &["cross_entropy.log", "cross_entropy.loss"],
        tokens,
    );
    forward.push(Step::memory(
        KernelRole::Forward,
        "cross_entropy.softmax_divide",
        2.0 * FP32_BYTES * logit_elems,
    ));
    tiny(
        &mut forward,
        KernelRole::Forward,
        &[
            "loss.mask_multiply",
            "loss.sum",
            "loss.mask_sum",
            "loss.divide",
        ],
        tokens,
    );

    let mut backward = Vec::new();
    tiny(
        &mut backward,
        KernelRole::Backward,
        &[
            "loss.divide.bwd",
            "loss.sum.bwd",
            "loss.mask_multiply.bwd",
            "cross_entropy.arange.bwd",
            "cross_entropy.target_mask_float",
            "cross_entropy.one_minus_mask",
            "cross_entropy.gather_target.bwd",
            "cross_entropy.subtract_target.bwd",
            "cross_entropy.scatter_target.bwd",
        ],
        tokens,
    );
    backward.push(Step::memory(
        KernelRole::Backward,
        "cross_entropy.scale.bwd",
        2.0 * FP32_BYTES * logit_elems,
    ));
    backward.push(Step::memory(
        KernelRole::Backward,
        "logits.to_fp32.bwd",
        (FP32_BYTES + fp16) * logit_elems,
    ));
    backward.push(logits_dgrad);
    backward.push(logits_wgrad);
    // Column-parallel input: its gradient all-reduced across tensor ranks
    // (overlapping the weight-gradient GEMM when asynchronous).
    backward.push(Step::TensorAllReduce {
        bytes: tokens * model.hidden * FP16_BYTES,
        async_window: 1,
    });
    backward.push(
        Step::memory(
            KernelRole::Backward,
            final_norm_bwd,
            3.0 * fp16 * hidden_elems,
        )
        .with_memory_class(final_norm_bwd_class),
    );
    backward.push(Step::memory(
        KernelRole::Backward,
        "head.transpose.bwd",
        2.0 * fp16 * hidden_elems,
    ));
    PassSteps { forward, backward }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernels(steps: &[Step]) -> usize {
        steps
            .iter()
            .filter(|s| matches!(s, Step::Kernel(_)))
            .count()
    }
    fn calls(steps: &[Step]) -> usize {
        steps
            .iter()
            .filter(|s| matches!(s, Step::TensorAllReduce { .. }))
            .count()
    }

    #[test]
    fn the_cross_entropy_makes_three_all_reduce_calls_and_the_head_two_gemms_each_way() {
        let model = crate::presets::preset("gpt3-175b").unwrap();
        let head = head(&model, 1, crate::nz(8));
        assert_eq!(calls(&head.forward), 3);
        assert_eq!(calls(&head.backward), 1);
        let gemms = |steps: &[Step]| {
            steps
                .iter()
                .filter(|s| matches!(s, Step::Kernel(k) if matches!(k.class, crate::ops::KernelClass::Gemm { .. })))
                .count()
        };
        assert_eq!((gemms(&head.forward), gemms(&head.backward)), (1, 2));
        assert_eq!(kernels(&head.forward), 25);
        assert_eq!(kernels(&head.backward), 15);
    }

    #[test]
    fn the_embedding_masks_ids_and_all_reduces_only_when_split() {
        let model = crate::presets::preset("gpt3-175b").unwrap();
        let whole = embedding(&model, 1, crate::nz(1));
        let split = embedding(&model, 1, crate::nz(8));
        assert_eq!(calls(&whole.forward), 0);
        assert_eq!(calls(&split.forward), 1);
        assert_eq!(kernels(&split.forward), kernels(&whole.forward) + 7);
    }

    #[test]
    fn rope_models_skip_the_position_table_and_rmsnorm_renames_the_final_norm() {
        let gpt = crate::presets::preset("gpt3-175b").unwrap();
        let mut rope = gpt.clone();
        rope.rope = true;
        let (learned, rotary) = (
            embedding(&gpt, 1, crate::nz(8)),
            embedding(&rope, 1, crate::nz(8)),
        );
        assert_eq!(kernels(&rotary.forward), kernels(&learned.forward) - 2);
        assert_eq!(kernels(&rotary.backward), kernels(&learned.backward) - 2);
        let llama = crate::presets::preset("llama3-8b").unwrap();
        let names: Vec<_> = head(&llama, 1, crate::nz(1))
            .forward
            .iter()
            .filter_map(|s| match s {
                Step::Kernel(k) => Some(k.name),
                Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => None,
            })
            .collect();
        assert!(names.contains(&"final_rmsnorm"));
        assert!(!names.contains(&"final_layernorm"));
    }

    #[test]
    fn the_embedding_backward_sorts_above_3072_indices() {
        let mut model = crate::presets::preset("gpt3-175b").unwrap();
        model.seq_len = 1024;
        let direct = embedding(&model, 3, crate::nz(1));
        let sorted = embedding(&model, 4, crate::nz(1));
        assert_eq!(
            kernels(&sorted.backward),
            kernels(&direct.backward) + 2 * (EMBEDDING_BACKWARD_SORTED_KERNELS - 1)
        );
    }

    #[test]
    fn data_loading_builds_an_s_by_s_mask_every_microbatch() {
        let model = crate::presets::preset("gpt3-175b").unwrap();
        let steps = data_load(&model, 1);
        assert_eq!(kernels(&steps), 10);
        let bytes: f64 = steps
            .iter()
            .map(|s| match s {
                Step::Kernel(k) => k.bytes,
                Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => 0.0,
            })
            .sum();
        let s2 = (model.seq_len * model.seq_len) as f64;
        assert!(bytes > 17.0 * s2 && bytes < 18.0 * s2, "{bytes}");
    }
}
