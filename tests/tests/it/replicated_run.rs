//! Full expansion from one replica's graph (issue 37, item 2;
//! `sim::replicated_run`): a run of every replica that keeps the
//! representative's graph must give what building every replica's tasks
//! gives — every metric's bits, memory, counts, the whole Timeline record
//! for record. The symmetry grid (`symmetry.rs`'s `compare`) checks it on
//! every layout there; here the stragglers, which only full expansion runs
//! exactly, and the runs that must still build every replica.

use sim::rank_spread::RankSpread;
use sim::scenario::{Recompute, ScenarioFile, ScheduleKind, TrainingOptionsFile};
use sim::slow_link::{SlowNic, SlowNvlink, SlowPcie};
use sim::slow_uplink::SlowUplink;
use sim::straggler::{SlowRank, Stragglers};
use sim::{Expansion, SimulationMode, SimulationReport};

/// `replicated` (a run of every replica) equals `built` (every replica's
/// tasks built): metrics to the bit, memory, counts, makespan, the
/// Timeline and some ranks' records in a window.
pub(super) fn assert_same_run(
    replicated: &SimulationReport,
    built: &SimulationReport,
    title: &str,
) {
    assert_eq!(replicated.mode, SimulationMode::Full, "{title}");
    assert_eq!(replicated.metrics, built.metrics, "{title}");
    for (a, b) in [
        (
            replicated.metrics.iteration_time_s,
            built.metrics.iteration_time_s,
        ),
        (
            replicated.metrics.tflops_per_gpu,
            built.metrics.tflops_per_gpu,
        ),
        (
            replicated.metrics.bubble_fraction,
            built.metrics.bubble_fraction,
        ),
    ] {
        assert_eq!(a.to_bits(), b.to_bits(), "{title}");
    }
    assert_eq!(replicated.memory, built.memory, "{title}");
    assert_eq!(replicated.n_tasks, built.n_tasks, "{title}: tasks");
    assert_eq!(replicated.n_edges, built.n_edges, "{title}: edges");
    assert_eq!(replicated.n_events, built.n_events, "{title}: events");
    assert_eq!(replicated.simulated_tasks, built.simulated_tasks, "{title}");
    assert_eq!(replicated.makespan_ns(), built.makespan_ns(), "{title}");
    assert_eq!(replicated.busiest_links, built.busiest_links, "{title}");
    assert_eq!(replicated.timeline(), built.timeline(), "{title}");
    let gpus = built.timeline().header.n_gpus;
    let makespan = built.makespan_ns();
    let selection = sim::TimelineSelection {
        ranks: Some(vec![gpus / 2, gpus - 1]),
        window_ns: Some((makespan / 3, 2 * makespan / 3)),
    };
    assert_eq!(
        replicated.timeline_of(&selection),
        built.timeline_of(&selection),
        "{title}"
    );
}

pub(super) fn both(
    scenario: &sim::scenario::Scenario,
    stragglers: &Stragglers,
) -> (SimulationReport, SimulationReport) {
    let replicated = sim::simulate_with_stragglers(scenario, Expansion::Full, stragglers).unwrap();
    let built = sim::simulate_with_stragglers(scenario, Expansion::Built, stragglers).unwrap();
    assert!(!built.replicated());
    (replicated, built)
}

fn layouts() -> Vec<sim::scenario::Scenario> {
    [
        ((2, 2, 4), ScheduleKind::OneFOneB, 1),
        ((1, 4, 4), ScheduleKind::Interleaved, 2),
    ]
    .into_iter()
    .enumerate()
    .filter_map(|(variant, (layout, schedule, chunks))| {
        super::symmetry::scenario(
            layout,
            (schedule, chunks),
            1,
            "megatron-core-2024",
            super::symmetry::options(variant + 1),
            4,
        )
    })
    .collect()
}

#[test]
fn slow_ranks_and_spreads_in_every_replica_agree_with_every_replica_built() {
    let scenarios = layouts();
    assert_eq!(scenarios.len(), 2);
    for scenario in &scenarios {
        let title = scenario.title();
        let gpus = scenario.layout.gpus();
        // A slow rank in replica 0, one in a later replica, both; and a
        // spread of every rank's speed (which exceptions cannot take).
        let slow = |ranks: &[(u32, f64)]| {
            Stragglers::new(
                ranks
                    .iter()
                    .map(|&(rank, factor)| SlowRank { rank, factor })
                    .collect(),
                gpus,
            )
            .unwrap()
        };
        let cases = [
            slow(&[(0, 1.3)]),
            slow(&[(gpus - 1, 1.25)]),
            slow(&[(1, 1.1), (gpus / 2 + 1, 1.5)]),
            Stragglers::none().with_spread(Some(RankSpread::lognormal(0.1).unwrap()), 7, gpus),
        ];
        let nominal = sim::simulate_with(scenario, Expansion::Full).unwrap();
        for stragglers in &cases {
            let (replicated, built) = both(scenario, stragglers);
            assert!(replicated.replicated(), "{title}");
            assert_same_run(&replicated, &built, &title);
            // The slow kernels took longer (the tiny model's host lane
            // may hide it from the iteration time).
            assert_ne!(replicated.timeline(), nominal.timeline(), "{title}");
            // Without --no-symmetry a spread has no exceptions to run: every replica, from one graph.
            if stragglers.spread().is_some() {
                let auto =
                    sim::simulate_with_stragglers(scenario, Expansion::Auto, stragglers).unwrap();
                assert!(
                    auto.replicated() && auto.mode == SimulationMode::Full,
                    "{title}"
                );
                assert_eq!(auto.metrics, built.metrics, "{title}");
            }
        }
    }
}

#[test]
fn slow_nics_nvlinks_pcie_links_and_uplinks_price_each_twin_by_its_own_links() {
    // Four DGX A100 nodes in two blocks of a radix-4 tree, t4 p2 d4
    // (`slow_uplinks.rs`): every kind of slow link, on a rank of replica 0
    // and of a later replica.
    let scenario = super::slow_uplinks::four_nodes(false);
    let cases = [
        Stragglers::none().with_slow_nics(
            &[SlowNic {
                rank: 21,
                factor: 4.0,
            }],
            &scenario,
        ),
        Stragglers::none().with_slow_nvlinks(
            &[SlowNvlink {
                rank: 2,
                factor: 3.0,
            }],
            &scenario,
        ),
        Stragglers::none().with_slow_pcies(
            &[SlowPcie {
                rank: 13,
                factor: 2.0,
            }],
            &scenario,
        ),
        Stragglers::none().with_slow_uplinks(
            &[SlowUplink {
                rank: 3,
                factor: 4.0,
            }],
            &scenario,
        ),
        Stragglers::none().with_slow_uplinks(
            &[SlowUplink {
                rank: 27,
                factor: 2.0,
            }],
            &scenario,
        ),
    ];
    let nominal = sim::simulate_with(&scenario, Expansion::Full).unwrap();
    for stragglers in cases {
        let stragglers = stragglers.unwrap();
        let (replicated, built) = both(&scenario, &stragglers);
        let title = format!("{:?}", stragglers.links());
        assert!(replicated.replicated(), "{title}");
        assert_same_run(&replicated, &built, &title);
        assert_ne!(replicated.timeline(), nominal.timeline(), "{title}");
    }
}

/// Mixtral at ep 4 on d 8 (t1 p2, 512 tokens, skewed routing, full
/// recompute) with the distributed optimizer and overlapped gradient
/// reduction, plus `options`.
pub(super) fn mixtral_ep_4(options: TrainingOptionsFile) -> sim::scenario::Scenario {
    ScenarioFile {
        model: Some("mixtral-8x7b".into()),
        seq_len: Some(512),
        topology: Some("dgx-h100-superpod".into()),
        tp: Some(1),
        pp: Some(2),
        dp: Some(8),
        ep: Some(4),
        expert_imbalance: Some("skew:1.5".into()),
        microbatch_size: Some(1),
        global_batch: Some(32),
        recompute: Some(Recompute::Full),
        options: TrainingOptionsFile {
            distributed_optimizer: Some(true),
            overlap_grad_reduce: Some(true),
            ..options
        },
        ..ScenarioFile::default()
    }
    .resolve()
    .unwrap()
}

/// Mixtral at ep 4 on d 8 (expert gathers and reductions over the whole
/// data group) and context parallelism at cp 2 with ZeRO-3, each with a slow
/// rank in a later replica and a slow NIC: where a missing cross-replica
/// edge would show (alike replicas hide it).
#[test]
fn experts_and_context_parallelism_with_a_straggler_in_a_later_replica_agree() {
    let moe = mixtral_ep_4(TrainingOptionsFile::default());
    let cp = super::symmetry::scenario(
        (2, 2, 2),
        (ScheduleKind::Interleaved, 2),
        2,
        "megatron-core-2024",
        TrainingOptionsFile {
            zero_stage: Some(3),
            ..Default::default()
        },
        8,
    )
    .unwrap();
    for scenario in [&moe, &cp] {
        let title = scenario.title();
        let gpus = scenario.layout.gpus();
        let stragglers = Stragglers::new(
            vec![SlowRank {
                rank: gpus - 3,
                factor: 1.4,
            }],
            gpus,
        )
        .unwrap()
        .with_slow_nics(
            &[SlowNic {
                rank: gpus / 2 + 1,
                factor: 3.0,
            }],
            scenario,
        )
        .unwrap();
        let (replicated, built) = both(scenario, &stragglers);
        assert!(replicated.replicated(), "{title}");
        assert_same_run(&replicated, &built, &title);
    }
}

/// The host-memory check estimates the run that happens: kept as one
/// replica's graph exactly where the simulation runs that way.
#[test]
fn the_memory_estimate_follows_the_path_the_run_takes() {
    use sim::host_memory::Footprint;
    let mut scenarios = layouts();
    scenarios.push(super::slow_uplinks::four_nodes(false));
    scenarios.push(super::slow_uplinks::four_nodes(true));
    for scenario in &scenarios {
        for expansion in [Expansion::Auto, Expansion::Full, Expansion::Built] {
            let none = Stragglers::none();
            let report = sim::simulate_with(scenario, expansion).unwrap();
            let footprint = Footprint::of(scenario, expansion, &none);
            assert_eq!(
                matches!(footprint, Footprint::Replicated { .. }),
                report.replicated(),
                "{} {expansion:?}",
                scenario.title()
            );
        }
    }
}
