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

/// Parameters of [`hand_model_file`]'s model: GPT block, 4 layers, h = 256,
/// s = 128, vocabulary 5000, tied embeddings; one layer 12h² + 13h =
/// 789,760, embedding (word + positions) 5000·256 + 128·256 = 1,312,768,
/// final LayerNorm 2h = 512: 4·789,760 + 1,312,768 + 512.
pub const HAND_MODEL_PARAMETERS: u64 = 4_472_320;

/// The hand-counted model on DGX A100s at (t, p, d), b = 1, two microbatches
/// per replica, no recompute, with `options`.
pub fn hand_model_file(
    t: u32,
    p: u32,
    d: u32,
    options: sim::scenario::TrainingOptionsFile,
) -> ScenarioFile {
    ScenarioFile {
        model: Some(serde_json::json!({
            "name": "hand", "layers": 4, "hidden": 256, "heads": 4, "seq_len": 128, "vocab": 5000
        })),
        topology: Some("dgx-a100".into()),
        tp: Some(t),
        pp: Some(p),
        dp: Some(d),
        microbatch_size: Some(1),
        global_batch: Some(2 * d),
        recompute: Some(Recompute::None),
        options,
        ..ScenarioFile::tiny_example()
    }
}
