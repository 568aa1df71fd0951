//! GPU datasheets: what each GPU can do at most, with the source of every
//! number, and which driver device names ("NVIDIA H100 80GB HBM3", "Tesla
//! V100-SXM2-32GB", …) each one describes.
//!
//! Peaks are dense (NVIDIA's datasheets print tensor-core figures with 2:4
//! sparsity; those are halved here). Bandwidths are per direction. The
//! topology presets take their GPU from here, and `calibrate` divides what it
//! measures by these numbers; a device name that matches no entry has no
//! datasheet (never another GPU's).
//!
//! | id | GPU | dense bf16 | HBM | bandwidth | SMs | L2 | boost |
//! |---|---|---|---|---|---|---|---|
//! | `v100-sxm2-32gb` | V100-SXM2-32GB | 125 (fp16) | 32 GiB | 900 GB/s | 80 | 6 MiB | 1530 MHz |
//! | `v100-sxm3-32gb` | V100-SXM3-32GB | 125 (fp16) | 32 GiB | 900 GB/s | 80 | 6 MiB | 1530 MHz |
//! | `a100-sxm4-40gb` | A100-SXM4-40GB | 312 | 40 GiB | 1555 GB/s | 108 | 40 MiB | 1410 MHz |
//! | `a100-sxm4-80gb` | A100-SXM4-80GB | 312 | 80 GiB | 2039 GB/s | 108 | 40 MiB | 1410 MHz |
//! | `h100-sxm` | H100-SXM5-80GB | 989 | 80 GiB | 3350 GB/s | 132 | 50 MiB | 1980 MHz |
//! | `h100-pcie` | H100-PCIe-80GB | 756 | 80 GiB | 2000 GB/s | 114 | 50 MiB | 1755 MHz |
//! | `h800-sxm` | H800-SXM5-80GB | 989 | 80 GiB | 3350 GB/s | 132 | 50 MiB | 1980 MHz |
//! | `h200-sxm` | H200 | 989 | 141 GB | 4800 GB/s | 132 | 60 MiB | 1980 MHz |
//! | `b200` | B200 | 2250 | 180 GB | 8000 GB/s | 148 | 126.5 MiB | 1965 MHz |
//! | `gb200` | GB200 | 2500 | 186 GB | 8000 GB/s | 148 | 126.5 MiB | 1965 MHz |
//!
//! The Blackwell entries live in `datasheets/blackwell.rs`, the H800 in
//! `datasheets/h800.rs`.

use crate::spec::{GpuSpec, PeakFlops};

mod blackwell;
mod h800;
pub(crate) use blackwell::{b200, gb200};
pub(crate) use h800::h800_sxm;

const GB: f64 = 1e9;
const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// Every number of a [`Datasheet`] by the name its source is filed under.
pub const DATASHEET_FIELDS: [&str; 11] = [
    "peak.fp16_flops_per_s",
    "peak.fp8_flops_per_s",
    "peak.bf16_flops_per_s",
    "peak.tf32_flops_per_s",
    "peak.fp32_flops_per_s",
    "hbm_bytes",
    "hbm_bandwidth_bytes_per_s",
    "sm_count",
    "l2_cache_bytes",
    "boost_clock_mhz",
    "nvlink_bandwidth_bytes_per_s",
];

/// Where one number of a datasheet comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSource {
    /// One of [`DATASHEET_FIELDS`].
    pub field: &'static str,
    /// The document (and, where it helps, the arithmetic) it was taken from.
    pub source: &'static str,
}

/// One GPU model's published limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Datasheet {
    /// Short name: "h100-sxm".
    pub id: &'static str,
    /// Names the driver gives this GPU, compared by [`normalize_device_name`].
    pub device_names: &'static [&'static str],
    /// "Volta", "Ampere", "Hopper", "Blackwell".
    pub architecture: &'static str,
    /// The GPU as topologies describe it (its `name` is what profiles name).
    pub gpu: GpuSpec,
    /// NVLink bandwidth per GPU per direction, all links together.
    pub nvlink_bandwidth_bytes_per_s: f64,
    /// The source of every field in [`DATASHEET_FIELDS`].
    pub sources: Vec<FieldSource>,
}

impl Datasheet {
    /// The source of `field` (one of [`DATASHEET_FIELDS`]).
    pub fn source_of(&self, field: &str) -> Option<&'static str> {
        self.sources
            .iter()
            .find(|s| s.field == field)
            .map(|s| s.source)
    }

    /// Dense tensor-core peak for a GEMM input type ("bf16", "fp16").
    pub fn peak_flops_per_s(&self, dtype: &str) -> Option<f64> {
        match dtype {
            "bf16" => Some(self.gpu.peak.bf16_flops_per_s),
            "fp8" => self.gpu.peak.fp8_flops_per_s,
            "fp16" => Some(self.gpu.peak.fp16_flops_per_s),
            "tf32" => Some(self.gpu.peak.tf32_flops_per_s),
            "fp32" => Some(self.gpu.peak.fp32_flops_per_s),
            _ => None,
        }
    }
}

/// Files one source under several fields.
fn cite(fields: &[&'static str], source: &'static str) -> Vec<FieldSource> {
    fields
        .iter()
        .map(|&field| FieldSource { field, source })
        .collect()
}

const PEAKS: [&str; 4] = [
    "peak.fp16_flops_per_s",
    "peak.bf16_flops_per_s",
    "peak.tf32_flops_per_s",
    "peak.fp32_flops_per_s",
];

const NO_FP8: &str = "no FP8 tensor cores before Hopper (NVIDIA H100 Tensor Core GPU Architecture whitepaper: FP8 is new in the fourth-generation tensor cores); absent";
const V100_DATASHEET: &str = "NVIDIA Tesla V100 datasheet (V100 SXM2 column): tensor 125 TFLOP/s, single precision 15.7 TFLOP/s, 32 GB HBM2 at 900 GB/s, NVLink 300 GB/s (both directions); Volta has no bf16 or tf32 tensor cores, so bf16 is given the fp16 rate (the best case) and tf32 the fp32 rate";
const VOLTA_WHITEPAPER: &str = "NVIDIA Tesla V100 GPU Architecture whitepaper (Volta): Tesla V100 SXM2 with 80 SMs, 6144 KB L2, 1530 MHz boost clock";

fn v100(
    id: &'static str,
    name: &str,
    device_names: &'static [&'static str],
    clock_source: &'static str,
) -> Datasheet {
    Datasheet {
        id,
        device_names,
        architecture: "Volta",
        gpu: GpuSpec {
            name: name.into(),
            peak: PeakFlops {
                fp16_flops_per_s: 125e12,
                fp8_flops_per_s: None,
                bf16_flops_per_s: 125e12,
                tf32_flops_per_s: 15.7e12,
                fp32_flops_per_s: 15.7e12,
            },
            hbm_bytes: 32 * GIB,
            hbm_bandwidth_bytes_per_s: 900.0 * GB,
            sm_count: 80,
            l2_cache_bytes: 6 * MIB,
            boost_clock_mhz: 1530,
        },
        nvlink_bandwidth_bytes_per_s: 150.0 * GB,
        sources: [
            cite(&PEAKS, V100_DATASHEET),
            cite(&["peak.fp8_flops_per_s"], NO_FP8),
            cite(&["hbm_bytes", "hbm_bandwidth_bytes_per_s"], V100_DATASHEET),
            cite(&["sm_count", "l2_cache_bytes"], VOLTA_WHITEPAPER),
            cite(&["boost_clock_mhz"], clock_source),
            cite(
                &["nvlink_bandwidth_bytes_per_s"],
                "NVIDIA Tesla V100 datasheet: NVLink 2, 6 links, 300 GB/s both directions = 150 GB/s per direction (shared/HARDWARE.md: DGX-2 150 GB/s per direction per GPU)",
            ),
        ]
        .concat(),
    }
}

/// Tesla V100 SXM2 32 GB (DGX-1 class).
pub(crate) fn v100_sxm2_32gb() -> Datasheet {
    v100(
        "v100-sxm2-32gb",
        "V100-SXM2-32GB",
        &["V100-SXM2-32GB"],
        VOLTA_WHITEPAPER,
    )
}

/// Tesla V100 SXM3 32 GB (DGX-2, the ZeRO-Offload paper's machine).
pub(crate) fn v100_sxm3_32gb() -> Datasheet {
    v100(
        "v100-sxm3-32gb",
        "V100-SXM3-32GB",
        &["V100-SXM3-32GB"],
        "the DGX-2's SXM3 board has no datasheet of its own: the Volta whitepaper's Tesla V100 SXM2 boost clock (1530 MHz) is used; the SXM3 board may boost higher",
    )
}

const A100_DATASHEET: &str = "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), SXM column: fp16 and bf16 tensor 312 TFLOP/s, tf32 156, fp32 19.5 (dense)";
const AMPERE_WHITEPAPER: &str = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (Ampere): 108 SMs, 40 MB L2 (40960 KB), 1410 MHz boost clock; the same on the 80 GB board";
const A100_NVLINK: &str = "NVIDIA A100 datasheet: NVLink 3, 600 GB/s both directions = 12 links x 25 GB/s = 300 GB/s per direction (shared/HARDWARE.md)";

fn a100(
    id: &'static str,
    name: &str,
    device_names: &'static [&'static str],
    memory: Memory,
) -> Datasheet {
    Datasheet {
        id,
        device_names,
        architecture: "Ampere",
        gpu: GpuSpec {
            name: name.into(),
            peak: PeakFlops {
                fp16_flops_per_s: 312e12,
                fp8_flops_per_s: None,
                bf16_flops_per_s: 312e12,
                tf32_flops_per_s: 156e12,
                fp32_flops_per_s: 19.5e12,
            },
            hbm_bytes: memory.bytes,
            hbm_bandwidth_bytes_per_s: memory.bandwidth_bytes_per_s,
            sm_count: 108,
            l2_cache_bytes: 40 * MIB,
            boost_clock_mhz: 1410,
        },
        nvlink_bandwidth_bytes_per_s: 300.0 * GB,
        sources: [
            cite(&PEAKS, A100_DATASHEET),
            cite(&["peak.fp8_flops_per_s"], NO_FP8),
            cite(&["hbm_bytes", "hbm_bandwidth_bytes_per_s"], memory.source),
            cite(
                &["sm_count", "l2_cache_bytes", "boost_clock_mhz"],
                AMPERE_WHITEPAPER,
            ),
            cite(&["nvlink_bandwidth_bytes_per_s"], A100_NVLINK),
        ]
        .concat(),
    }
}

/// HBM size and bandwidth with their source.
struct Memory {
    bytes: u64,
    bandwidth_bytes_per_s: f64,
    source: &'static str,
}

/// A100 SXM4 40 GB (the launch board).
pub(crate) fn a100_sxm4_40gb() -> Datasheet {
    a100(
        "a100-sxm4-40gb",
        "A100-SXM4-40GB",
        &["A100-SXM4-40GB"],
        Memory {
            bytes: 40 * GIB,
            bandwidth_bytes_per_s: 1555.0 * GB,
            source: "NVIDIA A100 datasheet: A100 40GB SXM, 40 GB HBM2 at 1,555 GB/s (40960 MiB as the driver reports it)",
        },
    )
}

/// A100 SXM4 80 GB (DGX A100 80 GB, Selene).
pub(crate) fn a100_sxm4_80gb() -> Datasheet {
    a100(
        "a100-sxm4-80gb",
        "A100-SXM4-80GB",
        &["A100-SXM4-80GB"],
        Memory {
            bytes: 80 * GIB,
            bandwidth_bytes_per_s: 2039.0 * GB,
            source: "NVIDIA A100 datasheet: A100 80GB SXM, 80 GB HBM2e at 2,039 GB/s (81920 MiB as the driver reports it)",
        },
    )
}

const H100_DATASHEET: &str = "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: bf16 and fp16 tensor 1,979 TFLOP/s and tf32 989 with sparsity (989 and 494 dense), fp32 67 TFLOP/s; dense peak = 132 SMs x 4096 FLOP/clock x 1830 MHz = 989.4 TFLOP/s";
const H100_PCIE_DATASHEET: &str = "NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column: bf16 and fp16 tensor 1,513 TFLOP/s and tf32 756 with sparsity (756 and 378 dense), fp32 51 TFLOP/s";
const HOPPER_WHITEPAPER: &str = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (Hopper): 132 SMs on H100 SXM5, 114 on H100 PCIe, 50 MB L2 on both";

/// H100 SXM5 80 GB (DGX/HGX H100; the lab's "NVIDIA H100 80GB HBM3").
pub(crate) fn h100_sxm() -> Datasheet {
    Datasheet {
        id: "h100-sxm",
        device_names: &["H100 80GB HBM3"],
        architecture: "Hopper",
        gpu: GpuSpec {
            name: "H100-SXM5-80GB".into(),
            peak: PeakFlops {
                fp16_flops_per_s: 989e12,
                fp8_flops_per_s: Some(1979e12),
                bf16_flops_per_s: 989e12,
                tf32_flops_per_s: 494e12,
                fp32_flops_per_s: 67e12,
            },
            hbm_bytes: 80 * GIB,
            hbm_bandwidth_bytes_per_s: 3350.0 * GB,
            sm_count: 132,
            l2_cache_bytes: 50 * MIB,
            boost_clock_mhz: 1980,
        },
        nvlink_bandwidth_bytes_per_s: 450.0 * GB,
        sources: [
            cite(&PEAKS, H100_DATASHEET),
            cite(
                &["peak.fp8_flops_per_s"],
                "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: FP8 tensor 3,958 TFLOP/s with sparsity (1,979 dense, twice the bf16 rate)",
            ),
            cite(
                &["hbm_bytes", "hbm_bandwidth_bytes_per_s"],
                "NVIDIA H100 datasheet, H100 SXM column: 80 GB HBM3 at 3.35 TB/s (taken as 80 GiB like the A100 80GB; the driver reports 81559 MiB on the lab H100)",
            ),
            cite(&["sm_count", "l2_cache_bytes"], HOPPER_WHITEPAPER),
            cite(
                &["boost_clock_mhz"],
                "maximum SM clock: nvidia-smi application clocks 1980 MHz on the lab H100 (driver 580.159.04); NVIDIA's dense peaks are computed at 1830 MHz",
            ),
            cite(
                &["nvlink_bandwidth_bytes_per_s"],
                "NVIDIA H100 datasheet: NVLink 4, 900 GB/s both directions = 18 links, 450 GB/s per direction",
            ),
        ]
        .concat(),
    }
}

/// H100 PCIe 80 GB.
pub(crate) fn h100_pcie() -> Datasheet {
    Datasheet {
        id: "h100-pcie",
        device_names: &["H100 PCIe"],
        architecture: "Hopper",
        gpu: GpuSpec {
            name: "H100-PCIe-80GB".into(),
            peak: PeakFlops {
                fp16_flops_per_s: 756e12,
                fp8_flops_per_s: Some(1513e12),
                bf16_flops_per_s: 756e12,
                tf32_flops_per_s: 378e12,
                fp32_flops_per_s: 51e12,
            },
            hbm_bytes: 80 * GIB,
            hbm_bandwidth_bytes_per_s: 2000.0 * GB,
            sm_count: 114,
            l2_cache_bytes: 50 * MIB,
            boost_clock_mhz: 1755,
        },
        nvlink_bandwidth_bytes_per_s: 300.0 * GB,
        sources: [
            cite(&PEAKS, H100_PCIE_DATASHEET),
            cite(
                &["peak.fp8_flops_per_s"],
                "NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column: FP8 tensor 3,026 TFLOP/s with sparsity (1,513 dense)",
            ),
            cite(
                &["hbm_bytes", "hbm_bandwidth_bytes_per_s"],
                "NVIDIA H100 datasheet, H100 PCIe column: 80 GB HBM2e at 2 TB/s (taken as 80 GiB)",
            ),
            cite(&["sm_count", "l2_cache_bytes"], HOPPER_WHITEPAPER),
            cite(
                &["boost_clock_mhz"],
                "NVIDIA H100 PCIe GPU product brief (PB-11133-001): maximum boost clock 1,755 MHz",
            ),
            cite(
                &["nvlink_bandwidth_bytes_per_s"],
                "NVIDIA H100 datasheet, H100 PCIe column: NVLink bridge 600 GB/s both directions = 300 GB/s per direction, between bridged pairs only",
            ),
        ]
        .concat(),
    }
}

/// H200 SXM 141 GB (the lab H200, "NVIDIA H200").
pub(crate) fn h200_sxm() -> Datasheet {
    Datasheet {
        id: "h200-sxm",
        device_names: &["H200"],
        architecture: "Hopper",
        gpu: GpuSpec {
            name: "H200".into(),
            peak: PeakFlops {
                fp16_flops_per_s: 989e12,
                fp8_flops_per_s: Some(1979e12),
                bf16_flops_per_s: 989e12,
                tf32_flops_per_s: 494e12,
                fp32_flops_per_s: 67e12,
            },
            hbm_bytes: 141_000_000_000,
            hbm_bandwidth_bytes_per_s: 4800.0 * GB,
            sm_count: 132,
            l2_cache_bytes: 60 * MIB,
            boost_clock_mhz: 1980,
        },
        nvlink_bandwidth_bytes_per_s: 450.0 * GB,
        sources: [
            cite(
                &PEAKS,
                "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column: bf16 and fp16 tensor 1,979 TFLOP/s and tf32 989 with sparsity (989 and 494 dense), fp32 67 TFLOP/s (shared/HARDWARE.md: same as H100 SXM)",
            ),
            cite(
                &["peak.fp8_flops_per_s"],
                "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column: FP8 tensor 3,958 TFLOP/s with sparsity (1,979 dense)",
            ),
            cite(
                &["hbm_bytes", "hbm_bandwidth_bytes_per_s"],
                "NVIDIA H200 datasheet: 141 GB HBM3e at 4.8 TB/s (shared/HARDWARE.md)",
            ),
            cite(
                &["sm_count", "l2_cache_bytes"],
                "the lab H200 as PyTorch reports it: 132 SMs, 60 MB L2 (shared/HARDWARE.md)",
            ),
            cite(
                &["boost_clock_mhz"],
                "SM clock nvidia-smi read just after 8192^3 GEMMs on the lab H200: 1980 MHz",
            ),
            cite(
                &["nvlink_bandwidth_bytes_per_s"],
                "NVIDIA H200 datasheet: NVLink 900 GB/s both directions = 450 GB/s per direction (shared/HARDWARE.md)",
            ),
        ]
        .concat(),
    }
}

/// Every catalogued GPU, oldest first.
pub fn datasheets() -> Vec<Datasheet> {
    vec![
        v100_sxm2_32gb(),
        v100_sxm3_32gb(),
        a100_sxm4_40gb(),
        a100_sxm4_80gb(),
        h100_sxm(),
        h100_pcie(),
        h800_sxm(),
        h200_sxm(),
        b200(),
        gb200(),
    ]
}

/// The datasheet of the GPU topologies and profiles call `gpu_name`
/// ("H100-SXM5-80GB", "H200", …).
pub fn datasheet(gpu_name: &str) -> Option<Datasheet> {
    datasheets().into_iter().find(|d| d.gpu.name == gpu_name)
}

/// A driver device name compared case-insensitively, without the vendor
/// prefixes drivers add ("NVIDIA ", "Tesla ") and with runs of spaces as one.
pub fn normalize_device_name(device_name: &str) -> String {
    let upper = device_name
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_uppercase();
    let mut rest = upper.as_str();
    for prefix in ["NVIDIA ", "TESLA "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    rest.to_string()
}

/// The datasheet for a driver device name ("NVIDIA H100 80GB HBM3"), matched
/// exactly after [`normalize_device_name`]: variants with other limits
/// ("NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA A100 80GB PCIe", MIG
/// slices) match nothing rather than a near namesake.
pub fn datasheet_for_device(device_name: &str) -> Option<Datasheet> {
    let wanted = normalize_device_name(device_name);
    datasheets().into_iter().find(|d| {
        d.device_names
            .iter()
            .any(|name| normalize_device_name(name) == wanted)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_device_names_map_to_their_own_datasheet() {
        let cases = [
            ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"),
            ("NVIDIA H100 PCIe", "H100-PCIe-80GB"),
            ("NVIDIA H200", "H200"),
            ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
            ("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"),
            ("NVIDIA B200", "B200"),
            ("NVIDIA GB200", "GB200"),
            ("Tesla V100-SXM2-32GB", "V100-SXM2-32GB"),
            ("Tesla V100-SXM3-32GB", "V100-SXM3-32GB"),
            ("  nvidia   h100 80gb hbm3 ", "H100-SXM5-80GB"),
        ];
        for (device, gpu) in cases {
            let found = datasheet_for_device(device).map(|d| d.gpu.name);
            assert_eq!(found.as_deref(), Some(gpu), "{device}");
        }
        assert_eq!(
            datasheet_for_device("NVIDIA H100 80GB HBM3")
                .unwrap()
                .gpu
                .peak
                .bf16_flops_per_s,
            989e12
        );
        assert_eq!(
            datasheet_for_device("NVIDIA H100 80GB HBM3")
                .unwrap()
                .gpu
                .hbm_bandwidth_bytes_per_s,
            3350e9
        );
    }

    #[test]
    fn near_namesakes_and_unknown_gpus_have_no_datasheet() {
        for device in [
            "NVIDIA H100 NVL",
            "NVIDIA H200 NVL",
            "NVIDIA A100 80GB PCIe",
            "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
            "NVIDIA GeForce RTX 4090",
            "Tesla V100-SXM2-16GB",
            "",
        ] {
            assert!(datasheet_for_device(device).is_none(), "{device}");
        }
    }

    #[test]
    fn every_number_has_a_source_and_ids_and_names_are_unique() {
        let all = datasheets();
        for sheet in &all {
            for field in DATASHEET_FIELDS {
                let source = sheet.source_of(field);
                assert!(
                    source.is_some_and(|s| s.len() > 20),
                    "{} has no source for {field}",
                    sheet.id
                );
            }
            for source in &sheet.sources {
                assert!(
                    DATASHEET_FIELDS.contains(&source.field),
                    "{}: unknown field {}",
                    sheet.id,
                    source.field
                );
            }
            let gpu = &sheet.gpu;
            assert!(gpu.peak.bf16_flops_per_s >= gpu.peak.tf32_flops_per_s);
            assert!(gpu.peak.tf32_flops_per_s >= gpu.peak.fp32_flops_per_s);
            assert!(gpu.hbm_bandwidth_bytes_per_s > sheet.nvlink_bandwidth_bytes_per_s);
            assert!(gpu.sm_count > 0 && gpu.l2_cache_bytes > 0 && gpu.boost_clock_mhz > 0);
            assert_eq!(datasheet(&gpu.name).unwrap().id, sheet.id);
        }
        let mut ids: Vec<_> = all.iter().map(|d| d.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
        let mut names: Vec<_> = all
            .iter()
            .flat_map(|d| d.device_names.iter().map(|n| normalize_device_name(n)))
            .collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a device name maps to two datasheets");
    }

    #[test]
    fn dense_hopper_peak_follows_from_sms_and_tensor_clock() {
        let h100 = h100_sxm();
        let at_1830_mhz = h100.gpu.sm_count as f64 * 4096.0 * 1830e6;
        assert!((at_1830_mhz - h100.gpu.peak.bf16_flops_per_s).abs() / at_1830_mhz < 1e-3);
        let a100 = a100_sxm4_80gb();
        let at_boost = a100.gpu.sm_count as f64 * 2048.0 * a100.gpu.boost_clock_mhz as f64 * 1e6;
        assert!((at_boost - a100.gpu.peak.bf16_flops_per_s).abs() / at_boost < 1e-3);
        assert_eq!(h100.peak_flops_per_s("fp16"), Some(989e12));
        assert_eq!(h100.peak_flops_per_s("int8"), None);
    }
}
