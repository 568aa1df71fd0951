//! Full expansion under `--contention` from one replica's graph (issue 37,
//! item 3; `engine::replicated_flows`): every replica's flows share the
//! fabric as the built graph's do, so every task's times, the metrics'
//! bits, the counts (events included) and the busiest links must equal the
//! run that builds every replica's tasks.

use super::replicated_run::{assert_same_run, both};
use sim::scenario::{Scenario, ScheduleKind, TrainingOptionsFile};
use sim::slow_link::{SlowNic, SlowNvlink};
use sim::slow_uplink::SlowUplink;
use sim::straggler::{SlowRank, Stragglers};
use sim::{Expansion, SimulationMode};

fn contended(mut options: TrainingOptionsFile) -> TrainingOptionsFile {
    options.network_contention = Some(true);
    options
}

/// Layouts × schedules on 4-GPU nodes (the symmetry grid's small cluster),
/// option variants alternating: tensor groups inside a node, pipeline
/// peers and data-parallel rings across nodes, ZeRO-2/3's collectives.
fn grid() -> Vec<Scenario> {
    let layouts = [(2, 2, 4), (1, 4, 4), (4, 2, 2), (2, 1, 8), (1, 2, 8)];
    let schedules = [
        (ScheduleKind::OneFOneB, 1),
        (ScheduleKind::Interleaved, 2),
        (ScheduleKind::ZbH1, 1),
    ];
    let mut all = Vec::new();
    for (index, &layout) in layouts.iter().enumerate() {
        for (s, &schedule) in schedules.iter().enumerate() {
            let stack = match (index + s) % 2 {
                0 => "megatron-2021",
                _ => "megatron-core-2024",
            };
            let options = contended(super::symmetry::options(index + s));
            if let Some(scenario) =
                super::symmetry::scenario(layout, schedule, 1, stack, options, 4)
            {
                all.push(scenario);
            }
        }
    }
    all
}

/// Whether the flow planner of `scenario`'s built graph proves its tensor
/// rings alone on their NVLink ports (`sim::network::lone_rings`): a run
/// other than `Expansion::Built` then times them at their start.
fn rings_run_alone(scenario: &Scenario) -> bool {
    let plan = sim::plan::Plan::of(scenario);
    let (_, graph) = sim::build_graph(scenario);
    let network = sim::cost::ClosedFormNetwork::for_scenario(scenario);
    let costs = sim::cost::cost_works(scenario, graph.works(), &network);
    sim::network::FabricFlowPlanner::new(scenario, &plan.placement, &graph, &network, &costs)
        .rings_run_alone()
}

#[test]
fn every_replicas_flows_from_one_replicas_graph_agree_with_every_replica_built() {
    let scenarios = grid();
    assert!(scenarios.len() >= 12, "{} layouts", scenarios.len());
    // Built shares every flow; the replicated run times lone tensor rings
    // at their start where t is a multiple of the node's 4 GPUs.
    let lone = scenarios
        .iter()
        .filter(|scenario| scenario.layout.tensor_parallel.get() == 4)
        .filter(|scenario| rings_run_alone(scenario))
        .count();
    assert!(lone >= 2, "{lone} layouts with lone rings");
    for scenario in &scenarios {
        let title = scenario.title();
        let (replicated, built) = both(scenario, &Stragglers::none());
        assert!(replicated.replicated(), "{title}");
        assert_same_run(&replicated, &built, &title);
        // Flows ran: their completions are events beyond starts and finishes.
        assert!(built.n_events > 2 * built.n_tasks as u64, "{title}");
        assert!(!built.busiest_links.is_empty(), "{title}");
        // The automatic run of a contended layout is every replica, from one graph.
        let auto = sim::simulate_with(scenario, Expansion::Auto).unwrap();
        assert!(
            auto.replicated() && auto.mode == SimulationMode::Full,
            "{title}"
        );
    }
}

#[test]
fn contention_with_slow_ranks_and_links_in_later_replicas_agrees_with_every_replica_built() {
    // Four DGX A100 nodes in two blocks of a radix-4 tree (`slow_uplinks.rs`):
    // flows of different replicas share leaf and spine cables.
    let scenario = super::slow_uplinks::four_nodes(true);
    let gpus = scenario.layout.gpus();
    let cases = [
        Stragglers::none(),
        Stragglers::new(
            vec![SlowRank {
                rank: gpus - 2,
                factor: 1.3,
            }],
            gpus,
        )
        .unwrap(),
        Stragglers::none()
            .with_slow_nics(
                &[SlowNic {
                    rank: 21,
                    factor: 4.0,
                }],
                &scenario,
            )
            .unwrap(),
        Stragglers::none()
            .with_slow_nvlinks(
                &[SlowNvlink {
                    rank: 13,
                    factor: 3.0,
                }],
                &scenario,
            )
            .unwrap(),
        Stragglers::none()
            .with_slow_uplinks(
                &[SlowUplink {
                    rank: 27,
                    factor: 2.0,
                }],
                &scenario,
            )
            .unwrap(),
    ];
    let nominal = sim::simulate_with(&scenario, Expansion::Full).unwrap();
    for (index, stragglers) in cases.iter().enumerate() {
        let title = format!("case {index}");
        let (replicated, built) = both(&scenario, stragglers);
        assert!(replicated.replicated(), "{title}");
        assert_same_run(&replicated, &built, &title);
        if index > 0 {
            assert_ne!(replicated.timeline(), nominal.timeline(), "{title}");
        }
    }
}

/// Mixtral at ep 4 on d 8 (all-to-alls to peers in other replicas) and
/// ZeRO-3 on 8-GPU nodes, under contention, with a slow rank in a later
/// replica. (Context parallelism is not modeled under contention.)
#[test]
fn experts_and_zero_3_under_contention_agree_with_every_replica_built() {
    let moe = super::replicated_run::mixtral_ep_4(contended(TrainingOptionsFile::default()));
    let zero_3 = super::symmetry::scenario(
        (2, 2, 4),
        (ScheduleKind::Interleaved, 2),
        1,
        "megatron-core-2024",
        contended(TrainingOptionsFile {
            zero_stage: Some(3),
            ..Default::default()
        }),
        8,
    )
    .unwrap();
    for scenario in [&moe, &zero_3] {
        let title = scenario.title();
        let gpus = scenario.layout.gpus();
        for stragglers in [
            Stragglers::none(),
            Stragglers::new(
                vec![SlowRank {
                    rank: gpus - 3,
                    factor: 1.4,
                }],
                gpus,
            )
            .unwrap(),
        ] {
            let (replicated, built) = both(scenario, &stragglers);
            assert!(replicated.replicated(), "{title}");
            assert_same_run(&replicated, &built, &title);
        }
    }
}

/// Tensor groups of a whole 4-GPU node: their rings run alone on the
/// NVLink ports and are timed at their start, also with one GPU's NVLink
/// slow in a later replica (the twins' own link rates), and equal every
/// flow shared in every replica built.
#[test]
fn tensor_rings_timed_at_their_start_agree_with_every_flow_shared() {
    let scenario = super::symmetry::scenario(
        (4, 2, 2),
        (ScheduleKind::Interleaved, 2),
        1,
        "megatron-core-2024",
        contended(super::symmetry::options(1)),
        4,
    )
    .unwrap();
    assert!(rings_run_alone(&scenario));
    let slow_nvlink = Stragglers::none()
        .with_slow_nvlinks(
            &[SlowNvlink {
                rank: 13,
                factor: 3.0,
            }],
            &scenario,
        )
        .unwrap();
    for (title, stragglers) in [
        ("nominal", Stragglers::none()),
        ("slow NVLink", slow_nvlink),
    ] {
        let (replicated, built) = both(&scenario, &stragglers);
        assert!(replicated.replicated(), "{title}");
        assert_same_run(&replicated, &built, title);
        assert!(built.n_events > 2 * built.n_tasks as u64, "{title}");
    }
}

/// Tensor rings alone on their NVLink ports, timed once for every
/// replica (`engine::lone_twins`), carry their bytes on each replica's
/// own ports: with one stage and many microbatches the NVLink ports are
/// the busiest links, so the busiest links compared with every replica
/// built (every flow shared) are theirs, both replicas' ports among them.
#[test]
fn tensor_rings_timed_once_carry_their_bytes_on_every_replicas_ports() {
    use sim::scenario::{Recompute, ScenarioFile};
    let scenario = ScenarioFile {
        model: Some(super::symmetry::sixteen_layers()),
        topology: Some(super::symmetry::small_cluster(4, 32)),
        stack: Some("megatron-core-2024".into()),
        tp: Some(4),
        pp: Some(1),
        dp: Some(2),
        global_batch: Some(256),
        schedule: Some(ScheduleKind::OneFOneB),
        recompute: Some(Recompute::None),
        options: contended(TrainingOptionsFile::default()),
        ..ScenarioFile::default()
    }
    .resolve()
    .unwrap();
    assert!(rings_run_alone(&scenario));
    let (replicated, built) = both(&scenario, &Stragglers::none());
    assert!(replicated.replicated());
    assert_same_run(&replicated, &built, "one stage, 128 microbatches");
    let links: Vec<&str> = built
        .busiest_links
        .iter()
        .map(|l| l.link.as_str())
        .collect();
    // GPUs 0–3 are replica 0's, 4–7 replica 1's.
    assert!(
        links.contains(&"nvlink_up[0]") && links.contains(&"nvlink_up[7]"),
        "{links:?}"
    );
}
