//! Tests of the Hugging Face config import on the fixtures in
//! `models/fixtures/hf/` (transcribed config.json files).

use super::*;
use crate::formulas::published_parameter_count;
use std::path::Path;

fn fixture(folder: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hf")
        .join(folder)
        .join("config.json")
}

fn import(folder: &str) -> Result<ModelSpec, ModelError> {
    ModelSpec::from_file(&fixture(folder))
}

#[test]
fn real_configs_import_with_their_published_parameter_counts() {
    for (folder, published) in [
        ("Llama-2-7b-hf", 6_738_415_616u64),
        ("Meta-Llama-3-8B", 8_030_261_248),
        ("Meta-Llama-3-70B", 70_553_706_496),
        ("Mistral-7B-v0.1", 7_241_732_096),
        ("Qwen2.5-72B", 72_706_203_648),
        ("gpt2", 124_439_808),
    ] {
        let spec = import(folder).unwrap_or_else(|e| panic!("{folder}: {e}"));
        assert_eq!(spec.name, folder);
        assert_eq!(published_parameter_count(&spec), published, "{folder}");
    }
}

#[test]
fn imported_llamas_are_the_presets_block_for_block() {
    for (folder, preset) in [
        ("Llama-2-7b-hf", "llama2-7b"),
        ("Meta-Llama-3-8B", "llama3-8b"),
        ("Meta-Llama-3-70B", "llama3-70b"),
        ("Mistral-7B-v0.1", "mistral-7b"),
        ("Qwen2.5-72B", "qwen2.5-72b"),
    ] {
        let imported = import(folder).unwrap();
        let preset = crate::presets::preset(preset).unwrap();
        // Names differ, the sliding window may be shorter than the
        // preset's training length (Mistral: 4096 vs 8192), and only the
        // config names its number format.
        let same = ModelSpec {
            name: preset.name.clone(),
            seq_len: preset.seq_len,
            trained_dtype: None,
            ..imported.clone()
        };
        assert_eq!(same, preset, "{folder}");
    }
    // Mistral's 4096-token sliding window is shorter than its 32768 context.
    assert_eq!(import("Mistral-7B-v0.1").unwrap().seq_len, 4096);
    assert_eq!(import("Meta-Llama-3-8B").unwrap().seq_len, 8192);
}

#[test]
fn imports_train_at_their_pretraining_length_in_their_saved_format() {
    // Qwen2.5's config gives its 131,072-token extended context; it
    // pre-trained at 4,096, as the preset does. DeepSeek-V3's YaRN scaling
    // names its original 4,096 of 163,840.
    assert_eq!(import("Qwen2.5-72B").unwrap().seq_len, 4096);
    assert_eq!(import("Qwen3-30B-A3B").unwrap().seq_len, 4096);
    assert_eq!(import("DeepSeek-V3").unwrap().seq_len, 4096);
    assert_eq!(import("Mixtral-8x7B-v0.1").unwrap().seq_len, 32768);
    // Llama 3.1: Llama 3's block with its context extended by rope scaling
    // (meta-llama/Llama-3.1-8B's config.json: rope_type llama3, factor 8,
    // original_max_position_embeddings 8192, max_position_embeddings 131072).
    let text = std::fs::read_to_string(fixture("Meta-Llama-3-8B")).unwrap();
    let mut config: serde_json::Value = serde_json::from_str(&text).unwrap();
    config["max_position_embeddings"] = 131072.into();
    config["rope_scaling"] = serde_json::json!({"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"});
    config["dtype"] = "bfloat16".into();
    config.as_object_mut().unwrap().remove("torch_dtype");
    let llama31 = from_hf_config(&config, "Llama-3.1-8B/config.json").unwrap();
    assert_eq!(llama31.seq_len, 8192);
    assert_eq!(llama31.trained_dtype, Some(crate::TrainedDtype::Bfloat16));
    // torch_dtype as saved: Llama 2 in float16, Llama 3 in bfloat16, GPT-2 none.
    assert_eq!(
        import("Llama-2-7b-hf").unwrap().trained_dtype,
        Some(crate::TrainedDtype::Float16)
    );
    assert_eq!(
        import("Meta-Llama-3-70B").unwrap().trained_dtype,
        Some(crate::TrainedDtype::Bfloat16)
    );
    assert_eq!(import("gpt2").unwrap().trained_dtype, None);
}

#[test]
fn gpt2_keeps_learned_positions_tied_embeddings_and_a_padded_vocabulary() {
    let spec = import("gpt2").unwrap();
    assert_eq!(
        (spec.layers, spec.hidden, spec.heads, spec.seq_len),
        (12, 768, 12, 1024)
    );
    assert_eq!((spec.vocab, spec.vocab_unpadded), (50304, Some(50257)));
    assert!(spec.tied_embeddings && spec.bias && !spec.rope);
    assert_eq!(spec.ffn(), 4 * 768);
    // attn_pdrop and resid_pdrop, 0.1 in GPT-2's config.
    assert_eq!(
        spec.attention_dropout,
        crate::dropout::DropoutRate::new(0.1)
    );
    assert_eq!(spec.hidden_dropout, crate::dropout::DropoutRate::new(0.1));
}

#[test]
fn mixtures_of_experts_import_as_their_presets_with_their_published_counts() {
    for (folder, preset, total, active) in [
        (
            "Mixtral-8x7B-v0.1",
            "mixtral-8x7b",
            46_702_792_704u64,
            12_879_925_248u64,
        ),
        (
            "Mixtral-8x22B-v0.1",
            "mixtral-8x22b",
            140_620_634_112,
            39_152_031_744,
        ),
        (
            "DeepSeek-V3",
            "deepseek-v3",
            671_026_419_200,
            37_552_297_472,
        ),
        (
            "Qwen3-30B-A3B",
            "qwen3-30b-a3b",
            30_532_122_624,
            3_353_032_704,
        ),
        (
            "Qwen3-235B-A22B",
            "qwen3-235b-a22b",
            235_093_634_560,
            22_190_763_520,
        ),
    ] {
        let imported = import(folder).unwrap_or_else(|e| panic!("{folder}: {e}"));
        assert_eq!(imported.name, folder);
        assert_eq!(published_parameter_count(&imported), total, "{folder}");
        assert_eq!(
            crate::formulas::published_active_parameter_count(&imported),
            active,
            "{folder}"
        );
        let preset = crate::presets::preset(preset).unwrap();
        // Both train at the pre-training length; only the config names its
        // number format.
        assert_eq!(imported.seq_len, preset.seq_len, "{folder}");
        let same = ModelSpec {
            name: preset.name.clone(),
            trained_dtype: None,
            ..imported.clone()
        };
        assert_eq!(same, preset, "{folder}");
    }
    assert_eq!(import("Mixtral-8x7B-v0.1").unwrap().seq_len, 32768);
    // Their configs' long contexts (163,840 and 40,960) are not their
    // pre-training lengths.
    assert_eq!(import("DeepSeek-V3").unwrap().seq_len, 4096);
    assert_eq!(import("Qwen3-30B-A3B").unwrap().seq_len, 4096);
}

#[test]
fn other_architectures_are_refused_by_name() {
    let base = std::fs::read_to_string(fixture("Mixtral-8x7B-v0.1")).unwrap();
    let text = base.replace("\"mixtral\"", "\"dbrx\"");
    let error = ModelSpec::from_json_str(&text, "dbrx/config.json")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("model_type 'dbrx (MixtralForCausalLM)'"),
        "{error}"
    );
    assert!(
        error.contains("supported: llama, mistral, qwen2, gpt2, mixtral, qwen3_moe, deepseek_v3"),
        "{error}"
    );
}

#[test]
fn expert_layouts_without_a_key_are_refused_with_the_config_key() {
    let qwen = std::fs::read_to_string(fixture("Qwen3-30B-A3B")).unwrap();
    let deepseek = std::fs::read_to_string(fixture("DeepSeek-V3")).unwrap();
    let refused = |base: &str, from: &str, to: &str| {
        assert!(base.contains(from), "{from}");
        ModelSpec::from_json_str(&base.replace(from, to), "edited/config.json")
            .unwrap_err()
            .to_string()
    };
    assert!(refused(
        &qwen,
        "\"decoder_sparse_step\": 1",
        "\"decoder_sparse_step\": 2"
    )
    .contains("decoder_sparse_step 2"));
    assert!(
        refused(&qwen, "\"mlp_only_layers\": []", "\"mlp_only_layers\": [0]")
            .contains("mlp_only_layers [0]")
    );
    assert!(refused(
        &qwen,
        "\"num_experts_per_tok\": 8",
        "\"num_experts_per_tok\": 200"
    )
    .contains("moe.top_k (200) must not exceed moe.experts (128)"));
    assert!(refused(&qwen, "\"num_experts\": 128,", "").contains("num_experts is missing"));
    assert!(refused(
        &deepseek,
        "\"scoring_func\": \"sigmoid\"",
        "\"scoring_func\": \"softmax\""
    )
    .contains("scoring_func 'softmax' with topk_method 'noaux_tc'"));
    assert!(
        refused(&deepseek, "\"kv_lora_rank\": 512", "\"kv_lora_rank\": 0")
            .contains("mla.kv_lora_rank must be positive")
    );
    assert!(refused(
        &deepseek,
        "\"num_key_value_heads\": 128",
        "\"num_key_value_heads\": 8"
    )
    .contains("kv_heads (8) must equal heads (128) with mla"));
    assert!(refused(
        &deepseek,
        "\"first_k_dense_replace\": 3",
        "\"first_k_dense_replace\": 61"
    )
    .contains("moe: no layer has experts"));
    // A DeepSeek-V2-Lite-style config without a query latent imports.
    let direct = ModelSpec::from_json_str(
        &deepseek.replace("\"q_lora_rank\": 1536", "\"q_lora_rank\": null"),
        "lite/config.json",
    )
    .unwrap();
    assert_eq!(direct.mla.unwrap().q_lora_rank, None);
    // An absurd expert count is refused by the total's limit, not overflowed.
    let huge = refused(
        &deepseek
            .replace("\"n_routed_experts\": 256", "\"n_routed_experts\": 16384")
            .replace("\"num_hidden_layers\": 61", "\"num_hidden_layers\": 16384"),
        "\"moe_intermediate_size\": 2048",
        "\"moe_intermediate_size\": 4194304",
    );
    assert!(
        huge.contains("over the limit of 288230376151711744"),
        "{huge}"
    );
}

#[test]
fn configs_the_block_cannot_describe_are_refused_with_the_key() {
    let base = std::fs::read_to_string(fixture("Meta-Llama-3-8B")).unwrap();
    let with = |from: &str, to: &str| {
        assert!(base.contains(from), "{from}");
        ModelSpec::from_json_str(&base.replace(from, to), "edited/config.json")
            .unwrap_err()
            .to_string()
    };
    assert!(with("\"silu\"", "\"gelu\"").contains("hidden_act 'gelu'"));
    assert!(with("\"hidden_size\": 4096,", "").contains("hidden_size is missing"));
    assert!(with("\"hidden_size\": 4096", "\"hidden_size\": -1").contains("not a whole number"));
    assert!(with(
        "\"tie_word_embeddings\": false",
        "\"tie_word_embeddings\": 3"
    )
    .contains("not true or false"));
    assert!(with("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5").contains("kv_heads"));
    assert!(with(
        "\"hidden_size\": 4096",
        "\"hidden_size\": 4096, \"head_dim\": 256"
    )
    .contains("head_dim 256"));
}

#[test]
fn clustersims_own_model_files_are_not_taken_for_configs() {
    let own = r#"{"name":"m","layers":2,"hidden":64,"heads":8,"seq_len":16,"vocab":128}"#;
    assert_eq!(ModelSpec::from_json_str(own, "m.json").unwrap().name, "m");
    let value: Value = serde_json::from_str(own).unwrap();
    assert!(!is_hf_config(&value));
}

#[test]
fn absurd_sizes_are_refused_not_overflowed() {
    let base = std::fs::read_to_string(fixture("Meta-Llama-3-8B")).unwrap();
    for (from, to) in [
        (
            "\"vocab_size\": 128256",
            "\"vocab_size\": 18446744073709551615",
        ),
        (
            "\"hidden_size\": 4096",
            "\"hidden_size\": 4096, \"head_dim\": 18446744073709551615",
        ),
        (
            "\"num_hidden_layers\": 32",
            "\"num_hidden_layers\": 18446744073709551615",
        ),
    ] {
        let text = base.replace(from, to);
        assert!(
            ModelSpec::from_json_str(&text, "big/config.json").is_err(),
            "{to}"
        );
    }
}
