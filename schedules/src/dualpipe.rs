//! DualPipe (DeepSeek-V3 technical report, Sec. 3.2.1; deepseek-ai/DualPipe
//! `dualpipe/dualpipe.py`, `DualPipe.step`): p ranks (p even), two copies of
//! the model each cut into p stages (`models::stage_map::StageMap::DualPipe`:
//! rank r holds copy A's stage r as chunk 0 and copy B's stage p−1−r as
//! chunk 1). Of the m microbatches (m even, m ≥ 2p, as `step` asserts) the
//! first m/2 enter copy A on rank 0 and the other m/2 copy B on rank p−1;
//! each chunk's microbatches are numbered 0 … m/2−1 (`s0F3c1` is copy B's
//! fourth).
//!
//! With h = min(r, p−1−r) and P = p/2, the source's eight steps, where its
//! "phase 0" is copy A on the first half of the ranks and copy B on the
//! second (`phase ^= self.is_in_second_half`):
//! 1. 2(P−h−1) F of phase 0;
//! 2. (h+1) × [F phase 0, F phase 1];
//! 3. (P−h−1) × [I phase 1 (its W queued), W, F phase 1];
//! 4. (m/2−p+h+1) × [F phase 0 & B phase 1, F phase 1 & B phase 0] — on
//!    the two middle ranks (P−1 and P) the first pair runs as F then B,
//!    "not overlapped to further reduce bubble size";
//! 5. (P−h−1) × [B phase 1, F phase 1 & B phase 0];
//! 6. (h+1) × [B phase 1, B phase 0], each becoming I with its W queued
//!    from index (h+1) div 2 on (before phase 1's when h is odd, before
//!    phase 0's when even);
//! 7. (P−h−1) × [W, I phase 0];
//! 8. (h+1) × W.
//!
//! The W queue is first in, first out (`WeightGradStore`). These are
//! DualPipeV's phases (`v_shape.rs`) with h for r and P for p: the README's
//! bubble (PP/2−1)(F&B+B−3W) with PP = p, and PP+1 = p+1 chunk-microbatches
//! of activations per rank, each a stage of one copy.

use super::v_shape::DualPipeVState;
use crate::action::Action;
use crate::definition::{PipelineShape, ScheduleDefinition};
use models::sharding::StageMap;

/// Rank `rank`'s DualPipe program; the caller has checked that p is even,
/// m even and m ≥ 2p.
pub fn dualpipe(rank: u32, ranks: u32, microbatches: u32) -> Vec<Action> {
    let (p, r, m) = (ranks, rank, microbatches);
    let half_ranks = p / 2;
    let h = r.min(p - 1 - r);
    let second_half = r >= half_ranks;
    let middle = r + 1 == half_ranks || r == half_ranks;
    // The source's phase → this rank's chunk (0: copy A, 1: copy B).
    let chunk = |phase: u32| phase ^ u32::from(second_half);
    let mut state = DualPipeVState {
        rank,
        forward: [0; 2],
        backward: [0; 2],
        weights_owed: Default::default(),
        list: Vec::with_capacity(3 * m as usize),
    };
    // 1: nF0.
    for _ in 0..2 * (half_ranks - h - 1) {
        state.forward(chunk(0));
    }
    // 2: nF0F1.
    for _ in 0..h + 1 {
        state.forward(chunk(0));
        state.forward(chunk(1));
    }
    // 3: nB1W1F1, zero bubble.
    for _ in 0..half_ranks - h - 1 {
        state.backward(chunk(1), true);
        state.owed_weight();
        state.forward(chunk(1));
    }
    // 4: nF0B1F1B0, the main step.
    for index in 0..(m / 2 + h + 1 - p) {
        if index == 0 && middle {
            state.forward(chunk(0));
            state.backward(chunk(1), false);
        } else {
            state.forward_backward(chunk(0), chunk(1));
        }
        state.forward_backward(chunk(1), chunk(0));
    }
    // 5: nB1F1B0.
    for _ in 0..half_ranks - h - 1 {
        state.backward(chunk(1), false);
        state.forward_backward(chunk(1), chunk(0));
    }
    // 6: nB1B0, the second half zero bubble.
    let mut split = false;
    let steps = h + 1;
    for index in 0..steps {
        if index == steps / 2 && h % 2 == 1 {
            split = true;
        }
        state.backward(chunk(1), split);
        if index == steps / 2 && h % 2 == 0 {
            split = true;
        }
        state.backward(chunk(0), split);
    }
    // 7: nWB0, zero bubble.
    for _ in 0..half_ranks - h - 1 {
        state.owed_weight();
        state.backward(chunk(0), true);
    }
    // 8: nW.
    for _ in 0..h + 1 {
        state.owed_weight();
    }
    debug_assert!(state.weights_owed.is_empty());
    debug_assert!(state.forward == [m / 2; 2] && state.backward == [m / 2; 2]);
    state.list
}

/// DualPipe (DeepSeek-V3 report; deepseek-ai/DualPipe `dualpipe.py`): two
/// parameter copies (rank r holds stage r of one and stage p−1−r of the
/// other), half the microbatches fed from each end, F&B pairs (costed back
/// to back).
pub struct DualPipe;

impl ScheduleDefinition for DualPipe {
    const NAME: &'static str = "dualpipe";
    const USES_CHUNKS: bool = true;
    const STAGE_MAP: StageMap = StageMap::DualPipe;
    const SPLITS_BACKWARD: bool = true;
    const SENDS_BLOCK: bool = true;

    fn stage_actions(shape: PipelineShape, stage: u32) -> Vec<Action> {
        dualpipe(stage, shape.stages, shape.microbatches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Pass;

    fn text(list: &[Action]) -> String {
        list.iter()
            .map(Action::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn dualpipe_on_two_ranks_reads_as_the_source_runs_it() {
        // p = 2, m = 4 (2 per copy): h = 0, P = 1, both ranks middle ranks.
        // Rank 0: step 2 F₀ F₁; step 4 (m/2−p+1 = 1): F₀ then B₁ (middle,
        // not overlapped), F₁&B₀; step 6: B₁ then, from index 0 (h even,
        // after B₁), I₀ queued; step 8: W₀.
        assert_eq!(
            text(&dualpipe(0, 2, 4)),
            "s0F0 s0F0c1 s0F1 s0B0c1 s0F1c1&B0 s0B1c1 s0I1 s0W1"
        );
        // Rank 1 is rank 0 mirrored: its phase 0 is copy B (chunk 1).
        assert_eq!(
            text(&dualpipe(1, 2, 4)),
            "s1F0c1 s1F0 s1F1c1 s1B0 s1F1&B0c1 s1B1 s1I1c1 s1W1c1"
        );
    }

    #[test]
    fn every_pass_of_each_copy_runs_once_in_order() {
        for (p, m) in [
            (2, 4),
            (2, 6),
            (4, 8),
            (4, 10),
            (4, 16),
            (6, 12),
            (8, 16),
            (8, 40),
        ] {
            for rank in 0..p {
                let list: Vec<Action> = dualpipe(rank, p, m)
                    .iter()
                    .flat_map(Action::halves)
                    .collect();
                for chunk in 0..2 {
                    for mb in 0..m / 2 {
                        let at = |pass: Pass| {
                            list.iter()
                                .enumerate()
                                .filter(|(_, a)| {
                                    a.pass == pass && a.microbatch == mb && a.chunk == chunk
                                })
                                .map(|(i, _)| i)
                                .collect::<Vec<_>>()
                        };
                        let forward = at(Pass::Forward);
                        assert_eq!(forward.len(), 1, "p={p} m={m} r={rank}");
                        let whole = at(Pass::Backward);
                        if whole.len() == 1 {
                            assert!(forward[0] < whole[0]);
                            assert!(at(Pass::InputGradient).is_empty());
                        } else {
                            let (i, w) = (at(Pass::InputGradient), at(Pass::WeightGradient));
                            assert_eq!((i.len(), w.len()), (1, 1), "p={p} m={m} r={rank}");
                            assert!(forward[0] < i[0] && i[0] < w[0]);
                        }
                    }
                }
            }
        }
    }
}
