//! The sweep space: the user's constraints ([`SweepSpace`]) and the tuples
//! they generate ([`Candidate`]s, before validation), in a fixed order.
//!
//! The sweep's own rules — everything else is left to
//! [`sim::scenario::ScenarioFile::resolve`]:
//! - t·p·d = N exactly (t and p range over the divisors of N);
//! - t ≤ GPUs per node unless `allow_cross_node_tp`;
//! - microbatch size b ∈ {1, 2, 4, …} up to `max_microbatch`;
//! - GPipe and 1F1B with v = 1; interleaved with every v in 2..=`max_chunks`,
//!   but no more than the model's layers (a chunk holds at least one layer, so
//!   a larger v is never valid and a huge `max_chunks` only costs time and memory);
//! - recompute none and full (selective on request);
//! - optional restrictions: a fixed t or p, a subset of schedules or recompute modes;
//! - the training options every layout shares ([`TrainingOptionsFile`]).
//!
//! Generation order (the candidate order that sharding relies on): t
//! ascending, then p ascending, then b ascending, then schedule (GPipe, 1F1B,
//! interleaved v = 2, 3, …), then recompute (none, full).

use serde::{Deserialize, Serialize};
use sim::scenario::{Recompute, ScenarioFile, ScheduleKind, TrainingOptionsFile};

/// What to sweep: model, cluster, size, batch and constraints. Serialized as
/// the header of every sweep document, so shards of different sweeps never merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpace {
    /// Model preset name or JSON path.
    pub model: String,
    /// Topology preset name or JSON path.
    pub topology: String,
    /// Calibration profile; `None`: the topology GPU's embedded profile.
    pub profile: Option<String>,
    /// GPUs N; every layout has t·p·d = N.
    pub gpus: u32,
    /// Global batch B.
    pub global_batch: u32,
    /// Largest microbatch size b (powers of two up to it are tried).
    pub max_microbatch: u32,
    /// Largest number of model chunks v for the interleaved schedule.
    pub max_chunks: u32,
    /// Allow t larger than a node (t a multiple of the GPUs per node).
    pub allow_cross_node_tp: bool,
    /// Schedules tried, in canonical order (GPipe, 1F1B, interleaved).
    pub schedules: Vec<ScheduleKind>,
    /// Recompute modes tried, in canonical order (none, full).
    pub recompute: Vec<Recompute>,
    /// Only this tensor-parallel degree, if set.
    pub tensor_parallel: Option<u32>,
    /// Only this pipeline-parallel degree, if set.
    pub pipeline_parallel: Option<u32>,
    /// Simulate layouts that do not fit in memory too (flagged in their records)
    /// instead of dropping them.
    pub ignore_memory: bool,
    /// Software stack (absent from the header when not named: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// Training options every layout runs with (absent from the header when unset).
    #[serde(flatten)]
    pub options: TrainingOptionsFile,
}

impl SweepSpace {
    /// The default space: every schedule and recompute mode, b ≤ 8, v ≤ 8.
    pub fn new(model: &str, topology: &str, gpus: u32, global_batch: u32) -> SweepSpace {
        SweepSpace {
            model: model.to_string(),
            topology: topology.to_string(),
            profile: None,
            gpus,
            global_batch,
            max_microbatch: 8,
            max_chunks: 8,
            allow_cross_node_tp: false,
            schedules: vec![
                ScheduleKind::Gpipe,
                ScheduleKind::OneFOneB,
                ScheduleKind::Interleaved,
            ],
            recompute: vec![Recompute::None, Recompute::Full],
            tensor_parallel: None,
            pipeline_parallel: None,
            ignore_memory: false,
            stack: None,
            options: TrainingOptionsFile::default(),
        }
    }

    /// Sorts and deduplicates the schedule and recompute lists (canonical order).
    pub fn normalized(mut self) -> SweepSpace {
        self.schedules.sort();
        self.schedules.dedup();
        self.recompute.sort();
        self.recompute.dedup();
        self
    }

    /// The scenario file of one tuple (model, topology and profile from the space).
    pub fn scenario_file(&self, candidate: &Candidate) -> ScenarioFile {
        ScenarioFile {
            tp: Some(candidate.tensor_parallel),
            pp: Some(candidate.pipeline_parallel),
            dp: Some(candidate.data_parallel),
            chunks: Some(candidate.chunks),
            microbatch_size: Some(candidate.microbatch_size),
            schedule: Some(candidate.schedule),
            recompute: Some(candidate.recompute),
            ..self.base_file()
        }
    }

    /// Model, topology, profile, global batch and the options every layout shares.
    pub fn base_file(&self) -> ScenarioFile {
        ScenarioFile {
            model: Some(self.model.clone().into()),
            topology: Some(self.topology.clone().into()),
            profile: self.profile.clone(),
            stack: self.stack.clone(),
            global_batch: Some(self.global_batch),
            options: self.options.clone(),
            ..ScenarioFile::default()
        }
    }

    /// Every tuple the sweep's rules generate, in generation order;
    /// `gpus_per_node` comes from the topology and `layers` from the model.
    pub fn tuples(&self, gpus_per_node: u32, layers: u64) -> Vec<Candidate> {
        let max_chunks = u64::from(self.max_chunks).min(layers) as u32;
        let n = self.gpus;
        let mut out = Vec::new();
        for t in divisors(n) {
            if t > gpus_per_node && !self.allow_cross_node_tp {
                continue;
            }
            if self.tensor_parallel.is_some_and(|fixed| fixed != t) {
                continue;
            }
            for p in divisors(n / t) {
                if self.pipeline_parallel.is_some_and(|fixed| fixed != p) {
                    continue;
                }
                let d = n / t / p;
                for b in powers_of_two_up_to(self.max_microbatch) {
                    for &schedule in &self.schedules {
                        let chunk_counts: Vec<u32> = match schedule {
                            ScheduleKind::Interleaved => (2..=max_chunks).collect(),
                            _ => vec![1],
                        };
                        for v in chunk_counts {
                            for &recompute in &self.recompute {
                                out.push(Candidate {
                                    tensor_parallel: t,
                                    pipeline_parallel: p,
                                    data_parallel: d,
                                    chunks: v,
                                    microbatch_size: b,
                                    schedule,
                                    recompute,
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// One layout of the sweep (before or after validation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    pub tensor_parallel: u32,
    pub pipeline_parallel: u32,
    pub data_parallel: u32,
    /// Model chunks per stage v (1 unless interleaved).
    pub chunks: u32,
    pub microbatch_size: u32,
    pub schedule: ScheduleKind,
    pub recompute: Recompute,
}

impl Candidate {
    /// Short form, e.g. `t=8 p=8 d=1 b=1 interleaved v=3 recompute=full`.
    pub fn label(&self) -> String {
        format!(
            "t={} p={} d={} b={} {} recompute={}",
            self.tensor_parallel,
            self.pipeline_parallel,
            self.data_parallel,
            self.microbatch_size,
            self.schedule_label(),
            self.recompute.name()
        )
    }

    /// `gpipe`, `1f1b` or `interleaved v=3`.
    pub fn schedule_label(&self) -> String {
        match self.schedule {
            ScheduleKind::Interleaved => format!("interleaved v={}", self.chunks),
            other => other.name().to_string(),
        }
    }
}

/// Divisors of `n`, ascending.
pub fn divisors(n: u32) -> Vec<u32> {
    (1..=n).filter(|&k| n.is_multiple_of(k)).collect()
}

/// 1, 2, 4, … up to `max` inclusive.
pub fn powers_of_two_up_to(max: u32) -> Vec<u32> {
    std::iter::successors(Some(1u32), |&b| b.checked_mul(2))
        .take_while(|&b| b <= max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_and_powers_are_ascending() {
        assert_eq!(divisors(12), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(powers_of_two_up_to(8), vec![1, 2, 4, 8]);
        assert_eq!(powers_of_two_up_to(6), vec![1, 2, 4]);
        assert_eq!(powers_of_two_up_to(0), Vec::<u32>::new());
    }

    #[test]
    fn tuples_follow_the_documented_order() {
        let space = SweepSpace {
            max_microbatch: 1,
            max_chunks: 2,
            ..SweepSpace::new("tiny", "dgx-a100", 2, 8)
        };
        let labels: Vec<String> = space.tuples(8, 4).iter().map(Candidate::label).collect();
        // (t, p) ∈ {(1,1), (1,2), (2,1)} × b = 1 × {gpipe, 1f1b, interleaved v=2} × 2 recompute.
        assert_eq!(labels.len(), 3 * 3 * 2);
        assert_eq!(labels[0], "t=1 p=1 d=2 b=1 gpipe recompute=none");
        assert_eq!(labels[1], "t=1 p=1 d=2 b=1 gpipe recompute=full");
        assert_eq!(labels[4], "t=1 p=1 d=2 b=1 interleaved v=2 recompute=none");
        assert_eq!(labels[6], "t=1 p=2 d=1 b=1 gpipe recompute=none");
    }

    #[test]
    fn no_more_chunks_than_the_model_has_layers_are_tried() {
        let space = SweepSpace {
            max_microbatch: 1,
            max_chunks: u32::MAX,
            schedules: vec![ScheduleKind::Interleaved],
            ..SweepSpace::new("tiny", "dgx-a100", 2, 8)
        };
        let tuples = space.tuples(8, 4);
        // (t, p) ∈ {(1,1), (1,2), (2,1)} × v ∈ {2, 3, 4} × 2 recompute.
        assert_eq!(tuples.len(), 3 * 3 * 2);
        assert!(tuples.iter().all(|c| c.chunks <= 4));
    }
}
