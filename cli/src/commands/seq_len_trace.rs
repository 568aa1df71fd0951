//! `simulate --seq-len-trace FILE` (issue 35, item 4's sequence-length
//! variance): every line of the file is one iteration's tokens per sample
//! ([`sim::scenario::seq_len_trace`]); each distinct length is simulated
//! once (the scenario resolved again at that length, every microbatch padded
//! to it) and the summary and `--json` report the distribution of iteration
//! times over the trace's iterations, tokens per second over the whole
//! trace, and the peak memory of the longest iteration, which a run must fit.

use std::path::Path;

use sim::scenario::seq_len_trace::SeqLenTrace;
use sim::scenario::Scenario;
use sim::straggler::Stragglers;
use studies::fit::fit_file::FitRecord;

use super::routing_trace::TimeDistribution;
use super::scenario_args::ScenarioArgs;
use crate::exit::{simulation_error, user_error};

/// One distinct length of the trace, simulated.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SimulatedLength {
    pub seq_len: u64,
    /// Iterations of the trace at this length, and the first one's line.
    pub iterations: usize,
    pub first_line: usize,
    pub iteration_time_s: f64,
    pub tokens_per_iteration: u64,
    pub peak_memory_bytes: u64,
}

/// Every iteration of a sequence-length trace, simulated by length.
#[derive(Debug, Clone, PartialEq)]
pub struct SeqLenRun {
    pub file: String,
    /// Each iteration's index into `lengths`, in trace order.
    iteration_lengths: Vec<usize>,
    pub lengths: Vec<SimulatedLength>,
    pub gpus: u32,
    pub memory_capacity_bytes: u64,
}

/// Simulates `scenario` (resolved from `args`, a fit applied) once per
/// distinct length of the trace at `path`, with the stragglers and
/// expansion as given. Exit 2 when the trace is malformed or a length does
/// not make a valid scenario (naming its line).
pub fn run(
    args: &ScenarioArgs,
    fit: Option<&FitRecord>,
    scenario: &Scenario,
    expansion: sim::Expansion,
    stragglers: &Stragglers,
    path: &Path,
) -> anyhow::Result<SeqLenRun> {
    let trace = SeqLenTrace::read(path).map_err(user_error)?;
    let distinct = trace.distinct_lengths();
    let bar = super::routing_trace::progress_bar(distinct.len() as u64, "sequence lengths");
    let mut lengths = Vec::with_capacity(distinct.len());
    let mut capacity = 0;
    for traced in &distinct {
        let mut at_length = args.clone();
        at_length.seq_len = Some(traced.seq_len);
        let mut resized = at_length.file()?.resolve().map_err(|error| {
            user_error(format!(
                "--seq-len-trace: line {} ({} tokens): {error}",
                traced.line, traced.seq_len
            ))
        })?;
        if let Some(record) = fit {
            record.values().apply(&mut resized);
        }
        let report = sim::simulate_with_stragglers(&resized, expansion, stragglers)
            .map_err(simulation_error)?;
        let peak = report.peak_memory();
        capacity = peak.capacity_bytes;
        lengths.push(SimulatedLength {
            seq_len: traced.seq_len,
            iterations: 0,
            first_line: traced.line,
            iteration_time_s: report.metrics.iteration_time_s,
            tokens_per_iteration: sim::throughput::Throughput::of(&resized, &report.metrics)
                .tokens_per_iteration,
            peak_memory_bytes: peak.total_bytes,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let iteration_lengths: Vec<usize> = trace
        .iterations
        .iter()
        .map(|traced| {
            distinct
                .binary_search_by_key(&traced.seq_len, |d| d.seq_len)
                .expect("every length is listed")
        })
        .collect();
    for &index in &iteration_lengths {
        lengths[index].iterations += 1;
    }
    Ok(SeqLenRun {
        file: trace.to_string(),
        iteration_lengths,
        lengths,
        gpus: scenario.layout.gpus(),
        memory_capacity_bytes: capacity,
    })
}

impl SeqLenRun {
    /// The distribution of iteration times over the trace's iterations.
    pub fn times(&self) -> TimeDistribution {
        let times: Vec<f64> = self
            .iteration_lengths
            .iter()
            .map(|&index| self.lengths[index].iteration_time_s)
            .collect();
        TimeDistribution::of(&times)
    }

    /// Tokens one iteration trains, on average over the trace.
    pub fn mean_tokens_per_iteration(&self) -> f64 {
        let total: u128 = self
            .lengths
            .iter()
            .map(|l| u128::from(l.tokens_per_iteration) * l.iterations as u128)
            .sum();
        total as f64 / self.iteration_lengths.len() as f64
    }

    /// Tokens per second per GPU over the whole trace: every iteration's
    /// tokens over their summed time.
    pub fn tokens_per_s_per_gpu(&self) -> f64 {
        let total_s: f64 = self
            .iteration_lengths
            .iter()
            .map(|&index| self.lengths[index].iteration_time_s)
            .sum();
        self.mean_tokens_per_iteration() * self.iteration_lengths.len() as f64
            / total_s
            / f64::from(self.gpus)
    }

    /// The shortest length that does not fit in GPU memory.
    pub fn first_not_fitting(&self) -> Option<&SimulatedLength> {
        self.lengths
            .iter()
            .find(|l| l.peak_memory_bytes > self.memory_capacity_bytes)
    }

    fn longest(&self) -> &SimulatedLength {
        self.lengths.last().expect("a trace holds a length")
    }

    fn fullest(&self) -> &SimulatedLength {
        self.lengths
            .iter()
            .reduce(|a, b| {
                if b.peak_memory_bytes > a.peak_memory_bytes {
                    b
                } else {
                    a
                }
            })
            .expect("a trace holds a length")
    }

    /// The summary's two lines (after the label `sequence lengths`).
    pub fn lines(&self) -> [String; 2] {
        let t = self.times();
        let fullest = self.fullest();
        let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
        let fits = match self.first_not_fitting() {
            None => "fits every iteration".to_string(),
            Some(length) => format!(
                "does not fit at {} tokens, line {}, the shortest length that does not",
                length.seq_len, length.first_line
            ),
        };
        [
            format!(
                "{} iterations ({}), {}–{} tokens per sample in {} lengths: iteration time mean {:.3} s, p50 {:.3} s, p90 {:.3} s, max {:.3} s; {:.0} tokens/s per GPU over the trace",
                self.iteration_lengths.len(),
                self.file,
                self.lengths[0].seq_len,
                self.longest().seq_len,
                self.lengths.len(),
                t.mean,
                t.p50,
                t.p90,
                t.max,
                self.tokens_per_s_per_gpu()
            ),
            format!(
                "peak memory up to {:.1} GiB of {:.1} at {} tokens ({fits})",
                gib(fullest.peak_memory_bytes),
                gib(self.memory_capacity_bytes),
                fullest.seq_len
            ),
        ]
    }

    /// `--json`'s `seq_len_trace`.
    pub fn json(&self) -> serde_json::Value {
        let fullest = self.fullest();
        serde_json::json!({
            "file": self.file,
            "iterations": self.iteration_lengths.len(),
            "iteration_time_s": self.times(),
            "mean_tokens_per_iteration": self.mean_tokens_per_iteration(),
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu(),
            "peak_memory_bytes_max": fullest.peak_memory_bytes,
            "fits_in_memory_every_iteration": self.first_not_fitting().is_none(),
            "per_length": self.lengths,
        })
    }
}
