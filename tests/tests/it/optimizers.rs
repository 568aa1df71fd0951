//! Optimizers (`--optimizer`, issue 36): each one's state bytes per rank
//! under every ZeRO stage, its step's bytes and time, what a checkpoint
//! holds, and what ZeRO-Offload refuses, against hand arithmetic.
//!
//! The hand model (as in `sharded_data_parallel.rs`): GPT block, 4 layers,
//! h = 256, s = 128, vocabulary 5000, tied embeddings: 4,472,320
//! parameters, 17,470 blocks of 256 exactly. t = p = 1, d = 4.

use sim::scenario::{Optimizer, Scenario, ScenarioFile, TrainingOptionsFile};
use sim::SimulationReport;
use timeline::TaskKind;

const TOTAL: u64 = tests::HAND_MODEL_PARAMETERS;
const D: u64 = 4;

fn file(optimizer: Optimizer, zero_stage: u8) -> ScenarioFile {
    let options = TrainingOptionsFile {
        gradient_accumulation_fusion: Some(false),
        zero_stage: Some(zero_stage),
        optimizer: Some(optimizer),
        ..TrainingOptionsFile::default()
    };
    tests::hand_model_file(1, 1, D as u32, options)
}

fn run(optimizer: Optimizer, zero_stage: u8) -> (Scenario, SimulationReport) {
    let scenario = file(optimizer, zero_stage)
        .resolve()
        .expect("valid scenario");
    let report = sim::simulate(&scenario).expect("simulates");
    (scenario, report)
}

/// The hand count of each optimizer's state for all 4,472,320 parameters.
fn whole_state_bytes(optimizer: Optimizer) -> u64 {
    match optimizer {
        // fp32 master weights 4 + two fp32 moments 8.
        Optimizer::Adam | Optimizer::AdamW => 12 * TOTAL,
        // master 4 + one fp32 momentum 4.
        Optimizer::Lion | Optimizer::Sgd => 8 * TOTAL,
        // master 4; the factored second moment is not counted.
        Optimizer::Adafactor => 4 * TOTAL,
        // master 4 + two 1-byte moments, and 17,470 blocks × two fp32 absmax.
        Optimizer::Adam8bit => 6 * TOTAL + 17_470 * 8,
        // master 4 + two fp32 moments 8 + worker_error 4 (server_error,
        // 1/d more, and the rest: `onebit_adam.rs`).
        Optimizer::OneBitAdam => 16 * TOTAL,
        // 1-bit Adam's and the fresh variance, 4 more.
        Optimizer::OneBitLamb => 20 * TOTAL,
    }
}

/// The optimizers ZeRO shards: all but 1-bit Adam and LAMB, which DeepSpeed
/// refuses under ZeRO (`onebit_adam.rs`).
fn shardable() -> impl Iterator<Item = Optimizer> {
    Optimizer::ALL
        .into_iter()
        .filter(|&optimizer| !optimizer.compresses_momentum())
}

#[test]
fn every_zero_stage_shards_each_optimizer_s_states_over_d() {
    for optimizer in shardable() {
        let whole = whole_state_bytes(optimizer);
        for stage in 0..=3u8 {
            let (_, report) = run(optimizer, stage);
            let expected = if stage == 0 { whole } else { whole.div_ceil(D) };
            assert_eq!(
                report.memory[0].optimizer_state_bytes, expected,
                "{optimizer:?} ZeRO-{stage}"
            );
        }
    }
    // 26,833,920 + 139,760 bytes of 8-bit Adam against Adam's 53,667,840.
    assert_eq!(whole_state_bytes(Optimizer::Adam8bit), 26_973_680);
}

#[test]
fn each_step_moves_the_wrapper_s_bytes_and_its_own_update() {
    // Unfused Megatron wrapper: zero 2, copy 6, unscale 8, norm 4, copy back
    // 6 = 26 B per parameter around the update.
    let update = |o: Optimizer| -> u64 {
        match o {
            Optimizer::Adam | Optimizer::AdamW => 28,
            Optimizer::Lion | Optimizer::Sgd => 20,
            Optimizer::Adafactor => 68,
            // 16, plus 16/256 added below.
            Optimizer::Adam8bit => 16,
            Optimizer::OneBitAdam => 88,
            Optimizer::OneBitLamb => 220,
        }
    };
    let mut seconds = Vec::new();
    for optimizer in shardable() {
        let (_, report) = run(optimizer, 1);
        let steps: Vec<_> = report
            .timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::OptimizerStep)
            .collect();
        assert_eq!(steps.len(), D as usize, "{optimizer:?}");
        let params = TOTAL / D;
        let mut bytes = params * (26 + update(optimizer));
        if optimizer == Optimizer::Adam8bit {
            // 1,118,080 × 16 / 256 = 69,880 exactly.
            bytes += params * 16 / 256;
        }
        for step in &steps {
            assert_eq!(step.bytes, bytes, "{optimizer:?}");
        }
        seconds.push((optimizer, steps[0].end_ns - steps[0].start_ns));
    }
    let of = |o: Optimizer| seconds.iter().find(|(x, _)| *x == o).unwrap().1;
    // Same kernels, same time; more bytes, more time.
    assert_eq!(of(Optimizer::Adam), of(Optimizer::AdamW));
    assert_eq!(of(Optimizer::Lion), of(Optimizer::Sgd));
    assert!(
        of(Optimizer::Adafactor) > of(Optimizer::Adam),
        "{seconds:?}"
    );
    assert!(of(Optimizer::Adam8bit) < of(Optimizer::Adam), "{seconds:?}");
}

#[test]
fn a_checkpoint_holds_one_copy_of_the_optimizer_s_states() {
    for optimizer in [Optimizer::Adam, Optimizer::Adam8bit, Optimizer::Adafactor] {
        let (scenario, report) = run(optimizer, 1);
        // One copy of the fp16 weights over the 4 replicas, and of the
        // states the distributed optimizer already split 4 ways.
        let expected = 2 * TOTAL / D + whole_state_bytes(optimizer).div_ceil(D);
        assert_eq!(
            sim::checkpoint_size::checkpoint_bytes_per_rank(&scenario, &report.memory),
            expected,
            "{optimizer:?}"
        );
    }
}

#[test]
fn zero_offload_refuses_an_optimizer_it_cannot_price() {
    let offloaded = ScenarioFile {
        options: TrainingOptionsFile {
            zero_stage: None,
            zero_offload: Some(true),
            ..file(Optimizer::Lion, 0).options
        },
        ..file(Optimizer::Lion, 0)
    };
    let error = offloaded.resolve().unwrap_err().to_string();
    assert!(error.contains("optimizer"), "{error}");
    assert!(
        error.contains("lion is not priced under zero_offload"),
        "{error}"
    );
    // Adam under ZeRO-Offload still resolves.
    let adam = ScenarioFile {
        options: TrainingOptionsFile {
            optimizer: Some(Optimizer::AdamW),
            ..offloaded.options.clone()
        },
        ..offloaded.clone()
    };
    assert!(adam.resolve().is_ok());
}
