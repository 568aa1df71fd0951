//! Shared helpers for the integration tests in `tests/tests/`.

pub mod bubble;
pub mod moe;

use sim::scenario::{Recompute, Scenario, ScenarioFile, ScheduleKind};

/// A small 48-layer model on Selene with the given layout (48 divides every p·v the tests use).
pub fn small_scenario(
    schedule: ScheduleKind,
    tp: u32,
    pp: u32,
    dp: u32,
    chunks: u32,
    microbatches: u32,
) -> Scenario {
    small_scenario_file(schedule, tp, pp, dp, chunks, microbatches)
        .resolve()
        .expect("valid small scenario")
}

/// The file of [`small_scenario`], for tests that set more keys.
pub fn small_scenario_file(
    schedule: ScheduleKind,
    tp: u32,
    pp: u32,
    dp: u32,
    chunks: u32,
    microbatches: u32,
) -> ScenarioFile {
    ScenarioFile {
        model: Some(serde_json::json!({
            "name": "test-48", "layers": 48, "hidden": 512, "heads": 8, "seq_len": 256, "vocab": 51200
        })),
        topology: Some("selene".into()),
        tp: Some(tp),
        pp: Some(pp),
        dp: Some(dp),
        chunks: Some(chunks),
        microbatch_size: Some(1),
        global_batch: Some(microbatches * dp),
        schedule: Some(schedule),
        recompute: Some(Recompute::None),
        ..ScenarioFile::default()
    }
}

/// Path of the validation set committed in the repository (`validation/dev-set.json`).
pub fn dev_set_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .join("validation/dev-set.json")
}

/// Path of vTrain's single-node ground truth in the repository (`validation/vtrain-single-node.csv`).
pub fn vtrain_csv_path() -> std::path::PathBuf {
    dev_set_path().with_file_name("vtrain-single-node.csv")
}

/// Path of NVIDIA's published H100 runs as scenario cases (`validation/h100-published.json`).
pub fn h100_published_path() -> std::path::PathBuf {
    dev_set_path().with_file_name("h100-published.json")
}

/// `validation/h100-moe-published.json`: NVIDIA's published H100
/// mixture-of-experts runs (Megatron-Bridge), each a whole scenario.
pub fn h100_moe_published_path() -> std::path::PathBuf {
    dev_set_path().with_file_name("h100-moe-published.json")
}

/// `validation/deepseek-v3-published.json`: DeepSeek-V3's published
/// pre-training cost on 2,048 H800s as a whole scenario.
pub fn deepseek_v3_published_path() -> std::path::PathBuf {
    dev_set_path().with_file_name("deepseek-v3-published.json")
}
