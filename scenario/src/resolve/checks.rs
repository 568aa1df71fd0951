//! The checks across a resolved layout's fields that [`super`] runs after
//! the degrees: the layout against the topology's GPUs and nodes, the
//! options against the schedule and the GPU, CPU offloading of activations
//! where Megatron-Core allows it, and the task count against 32-bit ids.

use super::Degrees;
use crate::kinds::Recompute;
use crate::layout::Layout;
use crate::options::TrainingOptions;
use crate::problem::Problem;
use crate::stack::Stack;
use crate::task_count::{task_limit, GradientSplits, MAX_TASKS, TASK_LIMIT_VARIABLE};
use models::ModelSpec;
use schedules::ScheduleKind;
use topologies::TopologySpec;

/// Whether the layout's GPUs fit the topology and its tensor groups and
/// context-parallel rings sit evenly on its nodes.
pub(super) fn check_topology_fit(
    topology: &TopologySpec,
    degrees: Degrees,
    problems: &mut Vec<Problem>,
) {
    let (t, p, d, cp) = (
        degrees.t.get(),
        degrees.p.get(),
        degrees.d.get(),
        degrees.cp.get(),
    );
    let needed = t as u64 * cp as u64 * p as u64 * d as u64;
    if needed > topology.total_gpus() {
        if cp > 1 {
            problems.push(Problem::gpu_count(format!(
                "tp × cp × pp × dp = {t} × {cp} × {p} × {d} = {needed} GPUs, but topology '{}' has {}",
                topology.name,
                topology.total_gpus()
            )));
        } else {
            problems.push(Problem::gpu_count(format!(
                "tp × pp × dp = {t} × {p} × {d} = {needed} GPUs, but topology '{}' has {}",
                topology.name,
                topology.total_gpus()
            )));
        }
    }
    let ring = t as u64 * cp as u64;
    let per_node_u64 = topology.node.gpus_per_node as u64;
    if cp > 1
        && per_node_u64 > 0
        && !per_node_u64.is_multiple_of(ring)
        && !ring.is_multiple_of(per_node_u64)
    {
        problems.push(Problem::new("cp", format!(
            "tp × cp = {t} × {cp} = {ring} neither divides nor is a multiple of the {per_node_u64} GPUs per node, so context-parallel rings would straddle nodes unevenly"
        )));
    }
    let per_node = topology.node.gpus_per_node;
    if !per_node.is_multiple_of(t) && !t.is_multiple_of(per_node) {
        problems.push(Problem::new("tp", format!(
            "{t} neither divides nor is a multiple of the {per_node} GPUs per node, so tensor groups would straddle nodes unevenly"
        )));
    }
}

/// The options against the schedule, the precision against the GPU, and
/// contention against the fabric.
pub(super) fn check_options(
    schedule: ScheduleKind,
    options: &TrainingOptions,
    topology: Option<&TopologySpec>,
    problems: &mut Vec<Problem>,
) {
    if schedule.splits_backward() && options.sharding >= crate::zero_stage::ZeroStage::Gradients {
        problems.push(Problem::new("schedule", format!(
            "{} splits the backward, which the sharded lowering of zero_stage {} does not cut yet (it shards whole backwards); use --schedule 1f1b or zero_stage 1",
            schedule.name(),
            options.sharding.stage()
        )));
    }
    if schedule.splits_backward() && options.offload.is_some() {
        problems.push(Problem::new("schedule", format!(
            "{} splits the backward, which the ZeRO-Offload program does not build (it runs whole backwards); use --schedule 1f1b",
            schedule.name()
        )));
    }
    if schedule == ScheduleKind::DualPipe && options.distributed_optimizer {
        problems.push(Problem::new("distributed_optimizer", "not built for dualpipe (its mirrored ranks order the two copies' gradients differently, so their shards would not line up); use dualpipev"));
    }
    if schedule == ScheduleKind::LoopedBfs && options.offload.is_some() {
        problems.push(Problem::new("schedule", "looped-bfs under zero_offload is not built (the ZeRO-Offload program runs one chunk per stage); use --schedule 1f1b"));
    }
    if let (crate::options::Precision::Bf16, Some(topology)) = (options.precision, topology) {
        let datasheet = topologies::datasheets::datasheet(&topology.gpu.name);
        if datasheet.is_some_and(|d| d.architecture == "Volta") {
            problems.push(Problem::new(
                "precision",
                format!(
                    "bf16 needs bf16 tensor cores, which the {} (Volta) does not have; use fp16",
                    topology.gpu.name
                ),
            ));
        }
    }
    if let (crate::options::Precision::Fp8, Some(topology)) = (options.precision, topology) {
        if topology.gpu.peak.fp8_flops_per_s.is_none() {
            let architecture = topologies::datasheets::datasheet(&topology.gpu.name)
                .map_or(String::new(), |d| format!(" ({})", d.architecture));
            problems.push(Problem::new("precision", format!(
                "fp8 needs FP8 tensor cores (Hopper or Blackwell), and the {}{architecture} has none (its topology gives no gpu.peak.fp8_flops_per_s); use bf16",
                topology.gpu.name
            )));
        }
    }
    if options.precision == crate::options::Precision::Fp8 && options.offload.is_some() {
        problems.push(Problem::new("precision", "fp8 under zero_offload is not modeled (DeepSpeed's ZeRO-Offload trains in fp16); use bf16 or fp16"));
    }
    if let (true, Some(topology)) = (options.network_contention, topology) {
        if let Err(error) = topologies::fat_tree::fat_tree_of(topology) {
            problems.push(Problem::new("network_contention", error));
        }
        if topology.node.gpus_per_node > 1 && topology.node.nvlink_bandwidth_bytes_per_s <= 0.0 {
            problems.push(Problem::new("network_contention", format!(
                "topology '{}' has no NVLink inside its nodes (node.nvlink_bandwidth_bytes_per_s = 0: its GPUs talk over PCIe), and the fabric's intra-node PCIe paths are not built; run without contention",
                topology.name
            )));
        }
    }
}

/// CPU offloading of activations (`cpu_offloading_num_layers`) where
/// Megatron-Core allows it (`transformer_config.py`: fewer layers than the
/// model's, no pipeline parallelism, no recomputation) and the simulator
/// builds it (one microbatch at a time, layers alike, PCIe not shared with
/// ZeRO-Offload).
pub(super) fn check_activation_offload(
    options: &TrainingOptions,
    schedule: ScheduleKind,
    recompute: Recompute,
    model: Option<&models::ModelSpec>,
    pipeline_parallel: u32,
    problems: &mut Vec<Problem>,
) {
    let offloaded = options.activation_offload_layers;
    if offloaded == 0 {
        return;
    }
    let field = "cpu_offloading_num_layers";
    if let Some(model) = model {
        if u64::from(offloaded) >= model.layers {
            problems.push(Problem::new(field, format!(
                "{offloaded} of the model's {} layers: Megatron-Core offloads fewer layers than the model has",
                model.layers
            )));
        }
        if model.moe.is_some() {
            problems.push(Problem::new(field, "not built for a mixture of experts (the stall model takes every layer's time alike)"));
        }
    }
    if pipeline_parallel > 1 {
        problems.push(Problem::new(field, format!(
            "needs pp = 1 (got {pipeline_parallel}): Megatron-Core has no CPU offloading with pipeline parallelism"
        )));
    }
    if recompute != Recompute::None {
        problems.push(Problem::new(field, "Megatron-Core's CPU offloading does not work with activation recomputation; use recompute none"));
    }
    if schedule != ScheduleKind::OneFOneB {
        problems.push(Problem::new(field, format!(
            "needs --schedule 1f1b (each microbatch's forward then its backward, as Megatron runs p = 1), not {}",
            schedule.name()
        )));
    }
    if options.offload.is_some() {
        problems.push(Problem::new(
            field,
            "not built with zero_offload (both would share the PCIe host link)",
        ));
    }
}

/// Task ids are 32-bit: graphs past them are refused before they are built
/// (whether a graph fits this machine's memory is `host_memory`'s check).
#[allow(clippy::too_many_arguments)]
pub(super) fn check_task_count(
    layout: &Layout,
    microbatches: u32,
    recompute: Recompute,
    stack: Option<&Stack>,
    iterations: u32,
    model: Option<&ModelSpec>,
    schedule: ScheduleKind,
    options: &TrainingOptions,
    problems: &mut Vec<Problem>,
) {
    let splits = GradientSplits {
        split_backward: schedule.splits_backward(),
        ..model.map_or(GradientSplits::default(), |model| {
            GradientSplits::of(model, layout, options)
        })
    };
    let estimated_tasks = crate::task_count::estimated_task_count_at(
        layout,
        u64::from(microbatches),
        recompute,
        stack.is_some_and(|s| s.host.is_some()),
        iterations,
        splits,
    );
    let limit = task_limit();
    if estimated_tasks > limit {
        let why = if limit < MAX_TASKS {
            format!("set by {TASK_LIMIT_VARIABLE}")
        } else {
            "task ids are 32-bit".to_string()
        };
        problems.push(Problem::new("global_batch", format!(
            "this layout needs about {estimated_tasks} tasks per simulation; the limit is {limit} ({why}); use fewer microbatches (a larger microbatch_size or smaller global_batch) or fewer GPUs"
        )));
    }
}
