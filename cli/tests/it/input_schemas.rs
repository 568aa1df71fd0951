//! The JSON Schemas of the four kinds of input file (issue 33 item 5):
//! `schemas/model.schema.json`, `topology`, `stack` and `scenario`. Every
//! built-in preset and every committed input file validates; where the
//! program refuses a file (an unknown key where its struct denies them, a
//! missing required key, a bound it checks) the schema refuses it too, and
//! what the program accepts beyond the presets (nulls for optional keys, a
//! Hugging Face config, inline objects) the schema accepts.

use crate::common::schema::{assert_valid, schema, violations};
use crate::common::{clustersim, repository_root, stderr, text};
use serde_json::{json, Value};
use std::path::Path;

/// The kinds with built-in presets, and the list `presets --json` names them in
/// (scenarios have none).
const KINDS: [(&str, &str); 3] = [
    ("model", "models"),
    ("topology", "topologies"),
    ("stack", "stacks"),
];

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `clustersim presets --show NAME`, parsed (the model, topology or stack
/// preset NAME: `dgx-a100` is one kind only; `h200` is a topology and a profile).
fn shown(name: &str) -> Value {
    let output = clustersim(&["presets", "--show", name]);
    assert!(output.status.success(), "{name}: {}", stderr(&output));
    serde_json::from_str(&text(&output.stdout)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `clustersim presets --show NAME --kind KIND`, parsed.
fn shown_as(kind: &str, name: &str) -> Value {
    let output = clustersim(&["presets", "--show", name, "--kind", kind]);
    assert!(output.status.success(), "{name}: {}", stderr(&output));
    serde_json::from_str(&text(&output.stdout)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Writes `value` to a file of its own in the temporary folder.
fn written(tag: &str, value: &Value) -> String {
    let path = std::env::temp_dir().join(format!(
        "clustersim-input-schemas-{}-{tag}.json",
        std::process::id()
    ));
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path.display().to_string()
}

/// The exit status of a run that reads `value` as a file of `kind`: a model
/// or topology under a tiny scenario, a stack under it, a scenario as itself.
fn program_status(kind: &str, tag: &str, value: &Value) -> (i32, String) {
    let file = written(tag, value);
    let layout = ["--tp", "1", "--pp", "1", "--dp", "1", "--global-batch", "4"];
    let mut args: Vec<&str> = vec!["simulate"];
    match kind {
        "model" => args.extend(["--model", &file, "--topology", "dgx-a100"]),
        "topology" => args.extend(["--model", "tiny", "--topology", &file]),
        "stack" => args.extend([
            "--model",
            "tiny",
            "--topology",
            "dgx-a100",
            "--stack",
            &file,
        ]),
        _ => args.push(&file),
    }
    if kind != "scenario" {
        args.extend(layout);
    }
    let output = clustersim(&args);
    let _ = std::fs::remove_file(&file);
    (output.status.code().unwrap_or(-1), stderr(&output))
}

/// Asserts the schema and the program both accept `value` as a `kind` file.
fn accepted_by_both(kind: &str, tag: &str, value: &Value) {
    assert_valid(kind, tag, value);
    let (code, stderr) = program_status(kind, tag, value);
    assert_eq!(code, 0, "{kind} {tag}: the program refused it: {stderr}");
}

/// Asserts the schema and the program (exit 2) both refuse `value`.
fn refused_by_both(kind: &str, tag: &str, value: &Value) {
    assert!(
        !violations(kind, value).is_empty(),
        "{kind} {tag}: the schema accepts {value}"
    );
    let (code, stderr) = program_status(kind, tag, value);
    assert_eq!(code, 2, "{kind} {tag}: the program's exit: {stderr}");
}

/// A small scenario every kind's tests build on.
fn tiny_scenario() -> Value {
    json!({"model": "tiny", "topology": "dgx-a100", "tp": 1, "pp": 1, "dp": 1, "global_batch": 4})
}

/// A copy of `value` with `edit` applied.
fn edited(value: &Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut copy = value.clone();
    edit(&mut copy);
    copy
}

#[test]
fn every_property_has_a_description_and_a_type() {
    fn walk(name: &str, at: &str, node: &Value, missing: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get("properties") {
                    for (key, property) in properties {
                        let complete = ["description", "type"]
                            .iter()
                            .all(|keyword| property.get(keyword).is_some());
                        if !complete {
                            missing.push(format!("{name}: {at}/properties/{key}"));
                        }
                    }
                }
                for (key, child) in map {
                    walk(name, &format!("{at}/{key}"), child, missing);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    walk(name, &format!("{at}/{index}"), child, missing);
                }
            }
            _ => {}
        }
    }
    let mut missing = Vec::new();
    for name in ["model", "topology", "stack", "scenario"] {
        let schema = schema(name);
        assert_eq!(
            schema["$id"],
            format!("https://clustersim.dev/schemas/{name}.schema.json")
        );
        walk(name, "", &schema, &mut missing);
    }
    assert!(
        missing.is_empty(),
        "no description or type:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_builtin_preset_validates_against_its_schema() {
    let output = clustersim(&["presets", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let presets: Value = serde_json::from_str(&text(&output.stdout)).unwrap();
    for (kind, list) in KINDS {
        let names = presets[list].as_array().expect("a list of names");
        assert!(!names.is_empty(), "no {list}");
        for name in names {
            let name = name.as_str().unwrap();
            assert_valid(
                kind,
                &format!("{kind} preset {name}"),
                &shown_as(kind, name),
            );
        }
    }
}

#[test]
fn the_scenario_schemas_schedules_are_the_programs() {
    let output = clustersim(&["presets", "--json"]);
    let presets: Value = serde_json::from_str(&text(&output.stdout)).unwrap();
    let mut named = schema("scenario")["properties"]["schedule"]["enum"].clone();
    named.as_array_mut().unwrap().retain(|name| !name.is_null());
    assert_eq!(named, presets["schedules"]);
}

/// Every committed file of the four kinds, found by its contents: a stack
/// has `format_version`, a topology `gpu` (and no `topology`), a scenario the
/// rest; the reliability inputs are the ones the program accepts.
fn committed_inputs() -> Vec<(&'static str, std::path::PathBuf)> {
    let root = repository_root();
    let mut files = Vec::new();
    for folder in [
        "examples",
        "scenario/stacks",
        "cli/tests/reliability/round3",
    ] {
        let mut entries: Vec<_> = std::fs::read_dir(root.join(folder))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        entries.sort();
        files.extend(entries);
    }
    files.push(root.join("cli/tests/reliability/topo1m.json"));
    files
        .into_iter()
        .filter_map(|path| {
            let value = read(&path);
            let kind = if value.get("format_version").is_some() {
                "stack"
            } else if value.get("gpu").is_some() && value.get("topology").is_none() {
                "topology"
            } else if value.get("header").is_some() || value.get("cases").is_some() {
                return None; // timelines and dev sets, not input files of these kinds
            } else {
                "scenario"
            };
            Some((kind, path))
        })
        .collect()
}

#[test]
fn the_repositorys_committed_input_files_validate() {
    let files = committed_inputs();
    for kind in ["topology", "stack", "scenario"] {
        assert!(
            files.iter().any(|(found, _)| *found == kind),
            "no committed {kind} file found"
        );
    }
    let examples = files
        .iter()
        .filter(|(_, path)| path.parent().unwrap().ends_with("examples"))
        .count();
    assert!(examples >= 9, "only {examples} examples found");
    for (kind, path) in &files {
        assert_valid(kind, &path.display().to_string(), &read(path));
    }
    // The Hugging Face configs `--model` reads.
    let hf = repository_root().join("models/fixtures/hf");
    let mut configs = 0;
    for entry in std::fs::read_dir(&hf).unwrap() {
        let config = entry.unwrap().path().join("config.json");
        if config.is_file() {
            assert_valid("model", &config.display().to_string(), &read(&config));
            configs += 1;
        }
    }
    assert!(configs >= 10, "only {configs} Hugging Face configs found");
    // The published cases are whole scenarios.
    for file in [
        "h100-published",
        "h100-moe-published",
        "deepseek-v3-published",
    ] {
        let path = repository_root().join(format!("validation/{file}.json"));
        for case in read(&path)["cases"].as_array().unwrap() {
            let what = format!("{file} case {}", case["id"]);
            assert_valid("scenario", &what, &case["scenario"]);
        }
    }
}

#[test]
fn an_unknown_top_level_key_is_refused_by_the_schema_and_the_program() {
    let files = [
        ("model", shown("tiny")),
        ("topology", shown("dgx-a100")),
        ("stack", shown("megatron-2022")),
        ("scenario", tiny_scenario()),
    ];
    for (kind, file) in files {
        accepted_by_both(kind, &format!("{kind}-base"), &file);
        let unknown = edited(&file, |v| v["no_such_key"] = json!(1));
        refused_by_both(kind, &format!("{kind}-unknown"), &unknown);
    }
    // Nested structs deny unknown keys too.
    let nested = [
        ("model", shown("mixtral-8x7b"), "/moe"),
        ("topology", shown("dgx-a100"), "/gpu/peak"),
        ("topology", shown("dgx-a100"), "/fabric"),
        (
            "stack",
            shown("megatron-core-2024"),
            "/host/kernel_issue_ns",
        ),
        ("stack", shown("megatron-core-2024"), "/options"),
        ("stack", shown("megatron-core-2024"), "/kernels"),
    ];
    for (kind, file, at) in nested {
        let unknown = edited(&file, |v| {
            v.pointer_mut(at).unwrap()["no_such_key"] = json!(1)
        });
        refused_by_both(kind, &format!("{kind}-nested-unknown"), &unknown);
    }
    let split = edited(&tiny_scenario(), |v| {
        v["pipeline_split"] = json!({"embedding": true, "layout": "Et|tL"})
    });
    refused_by_both("scenario", "pipeline-split-layout", &split);
    // A layout key is not a stack option.
    let tp = edited(&shown("megatron-2022"), |v| {
        v["options"]["tp"] = json!({"value": 2, "source": "s"})
    });
    refused_by_both("stack", "stack-option-tp", &tp);
}

#[test]
fn a_missing_required_key_is_refused_by_the_schema_and_the_program() {
    let without = |file: Value, at: &str, key: &str| {
        edited(&file, |v| {
            v.pointer_mut(at)
                .unwrap()
                .as_object_mut()
                .unwrap()
                .remove(key);
        })
    };
    let cases = [
        ("model", without(shown("tiny"), "", "vocab")),
        ("model", without(shown("mixtral-8x7b"), "/moe", "top_k")),
        (
            "model",
            without(shown("deepseek-v3"), "/mla", "kv_lora_rank"),
        ),
        ("topology", without(shown("dgx-a100"), "", "host_cpu")),
        (
            "topology",
            without(shown("dgx-a100"), "/gpu/peak", "bf16_flops_per_s"),
        ),
        (
            "topology",
            without(shown("dgx-a100"), "/fabric", "switch_radix"),
        ),
        ("stack", without(shown("megatron-2022"), "", "summary")),
        (
            "stack",
            without(shown("megatron-core-2024"), "/host", "optimizer_kernels"),
        ),
        (
            "stack",
            without(shown("megatron-core-2024"), "/nccl", "source"),
        ),
        (
            "stack",
            without(shown("megatron-core-2024"), "/nccl", "value"),
        ),
    ];
    for (index, (kind, file)) in cases.iter().enumerate() {
        refused_by_both(kind, &format!("{kind}-missing-{index}"), file);
    }
    // A scenario requires no key of the file (flags may give them), but a
    // simulation needs a global batch; the schema cannot know the flags.
    let scenario = without(tiny_scenario(), "", "global_batch");
    assert_valid("scenario", "scenario without global_batch", &scenario);
    assert_eq!(program_status("scenario", "no-batch", &scenario).0, 2);
}

#[test]
fn what_the_program_accepts_beyond_the_presets_the_schemas_accept() {
    let model = edited(&shown("tiny"), |v| {
        for key in [
            "ffn_hidden",
            "kv_heads",
            "qkv_bias",
            "moe",
            "mla",
            "trained_dtype",
        ] {
            v[key] = Value::Null;
        }
    });
    accepted_by_both("model", "model-nulls", &model);
    let hf = read(&repository_root().join("models/fixtures/hf/Llama-2-7b-hf/config.json"));
    accepted_by_both("model", "hf-config", &hf);
    let topology = edited(&shown("dgx-a100"), |v| {
        v["fabric"]["kind"] = Value::Null;
        v["gpu"]["peak"]["fp8_flops_per_s"] = Value::Null;
        v["node"]["nvlink_bandwidth_bytes_per_s"] = json!(0);
    });
    accepted_by_both("topology", "topology-nulls", &topology);
    let stack = edited(&shown("megatron-core-2024"), |v| {
        v["host"] = Value::Null;
        v["p2p"] = json!({});
        v["nccl"] = json!({"value": " 2.21.5 ", "source": "s"});
        v["options"]["precision"] = json!({"value": null, "source": "s"});
        v["kernels"] = json!({
            "fused_softmax_max_seq_len": {"value": null, "source": "s"},
            "local_ddp_gradient_kernels": null,
        });
    });
    accepted_by_both("stack", "stack-nulls", &stack);
    let inline = edited(&tiny_scenario(), |v| {
        v["model"] = shown("tiny");
        v["topology"] = shown("dgx-a100");
        v["precision"] = Value::Null;
        v["pipeline_split"] = Value::Null;
        v["stack"] = json!("megatron-2022");
    });
    accepted_by_both("scenario", "scenario-inline", &inline);
    let hf_inline = edited(&tiny_scenario(), |v| {
        v["model"] = hf;
        v["seq_len"] = json!(256);
        v["topology"] = json!("dgx-a100:2");
    });
    assert_valid(
        "scenario",
        "scenario with an inline Hugging Face config",
        &hf_inline,
    );
    // An inline object is checked as its own file would be.
    let bad_inline = edited(&inline, |v| v["model"]["no_such_key"] = json!(1));
    refused_by_both("scenario", "scenario-bad-inline", &bad_inline);
}

#[test]
fn bounds_the_program_checks_are_refused_by_both() {
    let model = shown("tiny");
    let topology = shown("dgx-a100");
    let stack = shown("megatron-core-2024");
    let scenario = tiny_scenario();
    let cases = [
        ("model", edited(&model, |v| v["layers"] = json!(0))),
        (
            "model",
            edited(&model, |v| v["hidden_dropout"] = json!(1.0)),
        ),
        ("model", edited(&model, |v| v["ffn_type"] = json!("relu"))),
        ("model", edited(&model, |v| v["bias"] = Value::Null)),
        (
            "model",
            edited(&model, |v| v["model_type"] = json!("gemma")),
        ),
        ("topology", edited(&topology, |v| v["nodes"] = json!(0))),
        (
            "topology",
            edited(&topology, |v| v["fabric"]["kind"] = json!("nvlink")),
        ),
        (
            "topology",
            edited(&topology, |v| v["gpu"]["sm_count"] = json!(1u64 << 33)),
        ),
        (
            "topology",
            edited(&topology, |v| {
                v["gpu"]["peak"]["bf16_flops_per_s"] = json!(0)
            }),
        ),
        ("stack", edited(&stack, |v| v["format_version"] = json!(2))),
        ("stack", edited(&stack, |v| v["name"] = json!(" "))),
        ("stack", edited(&stack, |v| v["nccl"]["source"] = json!(""))),
        (
            "stack",
            edited(&stack, |v| v["nccl"]["value"] = json!("2.18")),
        ),
        ("stack", edited(&stack, |v| v["not_modeled"] = Value::Null)),
        (
            "stack",
            edited(&stack, |v| {
                v["host"]["optimizer_kernels"]["value"] = json!(1_000_001)
            }),
        ),
        (
            "stack",
            edited(&stack, |v| {
                v["options"]["precision"] = json!({"value": "fp4", "source": "s"})
            }),
        ),
        ("scenario", edited(&scenario, |v| v["tp"] = json!(0))),
        (
            "scenario",
            edited(&scenario, |v| v["zero_stage"] = json!(7)),
        ),
        (
            "scenario",
            edited(&scenario, |v| v["schedule"] = json!("zb-h3")),
        ),
        (
            "scenario",
            edited(&scenario, |v| v["iterations"] = json!(0)),
        ),
        ("scenario", edited(&scenario, |v| v["model"] = json!(7))),
    ];
    for (index, (kind, file)) in cases.iter().enumerate() {
        refused_by_both(kind, &format!("{kind}-bound-{index}"), file);
    }
}
