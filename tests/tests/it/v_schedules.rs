//! The V-shaped schedules against their sources (two chunks per rank, rank r
//! holding virtual stages r and 2p−1−r), with uniform per-pass costs (F, I,
//! W and the whole backward B = I + W per chunk) and free communication, in
//! integer nanoseconds:
//!
//! - ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Sec. 6;
//!   PyTorch `ScheduleZBVZeroBubble`): no bubble inside any rank's span when
//!   F = I = W; outside it the ranks start F apart (rank r at r·F) as in any
//!   pipeline, a skew the source hides across iterations (post-validation)
//!   and one iteration shows: makespan = 2m(F+I+W) + (p−1)F.
//! - DualPipeV (deepseek-ai/DualPipe README, PP = 2p stages): every rank idles
//!   (p−1)(F&B+B−3W) when F = I = W and F&B = F+B (the pair costed back to
//!   back, as the simulator does).
//! - Activations (forwards whose input-gradient pass has not run, counted per
//!   chunk): ZB-V holds 1F1B's peak, p whole-stage microbatches = 2p chunks
//!   (the paper's Sec. 6); DualPipeV PP+1 = 2p+1 chunks (the README's table).

use sim::scenario::{Recompute, ScenarioFile, ScheduleKind};
use sim::schedule::PipelineSchedule;
use tests::bubble::idle_per_rank;

/// F = I = W, B = I + W (the sources' assumption).
const UNIFORM: [u64; 4] = [1_200, 2_400, 1_200, 1_200];
/// Fewer microbatches than ZB-V's warm-up (2p−1): the source drops the
/// actions of the missing ones; DualPipeV refuses them.
const SHORT: [(u32, u32); 3] = [(2, 2), (4, 3), (8, 5)];
/// p and m ≥ 2p−1; 48 layers divide into 2p chunks for every p here.
const GRID: [(u32, u32); 11] = [
    (1, 1),
    (1, 5),
    (2, 4),
    (2, 9),
    (3, 6),
    (3, 7),
    (4, 8),
    (4, 13),
    (6, 12),
    (8, 16),
    (8, 32),
];

#[test]
fn zb_v_leaves_no_bubble_inside_a_rank_when_f_equals_i_equals_w() {
    let [f, _, i, w] = UNIFORM;
    for (p, m) in GRID {
        let run = idle_per_rank(ScheduleKind::ZbV, p, 2, m, UNIFORM);
        assert!(
            run.inside.iter().all(|&gap| gap == 0),
            "p={p} m={m}: {:?}",
            run.inside
        );
        let ideal = 2 * m as u64 * (f + i + w);
        assert_eq!(run.makespan, ideal + (p as u64 - 1) * f, "p={p} m={m}");
        // Ranks start one chunk forward apart (t = 2 ranks per stage).
        for (rank, &start) in run.first_start.iter().enumerate() {
            assert_eq!(start, (rank as u64 / 2) * f, "p={p} m={m}");
        }
    }
}

#[test]
fn dualpipe_v_bubble_is_p_minus_1_times_fb_plus_b_minus_3w() {
    let [f, b, i, w] = UNIFORM;
    let pair = f + b;
    for (p, m) in GRID.into_iter().filter(|&(p, m)| m >= 2 * p) {
        let run = idle_per_rank(ScheduleKind::DualPipeV, p, 2, m, UNIFORM);
        let bubble = (p as u64 - 1) * (pair + b - 3 * w);
        assert!(
            run.idle.iter().all(|&idle| idle == bubble),
            "p={p} m={m}: {:?} vs {bubble}",
            run.idle
        );
        assert_eq!(
            run.makespan,
            2 * m as u64 * (f + i + w) + bubble,
            "p={p} m={m}"
        );
    }
}

#[test]
fn zb_v_beats_interleaved_and_one_f_one_b_with_the_same_costs() {
    // Interleaved v = 2 idles (p−1)(F+B)/2 per whole-stage pass = (p−1)(F+B)
    // per chunk pass; ZB-V only its start skew (p−1)F.
    let [f, b, _, _] = UNIFORM;
    for (p, m) in [(2, 4), (4, 8), (4, 16), (8, 16)] {
        let zb_v = idle_per_rank(ScheduleKind::ZbV, p, 2, m, UNIFORM).makespan;
        let interleaved = idle_per_rank(ScheduleKind::Interleaved, p, 2, m, UNIFORM).makespan;
        assert_eq!(
            interleaved,
            2 * m as u64 * (f + b) + (p as u64 - 1) * (f + b),
            "p={p} m={m}"
        );
        assert!(zb_v < interleaved, "p={p} m={m}: {zb_v} vs {interleaved}");
    }
}

#[test]
fn in_flight_activations_match_the_sources() {
    for (p, m) in GRID {
        let zb_v = PipelineSchedule::generate(ScheduleKind::ZbV, p, 2, m);
        for rank in 0..p {
            // 2p chunk-microbatches on every rank once the warm-up fills (m ≥ 2p−1).
            assert_eq!(
                zb_v.peak_in_flight(rank),
                2 * p,
                "zb-v p={p} m={m} r={rank}"
            );
        }
        if m >= 2 * p {
            let dual = PipelineSchedule::generate(ScheduleKind::DualPipeV, p, 2, m);
            for rank in 0..p {
                assert_eq!(
                    dual.peak_in_flight(rank),
                    2 * p + 1,
                    "dualpipev p={p} m={m} r={rank}"
                );
            }
        }
    }
}

#[test]
fn deferred_weight_gradients_owed_follow_the_action_order() {
    // Not stated by the sources; counted from their orders. ZB-V: steady
    // state I then W at once; the cool-down's r × [I₀, I₁] leaves 2r owed,
    // the next I₀ makes 2r+1. DualPipeV: phase 6 leaves r+1 owed (its split
    // from the midpoint), phase 7 keeps r+1 (a W, then an I), phase 8 drains.
    for (p, m) in GRID {
        let zb_v = PipelineSchedule::generate(ScheduleKind::ZbV, p, 2, m);
        for rank in 0..p {
            assert_eq!(
                zb_v.peak_weight_pending(rank),
                2 * rank + 1,
                "zb-v p={p} m={m}"
            );
        }
        if m >= 2 * p {
            let dual = PipelineSchedule::generate(ScheduleKind::DualPipeV, p, 2, m);
            for rank in 0..p {
                assert_eq!(
                    dual.peak_weight_pending(rank),
                    rank + 1,
                    "dualpipev p={p} m={m}"
                );
            }
        }
    }
}

#[test]
fn every_v_schedule_runs_without_deadlock_over_a_grid_with_and_without_recompute() {
    for (p, m) in SHORT {
        let zb_v = PipelineSchedule::generate(ScheduleKind::ZbV, p, 2, m);
        for rank in 0..p {
            // Never more than the 2m chunk-microbatches there are.
            assert!(
                zb_v.peak_in_flight(rank) <= 2 * m,
                "zb-v p={p} m={m} r={rank}"
            );
        }
    }
    for schedule in [ScheduleKind::ZbV, ScheduleKind::DualPipeV] {
        for (p, m) in GRID.into_iter().chain(SHORT) {
            for recompute in [Recompute::None, Recompute::Full] {
                let file = ScenarioFile {
                    model: Some(serde_json::json!({
                        "name": "test-48", "layers": 48, "hidden": 512, "heads": 8, "seq_len": 256, "vocab": 51200
                    })),
                    topology: Some("selene".into()),
                    tp: Some(2),
                    pp: Some(p),
                    dp: Some(2),
                    chunks: Some(2),
                    microbatch_size: Some(1),
                    global_batch: Some(2 * m),
                    schedule: Some(schedule),
                    recompute: Some(recompute),
                    ..ScenarioFile::default()
                };
                let scenario = match file.resolve() {
                    Ok(scenario) => scenario,
                    Err(error) => {
                        // Only DualPipeV's m ≥ 2p is refused.
                        assert!(schedule == ScheduleKind::DualPipeV && m < 2 * p, "{error}");
                        assert!(error.to_string().contains("dualpipev needs microbatches"));
                        continue;
                    }
                };
                let report = sim::simulate(&scenario)
                    .unwrap_or_else(|e| panic!("{schedule:?} p={p} m={m}: {e}"));
                // Every pass ran: F, and I + W or B, per chunk and microbatch on every rank.
                assert!(report.timeline().makespan_ns() > 0);
            }
        }
    }
}

#[test]
fn the_v_map_sends_nothing_at_the_turn_and_keeps_the_tied_embedding_local() {
    use sim::task::TaskKind;
    for schedule in [ScheduleKind::ZbV, ScheduleKind::DualPipeV] {
        let (p, m) = (4u32, 8u32);
        let scenario = tests::small_scenario(schedule, 1, p, 1, 2, m);
        let (_, graph) = sim::build_graph(&scenario);
        let count = |kind| {
            (0..graph.task_count())
                .filter(|&id| graph.task(sim::ids::TaskId(id as u32)).kind == kind)
                .count() as u32
        };
        // 2p − 1 boundaries between 2p stages, one of them local: 2p − 2 sends each way.
        assert_eq!(count(TaskKind::PipelineActivation), (2 * p - 2) * m);
        assert_eq!(count(TaskKind::PipelineGradient), (2 * p - 2) * m);
        // Embedding and head both on stage 0: no embedding all-reduce between ranks.
        assert_eq!(count(TaskKind::EmbeddingAllReduce), 0);
    }
}
