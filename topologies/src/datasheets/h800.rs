//! The H800 SXM5 (HGX H800, the GPU of DeepSeek-V3's training cluster):
//! the H100 SXM5 with its NVLink cut to 400 GB/s both directions (and FP64,
//! which nothing here uses); every other number is the H100 SXM's.

use super::{cite, h100_sxm, Datasheet, GB, PEAKS};
use crate::spec::GpuSpec;

/// H800 SXM5 80 GB (HGX H800; DeepSeek-V3's training cluster): an H100
/// SXM5 whose NVLink is cut to 400 GB/s both directions, everything else
/// the H100 SXM's.
pub(crate) fn h800_sxm() -> Datasheet {
    let h100 = h100_sxm();
    Datasheet {
        id: "h800-sxm",
        // Unsourced: no driver report of an H800 SXM was found; the H100's
        // pattern ("H100 80GB HBM3") is assumed.
        device_names: &["H800 80GB HBM3"],
        architecture: "Hopper",
        gpu: GpuSpec {
            name: "H800-SXM5-80GB".into(),
            ..h100.gpu
        },
        nvlink_bandwidth_bytes_per_s: 200.0 * GB,
        sources: [
            cite(&PEAKS, H800_AS_H100),
            cite(&["peak.fp8_flops_per_s"], H800_AS_H100),
            cite(&["hbm_bytes", "hbm_bandwidth_bytes_per_s"], H800_AS_H100),
            cite(&["sm_count", "l2_cache_bytes"], H800_AS_H100),
            cite(&["boost_clock_mhz"], H800_AS_H100),
            cite(
                &["nvlink_bandwidth_bytes_per_s"],
                "Philisun, 'NVIDIA H800 vs H100: a technical deep dive' (philisun.com/technical-analysis): H800 NVLink 400 GB/s total bidirectional against the H100's 900 = 200 GB/s per direction; DeepSeek-V3 technical report (arXiv 2412.19437) Sec. 3.1/3.2.2: H800 nodes of 8 GPUs on NVLink and NVSwitch, 160 GB/s achieved",
            ),
        ]
        .concat(),
    }
}

const H800_AS_H100: &str = "the H100 SXM's figure (NVIDIA H100 datasheet, H100 SXM column): the H800 is the H100 with NVLink cut to 400 GB/s both directions and FP64 cut, the same GH100 die, tensor cores and HBM3 (Philisun, 'NVIDIA H800 vs H100: a technical deep dive', philisun.com/technical-analysis)";
