//! Issue 33 item 2: torchtitan's own llama3 70B TOML simulates, with what
//! was read and ignored on standard error.

use crate::common;
use common::{clustersim, repository_root, stderr, text};

fn fixture(name: &str) -> String {
    repository_root()
        .join("frameworks/fixtures/torchtitan")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn the_70b_toml_simulates_on_the_64_gpus_it_was_written_for() {
    let toml = fixture("llama3_70b.toml");
    let output = clustersim(&[
        "simulate",
        "--torchtitan",
        &toml,
        "--topology",
        "dgx-h100-superpod",
        "--dp",
        "8",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = stderr(&output);
    for needle in [
        "the llama3-70b preset",
        "ZeRO stage 3",
        "b = 8; B = 8 × d",
        "priced under megatron-core-2024",
        "optimizer.lr = 0.00015",
    ] {
        assert!(report.contains(needle), "missing {needle:?} in:\n{report}");
    }
    let summary = text(&output.stdout);
    assert!(
        summary.contains("llama3-70b on dgx-h100-superpod · t=8 p=1 d=8 v=1 · b=8 B=64 · 1f1b · recompute=full · bf16 · sequence parallel"),
        "{summary}"
    );
    assert!(summary.contains("ZeRO-3/FSDP full sharding"), "{summary}");
}

#[test]
fn without_the_gpu_count_or_with_op_level_checkpointing_it_is_refused() {
    let output = clustersim(&["simulate", "--torchtitan", &fixture("llama3_70b.toml")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("pass --dp"), "{}", stderr(&output));
    let output = clustersim(&[
        "simulate",
        "--torchtitan",
        &fixture("llama3_8b.toml"),
        "--dp",
        "64",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("selective_ac_option = \"op\""),
        "{}",
        stderr(&output)
    );
    let both = clustersim(&[
        "simulate",
        "--torchtitan",
        &fixture("llama3_8b.toml"),
        "--megatron-args",
        "--bf16",
    ]);
    assert_eq!(both.status.code(), Some(2));
}
