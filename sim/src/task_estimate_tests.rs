//! The scenario's task estimate (`scenario::task_count`) against the tasks
//! a simulation builds, and the host-memory check that reads it.

use models::ModelSpec;
use scenario::{ScenarioFile, TrainingOptionsFile};

fn tasks_and_estimate(file: ScenarioFile) -> (u64, u64) {
    let scenario = file.resolve().unwrap();
    let estimate = scenario.estimated_tasks();
    (crate::simulate(&scenario).unwrap().n_tasks as u64, estimate)
}

#[test]
fn the_estimate_covers_offload_buckets_and_tiles_and_reduce_buckets() {
    let offload = ScenarioFile {
        model: Some("gpt2-1b".into()),
        topology: Some("dgx2-v100".into()),
        dp: Some(2),
        global_batch: Some(8),
        options: TrainingOptionsFile {
            zero_offload: Some(true),
            delayed_update: Some(true),
            offload_bucket_params: Some(1),
            ..Default::default()
        },
        ..ScenarioFile::default()
    };
    let buckets = ScenarioFile {
        options: TrainingOptionsFile {
            overlap_grad_reduce: Some(true),
            grad_reduce_bucket_params: Some(1),
            ..Default::default()
        },
        pp: Some(2),
        dp: Some(2),
        global_batch: Some(8),
        ..ScenarioFile::tiny_example()
    };
    let zero_bubble = ScenarioFile {
        pp: Some(2),
        dp: Some(2),
        global_batch: Some(8),
        schedule: Some(scenario::ScheduleKind::ZbH2),
        ..ScenarioFile::tiny_example()
    };
    // The V schedules: two chunks per stage, a local turn, DualPipeV's pairs.
    let v_shaped = |schedule| ScenarioFile {
        pp: Some(2),
        dp: Some(2),
        chunks: Some(2),
        global_batch: Some(16),
        schedule: Some(schedule),
        ..ScenarioFile::tiny_example()
    };
    for file in [
        offload,
        buckets,
        zero_bubble,
        v_shaped(scenario::ScheduleKind::ZbV),
        v_shaped(scenario::ScheduleKind::DualPipeV),
        ScenarioFile::tiny_example(),
    ] {
        let (tasks, estimate) = tasks_and_estimate(file.clone());
        // About right: without its buckets and tiles the offload
        // estimate was 6.7 times too small.
        assert!(
            tasks <= 2 * estimate && estimate <= 2 * tasks,
            "{tasks} tasks, estimated {estimate} for {file:?}"
        );
    }
}

#[test]
fn offload_tiles_of_a_huge_model_are_counted() {
    let model = ModelSpec {
        name: "huge".into(),
        layers: 16384,
        hidden: 1 << 20,
        heads: 8,
        seq_len: 256,
        vocab: 51200,
        ffn_hidden: None,
        kv_heads: None,
        ffn_type: Default::default(),
        norm: Default::default(),
        bias: true,
        qkv_bias: None,
        rope: false,
        tied_embeddings: true,
        vocab_unpadded: None,
        head_dim: None,
        qk_norm: false,
        moe: None,
        mla: None,
        attention_dropout: models::DropoutRate::MEGATRON_DEFAULT,
        hidden_dropout: models::DropoutRate::MEGATRON_DEFAULT,
        trained_dtype: None,
    };
    let file = ScenarioFile {
        model: Some(serde_json::to_value(&model).unwrap()),
        topology: Some("dgx2-v100".into()),
        global_batch: Some(1),
        options: TrainingOptionsFile {
            zero_offload: Some(true),
            ..Default::default()
        },
        ..ScenarioFile::default()
    };
    // Its 1.6·10⁹ CPU Adam tiles are counted: under 32-bit ids, so
    // validation passes it and the host-memory check refuses it.
    let scenario = file.resolve().unwrap();
    assert!(
        scenario.estimated_tasks() > 1_600_000_000,
        "{}",
        scenario.estimated_tasks()
    );
    let workstation = crate::host_memory::AvailableMemory {
        bytes: 64 << 30,
        limit: "free memory",
    };
    let refusal = crate::host_memory::check_fits(&scenario, Some(workstation))
        .unwrap_err()
        .to_string();
    assert!(refusal.contains("tasks per simulation"), "{refusal}");
}
