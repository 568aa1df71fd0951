//! Plans the tests share.

use goodput::checkpoint::{CheckpointMode, StorageSpec};
use goodput::energy::{EnergyInputs, GpuKind};
use goodput::failure_distribution::FailureDistribution;
use goodput::failure_rates::ReliabilitySpec;
use goodput::recovery::{RecoveryPolicy, RestartSpec};
use goodput::{IntervalChoice, MonteCarloSpec, RunPlan, TrainingTarget};

pub const GB: f64 = 1e9;

/// A mid-sized plan: 1024 H100s, ~10 days of work, Meta RSC-1 failures.
pub fn plan() -> RunPlan {
    RunPlan {
        iteration_time_s: 5.0,
        tokens_per_iteration: 4_000_000,
        target: TrainingTarget::Iterations(170_000),
        gpus: 1024,
        gpus_per_node: 8,
        nics_per_node: 8,
        switches: 0,
        checkpoint_bytes_per_rank: 2_000_000_000,
        storage: StorageSpec {
            per_node_write_bytes_per_s: 5.0 * GB,
            per_node_read_bytes_per_s: 10.0 * GB,
            aggregate_write_bytes_per_s: 100.0 * GB,
            aggregate_read_bytes_per_s: 200.0 * GB,
        },
        checkpoint_mode: CheckpointMode::Synchronous,
        reliability: ReliabilitySpec::default(),
        restart: RestartSpec {
            detection_s: 120.0,
            reschedule_s: 600.0,
            initialization_s: 300.0,
        },
        recovery: RecoveryPolicy::FullRestart,
        interval: IntervalChoice::Optimal,
        energy: EnergyInputs {
            gpu: Some(GpuKind::H100Sxm),
            gpu_idle_w: Some(100.0),
            gpu_tdp_w: None,
            training_utilization: 0.9,
            node_overhead_w: None,
            node_training_w: None,
            fabric_w: 0.0,
            pue: None,
            price_per_gpu_hour: Some(2.0),
            carbon_g_co2e_per_kwh: None,
        },
        monte_carlo: MonteCarloSpec {
            trials: 1000,
            seed: 35,
            failure_distribution: FailureDistribution::Exponential,
        },
    }
}
