//! `--precision fp8` as a user meets it: the title, `--json` and `--explain`
//! name it (the FP8 GEMMs, the cast kernels, the per-iteration weight casts),
//! and a GPU without FP8 tensor cores is refused with exit code 2.

use crate::common;
use common::{clustersim, stderr};

const RUN: [&str; 16] = [
    "simulate",
    "--model",
    "gpt-22b",
    "--topology",
    "dgx-h100-superpod",
    "--tp",
    "8",
    "--pp",
    "1",
    "--dp",
    "1",
    "--global-batch",
    "4",
    "--precision",
    "fp8",
    "--explain",
];

#[test]
fn explain_lists_the_fp8_gemms_and_the_cast_kernels() {
    let output = clustersim(&RUN);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("· fp8"), "{text}");
    for needle in [
        "qkv_gemm (fp8)",
        "mlp_fc2.wgrad (fp8)",
        "qkv_gemm.cast_transpose",
        "mlp_fc1.dgrad.cast_transpose",
        "fp8.amax_scale_update",
        "mlp_fc2.weight_cast_transpose",
        "1979 TFLOP/s FP8 peak",
    ] {
        assert!(text.contains(needle), "missing {needle} in {text}");
    }
    // The attention core stays bf16.
    assert!(!text.contains("attention_scores (fp8)"), "{text}");
    let json = clustersim(&[&RUN[..15], &["--json"]].concat());
    assert!(json.status.success(), "{}", stderr(&json));
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(
        value["scenario"].as_str().unwrap().contains(" · fp8"),
        "{value}"
    );
}

#[test]
fn fp8_on_an_a100_is_refused_by_name() {
    let mut args = RUN[..15].to_vec();
    args[4] = "dgx-a100";
    let output = clustersim(&args);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.contains("precision: fp8 needs FP8 tensor cores"),
        "{message}"
    );
    assert_eq!(message.matches("error:").count(), 1, "{message}");
}
