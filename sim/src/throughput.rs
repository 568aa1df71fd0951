//! What an iteration delivered in the units users quote: tokens per
//! iteration, tokens per second per GPU, and model FLOPs utilisation (MFU)
//! over the dense peak of the precision's high-precision format. `simulate`
//! and `sweep` report the same figures from this one place.

use scenario::Scenario;
use timeline::metrics::Metrics;

/// Tokens and MFU of one simulated iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    /// Global batch × sequence length (saturating).
    pub tokens_per_iteration: u64,
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs (no recompute) per second per GPU over the dense peak of
    /// the precision's high-precision format (bf16 under FP8, as FP8 reports
    /// quote MFU), in percent.
    pub mfu_percent: f64,
}

impl Throughput {
    pub fn of(scenario: &Scenario, metrics: &Metrics) -> Throughput {
        let seq_len = scenario.model.seq_len;
        let peak_flops_per_s = scenario.peak_flops_per_s();
        Throughput {
            tokens_per_iteration: u64::from(scenario.layout.global_batch.get())
                .saturating_mul(seq_len),
            tokens_per_s_per_gpu: metrics.samples_per_s * seq_len as f64
                / f64::from(scenario.layout.gpus()),
            mfu_percent: 100.0 * metrics.model_tflops_per_gpu * 1e12 / peak_flops_per_s,
        }
    }
}
