//! `--cp` through the binary: `--explain` shows the ring, `--json` names cp,
//! a bad degree is one clear message with exit 2.

use crate::common;
use common::{clustersim, text};

const TINY_CP2: &[&str] = &[
    "simulate",
    "--model",
    "tiny",
    "--topology",
    "dgx-a100",
    "--tp",
    "2",
    "--cp",
    "2",
    "--pp",
    "1",
    "--dp",
    "1",
    "--global-batch",
    "2",
];

#[test]
fn explain_shows_context_parallelism_and_the_ring_attention_steps() {
    let output = clustersim(&[TINY_CP2, &["--explain"]].concat());
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(stdout.contains("t=2 cp=2 p=1 d=1"), "{stdout}");
    assert!(
        stdout.contains("rank  node/gpu  stage  data  context  tensor"),
        "{stdout}"
    );
    // tiny: s=256, so 128 tokens per rank in chunks of 64; K/V of 128 tokens
    // × 4 heads × 64 × 2 bytes × 2 = 131072 bytes.
    assert!(
        stdout.contains("context parallelism cp=2: each rank holds 128 of 256 tokens (2 load-balanced chunks of 64)"),
        "{stdout}"
    );
    assert!(stdout.contains("K/V chunk 131072 bytes"), "{stdout}");
    assert!(
        stdout.contains("forward   exchange bytes per step: [131072, 0]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("backward  exchange bytes per step: [131072, 131072]"),
        "{stdout}"
    );
    assert!(stdout.contains("ring_attention.step"), "{stdout}");
    assert!(stdout.contains("ring_attention.bwd.step"), "{stdout}");
    assert!(stdout.contains("ring_kv_exchange (exposed)"), "{stdout}");

    let output = clustersim(&[TINY_CP2, &["--json"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["context_parallel"], 2);
    assert_eq!(json["gpus"], 4);
}

#[test]
fn a_context_parallel_degree_that_does_not_fit_is_refused_by_name() {
    let mut args = TINY_CP2.to_vec();
    let position = args.iter().position(|&a| a == "--cp").unwrap() + 1;
    args[position] = "3";
    let output = clustersim(&args);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cp: seq_len (256) must be divisible by 2 × cp = 6"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
