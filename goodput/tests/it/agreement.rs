//! The Monte-Carlo mean agrees with the closed form (exponential failures,
//! fixed checkpoint cost), for every built recovery policy.

use goodput::checkpoint::CheckpointMode;
use goodput::closed_form::{expected_run, Downtime, RunModel};
use goodput::failure_distribution::FailureDistribution;
use goodput::monte_carlo::monte_carlo;
use goodput::recovery::RecoveryPolicy;
use goodput::{evaluate, IntervalChoice};

use crate::fixtures::{plan, GB};

fn assert_agrees(label: &str, model: &RunModel, trials: u32, seed: u64) {
    assert_agrees_as(label, model, trials, seed, FailureDistribution::Exponential);
}

/// The closed form against trials whose times between failures follow
/// `distribution` (its mean the model's MTBF).
pub fn assert_agrees_as(
    label: &str,
    model: &RunModel,
    trials: u32,
    seed: u64,
    distribution: FailureDistribution,
) {
    let closed = expected_run(model).unwrap();
    let sampled = monte_carlo(model, trials, seed, distribution).unwrap();
    let relative = (sampled.mean_wall_clock_s - closed.wall_clock_s).abs() / closed.wall_clock_s;
    let sigmas = (sampled.mean_wall_clock_s - closed.wall_clock_s).abs() / sampled.standard_error_s;
    println!(
        "{label}: closed {:.1} s, Monte-Carlo {:.1} s ± {:.1} ({relative:.4} relative, {sigmas:.2} standard errors); interruptions {:.2} vs {:.2}",
        closed.wall_clock_s, sampled.mean_wall_clock_s, sampled.standard_error_s, closed.interruptions, sampled.mean_interruptions
    );
    assert!(relative < 0.02, "{label}: {relative}");
    assert!(sigmas < 5.0, "{label}: {sigmas} standard errors apart");
    let interruptions =
        (sampled.mean_interruptions - closed.interruptions).abs() / closed.interruptions;
    assert!(
        interruptions < 0.02,
        "{label}: interruptions {interruptions}"
    );
}

#[test]
fn monte_carlo_mean_matches_closed_form_within_two_percent() {
    // 30 days of work, MTBF 3 h, checkpoint 2 min every hour, restarts that
    // can fail (exposed) and cannot (immune).
    let model = RunModel {
        work_s: 30.0 * 86_400.0,
        interval_s: 3600.0,
        checkpoint_s: 120.0,
        failures_per_s: 1.0 / (3.0 * 3600.0),
        downtime: Downtime {
            immune_s: 600.0,
            exposed_s: 300.0,
        },
        durability_delay_s: 0.0,
    };
    assert_agrees("30 d, MTBF 3 h", &model, 20_000, 1);
}

#[test]
fn agreement_holds_when_failures_are_frequent_against_the_segment() {
    // λ·(τ + C) = 1: most segments fail at least once.
    let model = RunModel {
        work_s: 2.0 * 86_400.0,
        interval_s: 3000.0,
        checkpoint_s: 600.0,
        failures_per_s: 1.0 / 3600.0,
        downtime: Downtime {
            immune_s: 0.0,
            exposed_s: 900.0,
        },
        durability_delay_s: 0.0,
    };
    assert_agrees("λX = 1", &model, 20_000, 2);
}

#[test]
fn renewal_trials_of_weibull_shape_1_agree_with_the_closed_form_too() {
    // Shape 1 is the exponential, sampled by the renewal trials (the
    // failure clock carried across windows and restarts) instead of by
    // memorylessness: the same expectations, through the other code path,
    // with and without a durability delay.
    let weibull_1 = FailureDistribution::Weibull { shape: 1.0 };
    for (delay_s, seed) in [(0.0, 4), (1800.0, 5)] {
        let model = RunModel {
            work_s: 10.0 * 86_400.0,
            interval_s: 3600.0,
            checkpoint_s: 120.0,
            failures_per_s: 1.0 / (3.0 * 3600.0),
            downtime: Downtime {
                immune_s: 600.0,
                exposed_s: 300.0,
            },
            durability_delay_s: delay_s,
        };
        assert_agrees_as("Weibull k = 1", &model, 20_000, seed, weibull_1);
    }
}

#[test]
fn agreement_holds_when_checkpoints_become_durable_long_after_their_copy() {
    // A persist of half the interval: a failure in it loses two segments'
    // progress; λ·d = 1/6 makes that extra loss visible (e^{λd} ≈ 1.18).
    let model = RunModel {
        work_s: 10.0 * 86_400.0,
        interval_s: 3600.0,
        checkpoint_s: 30.0,
        failures_per_s: 1.0 / (3.0 * 3600.0),
        downtime: Downtime {
            immune_s: 600.0,
            exposed_s: 300.0,
        },
        durability_delay_s: 1800.0,
    };
    assert_agrees("d = τ/2", &model, 20_000, 3);
    let at_copy = RunModel {
        durability_delay_s: 0.0,
        ..model
    };
    let later = expected_run(&model).unwrap().wall_clock_s;
    let optimistic = expected_run(&at_copy).unwrap().wall_clock_s;
    assert!(later > 1.05 * optimistic, "{later} vs {optimistic}");
}

#[test]
fn agreement_holds_for_every_built_policy_through_a_plan() {
    let policies = [
        RecoveryPolicy::FullRestart,
        RecoveryPolicy::HotSpares { swap_s: 60.0 },
        RecoveryPolicy::InMemory {
            peer_bytes_per_s: 20.0 * GB,
            replacement_s: 60.0,
        },
        RecoveryPolicy::FewerReplicas {
            repair_s: 4.0 * 3600.0,
            degraded_work_rate: 0.9,
        },
    ];
    for (i, policy) in policies.into_iter().enumerate() {
        for mode in [
            CheckpointMode::Synchronous,
            CheckpointMode::Asynchronous {
                host_copy_bytes_per_s: 20.0 * GB,
            },
        ] {
            let mut p = plan();
            p.recovery = policy;
            p.checkpoint_mode = mode;
            p.interval = IntervalChoice::EveryIterations(200);
            p.monte_carlo.trials = 10_000;
            p.monte_carlo.seed = i as u64;
            let report = evaluate(&p).unwrap();
            let sampled = report.monte_carlo.unwrap();
            let relative = (sampled.mean_wall_clock_s - report.expected.wall_clock_s).abs()
                / report.expected.wall_clock_s;
            println!(
                "{} {:?}: relative difference {relative:.5}",
                policy.name(),
                mode
            );
            assert!(relative < 0.02, "{} {mode:?}: {relative}", policy.name());
        }
    }
}
