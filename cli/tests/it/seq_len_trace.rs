//! `simulate --seq-len-trace FILE` (issue 35, item 4's sequence-length
//! variance): each distinct length of the trace is simulated once, exactly
//! as `--seq-len` at that length simulates; the distribution over the
//! trace's iterations, tokens per second over it and the fullest length's
//! memory are reported and valid against the schema; bad traces, and
//! lengths the layout refuses, exit 2 naming the line.

use crate::common;
use common::schema::assert_valid;
use common::{clustersim, text};
use serde_json::Value;
use std::path::PathBuf;

/// Llama 3 8B on one DGX H100, t1 cp2 d4: a length must divide by 2·cp.
const LAYOUT: [&str; 15] = [
    "simulate",
    "--model",
    "llama3-8b",
    "--topology",
    "dgx-h100-superpod:1",
    "--tp",
    "1",
    "--cp",
    "2",
    "--pp",
    "1",
    "--dp",
    "4",
    "--global-batch",
    "32",
];

fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-seqlen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

fn run(extra: &[&str]) -> std::process::Output {
    clustersim(&[&LAYOUT[..], extra].concat())
}

fn json(extra: &[&str]) -> Value {
    let output = run(&[extra, &["--json"][..]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn each_length_is_simulated_as_seq_len_simulates_it() {
    let trace = scratch(
        "lengths.txt",
        "# tokens per sample\n2048\n4096\n\n1024\n4096\n4096\n",
    );
    let path = trace.to_str().unwrap();
    let value = json(&["--seq-len-trace", path]);
    assert_valid("simulate", "--seq-len-trace", &value);
    let traced = &value["seq_len_trace"];
    assert_eq!(traced["iterations"], 5);
    let per = traced["per_length"].as_array().unwrap();
    let summary: Vec<(u64, u64, u64)> = per
        .iter()
        .map(|l| {
            (
                l["seq_len"].as_u64().unwrap(),
                l["iterations"].as_u64().unwrap(),
                l["first_line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(summary, [(1024, 1, 5), (2048, 1, 2), (4096, 3, 3)]);
    let mut time_of = Vec::new();
    for length in per {
        let seq_len = length["seq_len"].as_u64().unwrap();
        let alone = json(&["--seq-len", &seq_len.to_string()]);
        assert_eq!(
            length["iteration_time_s"], alone["iteration_time_s"],
            "{seq_len}"
        );
        assert_eq!(length["peak_memory_bytes"], alone["peak_memory_bytes"]);
        assert_eq!(length["tokens_per_iteration"].as_u64(), Some(32 * seq_len));
        time_of.push(alone["iteration_time_s"].as_f64().unwrap());
    }
    assert!(time_of[0] < time_of[1] && time_of[1] < time_of[2]);
    // Trace order: 2048, 4096, 1024, 4096, 4096.
    let times = [time_of[1], time_of[2], time_of[0], time_of[2], time_of[2]];
    let distribution = &traced["iteration_time_s"];
    let mean = times.iter().sum::<f64>() / 5.0;
    assert!((distribution["mean"].as_f64().unwrap() - mean).abs() < 1e-12 * mean);
    assert_eq!(distribution["p50"].as_f64(), Some(time_of[2]));
    assert_eq!(distribution["min"].as_f64(), Some(time_of[0]));
    let tokens = 32.0 * (2048.0 + 3.0 * 4096.0 + 1024.0);
    let rate = tokens / times.iter().sum::<f64>() / 8.0;
    let reported = traced["tokens_per_s_per_gpu"].as_f64().unwrap();
    assert!((reported / rate - 1.0).abs() < 1e-12, "{reported} {rate}");
    assert_eq!(
        traced["mean_tokens_per_iteration"].as_f64(),
        Some(tokens / 5.0)
    );
    let summary = text(&run(&["--seq-len-trace", path]).stdout);
    assert!(
        summary.contains(&format!(
            "sequence lengths    5 iterations ({}), 1024–4096 tokens per sample in 3 lengths: iteration time mean",
            trace.display()
        )),
        "{summary}"
    );
}

#[test]
fn bad_traces_and_refused_lengths_exit_2_naming_the_line() {
    let cases = [
        (
            "bad.txt",
            "2048\n4k\n",
            "line 2: '4k' is not a positive whole number of tokens",
        ),
        ("empty.txt", "# nothing\n", "holds no iteration"),
        (
            "odd.txt",
            "2048\n\n4098\n",
            "--seq-len-trace: line 3 (4098 tokens): invalid scenario:",
        ),
    ];
    for (name, contents, expected) in cases {
        let trace = scratch(name, contents);
        let output = run(&["--seq-len-trace", trace.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{name}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(expected), "{name}: {stderr}");
        assert!(output.stdout.is_empty(), "{name}");
    }
    let missing = run(&["--seq-len-trace", "/no/such/lengths"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("sequence-length trace '/no/such/lengths'"));
}

/// `run-plan --seq-len-trace`: the run is planned at the trace's mean
/// iteration time and mean tokens per iteration, its distribution reported
/// and valid against the schema; with `--routing-trace` it is refused.
#[test]
fn run_plan_trains_at_the_traces_means() {
    let trace = scratch("plan-lengths.txt", "2048\n4096\n4096\n1024\n");
    let path = trace.to_str().unwrap();
    let plan = |extra: &[&str]| {
        let args = [
            &["run-plan"][..],
            &LAYOUT[1..],
            &["--tokens", "1T", "--trials", "100", "--json"],
            extra,
        ]
        .concat();
        let output = clustersim(&args);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    let traced = plan(&["--seq-len-trace", path]);
    assert_valid("run-plan", "--seq-len-trace", &traced);
    let lengths = &traced["seq_len_trace"];
    let mean_s = lengths["iteration_time_s"]["mean"].as_f64().unwrap();
    assert_eq!(traced["plan"]["iteration_time_s"].as_f64(), Some(mean_s));
    // 32 samples of (2048 + 2·4096 + 1024) / 4 = 2816 tokens.
    assert_eq!(lengths["mean_tokens_per_iteration"].as_f64(), Some(90112.0));
    assert_eq!(traced["plan"]["tokens_per_iteration"].as_u64(), Some(90112));
    assert_eq!(
        traced["iterations"].as_u64(),
        Some(1_000_000_000_000u64.div_ceil(90112))
    );
    let refused = clustersim(
        &[
            &["run-plan"][..],
            &LAYOUT[1..],
            &[
                "--tokens",
                "1T",
                "--seq-len-trace",
                path,
                "--routing-trace",
                path,
            ],
        ]
        .concat(),
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("cannot be used with"));
}
