//! The fuzzer's seed corpus (see `../fuzz.rs`): valid inputs of every kind
//! the CLI reads, from the presets, the committed JSON files and small
//! outputs of the binary itself.

use super::mutate::Json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Valid inputs of every kind, each small enough to simulate in milliseconds.
pub struct Seeds {
    pub models: Vec<Json>,
    /// Hugging Face config.json files (the importer's fixtures).
    pub hf_configs: Vec<Json>,
    pub topologies: Vec<Json>,
    pub profiles: Vec<Json>,
    pub stacks: Vec<Json>,
    pub scenarios: Vec<Json>,
    /// (file name, text): `.json` and `.jsonl` timelines.
    pub timelines: Vec<(String, String)>,
    /// Every shard of one small sweep.
    pub shards: Vec<Json>,
    pub dev_sets: Vec<Json>,
    pub csv: String,
    /// Megatron-LM argument lists, one argument per line (the launch
    /// scripts' lists in `frameworks/fixtures/megatron/`).
    pub megatron_args: Vec<Vec<String>>,
    /// (flag, file name, lines): torchtitan TOMLs and Megatron-Bridge YAMLs
    /// (`frameworks/fixtures/`).
    pub framework_files: Vec<(&'static str, &'static str, Vec<String>)>,
}

fn repository(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn read_json(path: &str) -> Json {
    Json::parse(&std::fs::read_to_string(repository(path)).expect("committed file"))
}

fn json_of(value: &impl serde::Serialize) -> Json {
    Json::from_value(&serde_json::to_value(value).expect("serializes"))
}

/// Runs the binary in `dir` to make a seed; it must succeed.
fn produce(binary: &Path, dir: &Path, args: &[&str]) {
    let output = Command::new(binary)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs");
    assert!(
        output.status.success(),
        "seed command {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

const TINY_LAYOUT: &[&str] = &["--model", "tiny", "--topology", "dgx-a100", "--tp", "1"];

impl Seeds {
    /// Builds the corpus, running `binary` in `dir` for timelines and shards.
    pub fn build(binary: &Path, dir: &Path) -> Seeds {
        std::fs::create_dir_all(dir).unwrap();
        let models = [
            "tiny",
            "gpt2-1b",
            "llama3-8b",
            "qwen2.5-72b",
            "mixtral-8x7b",
            "deepseek-v3",
        ]
        .iter()
        .map(|name| json_of(&models::preset(name).expect("preset")))
        .chain([Json::parse(
            r#"{"name":"small","layers":2,"hidden":64,"heads":4,"seq_len":128,"vocab":1000}"#,
        )])
        .collect();
        let hf_configs = [
            "Meta-Llama-3-8B",
            "Qwen2.5-72B",
            "gpt2",
            "Mistral-7B-v0.1",
            "Mixtral-8x7B-v0.1",
            "DeepSeek-V3",
            "Qwen3-30B-A3B",
        ]
        .iter()
        .map(|folder| read_json(&format!("models/fixtures/hf/{folder}/config.json")))
        .collect();
        // dgx-h100-roce carries `fabric.kind`; h100-pcie-cluster a node without NVLink.
        let topologies = [
            "dgx-a100",
            "dgx2-v100",
            "h200",
            "dgx-h100-superpod",
            "dgx-h100-roce",
            "h100-pcie-cluster",
            "hgx-h800",
        ]
        .iter()
        .map(|name| json_of(&topologies::preset(name).expect("preset")))
        .chain([read_json("examples/h200-x4-virtual.json")])
        .collect();
        let profiles = ["a100-80gb", "v100-32gb", "h200"]
            .iter()
            .map(|name| read_json(&format!("profile/profiles/{name}.json")))
            .collect();
        let stacks = [
            "megatron-2021",
            "megatron-2022",
            "megatron-core-2024",
            "deepspeed-pipeline",
        ]
        .iter()
        .map(|name| read_json(&format!("scenario/stacks/{name}.json")))
        .collect();
        let mut scenarios: Vec<Json> = [
            sim::scenario::ScenarioFile::tiny_example(),
            sim::scenario::ScenarioFile::embedded_default(),
        ]
        .iter()
        .map(json_of)
        .collect();
        for example in [
            "pipeline-1f1b-p4-synthetic",
            "pipeline-interleaved-p4-synthetic",
        ] {
            let mut scenario = read_json(&format!("examples/{example}.json"));
            scenario.set("model", Json::Str("tiny".into()));
            scenario.set("topology", Json::Str("topology.json".into()));
            scenarios.push(scenario);
        }
        scenarios.push(Json::parse(
            r#"{"model":"tiny","topology":"dgx-a100","tp":2,"cp":2,"pp":2,"dp":1,"global_batch":4,
                "recompute":"full","distributed_optimizer":true}"#,
        ));
        scenarios.push(Json::parse(
            r#"{"model":"model.json","topology":"dgx2-v100","tp":1,"pp":1,"dp":2,"global_batch":4,
                "zero_offload":true,"delayed_update":true,"dpu_warmup_iterations":1,"offload_bucket_params":1000000}"#,
        ));
        scenarios.push(Json::parse(
            r#"{"model":{"name":"m","layers":4,"hidden":256,"heads":4,"seq_len":128,"vocab":5000},
                "topology":"topology.json","profile":"profile.json","stack":"stack.json","tp":2,"pp":2,"dp":2,
                "chunks":2,"microbatch_size":1,"global_batch":8,"schedule":"interleaved","recompute":"selective",
                "sequence_parallel":true,"overlap_grad_reduce":true,"grad_reduce_bucket_params":1000000,
                "gradient_accumulation_fusion":true,"network_contention":true,"pipeline_scatter_gather":false}"#,
        ));
        scenarios.push(Json::parse(
            r#"{"model":"model.json","topology":"topology.json","tp":1,"pp":2,"dp":4,"global_batch":8,
                "recompute":"full","zero_stage":3,"shard_group_size":2}"#,
        ));
        scenarios.push(Json::parse(
            r#"{"model":"tiny","topology":"dgx-a100","tp":1,"pp":2,"dp":1,"chunks":2,"global_batch":6,
                "schedule":"interleaved","microbatch_group_size":3,"recompute":"full"}"#,
        ));
        scenarios.push(Json::parse(
            r#"{"model":"tiny","topology":"dgx-a100","tp":2,"pp":2,"dp":2,"chunks":2,"global_batch":8,
                "schedule":"looped-bfs","pipeline_layout":"E(t|)*3,tL","overlap_grad_reduce":true}"#,
        ));
        let run = |args: &[&str]| produce(binary, dir, args);
        let tiny = |extra: &[&str]| run(&[&["simulate"], TINY_LAYOUT, extra].concat());
        tiny(&[
            "--pp",
            "1",
            "--dp",
            "1",
            "--global-batch",
            "1",
            "--timeline",
            "t1.json",
        ]);
        tiny(&[
            "--pp",
            "2",
            "--dp",
            "2",
            "--global-batch",
            "4",
            "--timeline",
            "t2.jsonl",
        ]);
        tiny(&[
            "--pp",
            "2",
            "--dp",
            "1",
            "--chunks",
            "2",
            "--schedule",
            "interleaved",
        ]);
        tiny(&["--pp", "2", "--dp", "1", "--schedule", "zb-h1"]);
        tiny(&["--pp", "2", "--dp", "1", "--schedule", "zb-h2", "--explain"]);
        tiny(&[
            "--pp",
            "2",
            "--dp",
            "1",
            "--chunks",
            "2",
            "--schedule",
            "zb-v",
            "--explain",
        ]);
        tiny(&[
            "--pp",
            "2",
            "--dp",
            "1",
            "--chunks",
            "2",
            "--schedule",
            "dualpipev",
            "--timeline",
            "t5.json",
        ]);
        tiny(&[
            "--pp",
            "2",
            "--dp",
            "1",
            "--global-batch",
            "4",
            "--chunks",
            "2",
            "--schedule",
            "interleaved",
            "--contention",
            "--timeline",
            "t3.json",
        ]);
        run(&[
            "simulate",
            "--model",
            "tiny",
            "--topology",
            "dgx2-v100",
            "--tp",
            "1",
            "--pp",
            "1",
            "--dp",
            "2",
            "--global-batch",
            "2",
            "--zero-offload",
            "--delayed-update",
            "--timeline",
            "t4.json",
        ]);
        let timelines = ["t1.json", "t2.jsonl", "t3.json", "t4.json", "t5.json"]
            .iter()
            .map(|name| {
                let text = std::fs::read_to_string(dir.join(name)).unwrap();
                (name.to_string(), text)
            })
            .collect();
        let shards = (0..3)
            .map(|i| {
                let (shard, file) = (format!("{i}/3"), format!("shard{i}.json"));
                run(&[
                    "sweep",
                    "--model",
                    "tiny",
                    "--topology",
                    "dgx-a100",
                    "--gpus",
                    "4",
                    "--global-batch",
                    "8",
                    "--max-microbatch",
                    "2",
                    "--max-chunks",
                    "2",
                    // The keys of the sweep's lists are in the shard files.
                    "--cp",
                    "1,2",
                    "--zero-stage",
                    "0,1",
                    "--precision",
                    "fp16,bf16",
                    "--shard",
                    &shard,
                    "--json",
                    &file,
                ]);
                Json::parse(&std::fs::read_to_string(dir.join(file)).unwrap())
            })
            .collect();
        let dev_set: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(repository("validation/dev-set.json")).unwrap(),
        )
        .unwrap();
        // One cheap case per file (the whole dev set takes seconds).
        let dev_sets = [0usize, 1, 6]
            .iter()
            .map(|&i| {
                let mut one = dev_set.clone();
                one["cases"] = serde_json::Value::Array(vec![dev_set["cases"][i].clone()]);
                Json::from_value(&one)
            })
            .collect();
        let csv = std::fs::read_to_string(repository("validation/vtrain-single-node.csv"))
            .unwrap()
            .lines()
            .take(7)
            .map(|line| format!("{line}\n"))
            .collect();
        let megatron_args = ["train_llama3_8b_h100_fp8", "train_mixtral_8x7b_distributed"]
            .iter()
            .map(|name| {
                let path = repository(&format!("frameworks/fixtures/megatron/{name}.args"));
                std::fs::read_to_string(path)
                    .unwrap()
                    .lines()
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        let framework_files = [
            ("--torchtitan", "torchtitan/llama3_70b.toml", "config.toml"),
            ("--torchtitan", "torchtitan/llama3_8b.toml", "config.toml"),
            (
                "--bridge-config",
                "bridge/quantized_llama3_8b_pretrain_override_example.yaml",
                "config.yaml",
            ),
            (
                "--bridge-config",
                "bridge/llama32_1b_pretrain.yaml",
                "config.yaml",
            ),
        ]
        .iter()
        .map(|(flag, path, name)| {
            let text = std::fs::read_to_string(repository(&format!("frameworks/fixtures/{path}")))
                .unwrap();
            (*flag, *name, text.lines().map(str::to_string).collect())
        })
        .collect();
        Seeds {
            framework_files,
            megatron_args,
            models,
            hf_configs,
            topologies,
            profiles,
            stacks,
            scenarios,
            timelines,
            shards,
            dev_sets,
            csv,
        }
    }
}
