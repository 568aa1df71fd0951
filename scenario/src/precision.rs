//! The number format a run trains in: fp16 with loss scaling, bf16, or
//! FP8 as Transformer Engine trains with it; its name, the format of the
//! GEMMs that stay in high precision, and the peak utilization is
//! reported against.

use serde::{Deserialize, Serialize};

/// The number format of the GEMMs and the activations: fp16 with loss
/// scaling (Megatron's `--fp16`, the SC21 and 2022 runs), bf16 (`--bf16`),
/// or FP8 as NVIDIA Transformer Engine trains with it under Megatron-Core
/// (`--bf16 --fp8-format hybrid`): the linear layers' GEMMs (QKV, projection,
/// FC1, FC2; forward, data and weight gradient) at the GPU's FP8 rate on FP8
/// inputs, everything else in bf16 ([`models::fp8`]). fp16 and bf16 run at the
/// same tensor-core rate on A100/H100/H200/B200; they differ in which rate the
/// GPU's datasheet gives and in which calibrated GEMMs (by `dtype`) price the
/// kernels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    #[default]
    Fp16,
    Bf16,
    Fp8,
}

impl Precision {
    /// The name calibrate writes to a GEMM measurement's `dtype`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
        }
    }

    /// The format of the GEMMs that are not FP8: under FP8 training the
    /// attention core, the head and everything outside the linear layers
    /// stay in bf16 (Transformer Engine's recipe).
    pub fn high_precision(self) -> Precision {
        match self {
            Precision::Fp8 => Precision::Bf16,
            other => other,
        }
    }

    /// The GPU's dense tensor-core rate of the high-precision format
    /// ([`Precision::high_precision`]): the rate of the GEMMs that are not
    /// FP8, and the peak that utilization is reported against (under FP8 the
    /// bf16 peak, as FP8 training reports usually quote MFU).
    pub fn peak_flops_per_s(self, peak: &topologies::PeakFlops) -> f64 {
        match self.high_precision() {
            Precision::Bf16 => peak.bf16_flops_per_s,
            _ => peak.fp16_flops_per_s,
        }
    }

    pub(crate) fn is_default(&self) -> bool {
        *self == Precision::default()
    }
}
