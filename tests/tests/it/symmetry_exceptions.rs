//! Symmetry with exceptions (issue 37, item 1): slow ranks, NVLinks, PCIe
//! links and NICs in a few data-parallel replicas lower those beside the
//! representative, and the run must give exactly what full expansion with
//! the same stragglers gives: iteration time, every metric (floating-point
//! bits included), memory, the task, edge and event counts, and the
//! Timeline on demand. Cases it does not cover (a NIC shared by several
//! replicas, a spread of speeds, context parallelism, stragglers in nearly
//! every replica) run in full.

use super::symmetry::{grid, options, scenario};
use sim::rank_spread::RankSpread;
use sim::scenario::{Scenario, ScheduleKind};
use sim::slow_link::{SlowNic, SlowNvlink, SlowPcie};
use sim::straggler::{SlowRank, Stragglers};
use sim::{Expansion, SimulationMode};

/// Simulates with `slow` both ways; returns the mode the automatic run chose.
fn compare(scenario: &Scenario, slow: &[(u32, f64)]) -> SimulationMode {
    let stragglers = stragglers(scenario, slow);
    compare_with(scenario, &stragglers)
}

fn stragglers(scenario: &Scenario, slow: &[(u32, f64)]) -> Stragglers {
    let ranks = slow
        .iter()
        .map(|&(rank, factor)| SlowRank { rank, factor })
        .collect();
    Stragglers::new(ranks, scenario.layout.gpus()).unwrap()
}

fn compare_with(scenario: &Scenario, stragglers: &Stragglers) -> SimulationMode {
    let title = scenario.title();
    let full = sim::simulate_with_stragglers(scenario, Expansion::Built, stragglers).unwrap();
    let auto = sim::simulate_with_stragglers(scenario, Expansion::Auto, stragglers).unwrap();
    assert_eq!(full.mode, SimulationMode::Full);
    assert_eq!(auto.metrics, full.metrics, "{title}");
    assert_eq!(
        auto.metrics.tflops_per_gpu.to_bits(),
        full.metrics.tflops_per_gpu.to_bits(),
        "{title}"
    );
    assert_eq!(auto.memory, full.memory, "{title}");
    assert_eq!(auto.n_tasks, full.n_tasks, "{title}: tasks");
    assert_eq!(auto.n_edges, full.n_edges, "{title}: edges");
    assert_eq!(auto.n_events, full.n_events, "{title}: events");
    assert_eq!(auto.makespan_ns(), full.makespan_ns(), "{title}");
    if let SimulationMode::Exceptions { .. } = auto.mode {
        assert!(auto.simulated_tasks < full.n_tasks, "{title}");
        assert!(auto.expanded().is_none(), "{title}: a replica map");
        assert_eq!(auto.timeline(), full.timeline(), "{title}");
    }
    auto.mode
}

#[test]
fn slow_ranks_in_a_few_replicas_give_full_expansions_numbers() {
    let layouts = [(1, 2, 4), (2, 2, 4), (1, 4, 4), (4, 1, 4), (2, 1, 8)];
    let (mut exceptions, mut checked) = (0, 0);
    for (layout, scenario) in grid(&layouts) {
        let (t, gpus) = (layout.0, scenario.layout.gpus());
        // Replica 0's first rank, a middle replica's last stage, and two
        // slow ranks in two replicas (one of them replica 0).
        let cases: [&[(u32, f64)]; 3] = [
            &[(0, 1.5)],
            &[(gpus - 1 - t, 2.0)],
            &[(t - 1, 1.25), (gpus - 1, 3.0)],
        ];
        for slow in cases {
            checked += 1;
            let mode = compare(&scenario, slow);
            if matches!(mode, SimulationMode::Exceptions { .. }) {
                exceptions += 1;
            }
        }
    }
    assert!(checked >= 54, "only {checked} cases resolved");
    // Every resolved case here (ZeRO-1/2/3, the distributed optimizer,
    // overlapped and bucketed reductions) is covered.
    assert_eq!(exceptions, checked, "cases that ran in full");
}

#[test]
fn the_mode_counts_the_slow_replicas() {
    let scenario = scenario(
        (2, 2, 4),
        (ScheduleKind::OneFOneB, 1),
        1,
        "megatron-core-2024",
        options(1),
        4,
    )
    .unwrap();
    // Ranks 2 and 3 are replica 1's stage 0; rank 12 is replica 2's stage 1.
    let mode = compare(&scenario, &[(2, 1.5), (3, 1.5), (12, 2.0)]);
    assert_eq!(
        mode,
        SimulationMode::Exceptions {
            replicas: 4,
            exceptions: 2
        }
    );
    assert_eq!(
        mode.describe(),
        "symmetric with exceptions (3 of 4 replicas: one for the 2 alike, 2 with stragglers)"
    );
}

#[test]
fn what_couples_replicas_otherwise_runs_in_full_and_still_agrees() {
    let base = || {
        scenario(
            (1, 2, 4),
            (ScheduleKind::OneFOneB, 1),
            1,
            "megatron-core-2024",
            options(0),
            4,
        )
        .unwrap()
    };
    let scenario = base();
    // Slow ranks in three of four replicas.
    assert_eq!(
        compare(&scenario, &[(0, 1.5), (1, 1.5), (2, 1.5)]),
        SimulationMode::Full
    );
    // A slow NIC that GPUs of two replicas share (t = 1, two GPUs a NIC),
    // and a spread of speeds.
    let nic = stragglers(&scenario, &[(1, 1.5)])
        .with_slow_nics(
            &[SlowNic {
                rank: 0,
                factor: 2.0,
            }],
            &scenario,
        )
        .unwrap();
    assert_eq!(compare_with(&scenario, &nic), SimulationMode::Full);
    let spread = stragglers(&scenario, &[(1, 1.5)]).with_spread(
        Some(RankSpread::lognormal(0.05).unwrap()),
        0,
        scenario.layout.gpus(),
    );
    assert_eq!(compare_with(&scenario, &spread), SimulationMode::Full);
    // Context parallelism: its exchanges join two of the four replicas.
    let cp = scenario_with_cp();
    assert_eq!(compare(&cp, &[(0, 1.5)]), SimulationMode::Full);
}

fn scenario_with_cp() -> Scenario {
    scenario(
        (1, 2, 2),
        (ScheduleKind::Interleaved, 2),
        2,
        "megatron-core-2024",
        options(0),
        8,
    )
    .unwrap()
}

/// The slow-link tests' runs: three layouts on the small cluster (nodes of
/// 4 GPUs and 2 NICs), 1F1B, megatron-core-2024, each with its own options.
fn link_scenarios() -> impl Iterator<Item = Scenario> {
    [(2, 2, 4), (2, 1, 8), (4, 2, 4)]
        .into_iter()
        .enumerate()
        .filter_map(|(index, layout)| {
            scenario(
                layout,
                (ScheduleKind::OneFOneB, 1),
                1,
                "megatron-core-2024",
                options(index + 1),
                4,
            )
        })
}

/// Slow ranks (rank, factor), NVLinks and NICs of one case.
type LinkCase<'a> = (&'a [(u32, f64)], &'a [SlowNvlink], &'a [SlowNic]);

/// Slow NVLinks and NICs: the replicas of the GPUs behind them lowered, and
/// the collectives over all replicas costed at the slow member's rate, as in
/// full expansion. The small cluster's nodes hold 4 GPUs and 2 NICs.
#[test]
fn slow_links_in_a_few_replicas_give_full_expansions_numbers() {
    let (mut exceptions, mut slowed_runs) = (0, 0);
    for scenario in link_scenarios() {
        let gpus = scenario.layout.gpus();
        let link_cases: [LinkCase; 3] = [
            (
                &[],
                &[SlowNvlink {
                    rank: 1,
                    factor: 4.0,
                }],
                &[],
            ),
            (
                &[],
                &[],
                &[SlowNic {
                    rank: gpus - 1,
                    factor: 3.0,
                }],
            ),
            (
                &[(0, 1.2)],
                &[SlowNvlink {
                    rank: gpus / 2,
                    factor: 2.0,
                }],
                &[SlowNic {
                    rank: 2,
                    factor: 2.0,
                }],
            ),
        ];
        for (slow, nvlinks, nics) in link_cases {
            let with = stragglers(&scenario, slow)
                .with_slow_nvlinks(nvlinks, &scenario)
                .unwrap()
                .with_slow_nics(nics, &scenario)
                .unwrap();
            let mode = compare_with(&scenario, &with);
            if matches!(mode, SimulationMode::Exceptions { .. }) {
                exceptions += 1;
            }
            // The links do slow the run (else moving them wrongly could pass;
            // at t2 p1 d8 the tiny model's slowed collectives stay hidden).
            let slowed = sim::simulate_with_stragglers(&scenario, Expansion::Auto, &with).unwrap();
            let plain = sim::simulate(&scenario).unwrap();
            if slowed.makespan_ns() > plain.makespan_ns() {
                slowed_runs += 1;
            }
        }
    }
    assert_eq!(exceptions, 9, "cases that ran in full");
    assert_eq!(slowed_runs, 7, "runs the links slowed");
}

/// Slow PCIe links (the GPUDirect path to the NIC): the replicas of their
/// GPUs lowered beside the representative, the cross-node collectives over
/// all replicas at the slow member's rate, as in full expansion.
#[test]
fn slow_pcie_links_in_a_few_replicas_give_full_expansions_numbers() {
    let (mut exceptions, mut slowed_runs) = (0, 0);
    for scenario in link_scenarios() {
        let gpus = scenario.layout.gpus();
        for pcies in [
            vec![SlowPcie {
                rank: gpus - 1,
                factor: 8.0,
            }],
            vec![
                SlowPcie {
                    rank: 1,
                    factor: 4.0,
                },
                SlowPcie {
                    rank: gpus / 2,
                    factor: 16.0,
                },
            ],
        ] {
            let with = Stragglers::none()
                .with_slow_pcies(&pcies, &scenario)
                .unwrap();
            if matches!(
                compare_with(&scenario, &with),
                SimulationMode::Exceptions { .. }
            ) {
                exceptions += 1;
            }
            let slowed = sim::simulate_with_stragglers(&scenario, Expansion::Auto, &with).unwrap();
            if slowed.makespan_ns() > sim::simulate(&scenario).unwrap().makespan_ns() {
                slowed_runs += 1;
            }
        }
    }
    println!("{exceptions} runs with exceptions, {slowed_runs} slowed");
    assert!(exceptions >= 3, "{exceptions} runs with exceptions");
    assert!(slowed_runs >= 3, "{slowed_runs} runs slowed");
}
