//! The word embedding's gradient all-reduce between the first and the last
//! pipeline stage (megatron/training.py train_step, 2021): one per (data,
//! tensor) rank pair when the output layer is tied to the embedding and
//! p > 1, after the data-parallel reduction and before the optimizer step.

use sim::scenario::ScenarioFile;
use timeline::TaskKind;

fn simulate(model: &str, pp: u32) -> sim::SimulationReport {
    let scenario = ScenarioFile {
        model: Some(model.into()),
        topology: Some("selene".into()),
        tp: Some(2),
        pp: Some(pp),
        dp: Some(2),
        global_batch: Some(16),
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .expect("valid scenario");
    sim::simulate(&scenario).expect("simulates")
}

fn of_kind(report: &sim::SimulationReport, kind: TaskKind) -> Vec<&timeline::TaskRecord> {
    report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == kind)
        .collect()
}

#[test]
fn tied_embeddings_are_all_reduced_between_first_and_last_stage() {
    let report = simulate("gpt2-1b", 4);
    let all_reduces = of_kind(&report, TaskKind::EmbeddingAllReduce);
    // d × t = 2 × 2 pairs.
    assert_eq!(all_reduces.len(), 4);
    // vocab/t × h parameters of fp16 main gradients (megatron-2021: unfused).
    let model = models::preset("gpt2-1b").unwrap();
    let bytes = model.vocab / 2 * model.hidden * 2;
    assert!(all_reduces.iter().all(|t| t.bytes == bytes), "{bytes}");
    // Each ends before every optimizer step of stages 0 and 3 begins, and
    // after the data-parallel all-reduces.
    let last_end = all_reduces.iter().map(|t| t.end_ns).max().unwrap();
    let first_start = all_reduces.iter().map(|t| t.start_ns).min().unwrap();
    for step in of_kind(&report, TaskKind::OptimizerStep) {
        if step.stage == 0 || step.stage == 3 {
            assert!(step.start_ns >= all_reduces.iter().map(|t| t.end_ns).min().unwrap());
        }
    }
    let dp_end = of_kind(&report, TaskKind::DataParallelAllReduce)
        .iter()
        .filter(|t| t.stage == 0 || t.stage == 3)
        .map(|t| t.end_ns)
        .min()
        .unwrap();
    assert!(first_start >= dp_end, "{first_start} < {dp_end}");
    assert!(last_end <= report.timeline().makespan_ns());
}

#[test]
fn untied_or_unpipelined_models_have_none() {
    assert!(of_kind(&simulate("gpt2-1b", 1), TaskKind::EmbeddingAllReduce).is_empty());
    assert!(of_kind(&simulate("llama2-7b", 4), TaskKind::EmbeddingAllReduce).is_empty());
}
