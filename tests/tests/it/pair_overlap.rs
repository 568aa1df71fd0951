//! DualPipe's overlapped F&B pair (`pair_overlap`, DeepSeek-V3 report Sec.
//! 3.2.1) and DeepEP's node-limited dispatch (`moe_dispatcher: deepep`,
//! Sec. 3.2.2): a pair's pieces and all-to-alls as the engine runs them,
//! against the max-based closed form of the interleave; the SM share taken
//! from the computation beside an all-to-all; a lone DeepEP dispatch in
//! closed form; the refusals.

use sim::collective::{GroupShape, LinkRates};
use sim::cost::pair_overlap::{piece_of, DEEPEP_SMS};
use sim::cost::{cost_works, ClosedFormNetwork};
use sim::ids::TaskId;
use sim::scenario::moe_comm::MoeDispatcher;
use sim::scenario::{
    Precision, Recompute, Scenario, ScenarioFile, ScheduleKind, TrainingOptionsFile,
};
use sim::task::{StreamKind, TaskKind};
use sim::task_graph::{ComputePass, Work};
use sim::time::SimDuration;

/// Mixtral 8x7B cut to 4 layers (one MoE layer per DualPipeV chunk) at
/// s = 4096 on the DGX H100 SuperPOD: p = 2, d = 2, ep = 2, m = 4, bf16.
fn mixtral_pairs(pair_overlap: bool, dispatcher: Option<MoeDispatcher>) -> ScenarioFile {
    let mut model = models::preset("mixtral-8x7b").unwrap();
    model.layers = 4;
    ScenarioFile {
        model: Some(serde_json::to_value(&model).unwrap()),
        seq_len: Some(4096),
        topology: Some("dgx-h100-superpod".into()),
        tp: Some(1),
        pp: Some(2),
        dp: Some(2),
        ep: Some(2),
        chunks: Some(2),
        microbatch_size: Some(1),
        global_batch: Some(8),
        schedule: Some(ScheduleKind::DualPipeV),
        recompute: Some(Recompute::None),
        options: TrainingOptionsFile {
            precision: Some(Precision::Bf16),
            pair_overlap: Some(pair_overlap),
            moe_dispatcher: dispatcher,
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    }
}

fn resolve(file: ScenarioFile) -> Scenario {
    file.resolve().expect("valid scenario")
}

/// Whether a work is a piece of an overlapped pair (its computation or
/// one of its all-to-alls).
fn is_piece(work: &Work) -> bool {
    match work {
        Work::ComputeBeside { .. } => true,
        Work::Compute { segment, .. } | Work::ExpertAllToAll { segment, .. } => {
            piece_of(*segment).is_some()
        }
        _ => false,
    }
}

/// Each pair's span on rank `rank`'s compute stream (first piece start to
/// last piece end), its 6 pieces found in program order.
fn pair_spans(scenario: &Scenario, computation: u64, all_to_all: u64, rank: u32) -> Vec<u64> {
    let (_, graph) = sim::build_graph(scenario);
    let costs = sim::uniform_costs(&graph, |work| match work {
        Work::ComputeBeside { .. } => SimDuration(computation),
        Work::Compute { .. } if is_piece(work) => SimDuration(computation),
        Work::ExpertAllToAll { .. } if is_piece(work) => SimDuration(all_to_all),
        _ => SimDuration::ZERO,
    });
    let (timeline, _) = sim::run_graph(scenario, &graph, &costs).unwrap();
    let mut pieces: Vec<(u64, u64)> = timeline
        .tasks
        .iter()
        .filter(|t| {
            t.stream == StreamKind::Compute
                && timeline.header.groups[t.group as usize].contains(&rank)
                && is_piece(&graph.works()[graph.work_of(TaskId(t.id)).index()])
        })
        .map(|t| (t.start_ns, t.end_ns))
        .collect();
    pieces.sort_unstable();
    assert!(
        !pieces.is_empty() && pieces.len().is_multiple_of(6),
        "{} pieces",
        pieces.len()
    );
    pieces.chunks(6).map(|pair| pair[5].1 - pair[0].0).collect()
}

#[test]
fn a_pair_takes_the_longer_of_its_computation_and_its_serialized_all_to_alls() {
    // One MoE layer per chunk: each half is 3 pieces (attention … permute |
    // dispatch, experts | combine, unpermute …) with 2 all-to-alls. The
    // pieces alternate F0 B0 F1 B1 F2 B2 and each all-to-all runs after
    // its piece, beside the other half's next one: with every piece C and
    // every all-to-all A, the pair takes max(6C, 2C + 4A) — its computation
    // when A ≤ C, else its first and last piece around the 4 all-to-alls on
    // the one expert-parallel stream.
    let scenario = resolve(mixtral_pairs(true, None));
    let c = 1_000;
    for a in [0, 400, 1_000, 1_700, 3_000] {
        for rank in [0, 1] {
            let spans = pair_spans(&scenario, c, a, rank);
            let expected = (6 * c).max(2 * c + 4 * a);
            assert!(
                spans.iter().all(|&span| span == expected),
                "A = {a}, rank {rank}: {spans:?} vs {expected}"
            );
            // Never below the computation alone.
            assert!(spans.iter().all(|&span| span >= 6 * c));
        }
    }
}

#[test]
fn the_pairs_all_to_alls_run_on_their_own_stream_and_the_rest_on_the_compute_stream() {
    let scenario = resolve(mixtral_pairs(true, None));
    let report = sim::simulate(&scenario).expect("simulates");
    let timeline = report.timeline();
    let on = |stream| {
        timeline
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::ExpertAllToAll && t.stream == stream)
            .count()
    };
    // DualPipeV with p = 2, m = 4 runs pairs on both ranks; each pair has
    // 2 + 2 all-to-alls on the ep stream.
    assert!(on(StreamKind::ExpertParallel) > 0);
    assert_eq!(on(StreamKind::ExpertParallel) % 4, 0);
    assert!(
        on(StreamKind::Compute) > 0,
        "unpaired passes keep theirs inline"
    );
    // The FLOPs are the model's whatever the cut.
    let unpaired = sim::simulate(&resolve(mixtral_pairs(false, None))).unwrap();
    let flops = |m: &timeline::metrics::Metrics| m.model_tflops_per_gpu * m.iteration_time_s;
    assert!(
        (flops(&report.metrics) - flops(&unpaired.metrics)).abs() / flops(&unpaired.metrics) < 1e-9
    );
}

#[test]
fn with_real_costs_overlap_lies_between_the_computation_alone_and_back_to_back() {
    for dispatcher in [MoeDispatcher::Nccl, MoeDispatcher::Deepep] {
        let sequential = resolve(mixtral_pairs(false, Some(dispatcher)));
        let overlapped = resolve(mixtral_pairs(true, Some(dispatcher)));
        let back_to_back = sim::simulate(&sequential).unwrap().metrics.iteration_time_s;
        let with_overlap = sim::simulate(&overlapped).unwrap().metrics.iteration_time_s;
        // The computation alone: the unpaired program with free all-to-alls.
        let (_, graph) = sim::build_graph(&sequential);
        let network = ClosedFormNetwork::for_scenario(&sequential);
        let mut costs = cost_works(&sequential, graph.works(), &network);
        for (cost, work) in costs.iter_mut().zip(graph.works()) {
            if matches!(work, Work::ExpertAllToAll { .. }) {
                cost.duration = SimDuration::ZERO;
            }
        }
        let (timeline, _) = sim::run_graph(&sequential, &graph, &costs).unwrap();
        let alone = timeline.makespan_ns() as f64 * 1e-9;
        assert!(
            alone < with_overlap && with_overlap < back_to_back,
            "{dispatcher:?}: {alone} < {with_overlap} < {back_to_back}"
        );
    }
}

#[test]
fn computation_beside_an_all_to_all_runs_on_the_sms_it_leaves() {
    // DeepEP's 20 SMs of the H100's 132 (the report's Sec. 3.2.2; DeepEP
    // V1's Buffer.num_sms): a piece of C beside an all-to-all of A takes
    // C + (20/132)·min(A, C·132/112).
    let scenario = resolve(mixtral_pairs(true, Some(MoeDispatcher::Deepep)));
    assert_eq!(DEEPEP_SMS, 20);
    assert_eq!(scenario.topology.gpu.sm_count, 132);
    let network = ClosedFormNetwork::for_scenario(&scenario);
    let compute = Work::Compute {
        pass: ComputePass::Forward,
        layers: 1,
        dense_layers: 0,
        first_layer: 0,
        embedding: false,
        head: false,
        fp8_weight_cast: false,
        segment: sim::cost::pair_overlap::piece_segment(1),
    };
    let beside = Work::ExpertAllToAll {
        pass: ComputePass::Backward,
        layers: 1,
        dense_layers: 0,
        first_layer: 0,
        embedding: false,
        head: false,
        group_size: 2,
        nodes: 1,
        expert_tensor_group: (1, 1),
        segment: sim::cost::pair_overlap::piece_segment(1),
    };
    let costs = cost_works(
        &scenario,
        &[
            compute.clone(),
            beside.clone(),
            Work::ComputeBeside {
                compute: Box::new(compute),
                beside: Box::new(beside),
            },
        ],
        &network,
    );
    let (c, a) = (
        costs[0].duration.as_nanos() as f64,
        costs[1].duration.as_nanos() as f64,
    );
    assert!(c > 0.0 && a > 0.0);
    let expected = c + 20.0 / 132.0 * a.min(c * 132.0 / 112.0);
    let got = costs[2].duration.as_nanos() as f64;
    assert!((got - expected).abs() <= 1.0, "{got} vs {expected}");
    assert_eq!(costs[2].flops, costs[0].flops);
}

#[test]
fn a_lone_deepep_dispatch_is_its_closed_form() {
    // DeepSeek-V3's routing on the H800 cluster: 256 experts, top-8, ep 64
    // on 8 nodes; the busiest rank's T·k·h·2 NCCL payload is T·h·2 of
    // distinct tokens. A token picks 4 of the 8 nodes (128 experts, 32 per
    // node, 4 per GPU) and 8 experts among them: it reaches a node with
    // probability 1 − C(96,8)/C(128,8), a GPU with 1 − C(124,8)/C(128,8).
    let mut scenario = resolve(ScenarioFile {
        model: Some("deepseek-v3".into()),
        seq_len: Some(4096),
        topology: Some("hgx-h800".into()),
        tp: Some(1),
        pp: Some(1),
        dp: Some(64),
        ep: Some(64),
        chunks: Some(1),
        microbatch_size: Some(1),
        global_batch: Some(64),
        recompute: Some(Recompute::None),
        options: TrainingOptionsFile {
            precision: Some(Precision::Bf16),
            moe_dispatcher: Some(MoeDispatcher::Deepep),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    });
    let (tokens, hidden, k) = (4096u64, 7168u64, 8u64);
    let payload = tokens * k * hidden * 2;
    let miss = |experts_per_unit: u64| -> f64 {
        (0..8)
            .map(|i| (128 - experts_per_unit - i) as f64 / (128 - i) as f64)
            .product()
    };
    let remote_nodes = 4.0 * (1.0 - miss(32)) * 7.0 / 8.0;
    let nvlink_copies = 32.0 * (1.0 - miss(4)) * 7.0 / 8.0;
    let rates = LinkRates::from(&scenario.topology, &scenario.profile);
    let token_bytes = (tokens * hidden * 2) as f64;
    let nic = rates.nic_bytes_per_s * rates.nics_per_node as f64 / rates.gpus_per_node as f64;
    let seconds = (token_bytes * remote_nodes / nic)
        .max(token_bytes * nvlink_copies / rates.nvlink_bus_bytes_per_s)
        + (rates.network_step_ns() + rates.nvlink_step_latency_ns) * 1e-9;
    let expected = SimDuration::from_seconds_ceil(seconds);
    let one_layer = Work::ExpertAllToAll {
        pass: ComputePass::Backward,
        layers: 1,
        dense_layers: 0,
        first_layer: 0,
        embedding: false,
        head: false,
        group_size: 64,
        nodes: 8,
        expert_tensor_group: (1, 1),
        segment: sim::cost::pair_overlap::piece_segment(1),
    };
    let network = ClosedFormNetwork::for_scenario(&scenario);
    let cost = &cost_works(&scenario, std::slice::from_ref(&one_layer), &network)[0];
    assert_eq!(cost.bytes, payload);
    assert_eq!(cost.duration, expected);
    // Against NCCL's all-to-all of the same payload: 56/64 of the k copies
    // over the rail, where DeepEP sends 3.2 distinct tokens per token.
    assert!(remote_nodes > 3.0 && remote_nodes < 3.5);
    scenario.options.moe_dispatcher = MoeDispatcher::Nccl;
    let nccl = cost_works(&scenario, &[one_layer], &network)[0].duration;
    assert_eq!(
        nccl,
        sim::collective::estimate(
            sim::collective::CollectiveOp::AllToAll,
            payload,
            &GroupShape::new(8, 8),
            &rates.with_nccl(scenario.stack.nccl),
            None
        )
        .duration
    );
    assert!(expected < nccl);
}

#[test]
fn what_the_options_need_is_refused_by_name() {
    let problems = |file: ScenarioFile| file.resolve().map(|_| ()).unwrap_err().to_string();
    let mut one_f_one_b = mixtral_pairs(true, None);
    one_f_one_b.schedule = Some(ScheduleKind::OneFOneB);
    one_f_one_b.chunks = Some(1);
    assert!(
        problems(one_f_one_b).contains("pair_overlap: only with the schedules that run F&B pairs")
    );
    let mut no_ep = mixtral_pairs(true, Some(MoeDispatcher::Deepep));
    no_ep.ep = Some(1);
    let text = problems(no_ep);
    assert!(text.contains("pair_overlap: needs ep > 1"), "{text}");
    assert!(
        text.contains("moe_dispatcher: deepep needs ep > 1"),
        "{text}"
    );
    let mut recompute = mixtral_pairs(true, None);
    recompute.recompute = Some(Recompute::Full);
    assert!(problems(recompute).contains("pair_overlap: not modeled with recompute"));
    let mut contention = mixtral_pairs(true, Some(MoeDispatcher::Deepep));
    contention.options.network_contention = Some(true);
    let text = problems(contention);
    assert!(
        text.contains("pair_overlap: not modeled under network_contention"),
        "{text}"
    );
    assert!(text.contains("moe_dispatcher: deepep is not modeled under network_contention"));
}

/// The task-count estimate (which sizes the graph and the host-memory
/// check) counts an overlapped pair's pieces and all-to-alls: no fewer
/// than the tasks built and at most twice as many, with 1 to 8 MoE layers
/// a chunk (it counted 1,664 for 2,884 at 8 before the pieces were counted).
#[test]
fn the_task_estimate_counts_the_pieces_of_overlapped_pairs() {
    for layers in [4, 8, 16, 32] {
        let mut file = mixtral_pairs(true, None);
        let mut model = models::preset("mixtral-8x7b").unwrap();
        model.layers = layers;
        file.model = Some(serde_json::to_value(&model).unwrap());
        let scenario = resolve(file);
        let tasks = sim::simulate(&scenario).unwrap().n_tasks as u64;
        let estimate = scenario.estimated_tasks();
        assert!(
            tasks <= estimate && estimate <= 2 * tasks,
            "{layers} layers: {tasks} tasks, estimated {estimate}"
        );
    }
}
