//! The kernels of a mixture-of-experts MLP block under expert parallelism,
//! as Megatron-Core's `MoELayer` with the all-to-all token dispatcher runs
//! them (`megatron/core/transformer/moe/`: `router.py` `TopKRouter`,
//! `token_dispatcher.py` `MoEAlltoAllTokenDispatcher`, `experts.py`
//! `GroupedMLP`, `moe_utils.py` `permute`/`unpermute`), on one rank of an
//! expert-parallel group of ep ranks and an expert tensor-parallel group of
//! etp ranks (under tensor parallelism t > 1 with sequence parallelism each
//! tensor rank routes its own b·s/t tokens: [`tokens_per_rank`]).
//!
//! With `T` tokens on the rank (b·s/cp), hidden size h, E routed experts,
//! top-k, expert inner size F and `R` routed token copies reaching the
//! rank's E/ep local experts through its all-to-all (T·k when the routing
//! is uniform; more on the busiest rank of a skewed routing,
//! [`MoeLayerOptions::busiest_rank_tokens`]; capped or padded under a
//! capacity factor, [`ExpertCapacity`]):
//!
//! | forward | kind | FLOPs / bytes |
//! |---|---|---|
//! | `moe_router` | GEMM T×E×h | 2·T·E·h |
//! | `moe_router_topk` | memory-bound: softmax (or sigmoid) and top-k | 6·T·E + 10·T·k B |
//! | `moe_router_group_limit` | sigmoid router only: expert bias and group-limited mask | 10·T·E B |
//! | `moe_permute` | memory-bound: gather each token's k copies in expert order | 4·T·k·h B |
//! | dispatch all-to-all | over the EP group, R·h·2 B on the busiest rank | — |
//! | (etp > 1) expert-tensor all-gather | over the etp group, etp·R·h·2 B gathered | — |
//! | (host sync) | the host waits for the tokens per expert | — |
//! | `expert_fc1` | E/ep GEMMs, one per local expert, of m = ⌈etp·R/(E/ep)⌉ × (2)F/etp × h | 2·E/ep·m·(2)F/etp·h |
//! | `expert_swiglu` / `expert_gelu` | memory-bound on m·E/ep·F/etp | 6 (4) B per element |
//! | `expert_fc2` | E/ep GEMMs of m×h×F/etp | 2·E/ep·m·h·F/etp |
//! | (etp > 1) expert-tensor reduce-scatter | over the etp group, etp·R·h·2 B reduced | — |
//! | combine all-to-all | the dispatch's bytes back | — |
//! | `moe_unpermute` | memory-bound: weight the k copies by their probabilities and sum | 2·T·k·h + 2·T·k + 2·T·h B |
//! | `shared_expert_*` | a normal MLP of shared_experts × shared F on T tokens | as the dense MLP |
//!
//! Bytes: bf16 activations (2 B), top-k indices int64 (8 B, `torch.topk`);
//! the top-k kernel reads the E logits and writes the k values and indices
//! after the softmax read and wrote them (4·T·E). The backward mirrors it: the
//! unpermute's backward (read the gradient and the k expert outputs, write
//! the k copies' gradients and the probabilities' gradient:
//! 2·T·h + 4·T·k·h + 2·T·k B), the combine's all-to-all, the experts'
//! data- and weight-gradient grouped GEMMs, the dispatch's all-to-all, the
//! permute's backward (sum the k copies: 2·T·k·h + 2·T·h B), the top-k and
//! softmax backward (scatter the k gradients into E and the softmax's
//! backward: 8·T·E + 10·T·k B), the router's GEMMs.
//!
//! The experts' GEMMs are the kernels Transformer Engine's `GroupedLinear`
//! launches (Megatron-Core's `TEGroupedMLP`, its experts' module whenever
//! `moe_grouped_gemm` runs with TE: `megatron/core/transformer/moe/experts.py`
//! at core_r0.15.0, 575b0fbd): `general_grouped_gemm` →
//! `tex.te_general_grouped_gemm` calls cuBLAS once per expert
//! (`transformer_engine/pytorch/module/grouped_linear.py`,
//! `cpp_extensions/gemm.py` at TE v2.9, 70f53666), so each local expert's
//! fc1 and fc2 is its own [`KernelClass::Gemm`] of `m` = its tokens (the
//! busiest rank's routed copies over its E/ep experts, rounded up), costed at
//! that shape's efficiency; the backward's data-gradient GEMMs of all experts
//! (one grouped call) come before their weight-gradient GEMMs (another).
//! Under FP8 each expert's GEMM input is quantized by its own kernel
//! (`tex.split_quantize` with one quantizer per expert; [`crate::fp8`] adds
//! one cast per expert GEMM). TE spreads the per-expert GEMMs over several
//! CUDA streams; that concurrency is not modeled (costed one after another).
//!
//! The dispatcher's host synchronization ([`Step::HostSync`]): dropless, the
//! `MoEAlltoAllTokenDispatcher` copies the tokens per expert to the host on a
//! side stream and waits for that copy (`self.d2h_event.synchronize()` in
//! `_maybe_dtoh_and_synchronize`) at its `cuda_sync_point`,
//! "before_ep_alltoall" when ep > 1 or t > 1 (the all-to-all's split sizes),
//! else "before_finish" (the experts' `m_splits`):
//! `megatron/core/transformer/moe/token_dispatcher.py` `preprocess` at
//! core_r0.15.0. Either way once per MoE layer forward, after the permute and
//! before the dispatch: the step sits there. The backward reuses the
//! host-side splits saved by the forward (the all-to-all's autograd function
//! and `GroupedLinear`'s `ctx.m_splits`): no synchronization.
//!
//! Expert tensor parallelism (`MoEAlltoAllTokenDispatcher` with
//! `tp_size` = the expert tensor group's, `token_dispatcher.py` steps (4)
//! "AG(TP)" and (5) "RS(TP)" at core_r0.15.0 575b0fbd; `TEGroupedMLP`'s
//! fc1 `TEColumnParallelGroupedLinear` and fc2 `TERowParallelGroupedLinear`
//! over `pg_collection.expt_tp`, `experts.py`): after the dispatch each rank
//! all-gathers its etp group's received tokens (etp·R copies), runs its E/ep
//! experts' fc1 on 2F/etp columns (F/etp without a gate) and fc2 on F/etp
//! rows, and reduce-scatters the partial outputs back to its R copies
//! before the combine; the backward mirrors them (the all-gather's
//! gradient is a reduce-scatter and the other way round). FLOPs per rank
//! are etp = 1's; the GEMMs are etp times taller and etp times narrower.
//! The routing probabilities' all-to-all and all-gather (fp32, R values) are
//! not counted, as at etp = 1.
//!
//! Token dropping ([`ExpertCapacity`]; Megatron-Core's
//! `--moe-expert-capacity-factor`): the router keeps at most C =
//! ⌈T·k/E·factor⌉ of the rank's own copies per expert
//! ([`crate::moe::expert_capacity`]) through a capacity mask
//! (`moe_utils.py` `apply_router_token_dropping`: a top-C over the tokens of
//! each expert's T×E probabilities, a scatter into a zero mask, the mask
//! ANDed with the routing map unless padding, the probabilities multiplied
//! by it), `moe_capacity_mask`, one memory-bound kernel of its bytes with
//! bf16 probabilities: topk reads 2·T·E and writes C·E values and int64
//! indices (10·C·E), the zero mask 2·T·E, the scatter reads the indices and
//! writes 2·C·E, `.bool()` 3·T·E, the AND 3·T·E (not when padding), the
//! product 5·T·E; its backward is the product's, 5·T·E. The permute and
//! unpermute move the rank's kept copies instead of T·k. Without padding
//! the dispatcher still reads the tokens per expert on the host, earlier
//! ("before_permutation_1": the permute's output size is dynamic); with
//! `--moe-pad-expert-input-to-capacity` every rank sends every expert
//! exactly C copies, the splits are known on the host and nothing
//! synchronizes (`preprocess` returns before setting a sync point).

use crate::element_bytes::FP16_BYTES;
use crate::gemm::{GemmLayout, GemmShape};
use crate::kernel_role::KernelRole;
use crate::linear::{gemm_with_gradients, te_linear_gemms};
use crate::spec::FfnType;
use crate::spec::ModelSpec;
use crate::step::Step;
use std::num::NonZeroU64;

/// Tokens a rank routes per microbatch: the `tokens` (b·s/cp) of its
/// tensor group split t ways, as sequence parallelism leaves them — with
/// t > 1 (Megatron-Core requires sequence parallelism with MoE and t > 1,
/// `megatron/training/arguments.py`) every tensor rank routes and
/// dispatches its own s/t·b tokens (`token_dispatcher.py`:
/// "num_local_tokens: S/TP*B"), whatever etp; the expert-TP all-gather
/// after the all-to-all brings etp ranks' received tokens together.
pub fn tokens_per_rank(tokens: u64, tensor_parallel: NonZeroU64) -> u64 {
    tokens / tensor_parallel.get()
}

/// What expert parallelism changes in a MoE layer's kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoeLayerOptions {
    /// Expert-parallel degree ep (experts on each rank: E/ep).
    pub expert_parallel: NonZeroU64,
    /// Routed token copies (token × chosen expert) the busiest rank of the
    /// expert-parallel group receives through its all-to-all per
    /// microbatch: T·k for a uniform dropless routing, ep·T·k × the busiest
    /// rank's share of the routing otherwise (capped or padded under a
    /// capacity factor). Its experts compute etp times these.
    pub busiest_rank_tokens: u64,
    /// Expert tensor-parallel degree etp (1: each expert whole on its rank).
    pub expert_tensor_parallel: NonZeroU64,
    /// Token dropping at a capacity factor (None: dropless).
    pub capacity: Option<ExpertCapacity>,
}

/// What a capacity factor makes of one rank's routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpertCapacity {
    /// C: the most of the rank's own copies one expert keeps
    /// ([`crate::moe::expert_capacity`]).
    pub per_expert: u64,
    /// Whether every expert's input is padded to C (E·C copies sent).
    pub padded: bool,
    /// The rank's own copies kept after dropping (padded: E·C), which the
    /// permute and unpermute move.
    pub kept_copies: u64,
}

impl MoeLayerOptions {
    /// Dropless at expert tensor parallelism 1.
    pub fn dropless(expert_parallel: NonZeroU64, busiest_rank_tokens: u64) -> MoeLayerOptions {
        MoeLayerOptions {
            expert_parallel,
            busiest_rank_tokens,
            expert_tensor_parallel: NonZeroU64::MIN,
            capacity: None,
        }
    }
}

/// The forward steps of the MoE block after its norm, and its backward
/// blocks in forward order (the caller reverses them with the layer's).
pub fn moe_block(
    model: &ModelSpec,
    tokens: u64,
    options: MoeLayerOptions,
) -> (Vec<Step>, Vec<Vec<Step>>) {
    let moe = model
        .moe
        .as_ref()
        .expect("moe_block needs a model with experts");
    let (t, h, e, k) = (tokens, model.hidden, moe.experts, moe.top_k);
    let local_experts = (e / options.expert_parallel.get()).max(1);
    let etp = options.expert_tensor_parallel.get();
    let routed = options.busiest_rank_tokens;
    // The etp group's received copies, gathered before the experts.
    let per_expert = (etp * routed).div_ceil(local_experts);
    // The rank's own copies its permute and unpermute move.
    let kept = options
        .capacity
        .map_or(t * k, |capacity| capacity.kept_copies) as f64;
    let b = FP16_BYTES as f64;
    let (tf, ef, kf, hf) = (t as f64, e as f64, k as f64, h as f64);
    let mut forward = Vec::new();
    let mut backward: Vec<Vec<Step>> = Vec::new();

    // Router: an h×E linear layer without bias, then softmax (sigmoid) + top-k.
    let [router, router_dgrad, router_wgrad] = gemm_with_gradients(
        ["moe_router", "moe_router.dgrad", "moe_router.wgrad"],
        GemmShape {
            batch: 1,
            m: t,
            n: e,
            k: h,
        },
        GemmLayout::LINEAR_FORWARD,
    );
    forward.push(router);
    backward.push(vec![router_dgrad, router_wgrad]);
    forward.push(Step::memory(
        KernelRole::Forward,
        "moe_router_topk",
        3.0 * b * tf * ef + 10.0 * tf * kf,
    ));
    backward.push(vec![Step::memory(
        KernelRole::Backward,
        "moe_router_topk.bwd",
        4.0 * b * tf * ef + 10.0 * tf * kf,
    )]);
    if moe.router == crate::moe::RouterType::Sigmoid {
        // DeepSeek-V3's aux-loss-free, group-limited choice (Megatron-Core
        // `moe/moe_utils.py` `group_limited_topk` with the expert bias): the
        // bias added to the scores (read and write T·E), each group's top-2
        // summed (read T·E), the unchosen groups masked (read and write
        // T·E); the spec has no group keys, their tiny T×groups tensors are
        // not counted. No backward: the choice passes no gradient.
        forward.push(Step::memory(
            KernelRole::Forward,
            "moe_router_group_limit",
            5.0 * b * tf * ef,
        ));
    }
    if let Some(capacity) = options.capacity {
        // The capacity mask (`apply_router_token_dropping`, bytes above).
        let cf = capacity.per_expert as f64;
        let and = if capacity.padded { 0.0 } else { 3.0 };
        forward.push(Step::memory(
            KernelRole::Forward,
            "moe_capacity_mask",
            (12.0 + and) * tf * ef + 20.0 * cf * ef,
        ));
        backward.push(vec![Step::memory(
            KernelRole::Backward,
            "moe_capacity_mask.bwd",
            5.0 * tf * ef,
        )]);
        if !capacity.padded {
            // "before_permutation_1": the permute's output size is read first.
            forward.push(Step::HostSync);
        }
    }
    // Permute: each token's kept copies gathered in expert order.
    forward.push(Step::memory(
        KernelRole::Forward,
        "moe_permute",
        2.0 * b * kept * hf,
    ));
    if options.capacity.is_none() {
        // The host reads the tokens per expert (device-to-host) before it
        // can launch the dispatch and the experts' GEMMs.
        forward.push(Step::HostSync);
    }
    backward.push(vec![Step::memory(
        KernelRole::Backward,
        "moe_permute.bwd",
        b * kept * hf + b * tf * hf,
    )]);
    // Dispatch all-to-all (its backward sends the gradients back), with the
    // expert-tensor all-gather after it (reduce-scatter in the backward).
    let received = routed * h * FP16_BYTES;
    let all_to_all = Step::ExpertAllToAll {
        bytes: received,
        expert_tensor_bytes: if etp > 1 { etp * received } else { 0 },
    };
    forward.push(all_to_all.clone());
    backward.push(vec![all_to_all.clone()]);

    // The local experts: grouped GEMMs around the activation.
    let ffn = moe.expert_ffn_hidden;
    let fc1_columns = match model.ffn_type {
        FfnType::Gelu => ffn,
        FfnType::Swiglu => 2 * ffn,
    };
    // One cuBLAS GEMM per local expert (TE `GroupedLinear`).
    let per_expert_gemms = |names: [&'static str; 3], casts: [&'static str; 2], n, k| {
        let shape = GemmShape {
            batch: 1,
            m: per_expert,
            n,
            k,
        };
        let [forward, dgrad, wgrad] =
            te_linear_gemms(names, casts, shape, GemmLayout::LINEAR_FORWARD);
        let experts = local_experts as usize;
        let mut backward = vec![dgrad; experts];
        backward.extend(std::iter::repeat_n(wgrad, experts));
        (vec![forward; experts], backward)
    };
    // Column-parallel fc1 and row-parallel fc2 over the etp group (the
    // simulator requires etp to divide F).
    let (fc1, fc1_backward) = per_expert_gemms(
        ["expert_fc1", "expert_fc1.dgrad", "expert_fc1.wgrad"],
        [
            "expert_fc1.cast_transpose",
            "expert_fc1.dgrad.cast_transpose",
        ],
        fc1_columns / etp,
        h,
    );
    forward.extend(fc1);
    backward.push(fc1_backward);
    let activation_elems = (local_experts * per_expert * (ffn / etp)) as f64;
    let (act, act_bwd) = activation_steps(
        model.ffn_type,
        [
            "expert_gelu",
            "expert_gelu.bwd",
            "expert_swiglu",
            "expert_swiglu.bwd",
        ],
        activation_elems,
    );
    forward.push(act);
    backward.push(vec![act_bwd]);
    let (fc2, fc2_backward) = per_expert_gemms(
        ["expert_fc2", "expert_fc2.dgrad", "expert_fc2.wgrad"],
        [
            "expert_fc2.cast_transpose",
            "expert_fc2.dgrad.cast_transpose",
        ],
        h,
        ffn / etp,
    );
    forward.extend(fc2);
    backward.push(fc2_backward);
    // Combine all-to-all, then the weighted sum of each token's k outputs.
    forward.push(all_to_all.clone());
    backward.push(vec![all_to_all]);
    forward.push(Step::memory(
        KernelRole::Forward,
        "moe_unpermute",
        b * kept * hf + b * kept + b * tf * hf,
    ));
    backward.push(vec![Step::memory(
        KernelRole::Backward,
        "moe_unpermute.bwd",
        b * tf * hf + 2.0 * b * kept * hf + b * kept,
    )]);

    // Shared experts: one dense MLP of their total inner size on every token.
    if moe.shared_experts > 0 {
        let shared = moe.shared_experts * moe.shared_ffn();
        let shared_columns = match model.ffn_type {
            FfnType::Gelu => shared,
            FfnType::Swiglu => 2 * shared,
        };
        let dense = |m, n, k| GemmShape { batch: 1, m, n, k };
        let [fc1, fc1_dgrad, fc1_wgrad] = te_linear_gemms(
            [
                "shared_expert_fc1",
                "shared_expert_fc1.dgrad",
                "shared_expert_fc1.wgrad",
            ],
            [
                "shared_expert_fc1.cast_transpose",
                "shared_expert_fc1.dgrad.cast_transpose",
            ],
            dense(t, shared_columns, h),
            GemmLayout::LINEAR_FORWARD,
        );
        forward.push(fc1);
        backward.push(vec![fc1_dgrad, fc1_wgrad]);
        let (act, act_bwd) = activation_steps(
            model.ffn_type,
            [
                "shared_expert_gelu",
                "shared_expert_gelu.bwd",
                "shared_expert_swiglu",
                "shared_expert_swiglu.bwd",
            ],
            (t * shared) as f64,
        );
        forward.push(act);
        backward.push(vec![act_bwd]);
        let [fc2, fc2_dgrad, fc2_wgrad] = te_linear_gemms(
            [
                "shared_expert_fc2",
                "shared_expert_fc2.dgrad",
                "shared_expert_fc2.wgrad",
            ],
            [
                "shared_expert_fc2.cast_transpose",
                "shared_expert_fc2.dgrad.cast_transpose",
            ],
            dense(t, h, shared),
            GemmLayout::LINEAR_FORWARD,
        );
        forward.push(fc2);
        backward.push(vec![fc2_dgrad, fc2_wgrad]);
    }
    (forward, backward)
}

/// GeLU (4 B per element forward, 6 backward) or SwiGLU (6, 10), as the
/// dense MLP's ([`crate::ops`]).
fn activation_steps(ffn_type: FfnType, names: [&'static str; 4], elems: f64) -> (Step, Step) {
    match ffn_type {
        FfnType::Gelu => (
            Step::memory(KernelRole::Forward, names[0], 4.0 * elems),
            Step::memory(KernelRole::Backward, names[1], 6.0 * elems),
        ),
        FfnType::Swiglu => (
            Step::memory(KernelRole::Forward, names[2], 6.0 * elems),
            Step::memory(KernelRole::Backward, names[3], 10.0 * elems),
        ),
    }
}

#[cfg(test)]
#[path = "moe_ops_tests.rs"]
mod tests;
