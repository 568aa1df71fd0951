//! Parameter, active-parameter and FLOP counts of the mixture-of-experts
//! presets against hand-computed closed forms and the published figures.

use super::*;
use crate::moe::{CapacityFactor, MlaSpec};

fn preset(name: &str) -> ModelSpec {
    crate::presets::preset(name).unwrap()
}

/// (total, active) as model cards count them.
fn published(name: &str) -> (u64, u64) {
    let model = preset(name);
    (
        published_parameter_count(&model),
        published_active_parameter_count(&model),
    )
}

#[test]
fn mixtral_8x7b_is_46_7b_total_and_12_9b_active() {
    // Per layer: attention q 4096², k and v 4096·1024 each, o 4096²
    // = 41,943,040; one expert 3·4096·14336 = 176,160,768; router 4096·8;
    // two RMSNorms 8192. Embedding and untied head 2·32000·4096, final norm 4096.
    let attention = 2 * 4096 * 4096 + 2 * 4096 * 1024;
    let expert = 3 * 4096 * 14336;
    let rest = 4096 * 8 + 2 * 4096;
    let tables = 2 * 32000 * 4096 + 4096;
    let total = 32 * (attention + 8 * expert + rest) + tables;
    let active = 32 * (attention + 2 * expert + rest) + tables;
    assert_eq!(published("mixtral-8x7b"), (total, active));
    // 46,702,792,704: the checkpoint's num_parameters() (Hugging Face model
    // page, 46.7B); 12,879,925,248 active: Mistral's "12.9B active parameters"
    // (Mixtral of Experts announcement; Jiang et al. 2024 Sec. 1 "13B").
    assert_eq!(total, 46_702_792_704);
    assert_eq!(active, 12_879_925_248);
}

#[test]
fn mixtral_8x22b_is_141b_total_and_39b_active() {
    let attention = 2 * 6144 * 6144 + 2 * 6144 * 1024;
    let expert = 3 * 6144 * 16384;
    let rest = 6144 * 8 + 2 * 6144;
    let tables = 2 * 32000 * 6144 + 6144;
    let (total, active) = published("mixtral-8x22b");
    assert_eq!(total, 56 * (attention + 8 * expert + rest) + tables);
    assert_eq!(active, 56 * (attention + 2 * expert + rest) + tables);
    // Mistral's announcement: 141B total, 39B active.
    assert_eq!((total, active), (140_620_634_112, 39_152_031_744));
}

#[test]
fn deepseek_v3_is_671b_total_and_37b_active_without_its_mtp_module() {
    let (h, a) = (7168u64, 128u64);
    // MLA: q_a 7168·1536, q_a_layernorm 1536, q_b 1536·128·192, kv_a
    // 7168·(512+64), kv_a_layernorm 512, kv_b 512·128·(128+128), o 128·128·7168.
    let mla = h * 1536 + 1536 + 1536 * a * 192 + h * 576 + 512 + 512 * a * 256 + a * 128 * h;
    assert_eq!(mla, 187_107_328);
    let norms = 2 * h;
    let dense = mla + norms + 3 * h * 18432;
    let expert = 3 * h * 2048;
    // Router: 256×7168 gate and the 256 e_score_correction_bias.
    let router = 256 * h + 256;
    let moe = mla + norms + router + 256 * expert + expert;
    let moe_active = mla + norms + router + 8 * expert + expert;
    let tables = 2 * 129280 * h + h;
    let (total, active) = published("deepseek-v3");
    assert_eq!(total, 3 * dense + 58 * moe + tables);
    assert_eq!(active, 3 * dense + 58 * moe_active + tables);
    // Technical report (Sec. 1, 2): 671B total, 37B activated per token.
    assert_eq!(total, 671_026_419_200);
    assert_eq!(active, 37_552_297_472);
    // "37B" is 37.55 B counting both vocabulary tables as Mixtral's 12.9 B
    // does; without the input embedding (a lookup) it is 36.63 B.
    assert_eq!(active - 129280 * h, 36_625_618_432);
    // The Hugging Face checkpoint's 685B adds the MTP module (report Sec.
    // 2.2, "14B"): one more MoE layer, the enorm/hnorm and shared-head norms,
    // the 2h×h eh_proj, and its own copies of the embedding and head.
    let mtp = moe + 3 * h + 2 * h * h + 2 * 129280 * h;
    assert_eq!(mtp, 13_463_426_304);
    assert_eq!(total + mtp, 684_489_845_504);
}

#[test]
fn qwen3_moe_models_match_their_model_cards() {
    // Qwen3-30B-A3B: q 2048·4096, k and v 2048·512, o 4096·2048, q/k norms
    // 128 each; 128 experts of 3·2048·768; router 2048·128; norms 2·2048.
    let attention = 2 * 2048 * 4096 + 2 * 2048 * 512 + 256;
    let expert = 3 * 2048 * 768;
    let rest = 2048 * 128 + 2 * 2048;
    let tables = 2 * 151936 * 2048 + 2048;
    let (total, active) = published("qwen3-30b-a3b");
    assert_eq!(total, 48 * (attention + 128 * expert + rest) + tables);
    assert_eq!(active, 48 * (attention + 8 * expert + rest) + tables);
    // Model card: 30.5B total, 3.3B activated, 29.9B non-embedding.
    assert_eq!((total, active), (30_532_122_624, 3_353_032_704));
    assert_eq!(total - 2 * 151936 * 2048, 29_909_792_768);
    // Qwen3-235B-A22B: 235B total, 22B activated, 234B non-embedding.
    let attention = 2 * 4096 * 8192 + 2 * 4096 * 512 + 256;
    let expert = 3 * 4096 * 1536;
    let rest = 4096 * 128 + 2 * 4096;
    let tables = 2 * 151936 * 4096 + 4096;
    let (total, active) = published("qwen3-235b-a22b");
    assert_eq!(total, 94 * (attention + 128 * expert + rest) + tables);
    assert_eq!(active, 94 * (attention + 8 * expert + rest) + tables);
    assert_eq!((total, active), (235_093_634_560, 22_190_763_520));
    assert_eq!(total - 2 * 151936 * 4096, 233_848_974_848);
}

#[test]
fn unpublished_counts_follow_the_published_ones() {
    for name in [
        "mixtral-8x7b",
        "mixtral-8x22b",
        "deepseek-v3",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
    ] {
        let model = preset(name);
        // No padding in these vocabularies: Eq. 2's count is the card's less the final norm.
        assert_eq!(
            parameter_count(&model) + model.norm_parameters(),
            published_parameter_count(&model),
            "{name}"
        );
        assert_eq!(
            active_parameter_count(&model) + model.norm_parameters(),
            published_active_parameter_count(&model),
            "{name}"
        );
        let moe = model.moe.as_ref().unwrap();
        let layers = moe.moe_layers(model.layers);
        assert_eq!(
            all_layers_parameters(&model),
            (model.layers - layers) * layer_parameters(&model)
                + layers * moe_layer_parameters(&model),
            "{name}"
        );
    }
    // Dense models: active is total.
    for name in ["gpt3-175b", "llama3-70b", "qwen2.5-72b"] {
        let model = preset(name);
        assert_eq!(active_parameter_count(&model), parameter_count(&model));
        assert_eq!(moe_layer_parameters(&model), layer_parameters(&model));
    }
}

#[test]
fn training_flops_per_token_is_eq3_for_gpt_blocks() {
    for name in ["gpt3-175b", "gpt-1t", "tiny"] {
        let model = preset(name);
        let tokens = (8 * model.seq_len) as f64;
        for (recompute, eq3) in [
            (false, flops_per_iteration_no_recompute(&model, 8)),
            (true, flops_per_iteration_full_recompute(&model, 8)),
        ] {
            let ours = training_flops_per_token(&model, recompute) * tokens;
            assert!((ours - eq3).abs() / eq3 < 1e-12, "{name}: {ours} vs {eq3}");
        }
    }
}

#[test]
fn training_flops_per_token_counts_the_active_experts_and_the_attention_core() {
    // Mixtral 8x7B, s = 32768: 6 FLOPs per active matmul weight (attention
    // 41,943,040, router 32,768, two experts 2·176,160,768 per layer; head
    // 32000·4096), and 3 passes of 2·s·a·(d + d) per layer for the core.
    let model = preset("mixtral-8x7b");
    let weights: u64 = 32 * (41_943_040 + 32_768 + 2 * 176_160_768) + 32000 * 4096;
    let core: u64 = 32 * 2 * 32768 * 32 * (128 + 128);
    let expected = 6 * weights + 3 * core;
    assert_eq!(training_flops_per_token(&model, false), expected as f64);
    // Full recompute: the layers' forward once more, the head not.
    let layers = weights - 32000 * 4096;
    let recomputed = expected + 2 * layers + core;
    assert_eq!(training_flops_per_token(&model, true), recomputed as f64);
    // DeepSeek-V3 at 4K: MLA's d_qk = 192 and d_v = 128 in the core; the
    // 256·7168 gate is multiplied, its correction bias is not.
    let model = preset("deepseek-v3");
    let h = 7168u64;
    let mla = h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h;
    let weights = 3 * (mla + 3 * h * 18432) + 58 * (mla + 256 * h + 9 * 3 * h * 2048) + 129280 * h;
    let core = 61 * 2 * 4096 * 128 * (192 + 128);
    assert_eq!(
        training_flops_per_token(&model, false),
        (6 * weights + 3 * core) as f64
    );
    // N: 36.6 B, the active count less the input embedding, norms and biases.
    assert_eq!(weights, 36_624_596_992);
}

#[test]
fn moe_layers_follow_first_dense_layers_and_the_frequency() {
    let mut moe = preset("deepseek-v3").moe.unwrap();
    assert_eq!(moe.moe_layers(61), 58);
    assert!(!moe.is_moe_layer(2) && moe.is_moe_layer(3));
    moe.layer_frequency = 2;
    // Layers 4, 6, …, 60 of 0..61.
    assert_eq!(moe.moe_layers(61), 29);
    assert_eq!(
        (0..61).filter(|&i| moe.is_moe_layer(i)).count() as u64,
        moe.moe_layers(61)
    );
    moe.first_dense_layers = 0;
    moe.layer_frequency = 3;
    assert_eq!(moe.moe_layers(10), 4); // 0, 3, 6, 9
    moe.first_dense_layers = 100;
    assert_eq!(moe.moe_layers(10), 0);
}

#[test]
fn shared_expert_size_and_a_q_projection_without_latent_count_their_own_tensors() {
    let base = preset("deepseek-v3");
    let h = base.hidden;
    let mut wider = base.clone();
    wider.moe.as_mut().unwrap().shared_expert_ffn_hidden = Some(4096);
    assert_eq!(
        moe_layer_parameters(&wider) - moe_layer_parameters(&base),
        3 * h * (4096 - 2048)
    );
    let mut direct = base.clone();
    direct.mla = Some(MlaSpec {
        q_lora_rank: None,
        ..base.mla.clone().unwrap()
    });
    // q_a (h·1536), its norm (1536) and q_b (1536·128·192) become one h×(128·192).
    let before = h * 1536 + 1536 + 1536 * 128 * 192;
    let after = h * 128 * 192;
    assert_eq!(
        layer_parameters(&direct) as i128 - layer_parameters(&base) as i128,
        after as i128 - before as i128
    );
    // The capacity factor drops tokens, it adds no parameters.
    let mut capped = base.clone();
    capped.moe.as_mut().unwrap().capacity_factor = Some(CapacityFactor(1.25));
    assert_eq!(parameter_count(&capped), parameter_count(&base));
}
