//! DualPipe (DeepSeek-V3 report; deepseek-ai/DualPipe `dualpipe.py`) against
//! its source, with uniform per-pass costs (F, I, W per chunk, the whole
//! backward B = I + W) and free communication, in integer nanoseconds. p
//! ranks (even), two model copies of p stages each (rank r: copy A's stage
//! r and copy B's stage p−1−r), m microbatches, m/2 fed from each end:
//!
//! - bubble: every rank idles the README's (PP/2−1)(F&B+B−3W) with PP = p
//!   when F = I = W and F&B = F+B (the pair costed back to back), on top of
//!   its m(F+I+W) of work;
//! - activations: PP+1 = p+1 chunk-microbatches (each one stage of one
//!   copy) per rank at the peak (the README's table);
//! - parameters twice (the README's "2×"), each stage's gradients summed
//!   with its mirror rank's (`examples/example_dualpipe.py`).

use sim::scenario::{Recompute, ScenarioFile, ScheduleKind};
use sim::schedule::PipelineSchedule;
use sim::task::TaskKind;
use tests::bubble::idle_per_rank;

/// F = I = W, B = I + W (the sources' assumption).
const UNIFORM: [u64; 4] = [1_200, 2_400, 1_200, 1_200];
/// (p, m): p even, m even and ≥ 2p; 48 layers divide by every p here.
const GRID: [(u32, u32); 9] = [
    (2, 4),
    (2, 10),
    (4, 8),
    (4, 10),
    (4, 24),
    (6, 12),
    (6, 14),
    (8, 16),
    (8, 40),
];

#[test]
fn dualpipe_bubble_is_half_p_minus_1_times_fb_plus_b_minus_3w() {
    let [f, b, i, w] = UNIFORM;
    let pair = f + b;
    for (p, m) in GRID {
        let run = idle_per_rank(ScheduleKind::DualPipe, p, 2, m, UNIFORM);
        let bubble = (p as u64 / 2 - 1) * (pair + b - 3 * w);
        assert!(
            run.idle.iter().all(|&idle| idle == bubble),
            "p={p} m={m}: {:?} vs {bubble}",
            run.idle
        );
        assert_eq!(run.makespan, m as u64 * (f + i + w) + bubble, "p={p} m={m}");
    }
}

#[test]
fn in_flight_activations_are_pp_plus_1_chunks_per_rank() {
    for (p, m) in GRID {
        let schedule = PipelineSchedule::generate(ScheduleKind::DualPipe, p, 2, m);
        for rank in 0..p {
            assert_eq!(schedule.peak_in_flight(rank), p + 1, "p={p} m={m} r={rank}");
        }
    }
}

#[test]
fn the_text_form_parses_back() {
    for (p, m) in GRID {
        let schedule = PipelineSchedule::generate(ScheduleKind::DualPipe, p, 2, m);
        assert_eq!(
            PipelineSchedule::parse_actions(&schedule.to_text()).unwrap(),
            schedule.actions
        );
    }
}

#[test]
fn every_dualpipe_runs_without_deadlock_over_a_grid_with_and_without_recompute() {
    for (p, m) in GRID.into_iter().chain([(4, 6), (3, 6), (4, 9), (1, 2)]) {
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
                schedule: Some(ScheduleKind::DualPipe),
                recompute: Some(recompute),
                ..ScenarioFile::default()
            };
            let scenario = match file.resolve() {
                Ok(scenario) => scenario,
                Err(error) => {
                    // Only odd p, odd m or m < 2p is refused.
                    assert!(p % 2 == 1 || m % 2 == 1 || m < 2 * p, "{error}");
                    assert!(error.to_string().contains("dualpipe needs"), "{error}");
                    continue;
                }
            };
            let report =
                sim::simulate(&scenario).unwrap_or_else(|e| panic!("dualpipe p={p} m={m}: {e}"));
            assert!(report.timeline().makespan_ns() > 0);
        }
    }
}

#[test]
fn nothing_crosses_between_the_copies_and_mirrored_ranks_sum_their_gradients() {
    let (t, p, d, m) = (2u32, 4u32, 2u32, 8u32);
    let scenario = tests::small_scenario(ScheduleKind::DualPipe, t, p, d, 2, m);
    let (_, graph) = sim::build_graph(&scenario);
    let tasks: Vec<_> = (0..graph.task_count())
        .map(|id| graph.task(sim::ids::TaskId(id as u32)))
        .collect();
    let count = |kind| tasks.iter().filter(|task| task.kind == kind).count() as u32;
    // Each copy: p − 1 boundaries, m/2 microbatches, t ranks, d replicas.
    let per_direction = 2 * (p - 1) * (m / 2) * d;
    assert_eq!(count(TaskKind::PipelineActivation), per_direction);
    assert_eq!(count(TaskKind::PipelineGradient), per_direction);
    // The tied embedding's sum is in the mirrored all-reduce (ranks 0 and p−1).
    assert_eq!(count(TaskKind::EmbeddingAllReduce), 0);
    // Data-parallel all-reduces: one per (stage, tensor index) over d, plus
    // one per (mirrored pair, data index, tensor index) between the pair.
    let mirrored = (p / 2) * d * t;
    assert_eq!(count(TaskKind::DataParallelAllReduce), p * t + mirrored);
    // Every pair all-reduce moves all the gradients of its rank, which
    // holds twice the parameters of its 1F1B stage and its mirror's.
    let one_f_one_b = tests::small_scenario(ScheduleKind::OneFOneB, t, p, d, 1, m);
    let sharding = one_f_one_b.layout.sharding();
    for stage in 0..p {
        let params = models::sharding::parameters_on_rank(
            &scenario.model,
            scenario.layout.sharding(),
            stage,
        );
        let expected = models::sharding::parameters_on_rank(&one_f_one_b.model, sharding, stage)
            + models::sharding::parameters_on_rank(&one_f_one_b.model, sharding, p - 1 - stage);
        assert_eq!(params, expected, "stage {stage}");
    }
}

#[test]
fn memory_counts_the_second_parameter_copy() {
    let (p, m) = (4u32, 8u32);
    let dual = tests::small_scenario(ScheduleKind::DualPipe, 2, p, 1, 2, m);
    let one_f_one_b = tests::small_scenario(ScheduleKind::OneFOneB, 2, p, 1, 1, m);
    let dual_memory = sim::memory::memory_per_stage(&dual, &sim::plan::Plan::of(&dual));
    let plain = sim::memory::memory_per_stage(&one_f_one_b, &sim::plan::Plan::of(&one_f_one_b));
    for stage in 0..p as usize {
        let mirror = p as usize - 1 - stage;
        assert_eq!(
            dual_memory[stage].weight_bytes,
            plain[stage].weight_bytes + plain[mirror].weight_bytes
        );
        assert_eq!(
            dual_memory[stage].gradient_bytes,
            plain[stage].gradient_bytes + plain[mirror].gradient_bytes
        );
        assert_eq!(
            dual_memory[stage].optimizer_state_bytes,
            plain[stage].optimizer_state_bytes + plain[mirror].optimizer_state_bytes
        );
        assert_eq!(dual_memory[stage].peak_microbatches_in_flight, p + 1);
    }
}
