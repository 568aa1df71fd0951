//! Issue 33 item 2: a real Megatron-LM argument list simulates, with what
//! was read and ignored on standard error; `scripts/megatron-args-of.sh`
//! prints the list a launch script passes.

use crate::common;
use common::{clustersim, repository_root, stderr, text};

fn fixture(name: &str) -> String {
    repository_root()
        .join("frameworks/fixtures/megatron")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn the_llama3_8b_example_simulates_with_what_it_read_and_ignored() {
    let args = fixture("train_llama3_8b_h100_fp8.args");
    let output = clustersim(&[
        "simulate",
        "--megatron-args",
        &args,
        "--topology",
        "dgx-h100-superpod",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = stderr(&output);
    for needle in [
        "15 arguments understood",
        "bf16 main gradients and data-parallel reductions",
        "torchrun: 8 GPUs",
        "dp = 8 / (tp·pp·cp = 1) = 8",
        "fp8 (delayed scaling; the rest in bf16)",
        "off: Megatron turns it off at tp = 1",
        "SwiGLU MLP of 14336, 8 KV heads, RMSNorm",
        "--lr 0.00015",
        "a training hyperparameter",
    ] {
        assert!(report.contains(needle), "missing {needle:?} in:\n{report}");
    }
    let summary = text(&output.stdout);
    for needle in [
        "train_llama3_8b_h100_fp8 on dgx-h100-superpod · t=1 p=1 d=8 v=1 · b=1 B=128 · 1f1b · recompute=none · fp8",
        "distributed optimizer · overlapped param gather",
        "software stack      megatron-core-2024\n",
        "8.03 B parameters; 8,192 tokens per sample",
    ] {
        assert!(summary.contains(needle), "missing {needle:?} in:\n{summary}");
    }
    // Flags win over the arguments; --json stays a document on stdout.
    let output = clustersim(&[
        "simulate",
        "--megatron-args",
        &args,
        "--topology",
        "dgx-h100-superpod",
        "--dp",
        "4",
        "--global-batch",
        "64",
        "--json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["gpus"], 4);
}

#[test]
fn the_mixtral_example_simulates_on_the_nodes_it_was_written_for() {
    // Written for several nodes (SLURM_NNODES): on one, ep = 8 does not fit
    // its dp = 2, which is refused; with --dp 8 (32 GPUs) it runs.
    let args = fixture("train_mixtral_8x7b_distributed.args");
    let one_node = clustersim(&[
        "simulate",
        "--megatron-args",
        &args,
        "--topology",
        "dgx-h100-superpod",
    ]);
    assert_eq!(one_node.status.code(), Some(2));
    assert!(
        stderr(&one_node).contains("ep = 8 must divide"),
        "{}",
        stderr(&one_node)
    );
    let output = clustersim(&[
        "simulate",
        "--megatron-args",
        &args,
        "--topology",
        "dgx-h100-superpod",
        "--dp",
        "8",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("8 experts of 14336, 2 per token, alltoall dispatcher"));
    assert!(
        text(&output.stdout).contains("t=1 ep=8 p=4 d=8"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn what_megatron_cannot_be_simulated_as_is_refused_by_name() {
    let output = clustersim(&["simulate", "--megatron-args", "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 --vocab-size 1000", "--dp", "1"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "neither --bf16 nor --fp16: Megatron then trains in fp32, which is not modeled"
        ),
        "{}",
        stderr(&output)
    );
    let output = clustersim(&["simulate", "--megatron-args", "--bf16 --micro-batch-size 1"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no world size"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_generator_prints_the_committed_list_from_the_launch_script() {
    let script = repository_root().join("scripts/megatron-args-of.sh");
    let run = std::process::Command::new("bash")
        .arg(&script)
        .arg(fixture("train_llama3_8b_h100_fp8.sh"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let without_temporary_folder = |text: &str| -> Vec<String> {
        text.lines()
            .map(|line| {
                if line.starts_with("/tmp/") {
                    "/tmp/…".to_string()
                } else {
                    line.to_string()
                }
            })
            .collect()
    };
    let committed = std::fs::read_to_string(fixture("train_llama3_8b_h100_fp8.args")).unwrap();
    assert_eq!(
        without_temporary_folder(&String::from_utf8(run.stdout).unwrap()),
        without_temporary_folder(&committed)
    );
}
