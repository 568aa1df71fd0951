//! Closed-form cost of one collective: the ring and tree formulas and the
//! algorithm choice (see the crate documentation).

use super::shape::{Algorithm, CollectiveOp, GroupShape, LinkRates};
use timeline::time::SimDuration;

/// NCCL's tree bandwidth derating (`busBw * .92` in `src/graph/tuning.cc`).
pub const TREE_BANDWIDTH_EFFICIENCY: f64 = 0.92;

/// NCCL's bus-to-algorithm bandwidth ratio for trees (`ratio = .5` in `tuning.cc`):
/// every byte goes up the tree (reduce) and down again (broadcast).
pub const TREE_ALGORITHM_RATIO: f64 = 0.5;

/// What one collective costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CollectiveEstimate {
    /// Wall time of the collective, rounded up to whole nanoseconds once.
    pub duration: SimDuration,
    /// The algorithm the time is for (the requested one, or the tuner's choice).
    pub algorithm: Algorithm,
    /// nccl-tests' algorithm bandwidth: size ÷ time (0 when nothing is sent).
    pub algbw_bytes_per_s: f64,
    /// nccl-tests' bus bandwidth: algbw × the operation's bus factor.
    pub busbw_bytes_per_s: f64,
}

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
/// so the bus bandwidth is the node's usable NIC bandwidth, `rails × nic`, capped by
/// NVLink when the ring also has intra-node hops. On DGX A100 with 8 ranks per node:
/// min(230, 8 × 24) = 192 GB/s (NVIDIA/nccl issue 812). With one rank per node (a
/// data-parallel group with t = 8) each rank uses its own rail: 24 GB/s.
pub fn ring_bus_bytes_per_s(group: &GroupShape, rates: &LinkRates) -> f64 {
    if group.nodes <= 1 {
        return rates.nvlink_bus_bytes_per_s;
    }
    let network_bytes_per_s = rates.rails_per_node(group.ranks_per_node) * rates.nic_bytes_per_s;
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
    }
}

/// Ring (pipelined chain for broadcast, one hop for send/recv):
/// latency = intra steps × nvlink step + inter steps × network step;
/// transfer = bus factor × bytes ÷ ring bus bandwidth.
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
            + inter_steps as f64 * rates.network_step_latency_ns,
        transfer_seconds: op.bus_factor(group.ranks) * bytes as f64
            / ring_bus_bytes_per_s(group, rates),
    }
}

/// Double binary tree all-reduce (NCCL `tuning.cc`): a chain of r − 1 NVLink hops
/// inside each node and ⌊log2 nodes⌋ network hops, each walked twice (reduce up,
/// broadcast down); algorithm bandwidth = 0.5 × 0.92 × the ring's bus bandwidth.
pub fn tree_terms(bytes: u64, group: &GroupShape, rates: &LinkRates) -> CostTerms {
    let chain_hops = group.ranks_per_node.saturating_sub(1) as f64;
    let tree_depth = group.nodes.max(1).ilog2() as f64;
    let algbw_bytes_per_s =
        TREE_ALGORITHM_RATIO * TREE_BANDWIDTH_EFFICIENCY * ring_bus_bytes_per_s(group, rates);
    CostTerms {
        latency_ns: 2.0
            * (chain_hops * rates.nvlink_step_latency_ns
                + tree_depth * rates.network_step_latency_ns),
        transfer_seconds: bytes as f64 / algbw_bytes_per_s,
    }
}

/// Cost of `op` on `bytes` (nccl-tests' "size": the buffer per rank; for
/// all-gather/reduce-scatter the full, gathered buffer) over `group`.
///
/// `algorithm: None` applies the tuner rule of the module documentation; `Some`
/// forces an algorithm, except that a tree is only defined for all-reduce (as in
/// NCCL), so other operations run as rings and say so in the result.
/// A group of one rank, or zero bytes, costs nothing.
pub fn estimate(
    op: CollectiveOp,
    bytes: u64,
    group: &GroupShape,
    rates: &LinkRates,
    algorithm: Option<Algorithm>,
) -> CollectiveEstimate {
    let tree_allowed = op == CollectiveOp::AllReduce;
    let algorithm = match algorithm {
        Some(Algorithm::Tree) if tree_allowed => Algorithm::Tree,
        Some(_) => Algorithm::Ring,
        None => choose_algorithm(op, bytes, group, rates),
    };
    if group.ranks <= 1 || bytes == 0 {
        return CollectiveEstimate {
            duration: SimDuration::ZERO,
            algorithm,
            algbw_bytes_per_s: 0.0,
            busbw_bytes_per_s: 0.0,
        };
    }
    let terms = match algorithm {
        Algorithm::Ring => ring_terms(op, bytes, group, rates),
        Algorithm::Tree => tree_terms(bytes, group, rates),
    };
    let duration = SimDuration::from_seconds_ceil(terms.total_seconds());
    let algbw_bytes_per_s = bytes as f64 / duration.as_seconds();
    CollectiveEstimate {
        duration,
        algorithm,
        algbw_bytes_per_s,
        busbw_bytes_per_s: algbw_bytes_per_s * op.bus_factor(group.ranks),
    }
}

/// The tuner: rings inside a node and for every operation but all-reduce; for an
/// all-reduce across nodes, whichever of ring and tree the model predicts faster
/// (ties go to the ring), as NCCL's tuner picks the least modeled time.
pub fn choose_algorithm(
    op: CollectiveOp,
    bytes: u64,
    group: &GroupShape,
    rates: &LinkRates,
) -> Algorithm {
    if op != CollectiveOp::AllReduce || group.nodes <= 1 || group.ranks <= 1 {
        return Algorithm::Ring;
    }
    let ring = ring_terms(op, bytes, group, rates).total_seconds();
    let tree = tree_terms(bytes, group, rates).total_seconds();
    if tree < ring {
        Algorithm::Tree
    } else {
        Algorithm::Ring
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round numbers: 100 GB/s NVLink bus, 10 GB/s NICs, 1 µs / 3 µs steps.
    fn round_rates() -> LinkRates {
        LinkRates {
            nvlink_bus_bytes_per_s: 100e9,
            nvlink_step_latency_ns: 1000.0,
            nic_bytes_per_s: 10e9,
            nics_per_node: 8,
            gpus_per_node: 8,
            network_step_latency_ns: 3000.0,
        }
    }

    fn ring_ns(op: CollectiveOp, bytes: u64, group: GroupShape) -> u64 {
        estimate(op, bytes, &group, &round_rates(), Some(Algorithm::Ring))
            .duration
            .as_nanos()
    }

    #[test]
    fn ring_formulas_inside_a_node_are_exact_to_the_nanosecond() {
        let node8 = GroupShape::single_node(8);
        // Sizes are chosen so that no exact result is a whole number of ns (f64
        // noise on an integer could round either way; see time.rs).
        // 14 steps × 1 µs + 1.75 × 1 000 100 B ÷ 100 GB/s = 14 000 + 17 501.75 ns.
        assert_eq!(ring_ns(CollectiveOp::AllReduce, 1_000_100, node8), 31_502);
        // 7 steps + 0.875 × 1 000 100 ÷ 100e9 = 7 000 + 8 750.875 ns.
        assert_eq!(ring_ns(CollectiveOp::AllGather, 1_000_100, node8), 15_751);
        assert_eq!(
            ring_ns(CollectiveOp::ReduceScatter, 1_000_100, node8),
            15_751
        );
        // Pipelined chain: 7 steps + 1 000 050 ÷ 100e9 = 7 000 + 10 000.5 ns.
        assert_eq!(ring_ns(CollectiveOp::Broadcast, 1_000_050, node8), 17_001);
        // One hop: 1 µs + 10 000.5 ns.
        let pair = GroupShape::single_node(2);
        assert_eq!(ring_ns(CollectiveOp::SendRecv, 1_000_050, pair), 11_001);
        // A fraction of a nanosecond rounds up: 14 000 + 1.75 × 1001 ÷ 100 = 14 017.5175.
        assert_eq!(ring_ns(CollectiveOp::AllReduce, 1001, node8), 14_018);
    }

    #[test]
    fn ring_formulas_across_nodes_use_rails_and_network_steps() {
        // 2 nodes × 8: bus bw min(100, 8 × 10) = 80 GB/s; 30 steps, 2 of them inter-node.
        // 28 × 1000 + 2 × 3000 = 34 000 ns; 1.875 × 8 000 100 ÷ 80e9 = 187 502.34 ns.
        let group = GroupShape::new(2, 8);
        assert_eq!(ring_bus_bytes_per_s(&group, &round_rates()), 80e9);
        assert_eq!(ring_ns(CollectiveOp::AllReduce, 8_000_100, group), 221_503);
        // One rank per node over 4 nodes: its own rail, 10 GB/s; 6 network steps.
        // 18 000 + 1.5 × 8 000 003 ÷ 10e9 = 18 000 + 1 200 000.45 ns.
        let rail = GroupShape::new(4, 1);
        assert_eq!(ring_bus_bytes_per_s(&rail, &round_rates()), 10e9);
        assert_eq!(ring_ns(CollectiveOp::AllReduce, 8_000_003, rail), 1_218_001);
        // Send/recv between nodes: one network step over one rail: 3 000 + 100 000.3 ns.
        let pair = GroupShape::new(2, 1);
        assert_eq!(ring_ns(CollectiveOp::SendRecv, 1_000_003, pair), 103_001);
    }

    #[test]
    fn tree_formula_is_exact_to_the_nanosecond() {
        // 4 nodes × 8: 2 × (7 × 1000 + 2 × 3000) = 26 000 ns;
        // 8e6 ÷ (0.5 × 0.92 × 80e9) = 217 391.30… ns.
        let group = GroupShape::new(4, 8);
        let tree = estimate(
            CollectiveOp::AllReduce,
            8_000_000,
            &group,
            &round_rates(),
            Some(Algorithm::Tree),
        );
        assert_eq!(tree.algorithm, Algorithm::Tree);
        assert_eq!(tree.duration.as_nanos(), 243_392);
    }

    #[test]
    fn tuner_picks_tree_for_small_cross_node_all_reduce_and_ring_for_large() {
        let rates = round_rates();
        let group = GroupShape::new(16, 8);
        let choose = |bytes| estimate(CollectiveOp::AllReduce, bytes, &group, &rates, None);
        assert_eq!(choose(64 << 10).algorithm, Algorithm::Tree);
        assert_eq!(choose(4 << 30).algorithm, Algorithm::Ring);
        // Inside a node and for other operations: ring.
        let node = GroupShape::single_node(8);
        let small = estimate(CollectiveOp::AllReduce, 1024, &node, &rates, None);
        assert_eq!(small.algorithm, Algorithm::Ring);
        let gather = estimate(CollectiveOp::AllGather, 1024, &group, &rates, None);
        assert_eq!(gather.algorithm, Algorithm::Ring);
        // Forcing a tree onto an all-gather runs a ring, as NCCL does.
        let forced = estimate(
            CollectiveOp::AllGather,
            1024,
            &group,
            &rates,
            Some(Algorithm::Tree),
        );
        assert_eq!(forced.algorithm, Algorithm::Ring);
        // The override wins over the tuner.
        let ring = estimate(
            CollectiveOp::AllReduce,
            64 << 10,
            &group,
            &rates,
            Some(Algorithm::Ring),
        );
        assert_eq!(ring.algorithm, Algorithm::Ring);
        assert!(ring.duration > choose(64 << 10).duration);
    }

    #[test]
    fn bandwidths_follow_nccl_tests_definitions() {
        let group = GroupShape::single_node(8);
        let e = estimate(
            CollectiveOp::AllReduce,
            1_000_100,
            &group,
            &round_rates(),
            None,
        );
        assert_eq!(e.duration.as_nanos(), 31_502);
        assert_eq!(e.algbw_bytes_per_s, 1_000_100.0 / e.duration.as_seconds());
        assert_eq!(e.busbw_bytes_per_s, e.algbw_bytes_per_s * 1.75);
    }

    #[test]
    fn one_rank_or_zero_bytes_costs_nothing() {
        let rates = round_rates();
        let one = estimate(
            CollectiveOp::AllReduce,
            1 << 20,
            &GroupShape::single_node(1),
            &rates,
            None,
        );
        assert_eq!(one.duration, SimDuration::ZERO);
        let empty = estimate(
            CollectiveOp::AllReduce,
            0,
            &GroupShape::new(2, 8),
            &rates,
            None,
        );
        assert_eq!(empty.duration, SimDuration::ZERO);
        assert_eq!(empty.busbw_bytes_per_s, 0.0);
    }
}
