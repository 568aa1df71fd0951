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
//! (post-validation), which a one-iteration simulation does not show.

use super::{Action, Pass};

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
