//! Communication durations behind one interface.
//!
//! [`ClosedFormNetwork`] costs every collective with NCCL's algorithms and
//! protocols in closed form ([`collectives`]: the ring or tree and LL, LL128
//! or Simple that NCCL's tuner picks, with its latency term; hierarchical
//! bandwidth over NVLink and the NIC rails) using the profile's achieved rates,
//! each as if alone on the fabric (no contention).

use collectives::{estimate, CollectiveOp, GroupShape, LinkRates};
use profile::Profile;
use scenario::Scenario;
use taskgraph::task_graph::NodeSpread;
use timeline::time::SimDuration;
use topologies::TopologySpec;

/// Durations of the communication patterns the lowering produces.
pub trait NetworkModel {
    /// All-reduce of `bytes` per rank over `group_size` ranks spread over nodes as `spread` says.
    fn all_reduce(&self, bytes: u64, group_size: u32, spread: NodeSpread) -> SimDuration;
    /// All-gather producing `bytes` per rank over `group_size` ranks spread over nodes as `spread` says.
    fn all_gather(&self, bytes: u64, group_size: u32, spread: NodeSpread) -> SimDuration;
    /// All-to-all of `bytes` sent per rank over `group_size` ranks spread
    /// over `nodes` nodes (grouped send/recv to every peer,
    /// [`collectives::all_to_all`]).
    fn all_to_all(&self, bytes: u64, group_size: u32, nodes: u32) -> SimDuration;
    /// One pipeline transfer of `bytes` from a tensor group of `tensor_parallel`
    /// ranks to the next stage's group (optionally Megatron's scatter/gather).
    fn pipeline_transfer(
        &self,
        bytes: u64,
        tensor_parallel: u32,
        crosses_nodes: bool,
        scatter_gather: bool,
    ) -> SimDuration;
    /// How many times slower than the achieved PCIe rate the GPU's own
    /// PCIe link runs (1: nominal; a slow PCIe link, [`crate::slow_link`]).
    fn pcie_link_slowdown(&self) -> f64 {
        1.0
    }
}

/// NCCL's algorithms in closed form ([`collectives`]) with achieved
/// rates and no contention: each collective is costed as if alone on the fabric.
#[derive(Debug, Clone)]
pub struct ClosedFormNetwork {
    rates: LinkRates,
    /// A GPU's PCIe line rate per direction (the topology's): what GPUDirect
    /// traffic to the NIC, and on nodes without NVLink to its peers, may
    /// cross its link at.
    pcie_bytes_per_s: f64,
    /// What [`NetworkModel::pcie_link_slowdown`] reports.
    pcie_slowdown: f64,
}

impl ClosedFormNetwork {
    /// The topology and profile's rates under NCCL 2.12's tuner (the default).
    pub fn new(topology: &TopologySpec, profile: &Profile) -> ClosedFormNetwork {
        ClosedFormNetwork {
            rates: LinkRates::from(topology, profile),
            pcie_bytes_per_s: topology.pcie.bandwidth_bytes_per_s,
            pcie_slowdown: 1.0,
        }
    }

    /// A scenario's rates under its stack's NCCL ([`scenario::Stack::nccl`]).
    pub fn for_scenario(scenario: &Scenario) -> ClosedFormNetwork {
        ClosedFormNetwork {
            rates: LinkRates::from(&scenario.topology, &scenario.profile)
                .with_nccl(scenario.stack.nccl),
            pcie_bytes_per_s: scenario.topology.pcie.bandwidth_bytes_per_s,
            pcie_slowdown: 1.0,
        }
    }

    /// These rates with the NIC delivering 1/`factor` of its bandwidth
    /// (a slow NIC, [`crate::slow_link`]); latencies unchanged.
    pub fn with_nic_slowed(&self, factor: f64) -> ClosedFormNetwork {
        let mut rates = self.rates;
        rates.nic_bytes_per_s /= factor;
        ClosedFormNetwork {
            rates,
            ..self.clone()
        }
    }

    /// These rates with NVLink delivering 1/`factor` of its bus bandwidth
    /// (a slow GPU's NVLink: [`crate::slow_link`]).
    pub fn with_nvlink_slowed(&self, factor: f64) -> ClosedFormNetwork {
        let mut rates = self.rates;
        rates.nvlink_bus_bytes_per_s /= factor;
        ClosedFormNetwork {
            rates,
            ..self.clone()
        }
    }

    /// These rates with the GPU's PCIe link delivering 1/`factor` of its
    /// bandwidth (a slow PCIe link: [`crate::slow_link`]): the GPU's share of
    /// its NICs (GPUDirect crosses the link to them) at most the link's
    /// line rate ÷ `factor`, on nodes without NVLink the intra-node hops too,
    /// and host copies at 1/`factor` of their measured rate
    /// ([`NetworkModel::pcie_link_slowdown`]); latencies unchanged. The
    /// nominal costs never cap a path at the PCIe link, so the link is taken
    /// as at least as fast as the path it carries: a factor of 1 changes
    /// nothing, and a larger one nothing until the link falls below it.
    pub fn with_pcie_slowed(&self, factor: f64) -> ClosedFormNetwork {
        if factor == 1.0 {
            return self.clone();
        }
        let mut rates = self.rates;
        if rates.nics_per_node > 0 {
            // What one GPU's traffic gets of its NICs, and the NIC rate that
            // gives it the slowed link's instead.
            let gpu_share = f64::from(rates.nics_per_node) / f64::from(rates.gpus_per_node.max(1));
            let path_bytes_per_s = rates.nic_bytes_per_s * gpu_share;
            let link_bytes_per_s = self.pcie_bytes_per_s.max(path_bytes_per_s) / factor;
            rates.nic_bytes_per_s = rates.nic_bytes_per_s.min(link_bytes_per_s / gpu_share);
        }
        if !rates.intra_node_nvlink {
            let link_bytes_per_s = self.pcie_bytes_per_s.max(rates.nvlink_bus_bytes_per_s) / factor;
            rates.nvlink_bus_bytes_per_s = rates.nvlink_bus_bytes_per_s.min(link_bytes_per_s);
        }
        ClosedFormNetwork {
            rates,
            pcie_bytes_per_s: self.pcie_bytes_per_s,
            pcie_slowdown: self.pcie_slowdown * factor,
        }
    }

    fn collective(
        &self,
        op: CollectiveOp,
        bytes: u64,
        group_size: u32,
        spread: NodeSpread,
    ) -> SimDuration {
        if group_size <= 1 || bytes == 0 {
            return SimDuration::ZERO;
        }
        let nodes = spread.nodes.max(1);
        let group = GroupShape::new(nodes, group_size.div_ceil(nodes))
            .with_fewest_ranks_per_node(spread.fewest_ranks_per_node);
        estimate(op, bytes, &group, &self.rates, None).duration
    }
}

impl NetworkModel for ClosedFormNetwork {
    fn pcie_link_slowdown(&self) -> f64 {
        self.pcie_slowdown
    }

    fn all_reduce(&self, bytes: u64, group_size: u32, spread: NodeSpread) -> SimDuration {
        self.collective(CollectiveOp::AllReduce, bytes, group_size, spread)
    }

    fn all_gather(&self, bytes: u64, group_size: u32, spread: NodeSpread) -> SimDuration {
        self.collective(CollectiveOp::AllGather, bytes, group_size, spread)
    }

    fn all_to_all(&self, bytes: u64, group_size: u32, nodes: u32) -> SimDuration {
        let spread = NodeSpread::even(group_size, nodes);
        self.collective(CollectiveOp::AllToAll, bytes, group_size, spread)
    }

    fn pipeline_transfer(
        &self,
        bytes: u64,
        tensor_parallel: u32,
        crosses_nodes: bool,
        scatter_gather: bool,
    ) -> SimDuration {
        if bytes == 0 {
            return SimDuration::ZERO;
        }
        let pair = if crosses_nodes {
            GroupShape::new(2, 1)
        } else {
            GroupShape::single_node(2)
        };
        if crosses_nodes && scatter_gather && tensor_parallel > 1 {
            // Each tensor rank sends 1/t over its own NIC rail, then the receivers all-gather over NVLink.
            let slice = bytes.div_ceil(tensor_parallel as u64);
            estimate(CollectiveOp::SendRecv, slice, &pair, &self.rates, None).duration
                + self.all_gather(bytes, tensor_parallel, NodeSpread::even(tensor_parallel, 1))
        } else {
            // Every tensor rank sends the whole activation over its own rail, in parallel.
            estimate(CollectiveOp::SendRecv, bytes, &pair, &self.rates, None).duration
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_all_reduce_matches_the_nccl_formula_in_nanoseconds() {
        let topology = topologies::preset("selene").unwrap();
        let network = ClosedFormNetwork::new(&topology, &Profile::builtin("a100-80gb").unwrap());
        let gib = 1u64 << 30;
        // 8 ranks in one node, NCCL's Simple ring: 8.4 + 14 × 3.4 µs + 1.75 GiB / 230 GB/s.
        let expected = (8.4 + 14.0 * 3.4) * 1e-6 + 1.75 * gib as f64 / 230e9;
        assert_eq!(
            network.all_reduce(gib, 8, NodeSpread::even(8, 1)),
            SimDuration::from_seconds_ceil(expected)
        );
        // 6 ranks on 6 nodes, one NIC each, Simple ring: NCCL 2.12 counts 12 network
        // steps of 28 µs and −2 NVLink steps of 3.4 µs, + 8.4 µs, × 1.9 (its "plateau"),
        // then 10/6 · bytes / 24 GB/s.
        let expected =
            (8.4 - 2.0 * 3.4 + 12.0 * 28.0) * 1.9 * 1e-6 + 10.0 / 6.0 * gib as f64 / 24e9;
        assert_eq!(
            network.all_reduce(gib, 6, NodeSpread::even(6, 6)),
            SimDuration::from_seconds_ceil(expected)
        );
        assert_eq!(
            network.all_reduce(gib, 1, NodeSpread::even(1, 1)),
            SimDuration::ZERO
        );
    }
}
