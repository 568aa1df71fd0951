//! Expert parallelism of a mixture-of-experts model (`ep`, `etp`,
//! `expert_imbalance`): what a scenario may ask for, and how its routing
//! loads the expert-parallel ranks.
//!
//! Placement (Megatron-Core, `parallel_state.py` before expert tensor
//! parallelism was split off, `expert_model_parallel_size`): expert-parallel
//! groups are carved out of the data- and context-parallel ranks — ep
//! consecutive members of each dp·cp group (same stage, same tensor index)
//! form one group, so `ep` must divide dp·cp — and each rank holds E/ep of
//! every MoE layer's routed experts (`num_experts % ep == 0`), experts
//! `[r·E/ep, (r+1)·E/ep)` on the group's r-th rank. The routed experts'
//! gradients are reduced over the expert-data-parallel group (dp·cp/ep
//! ranks with the same experts), everything else over dp·cp.
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
//! Tensor parallelism t > 1 is built with expert tensor parallelism 1, as
//! Megatron-Bridge's Qwen3 recipes run it: sequence parallelism required
//! (Megatron-Core asserts it) and `etp` 1 given (Megatron-Core's default is
//! etp = tp); each tensor rank routes its own tokens over an
//! expert-parallel group of ep consecutive ranks of the stage
//! (`crate::placement`). Dense layers among the MoE layers
//! (`first_dense_layers`, `layer_frequency`) hold no experts and exchange no
//! tokens (`sim::cost::pass_steps_of`).
//!
//! Not built, and refused by [`check`]: expert tensor parallelism (etp > 1),
//! shared experts under t > 1, token dropping
//! (`capacity_factor`), biased experts, and options whose lowering does not
//! split expert from dense gradients (ZeRO-2/3, ZeRO-Offload). FP8 runs the
//! experts' grouped GEMMs in FP8 (`models::fp8`), and the distributed
//! optimizer's parameter all-gathers, overlapped or not, gather expert
//! parameters over the expert-data group (`lowering::sharded`).

use super::{Sharding, TrainingOptions};
use models::ModelSpec;
use serde::Serialize;

/// Largest expert histogram file read (bytes): a number per expert.
const MAX_HISTOGRAM_BYTES: u64 = 1 << 20;

/// How the routed tokens spread over the experts, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpertRouting {
    /// Expert-parallel degree ep.
    pub expert_parallel: u32,
    /// What `expert_imbalance` said (`uniform`, `skew:X` or the file's path).
    pub imbalance: String,
    /// Each expert's share of the routed token copies (sums to 1).
    #[serde(skip)]
    pub shares: Vec<f64>,
    /// The busiest expert-parallel rank's share of the group's routed
    /// copies, times ep: 1 for a uniform routing, more when skewed.
    pub busiest_rank_load: f64,
    /// Which rank of the group that is (the first of equals).
    pub busiest_rank: u32,
}

impl ExpertRouting {
    /// Routed token copies the busiest rank computes in one microbatch of
    /// `tokens` tokens per rank with top-`top_k` routing:
    /// ⌈ep·T·k·share⌉, exactly T·k when uniform.
    pub fn busiest_rank_tokens(&self, tokens: u64, top_k: u64) -> u64 {
        let routed = tokens * top_k;
        if self.busiest_rank_load <= 1.0 {
            return routed;
        }
        (routed as f64 * self.busiest_rank_load).ceil() as u64
    }
}

/// Each expert's share under `imbalance` (uniform, skew:X or a histogram file).
pub fn expert_shares(imbalance: &str, experts: u64) -> Result<Vec<f64>, String> {
    let e = experts as usize;
    if imbalance == "uniform" {
        return Ok(vec![1.0 / experts as f64; e]);
    }
    let weights: Vec<f64> = if let Some(x) = imbalance.strip_prefix("skew:") {
        let x: f64 = x
            .trim()
            .parse()
            .map_err(|_| format!("'{imbalance}': skew:X needs a number X ≥ 1"))?;
        if !(x.is_finite() && x >= 1.0) {
            return Err(format!("'{imbalance}': skew:X needs a finite X ≥ 1"));
        }
        let last = (e.max(2) - 1) as f64;
        (0..e).map(|i| x.powf(-(i as f64) / last)).collect()
    } else {
        let text =
            input_file::read_to_string_capped(std::path::Path::new(imbalance), MAX_HISTOGRAM_BYTES)
                .map_err(|error| {
                    format!(
                "'{imbalance}' is neither uniform, skew:X nor a readable histogram file: {error}"
            )
                })?;
        let mut values = Vec::new();
        for word in text
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
        {
            let value: f64 = word
                .parse()
                .map_err(|_| format!("'{imbalance}': '{word}' is not a token count"))?;
            if !(value.is_finite() && value >= 0.0) {
                return Err(format!(
                    "'{imbalance}': '{word}' is not a non-negative count"
                ));
            }
            values.push(value);
        }
        if values.len() != e {
            return Err(format!(
                "'{imbalance}' has {} counts; the model has {experts} experts",
                values.len()
            ));
        }
        values
    };
    let total: f64 = weights.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return Err(format!("'{imbalance}': the counts sum to zero"));
    }
    Ok(weights.iter().map(|w| w / total).collect())
}

/// The routing of `model` over `ep` ranks, or the problems with it.
pub fn resolve(
    model: &ModelSpec,
    ep: u32,
    imbalance: Option<&str>,
    problems: &mut Vec<String>,
) -> Option<ExpertRouting> {
    let moe = model.moe.as_ref()?;
    let imbalance = imbalance.unwrap_or("uniform");
    let shares = match expert_shares(imbalance, moe.experts) {
        Ok(shares) => shares,
        Err(error) => {
            problems.push(format!("expert_imbalance: {error}"));
            return None;
        }
    };
    if ep == 0 || !moe.experts.is_multiple_of(ep as u64) {
        return None; // reported by `check`
    }
    let per_rank = (moe.experts / ep as u64) as usize;
    let mut busiest = (0, 0.0);
    for (rank, experts) in shares.chunks(per_rank).enumerate() {
        let load: f64 = experts.iter().sum();
        if load > busiest.1 {
            busiest = (rank as u32, load);
        }
    }
    // Uniform is exactly 1 (summed shares of 1/E may round above it).
    let busiest_rank_load = if imbalance == "uniform" {
        1.0
    } else {
        (busiest.1 * ep as f64).max(1.0)
    };
    Some(ExpertRouting {
        expert_parallel: ep,
        imbalance: imbalance.to_string(),
        shares,
        busiest_rank_load,
        busiest_rank: if imbalance == "uniform" { 0 } else { busiest.0 },
    })
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
    problems: &mut Vec<String>,
) {
    let Some(moe) = &model.moe else {
        if ep > 1 || etp > 1 || imbalance_given {
            problems.push(format!(
                "ep: '{}' has no experts (ep, etp and expert_imbalance apply to mixture-of-experts models)",
                model.name
            ));
        }
        return;
    };
    if !moe.experts.is_multiple_of(ep as u64) {
        problems.push(format!(
            "ep: the {} experts must split evenly over ep = {ep} ranks (num_experts % ep == 0)",
            moe.experts
        ));
    }
    if tp <= 1 && !replicas.is_multiple_of(ep) {
        problems.push(format!(
            "ep: expert-parallel groups are carved out of the dp × cp = {replicas} data-parallel ranks, which ep = {ep} must divide"
        ));
    }
    if tp > 1 && !(tp.saturating_mul(replicas)).is_multiple_of(ep) {
        problems.push(format!(
            "ep: expert-parallel groups are carved out of the tp × dp × cp = {} ranks of a stage (expert tensor parallelism 1), which ep = {ep} must divide",
            tp.saturating_mul(replicas)
        ));
    }
    if etp > 1 {
        problems.push(format!(
            "etp: expert tensor parallelism ({etp}) is not simulated yet; use etp 1"
        ));
    }
    if tp > 1 {
        // Megatron-Core asserts it (megatron/training/arguments.py: "When
        // using MoE and tensor parallelism, sequence parallelism must be used").
        if !options.sequence_parallel {
            problems.push(format!(
                "sequence_parallel: tensor parallelism ({tp}) in a mixture-of-experts model needs sequence parallelism, as Megatron-Core asserts"
            ));
        }
        // Megatron-Core's expert tensor parallelism defaults to tp
        // (megatron/training/arguments.py: expert_tensor_parallel_size =
        // tensor_model_parallel_size when not given); only etp = 1 is built.
        if !etp_given {
            problems.push(format!(
                "etp: with tp = {tp} Megatron-Core's expert tensor parallelism defaults to tp, which is not simulated yet; give etp 1 (--expert-tensor-parallel-size 1, as Megatron-Bridge's Qwen3 recipes set it)"
            ));
        }
        if moe.shared_experts > 0 {
            problems.push(format!(
                "tp: tensor parallelism ({tp}) with shared experts is not simulated yet (their tensor-parallel MLP is not built); use tp 1"
            ));
        }
    }
    let mut not_built = |what: &str| {
        problems.push(format!(
            "{what} with mixture-of-experts layers is not simulated yet (issue 17)"
        ))
    };
    if options.sharding >= Sharding::Gradients {
        not_built("zero_stage: ZeRO-2/3");
    }
    if options.offload.is_some() {
        not_built("zero_offload: ZeRO-Offload");
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
        let routing = resolve(&model, 4, None, &mut Vec::new()).unwrap();
        assert_eq!(routing.busiest_rank_load, 1.0);
        assert_eq!(routing.busiest_rank_tokens(4096, 2), 8192);
    }
}
