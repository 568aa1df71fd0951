//! `clustersim sweep` as a user meets it: the table and the sentence, shard
//! files merged by `sweep merge` equal the unsharded `--json` file byte for
//! byte, and bad flags exit 2 with one clear line.

use crate::common;
use common::{clustersim, text};
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-sweep-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const TINY: [&str; 9] = [
    "sweep",
    "--model",
    "tiny",
    "--topology",
    "dgx-a100",
    "--gpus",
    "8",
    "--global-batch",
    "16",
];

#[test]
fn sweep_prints_a_ranked_table_and_why_the_best_wins() {
    let dir = scratch("table");
    let csv = dir.join("sweep.csv");
    let plot = dir.join("sweep.svg");
    let mut args = TINY.to_vec();
    let (csv_arg, plot_arg) = (csv.to_str().unwrap(), plot.to_str().unwrap());
    args.extend(["--top", "3", "--csv", csv_arg, "--plot", plot_arg]);
    let output = clustersim(&args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("146 valid"), "{stdout}");
    assert!(stdout.contains("samples/s"), "{stdout}");
    assert!(stdout.contains("Best: "), "{stdout}");
    assert!(stdout.contains("… 143 more"), "{stdout}");
    // Not a terminal: no progress bar on stderr.
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 147);
    assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn merged_shard_files_equal_the_unsharded_json_file() {
    let dir = scratch("merge");
    let whole = dir.join("whole.json");
    let mut args = TINY.to_vec();
    args.extend(["--json", whole.to_str().unwrap()]);
    assert!(clustersim(&args).status.success());
    let mut merge_args = vec!["sweep".to_string(), "merge".to_string()];
    for index in 0..4 {
        let path = dir.join(format!("shard-{index}.json"));
        let shard = format!("{index}/4");
        let mut args = TINY.to_vec();
        args.extend(["--shard", &shard, "--json", path.to_str().unwrap()]);
        let output = clustersim(&args);
        assert!(output.status.success(), "{}", text(&output.stderr));
        assert!(text(&output.stdout).contains(&format!("shard {index}/4")));
        merge_args.push(path.to_str().unwrap().to_string());
    }
    let merged = dir.join("merged.json");
    merge_args.extend(["--json".to_string(), merged.to_str().unwrap().to_string()]);
    let merge_refs: Vec<&str> = merge_args.iter().map(String::as_str).collect();
    let output = clustersim(&merge_refs);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(std::fs::read(&whole).unwrap() == std::fs::read(&merged).unwrap());
    // A missing shard is a clear user error.
    let output = clustersim(&merge_refs[..4]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("exactly once"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_sweep_flags_exit_2_with_one_clear_line() {
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "sweep",
                "--model",
                "gpt3-175b",
                "--gpus",
                "7",
                "--global-batch",
                "1536",
            ],
            "no layout of 7 GPUs",
        ),
        (
            &["sweep", "--gpus", "8192", "--global-batch", "1536"],
            "has only 4480 GPUs",
        ),
        (
            &[
                "sweep",
                "--gpus",
                "8",
                "--global-batch",
                "16",
                "--shard",
                "8/8",
            ],
            "--shard 8/8",
        ),
        (
            &[
                "sweep",
                "--model",
                "gpt3-175b",
                "--topology",
                "dgx-a100",
                "--gpus",
                "8",
                "--global-batch",
                "8",
            ],
            "fits in GPU memory",
        ),
    ];
    for (args, needle) in cases {
        let output = clustersim(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// tiny on 4 GPUs of an H100 SuperPOD over cp, ZeRO stages and precisions
/// (the hand count is in `studies/src/sweep/dimensions_tests.rs`: 36 tuples,
/// all valid).
const DIMENSIONS: [&str; 19] = [
    "sweep",
    "--model",
    "tiny",
    "--topology",
    "dgx-h100-superpod",
    "--gpus",
    "4",
    "--global-batch",
    "8",
    "--max-microbatch",
    "1",
    "--schedule",
    "1f1b",
    "--recompute",
    "none",
    "--zero-stage",
    "3,1",
    "--precision",
    "bf16,fp8",
];

#[test]
fn help_documents_the_sweep_dimensions_with_an_example() {
    let output = clustersim(&["sweep", "--help"]);
    assert!(output.status.success());
    let help = text(&output.stdout);
    for needle in [
        "--cp <DEGREES>",
        "--max-cp <N>",
        "--zero-stage <STAGES>",
        "ZeRO stages tried, comma-separated",
        "--precision <FORMATS>",
        "Precisions tried, comma-separated",
        "--cp 1,2,4 --zero-stage 1,3 --precision bf16,fp8",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}

#[test]
fn a_sweep_over_cp_zero_stages_and_precisions_names_them_and_its_shards_merge() {
    let dir = scratch("dimensions");
    let whole = dir.join("whole.json");
    let mut args = DIMENSIONS.to_vec();
    args.extend([
        "--cp",
        "1,2",
        "--top",
        "40",
        "--json",
        whole.to_str().unwrap(),
    ]);
    let output = clustersim(&args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    for needle in [
        "· cp ∈ {1,2} · ZeRO stage ∈ {1,3} · precision ∈ {bf16,fp8}",
        "36 layouts examined: 0 rejected by validation (problems by field: none), 36 valid",
        "36 simulated",
        " cp ",
        " zero prec ",
    ] {
        assert!(stdout.contains(needle), "{needle}: {stdout}");
    }
    // --max-cp 2, and the lists given as repeated flags, are the same sweep.
    let same = dir.join("same.json");
    let mut args = DIMENSIONS[..15].to_vec();
    args.extend([
        "--max-cp",
        "2",
        "--zero-stage",
        "1",
        "--zero-stage",
        "3",
        "--precision",
        "fp8,bf16",
        "--json",
        same.to_str().unwrap(),
    ]);
    assert!(clustersim(&args).status.success());
    assert!(std::fs::read(&whole).unwrap() == std::fs::read(&same).unwrap());
    let mut merge_args = vec!["sweep".to_string(), "merge".to_string()];
    for index in 0..3 {
        let path = dir.join(format!("shard-{index}.json"));
        let shard = format!("{index}/3");
        let mut args = DIMENSIONS.to_vec();
        args.extend([
            "--cp",
            "1,2",
            "--shard",
            &shard,
            "--json",
            path.to_str().unwrap(),
        ]);
        let output = clustersim(&args);
        assert!(output.status.success(), "{}", text(&output.stderr));
        merge_args.push(path.to_str().unwrap().to_string());
    }
    let merged = dir.join("merged.json");
    merge_args.extend(["--json".to_string(), merged.to_str().unwrap().to_string()]);
    let merge_refs: Vec<&str> = merge_args.iter().map(String::as_str).collect();
    let output = clustersim(&merge_refs);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(std::fs::read(&whole).unwrap() == std::fs::read(&merged).unwrap());
    // One value is the option every layout shares: no list in the header.
    let single = dir.join("single.json");
    let mut args = DIMENSIONS[..15].to_vec();
    args.extend([
        "--zero-stage",
        "1",
        "--precision",
        "bf16",
        "--json",
        single.to_str().unwrap(),
    ]);
    assert!(clustersim(&args).status.success());
    let single = std::fs::read_to_string(&single).unwrap();
    assert!(single.contains("\"zero_stage\": 1") && single.contains("\"precision\": \"bf16\""));
    assert!(!single.contains("zero_stages") && !single.contains("context_parallel"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_dimension_flags_exit_2_naming_the_flag() {
    let cases: [(&[&str], &str); 4] = [
        (&["--cp", "0"], "--cp"),
        (&["--cp", "2", "--max-cp", "4"], "--max-cp"),
        (&["--precision", "bf16,fp9"], "fp9"),
        (&["--cp", "3"], "--cp"),
    ];
    for (extra, needle) in cases {
        let mut args = DIMENSIONS[..15].to_vec();
        args.extend(extra);
        let output = clustersim(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// `--seq-len` and `--memory-headroom` (issue 33 item 4): the header records
/// both; a longer sequence drops more layouts, and so does leaving memory
/// free; out-of-range values exit 2.
#[test]
fn sequence_length_and_memory_headroom_shape_the_sweep() {
    let dir = std::env::temp_dir().join(format!("clustersim-sweep-seq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |extra: &[&str]| -> serde_json::Value {
        let path = dir.join("s.json");
        let mut args = vec![
            "sweep",
            "--gpus",
            "64",
            "--global-batch",
            "256",
            "--model",
            "mixtral-8x7b",
            "--topology",
            "dgx-h100-superpod",
            "--ep",
            "4,8",
            "--sequence-parallel",
            "--json",
            path.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = crate::common::clustersim(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            crate::common::stderr(&out)
        );
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    };
    let dropped =
        |doc: &serde_json::Value| doc["counts"]["dropped_out_of_memory"].as_u64().unwrap();
    let short = run(&["--seq-len", "4096"]);
    assert_eq!(short["sweep"]["seq_len"], 4096);
    assert!(short["sweep"].get("memory_headroom_bytes").is_none());
    let model_length = run(&[]);
    assert!(model_length["sweep"].get("seq_len").is_none());
    assert!(
        dropped(&model_length) > dropped(&short),
        "32k tokens need more memory than 4k"
    );
    let headroom = run(&["--seq-len", "4096", "--memory-headroom", "8%"]);
    // 8% of the H100's 80 GiB, rounded to the byte.
    let expected = ((80u64 << 30) as f64 * 0.08).round() as u64;
    assert_eq!(headroom["sweep"]["memory_headroom_bytes"], expected);
    assert!(dropped(&headroom) > dropped(&short));
    for bad in ["120%", "-1", "lots"] {
        let out = crate::common::clustersim(&[
            "sweep",
            "--gpus",
            "8",
            "--global-batch",
            "8",
            "--memory-headroom",
            bad,
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `sweep SCENARIO.json` (issue 33 item 4): the scenario's model, topology,
/// stack, batch, sequence length and options are the base, its t·cp·p·d the
/// GPU count; flags override; its layout is searched, and stderr says so.
#[test]
fn a_scenario_file_is_the_sweeps_base_and_flags_override_it() {
    let scenario = common::repository_root().join("examples/llama3-70b-superpod-cp2.json");
    let scenario = scenario.to_str().unwrap();
    let json = scratch("base").join("sweep.json");
    let out = clustersim(&[
        "sweep",
        scenario,
        "--tp",
        "8",
        "--global-batch",
        "32",
        "--top",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("tp, cp, pp, dp, microbatch_size, schedule, recompute not used"),
        "{stderr}"
    );
    assert!(text(&out.stdout).contains("llama3-70b on dgx-h100-superpod · 128 GPUs · B = 32"));
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let header = &document["sweep"];
    assert_eq!(header["model"], "llama3-70b");
    assert_eq!(header["gpus"], 128);
    assert_eq!(header["global_batch"], 32);
    assert_eq!(header["seq_len"], 8192);
    assert_eq!(header["stack"], "megatron-core-2024");
    assert_eq!(header["distributed_optimizer"], true);
    assert_eq!(header["precision"], "bf16");
    let missing_gpus = clustersim(&["sweep", "--model", "gpt-22b", "--global-batch", "4"]);
    assert_eq!(missing_gpus.status.code(), Some(2));
    assert!(text(&missing_gpus.stderr).contains("--gpus N is needed"));
    let layout_file = scratch("base").join("layout.json");
    std::fs::write(
        &layout_file,
        r#"{"model": "tiny", "pipeline_layout": "Et|tL"}"#,
    )
    .unwrap();
    let refused = clustersim(&[
        "sweep",
        layout_file.to_str().unwrap(),
        "--gpus",
        "2",
        "--global-batch",
        "4",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("cannot take the scenario's pipeline_layout"));
}

/// `sweep --tokens N` (issue 35 item 6): layouts ranked by their expected
/// time to train, failures, checkpoints and restarts included, not by
/// iteration time; the document names the target and each layout's time.
#[test]
fn a_sweep_with_a_token_target_ranks_by_expected_time_to_train() {
    let json = scratch("to-train").join("sweep.json");
    let out = clustersim(&[
        "sweep",
        "--model",
        "llama3-8b",
        "--topology",
        "dgx-h100-ib:4",
        "--gpus",
        "32",
        "--global-batch",
        "64",
        "--schedule",
        "1f1b",
        "--recompute",
        "full",
        "--tokens",
        "1T",
        "--top",
        "3",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("ranked by days: the expected time to train 1000000000000 tokens"),
        "{stdout}"
    );
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    crate::common::schema::assert_valid("sweep", "--tokens", &document);
    assert_eq!(document["sweep"]["train_tokens"], 1_000_000_000_000u64);
    let days: Vec<f64> = document["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["expected_time_to_train_s"].as_f64().unwrap())
        .collect();
    assert!(days.len() > 1);
    assert!(days.windows(2).all(|w| w[0] <= w[1]), "{days:?}");
    // Each takes longer than its failure-free iterations: 1e12 / (64 × 8192) of them.
    let first = &document["results"][0];
    let iterations = (1e12f64 / (64.0 * 8192.0)).ceil();
    assert!(days[0] > iterations * first["iteration_time_s"].as_f64().unwrap());
}
