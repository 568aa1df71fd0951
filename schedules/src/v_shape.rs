//! V-shaped schedules: two model chunks per rank on the V map (rank r holds
//! virtual stages r and 2p−1−r: chunk 0 runs down the ranks, chunk 1 comes
//! back up; `models::sharding::StageMap::V`). Actions name the rank and its
//! local chunk (0: stage r, 1: stage 2p−1−r).
//!
//! ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Sec. 6;
//! PyTorch `torch/distributed/pipelining/schedules.py`
//! `ScheduleZBVZeroBubble._calculate_single_rank_operations`): rank r runs
//! 2(p−r)−1 forwards of chunk 0; r × [F₁, F₀]; (p−r) × [F₁, I₁, W₁]; then
//! [F₀ (while any remain), I₀, W₀, F₁, I₁, W₁] until chunk 1's forwards have
//! caught up; cool-down r × [I₀, I₁], (p−r) × [I₀, W₀], the remaining W₁,
//! then the remaining W₀. The source builds it for max(2p−1, m) microbatches
//! and drops the actions of microbatches ≥ m, as done here. Its bubble is
//! (p−1)(F+I−2W) (the paper's Sec. 6), none when F = I = W; its peak
//! activation memory 1F1B's (2p chunk-microbatches = p whole-stage ones).
//!
//! DualPipeV (deepseek-ai/DualPipe `dualpipev.py`; PyTorch
//! `ScheduleDualPipeV._calculate_single_rank_operations`), m ≥ 2p: eight
//! phases on rank r: 2(p−r−1) F₀; (r+1) × [F₀, F₁]; (p−r−1) × [I₁, W, F₁];
//! (m−2p+r+1) × [F₀&B₁, F₁&B₀] (on the last rank the first pair runs as F₀
//! then B₁); (p−r−1) × [B₁, F₁&B₀]; (r+1) × [B₁, B₀], a backward becoming an
//! input-gradient pass with its W queued from the midpoint on (before B₁ on
//! odd ranks, before B₀ on even ones); (p−r−1) × [W, I₀]; (r+1) × W. The W
//! queue is first in, first out. Bubble (p−1)(F&B+B−3W) (the DualPipe
//! README, PP = 2p stages); activations 2p+1 chunk-microbatches per rank
//! (README: PP+1).

use crate::action::{Action, Paired, Pass};
use crate::definition::{PipelineShape, ScheduleDefinition};
use models::sharding::StageMap;

/// Rank `rank`'s ZB-V program.
pub fn zb_v(rank: u32, ranks: u32, microbatches: u32) -> Vec<Action> {
    let p = ranks;
    let r = rank;
    // The source fills at least 2p−1 microbatches and drops the surplus.
    let count = microbatches.max(2 * p - 1);
    let mut list = Vec::with_capacity(6 * count as usize);
    let act = |list: &mut Vec<Action>, pass, microbatch, chunk| {
        list.push(Action::new(rank, pass, microbatch, chunk));
    };
    let (mut forward0, mut forward1, mut backward0, mut backward1) = (0, 0, 0, 0);
    for _ in 0..2 * (p - r) - 1 {
        act(&mut list, Pass::Forward, forward0, 0);
        forward0 += 1;
    }
    for _ in 0..r {
        act(&mut list, Pass::Forward, forward1, 1);
        forward1 += 1;
        act(&mut list, Pass::Forward, forward0, 0);
        forward0 += 1;
    }
    for _ in 0..p - r {
        act(&mut list, Pass::Forward, forward1, 1);
        forward1 += 1;
        act(&mut list, Pass::InputGradient, backward1, 1);
        act(&mut list, Pass::WeightGradient, backward1, 1);
        backward1 += 1;
    }
    while forward1 < forward0 || forward0 < count {
        if forward0 < count {
            act(&mut list, Pass::Forward, forward0, 0);
            forward0 += 1;
        }
        act(&mut list, Pass::InputGradient, backward0, 0);
        act(&mut list, Pass::WeightGradient, backward0, 0);
        backward0 += 1;
        act(&mut list, Pass::Forward, forward1, 1);
        forward1 += 1;
        act(&mut list, Pass::InputGradient, backward1, 1);
        act(&mut list, Pass::WeightGradient, backward1, 1);
        backward1 += 1;
    }
    let (mut weight0, mut weight1) = (backward0, backward1);
    for _ in 0..r {
        act(&mut list, Pass::InputGradient, backward0, 0);
        backward0 += 1;
        act(&mut list, Pass::InputGradient, backward1, 1);
        backward1 += 1;
    }
    for _ in 0..p - r {
        act(&mut list, Pass::InputGradient, backward0, 0);
        backward0 += 1;
        act(&mut list, Pass::WeightGradient, weight0, 0);
        weight0 += 1;
    }
    while weight1 < backward1 {
        act(&mut list, Pass::WeightGradient, weight1, 1);
        weight1 += 1;
    }
    while weight0 < backward0 {
        act(&mut list, Pass::WeightGradient, weight0, 0);
        weight0 += 1;
    }
    debug_assert!(weight0 == backward0 && backward0 == forward0 && forward0 == count);
    debug_assert!(weight1 == backward1 && backward1 == forward1 && forward1 == count);
    list.retain(|action| action.microbatch < microbatches);
    list
}

/// DualPipeV's running state on one rank: the next microbatch of every
/// (chunk, pass) and the queue of weight-gradient passes owed.
/// DualPipe (`dualpipe.rs`) runs the same state with chunks named per copy.
pub(super) struct DualPipeVState {
    pub(super) rank: u32,
    pub(super) forward: [u32; 2],
    pub(super) backward: [u32; 2],
    pub(super) weights_owed: std::collections::VecDeque<(u32, u32)>,
    pub(super) list: Vec<Action>,
}

impl DualPipeVState {
    pub(super) fn forward(&mut self, chunk: u32) {
        let microbatch = self.forward[chunk as usize];
        self.forward[chunk as usize] += 1;
        self.list
            .push(Action::new(self.rank, Pass::Forward, microbatch, chunk));
    }

    /// A whole backward (`split` false) or its input-gradient half with the
    /// weight-gradient half queued.
    pub(super) fn backward(&mut self, chunk: u32, split: bool) {
        let microbatch = self.backward[chunk as usize];
        self.backward[chunk as usize] += 1;
        let pass = if split {
            self.weights_owed.push_back((microbatch, chunk));
            Pass::InputGradient
        } else {
            Pass::Backward
        };
        self.list
            .push(Action::new(self.rank, pass, microbatch, chunk));
    }

    pub(super) fn forward_backward(&mut self, forward_chunk: u32, backward_chunk: u32) {
        let microbatch = self.forward[forward_chunk as usize];
        self.forward[forward_chunk as usize] += 1;
        let backward = Paired {
            microbatch: self.backward[backward_chunk as usize],
            chunk: backward_chunk,
        };
        self.backward[backward_chunk as usize] += 1;
        self.list.push(Action::forward_backward(
            self.rank,
            microbatch,
            forward_chunk,
            backward,
        ));
    }

    pub(super) fn owed_weight(&mut self) {
        if let Some((microbatch, chunk)) = self.weights_owed.pop_front() {
            self.list.push(Action::new(
                self.rank,
                Pass::WeightGradient,
                microbatch,
                chunk,
            ));
        }
    }
}

/// Rank `rank`'s DualPipeV program; the caller has checked m ≥ 2p.
pub fn dualpipe_v(rank: u32, ranks: u32, microbatches: u32) -> Vec<Action> {
    let (p, r, m) = (ranks, rank, microbatches);
    let mut state = DualPipeVState {
        rank,
        forward: [0; 2],
        backward: [0; 2],
        weights_owed: Default::default(),
        list: Vec::with_capacity(6 * m as usize),
    };
    // 1: warm-up forwards of chunk 0.
    for _ in 0..2 * (p - r - 1) {
        state.forward(0);
    }
    // 2: both chunks' forwards.
    for _ in 0..r + 1 {
        state.forward(0);
        state.forward(1);
    }
    // 3: chunk 1's zero-bubble backward, its W at once, a forward.
    for _ in 0..p - r - 1 {
        state.backward(1, true);
        state.owed_weight();
        state.forward(1);
    }
    // 4: the steady state, overlapped pairs.
    for index in 0..(m + r + 1 - 2 * p) {
        if index == 0 && r == p - 1 {
            state.forward(0);
            state.backward(1, false);
        } else {
            state.forward_backward(0, 1);
        }
        state.forward_backward(1, 0);
    }
    // 5: chunk 1's backwards with the last pairs.
    for _ in 0..p - r - 1 {
        state.backward(1, false);
        state.forward_backward(1, 0);
    }
    // 6: both backwards, split from the midpoint on.
    let mut split = false;
    let steps = r + 1;
    let midpoint = steps / 2;
    for index in 0..steps {
        if index == midpoint && r % 2 == 1 {
            split = true;
        }
        state.backward(1, split);
        if index == midpoint && r % 2 == 0 {
            split = true;
        }
        state.backward(0, split);
    }
    // 7: an owed W, then chunk 0's next backward (split by now).
    for _ in 0..p - r - 1 {
        state.owed_weight();
        state.backward(0, split);
    }
    // 8: the remaining Ws.
    for _ in 0..r + 1 {
        state.owed_weight();
    }
    debug_assert!(state.weights_owed.is_empty());
    state.list
}

/// Zero-bubble ZB-V (Qi et al. 2024, Sec. 6; PyTorch
/// `ScheduleZBVZeroBubble`): two chunks per rank on the V map, split
/// backwards; no bubble inside a rank's span when F = I = W.
pub struct ZbV;

impl ScheduleDefinition for ZbV {
    const NAME: &'static str = "zb-v";
    const USES_CHUNKS: bool = true;
    const STAGE_MAP: StageMap = StageMap::V;
    const SPLITS_BACKWARD: bool = true;
    const SENDS_BLOCK: bool = crate::zero_bubble::ZERO_BUBBLE_SENDS_BLOCK;

    fn stage_actions(shape: PipelineShape, stage: u32) -> Vec<Action> {
        zb_v(stage, shape.stages, shape.microbatches)
    }
}

/// DualPipeV (deepseek-ai/DualPipe `dualpipev.py`; PyTorch
/// `ScheduleDualPipeV`): DualPipe cut in half onto the V map, with
/// forward/backward pairs of the two chunks (costed back to back).
pub struct DualPipeV;

impl ScheduleDefinition for DualPipeV {
    const NAME: &'static str = "dualpipev";
    const USES_CHUNKS: bool = true;
    const STAGE_MAP: StageMap = StageMap::V;
    const SPLITS_BACKWARD: bool = true;
    const SENDS_BLOCK: bool = true;

    fn stage_actions(shape: PipelineShape, stage: u32) -> Vec<Action> {
        dualpipe_v(stage, shape.stages, shape.microbatches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(list: &[Action]) -> String {
        list.iter()
            .map(Action::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn zb_v_on_two_ranks_reads_as_the_source_builds_it() {
        // p = 2, m = 4: rank 0 warms up with 3 F₀, then (p−r) = 2 × [F₁ I₁ W₁].
        assert_eq!(
            text(&zb_v(0, 2, 4)),
            "s0F0 s0F1 s0F2 s0F0c1 s0I0c1 s0W0c1 s0F1c1 s0I1c1 s0W1c1 \
             s0F3 s0I0 s0W0 s0F2c1 s0I2c1 s0W2c1 s0I1 s0W1 s0F3c1 s0I3c1 s0W3c1 \
             s0I2 s0W2 s0I3 s0W3"
        );
        assert_eq!(
            text(&zb_v(1, 2, 4)),
            "s1F0 s1F0c1 s1F1 s1F1c1 s1I0c1 s1W0c1 \
             s1F2 s1I0 s1W0 s1F2c1 s1I1c1 s1W1c1 s1F3 s1I1 s1W1 s1F3c1 s1I2c1 s1W2c1 \
             s1I2 s1I3c1 s1I3 s1W2 s1W3c1 s1W3"
        );
    }

    #[test]
    fn every_v_schedule_runs_each_pass_of_each_chunk_once_in_order() {
        for (p, m) in [
            (1, 1),
            (1, 4),
            (2, 4),
            (2, 1),
            (3, 5),
            (4, 8),
            (4, 13),
            (8, 16),
        ] {
            for (name, list_of) in [
                ("zb-v", zb_v as fn(u32, u32, u32) -> Vec<Action>),
                ("dualpipev", dualpipe_v),
            ] {
                if name == "dualpipev" && m < 2 * p {
                    continue;
                }
                for rank in 0..p {
                    let list: Vec<Action> = list_of(rank, p, m)
                        .iter()
                        .flat_map(Action::halves)
                        .collect();
                    for chunk in 0..2 {
                        for mb in 0..m {
                            let at = |passes: &[Pass]| {
                                let found: Vec<usize> = list
                                    .iter()
                                    .enumerate()
                                    .filter(|(_, a)| {
                                        passes.contains(&a.pass)
                                            && a.microbatch == mb
                                            && a.chunk == chunk
                                    })
                                    .map(|(i, _)| i)
                                    .collect();
                                found
                            };
                            let forward = at(&[Pass::Forward]);
                            let whole = at(&[Pass::Backward]);
                            let (input, weight) =
                                (at(&[Pass::InputGradient]), at(&[Pass::WeightGradient]));
                            assert_eq!(forward.len(), 1, "{name} p={p} m={m} r={rank}");
                            if whole.len() == 1 {
                                assert!(input.is_empty() && weight.is_empty());
                                assert!(forward[0] < whole[0]);
                            } else {
                                assert_eq!((input.len(), weight.len()), (1, 1), "{name}");
                                assert!(forward[0] < input[0] && input[0] < weight[0]);
                            }
                        }
                    }
                }
            }
        }
    }
}
