//! ZeRO-Offload (Ren et al., USENIX ATC'21): bytes over PCIe per step, the
//! delayed parameter update's overlap (exact, with controlled durations),
//! GPU-memory reduction, stream exclusivity, and rejected combinations.

use sim::scenario::{Recompute, Scenario, ScenarioFile, ScheduleKind};
use sim::task::{StreamKind, TaskKind};
use sim::task_graph::{ComputePass, Work};
use sim::time::SimDuration;
use std::collections::BTreeMap;
use timeline::Timeline;

/// An 8-layer model on one DGX-2 whose per-rank parameter counts divide by
/// every d used here (h = 512), so ZeRO-2 shards need no padding.
fn offload_file(tp: u32, dp: u32, microbatches: u32) -> ScenarioFile {
    ScenarioFile {
        model: Some(serde_json::json!({
            "name": "offload-8", "layers": 8, "hidden": 512, "heads": 8, "seq_len": 256, "vocab": 51200
        })),
        topology: Some("dgx2-v100".into()),
        tp: Some(tp),
        pp: Some(1),
        dp: Some(dp),
        microbatch_size: Some(1),
        global_batch: Some(microbatches * dp),
        schedule: Some(ScheduleKind::OneFOneB),
        recompute: Some(Recompute::None),
        // About two layers per bucket, so gradients stream during the backward.
        options: sim::scenario::TrainingOptionsFile {
            zero_offload: Some(true),
            offload_bucket_params: Some(7_000_000),
            ..Default::default()
        },
        ..ScenarioFile::default()
    }
}

/// Bytes of `kind` tasks per rank.
fn bytes_per_rank(timeline: &Timeline, kind: TaskKind) -> BTreeMap<u32, u64> {
    let mut sums = BTreeMap::new();
    for task in timeline.tasks.iter().filter(|t| t.kind == kind) {
        for &rank in &timeline.header.groups[task.group as usize] {
            *sums.entry(rank).or_insert(0) += task.bytes;
        }
    }
    sums
}

fn params_per_rank(scenario: &Scenario) -> u64 {
    models::sharding::parameters_on_rank(&scenario.model, scenario.layout.sharding(), 0)
}

#[test]
fn one_gpu_moves_two_bytes_per_parameter_each_way_per_step() {
    let scenario = offload_file(1, 1, 1).resolve().unwrap();
    let report = sim::simulate(&scenario).unwrap();
    let p = params_per_rank(&scenario);
    let down = bytes_per_rank(report.timeline(), TaskKind::PcieDeviceToHost);
    let up = bytes_per_rank(report.timeline(), TaskKind::PcieHostToDevice);
    assert_eq!(down, BTreeMap::from([(0, 2 * p)]));
    assert_eq!(up, BTreeMap::from([(0, 2 * p)]));
    // Several buckets, so the offload overlaps the backward.
    let copies = report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::PcieDeviceToHost)
        .count();
    assert!(copies >= 4, "{copies} buckets");
}

#[test]
fn each_of_d_gpus_moves_two_bytes_per_parameter_over_d_each_way() {
    for (tp, dp) in [(1, 4), (2, 4), (1, 16)] {
        let scenario = offload_file(tp, dp, 1).resolve().unwrap();
        let report = sim::simulate(&scenario).unwrap();
        let p = params_per_rank(&scenario);
        assert_eq!(p % dp as u64, 0, "test model divides evenly");
        let expected = 2 * p / dp as u64;
        for kind in [TaskKind::PcieDeviceToHost, TaskKind::PcieHostToDevice] {
            let sums = bytes_per_rank(report.timeline(), kind);
            assert_eq!(sums.len(), (tp * dp) as usize);
            assert!(
                sums.values().all(|&bytes| bytes == expected),
                "tp={tp} dp={dp} {kind:?}: {sums:?} vs {expected}"
            );
        }
        // ZeRO-2: every bucket is reduce-scattered, the parameters all-gathered once per data group.
        let count = |kind| {
            report
                .timeline()
                .tasks
                .iter()
                .filter(|t| t.kind == kind)
                .count()
        };
        assert_eq!(count(TaskKind::DataParallelAllGather), tp as usize);
        let buckets = sim::plan::OffloadPlan::new(&scenario).buckets.len();
        assert!(buckets >= 2);
        assert_eq!(
            count(TaskKind::DataParallelReduceScatter),
            buckets * tp as usize
        );
        assert_eq!(count(TaskKind::OptimizerStep), 0);
    }
}

#[test]
fn every_microbatch_offloads_its_gradients() {
    let scenario = offload_file(1, 1, 3).resolve().unwrap();
    let report = sim::simulate(&scenario).unwrap();
    let p = params_per_rank(&scenario);
    assert_eq!(
        bytes_per_rank(report.timeline(), TaskKind::PcieDeviceToHost)[&0],
        3 * 2 * p
    );
    assert_eq!(
        bytes_per_rank(report.timeline(), TaskKind::PcieHostToDevice)[&0],
        2 * p
    );
}

const FORWARD_NS_PER_LAYER: u64 = 1_000;
const BACKWARD_NS_PER_LAYER: u64 = 2_000;

/// Runs `iterations` iterations with forward/backward proportional to layers,
/// CPU Adam `cpu_ns` per step (one tile) and everything else free.
fn controlled_run(
    delayed: bool,
    iterations: u32,
    cpu_ns: u64,
) -> (Timeline, timeline::metrics::Metrics) {
    let scenario = ScenarioFile {
        iterations: Some(iterations),
        options: sim::scenario::TrainingOptionsFile {
            delayed_update: Some(delayed),
            ..offload_file(1, 1, 1).options.clone()
        },
        ..offload_file(1, 1, 1)
    }
    .resolve()
    .unwrap();
    let (_, graph) = sim::build_graph(&scenario);
    let costs = sim::uniform_costs(&graph, |work| match *work {
        Work::Compute {
            pass: ComputePass::Forward,
            layers,
            ..
        } => SimDuration(FORWARD_NS_PER_LAYER * layers as u64),
        Work::Compute {
            pass: ComputePass::Backward,
            layers,
            ..
        } => SimDuration(BACKWARD_NS_PER_LAYER * layers as u64),
        Work::CpuAdam {
            params,
            step_params,
            ..
        } => {
            assert_eq!(params, step_params, "the small model is one tile");
            SimDuration(cpu_ns)
        }
        _ => SimDuration::ZERO,
    });
    let (timeline, _) = sim::run_graph(&scenario, &graph, &costs).unwrap();
    let metrics = timeline::metrics::compute(&timeline, 125e12);
    (timeline, metrics)
}

#[test]
fn delayed_update_hides_the_shorter_of_cpu_and_gpu_step_after_warm_up() {
    let gpu_ns = 8 * (FORWARD_NS_PER_LAYER + BACKWARD_NS_PER_LAYER);
    for cpu_ns in [3 * gpu_ns, gpu_ns / 2, gpu_ns] {
        let (timeline, serial) = controlled_run(false, 5, cpu_ns);
        // Without DPU every iteration adds up: forward + backward, then the CPU step.
        let ends = timeline.iteration_ends_ns();
        let spans: Vec<u64> = ends.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(spans.iter().all(|&s| s == gpu_ns + cpu_ns), "{spans:?}");
        assert_eq!(ends[0], gpu_ns + cpu_ns);
        assert_eq!(serial.iteration_time_s, (gpu_ns + cpu_ns) as f64 * 1e-9);

        let (timeline, delayed) = controlled_run(true, 5, cpu_ns);
        let ends = timeline.iteration_ends_ns();
        // Warm-up iteration 0 is serial; afterwards the step is max(GPU, CPU).
        assert_eq!(ends[0], gpu_ns + cpu_ns);
        let steady = ends[4] - ends[3];
        assert_eq!(steady, gpu_ns.max(cpu_ns), "cpu {cpu_ns} gpu {gpu_ns}");
        assert_eq!(ends[3] - ends[2], steady);
        assert_eq!(
            (gpu_ns + cpu_ns) - steady,
            gpu_ns.min(cpu_ns),
            "DPU hides min(CPU step, GPU step)"
        );
        assert_eq!(delayed.iteration_time_s, steady as f64 * 1e-9);
        assert_eq!(delayed.iterations, 5);
        assert_eq!(delayed.iteration_times_s.len(), 5);
        // Compute is per iteration, and exposed offload time is what the GPU waits in steady state.
        assert!((delayed.compute_time_s - gpu_ns as f64 * 1e-9).abs() < 1e-15);
        let waited = steady - gpu_ns;
        assert!((delayed.exposed_communication.offload_s - waited as f64 * 1e-9).abs() < 1e-15);
    }
}

#[test]
fn offload_cuts_gpu_model_states_eightfold() {
    let memory = |file: ScenarioFile| {
        let scenario = file.resolve().unwrap();
        sim::simulate(&scenario).unwrap().memory.remove(0)
    };
    let offload = memory(offload_file(1, 1, 1));
    let plain = memory(ScenarioFile {
        options: sim::scenario::TrainingOptionsFile {
            zero_offload: None,
            offload_bucket_params: None,
            ..offload_file(1, 1, 1).options.clone()
        },
        ..offload_file(1, 1, 1)
    });
    let plain_states = plain.weight_bytes + plain.gradient_bytes + plain.optimizer_state_bytes;
    assert_eq!(plain_states, 16 * plain.parameters);
    assert_eq!(
        offload.weight_bytes + offload.optimizer_state_bytes,
        2 * offload.parameters
    );
    assert_eq!(
        plain_states / (offload.weight_bytes + offload.optimizer_state_bytes),
        8
    );
    // Gradients on the GPU are at most two buckets in flight (here the
    // embedding bucket is most of this small model); the rest is on the CPU.
    assert!(offload.gradient_bytes <= plain.gradient_bytes);
    assert!(offload.total_bytes < plain.total_bytes);
    assert_eq!(offload.cpu_bytes, 14 * offload.parameters);
    // ZeRO-2 over 16 GPUs: each CPU process holds 1/16 of the states.
    let sharded = memory(offload_file(1, 16, 1));
    assert_eq!(sharded.cpu_bytes, 14 * sharded.parameters / 16);
    assert_eq!(sharded.cpu_capacity_bytes, (1536u64 << 30) / 16);
}

#[test]
fn offload_streams_run_one_task_at_a_time_and_respect_dependencies() {
    for (tp, dp, delayed) in [(1, 1, true), (2, 4, true), (4, 4, false), (1, 16, true)] {
        let scenario = ScenarioFile {
            recompute: Some(Recompute::Full),
            options: sim::scenario::TrainingOptionsFile {
                delayed_update: Some(delayed),
                ..offload_file(tp, dp, 2).options.clone()
            },
            ..offload_file(tp, dp, 2)
        }
        .resolve()
        .unwrap();
        let (_, graph) = sim::build_graph(&scenario);
        let report = sim::simulate(&scenario).unwrap();
        let tasks = &report.timeline().tasks;
        for (from, to, _) in graph.edges() {
            let (from, to) = (&tasks[from.index()], &tasks[to.index()]);
            assert!(from.end_ns <= to.start_ns);
        }
        let mut lanes: BTreeMap<(u32, StreamKind), Vec<(u64, u64)>> = BTreeMap::new();
        for task in tasks {
            for &rank in &report.timeline().header.groups[task.group as usize] {
                lanes
                    .entry((rank, task.stream))
                    .or_default()
                    .push((task.start_ns, task.end_ns));
            }
        }
        for ((rank, stream), mut intervals) in lanes {
            intervals.sort_unstable();
            for pair in intervals.windows(2) {
                assert!(
                    pair[0].1 <= pair[1].0,
                    "tp={tp} dp={dp}: rank {rank} {stream:?} overlaps"
                );
            }
        }
        for stream in [
            StreamKind::PcieDeviceToHost,
            StreamKind::PcieHostToDevice,
            StreamKind::Cpu,
        ] {
            assert!(tasks.iter().any(|t| t.stream == stream), "{stream:?} lane");
        }
        // The JSON round trip keeps the iteration tags.
        let mut text = Vec::new();
        report.timeline().write_json(&mut text).unwrap();
        let back: Timeline = serde_json::from_slice(&text).unwrap();
        assert_eq!(&back, report.timeline());
    }
}

#[test]
fn unsupported_combinations_are_rejected_with_their_reason() {
    let error = |file: ScenarioFile| file.resolve().unwrap_err().to_string();
    let text = error(ScenarioFile {
        options: sim::scenario::TrainingOptionsFile {
            zero_offload: None,
            offload_bucket_params: None,
            delayed_update: Some(true),
            ..offload_file(1, 1, 1).options.clone()
        },
        ..offload_file(1, 1, 1)
    });
    assert!(
        text.contains("delayed_update: needs zero_offload"),
        "{text}"
    );
    let text = error(ScenarioFile {
        pp: Some(2),
        ..offload_file(1, 1, 1)
    });
    assert!(
        text.contains("pipeline parallelism is not supported with ZeRO-Offload"),
        "{text}"
    );
}

#[test]
fn pcie_and_cpu_get_their_own_lanes_in_the_timeline_chart() {
    let scenario = ScenarioFile {
        options: sim::scenario::TrainingOptionsFile {
            delayed_update: Some(true),
            ..offload_file(1, 1, 1).options.clone()
        },
        ..offload_file(1, 1, 1)
    }
    .resolve()
    .unwrap();
    let report = sim::simulate(&scenario).unwrap();
    let path = std::env::temp_dir().join(format!("offload-lanes-{}.svg", std::process::id()));
    let options = reports::TimelineChartOptions {
        lanes_per_stream: true,
        ..reports::TimelineChartOptions::default()
    };
    let summary = reports::render_timeline(report.timeline(), &options, &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(summary.lanes, 4, "compute, pcie_d2h, pcie_h2d, cpu");
    for lane in ["rank 0 · pcie_d2h", "rank 0 · pcie_h2d", "rank 0 · cpu"] {
        assert!(svg.contains(lane), "missing lane {lane}");
    }
    assert_eq!(summary.blocks, report.timeline().tasks.len());
}
