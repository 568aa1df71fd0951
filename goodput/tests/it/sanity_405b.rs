//! A worked sanity case: a 405B-class dense model on 16,384 H100s for 15 T
//! tokens. Run with `--nocapture` to see its numbers.
//!
//! ASSUMPTIONS of this case only (none is a default of the crate):
//! - 400 TFLOP/s achieved per GPU, and training FLOPs = 6·N·tokens, give
//!   the iteration time: 6 × 405e9 × 16,777,216 / (400e12 × 16,384) s.
//! - 16,777,216 tokens per iteration (2048 sequences of 8192 tokens).
//! - Checkpoint: 14 bytes per parameter (bf16 weights, fp32 master weights,
//!   Adam moments) = 5.67 TB, spread evenly over the 16,384 ranks.
//! - Storage: 25 GB/s per node write and read, 1 TB/s aggregate write and
//!   2 TB/s aggregate read.
//! - Restart: 120 s detection, 600 s rescheduling, 300 s initialization.
//! - Energy: 100 W idle per GPU, training at 90 % of the idle-to-TDP span,
//!   $2 per GPU-hour.
//!
//! Failures are the crate's default: Meta RSC-1, 6.50 per 1000 node-days.

use std::time::Instant;

use goodput::checkpoint::{CheckpointMode, StorageSpec};
use goodput::energy::{EnergyInputs, GpuKind};
use goodput::failure_distribution::FailureDistribution;
use goodput::failure_rates::ReliabilitySpec;
use goodput::recovery::{RecoveryPolicy, RestartSpec};
use goodput::sweep::{by_gpu_count, by_interval, ScaleInput};
use goodput::{evaluate, IntervalChoice, MonteCarloSpec, RunPlan, RunPlanReport, TrainingTarget};

use crate::fixtures::GB;

const PARAMETERS: f64 = 405e9;
const TOKENS: u64 = 15_000_000_000_000;
const TOKENS_PER_ITERATION: u64 = 16_777_216;
const GPUS: u64 = 16_384;
const ASSUMED_FLOPS_PER_GPU: f64 = 400e12;

fn iteration_time_s(gpus: u64) -> f64 {
    6.0 * PARAMETERS * TOKENS_PER_ITERATION as f64 / (ASSUMED_FLOPS_PER_GPU * gpus as f64)
}

fn plan_405b(mode: CheckpointMode) -> RunPlan {
    let checkpoint_bytes = 14.0 * PARAMETERS;
    RunPlan {
        iteration_time_s: iteration_time_s(GPUS),
        tokens_per_iteration: TOKENS_PER_ITERATION,
        target: TrainingTarget::Tokens(TOKENS),
        gpus: GPUS,
        gpus_per_node: 8,
        nics_per_node: 8,
        switches: 0,
        checkpoint_bytes_per_rank: (checkpoint_bytes / GPUS as f64) as u64,
        storage: StorageSpec {
            per_node_write_bytes_per_s: 25.0 * GB,
            per_node_read_bytes_per_s: 25.0 * GB,
            aggregate_write_bytes_per_s: 1000.0 * GB,
            aggregate_read_bytes_per_s: 2000.0 * GB,
        },
        checkpoint_mode: mode,
        reliability: ReliabilitySpec::default(),
        restart: RestartSpec {
            detection_s: 120.0,
            reschedule_s: 600.0,
            initialization_s: 300.0,
        },
        recovery: RecoveryPolicy::FullRestart,
        interval: IntervalChoice::Optimal,
        energy: EnergyInputs {
            gpu: Some(GpuKind::H100Sxm),
            gpu_idle_w: Some(100.0),
            gpu_tdp_w: None,
            training_utilization: 0.9,
            node_overhead_w: None,
            node_training_w: None,
            fabric_w: 0.0,
            pue: None,
            price_per_gpu_hour: Some(2.0),
            carbon_g_co2e_per_kwh: None,
        },
        monte_carlo: MonteCarloSpec {
            trials: 1000,
            seed: 405,
            failure_distribution: FailureDistribution::Exponential,
        },
    }
}

fn days(s: f64) -> f64 {
    s / 86_400.0
}

fn print_report(plan: &RunPlan, report: &RunPlanReport, elapsed_s: f64) {
    let mc = report.monte_carlo.unwrap();
    let e = report.expected;
    let mttf_h = report.failure_rate.mttf_hours.unwrap();
    println!(
        "== 405B dense, 16,384 H100, 15 T tokens (ASSUMED 400 TFLOP/s per GPU; see module doc) =="
    );
    println!(
        "iteration time {:.3} s, iterations {}, nodes {}",
        plan.iteration_time_s, report.iterations, report.nodes
    );
    println!("useful time {:.2} days", days(report.useful_time_s));
    println!("job MTTF {mttf_h:.3} h");
    println!(
        "checkpoint: {:.2} TB, persist {:.2} s, restore {:.2} s; downtime per failure {:.1} s immune + {:.1} s exposed",
        report.storage_checkpoint.total_bytes as f64 / 1e12,
        report.storage_checkpoint.persist_s,
        report.storage_checkpoint.restore_s,
        report.recovery.downtime.immune_s,
        report.recovery.downtime.exposed_s
    );
    println!(
        "interval: chosen {:.1} s ({} iterations), numeric optimum {:.1} s, Young {:.1} s, Daly {:.1} s",
        report.interval.chosen_s,
        report.interval.chosen_iterations,
        report.interval.numeric_optimum_s,
        report.interval.young_s.unwrap(),
        report.interval.daly_s.unwrap()
    );
    println!(
        "expected wall-clock {:.2} days (closed form); Monte-Carlo mean {:.2} d, p10 {:.2}, p50 {:.2}, p90 {:.2} ({} trials; whole evaluation {elapsed_s:.3} s)",
        days(e.wall_clock_s),
        days(mc.mean_wall_clock_s),
        days(mc.p10_wall_clock_s),
        days(mc.p50_wall_clock_s),
        days(mc.p90_wall_clock_s),
        mc.trials,
    );
    println!(
        "goodput {:.4}; expected interruptions {:.1} (Monte-Carlo mean {:.1}, range {}..{})",
        report.goodput,
        e.interruptions,
        mc.mean_interruptions,
        mc.min_interruptions,
        mc.max_interruptions
    );
    println!(
        "time lost: checkpoints {:.2} d, restarts {:.2} d, recomputed work {:.2} d",
        days(e.checkpoint_s),
        days(e.restart_s),
        days(e.lost_work_s)
    );
    let energy = &report.energy;
    println!(
        "GPU-hours {:.4e}; IT energy {:.0} MWh; facility {:.0} MWh; cost ${:.4e}; emissions {:.0} t CO2e",
        energy.gpu_hours,
        energy.it_energy_mwh,
        energy.facility_energy_mwh,
        energy.cost.unwrap(),
        energy.emissions_t_co2e
    );
    for value in &energy.values {
        println!("  {} = {} ({})", value.name, value.value, value.source);
    }
}

fn print_variants() {
    let asynchronous = evaluate(&plan_405b(CheckpointMode::Asynchronous {
        host_copy_bytes_per_s: 25.0 * GB,
    }))
    .unwrap();
    println!(
        "asynchronous checkpoints (25 GB/s host copy): interval {:.1} s, wall-clock {:.2} d, goodput {:.4}",
        asynchronous.interval.chosen_s,
        days(asynchronous.expected.wall_clock_s),
        asynchronous.goodput
    );
    let mut spares = plan_405b(CheckpointMode::Synchronous);
    spares.recovery = RecoveryPolicy::HotSpares { swap_s: 60.0 };
    let spares = evaluate(&spares).unwrap();
    println!(
        "hot spares (60 s swap): wall-clock {:.2} d, goodput {:.4}",
        days(spares.expected.wall_clock_s),
        spares.goodput
    );
    let mut no_mc = plan_405b(CheckpointMode::Synchronous);
    no_mc.monte_carlo.trials = 0;
    let intervals = [60.0, 300.0, 600.0, 1200.0, 3600.0, 7200.0];
    for point in by_interval(&no_mc, &intervals).unwrap() {
        println!(
            "  interval {:>6.0} s: {:.2} d, goodput {:.4}",
            point.interval_s,
            days(point.expected_wall_clock_s),
            point.goodput
        );
    }
    let scale: Vec<ScaleInput> = [4096, 8192, 16_384, 32_768, 65_536]
        .into_iter()
        .map(|gpus| ScaleInput {
            gpus,
            iteration_time_s: iteration_time_s(gpus),
            checkpoint_bytes_per_rank: Some((14.0 * PARAMETERS / gpus as f64) as u64),
        })
        .collect();
    for point in by_gpu_count(&no_mc, &scale).unwrap() {
        println!(
            "  {:>6} GPUs: useful {:.1} d, expected {:.1} d, goodput {:.4}, interruptions {:.0}, GPU-hours {:.3e}",
            point.gpus,
            days(point.useful_time_s),
            days(point.expected_wall_clock_s),
            point.goodput,
            point.interruptions,
            point.gpu_hours
        );
    }
}

#[test]
fn a_405b_model_on_16k_h100s_for_15t_tokens() {
    let plan = plan_405b(CheckpointMode::Synchronous);
    let started = Instant::now();
    let report = evaluate(&plan).unwrap();
    let elapsed_s = started.elapsed().as_secs_f64();
    print_report(&plan, &report, elapsed_s);
    print_variants();
    assert!(elapsed_s < 1.0, "took {elapsed_s} s");
    let mc = report.monte_carlo.unwrap();
    assert!((mc.mean_wall_clock_s / report.expected.wall_clock_s - 1.0).abs() < 0.02);
    assert!(report.goodput > 0.5 && report.goodput < 1.0);
}

#[test]
fn monte_carlo_cost_does_not_grow_with_the_segment_count() {
    // A checkpoint every iteration: 894,070 segments per trial.
    let mut plan = plan_405b(CheckpointMode::Asynchronous {
        host_copy_bytes_per_s: 25.0 * GB,
    });
    plan.interval = IntervalChoice::EveryIterations(1);
    let started = Instant::now();
    let report = evaluate(&plan).unwrap();
    let elapsed_s = started.elapsed().as_secs_f64();
    println!("checkpoint every iteration, 1000 trials: {elapsed_s:.3} s");
    assert!(elapsed_s < 1.0, "took {elapsed_s} s");
    let mc = report.monte_carlo.unwrap();
    assert!((mc.mean_wall_clock_s / report.expected.wall_clock_s - 1.0).abs() < 0.02);
}
