//! Sourced defaults for a run plan's storage and restart, where public text
//! states a figure; the caller may override each. Quantities without a public
//! figure (rescheduling wait, hot-spare swap, idle power, price) have none.
//!
//! Storage: NVIDIA, *DGX SuperPOD Reference Architecture featuring DGX H100
//! Systems*, RA-11333-001 V11 (2023-09-22), "Storage Architecture", Table 6
//! "Guidelines for storage performance", the "Better" column (the level
//! NVIDIA's B200 reference architecture assigns to "Text Data, such as LLM
//! Training"): single-node read 8 GBps, single-node write 4 GBps, single-SU
//! aggregate read 40 GBps and write 20 GBps, an SU being 32 nodes (its 4-SU
//! row, 160 and 80 GBps, scales linearly). These are NVIDIA's guideline
//! requirements for the storage a SuperPOD is sold with, not a measured
//! system. The same section: checkpoints "are typically written synchronously
//! that blocks forward progress".
//!
//! Restart: no measured detection or initialization time was found as text;
//! the defaults are the frameworks' own timeouts, upper bounds:
//! - detection 600 s: PyTorch's default NCCL process-group timeout
//!   (`torch.distributed.init_process_group`: "Default value is 10 minutes
//!   for NCCL … the duration after which collectives will be aborted
//!   asynchronously and the process will crash"; pytorch/pytorch PR 110947):
//!   how long a hang goes unnoticed; a crash surfaces sooner.
//! - initialization 300 s: torchtitan's `init_timeout_seconds` ("Timeout for
//!   communication operations, during initialization and first train step",
//!   `torchtitan/config/configs.py` at b5bcd76c).

use crate::checkpoint::{CheckpointMode, StorageSpec};
use crate::energy::{EnergyInputs, GpuKind, Sourced};
use crate::failure_distribution::FailureDistribution;
use crate::failure_rates::ReliabilitySpec;
use crate::plan::{IntervalChoice, MonteCarloSpec, RunPlan, TrainingTarget};
use crate::recovery::{RecoveryPolicy, RestartSpec};

/// Nodes per DGX SuperPOD scalable unit (the reference architecture's "SUs of
/// 32 DGX H100 systems each").
pub const NODES_PER_SU: f64 = 32.0;

const SUPERPOD_TABLE_6: &str = "NVIDIA DGX SuperPOD H100 reference architecture RA-11333-001 V11 (2023-09-22), Table 6 Guidelines for storage performance, Better";

/// One node's write bandwidth to storage.
pub const STORAGE_NODE_WRITE: Sourced = Sourced {
    name: "storage_node_write_bytes_per_s",
    value: 4e9,
    source: SUPERPOD_TABLE_6,
};
/// One node's read bandwidth from storage.
pub const STORAGE_NODE_READ: Sourced = Sourced {
    name: "storage_node_read_bytes_per_s",
    value: 8e9,
    source: SUPERPOD_TABLE_6,
};
/// Aggregate write bandwidth per 32-node SU.
pub const STORAGE_SU_WRITE: Sourced = Sourced {
    name: "storage_write_bytes_per_s_per_32_nodes",
    value: 20e9,
    source: SUPERPOD_TABLE_6,
};
/// Aggregate read bandwidth per 32-node SU.
pub const STORAGE_SU_READ: Sourced = Sourced {
    name: "storage_read_bytes_per_s_per_32_nodes",
    value: 40e9,
    source: SUPERPOD_TABLE_6,
};

/// The SuperPOD guideline storage for a job of `nodes` nodes: per-node rates
/// as given, aggregate rates scaled by nodes ÷ 32.
pub fn superpod_storage(nodes: u64) -> StorageSpec {
    let units = nodes as f64 / NODES_PER_SU;
    StorageSpec {
        per_node_write_bytes_per_s: STORAGE_NODE_WRITE.value,
        per_node_read_bytes_per_s: STORAGE_NODE_READ.value,
        aggregate_write_bytes_per_s: STORAGE_SU_WRITE.value * units,
        aggregate_read_bytes_per_s: STORAGE_SU_READ.value * units,
    }
}

/// Failure detection: PyTorch's default NCCL timeout (an upper bound).
pub const DETECTION: Sourced = Sourced {
    name: "detection_s",
    value: 600.0,
    source: "PyTorch torch.distributed.init_process_group: \"Default value is 10 minutes for NCCL\" (the time after which a hung collective aborts; pytorch/pytorch PR 110947): an upper bound, a crash surfaces sooner",
};

/// Initialization before the checkpoint load: torchtitan's init timeout (an upper bound).
pub const INITIALIZATION: Sourced = Sourced {
    name: "initialization_s",
    value: 300.0,
    source: "torchtitan init_timeout_seconds = 300, \"Timeout for communication operations, during initialization and first train step\" (torchtitan/config/configs.py at b5bcd76c): an upper bound",
};

/// What a run plan needs from a simulation; everything else takes the
/// defaults above and the crate's sourced ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulatedRun {
    pub iteration_time_s: f64,
    pub tokens_per_iteration: u64,
    pub gpus: u64,
    pub gpus_per_node: u64,
    pub nics_per_node: u64,
    pub checkpoint_bytes_per_rank: u64,
    pub gpu: Option<GpuKind>,
}

/// The plan of `run` trained to `target` with every default: Meta RSC-1's
/// failure rate, the SuperPOD guideline storage written synchronously, the
/// restart timeouts, full restarts, the optimal interval, no Monte-Carlo,
/// the energy model's defaults and no price.
pub fn default_plan(run: &SimulatedRun, target: TrainingTarget) -> RunPlan {
    let nodes = run.gpus.checked_div(run.gpus_per_node).unwrap_or(0);
    RunPlan {
        iteration_time_s: run.iteration_time_s,
        tokens_per_iteration: run.tokens_per_iteration,
        target,
        gpus: run.gpus,
        gpus_per_node: run.gpus_per_node,
        nics_per_node: run.nics_per_node,
        switches: 0,
        checkpoint_bytes_per_rank: run.checkpoint_bytes_per_rank,
        storage: superpod_storage(nodes),
        checkpoint_mode: CheckpointMode::Synchronous,
        reliability: ReliabilitySpec::default(),
        restart: RestartSpec {
            detection_s: DETECTION.value,
            reschedule_s: 0.0,
            initialization_s: INITIALIZATION.value,
        },
        recovery: RecoveryPolicy::FullRestart,
        interval: IntervalChoice::Optimal,
        energy: EnergyInputs {
            gpu: run.gpu,
            gpu_idle_w: None,
            gpu_tdp_w: None,
            training_utilization: 0.9,
            node_overhead_w: None,
            node_training_w: None,
            fabric_w: 0.0,
            pue: None,
            price_per_gpu_hour: None,
            carbon_g_co2e_per_kwh: None,
        },
        monte_carlo: MonteCarloSpec {
            trials: 0,
            seed: 0,
            failure_distribution: FailureDistribution::Exponential,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superpod_storage_scales_its_aggregate_with_the_nodes() {
        let one_su = superpod_storage(32);
        assert_eq!(one_su.aggregate_write_bytes_per_s, 20e9);
        assert_eq!(one_su.aggregate_read_bytes_per_s, 40e9);
        let four = superpod_storage(128);
        assert_eq!(four.aggregate_write_bytes_per_s, 80e9);
        assert_eq!(four.per_node_write_bytes_per_s, 4e9);
    }
}
