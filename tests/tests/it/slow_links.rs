//! A slow NIC (`--slow-nic`, issue 35): every communication with a member
//! that sends through it runs at the NIC's reduced rate, priced by the same
//! closed form with that rate; communication inside a node and every group
//! without such a member keep their time; under `--contention` the fabric's
//! NIC links carry the reduced capacity and the flows through them agree
//! with the closed form. A slow NVLink (`--slow-nvlink`) likewise slows the
//! groups with that GPU whose rings hop inside a node, and no others.

use sim::cost::{ClosedFormNetwork, NetworkModel};
use sim::scenario::{Scenario, ScenarioFile, TrainingOptionsFile};
use sim::slow_link::{SlowNic, SlowNvlink};
use sim::straggler::Stragglers;
use sim::task_graph::NodeSpread;
use sim::time::SimDuration;
use sim::{Expansion, SimulationReport};
use timeline::TaskKind;

/// The hand model at t = 4, p = 1, d = 4 on two DGX A100 nodes: each
/// data-parallel group is {i, 4 + i, 8 + i, 12 + i}, two ranks a node, its
/// rings over the rails of ranks i and 4 + i.
fn scenario(contention: bool) -> Scenario {
    hand_model_on("dgx-a100:2", contention)
}

/// The hand model at t = 4, p = 1, d = 4 on `topology` (16 GPUs), under
/// `--contention` or not.
pub(super) fn hand_model_on(topology: &str, contention: bool) -> Scenario {
    ScenarioFile {
        topology: Some(topology.into()),
        ..tests::hand_model_file(
            4,
            1,
            4,
            TrainingOptionsFile {
                network_contention: Some(contention),
                ..TrainingOptionsFile::default()
            },
        )
    }
    .resolve()
    .expect("valid scenario")
}

fn run(scenario: &Scenario, slow: &[SlowNic]) -> SimulationReport {
    let stragglers = Stragglers::none()
        .with_slow_nics(slow, scenario)
        .expect("valid slow NICs");
    sim::simulate_with_stragglers(scenario, Expansion::Full, &stragglers).expect("simulates")
}

/// `scenario` with every NIC's achieved rate divided by `factor`: what a
/// slow part that caps a communication's NIC tier should equal.
pub(super) fn with_nics_over(scenario: &Scenario, factor: f64) -> Scenario {
    let mut slowed = scenario.clone();
    slowed.profile.communication.nic_bandwidth_bytes_per_s.value /= factor;
    slowed
}

/// (ranks, kind, bytes, duration) of every communication task (every
/// task that is not a compute kernel: host copies too).
pub(super) fn communication(report: &SimulationReport) -> Vec<(Vec<u32>, TaskKind, u64, u64)> {
    let timeline = report.timeline();
    timeline
        .tasks
        .iter()
        .filter(|t| !t.kind.is_compute())
        .map(|t| {
            (
                timeline.header.groups[t.group as usize].clone(),
                t.kind,
                t.bytes,
                t.duration_ns(),
            )
        })
        .collect()
}

#[test]
fn collectives_through_a_slow_nic_run_at_its_rate_and_no_others_change() {
    let scenario = scenario(false);
    let nominal = communication(&run(&scenario, &[]));
    let slowed = communication(&run(
        &scenario,
        &[SlowNic {
            rank: 3,
            factor: 2.0,
        }],
    ));
    let network = ClosedFormNetwork::for_scenario(&scenario);
    let half = network.with_nic_slowed(2.0);
    let across_nodes = NodeSpread::even(4, 2);
    let mut checked = 0;
    assert_eq!(nominal.len(), slowed.len());
    for (before, after) in nominal.iter().zip(&slowed) {
        let (ranks, kind, bytes, _) = after;
        assert_eq!((&before.0, before.1, before.2), (ranks, *kind, *bytes));
        if *kind == TaskKind::DataParallelAllReduce && ranks.contains(&3) {
            // Rank 3's group: its rings' network hops at half the rate.
            assert_eq!(ranks, &[3, 7, 11, 15]);
            let expected = half.all_reduce(*bytes, 4, across_nodes);
            assert_eq!(SimDuration(after.3), expected);
            assert_eq!(
                SimDuration(before.3),
                network.all_reduce(*bytes, 4, across_nodes)
            );
            assert!(after.3 > before.3);
            checked += 1;
        } else {
            // Other rails' groups, and rank 3's tensor-parallel all-reduces
            // over NVLink, keep their time.
            assert_eq!(after.3, before.3, "{kind:?} on {ranks:?}");
        }
    }
    assert!(checked > 0);
}

#[test]
fn under_contention_the_slow_nic_s_flows_take_the_factor_of_their_transfer() {
    // The flow plan of a ring all-reduce carries its Simple transfer as flows
    // and the rest of its closed-form time (NCCL's latency, the protocol's
    // bandwidth loss) as a fixed tail (sim::network::flows): at 1/4 of a
    // NIC's capacity the transfer through it takes 4 times as long.
    let slow = [SlowNic {
        rank: 3,
        factor: 4.0,
    }];
    let rank_3_s_reduction = |report: &SimulationReport| -> Vec<(u64, u64)> {
        communication(report)
            .into_iter()
            .filter(|(ranks, kind, ..)| *kind == TaskKind::DataParallelAllReduce && ranks[0] == 3)
            .map(|(_, _, bytes, duration)| (bytes, duration))
            .collect()
    };
    let contended = scenario(true);
    let before = rank_3_s_reduction(&run(&contended, &[]));
    let after = rank_3_s_reduction(&run(&contended, &slow));
    let closed_form = rank_3_s_reduction(&run(&scenario(false), &slow));
    assert!(!before.is_empty());
    let rates = tests::moe::link_rates(&contended);
    let group = sim::collective::GroupShape::new(2, 2);
    for ((bytes, nominal_ns), ((_, slowed_ns), (_, closed_ns))) in
        before.iter().zip(after.iter().zip(&closed_form))
    {
        let transfer_s = sim::collective::ring_terms(
            sim::collective::CollectiveOp::AllReduce,
            *bytes,
            &group,
            &rates,
        )
        .transfer_seconds;
        let expected_ns = *nominal_ns as f64 + 3.0 * transfer_s * 1e9;
        println!(
            "{bytes} B: {nominal_ns} ns → flows {slowed_ns} ns (expected {expected_ns:.0}), closed form {closed_ns} ns"
        );
        assert!((*slowed_ns as f64 - expected_ns).abs() <= 4.0);
        // The closed form slows the protocol's bandwidth loss as well.
        assert!(closed_ns >= slowed_ns);
    }
}

#[test]
fn bad_slow_nics_are_refused_by_name() {
    let scenario = scenario(false);
    let refuse = |slow: &[SlowNic]| {
        Stragglers::none()
            .with_slow_nics(slow, &scenario)
            .unwrap_err()
            .to_string()
    };
    let nic = |rank, factor| SlowNic { rank, factor };
    assert!(refuse(&[nic(16, 2.0)]).contains("ranks 0..16"));
    assert!(refuse(&[nic(1, 0.5)]).contains("factor 0.5"));
    assert!(refuse(&[nic(1, 2.0), nic(1, 3.0)]).contains("given twice"));
}

/// Fuzz case 7343 (seed 14): under `--contention` a one-node fabric builds
/// no NIC links; a slow NIC there slows nothing (and must not index one).
#[test]
fn a_slow_nic_on_one_node_changes_nothing() {
    let one_node = tests::hand_model_file(
        2,
        1,
        4,
        TrainingOptionsFile {
            network_contention: Some(true),
            ..TrainingOptionsFile::default()
        },
    )
    .resolve()
    .expect("valid scenario");
    let slow = [SlowNic {
        rank: 0,
        factor: 1.5,
    }];
    assert_eq!(
        run(&one_node, &slow).metrics.iteration_time_s,
        run(&one_node, &[]).metrics.iteration_time_s
    );
}

fn run_nvlinks(scenario: &Scenario, slow: &[SlowNvlink]) -> SimulationReport {
    let stragglers = Stragglers::none()
        .with_slow_nvlinks(slow, scenario)
        .expect("valid slow NVLinks");
    sim::simulate_with_stragglers(scenario, Expansion::Full, &stragglers).expect("simulates")
}

#[test]
fn collectives_with_a_slow_nvlink_run_at_its_rate_and_no_others_change() {
    let scenario = scenario(false);
    let nominal = communication(&run(&scenario, &[]));
    let slow = [SlowNvlink {
        rank: 3,
        factor: 4.0,
    }];
    let slowed = communication(&run_nvlinks(&scenario, &slow));
    // The same run with every GPU's NVLink at 1/4 (the profile's achieved
    // bus rate and the node's line rate both quartered, exactly).
    let mut everywhere = scenario.clone();
    everywhere
        .profile
        .communication
        .nvlink_bus_bandwidth_bytes_per_s
        .value /= 4.0;
    everywhere.topology.node.nvlink_bandwidth_bytes_per_s /= 4.0;
    let all_slow = communication(&run(&everywhere, &[]));
    let mut checked = 0;
    assert_eq!(nominal.len(), slowed.len());
    for ((before, after), everywhere) in nominal.iter().zip(&slowed).zip(&all_slow) {
        let (ranks, kind, bytes, _) = after;
        assert_eq!((&before.0, before.1, before.2), (ranks, *kind, *bytes));
        if *kind == TaskKind::TensorAllReduce && ranks.contains(&3) {
            // Rank 3's tensor group inside node 0: its rings at 1/4 of NVLink.
            assert_eq!(ranks, &[0, 1, 2, 3]);
            assert_eq!(after.3, everywhere.3);
            assert!(after.3 > before.3);
            checked += 1;
        } else {
            // Node 1's tensor groups, the other rails, and rank 3's
            // data-parallel ring (its two ranks a node hop over NVLink, but
            // 1/4 of A100's 230 GB/s still exceeds the two 24 GB/s rails it
            // is capped by) keep their time.
            assert_eq!(after.3, before.3, "{kind:?} on {ranks:?}");
        }
    }
    assert!(checked > 0);
    // Under --contention GPU 3's NVLink links carry 1/4: its tensor
    // all-reduces slow there too, and no slower than the closed form's.
    let contended = scenario_contended_tensor_all_reduces(&slow);
    println!("rank 3's tensor all-reduces under --contention (nominal, flows, closed form ns): {contended:?}");
    assert!(
        contended
            .iter()
            .all(|(before, after, closed)| before < after && after <= closed),
        "{contended:?}"
    );
}

/// (nominal, slowed, closed-form slowed) durations of rank 3's tensor
/// all-reduces under --contention.
fn scenario_contended_tensor_all_reduces(slow: &[SlowNvlink]) -> Vec<(u64, u64, u64)> {
    let rank_3_s = |report: &SimulationReport| -> Vec<u64> {
        communication(report)
            .into_iter()
            .filter(|(ranks, kind, ..)| *kind == TaskKind::TensorAllReduce && ranks.contains(&3))
            .map(|(.., duration)| duration)
            .collect()
    };
    let contended = scenario(true);
    let before = rank_3_s(&run(&contended, &[]));
    let after = rank_3_s(&run_nvlinks(&contended, slow));
    let closed = rank_3_s(&run_nvlinks(&scenario(false), slow));
    assert!(!before.is_empty());
    before
        .into_iter()
        .zip(after)
        .zip(closed)
        .map(|((b, a), c)| (b, a, c))
        .collect()
}

#[test]
fn bad_slow_nvlinks_are_refused_by_name() {
    let scenario = scenario(false);
    let refuse = |slow: &[SlowNvlink]| {
        Stragglers::none()
            .with_slow_nvlinks(slow, &scenario)
            .unwrap_err()
            .to_string()
    };
    let link = |rank, factor| SlowNvlink { rank, factor };
    assert!(refuse(&[link(16, 2.0)]).contains("ranks 0..16"));
    assert!(refuse(&[link(1, 0.5)]).contains("factor 0.5"));
    assert!(refuse(&[link(1, 2.0), link(1, 3.0)]).contains("given twice"));
}

#[test]
fn a_pipeline_transfer_received_through_a_slow_nic_takes_its_rate() {
    // t = 4, p = 2, d = 2 on two DGX A100 nodes: stage 0 is node 0, stage
    // 1 node 1, and tensor group {8..11} exchanges with {0..3}. A transfer's
    // ranks are its sender's, so the transfers {0..3} sends to {8..11} are
    // slowed by rank 11's NIC as its receiver's.
    let scenario = ScenarioFile {
        topology: Some("dgx-a100:2".into()),
        ..tests::hand_model_file(4, 2, 2, TrainingOptionsFile::default())
    }
    .resolve()
    .expect("valid scenario");
    let factor = 3.0;
    let nominal = communication(&run(&scenario, &[]));
    let slowed = communication(&run(&scenario, &[SlowNic { rank: 11, factor }]));
    let everywhere = communication(&run(&with_nics_over(&scenario, factor), &[]));
    let mut received = 0;
    for ((before, after), all) in nominal.iter().zip(&slowed).zip(&everywhere) {
        let (ranks, kind, ..) = after;
        let pipeline = matches!(
            kind,
            TaskKind::PipelineActivation | TaskKind::PipelineGradient
        );
        if pipeline && (ranks.contains(&11) || ranks.contains(&3)) {
            assert_eq!(after.3, all.3, "{kind:?} on {ranks:?}");
            assert!(after.3 > before.3, "{kind:?} on {ranks:?}");
            received += usize::from(ranks.contains(&3));
        } else if pipeline {
            assert_eq!(after.3, before.3, "{kind:?} on {ranks:?}");
        }
    }
    assert!(received > 0);
}
