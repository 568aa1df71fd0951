//! Data-parallel symmetry (issue 18, item 3): one representative replica
//! simulated in place of d·cp identical ones must give exactly what full
//! expansion gives — iteration time, every metric (floating-point bits
//! included), memory, the task, edge and event counts — on a grid of layouts
//! (t, p, d, v, schedules, distributed optimizer, overlapped and bucketed
//! gradient reduction, cp, ZeRO-1/2/3, MoE with ep, the host lane), and the
//! cases symmetry does not cover (contention, ZeRO-Offload, HSDP, replicas
//! placed differently on the nodes) must run in full.

use sim::scenario::{Recompute, Scenario, ScenarioFile, ScheduleKind, TrainingOptionsFile};
use sim::{Expansion, SimulationMode};

/// 4 nodes × 4 GPUs (as the engine reference's cluster).
pub(super) fn small_cluster(gpus_per_node: u32, nodes: u32) -> serde_json::Value {
    let mut topology = serde_json::to_value(topologies::preset("selene").unwrap()).unwrap();
    topology["name"] = "small-nodes".into();
    topology["nodes"] = nodes.into();
    topology["node"]["gpus_per_node"] = gpus_per_node.into();
    topology["fabric"]["nics_per_node"] = 2.into();
    topology
}

pub(super) fn sixteen_layers() -> serde_json::Value {
    serde_json::json!({
        "name": "sixteen-layers", "layers": 16, "hidden": 256, "heads": 4,
        "seq_len": 128, "vocab": 1000
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn scenario(
    (t, p, d): (u32, u32, u32),
    (schedule, chunks): (ScheduleKind, u32),
    cp: u32,
    stack: &str,
    options: TrainingOptionsFile,
    gpus_per_node: u32,
) -> Option<Scenario> {
    let file = ScenarioFile {
        model: Some(sixteen_layers()),
        topology: Some(small_cluster(gpus_per_node, 32)),
        stack: Some(stack.into()),
        tp: Some(t),
        pp: Some(p),
        dp: Some(d),
        cp: Some(cp),
        chunks: Some(chunks),
        global_batch: Some(d * 2 * p),
        schedule: Some(schedule),
        recompute: Some(Recompute::None),
        options,
        ..ScenarioFile::default()
    };
    match file.resolve() {
        Ok(scenario) => Some(scenario),
        Err(error) => {
            eprintln!("skipped {t} {p} {d} {schedule:?} cp={cp}: {error}");
            None
        }
    }
}

/// Simulates every way (symmetric where it applies, every replica from
/// the representative's graph, every replica built); returns the mode the
/// automatic run chose.
fn compare(scenario: &Scenario) -> SimulationMode {
    let title = scenario.title();
    let full = sim::simulate_with(scenario, Expansion::Built).unwrap();
    let auto = sim::simulate_with(scenario, Expansion::Auto).unwrap();
    assert_eq!(full.mode, SimulationMode::Full);
    assert!(!full.replicated());
    let replicated = sim::simulate_with(scenario, Expansion::Full).unwrap();
    super::replicated_run::assert_same_run(&replicated, &full, &title);
    // A run that can go symmetric keeps one replica's graph in full
    // expansion too, and so does one that only contention keeps from it
    // (this grid's contended layouts place their replicas alike).
    assert_eq!(
        replicated.replicated(),
        matches!(auto.mode, SimulationMode::Symmetric { .. })
            || scenario.options.network_contention,
        "{title}"
    );
    assert_eq!(auto.metrics, full.metrics, "{title}");
    assert_eq!(
        auto.metrics.iteration_time_s.to_bits(),
        full.metrics.iteration_time_s.to_bits()
    );
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
    if let SimulationMode::Symmetric { replicas } = auto.mode {
        assert_eq!(replicas, scenario.layout.replicas());
        assert!(auto.simulated_tasks < full.n_tasks, "{title}");
        // The Timeline on demand is full expansion's, record for record,
        // built from the representative's twins (not by full expansion).
        assert!(auto.expanded().is_some(), "{title}: no replica map");
        assert_eq!(auto.timeline(), full.timeline(), "{title}");
    }
    // Some ranks' records in a window: full expansion's, filtered.
    let gpus = scenario.layout.gpus();
    let makespan = full.makespan_ns();
    for selection in selections(gpus, makespan) {
        let expected = filtered(full.timeline(), &selection);
        assert_eq!(
            auto.timeline_of(&selection),
            expected,
            "{title}: {selection:?}"
        );
        assert_eq!(
            full.timeline_of(&selection),
            expected,
            "{title}: {selection:?}"
        );
    }
    auto.mode
}

/// Rank lists (the first, one in the middle, the last and a range) and
/// windows (all, the middle third, an instant).
fn selections(gpus: u32, makespan_ns: u64) -> Vec<sim::TimelineSelection> {
    let ranks = [
        None,
        Some(vec![0]),
        Some(vec![gpus / 2, gpus - 1]),
        Some((gpus / 3..gpus / 3 + 3).map(|r| r.min(gpus - 1)).collect()),
    ];
    let windows = [
        None,
        Some((makespan_ns / 3, 2 * makespan_ns / 3)),
        Some((makespan_ns / 2, makespan_ns / 2)),
    ];
    let mut all = Vec::new();
    for ranks in &ranks {
        for &window_ns in &windows {
            all.push(sim::TimelineSelection {
                ranks: ranks.clone(),
                window_ns,
            });
        }
    }
    all
}

/// The records of `timeline` a selection keeps: those whose group holds a
/// chosen rank and whose [start, end] meets the window, in order.
fn filtered(
    timeline: &timeline::Timeline,
    selection: &sim::TimelineSelection,
) -> timeline::Timeline {
    let keep = |record: &timeline::TaskRecord| {
        let ranks_ok = selection.ranks.as_ref().is_none_or(|ranks| {
            timeline.header.groups[record.group as usize]
                .iter()
                .any(|rank| ranks.contains(rank))
        });
        let window_ok = selection
            .window_ns
            .is_none_or(|(from, to)| record.start_ns <= to && record.end_ns >= from);
        ranks_ok && window_ok
    };
    timeline::Timeline {
        header: timeline.header.clone(),
        tasks: timeline.tasks.iter().filter(|r| keep(r)).cloned().collect(),
    }
}

pub(super) fn options(variant: usize) -> TrainingOptionsFile {
    let mut options = TrainingOptionsFile::default();
    match variant % 7 {
        1 => options.distributed_optimizer = Some(true),
        2 => options.overlap_grad_reduce = Some(true),
        3 => {
            options.overlap_grad_reduce = Some(true);
            options.grad_reduce_bucket_params = Some(200_000);
        }
        4 => options.zero_stage = Some(2),
        5 => options.zero_stage = Some(3),
        6 => {
            options.distributed_optimizer = Some(true);
            options.overlap_grad_reduce = Some(true);
        }
        _ => {}
    }
    options
}

/// Every layout × schedule (1F1B, GPipe, interleaved, ZB-H1, ZB-V) that
/// resolves on 4-GPU nodes, the stacks (2021, 2024) and option variants
/// alternating from one to the next.
pub(super) fn grid(layouts: &[(u32, u32, u32)]) -> Vec<((u32, u32, u32), Scenario)> {
    let schedules = [
        (ScheduleKind::OneFOneB, 1),
        (ScheduleKind::Gpipe, 1),
        (ScheduleKind::Interleaved, 2),
        (ScheduleKind::ZbH1, 1),
        (ScheduleKind::ZbV, 2),
    ];
    let mut all = Vec::new();
    for (index, &layout) in layouts.iter().enumerate() {
        for (s, &schedule) in schedules.iter().enumerate() {
            let stack = if (index + s) % 2 == 0 {
                "megatron-2021"
            } else {
                "megatron-core-2024"
            };
            if let Some(scenario) = scenario(layout, schedule, 1, stack, options(index + s), 4) {
                all.push((layout, scenario));
            }
        }
    }
    all
}

#[test]
fn a_representative_replica_gives_full_expansions_metrics_memory_and_counts() {
    let layouts = [
        (1, 2, 2),
        (2, 2, 2),
        (1, 4, 4),
        (4, 1, 4),
        (1, 8, 2),
        (2, 1, 8),
    ];
    let (mut symmetric, mut checked) = (0, 0);
    for (_, scenario) in grid(&layouts) {
        checked += 1;
        if matches!(compare(&scenario), SimulationMode::Symmetric { .. }) {
            symmetric += 1;
        }
    }
    assert!(checked >= 24, "only {checked} layouts resolved");
    assert!(
        symmetric >= 20,
        "only {symmetric} of {checked} ran symmetric"
    );
}

#[test]
fn every_option_variant_and_context_parallelism_stay_exact() {
    let mut symmetric = 0;
    for variant in 0..7 {
        for (layout, cp) in [((2, 2, 2), 1), ((1, 2, 2), 2), ((2, 2, 1), 2)] {
            let Some(scenario) = scenario(
                layout,
                (ScheduleKind::Interleaved, 2),
                cp,
                "megatron-core-2024",
                options(variant),
                8,
            ) else {
                continue;
            };
            if matches!(compare(&scenario), SimulationMode::Symmetric { .. }) {
                symmetric += 1;
            }
        }
    }
    assert!(symmetric >= 14, "{symmetric}");
}

#[test]
fn dualpipes_mirrored_all_reduces_stay_exact() {
    // DualPipe's mirrored-rank all-reduces are lowered in a loop of their
    // own over the replicas (and the timeline view replays it).
    let mut symmetric = 0;
    for (layout, stack) in [
        ((1, 4, 2), "megatron-2021"),
        ((2, 4, 2), "megatron-core-2024"),
    ] {
        let scenario =
            scenario(layout, (ScheduleKind::DualPipe, 2), 1, stack, options(0), 4).unwrap();
        if matches!(compare(&scenario), SimulationMode::Symmetric { .. }) {
            symmetric += 1;
        }
    }
    assert_eq!(symmetric, 2);
}

#[test]
fn what_breaks_symmetry_runs_in_full_and_still_agrees() {
    let base = ((1, 2, 3), (ScheduleKind::OneFOneB, 1));
    // Three replicas of one rank per stage on 4-GPU nodes (rank 3s + j):
    // replica 0's stages are ranks 0 and 3 (one node), replica 1's ranks 1
    // and 4 (two nodes): its pipeline sends cross nodes, so it runs in full.
    let odd = scenario(base.0, base.1, 1, "megatron-2021", options(0), 4).unwrap();
    assert_eq!(
        sim::symmetry::symmetric_replicas(&odd),
        Err("replicas sit on the nodes differently")
    );
    assert_eq!(compare(&odd), SimulationMode::Full);
    // Contention.
    let contention = scenario(
        (1, 2, 2),
        base.1,
        1,
        "megatron-2021",
        TrainingOptionsFile {
            network_contention: Some(true),
            ..Default::default()
        },
        4,
    )
    .unwrap();
    assert_eq!(compare(&contention), SimulationMode::Full);
    // HSDP: shard groups of 2 of 4 replicas.
    let hsdp = scenario(
        (1, 2, 4),
        base.1,
        1,
        "megatron-2021",
        TrainingOptionsFile {
            zero_stage: Some(3),
            shard_group_size: Some(2),
            ..Default::default()
        },
        4,
    )
    .unwrap();
    assert!(sim::symmetry::symmetric_replicas(&hsdp).is_err());
    assert_eq!(compare(&hsdp), SimulationMode::Full);
    // One replica: nothing to share.
    let single = scenario((2, 2, 1), base.1, 1, "megatron-2021", options(0), 4).unwrap();
    assert_eq!(compare(&single), SimulationMode::Full);
}

#[test]
fn zero_offload_runs_in_full() {
    let file = ScenarioFile {
        model: Some("gpt2-10b".into()),
        topology: Some("dgx2-v100".into()),
        tp: Some(1),
        pp: Some(1),
        dp: Some(2),
        microbatch_size: Some(4),
        global_batch: Some(8),
        options: TrainingOptionsFile {
            zero_offload: Some(true),
            ..Default::default()
        },
        ..ScenarioFile::default()
    };
    let scenario = file.resolve().unwrap();
    assert!(sim::symmetry::symmetric_replicas(&scenario).is_err());
    assert_eq!(compare(&scenario), SimulationMode::Full);
}

#[test]
fn mixtures_of_experts_with_expert_parallelism_stay_exact() {
    let mut symmetric = 0;
    for (pp, dp, ep, distributed, overlap) in [
        (2, 4, 2, true, false),
        (2, 4, 4, false, true),
        (1, 8, 8, true, true),
        (2, 8, 4, true, false),
    ] {
        let file = ScenarioFile {
            model: Some("mixtral-8x7b".into()),
            seq_len: Some(512),
            topology: Some("dgx-h100-superpod".into()),
            tp: Some(1),
            pp: Some(pp),
            dp: Some(dp),
            ep: Some(ep),
            expert_imbalance: Some("skew:1.5".into()),
            chunks: Some(1),
            microbatch_size: Some(1),
            global_batch: Some(2 * dp * pp),
            recompute: Some(Recompute::Full),
            options: TrainingOptionsFile {
                // FP8 experts and the overlapped parameter gather split
                // into dense and expert all-gathers, in one case each.
                precision: Some(if dp == 8 && pp == 2 {
                    sim::scenario::Precision::Fp8
                } else {
                    sim::scenario::Precision::Bf16
                }),
                distributed_optimizer: Some(distributed),
                overlap_grad_reduce: Some(overlap),
                overlap_param_gather: Some(distributed && overlap),
                ..Default::default()
            },
            ..ScenarioFile::default()
        };
        let scenario = file.resolve().unwrap();
        if matches!(compare(&scenario), SimulationMode::Symmetric { .. }) {
            symmetric += 1;
        }
    }
    assert_eq!(symmetric, 4);
}

#[test]
fn the_mode_names_itself() {
    assert_eq!(SimulationMode::Full.describe(), "full");
    assert_eq!(
        SimulationMode::Symmetric { replicas: 6 }.describe(),
        "symmetric (1 of 6 replicas)"
    );
}

/// FLOP totals past 2^53 round as they are summed: with odd sizes the bits
/// depend on the order, which symmetry repeats (replica by replica).
#[test]
fn large_flop_totals_keep_their_bits() {
    let mut inexact = 0;
    for (seq_len, vocab, dp, schedule, chunks) in [
        (2047, 50264, 4, ScheduleKind::Interleaved, 2),
        (1999, 51200, 6, ScheduleKind::OneFOneB, 1),
        (2048, 50264, 8, ScheduleKind::ZbH1, 1),
    ] {
        let file = ScenarioFile {
            model: Some(serde_json::json!({
                "name": "odd-wide", "layers": 96, "hidden": 98400, "heads": 96,
                "seq_len": seq_len, "vocab": vocab
            })),
            topology: Some("selene".into()),
            tp: Some(8),
            pp: Some(8),
            dp: Some(dp),
            chunks: Some(chunks),
            global_batch: Some(dp * 16),
            schedule: Some(schedule),
            recompute: Some(Recompute::Full),
            ..ScenarioFile::default()
        };
        let scenario = file.resolve().unwrap();
        assert!(matches!(
            compare(&scenario),
            SimulationMode::Symmetric { .. }
        ));
        // The full run's FLOP total is not the representative's times d·cp:
        // only the repeated order gives its bits.
        let full = sim::simulate_with(&scenario, Expansion::Built).unwrap();
        let m = &full.metrics;
        let total = m.tflops_per_gpu * 1e12 * m.iteration_time_s * scenario.layout.gpus() as f64;
        inexact += usize::from(total > 2f64.powi(53));
    }
    assert_eq!(inexact, 3);
}

#[test]
fn post_validations_iterations_stay_exact() {
    // Optimizer post-validation lowers three iterations, its norm exchanges
    // in a replica loop of their own and its validations inside the walk.
    let mut symmetric = 0;
    for (schedule, chunks, (t, p, d), distributed) in [
        (ScheduleKind::ZbH2, 1, (1, 4, 2), false),
        (ScheduleKind::ZbH2, 1, (2, 4, 2), true),
        (ScheduleKind::ZbV, 2, (1, 4, 2), false),
    ] {
        let mut model = sixteen_layers();
        model["tied_embeddings"] = false.into();
        let file = ScenarioFile {
            model: Some(model),
            topology: Some(small_cluster(4, 32)),
            tp: Some(t),
            pp: Some(p),
            dp: Some(d),
            chunks: Some(chunks),
            global_batch: Some(d * 2 * p),
            schedule: Some(schedule),
            recompute: Some(Recompute::None),
            options: TrainingOptionsFile {
                optimizer_post_validation: Some(true),
                distributed_optimizer: Some(distributed),
                ..TrainingOptionsFile::default()
            },
            ..ScenarioFile::default()
        };
        let scenario = file.resolve().unwrap();
        assert_eq!(scenario.iterations, 3);
        if matches!(compare(&scenario), SimulationMode::Symmetric { .. }) {
            symmetric += 1;
        }
    }
    assert_eq!(symmetric, 3);
}

#[test]
fn overlapped_pairs_and_deepep_stay_exact() {
    // DualPipeV's F&B pairs cut at their all-to-alls (the ep stream) with
    // DeepEP's dispatch, the megatron-core-2024 host lane and its
    // overlapped, bucketed gradient reduction; DualPipe likewise.
    let mut symmetric = 0;
    for (schedule, dp, ep) in [
        (sim::scenario::ScheduleKind::DualPipeV, 4, 2),
        (sim::scenario::ScheduleKind::DualPipeV, 4, 4),
        (sim::scenario::ScheduleKind::DualPipe, 2, 2),
    ] {
        let file = ScenarioFile {
            model: Some("mixtral-8x7b".into()),
            seq_len: Some(512),
            topology: Some("dgx-h100-superpod".into()),
            stack: Some("megatron-core-2024".into()),
            tp: Some(1),
            pp: Some(2),
            dp: Some(dp),
            ep: Some(ep),
            chunks: Some(2),
            microbatch_size: Some(1),
            global_batch: Some(4 * dp),
            schedule: Some(schedule),
            recompute: Some(Recompute::None),
            options: TrainingOptionsFile {
                precision: Some(sim::scenario::Precision::Bf16),
                distributed_optimizer: Some(schedule != sim::scenario::ScheduleKind::DualPipe),
                pair_overlap: Some(true),
                moe_dispatcher: Some(sim::scenario::moe_comm::MoeDispatcher::Deepep),
                ..Default::default()
            },
            ..ScenarioFile::default()
        };
        let scenario = file.resolve().unwrap();
        if matches!(compare(&scenario), SimulationMode::Symmetric { .. }) {
            symmetric += 1;
        }
    }
    assert_eq!(symmetric, 3);
}
