//! The MoE token dispatcher's host synchronization and the experts' per-expert
//! kernels as the engine runs them (issue 17): Megatron-Core's
//! `MoEAlltoAllTokenDispatcher` reads the tokens per expert on the host once
//! per MoE layer forward (`token_dispatcher.py` at core_r0.15.0), so a forward
//! is cut into one segment per MoE layer plus one, and the host issues each
//! segment only after the GPU has run the one before; Transformer Engine's
//! `GroupedLinear` launches one quantization and one GEMM per local expert.

use sim::scenario::{Precision, Recompute, Scenario, ScenarioFile, TrainingOptionsFile};
use sim::task::{StreamKind, TaskKind};

/// Qwen3-30B-A3B (48 layers, 128 experts, top-8) on 16 H100s: t 1, p 2,
/// d 8, ep 8 (16 local experts), FP8, megatron-core-2024's host lane.
fn qwen3_30b() -> Scenario {
    ScenarioFile {
        model: Some("qwen3-30b-a3b".into()),
        seq_len: Some(4096),
        topology: Some("dgx-h100-superpod".into()),
        stack: Some("megatron-core-2024".into()),
        tp: Some(1),
        pp: Some(2),
        dp: Some(8),
        ep: Some(8),
        chunks: Some(1),
        microbatch_size: Some(1),
        global_batch: Some(16),
        recompute: Some(Recompute::None),
        options: TrainingOptionsFile {
            precision: Some(Precision::Fp8),
            distributed_optimizer: Some(true),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    }
    .resolve()
    .expect("valid scenario")
}

#[test]
fn a_forward_is_cut_at_every_moe_layers_sync_and_the_host_waits_for_the_gpu_there() {
    let scenario = qwen3_30b();
    let host = scenario
        .stack
        .host
        .expect("megatron-core-2024 has a host lane");
    let report = sim::simulate(&scenario).unwrap();
    let timeline = report.timeline();
    let on_rank0 = |t: &&timeline::TaskRecord| {
        timeline.header.groups[t.group as usize].contains(&0) && t.microbatch == Some(0)
    };
    let mut forwards: Vec<_> = timeline
        .tasks
        .iter()
        .filter(on_rank0)
        .filter(|t| t.kind == TaskKind::Forward)
        .collect();
    forwards.sort_by_key(|t| t.start_ns);
    let backwards = timeline
        .tasks
        .iter()
        .filter(on_rank0)
        .filter(|t| t.kind == TaskKind::Backward)
        .count();
    // 24 MoE layers on stage 0: 24 synchronizations, 25 segments; the
    // backward reuses the host-side splits: one task.
    assert_eq!(forwards.len(), 25);
    assert_eq!(backwards, 1);
    // The host lane of rank 0, microbatch 0, in time order: (first kernel,
    // the rest) per segment, the forward's 25 segments first.
    let mut issues: Vec<_> = timeline
        .tasks
        .iter()
        .filter(on_rank0)
        .filter(|t| t.kind == TaskKind::HostIssue && t.stream == StreamKind::Host)
        .collect();
    issues.sort_by_key(|t| t.start_ns);
    for k in 1..25 {
        let first = issues[2 * k];
        // The synchronization: the host waits for the GPU's previous segment…
        assert!(
            first.start_ns >= forwards[k - 1].end_ns,
            "segment {k}: host at {} before the GPU's segment ended at {}",
            first.start_ns,
            forwards[k - 1].end_ns
        );
        // …so the GPU idles at least one kernel's issue between segments.
        assert!(forwards[k].start_ns >= first.end_ns);
        assert!(forwards[k].start_ns - forwards[k - 1].end_ns >= host.kernel_issue_ns);
        assert_eq!(first.duration_ns(), host.kernel_issue_ns);
    }
    // A middle segment issues, after its first kernel: the dispatch and the
    // combine all-to-all calls, and 80 more kernels — 16 local experts × (fc1
    // cast, fc1 GEMM, fc2 cast, fc2 GEMM), the SwiGLU, unpermute, the second
    // residual; then the next layer's norm, QKV cast and GEMM, q/k norms,
    // RoPE, attention, projection cast and GEMM, residual, norm, router,
    // top-k and permute (81 kernels in all).
    let kernels = 16 * 4 + 3 + 14;
    for k in 1..24 {
        assert_eq!(
            issues[2 * k + 1].duration_ns(),
            host.kernel_issue_ns * (kernels - 1) + host.collective_call_ns * 2,
            "segment {k}"
        );
    }
}

#[test]
fn without_a_host_lane_a_forward_stays_one_task() {
    let mut scenario = qwen3_30b();
    scenario.stack.host = None;
    let report = sim::simulate(&scenario).unwrap();
    let timeline = report.timeline();
    let forwards = timeline
        .tasks
        .iter()
        .filter(|t| {
            t.kind == TaskKind::Forward
                && t.microbatch == Some(0)
                && timeline.header.groups[t.group as usize].contains(&0)
        })
        .count();
    assert_eq!(forwards, 1);
}

#[test]
fn the_segments_of_a_forward_sum_to_the_whole_pass() {
    use sim::cost::{cost_works, host_syncs, ClosedFormNetwork};
    use sim::task_graph::{ComputePass, Work, WHOLE_PASS};
    let scenario = qwen3_30b();
    let network = ClosedFormNetwork::for_scenario(&scenario);
    let work = |segment, fp8_weight_cast| Work::Compute {
        pass: ComputePass::Forward,
        layers: 3,
        dense_layers: 0,
        first_layer: 0,
        embedding: false,
        head: false,
        fp8_weight_cast,
        segment,
    };
    assert_eq!(host_syncs(&scenario, ComputePass::Forward, 3, 0), 3);
    assert_eq!(host_syncs(&scenario, ComputePass::Backward, 3, 0), 0);
    assert_eq!(host_syncs(&scenario, ComputePass::Recompute, 3, 1), 2);
    for cast in [false, true] {
        let mut works: Vec<_> = (0..4).map(|s| work(s, cast)).collect();
        works.push(work(WHOLE_PASS, cast));
        let costs = cost_works(&scenario, &works, &network);
        let flops: f64 = costs[..4].iter().map(|c| c.flops).sum();
        let bytes: u64 = costs[..4].iter().map(|c| c.bytes).sum();
        let ns: u64 = costs[..4].iter().map(|c| c.duration.0).sum();
        assert!((flops - costs[4].flops).abs() <= 1e-9 * costs[4].flops);
        // Each part's bytes and time are rounded down/up once.
        assert!(bytes.abs_diff(costs[4].bytes) <= 4);
        assert!(ns.abs_diff(costs[4].duration.0) <= 4);
        // The weight casts (the chunk's first forward) are in segment 0 only.
        if cast {
            let plain = cost_works(&scenario, &[work(0, false), work(1, false)], &network);
            assert!(costs[0].bytes > plain[0].bytes);
            assert_eq!(costs[1].bytes, plain[1].bytes);
        }
    }
}
