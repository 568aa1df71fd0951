//! The grammar of a case's `measured` keys: `<quantity>[_<variant>]`.
//!
//! Quantities: `iteration_time_s`, `tflops_per_gpu` (Eq. 3 FLOPs, recompute
//! counted), `percent_of_peak` (the same as a share of the datasheet peak),
//! `model_flops_utilization_percent` (FLOPs without recompute, Korthikanti
//! et al. 2022's MFU), `aggregate_pflops`, `samples_per_s`,
//! `tokens_per_s_per_gpu` (NVIDIA's NeMo / Megatron-Bridge tables); and
//! from a profiler trace of rank 0 (`clustersim import-trace`), the GPU
//! seconds per iteration in each kernel class: `gemm_s`, `attention_s`,
//! `memory_bound_s`; and from a measured Timeline of rank 0 (`clustersim
//! execute`, read by `import-trace`), its busy seconds per iteration in each
//! class of task: `compute_s`, `tensor_comm_s`, `pipeline_comm_s`,
//! `data_parallel_comm_s`.
//! Variants: `full_recompute`, `selective_recompute`, `no_recompute`,
//! `sequence_parallel` (no recompute), `sequence_parallel_selective[_recompute]`,
//! `sequence_parallel_full_recompute`. A key without a variant takes the
//! case's own (`layout.recompute` / `layout.sequence_parallel`, else full
//! recompute without sequence parallelism, the setting of every Megatron-LM
//! SC21 run). Keys containing `derived` or starting with `compare_with` restate
//! another figure and are not predicted separately.

use sim::scenario::Recompute;

/// A quantity the simulator can predict for a whole iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    IterationTimeS,
    TflopsPerGpu,
    PercentOfPeak,
    ModelFlopsUtilizationPercent,
    AggregatePflops,
    SamplesPerS,
    TokensPerSPerGpu,
    /// Rank 0's GEMM kernel seconds per iteration.
    GemmS,
    /// Rank 0's fused attention kernel seconds per iteration.
    AttentionS,
    /// Rank 0's memory-bound kernel seconds per iteration.
    MemoryBoundS,
    /// Rank 0's compute-task seconds per iteration (a Timeline's).
    ComputeS,
    /// Rank 0's tensor-parallel communication seconds per iteration.
    TensorCommS,
    /// Rank 0's pipeline-transfer seconds per iteration.
    PipelineCommS,
    /// Rank 0's data-parallel communication seconds per iteration.
    DataParallelCommS,
}

impl Quantity {
    /// The quantities' names, which a key starts with; no name is a prefix
    /// of another, so a key matches at most one (tested below).
    const PREFIXES: [(&'static str, Quantity); 14] = [
        (
            "model_flops_utilization_percent",
            Quantity::ModelFlopsUtilizationPercent,
        ),
        ("iteration_time_s", Quantity::IterationTimeS),
        ("aggregate_pflops", Quantity::AggregatePflops),
        ("percent_of_peak", Quantity::PercentOfPeak),
        ("tflops_per_gpu", Quantity::TflopsPerGpu),
        ("samples_per_s", Quantity::SamplesPerS),
        ("tokens_per_s_per_gpu", Quantity::TokensPerSPerGpu),
        ("memory_bound_s", Quantity::MemoryBoundS),
        ("attention_s", Quantity::AttentionS),
        ("gemm_s", Quantity::GemmS),
        ("data_parallel_comm_s", Quantity::DataParallelCommS),
        ("pipeline_comm_s", Quantity::PipelineCommS),
        ("tensor_comm_s", Quantity::TensorCommS),
        ("compute_s", Quantity::ComputeS),
    ];

    /// Whether it is rank 0's time in one class (of kernels, from a
    /// profiler trace, or of tasks, from a Timeline), not a whole iteration's.
    pub fn is_class_time(self) -> bool {
        self.is_kernel_class() || self.is_task_class()
    }

    /// Whether it is one kernel class's time (`gemm_s`, …).
    pub fn is_kernel_class(self) -> bool {
        matches!(
            self,
            Quantity::GemmS | Quantity::AttentionS | Quantity::MemoryBoundS
        )
    }

    /// Whether it is one class of tasks' time (`compute_s`, …).
    pub fn is_task_class(self) -> bool {
        matches!(
            self,
            Quantity::ComputeS
                | Quantity::TensorCommS
                | Quantity::PipelineCommS
                | Quantity::DataParallelCommS
        )
    }

    /// The quantity a row's label names ("gemm_s (SP + selective)" →
    /// `GemmS`), if any.
    pub fn of_label(label: &str) -> Option<Quantity> {
        let name = label.split(" (").next().unwrap_or(label);
        Quantity::PREFIXES
            .iter()
            .find(|(prefix, _)| *prefix == name)
            .map(|&(_, quantity)| quantity)
    }

    pub fn name(self) -> &'static str {
        Quantity::PREFIXES
            .iter()
            .find(|(_, q)| *q == self)
            .map(|(name, _)| *name)
            .expect("every quantity has a prefix")
    }
}

/// Recompute and sequence-parallel setting of a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Variant {
    pub recompute: Recompute,
    pub sequence_parallel: bool,
}

impl Variant {
    pub fn label(self) -> String {
        let recompute = match self.recompute {
            Recompute::None => "no recompute",
            Recompute::Selective => "selective",
            Recompute::Full => "full recompute",
        };
        if self.sequence_parallel {
            format!("SP + {recompute}")
        } else {
            recompute.to_string()
        }
    }

    fn parse(suffix: &str) -> Option<Variant> {
        let (recompute, sequence_parallel) = match suffix {
            "full_recompute" => (Recompute::Full, false),
            "selective_recompute" | "selective" => (Recompute::Selective, false),
            "no_recompute" => (Recompute::None, false),
            "sequence_parallel" => (Recompute::None, true),
            "sequence_parallel_selective" | "sequence_parallel_selective_recompute" => {
                (Recompute::Selective, true)
            }
            "sequence_parallel_full_recompute" => (Recompute::Full, true),
            _ => return None,
        };
        Some(Variant {
            recompute,
            sequence_parallel,
        })
    }
}

/// What one measured key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeasuredKey {
    Predict(Quantity, Variant),
    /// A figure restating another one of the same case.
    Restated,
    Unknown,
}

/// Parses a measured key; `default` is the case's own variant.
pub fn parse(key: &str, default: Variant) -> MeasuredKey {
    if key.contains("derived") || key.starts_with("compare_with") {
        return MeasuredKey::Restated;
    }
    for (prefix, quantity) in Quantity::PREFIXES {
        let Some(rest) = key.strip_prefix(prefix) else {
            continue;
        };
        if rest.is_empty() {
            return MeasuredKey::Predict(quantity, default);
        }
        return match rest.strip_prefix('_').and_then(Variant::parse) {
            Some(variant) => MeasuredKey::Predict(quantity, variant),
            None => MeasuredKey::Unknown,
        };
    }
    MeasuredKey::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: Variant = Variant {
        recompute: Recompute::Full,
        sequence_parallel: false,
    };

    #[test]
    fn every_key_of_the_dev_set_is_understood() {
        let sp_selective = Variant {
            recompute: Recompute::Selective,
            sequence_parallel: true,
        };
        let cases = [
            (
                "iteration_time_s_full_recompute",
                MeasuredKey::Predict(Quantity::IterationTimeS, FULL),
            ),
            (
                "iteration_time_s_sequence_parallel_selective_recompute",
                MeasuredKey::Predict(Quantity::IterationTimeS, sp_selective),
            ),
            (
                "model_flops_utilization_percent_sequence_parallel_selective",
                MeasuredKey::Predict(Quantity::ModelFlopsUtilizationPercent, sp_selective),
            ),
            (
                "tflops_per_gpu",
                MeasuredKey::Predict(Quantity::TflopsPerGpu, FULL),
            ),
            (
                "percent_of_peak",
                MeasuredKey::Predict(Quantity::PercentOfPeak, FULL),
            ),
            (
                "aggregate_pflops",
                MeasuredKey::Predict(Quantity::AggregatePflops, FULL),
            ),
            ("iteration_time_s_derived_from_eq3", MeasuredKey::Restated),
            ("compare_with_dp1_s", MeasuredKey::Restated),
            ("iteration_time_s_with_magic", MeasuredKey::Unknown),
            ("bubble_fraction", MeasuredKey::Unknown),
        ];
        for (key, expected) in cases {
            assert_eq!(parse(key, FULL), expected, "{key}");
        }
        for (name, _) in Quantity::PREFIXES {
            let prefixed = Quantity::PREFIXES
                .iter()
                .filter(|(other, _)| other.starts_with(name))
                .count();
            assert_eq!(prefixed, 1, "{name} is a prefix of another quantity's name");
        }
    }

    #[test]
    fn a_bare_quantity_takes_the_case_variant() {
        let none = Variant {
            recompute: Recompute::None,
            sequence_parallel: false,
        };
        assert_eq!(
            parse("iteration_time_s", none),
            MeasuredKey::Predict(Quantity::IterationTimeS, none)
        );
    }
}
