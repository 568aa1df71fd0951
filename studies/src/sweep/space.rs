//! The sweep space: the user's constraints ([`SweepSpace`]) and the tuples
//! they generate ([`Candidate`]s, before validation), in a fixed order.
//!
//! The sweep's own rules — everything else is left to
//! [`sim::scenario::ScenarioFile::resolve`]:
//! - t·cp·p·d = N exactly (t and p range over the divisors of N, cp over
//!   the listed context-parallel degrees that divide N/t; default cp = 1);
//! - t ≤ GPUs per node unless `allow_cross_node_tp`;
//! - microbatch size b ∈ {1, 2, 4, …} up to `max_microbatch`;
//! - GPipe and 1F1B with v = 1; interleaved with every v in 2..=`max_chunks`,
//!   but no more than the model's layers (a chunk holds at least one layer, so
//!   a larger v is never valid and a huge `max_chunks` only costs time and memory);
//! - with `microbatch_groups` (off by default), interleaved where m is not
//!   a multiple of p also with Megatron-Core's microbatch groups: the
//!   smallest valid N (`flexible_interleaved::group_size_problem`). Not
//!   every N: under uniform costs the bubble is (p−1)(F+B)/v for any N,
//!   while the warm-up 2(p−r−1)+(v−1)N, and so the activations held, grow
//!   with N — the smallest is the one worth simulating; where p divides m,
//!   N = p (the default) already is;
//! - recompute none and full (selective on request);
//! - optional restrictions: a fixed t or p, a subset of schedules or recompute modes;
//! - the training options every layout shares ([`TrainingOptionsFile`]), and
//!   three of them varied over lists: ZeRO stages, precisions and
//!   optimizers (each tuple sets its own `zero_stage` / `precision` /
//!   `optimizer`; an empty list: the shared options' own value, as before).
//!
//! Generation order (the candidate order that sharding relies on): t
//! ascending, then cp ascending, then p ascending, then b ascending, then
//! schedule (GPipe, 1F1B, interleaved v = 2, 3, …), then recompute (none,
//! full), then ZeRO stage, then precision (fp16, bf16, fp8), then optimizer
//! (adam, adamw, adafactor, adam8bit, lion, sgd).
//!
//! The three new dimensions are absent from the header and from every
//! layout's record while they do not vary (cp = {1}, empty lists), so
//! sweeps without them keep their bytes.

use serde::{Deserialize, Serialize};
use sim::scenario::fitted::{FitParameter, FitValues};
use sim::scenario::{
    Optimizer, Precision, Recompute, ScenarioFile, ScheduleKind, TrainingOptionsFile,
};
use std::collections::BTreeMap;

/// What to sweep: model, cluster, size, batch and constraints. Serialized as
/// the header of every sweep document, so shards of different sweeps never merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpace {
    /// Model preset name or JSON path, or the model itself (a scenario
    /// file's inline model, when the sweep is based on one).
    pub model: serde_json::Value,
    /// Topology preset name or JSON path, or the topology itself.
    pub topology: serde_json::Value,
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
    /// Context-parallel degrees cp tried, ascending (default {1}: none;
    /// absent from the header then).
    #[serde(default = "cp_none", skip_serializing_if = "is_cp_none")]
    pub context_parallel: Vec<u32>,
    /// Expert-parallel degrees ep tried for a mixture of experts, ascending
    /// (default {1}; absent from the header then). Validity (E and d·cp
    /// divisible by ep, tp 1) is `resolve()`'s, as for every dimension.
    #[serde(default = "cp_none", skip_serializing_if = "is_cp_none")]
    pub expert_parallel: Vec<u32>,
    /// Expert tensor-parallel degrees etp tried for a mixture of experts,
    /// ascending; empty (the default, absent from the header): every layout
    /// takes Megatron-Core's default, etp = t. Validity is `resolve()`'s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expert_tensor_parallel: Vec<u32>,
    /// ZeRO stages tried, ascending; empty (the default, absent from the
    /// header): every layout runs with the shared options' `zero_stage`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zero_stages: Vec<u8>,
    /// Precisions tried, in canonical order; empty (the default, absent from
    /// the header): every layout runs with the shared options' `precision`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub precisions: Vec<Precision>,
    /// Optimizers tried, in canonical order; empty (the default, absent from
    /// the header): every layout runs with the shared options' `optimizer`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optimizers: Vec<Optimizer>,
    /// Simulate layouts that do not fit in memory too (flagged in their records)
    /// instead of dropping them.
    pub ignore_memory: bool,
    /// Also try interleaved where p does not divide m, with the smallest
    /// valid microbatch group size N (absent from the header when false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub microbatch_groups: bool,
    /// Software stack (absent from the header when not named: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// Training sequence length every layout runs at (`--seq-len`; absent
    /// from the header when not set: the model's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_len: Option<u64>,
    /// GPU memory every layout must leave free, in bytes (`--memory-headroom`:
    /// the allocator's fragmentation, NCCL's buffers, the CUDA context);
    /// absent from the header when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_headroom_bytes: Option<u64>,
    /// Tokens to train on (`--tokens`): layouts are ranked by their expected
    /// time to train with failures, checkpoints and restarts (the `goodput`
    /// crate's defaults) instead of iteration time; absent when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_tokens: Option<u64>,
    /// The fit every layout is simulated with (`--fit FIT.json`; absent from
    /// the header without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<SweepFit>,
    /// Training options every layout runs with (absent from the header when unset).
    #[serde(flatten)]
    pub options: TrainingOptionsFile,
}

/// A fit a sweep applies to every layout: its file and every factor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFit {
    pub file: String,
    pub factors: BTreeMap<FitParameter, f64>,
}

impl SweepFit {
    /// The factors to apply.
    pub fn values(&self) -> FitValues {
        FitValues::from_factors(self.factors.iter().map(|(&p, &v)| (p, v)))
    }
}

/// A model or topology as a title names it: the preset name or path, or an
/// inline object's `name`.
pub fn label(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(name) => name.clone(),
        other => match other.get("name").and_then(serde_json::Value::as_str) {
            Some(name) => name.to_string(),
            None => "inline".to_string(),
        },
    }
}

impl SweepSpace {
    /// The default space: every schedule and recompute mode, b ≤ 8, v ≤ 8.
    pub fn new(model: &str, topology: &str, gpus: u32, global_batch: u32) -> SweepSpace {
        SweepSpace {
            model: model.into(),
            topology: topology.into(),
            train_tokens: None,
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
            context_parallel: cp_none(),
            expert_parallel: cp_none(),
            expert_tensor_parallel: Vec::new(),
            zero_stages: Vec::new(),
            precisions: Vec::new(),
            optimizers: Vec::new(),
            ignore_memory: false,
            microbatch_groups: false,
            stack: None,
            seq_len: None,
            memory_headroom_bytes: None,
            fit: None,
            options: TrainingOptionsFile::default(),
        }
    }

    /// Sorts and deduplicates the lists (canonical order). A ZeRO-stage or
    /// precision list of one value becomes that shared option (nothing
    /// varies), and a list of several clears the shared option, so one
    /// sweep has one header.
    pub fn normalized(mut self) -> SweepSpace {
        self.schedules.sort();
        self.schedules.dedup();
        self.recompute.sort();
        self.recompute.dedup();
        self.context_parallel.sort();
        self.context_parallel.dedup();
        self.expert_parallel.sort();
        self.expert_parallel.dedup();
        self.expert_tensor_parallel.sort();
        self.expert_tensor_parallel.dedup();
        self.zero_stages.sort();
        self.zero_stages.dedup();
        self.precisions.sort();
        self.precisions.dedup();
        self.optimizers.sort();
        self.optimizers.dedup();
        share_a_single_value(&mut self.zero_stages, &mut self.options.zero_stage);
        share_a_single_value(&mut self.precisions, &mut self.options.precision);
        share_a_single_value(&mut self.optimizers, &mut self.options.optimizer);
        self
    }

    /// Whether the layouts differ in ep (a list other than {1}).
    pub fn varies_expert_parallel(&self) -> bool {
        !is_cp_none(&self.expert_parallel)
    }

    /// Whether the layouts name their etp (a list was given).
    pub fn varies_expert_tensor_parallel(&self) -> bool {
        !self.expert_tensor_parallel.is_empty()
    }

    /// Whether the layouts differ in cp (a list other than {1}).
    pub fn varies_context_parallel(&self) -> bool {
        !is_cp_none(&self.context_parallel)
    }

    /// The scenario file of one tuple (model, topology and profile from the
    /// space; the tuple's ZeRO stage and precision over the shared options).
    pub fn scenario_file(&self, candidate: &Candidate) -> ScenarioFile {
        let mut file = ScenarioFile {
            tp: Some(candidate.tensor_parallel),
            pp: Some(candidate.pipeline_parallel),
            dp: Some(candidate.data_parallel),
            cp: Some(candidate.context_parallel),
            ep: (candidate.expert_parallel > 1).then_some(candidate.expert_parallel),
            etp: candidate.expert_tensor_parallel,
            chunks: Some(candidate.chunks),
            microbatch_group_size: candidate.microbatch_group_size,
            microbatch_size: Some(candidate.microbatch_size),
            schedule: Some(candidate.schedule),
            recompute: Some(candidate.recompute),
            ..self.base_file()
        };
        if let Some(stage) = candidate.zero_stage {
            file.options.zero_stage = Some(stage);
        }
        if let Some(precision) = candidate.precision {
            file.options.precision = Some(precision);
        }
        if let Some(optimizer) = candidate.optimizer {
            file.options.optimizer = Some(optimizer);
        }
        file
    }

    /// The smallest microbatch group size N that makes interleaved valid for
    /// `layout` at microbatch size `b` when p does not divide its m = B/(b·d)
    /// (Megatron-Core's rule: p ≤ N ≤ m, m mod N = 0 or ≥ p); None where p
    /// divides m (N = p, the default) or no N is valid.
    fn smallest_group_size(&self, layout: &Candidate, b: u32) -> Option<u32> {
        let p = layout.pipeline_parallel;
        let samples = u64::from(b) * u64::from(layout.data_parallel);
        if p < 2 || samples == 0 || !u64::from(self.global_batch).is_multiple_of(samples) {
            return None;
        }
        let m = u32::try_from(u64::from(self.global_batch) / samples).ok()?;
        if m == 0 || m.is_multiple_of(p) {
            return None;
        }
        (p + 1..=m)
            .find(|&n| sim::schedule::flexible_interleaved::group_size_problem(p, m, n).is_none())
    }

    /// [`SweepSpace::base_file`] without the options each layout checks
    /// against its own data-parallel size and ZeRO stage (HSDP's
    /// `shard_group_size`, ZeRO++'s keys): what the sweep resolves once
    /// to report model, topology, profile and shared-option errors before
    /// any layout (each tuple still checks those keys, and counts what
    /// they reject).
    pub fn base_check_file(&self) -> ScenarioFile {
        let mut file = self.base_file();
        let options = &mut file.options;
        options.shard_group_size = None;
        options.zero_quantized_weights = None;
        options.zero_hpz_partition_size = None;
        options.zero_quantized_gradients = None;
        file
    }

    /// Model, topology, profile, global batch and the options every layout shares.
    /// With optimizer post-validation, which only the zero-bubble schedules
    /// take, the base runs the sweep's first schedule (the CLI refuses a
    /// sweep with any other schedule; here each such layout is rejected).
    pub fn base_file(&self) -> ScenarioFile {
        ScenarioFile {
            schedule: (self.options.optimizer_post_validation == Some(true))
                .then(|| self.schedules.first().copied())
                .flatten(),
            model: Some(self.model.clone()),
            topology: Some(self.topology.clone()),
            profile: self.profile.clone(),
            stack: self.stack.clone(),
            global_batch: Some(self.global_batch),
            seq_len: self.seq_len,
            options: self.options.clone(),
            ..ScenarioFile::default()
        }
    }

    /// Every tuple the sweep's rules generate, in generation order;
    /// `gpus_per_node` comes from the topology and `layers` from the model.
    pub fn tuples(&self, gpus_per_node: u32, layers: u64) -> Vec<Candidate> {
        let max_chunks = u64::from(self.max_chunks).min(layers) as u32;
        let n = self.gpus;
        // None: the shared options' own value (the list is empty).
        let zero_stages: Vec<Option<u8>> = optional(&self.zero_stages);
        let precisions: Vec<Option<Precision>> = optional(&self.precisions);
        let optimizers: Vec<Option<Optimizer>> = optional(&self.optimizers);
        let variants = option_variants(&zero_stages, &precisions, &optimizers);
        let expert_tensor: Vec<Option<u32>> = optional(&self.expert_tensor_parallel);
        let mut out = Vec::new();
        for t in divisors(n) {
            if t > gpus_per_node && !self.allow_cross_node_tp {
                continue;
            }
            if self.tensor_parallel.is_some_and(|fixed| fixed != t) {
                continue;
            }
            for &cp in &self.context_parallel {
                // cp = 0 is refused by the constraints before tuples are made.
                if cp == 0 || !(n / t).is_multiple_of(cp) {
                    continue;
                }
                for p in divisors(n / t / cp) {
                    if self.pipeline_parallel.is_some_and(|fixed| fixed != p) {
                        continue;
                    }
                    for &ep in &self.expert_parallel {
                        for &etp in &expert_tensor {
                            let layout = Candidate {
                                tensor_parallel: t,
                                context_parallel: cp,
                                expert_parallel: ep,
                                expert_tensor_parallel: etp,
                                pipeline_parallel: p,
                                data_parallel: n / t / cp / p,
                                chunks: 1,
                                microbatch_size: 1,
                                schedule: ScheduleKind::Gpipe,
                                recompute: Recompute::None,
                                zero_stage: None,
                                precision: None,
                                optimizer: None,
                                microbatch_group_size: None,
                            };
                            self.push_options_of(layout, max_chunks, &variants, &mut out);
                        }
                    }
                }
            }
        }
        out
    }

    /// Every (b, schedule, v, recompute, option variant) of one
    /// (t, cp, p, d), in generation order.
    fn push_options_of(
        &self,
        layout: Candidate,
        max_chunks: u32,
        variants: &[OptionVariant],
        out: &mut Vec<Candidate>,
    ) {
        for b in powers_of_two_up_to(self.max_microbatch) {
            for &schedule in &self.schedules {
                let chunk_counts: Vec<u32> = match schedule {
                    // Looped BFS with one chunk is GPipe's order: from 2 too.
                    ScheduleKind::Interleaved | ScheduleKind::LoopedBfs => {
                        (2..=max_chunks).collect()
                    }
                    // The V map (DualPipe: one chunk of each copy): exactly two chunks per stage.
                    ScheduleKind::ZbV | ScheduleKind::DualPipeV | ScheduleKind::DualPipe => vec![2],
                    _ => vec![1],
                };
                // Interleaved where p does not divide m: the smallest valid
                // microbatch group size N, when asked for.
                let group_size = (schedule == ScheduleKind::Interleaved && self.microbatch_groups)
                    .then(|| self.smallest_group_size(&layout, b))
                    .flatten();
                for v in chunk_counts {
                    for &recompute in &self.recompute {
                        for &(zero_stage, precision, optimizer) in variants {
                            out.push(Candidate {
                                microbatch_group_size: group_size,
                                chunks: v,
                                microbatch_size: b,
                                schedule,
                                recompute,
                                zero_stage,
                                precision,
                                optimizer,
                                ..layout
                            });
                        }
                    }
                }
            }
        }
    }
}

/// A varied option's list of one value becomes the option every layout
/// shares (nothing varies); a list of several clears the shared option.
fn share_a_single_value<T: Copy>(list: &mut Vec<T>, shared: &mut Option<T>) {
    match list[..] {
        [] => {}
        [value] => {
            *shared = Some(value);
            list.clear();
        }
        _ => *shared = None,
    }
}

/// One tuple's (ZeRO stage, precision, optimizer); `None`: the shared option.
type OptionVariant = (Option<u8>, Option<Precision>, Option<Optimizer>);

/// Every (ZeRO stage, precision, optimizer), the optimizer varying fastest.
fn option_variants(
    zero_stages: &[Option<u8>],
    precisions: &[Option<Precision>],
    optimizers: &[Option<Optimizer>],
) -> Vec<OptionVariant> {
    let mut variants = Vec::new();
    for &zero_stage in zero_stages {
        for &precision in precisions {
            for &optimizer in optimizers {
                variants.push((zero_stage, precision, optimizer));
            }
        }
    }
    variants
}

/// One layout of the sweep (before or after validation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    pub tensor_parallel: u32,
    /// Context-parallel degree cp (written only when above 1, as timelines do).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub context_parallel: u32,
    /// Expert-parallel degree ep (written only when above 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub expert_parallel: u32,
    /// Expert tensor-parallel degree etp, when the sweep varies it (else
    /// absent: Megatron-Core's default, t).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_tensor_parallel: Option<u32>,
    pub pipeline_parallel: u32,
    pub data_parallel: u32,
    /// Model chunks per stage v (1 unless interleaved).
    pub chunks: u32,
    pub microbatch_size: u32,
    pub schedule: ScheduleKind,
    pub recompute: Recompute,
    /// This layout's ZeRO stage, when the sweep varies it (else absent: the
    /// sweep's shared options say it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_stage: Option<u8>,
    /// This layout's precision, when the sweep varies it (else absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<Precision>,
    /// This layout's optimizer, when the sweep varies it (else absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimizer: Option<Optimizer>,
    /// Interleaved: Megatron-Core's microbatch group size N, when the sweep
    /// sets one (`microbatch_groups`; else absent: N = p).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microbatch_group_size: Option<u32>,
}

impl Candidate {
    /// Short form, e.g. `t=8 p=8 d=1 b=1 interleaved v=3 recompute=full`,
    /// with ` cp=2` after t when cp > 1 and ` zero_stage=3 precision=fp8`
    /// at the end when the sweep varies them.
    pub fn label(&self) -> String {
        let cp = if self.context_parallel > 1 {
            format!(" cp={}", self.context_parallel)
        } else {
            String::new()
        };
        let ep = if self.expert_parallel > 1 {
            format!(" ep={}", self.expert_parallel)
        } else {
            String::new()
        };
        let ep = match self.expert_tensor_parallel {
            Some(etp) => format!("{ep} etp={etp}"),
            None => ep,
        };
        let mut label = format!(
            "t={}{cp}{ep} p={} d={} b={} {} recompute={}",
            self.tensor_parallel,
            self.pipeline_parallel,
            self.data_parallel,
            self.microbatch_size,
            self.schedule_label(),
            self.recompute.name()
        );
        if let Some(stage) = self.zero_stage {
            label.push_str(&format!(" zero_stage={stage}"));
        }
        if let Some(precision) = self.precision {
            label.push_str(&format!(" precision={}", precision.name()));
        }
        if let Some(optimizer) = self.optimizer {
            label.push_str(&format!(" optimizer={}", optimizer.name()));
        }
        label
    }

    /// `gpipe`, `1f1b` or `interleaved v=3`.
    pub fn schedule_label(&self) -> String {
        match self.schedule {
            ScheduleKind::Interleaved | ScheduleKind::LoopedBfs => {
                match self.microbatch_group_size {
                    Some(n) => format!("{} v={} N={n}", self.schedule.name(), self.chunks),
                    None => format!("{} v={}", self.schedule.name(), self.chunks),
                }
            }
            other => other.name().to_string(),
        }
    }
}

/// The sweep's default cp list: {1}.
fn cp_none() -> Vec<u32> {
    vec![1]
}

fn is_cp_none(list: &[u32]) -> bool {
    list == [1]
}

fn one() -> u32 {
    1
}

fn is_one(value: &u32) -> bool {
    *value == 1
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `[None]` for an empty list (the shared option), else every value.
fn optional<T: Copy>(list: &[T]) -> Vec<Option<T>> {
    if list.is_empty() {
        vec![None]
    } else {
        list.iter().copied().map(Some).collect()
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
#[path = "space_tests.rs"]
mod tests;
