//! Every subcommand's `--json` against its schema in `schemas/` (issue 33
//! item 5): the outputs of simulate (dense, MoE, context parallel, ZeRO, FP8,
//! contention, a fit, ZeRO-Offload, post-validation), sweep (whole, a shard,
//! every optional dimension, merged), collective, compare, plot bubble,
//! presets, fit, the largest-model search and validate (each kind of file)
//! must each validate; the schemas forbid keys they do not document, and
//! every property they declare has a description.

use crate::common::schema::{assert_valid, schema, violations};
use crate::common::{clustersim, repository_root};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Runs `clustersim ARGS` and parses its standard output.
fn json_of(args: &[&str]) -> Value {
    let output = clustersim(args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "clustersim {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("clustersim {}: not JSON: {e}", args.join(" ")))
}

/// Runs `clustersim ARGS`, which must succeed (its output goes to files).
fn succeed(args: &[&str]) {
    let output = clustersim(args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "clustersim {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-schemas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn repository_file(relative: &str) -> String {
    repository_root().join(relative).display().to_string()
}

/// A FIT.json learned from the dev set, for the `--fit` variants.
fn dev_set_fit() -> String {
    let path = scratch("fit.json");
    if !path.exists() {
        let out = path.display().to_string();
        json_of(&[
            "fit",
            &repository_file("validation/dev-set.json"),
            "--out",
            &out,
            "--json",
        ]);
    }
    path.display().to_string()
}

#[test]
fn simulate_outputs_follow_their_schema() {
    let untied = scratch("untied.json");
    std::fs::write(
        &untied,
        r#"{"name": "gpt-untied", "layers": 8, "hidden": 2048, "heads": 16, "seq_len": 1024, "vocab": 51200, "tied_embeddings": false}"#,
    )
    .unwrap();
    let untied = untied.display().to_string();
    let fit = dev_set_fit();
    let h100 = ["--topology", "dgx-h100-ib"];
    let variants: Vec<Vec<&str>> = vec![
        vec![],
        [
            &["--model", "mixtral-8x7b"],
            &h100[..],
            &[
                "--tp",
                "2",
                "--pp",
                "1",
                "--dp",
                "4",
                "--ep",
                "4",
                "--global-batch",
                "32",
            ],
        ]
        .concat(),
        [
            &["--model", "llama3-70b"],
            &h100[..],
            &[
                "--tp",
                "8",
                "--pp",
                "2",
                "--dp",
                "2",
                "--cp",
                "2",
                "--global-batch",
                "16",
            ],
        ]
        .concat(),
        vec![
            "--model",
            "gpt-22b",
            "--tp",
            "8",
            "--pp",
            "1",
            "--dp",
            "2",
            "--zero-stage",
            "3",
            "--global-batch",
            "8",
        ],
        vec![
            "--model",
            "gpt-22b",
            "--topology",
            "selene",
            "--tp",
            "1",
            "--pp",
            "1",
            "--dp",
            "16",
            "--zero-stage",
            "3",
            "--zero-quantized-weights",
            "--zero-hpz-partition-size",
            "8",
            "--zero-quantized-gradients",
            "--global-batch",
            "16",
        ],
        vec![
            "--model",
            "gpt-22b",
            "--tp",
            "8",
            "--dp",
            "2",
            "--distributed-optimizer=false",
            "--powersgd-rank",
            "4",
            "--global-batch",
            "8",
        ],
        vec![
            "--model",
            "gpt-22b",
            "--tp",
            "8",
            "--dp",
            "2",
            "--optimizer",
            "onebitadam",
            "--global-batch",
            "8",
        ],
        [
            &["--model", "llama3-8b"],
            &h100[..],
            &[
                "--tp",
                "1",
                "--pp",
                "1",
                "--dp",
                "8",
                "--global-batch",
                "32",
                "--precision",
                "fp8",
            ],
        ]
        .concat(),
        // A non-default optimizer and bf16 gradient reduction.
        [
            &["--model", "llama3-8b"],
            &h100[..],
            &[
                "--tp",
                "1",
                "--pp",
                "1",
                "--dp",
                "8",
                "--global-batch",
                "32",
                "--optimizer",
                "adam8bit",
                "--grad-reduce-in-bf16",
            ],
        ]
        .concat(),
        vec![
            "--model",
            "gpt-22b",
            "--tp",
            "8",
            "--pp",
            "2",
            "--dp",
            "2",
            "--global-batch",
            "16",
            "--contention",
        ],
        vec![
            "--model",
            "gpt-22b",
            "--tp",
            "8",
            "--pp",
            "1",
            "--dp",
            "1",
            "--global-batch",
            "4",
            "--fit",
            &fit,
        ],
        vec![
            "--model",
            &untied,
            "--topology",
            "dgx-a100",
            "--tp",
            "1",
            "--pp",
            "1",
            "--dp",
            "1",
            "--global-batch",
            "4",
            "--zero-offload",
        ],
        vec![
            "--model",
            &untied,
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
        ],
    ];
    for variant in variants {
        let args = [&["simulate"], &variant[..], &["--json"]].concat();
        assert_valid("simulate", &args.join(" "), &json_of(&args));
    }
    let largest = json_of(&["simulate", "--max-model-size", "--json"]);
    assert_valid("max-model", "simulate --max-model-size", &largest);
}

#[test]
fn sweep_documents_follow_their_schema() {
    let fit = dev_set_fit();
    let whole = scratch("sweep.json").display().to_string();
    let shards = [scratch("shard0.json"), scratch("shard1.json")].map(|p| p.display().to_string());
    let merged = scratch("merged.json").display().to_string();
    let options = scratch("options.json").display().to_string();
    let pruned = scratch("pruned.json").display().to_string();
    let base = [
        "sweep",
        "--model",
        "gpt-22b",
        "--gpus",
        "8",
        "--global-batch",
        "4",
    ];
    succeed(&[&base[..], &["--top", "1", "--json", &whole]].concat());
    for (i, shard) in shards.iter().enumerate() {
        let index = format!("{i}/2");
        succeed(&[&base[..], &["--shard", &index, "--json", shard]].concat());
    }
    succeed(&["sweep", "merge", &shards[0], &shards[1], "--json", &merged]);
    succeed(&[
        "sweep",
        "--model",
        "gpt3-175b",
        "--gpus",
        "1024",
        "--global-batch",
        "1536",
        "--ignore-memory",
        "--prune",
        "--top",
        "3",
        "--json",
        &pruned,
    ]);
    let pruned_document = read_json(Path::new(&pruned));
    assert!(pruned_document["counts"]["pruned"].as_u64().unwrap() > 0);
    succeed(&[
        "sweep",
        "--model",
        "mixtral-8x7b",
        "--topology",
        "dgx-h100-ib",
        "--gpus",
        "8",
        "--global-batch",
        "8",
        "--stack",
        "megatron-core-2024",
        "--cp",
        "1,2",
        "--ep",
        "1,2",
        "--etp",
        "1",
        "--zero-stage",
        "1,3",
        "--precision",
        "bf16,fp8",
        "--optimizer",
        "adam,lion",
        "--grad-reduce-in-bf16",
        "--schedule",
        "interleaved",
        "--microbatch-groups",
        "--recompute",
        "full",
        "--seq-len",
        "2048",
        "--memory-headroom",
        "2",
        "--ignore-memory",
        "--fit",
        &fit,
        "--top",
        "1",
        "--json",
        &options,
    ]);
    for path in [&whole, &shards[0], &shards[1], &merged, &options, &pruned] {
        assert_valid("sweep", path, &read_json(Path::new(path)));
    }
}

#[test]
fn collective_compare_plot_presets_and_fit_follow_their_schemas() {
    for op in ["all_reduce", "all_to_all", "send_recv"] {
        let value = json_of(&["collective", "--op", op, "--json"]);
        assert_valid("collective", op, &value);
    }
    let timelines = ["t1.json", "t2.json"].map(|name| scratch(name).display().to_string());
    let layout = [
        "--model",
        "gpt-22b",
        "--tp",
        "8",
        "--pp",
        "2",
        "--dp",
        "1",
        "--global-batch",
        "8",
    ];
    json_of(
        &[
            &["simulate"],
            &layout[..],
            &["--json", "--timeline", &timelines[0]],
        ]
        .concat(),
    );
    json_of(
        &[
            &["simulate"],
            &layout[..],
            &[
                "--stack",
                "megatron-2022",
                "--json",
                "--timeline",
                &timelines[1],
            ],
        ]
        .concat(),
    );
    let reliability = repository_file("cli/tests/reliability/t.json");
    for other in [&timelines[0], &timelines[1], &reliability] {
        assert_valid(
            "compare",
            other,
            &json_of(&["compare", &timelines[0], other, "--json"]),
        );
    }
    let chart = scratch("bubble.svg").display().to_string();
    for p in ["16", "4"] {
        let value = json_of(&["plot", "bubble", "--pp", p, "--out", &chart, "--json"]);
        assert_valid("plot-bubble", p, &value);
    }
    assert_valid(
        "presets",
        "presets --json",
        &json_of(&["presets", "--json"]),
    );
    let out = scratch("h100-fit.json").display().to_string();
    let printed = json_of(&[
        "fit",
        &repository_file("validation/h100-published.json"),
        "--out",
        &out,
        "--json",
    ]);
    assert_valid("fit", "fit --json", &printed);
    assert_valid("fit", "FIT.json", &read_json(Path::new(&out)));
}

#[test]
fn validate_outputs_of_every_kind_of_file_follow_the_schema() {
    let fit = dev_set_fit();
    let files = [
        ("validation/dev-set.json", true),
        ("validation/h100-published.json", false),
        ("validation/vtrain-single-node.csv", true),
        ("validation/kernels/xla-h100-matmul.csv", false),
        ("validation/kernels/lab-h100-gemm.csv", false),
        (
            "validation/kernels/flashattention-a100-attention.csv",
            false,
        ),
    ];
    for (file, with_fit) in files {
        let path = repository_file(file);
        assert_valid("validate", file, &json_of(&["validate", &path, "--json"]));
        if with_fit {
            let value = json_of(&["validate", &path, "--fit", &fit, "--json"]);
            assert_valid("validate", &format!("{file} --fit"), &value);
        }
    }
}

#[test]
fn a_key_the_schema_does_not_document_is_a_violation() {
    let mut value = json_of(&["simulate", "--json"]);
    value["surprise"] = 1.into();
    value["memory_per_stage"][0]["surprise"] = 1.into();
    let found = violations("simulate", &value);
    assert_eq!(found.len(), 2, "{found:?}");
    let mut value = json_of(&["collective", "--json"]);
    value["rows"][0].as_object_mut().unwrap().remove("time_ns");
    assert_eq!(violations("collective", &value).len(), 1);
}

/// Every `properties` entry of every schema, nested ones included, carries a description.
#[test]
fn every_property_of_every_schema_is_described() {
    fn undescribed(node: &Value, at: &str, found: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get("properties") {
                    for (key, property) in properties {
                        if property
                            .get("description")
                            .and_then(Value::as_str)
                            .is_none_or(str::is_empty)
                        {
                            found.push(format!("{at}/{key}"));
                        }
                    }
                }
                for (key, child) in map {
                    undescribed(child, &format!("{at}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    undescribed(child, &format!("{at}/{i}"), found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    let dir = repository_root().join("schemas");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix(".schema.json").map(String::from))
        .collect();
    names.sort();
    assert!(names.len() >= 9, "{names:?}");
    for name in names {
        undescribed(&schema(&name), &name, &mut found);
    }
    assert!(
        found.is_empty(),
        "properties without a description:\n{}",
        found.join("\n")
    );
}
