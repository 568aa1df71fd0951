//! The metrics' sums over ranks and what they become: the per-rank pass's
//! integer sums added rank by rank ([`RankTotals`]), then divided into the
//! headline numbers ([`RankTotals::metrics`]), the one arithmetic every way
//! of computing metrics ends in.

use super::rank_pass::RankSums;
use super::{steady_window_ns, ExposedCommunication, Metrics};
use crate::TimelineHeader;

/// Matrix FLOPs of every compute task, over every iteration recorded: all
/// of them, and the model's (recomputation left out).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FlopTotals {
    pub total: f64,
    pub model: f64,
}

/// The per-rank sums added over ranks, integer nanoseconds.
#[derive(Debug, Clone)]
pub(crate) struct RankTotals {
    idle_sum_ns: u128,
    compute_sum_ns: u128,
    exposed_sum_ns: [u128; 6],
    in_flight_sum_ns: [u128; 6],
    stage_idle_ns: Vec<u128>,
    expert_stream_exposed_ns: u128,
}

impl RankTotals {
    pub fn new(stages: usize) -> RankTotals {
        RankTotals {
            idle_sum_ns: 0,
            compute_sum_ns: 0,
            exposed_sum_ns: [0; 6],
            in_flight_sum_ns: [0; 6],
            stage_idle_ns: vec![0; stages],
            expert_stream_exposed_ns: 0,
        }
    }

    /// Adds a rank of pipeline stage `stage` standing for `weight` ranks.
    pub fn add(&mut self, sums: &RankSums, stage: usize, weight: u128) {
        self.idle_sum_ns += sums.idle_ns as u128 * weight;
        self.stage_idle_ns[stage] += sums.idle_ns as u128 * weight;
        self.compute_sum_ns += sums.compute_ns * weight;
        for class in 0..6 {
            self.exposed_sum_ns[class] += sums.exposed_ns[class] * weight;
            self.in_flight_sum_ns[class] += sums.in_flight_ns[class] * weight;
        }
        self.expert_stream_exposed_ns += sums.expert_stream_exposed_ns * weight;
    }

    /// The sums of `self`'s ranks and `other`'s (integers: the same
    /// whatever the grouping).
    pub fn merged(mut self, other: RankTotals) -> RankTotals {
        self.idle_sum_ns += other.idle_sum_ns;
        for (stage, idle_ns) in self.stage_idle_ns.iter_mut().zip(other.stage_idle_ns) {
            *stage += idle_ns;
        }
        self.compute_sum_ns += other.compute_sum_ns;
        for class in 0..6 {
            self.exposed_sum_ns[class] += other.exposed_sum_ns[class];
            self.in_flight_sum_ns[class] += other.in_flight_sum_ns[class];
        }
        self.expert_stream_exposed_ns += other.expert_stream_exposed_ns;
        self
    }

    /// The headline numbers of a run of `header`'s layout whose iterations
    /// end at `ends`, with every rank added.
    pub fn metrics(
        mut self,
        header: &TimelineHeader,
        ends: &[u64],
        flops: FlopTotals,
        peak_flops_per_s: f64,
    ) -> Metrics {
        let layout = &header.layout;
        let n_ranks = header.n_gpus as usize;
        let ranks_per_stage = layout.ranks_per_stage() as usize;
        let n_iterations = ends.len();
        let (window_start, window_end) = steady_window_ns(ends);
        let iteration_ns = window_end - window_start;
        // Work totals are per iteration; the TP all-reduce sum counts every iteration too.
        let total_flops = flops.total / n_iterations as f64;
        let model_flops = flops.model / n_iterations as f64;
        self.compute_sum_ns /= n_iterations as u128;
        self.exposed_sum_ns[0] /= n_iterations as u128;
        self.exposed_sum_ns[5] /= n_iterations as u128;
        // The steady-state window's exposure of the stream's all-to-alls (as
        // the other windowed classes), beside the per-iteration sum above.
        self.exposed_sum_ns[5] += self.expert_stream_exposed_ns;
        let (exposed, in_flight) = (self.exposed_sum_ns, self.in_flight_sum_ns);
        let iteration_s = iteration_ns as f64 * 1e-9;
        let per_rank = |sum: u128| sum as f64 * 1e-9 / n_ranks.max(1) as f64;
        let tflops_per_gpu = if iteration_s > 0.0 {
            total_flops / (iteration_s * n_ranks as f64) / 1e12
        } else {
            0.0
        };
        let fraction = |idle: u128, ranks: usize| {
            if iteration_ns == 0 {
                0.0
            } else {
                idle as f64 / (ranks as f64 * iteration_ns as f64)
            }
        };
        Metrics {
            iteration_time_s: iteration_s,
            iterations: n_iterations as u32,
            iteration_times_s: ends
                .iter()
                .scan(0u64, |previous, &end| {
                    let span = end.saturating_sub(*previous);
                    *previous = end;
                    Some(span as f64 * 1e-9)
                })
                .collect(),
            samples_per_s: if iteration_s > 0.0 {
                layout.global_batch as f64 / iteration_s
            } else {
                0.0
            },
            tflops_per_gpu,
            model_tflops_per_gpu: if iteration_s > 0.0 {
                model_flops / (iteration_s * n_ranks as f64) / 1e12
            } else {
                0.0
            },
            percent_of_peak: 100.0 * tflops_per_gpu * 1e12 / peak_flops_per_s,
            bubble_fraction: fraction(self.idle_sum_ns, n_ranks),
            bubble_fraction_per_stage: self
                .stage_idle_ns
                .iter()
                .map(|&idle| fraction(idle, ranks_per_stage))
                .collect(),
            compute_time_s: per_rank(self.compute_sum_ns),
            exposed_communication: ExposedCommunication {
                tensor_s: per_rank(exposed[0]),
                pipeline_s: per_rank(exposed[1]),
                data_parallel_s: per_rank(exposed[2]),
                offload_s: per_rank(exposed[3]),
                host_s: per_rank(exposed[4]),
                expert_parallel_s: per_rank(exposed[5]),
            },
            communication: ExposedCommunication {
                tensor_s: per_rank(exposed[0]),
                pipeline_s: per_rank(in_flight[1]),
                data_parallel_s: per_rank(in_flight[2]),
                offload_s: per_rank(in_flight[3]),
                host_s: per_rank(in_flight[4]),
                expert_parallel_s: per_rank(exposed[5]),
            },
        }
    }
}
