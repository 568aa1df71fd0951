//! Analytical checks of the pipeline schedules: with uniform per-microbatch
//! costs and free communication, the compute-stream idle time of every rank is
//! exactly (p−1)/m of the ideal time for GPipe and 1F1B and (p−1)/(v·m) for
//! interleaved 1F1B (with Megatron-Core's microbatch groups of any N too)
//! and for looped BFS when m ≥ p, in integer nanoseconds.

use sim::scenario::ScheduleKind;
use sim::task::StreamKind;
use sim::task_graph::{ComputePass, Work};
use sim::time::SimDuration;
use tests::small_scenario;

const FORWARD_NS: u64 = 1_200; // divisible by every v the tests use
const BACKWARD_NS: u64 = 2_400;

/// Idle ns of every rank's compute stream and the makespan, with forward
/// FORWARD_NS/v and backward BACKWARD_NS/v per chunk and everything else free.
fn idle_per_rank(
    schedule: ScheduleKind,
    pp: u32,
    chunks: u32,
    microbatches: u32,
) -> (Vec<u64>, u64) {
    idle_of(&small_scenario(schedule, 2, pp, 2, chunks, microbatches))
}

/// [`idle_per_rank`] of a given scenario.
fn idle_of(scenario: &sim::scenario::Scenario) -> (Vec<u64>, u64) {
    let chunks = scenario.layout.chunks;
    let scenario = scenario.clone();
    let (_, graph) = sim::build_graph(&scenario);
    let costs = sim::uniform_costs(&graph, |work| match work {
        Work::Compute {
            pass: ComputePass::Forward,
            ..
        } => SimDuration(FORWARD_NS / chunks.get() as u64),
        Work::Compute {
            pass: ComputePass::Backward,
            ..
        } => SimDuration(BACKWARD_NS / chunks.get() as u64),
        _ => SimDuration::ZERO,
    });
    let (timeline, _) = sim::run_graph(&scenario, &graph, &costs).unwrap();
    let makespan = timeline.makespan_ns();
    let mut busy = vec![0u64; timeline.header.n_gpus as usize];
    for task in timeline
        .tasks
        .iter()
        .filter(|t| t.stream == StreamKind::Compute)
    {
        for &rank in &timeline.header.groups[task.group as usize] {
            busy[rank as usize] += task.duration_ns();
        }
    }
    (busy.iter().map(|b| makespan - b).collect(), makespan)
}

#[test]
fn gpipe_and_one_f_one_b_bubble_is_p_minus_1_over_m_of_ideal() {
    for schedule in [ScheduleKind::Gpipe, ScheduleKind::OneFOneB] {
        for (pp, m) in [(4, 8), (4, 4), (2, 16), (8, 32), (4, 1)] {
            let (idle, makespan) = idle_per_rank(schedule, pp, 1, m);
            let ideal = m as u64 * (FORWARD_NS + BACKWARD_NS);
            let expected_bubble = (pp as u64 - 1) * ideal / m as u64;
            assert_eq!(
                makespan,
                ideal + expected_bubble,
                "{schedule:?} p={pp} m={m}"
            );
            assert!(
                idle.iter().all(|&i| i == expected_bubble),
                "{schedule:?} p={pp} m={m}: {idle:?}"
            );
        }
    }
}

#[test]
fn interleaved_bubble_is_p_minus_1_over_v_m_of_ideal() {
    for (pp, v, m) in [(4, 2, 8), (4, 4, 8), (2, 2, 4), (4, 2, 16), (8, 3, 16)] {
        let (idle, makespan) = idle_per_rank(ScheduleKind::Interleaved, pp, v, m);
        let ideal = m as u64 * (FORWARD_NS + BACKWARD_NS);
        let expected_bubble = (pp as u64 - 1) * ideal / (v as u64 * m as u64);
        assert_eq!(makespan, ideal + expected_bubble, "p={pp} v={v} m={m}");
        assert!(
            idle.iter().all(|&i| i == expected_bubble),
            "p={pp} v={v} m={m}: {idle:?}"
        );
    }
}

#[test]
fn looped_bfs_bubble_is_p_minus_1_over_v_m_of_ideal_once_m_reaches_p() {
    // Per chunk f = F/v, b = B/v: every rank idles (p−1)(f+b) when m ≥ p;
    // below, each chunk hand-over waits for the pipeline to fill and the
    // iteration takes (p·v + m − 1)(f+b) (`schedule/looped_bfs.rs`).
    for (pp, v, m) in [
        (4, 2, 8),
        (4, 2, 4),
        (4, 4, 5),
        (2, 3, 7),
        (8, 2, 16),
        (4, 2, 2),
        (8, 3, 3),
        (2, 1, 4),
    ] {
        let (idle, makespan) = idle_per_rank(ScheduleKind::LoopedBfs, pp, v, m);
        let per_chunk = (FORWARD_NS + BACKWARD_NS) / v as u64;
        let ideal = m as u64 * (FORWARD_NS + BACKWARD_NS);
        let expected_makespan = if m >= pp {
            ideal + (pp as u64 - 1) * per_chunk
        } else {
            (pp as u64 * v as u64 + m as u64 - 1) * per_chunk
        };
        assert_eq!(makespan, expected_makespan, "p={pp} v={v} m={m}");
        assert!(
            idle.iter().all(|&i| i == expected_makespan - ideal),
            "p={pp} v={v} m={m}: {idle:?}"
        );
    }
}

#[test]
fn interleaved_with_microbatch_groups_keeps_the_interleaved_bubble() {
    // Megatron-Core's groups of N (p ≤ N ≤ m, last group 0 or ≥ p): m need
    // not be a multiple of p, and the bubble stays (p−1)(F+B)/v.
    for (pp, v, m, n) in [
        (4, 2, 10, 5),
        (4, 2, 10, 6),
        (4, 3, 9, 9),
        (2, 2, 5, 3),
        (4, 2, 16, 8),
        (4, 2, 8, 4),
        (8, 2, 20, 10),
        (3, 4, 7, 4),
    ] {
        let scenario = sim::scenario::ScenarioFile {
            microbatch_group_size: Some(n),
            ..tests::small_scenario_file(ScheduleKind::Interleaved, 2, pp, 2, v, m)
        }
        .resolve()
        .expect("valid");
        let (idle, makespan) = idle_of(&scenario);
        let ideal = m as u64 * (FORWARD_NS + BACKWARD_NS);
        let expected_bubble = (pp as u64 - 1) * (FORWARD_NS + BACKWARD_NS) / v as u64;
        assert_eq!(
            makespan,
            ideal + expected_bubble,
            "p={pp} v={v} m={m} N={n}"
        );
        assert!(
            idle.iter().all(|&i| i == expected_bubble),
            "p={pp} v={v} m={m} N={n}: {idle:?}"
        );
    }
}
