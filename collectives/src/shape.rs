//! The vocabulary of the collective model: which operation, which algorithm,
//! the shape of the group of ranks, and the achieved link rates it runs on.

use crate::version::NcclVersion;
use profile::Profile;
use std::collections::BTreeMap;
use topologies::TopologySpec;

/// A collective (or point-to-point) operation, as NCCL and nccl-tests name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CollectiveOp {
    AllReduce,
    ReduceScatter,
    AllGather,
    Broadcast,
    /// One send matched by one receive between two ranks (nccl-tests `sendrecv_perf`).
    SendRecv,
    /// Every rank sends `bytes / n` to every rank (nccl-tests `alltoall_perf`;
    /// grouped `ncclSend`/`ncclRecv` per peer, [`crate::all_to_all`]).
    AllToAll,
}

impl CollectiveOp {
    pub const ALL: [CollectiveOp; 6] = [
        CollectiveOp::AllReduce,
        CollectiveOp::ReduceScatter,
        CollectiveOp::AllGather,
        CollectiveOp::Broadcast,
        CollectiveOp::SendRecv,
        CollectiveOp::AllToAll,
    ];

    /// Snake-case name, as in profiles (`all_reduce`, …).
    pub fn name(self) -> &'static str {
        match self {
            CollectiveOp::AllReduce => "all_reduce",
            CollectiveOp::ReduceScatter => "reduce_scatter",
            CollectiveOp::AllGather => "all_gather",
            CollectiveOp::Broadcast => "broadcast",
            CollectiveOp::SendRecv => "send_recv",
            CollectiveOp::AllToAll => "all_to_all",
        }
    }

    /// nccl-tests' bus-bandwidth factor for `ranks` ranks: busbw = algbw × factor.
    /// All-reduce 2(n−1)/n; reduce-scatter and all-gather (n−1)/n; broadcast and
    /// send/recv 1; all-to-all (n−1)/n (`AlltoAllGetBw`, nccl-tests
    /// `src/alltoall.cu`). Zero for a single rank (nothing crosses a link).
    pub fn bus_factor(self, ranks: u32) -> f64 {
        if ranks <= 1 {
            return 0.0;
        }
        let n = ranks as f64;
        match self {
            CollectiveOp::AllReduce => 2.0 * (n - 1.0) / n,
            CollectiveOp::ReduceScatter | CollectiveOp::AllGather | CollectiveOp::AllToAll => {
                (n - 1.0) / n
            }
            CollectiveOp::Broadcast | CollectiveOp::SendRecv => 1.0,
        }
    }
}

/// How a collective moves its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Algorithm {
    /// Rings (one per channel, one NIC rail each across nodes).
    Ring,
    /// NCCL's double binary tree across nodes, a chain inside each node; all-reduce only.
    Tree,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
        }
    }
}

/// A group of ranks over `nodes` nodes: `ranks_per_node` on the most
/// crowded (what bounds its NVLink hops), `fewest_ranks_per_node` on the
/// least (whose NICs bound what crosses the network; equal when even).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupShape {
    pub ranks: u32,
    pub nodes: u32,
    pub ranks_per_node: u32,
    pub fewest_ranks_per_node: u32,
}

impl GroupShape {
    /// `nodes` nodes with `ranks_per_node` ranks on each.
    pub fn new(nodes: u32, ranks_per_node: u32) -> GroupShape {
        GroupShape {
            ranks: nodes * ranks_per_node,
            nodes,
            ranks_per_node,
            fewest_ranks_per_node: ranks_per_node,
        }
    }

    /// The same group with at most `fewest` ranks on its least populated node.
    pub fn with_fewest_ranks_per_node(self, fewest: u32) -> GroupShape {
        GroupShape {
            fewest_ranks_per_node: fewest.min(self.ranks_per_node),
            ..self
        }
    }

    /// `ranks` ranks inside one node.
    pub fn single_node(ranks: u32) -> GroupShape {
        GroupShape::new(1, ranks)
    }

    /// The shape of a group given its GPUs' global indices (node = gpu / gpus_per_node):
    /// its most and least crowded nodes. Duplicates count once.
    pub fn from_ranks(gpus: &[u32], gpus_per_node: u32) -> GroupShape {
        let per_node = gpus_per_node.max(1);
        let mut distinct: Vec<u32> = gpus.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
        for gpu in &distinct {
            *counts.entry(gpu / per_node).or_default() += 1;
        }
        GroupShape {
            ranks: distinct.len() as u32,
            nodes: counts.len() as u32,
            ranks_per_node: counts.values().copied().max().unwrap_or(0),
            fewest_ranks_per_node: counts.values().copied().min().unwrap_or(0),
        }
    }
}

/// Achieved rates a collective runs at (from the calibration profile, capped by
/// the topology's line rates) and the node layout they apply to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkRates {
    /// Ring bus bandwidth inside one NVLink/NVSwitch domain (what nccl-tests
    /// reports as busbw for a large intra-node all-reduce).
    pub nvlink_bus_bytes_per_s: f64,
    /// Fixed cost of one ring step whose hop stays inside a node.
    pub nvlink_step_latency_ns: f64,
    /// What one NIC achieves per direction.
    pub nic_bytes_per_s: f64,
    pub nics_per_node: u32,
    pub gpus_per_node: u32,
    /// Fixed cost of one ring step whose hop crosses the network (the
    /// profile's, for point-to-point steps NCCL does not tune).
    pub network_step_latency_ns: f64,
    /// What the topology's own fabric adds to every network step: its NIC and
    /// switch latencies on the farthest path (`FabricSpec::path_latency_ns`)
    /// when the topology declares a fabric `kind`, else 0 (costs as before).
    /// Added after NCCL's tuner has chosen (see [`crate::estimate`]).
    pub fabric_step_latency_ns: f64,
    /// CUDA compute capability × 10 of the GPUs (80 for A100; 0 when unknown):
    /// NCCL's tuner enables LL128 and picks its caps by it.
    pub compute_capability: u32,
    /// GPUs of a node talk over NVLink (NCCL's `typeIntra == LINK_NVL`), not PCIe.
    pub intra_node_nvlink: bool,
    /// The hosts' CPUs are AMD's (NCCL's LL cap across nodes depends on it).
    pub amd_host_cpu: bool,
    /// The NCCL whose tuner picks and costs the (algorithm, protocol) pair
    /// ([`crate::version`]); [`LinkRates::from`] gives the default, 2.12.
    pub nccl: NcclVersion,
}

/// Compute capability × 10 of a GPU named as in topologies, from its datasheet's
/// architecture: Volta 7.0, Ampere 8.0, Hopper 9.0, Blackwell 10.0; 0 for a GPU
/// with no datasheet (NCCL's tuner then neither enables LL128 nor uses Ampere's caps).
pub fn compute_capability(gpu_name: &str) -> u32 {
    match topologies::datasheet(gpu_name).map(|sheet| sheet.architecture) {
        Some("Volta") => 70,
        Some("Ampere") => 80,
        Some("Hopper") => 90,
        Some("Blackwell") => 100,
        _ => 0,
    }
}

/// Line rate per GPU per direction of a node's intra-node level: its NVLink,
/// or, for a node without NVLink (`nvlink_bandwidth_bytes_per_s` = 0, e.g.
/// H100 PCIe cards whose bridges join only pairs), its GPUs' PCIe links.
pub fn intra_node_line_bytes_per_s(topology: &TopologySpec) -> f64 {
    if topology.node.nvlink_bandwidth_bytes_per_s > 0.0 {
        topology.node.nvlink_bandwidth_bytes_per_s
    } else {
        topology.pcie.bandwidth_bytes_per_s
    }
}

impl LinkRates {
    /// What one network step costs beyond NCCL's tuner or the bandwidth: the
    /// profile's step latency plus the declared fabric's path latency (the
    /// cost of one untuned point-to-point hop across nodes).
    pub fn network_step_ns(&self) -> f64 {
        self.network_step_latency_ns + self.fabric_step_latency_ns
    }

    /// Rates from a topology and a profile. Each bandwidth is the profile's achieved
    /// figure, capped by the topology's line rate where the topology has one (a
    /// profile for a faster GPU cannot make a slower cluster faster).
    pub fn from(topology: &TopologySpec, profile: &Profile) -> LinkRates {
        let comm = &profile.communication;
        let cap = |achieved: f64, line_rate: f64| {
            if line_rate > 0.0 {
                achieved.min(line_rate)
            } else {
                achieved
            }
        };
        LinkRates {
            nvlink_bus_bytes_per_s: cap(
                comm.nvlink_bus_bandwidth_bytes_per_s.value,
                intra_node_line_bytes_per_s(topology),
            ),
            nvlink_step_latency_ns: comm.nvlink_step_latency_ns.value,
            nic_bytes_per_s: cap(
                comm.nic_bandwidth_bytes_per_s.value,
                topology.fabric.nic_bandwidth_bytes_per_s,
            ),
            nics_per_node: topology.fabric.nics_per_node,
            gpus_per_node: topology.node.gpus_per_node,
            network_step_latency_ns: comm.network_step_latency_ns.value,
            fabric_step_latency_ns: topology
                .fabric
                .path_latency_ns()
                .map_or(0.0, |ns| ns as f64),
            compute_capability: compute_capability(&topology.gpu.name),
            intra_node_nvlink: topology.node.nvlink_bandwidth_bytes_per_s > 0.0,
            amd_host_cpu: topology.host_cpu.name.to_ascii_uppercase().contains("AMD"),
            nccl: NcclVersion::default(),
        }
    }

    /// The same rates costed with `nccl`'s tuner.
    pub fn with_nccl(self, nccl: NcclVersion) -> LinkRates {
        LinkRates { nccl, ..self }
    }

    /// NIC rails a group with `ranks_per_node` ranks on each node may use per node:
    /// each GPU owns `nics_per_node / gpus_per_node` of its node's NICs (one rail
    /// per GPU on DGX A100, half a NIC per GPU on DGX-2).
    pub fn rails_per_node(&self, ranks_per_node: u32) -> f64 {
        ranks_per_node as f64 * self.nics_per_node as f64 / self.gpus_per_node.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_ranks_counts_nodes_and_the_most_crowded_node() {
        assert_eq!(
            GroupShape::from_ranks(&[0, 1, 2, 3, 4, 5, 6, 7], 8),
            GroupShape::single_node(8)
        );
        // A data-parallel group with t = 8: one rank per node.
        assert_eq!(
            GroupShape::from_ranks(&[3, 11, 19, 27], 8),
            GroupShape::new(4, 1)
        );
        let uneven = GroupShape::from_ranks(&[0, 1, 2, 8], 8);
        assert_eq!(
            (
                uneven.ranks,
                uneven.nodes,
                uneven.ranks_per_node,
                uneven.fewest_ranks_per_node
            ),
            (4, 2, 3, 1)
        );
        assert_eq!(GroupShape::from_ranks(&[], 8).ranks, 0);
    }

    #[test]
    fn bus_factors_follow_nccl_tests() {
        assert_eq!(CollectiveOp::AllReduce.bus_factor(8), 1.75);
        assert_eq!(CollectiveOp::AllGather.bus_factor(8), 0.875);
        assert_eq!(CollectiveOp::ReduceScatter.bus_factor(4), 0.75);
        assert_eq!(CollectiveOp::Broadcast.bus_factor(8), 1.0);
        assert_eq!(CollectiveOp::SendRecv.bus_factor(2), 1.0);
        assert_eq!(CollectiveOp::AllReduce.bus_factor(1), 0.0);
    }

    #[test]
    fn selene_rates_come_from_the_profile_capped_by_line_rates() {
        let topology = topologies::preset("selene").unwrap();
        let profile = Profile::builtin("a100-80gb").unwrap();
        let rates = LinkRates::from(&topology, &profile);
        assert_eq!(rates.nvlink_bus_bytes_per_s, 230e9);
        assert_eq!(rates.nic_bytes_per_s, 24e9);
        assert_eq!(rates.nics_per_node, 8);
        assert_eq!(rates.rails_per_node(8), 8.0);
        assert_eq!(rates.rails_per_node(1), 1.0);
        assert_eq!(rates.compute_capability, 80);
        assert!(rates.intra_node_nvlink && rates.amd_host_cpu);
    }

    #[test]
    fn compute_capability_follows_the_gpu_family() {
        let gpu = |preset: &str| topologies::preset(preset).unwrap().gpu.name;
        assert_eq!(compute_capability(&gpu("selene")), 80);
        assert_eq!(compute_capability("H100-SXM5-80GB"), 90);
        assert_eq!(compute_capability("H200"), 90);
        assert_eq!(compute_capability("B200"), 100);
        assert_eq!(compute_capability("MI300X"), 0);
        for sheet in topologies::datasheets::datasheets() {
            assert_ne!(compute_capability(&sheet.gpu.name), 0, "{}", sheet.gpu.name);
        }
    }
}
