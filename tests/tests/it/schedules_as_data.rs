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

/// Megatron-LM 2021's interleaved steady state (`megatron/schedules.py` at
/// de7dc40): a forward directly followed by a backward in a rank's order
/// sends its output only with that backward's gradient, after it; warm-up
/// forwards send at once. The 2022 code (and every later stack) sends each
/// output as soon as its forward ends.
#[test]
fn the_2021_interleaved_schedule_sends_steady_state_outputs_with_the_next_backward() {
    let (p, v, m) = (4, 2, 8);
    let run = |stack: &str| {
        let mut file = tests::small_scenario_file(ScheduleKind::Interleaved, 1, p, 1, v, m);
        file.stack = Some(stack.into());
        let mut scenario = file.resolve().unwrap();
        // Without the host lane, whose send calls would wait for the host's
        // issue of the passes before them (this small model is host-bound).
        scenario.stack.host = None;
        let schedule = sim::plan::schedule_of(&scenario);
        (schedule, sim::simulate(&scenario).unwrap())
    };
    for (stack, combined) in [("megatron-2021", true), ("megatron-2022", false)] {
        let (schedule, report) = run(stack);
        let timeline = report.timeline();
        let find = |kind: TaskKind, stage: u32, chunk: u32, microbatch: u32| {
            timeline
                .tasks
                .iter()
                .find(|t| {
                    t.kind == kind
                        && t.stage == stage
                        && t.chunk as u32 == chunk
                        && t.microbatch == Some(microbatch)
                })
                .unwrap_or_else(|| panic!("{kind:?} s{stage} c{chunk} m{microbatch}"))
        };
        let mut held = 0;
        for (stage, actions) in schedule.actions.iter().enumerate() {
            let stage = stage as u32;
            for pair in actions.windows(2) {
                let (forward, next) = (pair[0], pair[1]);
                // The last virtual stage sends nothing forward.
                if forward.pass != sim::schedule::Pass::Forward
                    || (stage == p - 1 && forward.chunk == v - 1)
                {
                    continue;
                }
                let pass = find(TaskKind::Forward, stage, forward.chunk, forward.microbatch);
                let send = find(
                    TaskKind::PipelineActivation,
                    stage,
                    forward.chunk,
                    forward.microbatch,
                );
                if combined && next.pass == sim::schedule::Pass::Backward {
                    let backward = find(TaskKind::Backward, stage, next.chunk, next.microbatch);
                    assert!(send.start_ns >= backward.end_ns, "{stack}: {forward:?}");
                    held += 1;
                } else {
                    assert_eq!(send.start_ns, pass.end_ns, "{stack}: {forward:?}");
                }
            }
        }
        // Every rank's steady state: m·v − warm-up forwards, less the last
        // virtual stage's (which sends nothing).
        if combined {
            assert!(held >= (p - 1) as usize * 2, "{held}");
        } else {
            assert_eq!(held, 0);
        }
    }
}

/// Megatron-Core's interleaved schedule with microbatch groups of N
/// (`megatron/core/pipeline_parallel/schedules.py`,
/// `forward_backward_pipelining_with_interleaving`): rank r warms up with
/// 2(p−r−1) + (v−1)·N forwards (all of them when m = p, or when that
/// exceeds m·v), then runs one more forward before each backward, so it
/// holds warm-up + 1 microbatch-chunks of activations at its peak.
#[test]
fn interleaved_groups_hold_the_sources_warm_up_plus_one_in_flight() {
    use sim::schedule::flexible_interleaved::group_size_problem;
    use sim::schedule::PipelineSchedule;
    for (p, v, m) in [
        (2, 2, 5),
        (4, 2, 8),
        (4, 2, 10),
        (4, 3, 13),
        (8, 2, 20),
        (3, 4, 9),
    ] {
        for n in p..=m {
            if group_size_problem(p, m, n).is_some() {
                continue;
            }
            let schedule =
                PipelineSchedule::generate_grouped(ScheduleKind::Interleaved, p, v, m, n);
            for r in 0..p {
                let total = m * v;
                let warm_up = if m == p {
                    total
                } else {
                    (2 * (p - r - 1) + (v - 1) * n).min(total)
                };
                assert_eq!(
                    schedule.peak_in_flight(r),
                    (warm_up + 1).min(total),
                    "p={p} v={v} m={m} N={n} r={r}"
                );
            }
        }
    }
}
