//! Megatron-Core's `--tp-comm-overlap` (`sim::cost::exposed_with_tp_overlap`):
//! each sequence-parallel reduce-scatter / all-gather pair is charged only
//! what the GEMMs hiding its halves do not cover, computed here by hand from
//! the kernel and collective costs and the userbuffers configuration's SMs
//! (written out here from the rule in `sim::cost::tp_overlap`'s header); the
//! same bytes move; it needs sequence parallelism.

use models::ops::Step;
use sim::cost::{cost_works, pass_steps, ClosedFormNetwork, KernelCostModel, NetworkModel};
use sim::scenario::{
    Precision, Recompute, Scenario, ScenarioFile, TrainingOptionsFile, UserbuffersConfig,
};
use sim::task_graph::{ComputePass, NodeSpread, Work};
use sim::time::SimDuration;

fn scenario(overlap: bool, precision: Precision) -> Scenario {
    scenario_with(overlap, precision, None)
}

fn scenario_with(
    overlap: bool,
    precision: Precision,
    config: Option<UserbuffersConfig>,
) -> Scenario {
    ScenarioFile {
        model: Some("gpt-22b".into()),
        topology: Some("dgx-h100-superpod".into()),
        tp: Some(8),
        pp: Some(1),
        dp: Some(1),
        microbatch_size: Some(4),
        global_batch: Some(8),
        recompute: Some(Recompute::Selective),
        options: TrainingOptionsFile {
            precision: Some(precision),
            sequence_parallel: Some(true),
            tp_comm_overlap: Some(overlap),
            tp_comm_overlap_config: config,
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap()
}

fn all_reduce_cost(scenario: &Scenario, pass: ComputePass, layers: u32) -> (SimDuration, u64) {
    let network = ClosedFormNetwork::for_scenario(scenario);
    let work = Work::TensorAllReduce {
        pass,
        layers,
        dense_layers: 0,
        first_layer: 0,
        embedding: false,
        head: false,
        group_size: 8,
        nodes: 1,
        segment: sim::task_graph::WHOLE_PASS,
    };
    let cost = cost_works(scenario, &[work], &network)[0];
    (cost.duration, cost.bytes)
}

/// The modeled seconds of each GEMM of one layer's `pass`, by name.
fn gemm_seconds(scenario: &Scenario, pass: ComputePass) -> impl Fn(&str) -> f64 {
    let kernels = KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
        .with_precision(scenario.options.precision);
    let seconds: Vec<(&'static str, f64)> = pass_steps(scenario, pass, 1, false, false)
        .iter()
        .filter_map(|s| match s {
            Step::Kernel(k) => Some((k.name, kernels.kernel_seconds(k))),
            _ => None,
        })
        .collect();
    move |name| {
        seconds
            .iter()
            .find_map(|&(kernel, s)| (kernel == name).then_some(s))
            .unwrap()
    }
}

/// Half of one sequence-parallel all-reduce's seconds: b·s·h bf16 bytes over
/// the 8 tensor ranks of one node.
fn half_all_reduce_seconds(scenario: &Scenario) -> f64 {
    let full = ClosedFormNetwork::for_scenario(scenario).all_reduce(
        4 * 2048 * 6144 * 2,
        8,
        NodeSpread::even(8, 1),
    );
    full.as_seconds() / 2.0
}

/// Each half of a `full` all-reduce beyond the GEMM of that name.
fn by_hand(scenario: &Scenario, pass: ComputePass, pairs: Pairs) -> SimDuration {
    let seconds = gemm_seconds(scenario, pass);
    let half = half_all_reduce_seconds(scenario);
    let config = scenario.options.tp_comm_overlap_config;
    let sms = f64::from(scenario.topology.gpu.sm_count);
    // What one half adds beside the GEMM `gemm` (TE's name `te`).
    let half_beside = |gemm: &str, te: &str| {
        let gemm_s = seconds(gemm);
        let method = config.method(te).unwrap();
        let held = f64::from(method.comm_sms);
        let added = if method.set_sm_margin {
            // The GEMM on the SMs left, all along, beside the communication.
            (gemm_s * sms / (sms - held)).max(half) - gemm_s
        } else {
            // The GEMM at (S − n)/S of its rate while the communication runs.
            half - gemm_s.min(half * (1.0 - held / sms))
        };
        SimDuration::from_seconds_ceil(added)
    };
    pairs
        .iter()
        .map(|((rs, rs_te), (ag, ag_te))| half_beside(rs, rs_te) + half_beside(ag, ag_te))
        .fold(SimDuration::ZERO, |a, b| a + b)
}

/// The hiding GEMMs of each pass's two all-reduces, with TE's names.
type Pairs = [((&'static str, &'static str), (&'static str, &'static str)); 2];
const FORWARD_PAIRS: Pairs = [
    (
        ("output_projection", "proj_fprop"),
        ("mlp_fc1", "fc1_fprop"),
    ),
    (("mlp_fc2", "fc2_fprop"), ("qkv_gemm", "qkv_fprop")),
];
const BACKWARD_PAIRS: Pairs = [
    (
        ("mlp_fc1.wgrad", "fc1_wgrad"),
        ("mlp_fc2.dgrad", "fc2_dgrad"),
    ),
    (
        ("qkv_gemm.wgrad", "qkv_wgrad"),
        ("output_projection.dgrad", "proj_dgrad"),
    ),
];

#[test]
fn each_half_is_charged_beyond_the_gemm_that_hides_it() {
    // TE's defaults (bulk and pipeline sharing 16 SMs), a NeMo recipe with
    // SM margins on proj_fprop and fc2_fprop, and a Megatron-Bridge FP8
    // recipe whose ring exchanges leave one SM.
    let configs = [
        None,
        Some(UserbuffersConfig::NemoH6144Tp2Mbs2Seq2048),
        Some(UserbuffersConfig::BridgeFp8H8192Tp4Mbs1Seq8192),
    ];
    for precision in [Precision::Bf16, Precision::Fp8] {
        for config in configs {
            let plain = scenario(false, precision);
            let overlapped = scenario_with(true, precision, config);
            let forward = by_hand(&overlapped, ComputePass::Forward, FORWARD_PAIRS);
            let backward = by_hand(&overlapped, ComputePass::Backward, BACKWARD_PAIRS);
            for (pass, expected) in [
                (ComputePass::Forward, forward),
                (ComputePass::Backward, backward),
            ] {
                let (with, bytes_with) = all_reduce_cost(&overlapped, pass, 3);
                let (without, bytes_without) = all_reduce_cost(&plain, pass, 3);
                assert_eq!(bytes_with, bytes_without, "the same bytes move");
                assert_eq!(
                    with,
                    SimDuration(3 * expected.0),
                    "{precision:?} {config:?} {pass:?}"
                );
                assert!(
                    with < without,
                    "{precision:?} {config:?} {pass:?}: {with:?} vs {without:?}"
                );
            }
        }
    }
}

#[test]
fn the_sms_userbuffers_take_cost_the_gemms_beside_them() {
    // The same forward with a configuration whose communication holds no SM
    // at all would cost only the halves beyond their GEMMs; every SM the
    // recipe's pipeline reduce-scatters hold (24 and 16, with margins) adds.
    let nemo = scenario_with(
        true,
        Precision::Bf16,
        Some(UserbuffersConfig::NemoH6144Tp2Mbs2Seq2048),
    );
    let defaults = scenario(true, Precision::Bf16);
    let (recipe, _) = all_reduce_cost(&nemo, ComputePass::Forward, 1);
    let (te, _) = all_reduce_cost(&defaults, ComputePass::Forward, 1);
    assert_ne!(recipe, te, "the configuration changes the cost");
    let free_sms = {
        let gemm = gemm_seconds(&nemo, ComputePass::Forward);
        let half = half_all_reduce_seconds(&nemo);
        ["output_projection", "mlp_fc1", "mlp_fc2", "qkv_gemm"]
            .iter()
            .map(|g| SimDuration::from_seconds_ceil((half - gemm(g)).max(0.0)))
            .fold(SimDuration::ZERO, |a, b| a + b)
    };
    assert!(recipe > free_sms, "{recipe:?} vs {free_sms:?}");
}

#[test]
fn a_userbuffers_configuration_needs_tp_comm_overlap() {
    let problems = ScenarioFile {
        model: Some("gpt-22b".into()),
        topology: Some("dgx-h100-superpod".into()),
        tp: Some(8),
        pp: Some(1),
        dp: Some(1),
        options: TrainingOptionsFile {
            sequence_parallel: Some(true),
            tp_comm_overlap_config: Some(UserbuffersConfig::NemoH6144Tp2Mbs2Seq2048),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap_err()
    .to_string();
    assert!(
        problems.contains(
            "tp_comm_overlap_config: only meaningful with tp_comm_overlap (--tp-comm-overlap)"
        ),
        "{problems}"
    );
}

#[test]
fn the_embedding_and_head_all_reduces_are_not_hidden() {
    // The embedding's forward all-reduce follows no linear layer's GEMM.
    let steps = pass_steps(
        &scenario(true, Precision::Bf16),
        ComputePass::Forward,
        0,
        true,
        false,
    );
    assert!(steps
        .iter()
        .any(|s| matches!(s, Step::TensorAllReduce { .. })));
    let network = |s: &Scenario| {
        let network = ClosedFormNetwork::for_scenario(s);
        let work = Work::TensorAllReduce {
            pass: ComputePass::Forward,
            layers: 0,
            dense_layers: 0,
            first_layer: 0,
            embedding: true,
            head: false,
            group_size: 8,
            nodes: 1,
            segment: sim::task_graph::WHOLE_PASS,
        };
        cost_works(s, &[work], &network)[0].duration
    };
    assert_eq!(
        network(&scenario(true, Precision::Bf16)),
        network(&scenario(false, Precision::Bf16))
    );
    assert_eq!(sim::cost::overlapping_gemms("head_gemm"), None);
}

#[test]
fn tp_comm_overlap_needs_sequence_parallelism_and_is_titled() {
    let error = ScenarioFile {
        options: TrainingOptionsFile {
            tp_comm_overlap: Some(true),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("tp_comm_overlap: needs sequence_parallel"),
        "{error}"
    );
    let options = scenario(true, Precision::Bf16).options;
    assert!(options.title_suffix(1).ends_with(" · TP comm overlap"));
    let json = serde_json::to_string(&options).unwrap();
    assert!(json.contains("\"tp_comm_overlap\":true"), "{json}");
    let off = serde_json::to_string(&scenario(false, Precision::Bf16).options).unwrap();
    assert!(
        !off.contains("tp_comm_overlap"),
        "outputs without it are unchanged: {off}"
    );
}

#[test]
fn the_iteration_is_faster_and_explain_rows_add_up() {
    let (plain, overlapped) = (
        scenario(false, Precision::Bf16),
        scenario(true, Precision::Bf16),
    );
    let a = sim::simulate(&plain).unwrap();
    let b = sim::simulate(&overlapped).unwrap();
    assert!(b.metrics.iteration_time_s < a.metrics.iteration_time_s);
    let rows =
        sim::cost::layer_kernel_costs(&overlapped, &sim::placement::Placement::of(&overlapped));
    for pass in [ComputePass::Forward, ComputePass::Backward] {
        let sum: f64 = rows
            .iter()
            .filter(|r| r.pass == pass && r.is_communication)
            .map(|r| r.seconds)
            .sum();
        let (cost, _) = all_reduce_cost(&overlapped, pass, 1);
        assert!((sum - cost.as_seconds()).abs() < 1e-12, "{pass:?}");
    }
}
