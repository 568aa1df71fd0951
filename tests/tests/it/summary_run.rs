//! A run for its summary (`sim::simulate_summary`, the sweep's) merges each
//! tensor group's per-rank tasks into one where the ranks cannot differ: its
//! metrics (every bit), memory, iteration end and full expansion's task and
//! event counts must equal the run that keeps a task per rank, on layouts ×
//! schedules × option variants, context parallelism, experts, FP8, the host
//! lane and the zero-bubble and DualPipe schedules.

use sim::scenario::{Recompute, Scenario, ScenarioFile, ScheduleKind, TrainingOptionsFile};
use sim::{Expansion, RunSummary};

/// Compares the summary with the per-rank run; whether it merged.
fn assert_summary_exact(scenario: &Scenario) -> bool {
    let title = scenario.title();
    let summary = sim::simulate_summary(scenario, Expansion::Auto).unwrap();
    let expected = RunSummary::of(&sim::simulate_with(scenario, Expansion::Auto).unwrap());
    // Debug prints each float's shortest round trip: equal text, equal bits.
    assert_eq!(
        format!("{:?}", summary.metrics),
        format!("{:?}", expected.metrics),
        "{title}"
    );
    assert_eq!(summary.memory, expected.memory, "{title}");
    assert_eq!(summary.makespan_ns, expected.makespan_ns, "{title}");
    assert_eq!(summary.n_tasks, expected.n_tasks, "{title}: tasks");
    assert_eq!(summary.n_events, expected.n_events, "{title}: events");
    sim::merges_tensor_ranks(scenario, Expansion::Auto)
}

#[test]
fn merged_tensor_ranks_give_the_per_rank_runs_summary() {
    let layouts = [(2, 2, 2), (4, 1, 4), (2, 1, 8), (4, 2, 2), (2, 4, 2)];
    let mut merged = 0;
    let grid = super::symmetry::grid(&layouts);
    for (_, scenario) in &grid {
        merged += usize::from(assert_summary_exact(scenario));
    }
    // Every one of them runs symmetric with t > 1, so every one merges.
    assert!(grid.len() >= 19, "only {} layouts resolved", grid.len());
    assert_eq!(merged, grid.len());
}

#[test]
fn option_variants_and_context_parallelism_stay_exact_merged() {
    let mut merged = 0;
    for variant in 0..7 {
        for (layout, cp) in [((2, 2, 2), 1), ((2, 2, 1), 2), ((4, 2, 1), 1)] {
            let Some(scenario) = super::symmetry::scenario(
                layout,
                (ScheduleKind::Interleaved, 2),
                cp,
                "megatron-core-2024",
                super::symmetry::options(variant),
                8,
            ) else {
                continue;
            };
            merged += usize::from(assert_summary_exact(&scenario));
        }
    }
    assert!(merged >= 14, "only {merged} merged");
}

/// Presets: GPT-3 with full recomputation, Mixtral's experts, FP8,
/// DualPipe, and runs the summary does not merge (t = 1, ZeRO-Offload,
/// contention), which must equal the per-rank run as well.
#[test]
fn presets_experts_fp8_and_dualpipe_stay_exact_merged() {
    let file = |model: &str, (tp, pp, dp): (u32, u32, u32), batch: u32| ScenarioFile {
        model: Some(model.into()),
        topology: Some("dgx-h100-superpod".into()),
        tp: Some(tp),
        pp: Some(pp),
        dp: Some(dp),
        global_batch: Some(batch),
        ..ScenarioFile::default()
    };
    let cases = [
        (
            ScenarioFile {
                recompute: Some(Recompute::Full),
                ..file("gpt3-175b", (8, 8, 2), 64)
            },
            true,
        ),
        (
            ScenarioFile {
                ep: Some(4),
                seq_len: Some(512),
                ..file("mixtral-8x7b", (2, 2, 4), 32)
            },
            true,
        ),
        (
            ScenarioFile {
                options: TrainingOptionsFile {
                    precision: Some(sim::scenario::Precision::Fp8),
                    ..Default::default()
                },
                ..file("llama2-70b", (4, 4, 2), 32)
            },
            true,
        ),
        (
            ScenarioFile {
                schedule: Some(ScheduleKind::DualPipeV),
                chunks: Some(2),
                ..file("llama2-70b", (4, 4, 2), 32)
            },
            true,
        ),
        // Dimensions that are not powers of two. (The metrics add a merged
        // task's FLOPs once per rank, as the separate tasks did; these sums
        // are integers with many factors of two and stay exact, so adding
        // t × FLOPs once would pass here too: the order matters only where
        // a sum rounds.)
        (
            ScenarioFile {
                model: Some(serde_json::json!({
                    "name": "odd-dims", "layers": 12, "hidden": 3000, "heads": 24,
                    "seq_len": 1000, "vocab": 50256
                })),
                ..file("llama2-7b", (8, 2, 4), 96)
            },
            true,
        ),
        (file("llama2-7b", (1, 2, 8), 32), false),
        (
            ScenarioFile {
                options: TrainingOptionsFile {
                    network_contention: Some(true),
                    ..Default::default()
                },
                ..file("llama2-70b", (4, 4, 2), 32)
            },
            false,
        ),
    ];
    for (file, merges) in cases {
        let scenario = file.resolve().unwrap();
        assert_eq!(
            assert_summary_exact(&scenario),
            merges,
            "{}",
            scenario.title()
        );
    }
}
