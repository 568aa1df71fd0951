//! The streaming multiprocessors an overlapped NCCL collective takes from the
//! kernels it overlaps.
//!
//! An NCCL collective runs as one kernel with one thread block per channel,
//! each resident on an SM for the whole collective; a GEMM launched beside it
//! gets the SMs that are left. Megatron-LM's asynchronous tensor all-reduce
//! relies on exactly this order: `LinearWithGradAccumulationAndAsyncCommunication
//! .backward` launches the input-gradient all-reduce, then "Delay[s] the start of
//! weight gradient computation shortly (3us) to have all-reduce scheduled first
//! and have GPU resources allocated" before the weight-gradient GEMM
//! (`megatron/mpu/layers.py`, 2022; `megatron/core/tensor_parallel/layers.py`
//! later), with `CUDA_DEVICE_MAX_CONNECTIONS=1` so the two are issued in that
//! order. While the all-reduce runs, the GEMM therefore progresses at
//! (SMs − channels) / SMs of its rate; this is what [`super::exposed_after_overlap`]
//! charges.
//!
//! The channel count, inside an NVSwitch node, from NCCL's topology search
//! (`src/graph/search.cc` `ncclTopoCompute`, `src/graph/connect.cc`
//! `ncclTopoPostset`): on an 8 × A100 node NCCL v2.12.12-1 sees 12 NVLinks of
//! `SM80_NVLINK_WIDTH` 22 GB/s to the NVSwitches (264 GB/s), searches rings at
//! the first `speedArrayIntra` entry not above that (44 GB/s) and fits 264 / 44
//! = 6 channels, which fill the width ("PERFECT"); a ring speed ≥ 25 GB/s
//! doubles them (12 channels at 22), and `ncclTopoPostset` duplicates the rings
//! once more (`std::min(MAXCHANNELS, nChannels*2)`): 24. v2.21.5-1 gives the same
//! 24 on A100 (12 × `SM80_NVLINK_BW` 20 = 240 GB/s at 40 GB/s: 6 → 12 → 24) and on
//! H100 (18 × `SM90_NVLINK_BW` 20.6 = 370.8 GB/s at `sm90SpeedArrayIntra`'s 60:
//! 6 → 12 → 24), as `NCCL_DEBUG=INFO` logs of 8-GPU H100 nodes print it ("24 coll
//! channels, … 16 nvls channels"). Large collectives use every channel:
//! `src/enqueue.cc` trims channels only while the message is below
//! nChannels × nThreads × threadThreshold bytes (24 × 512 × 64 = 768 KiB for the
//! Simple protocol, `NCCL_SIMPLE_THREAD_THRESHOLD` in `src/include/comm.h`), so
//! for smaller messages the share is overstated. The same 24 is taken for every NVSwitch node; on a 16 × V100
//! DGX-2 node v2.12's search gives 12 (6 × 22 = 132 GB/s at 44: 3 → 6 → 12), so
//! there the share is overstated by 12 of 80 SMs. Nodes without NVSwitch (PCIe
//! only) are not modeled: their collectives take no SMs here.
//!
//! Not modeled: the HBM bandwidth the collective takes from memory-bound
//! kernels, the SMs of collectives overlapped by the engine rather than by a
//! closed form (data-parallel reductions and parameter gathers running beside
//! the compute stream), and Transformer Engine's userbuffers kernels under
//! `--tp-comm-overlap` (their SM counts are per-layer settings of each recipe).

use topologies::TopologySpec;

/// NCCL's collective channels on an NVSwitch node (see the module header).
pub const NVSWITCH_NODE_COLLECTIVE_CHANNELS: u32 = 24;

/// The fraction of the GPU's SMs an NCCL collective inside a node holds while
/// it runs: channels / SMs on an NVSwitch node (at most 1), 0 elsewhere.
pub fn intra_node_collective_sm_share(topology: &TopologySpec) -> f64 {
    if topology.node.nvswitch_count == 0 || topology.gpu.sm_count == 0 {
        return 0.0;
    }
    (f64::from(NVSWITCH_NODE_COLLECTIVE_CHANNELS) / f64::from(topology.gpu.sm_count)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_24_channels_of_the_gpus_sms_on_nvswitch_nodes_only() {
        let selene = topologies::preset("selene").unwrap();
        assert_eq!(selene.gpu.sm_count, 108);
        assert_eq!(intra_node_collective_sm_share(&selene), 24.0 / 108.0);
        let hopper = topologies::preset("dgx-h100-superpod").unwrap();
        assert_eq!(intra_node_collective_sm_share(&hopper), 24.0 / 132.0);
        let pcie = topologies::preset("h100-pcie-cluster").unwrap();
        assert_eq!(intra_node_collective_sm_share(&pcie), 0.0);
    }
}
