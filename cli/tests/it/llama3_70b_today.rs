//! Issue 15's whole case through the binary: Llama 3 70B read from its
//! Hugging Face `config.json`, on the DGX H100 SuperPOD preset, with the
//! distributed optimizer, FP8, context parallelism, sequence parallelism and
//! tensor-parallel communication overlap, under megatron-core-2024 (fused
//! attention); the JSON names every one of them (the config's parameter
//! count, 70,553,706,496 as published, is checked in `models`).

use crate::common;
use common::{clustersim, repository_root, text};

#[test]
fn llama3_70b_from_its_config_on_dgx_h100_with_cp_fp8_and_the_distributed_optimizer() {
    let config = repository_root().join("models/fixtures/hf/Meta-Llama-3-70B/config.json");
    let config = config.to_str().unwrap();
    let output = clustersim(&[
        "simulate",
        "--model",
        config,
        "--topology",
        "dgx-h100-superpod",
        "--stack",
        "megatron-core-2024",
        "--tp",
        "8",
        "--pp",
        "4",
        "--cp",
        "2",
        "--dp",
        "2",
        "--global-batch",
        "32",
        "--precision",
        "fp8",
        "--distributed-optimizer",
        "--sequence-parallel",
        "--tp-comm-overlap",
        "--recompute",
        "full",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let text = json.to_string();
    for needle in [
        "\"context_parallel\":2",
        "\"zero_stage\":1",
        "\"gpus\":128",
        "\"stack\":\"megatron-core-2024\"",
        "Meta-Llama-3-70B on dgx-h100-superpod",
        "t=8 cp=2 p=4 d=2",
        "fp8",
        "distributed optimizer",
        "TP comm overlap",
    ] {
        assert!(text.contains(needle), "{needle} missing from {text}");
    }
    assert_eq!(json["fits_in_memory"], true);
}

/// The same model with ZeRO-3/FSDP instead of the distributed optimizer, in
/// bf16, with context parallelism, on the RoCE cluster: the JSON names them.
#[test]
fn llama3_70b_from_its_config_with_fsdp_bf16_and_cp_on_dgx_h100_roce() {
    let config = repository_root().join("models/fixtures/hf/Meta-Llama-3-70B/config.json");
    let config = config.to_str().unwrap();
    let output = clustersim(&[
        "simulate",
        "--model",
        config,
        "--topology",
        "dgx-h100-roce",
        "--stack",
        "megatron-core-2024",
        "--tp",
        "8",
        "--pp",
        "1",
        "--cp",
        "2",
        "--dp",
        "8",
        "--global-batch",
        "64",
        "--precision",
        "bf16",
        "--zero-stage",
        "3",
        "--sequence-parallel",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let text = json.to_string();
    for needle in [
        "\"context_parallel\":2",
        "\"zero_stage\":3",
        "\"gpus\":128",
        "Meta-Llama-3-70B on dgx-h100-roce",
        "t=8 cp=2 p=1 d=8",
        "bf16",
        "ZeRO-3/FSDP",
    ] {
        assert!(text.contains(needle), "{needle} missing from {text}");
    }
    assert_eq!(json["fits_in_memory"], true);
}
