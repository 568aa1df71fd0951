//! Expert tensor parallelism (`--etp`, issue 17): each expert's fc1
//! column-parallel and fc2 row-parallel over the expert tensor group, the
//! dispatched tokens all-gathered over it and the experts' outputs
//! reduce-scattered, the expert-data group t·d·cp/(ep·etp), parameters and
//! optimizer states per rank; checked against hand-computed closed forms
//! (Megatron-Core `parallel_state.py`, `token_dispatcher.py`, `experts.py`
//! at core_r0.15.0 575b0fbd).

use models::ops::{KernelClass, Step};
use sim::collective::{estimate, CollectiveOp, GroupShape};
use sim::cost::{cost_works, pass_steps, ClosedFormNetwork};
use sim::ids::Rank;
use sim::placement::Placement;
use sim::scenario::{Scenario, ScenarioFile};
use sim::task_graph::{ComputePass, Work};
use tests::moe::link_rates as rates;

/// Mixtral 8x7B at s = 4096 on the DGX H100 SuperPOD, t = 1, p = 4, d = 16,
/// ep = 4, etp = 2, bf16: 64 GPUs; the expert-data group is 16/(4·2) = 2.
fn mixtral(etp: u32, distributed: bool) -> ScenarioFile {
    ScenarioFile {
        etp: Some(etp),
        ..tests::moe::mixtral(4, 16, 4, None, distributed)
    }
}

fn resolve(file: ScenarioFile) -> Scenario {
    file.resolve().expect("valid scenario")
}

#[test]
fn expert_groups_are_carved_tp_ep_dp_from_the_stage_s_ranks() {
    // t = 1, etp = 2, ep = 4, d = 16 on 8-GPU nodes: etp groups are pairs of
    // consecutive ranks, ep groups 4 ranks 2 apart in blocks of 8, the
    // expert-data group every 8th rank.
    let scenario = resolve(mixtral(2, false));
    assert_eq!(scenario.layout.expert_tensor_parallel, crate::degree(2));
    assert_eq!(scenario.layout.expert_replicas(), 2);
    let placement = Placement::new(scenario.layout, 8);
    let ranks = |list: &[u32]| list.iter().map(|&r| Rank(r)).collect::<Vec<_>>();
    assert_eq!(placement.expert_tensor_group(0, 3, 0), ranks(&[2, 3]));
    assert_eq!(placement.expert_group(0, 3, 0), ranks(&[1, 3, 5, 7]));
    assert_eq!(placement.expert_group(0, 12, 0), ranks(&[8, 10, 12, 14]));
    assert_eq!(placement.expert_data_group(0, 3, 0), ranks(&[3, 11]));
    // Stage 1 is ranks 16..32.
    assert_eq!(placement.expert_group(1, 0, 0), ranks(&[16, 18, 20, 22]));
}

#[test]
fn experts_split_ep_times_etp_ways_and_their_states_over_the_expert_data_group() {
    let model = models::preset("mixtral-8x7b").unwrap();
    let routed = models::formulas::routed_expert_parameters(&model);
    let layer = models::formulas::moe_layer_parameters(&model);
    let scenario = resolve(mixtral(2, true));
    let report = sim::simulate(&scenario).unwrap();
    // Stage 1 holds 8 layers and nothing else: each rank 2 of the 8 experts,
    // half of each: 8 · 8·3·h·F / (4·2) = 8 · 3·4096·14336.
    let stage = &report.memory[1];
    let dense = 8 * (layer - routed);
    let experts = 8 * 3 * 4096 * 14336;
    assert_eq!(8 * routed / 8, experts);
    assert_eq!(stage.parameters, dense + experts);
    assert_eq!(stage.weight_bytes, 2 * (dense + experts));
    // Distributed optimizer, 12 B per parameter: dense over d = 16, experts
    // over the expert-data group of 2.
    assert_eq!(
        stage.optimizer_state_bytes,
        (12 * dense).div_ceil(16) + (12 * experts).div_ceil(2)
    );
}

#[test]
fn expert_gemms_are_etp_times_taller_and_narrower_with_the_same_flops() {
    let kernels = |etp| {
        let mut file = mixtral(etp, false);
        file.ep = Some(4);
        pass_steps(&resolve(file), ComputePass::Forward, 1, false, false)
            .into_iter()
            .filter_map(|step| match step {
                Step::Kernel(kernel) if kernel.name.starts_with("expert_fc") => Some(kernel),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // T·k = 4096·2 copies per rank, 2 local experts; etp = 2 gathers 2·8192.
    let (h, f) = (4096u64, 14336u64);
    let shapes = |etp| {
        kernels(etp)
            .iter()
            .map(|kernel| match kernel.class {
                KernelClass::Gemm { shape, .. } => (kernel.name, shape.m, shape.n, shape.k),
                _ => panic!("GEMM expected"),
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        shapes(2),
        [
            ("expert_fc1", 8192, 2 * f / 2, h),
            ("expert_fc1", 8192, 2 * f / 2, h),
            ("expert_fc2", 8192, h, f / 2),
            ("expert_fc2", 8192, h, f / 2),
        ]
    );
    assert_eq!(shapes(1)[0], ("expert_fc1", 4096, 2 * f, h));
    let flops = |etp| kernels(etp).iter().map(|k| k.flops).sum::<f64>();
    assert_eq!(flops(2), flops(1));
    // 2 experts × 2·8192·(3F/etp)·h = 2·(T·k)·3·F·h: every copy through
    // its expert's 3·F·h weights once, over the pair.
    assert_eq!(flops(2), 2.0 * 2.0 * 8192.0 * (3 * f / 2 * h) as f64);
    assert_eq!(flops(2), 2.0 * 8192.0 * (3 * f * h) as f64);
}

#[test]
fn the_all_to_alls_carry_their_expert_tensor_all_gathers_and_reduce_scatters() {
    let scenario = resolve(mixtral(2, false));
    let (_, graph) = sim::build_graph(&scenario);
    let network = ClosedFormNetwork::for_scenario(&scenario);
    let costs = cost_works(&scenario, graph.works(), &network);
    // R = T·k = 8192 copies received per rank, h = 4096, bf16: the
    // all-to-all over 4 ranks of one node, then the all-gather of the etp
    // pair's 2·R·h·2 bytes (a reduce-scatter of them before a combine).
    let received = 8192 * 4096 * 2;
    let all_to_all = estimate(
        CollectiveOp::AllToAll,
        received,
        &GroupShape::single_node(4),
        &rates(&scenario),
        None,
    )
    .duration;
    let gather = estimate(
        CollectiveOp::AllGather,
        2 * received,
        &GroupShape::single_node(2),
        &rates(&scenario),
        None,
    )
    .duration;
    // NCCL's tuner costs a reduce-scatter as an all-gather of the same buffer.
    let scatter = estimate(
        CollectiveOp::ReduceScatter,
        2 * received,
        &GroupShape::single_node(2),
        &rates(&scenario),
        None,
    )
    .duration;
    assert_eq!(gather, scatter);
    let backward = tests::moe::backward_all_to_all_work(&graph);
    let Work::ExpertAllToAll {
        group_size,
        nodes,
        expert_tensor_group,
        ..
    } = graph.works()[backward]
    else {
        unreachable!()
    };
    assert_eq!((group_size, nodes, expert_tensor_group), (4, 1, (2, 1)));
    // 8 layers per stage, 2 all-to-alls each, each with its etp collective.
    assert_eq!(
        costs[backward].duration.as_nanos(),
        16 * (all_to_all.as_nanos() + gather.as_nanos())
    );
    assert_eq!(costs[backward].bytes, 16 * (received + 2 * received));
}

#[test]
fn expert_gradients_reduce_over_t_d_cp_over_ep_etp() {
    // Without the distributed optimizer: per stage one all-reduce over 16
    // ranks (dense) and one over 2 (the experts' shards), fp32 main
    // gradients (bf16 training: 4 B).
    let scenario = resolve(mixtral(2, false));
    let (_, graph) = sim::build_graph(&scenario);
    let routed = models::formulas::routed_expert_parameters(&scenario.model);
    let seen: Vec<(u64, u32, u32)> = tests::moe::data_parallel_all_reduces(&graph);
    // Stage 1's expert-data pairs: GPU r and r + 8, on two nodes.
    assert!(seen.contains(&(8 * routed / 8 * 4, 2, 2)), "{seen:?}");
}

#[test]
fn mixtral_with_etp_2_simulates_and_keeps_the_closed_form_activations() {
    use models::memory::RecomputeKind;
    let scenario = resolve(mixtral(2, true));
    let report = sim::simulate(&scenario).expect("simulates");
    let m = &report.metrics;
    assert!(m.iteration_time_s > 0.0 && m.tflops_per_gpu > 0.0);
    assert!(m.exposed_communication.expert_parallel_s > 0.0);
    // The same model FLOPs as etp = 1 with ep = 4 (each rank's share of the
    // experts' work is the same).
    let flat = sim::simulate(&resolve(mixtral(1, true))).unwrap().metrics;
    let flops = |m: &timeline::metrics::Metrics| m.tflops_per_gpu * m.iteration_time_s;
    assert!((flops(m) - flops(&flat)).abs() / flops(&flat) < 1e-9);
    // Per MoE layer beyond the dense formula: R = 8192 received copies keep
    // their output (2h), the etp·R gathered copies their input (2h) and,
    // 1/etp wide, the SwiGLU's fc1 and activation outputs (6F/etp); per
    // token the routing (10k + 2E) in place of the dense MLP's 6·ffn.
    let (r, t, h, f) = (8192.0, 4096.0, 4096.0, 14336.0);
    let delta = sim::memory::moe_activation_delta_bytes(&scenario, RecomputeKind::None);
    assert_eq!(
        delta,
        r * (2.0 * h + 2.0 * 2.0 * h + 6.0 * f) + t * (10.0 * 2.0 + 2.0 * 8.0 - 6.0 * f)
    );
}

#[test]
fn unset_etp_is_tp_as_megatron_core_defaults_it() {
    // Mixtral at t = 2 with sequence parallelism, ep = 4, d = 8: etp = 2,
    // each rank routes its 2048 tokens and its 2 local experts run on the
    // pair's gathered 2·4096 copies.
    let mut file = mixtral(2, false);
    file.etp = None;
    file.tp = Some(2);
    file.dp = Some(8);
    file.options.sequence_parallel = Some(true);
    let scenario = resolve(file);
    assert_eq!(scenario.layout.expert_tensor_parallel, crate::degree(2));
    let fc1 = pass_steps(&scenario, ComputePass::Forward, 1, false, false)
        .into_iter()
        .find_map(|step| match step {
            Step::Kernel(kernel) if kernel.name == "expert_fc1" => Some(kernel),
            _ => None,
        })
        .unwrap();
    let KernelClass::Gemm { shape, .. } = fc1.class else {
        panic!("GEMM expected")
    };
    assert_eq!((shape.m, shape.n, shape.k), (4096, 14336, 4096));
    // The etp pair is the tensor pair: both on one node.
    let (_, graph) = sim::build_graph(&scenario);
    assert!(graph.works().iter().any(|work| matches!(
        work,
        Work::ExpertAllToAll {
            group_size: 4,
            expert_tensor_group: (2, 1),
            ..
        }
    )));
    // The FLOPs reported are the model's whatever t: the same 64 GPUs and
    // tokens at t = 1 report the same total (the uniform routing's copies
    // on each rank's own 2048 tokens, not on b·s).
    let total = |s: &Scenario| {
        let m = sim::simulate(s).unwrap().metrics;
        m.tflops_per_gpu * m.iteration_time_s * s.layout.gpus() as f64
    };
    let flat = resolve(mixtral(1, false));
    assert!(
        (total(&scenario) - total(&flat)).abs() / total(&flat) < 1e-9,
        "{} vs {}",
        total(&scenario),
        total(&flat)
    );
}
