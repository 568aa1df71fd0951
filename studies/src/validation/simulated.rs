//! One simulated variant of a case, as validation keeps it: the metrics,
//! rank 0's kernel and task seconds by class, the regime and what the predicted
//! quantities need (not the timeline); and the breakdown a row prints.

use super::keys::Quantity;
use super::regime;
use super::Variant;
use sim::scenario::fitted::FitValues;
use sim::scenario::ScenarioFile;
use timeline::metrics::Metrics;

/// What is kept of one simulated variant (not its timeline).
pub(super) struct Simulated {
    pub(super) metrics: Metrics,
    /// Rank 0's kernel seconds per iteration by class.
    kernel_classes: sim::cost::class_time::KernelClassSeconds,
    pub(super) regime: regime::Regime,
    /// Rank 0's task seconds per iteration by class (from its records),
    /// when the case measures any ([`Quantity::is_task_class`]).
    task_classes: Option<timeline::RankClassSeconds>,
    peak_flops_per_s: f64,
    gpus: u32,
    seq_len: u64,
}

impl Simulated {
    pub(super) fn predict(&self, quantity: Quantity) -> f64 {
        let m = &self.metrics;
        match quantity {
            Quantity::IterationTimeS => m.iteration_time_s,
            Quantity::TflopsPerGpu => m.tflops_per_gpu,
            Quantity::PercentOfPeak => m.percent_of_peak,
            Quantity::ModelFlopsUtilizationPercent => {
                100.0 * m.model_tflops_per_gpu * 1e12 / self.peak_flops_per_s
            }
            Quantity::AggregatePflops => m.tflops_per_gpu * self.gpus as f64 / 1e3,
            Quantity::SamplesPerS => m.samples_per_s,
            Quantity::TokensPerSPerGpu => m.samples_per_s * self.seq_len as f64 / self.gpus as f64,
            Quantity::GemmS => self.kernel_classes.gemm,
            Quantity::AttentionS => self.kernel_classes.attention,
            Quantity::MemoryBoundS => self.kernel_classes.memory_bound,
            Quantity::ComputeS => self.task_class(|c| c.compute),
            Quantity::TensorCommS => self.task_class(|c| c.tensor),
            Quantity::PipelineCommS => self.task_class(|c| c.pipeline),
            Quantity::DataParallelCommS => self.task_class(|c| c.data_parallel),
        }
    }

    /// One class of rank 0's task seconds (NaN, which no row accepts as a
    /// prediction, if they were not asked for).
    fn task_class(&self, class: impl Fn(&timeline::RankClassSeconds) -> f64) -> f64 {
        self.task_classes.as_ref().map_or(f64::NAN, class)
    }
}

/// Simulates one variant.
pub(super) fn simulate_variant(
    file: &ScenarioFile,
    variant: Variant,
    fit: &FitValues,
    task_classes: bool,
) -> Result<Simulated, String> {
    let mut file = file.clone();
    file.recompute = Some(variant.recompute);
    file.options.sequence_parallel = Some(variant.sequence_parallel);
    simulate_file(&file, fit, task_classes)
}

/// Simulates a scenario file as it is, with a fit's factors; with
/// `task_classes`, rank 0's task seconds by class too.
pub(super) fn simulate_file(
    file: &ScenarioFile,
    fit: &FitValues,
    task_classes: bool,
) -> Result<Simulated, String> {
    let mut scenario = file.resolve().map_err(|e| e.to_string())?;
    fit.apply(&mut scenario);
    // The refusal `simulate` gives a layout this machine cannot hold.
    sim::host_memory::check_fits_this_machine(&scenario, sim::Expansion::Auto)
        .map_err(|e| e.to_string())?;
    let report = sim::simulate(&scenario).map_err(|e| e.to_string())?;
    let rank_0 = sim::TimelineSelection {
        ranks: Some(vec![0]),
        window_ns: None,
    };
    Ok(Simulated {
        kernel_classes: report.kernel_class_seconds(&scenario, 0),
        task_classes: task_classes.then(|| report.timeline_of(&rank_0).rank_class_seconds(0)),
        metrics: report.metrics,
        regime: regime::Regime::of(&scenario),
        peak_flops_per_s: scenario.peak_flops_per_s(),
        gpus: scenario.layout.gpus(),
        seq_len: scenario.model.seq_len,
    })
}

pub(super) fn breakdown(m: &Metrics) -> String {
    let e = &m.exposed_communication;
    format!(
        "compute {:.2} s, bubble {:.3} ({:.2} s), exposed TP {:.2} s, PP {:.2} s, DP {:.2} s",
        m.compute_time_s,
        m.bubble_fraction,
        m.bubble_fraction * m.iteration_time_s,
        e.tensor_s,
        e.pipeline_s,
        e.data_parallel_s
    )
}
