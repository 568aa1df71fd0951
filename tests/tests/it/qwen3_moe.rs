//! Qwen3-MoE as simulated (issue 17): FP8 in the experts' grouped GEMMs
//! with their cast-transposes and a bf16 router; the distributed
//! optimizer's parameter all-gathers split into dense (over d·cp) and
//! expert (over d·cp/ep) parameters, overlapped or not; tensor parallelism
//! with sequence parallelism and expert tensor parallelism 1 (each tensor
//! rank routes its own s/t tokens over an expert-parallel group of
//! consecutive ranks); checked against hand-computed closed forms.

use models::ops::{KernelClass, Step};
use sim::cost::pass_steps;
use sim::scenario::{Precision, Recompute, Scenario, ScenarioFile, TrainingOptionsFile};
use sim::task_graph::{ComputePass, Work};

/// Qwen3-30B-A3B at s = 4096 on the DGX H100 SuperPOD, t = 1, p = 2, d = 16.
fn qwen3(ep: u32, precision: Precision, overlap_param_gather: bool) -> ScenarioFile {
    ScenarioFile {
        model: Some("qwen3-30b-a3b".into()),
        seq_len: Some(4096),
        topology: Some("dgx-h100-superpod".into()),
        tp: Some(1),
        pp: Some(2),
        dp: Some(16),
        ep: Some(ep),
        chunks: Some(1),
        microbatch_size: Some(1),
        global_batch: Some(32),
        recompute: Some(Recompute::None),
        options: TrainingOptionsFile {
            precision: Some(precision),
            distributed_optimizer: Some(true),
            overlap_grad_reduce: Some(overlap_param_gather),
            overlap_param_gather: Some(overlap_param_gather),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    }
}

fn resolve(file: ScenarioFile) -> Scenario {
    file.resolve().expect("valid scenario")
}

fn kernels(steps: &[Step]) -> Vec<KernelRow> {
    steps
        .iter()
        .filter_map(|step| match step {
            Step::Kernel(k) => Some((k.name, k.class, k.flops, k.bytes)),
            _ => None,
        })
        .collect()
}

type KernelRow = (&'static str, KernelClass, f64, f64);

fn find(steps: &[KernelRow], name: &str) -> KernelRow {
    *steps
        .iter()
        .find(|k| k.0 == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn under_fp8_the_experts_grouped_gemms_are_fp8_and_the_router_is_not() {
    let scenario = resolve(qwen3(8, Precision::Fp8, false));
    let forward = kernels(&pass_steps(
        &scenario,
        ComputePass::Forward,
        1,
        false,
        false,
    ));
    let backward = kernels(&pass_steps(
        &scenario,
        ComputePass::Backward,
        1,
        false,
        false,
    ));
    // 128 experts over ep = 8: 16 local; uniform routing brings the rank
    // T·k = 4096·8 = 32768 token copies, 2048 per local expert.
    let (local, m, h, f) = (16u64, 2048u64, 2048u64, 768u64);
    let fc1 = find(&forward, "expert_fc1");
    let KernelClass::Fp8Gemm { shape, .. } = fc1.1 else {
        panic!("expert_fc1 is not FP8: {:?}", fc1.1)
    };
    // One GEMM per local expert (TE GroupedLinear), each with its own cast.
    assert_eq!((shape.batch, shape.m, shape.n, shape.k), (1, m, 2 * f, h));
    let count = |name: &str| forward.iter().filter(|k| k.0 == name).count() as u64;
    assert_eq!(count("expert_fc1"), local);
    assert_eq!(count("expert_fc1.cast_transpose"), local);
    assert_eq!(fc1.2, 2.0 * (m * 2 * f * h) as f64);
    // FP8 inputs (1 B), bf16 output.
    assert_eq!(fc1.3, (m * h + h * 2 * f + 2 * m * 2 * f) as f64);
    // Each expert GEMM is preceded by its input's cast-transpose (4 B/element).
    assert_eq!(
        find(&forward, "expert_fc1.cast_transpose").3,
        4.0 * (m * h) as f64
    );
    assert_eq!(
        find(&forward, "expert_fc2.cast_transpose").3,
        4.0 * (m * f) as f64
    );
    assert_eq!(
        find(&backward, "expert_fc2.dgrad.cast_transpose").3,
        4.0 * (m * h) as f64
    );
    for name in ["expert_fc2", "expert_fc2.dgrad", "expert_fc1.wgrad"] {
        let (steps, name) = if name == "expert_fc2" {
            (&forward, name)
        } else {
            (&backward, name)
        };
        assert!(
            matches!(find(steps, name).1, KernelClass::Fp8Gemm { .. }),
            "{name}"
        );
    }
    // The router stays a bf16 GEMM (Megatron-Core's router.py).
    assert!(matches!(
        find(&forward, "moe_router").1,
        KernelClass::Gemm { .. }
    ));
    assert!(matches!(
        find(&backward, "moe_router.wgrad").1,
        KernelClass::Gemm { .. }
    ));
    // Per-iteration weight casts cover the rank's 16 experts.
    let casts = models::fp8::weight_cast_steps(&scenario.model, crate::nz(1), crate::nz(8), 1);
    let bytes: Vec<f64> = casts
        .iter()
        .map(|s| match s {
            Step::Kernel(k) => k.bytes,
            _ => 0.0,
        })
        .collect();
    let q = 32 * 128;
    let qkv = q + 2 * 4 * 128;
    assert_eq!(
        bytes,
        [
            4.0 * (h * qkv) as f64,
            4.0 * (q * h) as f64,
            4.0 * (local * h * 2 * f) as f64,
            4.0 * (local * f * h) as f64,
        ]
    );
}

/// Every data-parallel all-gather as (bytes, group size), sorted.
fn all_gathers(scenario: &Scenario) -> Vec<(u64, u32)> {
    let (_, graph) = sim::build_graph(scenario);
    let mut seen: Vec<(u64, u32)> = graph
        .tasks()
        .filter(|task| task.kind == sim::task::TaskKind::DataParallelAllGather)
        .filter_map(|task| match *graph.work(task.work) {
            Work::DataParallelAllGather {
                bytes, group_size, ..
            } => Some((bytes, group_size)),
            _ => None,
        })
        .collect();
    seen.sort_unstable();
    seen
}

/// Bytes all-gathered over groups of `size` ranks.
fn gathered_over(gathers: &[(u64, u32)], size: u32) -> u64 {
    gathers
        .iter()
        .filter(|&&(_, group)| group == size)
        .map(|&(bytes, _)| bytes)
        .sum()
}

#[test]
fn parameter_all_gathers_split_dense_over_dp_and_experts_over_dp_over_ep() {
    let scenario = resolve(qwen3(8, Precision::Bf16, false));
    let model = &scenario.model;
    let sharding = scenario.layout.sharding();
    let routed = models::formulas::routed_expert_parameters(model);
    // 48 layers on 2 stages: 24 each; ep = 8 holds 16 of 128 experts.
    let experts = 24 * routed / 8;
    let stage_0 = models::sharding::parameters_on_rank(model, sharding, 0);
    let stage_1 = models::sharding::parameters_on_rank(model, sharding, 1);
    let mut expected = vec![
        ((stage_0 - experts) * 2, 16),
        ((stage_1 - experts) * 2, 16),
        (experts * 2, 2),
        (experts * 2, 2),
    ];
    expected.sort_unstable();
    assert_eq!(all_gathers(&scenario), expected);

    // Overlapped (bucket by bucket before each chunk's first forward): the
    // same bytes, split the same way.
    let overlapped = resolve(qwen3(8, Precision::Bf16, true));
    let gathers = all_gathers(&overlapped);
    assert_eq!(gathered_over(&gathers, 2), 2 * experts * 2, "{gathers:?}");
    assert_eq!(
        gathered_over(&gathers, 16),
        (stage_0 + stage_1 - 2 * experts) * 2,
        "{gathers:?}"
    );
    assert!(
        gathers.iter().all(|&(_, group)| group == 16 || group == 2),
        "{gathers:?}"
    );
    // ep = d: every rank holds its own experts; nothing of them is gathered.
    let gathers = all_gathers(&resolve(qwen3(16, Precision::Bf16, true)));
    assert!(gathers.iter().all(|&(_, group)| group == 16), "{gathers:?}");
    // Both simulate.
    for scenario in [&overlapped, &resolve(qwen3(8, Precision::Fp8, true))] {
        let report = sim::simulate(scenario).expect("simulates");
        assert!(report.metrics.iteration_time_s > 0.0);
    }
}

/// Qwen3-30B-A3B at t = 2 with sequence parallelism, etp 1, ep = 8, d = 8:
/// 16 GPUs, expert groups of 8 consecutive ranks (one node each).
fn qwen3_tp2(sequence_parallel: bool, etp: Option<u32>) -> ScenarioFile {
    let mut file = qwen3(8, Precision::Bf16, false);
    file.tp = Some(2);
    file.pp = Some(1);
    file.dp = Some(8);
    file.etp = etp;
    file.options.sequence_parallel = Some(sequence_parallel);
    file
}

#[test]
fn under_tensor_parallelism_each_rank_routes_its_own_tokens_over_consecutive_ranks() {
    let scenario = resolve(qwen3_tp2(true, Some(1)));
    let forward = kernels(&pass_steps(
        &scenario,
        ComputePass::Forward,
        1,
        false,
        false,
    ));
    // s/t = 2048 tokens per rank; 16 local experts receive 2048·8 copies.
    let (tokens, local, h, f, e) = (2048u64, 16u64, 2048u64, 768u64, 128u64);
    let router = find(&forward, "moe_router");
    assert_eq!(router.2, 2.0 * (tokens * e * h) as f64);
    let KernelClass::Gemm { shape, .. } = find(&forward, "expert_fc1").1 else {
        panic!("bf16 expert GEMM expected")
    };
    assert_eq!(
        (shape.batch, shape.m, shape.n, shape.k),
        (1, 1024, 2 * f, h)
    );
    assert_eq!(
        forward.iter().filter(|k| k.0 == "expert_fc1").count() as u64,
        local
    );
    // The attention block keeps its tensor collectives; the MoE block has none.
    let tensor_collectives = |steps: &[Step]| {
        steps
            .iter()
            .filter(|s| matches!(s, Step::TensorAllReduce { .. }))
            .count()
    };
    let layer = models::ops::transformer_layer_with(
        &scenario.model,
        1,
        crate::nz(2),
        models::ops::LayerOptions {
            sequence_parallel: true,
            moe: sim::cost::moe_layer_options(&scenario),
            ..models::ops::LayerOptions::default()
        },
    );
    assert_eq!(tensor_collectives(&layer.forward), 1);
    assert_eq!(tensor_collectives(&layer.backward), 1);
    let (_, graph) = sim::build_graph(&scenario);
    let mut all_to_alls = Vec::new();
    let mut expert_reductions = Vec::new();
    for work in graph.works() {
        match *work {
            Work::ExpertAllToAll {
                group_size, nodes, ..
            } => all_to_alls.push((group_size, nodes)),
            Work::DataParallelReduceScatter {
                bytes,
                group_size: 2,
                ..
            } => expert_reductions.push(bytes),
            _ => {}
        }
    }
    assert!(!all_to_alls.is_empty());
    assert!(all_to_alls.iter().all(|&g| g == (8, 1)), "{all_to_alls:?}");
    // Expert gradients over t·d/ep = 2 ranks (one interned work for both
    // tensor ranks' reduce-scatters): 48 layers × 16 experts at the main
    // gradient's width.
    let routed = models::formulas::routed_expert_parameters(&scenario.model);
    let width = sim::cost::gradients::main_grad_bytes_per_param(
        scenario.options.gradient_accumulation_fusion,
    );
    let bytes = 48 * routed / 8 * width;
    assert_eq!(expert_reductions, vec![bytes]);
    let dispatch = scenario
        .experts
        .as_ref()
        .unwrap()
        .busiest_rank_tokens(tokens, 8);
    assert_eq!(dispatch, tokens * 8);
    assert!(sim::simulate(&scenario).is_ok());
}

#[test]
fn tensor_parallelism_with_experts_needs_sequence_parallelism_and_etp_defaults_to_tp() {
    let text = qwen3_tp2(false, None)
        .resolve()
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("sequence_parallel: tensor parallelism (2) in a mixture-of-experts model needs sequence parallelism"),
        "{text}"
    );
    assert!(!text.contains("etp:"), "{text}");
    // Unset, etp is t (Megatron-Core's default), the same as giving it.
    let default = resolve(qwen3_tp2(true, None));
    assert_eq!(default.layout.expert_tensor_parallel, crate::degree(2));
    assert_eq!(default, resolve(qwen3_tp2(true, Some(2))));
    assert_eq!(
        resolve(qwen3_tp2(true, Some(1)))
            .layout
            .expert_tensor_parallel,
        crate::degree(1)
    );
}
