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
//! **Ring** (as NCCL runs it; step counts as in NCCL's `src/graph/tuning.cc`):
//!
//! ```text
//! time = intra_steps · nvlink_step_latency + inter_steps · network_step_latency
//!      + bus_factor · bytes / ring_bus_bandwidth
//! ```
//!
//! | op | steps | inter-node steps | bus factor |
//! |---|---|---|---|
//! | all-reduce | 2(n−1) | 2(nodes−1) | 2(n−1)/n |
//! | reduce-scatter, all-gather | n−1 | nodes−1 | (n−1)/n |
//! | broadcast (pipelined chain) | n−1 | nodes−1 | 1 |
//! | send/recv | 1 | 1 if the two ranks are on different nodes | 1 |
//!
//! `ring_bus_bandwidth` is hierarchical: inside one node it is the profile's
//! NVLink bus bandwidth (230 GB/s on A100, a measured NCCL figure, so the NVLink
//! protocol overheads are already in it). Across nodes every ring enters and leaves
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
//! **Tree** (all-reduce only, NCCL's double binary tree across nodes and a chain
//! inside each node):
//!
//! ```text
//! time = 2 · ((ranks_per_node − 1) · nvlink_step_latency + ⌊log2 nodes⌋ · network_step_latency)
//!      + bytes / (0.5 · 0.92 · ring_bus_bandwidth)
//! ```
//!
//! (NCCL's tuner: latency of a reduce up and a broadcast down the tree;
//! `busBw·0.92` derating and algorithm bandwidth = ½ bus bandwidth.)
//!
//! Reported bandwidths are nccl-tests': algbw = bytes ÷ time, busbw = algbw ×
//! bus factor (the all-reduce factor even for a tree, as nccl-tests does not know
//! the algorithm). Durations are rounded up once, by `SimDuration::from_seconds_ceil`.
//!
//! # Selection (the tuner)
//!
//! Without an explicit `algorithm`, [`estimate`] picks, like NCCL's tuner, the
//! algorithm with the least modeled time among those NCCL allows: a ring inside a
//! node and for every operation but all-reduce; for an all-reduce across nodes the
//! faster of ring and tree (ties to the ring). With the selene defaults the tree wins
//! below a few tens of MiB and the ring above (the tree's ⌊log2 nodes⌋ latency beats
//! the ring's 2(nodes−1) network steps; the ring's bandwidth beats the tree's 0.46×).
//! `Some(Algorithm::Tree)` for an operation other than all-reduce runs a ring and the
//! result says so.
//!
//! Not modeled: NCCL's LL/LL128 protocols (the model over-predicts busbw around
//! 1 MiB by ~20 %), NVLS/CollNet (SHARP), per-channel caps, PXN.
//!
//! ```
//! use collectives::{estimate, CollectiveOp, GroupShape, LinkRates};
//! let topology = topologies::preset("selene").unwrap();
//! let profile = profile::Profile::builtin("a100-80gb").unwrap();
//! let rates = LinkRates::from(&topology, &profile);
//! let e = estimate(CollectiveOp::AllReduce, 1 << 30, &GroupShape::single_node(8), &rates, None);
//! assert!((e.busbw_bytes_per_s / 1e9 - 229.0).abs() < 3.0);
//! ```

mod estimate;
mod shape;

pub use estimate::{
    choose_algorithm, estimate, ring_bus_bytes_per_s, ring_steps, ring_terms, tree_terms,
    CollectiveEstimate, CostTerms, TREE_ALGORITHM_RATIO, TREE_BANDWIDTH_EFFICIENCY,
};
pub use shape::{Algorithm, CollectiveOp, GroupShape, LinkRates};
