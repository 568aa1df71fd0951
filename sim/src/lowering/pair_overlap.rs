//! DualPipe's overlapped F&B pair (`pair_overlap`), lowered: the forward
//! of one microbatch and the backward of another, each cut at its expert
//! all-to-alls ([`crate::cost::pair_overlap`]'s pieces), interleaved on the
//! compute stream, their all-to-alls on the rank's expert-parallel stream.
//!
//! The DeepSeek-V3 report (arXiv 2412.19437v2, Sec. 3.2.1 and its Figure 4)
//! pairs a forward and a backward chunk and rearranges their attention,
//! dispatch, MLP and combine so that "both all-to-all and PP communication
//! can be fully hidden"; deepseek-ai/DualPipe (3da1bbe, `dualpipe.py`
//! `_forward_backward_chunk`) waits for both inputs, runs the pair, then
//! sends both outputs, and leaves `overlapped_forward_backward` to the model.
//! The order built here: the halves' pieces alternate on the compute stream,
//! forward first (F0, B0, F1, B1, …; the longer half's extra pieces last);
//! each all-to-all is issued right after the piece that produces it, so it
//! runs while the other half's next piece computes, and the piece that needs
//! it waits for it. Nothing else is imposed: when a piece's all-to-all is
//! slower than the other half's piece, the compute stream waits, as the
//! engine finds. A piece issued beside an all-to-all of the other half
//! runs on the SMs it leaves ([`taskgraph::task_graph::Work::ComputeBeside`]).
//!
//! With a host lane the host issues every piece (its first kernel, then the
//! rest, as a whole pass's segments are issued) and every all-to-all call
//! (one collective call each) in that order, and waits for the GPU after a
//! piece with a host synchronization (the dispatcher's device-to-host read)
//! before it issues the dispatch that follows.

use super::passes::PassPiece;
use super::program::{Program, StepId, TensorGroupId};
use super::walk_context::host_task;
use crate::cost::pair_overlap::{piece_segment, pieces_with_host_sync};
use scenario::Scenario;
use taskgraph::task::{StreamKind, Task, TaskKind};
use taskgraph::task_graph::{ComputePass, Dependency, TaskGraphBuilder, Work};

/// One half of a pair: the pass over a chunk's layers.
#[derive(Debug, Clone, Copy)]
pub(super) struct PairHalf {
    pub pass: ComputePass,
    pub chunk: u32,
    pub microbatch: u32,
    pub layers: u32,
    pub dense_layers: u32,
    /// The works' `first_layer` ([`crate::cost::work_first_layer`]).
    pub first_layer: u32,
    pub embedding: bool,
    pub head: bool,
    pub fp8_weight_cast: bool,
}

impl PairHalf {
    fn compute(&self, piece: u16) -> Work {
        Work::Compute {
            pass: self.pass,
            layers: self.layers,
            dense_layers: self.dense_layers,
            first_layer: self.first_layer,
            embedding: self.embedding,
            head: self.head,
            fp8_weight_cast: self.fp8_weight_cast,
            segment: piece_segment(piece),
        }
    }

    fn all_to_all(
        &self,
        piece: u16,
        (group_size, nodes): (u32, u32),
        expert_tensor_group: (u32, u32),
    ) -> Work {
        Work::ExpertAllToAll {
            pass: self.pass,
            layers: self.layers,
            dense_layers: self.dense_layers,
            first_layer: self.first_layer,
            embedding: self.embedding,
            head: self.head,
            group_size,
            nodes,
            expert_tensor_group,
            segment: piece_segment(piece),
        }
    }

    fn host_issue(&self, piece: u16, first: bool) -> Work {
        Work::HostIssuePass {
            pass: self.pass,
            layers: self.layers,
            dense_layers: self.dense_layers,
            embedding: self.embedding,
            head: self.head,
            first,
            segment: piece_segment(piece),
        }
    }
}

/// Where a lowered pair's halves start and end.
#[derive(Debug, Clone, Copy)]
pub(super) struct LoweredPair {
    /// Each half's first compute step (forward, backward).
    pub first: [StepId; 2],
    /// Each half's last compute step.
    pub last: [StepId; 2],
    /// Each half's first host issue, with a host lane.
    pub first_host: [Option<StepId>; 2],
    /// The pair's last compute step.
    pub tail: StepId,
}

/// What the pair waits for from the stage's program before it starts.
pub(super) struct PairWaits<'a> {
    /// Blocking sends the pair's first compute piece waits for.
    pub blocking_sends: &'a mut Vec<StepId>,
    /// GPU work the host waits for before it issues the pair.
    pub host_waits: &'a mut Vec<StepId>,
}

/// Lowers `halves` (forward, backward) as one overlapped pair of tensor
/// group `group` on pipeline stage `stage` (see the module documentation).
#[allow(clippy::too_many_arguments)]
pub(super) fn lower_pair(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    scenario: &Scenario,
    group: TensorGroupId,
    stage: u32,
    iteration: u16,
    halves: [PairHalf; 2],
    waits: PairWaits<'_>,
) -> LoweredPair {
    let host = scenario.stack.host.is_some();
    let tensor_group = program.tensor_group(group);
    let group_id = tensor_group.tensor_group;
    let (expert_group, expert_tensor_group) =
        (tensor_group.expert_group, tensor_group.expert_tensor_group);
    let syncs: [Vec<bool>; 2] = halves.map(|half| {
        pieces_with_host_sync(&crate::cost::pass_steps_of(
            scenario,
            half.pass,
            half.layers,
            half.dense_layers,
            half.embedding,
            half.head,
        ))
    });
    let longest = syncs[0].len().max(syncs[1].len());
    let lengths = [syncs[0].len(), syncs[1].len()];
    let order: Vec<(usize, usize)> = (0..longest)
        .flat_map(|piece| (0..2).map(move |half| (half, piece)))
        .filter(|&(half, piece)| piece < lengths[half])
        .collect();

    let mut first: [Option<StepId>; 2] = [None; 2];
    let mut last: [Option<StepId>; 2] = [None; 2];
    let mut first_host: [Option<StepId>; 2] = [None; 2];
    // The all-to-all each half's next piece waits for.
    let mut arriving: [Option<StepId>; 2] = [None; 2];
    // The latest all-to-all issued that no piece runs beside yet: (half, work).
    let mut beside: Option<(usize, Work)> = None;
    let mut tail = None;
    for (half, piece) in order {
        let this = halves[half];
        let piece_id = piece as u16;
        let issued = host.then(|| {
            let issue = program.task(host_task(
                builder,
                group_id,
                stage,
                this.chunk,
                this.microbatch,
                this.host_issue(piece_id, true),
                iteration,
            ));
            for wait in waits.host_waits.drain(..) {
                program.depend(wait, issue, Dependency::Data);
            }
            first_host[half].get_or_insert(issue);
            issue
        });
        let compute = match beside.take() {
            Some((other, communication)) if other != half => Work::ComputeBeside {
                compute: Box::new(this.compute(piece_id)),
                beside: Box::new(communication),
            },
            unused => {
                beside = unused;
                this.compute(piece_id)
            }
        };
        let step = program.pass_piece(
            builder,
            group,
            PassPiece {
                pass: this.pass,
                chunk: this.chunk,
                microbatch: this.microbatch,
                iteration,
                layers: this.layers,
                dense_layers: this.dense_layers,
                first_layer: this.first_layer,
                embedding: this.embedding,
                head: this.head,
                fp8_weight_cast: this.fp8_weight_cast,
                segment: piece_segment(piece_id),
            },
            compute,
        );
        for send in waits.blocking_sends.drain(..) {
            program.depend(send, step, Dependency::ProgramOrder);
        }
        if let Some(issue) = issued {
            program.depend(issue, step, Dependency::Data);
            program.task(host_task(
                builder,
                group_id,
                stage,
                this.chunk,
                this.microbatch,
                this.host_issue(piece_id, false),
                iteration,
            ));
        }
        if let Some(all_to_all) = arriving[half].take() {
            program.depend(all_to_all, step, Dependency::Data);
        }
        first[half].get_or_insert(step);
        last[half] = Some(step);
        tail = Some(step);
        // The all-to-all that starts the half's next piece, issued now.
        if piece + 1 < syncs[half].len() {
            let next = piece_id + 1;
            let work = this.all_to_all(next, expert_group, expert_tensor_group);
            let call = host.then(|| {
                let call = program.task(host_task(
                    builder,
                    group_id,
                    stage,
                    this.chunk,
                    this.microbatch,
                    Work::HostCall,
                    iteration,
                ));
                // The host reads the tokens per expert before the dispatch.
                if syncs[half][piece] {
                    program.depend(step, call, Dependency::Data);
                }
                call
            });
            let interned = builder.work(work.clone());
            let all_to_all = program.task(Task {
                kind: TaskKind::ExpertAllToAll,
                stream: StreamKind::ExpertParallel,
                chunk: this.chunk as u16,
                stage,
                microbatch: this.microbatch,
                group: group_id,
                work: interned,
                iteration,
            });
            program.depend(step, all_to_all, Dependency::Data);
            if let Some(call) = call {
                program.depend(call, all_to_all, Dependency::Data);
            }
            arriving[half] = Some(all_to_all);
            beside = Some((half, work));
        }
    }
    let pick = |steps: [Option<StepId>; 2]| steps.map(|s| s.expect("each half has a piece"));
    LoweredPair {
        first: pick(first),
        last: pick(last),
        first_host,
        tail: tail.expect("a pair has pieces"),
    }
}

impl PairHalf {
    /// The half of `action` (one half of a pair, already split) on `stage`:
    /// its chunk's layers, dense layers and pipeline ends, with its virtual
    /// stage and the model index of its first layer.
    pub(super) fn of(
        scenario: &Scenario,
        sharding: &models::sharding::Sharding,
        stage: u32,
        action: &schedules::Action,
        pass: ComputePass,
    ) -> (PairHalf, u32, u64) {
        let virtual_stage = sharding.virtual_stage(stage, action.chunk);
        let layers = sharding.layers_of_chunk(scenario.model.layers, stage, action.chunk) as u32;
        let first_layer = sharding.first_layer_of_chunk(scenario.model.layers, stage, action.chunk);
        let (embedding, head) = sharding.is_end(virtual_stage);
        let dense_layers =
            models::sharding::dense_layers_in(&scenario.model, first_layer, layers as u64) as u32;
        let half = PairHalf {
            pass,
            chunk: action.chunk,
            microbatch: action.microbatch,
            layers,
            dense_layers,
            first_layer: crate::cost::work_first_layer(scenario, first_layer),
            embedding,
            head,
            fp8_weight_cast: scenario.options.precision == scenario::Precision::Fp8
                && pass == ComputePass::Forward
                && action.microbatch == 0,
        };
        (half, virtual_stage, first_layer)
    }
}
