//! One pass of a tensor-parallel group as tasks — the building block both
//! lowerings ([`crate::lowering`], [`crate::offload`]) emit passes with.
//!
//! A pass (forward, recompute or backward of some layers of a chunk, for one
//! microbatch) is a compute task on every rank of the tensor group, followed,
//! when t > 1, by one group task holding the pass's blocking tensor
//! all-reduces on the compute stream. A backward can be cut into gradient
//! buckets of whole layers ([`backward_buckets`]) so that each bucket's
//! gradients can leave (all-reduce, offload) while the backward goes on.

use crate::ids::{GroupId, TaskId};
use crate::placement::Placement;
use crate::task::{StreamKind, Task, TaskKind};
use crate::task_graph::{ComputePass, Dependency, TaskGraphBuilder, Work};

/// The tasks a tensor group's compute stream ends with: one group task (the
/// tensor all-reduce), or one task per tensor rank with consecutive ids.
#[derive(Debug, Clone, Copy)]
pub struct Tail {
    pub first: TaskId,
    pub count: u32,
}

impl Tail {
    /// The task tensor rank `index` waits on.
    pub fn of(self, index: u32) -> TaskId {
        if self.count == 1 {
            self.first
        } else {
            TaskId(self.first.0 + index)
        }
    }

    /// Adds edges from this tail to `count` consecutive tasks starting at `first`.
    pub fn precede(
        self,
        builder: &mut TaskGraphBuilder,
        first: TaskId,
        count: u32,
        why: Dependency,
    ) {
        if self.count != 1 {
            debug_assert_eq!(self.count, count);
        }
        for i in 0..count {
            builder.add_edge(self.of(i), TaskId(first.0 + i), why);
        }
    }
}

/// The groups a tensor-parallel group's tasks run on.
pub struct TensorGroup {
    /// One single-rank group per tensor rank (its compute tasks), in rank order.
    pub rank_groups: Vec<GroupId>,
    /// The whole tensor group (its all-reduce task).
    pub tensor_group: GroupId,
    /// Nodes the tensor group spans.
    pub nodes: u32,
    pub stage: u32,
}

impl TensorGroup {
    /// The tensor group of pipeline stage `stage` in data-parallel replica `data_index`.
    pub fn new(
        builder: &mut TaskGraphBuilder,
        placement: &Placement,
        stage: u32,
        data_index: u32,
    ) -> TensorGroup {
        let ranks = placement.tensor_group(stage, data_index);
        let tensor_group = builder.group(&ranks);
        TensorGroup {
            rank_groups: ranks.iter().map(|&rank| builder.group(&[rank])).collect(),
            tensor_group,
            nodes: placement.nodes_spanned(&ranks),
            stage,
        }
    }
}

/// A pass, or a gradient bucket of one, over some layers of a chunk.
#[derive(Debug, Clone, Copy)]
pub struct PassPiece {
    pub pass: ComputePass,
    pub chunk: u32,
    pub microbatch: u32,
    pub iteration: u16,
    pub layers: u32,
    pub embedding: bool,
    pub head: bool,
}

/// The task kind of a compute pass.
pub fn task_kind(pass: ComputePass) -> TaskKind {
    match pass {
        ComputePass::Forward => TaskKind::Forward,
        ComputePass::Recompute => TaskKind::Recompute,
        ComputePass::Backward => TaskKind::Backward,
    }
}

/// Adds one pass (piece) of a tensor group after `tail` and the blocking
/// sends: a compute task per rank (consecutive ids, in rank order), then the
/// tensor all-reduce group task when t > 1. Moves `tail` to the pass's end
/// and returns its first compute task.
pub fn emit_pass(
    builder: &mut TaskGraphBuilder,
    group: &TensorGroup,
    piece: PassPiece,
    tail: &mut Option<Tail>,
    blocking_sends: &mut Vec<TaskId>,
) -> TaskId {
    let t = group.rank_groups.len() as u32;
    let compute_work = builder.work(Work::Compute {
        pass: piece.pass,
        layers: piece.layers,
        embedding: piece.embedding,
        head: piece.head,
    });
    let mut first = None;
    for &rank_group in &group.rank_groups {
        let id = builder.add_task(Task {
            kind: task_kind(piece.pass),
            stream: StreamKind::Compute,
            chunk: piece.chunk as u16,
            stage: group.stage,
            microbatch: piece.microbatch,
            group: rank_group,
            work: compute_work,
            iteration: piece.iteration,
        });
        first.get_or_insert(id);
    }
    let first = first.expect("tensor groups are non-empty");
    if let Some(previous) = *tail {
        previous.precede(builder, first, t, Dependency::ProgramOrder);
    }
    for send in blocking_sends.drain(..) {
        Tail {
            first: send,
            count: 1,
        }
        .precede(builder, first, t, Dependency::ProgramOrder);
    }
    let mut last = Tail { first, count: t };
    if t > 1 {
        let work = builder.work(Work::TensorAllReduce {
            pass: piece.pass,
            layers: piece.layers,
            embedding: piece.embedding,
            head: piece.head,
            group_size: t,
            nodes: group.nodes,
        });
        let all_reduce = builder.add_task(Task {
            kind: TaskKind::TensorAllReduce,
            stream: StreamKind::Compute,
            chunk: piece.chunk as u16,
            stage: group.stage,
            microbatch: piece.microbatch,
            group: group.tensor_group,
            work,
            iteration: piece.iteration,
        });
        for i in 0..t {
            builder.add_edge(TaskId(first.0 + i), all_reduce, Dependency::ProgramOrder);
        }
        last = Tail {
            first: all_reduce,
            count: 1,
        };
    }
    *tail = Some(last);
    first
}

/// Whole layers per gradient bucket for a bucket cap of `bucket_params`
/// parameters: as many layers as fit under the cap, at least one, at most all.
pub fn layers_per_bucket(bucket_params: u64, layer_params: u64, layers: u32) -> u32 {
    (bucket_params / layer_params.max(1)).clamp(1, layers.max(1) as u64) as u32
}

/// A gradient bucket of a backward pass: its layers, and whether it holds the
/// embedding's or the head's backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketLayers {
    pub layers: u32,
    pub embedding: bool,
    pub head: bool,
}

/// The gradient buckets of a backward over `layers` layers, in the order the
/// backward runs them: `per_bucket` layers each from the top (the head joins
/// the first bucket, the embedding the last), the remainder last.
pub fn backward_buckets(
    layers: u32,
    per_bucket: u32,
    embedding: bool,
    head: bool,
) -> Vec<BucketLayers> {
    let per_bucket = per_bucket.max(1);
    let count = layers.div_ceil(per_bucket).max(1);
    (0..count)
        .map(|i| BucketLayers {
            layers: per_bucket.min(layers - i * per_bucket),
            embedding: embedding && i + 1 == count,
            head: head && i == 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_layer_once_with_head_first_and_embedding_last() {
        let buckets = backward_buckets(10, 3, true, true);
        assert_eq!(
            buckets.iter().map(|b| b.layers).collect::<Vec<_>>(),
            [3, 3, 3, 1]
        );
        assert!(buckets[0].head && !buckets[0].embedding);
        assert!(buckets[3].embedding && !buckets[3].head);
        assert!(buckets[1..3].iter().all(|b| !b.head && !b.embedding));
        let whole = backward_buckets(4, 4, true, false);
        assert_eq!(
            whole,
            [BucketLayers {
                layers: 4,
                embedding: true,
                head: false
            }]
        );
    }

    #[test]
    fn a_bucket_holds_as_many_layers_as_fit_under_the_cap_and_at_least_one() {
        assert_eq!(layers_per_bucket(100, 30, 8), 3);
        assert_eq!(layers_per_bucket(10, 30, 8), 1);
        assert_eq!(layers_per_bucket(1_000, 30, 8), 8);
    }
}
