//! Everything one calibration run measured, stage by stage: what the
//! profile writer turns into a profile and the plausibility checks read.

use crate::pcie::PcieMeasurement;
use profile::{CollectiveMeasurement, CpuAdamMeasurement, GemmMeasurement, MemoryMeasurement};

/// Everything one run measured; empty lists for stages not run.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub gemm: Vec<GemmMeasurement>,
    pub kernel_overhead_ns: Option<u64>,
    /// Launches averaged per kernel-overhead sample.
    pub kernel_overhead_launches: u32,
    pub memory: Vec<MemoryMeasurement>,
    pub collectives: Vec<CollectiveMeasurement>,
    pub pcie: Vec<PcieMeasurement>,
    pub cpu_adam: Vec<CpuAdamMeasurement>,
    /// The sustained stage's run, when it ran.
    pub sustained: Option<profile::SustainedRun>,
    /// Stages that ran, for the provenance ("gemm", "cpu_adam", …).
    pub stages: Vec<String>,
    /// Remarks for `provenance.remarks` (skipped shapes, one-GPU collectives,
    /// an NCCL error, …).
    pub remarks: Vec<String>,
}
