//! Interleaved 1F1B with flexible microbatch groups, as Megatron-Core runs it
//! (`megatron/core/pipeline_parallel/schedules.py`:
//! `forward_backward_pipelining_with_interleaving`, `get_schedule_table`,
//! `get_pp_rank_microbatches`; `--microbatch-group-size-per-vp-stage` N).
//!
//! The schedule table lists the (microbatch, chunk) of every virtual
//! microbatch: the microbatches are cut into groups of N consecutive ones
//! (the last group takes whatever remains), and each group runs through every
//! chunk in turn. The k-th forward of a rank runs table entry k; its k-th
//! backward runs table entry k on the mirrored chunk v−1−c (a chunk's
//! backwards pop its inputs in forward order, so the microbatch is the
//! table's). Rank r warms up with 2(p−r−1) + (v−1)·N forwards (all of them
//! when that reaches m·v), then alternates one forward and one backward, then
//! drains the backwards.
//!
//! Megatron-Core requires p ≤ N ≤ m, and refuses a last group of fewer than
//! p microbatches ("it introduces dependency bubbles"). N = p with m a
//! multiple of p is the SC21 interleaved schedule; as Megatron-LM of that
//! time did, m = p runs every forward first (Megatron-Core today warms up
//! 2(p−r−1) + (v−1)p there, the same on rank 0).

use crate::action::{backward, forward, Action};
use crate::definition::{PipelineShape, ScheduleDefinition};
use models::sharding::StageMap;

/// Megatron-Core's schedule table: the (microbatch, chunk) of each virtual
/// microbatch k, in order.
pub fn schedule_table(microbatches: u32, chunks: u32, group_size: u32) -> Vec<(u32, u32)> {
    let group_size = group_size.max(1);
    let mut table = Vec::with_capacity(microbatches as usize * chunks as usize);
    let mut first = 0;
    while first < microbatches {
        // The last group takes every microbatch left.
        let end = if first.saturating_add(group_size) >= microbatches {
            microbatches
        } else {
            first + group_size
        };
        for chunk in 0..chunks {
            table.extend((first..end).map(|mb| (mb, chunk)));
        }
        first = end;
    }
    table
}

/// Why Megatron-Core refuses a microbatch group size N for (p, m), or None.
pub fn group_size_problem(stages: u32, microbatches: u32, group_size: u32) -> Option<String> {
    if group_size < stages || group_size > microbatches {
        return Some(format!(
            "microbatch_group_size: {group_size} must lie in [pp, m] = [{stages}, {microbatches}] (Megatron-Core's --microbatch-group-size-per-vp-stage)"
        ));
    }
    let last = microbatches % group_size;
    if last > 0 && last < stages {
        // The smallest valid N near p (a bounded search: m = N, one group,
        // is always valid).
        let whole = (stages..=microbatches)
            .take(1024)
            .find(|&n| microbatches.is_multiple_of(n) || microbatches % n >= stages)
            .unwrap_or(microbatches);
        return Some(format!(
            "microbatch_group_size: m = {microbatches} leaves a last group of {last} microbatches, fewer than pp = {stages}, which Megatron-Core refuses (dependency bubbles); use a group size N with m mod N = 0 or ≥ pp, e.g. {whole}"
        ));
    }
    None
}

/// Rank `stage`'s interleaved program with microbatch groups of `group_size`.
pub fn interleaved_grouped(
    stage: u32,
    stages: u32,
    chunks: u32,
    microbatches: u32,
    group_size: u32,
) -> Vec<Action> {
    let table = schedule_table(microbatches, chunks, group_size);
    let total = table.len() as u32;
    let warmup = if microbatches == stages {
        total
    } else {
        ((stages - stage - 1) as u64 * 2 + (chunks as u64 - 1) * group_size as u64)
            .min(total as u64) as u32
    };
    let steady = total - warmup;
    let fwd = |k: u32| {
        let (mb, chunk) = table[k as usize];
        forward(stage, mb, chunk)
    };
    let bwd = |k: u32| {
        let (mb, chunk) = table[k as usize];
        backward(stage, mb, chunks - 1 - chunk)
    };
    let mut list = Vec::with_capacity(2 * total as usize);
    list.extend((0..warmup).map(fwd));
    for i in 0..steady {
        list.push(fwd(warmup + i));
        list.push(bwd(i));
    }
    list.extend((steady..total).map(bwd));
    list
}

/// Megatron's interleaved 1F1B over `chunks` model chunks per stage, in
/// microbatch groups of N (p unless set).
pub struct Interleaved;

impl ScheduleDefinition for Interleaved {
    const NAME: &'static str = "interleaved";
    const USES_CHUNKS: bool = true;
    const STAGE_MAP: StageMap = StageMap::Interleaved;
    const SPLITS_BACKWARD: bool = false;
    const SENDS_BLOCK: bool = true;

    fn stage_actions(shape: PipelineShape, stage: u32) -> Vec<Action> {
        interleaved_grouped(
            stage,
            shape.stages,
            shape.chunks,
            shape.microbatches,
            shape.group_size,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_reads_as_megatron_cores_example() {
        // schedules.py's comment: PP2 N3 M5 with VP2.
        let table = schedule_table(5, 2, 3);
        let microbatches: Vec<u32> = table.iter().map(|e| e.0).collect();
        let chunks: Vec<u32> = table.iter().map(|e| e.1).collect();
        assert_eq!(microbatches, vec![0, 1, 2, 0, 1, 2, 3, 4, 3, 4]);
        assert_eq!(chunks, vec![0, 0, 0, 1, 1, 1, 0, 0, 1, 1]);
    }

    #[test]
    fn group_size_p_reproduces_the_sc21_interleaved_order() {
        for p in [2, 3, 4, 8] {
            for v in [2, 3, 4] {
                for m in [p, 2 * p, 3 * p, 8 * p] {
                    for stage in 0..p {
                        assert_eq!(
                            interleaved_grouped(stage, p, v, m, p),
                            super::super::interleaved(stage, p, v, m),
                            "p={p} v={v} m={m} stage {stage}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn megatron_cores_group_bounds_are_enforced() {
        assert_eq!(group_size_problem(4, 10, 5), None);
        assert_eq!(group_size_problem(4, 10, 6), None); // last group of 4 = p
        assert_eq!(group_size_problem(4, 10, 10), None);
        let small = group_size_problem(4, 10, 3).unwrap();
        assert!(small.contains("[pp, m] = [4, 10]"), "{small}");
        assert!(group_size_problem(4, 10, 11).is_some());
        let remainder = group_size_problem(4, 10, 4).unwrap();
        assert!(remainder.contains("last group of 2"), "{remainder}");
        assert!(remainder.contains("e.g. 5"), "{remainder}");
        // A huge prime m: the suggestion search stays bounded.
        let prime = group_size_problem(1 << 20, 4_294_967_291, (1 << 20) + 1).unwrap();
        assert!(prime.contains("e.g."), "{prime}");
    }

    #[test]
    fn every_forward_and_backward_runs_once_with_each_backward_after_its_forward() {
        for (p, v, m, n) in [
            (4, 2, 10, 5),
            (4, 3, 10, 6),
            (2, 2, 5, 3),
            (3, 4, 7, 7),
            (8, 2, 17, 9),
        ] {
            for stage in 0..p {
                let list = interleaved_grouped(stage, p, v, m, n);
                assert_eq!(list.len() as u32, 2 * m * v);
                let mut seen: Vec<_> = list
                    .iter()
                    .map(|a| (a.pass, a.microbatch, a.chunk))
                    .collect();
                seen.sort();
                seen.dedup();
                assert_eq!(seen.len() as u32, 2 * m * v, "p={p} v={v} m={m} N={n}");
                for (i, action) in list.iter().enumerate() {
                    if action.pass == super::super::Pass::Backward {
                        assert!(list[..i]
                            .iter()
                            .any(|f| f.pass == super::super::Pass::Forward
                                && f.microbatch == action.microbatch
                                && f.chunk == action.chunk));
                    }
                }
            }
        }
    }
}
