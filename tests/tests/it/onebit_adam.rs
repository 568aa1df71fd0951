//! 1-bit Adam (`--optimizer onebitadam`, DeepSpeed's `OneBitAdam` after its
//! warm-up): the compressed momentum all-reduce's bytes against the
//! published 16× of its compression stage, its states, its step, exactness
//! under data-parallel symmetry, and what it refuses.
//!
//! The hand model (`sharded_data_parallel.rs`): 4,472,320 parameters, a
//! multiple of 16 · lcm(16, 8) = 256, so DeepSpeed pads nothing at d = 16.
//! fp16, unfused: the gradients all-reduced by Adam are 2 bytes.

use sim::scenario::{Optimizer, Scenario, ScenarioFile, TrainingOptionsFile};
use sim::{Expansion, SimulationMode, SimulationReport};
use timeline::TaskKind;

const TOTAL: u64 = tests::HAND_MODEL_PARAMETERS;
const D: u32 = 16;

fn file(optimizer: Optimizer) -> ScenarioFile {
    let options = TrainingOptionsFile {
        gradient_accumulation_fusion: Some(false),
        optimizer: Some(optimizer),
        ..TrainingOptionsFile::default()
    };
    ScenarioFile {
        topology: Some("selene".into()),
        ..tests::hand_model_file(1, 1, D, options)
    }
}

fn run(optimizer: Optimizer) -> (Scenario, SimulationReport) {
    let scenario = file(optimizer).resolve().expect("valid scenario");
    let report = sim::simulate(&scenario).expect("simulates");
    (scenario, report)
}

fn all_reduces(report: &SimulationReport) -> Vec<&timeline::TaskRecord> {
    report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::DataParallelAllReduce)
        .collect()
}

#[test]
fn the_momentum_goes_as_one_bit_per_parameter_sixteen_times_less_than_fp16() {
    let (_, adam) = run(Optimizer::Adam);
    let (_, onebit) = run(Optimizer::OneBitAdam);
    let (adam, onebit) = (all_reduces(&adam), all_reduces(&onebit));
    assert_eq!((adam.len(), onebit.len()), (1, 1));
    // Adam: a ring all-reduce of the 2-byte gradients sends 2·(N−1)/N of them.
    assert_eq!(adam[0].bytes, 2 * TOTAL);
    let n = f64::from(D);
    let adam_sent = 2.0 * (n - 1.0) / n * adam[0].bytes as f64;
    // 1-bit Adam: an all-to-all and an all-gather of S/8 bytes each, each
    // rank sending (N−1)/N of both.
    assert_eq!(onebit[0].bytes, 2 * TOTAL / 8);
    let onebit_sent = (n - 1.0) / n * onebit[0].bytes as f64;
    // DeepSpeed's blog: "16x less volume during the compression stage for FP16".
    assert_eq!(adam_sent / onebit_sent, 16.0);
}

#[test]
fn its_states_are_adams_with_both_compression_errors_and_its_step_unfused() {
    let (_, report) = run(Optimizer::OneBitAdam);
    let (_, adam) = run(Optimizer::Adam);
    // Master 4, moments 8, worker_error 4 per parameter; server_error 4 per
    // parameter of the rank's 1/16 chunk.
    assert_eq!(
        report.memory[0].optimizer_state_bytes,
        16 * TOTAL + 4 * TOTAL / 16
    );
    assert_eq!(adam.memory[0].optimizer_state_bytes, 12 * TOTAL);
    // The step: the wrapper's 26 B and the unfused update's 88 B.
    let steps: Vec<_> = report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::OptimizerStep)
        .collect();
    assert!(steps.iter().all(|step| step.bytes == TOTAL * (26 + 88)));
    // The compression's unfused kernels are compute-stream tasks on every
    // rank (the exchanges' four latencies outweigh their bytes on this
    // 4.5 M-parameter model, so no time is compared), the worker's
    // before them (100.125 B per element) and the server's and the final
    // unpack after (30.125 + 4 + 30.125 per element, 4 + 100.125 per
    // element of the 1/16 chunk).
    let compressions: Vec<_> = report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::Compression)
        .collect();
    assert_eq!(compressions.len(), 2 * D as usize);
    let reduction = all_reduces(&report)[0];
    let (before, after) = (
        100.125 * TOTAL as f64,
        (64.25 + 104.125 / 16.0) * TOTAL as f64,
    );
    for task in &compressions {
        let expected = if task.end_ns <= reduction.start_ns {
            before
        } else {
            assert!(task.start_ns >= reduction.end_ns);
            after
        };
        assert_eq!(task.bytes, expected.ceil() as u64);
    }
}

#[test]
fn onebit_adam_stays_exact_under_symmetry() {
    let scenario = file(Optimizer::OneBitAdam).resolve().unwrap();
    let full = sim::simulate_with(&scenario, Expansion::Built).unwrap();
    let auto = sim::simulate_with(&scenario, Expansion::Auto).unwrap();
    assert_eq!(auto.mode, SimulationMode::Symmetric { replicas: D });
    assert_eq!(auto.metrics, full.metrics);
    assert_eq!(auto.memory, full.memory);
    assert_eq!(auto.timeline(), full.timeline());
}

#[test]
fn zero_the_overlapped_reduction_and_contention_are_refused() {
    let refused = |edit: &dyn Fn(&mut TrainingOptionsFile), expected: &str| {
        let mut file = file(Optimizer::OneBitAdam);
        edit(&mut file.options);
        let error = file.resolve().expect_err(expected).to_string();
        assert!(error.contains(expected), "{error}");
    };
    refused(
        &|o| o.zero_stage = Some(1),
        "optimizer: onebitadam is not compatible with ZeRO",
    );
    refused(
        &|o| o.distributed_optimizer = Some(true),
        "add --distributed-optimizer=false",
    );
    refused(
        &|o| o.overlap_grad_reduce = Some(true),
        "optimizer: onebitadam turns the backward's gradient all-reduce off",
    );
    refused(
        &|o| o.network_contention = Some(true),
        "onebitadam's compressed all-reduce is not modeled as fabric flows",
    );
}

#[test]
fn onebit_lamb_sends_the_same_signs_and_keeps_a_fresh_variance() {
    let (_, adam) = run(Optimizer::OneBitAdam);
    let (_, lamb) = run(Optimizer::OneBitLamb);
    assert_eq!(all_reduces(&lamb)[0].bytes, all_reduces(&adam)[0].bytes);
    // 1-bit Adam's states and exp_avg_sq_fresh: 20 B, and the server's error.
    assert_eq!(
        lamb.memory[0].optimizer_state_bytes,
        20 * TOTAL + 4 * TOTAL / 16
    );
    // The step: the wrapper's 26 B and OnebitLamb's unfused 36 + 184 B.
    assert!(lamb
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::OptimizerStep)
        .all(|step| step.bytes == TOTAL * (26 + 220)));
    let mut zero = file(Optimizer::OneBitLamb);
    zero.options.zero_stage = Some(2);
    let error = zero.resolve().unwrap_err().to_string();
    assert!(
        error.contains("optimizer: onebitlamb is not compatible with ZeRO"),
        "{error}"
    );
}
