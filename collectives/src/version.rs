//! Which NCCL's tuner a collective is costed with, and the constants of the
//! versions after 2.12 ([`crate::protocol`] holds 2.12's and the rule itself).
//!
//! Sources: NVIDIA/nccl v2.12.12-1 (commit 7aa1c46f) and v2.21.5-1 (2024-04, the
//! NCCL of 2024's Megatron-Core / NeMo containers): `src/graph/tuning.cc`
//! (`baseLat`, `hwLat`, `llMaxBws`, `getNetOverhead`, `ncclTopoTuneModel`,
//! `ncclTopoGetAlgoTime`) and `src/enqueue.cc` (`topoGetAlgoInfo`: the first pair
//! of strictly least time, as in 2.12). What 2.21 changed that the model has the
//! inputs for:
//!
//! - LL128 on by default on Hopper (compute capability 9.0) over NVLink, as on
//!   Volta and Ampere (2.12: Volta and Ampere only). 2.21 turns it off for a
//!   2-rank ring all-reduce on Hopper only when built with CUDA 11.8
//!   (`CUDART_VERSION == 11080`); 2024's containers are CUDA 12 builds, so that
//!   exception is not taken;
//! - `baseLat`, `hwLat` (LL's NVLink hop 0.6 µs, the Simple ring's network hop
//!   14 µs), and a Hopper row of `llMaxBws` (141 GB/s on one node; across nodes
//!   the row is still chosen by the host CPU's vendor, as in 2.12);
//! - the ring LL's bandwidth is ½ of the bus bandwidth (2.12: ¼ or ⅓); Ampere's
//!   235 GB/s bus cap and LL's ×1.8 intra-node hops across nodes are gone;
//! - across nodes a ring's intra-node hop costs at least the network's post
//!   overhead (`getNetOverhead`: 1 µs on Intel hosts, 2 µs on AMD's, ×3 for Simple);
//! - the Simple ring all-reduce's "plateau" latency factor is ×1.4 from Ampere on
//!   (×1.9 before), from `bytes / (nChannels × nRanks) ≥ 64` on.
//!
//! Not modeled (the model has no input for them): the per-channel caps
//! (`perChMaxRingLL128Bws`, `perChMaxTreeLL128Bws`, `perChMaxTreeBws`, whose
//! Hopper rows are new: they need NCCL's channel count), the tree pattern's ×0.85
//! (`NCCL_TOPO_PATTERN_TREE`, an outcome of the topology search; DGX nodes find
//! the balanced tree), NVLS and NVLS-tree (NVSwitch multicast, which 2.21 runs
//! for large all-reduces on DGX H100), CollNet (SHARP), PXN, the tuner plugin.

/// The NCCL whose tuner costs the collectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum NcclVersion {
    /// v2.12.12-1 (2022): the A100 era's, and the default.
    #[default]
    V2_12,
    /// v2.21.5-1 (2024-04): LL128 on Hopper, Hopper's LL cap.
    V2_21,
}

impl NcclVersion {
    pub const ALL: [NcclVersion; 2] = [NcclVersion::V2_12, NcclVersion::V2_21];

    /// Short name, as `--nccl` and a stack's `nccl` key spell it.
    pub fn name(self) -> &'static str {
        match self {
            NcclVersion::V2_12 => "2.12",
            NcclVersion::V2_21 => "2.21",
        }
    }

    /// The release (git tag of NVIDIA/nccl) whose tuner is implemented.
    pub fn release(self) -> &'static str {
        match self {
            NcclVersion::V2_12 => "v2.12.12-1",
            NcclVersion::V2_21 => "v2.21.5-1",
        }
    }

    /// `2.12` or `2.21` (also `2.12.12`, `2.21.5`); `None` for anything else.
    pub fn parse(text: &str) -> Option<NcclVersion> {
        match text.trim() {
            "2.12" | "2.12.12" => Some(NcclVersion::V2_12),
            "2.21" | "2.21.5" => Some(NcclVersion::V2_21),
            _ => None,
        }
    }
}

/// v2.21.5-1 `baseLat` (µs), [tree, ring][LL, LL128, Simple].
pub const BASE_LATENCY_US_2_21: [[f64; 3]; 2] = [[6.8, 14.0, 0.0], [6.6, 14.0, 8.4]];

/// v2.21.5-1 `hwLat` (µs per hop), [NVLink, PCI, NET][tree, ring][LL, LL128, Simple].
pub const HOP_LATENCY_US_2_21: [[[f64; 3]; 2]; 3] = [
    [[0.6, 1.25, 28.0], [0.6, 1.9, 3.4]],
    [[1.0, 1.9, 28.0], [1.0, 2.5, 5.7]],
    [[5.0, 8.5, 28.0], [2.7, 4.0, 14.0]],
];

/// v2.21.5-1 `llMaxBws` (GB/s), [Volta or Intel hosts, Ampere or AMD hosts,
/// Hopper][1 node, 2 nodes, more]: one node is indexed by the GPU (`minCompCap
/// >= 90` Hopper, `>= 80` Ampere, else Volta), several by the host CPU's vendor.
pub const LL_MAX_BUS_GB_PER_S_2_21: [[f64; 3]; 3] =
    [[39.0, 39.0, 20.4], [87.7, 22.5, 19.0], [141.0, 45.0, 35.0]];

/// v2.21.5-1 ring LL: `busBw = std::min(llMaxBw, busBw * .5)`.
pub const RING_LL_SHARE_2_21: f64 = 0.5;

/// v2.21.5-1 `getNetOverhead` (µs): x86 Intel hosts 1.0, AMD 2.0 (others 1.0).
pub const NET_OVERHEAD_US_INTEL: f64 = 1.0;
pub const NET_OVERHEAD_US_AMD: f64 = 2.0;
/// `if (p == NCCL_PROTO_SIMPLE) netOverhead *= 3`.
pub const NET_OVERHEAD_SIMPLE_FACTOR: f64 = 3.0;

/// v2.21.5-1 `lat *= info->comm->minCompCap < 80 ? 1.9 : 1.4; // Plateau effect of ring`.
pub const RING_PLATEAU_FACTOR_AMPERE_ON: f64 = 1.4;

/// The channel count the plateau threshold (`nBytes / (nChannels × nRanks) >= 64`)
/// is taken at: `MAXCHANNELS` (`src/include/device.h`, 32), the count NCCL runs
/// on NVSwitch nodes such as DGX H100 and the most it runs anywhere. The model
/// has no channel count; Simple does not win at the sizes where a smaller count
/// would move the threshold (below 2 KiB per rank).
pub const PLATEAU_CHANNELS: u64 = 32;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{nccl_terms, tune, Protocol};
    use crate::{Algorithm, CollectiveOp, CostTerms, GroupShape, LinkRates};

    /// Round numbers for a Hopper node under 2.21: 400 GB/s NVLink bus, 25 GB/s
    /// NICs (8 per node), NVLink, Intel hosts.
    fn hopper() -> LinkRates {
        LinkRates {
            nvlink_bus_bytes_per_s: 400e9,
            nvlink_step_latency_ns: 1000.0,
            nic_bytes_per_s: 25e9,
            nics_per_node: 8,
            gpus_per_node: 8,
            network_step_latency_ns: 3000.0,
            compute_capability: 90,
            intra_node_nvlink: true,
            amd_host_cpu: false,
            nccl: NcclVersion::V2_21,
            fabric_step_latency_ns: 0.0,
        }
    }

    fn ns(terms: CostTerms) -> u64 {
        (terms.total_seconds() * 1e9).ceil() as u64
    }

    fn all_reduce(
        bytes: u64,
        group: GroupShape,
        rates: &LinkRates,
        a: Algorithm,
        p: Protocol,
    ) -> Option<CostTerms> {
        nccl_terms(CollectiveOp::AllReduce, bytes, &group, rates, a, p)
    }

    #[test]
    fn single_node_hopper_terms_follow_2_21_tuning_cc() {
        let node8 = GroupShape::single_node(8);
        let ring = |p| all_reduce(1_000_001, node8, &hopper(), Algorithm::Ring, p).unwrap();
        // LL: 6.6 + 14 × 0.6 = 15 µs; bus min(141 (Hopper row), 400 × ½) GB/s × 8/14:
        // 1 000 001 × 14 ÷ (8 × 141e9) = 12 411.36 ns.
        assert!((ring(Protocol::Ll).latency_ns - 15_000.0).abs() < 1e-6);
        assert_eq!(ns(ring(Protocol::Ll)), 27_412);
        // LL128 (on for Hopper): 14 + 14 × 1.9 = 40.6 µs; 0.92 × 400 = 368 GB/s:
        // 1 000 001 × 14 ÷ (8 × 368e9) = 4 755.44 ns.
        assert!((ring(Protocol::Ll128).latency_ns - 40_600.0).abs() < 1e-6);
        assert_eq!(ns(ring(Protocol::Ll128)), 45_356);
        // Simple: 8.4 + 14 × 3.4 = 56 µs; 1 000 001 × 1.75 ÷ 400e9 = 4 375.00 ns.
        assert_eq!(ns(ring(Protocol::Simple)), 60_376);
        // Tree LL: 6.8 + 2 × 7 × 0.6 = 15.2 µs; 400 × 0.92 / 3.8 × ½ × 0.4 (the
        // correction at log2(1 000 001 / 64) = 13): 1 000 001 ÷ 19.368e9 = 51 630.49 ns.
        let tree = all_reduce(1_000_001, node8, &hopper(), Algorithm::Tree, Protocol::Ll);
        assert!((tree.unwrap().latency_ns - 15_200.0).abs() < 1e-6);
        assert_eq!(ns(tree.unwrap()), 66_831);
        // Tree LL128: 14 + 2 × 7 × 1.25 = 31.5 µs; 400 × 0.92 × 7/9 × ½ × 0.6.
        let tree = all_reduce(
            1_000_001,
            node8,
            &hopper(),
            Algorithm::Tree,
            Protocol::Ll128,
        );
        assert!((tree.unwrap().latency_ns - 31_500.0).abs() < 1e-6);
        assert_eq!(ns(tree.unwrap()), 43_146);
    }

    #[test]
    fn multi_node_latencies_follow_2_21_tuning_cc() {
        // 2 nodes × 8: bus min(400, 8 × 25) = 200 GB/s; 30 steps, 4 of them network.
        let group = GroupShape::new(2, 8);
        let terms = |rates: &LinkRates, a, p, bytes| all_reduce(bytes, group, rates, a, p).unwrap();
        // Ring LL: the NVLink hop costs at least the 1 µs net overhead (Intel):
        // 6.6 + 26 × 1.0 + 4 × 2.7 = 43.4 µs (no ×1.8); bus min(39 (Intel, 2 nodes), 100).
        let ll = terms(&hopper(), Algorithm::Ring, Protocol::Ll, 1000);
        assert!((ll.latency_ns - 43_400.0).abs() < 1e-6);
        assert!((ll.transfer_seconds - 1000.0 * 30.0 / (16.0 * 39e9)).abs() < 1e-18);
        // Ring LL128: 14 + 26 × 1.9 + 4 × 4 = 79.4 µs.
        let ll128 = terms(&hopper(), Algorithm::Ring, Protocol::Ll128, 1000);
        assert!((ll128.latency_ns - 79_400.0).abs() < 1e-6);
        // Ring Simple: 8.4 + 26 × 3.4 + 4 × 14 = 152.8 µs; × 1.4 from
        // bytes / (32 × 16) ≥ 64, i.e. from 32 768 bytes on.
        let below = terms(&hopper(), Algorithm::Ring, Protocol::Simple, 32_767);
        assert!((below.latency_ns - 152_800.0).abs() < 1e-6);
        let above = terms(&hopper(), Algorithm::Ring, Protocol::Simple, 32_768);
        assert!((above.latency_ns - 213_920.0).abs() < 1e-6);
        // Volta keeps 1.9: 152.8 × 1.9 = 290.32 µs (LL128 is Volta's too, same hops).
        let volta = LinkRates {
            compute_capability: 70,
            ..hopper()
        };
        let above = terms(&volta, Algorithm::Ring, Protocol::Simple, 32_768);
        assert!((above.latency_ns - 290_320.0).abs() < 1e-6);
        // AMD hosts: 2 µs net overhead, 6 µs for Simple. LL: 6.6 + 26 × 2 + 10.8 = 69.4;
        // Simple: 8.4 + 26 × 6 + 56 = 220.4 µs.
        let amd = LinkRates {
            amd_host_cpu: true,
            ..hopper()
        };
        let ll = terms(&amd, Algorithm::Ring, Protocol::Ll, 1000);
        assert!((ll.latency_ns - 69_400.0).abs() < 1e-6);
        let simple = terms(&amd, Algorithm::Ring, Protocol::Simple, 1000);
        assert!((simple.latency_ns - 220_400.0).abs() < 1e-6);
        // AMD's llMaxBws row across 2 nodes: 22.5 GB/s.
        assert!((ll.transfer_seconds - 1000.0 * 30.0 / (16.0 * 22.5e9)).abs() < 1e-18);
        // Trees are not given the overhead: LL 6.8 + 2 × (7 × 0.6 + 1 × 5) = 25.2 µs;
        // Simple 2 × (7 × 28 + 28) = 448 µs.
        let tree = terms(&hopper(), Algorithm::Tree, Protocol::Ll, 1000);
        assert!((tree.latency_ns - 25_200.0).abs() < 1e-6);
        let tree = terms(&hopper(), Algorithm::Tree, Protocol::Simple, 1000);
        assert!((tree.latency_ns - 448_000.0).abs() < 1e-6);
    }

    #[test]
    fn hopper_8_gpu_all_reduces_run_ll128_at_mid_sizes_under_2_21_only() {
        let node8 = GroupShape::single_node(8);
        let pick = |bytes, rates: &LinkRates| {
            let (a, p, terms) = tune(CollectiveOp::AllReduce, bytes, &node8, rates, None).unwrap();
            (a, p, ns(terms))
        };
        // Ring LL 64 645.40, LL128 59 621.74, Simple 73 500.00 ns; tree LL128 78 083.
        assert_eq!(
            pick(4_000_001, &hopper()),
            (Algorithm::Ring, Protocol::Ll128, 59_622)
        );
        // LL128 116 686.96 against Simple 126 000.00 ns.
        assert_eq!(
            pick(16_000_001, &hopper()),
            (Algorithm::Ring, Protocol::Ll128, 116_687)
        );
        // Simple 336 000.00 against LL128 344 947.83 ns.
        assert_eq!(
            pick(64_000_001, &hopper()),
            (Algorithm::Ring, Protocol::Simple, 336_001)
        );
        assert_eq!(
            pick(1_000_001, &hopper()),
            (Algorithm::Ring, Protocol::Ll, 27_412)
        );
        // 2.12 offers Hopper no LL128.
        let old = hopper().with_nccl(NcclVersion::V2_12);
        for bytes in [4_000_001, 16_000_001] {
            assert_ne!(pick(bytes, &old).1, Protocol::Ll128);
        }
    }

    #[test]
    fn what_2_21_enables_and_caps_by_compute_capability() {
        let node8 = GroupShape::single_node(8);
        let ring = |rates: &LinkRates, p| all_reduce(100_001, node8, rates, Algorithm::Ring, p);
        // LL128: Volta, Ampere, Hopper on NVLink; not Blackwell (after 2.21), not PCIe.
        for (cc, on) in [(70, true), (80, true), (90, true), (100, false), (0, false)] {
            let rates = LinkRates {
                compute_capability: cc,
                ..hopper()
            };
            assert_eq!(ring(&rates, Protocol::Ll128).is_some(), on, "{cc}");
        }
        let pcie = LinkRates {
            intra_node_nvlink: false,
            ..hopper()
        };
        assert!(ring(&pcie, Protocol::Ll128).is_none());
        // One node's llMaxBws row by compute capability: Ampere 87.7, Volta and
        // unknown 39, Blackwell the Hopper row (`minCompCap >= 90`), 141.
        for (cc, cap) in [(80, 87.7e9), (70, 39e9), (0, 39e9), (100, 141e9)] {
            let rates = LinkRates {
                compute_capability: cc,
                ..hopper()
            };
            let ll = ring(&rates, Protocol::Ll).unwrap();
            assert!((ll.transfer_seconds - 100_001.0 * 14.0 / (8.0 * cap)).abs() < 1e-18);
        }
        // No Ampere 235 GB/s cap under 2.21: 300 GB/s Simple runs at 300.
        let ampere = LinkRates {
            compute_capability: 80,
            nvlink_bus_bytes_per_s: 300e9,
            ..hopper()
        };
        let simple = ring(&ampere, Protocol::Simple).unwrap();
        assert!((simple.transfer_seconds - 100_001.0 * 1.75 / 300e9).abs() < 1e-18);
        // Reduce-scatter LL: ½ the bus (2.12: ⅓), 141 binds: 7 steps of 8 ranks.
        let slow = LinkRates {
            nvlink_bus_bytes_per_s: 200e9,
            ..hopper()
        };
        let rs = nccl_terms(
            CollectiveOp::ReduceScatter,
            100_001,
            &node8,
            &slow,
            Algorithm::Ring,
            Protocol::Ll,
        )
        .unwrap();
        assert!((rs.transfer_seconds - 100_001.0 * 7.0 / (8.0 * 100e9)).abs() < 1e-18);
        // A broadcast pays one hop: 6.6 + 0.6 µs.
        let broadcast = nccl_terms(
            CollectiveOp::Broadcast,
            1000,
            &node8,
            &hopper(),
            Algorithm::Ring,
            Protocol::Ll,
        )
        .unwrap();
        assert!((broadcast.latency_ns - 7_200.0).abs() < 1e-6);
    }

    #[test]
    fn versions_parse_by_name_and_release_number() {
        for v in NcclVersion::ALL {
            assert_eq!(NcclVersion::parse(v.name()), Some(v));
        }
        assert_eq!(NcclVersion::parse("2.21.5"), Some(NcclVersion::V2_21));
        assert_eq!(NcclVersion::parse("2.12.12"), Some(NcclVersion::V2_12));
        assert_eq!(NcclVersion::parse("2.18"), None);
        assert_eq!(NcclVersion::default(), NcclVersion::V2_12);
    }
}
