//! Token dropping at a capacity factor on the routing of
//! [`super::experts`] (the model's `moe.capacity_factor` and
//! `moe.pad_expert_input_to_capacity`: Megatron-Core's
//! `--moe-expert-capacity-factor` and `--moe-pad-expert-input-to-capacity`).
//!
//! Each rank's router keeps at most C = ⌈T·k/E · factor⌉ of its own T·k
//! copies per expert (`moe_utils.py` `get_capacity` and
//! `apply_router_token_dropping`, called from `router.py` with the rank's
//! own tokens, core_r0.15.0 575b0fbd; [`models::moe::expert_capacity`]). The
//! routing is the same on every rank, so a rank sends expert e
//! min(T·k·share_e, C) copies, and the busiest rank of an expert-parallel
//! group receives R = ⌈ep · max over ranks of Σ_{its experts} min(T·k·share_e, C)⌉
//! (the dropless ⌈ep·T·k·share⌉ when no expert overflows). With padding
//! every rank sends every expert exactly C copies (`permute` with
//! `drop_and_pad`, the dispatcher's `num_out_tokens = capacity ·
//! num_experts`): R = E·C on every rank, whatever the routing, and each
//! local expert computes etp·ep·C copies (the dispatcher's
//! `capacity * tp_size * ep_size`). Which copies are dropped (by
//! probability or position, `--moe-token-drop-policy`) does not change the
//! counts and so the cost.

use crate::experts::ExpertRouting;
use models::moe_ops::{ExpertCapacity, MoeLayerOptions};

/// What the capacity factor leaves of one microbatch's routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CappedRouting {
    /// C, per expert and source rank.
    pub per_expert: u64,
    /// The rank's own copies kept (sent): Σ_e min(T·k·share_e, C), rounded
    /// up; E·C when padded.
    pub kept_copies: u64,
    /// Copies the busiest rank of the expert-parallel group receives.
    pub busiest_rank_tokens: u64,
}

impl ExpertRouting {
    /// The capped routing of `tokens` tokens per rank at top-`top_k`, or
    /// None when dropless.
    pub fn capacity(&self, tokens: u64, top_k: u64) -> Option<CappedRouting> {
        let factor = self.capacity_factor?;
        let experts = self.shares.len() as u64;
        let copies = tokens * top_k;
        let per_expert = models::moe::expert_capacity(copies, experts, factor);
        if self.pad_expert_input_to_capacity {
            let padded = experts * per_expert;
            return Some(CappedRouting {
                per_expert,
                kept_copies: padded,
                busiest_rank_tokens: padded,
            });
        }
        let cap = per_expert as f64;
        let sent = |share: &f64| copies as f64 * share;
        if self.shares.iter().all(|share| sent(share) <= cap) {
            // Nothing dropped: the dropless routing exactly.
            return Some(CappedRouting {
                per_expert,
                kept_copies: copies,
                busiest_rank_tokens: self.dropless_busiest_rank_tokens(tokens, top_k),
            });
        }
        let ep = self.expert_parallel.get() as usize;
        let local = (self.shares.len() / ep).max(1);
        let kept: Vec<f64> = self.shares.iter().map(|s| sent(s).min(cap)).collect();
        let busiest = kept
            .chunks(local)
            .map(|rank| rank.iter().sum::<f64>())
            .fold(0.0, f64::max);
        Some(CappedRouting {
            per_expert,
            kept_copies: (kept.iter().sum::<f64>().ceil() as u64).min(copies),
            busiest_rank_tokens: (busiest * ep as f64).ceil() as u64,
        })
    }

    /// A MoE layer's options on the busiest rank for `tokens` tokens per
    /// rank at top-`top_k`.
    pub fn layer_options(&self, tokens: u64, top_k: u64) -> MoeLayerOptions {
        let capped = self.capacity(tokens, top_k);
        MoeLayerOptions {
            expert_parallel: self.expert_parallel.into(),
            busiest_rank_tokens: self.busiest_rank_tokens(tokens, top_k),
            expert_tensor_parallel: self.expert_tensor_parallel.into(),
            capacity: capped.map(|capped| ExpertCapacity {
                per_expert: capped.per_expert,
                padded: self.pad_expert_input_to_capacity,
                kept_copies: capped.kept_copies,
            }),
        }
    }

    /// [`Self::layer_options`] of the uniform dropless routing: the
    /// model's FLOPs, which a pass reports whatever the routing.
    pub fn uniform_layer_options(&self, tokens: u64, top_k: u64) -> MoeLayerOptions {
        MoeLayerOptions {
            expert_parallel: self.expert_parallel.into(),
            busiest_rank_tokens: tokens * top_k,
            expert_tensor_parallel: self.expert_tensor_parallel.into(),
            capacity: None,
        }
    }
}
