//! Routing that varies layer by layer (issue 35, item 4): an
//! `expert_imbalance` histogram file of one line of E counts per MoE layer
//! routes each layer its own way. The same line in every layer is the run
//! routed by that line alone, task for task; a spike in one layer changes
//! only the passes (and all-to-alls) of the stage that holds it, by one
//! layer's share of what the spike costs in every layer; files that fit
//! neither form are refused by name.

use sim::scenario::{Scenario, ScenarioFile};
use sim::task::TaskKind;
use sim::SimulationReport;
use tests::moe::mixtral;

/// A fresh file under the system's temporary folder holding `text`.
fn file_with(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("clustersim-layer-routing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// Mixtral 8x7B (32 MoE layers) at p = 4 (8 layers a stage), d = 16, ep = 8.
fn mixtral_routed(imbalance: &str) -> Scenario {
    mixtral(4, 16, 8, Some(imbalance), false)
        .resolve()
        .expect("valid scenario")
}

const EVEN: &str = "100 100 100 100 100 100 100 100";
const SPIKE: &str = "400 100 100 100 100 100 100 100";

/// 32 lines of `EVEN`, line `spiked` (0-based) replaced by `SPIKE`.
fn per_layer(spiked: Option<usize>) -> String {
    let mut lines = vec![EVEN; 32];
    if let Some(layer) = spiked {
        lines[layer] = SPIKE;
    }
    format!("# one line per MoE layer\n{}\n", lines.join("\n"))
}

/// (stage, kind, duration) of every task of rank 0's replica that computes
/// or exchanges tokens.
fn passes(report: &SimulationReport) -> Vec<(u32, TaskKind, u64)> {
    report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind.is_compute() || t.kind == TaskKind::ExpertAllToAll)
        .map(|t| (t.stage, t.kind, t.duration_ns()))
        .collect()
}

fn simulate(scenario: &Scenario) -> SimulationReport {
    sim::simulate(scenario).expect("simulates")
}

#[test]
fn the_same_line_in_every_layer_is_the_run_routed_by_that_line() {
    let one = simulate(&mixtral_routed(&file_with("one.txt", SPIKE)));
    let every = mixtral_routed(&file_with("every.txt", &format!("{SPIKE}\n").repeat(32)));
    let routing = every.experts.as_ref().unwrap();
    assert_eq!(routing.layers.len(), 32);
    assert_eq!(routing.layer_busiest_rank_loads.len(), 32);
    let every = simulate(&every);
    assert_eq!(passes(&one), passes(&every));
    assert_eq!(one.metrics.iteration_time_s, every.metrics.iteration_time_s);
    assert_eq!(one.peak_memory(), every.peak_memory());
}

#[test]
fn a_spike_in_one_layer_slows_only_its_stage_by_one_layer_s_share() {
    let even = passes(&simulate(&mixtral_routed(&file_with("even.txt", EVEN))));
    // MoE layer 5 sits on stage 0 (layers 0–7).
    let spiked = mixtral_routed(&file_with("spiked.txt", &per_layer(Some(5))));
    let loads = &spiked.experts.as_ref().unwrap().layer_busiest_rank_loads;
    assert!(loads[5] > 1.0 && loads.iter().enumerate().all(|(i, &l)| i == 5 || l == 1.0));
    let spiked = passes(&simulate(&spiked));
    let everywhere = passes(&simulate(&mixtral_routed(&file_with(
        "everywhere.txt",
        &format!("{SPIKE}\n").repeat(32),
    ))));
    assert_eq!(even.len(), spiked.len());
    // The stack cuts each forward at its MoE layers' host synchronizations,
    // so a layer's experts fall in one of its tasks: on stage 0 such a task
    // takes either none of the spike or all it takes with every layer
    // spiked; a whole pass (a backward) one of its 8 MoE layers' share (each
    // task rounds up to a whole nanosecond once); and in all, one eighth.
    let (mut extra_ns, mut everywhere_extra_ns, mut slowed) = (0i64, 0i64, 0);
    for ((before, after), all) in even.iter().zip(&spiked).zip(&everywhere) {
        assert_eq!((before.0, before.1), (after.0, after.1));
        if after.0 != 0 {
            assert_eq!(after.2, before.2, "{after:?}");
            continue;
        }
        let extra = after.2 as i64 - before.2 as i64;
        let all_extra = all.2 as i64 - before.2 as i64;
        let whole_pass_share = (extra as f64 - all_extra as f64 / 8.0).abs() <= 2.0;
        assert!(
            extra == 0 || (extra - all_extra).abs() <= 2 || whole_pass_share,
            "{after:?}: {extra} ns against {all_extra} ns"
        );
        slowed += usize::from(extra > 0);
        extra_ns += extra;
        everywhere_extra_ns += all_extra;
    }
    assert!(slowed > 0);
    let share = extra_ns as f64 / everywhere_extra_ns as f64;
    assert!((share - 1.0 / 8.0).abs() < 1e-3, "{share}");
}

#[test]
fn files_that_are_neither_one_routing_nor_one_per_layer_are_refused() {
    let problems = |text: &str, name: &str| {
        let file = ScenarioFile {
            expert_imbalance: Some(file_with(name, text)),
            ..mixtral(4, 16, 8, None, false)
        };
        match file.resolve() {
            Ok(_) => panic!("{text:?} was accepted"),
            Err(error) => format!("{error:?}"),
        }
    };
    let short = problems(&format!("{EVEN}\n").repeat(31), "short.txt");
    assert!(
        short.contains("on 31 lines") && short.contains("32 MoE layers"),
        "{short}"
    );
    let mut lines = vec![EVEN; 32];
    lines[3] = "1 2 x 4 5 6 7 8";
    let bad = problems(&lines.join("\n"), "bad.txt");
    assert!(bad.contains("line 4: 'x' is not a token count"), "{bad}");
    lines[3] = "1 2 3 4 5 6 7";
    let narrow = problems(&lines.join("\n"), "narrow.txt");
    assert!(narrow.contains("has 7 counts"), "{narrow}");
}

#[test]
fn moe_layers_are_counted_past_the_dense_ones() {
    // Mixtral with its first 4 layers dense: 28 MoE layers, 8 layers a
    // stage, so stage 0 holds MoE layers 0–3 and stage 1 MoE layers 4–11
    // (model layers 8–15). A spike in MoE layer 4 slows stage 1 alone.
    let mut model = models::preset("mixtral-8x7b").unwrap();
    model.moe.as_mut().unwrap().first_dense_layers = 4;
    let scenario = |imbalance: &str| {
        ScenarioFile {
            model: Some(serde_json::to_value(&model).unwrap()),
            ..mixtral(4, 16, 8, Some(imbalance), false)
        }
        .resolve()
        .expect("valid scenario")
    };
    let mut lines = vec![EVEN; 28];
    let even = passes(&simulate(&scenario(&file_with(
        "dense-even.txt",
        &lines.join("\n"),
    ))));
    lines[4] = SPIKE;
    let spiked = passes(&simulate(&scenario(&file_with(
        "dense-spiked.txt",
        &lines.join("\n"),
    ))));
    assert_eq!(even.len(), spiked.len());
    let changed: std::collections::BTreeSet<u32> = even
        .iter()
        .zip(&spiked)
        .filter(|(before, after)| before.2 != after.2)
        .map(|(_, after)| after.0)
        .collect();
    assert_eq!(changed, [1].into_iter().collect());
}
