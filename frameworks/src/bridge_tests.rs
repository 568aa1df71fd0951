//! Megatron-Bridge YAMLs: its own tutorial and example override files
//! (`fixtures/bridge/`, verbatim) and a `to_yaml()`-shaped dump.

use super::*;
use scenario::{Precision, Recompute};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/fixtures/bridge/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn the_tutorial_override_reads_its_layout_batch_and_the_recipes_bf16() {
    let t = read(&fixture("llama32_1b_pretrain"), "llama32_1b_pretrain.yaml").unwrap();
    let s = &t.scenario;
    assert_eq!((s.tp, s.pp, s.cp), (Some(1), Some(1), Some(1)));
    assert_eq!((s.microbatch_size, s.global_batch), (Some(1), Some(8)));
    assert_eq!(s.options.precision, Some(Precision::Bf16));
    // No architecture in the file: the model comes from --model.
    assert_eq!(s.model, None);
    assert!(t
        .ignored
        .iter()
        .any(|i| i.argument.starts_with("optimizer.lr = ") && i.reason.contains("hyperparameter")));
    assert!(t
        .ignored
        .iter()
        .any(|i| i.argument.starts_with("checkpoint.save = ")));
}

#[test]
fn a_nested_dump_reads_its_model_and_data_parallel_options() {
    let dump = r#"
_target_: megatron.bridge.training.config.ConfigContainer
model:
  _target_: megatron.bridge.models.gpt.model_config.BridgeGPTModelConfig
  vocab_size: 128256
  seq_length: 8192
  share_embeddings_and_output_weights: false
  position_embedding_type: rope
  transformer:
    _target_: megatron.core.transformer.transformer_config.TransformerConfig
    num_layers: 80
    hidden_size: 8192
    ffn_hidden_size: 28672
    num_attention_heads: 64
    num_query_groups: 8
    normalization: RMSNorm
    gated_linear_unit: true
    add_bias_linear: false
    attention_dropout: 0.0
    hidden_dropout: 0.0
    tensor_model_parallel_size: 4
    pipeline_model_parallel_size: 4
    virtual_pipeline_model_parallel_size: 5
    context_parallel_size: 2
    sequence_parallel: true
    recompute_granularity: null
train:
  global_batch_size: 512
  micro_batch_size: 1
ddp:
  use_distributed_optimizer: true
  overlap_grad_reduce: true
mixed_precision: bf16_mixed
"#;
    let t = read(dump, "dump.yaml").unwrap();
    let s = &t.scenario;
    assert_eq!(
        (s.tp, s.pp, s.cp, s.chunks),
        (Some(4), Some(4), Some(2), Some(5))
    );
    assert_eq!(s.recompute, Some(Recompute::None));
    assert_eq!(s.options.distributed_optimizer, Some(true));
    assert_eq!(s.options.sequence_parallel, Some(true));
    let model: models::ModelSpec = serde_json::from_value(s.model.clone().unwrap()).unwrap();
    let llama = models::preset("llama3-70b").unwrap();
    assert_eq!(
        models::ModelSpec {
            name: llama.name.clone(),
            vocab: llama.vocab,
            vocab_unpadded: None,
            ..model
        },
        llama
    );
}

#[test]
fn what_a_bridge_file_cannot_say_is_refused() {
    assert!(read("model: [1, 2", "x.yaml")
        .unwrap_err()
        .to_string()
        .contains("not YAML"));
    assert!(read("- a\n- b\n", "x.yaml")
        .unwrap_err()
        .to_string()
        .contains("not a mapping"));
    let error = read(
        "mixed_precision: fp32\ntrain:\n  micro_batch_size: 1\n",
        "x.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("mixed_precision = \"fp32\""), "{error}");
    let error = read(
        "model:\n  sequence_parallel: 3\ntrain:\n  micro_batch_size: 1\n",
        "x.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("not true or false"), "{error}");
}
