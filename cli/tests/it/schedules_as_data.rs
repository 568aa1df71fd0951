//! Looped BFS, interleaved microbatch groups and Megatron-Core's pipeline
//! layout from the command line: they simulate, `--explain` shows them,
//! `--help` documents them, sweeps and `plot bubble` know looped BFS (and
//! sweeps, on request, interleaved with microbatch groups), and
//! what cannot be built exits 2 with one message naming the field.

use crate::common;
use common::{clustersim, stderr, text};

/// gpt-22b (48 layers) on one DGX A100: t = 1, p = 4, d = 1.
fn gpt22b(extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "simulate",
        "--model",
        "gpt-22b",
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "4",
        "--dp",
        "1",
        "--recompute",
        "full",
    ];
    args.extend_from_slice(extra);
    clustersim(&args)
}

#[test]
fn looped_bfs_and_microbatch_groups_simulate_and_explain_themselves() {
    let looped = gpt22b(&[
        "--schedule",
        "looped-bfs",
        "--chunks",
        "2",
        "--global-batch",
        "8",
        "--explain",
    ]);
    assert!(looped.status.success(), "{}", stderr(&looped));
    let out = text(&looped.stdout);
    assert!(
        out.contains("looped BFS: each rank runs all 8 forwards of each of its 2 chunks"),
        "{out}"
    );
    assert!(
        out.contains("peak microbatch-chunks of activations per rank: 16"),
        "{out}"
    );
    assert!(out.contains("s0F7 s0F0c1"), "{out}");
    // m = 10 on p = 4: groups of 5 (the default, groups of p, refuses it).
    let grouped = gpt22b(&[
        "--schedule",
        "interleaved",
        "--chunks",
        "2",
        "--global-batch",
        "10",
        "--microbatch-group-size",
        "5",
        "--explain",
    ]);
    assert!(grouped.status.success(), "{}", stderr(&grouped));
    let out = text(&grouped.stdout);
    assert!(out.contains("microbatch groups of 5"), "{out}");
    assert!(out.contains("2 groups, the last of 5"), "{out}");
}

#[test]
fn a_pipeline_layout_shows_its_layers_per_rank_and_chunk() {
    let output = gpt22b(&[
        "--global-batch",
        "8",
        "--pipeline-layout",
        "Et*11|(t*12|)*2,t*13L",
        "--explain",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let out = text(&output.stdout);
    assert!(
        out.contains("pipeline layout 'Et*11|(t*12|)*2,t*13L'"),
        "{out}"
    );
    assert!(out.contains("rank   0: E+11"), "{out}");
    assert!(out.contains("rank   1: 12"), "{out}");
    assert!(out.contains("rank   3: 13+L"), "{out}");
}

#[test]
fn what_cannot_be_built_exits_2_naming_the_field() {
    for (extra, needle) in [
        (
            &["--schedule", "interleaved", "--chunks", "2", "--global-batch", "10"][..],
            "global_batch: the interleaved schedule needs microbatches m = B/(b·d) = 10 to be a multiple of pp = 4",
        ),
        (
            &[
                "--schedule",
                "interleaved",
                "--chunks",
                "2",
                "--global-batch",
                "10",
                "--microbatch-group-size",
                "4",
            ][..],
            "microbatch_group_size: m = 10 leaves a last group of 2 microbatches",
        ),
        (
            &["--global-batch", "8", "--microbatch-group-size", "4"][..],
            "microbatch_group_size: microbatch groups are the interleaved schedule's (1f1b has none)",
        ),
        (
            &["--global-batch", "8", "--pipeline-layout", "Et*11|(t*12|)*2,t*13"][..],
            "pipeline_layout: the loss 'L' must appear exactly once",
        ),
        (
            &["--global-batch", "8", "--pipeline-layout", "Et*11|(t*12|*2,t*13L"][..],
            "pipeline_layout: position 6 of 'Et*11|(t*12|*2,t*13L': '(' is never closed",
        ),
        (
            &["--global-batch", "8", "--pipeline-layout", "Et*11|(t*12|)*2,t*13L", "--max-model-size"][..],
            "a pipeline_layout fixes the layers of every stage",
        ),
    ] {
        let output = gpt22b(extra);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {message}");
        assert!(message.contains(needle), "{extra:?}: {message}");
        assert!(!message.contains("panicked"), "{message}");
    }
}

#[test]
fn help_sweep_and_plot_know_the_new_schedules() {
    let help = text(&clustersim(&["simulate", "--help"]).stdout);
    for needle in [
        "--microbatch-group-size",
        "--pipeline-layout",
        "looped-bfs",
        "Et*7|(t*8|)*14,t*7L",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
    let dir = std::env::temp_dir().join(format!("clustersim-flex-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sweep_json = dir.join("sweep.json");
    let sweep = clustersim(&[
        "sweep",
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--gpus",
        "4",
        "--global-batch",
        "8",
        "--schedule",
        "looped-bfs",
        "--max-chunks",
        "2",
        "--json",
        sweep_json.to_str().unwrap(),
    ]);
    assert!(sweep.status.success(), "{}", stderr(&sweep));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sweep_json).unwrap()).unwrap();
    let results = json["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{json}");
    assert!(
        results
            .iter()
            .all(|r| r["layout"]["schedule"] == "looped-bfs" && r["layout"]["chunks"] == 2),
        "{json}"
    );
    let out = dir.join("bubble.svg");
    let plot = clustersim(&[
        "plot",
        "bubble",
        "--model",
        "gpt-22b",
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
        out.to_str().unwrap(),
    ]);
    assert!(plot.status.success(), "{}", stderr(&plot));
    let printed = text(&plot.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(printed.contains("looped BFS v=2"), "{printed}");
}

#[test]
fn sweep_tries_interleaved_with_the_smallest_valid_group_size_only_when_asked() {
    // gpt-22b, t = 2, p = 4, d = 1, B = 10: m = 10 (b = 1) and 5 (b = 2),
    // neither a multiple of p = 4. The smallest valid N: 5 for both
    // (10 mod 5 = 0, 5 mod 5 = 0; N ∈ [p, m], m mod N = 0 or ≥ p).
    let dir = std::env::temp_dir().join(format!("clustersim-groups-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("sweep.json");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "sweep",
            "--model",
            "gpt-22b",
            "--topology",
            "dgx-a100",
            "--gpus",
            "8",
            "--global-batch",
            "10",
            "--tp",
            "2",
            "--pp",
            "4",
            "--schedule",
            "interleaved",
            "--recompute",
            "full",
            "--max-chunks",
            "2",
            "--max-microbatch",
            "2",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let output = clustersim(&args);
        let value: Option<serde_json::Value> = output
            .status
            .success()
            .then(|| serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap());
        (output, value)
    };
    // Without the flag every interleaved layout is refused (p does not divide m).
    let (plain, _) = run(&[]);
    assert_eq!(plain.status.code(), Some(2), "{}", stderr(&plain));
    assert!(stderr(&plain).contains("no layout of 8 GPUs is valid"));
    let (grouped, value) = run(&["--microbatch-groups"]);
    assert!(grouped.status.success(), "{}", stderr(&grouped));
    let value = value.unwrap();
    assert_eq!(value["sweep"]["microbatch_groups"], true);
    let results = value["results"].as_array().unwrap();
    let seen: Vec<(u64, u64)> = results
        .iter()
        .map(|r| {
            (
                r["layout"]["microbatch_size"].as_u64().unwrap(),
                r["layout"]["microbatch_group_size"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(sorted, [(1, 5), (2, 5)]);
    assert!(text(&grouped.stdout).contains("interleaved v=2 N=5"));
    std::fs::remove_dir_all(&dir).unwrap();
}
