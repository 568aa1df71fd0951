//! Built-in clusters, from the datasheet figures in shared/HARDWARE.md (each
//! GPU from the catalogue in [`crate::datasheets`]):
//! - `selene`: DGX A100 80 GB nodes, 8 × HDR 200 Gb/s compute NICs per node,
//!   three-level fat tree of 40-port HDR switches (QM8700: 130 ns port to port),
//!   560 nodes = 4480 GPUs (Megatron-LM SC21 uses up to 3072).
//! - `dgx-a100`: one such node.
//! - `dgx2-v100`: one DGX-2 (16 × V100 32 GB on NVSwitch, PCIe Gen3, 2 × Xeon 8168),
//!   the ZeRO-Offload paper's machine; `dgx2-v100-x8`: 8 of them on 8 × EDR 100 Gb/s per node.
//! - `h200`, `h100`: the single-GPU lab machine (16 cores, 128 GiB) with an
//!   H200 or an H100 SXM in it.
//! - clusters of today (`today.rs`, each number sourced there):
//!   `dgx-h100-superpod`, `dgx-h200-superpod` (128 DGX nodes, 8 × 400 Gb/s
//!   NDR rails, NVLink 4 through NVSwitch), `dgx-h100-ib` and `dgx-h100-roce`
//!   (the same nodes on a fabric of declared kind, InfiniBand or RoCEv2 on
//!   Spectrum-4, whose NIC and switch latencies are costed), `dgx-b200` (256
//!   DGX B200 nodes), `gb200-nvl72` (8 racks of one 72-GPU NVLink 5 domain
//!   each) and `h100-pcie-cluster` (16 nodes of 8 H100 PCIe over PCIe Gen5).

use crate::datasheets;
use crate::spec::*;

mod today;

const GB: f64 = 1e9;
const GIB: u64 = 1 << 30;

fn dgx_a100(name: &str, nodes: u32) -> TopologySpec {
    TopologySpec {
        name: name.into(),
        nodes,
        gpu: datasheets::a100_sxm4_80gb().gpu,
        node: NodeSpec {
            gpus_per_node: 8,
            nvlink_bandwidth_bytes_per_s: 300.0 * GB,
            nvlink_latency_ns: 1000,
            nvswitch_count: 6,
        },
        fabric: FabricSpec {
            kind: None,
            nics_per_node: 8,
            nic_bandwidth_bytes_per_s: 25.0 * GB, // HDR 200 Gb/s line rate
            nic_latency_ns: 600,                  // ConnectX-6 datasheet: sub-600 ns
            fat_tree_levels: 3,
            switch_radix: 40,
            switch_hop_latency_ns: 130,
        },
        pcie: PcieSpec {
            generation: "Gen4 x16".into(),
            bandwidth_bytes_per_s: 31.5 * GB,
            gpus_per_host_link: 2, // DGX A100: two GPUs per PCIe switch
            latency_ns: 1000,
        },
        host_cpu: HostCpuSpec {
            name: "2 x AMD EPYC 7742".into(),
            cores: 128,
            memory_bytes: 2048 * GIB,
            memory_bandwidth_bytes_per_s: 2.0 * 204.8 * GB, // 8 × DDR4-3200 per socket
        },
    }
}

fn dgx2_v100(name: &str, nodes: u32) -> TopologySpec {
    TopologySpec {
        name: name.into(),
        nodes,
        gpu: datasheets::v100_sxm3_32gb().gpu,
        node: NodeSpec {
            gpus_per_node: 16,
            nvlink_bandwidth_bytes_per_s: 150.0 * GB,
            nvlink_latency_ns: 1000,
            nvswitch_count: 12,
        },
        fabric: FabricSpec {
            kind: None,
            nics_per_node: 8,
            nic_bandwidth_bytes_per_s: 12.5 * GB, // 100 Gb/s
            nic_latency_ns: 600,
            fat_tree_levels: 2,
            switch_radix: 36,
            switch_hop_latency_ns: 130,
        },
        pcie: PcieSpec {
            generation: "Gen3 x16".into(),
            bandwidth_bytes_per_s: 16.0 * GB,
            gpus_per_host_link: 2,
            latency_ns: 1000,
        },
        host_cpu: HostCpuSpec {
            name: "2 x Intel Xeon Platinum 8168".into(),
            cores: 48,
            memory_bytes: 1536 * GIB,
            memory_bandwidth_bytes_per_s: 2.0 * 127.968 * GB, // 6 × DDR4-2666 per socket
        },
    }
}

/// The single-GPU lab machine (16 cores, 128 GiB) with `gpu` in it.
fn lab_machine(name: &str, gpu: GpuSpec) -> TopologySpec {
    TopologySpec {
        name: name.into(),
        nodes: 1,
        gpu,
        node: NodeSpec {
            gpus_per_node: 1,
            nvlink_bandwidth_bytes_per_s: 450.0 * GB,
            nvlink_latency_ns: 1000,
            nvswitch_count: 0,
        },
        fabric: FabricSpec {
            kind: None,
            nics_per_node: 0,
            nic_bandwidth_bytes_per_s: 0.0,
            nic_latency_ns: 0,
            fat_tree_levels: 0,
            switch_radix: 0,
            switch_hop_latency_ns: 0,
        },
        pcie: PcieSpec {
            generation: "Gen5 x16".into(),
            bandwidth_bytes_per_s: 63.0 * GB,
            gpus_per_host_link: 1,
            latency_ns: 1000,
        },
        host_cpu: HostCpuSpec {
            name: "lab host (16 cores)".into(),
            cores: 16,
            memory_bytes: 128 * GIB,
            memory_bandwidth_bytes_per_s: 200.0 * GB,
        },
    }
}

fn all() -> Vec<TopologySpec> {
    vec![
        dgx_a100("selene", 560),
        dgx_a100("dgx-a100", 1),
        dgx2_v100("dgx2-v100", 1),
        dgx2_v100("dgx2-v100-x8", 8),
        lab_machine("h100", datasheets::h100_sxm().gpu),
        lab_machine("h200", datasheets::h200_sxm().gpu),
    ]
    .into_iter()
    .chain(today::all())
    .collect()
}

/// The preset with this name, if any.
pub fn preset(name: &str) -> Option<TopologySpec> {
    all().into_iter().find(|spec| spec.name == name)
}

/// Names of all presets.
pub fn preset_names() -> Vec<String> {
    all().into_iter().map(|spec| spec.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_validates_and_round_trips_through_json() {
        for name in preset_names() {
            let spec = preset(&name).unwrap();
            spec.validate().unwrap();
            let text = serde_json::to_string_pretty(&spec).unwrap();
            assert_eq!(TopologySpec::from_json_str(&text, "test").unwrap(), spec);
        }
    }

    #[test]
    fn every_preset_gpu_is_its_catalogued_datasheet() {
        for name in preset_names() {
            let gpu = preset(&name).unwrap().gpu;
            let sheet = crate::datasheets::datasheet(&gpu.name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(sheet.gpu, gpu, "{name}");
        }
        assert_eq!(preset("h100").unwrap().gpu.name, "H100-SXM5-80GB");
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let mut value = serde_json::to_value(preset("h200").unwrap()).unwrap();
        value["gpu"]["hbm_gigabytes"] = 141.into();
        let err = TopologySpec::from_json_str(&value.to_string(), "x.json").unwrap_err();
        assert!(err.to_string().contains("hbm_gigabytes"), "{err}");
    }
}
