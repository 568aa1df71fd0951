//! The binary as a user meets it: the default run works, `--json` has the
//! promised keys, and every class of bad input gives one clear message and
//! exit code 2, never a panic.

use crate::common;
use common::{clustersim, stderr};

#[test]
fn default_simulation_prints_a_summary() {
    let output = clustersim(&["simulate", "--global-batch", "128"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("gpt3-175b on selene"), "{text}");
    assert!(text.contains("TFLOP/s per GPU"), "{text}");
}

#[test]
fn json_output_has_the_documented_keys() {
    let output = clustersim(&[
        "simulate",
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--tp",
        "2",
        "--pp",
        "2",
        "--dp",
        "2",
        "--global-batch",
        "8",
        "--json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for key in [
        "iteration_time_s",
        "tflops_per_gpu",
        "model_tflops_per_gpu",
        "percent_of_peak",
        "bubble_fraction",
        "peak_memory_bytes",
        "fits_in_memory",
        "gpus",
        "tasks",
        "events",
        "schema_version",
    ] {
        assert!(value.get(key).is_some(), "missing {key} in {value}");
    }
    assert_eq!(value["gpus"], 8);
}

#[test]
fn sharded_data_parallelism_appears_in_explain_and_json() {
    let base = [
        "simulate",
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "2",
        "--dp",
        "4",
        "--global-batch",
        "8",
        "--zero-stage",
        "3",
        "--shard-group-size",
        "2",
    ];
    let output = clustersim(&[&base[..], &["--explain"]].concat());
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("ZeRO-3/FSDP full sharding · HSDP shard groups of 2"),
        "{text}"
    );
    assert!(
        text.contains("sharded data parallelism: ZeRO-3 (optimizer states, gradients and parameters sharded: FSDP) over shard groups of 2 of the 4 data-parallel ranks, replicated across 2 groups (HSDP)"),
        "{text}"
    );
    let output = clustersim(&[&base[..], &["--json"]].concat());
    assert!(output.status.success(), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["zero_stage"], 3);
    assert_eq!(value["shard_group_size"], 2);
    assert_user_error(
        &[
            &base[..13],
            &["--zero-stage", "3", "--shard-group-size", "3"],
        ]
        .concat(),
        "shard_group_size: must divide the data-parallel size 4 (got 3)",
    );
}

fn assert_user_error(args: &[&str], needle: &str) {
    let output = clustersim(args);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
    assert!(
        message.contains(needle),
        "{args:?}: expected '{needle}' in: {message}"
    );
    assert!(
        !message.contains("panicked") && !message.contains("RUST_BACKTRACE"),
        "{message}"
    );
}

#[test]
fn bad_input_of_every_kind_exits_2_with_a_clear_message() {
    let dir = std::env::temp_dir().join(format!("clustersim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let malformed = dir.join("malformed.json");
    std::fs::write(&malformed, "{\"tp\": 8,").unwrap();
    let unknown = dir.join("unknown.json");
    std::fs::write(
        &unknown,
        r#"{"model": "gpt3-175b", "topology": "selene", "global_batch": 8, "tensor_parallel": 8}"#,
    )
    .unwrap();
    let bad_model = dir.join("model.json");
    std::fs::write(
        &bad_model,
        r#"{"name": "x", "layers": 0, "hidden": 100, "heads": 3, "seq_len": 8, "vocab": 8}"#,
    )
    .unwrap();

    assert_user_error(&["simulate", malformed.to_str().unwrap()], "malformed.json");
    assert_user_error(&["simulate", unknown.to_str().unwrap()], "tensor_parallel");
    assert_user_error(
        &["simulate", "/no/such/scenario.json"],
        "/no/such/scenario.json",
    );
    assert_user_error(&["simulate", "--model", "gpt-7"], "unknown model 'gpt-7'");
    assert_user_error(
        &["simulate", "--model", bad_model.to_str().unwrap()],
        "layers must be positive",
    );
    assert_user_error(
        &["simulate", "--topology", "cray"],
        "unknown topology 'cray'",
    );
    assert_user_error(
        &["simulate", "--profile", "nope.json"],
        "profile file nope.json does not exist",
    );
    assert_user_error(
        &["simulate", "--tp", "5", "--pp", "7"],
        "heads (96) must be divisible by tp (5)",
    );
    assert_user_error(
        &["simulate", "--dp", "100"],
        "GPUs, but topology 'selene' has 4480",
    );
    assert_user_error(
        &["simulate", "--schedule", "interleaved", "--chunks", "1"],
        "chunks ≥ 2",
    );
    assert_user_error(&["simulate", "--schedule", "zigzag"], "zigzag");
    assert_user_error(&["simulate", "--tp", "0"], "tp: must be at least 1");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn mixtures_of_experts_are_refused_where_not_built_with_their_parameter_counts() {
    // Mixtral is simulated; the embedded default's t = 8 needs sequence
    // parallelism (etp then defaults to t), which today's defaults turn on
    // and which, turned off, is refused.
    assert_user_error(
        &[
            "simulate",
            "--model",
            "mixtral-8x7b",
            "--topology",
            "dgx-a100",
            "--sequence-parallel=false",
        ],
        "sequence_parallel: tensor parallelism (8) in a mixture-of-experts model needs sequence parallelism",
    );
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/fixtures/hf/DeepSeek-V3/config.json"
    );
    assert_user_error(
        &[
            "simulate",
            "--model",
            config,
            "--topology",
            "dgx-h100-superpod",
        ],
        "tp: tensor parallelism (8) with multi-head latent attention is not simulated yet",
    );
    assert_user_error(
        &[
            "sweep",
            "--model",
            "deepseek-v3",
            "--topology",
            "dgx-a100",
            "--gpus",
            "8",
            "--global-batch",
            "8",
        ],
        // DeepSeek-V3 simulates at t = 1 now; 671 B parameters do not fit on
        // one 8-GPU node in any layout the sweep may try.
        "valid layouts fits in GPU memory",
    );
}

#[test]
fn absurd_sizes_are_refused_before_anything_is_built() {
    assert_user_error(
        &["simulate", "--global-batch", "4000000000", "--dp", "1"],
        "the limit is 4294967295 (task ids are 32-bit)",
    );
    assert_user_error(
        &[
            "simulate",
            "--microbatch-size",
            "4294967295",
            "--dp",
            "4294967295",
        ],
        "GPUs, but topology 'selene'",
    );
    assert_user_error(
        &[
            "simulate",
            "--pp",
            "4294967295",
            "--chunks",
            "4294967295",
            "--schedule",
            "interleaved",
        ],
        "layers (96) must be divisible",
    );
}

#[test]
fn a_flag_overrides_a_training_option_of_the_scenario_file_either_way() {
    let dir = std::env::temp_dir().join(format!("clustersim-options-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("scenario.json");
    std::fs::write(
        &file,
        r#"{"model": "tiny", "topology": "dgx-a100", "tp": 2, "pp": 2, "global_batch": 8, "sequence_parallel": true}"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let title = |extra: &[&str]| {
        let mut args = vec!["simulate", path];
        args.extend(extra);
        let output = clustersim(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    assert!(
        title(&[]).ends_with("· sequence parallel"),
        "{}",
        title(&[])
    );
    assert!(!title(&["--sequence-parallel=false"]).contains("sequence parallel"));
    assert!(title(&["--contention"]).ends_with("· sequence parallel · contention"));
    let bad = clustersim(&["simulate", path, "--sequence-parallel=maybe"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

#[test]
fn the_software_stack_is_named_in_the_output_and_sets_option_defaults() {
    let args = [
        "simulate",
        "--model",
        "gpt-22b",
        "--tp",
        "8",
        "--pp",
        "1",
        "--dp",
        "1",
        "--microbatch-size",
        "4",
        "--global-batch",
        "4",
        "--recompute",
        "full",
        "--json",
    ];
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut all = args.to_vec();
        all.extend(extra);
        let output = clustersim(&all);
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let default = run(&[]);
    assert_eq!(default["stack"], "megatron-2021");
    assert_eq!(default["stack_is_default"], true);
    let stack_2022 = run(&["--stack", "megatron-2022"]);
    assert_eq!(stack_2022["stack_is_default"], false);
    assert!(stack_2022["scenario"]
        .as_str()
        .unwrap()
        .contains("async TP all-reduce"));
    // The 2022 code overlaps the backward all-reduces: less exposed TP time.
    let exposed =
        |v: &serde_json::Value| v["exposed_communication_s"]["tensor_s"].as_f64().unwrap();
    assert!(exposed(&stack_2022) < exposed(&default));
    // A flag still wins over the stack.
    let flag_wins = run(&["--stack", "megatron-2022", "--async-tensor-allreduce=false"]);
    assert_eq!(exposed(&flag_wins), exposed(&default));
    let bad = clustersim(&["simulate", "--stack", "megatron-1999"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("stack: unknown stack 'megatron-1999'"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn validate_reads_vtrain_csv_and_exits_2_on_a_bad_one() {
    let dir = std::env::temp_dir().join(format!("clustersim-vtrain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let header = "\u{feff}# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\r\n";
    let good = dir.join("good.csv");
    std::fs::write(
        &good,
        format!("{header}2,16,8,1024,16,24,1024,1,1,2,372.160408\r\n8,32,4,1024,16,24,1024,2,2,2,219.732754\r\n"),
    )
    .unwrap();
    let output = clustersim(&["validate", good.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("2 predicted, 0 refused"), "{text}");
    assert!(text.contains("  1024   2     1"), "{text}");
    let output = clustersim(&["validate", good.to_str().unwrap(), "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["rows"].as_array().unwrap().len(), 2);
    assert_eq!(value["groups"].as_array().unwrap().len(), 2);
    assert_eq!(value["rows"][1]["line"], 3);
    // A bad row, detected by the header even without the .csv extension.
    let bad = dir.join("bad.txt");
    std::fs::write(
        &bad,
        format!(
            "{header}2,16,8,1024,16,24,1024,1,1,2,372.1\r\n8,32,4,1024,16,24,x,2,2,2,219.7\r\n"
        ),
    )
    .unwrap();
    assert_user_error(
        &["validate", bad.to_str().unwrap()],
        "line 3, column 7 (sequence length)",
    );
    let bad_header = dir.join("header.csv");
    std::fs::write(&bad_header, "GPUs,batch\n2,16\n").unwrap();
    assert_user_error(&["validate", bad_header.to_str().unwrap()], "line 1:");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn calibrate_prints_each_remark_on_its_own_line() {
    let dir = std::env::temp_dir().join(format!("clustersim-remarks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("cpu.json");
    let output = clustersim(&[
        "calibrate",
        "--cpu-only",
        "--quick",
        "--repeats",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let message = stderr(&output);
    assert!(output.status.success(), "{message}");
    let printed: Vec<String> = message
        .lines()
        .filter_map(|line| line.strip_prefix("remark: "))
        .map(str::to_string)
        .collect();
    let text = std::fs::read_to_string(&out).unwrap();
    let profile = profile::Profile::from_json_str(&text, "cpu.json").unwrap();
    assert_eq!(printed, profile.provenance.remarks);
    assert_eq!(
        printed,
        vec![
            "CPU-only run: no GPU quantity was measured",
            "FP8 GEMMs not timed: CPU-only run; gemm.fp8_relative_efficiency keeps the base profile's value"
        ]
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_h100_preset_runs_with_the_h100_sxm_profile() {
    let output = clustersim(&["presets"]);
    let listed = String::from_utf8(output.stdout).unwrap();
    assert!(
        listed.contains("h100-sxm") && listed.contains("h100,"),
        "{listed}"
    );
    let args = [
        "simulate",
        "--model",
        "tiny",
        "--topology",
        "h100",
        "--tp",
        "1",
        "--pp",
        "1",
        "--dp",
        "1",
        "--global-batch",
        "2",
        "--json",
    ];
    let output = clustersim(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let h100: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut h200_args = args;
    h200_args[4] = "h200";
    let output = clustersim(&h200_args);
    let h200: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // Same peak, less HBM bandwidth: never faster than the H200.
    let time = |v: &serde_json::Value| v["iteration_time_s"].as_f64().unwrap();
    assert!(time(&h100) >= time(&h200), "{h100} vs {h200}");
}

#[test]
fn presets_lists_the_clusters_and_profiles_of_today_and_they_simulate() {
    let output = clustersim(&["presets"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let listed = String::from_utf8(output.stdout).unwrap();
    let line = |prefix: &str| -> Vec<String> {
        listed
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line in {listed}"))
            .split(", ")
            .map(|s| s.trim().to_string())
            .collect()
    };
    let topologies = line("topologies:");
    for name in [
        "dgx-h100-superpod",
        "dgx-h200-superpod",
        "hgx-h800",
        "dgx-b200",
        "gb200-nvl72",
        "dgx-h100-ib",
        "dgx-h100-roce",
        "h100-pcie-cluster",
    ] {
        assert!(topologies.iter().any(|t| t == name), "{name}: {listed}");
    }
    let profiles = line("profiles:");
    for name in ["h100-sxm", "h200", "h800-sxm", "b200", "gb200"] {
        assert!(profiles.iter().any(|p| p == name), "{name}: {listed}");
    }
    let output = clustersim(&[
        "simulate",
        "--model",
        "llama3-8b",
        "--topology",
        "dgx-b200",
        "--tp",
        "8",
        "--pp",
        "1",
        "--dp",
        "2",
        "--global-batch",
        "4",
        "--json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        report["iteration_time_s"].as_f64().unwrap() > 0.0,
        "{report}"
    );
}

#[test]
fn collective_costs_with_the_nccl_asked_for_and_says_which() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "collective",
            "--topology",
            "dgx-h100-superpod",
            "--gpus",
            "8",
            "--min-bytes",
            "8M",
            "--max-bytes",
            "8M",
        ];
        args.extend(extra);
        let output = clustersim(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    let default = run(&[]);
    assert_eq!(default, run(&["--nccl", "2.12"]));
    assert!(
        default.contains("NCCL 2.12 tuner (v2.12.12-1)"),
        "{default}"
    );
    // 2.12 offers Hopper no LL128; 2.21 runs an 8 MiB all-reduce with it.
    assert!(!default.contains("LL128"), "{default}");
    let newer = run(&["--nccl", "2.21"]);
    assert!(newer.contains("NCCL 2.21 tuner (v2.21.5-1)"), "{newer}");
    assert!(newer.contains(" ring  LL128 "), "{newer}");
    assert_user_error(&["collective", "--nccl", "2.18"], "--nccl");

    // A stack names its NCCL with a source; a bad one is a named error.
    let explain = clustersim(&[
        "simulate",
        "--model",
        "gpt-22b",
        "--tp",
        "8",
        "--pp",
        "1",
        "--dp",
        "1",
        "--microbatch-size",
        "4",
        "--global-batch",
        "4",
        "--stack",
        "megatron-core-2024",
        "--explain",
    ]);
    assert!(explain.status.success(), "{}", stderr(&explain));
    let text = String::from_utf8(explain.stdout).unwrap();
    assert!(
        text.contains("default nccl: NVIDIA/nccl v2.21.5-1"),
        "{text}"
    );
    let path = std::env::temp_dir().join(format!("clustersim-nccl-{}.json", std::process::id()));
    std::fs::write(
        &path,
        r#"{"format_version": 1, "name": "x", "summary": "s", "options": {}, "nccl": {"value": "2.99", "source": "s"}}"#,
    )
    .unwrap();
    assert_user_error(
        &["simulate", "--stack", path.to_str().unwrap()],
        "nccl: one of 2.12, 2.21",
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn collective_json_is_the_table_as_one_document() {
    let args = [
        "collective",
        "--gpus",
        "16",
        "--min-bytes",
        "1M",
        "--max-bytes",
        "8M",
    ];
    let table = clustersim(&args);
    assert!(table.status.success(), "{}", stderr(&table));
    let output = clustersim(&[&args[..], &["--json"]].concat());
    assert!(output.status.success(), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (
            value["op"].as_str(),
            value["gpus"].as_u64(),
            value["nodes"].as_u64()
        ),
        (Some("all_reduce"), Some(16), Some(2))
    );
    let rows = value["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    // Each row's time is the table's, in ns instead of µs with 2 decimals.
    let text = String::from_utf8(table.stdout).unwrap();
    for row in rows {
        let micros = format!("{:.2}", row["time_ns"].as_u64().unwrap() as f64 / 1e3);
        let size = row["size_bytes"].as_u64().unwrap().to_string();
        assert!(
            text.lines()
                .any(|line| line.split_whitespace().next() == Some(size.as_str())
                    && line.contains(&micros)),
            "{size} B at {micros} us not in:\n{text}"
        );
    }
}

#[test]
fn compare_json_is_one_document_and_max_error_still_sets_the_exit_status() {
    let folder =
        std::env::temp_dir().join(format!("clustersim-compare-json-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let timeline = |name: &str, batch: &str| {
        let path = folder.join(name).display().to_string();
        let output = clustersim(&[
            "simulate",
            "--model",
            "tiny",
            "--topology",
            "dgx-a100",
            "--tp",
            "1",
            "--pp",
            "2",
            "--dp",
            "1",
            "--global-batch",
            batch,
            "--timeline",
            &path,
        ]);
        assert!(output.status.success(), "{}", stderr(&output));
        path
    };
    let (a, b) = (timeline("a.json", "4"), timeline("b.json", "8"));
    let same = clustersim(&["compare", &a, &a, "--json", "--max-error", "0"]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    let value: serde_json::Value = serde_json::from_slice(&same.stdout).unwrap();
    assert_eq!(value["iteration_error_percent"], 0.0);
    assert!(value["worst_tasks"].is_array() && value["reference"].is_string());
    let different = clustersim(&["compare", &a, &b, "--json", "--max-error", "0"]);
    assert_eq!(different.status.code(), Some(1), "{}", stderr(&different));
    let value: serde_json::Value = serde_json::from_slice(&different.stdout).unwrap();
    assert!(value["iteration_error_percent"].as_f64().unwrap() > 0.0);
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn plot_bubble_json_and_csv_hold_the_charts_table() {
    let folder = std::env::temp_dir().join(format!("clustersim-plot-json-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let (chart, csv) = (folder.join("b.svg"), folder.join("b.csv"));
    let output = clustersim(&[
        "plot",
        "bubble",
        "--model",
        "gpt2-1b",
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "4",
        "--dp",
        "1",
        "--microbatches",
        "4,8",
        "--out",
        chart.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["pipeline_parallel"], 4);
    let series = value["series"].as_array().unwrap();
    let one_f_one_b = series.iter().find(|s| s["schedule"] == "1F1B").unwrap();
    let points = one_f_one_b["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    // 1F1B's formula (p − 1)/m.
    assert_eq!(points[0]["formula"], 0.75);
    let table = std::fs::read_to_string(&csv).unwrap();
    assert!(
        table.starts_with("schedule,microbatches,simulated,formula\n"),
        "{table}"
    );
    let rows = table.lines().count() - 1;
    let in_json: usize = series
        .iter()
        .map(|s| s["points"].as_array().unwrap().len())
        .sum();
    assert_eq!(rows, in_json);
    assert!(chart.exists());
    let _ = std::fs::remove_dir_all(&folder);
}
