//! Zero-bubble schedules (Qi et al., "Zero Bubble Pipeline Parallelism",
//! ICLR 2024; sail-sg/zero-bubble-pipeline-parallelism): the backward split
//! into an input-gradient pass `I`, which the previous stage waits for, and a
//! weight-gradient pass `W`, which nothing waits for and so fills bubbles.
//!
//! ZB-H1 (the paper's Sec. 3.1, Fig. 3): stage r runs min(p−r−1, m) warm-up
//! forwards; then for i < m: the next forward while any remain, `I` of
//! microbatch i, and — once i ≥ r — `W` of microbatch i−r; then its last
//! min(r, m) `W`s. It holds 1F1B's p−r microbatches of activations (a
//! microbatch is in flight from its F to its I); its bubble is
//! (p−1)(F+I−W), a third of 1F1B's when F = I = W.
//!
//! ZB-H2 (Sec. 3.1, Fig. 4): the same with 2(p−r−1) warm-up forwards and `W`
//! lagging by 2r microbatches: 2(p−r)−1 microbatches of activations on stage r
//! (about 2p on the first), and no bubble between a stage's first and last
//! pass when F+I ≤ 2W ((p−1)(F+I−2W) otherwise). The stages start (p−1)·F
//! apart as in every pipeline; the source overlaps that skew with the previous
//! iteration's tail by validating the optimizer step afterwards
//! (post-validation, `--optimizer-post-validation`: several iterations are
//! simulated, `lowering/post_validation.rs`); one iteration shows the skew.
//!
//! Where post-validation runs in the next iteration
//! ([`crate::PipelineSchedule::post_validation_point`], in `pipeline_schedule.rs`): the source
//! (sail-sg/zero-bubble-pipeline-parallelism at 39f2c18,
//! `megatron/core/pipeline_parallel/zerobubble/scheduler/communication.py`,
//! `get_post_validation_time` and `add_post_validation_nodes`) places its
//! nodes on stage r just before the forward of microbatch
//! min(2(p−1−r), m−1, n−1) of chunk 0, n being the number of chunk-0
//! forwards the stage's list starts with; the runtime
//! (`zerobubble/runtime.py`, `run_until_post_validation`) runs the forwards
//! before it, then validates, then the rest.

use crate::action::{Action, Pass};
use crate::definition::{PipelineShape, ScheduleDefinition};
use models::sharding::StageMap;

fn action(stage: u32, pass: Pass, microbatch: u32) -> Action {
    Action::new(stage, pass, microbatch, 0)
}

/// Stage `stage`'s ZB-H1 program.
pub fn zb_h1(stage: u32, stages: u32, microbatches: u32) -> Vec<Action> {
    deferred_weight_gradients(stage, stages - stage - 1, stage, microbatches)
}

/// Stage `stage`'s ZB-H2 program.
pub fn zb_h2(stage: u32, stages: u32, microbatches: u32) -> Vec<Action> {
    deferred_weight_gradients(stage, 2 * (stages - stage - 1), 2 * stage, microbatches)
}

/// `warmup` forwards, then F (while any remain), I, and W lagging `lag`
/// microbatches behind I; then the remaining Ws.
fn deferred_weight_gradients(stage: u32, warmup: u32, lag: u32, microbatches: u32) -> Vec<Action> {
    let m = microbatches;
    let warmup = warmup.min(m);
    // W of microbatch i − lag runs after I of microbatch i.
    let lag = lag.min(m);
    let mut list = Vec::with_capacity(3 * m as usize);
    list.extend((0..warmup).map(|mb| action(stage, Pass::Forward, mb)));
    for i in 0..m {
        if warmup + i < m {
            list.push(action(stage, Pass::Forward, warmup + i));
        }
        list.push(action(stage, Pass::InputGradient, i));
        if i >= lag {
            list.push(action(stage, Pass::WeightGradient, i - lag));
        }
    }
    list.extend((m - lag..m).map(|mb| action(stage, Pass::WeightGradient, mb)));
    list
}

/// Zero-bubble ZB-H1 (Qi et al., ICLR 2024): 1F1B with the backward split
/// into input- and weight-gradient passes, the weight gradients deferred
/// into the cool-down; 1F1B's activation memory.
pub struct ZbH1;

/// The zero-bubble runtime that runs ZB-H1, ZB-H2 and ZB-V
/// (sail-sg/zero-bubble-pipeline-parallelism at 39f2c18,
/// `megatron/core/pipeline_parallel/zerobubble/runtime.py`: `flush` posts the
/// batched isend/irecv and "send handles (send_reqs) can simply be dropped";
/// `schedule_f_impl` and `schedule_b_impl` wait only for the receives they
/// consume; no `torch.cuda.synchronize` after its p2p calls, unlike
/// Megatron's 2021 `_communicate`) never waits for a send, as PyTorch's
/// `ScheduleZBVZeroBubble` waits for its sends only at the end of the step.
pub(crate) const ZERO_BUBBLE_SENDS_BLOCK: bool = false;

impl ScheduleDefinition for ZbH1 {
    const NAME: &'static str = "zb-h1";
    const USES_CHUNKS: bool = false;
    const STAGE_MAP: StageMap = StageMap::Interleaved;
    const SPLITS_BACKWARD: bool = true;
    const SENDS_BLOCK: bool = ZERO_BUBBLE_SENDS_BLOCK;

    fn stage_actions(shape: PipelineShape, stage: u32) -> Vec<Action> {
        zb_h1(stage, shape.stages, shape.microbatches)
    }
}

/// Zero-bubble ZB-H2: twice ZB-H1's warm-up and weight-gradient lag; about
/// 2p microbatches of activations, no bubble inside a stage's span when
/// F + I ≤ 2W.
pub struct ZbH2;

impl ScheduleDefinition for ZbH2 {
    const NAME: &'static str = "zb-h2";
    const USES_CHUNKS: bool = false;
    const STAGE_MAP: StageMap = StageMap::Interleaved;
    const SPLITS_BACKWARD: bool = true;
    const SENDS_BLOCK: bool = ZERO_BUBBLE_SENDS_BLOCK;

    fn stage_actions(shape: PipelineShape, stage: u32) -> Vec<Action> {
        zb_h2(stage, shape.stages, shape.microbatches)
    }
}
