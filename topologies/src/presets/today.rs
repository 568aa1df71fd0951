//! Clusters of today: DGX H100/H200 SuperPODs, an HGX H800 cluster as
//! DeepSeek-V3 trained on, DGX B200 and GB200 NVL72 on InfiniBand, DGX H100
//! on RoCEv2, and nodes of eight H100 PCIe cards. Every number carries its
//! source in a comment; a number no document we could find states is marked
//! "unsourced" with what was taken instead.
//!
//! | preset | GPUs | nodes × GPUs | intra-node per GPU per direction | scale-out per GPU | fabric kind | switches |
//! |---|---|---|---|---|---|---|
//! | `dgx-h100-superpod` | H100 SXM5 80 GB | 128 × 8 = 1,024 | 450 GB/s (NVLink 4) | 400 Gb/s NDR IB | none (as before) | QM9700, radix 64, 2 levels |
//! | `dgx-h100-ib` | H100 SXM5 80 GB | 128 × 8 = 1,024 | 450 GB/s (NVLink 4) | 400 Gb/s NDR IB | `infiniband` | QM9700, radix 64, 2 levels |
//! | `dgx-h100-roce` | H100 SXM5 80 GB | 128 × 8 = 1,024 | 450 GB/s (NVLink 4) | 400 GbE RoCEv2 | `roce_v2` | SN5600, radix 128 at 400 GbE, 2 levels |
//! | `dgx-h200-superpod` | H200 141 GB | 128 × 8 = 1,024 | 450 GB/s (NVLink 4) | 400 Gb/s NDR IB | none | QM9700, radix 64, 2 levels |
//! | `hgx-h800` | H800 SXM5 80 GB | 256 × 8 = 2,048 | 200 GB/s (NVLink 4, cut) | 400 Gb/s NDR IB | none | QM9700, radix 64, 3 levels |
//! | `dgx-b200` | B200 | 256 × 8 = 2,048 | 900 GB/s (NVLink 5) | 400 Gb/s NDR IB | none | QM9700, radix 64, 3 levels |
//! | `gb200-nvl72` | GB200 | 8 × 72 = 576 | 900 GB/s (NVLink 5) | 400 Gb/s NDR IB | none | QM9700, radix 64, 3 levels |
//! | `h100-pcie-cluster` | H100 PCIe 80 GB | 16 × 8 = 128 | 63 GB/s (PCIe Gen5 x16; NVLink bridges not used) | 400 Gb/s NDR IB | none | QM9700, radix 64, 2 levels |
//!
//! A fabric `kind` makes the cost model read the fabric's NIC and switch
//! latencies (`FabricSpec::path_latency_ns`, added to every network step;
//! `collectives::estimate`). The presets that existed before the key declare
//! none and cost exactly as before; `dgx-h100-ib` is `dgx-h100-superpod` with
//! `kind: infiniband`, the InfiniBand cluster to compare `dgx-h100-roce`
//! with: the two differ only in the kind, the switch hop latency and the
//! switch radix (which no closed-form cost reads), so every network step
//! of the RoCE cluster costs 3 × (300 − 150) = 450 ns more.
//!
//! `h100-pcie-cluster`'s GPUs talk over PCIe inside a node
//! (`node.nvlink_bandwidth_bytes_per_s` = 0): the H100 PCIe's NVLink bridge
//! joins only pairs of cards, and the collective model has two levels
//! (one intra-node bus, the NIC rails), so the bridge is not used: every
//! intra-node ring runs at the PCIe link's line rate. A ring of more than two
//! GPUs is bound by its PCIe hops either way (only the bridged hops' latency
//! is lost); a group of two on a bridged pair (t = 2) is costed at PCIe's
//! 63 GB/s instead of the bridge's 300 GB/s per direction.
//!
//! The fabric model is a k-ary n-tree (radix k gives k/2 ports down, k/2 up
//! at every level; `sim::network::fat_tree`), rail-optimized: a 2-level tree
//! of radix 64 holds 32² = 1,024 NIC ports. NVIDIA's reference architectures
//! reach 2,048 NIC ports in 2 tiers (spines use all 64 ports down); where a
//! preset needs more than 1,024 NIC ports it is given 3 levels, which adds
//! two switch hops (~0.3 µs) to the farthest path and changes nothing else.

use crate::datasheets;
use crate::spec::*;

const GB: f64 = 1e9;
const GIB: u64 = 1 << 30;

/// 400 Gb/s line rate (NDR InfiniBand or 400 GbE) in bytes per second per direction.
const LINE_400_GBIT_BYTES_PER_S: f64 = 400e9 / 8.0;

/// NVLink latency: no NVIDIA document gives one; unsourced, the 1 µs every
/// other preset uses.
const NVLINK_LATENCY_NS: u64 = 1000;

/// ConnectX-7 injection latency: the ConnectX-7 datasheet states none we
/// could find; unsourced, the ConnectX-6 datasheet's "sub-600 ns" (as the
/// DGX A100 presets) is kept.
const CONNECTX7_LATENCY_NS: u64 = 600;

/// Port-to-port latency of a Quantum-2 QM9700 (see `ndr_rails`).
const QM9700_HOP_LATENCY_NS: u64 = 150;

/// Port-to-port latency of a Spectrum-4 SN5600. Unsourced: NVIDIA's SN5000
/// user manual and the Spectrum-4 announcements we found give none (they say
/// "port-to-port, cut-through latency" without a figure). The latest
/// Spectrum generation whose latency a document states is Spectrum-2: "a
/// single-chip device with 300ns latency" (The Linley Group newsletter,
/// "Spectrum-2 Debuts 200GbE", 31 July 2017); 300 ns is taken.
const SN5600_HOP_LATENCY_NS: u64 = 300;

/// Eight ConnectX-7 compute NICs at 400 Gb/s on a Quantum-2 QM9700 fat tree.
fn ndr_rails(nics_per_node: u32, fat_tree_levels: u32) -> FabricSpec {
    FabricSpec {
        kind: None,
        nics_per_node,
        // NVIDIA DGX BasePOD reference architecture (DGX H100/H200 and B200
        // key specifications): "eight single-port NVIDIA ConnectX-7 VPI, up to
        // 400 Gb/s InfiniBand/Ethernet" = 50 GB/s per direction.
        nic_bandwidth_bytes_per_s: LINE_400_GBIT_BYTES_PER_S,
        nic_latency_ns: CONNECTX7_LATENCY_NS,
        fat_tree_levels,
        // NVIDIA Quantum-2 QM9700: 64 ports of NDR 400 Gb/s in 1U, 51.2 Tb/s
        // (QM9700/QM9790 user manual and datasheet).
        switch_radix: 64,
        // Unsourced: NVIDIA's QM9700 datasheet prints no port-to-port
        // latency that we could find. Third-party summaries disagree ("under
        // 150 ns", router-switch.com QM9700 vs SN5400 FAQ; "~330 ns",
        // yobitel.com Quantum-2 page); 150 ns is taken.
        switch_hop_latency_ns: QM9700_HOP_LATENCY_NS,
    }
}

/// `ndr_rails` declared InfiniBand: its NIC and switch latencies are costed.
fn ndr_rails_infiniband(nics_per_node: u32, fat_tree_levels: u32) -> FabricSpec {
    FabricSpec {
        kind: Some(FabricKind::Infiniband),
        ..ndr_rails(nics_per_node, fat_tree_levels)
    }
}

/// Eight ConnectX-7 at 400 GbE per node on a RoCEv2 fabric of Spectrum-4
/// SN5600 switches, rail-optimized, two levels.
fn roce_spectrum4_rails(nics_per_node: u32) -> FabricSpec {
    FabricSpec {
        kind: Some(FabricKind::RoceV2),
        nics_per_node,
        // DGX BasePOD RA, DGX H100 key specifications: eight single-port
        // ConnectX-7 VPI, "up to 400 Gb/s InfiniBand/Ethernet"; the ConnectX-7
        // VPI user manual: single-port OSFP cards run NDR 400 Gb/s or 400GbE.
        nic_bandwidth_bytes_per_s: LINE_400_GBIT_BYTES_PER_S,
        // The same ConnectX-7 as on InfiniBand (unsourced, see the constant).
        nic_latency_ns: CONNECTX7_LATENCY_NS,
        // 1,024 NIC ports fit a 2-level tree of radix 128 (64² = 4,096).
        fat_tree_levels: 2,
        // Spectrum-4: 51.2 Tb/s, "128 ports of 400G or 64 ports of 800G"
        // (NVIDIA's Spectrum-4 announcement, March 2022, as reported by
        // Converge Digest); the SN5600 (NVIDIA Spectrum-4 SN5000 2U user
        // manual) has 64 800GbE OSFP cages, each split into two 400GbE ports
        // for ConnectX-7: radix 128 at 400 GbE.
        switch_radix: 128,
        switch_hop_latency_ns: SN5600_HOP_LATENCY_NS,
    }
}

/// PCIe Gen5 x16 between each GPU and the hosts of DGX H100/H200/B200.
fn pcie_gen5() -> PcieSpec {
    PcieSpec {
        generation: "Gen5 x16".into(),
        // shared/HARDWARE.md: PCIe Gen5 x16 ~63 GB/s per direction line rate.
        bandwidth_bytes_per_s: 63.0 * GB,
        // Unsourced: the DGX H100/B200 user guides do not say how many GPUs
        // share a host uplink; DGX A100's two per PCIe switch is kept.
        gpus_per_host_link: 2,
        // Unsourced, as every other preset.
        latency_ns: 1000,
    }
}

/// A DGX H100 or DGX H200 node (they differ only in the GPU).
fn dgx_hopper(name: &str, nodes: u32, gpu: GpuSpec, fabric: FabricSpec) -> TopologySpec {
    TopologySpec {
        name: name.into(),
        nodes,
        gpu,
        node: NodeSpec {
            // NVIDIA DGX BasePOD RA, DGX H200 and H100 key specifications:
            // eight Hopper GPUs, four NVSwitch chips.
            gpus_per_node: 8,
            // NVIDIA H100/H200 datasheets: NVLink 4, 900 GB/s both directions
            // per GPU = 450 GB/s per direction (the datasheet catalogue's
            // nvlink_bandwidth_bytes_per_s for both GPUs).
            nvlink_bandwidth_bytes_per_s: 450.0 * GB,
            nvlink_latency_ns: NVLINK_LATENCY_NS,
            nvswitch_count: 4,
        },
        fabric,
        pcie: pcie_gen5(),
        host_cpu: HostCpuSpec {
            // DGX BasePOD RA: dual Intel Xeon Platinum 8480C, 112 cores total,
            // 2 TB of DDR5 system memory.
            name: "2 x Intel Xeon Platinum 8480C".into(),
            cores: 112,
            memory_bytes: 2048 * GIB,
            // Intel ARK, Xeon Platinum 8480+ (the 8480C is the DGX SKU of the
            // same part; ARK has no 8480C page): 8 channels of DDR5-4800 per
            // socket = 307.2 GB/s, two sockets.
            memory_bandwidth_bytes_per_s: 2.0 * 307.2 * GB,
        },
    }
}

/// DGX B200 nodes.
fn dgx_b200(name: &str, nodes: u32) -> TopologySpec {
    TopologySpec {
        name: name.into(),
        nodes,
        gpu: datasheets::b200().gpu,
        node: NodeSpec {
            // NVIDIA DGX B200 datasheet: 8 B200 GPUs, NVLink 5 with 14.4 TB/s
            // aggregate = 1.8 TB/s both directions per GPU = 900 GB/s per
            // direction; two NVLink 5 switch chips (8 GPUs x 18 links = 144
            // links over 72-port NVSwitch chips).
            gpus_per_node: 8,
            nvlink_bandwidth_bytes_per_s: 900.0 * GB,
            nvlink_latency_ns: NVLINK_LATENCY_NS,
            nvswitch_count: 2,
        },
        // DGX BasePOD RA, DGX B200 key specifications: "4x OSFP ports serving
        // 8x single-port NVIDIA ConnectX-7 VPI, up to 400 Gb/s". 256 nodes =
        // 8 scalable units of 32 (DGX SuperPOD B200 RA, larger-SuperPOD table:
        // 8 SU, 256 nodes, 2,048 GPUs, 64 leaf and 32 spine switches).
        fabric: ndr_rails(8, 3),
        pcie: pcie_gen5(),
        host_cpu: HostCpuSpec {
            // NVIDIA DGX B200 datasheet: 2 Intel Xeon Platinum 8570, 112 cores
            // total; 2 TB system memory (configurable to 4 TB).
            name: "2 x Intel Xeon Platinum 8570".into(),
            cores: 112,
            memory_bytes: 2048 * GIB,
            // Intel ARK, Xeon Platinum 8570: 8 channels of DDR5-5600 per
            // socket = 358.4 GB/s, two sockets.
            memory_bandwidth_bytes_per_s: 2.0 * 358.4 * GB,
        },
    }
}

/// GB200 NVL72 racks: one 72-GPU NVLink domain is one node here.
fn gb200_nvl72(name: &str, racks: u32) -> TopologySpec {
    TopologySpec {
        name: name.into(),
        nodes: racks,
        gpu: datasheets::gb200().gpu,
        node: NodeSpec {
            // NVIDIA GB200 NVL72 specifications: 72 Blackwell GPUs, NVLink 5
            // 130 TB/s over the rack = 1.8 TB/s both directions per GPU = 900
            // GB/s per direction; nine NVLink switch trays of two NVSwitch
            // chips each (72 GPUs x 18 links = 1,296 links over 72-port chips).
            gpus_per_node: 72,
            nvlink_bandwidth_bytes_per_s: 900.0 * GB,
            nvlink_latency_ns: NVLINK_LATENCY_NS,
            nvswitch_count: 18,
        },
        // NVIDIA DGX SuperPOD GB200 RA: NDR (400 Gbps) InfiniBand compute
        // fabric, one ConnectX-7 per GPU (four per compute tray of four
        // GPUs); a scalable unit is 8 racks = 576 GPUs, which is the count
        // taken. 72 rails of 32-port leaves need 2,304 ports: 3 levels here.
        fabric: ndr_rails(72, 3),
        pcie: PcieSpec {
            // NVIDIA GB200 NVL72 specifications: each Grace CPU reaches its
            // two Blackwell GPUs through NVLink-C2C at 900 GB/s both
            // directions = 450 GB/s per direction, shared by the two GPUs.
            generation: "NVLink-C2C".into(),
            bandwidth_bytes_per_s: 450.0 * GB,
            gpus_per_host_link: 2,
            // Unsourced, as every other preset.
            latency_ns: 1000,
        },
        host_cpu: HostCpuSpec {
            // NVIDIA GB200 NVL72 specifications: 36 Grace CPUs of 72 Arm
            // Neoverse V2 cores (2,592 cores), up to 17 TB LPDDR5X at up to
            // 18.4 TB/s = 480 GB and 512 GB/s per Grace.
            name: "36 x NVIDIA Grace (72 Arm Neoverse V2 cores each)".into(),
            cores: 36 * 72,
            memory_bytes: 36 * 480_000_000_000,
            memory_bandwidth_bytes_per_s: 36.0 * 512.0 * GB,
        },
    }
}

/// Nodes of eight H100 PCIe cards whose GPUs talk over PCIe Gen5 (the NVLink
/// bridges between pairs are not used; see the module documentation).
fn h100_pcie_cluster(name: &str, nodes: u32) -> TopologySpec {
    TopologySpec {
        name: name.into(),
        nodes,
        gpu: datasheets::h100_pcie().gpu,
        node: NodeSpec {
            // Unsourced: NVIDIA publishes no reference 8-card H100 PCIe
            // server; eight cards, as the usual 8-GPU PCIe server, are taken.
            gpus_per_node: 8,
            // NVIDIA H100 datasheet, PCIe column: "NVLink: 600GB/s" through a
            // bridge between two cards, "PCIe Gen5: 128GB/s". Bridges pair
            // the cards only and the collective model has one intra-node
            // level: 0 here, the node's GPUs talk over PCIe.
            nvlink_bandwidth_bytes_per_s: 0.0,
            nvlink_latency_ns: NVLINK_LATENCY_NS,
            nvswitch_count: 0,
        },
        // Unsourced: eight 400 Gb/s NDR rails, as the DGX H100, so that the
        // node's inside is the only difference from `dgx-h100-superpod`.
        fabric: ndr_rails(8, 2),
        // The H100 datasheet's "PCIe Gen5: 128GB/s" both directions; the
        // line rate per direction of shared/HARDWARE.md, ~63 GB/s, as DGX
        // H100. Unsourced: two cards per PCIe switch, as DGX nodes.
        pcie: pcie_gen5(),
        host_cpu: HostCpuSpec {
            // Unsourced: no reference system; the DGX H100's host is taken
            // (dual Xeon Platinum 8480C, 112 cores, 2 TB; Intel ARK 8480+:
            // 8 channels of DDR5-4800 per socket).
            name: "2 x Intel Xeon Platinum 8480C".into(),
            cores: 112,
            memory_bytes: 2048 * GIB,
            memory_bandwidth_bytes_per_s: 2.0 * 307.2 * GB,
        },
    }
}

/// The presets of this module, in the order `clustersim presets` lists them.
pub(super) fn all() -> Vec<TopologySpec> {
    // 128 nodes = 1,024 GPUs: the 4-scalable-unit DGX SuperPOD of NVIDIA's
    // DGX H100 reference architecture (4 SU of 32 nodes; 127 DGX plus the
    // UFM appliance in its Table 7; 32 leaf and 16 spine QM9700, 2 tiers).
    vec![
        dgx_hopper(
            "dgx-h100-superpod",
            128,
            datasheets::h100_sxm().gpu,
            ndr_rails(8, 2),
        ),
        dgx_hopper(
            "dgx-h100-ib",
            128,
            datasheets::h100_sxm().gpu,
            ndr_rails_infiniband(8, 2),
        ),
        // The InfiniBand SuperPOD's 128 nodes, so that the two clusters
        // differ only in their fabric (unsourced as a RoCE cluster size: no
        // NVIDIA DGX H100 RoCE reference architecture was found to size it).
        dgx_hopper(
            "dgx-h100-roce",
            128,
            datasheets::h100_sxm().gpu,
            roce_spectrum4_rails(8),
        ),
        dgx_hopper(
            "dgx-h200-superpod",
            128,
            datasheets::h200_sxm().gpu,
            ndr_rails(8, 2),
        ),
        hgx_h800("hgx-h800", 256),
        dgx_b200("dgx-b200", 256),
        gb200_nvl72("gb200-nvl72", 8),
        h100_pcie_cluster("h100-pcie-cluster", 16),
    ]
}

/// H800 nodes as DeepSeek-V3's technical report (arXiv 2412.19437, Sec.
/// 3.1) describes its 2,048-GPU cluster: 8 GPUs per node on NVLink and
/// NVSwitch, InfiniBand across nodes with one 400 Gb/s NIC per GPU (the
/// report's 8 × 400 Gb/s IB per node, IB 50 GB/s in Sec. 3.2.2). The node is
/// otherwise a DGX H100's (NVSwitch chips, PCIe, host): unsourced, the report
/// describes neither; 2,048 NIC ports on radix-64 switches take 3 levels
/// here (the report does not give its fabric's shape).
fn hgx_h800(name: &str, nodes: u32) -> TopologySpec {
    let sheet = datasheets::h800_sxm();
    let mut spec = dgx_hopper(name, nodes, sheet.gpu, ndr_rails(8, 3));
    // The H800 datasheet entry: NVLink 400 GB/s both directions.
    spec.node.nvlink_bandwidth_bytes_per_s = sheet.nvlink_bandwidth_bytes_per_s;
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(name: &str) -> TopologySpec {
        crate::presets::preset(name).unwrap_or_else(|| panic!("no preset {name}"))
    }

    #[test]
    fn every_cluster_of_today_is_listed_and_validates() {
        let names = crate::presets::preset_names();
        for spec in all() {
            assert!(names.contains(&spec.name), "{}", spec.name);
            spec.validate().unwrap();
        }
        assert_eq!(all().len(), 8);
    }

    #[test]
    fn gpus_are_their_datasheet_entries() {
        let cases = [
            ("dgx-h100-superpod", "h100-sxm"),
            ("dgx-h100-ib", "h100-sxm"),
            ("dgx-h100-roce", "h100-sxm"),
            ("dgx-h200-superpod", "h200-sxm"),
            ("hgx-h800", "h800-sxm"),
            ("dgx-b200", "b200"),
            ("gb200-nvl72", "gb200"),
        ];
        for (preset, sheet_id) in cases {
            let spec = get(preset);
            let sheet = crate::datasheets::datasheets()
                .into_iter()
                .find(|d| d.id == sheet_id)
                .unwrap();
            assert_eq!(spec.gpu, sheet.gpu, "{preset}");
            // The node's NVLink is the GPU's datasheet NVLink.
            assert_eq!(
                spec.node.nvlink_bandwidth_bytes_per_s, sheet.nvlink_bandwidth_bytes_per_s,
                "{preset}"
            );
        }
    }

    #[test]
    fn nvlink_nic_and_node_numbers_are_the_documented_ones() {
        // (preset, nodes, GPUs per node, NVLink GB/s per direction, NICs per node, NVSwitch chips)
        let cases = [
            ("dgx-h100-superpod", 128, 8, 450.0, 8, 4),
            ("dgx-h100-ib", 128, 8, 450.0, 8, 4),
            ("dgx-h100-roce", 128, 8, 450.0, 8, 4),
            ("dgx-h200-superpod", 128, 8, 450.0, 8, 4),
            ("hgx-h800", 256, 8, 200.0, 8, 4),
            ("dgx-b200", 256, 8, 900.0, 8, 2),
            ("gb200-nvl72", 8, 72, 900.0, 72, 18),
        ];
        for (name, nodes, gpus, nvlink_gb_per_s, nics, nvswitches) in cases {
            let spec = get(name);
            assert_eq!(spec.nodes, nodes, "{name}");
            assert_eq!(spec.node.gpus_per_node, gpus, "{name}");
            assert_eq!(
                spec.node.nvlink_bandwidth_bytes_per_s,
                nvlink_gb_per_s * 1e9,
                "{name}"
            );
            assert_eq!(spec.node.nvswitch_count, nvswitches, "{name}");
            assert_eq!(spec.fabric.nics_per_node, nics, "{name}");
            // One 400 Gb/s NIC per GPU: 50 GB/s per direction.
            assert_eq!(spec.fabric.nic_bandwidth_bytes_per_s, 50e9, "{name}");
            assert_eq!(spec.fabric.nics_per_node, spec.node.gpus_per_node, "{name}");
        }
        assert_eq!(get("dgx-h100-superpod").total_gpus(), 1024);
        assert_eq!(get("dgx-b200").total_gpus(), 2048);
        assert_eq!(get("hgx-h800").total_gpus(), 2048);
        assert_eq!(get("gb200-nvl72").total_gpus(), 576);
        assert_eq!(get("dgx-h100-superpod").host_cpu.cores, 112);
        assert_eq!(get("gb200-nvl72").host_cpu.cores, 2592);
        assert_eq!(get("dgx-h100-superpod").pcie.bandwidth_bytes_per_s, 63e9);
    }

    #[test]
    fn every_fat_tree_holds_its_rail_optimized_nodes() {
        // The check `sim::network::Fabric::fat_tree_of` makes: rails × leaves
        // per rail × ports down per leaf within (radix/2)^levels.
        for spec in all() {
            let arity = spec.fabric.switch_radix as u64 / 2;
            let leaves_per_rail = (spec.nodes as u64).div_ceil(arity);
            let needed = spec.fabric.nics_per_node as u64 * leaves_per_rail * arity;
            let capacity = arity.pow(spec.fabric.fat_tree_levels);
            assert!(needed <= capacity, "{}: {needed} > {capacity}", spec.name);
        }
    }

    #[test]
    fn fabric_kinds_and_their_path_latencies() {
        // No kind on the presets that existed before the key: no latency read.
        for name in [
            "dgx-h100-superpod",
            "dgx-h200-superpod",
            "dgx-b200",
            "gb200-nvl72",
            "h100-pcie-cluster",
        ] {
            let spec = get(name);
            assert_eq!(spec.fabric.kind, None, "{name}");
            assert_eq!(spec.fabric.path_latency_ns(), None, "{name}");
        }
        let ib = get("dgx-h100-ib");
        let roce = get("dgx-h100-roce");
        assert_eq!(ib.fabric.kind, Some(FabricKind::Infiniband));
        assert_eq!(roce.fabric.kind, Some(FabricKind::RoceV2));
        // 2 NICs + (2 levels − 1) switches: 2·600 + 3·150 and 2·600 + 3·300.
        assert_eq!(ib.fabric.path_latency_ns(), Some(1650));
        assert_eq!(roce.fabric.path_latency_ns(), Some(2100));
        // The IB cluster is the SuperPOD with a kind; RoCE differs only in
        // the kind, the switch latency and the radix.
        let superpod = get("dgx-h100-superpod");
        assert_eq!(
            ib.fabric,
            FabricSpec {
                kind: Some(FabricKind::Infiniband),
                ..superpod.fabric.clone()
            }
        );
        assert_eq!(
            roce.fabric,
            FabricSpec {
                kind: Some(FabricKind::RoceV2),
                switch_hop_latency_ns: 300,
                switch_radix: 128,
                ..superpod.fabric.clone()
            }
        );
        assert_eq!(
            (roce.node.clone(), roce.pcie.clone()),
            (superpod.node, superpod.pcie)
        );
        assert_eq!(roce.fabric.nic_bandwidth_bytes_per_s, 50e9);
        assert_eq!(roce.total_gpus(), 1024);
    }

    #[test]
    fn the_h100_pcie_cluster_talks_over_pcie_inside_a_node() {
        let spec = get("h100-pcie-cluster");
        let sheet = crate::datasheets::h100_pcie();
        assert_eq!(spec.gpu, sheet.gpu);
        assert_eq!(spec.gpu.name, "H100-PCIe-80GB");
        // The bridge (300 GB/s per direction per pair) is in the datasheet,
        // not in the node: no NVLink level, PCIe Gen5 x16 at 63 GB/s.
        assert_eq!(sheet.nvlink_bandwidth_bytes_per_s, 300e9);
        assert_eq!(spec.node.nvlink_bandwidth_bytes_per_s, 0.0);
        assert_eq!(spec.node.nvswitch_count, 0);
        assert_eq!(spec.pcie.bandwidth_bytes_per_s, 63e9);
        assert_eq!((spec.nodes, spec.node.gpus_per_node), (16, 8));
        assert_eq!(spec.fabric.nics_per_node, 8);
        assert_eq!(spec.fabric.nic_bandwidth_bytes_per_s, 50e9);
    }

    #[test]
    fn a_kind_with_an_absurd_latency_is_refused_naming_the_keys() {
        let mut spec = get("dgx-h100-roce");
        spec.fabric.switch_hop_latency_ns = u64::MAX / 2;
        let err = spec.validate().unwrap_err().to_string();
        assert!(err.contains("fabric.kind roce_v2"), "{err}");
        assert!(err.contains("fabric.switch_hop_latency_ns"), "{err}");
        spec.fabric.switch_hop_latency_ns = 300;
        spec.fabric.nic_latency_ns = 600_000;
        assert!(spec.validate().is_err());
        // Without a kind the same numbers are not read, hence not refused.
        spec.fabric.kind = None;
        spec.validate().unwrap();
        // A negative NVLink rate is refused; 0 (PCIe only) is not.
        let mut pcie = get("h100-pcie-cluster");
        pcie.validate().unwrap();
        pcie.node.nvlink_bandwidth_bytes_per_s = -1.0;
        let err = pcie.validate().unwrap_err().to_string();
        assert!(err.contains("node.nvlink_bandwidth_bytes_per_s"), "{err}");
    }
}
