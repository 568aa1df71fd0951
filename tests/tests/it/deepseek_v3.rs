//! DeepSeek-V3 simulated (issue 17): multi-head latent attention, the dense
//! layers before its MoE layers (`first_dense_layers` 3) and its sigmoid
//! router, on the hgx-h800 cluster preset; the published pre-training cost
//! (`validation/deepseek-v3-published.json`) pinned with its error.

use models::ops::{PassSteps, Step};
use sim::cost::{cost_works, pass_steps_of, ClosedFormNetwork};
use sim::scenario::{Precision, Recompute, Scenario, ScenarioFile, TrainingOptionsFile};
use sim::task_graph::{ComputePass, Work};
use studies::validation::run_dev_set;

/// DeepSeek-V3 cut to 8 layers (0–2 dense, 3–7 MoE) on 4 stages of 2
/// layers, 8 data-parallel ranks, ep 8, bf16, on the H800 cluster.
fn deepseek_8_layers() -> Scenario {
    let mut model = models::preset("deepseek-v3").unwrap();
    model.layers = 8;
    ScenarioFile {
        model: Some(serde_json::to_value(&model).unwrap()),
        topology: Some("hgx-h800".into()),
        stack: Some("megatron-core-2024".into()),
        tp: Some(1),
        pp: Some(4),
        dp: Some(8),
        ep: Some(8),
        chunks: Some(1),
        microbatch_size: Some(1),
        global_batch: Some(32),
        recompute: Some(Recompute::None),
        options: TrainingOptionsFile {
            precision: Some(Precision::Bf16),
            distributed_optimizer: Some(true),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    }
    .resolve()
    .expect("DeepSeek-V3's blocks are simulated")
}

#[test]
fn each_stage_runs_its_own_dense_and_moe_layers() {
    let scenario = deepseek_8_layers();
    let (_, graph) = sim::build_graph(&scenario);
    // Forward passes: stage 0 holds layers 0–1 (dense), stage 1 layers 2
    // (dense) and 3, stages 2 and 3 MoE layers only.
    let mut forwards: Vec<(u32, u32)> = graph
        .works()
        .iter()
        .filter_map(|work| match *work {
            Work::Compute {
                pass: ComputePass::Forward,
                layers,
                dense_layers,
                ..
            } => Some((layers, dense_layers)),
            _ => None,
        })
        .collect();
    forwards.sort_unstable();
    forwards.dedup();
    assert_eq!(forwards, [(2, 0), (2, 1), (2, 2)]);
    // A pass of one dense and one MoE layer is exactly the two layers'
    // kernels: the dense MLP (no router, no experts) and the MoE block.
    let steps =
        |layers, dense| pass_steps_of(&scenario, ComputePass::Forward, layers, dense, false, false);
    let names = |steps: &[Step]| -> Vec<&'static str> {
        steps
            .iter()
            .filter_map(|s| match s {
                Step::Kernel(k) => Some(k.name),
                _ => None,
            })
            .collect()
    };
    let (dense, moe, mixed) = (steps(1, 1), steps(1, 0), steps(2, 1));
    assert!(names(&dense).contains(&"mlp_fc1") && !names(&dense).contains(&"moe_router"));
    assert!(names(&moe).contains(&"moe_router_group_limit"));
    assert!(names(&moe).contains(&"mla_kv_up") && names(&dense).contains(&"mla_kv_up"));
    assert_eq!(mixed, [dense.clone(), moe.clone()].concat());
    // Backward: the MoE layer first, then the dense one.
    let backward = |layers, dense| {
        pass_steps_of(
            &scenario,
            ComputePass::Backward,
            layers,
            dense,
            false,
            false,
        )
    };
    assert_eq!(backward(2, 1), [backward(1, 0), backward(1, 1)].concat());
    // FLOPs per token: the dense layer's h·3·ffn MLP against the MoE
    // layer's router, 8 routed and 1 shared expert of 2048.
    let tokens = 4096.0;
    let (h, f, fe) = (7168.0, 18432.0, 2048.0);
    let mlp_delta = 2.0 * tokens * (3.0 * h * f - (h * 256.0 + 9.0 * 3.0 * h * fe));
    let delta = PassSteps::flops(&dense) - PassSteps::flops(&moe);
    assert!(
        (delta - mlp_delta).abs() / mlp_delta.abs() < 1e-12,
        "{delta} vs {mlp_delta}"
    );
    // All-to-alls: none for dense layers, two per MoE layer forward.
    let network = ClosedFormNetwork::for_scenario(&scenario);
    let all_to_all = |dense_layers| Work::ExpertAllToAll {
        first_layer: 0,
        pass: ComputePass::Forward,
        layers: 2,
        dense_layers,
        embedding: false,
        head: false,
        group_size: 8,
        nodes: 1,
        expert_tensor_group: (1, 1),
        segment: sim::task_graph::WHOLE_PASS,
    };
    let costs = cost_works(
        &scenario,
        &[all_to_all(2), all_to_all(1), all_to_all(0)],
        &network,
    );
    assert_eq!(costs[0].bytes, 0);
    assert_eq!(costs[0].duration.as_nanos(), 0);
    assert_eq!(2 * costs[1].bytes, costs[2].bytes);
    assert_eq!(costs[1].bytes, 2 * 4096 * 8 * 7168 * 2);
}

#[test]
fn parameters_per_stage_hold_their_own_layers_and_the_model_flops_are_formulas() {
    let scenario = deepseek_8_layers();
    let report = sim::simulate(&scenario).expect("simulates");
    let model = &scenario.model;
    let dense = models::formulas::layer_parameters(model);
    let routed = models::formulas::routed_expert_parameters(model);
    let moe = models::formulas::moe_layer_parameters(model) - routed + routed / 8;
    let vh = model.vocab * model.hidden;
    let parameters: Vec<u64> = report.memory.iter().map(|m| m.parameters).collect();
    assert_eq!(
        parameters,
        [
            2 * dense + vh,
            dense + moe,
            2 * moe,
            2 * moe + vh + model.hidden
        ]
    );
    // The kernels' FLOPs over the iteration are `formulas`' per-token
    // training FLOPs (MLA's core at d_qk + d_v, the dense and MoE layers
    // each at their own size) times the batch's tokens.
    let m = &report.metrics;
    let total = m.model_tflops_per_gpu * 1e12 * m.iteration_time_s * scenario.layout.gpus() as f64;
    let expected = models::formulas::training_flops_per_token(model, false) * 32.0 * 4096.0;
    assert!(
        (total - expected).abs() / expected < 1e-6,
        "{total} vs {expected}"
    );
}

#[test]
fn deepseek_v3_on_2048_h800s_is_pinned_against_its_published_cost() {
    let text = std::fs::read_to_string(tests::deepseek_v3_published_path()).unwrap();
    let rows = run_dev_set(&text).unwrap();
    let row = rows
        .iter()
        .find(|row| row.quantity == "tokens_per_s_per_gpu")
        .expect("the case's row");
    assert_eq!(row.published, 1543.2);
    // 1e12 tokens per 180K GPU-hours: 1543.2 tokens/s per GPU.
    assert!((1e12 / (180e3 * 3600.0) - row.published).abs() < 0.05);
    // Pinned, not a target: bf16 where the report trained in FP8 (and
    // dispatched in FP8), DualPipeV for DualPipe. −42.3% with NCCL
    // all-to-alls after each pass; +5.8% since the case runs DeepEP's
    // node-limited dispatch (`moe_dispatcher: deepep`: a token crosses IB
    // ~3.2 times instead of 56/64 of its 8 copies) and DualPipe's
    // overlapped pairs (`pair_overlap`: each all-to-all beside the other
    // half's computation, which loses DeepEP's 20 of 132 SMs meanwhile).
    // Each alone: −16.2% (deepep), −23.0% (pair_overlap with NCCL).
    // +2.4% since GEMMs are priced by tiles and waves at the sustained clock,
    // +2.3% since memory-bound kernels take the lab H100's measured classes,
    // +2.6% since the preset trains without dropout (its config's 0.0).
    let error = row.error_percent.expect("predicted");
    assert!((error - 2.6).abs() < 0.5, "error {error:.2}%: {row:?}");
}
