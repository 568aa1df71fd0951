//! Sharded data parallelism (`--zero-stage 2|3`, `--shard-group-size`):
//! the bytes of every all-gather, reduce-scatter and HSDP all-reduce, the
//! memory per rank, FSDP's prefetch order, composition with t and p, a run
//! of each mode on llama3-8b on the DGX H100 SuperPOD preset, and the
//! validation errors, all against hand-computed closed forms.
//!
//! The hand model: GPT block, 4 layers, h = 256, s = 128, vocabulary 5000,
//! tied embeddings. One layer: 12h² + 13h = 789,760 parameters; embedding
//! (word + positions) 5000·256 + 128·256 = 1,312,768; final LayerNorm 2h =
//! 512; all: 4,472,320. With t = p = 1 the FSDP units are embedding + layer 0
//! (2,102,528), layers 1 and 2 (789,760 each), layer 3 + final norm (790,272).

use sim::scenario::{Recompute, Scenario, ScenarioFile, TrainingOptionsFile, ZeroStage};
use sim::SimulationReport;
use timeline::TaskKind;

const LAYER: u64 = 789_760;
const EMBEDDING: u64 = 1_312_768;
const NORM: u64 = 512;
const TOTAL: u64 = 4 * LAYER + EMBEDDING + NORM;
const _: () = assert!(TOTAL == tests::HAND_MODEL_PARAMETERS);

fn file(t: u32, p: u32, d: u32, options: TrainingOptionsFile) -> ScenarioFile {
    let options = TrainingOptionsFile {
        gradient_accumulation_fusion: Some(false),
        ..options
    };
    tests::hand_model_file(t, p, d, options)
}

fn sharded(mode: ZeroStage, group: Option<u32>) -> TrainingOptionsFile {
    TrainingOptionsFile {
        zero_stage: Some(mode.stage()),
        shard_group_size: group,
        ..TrainingOptionsFile::default()
    }
}

fn run(file: ScenarioFile) -> (Scenario, SimulationReport) {
    let scenario = file.resolve().expect("valid scenario");
    let report = sim::simulate(&scenario).expect("simulates");
    (scenario, report)
}

/// (bytes, group size) of every task of `kind`, in id (issue) order.
fn collectives(report: &SimulationReport, kind: TaskKind) -> Vec<(u64, usize)> {
    let groups = &report.timeline().header.groups;
    report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == kind)
        .map(|t| (t.bytes, groups[t.group as usize].len()))
        .collect()
}

fn bytes_on_rank(report: &SimulationReport, kind: TaskKind, rank: u32) -> u64 {
    let groups = &report.timeline().header.groups;
    report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == kind && groups[t.group as usize].contains(&rank))
        .map(|t| t.bytes)
        .sum()
}

#[test]
fn the_hand_model_has_the_hand_counted_parameters() {
    let scenario = file(1, 1, 4, TrainingOptionsFile::default())
        .resolve()
        .unwrap();
    let params =
        models::sharding::parameters_on_rank(&scenario.model, scenario.layout.sharding(), 0);
    assert_eq!(params, TOTAL);
    assert_eq!(TOTAL, 4_472_320);
}

#[test]
fn zero3_gathers_every_unit_before_each_pass_and_scatters_it_after_its_backward() {
    let (_, report) = run(file(1, 1, 4, sharded(ZeroStage::Full, None)));
    let (first, middle, last) = (LAYER + EMBEDDING, LAYER, LAYER + NORM);
    // Per microbatch: forward units in order, then backward units in reverse.
    let forward = [first, middle, middle, last];
    let backward = [last, middle, middle, first];
    let gathered: Vec<u64> = [forward, backward, forward, backward]
        .concat()
        .iter()
        .map(|params| 2 * params)
        .collect();
    let all_gathers = collectives(&report, TaskKind::DataParallelAllGather);
    // 1F1B with one stage runs F0 B0 F1 B1; all four ranks in each all-gather.
    assert!(all_gathers.iter().all(|&(_, ranks)| ranks == 4));
    assert_eq!(
        all_gathers.iter().map(|&(b, _)| b).collect::<Vec<_>>(),
        gathered
    );
    let scattered: Vec<u64> = [backward, backward]
        .concat()
        .iter()
        .map(|params| 2 * params)
        .collect();
    let reduce_scatters = collectives(&report, TaskKind::DataParallelReduceScatter);
    assert_eq!(
        reduce_scatters.iter().map(|&(b, _)| b).collect::<Vec<_>>(),
        scattered
    );
    // No all-reduce, no all-gather after the optimizer: 2·2·2·TOTAL gathered.
    assert_eq!(collectives(&report, TaskKind::DataParallelAllReduce), []);
    assert_eq!(
        bytes_on_rank(&report, TaskKind::DataParallelAllGather, 0),
        8 * TOTAL
    );
    // Memory: shards of 1/4, plus two units (the two largest) gathered.
    let memory = &report.memory[0];
    let shard = TOTAL.div_ceil(4);
    let working = 2 * first;
    assert_eq!(memory.weight_bytes, 2 * (shard + working));
    assert_eq!(memory.gradient_bytes, 2 * (shard + working));
    assert_eq!(memory.optimizer_state_bytes, 12 * TOTAL / 4);
}

#[test]
fn fsdp_prefetches_one_unit_ahead_and_waits_for_the_gathered_parameters() {
    let (_, report) = run(file(1, 1, 2, sharded(ZeroStage::Full, None)));
    let groups = &report.timeline().header.groups;
    let on_rank0 = |kind: TaskKind| -> Vec<(u64, u64)> {
        let mut spans: Vec<(u64, u64)> = report
            .timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == kind && groups[t.group as usize].contains(&0))
            .map(|t| (t.start_ns, t.end_ns))
            .collect();
        spans.sort();
        spans
    };
    let gathers = on_rank0(TaskKind::DataParallelAllGather);
    let mut computes = on_rank0(TaskKind::Forward);
    computes.extend(on_rank0(TaskKind::Backward));
    computes.sort();
    assert_eq!(gathers.len(), computes.len());
    for (j, (compute, gather)) in computes.iter().zip(&gathers).enumerate() {
        // Each unit's pass starts once its parameters are in.
        assert!(compute.0 >= gather.1, "unit {j}");
        // At most two all-gathers in flight: unit j's waits for unit j-2's compute.
        if j >= 2 {
            assert!(gather.0 >= computes[j - 2].1, "unit {j}");
        }
    }
    // The second unit's gather is hidden under the first unit's compute.
    assert!(gathers[1].1 <= computes[0].1);
}

#[test]
fn zero2_reduce_scatters_every_backwards_buckets_and_gathers_parameters_once() {
    // Buckets of 1.6 M parameters: two layers each (head with the first).
    let options = TrainingOptionsFile {
        grad_reduce_bucket_params: Some(1_600_000),
        ..sharded(ZeroStage::Gradients, None)
    };
    let (_, report) = run(file(1, 1, 4, options));
    let (top, bottom) = (2 * LAYER + NORM, 2 * LAYER + EMBEDDING);
    let reduce_scatters = collectives(&report, TaskKind::DataParallelReduceScatter);
    assert_eq!(
        reduce_scatters,
        [(2 * top, 4), (2 * bottom, 4), (2 * top, 4), (2 * bottom, 4)]
    );
    assert_eq!(
        collectives(&report, TaskKind::DataParallelAllGather),
        [(2 * TOTAL, 4)]
    );
    assert_eq!(collectives(&report, TaskKind::DataParallelAllReduce), []);
    let memory = &report.memory[0];
    // Weights whole; gradients: the 1/4 shard plus two buckets (capped at all).
    assert_eq!(memory.weight_bytes, 2 * TOTAL);
    assert_eq!(
        memory.gradient_bytes,
        2 * (TOTAL.div_ceil(4) + (2 * bottom).min(TOTAL))
    );
    assert_eq!(memory.optimizer_state_bytes, 12 * TOTAL / 4);
}

#[test]
fn hsdp_scatters_in_the_group_all_reduces_across_groups_and_gathers_in_the_group() {
    let (_, report) = run(file(1, 1, 4, sharded(ZeroStage::Full, Some(2))));
    let groups = &report.timeline().header.groups;
    let all_gathers = collectives(&report, TaskKind::DataParallelAllGather);
    let reduce_scatters = collectives(&report, TaskKind::DataParallelReduceScatter);
    let all_reduces = collectives(&report, TaskKind::DataParallelAllReduce);
    // Two shard groups of two: every collective over two ranks.
    assert_eq!(all_gathers.len(), 2 * 16);
    assert_eq!(reduce_scatters.len(), 2 * 8);
    assert_eq!(all_reduces.len(), 2 * 8);
    assert!(all_gathers
        .iter()
        .chain(&reduce_scatters)
        .chain(&all_reduces)
        .all(|&(_, ranks)| ranks == 2));
    // Shard groups are consecutive data indices; replicas are two apart.
    for task in &report.timeline().tasks {
        let ranks = &groups[task.group as usize];
        match task.kind {
            TaskKind::DataParallelAllGather | TaskKind::DataParallelReduceScatter => {
                assert_eq!(ranks[1] - ranks[0], 1, "{ranks:?}")
            }
            TaskKind::DataParallelAllReduce => assert_eq!(ranks[1] - ranks[0], 2, "{ranks:?}"),
            _ => {}
        }
    }
    // Per rank: gathers and scatters of the whole model as without HSDP, and
    // each scattered half all-reduced across the groups.
    assert_eq!(
        bytes_on_rank(&report, TaskKind::DataParallelAllGather, 0),
        8 * TOTAL
    );
    assert_eq!(
        bytes_on_rank(&report, TaskKind::DataParallelReduceScatter, 0),
        4 * TOTAL
    );
    assert_eq!(
        bytes_on_rank(&report, TaskKind::DataParallelAllReduce, 0),
        2 * TOTAL
    );
    // Memory: halves, not quarters.
    let memory = &report.memory[0];
    let working = 2 * (LAYER + EMBEDDING);
    assert_eq!(memory.weight_bytes, 2 * (TOTAL / 2 + working));
    assert_eq!(memory.optimizer_state_bytes, 12 * TOTAL / 2);
}

#[test]
fn sharding_composes_with_tensor_and_pipeline_parallelism() {
    for mode in [ZeroStage::Gradients, ZeroStage::Full] {
        let (scenario, report) = run(file(2, 2, 2, sharded(mode, None)));
        let layout = scenario.layout;
        let placement =
            sim::placement::Placement::new(layout, scenario.topology.node.gpus_per_node);
        for stage in 0..2 {
            let params =
                models::sharding::parameters_on_rank(&scenario.model, layout.sharding(), stage);
            for tensor_index in 0..2 {
                let rank = placement.data_group(stage, tensor_index)[0].index() as u32;
                // Two microbatches: every gradient scattered once each.
                assert_eq!(
                    bytes_on_rank(&report, TaskKind::DataParallelReduceScatter, rank),
                    2 * 2 * params,
                    "{mode:?} stage {stage}"
                );
                let gathered = match mode {
                    // Forward and backward of two microbatches.
                    ZeroStage::Full => 2 * 2 * 2 * params,
                    // The updated parameters once.
                    _ => 2 * params,
                };
                assert_eq!(
                    bytes_on_rank(&report, TaskKind::DataParallelAllGather, rank),
                    gathered,
                    "{mode:?} stage {stage}"
                );
            }
            let memory = &report.memory[stage as usize];
            assert_eq!(memory.optimizer_state_bytes, (12 * params).div_ceil(2));
        }
        // The tied embedding's gradient shard goes between first and last stage.
        let embedding = 5000 * 256 / 2;
        assert!(collectives(&report, TaskKind::EmbeddingAllReduce)
            .iter()
            .all(|&(bytes, _)| bytes == 2 * embedding / 2));
    }
}

#[test]
fn without_data_parallelism_sharding_changes_nothing() {
    // Under a stack whose data parallelism has no local-DDP kernels (the
    // default megatron-2021 flattens and copies gradients where ZeRO does not).
    let core = |options| ScenarioFile {
        stack: Some("megatron-core-2024".into()),
        ..file(2, 2, 1, options)
    };
    let plain = run(core(TrainingOptionsFile::default())).1;
    for mode in [ZeroStage::Gradients, ZeroStage::Full] {
        let sharded = run(core(sharded(mode, None))).1;
        assert_eq!(plain.timeline().tasks.len(), sharded.timeline().tasks.len());
        assert_eq!(
            plain.metrics.iteration_time_s,
            sharded.metrics.iteration_time_s
        );
        assert_eq!(plain.memory, sharded.memory);
    }
}

#[test]
fn every_mode_runs_llama3_8b_on_the_superpod_and_sheds_memory_in_order() {
    let llama = |mode: ZeroStage| {
        run(ScenarioFile {
            model: Some("llama3-8b".into()),
            topology: Some("dgx-h100-superpod".into()),
            tp: Some(2),
            pp: Some(2),
            dp: Some(4),
            microbatch_size: Some(1),
            global_batch: Some(16),
            recompute: Some(Recompute::Selective),
            options: sharded(mode, None),
            ..ScenarioFile::default()
        })
    };
    let runs: Vec<_> = [
        ZeroStage::None,
        ZeroStage::Optimizer,
        ZeroStage::Gradients,
        ZeroStage::Full,
    ]
    .into_iter()
    .map(llama)
    .collect();
    let peak = |i: usize| runs[i].1.peak_memory().total_bytes;
    assert!(
        peak(0) > peak(1) && peak(1) > peak(3),
        "{:?}",
        (0..4).map(peak).collect::<Vec<_>>()
    );
    for (i, (scenario, report)) in runs.iter().enumerate() {
        assert!(report.metrics.iteration_time_s > 0.0);
        let params =
            models::sharding::parameters_on_rank(&scenario.model, scenario.layout.sharding(), 0);
        let optimizer = report.memory[0].optimizer_state_bytes;
        assert_eq!(
            optimizer,
            if i == 0 {
                12 * params
            } else {
                (12 * params).div_ceil(4)
            }
        );
        let gathers = collectives(report, TaskKind::DataParallelAllGather).len();
        // ZeRO-1 and -2: one per (stage, tensor rank) group; ZeRO-3: per unit and pass.
        match i {
            0 => assert_eq!(gathers, 0),
            1 | 2 => assert_eq!(gathers, 4),
            _ => assert!(gathers > 4 * 16 * 2),
        }
    }
    // ZeRO-3 keeps a quarter of the weights plus the working set.
    assert!(runs[3].1.memory[0].weight_bytes < runs[2].1.memory[0].weight_bytes);
    assert!(runs[2].1.memory[0].gradient_bytes < runs[1].1.memory[0].gradient_bytes);
}

#[test]
fn bad_sharding_options_are_refused_by_key() {
    let problems = |options: TrainingOptionsFile| {
        file(1, 1, 4, options)
            .resolve()
            .expect_err("invalid")
            .to_string()
    };
    let cases = [
        (
            sharded(ZeroStage::Full, Some(3)),
            "shard_group_size: must divide the data-parallel size 4 (got 3)",
        ),
        (
            sharded(ZeroStage::Full, Some(0)),
            "shard_group_size: must be at least 1",
        ),
        (
            TrainingOptionsFile {
                zero_stage: Some(4),
                ..TrainingOptionsFile::default()
            },
            "zero_stage: must be 0, 1, 2 or 3",
        ),
        (
            sharded(ZeroStage::Optimizer, Some(2)),
            "shard_group_size: HSDP is built for zero_stage 2 or 3",
        ),
        (
            TrainingOptionsFile {
                shard_group_size: Some(2),
                ..TrainingOptionsFile::default()
            },
            "shard_group_size: needs zero_stage",
        ),
        (
            TrainingOptionsFile {
                distributed_optimizer: Some(false),
                ..sharded(ZeroStage::Gradients, None)
            },
            "zero_stage: 2 shards the optimizer states",
        ),
        (
            TrainingOptionsFile {
                distributed_optimizer: Some(true),
                ..sharded(ZeroStage::None, None)
            },
            "zero_stage: 0 contradicts",
        ),
        (
            TrainingOptionsFile {
                overlap_grad_reduce: Some(true),
                ..sharded(ZeroStage::Full, None)
            },
            "overlap_grad_reduce: zero_stage 3",
        ),
        (
            TrainingOptionsFile {
                grad_reduce_bucket_params: Some(1000),
                ..sharded(ZeroStage::Full, None)
            },
            "grad_reduce_bucket_params: zero_stage 3",
        ),
    ];
    for (options, needle) in cases {
        let text = problems(options);
        assert!(text.contains(needle), "expected '{needle}' in {text}");
    }
    let offload = ScenarioFile {
        pp: Some(1),
        ..file(
            1,
            1,
            4,
            TrainingOptionsFile {
                zero_offload: Some(true),
                ..sharded(ZeroStage::Full, None)
            },
        )
    };
    let text = offload.resolve().expect_err("invalid").to_string();
    assert!(
        text.contains("zero_stage: ZeRO-Offload already partitions"),
        "{text}"
    );
}

#[test]
fn the_optimizer_mode_is_the_distributed_optimizer_and_titles_name_each_mode() {
    let via_mode = file(1, 1, 4, sharded(ZeroStage::Optimizer, None))
        .resolve()
        .unwrap();
    let via_flag = file(
        1,
        1,
        4,
        TrainingOptionsFile {
            distributed_optimizer: Some(true),
            ..TrainingOptionsFile::default()
        },
    )
    .resolve()
    .unwrap();
    assert_eq!(via_mode.options, via_flag.options);
    // Serialized options name the mode only beyond ZeRO-1 (outputs of earlier
    // options stay byte-identical).
    let json = |s: &Scenario| serde_json::to_string(&s.options).unwrap();
    assert!(!json(&via_mode).contains("zero_stage"));
    let full = file(1, 1, 4, sharded(ZeroStage::Full, Some(2)))
        .resolve()
        .unwrap();
    assert!(json(&full).contains("\"zero_stage\":3"), "{}", json(&full));
    assert!(json(&full).contains("\"shard_group_size\":2"));
    assert!(
        full.title()
            .contains("ZeRO-3/FSDP full sharding · HSDP shard groups of 2"),
        "{}",
        full.title()
    );
    let explain = sim::lowering::sharded::explain(&full).unwrap();
    assert!(
        explain.contains("ZeRO-3") && explain.contains("HSDP"),
        "{explain}"
    );
    assert!(explain.contains(&format!("{} B", 2 * LAYER)), "{explain}");
}

#[test]
fn the_overlapped_parameter_gather_feeds_the_first_forward_bucket_by_bucket() {
    let options = |overlap: bool| TrainingOptionsFile {
        distributed_optimizer: Some(true),
        overlap_grad_reduce: Some(true),
        grad_reduce_bucket_params: Some(1_600_000),
        overlap_param_gather: Some(overlap),
        ..TrainingOptionsFile::default()
    };
    let (_, plain) = run(file(1, 1, 4, options(false)));
    let (_, overlapped) = run(file(1, 1, 4, options(true)));
    // Without overlap: one all-gather of everything after the optimizer.
    assert_eq!(
        collectives(&plain, TaskKind::DataParallelAllGather),
        [(2 * TOTAL, 4)]
    );
    // With it: the first forward's two buckets (embedding's first), nothing after the optimizer.
    let (bottom, top) = (2 * LAYER + EMBEDDING, 2 * LAYER + NORM);
    assert_eq!(
        collectives(&overlapped, TaskKind::DataParallelAllGather),
        [(2 * bottom, 4), (2 * top, 4)]
    );
    let first_of = |report: &SimulationReport, kind: TaskKind| {
        report
            .timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == kind)
            .map(|t| (t.start_ns, t.end_ns))
            .min()
            .unwrap()
    };
    let optimizer_end = overlapped
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::OptimizerStep)
        .map(|t| t.end_ns)
        .max()
        .unwrap();
    assert!(
        first_of(&overlapped, TaskKind::DataParallelAllGather).1
            <= first_of(&overlapped, TaskKind::Forward).0
    );
    assert!(overlapped
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::DataParallelAllGather)
        .all(|t| t.end_ns < optimizer_end));
    // Same reduce-scatters and memory as the plain distributed optimizer.
    assert_eq!(
        collectives(&plain, TaskKind::DataParallelReduceScatter),
        collectives(&overlapped, TaskKind::DataParallelReduceScatter)
    );
    assert_eq!(plain.memory, overlapped.memory);
    let refused = file(
        1,
        1,
        4,
        TrainingOptionsFile {
            overlap_param_gather: Some(true),
            ..TrainingOptionsFile::default()
        },
    )
    .resolve()
    .expect_err("invalid")
    .to_string();
    assert!(
        refused.contains("overlap_param_gather: needs the distributed optimizer"),
        "{refused}"
    );
    assert!(
        refused.contains("overlap_param_gather: needs overlap_grad_reduce"),
        "{refused}"
    );
}

#[test]
fn the_task_estimate_covers_sharded_pieces_and_collectives() {
    for options in [
        sharded(ZeroStage::Full, Some(2)),
        sharded(ZeroStage::Gradients, None),
        TrainingOptionsFile {
            distributed_optimizer: Some(true),
            overlap_grad_reduce: Some(true),
            grad_reduce_bucket_params: Some(1),
            overlap_param_gather: Some(true),
            ..TrainingOptionsFile::default()
        },
    ] {
        let (scenario, report) = run(ScenarioFile {
            topology: Some("selene".into()),
            ..file(2, 2, 4, options)
        });
        let (tasks, estimate) = (report.n_tasks as u64, scenario.estimated_tasks());
        assert!(
            tasks <= 2 * estimate && estimate <= 2 * tasks,
            "{tasks} tasks, estimated {estimate}"
        );
    }
}

/// Under context parallelism Megatron shards over the dp-cp group: with
/// d·cp = 4, ZeRO-2 and ZeRO-3 keep exactly the model states of d = 4
/// without cp (the same parameters, the same four-way shards), and every
/// reduce-scatter and all-gather spans four ranks.
#[test]
fn context_parallel_ranks_join_the_shard_group() {
    for mode in [ZeroStage::Gradients, ZeroStage::Full] {
        let plain = run(file(1, 1, 4, sharded(mode, None))).1;
        let mut with_cp = file(1, 1, 2, sharded(mode, None));
        with_cp.cp = Some(2);
        let (scenario, report) = run(with_cp);
        assert_eq!(scenario.layout.replicas(), 4);
        let (a, b) = (&plain.memory[0], &report.memory[0]);
        assert_eq!(
            (a.weight_bytes, a.gradient_bytes, a.optimizer_state_bytes),
            (b.weight_bytes, b.gradient_bytes, b.optimizer_state_bytes),
            "{mode:?}"
        );
        let scatters = collectives(&report, TaskKind::DataParallelReduceScatter);
        assert!(!scatters.is_empty(), "{mode:?}");
        assert!(
            scatters.iter().all(|&(_, ranks)| ranks == 4),
            "{scatters:?}"
        );
    }
}
