//! Flow-level contention in the engine (`--contention`): transfers alone on
//! the fabric take their closed-form time, across nodes and inside one;
//! transfers that share a NIC or an NVSwitch port split its bandwidth.

use sim::scenario::{Recompute, ScenarioFile, ScheduleKind};
use sim::task::TaskKind;

/// 2 nodes × 2 GPUs, one NIC per node; t=2 inside each node, d=2 across them,
/// so the two data-parallel all-reduces (ranks 0,2 and 1,3) share each node's NIC.
fn shared_nic_scenario(contention: bool) -> sim::scenario::Scenario {
    let mut topology = serde_json::to_value(topologies::preset("selene").unwrap()).unwrap();
    topology["name"] = "two-small-nodes".into();
    topology["nodes"] = 2.into();
    topology["node"]["gpus_per_node"] = 2.into();
    topology["fabric"]["nics_per_node"] = 1.into();
    ScenarioFile {
        model: Some("tiny".into()),
        topology: Some(topology),
        tp: Some(2),
        pp: Some(1),
        dp: Some(2),
        global_batch: Some(2),
        schedule: Some(ScheduleKind::OneFOneB),
        recompute: Some(Recompute::None),
        options: sim::scenario::TrainingOptionsFile {
            network_contention: Some(contention),
            ..Default::default()
        },
        ..ScenarioFile::default()
    }
    .resolve()
    .unwrap()
}

fn durations_of(scenario: &sim::scenario::Scenario, kind: TaskKind) -> Vec<(u64, u64, u64)> {
    let report = sim::simulate(scenario).unwrap();
    report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == kind)
        .map(|t| (t.start_ns, t.duration_ns(), t.bytes))
        .collect()
}

fn data_parallel_durations(scenario: &sim::scenario::Scenario) -> Vec<(u64, u64, u64)> {
    durations_of(scenario, TaskKind::DataParallelAllReduce)
}

/// One DGX A100 node: everything inside the NVSwitch domain.
fn one_node(file: ScenarioFile, contention: bool) -> sim::scenario::Scenario {
    ScenarioFile {
        topology: Some("dgx-a100".into()),
        options: sim::scenario::TrainingOptionsFile {
            network_contention: Some(contention),
            ..file.options.clone()
        },
        ..file
    }
    .resolve()
    .unwrap()
}

#[test]
fn lone_nvlink_rings_and_transfers_take_their_closed_form_time() {
    // t=2, p=4: tensor rings of two GPUs and pipeline sends between stages, all
    // inside one node. With GPipe and blocking sends no two of them use the
    // same NVSwitch port at the same instant, so each keeps its closed form.
    let file = ScenarioFile {
        model: Some("tiny".into()),
        tp: Some(2),
        pp: Some(4),
        dp: Some(1),
        global_batch: Some(4),
        schedule: Some(ScheduleKind::Gpipe),
        recompute: Some(Recompute::Full),
        ..ScenarioFile::default()
    };
    for kind in [
        TaskKind::TensorAllReduce,
        TaskKind::PipelineActivation,
        TaskKind::PipelineGradient,
    ] {
        let with = durations_of(&one_node(file.clone(), true), kind);
        assert!(!with.is_empty(), "{kind:?} tasks exist");
        let without = durations_of(&one_node(file.clone(), false), kind);
        assert_eq!(with.len(), without.len());
        for (a, b) in with.iter().zip(&without) {
            assert!(
                (a.1 as i64 - b.1 as i64).abs() <= 1,
                "{kind:?}: contention {a:?} vs closed form {b:?}"
            );
        }
    }
    // They did run on the fabric: only NVSwitch ports carried bytes.
    let report = sim::simulate(&one_node(file, true)).unwrap();
    assert!(!report.busiest_links.is_empty());
    assert!(
        report
            .busiest_links
            .iter()
            .all(|l| l.link.starts_with("nvlink")),
        "{:?}",
        report.busiest_links
    );
}

#[test]
fn an_overlapped_gradient_ring_shares_nvswitch_ports_with_tensor_rings() {
    // t=2, p=2, d=2 interleaved on one node: with --overlap-grad-reduce, chunk 1's
    // data-parallel ring (GPUs 0→2→0, …) runs while chunk 0's backward runs its
    // tensor rings (0→1→0, …) through the same NVSwitch ports.
    let file = ScenarioFile {
        model: Some("gpt-22b".into()),
        tp: Some(2),
        pp: Some(2),
        dp: Some(2),
        chunks: Some(2),
        schedule: Some(ScheduleKind::Interleaved),
        global_batch: Some(8),
        recompute: Some(Recompute::Full),
        options: sim::scenario::TrainingOptionsFile {
            overlap_grad_reduce: Some(true),
            ..Default::default()
        },
        ..ScenarioFile::default()
    };
    let total = |durations: Vec<(u64, u64, u64)>| durations.iter().map(|d| d.1).sum::<u64>();
    let with = durations_of(
        &one_node(file.clone(), true),
        TaskKind::DataParallelAllReduce,
    );
    let without = durations_of(
        &one_node(file.clone(), false),
        TaskKind::DataParallelAllReduce,
    );
    assert_eq!(with.len(), without.len());
    assert!(
        total(with.clone()) > total(without.clone()),
        "contention {with:?} vs closed form {without:?}"
    );
    // Every byte still moves: the same tasks carry the same payloads.
    assert_eq!(
        with.iter().map(|d| d.2).collect::<Vec<_>>(),
        without.iter().map(|d| d.2).collect::<Vec<_>>()
    );
}

#[test]
fn two_rings_through_one_nic_each_get_half_its_bandwidth() {
    let contended = data_parallel_durations(&shared_nic_scenario(true));
    assert_eq!(contended.len(), 2);
    assert_eq!(
        contended[0].0, contended[1].0,
        "both all-reduces start together"
    );
    let bytes = contended[0].2 as f64;
    // Ring of 2 ranks on 2 nodes: each hop carries 2(n−1)/n = 1 × bytes; two flows share 24 GB/s.
    // Tail: the latency of NCCL 2.12's Simple ring, which its tuner picks here
    // (tuning.cc: 8.4 µs + (2 − 4) NVLink steps × 3.4 + 4 network steps × 28, × 1.9).
    let expected_ns = (bytes / 12e9 * 1e9).ceil() + (8.4 - 2.0 * 3.4 + 4.0 * 28.0) * 1.9 * 1e3;
    for &(_, duration, _) in &contended {
        assert!(
            (duration as f64 - expected_ns).abs() <= 2.0,
            "{duration} vs {expected_ns}"
        );
    }
}

#[test]
fn a_lone_cross_node_ring_takes_its_closed_form_time() {
    // One all-reduce at a time: t=1 on the same 2×2 cluster uses one rank per node and one group.
    let mut scenario = shared_nic_scenario(true);
    scenario.layout.tensor_parallel = crate::degree(1);
    scenario.layout.data_parallel = crate::degree(2);
    let contended = data_parallel_durations(&scenario);
    scenario.options.network_contention = false;
    let closed_form = data_parallel_durations(&scenario);
    assert_eq!(contended.len(), 1);
    let (with, without) = (contended[0].1 as i64, closed_form[0].1 as i64);
    assert!(
        (with - without).abs() <= 2,
        "contention {with} ns vs closed form {without} ns"
    );
}

#[test]
fn contention_runs_are_deterministic_and_report_busiest_links() {
    let scenario = ScenarioFile {
        model: Some("gpt3-175b".into()),
        tp: Some(8),
        pp: Some(4),
        dp: Some(4),
        global_batch: Some(32),
        options: sim::scenario::TrainingOptionsFile {
            network_contention: Some(true),
            ..Default::default()
        },
        ..ScenarioFile::embedded_default()
    }
    .resolve()
    .unwrap();
    let first = sim::simulate(&scenario).unwrap();
    let second = sim::simulate(&scenario).unwrap();
    assert_eq!(first.timeline(), second.timeline());
    assert!(!first.busiest_links.is_empty());
    assert!(
        first
            .busiest_links
            .iter()
            .all(|l| l.utilization > 0.0 && l.utilization <= 1.0 + 1e-9),
        "{:?}",
        first.busiest_links
    );
}

fn offload_scenario(topology: &str, dp: u32, contention: bool) -> sim::scenario::Scenario {
    ScenarioFile {
        model: Some("gpt2-10b".into()),
        topology: Some(topology.into()),
        tp: Some(1),
        pp: Some(1),
        dp: Some(dp),
        microbatch_size: Some(10),
        global_batch: Some(10 * dp),
        recompute: Some(Recompute::Full),
        options: sim::scenario::TrainingOptionsFile {
            zero_offload: Some(true),
            network_contention: Some(contention),
            ..Default::default()
        },
        ..ScenarioFile::default()
    }
    .resolve()
    .unwrap()
}

#[test]
fn offload_copies_run_on_the_pcie_links_and_alone_take_their_closed_form_time() {
    let with = sim::simulate(&offload_scenario("dgx2-v100", 1, true)).unwrap();
    let without = sim::simulate(&offload_scenario("dgx2-v100", 1, false)).unwrap();
    for kind in [TaskKind::PcieDeviceToHost, TaskKind::PcieHostToDevice] {
        let durations = |r: &sim::SimulationReport| -> Vec<u64> {
            r.timeline()
                .tasks
                .iter()
                .filter(|t| t.kind == kind)
                .map(|t| t.duration_ns())
                .collect()
        };
        let (a, b) = (durations(&with), durations(&without));
        assert!(!a.is_empty());
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert!((*x as i64 - *y as i64).abs() <= 1, "{kind:?}: {x} vs {y}");
        }
    }
    let links: Vec<&str> = with.busiest_links.iter().map(|l| l.link.as_str()).collect();
    assert!(
        links.contains(&"host_up[0]") && links.contains(&"gpu_pcie_down[0]"),
        "{links:?}"
    );
}

#[test]
fn cross_node_rings_leave_through_every_nic_when_gpus_share_them() {
    // DGX-2: 16 GPUs and 8 NICs per node, GPUs 2r and 2r+1 on NIC r. A ZeRO-2
    // group of 32 ranks on two nodes runs 8 rings; spread over the 8 NICs they
    // take their closed-form time, while two rings on one NIC would take twice it.
    let exposed = |contention: bool| {
        sim::simulate(&offload_scenario("dgx2-v100-x8", 32, contention))
            .unwrap()
            .metrics
            .exposed_communication
            .data_parallel_s
    };
    let (with, without) = (exposed(true), exposed(false));
    assert!(without > 0.0);
    assert!((with - without).abs() < 1e-6, "{with} vs {without}");
}
