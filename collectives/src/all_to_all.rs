//! NCCL's all-to-all in closed form.
//!
//! NCCL has no all-to-all kernel: PyTorch's `all_to_all_single` and
//! nccl-tests' `alltoall_perf` (`src/alltoall.cu`) issue, inside one
//! `ncclGroupStart`/`ncclGroupEnd`, an `ncclSend` and an `ncclRecv` of
//! `bytes / n` to and from every peer. NCCL schedules those point-to-point
//! operations in rounds, one (send peer, receive peer) pair per round
//! (`comm->p2pSchedule`, `src/init.cc` of v2.21.5-1; `scheduleP2pTasksToPlan`
//! in `src/enqueue.cc`), over the p2p channels (`ncclTopoComputeP2pChannels`
//! in `src/graph/paths.cc`: two channels per NIC for a network peer,
//! `NCCL_NCHANNELS_PER_NET_PEER`), in chunks of `NCCL_P2P_NVL_CHUNKSIZE`
//! (512 KiB) inside an NVLink node and `NCCL_P2P_NET_CHUNKSIZE` (128 KiB)
//! across nodes (`src/init.cc`). Point-to-point always runs the Simple
//! protocol and is not tuned.
//!
//! The model, for `n` ranks with `r` on each node:
//! - each rank sends `(n−1)/n` of its buffer: `(r−1)·bytes/n` to its node's
//!   peers over NVLink and `(n−r)·bytes/n` to other nodes' peers over its own
//!   NIC rail(s) (`nics_per_node / gpus_per_node` NICs per GPU); the two link
//!   classes run at once, so the transfer takes the slower of
//!   `(r−1)·bytes/n ÷ nvlink` and `(n−r)·bytes/n ÷ rails·nic`, where `nvlink`
//!   is the profile's NVLink bus bandwidth (what one GPU pushes into the
//!   NVSwitch: a ring's bus bandwidth is each GPU's send rate);
//! - the latency term is one point-to-point step per peer (n−1 rounds): the
//!   profile's NVLink step latency for each peer on the node, its network
//!   step latency (plus a declared fabric's path latency,
//!   [`LinkRates::network_step_ns`]) for each peer elsewhere. Rounds are
//!   counted one after the other, as the schedule issues them; NCCL overlaps
//!   a few of them on
//!   separate channels, which this does not model (an upper bound on the
//!   latency term for large groups).
//!
//! nccl-tests reports `busbw = algbw · (n−1)/n` for `alltoall_perf`
//! (`AlltoAllGetBw` in `src/alltoall.cu`), the bus factor of
//! [`crate::CollectiveOp::AllToAll`]: inside one node the bus bandwidth of a
//! large all-to-all is therefore the NVLink bandwidth, as for a ring.

use crate::cost_terms::CostTerms;
use crate::shape::{GroupShape, LinkRates};

/// Bytes each rank sends to peers on its own node and to peers on other
/// nodes, for an all-to-all of `bytes` per rank (`bytes / n` to each peer).
pub fn all_to_all_peer_bytes(bytes: u64, group: &GroupShape) -> (f64, f64) {
    let n = f64::from(group.ranks.max(1));
    let local = f64::from(group.ranks_per_node.clamp(1, group.ranks.max(1)));
    let per_peer = bytes as f64 / n;
    ((local - 1.0) * per_peer, (n - local) * per_peer)
}

/// What one rank's own NICs carry per direction: its share of its node's NICs.
pub fn per_rank_network_bytes_per_s(rates: &LinkRates) -> f64 {
    rates.rails_per_node(1) * rates.nic_bytes_per_s
}

/// Latency and transfer terms of an all-to-all of `bytes` per rank over
/// `group` (see the module documentation). Needs ≥ 2 ranks.
pub fn all_to_all_terms(bytes: u64, group: &GroupShape, rates: &LinkRates) -> CostTerms {
    let n = u64::from(group.ranks.max(1));
    let local = u64::from(group.ranks_per_node.clamp(1, group.ranks.max(1)));
    let (intra_bytes, inter_bytes) = all_to_all_peer_bytes(bytes, group);
    let nvlink_seconds = if intra_bytes > 0.0 {
        intra_bytes / rates.nvlink_bus_bytes_per_s
    } else {
        0.0
    };
    let network_seconds = if inter_bytes > 0.0 {
        inter_bytes / per_rank_network_bytes_per_s(rates)
    } else {
        0.0
    };
    CostTerms {
        latency_ns: (local - 1) as f64 * rates.nvlink_step_latency_ns
            + (n - local) as f64 * rates.network_step_ns(),
        transfer_seconds: nvlink_seconds.max(network_seconds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{estimate, Algorithm, CollectiveOp, Protocol};

    /// 100 GB/s NVLink, 10 GB/s NICs (one per GPU), 1 µs / 3 µs steps.
    fn round_rates() -> LinkRates {
        LinkRates {
            nvlink_bus_bytes_per_s: 100e9,
            nvlink_step_latency_ns: 1000.0,
            nic_bytes_per_s: 10e9,
            nics_per_node: 8,
            gpus_per_node: 8,
            network_step_latency_ns: 3000.0,
            compute_capability: 90,
            intra_node_nvlink: true,
            amd_host_cpu: false,
            nccl: crate::NcclVersion::V2_12,
            fabric_step_latency_ns: 0.0,
        }
    }

    #[test]
    fn inside_a_node_seven_nvlink_steps_and_seven_eighths_over_nvlink() {
        // 8 ranks: 7 × 1 µs + 7/8 × 8 000 008 B ÷ 100 GB/s = 7 000 + 70 000.07 ns.
        let e = estimate(
            CollectiveOp::AllToAll,
            8_000_008,
            &GroupShape::single_node(8),
            &round_rates(),
            None,
        );
        assert_eq!(e.duration.as_nanos(), 77_001);
        assert_eq!(
            (e.algorithm, e.protocol),
            (Algorithm::Ring, Protocol::Simple)
        );
        assert_eq!(e.latency_ns, 7000.0);
        assert_eq!(e.busbw_bytes_per_s, e.algbw_bytes_per_s * 0.875);
    }

    #[test]
    fn across_nodes_the_rank_s_own_rail_is_the_slowest_link() {
        // 2 nodes × 8: 7 NVLink peers, 8 network peers, 1/16 of 16 000 032 B each.
        // NVLink: 7 000 014 B ÷ 100 GB/s = 70 000.14 ns; NIC: 8 000 016 B ÷
        // 10 GB/s = 800 001.6 ns; latency 7 × 1 µs + 8 × 3 µs = 31 µs.
        let group = GroupShape::new(2, 8);
        let terms = all_to_all_terms(16_000_032, &group, &round_rates());
        assert_eq!(terms.latency_ns, 31_000.0);
        let e = estimate(
            CollectiveOp::AllToAll,
            16_000_032,
            &group,
            &round_rates(),
            None,
        );
        assert_eq!(e.duration.as_nanos(), 831_002);
        // One rank per node: every peer across the network.
        let e = estimate(
            CollectiveOp::AllToAll,
            4_000_004,
            &GroupShape::new(4, 1),
            &round_rates(),
            None,
        );
        // 3 × 3 µs + 3/4 × 4 000 004 ÷ 10 GB/s = 9 000 + 300 000.3 ns.
        assert_eq!(e.duration.as_nanos(), 309_001);
        // Half a NIC per GPU (DGX-2): the network term doubles.
        let dgx2 = LinkRates {
            nics_per_node: 8,
            gpus_per_node: 16,
            ..round_rates()
        };
        assert_eq!(per_rank_network_bytes_per_s(&dgx2), 5e9);
    }

    #[test]
    fn one_rank_or_nothing_costs_nothing() {
        let e = estimate(
            CollectiveOp::AllToAll,
            1 << 20,
            &GroupShape::single_node(1),
            &round_rates(),
            None,
        );
        assert_eq!(e.duration.as_nanos(), 0);
        assert_eq!(CollectiveOp::AllToAll.bus_factor(4), 0.75);
    }
}
