//! ZeRO++ over ZeRO-3 (`--zero-quantized-weights`, `--zero-hpz-partition-size`,
//! `--zero-quantized-gradients`): the bytes of every collective against the
//! published ratios, the kernels qwZ and qgZ add and where they run, the
//! memory hpZ and qwZ add,
//! exactness under data-parallel symmetry, and what is refused.
//!
//! The hand model (`sharded_data_parallel.rs`): 4 layers of 789,760
//! parameters, embedding 1,312,768, final norm 512, 4,472,320 in all; FSDP
//! units embedding + layer 0, layers 1 and 2, layer 3 + norm. Here on two
//! nodes of 8 GPUs (selene), purely data-parallel over 16 ranks, fp16 and
//! unfused, so gradients are 2 bytes: M = 2 B × parameters, as in the
//! ZeRO++ volume table (DeepSpeed `blogs/zeropp`: ZeRO-3 moves 3M across
//! nodes per iteration, ZeRO++ 0.5M (qwZ) + 0 (hpZ) + 0.25M (qgZ) = 0.75M).

use sim::scenario::{Scenario, ScenarioFile, TrainingOptionsFile};
use sim::{Expansion, SimulationMode, SimulationReport};
use timeline::{StreamKind, TaskKind, TaskRecord};

const LAYER: u64 = 789_760;
const EMBEDDING: u64 = 1_312_768;
const NORM: u64 = 512;
const TOTAL: u64 = 4 * LAYER + EMBEDDING + NORM;
const UNITS: [u64; 4] = [LAYER + EMBEDDING, LAYER, LAYER, LAYER + NORM];
const D: u32 = 16;

#[derive(Clone, Copy, Default)]
struct Parts {
    qwz: bool,
    hpz: Option<u32>,
    qgz: bool,
}

fn file(parts: Parts, global_batch: u32) -> ScenarioFile {
    let options = TrainingOptionsFile {
        gradient_accumulation_fusion: Some(false),
        zero_stage: Some(3),
        zero_quantized_weights: parts.qwz.then_some(true),
        zero_hpz_partition_size: parts.hpz,
        zero_quantized_gradients: parts.qgz.then_some(true),
        ..TrainingOptionsFile::default()
    };
    ScenarioFile {
        topology: Some("selene".into()),
        global_batch: Some(global_batch),
        ..tests::hand_model_file(1, 1, D, options)
    }
}

fn run(parts: Parts, global_batch: u32) -> (Scenario, SimulationReport) {
    let scenario = file(parts, global_batch).resolve().expect("valid scenario");
    let report = sim::simulate(&scenario).expect("simulates");
    (scenario, report)
}

/// (bytes, nodes the group spans) of every task of `kind` on rank 0, in issue order.
fn on_rank0(report: &SimulationReport, kind: TaskKind) -> Vec<(u64, u32)> {
    let groups = &report.timeline().header.groups;
    report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == kind && groups[t.group as usize].contains(&0))
        .map(|t| {
            let ranks = &groups[t.group as usize];
            let nodes = if ranks.iter().all(|&r| r < 8) || ranks.iter().all(|&r| r >= 8) {
                1
            } else {
                2
            };
            (t.bytes, nodes)
        })
        .collect()
}

/// One scale of 4 B per 8000-element group of each rank's shard, 16 shards.
fn scales(params: u64) -> u64 {
    params.div_ceil(16).div_ceil(8000) * 4 * 16
}

#[test]
fn zeropp_moves_a_quarter_of_zero3s_cross_node_volume_as_published() {
    // One microbatch: each unit gathered for its forward and its backward,
    // its gradients reduce-scattered once.
    let (_, zero3) = run(Parts::default(), D);
    let gathers = on_rank0(&zero3, TaskKind::DataParallelAllGather);
    let scatters = on_rank0(&zero3, TaskKind::DataParallelReduceScatter);
    assert!(gathers
        .iter()
        .chain(&scatters)
        .all(|&(_, nodes)| nodes == 2));
    let volume = |tasks: &[(u64, u32)]| tasks.iter().map(|&(b, _)| b).sum::<u64>();
    let m = 2 * TOTAL;
    assert_eq!(volume(&gathers) + volume(&scatters), 3 * m);

    let all = Parts {
        qwz: true,
        hpz: Some(8),
        qgz: true,
    };
    let (_, zeropp) = run(all, D);
    let gathers = on_rank0(&zeropp, TaskKind::DataParallelAllGather);
    // Forward: INT8 weights then their scales over both nodes, unit by unit
    // (the forward's 4 units gathered first, the backward's 4 after them).
    let forward: Vec<(u64, u32)> = UNITS
        .iter()
        .flat_map(|&unit| [(unit, 2), (scales(unit), 2)])
        .collect();
    assert_eq!(gathers[..8], forward[..]);
    // Backward: from hpZ's secondary shards inside the node, still INT8.
    let backward: Vec<(u64, u32)> = UNITS
        .iter()
        .rev()
        .flat_map(|&unit| [(unit, 1), (unit.div_ceil(8).div_ceil(8000) * 4 * 8, 1)])
        .collect();
    assert_eq!(gathers[8..], backward[..]);
    let forward_bytes: u64 = forward.iter().map(|&(b, _)| b).sum();
    assert_eq!(
        forward_bytes,
        TOTAL + UNITS.iter().map(|&u| scales(u)).sum::<u64>()
    );
    // 0.5M plus 0.05% of scales (4 B per 8000 parameters).
    assert!((forward_bytes as f64 / m as f64 - 0.5).abs() < 0.0003);
    // qgZ: per unit, the INT4 buffer (¼ of fp16) inside the node, then its
    // reduced eighth across the two nodes: M/(Z·N) with Z = 4, N = 8 (each
    // all-to-all one task over the shard group, every node's at once).
    let reductions = on_rank0(&zeropp, TaskKind::DataParallelReduceScatter);
    let expected: Vec<(u64, u32)> = UNITS
        .iter()
        .rev()
        .flat_map(|&unit| [(unit / 2, 2), ((unit / 2).div_ceil(8), 2)])
        .collect();
    assert_eq!(reductions, expected);
    let int4: u64 = UNITS.iter().map(|&unit| unit / 2).sum();
    assert_eq!(4 * int4, m);
    // The table's 0.5M + 0 + 0.25M against 3M: 4× less.
    let table = forward_bytes + int4;
    assert!((3.0 * m as f64 / table as f64 - 4.0).abs() < 0.002);
}

#[test]
fn hpz_serves_every_gather_after_the_first_forward_from_the_node() {
    // Two microbatches: only microbatch 0's forward gathers over both nodes.
    let hpz = Parts {
        hpz: Some(8),
        ..Parts::default()
    };
    let (_, report) = run(hpz, 2 * D);
    let gathers = on_rank0(&report, TaskKind::DataParallelAllGather);
    assert_eq!(gathers.len(), 16);
    let across: Vec<(u64, u32)> = gathers.iter().copied().filter(|g| g.1 == 2).collect();
    assert_eq!(across, UNITS.map(|unit| (2 * unit, 2)));
    assert!(gathers[4..].iter().all(|&(_, nodes)| nodes == 1));
    // Memory: the secondary shard, 1/8 of the parameters at 2 B, on top of ZeRO-3's.
    let (_, plain) = run(Parts::default(), 2 * D);
    let extra = report.memory[0].weight_bytes - plain.memory[0].weight_bytes;
    assert_eq!(extra, 2 * TOTAL.div_ceil(8));
}

/// Rank 0's tasks on `stream`, in start order.
fn stream_of_rank0(report: &SimulationReport, stream: StreamKind) -> Vec<&TaskRecord> {
    let groups = &report.timeline().header.groups;
    let mut tasks: Vec<&TaskRecord> = report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.stream == stream && groups[t.group as usize].contains(&0))
        .collect();
    tasks.sort_by_key(|t| (t.start_ns, t.id));
    tasks
}

#[test]
fn qwz_quantizes_before_each_gather_and_dequantizes_before_each_pass() {
    let qwz = Parts {
        qwz: true,
        ..Parts::default()
    };
    let (_, report) = run(qwz, D);
    let (_, plain) = run(Parts::default(), D);
    // The passes' own kernels are unchanged.
    for kind in [TaskKind::Forward, TaskKind::Backward] {
        assert_eq!(on_rank0(&report, kind), on_rank0(&plain, kind));
    }
    let mut units = UNITS.to_vec();
    units.extend(UNITS.iter().rev());
    // Data-parallel stream: before each unit's INT8 gather, the rank
    // quantizes its 1/16 shard (2 B read, 1 B written per parameter).
    let data_parallel = stream_of_rank0(&report, StreamKind::DataParallel);
    let quantized: Vec<(TaskKind, u64)> = data_parallel
        .iter()
        .filter(|t| t.kind != TaskKind::DataParallelReduceScatter)
        .map(|t| (t.kind, t.bytes))
        .collect();
    let expected: Vec<(TaskKind, u64)> = units
        .iter()
        .flat_map(|&unit| {
            [
                (TaskKind::Compression, 3 * unit.div_ceil(16)),
                (TaskKind::DataParallelAllGather, unit),
                (TaskKind::DataParallelAllGather, scales(unit)),
            ]
        })
        .collect();
    assert_eq!(quantized, expected);
    // Compute stream: each pass right after the dequantization of its
    // gathered unit (1 B read, 2 B written per parameter).
    let compute = stream_of_rank0(&report, StreamKind::Compute);
    let passes: Vec<usize> = (0..compute.len())
        .filter(|&i| matches!(compute[i].kind, TaskKind::Forward | TaskKind::Backward))
        .collect();
    assert_eq!(passes.len(), units.len());
    for (&i, &unit) in passes.iter().zip(&units) {
        let dequantize = compute[i - 1];
        assert_eq!(
            (dequantize.kind, dequantize.bytes),
            (TaskKind::Compression, 3 * unit)
        );
        assert!(dequantize.end_ns <= compute[i].start_ns);
    }
    // INT8 receive buffers for the two units in flight (the two largest).
    let extra = report.memory[0].weight_bytes - plain.memory[0].weight_bytes;
    assert_eq!(extra, 2 * (LAYER + EMBEDDING));
}

#[test]
fn qgz_runs_its_kernels_and_all_to_alls_in_order_on_the_data_parallel_stream() {
    let qgz = Parts {
        qgz: true,
        ..Parts::default()
    };
    let (_, report) = run(qgz, D);
    let chain: Vec<(TaskKind, u64)> = stream_of_rank0(&report, StreamKind::DataParallel)
        .iter()
        .filter(|t| t.kind != TaskKind::DataParallelAllGather)
        .map(|t| (t.kind, t.bytes))
        .collect();
    // Per unit, with G = 2 B fp16 gradients, L = 8 ranks per node and N = 2
    // nodes: swizzle_quant (G read, ½ written per element), the INT4
    // all-to-all inside the node, quantized_reduction (½ read, ½/L
    // written), the all-to-all across nodes, dequantize (½/L read, G/L
    // written), the sum of the nodes' chunks (G/L read, G/(L·N) written).
    let expected: Vec<(TaskKind, u64)> = UNITS
        .iter()
        .rev()
        .flat_map(|&unit| {
            let (full, int4) = (2 * unit, unit / 2);
            let (across, reduced) = (int4.div_ceil(8), full.div_ceil(8));
            [
                (TaskKind::Compression, full + int4),
                (TaskKind::DataParallelReduceScatter, int4),
                (TaskKind::Compression, int4 + across),
                (TaskKind::DataParallelReduceScatter, across),
                (TaskKind::Compression, across + reduced),
                (TaskKind::Compression, reduced + reduced.div_ceil(2)),
            ]
        })
        .collect();
    assert_eq!(chain, expected);
}

#[test]
fn qwz_and_qgz_stay_exact_under_symmetry_and_hpz_runs_in_full() {
    let compare = |parts: Parts| {
        let scenario = file(parts, 2 * D).resolve().unwrap();
        let full = sim::simulate_with(&scenario, Expansion::Built).unwrap();
        let auto = sim::simulate_with(&scenario, Expansion::Auto).unwrap();
        assert_eq!(auto.metrics, full.metrics);
        assert_eq!(auto.memory, full.memory);
        assert_eq!(auto.timeline(), full.timeline());
        auto.mode
    };
    let quantized = Parts {
        qwz: true,
        qgz: true,
        ..Parts::default()
    };
    assert_eq!(
        compare(quantized),
        SimulationMode::Symmetric { replicas: D }
    );
    let hpz = Parts {
        hpz: Some(8),
        ..Parts::default()
    };
    assert_eq!(compare(hpz), SimulationMode::Full);
}

#[test]
fn what_zeropp_refuses_names_its_key() {
    let refused = |edit: &dyn Fn(&mut ScenarioFile), expected: &str| {
        let mut file = file(Parts::default(), D);
        edit(&mut file);
        let error = file.resolve().expect_err(expected).to_string();
        assert!(error.contains(expected), "{error}");
    };
    refused(
        &|f| {
            f.options.zero_stage = Some(2);
            f.options.zero_quantized_weights = Some(true);
        },
        "zero_quantized_weights: ZeRO++ builds on ZeRO stage 3",
    );
    refused(
        &|f| f.options.zero_hpz_partition_size = Some(0),
        "zero_hpz_partition_size: must be at least 1",
    );
    refused(
        &|f| f.options.zero_hpz_partition_size = Some(3),
        "zero_hpz_partition_size: must divide the data-parallel size 16 (got 3)",
    );
    refused(
        &|f| {
            f.tp = Some(2);
            f.dp = Some(8);
            f.options.zero_hpz_partition_size = Some(8);
        },
        "zero_hpz_partition_size: DeepSpeed forms its groups over the whole world, so it needs a purely data-parallel layout (got tp 2, pp 1, cp 1, ep 1)",
    );
    refused(
        &|f| {
            f.dp = Some(12);
            f.global_batch = Some(12);
            f.options.zero_quantized_gradients = Some(true);
        },
        "the data-parallel size must be a multiple of 8 (got 12)",
    );
    refused(
        &|f| {
            f.options.zero_quantized_gradients = Some(true);
            f.options.network_contention = Some(true);
        },
        "zero_quantized_gradients: its hierarchical all-to-all is not modeled as fabric flows",
    );
    refused(
        &|f| {
            f.options.shard_group_size = Some(8);
            f.options.zero_quantized_gradients = Some(true);
        },
        "zero_quantized_gradients: does not combine with HSDP shard groups",
    );
}
