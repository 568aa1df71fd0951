//! Properties every simulated timeline must have, checked on a spread of
//! layouts and schedules with the real cost model: every task runs exactly
//! once, after all its predecessors; no stream of any rank runs two tasks at
//! once; the makespan is at least the critical path; same inputs give
//! byte-identical timelines.

use sim::scenario::{Recompute, ScenarioFile, ScheduleKind};
use std::collections::BTreeMap;
use tests::small_scenario;

fn scenarios() -> Vec<sim::scenario::Scenario> {
    let mut list = vec![
        small_scenario(ScheduleKind::Gpipe, 2, 4, 2, 1, 8),
        small_scenario(ScheduleKind::OneFOneB, 4, 4, 2, 1, 8),
        small_scenario(ScheduleKind::OneFOneB, 8, 2, 3, 1, 5),
        small_scenario(ScheduleKind::Interleaved, 2, 4, 2, 2, 8),
        small_scenario(ScheduleKind::Interleaved, 1, 4, 1, 3, 12),
        small_scenario(ScheduleKind::OneFOneB, 1, 1, 4, 1, 3),
    ];
    let mut recompute = small_scenario(ScheduleKind::Interleaved, 8, 4, 2, 2, 8);
    recompute.recompute = Recompute::Full;
    list.push(recompute);
    let mut overlapped = small_scenario(ScheduleKind::Interleaved, 2, 4, 2, 3, 8);
    overlapped.options.overlap_grad_reduce = true;
    overlapped.recompute = Recompute::Selective;
    overlapped.options.sequence_parallel = true;
    list.push(overlapped);
    // Gradient buckets of 3 layers' parameters (model layer: 12·512² + 13·512 over t = 2).
    let mut bucketed = small_scenario(ScheduleKind::Interleaved, 2, 2, 2, 2, 4);
    bucketed.options.overlap_grad_reduce = true;
    bucketed.options.grad_reduce_bucket_params = Some(3 * (12 * 512 * 512 + 13 * 512) / 2);
    bucketed.recompute = Recompute::Full;
    list.push(bucketed);
    let mut bucketed_flat = small_scenario(ScheduleKind::OneFOneB, 4, 1, 3, 1, 3);
    bucketed_flat.options.overlap_grad_reduce = true;
    bucketed_flat.options.grad_reduce_bucket_params = Some(1);
    list.push(bucketed_flat);
    // Split backwards: ZB-H1 with its last weight-gradient passes cut into
    // buckets all-reduced as they finish, ZB-H2 with full recompute.
    let mut zb_h1 = small_scenario(ScheduleKind::ZbH1, 2, 4, 2, 1, 8);
    zb_h1.options.overlap_grad_reduce = true;
    zb_h1.options.grad_reduce_bucket_params = Some(3 * (12 * 512 * 512 + 13 * 512) / 2);
    list.push(zb_h1);
    let mut zb_h2 = small_scenario(ScheduleKind::ZbH2, 2, 4, 2, 1, 8);
    zb_h2.recompute = Recompute::Full;
    list.push(zb_h2);
    // Looped BFS with its chunks' last backwards (microbatch 0) cut into
    // buckets, and interleaved with Megatron-Core's microbatch groups (m = 10
    // on p = 4: groups of 5).
    let mut looped = small_scenario(ScheduleKind::LoopedBfs, 2, 4, 2, 2, 8);
    looped.options.overlap_grad_reduce = true;
    looped.options.grad_reduce_bucket_params = Some(3 * (12 * 512 * 512 + 13 * 512) / 2);
    looped.recompute = Recompute::Full;
    list.push(looped);
    list.push(
        ScenarioFile {
            microbatch_group_size: Some(5),
            ..tests::small_scenario_file(ScheduleKind::Interleaved, 2, 4, 2, 2, 10)
        }
        .resolve()
        .unwrap(),
    );
    list
}

#[test]
fn every_task_runs_once_after_all_its_predecessors() {
    for scenario in scenarios() {
        let (_, graph) = sim::build_graph(&scenario);
        let report = sim::simulate(&scenario).unwrap();
        let tasks = &report.timeline().tasks;
        assert_eq!(tasks.len(), graph.task_count());
        for (index, task) in tasks.iter().enumerate() {
            assert_eq!(task.id as usize, index, "one record per task, in id order");
        }
        for (from, to, _) in graph.edges() {
            let (from, to) = (&tasks[from.index()], &tasks[to.index()]);
            assert!(
                from.end_ns <= to.start_ns,
                "{}: task {} starts before predecessor {} ends",
                scenario.title(),
                to.id,
                from.id
            );
        }
        // Makespan ≥ longest path by durations (a DAG lower bound).
        let order = graph.topological_order().unwrap();
        let mut finish = vec![0u64; tasks.len()];
        for node in order {
            let ready = graph
                .predecessors(node)
                .map(|p| finish[p.index()])
                .max()
                .unwrap_or(0);
            finish[node.index()] = ready + tasks[node.index()].duration_ns();
        }
        assert_eq!(
            report.timeline().makespan_ns(),
            *finish.iter().max().unwrap(),
            "{}: with dependency-only starts the makespan equals the critical path",
            scenario.title()
        );
    }
}

#[test]
fn no_stream_of_any_rank_runs_two_tasks_at_once() {
    for scenario in scenarios() {
        let report = sim::simulate(&scenario).unwrap();
        let timeline = &report.timeline();
        let mut per_stream: BTreeMap<(u32, sim::task::StreamKind), Vec<(u64, u64)>> =
            BTreeMap::new();
        for task in &timeline.tasks {
            for &rank in &timeline.header.groups[task.group as usize] {
                per_stream
                    .entry((rank, task.stream))
                    .or_default()
                    .push((task.start_ns, task.end_ns));
            }
        }
        for ((rank, stream), mut intervals) in per_stream {
            intervals.sort_unstable();
            for pair in intervals.windows(2) {
                assert!(
                    pair[0].1 <= pair[1].0,
                    "{}: rank {rank} {stream:?} overlaps {pair:?}",
                    scenario.title()
                );
            }
        }
    }
}

#[test]
fn same_inputs_give_byte_identical_timelines() {
    let scenario = ScenarioFile {
        dp: Some(2),
        global_batch: Some(64),
        ..ScenarioFile::embedded_default()
    }
    .resolve()
    .unwrap();
    let bytes = || {
        let mut out = Vec::new();
        sim::simulate(&scenario)
            .unwrap()
            .into_timeline()
            .write_json_lines(&mut out)
            .unwrap();
        out
    };
    let (first, second) = (bytes(), bytes());
    assert!(first.len() > 1000);
    assert!(first == second, "two runs of the same scenario differ");
}

#[test]
fn timelines_round_trip_through_both_file_forms() {
    let scenario = small_scenario(ScheduleKind::Interleaved, 2, 4, 2, 2, 8);
    let timeline = sim::simulate(&scenario).unwrap().into_timeline();
    let dir = std::env::temp_dir().join(format!("clustersim-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["t.json", "t.jsonl"] {
        let path = dir.join(name);
        let file = std::fs::File::create(&path).unwrap();
        if name.ends_with(".jsonl") {
            timeline.write_json_lines(file).unwrap();
        } else {
            timeline.write_json(file).unwrap();
        }
        assert_eq!(timeline::Timeline::read(&path).unwrap(), timeline, "{name}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn tflops_count_equals_megatron_eq3_for_the_1t_model_layout() {
    // Small global batch keeps the test fast; FLOPs scale linearly in B.
    let scenario = ScenarioFile {
        model: Some("gpt-1t".into()),
        tp: Some(8),
        pp: Some(4),
        dp: Some(1),
        global_batch: Some(8),
        recompute: Some(Recompute::Full),
        ..ScenarioFile::embedded_default()
    };
    // 128 layers on 4 stages (the layout only has to be valid; FLOPs do not depend on it).
    let scenario = scenario.resolve().unwrap();
    let report = sim::simulate(&scenario).unwrap();
    let m = &report.metrics;
    let total_flops = m.tflops_per_gpu * 1e12 * m.iteration_time_s * scenario.layout.gpus() as f64;
    let eq3 = models::formulas::flops_per_iteration_full_recompute(&scenario.model, 8);
    assert!(
        (total_flops - eq3).abs() / eq3 < 1e-9,
        "{total_flops} vs {eq3}"
    );
    let model_flops =
        m.model_tflops_per_gpu * 1e12 * m.iteration_time_s * scenario.layout.gpus() as f64;
    let no_recompute = models::formulas::flops_per_iteration_no_recompute(&scenario.model, 8);
    assert!((model_flops - no_recompute).abs() / no_recompute < 1e-9);
}

#[test]
fn dev_set_predictions_stay_where_they_are() {
    // Not a fit: the default profile is built from hardware facts only, and
    // every case runs under the software stack its source used. This pins
    // every dev-set error (percent, predicted vs published) to within 0.5
    // points, so any change to the cost model shows up here and must update
    // this table and the README's on purpose. Known optimism (issue 13): the
    // Korthikanti runs' asynchronous tensor all-reduce slows the
    // weight-gradient GEMM beside it only by the SMs NCCL's channels hold
    // (not by the HBM bandwidth it takes); memory-bound kernels run near the
    // HBM roofline.
    const PINNED: [(&str, &str, f64); 20] = [
        (
            "korthikanti22-22b",
            "iteration_time_s (full recompute)",
            0.8,
        ),
        (
            "korthikanti22-22b",
            "iteration_time_s (SP + selective)",
            -0.4,
        ),
        (
            "korthikanti22-22b",
            "model_flops_utilization_percent (SP + selective)",
            0.8,
        ),
        (
            "korthikanti22-175b",
            "iteration_time_s (full recompute)",
            2.9,
        ),
        (
            "korthikanti22-175b",
            "iteration_time_s (SP + selective)",
            3.2,
        ),
        (
            "korthikanti22-175b",
            "model_flops_utilization_percent (SP + selective)",
            -3.1,
        ),
        (
            "korthikanti22-530b",
            "iteration_time_s (full recompute)",
            6.2,
        ),
        (
            "korthikanti22-530b",
            "iteration_time_s (SP + selective)",
            6.7,
        ),
        (
            "korthikanti22-530b",
            "model_flops_utilization_percent (SP + selective)",
            -6.2,
        ),
        ("korthikanti22-1t", "iteration_time_s (full recompute)", 8.4),
        (
            "korthikanti22-1t",
            "iteration_time_s (SP + selective)",
            10.7,
        ),
        (
            "korthikanti22-1t",
            "model_flops_utilization_percent (SP + selective)",
            -9.7,
        ),
        (
            "korthikanti22-530b-dp8",
            "iteration_time_s (SP + selective)",
            3.8,
        ),
        (
            "megatron-sc21-1t-3072",
            "aggregate_pflops (full recompute)",
            -2.1,
        ),
        (
            "megatron-sc21-1t-3072",
            "percent_of_peak (full recompute)",
            -1.4,
        ),
        (
            "megatron-sc21-1t-3072",
            "tflops_per_gpu (full recompute)",
            -1.9,
        ),
        ("korthikanti22-22b-layer", "backward_ms_full_recompute", 1.1),
        ("korthikanti22-22b-layer", "backward_ms_no_recompute", -0.7),
        (
            "korthikanti22-22b-layer",
            "backward_ms_selective_recompute",
            -1.4,
        ),
        ("korthikanti22-22b-layer", "forward_ms", 2.5),
    ];
    let path = tests::dev_set_path();
    let rows = studies::validation::run_dev_set(&std::fs::read_to_string(path).unwrap()).unwrap();
    let predicted: Vec<_> = rows.iter().filter(|r| r.predicted.is_some()).collect();
    assert_eq!(predicted.len(), PINNED.len(), "{rows:?}");
    for (row, (case, quantity, pinned)) in predicted.iter().zip(PINNED) {
        assert_eq!((row.case.as_str(), row.quantity.as_str()), (case, quantity));
        let error = row.error_percent.unwrap();
        assert!(
            (error - pinned).abs() < 0.5,
            "{case} {quantity}: error {error:+.1}% moved from the pinned {pinned:+.1}%"
        );
    }
}

#[test]
fn overlapped_gradient_reduction_hides_part_of_the_data_parallel_all_reduce() {
    let scenario = ScenarioFile {
        model: Some("gpt-530b".into()),
        tp: Some(8),
        pp: Some(35),
        dp: Some(2),
        chunks: Some(3),
        schedule: Some(ScheduleKind::Interleaved),
        global_batch: Some(70),
        recompute: Some(Recompute::Full),
        ..ScenarioFile::embedded_default()
    };
    let plain = sim::simulate(&scenario.clone().resolve().unwrap()).unwrap();
    let overlapped = ScenarioFile {
        options: sim::scenario::TrainingOptionsFile {
            overlap_grad_reduce: Some(true),
            ..scenario.options.clone()
        },
        ..scenario
    }
    .resolve()
    .unwrap();
    let overlapped = sim::simulate(&overlapped).unwrap();
    let (a, b) = (&plain.metrics, &overlapped.metrics);
    // Same bytes reduced (split per chunk), less of it exposed, never a slower iteration.
    let dp_bytes = |r: &sim::SimulationReport| -> u64 {
        r.timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == sim::task::TaskKind::DataParallelAllReduce)
            .map(|t| t.bytes)
            .sum()
    };
    assert_eq!(dp_bytes(&plain), dp_bytes(&overlapped));
    assert!(
        b.exposed_communication.data_parallel_s < 0.6 * a.exposed_communication.data_parallel_s,
        "{:?} vs {:?}",
        b.exposed_communication,
        a.exposed_communication
    );
    assert!(b.iteration_time_s <= a.iteration_time_s);
}

fn has_rank_zero(report: &sim::SimulationReport, group: u32) -> bool {
    report.timeline().header.groups[group as usize].contains(&0)
}

#[test]
fn gradient_buckets_start_reducing_during_the_last_backward() {
    // SC21's 18B configuration (t=8, p=1, d=32, b=8, B=1024: m=4) as NVIDIA's
    // script ran it, with PyTorch DDP's 25 MB buckets: one chunk, so per-chunk
    // overlap hides nothing, while buckets hide nearly all of the all-reduce.
    let file = ScenarioFile {
        model: Some(serde_json::json!({
            "name": "gpt-18b", "layers": 40, "hidden": 6144, "heads": 48, "seq_len": 2048, "vocab": 51200
        })),
        tp: Some(8),
        pp: Some(1),
        dp: Some(32),
        microbatch_size: Some(8),
        global_batch: Some(1024),
        recompute: Some(Recompute::Full),
        ..ScenarioFile::embedded_default()
    };
    let run = |overlap: Option<bool>, bucket: Option<u64>| {
        let scenario = ScenarioFile {
            options: sim::scenario::TrainingOptionsFile {
                overlap_grad_reduce: overlap,
                grad_reduce_bucket_params: bucket,
                ..file.options.clone()
            },
            ..file.clone()
        }
        .resolve()
        .unwrap();
        sim::simulate(&scenario).unwrap()
    };
    let plain = run(None, None);
    let per_chunk = run(Some(true), None);
    let bucketed = run(Some(true), Some(12_500_000));
    let reductions = |r: &sim::SimulationReport| -> Vec<(u64, u64)> {
        r.timeline()
            .tasks
            .iter()
            .filter(|t| {
                t.kind == sim::task::TaskKind::DataParallelAllReduce && has_rank_zero(r, t.group)
            })
            .map(|t| (t.start_ns, t.bytes))
            .collect()
    };
    let exposed = |r: &sim::SimulationReport| r.metrics.exposed_communication.data_parallel_s;
    assert_eq!(
        exposed(&plain),
        exposed(&per_chunk),
        "one chunk: nothing to overlap"
    );
    // 56.6 M parameters per layer and rank exceed a bucket: one bucket per layer.
    let buckets = reductions(&bucketed);
    assert_eq!(buckets.len(), 40);
    let total = |list: Vec<(u64, u64)>| list.iter().map(|r| r.1).sum::<u64>();
    assert_eq!(total(buckets.clone()), total(reductions(&plain)));
    // Splitting the last backward into buckets changes no work.
    let backward_flops = |r: &sim::SimulationReport| -> f64 {
        r.timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == sim::task::TaskKind::Backward)
            .map(|t| t.flops)
            .sum()
    };
    let (a, b) = (backward_flops(&plain), backward_flops(&bucketed));
    assert!((a - b).abs() <= 1e-9 * a, "{a} vs {b}");
    // The first bucket starts while later layers' backward is still running.
    let last_backward_end = bucketed
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == sim::task::TaskKind::Backward && has_rank_zero(&bucketed, t.group))
        .map(|t| t.end_ns)
        .max()
        .unwrap();
    assert!(buckets[0].0 < last_backward_end);
    assert!(
        exposed(&bucketed) < 0.1 * exposed(&plain),
        "{} vs {}",
        exposed(&bucketed),
        exposed(&plain)
    );
    assert!(bucketed.metrics.iteration_time_s < plain.metrics.iteration_time_s);
}
