//! The flush schedules: GPipe (Huang et al. 2019), all forwards then all
//! backwards; and 1F1B / PipeDream-Flush (Narayanan et al. 2021), stage s
//! running min(p−s−1, m) warm-up forwards, then one forward and one backward
//! in turn, then the remaining backwards (Megatron-LM
//! `forward_backward_pipelining_without_interleaving`).

use crate::action::{backward, forward, Action};
use crate::definition::{PipelineShape, ScheduleDefinition};
use models::sharding::StageMap;

/// GPipe: all forwards, then all backwards.
pub struct Gpipe;

impl ScheduleDefinition for Gpipe {
    const NAME: &'static str = "gpipe";
    const USES_CHUNKS: bool = false;
    const STAGE_MAP: StageMap = StageMap::Interleaved;
    const SPLITS_BACKWARD: bool = false;
    const SENDS_BLOCK: bool = true;

    fn stage_actions(shape: PipelineShape, stage: u32) -> Vec<Action> {
        gpipe(stage, shape.microbatches)
    }
}

/// PipeDream-Flush: warm-up forwards, steady one-forward-one-backward,
/// cool-down.
pub struct OneFOneB;

impl ScheduleDefinition for OneFOneB {
    const NAME: &'static str = "1f1b";
    const USES_CHUNKS: bool = false;
    const STAGE_MAP: StageMap = StageMap::Interleaved;
    const SPLITS_BACKWARD: bool = false;
    const SENDS_BLOCK: bool = true;

    fn stage_actions(shape: PipelineShape, stage: u32) -> Vec<Action> {
        one_f_one_b(stage, shape.stages, shape.microbatches)
    }
}

fn gpipe(stage: u32, microbatches: u32) -> Vec<Action> {
    let forwards = (0..microbatches).map(|mb| forward(stage, mb, 0));
    let backwards = (0..microbatches).map(|mb| backward(stage, mb, 0));
    forwards.chain(backwards).collect()
}

fn one_f_one_b(stage: u32, stages: u32, microbatches: u32) -> Vec<Action> {
    let warmup = (stages - stage - 1).min(microbatches);
    let steady = microbatches - warmup;
    let mut list = Vec::with_capacity(2 * microbatches as usize);
    list.extend((0..warmup).map(|mb| forward(stage, mb, 0)));
    for i in 0..steady {
        list.push(forward(stage, warmup + i, 0));
        list.push(backward(stage, i, 0));
    }
    list.extend((steady..microbatches).map(|mb| backward(stage, mb, 0)));
    list
}
