//! Megatron-LM argument lists read as scenarios: the fixtures are the lists
//! the repository's example launch scripts pass (`fixtures/megatron/`,
//! printed by `scripts/megatron-args-of.sh`).

use super::*;
use scenario::MoeDispatcher;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/fixtures/megatron/{name}.args",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

fn meaning(translation: &Translation, argument: &str) -> String {
    translation
        .understood
        .iter()
        .find(|reading| reading.argument.starts_with(argument))
        .map(|reading| reading.meaning.clone())
        .unwrap_or_else(|| panic!("{argument} not understood: {:#?}", translation.understood))
}

#[test]
fn llama3_8b_fp8_example_reads_as_its_model_and_layout() {
    let t = read(&fixture("train_llama3_8b_h100_fp8"), "llama3-8b").unwrap();
    let s = &t.scenario;
    assert_eq!(t.world_size, Some(8));
    assert_eq!(
        (s.tp, s.pp, s.cp, s.dp),
        (Some(1), Some(1), Some(1), Some(8))
    );
    assert_eq!((s.microbatch_size, s.global_batch), (Some(1), Some(128)));
    assert_eq!(s.options.precision, Some(Precision::Fp8));
    assert_eq!(s.recompute, Some(Recompute::None));
    assert_eq!(s.options.distributed_optimizer, Some(true));
    assert_eq!(s.options.overlap_param_gather, Some(true));
    // Megatron turns sequence parallelism off at tp = 1.
    assert_eq!(s.options.sequence_parallel, None);
    assert!(meaning(&t, "--sequence-parallel").starts_with("off"));
    let model: models::ModelSpec = serde_json::from_value(s.model.clone().unwrap()).unwrap();
    let llama = models::preset("llama3-8b").unwrap();
    // Llama 3 8B's block, read from its flags (the script sets both dropouts
    // to 0 and names no rope scaling).
    assert_eq!(model.name, "llama3-8b");
    assert_eq!(
        models::ModelSpec {
            name: llama.name.clone(),
            ..model
        },
        llama
    );
    assert!(t
        .ignored
        .iter()
        .any(|i| i.argument == "--lr 0.00015" && i.reason.contains("hyperparameter")));
    assert!(t
        .ignored
        .iter()
        .any(|i| i.argument.starts_with("--save ") && i.reason.contains("checkpoints")));
    // Read, not ignored: bf16 main gradients under --bf16 with fused accumulation.
    assert!(!t
        .ignored
        .iter()
        .any(|i| i.argument == "--grad-reduce-in-bf16"));
    assert_eq!(t.scenario.options.grad_reduce_in_bf16, Some(true));
}

#[test]
fn mixtral_example_reads_its_experts_and_pipeline() {
    let t = read(&fixture("train_mixtral_8x7b_distributed"), "mixtral").unwrap();
    let s = &t.scenario;
    assert_eq!(
        (s.tp, s.pp, s.ep, s.dp),
        (Some(1), Some(4), Some(8), Some(2))
    );
    assert_eq!(s.schedule, Some(ScheduleKind::OneFOneB));
    let model: models::ModelSpec = serde_json::from_value(s.model.clone().unwrap()).unwrap();
    let moe = model.moe.unwrap();
    assert_eq!(
        (moe.experts, moe.top_k, moe.expert_ffn_hidden),
        (8, 2, 14336)
    );
    // Llama 2's tokenizer, by type: 32,000 tokens, a multiple of 128.
    assert_eq!((model.vocab, model.vocab_unpadded), (32000, None));
    assert_eq!(s.options.moe_dispatcher, Some(MoeDispatcher::Nccl));
}

#[test]
fn what_cannot_be_modeled_is_refused_by_name_all_at_once() {
    let text = "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 \
                --micro-batch-size 1 --recompute-granularity full --recompute-method block \
                --recompute-num-layers 1 --position-embedding-type relative";
    let error = read(text, "args").unwrap_err();
    let message = error.to_string();
    for needle in [
        "neither --bf16 nor --fp16",
        "--recompute-method block --recompute-num-layers 1",
        "--position-embedding-type relative",
        "the vocabulary: --vocab-size",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    assert!(read("--bf16 'unclosed", "args")
        .unwrap_err()
        .to_string()
        .contains("unbalanced quotes"));
    assert!(read("8 --bf16", "args")
        .unwrap_err()
        .to_string()
        .contains("'8' comes before any --flag"));
}

#[test]
fn interleaving_and_vocabulary_padding_follow_megatron() {
    let text = "--bf16 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 \
                --num-layers 32 --num-layers-per-virtual-pipeline-stage 2 --hidden-size 4096 \
                --num-attention-heads 32 --seq-length 2048 --vocab-size 50257 --sequence-parallel \
                --micro-batch-size 2";
    let t = read(text, "args").unwrap();
    assert_eq!(t.scenario.chunks, Some(4));
    assert_eq!(t.scenario.schedule, Some(ScheduleKind::Interleaved));
    assert_eq!(t.scenario.options.sequence_parallel, Some(true));
    let model = t.scenario.model.unwrap();
    // 50,257 padded to a multiple of 128·8 = 1024.
    assert_eq!(
        (model["vocab"].as_u64(), model["vocab_unpadded"].as_u64()),
        (Some(51200), Some(50257))
    );
    // GeLU's default 4h, tied embeddings, learned positions, dropout 0.1.
    assert_eq!(model["ffn_hidden"], 16384);
    assert_eq!(model["tied_embeddings"], true);
    assert_eq!(model["attention_dropout"], 0.1);
    assert_eq!(t.world_size, None);
}

#[test]
fn the_optimizer_and_bf16_gradient_reduction_are_read_where_they_apply() {
    let model = "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 \
                 --vocab-size 50257 --micro-batch-size 1";
    let t = read(
        &format!("{model} --bf16 --optimizer sgd --grad-reduce-in-bf16"),
        "args",
    )
    .unwrap();
    assert_eq!(t.scenario.options.optimizer, Some(scenario::Optimizer::Sgd));
    assert_eq!(t.scenario.options.grad_reduce_in_bf16, Some(true));
    // Adam is the default; under fp16 the flag does nothing.
    let t = read(
        &format!("{model} --fp16 --optimizer adam --grad-reduce-in-bf16"),
        "args",
    )
    .unwrap();
    assert_eq!(t.scenario.options.optimizer, None);
    assert_eq!(t.scenario.options.grad_reduce_in_bf16, None);
    assert!(meaning(&t, "--grad-reduce-in-bf16").contains("under --bf16 only"));
    let unfused = format!("{model} --bf16 --no-gradient-accumulation-fusion --grad-reduce-in-bf16");
    let t = read(&unfused, "args").unwrap();
    assert_eq!(t.scenario.options.grad_reduce_in_bf16, Some(true));
    let error = read(&format!("{model} --bf16 --optimizer muon"), "args").unwrap_err();
    assert!(
        error.to_string().contains("--optimizer muon: not modeled"),
        "{error}"
    );
}

#[test]
fn cpu_offloading_is_read_with_its_layer_count() {
    let model = "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 \
                 --vocab-size 50257 --micro-batch-size 1 --bf16";
    let t = read(
        &format!("{model} --cpu-offloading --cpu-offloading-num-layers 3"),
        "args",
    )
    .unwrap();
    assert_eq!(t.scenario.options.cpu_offloading_num_layers, Some(3));
    assert!(meaning(&t, "--cpu-offloading").contains("3 layers offloaded"));
    // The count alone does nothing in Megatron-Core.
    let t = read(&format!("{model} --cpu-offloading-num-layers 3"), "args").unwrap();
    assert_eq!(t.scenario.options.cpu_offloading_num_layers, None);
    assert!(meaning(&t, "--cpu-offloading-num-layers 3").contains("no effect"));
}
