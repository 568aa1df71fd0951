//! Expert parallelism of a mixture-of-experts model (`ep`, `etp`,
//! `expert_imbalance`): what a scenario may ask for, and how its routing
//! loads the expert-parallel ranks.
//!
//! Placement (Megatron-Core `parallel_state.py`, `initialize_model_parallel`
//! at core_r0.15.0 575b0fbd: the expert `RankGenerator` with tp = etp, ep,
//! dp = world/(etp·ep·pp), order "tp-ep-dp-pp"): the expert groups are
//! carved out of each stage's t·cp·d ranks — etp consecutive ranks form an
//! expert tensor-parallel group, ep such groups side by side an
//! expert-parallel group, and what is left is the expert-data-parallel
//! group of t·cp·d/(ep·etp) ranks, so ep·etp must divide t·cp·d
//! (Megatron-Core raises unless etp·ep·pp divides the world size) — and
//! each rank holds E/ep of every MoE layer's routed experts
//! (`num_experts % ep == 0`), experts `[r·E/ep, (r+1)·E/ep)` on the group's
//! r-th rank, each 1/etp of them (`F % etp == 0`, as Transformer Engine's
//! column- and row-parallel `GroupedLinear` split F). The routed experts'
//! gradients are reduced over the expert-data-parallel group, everything
//! else over dp·cp. Unset, etp is t (`megatron/training/arguments.py`:
//! `expert_tensor_parallel_size = tensor_model_parallel_size`).
//!
//! Routing (`expert_imbalance`): the share of the routed token copies each
//! expert receives, the same in every layer and microbatch, deterministic:
//! - `uniform` (default): 1/E each;
//! - `skew:X` (X ≥ 1): geometric from expert 0 down to expert E−1, the first
//!   receiving X times the last: share_e ∝ X^(−e/(E−1));
//! - a file of E non-negative numbers (tokens per expert, a histogram, as
//!   whitespace-, comma- or line-separated text), normalized.
//!
//! The busiest rank of the group (the largest sum of its experts' shares)
//! gates every MoE layer: an all-to-all ends when its busiest rank has
//! received, and its grouped GEMMs run on that rank's tokens
//! (`ep · T · k · share`, rounded up). Every rank of the group waits for it,
//! so every rank is costed with it.
//!
//! Tensor parallelism t > 1 needs sequence parallelism (Megatron-Core
//! asserts it); each tensor rank routes its own tokens over its
//! expert-parallel group (`sim::placement`), and under etp > 1 gathers its
//! expert tensor group's dispatched tokens (`models::moe_ops`). Dense layers
//! among the MoE layers (`first_dense_layers`, `layer_frequency`) hold no
//! experts and exchange no tokens (`sim::cost::pass_steps_of`). Token
//! dropping at a capacity factor caps what each expert takes from each rank
//! ([`super::expert_capacity`]).
//!
//! Not built, and refused by [`check`]: shared experts under t > 1, biased
//! experts, FP8 and `--contention` with etp > 1, and options whose lowering
//! does not split expert from dense gradients (ZeRO-2/3, ZeRO-Offload). FP8
//! runs the experts' grouped GEMMs in FP8 (`models::fp8`), and the
//! distributed optimizer's parameter all-gathers, overlapped or not, gather
//! expert parameters over the expert-data group (`lowering::sharded`, `plan::shard_plan`).

use crate::expert_imbalance::{ExpertImbalance, RoutingShares};
use crate::options::{TrainingOptions, ZeroStage};
use crate::problem::Problem;
use models::ModelSpec;
use serde::Serialize;
use std::num::NonZeroU32;

/// How the routed tokens spread over the experts, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpertRouting {
    /// Expert-parallel degree ep.
    pub expert_parallel: NonZeroU32,
    /// Expert tensor-parallel degree etp (written when above 1).
    #[serde(skip_serializing_if = "is_one")]
    pub expert_tensor_parallel: NonZeroU32,
    /// Token dropping at this capacity factor (the model's
    /// `moe.capacity_factor`; absent: dropless).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_factor: Option<f64>,
    /// Every expert's input padded to its capacity.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pad_expert_input_to_capacity: bool,
    /// What `expert_imbalance` said (written as `uniform`, `skew:X` or the
    /// file's path).
    pub imbalance: ExpertImbalance,
    /// Each expert's share of the routed token copies (sums to 1).
    #[serde(skip)]
    pub shares: Vec<f64>,
    /// The busiest expert-parallel rank's share of the group's routed
    /// copies, times ep: 1 for a uniform routing, more when skewed.
    pub busiest_rank_load: f64,
    /// Which rank of the group that is (the first of equals).
    pub busiest_rank: u32,
    /// With one routing per MoE layer (a histogram file of a line per
    /// layer): each layer's busiest-rank load, in layer order. The fields
    /// above are then the busiest layer's (the first of equals), which
    /// memory takes for every layer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub layer_busiest_rank_loads: Vec<f64>,
    /// Each MoE layer's routing, in layer order (empty: every layer routes
    /// as above).
    #[serde(skip)]
    pub layers: Vec<ExpertRouting>,
}

impl ExpertRouting {
    /// Routed token copies the busiest rank receives in one microbatch of
    /// `tokens` tokens per rank with top-`top_k` routing: ⌈ep·T·k·share⌉,
    /// exactly T·k when uniform; under a capacity factor capped per expert
    /// ([`super::expert_capacity`]).
    pub fn busiest_rank_tokens(&self, tokens: u64, top_k: u64) -> u64 {
        match self.capacity(tokens, top_k) {
            Some(capacity) => capacity.busiest_rank_tokens,
            None => self.dropless_busiest_rank_tokens(tokens, top_k),
        }
    }

    /// [`Self::busiest_rank_tokens`] without token dropping.
    pub fn dropless_busiest_rank_tokens(&self, tokens: u64, top_k: u64) -> u64 {
        let routed = tokens * top_k;
        if self.busiest_rank_load <= 1.0 {
            return routed;
        }
        (routed as f64 * self.busiest_rank_load).ceil() as u64
    }
}

fn is_one(value: &NonZeroU32) -> bool {
    value.get() == 1
}

/// Each expert's share under `imbalance` (uniform, skew:X or a histogram
/// file), as [`ExpertImbalance::shares`].
pub fn expert_shares(imbalance: &str, experts: u64) -> Result<Vec<f64>, String> {
    ExpertImbalance::parse(imbalance)?.shares(experts)
}

/// The routing of `model` over `ep` ranks (each expert split over `etp`),
/// or the problems with it.
pub fn resolve(
    model: &ModelSpec,
    (ep, etp): (NonZeroU32, NonZeroU32),
    imbalance: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Option<ExpertRouting> {
    let moe = model.moe.as_ref()?;
    let imbalance = match ExpertImbalance::parse(imbalance.unwrap_or("uniform")) {
        Ok(imbalance) => imbalance,
        Err(error) => {
            problems.push(Problem::new("expert_imbalance", error));
            return None;
        }
    };
    let shares = match imbalance.routing_shares(moe.experts, moe.moe_layers(model.layers)) {
        Ok(shares) => shares,
        Err(error) => {
            problems.push(Problem::new("expert_imbalance", error));
            return None;
        }
    };
    if !moe.experts.is_multiple_of(u64::from(ep.get())) {
        return None; // reported by `check`
    }
    let routed = |imbalance: ExpertImbalance, shares: Vec<f64>| {
        let (busiest_rank, busiest_rank_load) = busiest_of(&imbalance, &shares, ep);
        ExpertRouting {
            expert_parallel: ep,
            expert_tensor_parallel: etp,
            capacity_factor: moe.capacity_factor.map(|factor| factor.0),
            pad_expert_input_to_capacity: moe.pad_expert_input_to_capacity,
            busiest_rank,
            imbalance,
            shares,
            busiest_rank_load,
            layer_busiest_rank_loads: Vec::new(),
            layers: Vec::new(),
        }
    };
    let per_layer = match shares {
        RoutingShares::Alike(shares) => return Some(routed(imbalance, shares)),
        RoutingShares::PerLayer(layers) => layers,
    };
    let layers: Vec<ExpertRouting> = per_layer
        .into_iter()
        .enumerate()
        .map(|(index, shares)| {
            let written = format!("{imbalance} (MoE layer {index})");
            routed(
                ExpertImbalance::Counts {
                    counts: shares.clone(),
                    written,
                },
                shares,
            )
        })
        .collect();
    let busiest = layers.iter().enumerate().fold(0, |best, (index, layer)| {
        if layer.busiest_rank_load > layers[best].busiest_rank_load {
            index
        } else {
            best
        }
    });
    Some(ExpertRouting {
        imbalance,
        layer_busiest_rank_loads: layers.iter().map(|l| l.busiest_rank_load).collect(),
        ..layers[busiest].clone()
    })
    .map(|routing| ExpertRouting { layers, ..routing })
}

impl ExpertRouting {
    /// The same expert-parallel layout routed as `imbalance` says instead
    /// (one iteration of a routing trace), or why its counts do not fit.
    pub fn rerouted(&self, imbalance: ExpertImbalance) -> Result<ExpertRouting, String> {
        let shares = imbalance.shares(self.shares.len() as u64)?;
        let (busiest_rank, busiest_rank_load) =
            busiest_of(&imbalance, &shares, self.expert_parallel);
        Ok(ExpertRouting {
            imbalance,
            shares,
            busiest_rank,
            busiest_rank_load,
            layer_busiest_rank_loads: Vec::new(),
            layers: Vec::new(),
            ..self.clone()
        })
    }
}

/// The busiest expert-parallel rank of `shares` over `ep` ranks (the first
/// of equals) and its load: its summed shares × ep, at least 1, exactly 1
/// when uniform (summed shares of 1/E may round above it). `ep` divides
/// the experts (checked by [`check`]).
fn busiest_of(imbalance: &ExpertImbalance, shares: &[f64], ep: NonZeroU32) -> (u32, f64) {
    if imbalance.is_uniform() {
        return (0, 1.0);
    }
    let per_rank = shares.len() / ep.get() as usize;
    let mut busiest = (0, 0.0);
    for (rank, experts) in shares.chunks(per_rank).enumerate() {
        let load: f64 = experts.iter().sum();
        if load > busiest.1 {
            busiest = (rank as u32, load);
        }
    }
    (busiest.0, (busiest.1 * f64::from(ep.get())).max(1.0))
}

/// What expert parallelism and the model require of the rest of the
/// scenario; every problem names its key.
#[allow(clippy::too_many_arguments)]
pub fn check(
    model: &ModelSpec,
    ep: u32,
    (etp, etp_given): (u32, bool),
    tp: u32,
    replicas: u32,
    imbalance_given: bool,
    options: &TrainingOptions,
    problems: &mut Vec<Problem>,
) {
    let Some(moe) = &model.moe else {
        if ep > 1 || (etp_given && etp > 1) || imbalance_given {
            problems.push(Problem::new("ep", format!(
                "'{}' has no experts (ep, etp and expert_imbalance apply to mixture-of-experts models)",
                model.name
            )));
        }
        return;
    };
    if !moe.experts.is_multiple_of(ep as u64) {
        problems.push(Problem::new(
            "ep",
            format!(
                "the {} experts must split evenly over ep = {ep} ranks (num_experts % ep == 0)",
                moe.experts
            ),
        ));
    }
    let stage_ranks = tp.saturating_mul(replicas);
    let ways = ep.saturating_mul(etp);
    if tp <= 1 && etp <= 1 && !replicas.is_multiple_of(ep) {
        problems.push(Problem::new("ep", format!(
            "expert-parallel groups are carved out of the dp × cp = {replicas} data-parallel ranks, which ep = {ep} must divide"
        )));
    } else if (tp > 1 || etp > 1) && !stage_ranks.is_multiple_of(ways) {
        problems.push(Problem::new("ep", format!(
            "expert-parallel and expert tensor-parallel groups are carved out of the tp × dp × cp = {stage_ranks} ranks of a stage, which ep × etp = {ep} × {etp} must divide (Megatron-Core: world size divisible by etp × ep × pp)"
        )));
    }
    super::expert_tensor::check(model, etp, options, problems);
    if tp > 1 {
        // Megatron-Core asserts it (megatron/training/arguments.py: "When
        // using MoE and tensor parallelism, sequence parallelism must be used").
        if !options.sequence_parallel {
            problems.push(Problem::new("sequence_parallel", format!(
                "tensor parallelism ({tp}) in a mixture-of-experts model needs sequence parallelism, as Megatron-Core asserts"
            )));
        }
        if moe.shared_experts > 0 {
            problems.push(Problem::new("tp", format!(
                "tensor parallelism ({tp}) with shared experts is not simulated yet (their tensor-parallel MLP is not built); use tp 1"
            )));
        }
    }
    let mut not_built = |field: &'static str, what: &str| {
        problems.push(Problem::new(
            field,
            format!("{what} with mixture-of-experts layers is not simulated yet (issue 17)"),
        ))
    };
    if options.sharding >= ZeroStage::Gradients {
        not_built("zero_stage", "ZeRO-2/3");
    }
    if options.offload.is_some() {
        not_built("zero_offload", "ZeRO-Offload");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_uniform_geometric_or_the_histogram_normalized() {
        assert_eq!(expert_shares("uniform", 4).unwrap(), vec![0.25; 4]);
        let skew = expert_shares("skew:8", 4).unwrap();
        let total = 1.0 + 0.5 + 0.25 + 0.125;
        for (share, weight) in skew.iter().zip([1.0, 0.5, 0.25, 0.125]) {
            assert!((share - weight / total).abs() < 1e-15);
        }
        assert!(expert_shares("skew:0.9", 4).unwrap_err().contains("X ≥ 1"));
        assert!(expert_shares("skew:inf", 4).is_err());
        assert!(expert_shares("/no/such/file", 4)
            .unwrap_err()
            .contains("neither uniform, skew:X nor a readable histogram file"));
    }

    #[test]
    fn a_uniform_routing_loads_every_rank_exactly_evenly() {
        // 60 experts (1/60 is inexact in binary) over 4 ranks.
        let mut model = models::preset("mixtral-8x7b").unwrap();
        model.moe.as_mut().unwrap().experts = 60;
        let routing = resolve(
            &model,
            (crate::degree(4), crate::degree(1)),
            None,
            &mut Vec::new(),
        )
        .unwrap();
        assert_eq!(routing.busiest_rank_load, 1.0);
        assert_eq!(routing.busiest_rank_tokens(4096, 2), 8192);
    }
}
