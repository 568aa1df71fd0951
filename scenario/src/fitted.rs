//! The parameters `clustersim fit` learns from a user's own runs, and what a
//! set of them changes in a resolved [`Scenario`].
//!
//! Each is a factor on a rate or a cost the simulator already takes from the
//! calibration profile or the software stack, with a prior of 1 (the
//! calibrated figure) and physical bounds:
//!
//! | parameter | factor on | applied where |
//! |---|---|---|
//! | `gemm_rate` | GEMM throughput (sustained clocks, another cuBLAS) | [`profile::FittedRates::gemm`] |
//! | `memory_bound_rate` | memory-bound kernels' rate | [`profile::FittedRates::memory_bound`] |
//! | `attention_rate` | the fused attention kernel's rate | [`profile::FittedRates::attention`] |
//! | `host_kernel_cost` | the stack's host time per kernel issued | `stack.host.kernel_issue_ns` |
//! | `host_collective_cost` | the stack's host time per collective call | `stack.host.collective_call_ns` |
//! | `nvlink_bandwidth` | achieved NVLink bus bandwidth (tensor, pipeline and data-parallel traffic inside a node) | `profile.communication.nvlink_bus_bandwidth_bytes_per_s` |
//! | `nic_bandwidth` | achieved bandwidth per NIC (all traffic between nodes, pipeline sends included) | `profile.communication.nic_bandwidth_bytes_per_s` |
//!
//! The bounds are what the hardware allows around a calibration: a GEMM
//! rate from half the calibrated (thermal throttling, an old library) to
//! 1.25 × (a burst-free calibration under-reading a cooler machine); the
//! bandwidths still stop at the topology's line rates wherever the cost model
//! caps them. A fixed cost per iteration and a separate cross-rail bandwidth
//! are not parameters: the simulator has no such term to scale.

use crate::resolved::Scenario;
use serde::{Deserialize, Serialize};

/// One fitted parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitParameter {
    GemmRate,
    MemoryBoundRate,
    AttentionRate,
    HostKernelCost,
    HostCollectiveCost,
    NvlinkBandwidth,
    NicBandwidth,
}

impl FitParameter {
    /// Every parameter, in the order FIT.json lists them.
    pub const ALL: [FitParameter; 7] = [
        FitParameter::GemmRate,
        FitParameter::MemoryBoundRate,
        FitParameter::AttentionRate,
        FitParameter::HostKernelCost,
        FitParameter::HostCollectiveCost,
        FitParameter::NvlinkBandwidth,
        FitParameter::NicBandwidth,
    ];

    /// Its name in FIT.json and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FitParameter::GemmRate => "gemm_rate",
            FitParameter::MemoryBoundRate => "memory_bound_rate",
            FitParameter::AttentionRate => "attention_rate",
            FitParameter::HostKernelCost => "host_kernel_cost",
            FitParameter::HostCollectiveCost => "host_collective_cost",
            FitParameter::NvlinkBandwidth => "nvlink_bandwidth",
            FitParameter::NicBandwidth => "nic_bandwidth",
        }
    }

    /// The parameter named `name`.
    pub fn from_name(name: &str) -> Option<FitParameter> {
        FitParameter::ALL.into_iter().find(|p| p.name() == name)
    }

    /// What a value of the parameter means, for `--help` and FIT.json.
    pub fn meaning(self) -> &'static str {
        match self {
            FitParameter::GemmRate => "achieved ÷ calibrated GEMM throughput",
            FitParameter::MemoryBoundRate => "achieved ÷ calibrated rate of memory-bound kernels",
            FitParameter::AttentionRate => "achieved ÷ calibrated rate of fused attention",
            FitParameter::HostKernelCost => "host time per kernel issued ÷ the stack's",
            FitParameter::HostCollectiveCost => "host time per collective call ÷ the stack's",
            FitParameter::NvlinkBandwidth => "achieved ÷ calibrated NVLink bus bandwidth",
            FitParameter::NicBandwidth => "achieved ÷ calibrated bandwidth per NIC",
        }
    }

    /// The physical bounds of the factor (lowest, highest).
    pub fn bounds(self) -> (f64, f64) {
        match self {
            FitParameter::GemmRate => (0.5, 1.25),
            FitParameter::MemoryBoundRate | FitParameter::AttentionRate => (0.4, 1.5),
            FitParameter::HostKernelCost | FitParameter::HostCollectiveCost => (0.25, 4.0),
            FitParameter::NvlinkBandwidth | FitParameter::NicBandwidth => (0.3, 1.5),
        }
    }

    /// The prior's standard deviation of the factor's natural logarithm:
    /// how far a calibration is expected to be off before any run says so.
    /// Kernel rates: a GEMM's sustained rate is within ~10% of a careful
    /// calibration (the lab H100's 8192³ burst 794 against 681–690 TFLOP/s
    /// sustained is 14%), other kernels within ~20%; host costs differ by
    /// framework version and CPU by up to 2× (ln 2 ≈ 0.7); achieved network
    /// bandwidth by NCCL version and fabric tuning within ~25%.
    pub fn prior_log_sd(self) -> f64 {
        match self {
            FitParameter::GemmRate => 0.10,
            FitParameter::MemoryBoundRate | FitParameter::AttentionRate => 0.20,
            FitParameter::HostKernelCost | FitParameter::HostCollectiveCost => 0.7,
            FitParameter::NvlinkBandwidth | FitParameter::NicBandwidth => 0.25,
        }
    }
}

/// A value for every parameter (1 = the calibrated figure).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitValues {
    values: [f64; FitParameter::ALL.len()],
}

impl Default for FitValues {
    fn default() -> Self {
        FitValues::CALIBRATED
    }
}

impl FitValues {
    /// Every factor 1: the scenario as calibrated.
    pub const CALIBRATED: FitValues = FitValues {
        values: [1.0; FitParameter::ALL.len()],
    };

    /// Every factor 1 but those given.
    pub fn from_factors(factors: impl IntoIterator<Item = (FitParameter, f64)>) -> FitValues {
        factors
            .into_iter()
            .fold(FitValues::CALIBRATED, |values, (parameter, value)| {
                values.with(parameter, value)
            })
    }

    /// The value of `parameter`.
    pub fn get(&self, parameter: FitParameter) -> f64 {
        self.values[parameter as usize]
    }

    /// The same set with `parameter` at `value`.
    pub fn with(mut self, parameter: FitParameter, value: f64) -> FitValues {
        self.values[parameter as usize] = value;
        self
    }

    /// Whether every factor is 1.
    pub fn is_calibrated(&self) -> bool {
        *self == FitValues::CALIBRATED
    }

    /// Applies the factors to a resolved scenario. Every factor 1 leaves it
    /// exactly as it was.
    pub fn apply(&self, scenario: &mut Scenario) {
        use FitParameter::*;
        let fitted = &mut scenario.profile.fitted;
        fitted.gemm = self.get(GemmRate);
        fitted.memory_bound = self.get(MemoryBoundRate);
        fitted.attention = self.get(AttentionRate);
        if let Some(host) = scenario.stack.host.as_mut() {
            host.kernel_issue_ns = scaled_ns(host.kernel_issue_ns, self.get(HostKernelCost));
            host.collective_call_ns =
                scaled_ns(host.collective_call_ns, self.get(HostCollectiveCost));
        }
        let communication = &mut scenario.profile.communication;
        communication.nvlink_bus_bandwidth_bytes_per_s.value *= self.get(NvlinkBandwidth);
        communication.nic_bandwidth_bytes_per_s.value *= self.get(NicBandwidth);
    }
}

/// `ns × factor` in whole nanoseconds (`ns` itself for a factor of 1).
fn scaled_ns(ns: u64, factor: f64) -> u64 {
    if factor == 1.0 {
        ns
    } else {
        (ns as f64 * factor).round() as u64
    }
}

/// Whether `parameter` can change the simulated time of `scenario` at all:
/// host costs only where the stack models the host, NVLink only with more
/// than one GPU, the NIC only across nodes. A fit keeps a parameter no case
/// can move at its prior and says so.
pub fn can_move(parameter: FitParameter, scenario: &Scenario) -> bool {
    match parameter {
        FitParameter::HostKernelCost | FitParameter::HostCollectiveCost => {
            scenario.stack.host.is_some()
        }
        FitParameter::NvlinkBandwidth => scenario.layout.gpus() > 1,
        FitParameter::NicBandwidth => scenario.layout.gpus() > scenario.topology.node.gpus_per_node,
        FitParameter::GemmRate | FitParameter::MemoryBoundRate | FitParameter::AttentionRate => {
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bounds_hold_the_prior() {
        for parameter in FitParameter::ALL {
            assert_eq!(FitParameter::from_name(parameter.name()), Some(parameter));
            let (low, high) = parameter.bounds();
            assert!(low < 1.0 && 1.0 < high, "{}", parameter.name());
            assert!(parameter.prior_log_sd() > 0.0);
        }
        assert_eq!(FitParameter::from_name("gemm"), None);
    }

    #[test]
    fn calibrated_values_leave_a_scenario_unchanged_and_others_change_it() {
        let scenario = crate::ScenarioFile::embedded_default().resolve().unwrap();
        let mut applied = scenario.clone();
        FitValues::CALIBRATED.apply(&mut applied);
        assert_eq!(applied.profile, scenario.profile);
        assert_eq!(applied.stack.host, scenario.stack.host);
        let values = FitValues::CALIBRATED
            .with(FitParameter::GemmRate, 0.9)
            .with(FitParameter::NicBandwidth, 0.5);
        values.apply(&mut applied);
        assert_eq!(applied.profile.fitted.gemm, 0.9);
        assert_eq!(
            applied
                .profile
                .communication
                .nic_bandwidth_bytes_per_s
                .value,
            0.5 * scenario
                .profile
                .communication
                .nic_bandwidth_bytes_per_s
                .value
        );
    }
}
