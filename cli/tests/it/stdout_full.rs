//! Round 3, F3 (issue 34): standard output that cannot be written ends every
//! subcommand (and `--help`, `--version`) with exit 2 and one message naming
//! standard output, never a panic (`println!` used to give exit 101). Each
//! command runs with stdout opened on `/dev/full`, where every write fails
//! with "No space left on device"; the test is skipped where there is none.

use crate::common;
use common::{clustersim_binary, repository_root, stderr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A folder of its own for this test's inputs and output files.
fn folder() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-stdout-full-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    dir
}

/// Runs the binary with `args`, stdout on `/dev/full`.
fn run_on_full(args: &[String]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full opens for writing");
    Command::new(clustersim_binary())
        .args(args)
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .output()
        .expect("clustersim runs")
}

/// The inputs the commands read, written into `dir`: three H100 cases (fit),
/// a PyTorch profiler trace and its scenario (import-trace).
fn write_inputs(dir: &Path) {
    let table = repository_root().join("validation/h100-published.json");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(table).expect("h100-published.json"))
            .expect("JSON");
    let cases = value["cases"].as_array().expect("cases")[..3].to_vec();
    let cases = serde_json::json!({ "cases": cases }).to_string();
    std::fs::write(dir.join("cases.json"), cases).expect("cases.json");
    let mut events = Vec::new();
    for step in 0..2u32 {
        let t0 = f64::from(step) * 2e6;
        events.push(serde_json::json!({"ph": "X", "cat": "user_annotation",
            "name": format!("ProfilerStep#{step}"), "pid": 9, "tid": 1, "ts": t0, "dur": 1.6e6}));
        events.push(serde_json::json!({"ph": "X", "cat": "kernel",
            "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7, "ts": t0, "dur": 1.2e6}));
    }
    let trace = serde_json::json!({"distributedInfo": {"rank": 0}, "traceEvents": events});
    std::fs::write(dir.join("rank0.json"), trace.to_string()).expect("rank0.json");
    let scenario = r#"{"model": "llama3-8b", "seq_len": 4096, "topology": "dgx-h100-superpod",
      "stack": "megatron-core-2024", "tp": 2, "pp": 1, "dp": 4, "microbatch_size": 1,
      "global_batch": 32, "recompute": "none", "precision": "bf16"}"#;
    std::fs::write(dir.join("scenario.json"), scenario).expect("scenario.json");
}

/// Every subcommand's output modes (`{dir}` is the test's folder, `{r3}` the
/// round-3 inputs, `{repo}` the repository).
const COMMANDS: &[&str] = &[
    "--help",
    "--version",
    "help simulate",
    "presets",
    "presets --json",
    "presets --show tiny",
    "simulate --model tiny --topology dgx-a100 --tp 1 --pp 2 --dp 1 --global-batch 4",
    "simulate --model tiny --topology dgx-a100 --tp 1 --pp 2 --dp 1 --global-batch 4 --json",
    "simulate --model tiny --topology dgx-a100 --tp 1 --pp 2 --dp 1 --global-batch 4 --explain",
    "simulate --model gpt2-10b --topology dgx2-v100 --tp 1 --pp 1 --dp 1 --microbatch-size 10 \
     --global-batch 10 --zero-offload --max-model-size",
    "collective",
    "timeline {r3}/R3-t1.json --plot {dir}/t.svg",
    "compare {r3}/R3-t1.json {r3}/R3-t2.json",
    "sweep --model tiny --topology dgx-a100 --gpus 4 --global-batch 8",
    "sweep --model tiny --topology dgx-a100 --gpus 4 --global-batch 8 --json -",
    "sweep merge {r3}/R9/shard0.json {r3}/R9/shard1.json",
    "plot bubble --model tiny --topology dgx-a100 --tp 1 --pp 2 --dp 1 --global-batch 8 \
     --out {dir}/b.svg",
    "execute --dry-run --mode synthetic --model tiny --topology dgx-a100 --tp 1 --pp 2 --dp 1 \
     --global-batch 4 --out {dir}/m.json",
    "cuda-libs",
    "cuda-libs --export",
    "validate {repo}/validation/dev-set.json",
    "validate {repo}/validation/dev-set.json --json",
    "validate {repo}/validation/vtrain-single-node.csv",
    "validate {repo}/validation/kernels/xla-h100-matmul.csv",
    "validate {repo}/validation/kernels/flashattention-a100-attention.csv",
    "fit {dir}/cases.json --out {dir}/fit.json",
    "fit {dir}/cases.json --out {dir}/fit.json --json",
    "import-trace {dir}/rank0.json --scenario {dir}/scenario.json --out {dir}/c.json",
    "calibrate --cpu-only --quick --repeats 1 --out {dir}/cpu.json",
];

#[test]
fn a_full_stdout_ends_every_subcommand_with_exit_2_and_one_message() {
    if !Path::new("/dev/full").exists() {
        println!("skipping: this system has no /dev/full");
        return;
    }
    let dir = folder();
    write_inputs(&dir);
    let round3 = common::input("reliability", "round3");
    let repo = repository_root().display().to_string();
    let dir_text = dir.display().to_string();
    let mut failures = Vec::new();
    for command in COMMANDS {
        let args: Vec<String> = command
            .split_whitespace()
            .map(|word| {
                word.replace("{dir}", &dir_text)
                    .replace("{r3}", &round3)
                    .replace("{repo}", &repo)
            })
            .collect();
        let output = run_on_full(&args);
        let message = stderr(&output);
        let errors: Vec<&str> = message
            .lines()
            .filter(|line| line.contains("error:"))
            .collect();
        let good = output.status.code() == Some(2)
            && errors
                == [
                    "error: cannot write to standard output: No space left on device (os error 28)",
                ]
            && !message.contains("panicked");
        if !good {
            failures.push(format!(
                "{command}: exit {:?}\n{message}",
                output.status.code()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
