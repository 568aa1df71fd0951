//! Every pipeline schedule the simulator has ([`ScheduleKind`]: GPipe, 1F1B,
//! interleaved, ZB-H1, ZB-H2, ZB-V, DualPipeV, DualPipe, looped BFS) over a grid of
//! (p, m, v), with and without recompute, and interleaved with Megatron-Core's
//! microbatch groups of every valid N: every
//! layout the simulator accepts, the executor plans in both modes, and the
//! plan passes [`check`] (every task once, topological issue order, every
//! cross-stream edge a wait, synthetic spins of exactly the simulated
//! durations) with no ordering the graph does not have.

use crate::check;
use crate::plan::{plan, ExecutionMode};
use sim::scenario::{Recompute, ScenarioFile, ScheduleKind};
use std::collections::BTreeMap;

/// Every variant of [`ScheduleKind`]: `ALL` is generated from the schedules
/// crate's registry, so a schedule added there is tested here unasked.
fn every_schedule() -> Vec<ScheduleKind> {
    ScheduleKind::ALL.to_vec()
}

#[test]
fn every_schedule_plans_and_passes_the_check_over_a_grid_of_p_m_v() {
    // gpt-22b has 48 layers: p·v divides it for many (p, v); dgx-a100 has 8 GPUs.
    let stages = [1, 2, 3, 4, 6, 8];
    let microbatches = [1, 2, 3, 4, 6, 8, 12, 16];
    let chunks = [1, 2, 3, 4];
    let mut planned: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for schedule in every_schedule() {
        for &p in &stages {
            for &m in &microbatches {
                for &v in &chunks {
                    // Interleaved: every microbatch group size N in [p, m]
                    // (None: the default p); other schedules have none.
                    let groups: Vec<Option<u32>> = if schedule == ScheduleKind::Interleaved {
                        std::iter::once(None).chain((p + 1..=m).map(Some)).collect()
                    } else {
                        vec![None]
                    };
                    for group in groups {
                        for recompute in [Recompute::None, Recompute::Full] {
                            let file = ScenarioFile {
                                microbatch_group_size: group,
                                model: Some("gpt-22b".into()),
                                topology: Some("dgx-a100".into()),
                                tp: Some(1),
                                pp: Some(p),
                                dp: Some(1),
                                chunks: Some(v),
                                microbatch_size: Some(1),
                                global_batch: Some(m),
                                schedule: Some(schedule),
                                recompute: Some(recompute),
                                ..ScenarioFile::default()
                            };
                            // Layouts the simulator refuses are not the executor's to run.
                            let Ok(scenario) = file.resolve() else {
                                continue;
                            };
                            let (_, graph) = sim::build_graph(&scenario);
                            let name = format!(
                                "{} p={p} m={m} v={v} N={group:?} recompute={recompute:?}",
                                schedule.name()
                            );
                            for mode in [ExecutionMode::Synthetic, ExecutionMode::Real] {
                                let verdict = plan(&graph, &scenario, mode, 1)
                                    .and_then(|plan| check(&plan, &graph).map(|c| (plan, c)));
                                match verdict {
                                    Ok((plan, verdict)) => {
                                        assert_eq!(plan.tasks.len(), graph.task_count(), "{name}");
                                        assert_eq!(verdict.implicit_orderings, 0, "{name}");
                                        if p > 1 {
                                            assert!(verdict.waits > 0, "{name}: stages wait");
                                        }
                                    }
                                    Err(error) => {
                                        failures.push(format!("{name} {mode:?}: {error}"))
                                    }
                                }
                            }
                            *planned.entry(schedule.name()).or_default() += 1;
                            if group.is_some() {
                                *planned.entry("interleaved, N > p").or_default() += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("layouts planned per schedule (each in both modes): {planned:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Enough of each schedule was accepted by the simulator to mean something.
    for schedule in every_schedule() {
        let count = planned.get(schedule.name()).copied().unwrap_or(0);
        assert!(count >= 20, "{}: only {count} layouts", schedule.name());
    }
    let grouped = planned.get("interleaved, N > p").copied().unwrap_or(0);
    assert!(
        grouped >= 20,
        "interleaved with N > p: only {grouped} layouts"
    );
}

#[test]
fn post_validations_three_iterations_plan_and_pass_the_check() {
    // Optimizer post-validation (`--optimizer-post-validation`): three
    // iterations with the norm exchanges and validations between stages.
    let model = serde_json::json!({
        "name": "untied-8", "layers": 8, "hidden": 1024, "heads": 16,
        "seq_len": 512, "vocab": 51200, "tied_embeddings": false
    });
    let mut planned = 0;
    for (schedule, v) in [
        (ScheduleKind::ZbH1, 1),
        (ScheduleKind::ZbH2, 1),
        (ScheduleKind::ZbV, 2),
    ] {
        for (p, m, d) in [(2, 4, 1), (4, 8, 1), (4, 8, 2)] {
            let file = ScenarioFile {
                model: Some(model.clone()),
                topology: Some("dgx-a100".into()),
                tp: Some(1),
                pp: Some(p),
                dp: Some(d),
                chunks: Some(v),
                microbatch_size: Some(1),
                global_batch: Some(m * d),
                schedule: Some(schedule),
                recompute: Some(Recompute::None),
                options: sim::scenario::TrainingOptionsFile {
                    optimizer_post_validation: Some(true),
                    ..Default::default()
                },
                ..ScenarioFile::default()
            };
            let scenario = file.resolve().unwrap();
            let (_, graph) = sim::build_graph(&scenario);
            for mode in [ExecutionMode::Synthetic, ExecutionMode::Real] {
                let plan = plan(&graph, &scenario, mode, 1).unwrap();
                let verdict = check(&plan, &graph).unwrap();
                assert_eq!(plan.tasks.len(), graph.task_count());
                assert_eq!(
                    verdict.implicit_orderings, 0,
                    "{schedule:?} p={p} m={m} d={d}"
                );
            }
            planned += 1;
        }
    }
    assert_eq!(planned, 9);
}
