//! CPU offloading of activations (`cpu_offloading_num_layers`, issue 36
//! item 2): the GPU keeps L − N + 1 layers' activations and the host N; each
//! microbatch's forward and backward grow by TE's window stalls, computed
//! here by hand from the per-layer and copy times; what Megatron-Core
//! refuses is refused.

use models::memory::RecomputeKind;
use sim::cost::activation_offload::{stage_stalls, OffloadStalls};
use sim::scenario::{ScenarioFile, ScheduleKind, TrainingOptionsFile};
use sim::SimulationReport;

/// Llama 3 8B at s = 4096 on one H100, t = p = d = 1, two microbatches:
/// its GPU work, not the host's issue, sets the time, and a layer's copy
/// (570 MB at PCIe rate) outlasts its forward.
fn file(offloaded: u32) -> ScenarioFile {
    ScenarioFile {
        model: Some("llama3-8b".into()),
        seq_len: Some(4096),
        topology: Some("dgx-h100-superpod:1".into()),
        tp: Some(1),
        pp: Some(1),
        dp: Some(1),
        microbatch_size: Some(1),
        global_batch: Some(2),
        recompute: Some(sim::scenario::Recompute::None),
        schedule: Some(ScheduleKind::OneFOneB),
        options: TrainingOptionsFile {
            cpu_offloading_num_layers: Some(offloaded),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    }
}

fn run(offloaded: u32) -> (sim::scenario::Scenario, SimulationReport) {
    let scenario = file(offloaded).resolve().expect("valid scenario");
    let report = sim::simulate(&scenario).expect("simulates");
    (scenario, report)
}

#[test]
fn the_gpu_keeps_l_minus_n_plus_one_layers_and_the_host_n() {
    let (scenario, none) = run(0);
    let layer = sim::memory::layer_activation_bytes(&scenario, RecomputeKind::None);
    for offloaded in [1, 2, 16, 31] {
        let (_, report) = run(offloaded);
        let (before, after) = (&none.memory[0], &report.memory[0]);
        let freed = before.activation_bytes - after.activation_bytes;
        let expected = (f64::from(offloaded - 1) * layer) as u64;
        assert!(
            freed.abs_diff(expected) <= 1,
            "N = {offloaded}: {freed} vs {expected}"
        );
        assert_eq!(after.cpu_bytes, (f64::from(offloaded) * layer) as u64);
        assert_eq!(before.cpu_bytes, 0);
    }
}

#[test]
fn copies_stall_each_pass_by_what_the_layers_they_overlap_do_not_hide() {
    let (scenario, none) = run(0);
    let pcie = &scenario.profile.pcie;
    let layer = sim::memory::layer_activation_bytes(&scenario, RecomputeKind::None);
    // One GPU on its host link: latency + bytes at the profile's rate.
    let latency_s = scenario.topology.pcie.latency_ns as f64 * 1e-9;
    // TE's windows for L = 32: N = 1 overlaps layers 1–31; N = 3 windows
    // 10, 21, 31 (⌊32/3⌋ = 10, 32 mod 3 = 2); N = 31 one layer each.
    for (offloaded, overlaps) in [(1, vec![31]), (3, vec![10, 11, 10]), (31, vec![1; 31])] {
        let (scenario, report) = run(offloaded);
        let stalls: OffloadStalls = stage_stalls(&scenario);
        let to_host = latency_s + (layer as u64) as f64 / pcie.device_to_host_bytes_per_s.value;
        let from_host = latency_s + (layer as u64) as f64 / pcie.host_to_device_bytes_per_s.value;
        assert!((stalls.copy_to_host_s - to_host).abs() < 1e-15);
        assert!((stalls.copy_from_host_s - from_host).abs() < 1e-15);
        let by_hand = |copy: f64, layer_s: f64| -> f64 {
            overlaps
                .iter()
                .map(|&n: &u32| (copy - f64::from(n) * layer_s).max(0.0))
                .sum()
        };
        assert_eq!(
            stalls.forward_stall_s,
            by_hand(stalls.copy_to_host_s, stalls.layer_forward_s)
        );
        assert_eq!(
            stalls.backward_stall_s,
            by_hand(stalls.copy_from_host_s, stalls.layer_backward_s)
        );
        // Two microbatches, each forward and backward stalled, nothing else
        // changed (to a nanosecond of rounding per pass).
        let grown_ns = (report.metrics.iteration_time_s - none.metrics.iteration_time_s) * 1e9;
        let expected_ns = 2.0 * (stalls.forward_stall_s + stalls.backward_stall_s) * 1e9;
        println!("N = {offloaded}: {stalls:?}; +{grown_ns:.0} ns, expected {expected_ns:.0}");
        assert!(
            (grown_ns - expected_ns).abs() <= 8.0,
            "{grown_ns} vs {expected_ns}"
        );
    }
    // A layer's copy outlasts its forward: one layer each stalls.
    assert!(stage_stalls(&run(31).0).forward_stall_s > 0.0);
}

#[test]
fn what_megatron_core_refuses_is_refused_by_name() {
    let refused = |file: ScenarioFile| file.resolve().unwrap_err().to_string();
    let text = refused(file(32));
    assert!(text.contains("32 of the model's 32 layers"), "{text}");
    let pipelined = ScenarioFile {
        pp: Some(2),
        ..file(1)
    };
    assert!(refused(pipelined).contains("needs pp = 1"));
    let recomputed = ScenarioFile {
        recompute: Some(sim::scenario::Recompute::Selective),
        ..file(1)
    };
    assert!(refused(recomputed).contains("activation recomputation"));
    let gpipe = ScenarioFile {
        schedule: Some(ScheduleKind::Gpipe),
        ..file(1)
    };
    assert!(refused(gpipe).contains("--schedule 1f1b"));
    let offloaded_optimizer = ScenarioFile {
        options: TrainingOptionsFile {
            zero_offload: Some(true),
            cpu_offloading_num_layers: Some(1),
            ..TrainingOptionsFile::default()
        },
        ..file(1)
    };
    assert!(refused(offloaded_optimizer).contains("zero_offload"));
}
