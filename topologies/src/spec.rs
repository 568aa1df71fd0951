//! Topology data types and their validation.

use serde::{Deserialize, Serialize};

/// Dense peak throughput per datatype, from the datasheet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeakFlops {
    pub fp16_flops_per_s: f64,
    /// Dense FP8 (E4M3/E5M2) tensor-core rate; absent on GPUs without FP8
    /// tensor cores (Volta, Ampere) and in topology files that do not give it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8_flops_per_s: Option<f64>,
    pub bf16_flops_per_s: f64,
    pub tf32_flops_per_s: f64,
    pub fp32_flops_per_s: f64,
}

/// One GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// e.g. "A100-SXM4-80GB".
    pub name: String,
    pub peak: PeakFlops,
    pub hbm_bytes: u64,
    /// Datasheet HBM bandwidth.
    pub hbm_bandwidth_bytes_per_s: f64,
    pub sm_count: u32,
    pub l2_cache_bytes: u64,
    pub boost_clock_mhz: u32,
}

/// One node: its GPUs and the NVLink/NVSwitch domain between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub gpus_per_node: u32,
    /// NVLink bandwidth per GPU per direction (all links together); 0 for a
    /// node whose GPUs talk over PCIe only (`pcie.bandwidth_bytes_per_s` is
    /// then the intra-node line rate; NVLink bridges between pairs are not
    /// modeled).
    pub nvlink_bandwidth_bytes_per_s: f64,
    /// One-way latency of an NVLink/NVSwitch transfer.
    pub nvlink_latency_ns: u64,
    /// NVSwitch chips; with at least one, every GPU pair talks at full rate.
    pub nvswitch_count: u32,
}

/// What the scale-out fabric is, when a topology says (`fabric.kind`).
///
/// Both kinds are run by NCCL's IB verbs transport, whose plugin reports no
/// latency (`props->latency = 0; // Not set`, `src/transport/net_ib.cc`), so
/// NCCL's tuner costs them alike; what the kind brings to the cost model is
/// that the fabric's own NIC and switch latencies are then read
/// ([`FabricSpec::path_latency_ns`]). NVLink-network fabrics (NVLink Switch
/// System across racks) are not offered: their multi-node NVLink domain is
/// not modeled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FabricKind {
    /// InfiniBand (e.g. NDR on Quantum-2 switches).
    Infiniband,
    /// RDMA over Converged Ethernet v2 (e.g. 400 GbE on Spectrum-4 switches).
    RoceV2,
}

impl FabricKind {
    pub fn name(self) -> &'static str {
        match self {
            FabricKind::Infiniband => "infiniband",
            FabricKind::RoceV2 => "roce_v2",
        }
    }
}

/// Largest fabric path latency accepted (1 ms): no data-centre fabric comes
/// near it, and it keeps every cost that adds it finite.
pub const MAX_FABRIC_PATH_LATENCY_NS: u64 = 1_000_000;

/// Inter-node fabric: NICs and a fat tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FabricSpec {
    /// The fabric's kind. Absent (every preset before it, and topology files
    /// without the key), `nic_latency_ns` and `switch_hop_latency_ns` do not
    /// reach any cost and the network step latency is the profile's and
    /// NCCL's, as before; given, every network step of a collective or
    /// transfer also pays [`FabricSpec::path_latency_ns`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<FabricKind>,
    /// Compute NICs per node (one rail per GPU on DGX A100).
    pub nics_per_node: u32,
    /// Line rate per NIC per direction.
    pub nic_bandwidth_bytes_per_s: f64,
    /// NIC injection latency.
    pub nic_latency_ns: u64,
    /// Switch levels of the fat tree (leaf, spine, core = 3).
    pub fat_tree_levels: u32,
    /// Ports of each switch (a radix-k switch gives k/2 down, k/2 up).
    pub switch_radix: u32,
    /// Port-to-port latency of one switch hop.
    pub switch_hop_latency_ns: u64,
}

impl FabricSpec {
    /// NIC-to-NIC latency of the fat tree's farthest path when the fabric has
    /// a `kind`: the sending and the receiving NIC plus `2·levels − 1` switch
    /// hops (up to the top level and down again), `2 × nic_latency_ns +
    /// (2·fat_tree_levels − 1) × switch_hop_latency_ns`. The farthest path
    /// because a ring's step waits for its slowest hop and the closed form
    /// does not know under which leaves a group's nodes sit (a group under
    /// one leaf is charged `2·(levels − 1)` hops too many). `None` without a
    /// kind, or when the sum overflows (validation refuses that).
    pub fn path_latency_ns(&self) -> Option<u64> {
        self.kind?;
        let switches = self.fat_tree_levels.max(1).checked_mul(2)? - 1;
        let nics = self.nic_latency_ns.checked_mul(2)?;
        let hops = self
            .switch_hop_latency_ns
            .checked_mul(u64::from(switches))?;
        nics.checked_add(hops)
    }
}

/// The PCIe link between each GPU and its host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcieSpec {
    /// e.g. "Gen4 x16".
    pub generation: String,
    /// Line rate per direction.
    pub bandwidth_bytes_per_s: f64,
    /// GPUs behind one PCIe switch sharing its uplink to the CPU.
    pub gpus_per_host_link: u32,
    pub latency_ns: u64,
}

/// The host CPU(s) of one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCpuSpec {
    pub name: String,
    /// Physical cores, all sockets together.
    pub cores: u32,
    pub memory_bytes: u64,
    /// Datasheet DRAM bandwidth, all channels together.
    pub memory_bandwidth_bytes_per_s: f64,
}

/// A homogeneous cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    pub name: String,
    pub nodes: u32,
    pub gpu: GpuSpec,
    pub node: NodeSpec,
    pub fabric: FabricSpec,
    pub pcie: PcieSpec,
    pub host_cpu: HostCpuSpec,
}

/// Everything that can be wrong with a topology or its file.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("cannot read topology file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("topology file {path} is not a valid topology: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("{message}")]
    Unknown { message: String },
    /// Values that cannot describe hardware; every problem is listed.
    #[error("invalid topology '{name}': {}", problems.join("; "))]
    Invalid { name: String, problems: Vec<String> },
}

impl TopologySpec {
    /// The same cluster with `nodes` nodes, named `NAME:NODES`: the fat tree
    /// keeps its switches' radix and gains the levels the nodes' NICs need
    /// (never fewer than it had), so a 2,048-node DGX H100 cluster is its
    /// preset plus a node count.
    pub fn with_nodes(mut self, nodes: u32) -> Result<TopologySpec, TopologyError> {
        if nodes == 0 {
            return Err(TopologyError::Invalid {
                name: format!("{}:{nodes}", self.name),
                problems: vec!["nodes must be at least 1".into()],
            });
        }
        self.name = format!("{}:{nodes}", self.name);
        self.nodes = nodes;
        let arity = u64::from((self.fabric.switch_radix / 2).max(1));
        let needed =
            u64::from(self.fabric.nics_per_node) * u64::from(nodes).div_ceil(arity) * arity;
        let mut levels = self.fabric.fat_tree_levels.max(1);
        while arity > 1 && arity.checked_pow(levels).is_some_and(|held| held < needed) {
            levels += 1;
        }
        self.fabric.fat_tree_levels = levels;
        Ok(self)
    }

    /// GPUs in the whole cluster.
    pub fn total_gpus(&self) -> u64 {
        self.nodes as u64 * self.node.gpus_per_node as u64
    }

    /// Checks every quantity is usable; reports all problems at once.
    pub fn validate(&self) -> Result<(), TopologyError> {
        let mut problems = Vec::new();
        let mut positive = |key: &str, value: f64| {
            if !(value.is_finite() && value > 0.0) {
                problems.push(format!("{key} must be a positive number (got {value})"));
            }
        };
        positive("nodes", self.nodes as f64);
        positive("gpu.peak.fp16_flops_per_s", self.gpu.peak.fp16_flops_per_s);
        positive("gpu.peak.bf16_flops_per_s", self.gpu.peak.bf16_flops_per_s);
        if let Some(fp8) = self.gpu.peak.fp8_flops_per_s {
            positive("gpu.peak.fp8_flops_per_s", fp8);
        }
        positive("gpu.hbm_bytes", self.gpu.hbm_bytes as f64);
        positive(
            "gpu.hbm_bandwidth_bytes_per_s",
            self.gpu.hbm_bandwidth_bytes_per_s,
        );
        positive("gpu.sm_count", self.gpu.sm_count as f64);
        positive("node.gpus_per_node", self.node.gpus_per_node as f64);
        positive(
            "pcie.bandwidth_bytes_per_s",
            self.pcie.bandwidth_bytes_per_s,
        );
        positive(
            "pcie.gpus_per_host_link",
            self.pcie.gpus_per_host_link as f64,
        );
        positive("host_cpu.cores", self.host_cpu.cores as f64);
        positive("host_cpu.memory_bytes", self.host_cpu.memory_bytes as f64);
        if self.nodes > 1 {
            positive("fabric.nics_per_node", self.fabric.nics_per_node as f64);
            positive(
                "fabric.nic_bandwidth_bytes_per_s",
                self.fabric.nic_bandwidth_bytes_per_s,
            );
            positive("fabric.fat_tree_levels", self.fabric.fat_tree_levels as f64);
            positive("fabric.switch_radix", self.fabric.switch_radix as f64);
        }
        let nvlink = self.node.nvlink_bandwidth_bytes_per_s;
        if !(nvlink.is_finite() && nvlink >= 0.0) {
            problems.push(format!(
                "node.nvlink_bandwidth_bytes_per_s must be a number of at least 0 (got {nvlink}; \
                 0: the node's GPUs talk over PCIe)"
            ));
        }
        if let Some(kind) = self.fabric.kind {
            match self.fabric.path_latency_ns() {
                Some(ns) if ns <= MAX_FABRIC_PATH_LATENCY_NS => {}
                _ => problems.push(format!(
                    "fabric.kind {}: the path latency 2 × fabric.nic_latency_ns ({}) + \
                     (2 × fabric.fat_tree_levels ({}) − 1) × fabric.switch_hop_latency_ns ({}) \
                     must be at most {MAX_FABRIC_PATH_LATENCY_NS} ns",
                    kind.name(),
                    self.fabric.nic_latency_ns,
                    self.fabric.fat_tree_levels,
                    self.fabric.switch_hop_latency_ns
                )),
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(TopologyError::Invalid {
                name: self.name.clone(),
                problems,
            })
        }
    }

    /// Parses and validates a topology from JSON text; `origin` names the source in errors.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Self, TopologyError> {
        let spec: TopologySpec =
            serde_json::from_str(text).map_err(|source| TopologyError::Parse {
                path: origin.to_string(),
                source,
            })?;
        spec.validate()?;
        Ok(spec)
    }
}
