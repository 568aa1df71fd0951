//! Blackwell datasheets: the B200 of DGX/HGX B200 and the Blackwell GPU of a
//! GB200 superchip (GB200 NVL72), each number with its source. Split from
//! `datasheets.rs` to keep files short; the catalogue lists them.

use super::{cite, Datasheet, GB, MIB, PEAKS};
use crate::spec::{GpuSpec, PeakFlops};

/// B200 (HGX/DGX B200, 1000 W).
pub(crate) fn b200() -> Datasheet {
    Datasheet {
        id: "b200",
        device_names: &["B200"],
        architecture: "Blackwell",
        gpu: GpuSpec {
            name: "B200".into(),
            peak: PeakFlops {
                fp16_flops_per_s: 2250e12,
                fp8_flops_per_s: Some(4500e12),
                bf16_flops_per_s: 2250e12,
                tf32_flops_per_s: 1100e12,
                fp32_flops_per_s: 80e12,
            },
            hbm_bytes: 180_000_000_000,
            hbm_bandwidth_bytes_per_s: 8000.0 * GB,
            sm_count: 148,
            l2_cache_bytes: 253 * MIB / 2,
            boost_clock_mhz: 1965,
        },
        nvlink_bandwidth_bytes_per_s: 900.0 * GB,
        sources: [
            cite(
                &PEAKS,
                "NVIDIA Blackwell datasheet, HGX B200 (1000 W) column as tabulated at glennklockwood.com/garden/processors/B200: bf16 and fp16 tensor 4.5 PFLOP/s and tf32 2.2 with sparsity (2.25 and 1.1 dense), fp32 80 TFLOP/s",
            ),
            cite(
                &["peak.fp8_flops_per_s"],
                "NVIDIA Blackwell datasheet, HGX B200 (1000 W) column as tabulated at glennklockwood.com/garden/processors/B200: FP8 tensor 9 PFLOP/s with sparsity (4.5 dense, twice the bf16 rate)",
            ),
            cite(
                &["hbm_bytes", "hbm_bandwidth_bytes_per_s"],
                "NVIDIA DGX B200 datasheet: 8 GPUs with 1,440 GB HBM3e and 64 TB/s in all = 180 GB and 8 TB/s per GPU (drivers since early 2026 report a 7680-bit bus, 7.67 TB/s: pytorch/ao PR 4002)",
            ),
            cite(
                &["sm_count", "l2_cache_bytes"],
                "not in NVIDIA's datasheets: the CUDA driver reports 148 SMs and 126.5 MB L2 on B200 (device query in pytorch/ao PR 4002)",
            ),
            cite(
                &["boost_clock_mhz"],
                "not in NVIDIA's datasheets: the SM clock public B200 kernel benchmarks report (1965 MHz); unverified here",
            ),
            cite(
                &["nvlink_bandwidth_bytes_per_s"],
                "NVIDIA DGX B200 datasheet: NVLink 5, 1.8 TB/s both directions per GPU (14.4 TB/s over 8) = 900 GB/s per direction",
            ),
        ]
        .concat(),
    }
}

/// The Blackwell GPU of a GB200 superchip (GB200 NVL72, 72 per rack).
pub(crate) fn gb200() -> Datasheet {
    Datasheet {
        id: "gb200",
        device_names: &["GB200"],
        architecture: "Blackwell",
        gpu: GpuSpec {
            name: "GB200".into(),
            peak: PeakFlops {
                fp16_flops_per_s: 2500e12,
                fp8_flops_per_s: Some(5000e12),
                bf16_flops_per_s: 2500e12,
                tf32_flops_per_s: 1250e12,
                fp32_flops_per_s: 80e12,
            },
            hbm_bytes: 186_000_000_000,
            hbm_bandwidth_bytes_per_s: 8000.0 * GB,
            sm_count: 148,
            l2_cache_bytes: 253 * MIB / 2,
            boost_clock_mhz: 1965,
        },
        nvlink_bandwidth_bytes_per_s: 900.0 * GB,
        sources: [
            cite(
                &PEAKS,
                "NVIDIA GB200 NVL72 specifications (nvidia.com/en-us/data-center/gb200-nvl72), NVL72 column for 72 GPUs: FP16/BF16 tensor 360 PFLOP/s and TF32 180 PFLOP/s with sparsity (180 and 90 dense = 2.5 and 1.25 PFLOP/s per GPU), FP32 5,760 TFLOP/s (80 per GPU)",
            ),
            cite(
                &["peak.fp8_flops_per_s"],
                "NVIDIA GB200 NVL72 specifications, NVL72 column for 72 GPUs: FP8/FP6 tensor 720 PFLOP/s with sparsity (360 dense = 5 PFLOP/s per GPU)",
            ),
            cite(
                &["hbm_bytes", "hbm_bandwidth_bytes_per_s"],
                "NVIDIA GB200 NVL72 specifications: up to 13.4 TB HBM3e at 576 TB/s over 72 GPUs = 186 GB and 8 TB/s per GPU",
            ),
            cite(
                &["sm_count", "l2_cache_bytes"],
                "not in NVIDIA's GB200 specifications: taken from the B200 entry (same Blackwell die; 148 SMs and 126.5 MB L2 as the CUDA driver reports them on B200, pytorch/ao PR 4002); unverified on a GB200",
            ),
            cite(
                &["boost_clock_mhz"],
                "not in NVIDIA's GB200 specifications: the B200 entry's 1965 MHz taken as a stand-in; unverified on a GB200",
            ),
            cite(
                &["nvlink_bandwidth_bytes_per_s"],
                "NVIDIA GB200 NVL72 specifications: NVLink 5, 130 TB/s over 72 GPUs = 1.8 TB/s both directions per GPU = 900 GB/s per direction",
            ),
        ]
        .concat(),
    }
}
