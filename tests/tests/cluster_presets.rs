//! The cluster presets of today (DGX H100/H200 SuperPOD,
//! DGX B200, GB200 NVL72) resolve with their GPU's default profile and
//! simulate a Llama-3-8B step through the library, across nodes.

use sim::scenario::{ScenarioFile, ScheduleKind};
use sim::task::TaskKind;

/// (preset, the default profile it must pick)
const PRESETS: [(&str, &str); 4] = [
    ("dgx-h100-superpod", "h100-sxm"),
    ("dgx-h200-superpod", "h200"),
    ("dgx-b200", "b200"),
    ("gb200-nvl72", "gb200"),
];

/// Llama-3-8B with t = 8 inside a node and d data-parallel replicas.
fn llama3_8b(topology: &str, dp: u32, contention: bool) -> sim::scenario::Scenario {
    ScenarioFile {
        model: Some("llama3-8b".into()),
        topology: Some(topology.into()),
        tp: Some(8),
        pp: Some(1),
        dp: Some(dp),
        microbatch_size: Some(1),
        global_batch: Some(2 * dp),
        schedule: Some(ScheduleKind::OneFOneB),
        options: sim::scenario::TrainingOptionsFile {
            network_contention: Some(contention),
            ..Default::default()
        },
        ..ScenarioFile::default()
    }
    .resolve()
    .unwrap_or_else(|e| panic!("{topology}: {e}"))
}

fn iteration_s(scenario: &sim::scenario::Scenario) -> f64 {
    sim::simulate(scenario).unwrap().metrics.iteration_time_s
}

#[test]
fn every_preset_picks_its_gpus_default_profile_and_simulates() {
    for (preset, profile) in PRESETS {
        let topology = topologies::preset(preset).unwrap();
        // Enough replicas to leave the first NVLink domain.
        let dp = topology.node.gpus_per_node / 8 + 1;
        let scenario = llama3_8b(preset, dp, false);
        assert_eq!(scenario.profile.id, profile, "{preset}");
        assert_eq!(scenario.profile.gpu, scenario.topology.gpu.name, "{preset}");
        let report = sim::simulate(&scenario).unwrap();
        let time_s = report.metrics.iteration_time_s;
        assert!(time_s > 0.0 && time_s < 60.0, "{preset}: {time_s} s");
        let all_reduces = report
            .timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::DataParallelAllReduce)
            .count();
        assert!(all_reduces > 0, "{preset}: no data-parallel all-reduce");
    }
}

#[test]
fn newer_gpus_run_the_same_step_faster() {
    let h100 = iteration_s(&llama3_8b("dgx-h100-superpod", 2, false));
    let h200 = iteration_s(&llama3_8b("dgx-h200-superpod", 2, false));
    let b200 = iteration_s(&llama3_8b("dgx-b200", 2, false));
    // Same peak FLOP/s, more HBM bandwidth; then 2.27x the peak and NVLink 5.
    assert!(h200 <= h100, "H200 {h200} s vs H100 {h100} s");
    assert!(b200 < h200, "B200 {b200} s vs H200 {h200} s");
}

#[test]
fn a_gb200_tensor_group_of_72_stays_on_nvlink() {
    // t = 8 and d = 9 fill one NVL72 rack: the data-parallel ring stays on
    // NVLink 5; d = 10 puts its tenth member in the next rack.
    let inside = llama3_8b("gb200-nvl72", 9, false);
    let across = llama3_8b("gb200-nvl72", 10, false);
    let ring = |scenario: &sim::scenario::Scenario| {
        sim::simulate(scenario)
            .unwrap()
            .into_timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::DataParallelAllReduce)
            .map(|t| t.duration_ns())
            .max()
            .unwrap()
    };
    // Leaving the rack puts the ring on 400 Gb/s NICs instead of NVLink 5.
    assert!(
        ring(&across) > 2 * ring(&inside),
        "{} vs {}",
        ring(&across),
        ring(&inside)
    );
}
