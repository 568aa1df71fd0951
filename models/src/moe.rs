//! Mixture-of-experts MLPs and multi-head latent attention (MLA): the
//! optional `moe` and `mla` objects of a [`crate::spec::ModelSpec`], their keys named
//! after the Hugging Face configs of Mixtral, DeepSeek-V3 and Qwen3-MoE, and
//! their validation. What they count is in [`crate::formulas`]; the kernels
//! of a MoE block under expert parallelism are in [`crate::moe_ops`] (the
//! simulator lowers experts, dense layers between MoE layers, token
//! dropping at a capacity factor and latent attention (`crate::mla_ops`)).
//!
//! Layer rule (DeepSeek-V3's `DeepseekV3DecoderLayer`: `layer_idx >=
//! first_k_dense_replace and layer_idx % moe_layer_freq == 0`; with the
//! defaults 0 and 1, every layer as in Mixtral and Qwen3-MoE): layer `i`
//! (0-based) has the mixture of experts when `i >= first_dense_layers` and
//! `i % layer_frequency == 0`; every other layer has the model's dense MLP of
//! `ffn_hidden`.

use serde::{Deserialize, Serialize};

/// How the router turns its logits into expert weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RouterType {
    /// Softmax over the experts, top-k kept (Mixtral's and Qwen3-MoE's
    /// `gate`: an h×E linear layer without bias).
    #[default]
    Softmax,
    /// Sigmoid scores with a learned per-expert bias used for the top-k
    /// choice only (DeepSeek-V3's auxiliary-loss-free balancing, technical
    /// report Sec. 2.1.2; `e_score_correction_bias`: E more parameters).
    Sigmoid,
}

/// A capacity factor: each expert takes at most `factor · tokens · top_k /
/// experts` tokens of a batch and drops the rest (GShard, Switch
/// Transformer). A plain number in JSON; compared by its bits so a
/// [`crate::spec::ModelSpec`] stays `Eq`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CapacityFactor(pub f64);

impl PartialEq for CapacityFactor {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for CapacityFactor {}

fn one() -> u64 {
    1
}
fn is_one(value: &u64) -> bool {
    *value == 1
}
fn is_zero(value: &u64) -> bool {
    *value == 0
}
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// The mixture-of-experts MLP of a model's MoE layers. Every expert is an MLP
/// of the model's `ffn_type` and `bias` (SwiGLU experts are gated: gate, up
/// and down matrices).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoeSpec {
    /// Routed experts per MoE layer (`num_local_experts` in Mixtral,
    /// `n_routed_experts` in DeepSeek-V3, `num_experts` in Qwen3-MoE).
    pub experts: u64,
    /// Routed experts each token goes to (`num_experts_per_tok`).
    pub top_k: u64,
    /// Inner size of one routed expert (`moe_intermediate_size`; Mixtral's
    /// `intermediate_size`).
    pub expert_ffn_hidden: u64,
    /// Experts every token goes to besides the routed ones (`n_shared_experts`; default 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shared_experts: u64,
    /// Inner size of one shared expert; `expert_ffn_hidden` when absent
    /// (DeepSeek-V3 fuses its shared experts into one MLP of
    /// `n_shared_experts · moe_intermediate_size`, the same parameters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_expert_ffn_hidden: Option<u64>,
    /// Leading layers with the dense MLP (`first_k_dense_replace`; default 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_dense_layers: u64,
    /// Every `layer_frequency`-th layer from there has experts (`moe_layer_freq`; default 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub layer_frequency: u64,
    /// The router: "softmax" (default) or "sigmoid" (DeepSeek-V3).
    #[serde(default, skip_serializing_if = "is_default")]
    pub router: RouterType,
    /// Token dropping at this capacity factor (Megatron-Core's
    /// `--moe-expert-capacity-factor`); absent: dropless (every token
    /// reaches its top-k experts, as Mixtral, DeepSeek-V3 and Qwen3-MoE are
    /// trained and served). Each rank's router keeps at most
    /// [`expert_capacity`] of its own copies per expert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_factor: Option<CapacityFactor>,
    /// With a capacity factor, every expert's input padded to its capacity
    /// (Megatron-Core's `--moe-pad-expert-input-to-capacity`: each rank
    /// sends exactly the capacity to every expert; default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pad_expert_input_to_capacity: bool,
}

/// The most copies one expert takes from one rank's `copies` routed copies
/// (tokens × top-k) at `capacity_factor`: Megatron-Core's `get_capacity`,
/// `math.ceil((num_tokens / num_experts) * capacity_factor)` with
/// `num_tokens` = the rank's tokens × top-k (`moe_utils.py`
/// `apply_router_token_dropping` and the all-to-all dispatcher's
/// `preprocess`, core_r0.15.0 575b0fbd), in the same f64 arithmetic.
pub fn expert_capacity(copies: u64, experts: u64, capacity_factor: f64) -> u64 {
    ((copies as f64 / experts.max(1) as f64) * capacity_factor).ceil() as u64
}

/// Multi-head latent attention (DeepSeek-V2/V3): queries through an optional
/// low-rank latent, keys and values through a shared latent of
/// `kv_lora_rank`, each head's query and key split into a part without and a
/// part with rotary embedding (the latter shared by all heads for the key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlaSpec {
    /// Rank of the query latent (`q_lora_rank`; absent: queries projected
    /// straight from the hidden state, as DeepSeek-V2-Lite does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q_lora_rank: Option<u64>,
    /// Rank of the key/value latent (`kv_lora_rank`).
    pub kv_lora_rank: u64,
    /// Per-head query/key dimension without rotary embedding (`qk_nope_head_dim`).
    pub qk_nope_head_dim: u64,
    /// Per-head query/key dimension with rotary embedding (`qk_rope_head_dim`).
    pub qk_rope_head_dim: u64,
    /// Per-head value dimension (`v_head_dim`).
    pub v_head_dim: u64,
}

/// Most routed experts a layer may have (DeepSeek-V3 has 256; fine-grained
/// designs go to a few thousand): with [`crate::limits::MAX_LAYERS`] and the
/// other limits it bounds every count; the model's whole parameter count is
/// checked against [`MAX_PARAMETERS`] too.
pub const MAX_EXPERTS: u64 = 1 << 14;
/// Most parameters a model with experts or latent attention may have
/// (2^58, about 2.9e17): the largest dense model the other limits allow is
/// of the same order, so every byte count of it still fits in u64.
pub const MAX_PARAMETERS: u128 = 1 << 58;
/// Largest capacity factor accepted: past `experts / top_k` no token is
/// dropped anyway, and nobody trains with more.
pub const MAX_CAPACITY_FACTOR: f64 = 1024.0;

impl MoeSpec {
    /// Inner size of one shared expert.
    pub fn shared_ffn(&self) -> u64 {
        self.shared_expert_ffn_hidden
            .unwrap_or(self.expert_ffn_hidden)
    }

    /// Whether layer `index` (0-based) has the mixture of experts.
    pub fn is_moe_layer(&self, index: u64) -> bool {
        index >= self.first_dense_layers && index.is_multiple_of(self.layer_frequency.max(1))
    }

    /// How many of `layers` layers have the mixture of experts (counted in
    /// closed form: multiples of the frequency in [first_dense_layers, layers)).
    pub fn moe_layers(&self, layers: u64) -> u64 {
        let frequency = self.layer_frequency.max(1);
        let first = self.first_dense_layers.min(layers);
        layers.div_ceil(frequency) - first.div_ceil(frequency)
    }

    /// How many of the `count` layers from layer `first` (0-based) have the
    /// mixture of experts.
    pub fn moe_layers_in(&self, first: u64, count: u64) -> u64 {
        self.moe_layers(first.saturating_add(count)) - self.moe_layers(first)
    }

    /// Problems with these keys, each naming its `moe.` key.
    pub fn problems(&self, layers: u64) -> Vec<String> {
        let mut problems = Vec::new();
        for (key, value, max) in [
            ("moe.experts", self.experts, MAX_EXPERTS),
            ("moe.top_k", self.top_k, MAX_EXPERTS),
            (
                "moe.expert_ffn_hidden",
                self.expert_ffn_hidden,
                crate::limits::MAX_FFN_HIDDEN,
            ),
            (
                "moe.layer_frequency",
                self.layer_frequency,
                crate::limits::MAX_LAYERS,
            ),
        ] {
            if value == 0 {
                problems.push(format!("{key} must be positive"));
            } else if value > max {
                problems.push(format!("{key} {value} is over the limit of {max}"));
            }
        }
        if self.top_k > self.experts && self.experts > 0 {
            problems.push(format!(
                "moe.top_k ({}) must not exceed moe.experts ({}): a token goes to distinct experts",
                self.top_k, self.experts
            ));
        }
        if self.shared_experts > MAX_EXPERTS {
            problems.push(format!(
                "moe.shared_experts {} is over the limit of {MAX_EXPERTS}",
                self.shared_experts
            ));
        }
        match self.shared_expert_ffn_hidden {
            Some(0) => {
                problems.push("moe.shared_expert_ffn_hidden must be positive when given".into())
            }
            Some(f) if f > crate::limits::MAX_FFN_HIDDEN => problems.push(format!(
                "moe.shared_expert_ffn_hidden {f} is over the limit of {}",
                crate::limits::MAX_FFN_HIDDEN
            )),
            Some(_) if self.shared_experts == 0 => problems
                .push("moe.shared_expert_ffn_hidden is given but moe.shared_experts is 0".into()),
            _ => {}
        }
        if layers > 0 && self.layer_frequency > 0 && self.moe_layers(layers) == 0 {
            problems.push(format!(
                "moe: no layer has experts (first_dense_layers {}, layer_frequency {}, {layers} layers)",
                self.first_dense_layers, self.layer_frequency
            ));
        }
        if self.pad_expert_input_to_capacity && self.capacity_factor.is_none() {
            // Megatron-Core's TransformerConfig raises the same.
            problems.push(
                "moe.pad_expert_input_to_capacity needs moe.capacity_factor (padding is to a capacity)"
                    .into(),
            );
        }
        if let Some(CapacityFactor(factor)) = self.capacity_factor {
            if !(factor.is_finite() && factor > 0.0 && factor <= MAX_CAPACITY_FACTOR) {
                problems.push(format!(
                    "moe.capacity_factor {factor} must be a positive number of at most {MAX_CAPACITY_FACTOR} (leave it out for dropless routing)"
                ));
            }
        }
        problems
    }
}

impl MlaSpec {
    /// Per-head query/key dimension: `qk_nope_head_dim + qk_rope_head_dim`.
    pub fn qk_head_dim(&self) -> u64 {
        self.qk_nope_head_dim + self.qk_rope_head_dim
    }

    /// Problems with these keys, each naming its `mla.` key.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let limit = crate::limits::MAX_HIDDEN;
        for (key, value) in [
            ("mla.kv_lora_rank", Some(self.kv_lora_rank)),
            ("mla.q_lora_rank", self.q_lora_rank),
            ("mla.v_head_dim", Some(self.v_head_dim)),
            ("mla.qk_rope_head_dim", Some(self.qk_rope_head_dim)),
        ] {
            match value {
                Some(0) => problems.push(format!("{key} must be positive")),
                Some(v) if v > limit => {
                    problems.push(format!("{key} {v} is over the limit of {limit}"))
                }
                _ => {}
            }
        }
        if self.qk_nope_head_dim > limit {
            problems.push(format!(
                "mla.qk_nope_head_dim {} is over the limit of {limit}",
                self.qk_nope_head_dim
            ));
        }
        if !self.qk_rope_head_dim.is_multiple_of(2) {
            problems.push(format!(
                "mla.qk_rope_head_dim ({}) must be even: rotary embedding turns pairs of dimensions",
                self.qk_rope_head_dim
            ));
        }
        problems
    }
}
