//! Token dropping at a capacity factor (`moe.capacity_factor`,
//! `moe.pad_expert_input_to_capacity`; Megatron-Core's
//! `--moe-expert-capacity-factor` and `--moe-pad-expert-input-to-capacity`,
//! `moe_utils.py` `get_capacity` / `apply_router_token_dropping` and the
//! all-to-all dispatcher at core_r0.15.0 575b0fbd) on the routing skew
//! model: the busiest rank capped per expert, or every expert padded to its
//! capacity; checked against hand-computed closed forms.

use models::ops::Step;
use models::CapacityFactor;
use sim::collective::{estimate, CollectiveOp, GroupShape, LinkRates};
use sim::cost::{cost_works, pass_steps, ClosedFormNetwork};
use sim::scenario::{Scenario, ScenarioFile};
use sim::task_graph::{ComputePass, Work};

/// The small mixture of `tests::moe` (4 layers, h = 1024, 4 experts of
/// F = 4096, top-1, s = 4096, one DGX H100, dp = 2, ep = 2) with a capacity
/// factor (None: dropless) and padding or not.
fn small(imbalance: &str, capacity: Option<f64>, pad: bool) -> Scenario {
    let mut model = tests::moe::small_model();
    let moe = model.moe.as_mut().unwrap();
    moe.capacity_factor = capacity.map(CapacityFactor);
    moe.pad_expert_input_to_capacity = pad;
    tests::moe::small_scenario(&model, imbalance)
}

fn forward(scenario: &Scenario) -> Vec<Step> {
    pass_steps(scenario, ComputePass::Forward, 1, false, false)
}

fn kernel_sum(steps: &[Step], name: &str, flops: bool) -> f64 {
    steps
        .iter()
        .filter_map(|step| match step {
            Step::Kernel(kernel) if kernel.name == name => {
                Some(if flops { kernel.flops } else { kernel.bytes })
            }
            _ => None,
        })
        .sum()
}

fn iteration_s(scenario: &Scenario) -> f64 {
    sim::simulate(scenario).unwrap().metrics.iteration_time_s
}

#[test]
fn capacity_is_megatron_s_get_capacity() {
    // ceil(T·k / E · factor), in f64 as Python computes it.
    assert_eq!(models::moe::expert_capacity(4096, 4, 1.0), 1024);
    assert_eq!(models::moe::expert_capacity(4096, 4, 1.25), 1280);
    assert_eq!(models::moe::expert_capacity(4096, 3, 1.0), 1366);
    assert_eq!(models::moe::expert_capacity(8192, 8, 1.1), 1127);
}

#[test]
fn a_capacity_factor_caps_the_skewed_busiest_rank_exactly() {
    // skew:8 over 4 experts: shares 8/15, 4/15, 2/15, 1/15 of T·k = 4096
    // copies, so a rank sends 2184.5, 1092.3, 546.1, 273.1 copies. Dropless
    // the busiest rank (experts 0 and 1) receives ⌈2 · 3276.8⌉ = 6554.
    let dropless = small("skew:8", None, false);
    let routing = |s: &Scenario| s.experts.clone().unwrap();
    assert_eq!(routing(&dropless).busiest_rank_tokens(4096, 1), 6554);
    // Factor 1: C = 1024 caps experts 0 and 1: 2 · (1024 + 1024) = 4096,
    // the uniform routing's; the rank keeps 1024 + 1024 + 546.13 + 273.07
    // = 2867.2 → 2868 of its own 4096 copies.
    let capped = small("skew:8", Some(1.0), false);
    let capacity = routing(&capped).capacity(4096, 1).unwrap();
    assert_eq!(capacity.per_expert, 1024);
    assert_eq!(capacity.busiest_rank_tokens, 4096);
    assert_eq!(capacity.kept_copies, 2868);
    // Factor 1.5: C = 1536 caps expert 0 only: 2 · (1536 + 4096·4/15) =
    // 5256.53 → 5257.
    let loose = small("skew:8", Some(1.5), false);
    assert_eq!(routing(&loose).busiest_rank_tokens(4096, 1), 5257);
    // The busiest rank's grouped fc1 and all-to-alls follow: 2 local
    // experts of ⌈R/2⌉ tokens, 2F × h.
    let fc1 = |s: &Scenario| kernel_sum(&forward(s), "expert_fc1", true);
    assert_eq!(fc1(&dropless), 2.0 * 2.0 * 3277.0 * 8192.0 * 1024.0);
    assert_eq!(fc1(&capped), 2.0 * 2.0 * 2048.0 * 8192.0 * 1024.0);
    assert_eq!(fc1(&loose), 2.0 * 2.0 * 2629.0 * 8192.0 * 1024.0);
    let network = ClosedFormNetwork::for_scenario(&capped);
    let (_, graph) = sim::build_graph(&capped);
    let costs = cost_works(&capped, graph.works(), &network);
    let rates = LinkRates::from(&capped.topology, &capped.profile).with_nccl(capped.stack.nccl);
    let one = estimate(
        CollectiveOp::AllToAll,
        4096 * 1024 * 2,
        &GroupShape::single_node(2),
        &rates,
        None,
    )
    .duration;
    let backward = tests::moe::backward_all_to_all_work(&graph);
    assert_eq!(costs[backward].duration.as_nanos(), 8 * one.as_nanos());
    // Dropping makes the step shorter, padding to a larger capacity longer;
    // the FLOPs reported stay the model's (the dropless uniform routing's).
    assert!(iteration_s(&capped) < iteration_s(&loose));
    assert!(iteration_s(&loose) < iteration_s(&dropless));
    let flops = |s: &Scenario| {
        let m = sim::simulate(s).unwrap().metrics;
        m.tflops_per_gpu * m.iteration_time_s
    };
    assert!((flops(&capped) - flops(&dropless)).abs() / flops(&dropless) < 1e-9);
}

#[test]
fn padding_makes_every_expert_process_its_capacity_whatever_the_routing() {
    // Factor 1.25: C = 1280; padded, every rank sends E·C = 5120 copies and
    // receives as many: 2 local experts of 2560, skewed or not.
    let uniform = small("uniform", Some(1.25), true);
    let skewed = small("skew:8", Some(1.25), true);
    for scenario in [&uniform, &skewed] {
        let routing = scenario.experts.clone().unwrap();
        assert_eq!(routing.busiest_rank_tokens(4096, 1), 5120);
        assert_eq!(routing.capacity(4096, 1).unwrap().kept_copies, 5120);
        assert_eq!(
            kernel_sum(&forward(scenario), "expert_fc1", true),
            2.0 * 2.0 * 2560.0 * 8192.0 * 1024.0
        );
        // The permute gathers the 5120 padded copies (read and write, bf16).
        assert_eq!(
            kernel_sum(&forward(scenario), "moe_permute", false),
            2.0 * 2.0 * 5120.0 * 1024.0
        );
    }
    assert_eq!(iteration_s(&uniform), iteration_s(&skewed));
    // Padding costs GPU time over the dropless uniform routing (4096
    // copies): the forward's kernels take longer. The step itself is
    // shorter here: padded, the host never waits for the GPU (no
    // synchronization), which saves more than the padding costs.
    let dropless = small("uniform", None, false);
    let forward_ns = |s: &Scenario| -> u64 {
        let network = ClosedFormNetwork::for_scenario(s);
        let (_, graph) = sim::build_graph(s);
        let costs = cost_works(s, graph.works(), &network);
        graph
            .works()
            .iter()
            .zip(&costs)
            .filter(|(work, _)| {
                matches!(
                    work,
                    Work::Compute {
                        pass: ComputePass::Forward,
                        ..
                    }
                )
            })
            .map(|(_, cost)| cost.duration.as_nanos())
            .sum()
    };
    assert!(forward_ns(&uniform) > forward_ns(&dropless));
    assert!(iteration_s(&uniform) < iteration_s(&dropless));
    assert!(iteration_s(&uniform) < iteration_s(&small("uniform", Some(1.25), false)));
}

#[test]
fn the_dispatcher_synchronizes_earlier_when_dropping_and_never_when_padding() {
    let names = |s: &Scenario| {
        forward(s)
            .iter()
            .map(|step| match step {
                Step::Kernel(kernel) => kernel.name,
                Step::HostSync => "sync",
                Step::ExpertAllToAll { .. } => "all_to_all",
                Step::TensorAllReduce { .. } => "all_reduce",
            })
            .filter(|name| {
                ["sync", "moe_capacity_mask", "moe_permute", "all_to_all"].contains(name)
            })
            .collect::<Vec<_>>()
    };
    // Dropless: after the permute ("before_ep_alltoall"); dropping: before
    // it ("before_permutation_1"); padded: no synchronization.
    assert_eq!(
        names(&small("uniform", None, false))[..3],
        ["moe_permute", "sync", "all_to_all"]
    );
    assert_eq!(
        names(&small("uniform", Some(1.0), false))[..4],
        ["moe_capacity_mask", "sync", "moe_permute", "all_to_all"]
    );
    assert_eq!(
        names(&small("uniform", Some(1.0), true))[..3],
        ["moe_capacity_mask", "moe_permute", "all_to_all"]
    );
    assert!(!names(&small("uniform", Some(1.0), true)).contains(&"sync"));
    // The mask's bytes: 15·T·E + 20·C·E without padding (12·T·E padded),
    // its backward 5·T·E.
    let (t, e, c) = (4096.0, 4.0, 1024.0);
    assert_eq!(
        kernel_sum(
            &forward(&small("uniform", Some(1.0), false)),
            "moe_capacity_mask",
            false
        ),
        15.0 * t * e + 20.0 * c * e
    );
    assert_eq!(
        kernel_sum(
            &forward(&small("uniform", Some(1.0), true)),
            "moe_capacity_mask",
            false
        ),
        12.0 * t * e + 20.0 * c * e
    );
    let backward = pass_steps(
        &small("uniform", Some(1.0), false),
        ComputePass::Backward,
        1,
        false,
        false,
    );
    assert_eq!(
        kernel_sum(&backward, "moe_capacity_mask.bwd", false),
        5.0 * t * e
    );
}

#[test]
fn padding_needs_a_capacity_factor() {
    let mut model = models::preset("mixtral-8x7b").unwrap();
    model.moe.as_mut().unwrap().pad_expert_input_to_capacity = true;
    let text = ScenarioFile {
        model: Some(serde_json::to_value(&model).unwrap()),
        ..ScenarioFile::embedded_default()
    }
    .resolve()
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(
        text.contains("moe.pad_expert_input_to_capacity needs moe.capacity_factor"),
        "{text}"
    );
}

#[test]
fn mixtral_presets_are_dropless_as_their_sources_are() {
    // Neither the Hugging Face config.json nor Megatron-LM's Mixtral
    // example (examples/mixtral/train_mixtral_8x7b_distributed.sh at
    // 575b0fbd) sets a capacity factor.
    for name in ["mixtral-8x7b", "mixtral-8x22b"] {
        let moe = models::preset(name).unwrap().moe.unwrap();
        assert_eq!(moe.capacity_factor, None, "{name}");
        assert!(!moe.pad_expert_input_to_capacity, "{name}");
    }
    let imported = models::ModelSpec::resolve(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/fixtures/hf/Mixtral-8x7B-v0.1/config.json"
    ))
    .unwrap();
    assert_eq!(imported.moe.unwrap().capacity_factor, None);
}
