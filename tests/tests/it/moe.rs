//! Mixtures of experts under expert parallelism (`--ep`, issue 17): the
//! all-to-all tasks, the split of parameters, gradients and optimizer states
//! between the dense (dp·cp) and expert (dp·cp/ep) groups, the routing skew
//! gating the step through the busiest rank, and the refusals; checked
//! against hand-computed closed forms.

use models::ops::Step;
use sim::collective::{estimate, CollectiveOp, GroupShape};
use sim::cost::{cost_works, pass_steps, ClosedFormNetwork};
use sim::scenario::{Precision, Recompute, Scenario, ScenarioFile, TrainingOptionsFile};
use sim::task::TaskKind;
use sim::task_graph::ComputePass;
use tests::moe::{link_rates as rates, mixtral, small_model, small_scenario};

fn small(imbalance: &str) -> Scenario {
    small_scenario(&small_model(), imbalance)
}

fn resolve(file: ScenarioFile) -> Scenario {
    file.resolve().expect("valid scenario")
}

fn problems(file: ScenarioFile) -> String {
    file.resolve().map(|_| ()).unwrap_err().to_string()
}

#[test]
fn mixtral_with_ep_8_simulates_and_its_all_to_alls_are_the_closed_form() {
    let scenario = resolve(mixtral(4, 16, 8, None, true));
    let report = sim::simulate(&scenario).expect("simulates");
    let m = &report.metrics;
    assert!(m.iteration_time_s > 0.0 && m.tflops_per_gpu > 0.0);
    assert!(m.exposed_communication.expert_parallel_s > 0.0);
    // 8 layers per stage; a forward has 2 all-to-alls per layer, each the
    // busiest rank's T·k·h·2 = 4096·2·4096·2 bytes over 8 ranks in one node.
    let bytes = 4096 * 2 * 4096 * 2;
    let one = estimate(
        CollectiveOp::AllToAll,
        bytes,
        &GroupShape::single_node(8),
        &rates(&scenario),
        None,
    )
    .duration;
    let forward = report
        .timeline()
        .tasks
        .iter()
        .find(|task| task.kind == TaskKind::ExpertAllToAll)
        .expect("all-to-all tasks are in the timeline");
    // The host lane cuts a forward at each MoE layer's host synchronization:
    // a segment holds one layer's dispatch and combine.
    assert_eq!(forward.end_ns - forward.start_ns, 2 * one.as_nanos());
    // A backward's 16 in one task.
    assert!(report
        .timeline()
        .tasks
        .iter()
        .any(|task| task.kind == TaskKind::ExpertAllToAll
            && task.end_ns - task.start_ns == 16 * one.as_nanos()));
    // A forward: one task per segment after the first (8), a backward one;
    // 4 microbatches, 4 stages, 16 replicas.
    let count = report
        .timeline()
        .tasks
        .iter()
        .filter(|task| task.kind == TaskKind::ExpertAllToAll)
        .count();
    assert_eq!(count, (8 + 1) * 4 * 4 * 16);
}

#[test]
fn experts_split_over_ep_and_their_states_over_the_expert_data_group() {
    let model = models::preset("mixtral-8x7b").unwrap();
    let routed_per_layer = models::formulas::routed_expert_parameters(&model);
    // 8 experts × 3·h·F (SwiGLU, no bias).
    assert_eq!(routed_per_layer, 8 * 3 * 4096 * 14336);
    let layer = models::formulas::moe_layer_parameters(&model);
    for ep in [1u32, 2, 8] {
        let scenario = resolve(mixtral(4, 16, ep, None, true));
        let report = sim::simulate(&scenario).unwrap();
        // Stage 1 holds 8 layers and nothing else.
        let stage = &report.memory[1];
        let dense = 8 * (layer - routed_per_layer);
        let experts = 8 * routed_per_layer / ep as u64;
        assert_eq!(stage.parameters, dense + experts, "ep {ep}");
        assert_eq!(stage.weight_bytes, 2 * (dense + experts));
        // Distributed optimizer: 12 B/param, dense over 16, experts over 16/ep.
        assert_eq!(
            stage.optimizer_state_bytes,
            (12 * dense).div_ceil(16) + (12 * experts).div_ceil(16 / ep as u64),
            "ep {ep}"
        );
    }
}

#[test]
fn dense_gradients_reduce_over_dp_and_expert_gradients_over_dp_over_ep() {
    // Without the distributed optimizer: per stage and tensor index one
    // all-reduce over 16 ranks (dense) and one over 2 (experts), of fp32
    // main gradients (Mixtral trains in bf16, whose main gradients Megatron
    // keeps in fp32: 4 B).
    let scenario = resolve(mixtral(4, 16, 8, None, false));
    let (_, graph) = sim::build_graph(&scenario);
    let model = &scenario.model;
    let routed = models::formulas::routed_expert_parameters(model);
    let layer = models::formulas::moe_layer_parameters(model);
    let mut seen: Vec<(u64, u32, u32)> = tests::moe::data_parallel_all_reduces(&graph);
    seen.sort_unstable();
    let stage_1_dense = 8 * (layer - routed) * 4;
    let experts = 8 * routed / 8 * 4;
    // Expert-data groups pair GPU r with GPU r + 8 of the next node.
    assert!(seen.contains(&(experts, 2, 2)), "{seen:?}");
    // Stage 1 is GPUs 16-31: its data group spans two nodes.
    assert!(seen.contains(&(stage_1_dense, 16, 2)), "{seen:?}");
}

fn expert_fc1_flops(scenario: &Scenario) -> f64 {
    pass_steps(scenario, ComputePass::Forward, 1, false, false)
        .iter()
        .filter_map(|step| match step {
            Step::Kernel(kernel) if kernel.name == "expert_fc1" => Some(kernel.flops),
            _ => None,
        })
        .sum()
}

#[test]
fn a_skewed_routing_gates_the_step_by_the_busiest_rank_exactly() {
    let uniform = small("uniform");
    let skewed = small("skew:8");
    // skew:8 over 4 experts: shares ∝ 1, 1/2, 1/4, 1/8 (8^(−e/3)); rank 0
    // holds experts 0 and 1: (1 + 1/2) / (15/8) = 0.8 of the copies, so
    // 2 × 0.8 = 1.6 times the mean; T·k = 4096 → R = ⌈6553.6⌉ = 6554 copies.
    let routing = skewed.experts.as_ref().unwrap();
    assert!((routing.busiest_rank_load - 1.6).abs() < 1e-12);
    assert_eq!(routing.busiest_rank, 0);
    assert_eq!(routing.busiest_rank_tokens(4096, 1), 6554);
    // Its grouped fc1: 2 local experts of 6554/2 = 3277 tokens, 2F × h.
    assert_eq!(
        expert_fc1_flops(&skewed),
        2.0 * 2.0 * 3277.0 * 8192.0 * 1024.0
    );
    assert_eq!(
        expert_fc1_flops(&uniform),
        2.0 * 2.0 * 2048.0 * 8192.0 * 1024.0
    );
    // Its all-to-alls: 4 layers × 2 of 6554·1024·2 bytes over 2 ranks of a
    // node (a backward's: its forward is cut at the host synchronizations).
    let network = ClosedFormNetwork::for_scenario(&skewed);
    let (_, graph) = sim::build_graph(&skewed);
    let costs = cost_works(&skewed, graph.works(), &network);
    let one = estimate(
        CollectiveOp::AllToAll,
        6554 * 1024 * 2,
        &GroupShape::single_node(2),
        &rates(&skewed),
        None,
    )
    .duration;
    let backward = tests::moe::backward_all_to_all_work(&graph);
    assert_eq!(costs[backward].duration.as_nanos(), one.as_nanos() * 8);
    assert_eq!(costs[backward].bytes, 8 * 6554 * 1024 * 2);
    // The step is longer, yet the FLOPs reported are the model's (uniform).
    let fast = sim::simulate(&uniform).unwrap().metrics;
    let slow = sim::simulate(&skewed).unwrap().metrics;
    assert!(slow.iteration_time_s > fast.iteration_time_s);
    let flops = |m: &timeline::metrics::Metrics| m.tflops_per_gpu * m.iteration_time_s;
    assert!((flops(&slow) - flops(&fast)).abs() / flops(&fast) < 1e-9);
}

#[test]
fn a_histogram_file_routes_by_its_counts() {
    let dir = std::env::temp_dir().join(format!("clustersim-moe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("histogram.txt");
    std::fs::write(&path, "10, 30\n20 40\n").unwrap();
    let scenario = small(path.to_str().unwrap());
    let routing = scenario.experts.as_ref().unwrap();
    // Ranks hold (10 + 30) and (20 + 40) of 100: rank 1, 1.2 × the mean.
    assert_eq!(routing.busiest_rank, 1);
    assert!((routing.busiest_rank_load - 1.2).abs() < 1e-12);
    std::fs::write(&path, "1 2 3").unwrap();
    let mut file = ScenarioFile {
        expert_imbalance: Some(path.to_str().unwrap().into()),
        ..mixtral(1, 8, 8, None, false)
    };
    file.global_batch = Some(8);
    let text = problems(file);
    assert!(
        text.contains("expert_imbalance:")
            && text.contains("has 3 counts; the model has 8 experts"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn what_is_not_built_is_refused_by_name() {
    let text = problems(mixtral(4, 16, 3, None, false));
    assert!(
        text.contains("ep: the 8 experts must split evenly over ep = 3 ranks"),
        "{text}"
    );
    assert!(
        text.contains("ep: expert-parallel groups are carved out of the dp × cp = 16"),
        "{text}"
    );
    let text = problems(ScenarioFile {
        tp: Some(2),
        ..mixtral(4, 8, 8, None, false)
    });
    assert!(
        text.contains(
            "sequence_parallel: tensor parallelism (2) in a mixture-of-experts model needs sequence parallelism"
        ),
        "{text}"
    );
    // Expert tensor parallelism is built; what it cannot split, and what
    // is not built with it, is refused by name.
    let text = problems(ScenarioFile {
        etp: Some(3),
        ..mixtral(4, 16, 8, None, false)
    });
    assert!(
        text.contains("etp: the experts' inner size 14336 must split evenly over etp = 3 ranks")
            && text.contains("which ep × etp = 8 × 3 must divide"),
        "{text}"
    );
    let mut fp8 = mixtral(4, 8, 4, None, false);
    fp8.etp = Some(2);
    fp8.options.precision = Some(Precision::Fp8);
    fp8.options.network_contention = Some(true);
    let text = problems(fp8);
    assert!(
        text.contains("precision: fp8 with expert tensor parallelism (etp = 2) is not simulated yet")
            && text.contains(
                "network_contention: expert tensor parallelism (etp = 2) under contention is not simulated yet"
            ),
        "{text}"
    );
    // Shared experts under tensor parallelism and biased experts stay refused.
    let text = problems(ScenarioFile {
        model: Some("deepseek-v3".into()),
        tp: Some(2),
        ..mixtral(4, 16, 8, None, false)
    });
    assert!(
        text.contains("tp: tensor parallelism (2) with shared experts is not simulated yet"),
        "{text}"
    );
    let mut biased = models::preset("mixtral-8x7b").unwrap();
    biased.bias = true;
    let text = problems(ScenarioFile {
        model: Some(serde_json::to_value(&biased).unwrap()),
        ..mixtral(4, 16, 8, None, false)
    });
    assert!(
        text.contains("model: experts with biases are not simulated yet (issue 17)"),
        "{text}"
    );
    let text = problems(ScenarioFile {
        options: TrainingOptionsFile {
            zero_stage: Some(3),
            ..TrainingOptionsFile::default()
        },
        ..mixtral(4, 16, 8, None, false)
    });
    assert!(
        text.contains("zero_stage: ZeRO-2/3 with mixture-of-experts layers is not simulated yet"),
        "{text}"
    );
    let text = problems(mixtral(4, 16, 8, Some("skew:0.5"), false));
    assert!(
        text.contains("expert_imbalance: 'skew:0.5': skew:X needs a finite X ≥ 1"),
        "{text}"
    );
    // A dense model has no experts to spread.
    let text = problems(ScenarioFile {
        model: Some("llama3-8b".into()),
        ..mixtral(4, 16, 8, None, false)
    });
    assert!(text.contains("ep: 'llama3-8b' has no experts"), "{text}");
    // DeepSeek-V3 (latent attention, first dense layers) is simulated: only
    // its 61 layers on 4 stages are refused here.
    let text = problems(ScenarioFile {
        model: Some("deepseek-v3".into()),
        ..mixtral(4, 16, 8, None, false)
    });
    assert!(!text.contains("model:"), "{text}");
    assert!(text.contains("pp: layers (61)"), "{text}");
}

#[test]
fn under_contention_a_lone_all_to_all_runs_as_flows_in_its_closed_form_time() {
    // dp = 2, ep = 2 in one node: rank 0 sends to rank 1 and rank 1 to rank 0
    // over distinct NVSwitch ports, so nothing is shared and each task takes
    // its closed-form time to within the rounding of its two parts.
    let closed = small("uniform");
    let mut file = ScenarioFile {
        options: TrainingOptionsFile {
            precision: Some(Precision::Bf16),
            network_contention: Some(true),
            ..TrainingOptionsFile::default()
        },
        model: Some(serde_json::to_value(&closed.model).unwrap()),
        stack: Some("megatron-2021".into()),
        ..ScenarioFile::default()
    };
    file.topology = Some("dgx-h100-superpod".into());
    file.tp = Some(1);
    file.pp = Some(1);
    file.dp = Some(2);
    file.ep = Some(2);
    file.global_batch = Some(2);
    file.recompute = Some(Recompute::None);
    let flows = resolve(file);
    let durations = |scenario: &Scenario| -> Vec<u64> {
        sim::simulate(scenario)
            .unwrap()
            .timeline()
            .tasks
            .iter()
            .filter(|task| task.kind == TaskKind::ExpertAllToAll)
            .map(|task| task.end_ns - task.start_ns)
            .collect()
    };
    let (a, b) = (durations(&closed), durations(&flows));
    assert_eq!(a.len(), b.len());
    assert!(!a.is_empty());
    for (x, y) in a.iter().zip(&b) {
        assert!(x.abs_diff(*y) <= 2, "{a:?} vs {b:?}");
    }
}

#[test]
fn moe_activations_and_dispatch_buffers_follow_their_closed_form() {
    use models::memory::RecomputeKind;
    // small(): T = 4096, h = 1024, E = 4, k = 1, F = 4096 (the dense
    // ffn_hidden too, so the dense formula's MLP term is 6·4096 per token).
    let uniform = small("uniform");
    let skewed = small("skew:8");
    // Uniform: R = 4096 copies × (4h + 6F) + T × (10k + 2E − 6·ffn).
    let delta = sim::memory::moe_activation_delta_bytes(&uniform, RecomputeKind::None);
    assert_eq!(delta, 4096.0 * 28672.0 + 4096.0 * (10.0 + 8.0 - 24576.0));
    assert_eq!(delta, 16_850_944.0);
    // Nothing under full recompute: only the layer's input is kept.
    assert_eq!(
        sim::memory::moe_activation_delta_bytes(&uniform, RecomputeKind::Full),
        0.0
    );
    // The skewed busiest rank keeps 6554 − 4096 = 2458 more copies in each
    // of 4 layers (one microbatch in flight at p = 1) and its two
    // all-to-all buffers grow by 2458 · h · 2 B each.
    let memory = |scenario: &Scenario| sim::simulate(scenario).unwrap().memory[0].activation_bytes;
    assert_eq!(
        memory(&skewed) - memory(&uniform),
        2458 * 28672 * 4 + 2 * 2458 * 1024 * 2
    );
}

#[test]
fn unfused_gradient_accumulation_covers_the_rank_s_experts() {
    // megatron-2021 accumulates the gradients per tensor after each
    // backward into fp32 main gradients under bf16: 2 B read, 4 + 4 read and
    // written, 10 B per parameter of a Mixtral layer with E/ep experts.
    for ep in [1u32, 8] {
        let scenario = resolve(mixtral(4, 16, ep, None, false));
        let bytes: f64 = pass_steps(&scenario, ComputePass::Backward, 1, false, false)
            .iter()
            .filter_map(|step| match step {
                Step::Kernel(kernel) if kernel.name.ends_with(".grad_accumulate") => {
                    Some(kernel.bytes)
                }
                _ => None,
            })
            .sum();
        let params =
            models::sharding::layer_parameters_on_rank(&scenario.model, scenario.layout.sharding());
        assert_eq!(bytes, 10.0 * params as f64, "ep {ep}");
    }
}
