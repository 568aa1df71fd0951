//! What one rank writes to a checkpoint (`sim::checkpoint_size`, issue 35):
//! one copy of the bf16 weights and the optimizer states, dense weights
//! over their d·cp holders and routed experts over their expert-data
//! group, the same however ZeRO shards them in memory; FP8's scaling state
//! but not its cached FP8 weights; ZeRO-Offload's host-side states.

use sim::checkpoint_size::checkpoint_bytes_per_rank;
use sim::scenario::{Precision, ScenarioFile, TrainingOptionsFile};

const TOTAL: u64 = tests::HAND_MODEL_PARAMETERS;
/// bf16 weight 2 + Adam's fp32 master weight and two moments 12.
const BYTES_PER_PARAM: u64 = 14;

fn bytes_of(file: ScenarioFile) -> u64 {
    let scenario = file.resolve().expect("valid scenario");
    let report = sim::simulate(&scenario).expect("simulates");
    checkpoint_bytes_per_rank(&scenario, &report.memory)
}

#[test]
fn routed_experts_are_divided_over_their_expert_data_group_only() {
    // Mixtral 8x7B, t = 1, p = 4, d = 16, ep = 4: 8 layers a stage, each
    // rank 2 of every layer's 8 experts; the expert-data group is
    // t·d/ep = 4 ranks, the dense weights' holders are d = 16.
    let model = models::preset("mixtral-8x7b").unwrap();
    let routed_per_layer = models::formulas::routed_expert_parameters(&model);
    for distributed in [false, true] {
        let file = tests::moe::mixtral(4, 16, 4, None, distributed);
        let scenario = file.clone().resolve().unwrap();
        let report = sim::simulate(&scenario).unwrap();
        let experts = 8 * routed_per_layer / 4;
        let by_hand = report
            .memory
            .iter()
            .map(|stage| {
                let dense = stage.parameters - experts;
                (dense * BYTES_PER_PARAM).div_ceil(16) + (experts * BYTES_PER_PARAM).div_ceil(4)
            })
            .max()
            .unwrap();
        assert_eq!(
            checkpoint_bytes_per_rank(&scenario, &report.memory),
            by_hand,
            "distributed optimizer {distributed}"
        );
        // Dividing the experts by d as well, as dense weights are, writes a
        // quarter of them: 3/16 of their bytes too few on every rank.
        let experts_over_d = report
            .memory
            .iter()
            .map(|stage| (stage.parameters * BYTES_PER_PARAM).div_ceil(16))
            .max()
            .unwrap();
        let missing = experts * BYTES_PER_PARAM * 3 / 16;
        assert!(
            by_hand.abs_diff(experts_over_d + missing) <= 1,
            "{by_hand} {experts_over_d}"
        );
    }
}

#[test]
fn fp8_checkpoints_its_scaling_state_but_not_its_cached_fp8_weights() {
    let file = |precision| ScenarioFile {
        topology: Some("dgx-h100-superpod".into()),
        ..tests::hand_model_file(
            1,
            1,
            4,
            TrainingOptionsFile {
                precision: Some(precision),
                ..TrainingOptionsFile::default()
            },
        )
    };
    // Per layer: 4 linear modules × 5 scaled tensors (3 forward, 2
    // backward) × (1024 amax history + scale + inverse scale) × 4 B.
    let scaling_per_layer = 4 * 5 * (1024 + 2) * 4;
    let bf16 = bytes_of(file(Precision::Bf16));
    let fp8 = bytes_of(file(Precision::Fp8));
    assert_eq!(bf16, (TOTAL * BYTES_PER_PARAM).div_ceil(4));
    assert_eq!(
        fp8,
        (TOTAL * BYTES_PER_PARAM + 4 * scaling_per_layer).div_ceil(4)
    );
}

#[test]
fn zero_offload_s_host_side_states_are_saved_as_well() {
    let options = |offload| TrainingOptionsFile {
        zero_offload: Some(offload),
        zero_stage: if offload { None } else { Some(1) },
        ..TrainingOptionsFile::default()
    };
    let on_gpu = bytes_of(tests::hand_model_file(1, 1, 4, options(false)));
    let offloaded = bytes_of(tests::hand_model_file(1, 1, 4, options(true)));
    assert_eq!(on_gpu, (TOTAL * BYTES_PER_PARAM).div_ceil(4));
    assert_eq!(offloaded, on_gpu);
}
