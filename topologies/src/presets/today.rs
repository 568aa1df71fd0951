//! Clusters of today: DGX H100/H200 SuperPODs, an HGX H800 cluster as
//! DeepSeek-V3 trained on, DGX B200 and GB200 NVL72
//! (InfiniBand; a RoCE fabric is not offered: the switch and NIC latencies a
//! fabric's kind changes are not yet read by the cost model, whose per-step
//! network latency is the profile's). Every number carries
//! its source in a comment; a number no document we could find states is
//! marked "unsourced" with what was taken instead.
//!
//! | preset | GPUs | nodes × GPUs | NVLink per GPU per direction | scale-out per GPU | switches |
//! |---|---|---|---|---|---|
//! | `dgx-h100-superpod` | H100 SXM5 80 GB | 128 × 8 = 1,024 | 450 GB/s (NVLink 4) | 400 Gb/s NDR IB | QM9700, radix 64, 2 levels |
//! | `dgx-h200-superpod` | H200 141 GB | 128 × 8 = 1,024 | 450 GB/s (NVLink 4) | 400 Gb/s NDR IB | QM9700, radix 64, 2 levels |
//! | `hgx-h800` | H800 SXM5 80 GB | 256 × 8 = 2,048 | 200 GB/s (NVLink 4, cut) | 400 Gb/s NDR IB | QM9700, radix 64, 3 levels |
//! | `dgx-b200` | B200 | 256 × 8 = 2,048 | 900 GB/s (NVLink 5) | 400 Gb/s NDR IB | QM9700, radix 64, 3 levels |
//! | `gb200-nvl72` | GB200 | 8 × 72 = 576 | 900 GB/s (NVLink 5) | 400 Gb/s NDR IB | QM9700, radix 64, 3 levels |
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

/// Eight ConnectX-7 compute NICs at 400 Gb/s on a Quantum-2 QM9700 fat tree.
fn ndr_rails(nics_per_node: u32, fat_tree_levels: u32) -> FabricSpec {
    FabricSpec {
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
        switch_hop_latency_ns: 150,
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
            "dgx-h200-superpod",
            128,
            datasheets::h200_sxm().gpu,
            ndr_rails(8, 2),
        ),
        hgx_h800("hgx-h800", 256),
        dgx_b200("dgx-b200", 256),
        gb200_nvl72("gb200-nvl72", 8),
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
        crate::preset(name).unwrap_or_else(|| panic!("no preset {name}"))
    }

    #[test]
    fn every_cluster_of_today_is_listed_and_validates() {
        let names = crate::preset_names();
        for spec in all() {
            assert!(names.contains(&spec.name), "{}", spec.name);
            spec.validate().unwrap();
        }
        assert_eq!(all().len(), 5);
    }

    #[test]
    fn gpus_are_their_datasheet_entries() {
        let cases = [
            ("dgx-h100-superpod", "h100-sxm"),
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
}
