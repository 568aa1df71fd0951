//! Parameters per stage of a mixture of experts with dense layers before its
//! MoE layers (DeepSeek-V3's `first_dense_layers`), by hand.

use super::*;
use crate::degree;

/// DeepSeek-V3 cut to 8 layers: layers 0–2 dense, 3–7 MoE.
fn deepseek_8_layers() -> ModelSpec {
    let mut model = crate::presets::preset("deepseek-v3").unwrap();
    model.layers = 8;
    model
}

fn sharding(p: u32, v: u32, ep: u32) -> Sharding {
    Sharding {
        tensor_parallel: degree(1),
        pipeline_parallel: degree(p),
        chunks: degree(v),
        split: Default::default(),
        map: Default::default(),
        expert_parallel: degree(ep),
        expert_tensor_parallel: degree(1),
    }
}

#[test]
fn each_stage_holds_its_own_dense_and_moe_layers() {
    let model = deepseek_8_layers();
    let ep = 8u64;
    let dense = formulas::layer_parameters(&model);
    let routed = formulas::routed_expert_parameters(&model);
    let moe = formulas::moe_layer_parameters(&model) - routed + routed / ep;
    let (vh, h) = (model.vocab * model.hidden, model.hidden);
    // p = 4: two layers per stage; the embedding on stage 0, the untied
    // output layer and final RMSNorm on stage 3.
    let s = sharding(4, 1, ep as u32);
    assert_eq!(
        (0..4)
            .map(|stage| s.first_layer_of_chunk(8, stage, 0))
            .collect::<Vec<_>>(),
        [0, 2, 4, 6]
    );
    let expected = [2 * dense + vh, dense + moe, 2 * moe, 2 * moe + vh + h];
    for (stage, want) in expected.into_iter().enumerate() {
        assert_eq!(parameters_on_rank(&model, s, stage as u32), want, "{stage}");
        assert_eq!(
            parameters_of_chunk(&model, s, stage as u32, 0),
            want,
            "{stage}"
        );
    }
    let experts: Vec<u64> = (0..4)
        .map(|stage| expert_parameters_of_stage(&model, s, stage))
        .collect();
    assert_eq!(experts, [0, routed / ep, 2 * routed / ep, 2 * routed / ep]);
    // Interleaved, p = 2, v = 2: stage 0 holds virtual stages 0 and 2
    // (layers 0–1 and 4–5), stage 1 virtual stages 1 and 3 (2–3 and 6–7).
    let s = sharding(2, 2, ep as u32);
    assert_eq!(s.first_layer_of_chunk(8, 1, 1), 6);
    assert_eq!(parameters_on_rank(&model, s, 0), 2 * dense + 2 * moe + vh);
    assert_eq!(parameters_on_rank(&model, s, 1), dense + 3 * moe + vh + h);
    // Without expert parallelism the stages hold the whole model once (and
    // the final norm, outside `parameter_count` as outside Eq. 2).
    let s = sharding(4, 1, 1);
    let total: u64 = (0..4)
        .map(|stage| parameters_on_rank(&model, s, stage))
        .sum();
    assert_eq!(total, formulas::parameter_count(&model) + h);
}

#[test]
fn layer_ranges_count_their_dense_layers() {
    let model = deepseek_8_layers();
    assert_eq!(dense_layers_in(&model, 0, 8), 3);
    assert_eq!(dense_layers_in(&model, 2, 2), 1);
    assert_eq!(dense_layers_in(&model, 3, 5), 0);
    assert!(has_dense_and_moe_layers(&model));
    let dense_model = crate::presets::preset("llama3-8b").unwrap();
    assert_eq!(dense_layers_in(&dense_model, 0, 32), 0);
    assert!(!has_dense_and_moe_layers(&dense_model));
    // Layer frequency 2 from layer 1 (the rule `i >= first and i % freq ==
    // 0`): MoE at 2, 4, 6.
    let mut every_other = model.clone();
    let moe = every_other.moe.as_mut().unwrap();
    moe.first_dense_layers = 1;
    moe.layer_frequency = 2;
    assert_eq!(dense_layers_in(&every_other, 0, 8), 5);
    assert_eq!(dense_layers_in(&every_other, 2, 3), 1);
}
