//! ZeRO++ in the ZeRO-3 program (`sharded.rs` calls these; the options are
//! `scenario::zeropp`, the kernels and the qgZ chain's cost
//! `crate::cost::zeropp`):
//!
//! - which ranks a unit's all-gather runs on: the whole shard group for the
//!   first forward of the iteration (microbatch 0), the hpZ groups of
//!   consecutive ranks for every later gather once hpZ keeps its secondary
//!   shard (DeepSpeed gathers from `ds_secondary_tensor` whenever it exists;
//!   `invalidate_secondary_tensor` drops it after the optimizer step);
//! - qwZ's quantization of each rank's shard before the unit's gathers;
//! - qgZ's chain of kernels and all-to-alls in place of the unit's gradient
//!   reduce-scatter.

use super::program::{Program, StepId};
use super::sharded::ShardedPiece;
use crate::placement::Placement;
use scenario::ZeroPlusPlus;
use std::ops::Range;
use taskgraph::ids::Rank;
use taskgraph::task::TaskKind;
use taskgraph::task_graph::{ComputePass, TaskGraphBuilder};

/// The groups that gather `piece`'s parameters in shard group `g` (`n`
/// ranks from `data_ranks[g·n]`), each with the data indices it serves.
pub fn gather_groups(
    zeropp: &ZeroPlusPlus,
    piece: &ShardedPiece,
    data_ranks: &[Rank],
    g: u32,
    n: u32,
) -> Vec<(Vec<Rank>, Range<u32>)> {
    let first_gather = piece.pass == ComputePass::Forward && piece.microbatch == 0;
    let size = match zeropp.secondary_group() {
        Some(size) if !first_gather => size,
        _ => n,
    };
    (0..n / size)
        .map(|block| {
            let start = g * n + block * size;
            let members = start..start + size;
            (
                data_ranks[members.start as usize..members.end as usize].to_vec(),
                members,
            )
        })
        .collect()
}

/// qgZ's reduction of `piece`'s gradients (`gradient_bytes` each) over the
/// shard group `ranks`: its kernels and all-to-alls in order on the
/// data-parallel stream (`crate::cost::zeropp::qgz_chain`). Returns the
/// chain's first and last steps.
pub fn quantized_reduce(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    placement: &Placement,
    ranks: &[Rank],
    piece: &ShardedPiece,
    gradient_bytes: u64,
    stage: u32,
) -> (StepId, StepId) {
    let nodes = placement.spread(ranks).nodes.max(1);
    let local_ranks = ranks.len() as u32 / nodes;
    let chain = crate::cost::zeropp::qgz_chain(piece.params, gradient_bytes, local_ranks, nodes);
    let steps: Vec<StepId> = chain
        .into_iter()
        .map(|(kind, work)| {
            super::sharded::piece_task(program, builder, ranks, kind, work, piece, stage)
        })
        .collect();
    let first = *steps.first().expect("qgZ's chain has kernels");
    (first, *steps.last().expect("qgZ's chain has kernels"))
}

/// qwZ's quantization of each rank's shard of `piece` on the data-parallel
/// stream of the gather group `ranks`, before its all-gathers: one task
/// over the group (the gather that follows waits for all of them anyway).
pub fn quantize_before_gather(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    ranks: &[Rank],
    piece: &ShardedPiece,
    expert_group: u32,
    stage: u32,
) -> StepId {
    let experts = if expert_group > 1 {
        piece.expert_params
    } else {
        0
    };
    let work = crate::cost::zeropp::quantize_shard(
        piece.params - piece.expert_params,
        ranks.len() as u32,
        experts,
        expert_group,
    );
    super::sharded::piece_task(
        program,
        builder,
        ranks,
        TaskKind::Compression,
        work,
        piece,
        stage,
    )
}

/// The `--explain` lines of ZeRO++ (None when off), per layer unit of
/// `per_layer` parameters on shard groups of `group` ranks whose gradients
/// are `gradient_bytes` each.
pub fn explain(
    scenario: &scenario::Scenario,
    group: u32,
    per_layer: u64,
    gradient_bytes: u64,
) -> Option<String> {
    let zeropp = scenario.options.zeropp;
    let mut text = String::new();
    if zeropp.quantized_weights {
        let gather_group = zeropp.secondary_group().unwrap_or(group);
        let quantized = crate::cost::zeropp::QUANTIZE_BYTES_PER_PARAM
            * per_layer.div_ceil(u64::from(gather_group));
        let dequantized = crate::cost::zeropp::DEQUANTIZE_BYTES_PER_PARAM * per_layer;
        text.push_str(&format!(
            "  ZeRO++ qwZ: each gather of a layer moves {} B of INT8 weights and {} B of fp32 scales (bf16: {} B); each rank quantizes its shard before the gather ({quantized} B through HBM, on the data-parallel stream) and dequantizes the layer before the pass ({dequantized} B, on the compute stream)\n",
            zeropp.weight_gather_bytes(per_layer),
            zeropp.scale_gather_bytes(per_layer, group),
            2 * per_layer,
        ));
    }
    if let Some(secondary) = zeropp.secondary_group() {
        text.push_str(&format!(
            "  ZeRO++ hpZ: every gather but each layer's first forward of the iteration runs inside groups of {secondary} consecutive ranks, from a secondary shard of 1/{secondary} of the parameters ({} B per layer) kept until the optimizer step\n",
            per_layer.div_ceil(u64::from(secondary)) * models::memory::WEIGHT_BYTES_PER_PARAM,
        ));
    }
    if zeropp.quantized_gradients {
        let local_ranks = scenario.topology.node.gpus_per_node.min(group);
        let nodes = group / local_ranks;
        let (intra, inter) = crate::cost::zeropp::qgz_phase_bytes(per_layer, local_ranks);
        text.push_str(&format!(
            "  ZeRO++ qgZ: each layer's gradients ({} B) go as {intra} B of INT4 all-to-all inside the node ({local_ranks} ranks), then {inter} B across {nodes} nodes, with four quantize/reduce/dequantize kernels on the data-parallel stream\n",
            per_layer * gradient_bytes,
        ));
    }
    (!text.is_empty()).then_some(text)
}
