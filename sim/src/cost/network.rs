//! Communication durations behind one interface.
//!
//! [`ClosedFormNetwork`] is the first-version model: NCCL ring formulas with
//! the profile's achieved rates and no contention. A ring all-reduce over n
//! ranks takes 2(n−1) steps of fixed cost α plus 2(n−1)/n · bytes ÷ busbw
//! (nccl-tests' bus-bandwidth definition). Inside one node busbw is the
//! profile's NVLink ring bandwidth; across nodes each rank drives the NIC
//! bandwidth of its node share, so busbw = min(NVLink busbw, ranks per node ×
//! NICs per GPU × NIC bandwidth) — 8 × 24 GB/s = 192 GB/s for a full DGX A100
//! node, 24 GB/s for one rank per node.

use crate::profile::Profile;
use crate::time::SimDuration;
use topologies::TopologySpec;

/// Durations of the communication patterns the lowering produces.
pub trait NetworkModel {
    /// All-reduce of `bytes` per rank over `group_size` ranks spread over `nodes` nodes.
    fn all_reduce(&self, bytes: u64, group_size: u32, nodes: u32) -> SimDuration;
    /// All-gather producing `bytes` per rank over `group_size` ranks spread over `nodes` nodes.
    fn all_gather(&self, bytes: u64, group_size: u32, nodes: u32) -> SimDuration;
    /// One pipeline transfer of `bytes` from a tensor group of `tensor_parallel`
    /// ranks to the next stage's group (optionally Megatron's scatter/gather).
    fn pipeline_transfer(
        &self,
        bytes: u64,
        tensor_parallel: u32,
        crosses_nodes: bool,
        scatter_gather: bool,
    ) -> SimDuration;
}

/// NCCL ring formulas with achieved rates, no contention.
#[derive(Debug, Clone)]
pub struct ClosedFormNetwork {
    nvlink_bus_bytes_per_s: f64,
    nvlink_step_s: f64,
    nic_bytes_per_s: f64,
    network_step_s: f64,
    nics_per_gpu: f64,
    gpus_per_node: u32,
}

impl ClosedFormNetwork {
    pub fn new(topology: &TopologySpec, profile: &Profile) -> ClosedFormNetwork {
        let comm = &profile.communication;
        ClosedFormNetwork {
            nvlink_bus_bytes_per_s: comm.nvlink_bus_bandwidth_bytes_per_s.value,
            nvlink_step_s: comm.nvlink_step_latency_ns.value * 1e-9,
            nic_bytes_per_s: comm.nic_bandwidth_bytes_per_s.value,
            network_step_s: comm.network_step_latency_ns.value * 1e-9,
            nics_per_gpu: topology.fabric.nics_per_node as f64 / topology.node.gpus_per_node as f64,
            gpus_per_node: topology.node.gpus_per_node,
        }
    }

    /// (bus bandwidth, step cost) for a group spanning `nodes` nodes.
    fn ring(&self, group_size: u32, nodes: u32) -> (f64, f64) {
        if nodes <= 1 {
            (self.nvlink_bus_bytes_per_s, self.nvlink_step_s)
        } else {
            let ranks_per_node = group_size.div_ceil(nodes).min(self.gpus_per_node) as f64;
            let network = ranks_per_node * self.nics_per_gpu * self.nic_bytes_per_s;
            (
                network.min(self.nvlink_bus_bytes_per_s),
                self.network_step_s,
            )
        }
    }
}

impl NetworkModel for ClosedFormNetwork {
    fn all_reduce(&self, bytes: u64, group_size: u32, nodes: u32) -> SimDuration {
        if group_size <= 1 || bytes == 0 {
            return SimDuration::ZERO;
        }
        let n = group_size as f64;
        let (bus, step) = self.ring(group_size, nodes);
        SimDuration::from_seconds_ceil(
            2.0 * (n - 1.0) * step + 2.0 * (n - 1.0) / n * bytes as f64 / bus,
        )
    }

    fn all_gather(&self, bytes: u64, group_size: u32, nodes: u32) -> SimDuration {
        if group_size <= 1 || bytes == 0 {
            return SimDuration::ZERO;
        }
        let n = group_size as f64;
        let (bus, step) = self.ring(group_size, nodes);
        SimDuration::from_seconds_ceil((n - 1.0) * step + (n - 1.0) / n * bytes as f64 / bus)
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
        if !crosses_nodes {
            return SimDuration::from_seconds_ceil(
                self.nvlink_step_s + bytes as f64 / self.nvlink_bus_bytes_per_s,
            );
        }
        // Each tensor rank sends over its own NIC rail: the full tensor, or 1/t of it then an NVLink all-gather.
        let nic_bytes_per_s = self.nic_bytes_per_s * self.nics_per_gpu.min(1.0);
        if scatter_gather && tensor_parallel > 1 {
            let slice = bytes as f64 / tensor_parallel as f64;
            SimDuration::from_seconds_ceil(self.network_step_s + slice / nic_bytes_per_s)
                + self.all_gather(bytes, tensor_parallel, 1)
        } else {
            SimDuration::from_seconds_ceil(self.network_step_s + bytes as f64 / nic_bytes_per_s)
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
        // 8 ranks in one node: 14 steps × 5 µs + 1.75 GiB / 230 GB/s.
        let expected = 14.0 * 5e-6 + 1.75 * gib as f64 / 230e9;
        assert_eq!(
            network.all_reduce(gib, 8, 1),
            SimDuration::from_seconds_ceil(expected)
        );
        // 6 ranks on 6 nodes, one NIC each: 10 steps × 7 µs + 10/6 · bytes / 24 GB/s.
        let expected = 10.0 * 7e-6 + 10.0 / 6.0 * gib as f64 / 24e9;
        assert_eq!(
            network.all_reduce(gib, 6, 6),
            SimDuration::from_seconds_ceil(expected)
        );
        assert_eq!(network.all_reduce(gib, 1, 1), SimDuration::ZERO);
    }
}
