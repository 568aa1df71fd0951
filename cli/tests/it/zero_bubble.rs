//! The zero-bubble schedules from the command line: `--schedule zb-h1` and
//! `zb-h2` simulate, explain their split backward, beat 1F1B on the same
//! layout, sweep on request, and refuse what they cannot build with exit 2.

use crate::common;
use common::{clustersim, stderr};

/// GPT-3 175B on 64 GPUs (t=8, p=8), 64 microbatches, without recompute.
fn gpt3(schedule: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "simulate",
        "--model",
        "gpt3-175b",
        "--tp",
        "8",
        "--pp",
        "8",
        "--dp",
        "1",
        "--global-batch",
        "64",
        "--recompute",
        "none",
        "--schedule",
        schedule,
    ];
    args.extend_from_slice(extra);
    clustersim(&args)
}

fn json(schedule: &str) -> serde_json::Value {
    let output = gpt3(schedule, &["--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn zero_bubble_schedules_beat_one_f_one_b_with_the_same_compute() {
    let (one_f, h1, h2) = (json("1f1b"), json("zb-h1"), json("zb-h2"));
    let time = |v: &serde_json::Value| v["iteration_time_s"].as_f64().unwrap();
    let bubble = |v: &serde_json::Value| v["bubble_fraction"].as_f64().unwrap();
    assert!(
        time(&h1) < time(&one_f),
        "{} vs {}",
        time(&h1),
        time(&one_f)
    );
    assert!(time(&h2) < time(&h1), "{} vs {}", time(&h2), time(&h1));
    assert!(bubble(&h1) < bubble(&one_f) && bubble(&h2) < bubble(&h1));
    // ZB-H2 holds 2p − 1 = 15 microbatches of activations on stage 0, ZB-H1 1F1B's p = 8.
    assert!(h2["peak_memory_bytes"].as_u64().unwrap() > h1["peak_memory_bytes"].as_u64().unwrap());
    assert_eq!(h1["peak_memory_bytes"], one_f["peak_memory_bytes"]);
}

#[test]
fn explain_shows_the_split_program_and_both_halves_of_the_backward() {
    let output = gpt3("zb-h1", &["--explain"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    for needle in [
        "s0F7 s0I0 s0W0 s0F8 s0I1 s0W1",
        "split backward (zb-h1)",
        "Peak weight gradients owed per stage: 1 2 3 4 5 6 7 8",
        "bwd_input  qkv_gemm.dgrad",
        "bwd_weight qkv_gemm.wgrad",
    ] {
        assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
    }
    assert!(!text.contains("backward   qkv_gemm"), "no whole backward");
}

#[test]
fn sweep_ranks_zb_h1_above_one_f_one_b_when_asked_for_both() {
    let json_path = std::env::temp_dir().join(format!(
        "clustersim-zero-bubble-sweep-{}.json",
        std::process::id()
    ));
    let output = clustersim(&[
        "sweep",
        "--model",
        "gpt-22b",
        "--topology",
        "dgx-a100",
        "--gpus",
        "8",
        "--global-batch",
        "16",
        "--tp",
        "4",
        "--pp",
        "2",
        "--schedule",
        "1f1b,zb-h1",
        "--recompute",
        "full",
        // At b = 8 ZB-H1's deferred weight-gradient state (each linear
        // layer's input and output gradient per owed W) passes 80 GiB.
        "--max-microbatch",
        "4",
        "--json",
        json_path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = std::fs::read_to_string(&json_path).unwrap();
    std::fs::remove_file(&json_path).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let results = value["results"].as_array().expect("results");
    assert_eq!(results.len(), 6, "3 microbatch sizes × 2 schedules");
    // Every layout runs faster under ZB-H1 than under 1F1B.
    for zb in results
        .iter()
        .filter(|r| r["layout"]["schedule"] == "zb-h1")
    {
        let same = |r: &&serde_json::Value| {
            r["layout"]["schedule"] == "1f1b"
                && r["layout"]["microbatch_size"] == zb["layout"]["microbatch_size"]
        };
        let one_f = results.iter().find(same).expect("the 1F1B twin");
        assert!(
            zb["samples_per_s"].as_f64() > one_f["samples_per_s"].as_f64(),
            "{zb} vs {one_f}"
        );
    }
    assert_eq!(results[0]["layout"]["schedule"], "zb-h1");
}

#[test]
fn split_schedules_refuse_what_they_cannot_build() {
    for (args, needle) in [
        (
            &[
                "simulate",
                "--model",
                "tiny",
                "--pp",
                "1",
                "--dp",
                "1",
                "--schedule",
                "zb-h1",
                "--zero-offload",
            ][..],
            "schedule: zb-h1 splits the backward",
        ),
        (
            &[
                "simulate",
                "--model",
                "tiny",
                "--pp",
                "2",
                "--dp",
                "1",
                "--schedule",
                "zb-h2",
                "--chunks",
                "2",
            ][..],
            "chunks: 2 model chunks need --schedule interleaved",
        ),
    ] {
        let output = clustersim(args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(needle), "{args:?}: {message}");
        assert!(!message.contains("panicked"), "{message}");
    }
}

/// A 13B-class GPT with untied embeddings (post-validation's requirement).
fn untied_model() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("clustersim-untied-{}.json", std::process::id()));
    std::fs::write(
        &path,
        r#"{"name": "gpt-untied", "layers": 8, "hidden": 2048, "heads": 16, "seq_len": 1024, "vocab": 51200, "tied_embeddings": false}"#,
    )
    .unwrap();
    path
}

#[test]
fn post_validation_shows_first_and_steady_state_iterations_and_explains_itself() {
    let model = untied_model();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "--model",
            model.to_str().unwrap(),
            "--topology",
            "dgx-a100",
            "--tp",
            "1",
            "--pp",
            "4",
            "--dp",
            "1",
            "--global-batch",
            "16",
            "--recompute",
            "none",
            "--schedule",
            "zb-h2",
            "--optimizer-post-validation",
        ];
        args.extend_from_slice(extra);
        let output = clustersim(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&run(&["--json"])).unwrap();
    let validation = &json["optimizer_post_validation"];
    assert_eq!(validation["iterations"], 3);
    assert_eq!(json["iterations"], 3);
    let first = validation["first_iteration_s"].as_f64().unwrap();
    let steady = validation["steady_state_iteration_s"].as_f64().unwrap();
    assert_eq!(steady, json["iteration_time_s"].as_f64().unwrap());
    assert!(steady <= first, "{steady} vs {first}");
    assert_eq!(validation["exchange_bytes_per_hop"], 8);
    assert_eq!(validation["norm_exchange_hops_per_pipeline"], 3);
    assert_eq!(validation["rollback_state_bytes"], 0);
    let text = run(&["--explain"]);
    for needle in [
        "optimizer post-validation (3 iterations)",
        "post-validation     steady-state iteration",
        "norm_exchange: 3 hops per pipeline per iteration, 8 B each",
        "s0F6 after 6 forwards; s1F4 after 4 forwards; s2F2 after 2 forwards; s3F0 after 0 forwards",
        "Memory kept for a rollback: 0 B",
        "never taken in a normal step",
    ] {
        assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
    }
    // Without the flag, ZB-H2's output names no post-validation.
    let output = clustersim(&[
        "simulate",
        "--model",
        model.to_str().unwrap(),
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "4",
        "--dp",
        "1",
        "--global-batch",
        "16",
        "--schedule",
        "zb-h2",
        "--json",
    ]);
    let off: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(off.get("optimizer_post_validation").is_none());
    assert_eq!(off["iterations"], 1);
    // Refused where the source does not run it: one message, exit 2.
    let output = clustersim(&[
        "simulate",
        "--model",
        model.to_str().unwrap(),
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "4",
        "--dp",
        "1",
        "--global-batch",
        "16",
        "--schedule",
        "1f1b",
        "--optimizer-post-validation",
    ]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("optimizer_post_validation: only with the zero-bubble schedules"));
    assert!(!message.contains("panicked"), "{message}");
    std::fs::remove_file(&model).unwrap();
}

#[test]
fn plot_bubble_draws_zb_h2_with_post_validation_or_says_why_not() {
    let svg = std::env::temp_dir().join(format!("clustersim-zb-bubble-{}.svg", std::process::id()));
    let run = |model: &str| {
        clustersim(&[
            "plot",
            "bubble",
            "--model",
            model,
            "--tp",
            "8",
            "--pp",
            "4",
            "--dp",
            "1",
            "--global-batch",
            "8",
            "--recompute",
            "full",
            "--microbatches",
            "8,16",
            "--out",
            svg.to_str().unwrap(),
        ])
    };
    // Llama 2 70B unties its embeddings: ZB-H2 runs with post-validation.
    let output = run("llama2-70b");
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout.clone()).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("ZB-H2 (post-validation, steady state) m=8: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("(formula 0.0000)"), "{line}");
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.contains("ZB-H2 (post-validation, steady state)"));
    assert!(picture.contains("0 analytical: ZB-H2 with post-validation"));
    // GPT-3 175B ties them: the series is skipped with the reason, the rest drawn.
    let output = run("gpt3-175b");
    assert!(output.status.success(), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("skipped ZB-H2 (post-validation, steady state) m=8: ")
            && message.contains("needs untied embeddings"),
        "{message}"
    );
    std::fs::remove_file(&svg).ok();
}
