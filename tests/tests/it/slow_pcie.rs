//! A slow PCIe link (`--slow-pcie`, issue 35 item 4): GPU R's link to its
//! PCIe switch delivers 1/F of its bandwidth. Its traffic across nodes
//! (GPUDirect through that link to the NIC) gets at most the PCIe line rate
//! ÷ F of its NICs, checked against the same run with every NIC at that
//! rate, and a GPU sharing a NIC slows only below its share; on nodes
//! without NVLink its intra-node hops do too; its ZeRO-Offload copies run at
//! the slower of its link and its share of the switch's uplink; every other
//! task keeps its time; offloaded activations copy through it too. Under
//! `--contention` its PCIe links carry 1/F of their capacity.

use super::slow_links::{communication, hand_model_on};
use sim::scenario::{Scenario, ScenarioFile, TrainingOptionsFile};
use sim::slow_link::SlowPcie;
use sim::straggler::Stragglers;
use sim::task::TaskKind;
use sim::{Expansion, SimulationReport};

fn run(scenario: &Scenario, slow: &[SlowPcie]) -> SimulationReport {
    let stragglers = Stragglers::none()
        .with_slow_pcies(slow, scenario)
        .expect("valid slow PCIe links");
    sim::simulate_with_stragglers(scenario, Expansion::Full, &stragglers).expect("simulates")
}

/// The PCIe line rate GPUDirect traffic crosses a GPU's link at.
fn pcie_rate(scenario: &Scenario) -> f64 {
    scenario.topology.pcie.bandwidth_bytes_per_s
}

/// Every task of `slowed` with rank 3 among its ranks and of one of `kinds` equals
/// `everywhere`'s; every other task equals `nominal`'s. Returns how many
/// were slowed.
fn only_rank_3_s_change(
    nominal: &[(Vec<u32>, TaskKind, u64, u64)],
    slowed: &[(Vec<u32>, TaskKind, u64, u64)],
    everywhere: &[(Vec<u32>, TaskKind, u64, u64)],
    kinds: &[TaskKind],
) -> usize {
    assert_eq!(nominal.len(), slowed.len());
    assert_eq!(nominal.len(), everywhere.len());
    let mut checked = 0;
    for ((before, after), all) in nominal.iter().zip(slowed).zip(everywhere) {
        let (ranks, task_kind, bytes, _) = after;
        assert_eq!((&before.0, before.1, before.2), (ranks, *task_kind, *bytes));
        if kinds.contains(task_kind) && ranks.contains(&3) {
            assert_eq!(after.3, all.3, "{task_kind:?} on {ranks:?}");
            assert!(after.3 > before.3, "{task_kind:?} on {ranks:?}");
            checked += 1;
        } else {
            assert_eq!(after.3, before.3, "{task_kind:?} on {ranks:?}");
        }
    }
    checked
}

#[test]
fn traffic_across_nodes_runs_at_the_slower_of_nic_and_pcie_link() {
    let scenario = hand_model_on("dgx-a100:2", false);
    let factor = 4.0;
    let link = pcie_rate(&scenario) / factor;
    let nic = &scenario
        .profile
        .communication
        .nic_bandwidth_bytes_per_s
        .value;
    assert!(link < *nic, "the test needs PCIe ÷ F below the NIC");
    let nominal = communication(&run(&scenario, &[]));
    let slowed = communication(&run(&scenario, &[SlowPcie { rank: 3, factor }]));
    // The same run with every NIC at the slowed link's rate.
    let mut everywhere = scenario.clone();
    everywhere
        .profile
        .communication
        .nic_bandwidth_bytes_per_s
        .value = link;
    let everywhere = communication(&run(&everywhere, &[]));
    // Rank 3's data-parallel ring crosses nodes; its tensor all-reduces stay
    // on NVLink and keep their time.
    let checked = only_rank_3_s_change(
        &nominal,
        &slowed,
        &everywhere,
        &[TaskKind::DataParallelAllReduce],
    );
    assert!(checked > 0);
}

#[test]
fn a_link_still_faster_than_the_nic_slows_no_communication() {
    let scenario = hand_model_on("dgx-a100:2", false);
    let nic = scenario
        .profile
        .communication
        .nic_bandwidth_bytes_per_s
        .value;
    let factor = 0.9 * pcie_rate(&scenario) / nic;
    assert!(factor > 1.0);
    let nominal = communication(&run(&scenario, &[]));
    let slowed = communication(&run(&scenario, &[SlowPcie { rank: 3, factor }]));
    assert_eq!(nominal, slowed);
}

#[test]
fn a_gpu_sharing_a_nic_is_slowed_only_below_its_share() {
    // DGX-2: 16 GPUs share 8 NICs of 12 GB/s achieved, 6 GB/s a GPU, behind
    // Gen3 x16 links of 16 GB/s. Half the link (8 GB/s) still carries the
    // GPU's share; a quarter (4 GB/s) does not, and then the GPU's share of
    // its NIC runs at 4 GB/s, as if every NIC ran at 8.
    // t = 4, d = 8 on two nodes: rank 3's data-parallel ring crosses them.
    let scenario = ScenarioFile {
        topology: Some("dgx2-v100:2".into()),
        ..tests::hand_model_file(4, 1, 8, TrainingOptionsFile::default())
    }
    .resolve()
    .expect("valid scenario");
    assert_eq!(
        (
            scenario.topology.node.gpus_per_node,
            scenario.topology.fabric.nics_per_node
        ),
        (16, 8)
    );
    let nominal = communication(&run(&scenario, &[]));
    let half = communication(&run(
        &scenario,
        &[SlowPcie {
            rank: 3,
            factor: 2.0,
        }],
    ));
    assert_eq!(nominal, half);
    let quarter = communication(&run(
        &scenario,
        &[SlowPcie {
            rank: 3,
            factor: 4.0,
        }],
    ));
    let mut everywhere = scenario.clone();
    everywhere
        .profile
        .communication
        .nic_bandwidth_bytes_per_s
        .value = pcie_rate(&scenario) / 4.0 * 16.0 / 8.0;
    let everywhere = communication(&run(&everywhere, &[]));
    let checked = only_rank_3_s_change(
        &nominal,
        &quarter,
        &everywhere,
        &[TaskKind::DataParallelAllReduce],
    );
    assert!(checked > 0);
}

#[test]
fn on_nodes_without_nvlink_the_ring_inside_the_node_slows_too() {
    let scenario = hand_model_on("h100-pcie-cluster:2", false);
    assert_eq!(scenario.topology.node.nvlink_bandwidth_bytes_per_s, 0.0);
    let factor = 8.0;
    let link = pcie_rate(&scenario) / factor;
    let nominal = communication(&run(&scenario, &[]));
    let slowed = communication(&run(&scenario, &[SlowPcie { rank: 3, factor }]));
    // The same run with every GPU's intra-node (PCIe) rate and every NIC at
    // the slowed link's: rank 3's tensor all-reduces inside node 0 and its
    // data-parallel ring across the nodes both slow.
    let mut everywhere = scenario.clone();
    let rates = &mut everywhere.profile.communication;
    assert!(link < rates.nvlink_bus_bandwidth_bytes_per_s.value);
    assert!(link < rates.nic_bandwidth_bytes_per_s.value);
    rates.nvlink_bus_bandwidth_bytes_per_s.value = link;
    rates.nic_bandwidth_bytes_per_s.value = link;
    let everywhere = communication(&run(&everywhere, &[]));
    let kinds = [
        TaskKind::TensorAllReduce,
        TaskKind::DataParallelReduceScatter,
        TaskKind::DataParallelAllGather,
        TaskKind::DataParallelAllReduce,
    ];
    let checked = only_rank_3_s_change(&nominal, &slowed, &everywhere, &kinds);
    assert!(checked > 0);
}

#[test]
fn host_copies_run_at_the_slower_of_the_link_and_the_uplink_share() {
    let scenario = ScenarioFile {
        model: Some(serde_json::json!({
            "name": "offload-8", "layers": 8, "hidden": 512, "heads": 8, "seq_len": 256, "vocab": 51200
        })),
        topology: Some("dgx2-v100".into()),
        tp: Some(1),
        pp: Some(1),
        dp: Some(4),
        microbatch_size: Some(1),
        global_batch: Some(4),
        options: TrainingOptionsFile {
            zero_offload: Some(true),
            offload_bucket_params: Some(7_000_000),
            ..Default::default()
        },
        ..ScenarioFile::default()
    }
    .resolve()
    .expect("valid scenario");
    let factor = 5.0;
    let latency_ns = scenario.topology.pcie.latency_ns as f64;
    let nominal = communication(&run(&scenario, &[]));
    let slowed = communication(&run(&scenario, &[SlowPcie { rank: 3, factor }]));
    let mut checked = 0;
    for (before, after) in nominal.iter().zip(&slowed) {
        let (ranks, kind, bytes, _) = after;
        let copy = matches!(
            kind,
            TaskKind::PcieDeviceToHost | TaskKind::PcieHostToDevice
        );
        if copy && ranks == &[3] && *bytes > 0 {
            // Nominal: latency + bytes · sharing ÷ rate; slowed: the link's
            // factor (5, above the two GPUs sharing an uplink) in its place.
            let sharing_over_rate = (before.3 as f64 - latency_ns) / *bytes as f64;
            let sharing = scenario.topology.pcie.gpus_per_host_link.min(4) as f64;
            assert!(factor > sharing);
            let expected = latency_ns + sharing_over_rate * factor / sharing * *bytes as f64;
            assert!(
                (after.3 as f64 - expected).abs() <= 2.0,
                "{kind:?}: {} ns, expected {expected:.0}",
                after.3
            );
            checked += 1;
        } else {
            assert_eq!(after.3, before.3, "{kind:?} on {ranks:?}");
        }
    }
    assert!(checked >= 2, "{checked} copies of rank 3");
}

#[test]
fn under_contention_the_slow_link_s_flows_run_within_its_capacity() {
    // The fabric's PCIe links carry the measured copy rate (capped by the
    // line rate), so under --contention the slow link caps GPUDirect traffic
    // at that ÷ F; the flows keep the closed form's latency and protocol
    // loss as a fixed tail, so they take no longer than the closed form
    // with every NIC at that rate.
    let factor = 4.0;
    let slow = [SlowPcie { rank: 3, factor }];
    let rank_3_s_reductions = |report: &SimulationReport| -> Vec<u64> {
        communication(report)
            .into_iter()
            .filter(|(ranks, kind, ..)| *kind == TaskKind::DataParallelAllReduce && ranks[0] == 3)
            .map(|(.., duration)| duration)
            .collect()
    };
    let contended = hand_model_on("dgx-a100:2", true);
    let before = rank_3_s_reductions(&run(&contended, &[]));
    let after = rank_3_s_reductions(&run(&contended, &slow));
    let mut bound = hand_model_on("dgx-a100:2", false);
    let pcie = &bound.profile.pcie;
    let capacity = pcie
        .device_to_host_bytes_per_s
        .value
        .min(pcie.host_to_device_bytes_per_s.value)
        .min(bound.topology.pcie.bandwidth_bytes_per_s);
    let nic = &mut bound.profile.communication.nic_bandwidth_bytes_per_s.value;
    *nic = nic.min(capacity / factor);
    let bound = rank_3_s_reductions(&run(&bound, &[]));
    assert!(!before.is_empty());
    for ((b, a), c) in before.iter().zip(&after).zip(&bound) {
        println!(
            "rank 3's all-reduce: {b} ns → flows {a} ns, closed form at the link's capacity {c} ns"
        );
        assert!(b < a && a <= c, "{b} {a} {c}");
    }
}

#[test]
fn bad_slow_pcie_links_are_refused_by_name() {
    let scenario = hand_model_on("dgx-a100:2", false);
    let refuse = |scenario: &Scenario, slow: &[SlowPcie]| {
        Stragglers::none()
            .with_slow_pcies(slow, scenario)
            .unwrap_err()
            .to_string()
    };
    let link = |rank, factor| SlowPcie { rank, factor };
    assert!(refuse(&scenario, &[link(16, 2.0)]).contains("PCIe link of rank 16"));
    assert!(refuse(&scenario, &[link(1, 0.5)]).contains("factor 0.5"));
    assert!(refuse(&scenario, &[link(1, 2.0), link(1, 3.0)]).contains("given twice"));
}

#[test]
fn offloaded_activations_copy_through_the_slow_link() {
    // Llama 3 8B at s = 4096 on two H100s of one DGX, d = 2, offloading 8
    // layers' activations: a layer's copy outlasts its forward, so the
    // copies set the passes' length. Two GPUs share a PCIe switch's uplink.
    let file = |offloaded: u32| ScenarioFile {
        model: Some("llama3-8b".into()),
        seq_len: Some(4096),
        topology: Some("dgx-h100-superpod:1".into()),
        tp: Some(1),
        pp: Some(1),
        dp: Some(2),
        microbatch_size: Some(1),
        global_batch: Some(4),
        recompute: Some(sim::scenario::Recompute::None),
        options: TrainingOptionsFile {
            cpu_offloading_num_layers: Some(offloaded),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    };
    let scenario = file(8).resolve().expect("valid scenario");
    assert_eq!(scenario.topology.pcie.gpus_per_host_link, 2);
    let factor = 3.0;
    let compute = |report: &SimulationReport, rank: u32| -> Vec<u64> {
        let timeline = report.timeline();
        timeline
            .tasks
            .iter()
            .filter(|t| t.kind.is_compute() && timeline.header.groups[t.group as usize] == [rank])
            .map(|t| t.duration_ns())
            .collect()
    };
    let nominal = run(&scenario, &[]);
    let slowed = run(&scenario, &[SlowPcie { rank: 1, factor }]);
    // The same run with every GPU's copies at 2/3 of the rate: a copy
    // through a link at 1/3 takes bytes × max(2 sharing, 3) ÷ rate.
    let mut everywhere = scenario.clone();
    everywhere.profile.pcie.device_to_host_bytes_per_s.value *= 2.0 / factor;
    everywhere.profile.pcie.host_to_device_bytes_per_s.value *= 2.0 / factor;
    let everywhere = run(&everywhere, &[]);
    assert_eq!(
        compute(&slowed, 0),
        compute(&nominal, 0),
        "rank 0 keeps its time"
    );
    let (slow, all_slow, before) = (
        compute(&slowed, 1),
        compute(&everywhere, 1),
        compute(&nominal, 1),
    );
    assert_eq!(slow.len(), all_slow.len());
    let mut longer = 0;
    for ((s, e), b) in slow.iter().zip(&all_slow).zip(&before) {
        assert!(s.abs_diff(*e) <= 2, "{s} vs {e}");
        if s > b {
            longer += 1;
        }
    }
    assert!(longer >= 2, "{longer} of rank 1's passes slowed");
    // Without offloading the slow link leaves the compute alone.
    let plain = file(0).resolve().expect("valid scenario");
    assert_eq!(
        compute(&run(&plain, &[SlowPcie { rank: 1, factor }]), 1),
        compute(&run(&plain, &[]), 1)
    );
}
