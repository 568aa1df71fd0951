//! Activation compression (`--activation-compression RATIO`, issue 36 item
//! 2): the saved activations held RATIO times smaller, an encode kernel
//! after each forward and a decode kernel before the pass that reads them
//! (the backward, or the recomputation under full recompute), against
//! `memory::layer_activation_bytes`.
//!
//! The hand model (`sharded_data_parallel.rs`): 4 layers, one stage, d = 1.

use models::memory::RecomputeKind;
use sim::scenario::{CompressionRatio, Recompute, Scenario, ScenarioFile, TrainingOptionsFile};
use sim::SimulationReport;
use timeline::TaskKind;

fn run(ratio: Option<f64>, recompute: Recompute) -> (Scenario, SimulationReport) {
    let options = TrainingOptionsFile {
        activation_compression: ratio.map(|r| CompressionRatio::new(r).unwrap()),
        ..TrainingOptionsFile::default()
    };
    let file = ScenarioFile {
        recompute: Some(recompute),
        ..tests::hand_model_file(1, 1, 1, options)
    };
    let scenario = file.resolve().expect("valid scenario");
    let report = sim::simulate(&scenario).expect("simulates");
    (scenario, report)
}

/// Bytes of rank 0's tasks of `kind`, in issue order.
fn bytes_of(report: &SimulationReport, kind: TaskKind) -> Vec<u64> {
    report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == kind)
        .map(|t| t.bytes)
        .collect()
}

fn added(with: &SimulationReport, without: &SimulationReport, kind: TaskKind) -> Vec<u64> {
    bytes_of(with, kind)
        .iter()
        .zip(bytes_of(without, kind))
        .map(|(a, b)| a - b)
        .collect()
}

#[test]
fn saved_activations_shrink_by_the_ratio_and_cost_an_encode_and_a_decode() {
    let (scenario, plain) = run(None, Recompute::None);
    let (_, compressed) = run(Some(2.0), Recompute::None);
    let layer = sim::memory::layer_activation_bytes(&scenario, RecomputeKind::None);
    let stash = |r: &SimulationReport| r.memory[0].activation_bytes as f64;
    let in_flight = f64::from(plain.memory[0].peak_microbatches_in_flight);
    // Four layers per microbatch in flight, half of them kept.
    let saved = in_flight * 4.0 * layer;
    assert!((stash(&plain) - stash(&compressed) - saved / 2.0).abs() <= 2.0);
    // Each forward encodes (A read, A/2 written) and each backward decodes
    // (A/2 read, A written): 1.5·A per layer, 4 layers.
    let codec = (4.0 * 1.5 * layer).round() as u64;
    for kind in [TaskKind::Forward, TaskKind::Backward] {
        let extra = added(&compressed, &plain, kind);
        assert!(!extra.is_empty());
        assert!(
            extra.iter().all(|&b| b.abs_diff(codec) <= 1),
            "{kind:?} {extra:?}"
        );
    }
    // The kernels take GPU time (the hand model's iteration is host-bound,
    // so the passes, not the iteration, show it).
    let busy = |r: &SimulationReport| -> u64 {
        r.timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::Forward)
            .map(|t| t.end_ns - t.start_ns)
            .sum()
    };
    assert!(busy(&compressed) > busy(&plain));
}

#[test]
fn under_full_recompute_the_recomputation_decodes_the_saved_inputs() {
    let (scenario, plain) = run(None, Recompute::Full);
    let (_, compressed) = run(Some(4.0), Recompute::Full);
    let layer = sim::memory::layer_activation_bytes(&scenario, RecomputeKind::Full);
    let codec = (4.0 * 1.25 * layer).round() as u64;
    for kind in [TaskKind::Forward, TaskKind::Recompute] {
        let extra = added(&compressed, &plain, kind);
        assert!(
            extra.iter().all(|&b| b.abs_diff(codec) <= 1),
            "{kind:?} {extra:?}"
        );
    }
    assert!(added(&compressed, &plain, TaskKind::Backward)
        .iter()
        .all(|&b| b == 0));
}

#[test]
fn a_ratio_out_of_range_or_beside_cpu_offloading_is_refused() {
    let parsed: Result<ScenarioFile, _> =
        serde_json::from_str(r#"{"activation_compression": 0.5}"#);
    let error = parsed.unwrap_err().to_string();
    assert!(
        error.contains("must be a ratio from 1 (none) to 64"),
        "{error}"
    );
    let mut file = tests::hand_model_file(
        1,
        1,
        1,
        TrainingOptionsFile {
            activation_compression: Some(CompressionRatio::new(2.0).unwrap()),
            cpu_offloading_num_layers: Some(1),
            ..TrainingOptionsFile::default()
        },
    );
    file.recompute = Some(Recompute::None);
    let error = file.resolve().unwrap_err().to_string();
    assert!(
        error.contains(
            "activation_compression: is not modeled together with cpu_offloading_num_layers"
        ),
        "{error}"
    );
}
