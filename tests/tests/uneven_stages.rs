//! Megatron-Core's uneven pipeline split (`pipeline_split`, the
//! `--account-for-embedding/loss-in-pipeline-split` flags): Llama 3.1 405B's
//! 126 layers on 16 stages build 8 layers per stage and 7 on the first and
//! the last, whose forward FLOPs (embedding: none; head: the output GEMM)
//! follow exactly; validation names what does not divide.

use models::formulas;
use sim::scenario::{Recompute, ScenarioFile};
use timeline::TaskKind;

fn file(split: Option<models::sharding::PipelineSplit>) -> ScenarioFile {
    ScenarioFile {
        model: Some("llama3.1-405b".into()),
        topology: Some("dgx-h100-superpod".into()),
        seq_len: Some(2048),
        tp: Some(8),
        pp: Some(16),
        dp: Some(1),
        microbatch_size: Some(1),
        global_batch: Some(16),
        recompute: Some(Recompute::Full),
        pipeline_split: split,
        ..ScenarioFile::default()
    }
}

const BOTH: models::sharding::PipelineSplit = models::sharding::PipelineSplit {
    embedding: true,
    loss: true,
};

#[test]
fn a_126_layer_model_runs_on_16_stages_with_the_first_and_last_lighter() {
    let scenario = file(Some(BOTH)).resolve().expect("valid with the split");
    let report = sim::simulate(&scenario).unwrap();
    // FLOPs of one rank's forward of microbatch 0, per stage (every task of
    // a stage's forward records the same per-rank FLOPs).
    let forward: Vec<f64> = (0..16)
        .map(|stage| {
            report
                .timeline()
                .tasks
                .iter()
                .find(|t| {
                    t.kind == TaskKind::Forward && t.stage == stage && t.microbatch == Some(0)
                })
                .map(|t| t.flops)
                .unwrap()
        })
        .collect();
    let middle = forward[7];
    assert!(forward[1..15].iter().all(|&f| f == middle), "{forward:?}");
    // Stage 0: 7 layers and the embedding (no FLOPs).
    assert_eq!(forward[0], middle * 7.0 / 8.0);
    // Stage 15: 7 layers and the head, whose output GEMM is 2·b·s·h·V/t.
    let model = &scenario.model;
    let head = 2.0 * 2048.0 * model.hidden as f64 * model.vocab as f64 / 8.0;
    assert!(
        (forward[15] - (middle * 7.0 / 8.0 + head)).abs() / forward[15] < 1e-12,
        "{} vs {} + {head}",
        forward[15],
        middle * 7.0 / 8.0
    );
    // Every parameter is held once over the stages (t = 8: the final norm
    // replicated on the tensor ranks).
    let total: u64 = report.memory.iter().map(|m| m.parameters * 8).sum();
    assert_eq!(
        total,
        formulas::published_parameter_count(model) + 7 * model.norm_parameters()
    );
}

#[test]
fn splits_that_do_not_divide_are_refused_by_name() {
    let even = file(None).resolve().unwrap_err().to_string();
    assert!(
        even.contains("layers (126) must be divisible by pp × chunks = 16 × 1 = 16"),
        "{even}"
    );
    assert!(even.contains("pipeline_split"), "{even}");
    let embedding_only = models::sharding::PipelineSplit {
        embedding: true,
        loss: false,
    };
    let error = file(Some(embedding_only))
        .resolve()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("pipeline_split: layers + embedding + loss (127) must be divisible"),
        "{error}"
    );
}
