//! Looped BFS (PyTorch `torch.distributed.pipelining.schedules.ScheduleLoopedBFS`,
//! `_calculate_single_rank_operations`; Lamy-Poirier, "Breadth-First Pipeline
//! Parallelism", 2023): rank r holds the virtual stages r + k·p (the
//! interleaved stage map, chunk k of rank r); it runs all m forwards of each
//! local stage in stage order, then all m backwards of each local stage in
//! reverse stage order, each stage's backwards in reverse microbatch order.
//!
//! Under uniform costs (forward f, backward b per chunk) and free
//! communication every rank idles (p−1)(f+b) = (p−1)(F+B)/v when m ≥ p, like
//! interleaved 1F1B; with m < p each of the v chunk hand-overs waits for the
//! pipeline to fill, and the iteration takes (p·v + m − 1)(f+b). Every rank
//! holds all m·v microbatch-chunks of activations before its first backward.

use crate::action::{backward, forward, Action};
use crate::definition::{PipelineShape, ScheduleDefinition};
use models::sharding::StageMap;

/// Rank `stage`'s looped-BFS program over `chunks` local stages.
pub fn looped_bfs(stage: u32, chunks: u32, microbatches: u32) -> Vec<Action> {
    let mut list = Vec::with_capacity(2 * (chunks as usize) * (microbatches as usize));
    for chunk in 0..chunks {
        list.extend((0..microbatches).map(|mb| forward(stage, mb, chunk)));
    }
    for chunk in (0..chunks).rev() {
        list.extend((0..microbatches).rev().map(|mb| backward(stage, mb, chunk)));
    }
    list
}

/// PyTorch's `ScheduleLoopedBFS`: the interleaved stage map (rank r holds
/// stages r + k·p), every forward of each local stage in turn, then the
/// backwards in reverse; m·v microbatch-chunks of activations.
pub struct LoopedBfs;

impl ScheduleDefinition for LoopedBfs {
    const NAME: &'static str = "looped-bfs";
    const USES_CHUNKS: bool = true;
    const STAGE_MAP: StageMap = StageMap::Interleaved;
    const SPLITS_BACKWARD: bool = false;
    const SENDS_BLOCK: bool = true;

    fn stage_actions(shape: PipelineShape, stage: u32) -> Vec<Action> {
        looped_bfs(stage, shape.chunks, shape.microbatches)
    }
}

#[cfg(test)]
mod tests {
    use crate::kind::ScheduleKind;
    use crate::pipeline_schedule::PipelineSchedule;

    #[test]
    fn rank_programs_read_as_pytorchs_looped_bfs() {
        // p = 2, v = 2, m = 3: rank 1 holds stages 1 and 3.
        let schedule = PipelineSchedule::generate(ScheduleKind::LoopedBfs, 2, 2, 3);
        let text = schedule.to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "s1F0 s1F1 s1F2 s1F0c1 s1F1c1 s1F2c1 s1B2c1 s1B1c1 s1B0c1 s1B2 s1B1 s1B0"
        );
        assert_eq!(
            PipelineSchedule::parse_actions(&text).unwrap(),
            schedule.actions
        );
    }

    #[test]
    fn every_rank_holds_all_m_times_v_microbatch_chunks() {
        for (p, v, m) in [(4, 2, 8), (2, 3, 1), (8, 4, 5), (1, 2, 3)] {
            let schedule = PipelineSchedule::generate(ScheduleKind::LoopedBfs, p, v, m);
            for stage in 0..p {
                assert_eq!(schedule.peak_in_flight(stage), m * v, "p={p} v={v} m={m}");
                assert_eq!(schedule.actions[stage as usize].len() as u32, 2 * m * v);
            }
        }
    }
}
