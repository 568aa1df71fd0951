//! # collectives — NCCL-style collectives in closed form
//!
//! How long one all-reduce,
//! reduce-scatter, all-gather, broadcast or send/recv takes on a group of GPUs,
//! with no other traffic (contention is `sim::network`'s job).
//!
//! # Model
//!
//! `bytes` is nccl-tests' "size": the buffer per rank (for all-gather and
//! reduce-scatter, the full gathered buffer). A group is [`GroupShape`]: `ranks`
//! spread evenly over `nodes`, `ranks_per_node` on each. Rates are [`LinkRates`],
//! from the calibration profile capped by the topology's line rates.
//!
//! **NCCL's tuner** ([`protocol`], by default from NVIDIA/nccl v2.12.12-1 `src/graph/tuning.cc`
//! and `src/enqueue.cc`): every collective but send/recv runs the (algorithm,
//! protocol) pair of least modeled time, and takes that time:
//!
//! ```text
//! time = baseLat[a][p] + Σ hops · hwLat[link][a][p]        (the latency term)
//!      + bytes / (ring_bus_bandwidth · protocol factor · ratio[a])
//! ```
//!
//! - algorithms: ring (every operation) and NCCL's double binary tree (all-reduce
//!   only; a chain inside each node, ⌊log2 nodes⌋ network levels, each walked
//!   twice); ring steps 2(n−1) for all-reduce with 2·nodes network steps across
//!   nodes, n−1 and nodes−1 for reduce-scatter and all-gather; a broadcast pays
//!   one hop; ratio = n ÷ steps for rings, ½ for trees;
//! - protocols: LL (8-byte stores of 4 data bytes + a flag: ¼ of the ring's bus
//!   bandwidth for all-reduce or across nodes, ⅓ otherwise, capped by `llMaxBws`;
//!   1/3.8 on trees; ~0.5 µs per NVLink hop), LL128 (120 of 128 bytes: 0.92 of it,
//!   0.7 with one rank per node, 7/9 on a single-node tree; NVLink Volta/Ampere
//!   only), Simple (full bandwidth, 3.4 µs per NVLink ring hop, 28 µs per network
//!   hop, 8.4 µs per call); plus 2.12's refinements: Ampere's 235 GB/s cap, LL's
//!   ×1.8 intra-node hops across nodes, the Simple ring's ×1.9 "plateau" latency
//!   across nodes, the tree's per-size correction factors.
//!
//! `ring_bus_bandwidth` (NCCL's `nChannels × speed`) is the achieved one, and is
//! hierarchical: inside one node it is the profile's NVLink bus bandwidth (230 GB/s
//! on A100, a measured NCCL figure). Across nodes every ring enters and leaves
//! each node once, through one NIC, and NCCL runs one ring per NIC rail in
//! parallel; the node's NICs therefore carry the whole bus bandwidth together:
//! `rails × nic_bandwidth`, capped by the NVLink bus bandwidth when the ring also
//! has hops inside nodes. A group owns the rails of its GPUs,
//! `rails = ranks_per_node × nics_per_node / gpus_per_node`. On DGX A100 with 8
//! ranks per node that is min(230, 8 × 24) = 192 GB/s, the figure measured across
//! nodes (NVIDIA/nccl issue 812); it is *not* `nics·nic / ranks_per_node` (that is
//! what each GPU's NIC carries, 24 GB/s, while the ring's bus bandwidth counts every
//! rank's traffic). A group with one rank per node (a data-parallel group when
//! t = 8) runs every hop over its rank's own rail: 24 GB/s.
//!
//! **Send/recv** is not tuned by NCCL (point-to-point runs Simple): one hop,
//! `step_latency + bytes / ring_bus_bandwidth`, with the profile's NVLink or
//! network step latency ([`ring_terms`]).
//!
//! **All-to-all** ([`all_to_all`]) is grouped send/recv to every peer, not
//! tuned (Simple): one point-to-point step latency per peer, and the bytes a
//! rank sends to its node's peers over NVLink or to other nodes over its own
//! NIC rail, whichever takes longer.
//!
//! Reported bandwidths are nccl-tests': algbw = bytes ÷ time, busbw = algbw ×
//! bus factor (the all-reduce factor even for a tree, as nccl-tests does not know
//! the algorithm). Durations are rounded up once, by `SimDuration::from_seconds_ceil`.
//! With the selene defaults an 8-GPU all-reduce runs LL below ~0.5 MB, LL128 to
//! ~13 MB and Simple above; across nodes small all-reduces run trees.
//!
//! **The fabric's own latency** ([`fabric_hops`]): when the topology declares
//! a fabric `kind` (InfiniBand, RoCEv2), every network hop on a chunk's path
//! also pays the fabric's NIC and switch latency on its farthest path
//! ([`LinkRates::fabric_step_latency_ns`]), added to the pair NCCL's tuner
//! chose (NCCL's IB transport reports no latency, so the tuner cannot tell
//! the fabrics apart); without a kind nothing is added, as before.
//!
//! **Nodes without NVLink** (`node.nvlink_bandwidth_bytes_per_s` = 0): the
//! intra-node level is the GPUs' PCIe links ([`intra_node_line_bytes_per_s`]
//! caps the profile's intra-node bus bandwidth) and NCCL's PCI hop latencies
//! apply.
//!
//! **NCCL 2.21** ([`version`], v2.21.5-1's `tuning.cc`), chosen by
//! [`LinkRates::nccl`] (a simulation takes it from its software stack,
//! `clustersim collective` from `--nccl`): the same rule with LL128 on Hopper over
//! NVLink, Hopper's `llMaxBws` row (141 GB/s on one node), its `baseLat`/`hwLat`,
//! the ring LL at ½ the bus bandwidth, no Ampere cap and no ×1.8 LL hops, a
//! net-overhead floor on a cross-node ring's intra-node hops, and a ×1.4 plateau
//! from Ampere on. With the h100-sxm profile an 8-GPU all-reduce then runs LL to
//! ~2 MiB, LL128 to ~32 MiB and Simple above (2.12: LL to 1 MiB, then Simple).
//!
//! Not modeled: NCCL's per-channel caps (`ll128MaxBwPerCh`, `perChMaxTreeBw`, 2.21's
//! `perChMaxRingLL128Bws`…: the channel count is not modeled), NVLS/NVLS-tree
//! (2.21 on NVSwitch Hopper nodes), CollNet (SHARP), PXN, aggregated calls
//! (`numPipeOps` = 1).
//!
//! ```
//! use collectives::{estimate, CollectiveOp, GroupShape, LinkRates};
//! let topology = topologies::preset("selene").unwrap();
//! let profile = profile::Profile::builtin("a100-80gb").unwrap();
//! let rates = LinkRates::from(&topology, &profile);
//! let e = estimate(CollectiveOp::AllReduce, 1 << 30, &GroupShape::single_node(8), &rates, None);
//! assert!((e.busbw_bytes_per_s / 1e9 - 229.0).abs() < 3.0);
//! ```

pub mod all_to_all;
mod cost_terms;
pub mod deepep;
mod estimate;
#[cfg(test)]
mod fabric_tests;
pub mod protocol;
mod shape;
pub mod version;

pub use cost_terms::{
    ring_bus_bytes_per_s, ring_steps, ring_terms, CostTerms, TREE_ALGORITHM_RATIO,
    TREE_BANDWIDTH_EFFICIENCY,
};
pub use estimate::{choose_algorithm, estimate, fabric_hops, CollectiveEstimate};
pub use protocol::{nccl_terms, tune, Protocol};
pub use shape::{
    compute_capability, intra_node_line_bytes_per_s, Algorithm, CollectiveOp, GroupShape, LinkRates,
};
pub use version::NcclVersion;
