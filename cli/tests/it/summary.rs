//! The summary and `--json` say what was simulated (issue 33 item 5): the
//! model's parameters as its card counts them, the tokens of a sample and
//! of an iteration, tokens/s per GPU and MFU, consistent with each other.

use crate::common;
use common::{clustersim, stderr, text};

#[test]
fn the_summary_and_json_say_what_was_trained() {
    let args = [
        "simulate",
        "--model",
        "llama3-70b",
        "--topology",
        "dgx-h100-ib",
        "--tp",
        "8",
        "--pp",
        "4",
        "--dp",
        "4",
        "--global-batch",
        "64",
    ];
    let out = clustersim(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary = text(&out.stdout);
    assert!(
        summary.contains(
            "llama3-70b, 70.55 B parameters; 8,192 tokens per sample, 524,288 per iteration"
        ),
        "{summary}"
    );
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let out = clustersim(&json_args);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["parameters"], 70_553_706_496u64);
    assert!(json.get("active_parameters").is_none());
    assert_eq!(json["tokens_per_iteration"], 64 * 8192);
    let tokens = json["samples_per_s"].as_f64().unwrap() * 8192.0 / 128.0;
    assert!((json["tokens_per_s_per_gpu"].as_f64().unwrap() - tokens).abs() < 1e-6);
    let mfu = 100.0 * json["model_tflops_per_gpu"].as_f64().unwrap() / 989.0;
    assert!(
        (json["mfu_percent"].as_f64().unwrap() - mfu).abs() < 0.1,
        "{json}"
    );

    let moe = clustersim(&[
        "simulate",
        "--model",
        "mixtral-8x7b",
        "--topology",
        "dgx-h100-superpod",
        "--tp",
        "1",
        "--pp",
        "1",
        "--dp",
        "8",
        "--ep",
        "8",
        "--global-batch",
        "64",
        "--json",
    ]);
    assert_eq!(moe.status.code(), Some(0), "{}", stderr(&moe));
    let moe: serde_json::Value = serde_json::from_slice(&moe.stdout).unwrap();
    let (total, active) = (
        moe["parameters"].as_u64().unwrap(),
        moe["active_parameters"].as_u64().unwrap(),
    );
    // Mixtral 8x7B: 46.7 B parameters, 12.9 B active (Mistral AI's announcement).
    assert!((total as f64 / 1e9 - 46.7).abs() < 0.05 && (active as f64 / 1e9 - 12.9).abs() < 0.05);
}

#[test]
fn a_typo_gets_the_nearest_names_and_a_missing_file_says_so() {
    for (args, says) in [
        (["--model", "llama3-70"], "did you mean 'llama3-70b'?"),
        (["--topology", "DGX-H100-IB"], "did you mean 'dgx-h100-ib'?"),
        (
            ["--profile", "h100"],
            "did you mean 'h100-pcie' or 'h100-sxm'?",
        ),
        (
            ["--stack", "megatron-core"],
            "did you mean 'megatron-core-2024'?",
        ),
        (
            ["--model", "./no-such-model.json"],
            "model file ./no-such-model.json does not exist",
        ),
    ] {
        let mut all = vec!["simulate"];
        all.extend(args);
        let out = clustersim(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 2, "{}", stderr(&out));
    }
}

#[test]
fn a_16384_gpu_cluster_is_a_preset_and_a_node_count() {
    let out = clustersim(&[
        "simulate",
        "--model",
        "llama3-70b",
        "--topology",
        "dgx-h100-ib:2048",
        "--stack",
        "megatron-core-2024",
        "--precision",
        "bf16",
        "--recompute",
        "none",
        "--sequence-parallel",
        "--tp",
        "8",
        "--pp",
        "8",
        "--dp",
        "256",
        "--chunks",
        "5",
        "--schedule",
        "interleaved",
        "--global-batch",
        "4096",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["gpus"], 16_384);
    assert!(json["scenario"]
        .as_str()
        .unwrap()
        .contains("dgx-h100-ib:2048"));
}
