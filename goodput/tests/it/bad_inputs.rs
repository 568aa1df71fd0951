//! Bad inputs give errors naming the field; limits give the right answer.

use goodput::checkpoint::CheckpointMode;
use goodput::failure_rates::ReliabilitySpec;
use goodput::recovery::RecoveryPolicy;
use goodput::{evaluate, IntervalChoice};

use crate::fixtures::plan;

fn error_text(p: &goodput::RunPlan) -> String {
    evaluate(p).unwrap_err().to_string()
}

#[test]
fn zero_gpus_is_an_error() {
    let mut p = plan();
    p.gpus = 0;
    assert!(error_text(&p).contains("gpus"));
}

#[test]
fn gpus_that_are_not_whole_nodes_are_an_error() {
    let mut p = plan();
    p.gpus = 1020;
    assert!(error_text(&p).contains("whole number"));
}

#[test]
fn negative_bandwidth_and_nan_are_errors_reported_together() {
    let mut p = plan();
    p.iteration_time_s = f64::NAN;
    p.storage.aggregate_read_bytes_per_s = -1.0;
    let first = error_text(&p);
    assert!(first.contains("iteration_time_s"), "{first}");
    p.iteration_time_s = 5.0;
    let second = error_text(&p);
    assert!(second.contains("aggregate_read_bytes_per_s"), "{second}");
    p.storage.aggregate_read_bytes_per_s = 1e9;
    p.checkpoint_mode = CheckpointMode::Asynchronous {
        host_copy_bytes_per_s: f64::INFINITY,
    };
    assert!(error_text(&p).contains("host_copy_bytes_per_s"));
}

#[test]
fn a_negative_or_nan_failure_rate_is_an_error() {
    let mut p = plan();
    p.reliability.rates[0].failures_per_component_hour = f64::NAN;
    assert!(error_text(&p).contains("failures_per_component_hour"));
}

#[test]
fn overflowing_checkpoint_sizes_are_errors() {
    let mut p = plan();
    p.checkpoint_bytes_per_rank = u64::MAX / 4;
    assert!(error_text(&p).contains("overflows"));
}

#[test]
fn no_failures_means_work_plus_checkpoints() {
    let mut p = plan();
    p.reliability = ReliabilitySpec::none();
    p.interval = IntervalChoice::EveryIterations(1000);
    let report = evaluate(&p).unwrap();
    let checkpoints = (170_000 / 1000) as f64 * report.storage_checkpoint.persist_s;
    let expected = 170_000.0 * 5.0 + checkpoints;
    assert!((report.expected.wall_clock_s - expected).abs() < 1e-6 * expected);
    assert_eq!(report.expected.interruptions, 0.0);
    let sampled = report.monte_carlo.unwrap();
    assert!((sampled.mean_wall_clock_s - expected).abs() < 1e-6 * expected);
    assert_eq!(sampled.max_interruptions, 0);
    assert_eq!(report.interval.young_s, None);
    assert_eq!(report.failure_rate.mttf_hours, None);
}

#[test]
fn no_failures_and_the_optimal_interval_checkpoints_once() {
    let mut p = plan();
    p.reliability = ReliabilitySpec::none();
    let report = evaluate(&p).unwrap();
    assert_eq!(report.interval.chosen_s, report.useful_time_s);
    let expected = report.useful_time_s + report.storage_checkpoint.persist_s;
    assert!((report.expected.wall_clock_s - expected).abs() < 1e-6 * expected);
}

#[test]
fn fewer_replicas_need_a_rate_in_zero_one_and_a_repair_time() {
    let mut p = plan();
    p.recovery = RecoveryPolicy::FewerReplicas {
        repair_s: -1.0,
        degraded_work_rate: 0.0,
    };
    let text = evaluate(&p).unwrap_err().to_string();
    assert!(
        text.contains("recovery.repair_s") && text.contains("recovery.degraded_work_rate"),
        "{text}"
    );
}

#[test]
fn missing_idle_power_off_hopper_is_an_error() {
    let mut p = plan();
    p.energy.gpu_idle_w = None;
    p.energy.gpu = Some(goodput::energy::GpuKind::A100Sxm);
    assert!(error_text(&p).contains("gpu_idle_w"));
}

#[test]
fn too_many_trials_are_an_error() {
    let mut p = plan();
    p.monte_carlo.trials = 1_000_000;
    assert!(error_text(&p).contains("trials"));
}
