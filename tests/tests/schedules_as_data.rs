//! Looped BFS and interleaved microbatch groups through lowering: what the
//! schedule's order changes besides the bubble. Looped BFS runs each chunk's
//! backwards in reverse microbatch order, so its gradients are complete after
//! microbatch 0's backward: that pass, not microbatch m−1's, is the one cut
//! into gradient buckets each all-reduced as it finishes.

use sim::scenario::ScheduleKind;
use std::collections::BTreeMap;
use tests::small_scenario;
use timeline::TaskKind;

#[test]
fn looped_bfs_buckets_each_chunks_last_backward_which_is_microbatch_zero() {
    let (p, v, m) = (4, 2, 8);
    let mut scenario = small_scenario(ScheduleKind::LoopedBfs, 2, p, 2, v, m);
    scenario.options.overlap_grad_reduce = true;
    // 3 layers' parameters per bucket (layer: 12·512² + 13·512, over t = 2):
    // each chunk's 48/8 = 6 layers make 2 buckets (the head joins the first,
    // the embedding the last: `lowering/passes.rs`).
    scenario.options.grad_reduce_bucket_params = Some(3 * (12 * 512 * 512 + 13 * 512) / 2);
    let report = sim::simulate(&scenario).unwrap();
    // Backward tasks per (stage, chunk, microbatch) of data index 0's group.
    let mut pieces: BTreeMap<(u32, u16, u32), usize> = BTreeMap::new();
    for task in report.timeline().tasks.iter() {
        if task.kind == TaskKind::Backward {
            *pieces
                .entry((task.stage, task.chunk, task.microbatch.unwrap()))
                .or_default() += 1;
        }
    }
    // Whole backwards: one task per pass and replica (whatever the
    // replicas' count), the bucketed one twice as many.
    let whole = pieces[&(0, 0, 1)];
    for stage in 0..p {
        for chunk in 0..v as u16 {
            assert_eq!(
                pieces[&(stage, chunk, 0)],
                2 * whole,
                "stage {stage} chunk {chunk}"
            );
            for mb in 1..m {
                assert_eq!(
                    pieces[&(stage, chunk, mb)],
                    whole,
                    "stage {stage} chunk {chunk} mb {mb}"
                );
            }
        }
    }
    // Each of the 2 buckets all-reduced once per (stage, chunk, tensor index of t = 2).
    let all_reduces = report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::DataParallelAllReduce)
        .count();
    assert_eq!(all_reduces, (p * v * 2 * 2) as usize);
}
