//! The flow model and the closed-form collective model agree: one step of NCCL's
//! rings across two DGX A100 nodes, laid out as flows on the selene fabric, takes
//! what the closed form's 8 × 24 GB/s bus bandwidth says it takes.

use profile::Profile;
use sim::collective::{ring_terms, CollectiveOp, GroupShape, LinkRates};
use sim::network::*;
use sim::time::{SimDuration, SimTime};

#[test]
fn one_ring_step_across_two_nodes_runs_at_one_rail_per_ring() {
    let topology = topologies::preset("selene").unwrap();
    let profile = Profile::builtin("a100-80gb").unwrap();
    let fabric = Fabric::new(&topology, &profile).unwrap();
    let mut net = FairShareNetwork::new(fabric.capacities_bytes_per_s());

    // 16 ranks, 1 GiB all-reduce split over 8 rings (one per rail); each ring's
    // step moves a chunk of size / (8 rings × 16 ranks) from every rank to the next.
    let size_bytes: u64 = 1 << 30;
    let ranks = 16u64;
    let chunk_bytes = size_bytes / (8 * ranks);
    // Ring k: node 0's GPUs k, k+1, …, k+7 (mod 8), over rail k−1 to node 1's GPU
    // k−1, then down to GPU k, and over rail k back to node 0's GPU k.
    for k in 0..8u32 {
        let node0: Vec<u32> = (0..8).map(|i| (k + i) % 8).collect();
        let node1: Vec<u32> = (0..8).map(|i| 8 + (k + 7 + 8 - i) % 8).collect();
        let order: Vec<u32> = node0.into_iter().chain(node1).collect();
        for (i, &src) in order.iter().enumerate() {
            let dst = order[(i + 1) % order.len()];
            net.start_flow(SimTime::ZERO, &fabric.route(src, dst).links, chunk_bytes);
        }
    }
    let done = net.advance(SimTime(u64::MAX - 1));
    assert_eq!(done.len(), 8 * 16);
    let step = done.last().unwrap().0.since(SimTime::ZERO);

    // Every NIC carries one ring; NVLink ports carry 7 flows at 230/7 GB/s each.
    assert_eq!(
        step,
        SimDuration::from_seconds_ceil(chunk_bytes as f64 / 24e9)
    );
    // The closed form: bandwidth term ÷ 2(n − 1) steps.
    let rates = LinkRates::from(&topology, &profile);
    let closed = ring_terms(
        CollectiveOp::AllReduce,
        size_bytes,
        &GroupShape::new(2, 8),
        &rates,
    )
    .transfer_seconds
        / (2.0 * (ranks as f64 - 1.0));
    assert!(
        (step.as_seconds() - closed).abs() <= 1e-9,
        "{step:?} vs {closed}"
    );
    // The NVLink ports carry the most bytes (7 chunks each, against one per NIC),
    // but by busy time the NICs are the busiest links: they set the pace.
    let utilization = net.link_utilization();
    let most_bytes = (0..utilization.carried_bytes.len())
        .max_by_key(|&link| (utilization.carried_bytes[link], std::cmp::Reverse(link)))
        .unwrap();
    assert!(matches!(
        fabric.link(LinkId(most_bytes as u32)).kind,
        LinkKind::NvlinkUp | LinkKind::NvlinkDown
    ));
    let busiest = utilization.busiest(16, step);
    for link in &busiest {
        let kind = fabric.link(link.link).kind;
        assert!(
            matches!(kind, LinkKind::NicUp | LinkKind::NicDown),
            "{}",
            fabric.describe(link.link)
        );
        // Busy for the whole step (to the nanosecond the step was rounded up to).
        assert!(
            (link.utilization - 1.0).abs() < 1e-5,
            "{}",
            link.utilization
        );
    }
}
