//! The terms a collective's time is made of ([`CostTerms`]), the ring's
//! bus bandwidth, steps and terms, and NCCL's tree derating constants: what
//! the tuner ([`crate::protocol`]), the estimate and the all-to-all share.

use super::shape::{CollectiveOp, GroupShape, LinkRates};

/// NCCL's tree bandwidth derating (`busBw * .92` in `src/graph/tuning.cc`).
pub const TREE_BANDWIDTH_EFFICIENCY: f64 = 0.92;

/// NCCL's bus-to-algorithm bandwidth ratio for trees (`ratio = .5` in `tuning.cc`):
/// every byte goes up the tree (reduce) and down again (broadcast).
pub const TREE_ALGORITHM_RATIO: f64 = 0.5;

/// Latency and bandwidth terms of one algorithm, before rounding.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostTerms {
    /// Sum of per-step fixed costs.
    pub latency_ns: f64,
    /// Seconds spent moving bytes.
    pub transfer_seconds: f64,
}

impl CostTerms {
    pub fn total_seconds(&self) -> f64 {
        self.latency_ns * 1e-9 + self.transfer_seconds
    }
}

/// Bus bandwidth a ring of this group reaches (also the base of the tree's bandwidth).
///
/// Inside a node: the NVLink bus bandwidth. Across nodes every ring crosses each
/// node boundary once through one NIC, and NCCL runs one ring per rail in parallel,
/// so the bus bandwidth is the usable NIC bandwidth of the group's least populated
/// node, `rails × nic` (its ranks' rails: a 4 + 12 split of 16 ranks over two NVL72
/// domains has 4, not 8), capped by NVLink when the ring also has intra-node hops. On DGX A100 with 8 ranks per node:
/// min(230, 8 × 24) = 192 GB/s (NVIDIA/nccl issue 812). With one rank per node (a
/// data-parallel group with t = 8) each rank uses its own rail: 24 GB/s.
pub fn ring_bus_bytes_per_s(group: &GroupShape, rates: &LinkRates) -> f64 {
    if group.nodes <= 1 {
        return rates.nvlink_bus_bytes_per_s;
    }
    // Each ring enters and leaves every node through a NIC of one of that
    // node's ranks: the least populated node has the fewest rails to offer.
    let network_bytes_per_s =
        rates.rails_per_node(group.fewest_ranks_per_node) * rates.nic_bytes_per_s;
    if group.ranks_per_node > 1 {
        network_bytes_per_s.min(rates.nvlink_bus_bytes_per_s)
    } else {
        network_bytes_per_s
    }
}

/// Ring steps (hops on one chunk's path) and how many of them cross a node boundary,
/// as NCCL's tuner counts them.
pub fn ring_steps(op: CollectiveOp, group: &GroupShape) -> (u64, u64) {
    let n = group.ranks as u64;
    let nodes = group.nodes as u64;
    match op {
        CollectiveOp::AllReduce => (2 * (n - 1), 2 * (nodes - 1)),
        CollectiveOp::ReduceScatter | CollectiveOp::AllGather | CollectiveOp::Broadcast => {
            (n - 1, nodes - 1)
        }
        CollectiveOp::SendRecv => (1, u64::from(nodes > 1)),
        // One point-to-point round per peer; those on other nodes cross the network.
        CollectiveOp::AllToAll => (n - 1, n - group.ranks_per_node.min(group.ranks) as u64),
    }
}

/// Ring with the profile's per-step latencies, the model of a send/recv (one hop,
/// Simple; NCCL does not tune point-to-point):
/// latency = intra steps × nvlink step + inter steps × (network step + the
/// declared fabric's path latency, [`LinkRates::network_step_ns`]);
/// transfer = bus factor × bytes ÷ ring bus bandwidth (the Simple protocol's,
/// which is also every tuned pair's bandwidth before its protocol factor).
pub fn ring_terms(
    op: CollectiveOp,
    bytes: u64,
    group: &GroupShape,
    rates: &LinkRates,
) -> CostTerms {
    let (steps, inter_steps) = ring_steps(op, group);
    let intra_steps = steps - inter_steps;
    CostTerms {
        latency_ns: intra_steps as f64 * rates.nvlink_step_latency_ns
            + inter_steps as f64 * rates.network_step_ns(),
        transfer_seconds: op.bus_factor(group.ranks) * bytes as f64
            / ring_bus_bytes_per_s(group, rates),
    }
}
