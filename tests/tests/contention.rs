//! Flow-level contention in the engine (`--contention`): cross-node
//! transfers alone on the fabric take their closed-form time; transfers that
//! share a NIC split its bandwidth.

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
        network_contention: Some(contention),
        ..ScenarioFile::default()
    }
    .resolve()
    .unwrap()
}

fn data_parallel_durations(scenario: &sim::scenario::Scenario) -> Vec<(u64, u64, u64)> {
    let report = sim::simulate(scenario).unwrap();
    report
        .timeline
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::DataParallelAllReduce)
        .map(|t| (t.start_ns, t.duration_ns(), t.bytes))
        .collect()
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
    // Tail: 2 ring steps across the network at 7 µs each.
    let expected_ns = (bytes / 12e9 * 1e9).ceil() + 14_000.0;
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
    scenario.layout.tensor_parallel = 1;
    scenario.layout.data_parallel = 2;
    let contended = data_parallel_durations(&scenario);
    scenario.network_contention = false;
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
        network_contention: Some(true),
        ..ScenarioFile::embedded_default()
    }
    .resolve()
    .unwrap();
    let first = sim::simulate(&scenario).unwrap();
    let second = sim::simulate(&scenario).unwrap();
    assert_eq!(first.timeline, second.timeline);
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
