//! Issue 33 item 2: a Megatron-Bridge override YAML simulates, with what was
//! read and ignored on standard error.

use crate::common;
use common::{clustersim, repository_root, stderr, text};

#[test]
fn the_llama3_8b_override_example_simulates_with_the_model_named() {
    let yaml = repository_root()
        .join("frameworks/fixtures/bridge/quantized_llama3_8b_pretrain_override_example.yaml")
        .display()
        .to_string();
    let output = clustersim(&[
        "simulate",
        "--bridge-config",
        &yaml,
        "--model",
        "llama3-8b",
        "--topology",
        "dgx-h100-superpod",
        "--dp",
        "8",
        "--distributed-optimizer",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = stderr(&output);
    for needle in [
        "--global-batch-size 8",
        "--no-gradient-accumulation-fusion",
        "b = 1, as every Llama H100 recipe sets it",
        "checkpoint.pretrained_checkpoint",
    ] {
        assert!(report.contains(needle), "missing {needle:?} in:\n{report}");
    }
    let summary = text(&output.stdout);
    assert!(summary.contains("llama3-8b on dgx-h100-superpod · t=1 p=1 d=8 v=1 · b=1 B=8 · 1f1b · recompute=none · bf16"), "{summary}");
    assert!(!summary.contains("fused grad accumulation"), "{summary}");
    let without_dp = clustersim(&["simulate", "--bridge-config", &yaml, "--model", "llama3-8b"]);
    assert_eq!(without_dp.status.code(), Some(2));
    assert!(stderr(&without_dp).contains("pass --dp"));
}
