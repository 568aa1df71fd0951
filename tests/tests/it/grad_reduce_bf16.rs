//! `--grad-reduce-in-bf16` (Megatron-Core, issue 36 item 3): under bf16 the
//! main gradients, fp32 otherwise, are kept and reduced in bf16,
//! so every data-parallel reduction moves half the bytes, gradients take
//! half the memory, and the optimizer step copies them to fp32 first.
//!
//! The hand model of `sharded_data_parallel.rs` (4,472,320 parameters), bf16
//! on 4 A100s, t = p = 1, d = 4.

use sim::scenario::{Precision, ScenarioFile, TrainingOptionsFile};
use sim::SimulationReport;
use timeline::TaskKind;

const TOTAL: u64 = tests::HAND_MODEL_PARAMETERS;

fn file(distributed: bool, bf16_reduce: bool) -> ScenarioFile {
    let options = TrainingOptionsFile {
        precision: Some(Precision::Bf16),
        gradient_accumulation_fusion: Some(true),
        distributed_optimizer: Some(distributed),
        grad_reduce_in_bf16: Some(bf16_reduce),
        ..TrainingOptionsFile::default()
    };
    tests::hand_model_file(1, 1, 4, options)
}

fn run(distributed: bool, bf16_reduce: bool) -> SimulationReport {
    let scenario = file(distributed, bf16_reduce).resolve().expect("valid");
    sim::simulate(&scenario).expect("simulates")
}

/// Bytes of every task of `kind`, in issue order.
fn bytes(report: &SimulationReport, kind: TaskKind) -> Vec<u64> {
    let tasks = &report.timeline().tasks;
    tasks
        .iter()
        .filter(|t| t.kind == kind)
        .map(|t| t.bytes)
        .collect()
}

#[test]
fn reductions_and_gradient_memory_halve() {
    for (distributed, kind) in [
        (false, TaskKind::DataParallelAllReduce),
        (true, TaskKind::DataParallelReduceScatter),
    ] {
        let (fp32, bf16) = (run(distributed, false), run(distributed, true));
        // One reduction per replica's group of the whole model: 4 B then 2 B
        // per parameter.
        let expected_fp32: u64 = bytes(&fp32, kind).iter().sum();
        assert!(expected_fp32 > 0);
        assert_eq!(expected_fp32 % (4 * TOTAL), 0, "{kind:?}");
        assert_eq!(
            bytes(&bf16, kind).iter().sum::<u64>() * 2,
            expected_fp32,
            "{kind:?}"
        );
        assert_eq!(fp32.memory[0].gradient_bytes, 4 * TOTAL);
        assert_eq!(bf16.memory[0].gradient_bytes, 2 * TOTAL);
        // The exposed data-parallel time does not grow.
        let exposed = |r: &SimulationReport| r.metrics.exposed_communication.data_parallel_s;
        assert!(exposed(&bf16) <= exposed(&fp32));
    }
}

#[test]
fn the_optimizer_copies_bf16_gradients_to_fp32() {
    let (fp32, bf16) = (run(true, false), run(true, true));
    // Fused fp32 main gradients: zero 4 + unscale 8 + norm 4 + Adam 28 +
    // copy back 6 = 50 B per parameter; bf16 ones: zero 2 + copy to fp32 6
    // + 8 + 4 + 28 + 6 = 54 B, on the rank's quarter of the parameters.
    let shard = TOTAL / 4;
    assert_eq!(bytes(&fp32, TaskKind::OptimizerStep).len(), 4);
    assert_eq!(bytes(&bf16, TaskKind::OptimizerStep).len(), 4);
    assert!(bytes(&fp32, TaskKind::OptimizerStep)
        .iter()
        .all(|&b| b == 50 * shard));
    assert!(bytes(&bf16, TaskKind::OptimizerStep)
        .iter()
        .all(|&b| b == 54 * shard));
}

#[test]
fn it_needs_bf16_and_unfused_bf16_runs_accumulate_in_fp32_without_it() {
    let mut fp16 = file(false, true);
    fp16.options.precision = Some(Precision::Fp16);
    let error = fp16.resolve().unwrap_err().to_string();
    assert!(
        error.contains("grad_reduce_in_bf16: needs precision bf16 or fp8"),
        "{error}"
    );
    // Unfused under bf16: Megatron forces fp32 main gradients (4 B, and a
    // 10-byte accumulation kernel per microbatch) unless reduced in bf16.
    let unfused = |bf16_reduce: bool| {
        let mut file = file(false, bf16_reduce);
        file.options.gradient_accumulation_fusion = Some(false);
        sim::simulate(&file.resolve().expect("valid")).expect("simulates")
    };
    let (fp32, bf16) = (unfused(false), unfused(true));
    assert_eq!(fp32.memory[0].gradient_bytes, 4 * TOTAL);
    assert_eq!(bf16.memory[0].gradient_bytes, 2 * TOTAL);
    let all_reduced =
        |r: &SimulationReport| -> u64 { bytes(r, TaskKind::DataParallelAllReduce).iter().sum() };
    assert!(all_reduced(&bf16) > 0);
    assert_eq!(all_reduced(&fp32), 2 * all_reduced(&bf16));
}
