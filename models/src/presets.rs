//! Built-in models. Sources: GPT-3 (Brown et al. 2020, Table 2.1); Megatron-LM
//! SC21 Table 1 (530B, 1T); Korthikanti et al. 2022 Table 3 (22B); ZeRO-Offload
//! (Ren et al. ATC'21) Table 3 GPT-2-like models for single-GPU offload work;
//! today's models from their Hugging Face `config.json` (each cited at its
//! constructor call), with their published parameter counts tested in
//! [`crate::formulas`]; the mixtures of experts Mixtral 8x7B and 8x22B,
//! DeepSeek-V3 and Qwen3-30B-A3B / 235B-A22B likewise (counted, not simulated).

use crate::dropout::DropoutRate;
use crate::moe::{MlaSpec, MoeSpec, RouterType};
use crate::spec::ModelSpec;
use crate::spec::{FfnType, NormType};

fn gpt(name: &str, layers: u64, hidden: u64, heads: u64, seq_len: u64) -> ModelSpec {
    ModelSpec {
        name: name.to_string(),
        layers,
        hidden,
        heads,
        seq_len,
        vocab: 51200,
        ffn_hidden: None,
        kv_heads: None,
        ffn_type: FfnType::Gelu,
        norm: NormType::Layernorm,
        bias: true,
        qkv_bias: None,
        rope: false,
        tied_embeddings: true,
        vocab_unpadded: None,
        head_dim: None,
        qk_norm: false,
        moe: None,
        mla: None,
        attention_dropout: DropoutRate::MEGATRON_DEFAULT,
        hidden_dropout: DropoutRate::MEGATRON_DEFAULT,
        trained_dtype: None,
    }
}

/// The sizes of a Llama-style model from its `config.json`.
struct LlamaConfig {
    /// `num_hidden_layers`
    layers: u64,
    /// `hidden_size`
    hidden: u64,
    /// `num_attention_heads`
    heads: u64,
    /// `num_key_value_heads`
    kv_heads: u64,
    /// `intermediate_size`
    ffn_hidden: u64,
    /// `vocab_size`
    vocab: u64,
}

/// A Llama-style model: grouped-query attention, SwiGLU, RMSNorm, RoPE, no
/// biases (unless `qkv_bias`), untied embeddings (`tie_word_embeddings`
/// false in every config used here).
fn llama(name: &str, config: LlamaConfig, seq_len: u64, qkv_bias: bool) -> ModelSpec {
    ModelSpec {
        name: name.to_string(),
        layers: config.layers,
        hidden: config.hidden,
        heads: config.heads,
        seq_len,
        vocab: config.vocab,
        ffn_hidden: Some(config.ffn_hidden),
        kv_heads: Some(config.kv_heads),
        ffn_type: FfnType::Swiglu,
        norm: NormType::Rmsnorm,
        bias: false,
        qkv_bias: qkv_bias.then_some(true),
        rope: true,
        tied_embeddings: false,
        vocab_unpadded: None,
        head_dim: None,
        qk_norm: false,
        moe: None,
        mla: None,
        // Their configs' `attention_dropout` is 0.0 and their blocks have no
        // residual dropout; Megatron's recipes train them so
        // (NeMo-Framework-Launcher conf/training/llama/*.yaml at 1a7171d7:
        // hidden_dropout and attention_dropout 0.0).
        attention_dropout: DropoutRate::NONE,
        hidden_dropout: DropoutRate::NONE,
        trained_dtype: None,
    }
}

/// Shorthand for a [`LlamaConfig`] in `config.json` order: layers, hidden,
/// heads, KV heads, intermediate size, vocab.
fn config(
    layers: u64,
    hidden: u64,
    heads: u64,
    kv_heads: u64,
    ffn_hidden: u64,
    vocab: u64,
) -> LlamaConfig {
    LlamaConfig {
        layers,
        hidden,
        heads,
        kv_heads,
        ffn_hidden,
        vocab,
    }
}

/// Routed experts of `expert_ffn_hidden` in every layer, `top_k` per token,
/// softmax router, dropless: Mixtral's and Qwen3-MoE's `SparseMoeBlock`
/// (their Hugging Face configs carry no capacity factor, the `transformers`
/// blocks drop no token, and Megatron-LM's Mixtral example,
/// `examples/mixtral/train_mixtral_8x7b_distributed.sh` at 575b0fbd, sets no
/// `--moe-expert-capacity-factor`).
fn experts(experts: u64, top_k: u64, expert_ffn_hidden: u64) -> MoeSpec {
    MoeSpec {
        experts,
        top_k,
        expert_ffn_hidden,
        shared_experts: 0,
        shared_expert_ffn_hidden: None,
        first_dense_layers: 0,
        layer_frequency: 1,
        router: RouterType::Softmax,
        capacity_factor: None,
        pad_expert_input_to_capacity: false,
    }
}

/// A Llama-style model whose MLPs are experts.
fn mixture(name: &str, config: LlamaConfig, seq_len: u64, moe: MoeSpec) -> ModelSpec {
    ModelSpec {
        moe: Some(moe),
        ..llama(name, config, seq_len, false)
    }
}

/// Qwen3-MoE: a mixture with 128-wide heads (wider than hidden/heads) and
/// RMSNorm over each head's query and key (`Qwen3MoeAttention`'s q_norm, k_norm).
fn qwen3_moe(name: &str, config: LlamaConfig, seq_len: u64, moe: MoeSpec) -> ModelSpec {
    ModelSpec {
        head_dim: Some(128),
        qk_norm: true,
        ..mixture(name, config, seq_len, moe)
    }
}

/// deepseek-ai/DeepSeek-V3 `config.json`: 61 layers, h = 7168, 128 heads,
/// dense `intermediate_size` 18432 in the first 3 layers
/// (`first_k_dense_replace`), then 256 routed experts of 2048
/// (`moe_intermediate_size`), 8 per token, 1 shared, sigmoid router with
/// `noaux_tc` bias; MLA with `q_lora_rank` 1536, `kv_lora_rank` 512,
/// `qk_nope_head_dim` 128, `qk_rope_head_dim` 64, `v_head_dim` 128; vocab
/// 129280. Pre-trained at 4K tokens (DeepSeek-V3 technical report, Sec.
/// 4.2) before the YaRN extension. Its multi-token-prediction module
/// (`num_nextn_predict_layers` 1) is not part of the model.
fn deepseek_v3() -> ModelSpec {
    ModelSpec {
        kv_heads: None,
        moe: Some(MoeSpec {
            shared_experts: 1,
            first_dense_layers: 3,
            router: RouterType::Sigmoid,
            ..experts(256, 8, 2048)
        }),
        mla: Some(MlaSpec {
            q_lora_rank: Some(1536),
            kv_lora_rank: 512,
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 64,
            v_head_dim: 128,
        }),
        ..llama(
            "deepseek-v3",
            config(61, 7168, 128, 128, 18432, 129280),
            4096,
            false,
        )
    }
}

/// (name, constructor) for every preset, in the order `--help` lists them.
fn all() -> Vec<ModelSpec> {
    vec![
        // Small model for tests and quick runs.
        gpt("tiny", 4, 512, 8, 256),
        // Korthikanti et al. 2022 Table 3.
        gpt("gpt-22b", 48, 6144, 64, 2048),
        // GPT-3 175B (Brown et al.; Megatron-LM SC21 Table 1 row 175B uses a=96).
        gpt("gpt3-175b", 96, 12288, 96, 2048),
        // Megatron-LM SC21 Table 1 / Megatron-Turing NLG 530B.
        gpt("gpt-530b", 105, 20480, 128, 2048),
        // Megatron-LM SC21 Table 1, 1.0T row.
        gpt("gpt-1t", 128, 25600, 160, 2048),
        // ZeRO-Offload paper Table 3 (GPT-2-like, seq 1024 as in their runs).
        gpt("gpt2-1b", 20, 2048, 16, 1024),
        gpt("gpt2-2b", 40, 2048, 16, 1024),
        gpt("gpt2-4b", 64, 2304, 16, 1024),
        gpt("gpt2-6b", 53, 3072, 16, 1024),
        gpt("gpt2-8b", 72, 3072, 16, 1024),
        gpt("gpt2-10b", 50, 4096, 16, 1024),
        gpt("gpt2-11b", 55, 4096, 16, 1024),
        gpt("gpt2-12b", 60, 4096, 16, 1024),
        gpt("gpt2-13b", 65, 4096, 16, 1024),
        // Today's models: Hugging Face config.json (layers, hidden, heads,
        // num_key_value_heads, intermediate_size, vocab_size); sequence length
        // the pretraining context. Sliding-window attention (Mistral) and
        // long-context extension stages are not modeled.
        // meta-llama/Llama-2-7b-hf: 4096-token context (Llama 2 paper, Table 1).
        llama(
            "llama2-7b",
            config(32, 4096, 32, 32, 11008, 32000),
            4096,
            false,
        ),
        // meta-llama/Llama-2-13b-hf.
        llama(
            "llama2-13b",
            config(40, 5120, 40, 40, 13824, 32000),
            4096,
            false,
        ),
        // meta-llama/Llama-2-70b-hf (grouped-query attention, 8 KV heads).
        llama(
            "llama2-70b",
            config(80, 8192, 64, 8, 28672, 32000),
            4096,
            false,
        ),
        // meta-llama/Meta-Llama-3-8B: 8192-token context.
        llama(
            "llama3-8b",
            config(32, 4096, 32, 8, 14336, 128256),
            8192,
            false,
        ),
        // meta-llama/Meta-Llama-3-70B.
        llama(
            "llama3-70b",
            config(80, 8192, 64, 8, 28672, 128256),
            8192,
            false,
        ),
        // meta-llama/Llama-3.1-405B: pretrained at 8192 tokens before the
        // 128 K extension (Llama 3 paper, Sec. 3.4).
        llama(
            "llama3.1-405b",
            config(126, 16384, 128, 8, 53248, 128256),
            8192,
            false,
        ),
        // mistralai/Mistral-7B-v0.1: 8192-token context (Mistral 7B paper, Table 1).
        llama(
            "mistral-7b",
            config(32, 4096, 32, 8, 14336, 32000),
            8192,
            false,
        ),
        // Qwen/Qwen2.5-72B: biases on Q, K and V only; pretrained at 4096
        // tokens before the 32 K stage (Qwen2.5 technical report, long-context pre-training).
        llama(
            "qwen2.5-72b",
            config(80, 8192, 64, 8, 29568, 152064),
            4096,
            true,
        ),
        // Mixtures of experts (parameter counts tested in formulas_moe_tests.rs;
        // the simulator refuses them until their layers are lowered).
        // mistralai/Mixtral-8x7B-v0.1: 8 experts of 14336, 2 per token;
        // 32 K-token context (Mixtral of Experts, Jiang et al. 2024, Sec. 2).
        mixture(
            "mixtral-8x7b",
            config(32, 4096, 32, 8, 14336, 32000),
            32768,
            experts(8, 2, 14336),
        ),
        // mistralai/Mixtral-8x22B-v0.1: 8 experts of 16384, 2 per token;
        // 64 K-token context (`max_position_embeddings` 65536).
        mixture(
            "mixtral-8x22b",
            config(56, 6144, 48, 8, 16384, 32000),
            65536,
            experts(8, 2, 16384),
        ),
        deepseek_v3(),
        // Qwen/Qwen3-30B-A3B: 128 experts of 768 (`moe_intermediate_size`),
        // 8 per token, 4 KV heads, `head_dim` 128; pre-trained at 4,096 tokens
        // before the 32 K stage (Qwen3 technical report, Sec. 3.2).
        qwen3_moe(
            "qwen3-30b-a3b",
            config(48, 2048, 32, 4, 6144, 151936),
            4096,
            experts(128, 8, 768),
        ),
        // Qwen/Qwen3-235B-A22B: 128 experts of 1536, 8 per token.
        qwen3_moe(
            "qwen3-235b-a22b",
            config(94, 4096, 64, 4, 12288, 151936),
            4096,
            experts(128, 8, 1536),
        ),
    ]
}

/// The preset with this name, if any.
pub fn preset(name: &str) -> Option<ModelSpec> {
    all().into_iter().find(|spec| spec.name == name)
}

/// Names of all presets.
pub fn preset_names() -> Vec<String> {
    all().into_iter().map(|spec| spec.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid_and_round_trips_through_json() {
        for name in preset_names() {
            let spec = preset(&name).unwrap();
            spec.validate().unwrap();
            let text = serde_json::to_string(&spec).unwrap();
            assert_eq!(ModelSpec::from_json_str(&text, "test").unwrap(), spec);
        }
    }

    #[test]
    fn gpt_presets_serialize_without_the_new_keys() {
        let text = serde_json::to_string(&preset("gpt3-175b").unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"name":"gpt3-175b","layers":96,"hidden":12288,"heads":96,"seq_len":2048,"vocab":51200}"#
        );
        let llama = serde_json::to_string(&preset("llama3-70b").unwrap()).unwrap();
        for key in [
            "kv_heads",
            "swiglu",
            "rmsnorm",
            "\"bias\":false",
            "rope",
            "tied_embeddings",
        ] {
            assert!(llama.contains(key), "{key} in {llama}");
        }
    }

    #[test]
    fn only_the_mixtures_carry_the_expert_keys() {
        for name in preset_names() {
            let text = serde_json::to_string(&preset(&name).unwrap()).unwrap();
            let mixture = name.starts_with("mixtral")
                || name.starts_with("deepseek")
                || name.starts_with("qwen3");
            assert_eq!(text.contains("\"moe\""), mixture, "{text}");
            assert_eq!(text.contains("\"mla\""), name == "deepseek-v3", "{text}");
            assert_eq!(
                text.contains("head_dim\":128,\"qk_norm"),
                name.starts_with("qwen3"),
                "{text}"
            );
        }
        let mixtral = serde_json::to_string(&preset("mixtral-8x7b").unwrap()).unwrap();
        assert!(
            mixtral.ends_with(
                r#""moe":{"experts":8,"top_k":2,"expert_ffn_hidden":14336},"attention_dropout":0.0,"hidden_dropout":0.0}"#
            ),
            "{mixtral}"
        );
    }
}
