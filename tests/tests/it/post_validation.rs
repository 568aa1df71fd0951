//! Zero-bubble optimizer post-validation (Qi et al., "Zero Bubble Pipeline
//! Parallelism", ICLR 2024, Sec. 4; `--optimizer-post-validation`): each
//! stage steps its optimizer once its own gradients are reduced and the
//! previous stage's partial norm is in, and validates afterwards, so the
//! next iteration's warm-up overlaps the previous one's end. Over several
//! iterations, with uniform per-pass costs and free communication, ZB-H2's
//! steady-state idle per rank is exactly its formula (p−1)(F+I+2c−2W)⁺
//! (c = 0), in integer nanoseconds; one iteration alone shows the (p−1)·F
//! start skew besides.

use sim::scenario::{ScenarioFile, ScheduleKind};
use sim::task::TaskKind;
use tests::bubble::steady_state;

/// The source's assumption (its Sec. 3.1): F = I = W, the backward B = I + W.
const UNIFORM: [u64; 4] = [1_200, 2_400, 1_200, 1_200];
/// F + I > 2W: the bubble (p−1)(F+I−2W) is not zero.
const UNEVEN: [u64; 4] = [1_000, 2_000, 1_100, 900];
/// F + I < 2W: still no bubble.
const HEAVY_W: [u64; 4] = [1_000, 2_600, 1_000, 1_600];
const GRID: [(u32, u32); 7] = [(2, 4), (2, 16), (3, 7), (4, 8), (4, 13), (8, 16), (8, 32)];

/// The small test scenario with untied embeddings and post-validation on.
fn file(schedule: ScheduleKind, pp: u32, dp: u32, microbatches: u32) -> ScenarioFile {
    let mut file = tests::small_scenario_file(schedule, 2, pp, dp, 1, microbatches);
    file.model = Some(serde_json::json!({
        "name": "test-48", "layers": 48, "hidden": 512, "heads": 8, "seq_len": 256,
        "vocab": 51200, "tied_embeddings": false
    }));
    file.options.optimizer_post_validation = Some(true);
    file
}

#[test]
fn zb_h2_steady_state_bubble_is_its_formula_exactly() {
    for (pp, m) in GRID {
        for costs in [UNIFORM, UNEVEN, HEAVY_W] {
            let [f, _, i, w] = costs;
            let scenario = file(ScheduleKind::ZbH2, pp, 1, m).resolve().unwrap();
            assert_eq!(scenario.iterations, 3);
            let run = steady_state(&scenario, costs);
            let bubble = (pp as u64 - 1) * (f + i).saturating_sub(2 * w);
            let ideal = m as u64 * (f + i + w);
            assert_eq!(run.iteration_ns, ideal + bubble, "p={pp} m={m} {costs:?}");
            assert!(
                run.idle.iter().all(|&idle| idle == bubble),
                "p={pp} m={m} {costs:?}: {:?}",
                run.idle
            );
            // The first iteration still shows the stages' (p−1)·F start skew.
            assert_eq!(
                run.ends[0],
                ideal + (pp as u64 - 1) * f,
                "p={pp} m={m} {costs:?}"
            );
        }
    }
}

#[test]
fn the_norm_goes_forward_before_each_step_and_comes_back_in_the_next_warm_up() {
    let (pp, m) = (4, 8);
    let scenario = file(ScheduleKind::ZbH2, pp, 1, m).resolve().unwrap();
    let run = steady_state(&scenario, UNIFORM);
    let tasks = &run.timeline.tasks;
    let of = |kind: TaskKind, iteration: u32| -> Vec<&timeline::TaskRecord> {
        let mut list: Vec<_> = tasks
            .iter()
            .filter(|t| t.kind == kind && t.iteration == Some(iteration))
            .collect();
        list.sort_by_key(|t| t.stage);
        list
    };
    for iteration in 0..3 {
        // p−1 hops forward per iteration, one per stage but the last.
        let norms = of(TaskKind::NormExchange, iteration);
        assert_eq!(norms.iter().map(|t| t.stage).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(norms.windows(2).all(|w| w[0].end_ns <= w[1].start_ns));
        let steps = of(TaskKind::OptimizerStep, iteration);
        assert_eq!(steps.len(), (pp * 2) as usize, "t = 2 ranks per stage");
        for step in &steps {
            // Stage r steps once the partial norm from stage r−1 is in …
            if step.stage > 0 {
                assert!(norms[step.stage as usize - 1].end_ns <= step.start_ns);
            }
            // … not after the later stages' gradients (no sync across the
            // pipeline): stage r is done (p−1−r)·F before the last stage.
            let last_pass = tasks
                .iter()
                .filter(|t| {
                    t.kind.is_compute()
                        && t.kind != TaskKind::OptimizerStep
                        && t.stage == pp - 1
                        && t.iteration == Some(iteration)
                })
                .map(|t| t.end_ns)
                .max()
                .unwrap();
            assert_eq!(
                last_pass - step.end_ns,
                (pp - 1 - step.stage) as u64 * UNIFORM[0],
                "{step:?}"
            );
        }
        // The full state comes back stage by stage during the next iteration.
        let back = of(TaskKind::PostValidation, iteration);
        if iteration < 2 {
            assert_eq!(back.iter().map(|t| t.stage).collect::<Vec<_>>(), [1, 2, 3]);
            assert!(back.windows(2).all(|w| w[1].end_ns <= w[0].start_ns));
            assert!(norms[pp as usize - 2].end_ns <= back[2].start_ns);
        } else {
            assert!(back.is_empty(), "nothing follows the last iteration");
        }
    }
    // Iteration 1's first forward on stage 0 starts when stage 0's own step
    // is done, (p−1)·F before the last stage has finished iteration 0.
    let first_forward = |stage: u32| {
        tasks
            .iter()
            .filter(|t| t.kind == TaskKind::Forward && t.stage == stage && t.iteration == Some(1))
            .map(|t| t.start_ns)
            .min()
            .unwrap()
    };
    let step_end = |stage: u32| {
        tasks
            .iter()
            .filter(|t| {
                t.kind == TaskKind::OptimizerStep && t.stage == stage && t.iteration == Some(0)
            })
            .map(|t| t.end_ns)
            .max()
            .unwrap()
    };
    assert_eq!(first_forward(0), step_end(0));
    assert_eq!(
        step_end(pp - 1) - first_forward(0),
        (pp as u64 - 1) * UNIFORM[0]
    );
    // The forward at each stage's validation point waits for the state from the next stage.
    let schedule = sim::plan::schedule_of(&scenario);
    for stage in 0..pp - 1 {
        let point =
            schedule.actions[stage as usize][schedule.post_validation_point(stage).unwrap()];
        let gated = tasks
            .iter()
            .find(|t| {
                t.kind == TaskKind::Forward
                    && t.stage == stage
                    && t.iteration == Some(1)
                    && t.microbatch == Some(point.microbatch)
            })
            .unwrap();
        let received = of(TaskKind::PostValidation, 0)[stage as usize];
        assert!(received.end_ns <= gated.start_ns);
    }
}

#[test]
fn validation_points_follow_the_source() {
    // Stage r validates before the forward of microbatch min(2(p−1−r), m−1,
    // leading forwards − 1) (communication.py, get_post_validation_time).
    for (schedule, pp, m, expected) in [
        (ScheduleKind::ZbH2, 4, 8, vec![6, 4, 2, 0]),
        (ScheduleKind::ZbH2, 4, 4, vec![3, 3, 2, 0]),
        // ZB-H1 warms up with p−r−1 forwards: the leading ones bound it.
        (ScheduleKind::ZbH1, 4, 8, vec![3, 2, 1, 0]),
    ] {
        let generated = sim::schedule::PipelineSchedule::generate(schedule, pp, 1, m);
        let points: Vec<u32> = (0..pp)
            .map(|stage| {
                let index = generated.post_validation_point(stage).unwrap();
                generated.actions[stage as usize][index].microbatch
            })
            .collect();
        assert_eq!(points, expected, "{schedule:?} p={pp} m={m}");
    }
}

#[test]
fn memory_is_unchanged_nothing_is_kept_for_a_rollback() {
    for schedule in [ScheduleKind::ZbH1, ScheduleKind::ZbH2] {
        let on = file(schedule, 4, 2, 8).resolve().unwrap();
        let mut off_file = file(schedule, 4, 2, 8);
        off_file.options.optimizer_post_validation = None;
        let off = off_file.resolve().unwrap();
        let (on, off) = (sim::simulate(&on).unwrap(), sim::simulate(&off).unwrap());
        assert_eq!(on.memory, off.memory, "{schedule:?}");
        assert_eq!(on.metrics.iterations, 3);
        assert_eq!(off.metrics.iterations, 1);
    }
}

#[test]
fn zb_h1_and_zb_v_keep_their_bubbles_in_the_steady_state() {
    for (pp, m) in GRID.into_iter().filter(|&(p, m)| m >= 2 * p) {
        let [f, _, i, w] = UNIFORM;
        let ideal = m as u64 * (f + i + w);
        let h1 = steady_state(
            &file(ScheduleKind::ZbH1, pp, 1, m).resolve().unwrap(),
            UNIFORM,
        );
        let bubble = (pp as u64 - 1) * (f + i - w);
        assert_eq!(h1.iteration_ns, ideal + bubble, "zb-h1 p={pp} m={m}");
        assert!(h1.idle.iter().all(|&x| x == bubble), "{:?}", h1.idle);
        // ZB-V (two chunks of half the cost each): no bubble when F = I = W.
        let mut v = file(ScheduleKind::ZbV, pp, 1, m);
        v.chunks = Some(2);
        let half = UNIFORM.map(|x| x / 2);
        let zb_v = steady_state(&v.resolve().unwrap(), half);
        assert_eq!(zb_v.iteration_ns, ideal, "zb-v p={pp} m={m}");
        assert!(zb_v.idle.iter().all(|&x| x == 0), "{:?}", zb_v.idle);
    }
}

#[test]
fn what_the_source_does_not_run_is_refused_by_key() {
    let problems = |file: ScenarioFile| match file.resolve() {
        Err(sim::scenario::ScenarioError::Invalid { problems }) => problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("expected refusal, got {:?}", other.map(|s| s.title())),
    };
    let one_f = file(ScheduleKind::OneFOneB, 4, 1, 8);
    assert!(problems(one_f).contains("optimizer_post_validation: only with the zero-bubble"));
    let mut bf16 = file(ScheduleKind::ZbH2, 4, 1, 8);
    bf16.options.precision = Some(sim::scenario::Precision::Bf16);
    assert!(problems(bf16).contains("needs precision fp16"));
    let tied = tests::small_scenario_file(ScheduleKind::ZbH2, 2, 4, 1, 1, 8);
    let mut tied = tied;
    tied.options.optimizer_post_validation = Some(true);
    assert!(problems(tied).contains("needs untied embeddings"));
    let mut two = file(ScheduleKind::ZbH2, 4, 1, 8);
    two.iterations = Some(2);
    assert!(problems(two).contains("iterations: 2 cannot show post-validation's steady state"));
    let mut four = file(ScheduleKind::ZbH2, 4, 1, 8);
    four.iterations = Some(4);
    assert_eq!(four.resolve().unwrap().iterations, 4);
}
