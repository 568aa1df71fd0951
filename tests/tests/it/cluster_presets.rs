//! The cluster presets of today (DGX H100/H200 SuperPOD, DGX H100 on
//! InfiniBand and on RoCEv2, DGX B200, GB200 NVL72, H100 PCIe nodes) resolve
//! with their GPU's default profile and simulate a Llama-3-8B step through
//! the library, across nodes; the fabric kind's latency is costed exactly.

use profile::Profile;
use sim::collective::{estimate, fabric_hops, Algorithm, CollectiveOp, GroupShape, LinkRates};
use sim::cost::{ClosedFormNetwork, NetworkModel};
use sim::scenario::{ScenarioFile, ScheduleKind};
use sim::task::TaskKind;
use sim::task_graph::NodeSpread;

/// (preset, the default profile it must pick)
const PRESETS: [(&str, &str); 7] = [
    ("dgx-h100-superpod", "h100-sxm"),
    ("dgx-h100-ib", "h100-sxm"),
    ("dgx-h100-roce", "h100-sxm"),
    ("dgx-h200-superpod", "h200"),
    ("dgx-b200", "b200"),
    ("gb200-nvl72", "gb200"),
    ("h100-pcie-cluster", "h100-pcie"),
];

/// Llama-3-8B with t = 8 inside a node and d data-parallel replicas.
fn llama3_8b(topology: &str, dp: u32, contention: bool) -> sim::scenario::Scenario {
    ScenarioFile {
        model: Some("llama3-8b".into()),
        topology: Some(topology.into()),
        // The 2021 stack's blocking data-parallel all-reduce, which these
        // tests time (today's defaults would shard it).
        stack: Some("megatron-2021".into()),
        tp: Some(8),
        pp: Some(1),
        dp: Some(dp),
        microbatch_size: Some(1),
        global_batch: Some(2 * dp),
        schedule: Some(ScheduleKind::OneFOneB),
        options: sim::scenario::TrainingOptionsFile {
            network_contention: Some(contention),
            ..Default::default()
        },
        ..ScenarioFile::default()
    }
    .resolve()
    .unwrap_or_else(|e| panic!("{topology}: {e}"))
}

fn iteration_s(scenario: &sim::scenario::Scenario) -> f64 {
    sim::simulate(scenario).unwrap().metrics.iteration_time_s
}

#[test]
fn every_preset_picks_its_gpus_default_profile_and_simulates() {
    for (preset, profile) in PRESETS {
        let topology = topologies::preset(preset).unwrap();
        // Enough replicas to leave the first NVLink domain.
        let dp = topology.node.gpus_per_node / 8 + 1;
        let scenario = llama3_8b(preset, dp, false);
        assert_eq!(scenario.profile.id, profile, "{preset}");
        assert_eq!(scenario.profile.gpu, scenario.topology.gpu.name, "{preset}");
        let report = sim::simulate(&scenario).unwrap();
        let time_s = report.metrics.iteration_time_s;
        assert!(time_s > 0.0 && time_s < 60.0, "{preset}: {time_s} s");
        let all_reduces = report
            .timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::DataParallelAllReduce)
            .count();
        assert!(all_reduces > 0, "{preset}: no data-parallel all-reduce");
    }
}

#[test]
fn newer_gpus_run_the_same_step_faster() {
    let h100 = iteration_s(&llama3_8b("dgx-h100-superpod", 2, false));
    let h200 = iteration_s(&llama3_8b("dgx-h200-superpod", 2, false));
    let b200 = iteration_s(&llama3_8b("dgx-b200", 2, false));
    // Same peak FLOP/s, more HBM bandwidth; then 2.27x the peak and NVLink 5.
    assert!(h200 <= h100, "H200 {h200} s vs H100 {h100} s");
    assert!(b200 < h200, "B200 {b200} s vs H200 {h200} s");
}

#[test]
fn a_gb200_tensor_group_of_72_stays_on_nvlink() {
    // t = 8 and d = 9 fill one NVL72 rack: the data-parallel ring stays on
    // NVLink 5; d = 10 puts its tenth member in the next rack.
    let inside = llama3_8b("gb200-nvl72", 9, false);
    let across = llama3_8b("gb200-nvl72", 10, false);
    let ring = |scenario: &sim::scenario::Scenario| {
        sim::simulate(scenario)
            .unwrap()
            .into_timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::DataParallelAllReduce)
            .map(|t| t.duration_ns())
            .max()
            .unwrap()
    };
    // Leaving the rack puts the ring on 400 Gb/s NICs instead of NVLink 5.
    assert!(
        ring(&across) > 2 * ring(&inside),
        "{} vs {}",
        ring(&across),
        ring(&inside)
    );
}

/// The longest data-parallel all-reduce of a simulated step, in ns.
fn longest_dp_all_reduce_ns(scenario: &sim::scenario::Scenario) -> u64 {
    sim::simulate(scenario)
        .unwrap()
        .into_timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::DataParallelAllReduce)
        .map(|t| t.duration_ns())
        .max()
        .unwrap()
}

#[test]
fn dgx_h100_roce_link_rates_are_exact() {
    let topology = topologies::preset("dgx-h100-roce").unwrap();
    let profile = Profile::builtin("h100-sxm").unwrap();
    let rates = LinkRates::from(&topology, &profile);
    // 8 × 400 GbE ConnectX-7 = 50 GB/s line each; the profile's 47 GB/s is under it.
    assert_eq!(topology.fabric.nics_per_node, 8);
    assert_eq!(topology.fabric.nic_bandwidth_bytes_per_s, 50e9);
    assert_eq!(rates.nic_bytes_per_s, 47e9);
    // NVLink 4: 450 GB/s line; the profile's 370 GB/s ring bus bandwidth.
    assert_eq!(rates.nvlink_bus_bytes_per_s, 370e9);
    assert_eq!((rates.nics_per_node, rates.gpus_per_node), (8, 8));
    // 2 × 600 ns (ConnectX-7) + 3 × 300 ns (SN5600) per network step, on top
    // of the profile's 7 µs for untuned sends.
    assert_eq!(rates.fabric_step_latency_ns, 2100.0);
    assert_eq!(rates.network_step_ns(), 9100.0);
    // A pipeline send of 1 MiB between nodes: the step plus 1 MiB at 47 GB/s,
    // rounded up once.
    let network = ClosedFormNetwork::new(&topology, &profile);
    let send = network.pipeline_transfer(1 << 20, 1, true, false);
    let expected_s = 9100e-9 + (1u64 << 20) as f64 / 47e9;
    assert_eq!(send.as_nanos(), (expected_s * 1e9).ceil() as u64);
}

#[test]
fn infiniband_and_roce_differ_exactly_by_the_latency_difference() {
    let profile = Profile::builtin("h100-sxm").unwrap();
    let superpod = topologies::preset("dgx-h100-superpod").unwrap();
    let ib = topologies::preset("dgx-h100-ib").unwrap();
    let roce = topologies::preset("dgx-h100-roce").unwrap();
    let ib_rates = LinkRates::from(&ib, &profile);
    let roce_rates = LinkRates::from(&roce, &profile);
    // Per network hop: 3 switches × (300 − 150) ns; IB over no kind: 1,650 ns.
    assert_eq!(
        roce_rates.fabric_step_latency_ns - ib_rates.fabric_step_latency_ns,
        450.0
    );
    let networks = [&superpod, &ib, &roce].map(|t| ClosedFormNetwork::new(t, &profile));
    // Small and large all-reduces over 2 and 4 nodes, 1 or 8 ranks on each.
    for (bytes, nodes, per_node) in [
        (64u64 << 10, 2u32, 1u32),
        (64 << 10, 2, 8),
        (64 << 10, 4, 8),
        (1 << 30, 2, 1),
        (1 << 30, 4, 8),
    ] {
        let group = GroupShape::new(nodes, per_node);
        let on = |rates: &LinkRates| estimate(CollectiveOp::AllReduce, bytes, &group, rates, None);
        let (e_ib, e_roce) = (on(&ib_rates), on(&roce_rates));
        // NCCL chooses alike on both fabrics.
        assert_eq!(
            (e_ib.algorithm, e_ib.protocol),
            (e_roce.algorithm, e_roce.protocol)
        );
        let hops = fabric_hops(CollectiveOp::AllReduce, e_ib.algorithm, &group) as f64;
        assert!(hops >= 2.0);
        assert_eq!(e_roce.latency_ns - e_ib.latency_ns, hops * 450.0);
        let [plain_ns, ib_ns, roce_ns] = networks.each_ref().map(|n| {
            n.all_reduce(
                bytes,
                nodes * per_node,
                NodeSpread::even(nodes * per_node, nodes),
            )
            .as_nanos() as f64
        });
        // Each duration is rounded up once: the differences within 1 ns.
        assert!(
            (roce_ns - ib_ns - hops * 450.0).abs() <= 1.0,
            "{bytes} {nodes}"
        );
        assert!(
            (ib_ns - plain_ns - hops * 1650.0).abs() <= 1.0,
            "{bytes} {nodes}"
        );
    }
    // Inside one node the fabric is never crossed: the three are equal.
    let [a, b, c] = networks
        .each_ref()
        .map(|n| n.all_reduce(1 << 20, 8, NodeSpread::even(8, 1)));
    assert_eq!((a, b), (c, c));
}

#[test]
fn a_llama_step_on_roce_pays_the_fabric_in_its_data_parallel_all_reduce() {
    // t = 8, d = 2: the data-parallel group is one rank on each of 2 nodes.
    let ib = llama3_8b("dgx-h100-ib", 2, false);
    let roce = llama3_8b("dgx-h100-roce", 2, false);
    let plain = llama3_8b("dgx-h100-superpod", 2, false);
    let group = GroupShape::new(2, 1);
    // Llama-3-8B's gradients over t = 8, as one all-reduce (SC21's local DDP).
    let (ib_ns, roce_ns, plain_ns) = (
        longest_dp_all_reduce_ns(&ib),
        longest_dp_all_reduce_ns(&roce),
        longest_dp_all_reduce_ns(&plain),
    );
    assert!(roce_ns > ib_ns && ib_ns > plain_ns);
    // Over 2 nodes a ring (2(nodes − 1)) and a tree (2·log2 nodes) both
    // cross the network twice, whichever NCCL runs at this size.
    let ring = fabric_hops(CollectiveOp::AllReduce, Algorithm::Ring, &group);
    let tree = fabric_hops(CollectiveOp::AllReduce, Algorithm::Tree, &group);
    assert_eq!((ring, tree), (2, 2));
    let hops = 2.0;
    assert!(((roce_ns - ib_ns) as f64 - hops * 450.0).abs() <= 1.0);
    assert!(((ib_ns - plain_ns) as f64 - hops * 1650.0).abs() <= 1.0);
}

#[test]
fn h100_pcie_nodes_ring_over_pcie_and_refuse_contention() {
    let scenario = llama3_8b("h100-pcie-cluster", 2, false);
    assert_eq!(scenario.profile.id, "h100-pcie");
    let rates = LinkRates::from(&scenario.topology, &scenario.profile);
    // The intra-node level is PCIe Gen5 x16 (63 GB/s), not the bridge's 300.
    assert_eq!(rates.nvlink_bus_bytes_per_s, 63e9);
    assert!(!rates.intra_node_nvlink);
    let network = ClosedFormNetwork::new(&scenario.topology, &scenario.profile);
    let sxm = topologies::preset("dgx-h100-superpod").unwrap();
    let sxm_network = ClosedFormNetwork::new(&sxm, &Profile::builtin("h100-sxm").unwrap());
    let one_node = NodeSpread::even(8, 1);
    assert!(
        network.all_reduce(1 << 30, 8, one_node) > sxm_network.all_reduce(1 << 30, 8, one_node)
    );
    assert!(iteration_s(&scenario) > 0.0);
    let error = ScenarioFile {
        model: Some("llama3-8b".into()),
        topology: Some("h100-pcie-cluster".into()),
        tp: Some(8),
        pp: Some(1),
        dp: Some(2),
        microbatch_size: Some(1),
        global_batch: Some(4),
        options: sim::scenario::TrainingOptionsFile {
            network_contention: Some(true),
            ..Default::default()
        },
        ..ScenarioFile::default()
    }
    .resolve()
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("network_contention") && error.contains("no NVLink"),
        "{error}"
    );
}
