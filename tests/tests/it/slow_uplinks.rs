//! Slow switch uplinks (`--slow-uplink`, issue 35 item 4): the cables from
//! the leaf switch above rank R's NIC up to the next level carry 1/F. In
//! closed form every communication whose nodes span several leaf blocks and
//! that has a member on the leaf's rail in its block runs at the NIC's rate
//! ÷ F (checked against the same run with every NIC at that rate, task by
//! task), and every other task keeps its time; under `--contention` the
//! leaf's cables carry 1/F and the flows crossing them slow within that
//! bound. A run with a slow uplink simulates every replica.

use super::slow_links::{communication, with_nics_over};
use sim::scenario::{Scenario, ScenarioFile, TrainingOptionsFile};
use sim::slow_uplink::SlowUplink;
use sim::straggler::{StragglerError, Stragglers};
use sim::task::TaskKind;
use sim::{Expansion, SimulationReport};

/// (ranks, kind, bytes, duration) of a communication task.
type Communication = (Vec<u32>, TaskKind, u64, u64);

/// The hand model at t = 4, p = 2, d = 4 on four DGX A100 nodes, whose fat
/// tree is cut to switches of radix 4: a leaf serves one rail of two
/// nodes, so nodes {0, 1} and {2, 3} are the two blocks.
pub(super) fn four_nodes(contention: bool) -> Scenario {
    let mut scenario = ScenarioFile {
        topology: Some("dgx-a100:4".into()),
        ..tests::hand_model_file(
            4,
            2,
            4,
            TrainingOptionsFile {
                network_contention: Some(contention),
                ..TrainingOptionsFile::default()
            },
        )
    }
    .resolve()
    .expect("valid scenario");
    // 8 rails × 2 leaves × 2 ports = 32 endpoints: five levels of radix 4 hold them.
    scenario.topology.fabric.switch_radix = 4;
    scenario.topology.fabric.fat_tree_levels = 5;
    scenario
}

fn run(scenario: &Scenario, slow: &[SlowUplink], expansion: Expansion) -> SimulationReport {
    let stragglers = Stragglers::none()
        .with_slow_uplinks(slow, scenario)
        .expect("valid slow uplinks");
    sim::simulate_with_stragglers(scenario, expansion, &stragglers).expect("simulates")
}

/// Every communication task of `scenario` in full expansion, without and
/// with rank 3's leaf uplinks at 1/`factor`.
fn nominal_and_slowed(
    scenario: &Scenario,
    factor: f64,
) -> (Vec<Communication>, Vec<Communication>) {
    let slow = [SlowUplink { rank: 3, factor }];
    let [nominal, slowed] =
        [&[][..], &slow[..]].map(|slow| communication(&run(scenario, slow, Expansion::Full)));
    (nominal, slowed)
}

/// Whether a communication of `kind` over `ranks` climbs through the leaf
/// of rail 3 over nodes {0, 1}: its nodes span both blocks and a member is
/// GPU 3 of node 0 or 1. Ranks are numbered tensor rank first, then data
/// index, then stage (checked below), so stage 0 is nodes {0, 1} and stage 1
/// nodes {2, 3}: every pipeline transfer crosses, between the tensor group
/// of its ranks and the one 16 ranks away, and a transfer's ranks are its
/// sender's.
fn crosses_rail_3_leaf_of_block_0(ranks: &[u32], kind: TaskKind) -> bool {
    if matches!(
        kind,
        TaskKind::PipelineActivation | TaskKind::PipelineGradient
    ) {
        return ranks.iter().any(|&r| r % 16 == 3 || r % 16 == 11);
    }
    let block = |rank: u32| rank / 8 / 2;
    let spans_blocks = ranks.iter().any(|&r| block(r) != block(ranks[0]));
    spans_blocks && ranks.iter().any(|&r| r % 8 == 3 && block(r) == 0)
}

#[test]
fn groups_climbing_through_the_slow_leaf_run_at_the_nic_rate_over_f_and_no_others_change() {
    let scenario = four_nodes(false);
    let factor = 4.0;
    let (nominal, slowed) = nominal_and_slowed(&scenario, factor);
    let everywhere = communication(&run(
        &with_nics_over(&scenario, factor),
        &[],
        Expansion::Full,
    ));
    assert_eq!(nominal.len(), slowed.len());
    let (mut crossing, mut inside) = (0, 0);
    for ((before, after), all) in nominal.iter().zip(&slowed).zip(&everywhere) {
        let (ranks, kind, bytes, _) = after;
        assert_eq!((&before.0, before.1, before.2), (ranks, *kind, *bytes));
        if crosses_rail_3_leaf_of_block_0(ranks, *kind) {
            assert_eq!(after.3, all.3, "{kind:?} on {ranks:?} nominal {}", before.3);
            assert!(after.3 > before.3, "{kind:?} on {ranks:?}");
            crossing += 1;
        } else {
            assert_eq!(after.3, before.3, "{kind:?} on {ranks:?}");
            if ranks.contains(&3) {
                inside += 1;
            }
        }
    }
    // The layout as the predicate reads it: rank 3's data-parallel group
    // stays in block 0 (and keeps its time), its embedding's all-reduce
    // with the last stage crosses.
    let groups_of_3 = |kind| {
        slowed
            .iter()
            .find(|(ranks, k, ..)| *k == kind && ranks.contains(&3))
            .map(|(ranks, ..)| ranks.clone())
    };
    assert_eq!(
        groups_of_3(TaskKind::DataParallelAllReduce),
        Some(vec![3, 7, 11, 15])
    );
    assert_eq!(groups_of_3(TaskKind::EmbeddingAllReduce), Some(vec![3, 19]));
    assert!(
        crossing > 0 && inside > 0,
        "{crossing} crossing, {inside} inside"
    );
}

#[test]
fn a_run_with_a_slow_uplink_simulates_every_replica() {
    let scenario = four_nodes(false);
    let slow = [SlowUplink {
        rank: 19,
        factor: 2.0,
    }];
    let auto = run(&scenario, &slow, Expansion::Auto);
    let full = run(&scenario, &slow, Expansion::Full);
    assert_eq!(auto.metrics.iteration_time_s, full.metrics.iteration_time_s);
    assert_eq!(communication(&auto), communication(&full));
    assert!(
        auto.metrics.iteration_time_s
            > run(&scenario, &[], Expansion::Auto)
                .metrics
                .iteration_time_s
    );
}

#[test]
fn a_leaf_whose_nodes_hold_every_group_slows_nothing() {
    // Radix 8: a leaf serves one rail of four nodes, all of the job's.
    let mut scenario = four_nodes(false);
    scenario.topology.fabric.switch_radix = 8;
    scenario.topology.fabric.fat_tree_levels = 3;
    let nominal = communication(&run(&scenario, &[], Expansion::Full));
    let slowed = communication(&run(
        &scenario,
        &[SlowUplink {
            rank: 3,
            factor: 8.0,
        }],
        Expansion::Full,
    ));
    assert_eq!(nominal, slowed);
}

#[test]
fn under_contention_flows_through_the_slow_leaf_slow_within_its_capacity() {
    let scenario = four_nodes(true);
    let factor = 4.0;
    let (nominal, slowed) = nominal_and_slowed(&scenario, factor);
    let mut checked = 0;
    for (before, after) in nominal.iter().zip(&slowed) {
        let (ranks, kind, ..) = after;
        if crosses_rail_3_leaf_of_block_0(ranks, *kind) {
            assert!(after.3 > before.3, "{kind:?} on {ranks:?}");
            // Only the transfer's bytes slow, at most by the factor.
            assert!(
                after.3 as f64 <= before.3 as f64 * factor,
                "{kind:?} on {ranks:?}: {} against {}",
                after.3,
                before.3
            );
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[test]
fn bad_slow_uplinks_are_refused_by_name() {
    let scenario = four_nodes(false);
    let resolve = |slow: &[SlowUplink], scenario: &Scenario| {
        Stragglers::none().with_slow_uplinks(slow, scenario)
    };
    let uplink = |rank, factor| SlowUplink { rank, factor };
    // Ranks 3 and 11 are GPU 3 of nodes 0 and 1: the same leaf.
    let twice = resolve(&[uplink(3, 2.0), uplink(11, 3.0)], &scenario).unwrap_err();
    assert!(
        matches!(
            twice,
            StragglerError::LeafRepeated {
                first: 3,
                second: 11,
                ..
            }
        ),
        "{twice}"
    );
    assert!(resolve(&[uplink(32, 2.0)], &scenario).is_err());
    assert!(resolve(&[uplink(3, 0.5)], &scenario).is_err());
    // One node uses no switch.
    let one_node = ScenarioFile {
        topology: Some("dgx-a100".into()),
        ..tests::hand_model_file(4, 1, 2, TrainingOptionsFile::default())
    }
    .resolve()
    .expect("valid scenario");
    let error = resolve(&[uplink(0, 2.0)], &one_node).unwrap_err();
    assert!(error.to_string().contains("no switch uplinks"), "{error}");
}
