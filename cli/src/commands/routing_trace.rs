//! `simulate --routing-trace FILE` (issue 35, item 4's routing variance):
//! every line of the file is one iteration's tokens per expert
//! ([`sim::scenario::routing_trace`]); each is simulated with that routing
//! and the summary and `--json` report the distribution of iteration times
//! (mean, median, 90th percentile, extremes), throughput over the whole
//! trace, the busiest rank's load and the peak memory of each iteration, as
//! a routing spike can run a rank out of memory that the mean routing fits.

use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::scenario::routing_trace::RoutingTrace;
use sim::scenario::Scenario;
use sim::straggler::Stragglers;

use crate::exit::{simulation_error, user_error};

/// One simulated iteration of the trace.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TracedIteration {
    /// Its line in the trace file.
    pub line: usize,
    pub iteration_time_s: f64,
    /// The busiest expert-parallel rank of its routing, and its load (× the mean).
    pub busiest_rank: u32,
    pub busiest_rank_load: f64,
    pub peak_memory_bytes: u64,
}

/// Every iteration of a routing trace, simulated.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRun {
    pub file: String,
    pub iterations: Vec<TracedIteration>,
    /// Tokens one iteration trains, and the GPUs that train them.
    pub tokens_per_iteration: u64,
    pub gpus: u32,
    pub memory_capacity_bytes: u64,
}

/// Simulates `scenario` once per iteration of the trace at `path`, each
/// with its routing (the stragglers and expansion as given). Exit 2 when
/// the model has no experts or the trace does not fit it.
pub fn run(
    scenario: &Scenario,
    expansion: sim::Expansion,
    stragglers: &Stragglers,
    path: &Path,
    tokens_per_iteration: u64,
) -> anyhow::Result<TraceRun> {
    let routing = scenario.experts.as_ref().ok_or_else(|| {
        user_error(format!(
            "--routing-trace: '{}' has no experts (a routing trace applies to mixture-of-experts models)",
            scenario.model.name
        ))
    })?;
    let trace = RoutingTrace::read(path, routing.shares.len() as u64).map_err(user_error)?;
    let bar = progress_bar(trace.iterations.len() as u64, "traced iterations");
    let mut iterations = Vec::with_capacity(trace.iterations.len());
    let mut capacity = 0;
    for traced in &trace.iterations {
        let mut rerouted = scenario.clone();
        let routing = routing
            .rerouted(trace.imbalance(traced))
            .map_err(user_error)?;
        let (busiest_rank, busiest_rank_load) = (routing.busiest_rank, routing.busiest_rank_load);
        rerouted.experts = Some(routing);
        let report = sim::simulate_with_stragglers(&rerouted, expansion, stragglers)
            .map_err(simulation_error)?;
        let peak = report.peak_memory();
        capacity = peak.capacity_bytes;
        iterations.push(TracedIteration {
            line: traced.line,
            iteration_time_s: report.metrics.iteration_time_s,
            busiest_rank,
            busiest_rank_load,
            peak_memory_bytes: peak.total_bytes,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(TraceRun {
        file: trace.to_string(),
        iterations,
        tokens_per_iteration,
        gpus: scenario.layout.gpus(),
        memory_capacity_bytes: capacity,
    })
}

/// A bar over `count` simulations of `what` (hidden when stderr is not a terminal).
pub(super) fn progress_bar(count: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(count), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "simulating [{{bar:40}}] {{pos}}/{{len}} {what} · {{per_sec}} · ETA {{eta}}"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}

/// The distribution of a trace's iteration times (seconds).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TimeDistribution {
    pub mean: f64,
    /// Nearest-rank percentiles: the ⌈q·n⌉-th smallest.
    pub p50: f64,
    pub p90: f64,
    pub min: f64,
    pub max: f64,
}

impl TimeDistribution {
    /// Of `times_s` (at least one).
    pub fn of(times_s: &[f64]) -> TimeDistribution {
        let mut sorted = times_s.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let rank = |q: f64| sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        TimeDistribution {
            mean: sorted.iter().sum::<f64>() / n as f64,
            p50: rank(0.5),
            p90: rank(0.9),
            min: sorted[0],
            max: sorted[n - 1],
        }
    }
}

impl TraceRun {
    /// The first traced iteration whose peak memory exceeds the GPU's.
    pub fn first_line_not_fitting(&self) -> Option<usize> {
        self.iterations
            .iter()
            .find(|i| i.peak_memory_bytes > self.memory_capacity_bytes)
            .map(|i| i.line)
    }

    pub fn times(&self) -> TimeDistribution {
        let times: Vec<f64> = self.iterations.iter().map(|i| i.iteration_time_s).collect();
        TimeDistribution::of(&times)
    }

    /// The slowest iteration (the first of equals).
    fn slowest(&self) -> &TracedIteration {
        self.first_largest(|i| i.iteration_time_s)
    }

    /// The iteration with the highest peak memory (the first of equals).
    fn fullest(&self) -> &TracedIteration {
        self.first_largest(|i| i.peak_memory_bytes)
    }

    /// The first iteration whose `key` no later one exceeds.
    fn first_largest<K: PartialOrd>(
        &self,
        key: impl Fn(&TracedIteration) -> K,
    ) -> &TracedIteration {
        self.iterations
            .iter()
            .reduce(|a, b| if key(b) > key(a) { b } else { a })
            .expect("a trace holds an iteration")
    }

    /// Tokens per second per GPU over the whole trace: every iteration's
    /// tokens over their summed time.
    pub fn tokens_per_s_per_gpu(&self) -> f64 {
        let total_s: f64 = self.iterations.iter().map(|i| i.iteration_time_s).sum();
        self.tokens_per_iteration as f64 * self.iterations.len() as f64
            / total_s
            / f64::from(self.gpus)
    }

    fn load_range(&self) -> (f64, f64) {
        let loads = self.iterations.iter().map(|i| i.busiest_rank_load);
        let low = loads.clone().fold(f64::INFINITY, f64::min);
        (low, loads.fold(f64::NEG_INFINITY, f64::max))
    }

    /// The summary's two lines (after the label `routing trace`).
    pub fn lines(&self) -> [String; 2] {
        let t = self.times();
        let (low, high) = self.load_range();
        let fullest = self.fullest();
        let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
        let fits = if fullest.peak_memory_bytes <= self.memory_capacity_bytes {
            "fits every iteration".to_string()
        } else {
            format!("does not fit line {}'s iteration", fullest.line)
        };
        [
            format!(
                "{} iterations ({}): iteration time mean {:.3} s, p50 {:.3} s, p90 {:.3} s, max {:.3} s (line {}); {:.0} tokens/s per GPU over the trace",
                self.iterations.len(),
                self.file,
                t.mean,
                t.p50,
                t.p90,
                t.max,
                self.slowest().line,
                self.tokens_per_s_per_gpu()
            ),
            format!(
                "busiest expert-parallel rank carries {low:.3}–{high:.3}× the mean load; peak memory up to {:.1} GiB of {:.1} ({fits})",
                gib(fullest.peak_memory_bytes),
                gib(self.memory_capacity_bytes)
            ),
        ]
    }

    /// `--json`'s `routing_trace`.
    pub fn json(&self) -> serde_json::Value {
        let fullest = self.fullest();
        serde_json::json!({
            "file": self.file,
            "iterations": self.iterations.len(),
            "iteration_time_s": self.times(),
            "slowest_line": self.slowest().line,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu(),
            "peak_memory_bytes_max": fullest.peak_memory_bytes,
            "fits_in_memory_every_iteration": fullest.peak_memory_bytes <= self.memory_capacity_bytes,
            "per_iteration": self.iterations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let times: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let t = TimeDistribution::of(&times);
        assert_eq!(
            (t.mean, t.p50, t.p90, t.min, t.max),
            (5.5, 5.0, 9.0, 1.0, 10.0)
        );
        let one = TimeDistribution::of(&[2.5]);
        assert_eq!((one.p50, one.p90, one.max), (2.5, 2.5, 2.5));
    }
}
