//! torchtitan's own llama3 TOMLs (`fixtures/torchtitan/`, verbatim).

use super::*;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/fixtures/torchtitan/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn the_70b_config_reads_as_fsdp_with_tensor_parallelism_and_full_recompute() {
    let t = read(&fixture("llama3_70b"), "llama3_70b.toml").unwrap();
    let s = &t.scenario;
    assert_eq!(s.model, Some("llama3-70b".into()));
    assert_eq!((s.tp, s.pp, s.cp, s.dp), (Some(8), Some(1), Some(1), None));
    assert_eq!(s.seq_len, Some(8192));
    assert_eq!(s.microbatch_size, Some(8));
    assert_eq!(s.recompute, Some(Recompute::Full));
    assert_eq!(s.options.zero_stage, Some(3));
    assert_eq!(s.options.sequence_parallel, Some(true));
    assert_eq!(s.options.precision, Some(Precision::Bf16));
    assert!(t
        .ignored
        .iter()
        .any(|i| i.argument.starts_with("optimizer.lr = ")));
    assert!(
        t.ignored
            .iter()
            .any(|i| i.argument.starts_with("checkpoint.interval")
                && i.reason.contains("checkpoints"))
    );
}

#[test]
fn the_8b_configs_op_level_checkpointing_is_refused_by_name() {
    let error = read(&fixture("llama3_8b"), "llama3_8b.toml")
        .unwrap_err()
        .to_string();
    assert!(error.contains("selective_ac_option = \"op\""), "{error}");
    // The same file with full checkpointing and 8 shards reads.
    let text = fixture("llama3_8b")
        .replace("mode = \"selective\"", "mode = \"full\"")
        .replace(
            "data_parallel_shard_degree = -1",
            "data_parallel_shard_degree = 8",
        );
    let t = read(&text, "llama3_8b.toml").unwrap();
    assert_eq!((t.scenario.dp, t.scenario.global_batch), (Some(8), Some(8)));
}

#[test]
fn what_torchtitan_trains_but_clustersim_does_not_model_is_refused() {
    for (text, needle) in [
        ("[training]\ndtype = \"bfloat16\"\n[model]\nflavor = \"8B\"\n[activation_checkpoint]\nmode = \"full\"", "pure bf16"),
        ("[parallelism]\ntensor_parallel_degree = 2\ndata_parallel_shard_degree = 1\n[model]\nflavor = \"8B\"\n[activation_checkpoint]\nmode = \"none\"", "trains in fp32"),
        ("[model]\nflavor = \"3B\"\n[activation_checkpoint]\nmode = \"none\"", "flavor = \"3B\""),
        ("[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = \"Custom\"\n[model]\nflavor = \"8B\"", "pipeline_parallel_schedule = \"Custom\""),
        ("not = [toml", "not TOML"),
    ] {
        let error = read(text, "t.toml").unwrap_err().to_string();
        assert!(error.contains(needle), "{needle}: {error}");
    }
}
