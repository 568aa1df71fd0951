//! Context parallelism (`cp`): every kernel on s/cp tokens, Transformer
//! Engine's ring attention with load-balanced causal masking (1/cp of the
//! causal attention per rank), its K/V (and dK/dV) exchanges overlapped with
//! the attention steps, gradients reduced over the d·cp ranks, activations of
//! s/cp tokens; checked against hand-computed closed forms.

use models::ops::{KernelClass, Step};
use sim::cost::{
    context, cost_works, pass_steps, ClosedFormNetwork, KernelCostModel, NetworkModel,
};
use sim::scenario::{Recompute, Scenario, ScenarioFile, TrainingOptionsFile};
use sim::task_graph::{ComputePass, Work};

/// `tiny` (h=512, a=8, head_dim 64, s=256, 4 layers) on one DGX A100, t=2, p=1.
fn tiny(cp: u32) -> Scenario {
    ScenarioFile {
        tp: Some(2),
        pp: Some(1),
        dp: Some(1),
        cp: Some(cp),
        global_batch: Some(2),
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .expect("valid scenario")
}

fn kernels_of(steps: &[Step]) -> Vec<&models::ops::Kernel> {
    steps
        .iter()
        .filter_map(|step| match step {
            Step::Kernel(kernel) => Some(kernel),
            Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => None,
        })
        .collect()
}

fn flops_where(steps: &[Step], keep: impl Fn(&str) -> bool) -> f64 {
    kernels_of(steps)
        .iter()
        .filter(|k| keep(k.name))
        .map(|k| k.flops)
        .sum()
}

const UNFUSED_CORE: [&str; 2] = ["attention_scores", "attention_over_values"];

fn is_core(name: &str) -> bool {
    name.starts_with("ring_attention.") || UNFUSED_CORE.iter().any(|c| name.starts_with(c))
}

#[test]
fn each_rank_runs_its_s_over_cp_tokens_and_one_cp_th_of_the_causal_attention() {
    let one = tiny(1);
    for pass in [ComputePass::Forward, ComputePass::Backward] {
        let base = pass_steps(&one, pass, 1, false, false);
        let base_linear = flops_where(&base, |n| !is_core(n));
        for cp in [2u32, 4] {
            let steps = pass_steps(&tiny(cp), pass, 1, false, false);
            // Every GEMM outside the attention core runs on s/cp tokens.
            assert_eq!(
                flops_where(&steps, |n| !is_core(n)),
                base_linear / cp as f64
            );
            // No unfused core kernel is left: ring attention replaces it.
            assert!(kernels_of(&steps).iter().all(|k| !UNFUSED_CORE
                .iter()
                .any(|c| k.name.starts_with(c))
                && !k.name.starts_with("softmax")
                && !k.name.starts_with("attention_dropout")));
            // Ring attention: cp fused steps of s/cp × s/(2cp) scores per
            // head; their FLOPs are Eq. 3's share of the s×s core (b=1, 4
            // heads per rank, head_dim 64, s=256): 4·b·a/t·s²·d/cp forward,
            // twice that backward.
            let forward = 4.0 * 4.0 * 256.0 * 256.0 * 64.0 / cp as f64;
            let expected = match pass {
                ComputePass::Backward => forward * 2.0,
                _ => forward,
            };
            let ring = flops_where(&steps, |n| n.starts_with("ring_attention."));
            assert_eq!(ring, expected, "cp={cp} {pass:?}");
            // That is 1/cp of the unfused s×s attention's FLOPs.
            let unfused = flops_where(&base, |n| UNFUSED_CORE.iter().any(|c| n.starts_with(c)));
            if pass == ComputePass::Forward {
                assert_eq!(ring, unfused / cp as f64);
            }
            let ring_kernels: Vec<_> = kernels_of(&steps)
                .into_iter()
                .filter(|k| k.name.starts_with("ring_attention."))
                .collect();
            assert_eq!(ring_kernels.len(), cp as usize);
            // Fused: each step moves Q and O of s/cp tokens, K and V of
            // s/2cp (and backward their gradients), plus 4-byte statistics.
            let (q, kv) = (256.0 / cp as f64, 128.0 / cp as f64);
            let (operands, stats) = (4.0 * 64.0 * 2.0, 4.0 * q * 4.0);
            for kernel in ring_kernels {
                let KernelClass::FusedAttention(shape) = kernel.class else {
                    panic!("{} is not a fused attention kernel", kernel.name)
                };
                assert_eq!((shape.seq_len, shape.kv_seq_len), (q as u64, kv as u64));
                let factor = if pass == ComputePass::Backward {
                    4.0
                } else {
                    2.0
                };
                assert_eq!(
                    kernel.bytes,
                    operands * factor * (q + kv) + stats,
                    "{}",
                    kernel.name
                );
            }
        }
    }
}

#[test]
fn ring_exchanges_carry_kv_forward_and_kv_plus_dkv_backward() {
    // tiny, t=2, cp=4: K and V of 64 tokens × 4 heads × 64 × 2 bytes.
    let scenario = tiny(4);
    let chunk = 2 * 64 * 4 * 64 * 2;
    assert_eq!(context::kv_chunk_bytes(&scenario), chunk);
    assert_eq!(
        context::exchange_bytes_per_step(&scenario, ComputePass::Forward),
        vec![chunk, chunk, chunk, 0]
    );
    assert_eq!(
        context::exchange_bytes_per_step(&scenario, ComputePass::Backward),
        vec![chunk, 2 * chunk, 2 * chunk, chunk]
    );
    assert!(context::exchange_bytes_per_step(&tiny(1), ComputePass::Forward).is_empty());
    // Grouped-query attention exchanges the kv heads only: llama3-8b (8 kv
    // heads, head_dim 128), t=2, cp=2, s=8192: 2 · 4096 · 4 · 128 · 2.
    let llama = ScenarioFile {
        model: Some("llama3-8b".into()),
        ..ScenarioFile {
            global_batch: Some(2),
            ..ScenarioFile {
                tp: Some(2),
                pp: Some(1),
                dp: Some(1),
                cp: Some(2),
                ..ScenarioFile::tiny_example()
            }
        }
    }
    .resolve()
    .unwrap();
    assert_eq!(context::kv_chunk_bytes(&llama), 2 * 4096 * 4 * 128 * 2);
}

/// Seconds a pass of one layer is charged for its exchanges, by hand:
/// Σ over steps of max(0, transfer − that step's ring kernels).
fn exposed_by_hand(scenario: &Scenario, pass: ComputePass) -> f64 {
    let kernels = KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
        .with_precision(scenario.options.precision);
    let network = ClosedFormNetwork::for_scenario(scenario);
    let steps = pass_steps(scenario, pass, 1, false, false);
    let ring: Vec<f64> = kernels_of(&steps)
        .into_iter()
        .filter(|k| k.name.starts_with("ring_attention."))
        .map(|k| kernels.kernel_seconds(k))
        .collect();
    let per_step = 1;
    let crosses = scenario.layout.tensor_parallel.get() * scenario.layout.context_parallel.get()
        > scenario.topology.node.gpus_per_node;
    context::exchange_bytes_per_step(scenario, pass)
        .iter()
        .zip(ring.chunks(per_step))
        .filter(|(bytes, _)| **bytes > 0)
        .map(|(&bytes, step)| {
            let transfer = network
                .pipeline_transfer(bytes, scenario.layout.tensor_parallel.get(), crosses, false)
                .as_seconds();
            (transfer - step.iter().sum::<f64>()).max(0.0)
        })
        .sum()
}

#[test]
fn a_pass_is_charged_its_kernels_plus_what_the_attention_steps_do_not_hide() {
    // llama3-8b, t=8, cp=2 on DGX H100 nodes: the ring crosses nodes, and
    // its K/V chunks over a NIC outlast the short attention steps at s=512.
    let scenario = ScenarioFile {
        model: Some("llama3-8b".into()),
        topology: Some("dgx-h100-superpod".into()),
        seq_len: Some(512),
        tp: Some(8),
        pp: Some(1),
        dp: Some(1),
        cp: Some(2),
        global_batch: Some(1),
        recompute: Some(Recompute::None),
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap();
    assert!(context::ring_crosses_nodes(&scenario));
    let kernels = KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
        .with_precision(scenario.options.precision);
    let network = ClosedFormNetwork::for_scenario(&scenario);
    let works = [
        Work::Compute {
            pass: ComputePass::Forward,
            layers: 3,
            dense_layers: 0,
            first_layer: 0,
            embedding: false,
            head: false,
            fp8_weight_cast: false,
            segment: sim::task_graph::WHOLE_PASS,
        },
        Work::Compute {
            pass: ComputePass::Backward,
            layers: 3,
            dense_layers: 0,
            first_layer: 0,
            embedding: false,
            head: false,
            fp8_weight_cast: false,
            segment: sim::task_graph::WHOLE_PASS,
        },
    ];
    let costs = cost_works(&scenario, &works, &network);
    for (work, cost) in works.iter().zip(costs) {
        let Work::Compute { pass, .. } = *work else {
            unreachable!()
        };
        let steps = pass_steps(&scenario, pass, 3, false, false);
        let kernel_s: f64 = kernels_of(&steps)
            .iter()
            .map(|k| kernels.kernel_seconds(k))
            .sum();
        let exposed = exposed_by_hand(&scenario, pass);
        if pass == ComputePass::Forward {
            // Two short kernels per step cannot hide a cross-node hop (the
            // backward's five, with their launches, may).
            assert!(exposed > 0.0, "the forward exchange should be exposed here");
        }
        let expected = sim::time::SimDuration::from_seconds_ceil(kernel_s + 3.0 * exposed);
        assert_eq!(cost.duration, expected, "{pass:?}");
    }
    // In one node, at s = 8192, each step's attention outlasts its NVLink hop.
    let long = ScenarioFile {
        model: Some("llama3-8b".into()),
        topology: Some("dgx-h100-superpod".into()),
        seq_len: Some(8192),
        tp: Some(4),
        pp: Some(1),
        dp: Some(1),
        cp: Some(2),
        global_batch: Some(1),
        recompute: Some(Recompute::None),
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap();
    assert!(!context::ring_crosses_nodes(&long));
    for pass in [ComputePass::Forward, ComputePass::Backward] {
        assert_eq!(exposed_by_hand(&long, pass), 0.0);
    }
}

#[test]
fn gradients_reduce_over_the_dp_cp_group_and_pipeline_sends_carry_s_over_cp_tokens() {
    // tiny, t=2, cp=2, p=2, d=2 (16 GPUs), distributed optimizer.
    let scenario = ScenarioFile {
        topology: Some("selene".into()),
        tp: Some(2),
        pp: Some(2),
        dp: Some(2),
        cp: Some(2),
        global_batch: Some(4),
        options: TrainingOptionsFile {
            distributed_optimizer: Some(true),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap();
    assert_eq!(scenario.layout.gpus(), 16);
    assert_eq!(scenario.layout.replicas(), 4);
    assert_eq!(scenario.layout.microbatches, crate::degree(2));
    let (_, graph) = sim::build_graph(&scenario);
    let mut reduce_scatters = 0;
    let mut transfers = 0;
    for work in graph.works() {
        match *work {
            Work::DataParallelReduceScatter { group_size, .. }
            | Work::DataParallelAllGather { group_size, .. } => {
                assert_eq!(group_size, 4);
                reduce_scatters += 1;
            }
            Work::PipelineTransfer { bytes, .. } => {
                // b · s/cp · h · 2 = 1 · 128 · 512 · 2.
                assert_eq!(bytes, 128 * 512 * 2);
                transfers += 1;
            }
            Work::OptimizerStep { params } => {
                let stage0 = models::sharding::parameters_on_rank(
                    &scenario.model,
                    scenario.layout.sharding(),
                    0,
                );
                let stage1 = models::sharding::parameters_on_rank(
                    &scenario.model,
                    scenario.layout.sharding(),
                    1,
                );
                assert!(params == stage0.div_ceil(4) || params == stage1.div_ceil(4));
            }
            _ => {}
        }
    }
    assert!(reduce_scatters > 0 && transfers > 0);
    let report = sim::simulate(&scenario).unwrap();
    // Every one of the 16 ranks runs compute.
    let mut ranks: Vec<u32> = report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == timeline::TaskKind::Forward)
        .flat_map(|t| report.timeline().header.groups[t.group as usize].clone())
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    assert_eq!(ranks, (0..16).collect::<Vec<u32>>());
    assert_eq!(report.timeline().header.layout.context_parallel, 2);
    assert_eq!(report.timeline().header.n_gpus, 16);
    // Optimizer states shard over d·cp = 4.
    for stage in &report.memory {
        assert_eq!(
            stage.optimizer_state_bytes,
            (stage.parameters * models::memory::OPTIMIZER_BYTES_PER_PARAM).div_ceil(4)
        );
    }
}

#[test]
fn activations_are_those_of_s_over_cp_tokens_without_stored_scores_plus_the_ring_buffers() {
    let scenario = tiny(2);
    let report = sim::simulate(&scenario).unwrap();
    let memory = &report.memory[0];
    let mut rank_model = scenario.model.clone();
    rank_model.seq_len = 128;
    // The fused ring attention keeps no scores: the attention core's inputs
    // and output plus a 4-byte statistic per query row and head.
    let per_layer = models::memory::stored_activation_bytes_per_layer_with(
        &rank_model,
        1,
        2,
        false,
        models::memory::RecomputeKind::None,
        true,
    );
    // tiny: 4 layers on the one stage; logits b·(s/cp)·vocab/t·6; the ring's
    // four K/V-sized receive buffers.
    let logits = (128 * scenario.model.vocab / 2 * 6) as f64;
    let ring = (4 * context::kv_chunk_bytes(&scenario)) as f64;
    let expected =
        (memory.peak_microbatches_in_flight as f64 * 4.0 * per_layer + ring + logits) as u64;
    assert_eq!(memory.activation_bytes, expected);
}

fn problems(file: ScenarioFile) -> String {
    file.resolve().map(|_| ()).unwrap_err().to_string()
}

#[test]
fn invalid_context_parallel_layouts_are_refused_naming_cp() {
    let base = || ScenarioFile {
        tp: Some(2),
        pp: Some(1),
        dp: Some(1),
        global_batch: Some(2),
        ..ScenarioFile::tiny_example()
    };
    let text = problems(ScenarioFile {
        cp: Some(0),
        ..base()
    });
    assert!(text.contains("cp: must be at least 1"), "{text}");
    // s = 256 does not divide into 2·3 chunks; t·cp = 6 straddles 8-GPU nodes.
    let text = problems(ScenarioFile {
        cp: Some(3),
        ..base()
    });
    assert!(
        text.contains("cp: seq_len (256) must be divisible by 2 × cp = 6"),
        "{text}"
    );
    assert!(
        text.contains("cp: tp × cp = 2 × 3 = 6 neither divides"),
        "{text}"
    );
    let text = problems(ScenarioFile {
        cp: Some(8),
        ..base()
    });
    assert!(
        text.contains("tp × cp × pp × dp = 2 × 8 × 1 × 1 = 16 GPUs, but topology 'dgx-a100' has 8"),
        "{text}"
    );
    let text = problems(ScenarioFile {
        cp: Some(2),
        recompute: Some(Recompute::Selective),
        ..base()
    });
    assert!(text.contains("cp: selective recompute"), "{text}");
    let text = problems(ScenarioFile {
        cp: Some(2),
        options: TrainingOptionsFile {
            network_contention: Some(true),
            ..TrainingOptionsFile::default()
        },
        ..base()
    });
    assert!(
        text.contains("cp: context parallelism under network_contention"),
        "{text}"
    );
}

#[test]
fn llama3_70b_trains_with_context_parallelism_on_a_dgx_h100_superpod() {
    let file = |cp: u32| ScenarioFile {
        model: Some("llama3-70b".into()),
        topology: Some("dgx-h100-superpod".into()),
        stack: Some("megatron-core-2024".into()),
        seq_len: Some(8192),
        tp: Some(8),
        pp: Some(4),
        dp: Some(2),
        cp: Some(cp),
        microbatch_size: Some(1),
        global_batch: Some(64),
        recompute: Some(Recompute::Full),
        options: TrainingOptionsFile {
            distributed_optimizer: Some(true),
            precision: Some(sim::scenario::Precision::Bf16),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    };
    let scenario = file(2).resolve().unwrap();
    assert!(
        scenario.title().contains("t=8 cp=2 p=4 d=2"),
        "{}",
        scenario.title()
    );
    let report = sim::simulate(&scenario).unwrap();
    assert!(report.memory.iter().all(|s| s.fits));
    assert!(report.metrics.iteration_time_s > 0.0);
    let plain = sim::simulate(&file(1).resolve().unwrap()).unwrap();
    // Half the tokens per rank: fewer activation bytes on every stage.
    for (with, without) in report.memory.iter().zip(&plain.memory) {
        assert!(with.activation_bytes < without.activation_bytes);
    }
}
