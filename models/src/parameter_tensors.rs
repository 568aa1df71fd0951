//! The parameter tensors of a layer, the embedding and the head on one
//! tensor-parallel rank, as Megatron-LM registers them (each gets its own
//! gradient hook and, unfused, its own gradient-accumulation kernel).
//! Megatron fuses Q, K and V into one tensor (grouped-query attention
//! included) and a SwiGLU's gate and up matrices into one `mlp_fc1` tensor.

use crate::kernel_role::KernelRole;
use crate::spec::ModelSpec;
use crate::spec::NormType;
use std::num::NonZeroU64;

/// One parameter tensor of one rank: its name, the name of the kernel that
/// adds a microbatch's gradient into its accumulated gradient and that
/// kernel's role, and its elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParameterTensor {
    pub name: &'static str,
    pub accumulate_kernel: &'static str,
    /// [`KernelRole::WeightGradientAccumulation`] for a weight that a
    /// weight-gradient GEMM produces (its accumulation follows the GEMM),
    /// [`KernelRole::GradientAccumulation`] for the rest (norm weights,
    /// biases, embedding tables).
    pub accumulate_role: KernelRole,
    pub elements: u64,
}

/// `tensor!(gemm "name", elements)`: a weight a weight-gradient GEMM
/// produces; `tensor!("name", elements)`: any other parameter.
macro_rules! tensor {
    (gemm $name:literal, $elements:expr) => {
        ParameterTensor {
            name: $name,
            accumulate_kernel: concat!($name, ".grad_accumulate"),
            accumulate_role: KernelRole::WeightGradientAccumulation,
            elements: $elements,
        }
    };
    ($name:literal, $elements:expr) => {
        ParameterTensor {
            name: $name,
            accumulate_kernel: concat!($name, ".grad_accumulate"),
            accumulate_role: KernelRole::GradientAccumulation,
            elements: $elements,
        }
    };
}

/// The parameter tensors of one transformer layer on one tensor-parallel rank:
/// the column-parallel QKV and MLP-in weights and biases are split by t; the
/// row-parallel projection and MLP-out weights are split by t but their biases
/// are replicated, as are both norms (a weight, and a bias for LayerNorm).
/// Tensors a model does not have (biases, RMSNorm's bias) are left out.
pub fn layer_parameter_tensors(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
) -> Vec<ParameterTensor> {
    layer_parameter_tensors_with_experts(model, tensor_parallel, NonZeroU64::MIN)
}

/// [`layer_parameter_tensors`] with a mixture of experts' experts split
/// `expert_parallel` ways (E/ep per rank).
pub fn layer_parameter_tensors_with_experts(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    expert_parallel: NonZeroU64,
) -> Vec<ParameterTensor> {
    layer_parameter_tensors_with_expert_split(
        model,
        tensor_parallel,
        expert_parallel,
        NonZeroU64::MIN,
    )
}

/// [`layer_parameter_tensors_with_experts`] with each local expert's fc1
/// column-parallel and fc2 row-parallel over `expert_tensor_parallel` ranks
/// (1/etp of each expert tensor: Megatron-Core's `TEGroupedMLP` over the
/// expert tensor group).
pub fn layer_parameter_tensors_with_expert_split(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    expert_parallel: NonZeroU64,
    expert_tensor_parallel: NonZeroU64,
) -> Vec<ParameterTensor> {
    let (h, t) = (model.hidden, tensor_parallel.get());
    let fc1_columns = match model.ffn_type {
        crate::spec::FfnType::Gelu => model.ffn(),
        crate::spec::FfnType::Swiglu => 2 * model.ffn(),
    };
    let layernorm = model.norm == NormType::Layernorm;
    let qkv = model.qkv_width();
    let mut tensors = vec![tensor!("layernorm_1.weight", h)];
    if layernorm {
        tensors.push(tensor!("layernorm_1.bias", h));
    }
    if let Some(mla) = &model.mla {
        // Megatron-Core's `MLASelfAttention`: duplicated down projections
        // and latent norms, column-parallel up projections ([`crate::mla_ops`]).
        let (n, r_kv) = (model.heads / t, mla.kv_lora_rank);
        let qk = mla.qk_head_dim();
        match mla.q_lora_rank {
            Some(r_q) => {
                tensors.push(tensor!(gemm "mla_q_down.weight", h * r_q));
                tensors.push(tensor!("mla_q_norm.weight", r_q));
                tensors.push(tensor!(gemm "mla_q_up.weight", r_q * n * qk));
            }
            None => tensors.push(tensor!(gemm "mla_q_proj.weight", h * n * qk)),
        }
        tensors.push(tensor!(
            gemm "mla_kv_down.weight",
            h * (r_kv + mla.qk_rope_head_dim)
        ));
        tensors.push(tensor!("mla_kv_norm.weight", r_kv));
        tensors.push(tensor!(
            gemm "mla_kv_up.weight",
            r_kv * n * (mla.qk_nope_head_dim + mla.v_head_dim)
        ));
        tensors.push(tensor!(gemm "output_projection.weight", n * mla.v_head_dim * h));
    } else {
        tensors.push(tensor!(gemm "qkv.weight", qkv * h / t));
        if model.has_qkv_bias() {
            tensors.push(tensor!("qkv.bias", qkv / t));
        }
        if model.qk_norm {
            // Qwen3's per-head norms (Megatron-Core's `q_layernorm`/`k_layernorm`):
            // one head_dim weight each, replicated on tensor ranks.
            tensors.push(tensor!("q_layernorm.weight", model.head_dim()));
            tensors.push(tensor!("k_layernorm.weight", model.head_dim()));
        }
        tensors.push(tensor!(gemm "output_projection.weight", model.q_width() * h / t));
    }
    if model.bias {
        tensors.push(tensor!("output_projection.bias", h));
    }
    tensors.push(tensor!("layernorm_2.weight", h));
    if layernorm {
        tensors.push(tensor!("layernorm_2.bias", h));
    }
    if let Some(moe) = &model.moe {
        // A MoE layer (t = 1): the router, the rank's E/ep experts as
        // Megatron-Core's `GroupedMLP` registers them (one fc1 and one fc2
        // tensor holding every local expert), the shared experts' MLP.
        let expert_columns = |f: u64| match model.ffn_type {
            crate::spec::FfnType::Gelu => f,
            crate::spec::FfnType::Swiglu => 2 * f,
        };
        let local = moe.experts / expert_parallel.get();
        let f = moe.expert_ffn_hidden / expert_tensor_parallel.get();
        tensors.push(tensor!(gemm "moe_router.weight", h * moe.experts));
        if moe.router == crate::moe::RouterType::Sigmoid {
            tensors.push(tensor!("moe_router.expert_bias", moe.experts));
        }
        tensors.push(tensor!(gemm "expert_fc1.weight", local * h * expert_columns(f)));
        tensors.push(tensor!(gemm "expert_fc2.weight", local * f * h));
        if moe.shared_experts > 0 {
            let shared = moe.shared_experts * moe.shared_ffn();
            tensors.push(tensor!(
                gemm "shared_expert_fc1.weight",
                h * expert_columns(shared)
            ));
            tensors.push(tensor!(gemm "shared_expert_fc2.weight", shared * h));
        }
        return tensors;
    }
    tensors.push(tensor!(gemm "mlp_fc1.weight", h * fc1_columns / t));
    if model.bias {
        tensors.push(tensor!("mlp_fc1.bias", fc1_columns / t));
    }
    tensors.push(tensor!(gemm "mlp_fc2.weight", model.ffn() * h / t));
    if model.bias {
        tensors.push(tensor!("mlp_fc2.bias", h));
    }
    tensors
}

/// Parameter tensors of the embedding (first stage) on one tensor-parallel
/// rank: the vocab-parallel word embedding and, without RoPE, the replicated
/// position embedding.
pub fn embedding_parameter_tensors(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
) -> Vec<ParameterTensor> {
    let mut tensors = vec![tensor!(
        "word_embedding.weight",
        model.vocab * model.hidden / tensor_parallel.get()
    )];
    if model.learned_positions() {
        tensors.push(tensor!(
            "position_embedding.weight",
            model.seq_len * model.hidden
        ));
    }
    tensors
}

/// Parameter tensors of the head (last stage) on one tensor-parallel rank: the
/// final norm and the output layer's matrix — its own when untied, else its
/// copy of the word embedding (with one stage autograd sums both uses of the
/// shared weight, which costs the same add).
pub fn head_parameter_tensors(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
) -> Vec<ParameterTensor> {
    let tensor_parallel = tensor_parallel.get();
    let mut tensors = vec![tensor!("final_layernorm.weight", model.hidden)];
    if model.norm == NormType::Layernorm {
        tensors.push(tensor!("final_layernorm.bias", model.hidden));
    }
    tensors.push(tensor!(
        gemm "output_layer.weight",
        model.vocab * model.hidden / tensor_parallel
    ));
    tensors
}

#[cfg(test)]
mod moe_tests {
    use crate::degree;
    #[test]
    fn a_moe_layer_s_tensors_sum_to_its_parameters_on_a_rank() {
        for (name, ep) in [
            ("mixtral-8x7b", 1u64),
            ("mixtral-8x7b", 8),
            ("mixtral-8x22b", 4),
        ] {
            let model = crate::presets::preset(name).unwrap();
            let sharding = crate::sharding::Sharding {
                tensor_parallel: degree(1),
                pipeline_parallel: degree(1),
                chunks: degree(1),
                split: Default::default(),
                map: Default::default(),
                expert_parallel: degree(ep as u32),
                expert_tensor_parallel: degree(1),
            };
            let total: u64 =
                super::layer_parameter_tensors_with_experts(&model, crate::nz(1), crate::nz(ep))
                    .iter()
                    .map(|tensor| tensor.elements)
                    .sum();
            assert_eq!(
                total,
                crate::sharding::layer_parameters_on_rank(&model, sharding),
                "{name} ep {ep}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formulas;

    fn sum(tensors: &[ParameterTensor]) -> u64 {
        tensors.iter().map(|p| p.elements).sum()
    }

    #[test]
    fn layer_parameter_tensors_sum_to_eq2_per_layer_without_tensor_parallelism() {
        let model = crate::presets::preset("gpt3-175b").unwrap();
        let total = sum(&layer_parameter_tensors(&model, crate::nz(1)));
        assert_eq!(total, formulas::layer_parameters(&model));
        // With t = 8 only the split weights and column-parallel biases shrink:
        // 6h replicated elements (two LayerNorms, two row-parallel biases) remain.
        let split = sum(&layer_parameter_tensors(&model, crate::nz(8)));
        let h = model.hidden;
        assert_eq!(
            split,
            (formulas::layer_parameters(&model) - 6 * h) / 8 + 6 * h
        );
        assert_eq!(layer_parameter_tensors(&model, crate::nz(8)).len(), 12);
    }

    #[test]
    fn llama_and_qwen_layers_hold_their_formula_counts() {
        for name in ["llama3-70b", "qwen2.5-72b", "llama2-7b"] {
            let model = crate::presets::preset(name).unwrap();
            let tensors = layer_parameter_tensors(&model, crate::nz(1));
            assert_eq!(sum(&tensors), formulas::layer_parameters(&model), "{name}");
            // Only the two RMSNorm weights are replicated (plus Qwen's QKV
            // bias, which is column-parallel and split).
            let split = sum(&layer_parameter_tensors(&model, crate::nz(8)));
            let h = model.hidden;
            assert_eq!(split, (sum(&tensors) - 2 * h) / 8 + 2 * h, "{name}");
        }
        let llama = crate::presets::preset("llama3-70b").unwrap();
        let names: Vec<_> = layer_parameter_tensors(&llama, crate::nz(8))
            .iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(
            names,
            [
                "layernorm_1.weight",
                "qkv.weight",
                "output_projection.weight",
                "layernorm_2.weight",
                "mlp_fc1.weight",
                "mlp_fc2.weight"
            ]
        );
    }

    #[test]
    fn qwen3_moe_layers_hold_their_formula_counts() {
        // Wider heads (32 × 128 on h = 2048) and the two head_dim norms.
        let model = crate::presets::preset("qwen3-30b-a3b").unwrap();
        let tensors = layer_parameter_tensors(&model, crate::nz(1));
        assert_eq!(sum(&tensors), formulas::moe_layer_parameters(&model));
        let (h, q, d) = (2048, 32 * 128, 128);
        let find = |name: &str| tensors.iter().find(|p| p.name == name).unwrap().elements;
        assert_eq!(find("output_projection.weight"), q * h);
        assert_eq!(find("q_layernorm.weight"), d);
        assert_eq!(find("k_layernorm.weight"), d);
    }

    #[test]
    fn untied_rope_models_have_no_position_table_and_one_norm_weight_in_the_head() {
        let model = crate::presets::preset("llama3-8b").unwrap();
        assert_eq!(embedding_parameter_tensors(&model, crate::nz(1)).len(), 1);
        let head = head_parameter_tensors(&model, crate::nz(2));
        assert_eq!(sum(&head), model.hidden + model.vocab * model.hidden / 2);
        let total = sum(&embedding_parameter_tensors(&model, crate::nz(1)))
            + sum(&head_parameter_tensors(&model, crate::nz(1)))
            + model.layers * sum(&layer_parameter_tensors(&model, crate::nz(1)));
        assert_eq!(total, formulas::published_parameter_count(&model));
    }
}
