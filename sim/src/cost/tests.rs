//! Unit tests of the cost model (`super`).

use super::*;
use models::ops;
use scenario::{Recompute, ScenarioFile};

fn scenario(recompute: Recompute, sequence_parallel: bool) -> Scenario {
    ScenarioFile {
        recompute: Some(recompute),
        options: scenario::TrainingOptionsFile {
            sequence_parallel: Some(sequence_parallel),
            ..Default::default()
        },
        ..ScenarioFile::embedded_default()
    }
    .resolve()
    .unwrap()
}

#[test]
fn selective_recompute_reruns_only_the_attention_core_without_all_reduces() {
    let steps = pass_steps(
        &scenario(Recompute::Selective, true),
        ComputePass::Recompute,
        2,
        false,
        false,
    );
    let names: Vec<&str> = steps
        .iter()
        .map(|step| match step {
            Step::Kernel(kernel) => kernel.name,
            Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => {
                "all_reduce"
            }
        })
        .collect();
    // GPT-3 has multi-head attention: no K/V expansion.
    let core = [
        "attention_scores",
        "softmax",
        "attention_dropout",
        "attention_over_values",
    ];
    assert_eq!(names, [core, core].concat());
    let full = pass_steps(
        &scenario(Recompute::Full, false),
        ComputePass::Recompute,
        2,
        false,
        false,
    );
    assert_eq!(
        full,
        pass_steps(
            &scenario(Recompute::Full, false),
            ComputePass::Forward,
            2,
            false,
            false
        )
    );
}

#[test]
fn selective_recompute_of_grouped_query_attention_reruns_the_kv_expansion() {
    let mut scenario = scenario(Recompute::Selective, true);
    scenario.model = models::preset("llama3-8b").unwrap();
    // Within the default stack's fused-softmax limit: one softmax kernel.
    scenario.model.seq_len = 2048;
    let steps = pass_steps(&scenario, ComputePass::Recompute, 1, false, false);
    let names: Vec<&str> = steps
        .iter()
        .filter_map(|step| match step {
            Step::Kernel(kernel) => Some(kernel.name),
            Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => None,
        })
        .collect();
    // Llama trains without attention dropout: no dropout kernel to re-run.
    assert_eq!(
        names,
        [
            "gqa_expand_kv",
            "attention_scores",
            "softmax",
            "attention_over_values"
        ]
    );
    scenario.model.attention_dropout = models::DropoutRate::MEGATRON_DEFAULT;
    let with_dropout: Vec<&str> = pass_steps(&scenario, ComputePass::Recompute, 1, false, false)
        .iter()
        .filter_map(|step| match step {
            Step::Kernel(kernel) => Some(kernel.name),
            Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => None,
        })
        .collect();
    assert_eq!(
        with_dropout,
        [
            "gqa_expand_kv",
            "attention_scores",
            "softmax",
            "attention_dropout",
            "attention_over_values"
        ]
    );
    // Under a stack with fused attention the core is the one fused kernel.
    scenario.stack.fused_attention = true;
    let fused: Vec<&str> = pass_steps(&scenario, ComputePass::Recompute, 1, false, false)
        .iter()
        .filter_map(|step| match step {
            Step::Kernel(kernel) => Some(kernel.name),
            Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => None,
        })
        .collect();
    assert_eq!(fused, ["fused_attention"]);
}

fn accumulation_kernels(scenario: &Scenario, embedding: bool, head: bool) -> usize {
    pass_steps(scenario, ComputePass::Backward, 3, embedding, head)
        .iter()
        .filter(|step| matches!(step, Step::Kernel(k) if k.name.ends_with(".grad_accumulate")))
        .count()
}

#[test]
fn unfused_backward_accumulates_every_parameter_tensor_once_per_microbatch() {
    let unfused = scenario(Recompute::Full, false);
    assert!(
        !unfused.options.gradient_accumulation_fusion,
        "the default is unfused"
    );
    // 12 tensors per layer, 3 layers; the embedding adds 2, the head 3.
    assert_eq!(accumulation_kernels(&unfused, false, false), 36);
    assert_eq!(accumulation_kernels(&unfused, true, true), 41);
    let fused = ScenarioFile {
        options: scenario::TrainingOptionsFile {
            gradient_accumulation_fusion: Some(true),
            ..Default::default()
        },
        ..ScenarioFile::embedded_default()
    }
    .resolve()
    .unwrap();
    assert_eq!(accumulation_kernels(&fused, true, true), 0);
    // The forward never accumulates.
    assert!(pass_steps(&unfused, ComputePass::Forward, 3, true, true)
        .iter()
        .all(|step| !matches!(step, Step::Kernel(k) if k.name.ends_with(".grad_accumulate"))));
}

#[test]
fn fused_accumulation_is_cheaper_per_microbatch_and_all_reduces_twice_the_bytes() {
    let file = |fused: bool| ScenarioFile {
        model: Some("gpt3-175b".into()),
        tp: Some(8),
        pp: Some(8),
        dp: Some(2),
        global_batch: Some(16),
        options: scenario::TrainingOptionsFile {
            gradient_accumulation_fusion: Some(fused),
            ..Default::default()
        },
        ..ScenarioFile::embedded_default()
    };
    let cost = |fused: bool, work: Work| {
        let scenario = file(fused).resolve().unwrap();
        let network = ClosedFormNetwork::for_scenario(&scenario);
        cost_works(&scenario, &[work], &network)[0]
    };
    let backward = Work::Compute {
        pass: ComputePass::Backward,
        layers: 12,
        dense_layers: 0,
        first_layer: 0,
        embedding: false,
        head: false,
        fp8_weight_cast: false,
        segment: taskgraph::task_graph::WHOLE_PASS,
    };
    let (unfused, fused) = (cost(false, backward.clone()), cost(true, backward));
    let scenario = file(false).resolve().unwrap();
    let params_per_layer: u64 = ops::layer_parameter_tensors(&scenario.model, crate::nz(8))
        .iter()
        .map(|p| p.elements)
        .sum();
    assert_eq!(
        unfused.bytes - fused.bytes,
        12 * 6 * params_per_layer,
        "6 bytes per parameter of the 12 layers"
    );
    let optimizer = Work::OptimizerStep {
        params: 1_000_000_000,
    };
    assert_eq!(cost(false, optimizer.clone()).bytes, 54_000_000_000);
    assert_eq!(cost(true, optimizer).bytes, 50_000_000_000);
    let data_parallel_bytes = |fused: bool| -> Vec<u64> {
        let scenario = file(fused).resolve().unwrap();
        crate::lowering::lower(&scenario, &crate::plan::Plan::of(&scenario))
            .works()
            .iter()
            .filter_map(|work| match work {
                Work::DataParallelAllReduce { bytes, .. } => Some(*bytes),
                _ => None,
            })
            .collect()
    };
    let (fp16, fp32) = (data_parallel_bytes(false), data_parallel_bytes(true));
    assert!(!fp16.is_empty());
    assert_eq!(fp32, fp16.iter().map(|b| 2 * b).collect::<Vec<_>>());
}

#[test]
fn an_asynchronous_all_reduce_is_charged_only_beyond_its_overlap_window() {
    let scenario = scenario(Recompute::Full, false);
    let kernels = KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
        .with_precision(scenario.options.precision);
    let memory = |bytes: f64| {
        Step::Kernel(models::ops::Kernel {
            name: "k",
            class: models::ops::KernelClass::MemoryBound,
            flops: 0.0,
            bytes,
            role: models::ops::KernelRole::Backward,
            attention_core: false,
            fp8_linear: None,
            memory_class: None,
        })
    };
    // Three kernels before the all-reduce; a window of 2 overlaps the last two.
    let before = [memory(1e9), memory(2e9), memory(3e9)];
    let seconds = |step: &Step| match step {
        Step::Kernel(k) => kernels.kernel_seconds(k),
        Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => 0.0,
    };
    let window_s = seconds(&before[1]) + seconds(&before[2]);
    let long = SimDuration::from_seconds_ceil(window_s + 1e-3);
    let exposed = exposed_after_overlap(long, &before, 2, &kernels, 0.0);
    assert!((exposed.as_seconds() - 1e-3).abs() < 2e-9, "{exposed:?}");
    let short = SimDuration::from_seconds_ceil(window_s * 0.5);
    assert_eq!(
        exposed_after_overlap(short, &before, 2, &kernels, 0.0),
        SimDuration::ZERO
    );
    // With the all-reduce holding a quarter of the SMs the kernels run at 3/4
    // of their rate beside it. A short all-reduce (A = W/2) is then outlasted
    // by them: it adds A/4. A long one (A = W + 1 ms) outlasts them even so:
    // it adds A − W, as without the SM share.
    let quarter = exposed_after_overlap(short, &before, 2, &kernels, 0.25);
    assert!(
        (quarter.as_seconds() - short.as_seconds() * 0.25).abs() < 2e-9,
        "{quarter:?}"
    );
    assert!(
        long.as_seconds() * 0.75 >= window_s,
        "the long case needs A·3/4 ≥ W"
    );
    let long_quarter = exposed_after_overlap(long, &before, 2, &kernels, 0.25);
    assert!(
        (long_quarter.as_seconds() - 1e-3).abs() < 2e-9,
        "{long_quarter:?}"
    );
    // Between the two, A = 1.2·W: beside the all-reduce the kernels do
    // 0.9·W of their work, the last 0.1·W after it at full rate, so the pair
    // takes A + 0.1·W and the all-reduce adds 0.3·W (not A − W = 0.2·W).
    let between = SimDuration::from_seconds_ceil(window_s * 1.2);
    let between_charged = exposed_after_overlap(between, &before, 2, &kernels, 0.25);
    assert!(
        (between_charged.as_seconds() - 0.3 * window_s).abs() < 2e-9,
        "{between_charged:?}"
    );
}

#[test]
fn async_tensor_all_reduce_hides_backward_all_reduces_only() {
    let file = |overlap: bool| ScenarioFile {
        model: Some("gpt-22b".into()),
        tp: Some(8),
        pp: Some(1),
        dp: Some(1),
        microbatch_size: Some(4),
        global_batch: Some(4),
        options: scenario::TrainingOptionsFile {
            async_tensor_allreduce: Some(overlap),
            ..Default::default()
        },
        ..ScenarioFile::embedded_default()
    };
    let cost = |overlap: bool, pass: ComputePass| {
        let scenario = file(overlap).resolve().unwrap();
        let network = ClosedFormNetwork::for_scenario(&scenario);
        let work = Work::TensorAllReduce {
            pass,
            layers: 2,
            dense_layers: 0,
            first_layer: 0,
            embedding: false,
            head: false,
            group_size: 8,
            nodes: 1,
            segment: taskgraph::task_graph::WHOLE_PASS,
        };
        cost_works(&scenario, &[work], &network)[0]
    };
    assert_eq!(
        cost(true, ComputePass::Forward),
        cost(false, ComputePass::Forward)
    );
    let (blocking, overlapped) = (
        cost(false, ComputePass::Backward),
        cost(true, ComputePass::Backward),
    );
    assert_eq!(blocking.bytes, overlapped.bytes, "the same bytes move");
    // 22B at t=8, b=4: each 100 MB all-reduce (0.82 ms) is shorter than the
    // weight-gradient GEMM it overlaps (0.93 and 1.28 ms) even at the 84 of 108
    // SMs NCCL's 24 channels leave it, so each adds only the share of its own
    // time the GEMM loses: 24/108 of it (each rounded up to a nanosecond).
    assert!(blocking.duration > SimDuration::ZERO);
    let share = f64::from(NVSWITCH_NODE_COLLECTIVE_CHANNELS) / 108.0;
    let expected_s = blocking.duration.as_seconds() * share;
    assert!(
        (overlapped.duration.as_seconds() - expected_s).abs() < 8e-9,
        "{overlapped:?} vs {expected_s} s"
    );
    let error = ScenarioFile {
        options: scenario::TrainingOptionsFile {
            sequence_parallel: Some(true),
            ..file(true).options.clone()
        },
        ..file(true)
    }
    .resolve()
    .unwrap_err()
    .to_string();
    assert!(error.contains("async_tensor_allreduce"), "{error}");
}

#[test]
fn sequence_parallelism_splits_elementwise_bytes_but_not_gemm_flops() {
    let plain = pass_steps(
        &scenario(Recompute::None, false),
        ComputePass::Forward,
        1,
        false,
        false,
    );
    let split = pass_steps(
        &scenario(Recompute::None, true),
        ComputePass::Forward,
        1,
        false,
        false,
    );
    assert_eq!(PassSteps::flops(&plain), PassSteps::flops(&split));
    let bytes_of = |steps: &[Step], name: &str| {
        steps
            .iter()
            .find_map(|s| match s {
                Step::Kernel(k) if k.name == name => Some(k.bytes),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(
        bytes_of(&plain, "layernorm_1"),
        8.0 * bytes_of(&split, "layernorm_1")
    );
    assert_eq!(bytes_of(&plain, "softmax"), bytes_of(&split, "softmax"));
}
