//! Tests of the declared fabric's latency ([`crate::fabric_hops`],
//! [`LinkRates::fabric_step_latency_ns`]) and of nodes without NVLink
//! ([`crate::intra_node_line_bytes_per_s`]): exact against the closed forms.

use crate::{
    estimate, fabric_hops, intra_node_line_bytes_per_s, ring_terms, tune, Algorithm, CollectiveOp,
    GroupShape, LinkRates, NcclVersion,
};

/// Round numbers, as `estimate`'s tests: 100 GB/s NVLink bus, 10 GB/s NICs,
/// 1 µs / 3 µs steps, Ampere on NVLink, Intel hosts, no fabric latency.
fn rates() -> LinkRates {
    LinkRates {
        nvlink_bus_bytes_per_s: 100e9,
        nvlink_step_latency_ns: 1000.0,
        nic_bytes_per_s: 10e9,
        nics_per_node: 8,
        gpus_per_node: 8,
        network_step_latency_ns: 3000.0,
        compute_capability: 80,
        intra_node_nvlink: true,
        amd_host_cpu: false,
        nccl: NcclVersion::V2_12,
        fabric_step_latency_ns: 0.0,
    }
}

const PATH_NS: f64 = 2100.0;

fn with_fabric() -> LinkRates {
    LinkRates {
        fabric_step_latency_ns: PATH_NS,
        ..rates()
    }
}

#[test]
fn hops_are_the_rings_network_steps_and_the_trees_depth_twice() {
    let g = GroupShape::new(4, 8);
    assert_eq!(fabric_hops(CollectiveOp::AllReduce, Algorithm::Ring, &g), 6);
    assert_eq!(fabric_hops(CollectiveOp::AllGather, Algorithm::Ring, &g), 3);
    assert_eq!(
        fabric_hops(CollectiveOp::ReduceScatter, Algorithm::Ring, &g),
        3
    );
    assert_eq!(fabric_hops(CollectiveOp::Broadcast, Algorithm::Ring, &g), 3);
    assert_eq!(fabric_hops(CollectiveOp::AllReduce, Algorithm::Tree, &g), 4);
    // ⌊log2 5⌋ = 2; one node has no network hop.
    let five = GroupShape::new(5, 1);
    assert_eq!(
        fabric_hops(CollectiveOp::AllReduce, Algorithm::Tree, &five),
        4
    );
    assert_eq!(
        fabric_hops(CollectiveOp::AllReduce, Algorithm::Ring, &five),
        8
    );
    let one = GroupShape::single_node(8);
    assert_eq!(
        fabric_hops(CollectiveOp::AllReduce, Algorithm::Ring, &one),
        0
    );
    assert_eq!(
        fabric_hops(CollectiveOp::AllReduce, Algorithm::Tree, &one),
        0
    );
}

#[test]
fn a_tuned_collective_pays_the_path_per_hop_and_nccl_chooses_as_before() {
    for (group, bytes) in [
        (GroupShape::new(4, 8), 1 << 10),
        (GroupShape::new(4, 8), 1 << 30),
        (GroupShape::new(16, 1), 1 << 16),
        (GroupShape::new(2, 8), 4 << 20),
    ] {
        for op in [
            CollectiveOp::AllReduce,
            CollectiveOp::AllGather,
            CollectiveOp::ReduceScatter,
        ] {
            let plain = estimate(op, bytes, &group, &rates(), None);
            let fabric = estimate(op, bytes, &group, &with_fabric(), None);
            assert_eq!(
                (plain.algorithm, plain.protocol),
                (fabric.algorithm, fabric.protocol)
            );
            // The tuner itself never sees the fabric.
            assert_eq!(
                tune(op, bytes, &group, &rates(), None),
                tune(op, bytes, &group, &with_fabric(), None)
            );
            let hops = fabric_hops(op, plain.algorithm, &group) as f64;
            assert!(hops > 0.0);
            assert_eq!(fabric.latency_ns - plain.latency_ns, hops * PATH_NS);
            // One rounding to whole nanoseconds.
            let extra = fabric.duration.as_nanos() as f64 - plain.duration.as_nanos() as f64;
            assert!(
                (extra - hops * PATH_NS).abs() <= 1.0,
                "{op:?} {bytes}: {extra}"
            );
        }
    }
}

#[test]
fn untuned_sends_and_all_to_alls_pay_it_per_network_step() {
    let across = GroupShape::new(2, 1);
    let plain = ring_terms(CollectiveOp::SendRecv, 1 << 20, &across, &rates());
    let fabric = ring_terms(CollectiveOp::SendRecv, 1 << 20, &across, &with_fabric());
    assert_eq!(plain.latency_ns, 3000.0);
    assert_eq!(fabric.latency_ns, 3000.0 + PATH_NS);
    assert_eq!(plain.transfer_seconds, fabric.transfer_seconds);
    let send = estimate(
        CollectiveOp::SendRecv,
        1 << 20,
        &across,
        &with_fabric(),
        None,
    );
    assert_eq!(send.latency_ns, 5100.0);
    // Inside a node nothing changes.
    let inside = GroupShape::single_node(2);
    assert_eq!(
        estimate(CollectiveOp::SendRecv, 1 << 20, &inside, &rates(), None),
        estimate(
            CollectiveOp::SendRecv,
            1 << 20,
            &inside,
            &with_fabric(),
            None
        )
    );
    // All-to-all over 2 nodes of 4: 3 peers on the node, 4 elsewhere.
    let group = GroupShape::new(2, 4);
    let a2a = estimate(
        CollectiveOp::AllToAll,
        1 << 20,
        &group,
        &with_fabric(),
        None,
    );
    assert_eq!(a2a.latency_ns, 3.0 * 1000.0 + 4.0 * (3000.0 + PATH_NS));
}

#[test]
fn a_topology_without_a_kind_costs_as_before_and_with_one_reads_its_fabric() {
    let profile = profile::Profile::builtin("h100-sxm").unwrap();
    let superpod = topologies::preset("dgx-h100-superpod").unwrap();
    let ib = topologies::preset("dgx-h100-ib").unwrap();
    let roce = topologies::preset("dgx-h100-roce").unwrap();
    let plain = LinkRates::from(&superpod, &profile);
    assert_eq!(plain.fabric_step_latency_ns, 0.0);
    assert_eq!(plain.network_step_ns(), plain.network_step_latency_ns);
    assert_eq!(
        LinkRates::from(&ib, &profile).fabric_step_latency_ns,
        1650.0
    );
    let roce_rates = LinkRates::from(&roce, &profile);
    assert_eq!(roce_rates.fabric_step_latency_ns, 2100.0);
    // Everything else is the SuperPOD's.
    assert_eq!(
        LinkRates {
            fabric_step_latency_ns: 0.0,
            ..roce_rates
        },
        plain
    );
}

#[test]
fn a_node_without_nvlink_rings_at_its_pcie_rate_with_nccls_pci_latencies() {
    let topology = topologies::preset("h100-pcie-cluster").unwrap();
    let profile = profile::Profile::builtin("h100-pcie").unwrap();
    assert_eq!(intra_node_line_bytes_per_s(&topology), 63e9);
    let rates = LinkRates::from(&topology, &profile);
    // The profile's 246 GB/s (the bridge's) capped by PCIe Gen5 x16.
    assert_eq!(
        profile.communication.nvlink_bus_bandwidth_bytes_per_s.value,
        246e9
    );
    assert_eq!(rates.nvlink_bus_bytes_per_s, 63e9);
    assert!(!rates.intra_node_nvlink);
    // A large 8-GPU all-reduce: Simple ring, 2·7/8 of the bytes at 63 GB/s
    // plus NCCL 2.12's ring Simple latency over PCI: baseLat 8.4 µs + 14
    // hops × hwLat[PCI][ring][Simple] 5.7 µs = 88.2 µs.
    let bytes = 1u64 << 30;
    let e = estimate(
        CollectiveOp::AllReduce,
        bytes,
        &GroupShape::single_node(8),
        &rates,
        Some(Algorithm::Ring),
    );
    assert_eq!(e.protocol, crate::Protocol::Simple);
    assert!((e.latency_ns - 88_200.0).abs() < 1e-6, "{}", e.latency_ns);
    let transfer_s = e.duration.as_seconds() - e.latency_ns * 1e-9;
    let expected_s = 2.0 * 7.0 / 8.0 * bytes as f64 / 63e9;
    assert!(
        (transfer_s - expected_s).abs() < 2e-9,
        "{transfer_s} vs {expected_s}"
    );
    // The SXM node of the same rates profile would run at its NVLink rate.
    let sxm = topologies::preset("dgx-h100-superpod").unwrap();
    assert_eq!(intra_node_line_bytes_per_s(&sxm), 450e9);
}
