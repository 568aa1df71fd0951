//! Lowering's first phase for Megatron-style training: schedule actions →
//! the program of one iteration.
//!
//! For every tensor-parallel group (one per stage and data-parallel index)
//! the stage's actions are walked in program order. Each action becomes, per
//! pass (recompute inserts a `Recompute` before every `Backward`, or before
//! a split backward's `InputGradient`), one
//! [`Step::Pass`](super::program::Step::Pass): a compute task per rank and
//! the pass's blocking tensor all-reduces (Megatron issues them
//! synchronously between kernels, so they occupy the compute stream; the
//! pass is split into "kernels" and "all-reduces" rather than layer by
//! layer: the sum is the same because nothing overlaps them).
//!
//! Pipeline transfers are steps on the sender's `PipelineSendNext` /
//! `PipelineSendPrevious` streams: they depend on the sender's pass and feed
//! the receiver's pass (the gradient feeds the recompute when there is one).
//! A split backward's input-gradient pass sends the gradient as a backward
//! does; its weight-gradient pass sends nothing and has no tensor all-reduce,
//! and a chunk's gradients are ready after its last weight-gradient pass.
//! Sends are blocking as in Megatron's `send_forward_recv_backward`: the
//! sender's next pass waits for its send — except under the zero-bubble
//! runtime (ZB-H1, ZB-H2, ZB-V: `ScheduleKind::sends_block`), whose sends
//! only the receiver waits for. Virtual stages sit on the ranks the
//! layout's stage map says (interleaved, or V: a send between two virtual
//! stages of one rank is a local hand-off, no transfer; DualPipe's two
//! copies: nothing is sent past a copy's last or first stage); an
//! overlapped F&B pair (DualPipe, DualPipeV) is lowered as its two passes
//! back to back, as one unit.
//! After the last action (`iteration_end.rs`), the
//! data-parallel all-reduce (when d > 1; not overlapped, as in Megatron SC21)
//! and the optimizer step follow. With `overlap_grad_reduce` the all-reduce
//! is one per chunk, after the chunk's last backward; with
//! `grad_reduce_bucket_params` that last backward is emitted as several
//! pieces of whole layers (gradient buckets), each with its own all-reduce.
//! Under context parallelism the replicas are the d·cp ranks of Megatron's
//! dp-cp group: each runs every microbatch on its s/cp tokens, and the
//! gradient reduction and the distributed optimizer span all of them.
//!
//! The code: [`program`] here loops over iterations and tensor groups and,
//! once all groups are walked, joins every transfer to the pass receiving
//! it; `stage_walk.rs` walks one tensor group's actions; `pass_lowering.rs`
//! lowers one pass (its pieces, host-sync segments and host issue);
//! `pipeline_sends.rs` an action's sends; what they share is in
//! `walk_context.rs`, and what the iteration's end reads in `end_context.rs`.

use super::end_context::StagesDone;
use super::iteration_end;
use super::post_validation::Carry;
use super::program::Program;
use super::stage_walk::lower_tensor_group;
use super::walk_context::{IterationSteps, Lowering};
use crate::plan::Plan;
use scenario::Scenario;
use taskgraph::task_graph::TaskGraphBuilder;

/// The program of one iteration of a pipeline schedule, for the first
/// `lowered_replicas` replicas: all d·cp of them, or replica 0 alone
/// ([`crate::symmetry`]; the collectives across replicas keep their whole
/// groups, so they are costed for d·cp).
pub fn program(
    scenario: &Scenario,
    plan: &Plan,
    builder: &mut TaskGraphBuilder,
    lowered_replicas: u32,
    tensor_ranks: super::program::TensorRanks,
) -> Program {
    let cx = Lowering::new(scenario, plan, lowered_replicas, tensor_ranks);
    let mut program = Program::default();
    // With optimizer post-validation (`post_validation.rs`) several
    // iterations, each stage's next one after its own optimizer step; every
    // other run lowers one.
    let iterations = if scenario.options.optimizer_post_validation {
        scenario.iterations
    } else {
        1
    };
    let mut carry: Option<Carry> = None;
    for iteration in 0..iterations {
        let iteration = iteration as u16;
        let mut steps = IterationSteps::new(&cx);
        let replica_loop = program.begin_replicas(builder);
        for data_index in 0..cx.replicas {
            for stage in 0..cx.stages {
                lower_tensor_group(
                    &cx,
                    &mut steps,
                    &mut program,
                    builder,
                    (carry.as_ref(), iteration),
                    data_index,
                    stage,
                );
            }
        }
        program.end_replicas(builder, replica_loop);
        steps.connect_receives(&mut program, cx.synchronize_after_p2p);
        steps.validation.connect(&mut program, cx.stages);

        let done = StagesDone {
            lowered_replicas,
            iteration,
            stage_tails: steps.stage_tails,
            trailing_sends: steps.trailing_sends,
            gradients_ready: steps.gradients_ready,
            chunk_finish_order: steps.chunk_finish_order,
            sharded_pieces: steps.sharded_pieces,
        };
        carry = Some(iteration_end::emit(
            &mut program,
            builder,
            scenario,
            &cx.placement,
            cx.shard_plan,
            &done,
        ));
    }
    program
}

#[cfg(test)]
#[path = "pipeline_tests.rs"]
mod tests;
