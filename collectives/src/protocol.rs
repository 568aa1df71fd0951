//! NCCL's protocols (LL, LL128, Simple) and its tuner: the latency and bandwidth
//! NCCL models for every (algorithm, protocol) pair of a collective, and the rule
//! that runs the pair of least modeled time.
//!
//! Source: NVIDIA/nccl v2.12.12-1 (commit 7aa1c46f, 2022, the NCCL of the A100
//! era the validation cases ran on): `src/graph/tuning.cc` (`baseLat`, `hwLat`,
//! `llMaxBws`, `ncclTopoTuneModel`, `treeCorrectionFactor`, `ncclTopoGetAlgoTime`)
//! and `src/enqueue.cc` (`getAlgoInfo`: the first pair of strictly least time,
//! trees before rings, LL before LL128 before Simple). The bus bandwidth NCCL
//! derives from its topology search (`nChannels × speed`) is the group's achieved
//! ring bus bandwidth here ([`ring_bus_bytes_per_s`]); NCCL's caps that need the
//! channel count (`ll128MaxBwPerCh`, `perChMaxTreeBw`) are not modeled. The
//! network's `latencyInter` is taken as 0 (the IB plugin reports no latency), so
//! network hops cost `hwLat[NET]`; GPUs reach their NICs over a PCIe switch
//! (`typeInter ≤ PATH_PXB`, as on DGX nodes), which LL128 needs.
//!
//! The tuner of v2.21.5-1 (2024) is the same rule with other constants and a few
//! changed refinements ([`crate::version`]); [`LinkRates::nccl`] picks the version.

use super::cost_terms::{
    ring_bus_bytes_per_s, CostTerms, TREE_ALGORITHM_RATIO, TREE_BANDWIDTH_EFFICIENCY,
};
use super::shape::{Algorithm, CollectiveOp, GroupShape, LinkRates};
use super::version::{
    NcclVersion, BASE_LATENCY_US_2_21, HOP_LATENCY_US_2_21, LL_MAX_BUS_GB_PER_S_2_21,
    NET_OVERHEAD_SIMPLE_FACTOR, NET_OVERHEAD_US_AMD, NET_OVERHEAD_US_INTEL, PLATEAU_CHANNELS,
    RING_LL_SHARE_2_21, RING_PLATEAU_FACTOR_AMPERE_ON,
};

/// How NCCL moves data between ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// Low latency: 8-byte stores of 4 data bytes and a 4-byte flag.
    Ll,
    /// 128-byte lines of 120 data bytes and an 8-byte flag (NVLink only).
    Ll128,
    /// Plain copies and a fence per chunk: full bandwidth, most latency.
    Simple,
}

impl Protocol {
    /// In NCCL's order (`NCCL_PROTO_LL`, `_LL128`, `_SIMPLE`), which breaks ties.
    pub const ALL: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

    /// NCCL's spelling (`NCCL_PROTO=LL,LL128,Simple`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ll => "LL",
            Protocol::Ll128 => "LL128",
            Protocol::Simple => "Simple",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// `baseLat` (µs), [tree, ring][LL, LL128, Simple]: the fixed cost of one call.
pub const BASE_LATENCY_US: [[f64; 3]; 2] = [[4.4, 4.4, 0.0], [3.6, 10.0, 8.4]];

/// The link a hop runs on (`NCCL_HW_NVLINK`, `_PCI`, `_NET`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopLink {
    NvLink,
    Pci,
    Net,
}

/// `hwLat` (µs per hop), [NVLink, PCI, NET][tree, ring][LL, LL128, Simple].
pub const HOP_LATENCY_US: [[[f64; 3]; 2]; 3] = [
    [[0.52, 1.25, 28.0], [0.47, 1.9, 3.4]],
    [[1.0, 1.9, 28.0], [1.0, 2.5, 5.7]],
    [[5.0, 8.5, 28.0], [2.7, 4.0, 28.0]],
];

/// `llMaxBws` (GB/s), [Volta or Intel hosts, Ampere or AMD hosts][1 node, 2 nodes, more]:
/// one node is indexed by the GPU (Ampere), several by the host CPU's vendor (AMD).
pub const LL_MAX_BUS_GB_PER_S: [[f64; 3]; 2] = [[39.0, 39.0, 20.4], [87.7, 22.5, 19.0]];

/// `if (compCap80) busBw = std::min(busBw, 235.0f)`: Ampere's bus bandwidth cap (GB/s).
pub const AMPERE_BUS_CAP_GB_PER_S: f64 = 235.0;

/// `treeCorrectionFactor`, [LL, LL128, Simple][log2(bytes / 64)], 64 B to 256 MiB:
/// NCCL's measured correction of the tree's bandwidth at medium sizes.
pub const TREE_CORRECTION: [[f64; 23]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.0, 1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9,
        0.9, 0.9, 0.9, 1.0, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8,
        0.7, 0.7, 0.8, 0.9, 0.9,
    ],
];

/// `lat *= 1.9`: the "plateau effect" of a Simple ring all-reduce across nodes,
/// from `nRanks / 16 × 64 KiB` bytes on.
pub const RING_PLATEAU_FACTOR: f64 = 1.9;

/// `intraLat *= 1.8` for LL when the group spans nodes.
pub const LL_MULTI_NODE_INTRA_FACTOR: f64 = 1.8;

fn algorithm_index(algorithm: Algorithm) -> usize {
    match algorithm {
        Algorithm::Tree => 0,
        Algorithm::Ring => 1,
    }
}

fn hop_latency_us(
    version: NcclVersion,
    link: HopLink,
    algorithm: Algorithm,
    protocol: Protocol,
) -> f64 {
    let link = match link {
        HopLink::NvLink => 0,
        HopLink::Pci => 1,
        HopLink::Net => 2,
    };
    let table = match version {
        NcclVersion::V2_12 => &HOP_LATENCY_US,
        NcclVersion::V2_21 => &HOP_LATENCY_US_2_21,
    };
    table[link][algorithm_index(algorithm)][protocol.index()]
}

fn base_latency_us(version: NcclVersion, algorithm: Algorithm, protocol: Protocol) -> f64 {
    let table = match version {
        NcclVersion::V2_12 => &BASE_LATENCY_US,
        NcclVersion::V2_21 => &BASE_LATENCY_US_2_21,
    };
    table[algorithm_index(algorithm)][protocol.index()]
}

/// `llMaxBw` (bytes/s) of the version: one node indexed by the GPU, several by
/// the host CPU's vendor; columns 1 node, 2 nodes, more.
fn ll_max_bytes_per_s(rates: &LinkRates, nodes: u32) -> f64 {
    let column = (nodes.min(3) - 1) as usize;
    let multi_node = nodes > 1;
    let gb_per_s = match rates.nccl {
        // `index1 = nNodes == 1 ? compCap80 : AMD`.
        NcclVersion::V2_12 => {
            let row = if multi_node {
                usize::from(rates.amd_host_cpu)
            } else {
                usize::from(rates.compute_capability == 80)
            };
            LL_MAX_BUS_GB_PER_S[row][column]
        }
        // `index1 = nNodes == 1 ? compCapIndex : AMD`, `compCapIndex` Hopper from 90 on.
        NcclVersion::V2_21 => {
            let row = if multi_node {
                usize::from(rates.amd_host_cpu)
            } else {
                match rates.compute_capability {
                    cc if cc >= 90 => 2,
                    cc if cc >= 80 => 1,
                    _ => 0,
                }
            };
            LL_MAX_BUS_GB_PER_S_2_21[row][column]
        }
    };
    gb_per_s * 1e9
}

/// `log2i`: the floor of log2, 0 for 0.
fn log2_floor(n: u64) -> u32 {
    n.checked_ilog2().unwrap_or(0)
}

/// Whether NCCL enables LL128 by default: GPUs joined by NVLink of compute
/// capability 7.0 or 8.0 under 2.12, 7.0, 8.0 or 9.0 (Hopper) under 2.21 ("other
/// cases are not tested and may cause silent data corruption").
pub fn ll128_enabled(rates: &LinkRates) -> bool {
    let tested = match rates.nccl {
        NcclVersion::V2_12 => matches!(rates.compute_capability, 70 | 80),
        NcclVersion::V2_21 => matches!(rates.compute_capability, 70 | 80 | 90),
    };
    rates.intra_node_nvlink && tested
}

/// Ring steps and their network steps as 2.12's tuner counts them: all-reduce
/// 2(n−1) and 2·nodes (when nodes > 1); reduce-scatter, all-gather n−1 and
/// nodes−1; broadcast n and nodes.
fn tuner_ring_steps(op: CollectiveOp, group: &GroupShape) -> (i64, i64) {
    let n = i64::from(group.ranks);
    let nodes = i64::from(group.nodes);
    match op {
        CollectiveOp::AllReduce => (2 * (n - 1), if nodes > 1 { 2 * nodes } else { 0 }),
        CollectiveOp::ReduceScatter | CollectiveOp::AllGather => (n - 1, nodes - 1),
        CollectiveOp::Broadcast | CollectiveOp::SendRecv | CollectiveOp::AllToAll => (n, nodes),
    }
}

/// NCCL's modeled latency and bandwidth terms for `op` of `bytes` run with
/// `algorithm` and `protocol` (`ncclTopoTuneModel` then `ncclTopoGetAlgoTime`
/// with one operation), or `None` where NCCL does not offer the pair: trees are
/// all-reduce only, LL128 needs [`ll128_enabled`], and point-to-point sends are
/// not tuned (they run Simple; see [`crate::estimate`]). Needs ≥ 2 ranks.
pub fn nccl_terms(
    op: CollectiveOp,
    bytes: u64,
    group: &GroupShape,
    rates: &LinkRates,
    algorithm: Algorithm,
    protocol: Protocol,
) -> Option<CostTerms> {
    if matches!(op, CollectiveOp::SendRecv | CollectiveOp::AllToAll) || group.ranks <= 1 {
        return None;
    }
    if algorithm == Algorithm::Tree && op != CollectiveOp::AllReduce {
        return None;
    }
    if protocol == Protocol::Ll128 && !ll128_enabled(rates) {
        return None;
    }
    let version = rates.nccl;
    let v2_12 = version == NcclVersion::V2_12;
    let nodes = group.nodes.max(1);
    let ranks = f64::from(group.ranks);
    let multi_node = nodes > 1;
    let ll_max = ll_max_bytes_per_s(rates, nodes);
    let ranks_per_node = ranks / f64::from(nodes);

    // Bandwidth (`bandwidths[coll][a][p]`).
    let mut bus = ring_bus_bytes_per_s(group, rates);
    if v2_12 && rates.compute_capability == 80 {
        bus = bus.min(AMPERE_BUS_CAP_GB_PER_S * 1e9);
    }
    let (steps, network_steps) = tuner_ring_steps(op, group);
    let bus = match (algorithm, protocol) {
        (Algorithm::Ring, Protocol::Ll) => {
            let share = if !v2_12 {
                RING_LL_SHARE_2_21
            } else if multi_node || op == CollectiveOp::AllReduce {
                1.0 / 4.0
            } else {
                1.0 / 3.0
            };
            ll_max.min(bus * share)
        }
        (Algorithm::Ring, Protocol::Ll128) => bus * if ranks_per_node < 2.0 { 0.7 } else { 0.92 },
        (Algorithm::Ring, Protocol::Simple) => bus,
        (Algorithm::Tree, Protocol::Ll) => (bus * TREE_BANDWIDTH_EFFICIENCY / 3.8).min(ll_max),
        (Algorithm::Tree, Protocol::Ll128) => {
            bus * TREE_BANDWIDTH_EFFICIENCY * if multi_node { 120.0 / 128.0 } else { 7.0 / 9.0 }
        }
        (Algorithm::Tree, Protocol::Simple) => bus * TREE_BANDWIDTH_EFFICIENCY,
    };
    let ratio = match algorithm {
        Algorithm::Ring => ranks / steps as f64,
        Algorithm::Tree => TREE_ALGORITHM_RATIO,
    };
    let mut algbw_bytes_per_s = bus * ratio;

    // Latency (`latencies[coll][a][p]`).
    let intra_link = if rates.intra_node_nvlink {
        HopLink::NvLink
    } else {
        HopLink::Pci
    };
    let mut intra_us = hop_latency_us(version, intra_link, algorithm, protocol);
    let inter_us = hop_latency_us(version, HopLink::Net, algorithm, protocol);
    if v2_12 && multi_node && protocol == Protocol::Ll {
        intra_us *= LL_MULTI_NODE_INTRA_FACTOR;
    }
    let mut latency_us = base_latency_us(version, algorithm, protocol);
    match algorithm {
        Algorithm::Ring if op == CollectiveOp::Broadcast => {
            // One hop: the ring's channels are the same on every rank (`sameChannels`).
            let link = if multi_node { HopLink::Net } else { intra_link };
            latency_us += hop_latency_us(version, link, algorithm, protocol);
        }
        Algorithm::Ring => {
            // 2.21: "Inter-node rings still have to launch nsteps * net overhead".
            if !v2_12 && multi_node {
                let mut overhead_us = if rates.amd_host_cpu {
                    NET_OVERHEAD_US_AMD
                } else {
                    NET_OVERHEAD_US_INTEL
                };
                if protocol == Protocol::Simple {
                    overhead_us *= NET_OVERHEAD_SIMPLE_FACTOR;
                }
                intra_us = intra_us.max(overhead_us);
            }
            // As NCCL computes it: with one rank per node an all-reduce counts
            // 2·nodes network steps out of 2(nodes−1), the intra count going negative.
            latency_us +=
                (steps - network_steps) as f64 * intra_us + network_steps as f64 * inter_us;
        }
        Algorithm::Tree => {
            let chain = f64::from(group.ranks / nodes - 1);
            latency_us +=
                2.0 * (chain * intra_us + f64::from(log2_floor(u64::from(nodes))) * inter_us);
        }
    }

    // `ncclTopoGetAlgoTime`.
    let log_size = log2_floor(bytes >> 6) as usize;
    if algorithm == Algorithm::Tree && log_size < 23 {
        algbw_bytes_per_s *= TREE_CORRECTION[protocol.index()][log_size];
    }
    if algorithm == Algorithm::Ring
        && protocol == Protocol::Simple
        && multi_node
        && op == CollectiveOp::AllReduce
    {
        match version {
            NcclVersion::V2_12 => {
                if bytes as f64 >= ranks / 16.0 * 65536.0 {
                    latency_us *= RING_PLATEAU_FACTOR;
                }
            }
            // `nBytes / (nChannels * nRanks) >= 64`, integer division.
            NcclVersion::V2_21 => {
                if bytes / (PLATEAU_CHANNELS * u64::from(group.ranks)) >= 64 {
                    latency_us *= if rates.compute_capability < 80 {
                        RING_PLATEAU_FACTOR
                    } else {
                        RING_PLATEAU_FACTOR_AMPERE_ON
                    };
                }
            }
        }
    }
    Some(CostTerms {
        latency_ns: latency_us * 1e3,
        transfer_seconds: bytes as f64 / algbw_bytes_per_s,
    })
}

/// NCCL's choice (`getAlgoInfo`): of the pairs NCCL offers (only `algorithm`'s,
/// when one is forced), the first of strictly least modeled time, trees before
/// rings and LL before LL128 before Simple. `None` for point-to-point sends and
/// groups of one rank.
pub fn tune(
    op: CollectiveOp,
    bytes: u64,
    group: &GroupShape,
    rates: &LinkRates,
    algorithm: Option<Algorithm>,
) -> Option<(Algorithm, Protocol, CostTerms)> {
    let algorithms: &[Algorithm] = match algorithm {
        Some(Algorithm::Tree) => &[Algorithm::Tree],
        Some(Algorithm::Ring) => &[Algorithm::Ring],
        None => &[Algorithm::Tree, Algorithm::Ring],
    };
    let mut best: Option<(Algorithm, Protocol, CostTerms)> = None;
    for &a in algorithms {
        for p in Protocol::ALL {
            if let Some(terms) = nccl_terms(op, bytes, group, rates, a, p) {
                let better = match &best {
                    Some((_, _, b)) => terms.total_seconds() < b.total_seconds(),
                    None => true,
                };
                if better {
                    best = Some((a, p, terms));
                }
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 GB/s NVLink bus, 10 GB/s NICs (8 per node), Ampere on NVLink, Intel hosts.
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

    fn ns(terms: CostTerms) -> u64 {
        (terms.total_seconds() * 1e9).ceil() as u64
    }

    fn all_reduce(bytes: u64, group: GroupShape, a: Algorithm, p: Protocol) -> Option<CostTerms> {
        nccl_terms(CollectiveOp::AllReduce, bytes, &group, &rates(), a, p)
    }

    #[test]
    fn single_node_latencies_and_bandwidths_follow_tuning_cc() {
        let node8 = GroupShape::single_node(8);
        let ring = |p| all_reduce(100_001, node8, Algorithm::Ring, p).unwrap();
        // LL: 3.6 + 14 × 0.47 µs; bus min(87.7, 100/4) = 25 GB/s × 8/14.
        assert!((ring(Protocol::Ll).latency_ns - 10_180.0).abs() < 1e-6);
        assert_eq!(ns(ring(Protocol::Ll)), 17_181);
        // LL128: 10 + 14 × 1.9 = 36.6 µs; 92 GB/s × 8/14: 100 001 × 14 ÷ 736e9 = 1 902.19 ns.
        assert!((ring(Protocol::Ll128).latency_ns - 36_600.0).abs() < 1e-6);
        assert_eq!(ns(ring(Protocol::Ll128)), 38_503);
        // Simple: 8.4 + 14 × 3.4 = 56 µs; 100 001 × 1.75 ÷ 100e9 = 1 750.02 ns.
        assert_eq!(ns(ring(Protocol::Simple)), 57_751);
        // Tree LL: 4.4 + 2 × 7 × 0.52 = 11.68 µs; bus 100 × 0.92 / 3.8 × ½, corrected
        // by 0.6 at log2(100 001 / 64) = 10: 100 001 ÷ (12.105e9 × 0.6) = 13 768.25 ns.
        let tree = all_reduce(100_001, node8, Algorithm::Tree, Protocol::Ll).unwrap();
        assert!((tree.latency_ns - 11_680.0).abs() < 1e-6);
        assert_eq!(ns(tree), 25_449);
        // Tree LL128 inside a node: 100 × 0.92 × 7/9 × ½ = 35.78 GB/s, corrected by 0.6.
        let tree = all_reduce(100_001, node8, Algorithm::Tree, Protocol::Ll128).unwrap();
        assert!((tree.latency_ns - 21_900.0).abs() < 1e-6);
        assert_eq!(ns(tree), 26_559);
    }

    #[test]
    fn multi_node_latencies_follow_tuning_cc() {
        // 4 nodes × 8: bus min(100, 8 × 10) = 80 GB/s; 62 steps of which 2 × 4 network.
        let group = GroupShape::new(4, 8);
        // Ring LL: 3.6 + 54 × 0.47 × 1.8 + 8 × 2.7 = 70.884 µs; bus min(20.4, 80/4) = 20 GB/s.
        let ll = all_reduce(1000, group, Algorithm::Ring, Protocol::Ll).unwrap();
        assert!((ll.latency_ns - 70_884.0).abs() < 1e-6);
        // Ring LL128: 10 + 54 × 1.9 + 8 × 4 = 144.6 µs.
        let ll128 = all_reduce(1000, group, Algorithm::Ring, Protocol::Ll128).unwrap();
        assert!((ll128.latency_ns - 144_600.0).abs() < 1e-6);
        // Ring Simple: 8.4 + 54 × 3.4 + 8 × 28 = 416 µs, × 1.9 from 32/16 × 64 KiB on.
        let below = all_reduce(131_071, group, Algorithm::Ring, Protocol::Simple).unwrap();
        assert!((below.latency_ns - 416_000.0).abs() < 1e-6);
        let above = all_reduce(131_072, group, Algorithm::Ring, Protocol::Simple).unwrap();
        assert!((above.latency_ns - 790_400.0).abs() < 1e-6);
        // Tree LL: 4.4 + 2 × (7 × 0.52 × 1.8 + 2 × 5) = 37.504 µs; 80 × 0.92 / 3.8 × ½.
        let tree = all_reduce(1000, group, Algorithm::Tree, Protocol::Ll).unwrap();
        assert!((tree.latency_ns - 37_504.0).abs() < 1e-6);
        // Tree Simple: 2 × (7 × 28 + 2 × 28) = 504 µs.
        let tree = all_reduce(1000, group, Algorithm::Tree, Protocol::Simple).unwrap();
        assert!((tree.latency_ns - 504_000.0).abs() < 1e-6);
        // One rank per node: 2.12 counts 2 × 4 network steps of 6, the NVLink count −2.
        // LL128: 10 − 2 × 1.9 + 8 × 4 = 38.2 µs at 0.7 × 10 GB/s.
        let rail = GroupShape::new(4, 1);
        let ll128 = all_reduce(1000, rail, Algorithm::Ring, Protocol::Ll128).unwrap();
        assert!((ll128.latency_ns - 38_200.0).abs() < 1e-6);
    }

    #[test]
    fn the_tuner_takes_the_least_time_in_nccl_order() {
        let pick = |bytes, group: GroupShape| {
            let (a, p, terms) =
                tune(CollectiveOp::AllReduce, bytes, &group, &rates(), None).unwrap();
            (a, p, ns(terms))
        };
        let node8 = GroupShape::single_node(8);
        assert_eq!(
            pick(100_001, node8),
            (Algorithm::Ring, Protocol::Ll, 17_181)
        );
        assert_eq!(
            pick(4_000_001, node8),
            (Algorithm::Ring, Protocol::Ll128, 112_687)
        );
        assert_eq!(
            pick(64_000_001, node8),
            (Algorithm::Ring, Protocol::Simple, 1_176_001)
        );
        let group = GroupShape::new(4, 8);
        // Tree LL: 37 504 + 1000 ÷ 9.684e9 s = 37 607.26 ns.
        assert_eq!(pick(1000, group), (Algorithm::Tree, Protocol::Ll, 37_608));
        // Tree LL128: 55.9 µs + 2 000 001 ÷ (34.5e9 × 0.6) = 152 518.41 ns.
        assert_eq!(
            pick(2_000_001, group),
            (Algorithm::Tree, Protocol::Ll128, 152_519)
        );
        // Ring Simple: 790.4 µs + 1e9 × 62 ÷ (32 × 80e9) = 25 009 150.02 ns.
        assert_eq!(
            pick(1_000_000_001, group),
            (Algorithm::Ring, Protocol::Simple, 25_009_151)
        );
        // One rank per node: ring LL128, 38.2 µs + 1 000 003 × 6 ÷ (4 × 7e9) = 252 486.36 ns.
        assert_eq!(
            pick(1_000_003, GroupShape::new(4, 1)),
            (Algorithm::Ring, Protocol::Ll128, 252_487)
        );
    }

    #[test]
    fn pairs_nccl_does_not_offer_are_refused() {
        let node8 = GroupShape::single_node(8);
        let gather =
            |a, p, r: &LinkRates| nccl_terms(CollectiveOp::AllGather, 1000, &node8, r, a, p);
        assert!(gather(Algorithm::Tree, Protocol::Simple, &rates()).is_none());
        assert!(gather(Algorithm::Ring, Protocol::Simple, &rates()).is_some());
        // LL128 only on Volta/Ampere over NVLink.
        let hopper = LinkRates {
            compute_capability: 90,
            ..rates()
        };
        assert!(gather(Algorithm::Ring, Protocol::Ll128, &hopper).is_none());
        let pcie = LinkRates {
            intra_node_nvlink: false,
            ..rates()
        };
        assert!(gather(Algorithm::Ring, Protocol::Ll128, &pcie).is_none());
        // Hopper under 2.12: the Volta row of llMaxBws, 39 GB/s, binds a 370 GB/s bus.
        let fast = LinkRates {
            nvlink_bus_bytes_per_s: 370e9,
            ..hopper
        };
        let ll = nccl_terms(
            CollectiveOp::AllReduce,
            100_001,
            &node8,
            &fast,
            Algorithm::Ring,
            Protocol::Ll,
        )
        .unwrap();
        assert!((ll.transfer_seconds - 100_001.0 * 14.0 / (8.0 * 39e9)).abs() < 1e-15);
        // Ampere's bus cap: 300 GB/s of NVLink counts as 235.
        let capped = LinkRates {
            nvlink_bus_bytes_per_s: 300e9,
            ..rates()
        };
        let simple = nccl_terms(
            CollectiveOp::AllReduce,
            100_001,
            &node8,
            &capped,
            Algorithm::Ring,
            Protocol::Simple,
        )
        .unwrap();
        assert!((simple.transfer_seconds - 100_001.0 * 1.75 / 235e9).abs() < 1e-15);
        // Send/recv is not tuned; a broadcast pays one hop: 8.4 + 3.4 µs.
        assert!(tune(CollectiveOp::SendRecv, 1000, &node8, &rates(), None).is_none());
        let broadcast = nccl_terms(
            CollectiveOp::Broadcast,
            1000,
            &node8,
            &rates(),
            Algorithm::Ring,
            Protocol::Simple,
        )
        .unwrap();
        assert!((broadcast.latency_ns - 11_800.0).abs() < 1e-6);
    }
}
