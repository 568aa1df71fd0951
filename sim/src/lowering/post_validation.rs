//! Zero-bubble optimizer post-validation (Qi et al., "Zero Bubble Pipeline
//! Parallelism", ICLR 2024, Sec. 4 "bypassing optimizer synchronizations";
//! `--optimizer-post-validation`) as steps of the pipeline program, over
//! several consecutive iterations.
//!
//! What the source does (sail-sg/zero-bubble-pipeline-parallelism at
//! 39f2c18, `megatron/core/optimizer/optimizer.py`, `pre_step`,
//! `send_post_validation`, `recv_post_validation`, `post_validation`;
//! `megatron/training/training.py`, `train_step`;
//! `megatron/core/pipeline_parallel/zerobubble/runtime.py`,
//! `run_until_post_validation`):
//! - **Before the step** (`pre_step`), stage r computes its local squared
//!   gradient norm and inf/NaN flag (reduced over its tensor group only),
//!   receives the partial sums of stages 0…r−1 from stage r−1 (a blocking
//!   receive), adds its own, sends the result to stage r+1, and steps its
//!   optimizer at once, assuming no clipping and no inf/NaN. Here: a
//!   [`TaskKind::NormExchange`] from stage r to r+1 after stage r's
//!   gradients are reduced and stage r−1's exchange has arrived; stage r's
//!   optimizer (and its host issue) waits for that arrival instead of any
//!   sync across the pipeline.
//! - **After the step**, stage p−1 holds the full norm and flag; they go back
//!   stage by stage (`send_post_validation` to r−1 after `recv_post_validation`
//!   from r+1) during the next iteration: the runtime runs stage r's first
//!   forwards, then the post-validation, then the rest
//!   ([`schedules::PipelineSchedule::post_validation_point`]). Here: a
//!   [`TaskKind::PostValidation`] from stage r to r−1 emitted before that
//!   forward, after the one from r+1 has arrived (stage p−1's after its
//!   pre-step exchange has); the forward at the point (and its host issue)
//!   waits for the arrival, the forwards before it only for the stage's own
//!   optimizer step and parameters.
//! - **Rollback is never taken here.** In a step where the norm is below the
//!   clip threshold and no inf/NaN occurred (the normal step: the source turns
//!   post-validation on only after 10 such steps, `record_grad_norm`) the
//!   check passes and does nothing. A rollback (`rollback_optimizer_step`:
//!   AdamW inverted from the gradients, `zbpp_optimizer_helper.py`, then a
//!   clipped re-step) is not simulated.
//!
//! Both exchanges carry two fp32 scalars per hop (`get_reduced_global_states`:
//! the fp16 grad scaler's found-inf flag and the partial squared norm, one
//! `isend` each): [`EXCHANGE_BYTES`]. The source sends CPU tensors over gloo
//! (backend `cpu:gloo,cuda:nccl` under zero bubble, `training/initialize.py`);
//! they are costed as an 8-byte pipeline transfer on the pipeline path's
//! NCCL point-to-point model (gloo's TCP latency is not measured), on the
//! stage's pipeline send stream toward the peer.
//!
//! Memory: nothing is kept for a rollback beyond what training keeps anyway.
//! The rollback reads the gradients in Megatron's gradient buffer, which is
//! zeroed only at the next `train_step`, after the post-validation; the fp32
//! copy of parameters and both Adam moments (`save_parameters_backup`) is
//! taken only under `--enable-exactly-numeric-match`, a debugging option (not
//! modeled). Activations and the deferred weight-gradient state of a stage
//! are all released before its optimizer step, so the next iteration's
//! warm-up adds nothing to a stage's peak.

use super::end_context::StagesDone;
use super::program::{Program, StepId};
use crate::placement::Placement;
use scenario::Scenario;
use taskgraph::task::{StreamKind, Task, TaskKind, NO_MICROBATCH};
use taskgraph::task_graph::{Dependency, TaskGraphBuilder, Work};

/// Bytes per hop of either exchange: two fp32 scalars, the found-inf flag
/// and the partial squared gradient norm (the source's
/// `get_reduced_global_states` under fp16 with clipping).
pub const EXCHANGE_BYTES: u64 = 2 * 4;

/// What one iteration's end leaves to the next iteration.
#[derive(Debug, Default)]
pub(super) struct Carry {
    /// By data index · p + stage: the steps after which the stage's
    /// parameters are updated (its ranks' optimizer steps, the distributed
    /// optimizer's all-gathers).
    pub params_ready: Vec<Vec<StepId>>,
    /// By data index · p + stage: the partial norm received from the previous
    /// stage (None on stage 0, and without post-validation).
    pub norm_received: Vec<Option<StepId>>,
}

/// The post-validation steps of one iteration's walk, by data index · p + stage.
pub(super) struct PostValidation {
    stages: u32,
    /// The stage's send to the previous stage.
    sends: Vec<Option<StepId>>,
    /// The pass at the stage's post-validation point, and its host issue.
    gated: Vec<Option<(StepId, Option<StepId>)>>,
}

impl PostValidation {
    pub fn new(replicas: u32, stages: u32) -> PostValidation {
        let n = (replicas * stages) as usize;
        PostValidation {
            stages,
            sends: vec![None; n],
            gated: vec![None; n],
        }
    }

    /// Stage `stage`'s post-validation of iteration `validated`, at its point
    /// in the next iteration: its send to the previous stage (none on stage 0).
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &mut self,
        program: &mut Program,
        builder: &mut TaskGraphBuilder,
        scenario: &Scenario,
        placement: &Placement,
        carried: &Carry,
        (data_index, stage): (u32, u32),
        validated: u16,
    ) {
        if stage == 0 {
            return;
        }
        let index = (data_index * self.stages + stage) as usize;
        let step = exchange(
            program,
            builder,
            scenario,
            placement,
            (data_index, stage),
            TaskKind::PostValidation,
            validated,
        );
        // The stage has taken its step (its host is past the pre-step)…
        for &ready in &carried.params_ready[index] {
            program.depend(ready, step, Dependency::ProgramOrder);
        }
        // …and the last stage holds the full norm once the partial one is in.
        if stage + 1 == self.stages {
            if let Some(received) = carried.norm_received[index] {
                program.depend(received, step, Dependency::Data);
            }
        }
        self.sends[index] = Some(step);
    }

    /// The forward at stage `stage`'s post-validation point (and its host
    /// issue): it waits for the validated state from the next stage.
    pub fn gate(&mut self, (data_index, stage): (u32, u32), pass: StepId, host: Option<StepId>) {
        self.gated[(data_index * self.stages + stage) as usize] = Some((pass, host));
    }

    /// After the walk: each stage's send waits for the next stage's, and
    /// each gated forward for it too.
    pub fn connect(&self, program: &mut Program, stages: u32) {
        for (index, gated) in self.gated.iter().enumerate() {
            let stage = index as u32 % stages;
            let Some(from_next) = self.sends.get(index + 1).copied().flatten() else {
                continue;
            };
            if stage + 1 == stages {
                continue;
            }
            if let Some(own) = self.sends[index] {
                program.depend(from_next, own, Dependency::Data);
            }
            if let Some((pass, host)) = *gated {
                program.depend(from_next, pass, Dependency::Data);
                if let Some(host) = host {
                    program.depend(from_next, host, Dependency::Data);
                }
            }
        }
    }
}

/// One stage's exchange task toward the next stage ([`TaskKind::NormExchange`])
/// or the previous one ([`TaskKind::PostValidation`]), on its pipeline send stream.
fn exchange(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    scenario: &Scenario,
    placement: &Placement,
    (data_index, stage): (u32, u32),
    kind: TaskKind,
    iteration: u16,
) -> StepId {
    let (stream, peer_stage) = match kind {
        TaskKind::NormExchange => (StreamKind::PipelineSendNext, stage + 1),
        _ => (StreamKind::PipelineSendPrevious, stage - 1),
    };
    let ranks = placement.tensor_group(stage, data_index);
    let peer = placement.tensor_group(peer_stage, data_index);
    let group = builder.group(&ranks);
    let work = builder.work(Work::PipelineTransfer {
        bytes: EXCHANGE_BYTES,
        tensor_parallel: scenario.layout.tensor_parallel.get(),
        crosses_nodes: placement.node(ranks[0]) != placement.node(peer[0]),
        scatter_gather: false,
    });
    program.task(Task {
        kind,
        stream,
        chunk: 0,
        stage,
        microbatch: NO_MICROBATCH,
        group,
        work,
        iteration,
    })
}

/// The pre-step exchanges of one iteration: stage r sends to r+1 once its
/// gradients are reduced (`reduced(stage, data_index)`: the reductions and
/// copies the optimizer would wait for) and stage r−1's exchange is in.
/// Returns, by data index · p + stage, the exchange the stage receives.
pub(super) fn norm_exchanges(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    scenario: &Scenario,
    placement: &Placement,
    done: &StagesDone,
    reduced: impl Fn(u32, u32) -> Vec<StepId>,
) -> Vec<Option<StepId>> {
    let p = scenario.layout.pipeline_parallel.get();
    let mut received: Vec<Option<StepId>> = vec![None; (done.lowered_replicas * p) as usize];
    let replica_loop = program.begin_replicas(builder);
    for data_index in 0..done.lowered_replicas {
        for stage in 0..p.saturating_sub(1) {
            let index = (data_index * p + stage) as usize;
            let step = exchange(
                program,
                builder,
                scenario,
                placement,
                (data_index, stage),
                TaskKind::NormExchange,
                done.iteration,
            );
            program.depend(
                done.stage_tails[index].expect("set for every stage"),
                step,
                Dependency::Data,
            );
            for ready in reduced(stage, data_index) {
                program.depend(ready, step, Dependency::Data);
            }
            if let Some(previous) = received[index] {
                program.depend(previous, step, Dependency::Data);
            }
            received[index + 1] = Some(step);
        }
    }
    program.end_replicas(builder, replica_loop);
    received
}

/// What post-validation does in this scenario, for `simulate --explain`
/// (None without it).
pub fn explain(scenario: &Scenario, schedule: &schedules::PipelineSchedule) -> Option<String> {
    if !scenario.options.optimizer_post_validation {
        return None;
    }
    let p = scenario.layout.pipeline_parallel.get();
    let points: Vec<String> = (0..p)
        .map(|stage| match schedule.post_validation_point(stage) {
            Some(index) => format!(
                "{} after {index} forward{}",
                schedule.actions[stage as usize][index],
                if index == 1 { "" } else { "s" }
            ),
            None => "none".into(),
        })
        .collect();
    Some(format!(
        "optimizer post-validation (Qi et al. 2024, Sec. 4; the source's --enable-optimizer-post-validation): \
         {iterations} iterations simulated, metrics from the steady state. Stage r steps its optimizer once its \
         own gradients are reduced and the partial squared gradient norm and inf/NaN flag of stages 0…r−1 have \
         come from stage r−1; it adds its own and sends them on (norm_exchange: {hops} hops per pipeline per \
         iteration, {bytes} B each, two fp32 scalars) — no sync across the pipeline before the step. Stage {last} \
         then holds the full norm; it goes back stage by stage during the next iteration (post_validation: {hops} \
         hops, {bytes} B), each stage validating before one forward of its warm-up: {points}. \
         Rollback (AdamW inverted from the gradients, then a clipped re-step) is never taken in a normal step \
         (norm below the clip threshold, no inf/NaN) and is not simulated. Memory kept for a rollback: 0 B (the \
         gradients stay in Megatron's gradient buffer, zeroed only after the validation; the source's \
         parameter and Adam-moment backup exists only under --enable-exactly-numeric-match, not modeled). \
         Exchanges costed as {bytes}-byte pipeline transfers with the NCCL point-to-point model (the source \
         sends CPU tensors over gloo, whose latency is not measured here).\n",
        iterations = scenario.iterations,
        hops = p.saturating_sub(1),
        bytes = EXCHANGE_BYTES,
        last = p - 1,
        points = points.join("; "),
    ))
}
