//! What the host thread pays to issue work, from the stack's host costs:
//! kernels and collective calls of a pass counted from the same kernel list
//! the GPU cost uses ([`super::pass_steps`]), so the host issues exactly
//! what the GPU runs.

use super::WorkCost;
use models::ops::Step;
use scenario::Scenario;
use taskgraph::task_graph::Work;
use timeline::time::SimDuration;

/// The host time of a host work (zero without host costs).
pub fn host_cost(scenario: &Scenario, work: &Work) -> WorkCost {
    let Some(host) = scenario.stack.host else {
        return WorkCost {
            duration: SimDuration::ZERO,
            bytes: 0,
            flops: 0.0,
        };
    };
    let nanoseconds = match *work {
        Work::HostIssuePass {
            pass,
            layers,
            dense_layers,
            embedding,
            head,
            first,
            segment,
        } => {
            let (kernels, mut calls, all_to_alls) = issued(
                scenario,
                pass,
                layers,
                dense_layers,
                embedding,
                head,
                segment,
            );
            // With one tensor rank Megatron's all-reduce returns without a call.
            if scenario.layout.tensor_parallel.get() == 1 {
                calls = 0;
            }
            // A MoE layer's dispatch and combine are one `all_to_all_single`
            // call each over the expert-parallel group (none when ep = 1).
            // An overlapped pair's pieces issue theirs as tasks of their
            // own (`Work::HostCall`, `lowering/pair_overlap.rs`).
            if scenario.layout.expert_parallel.get() > 1
                && super::pair_overlap::piece_of(segment).is_none()
            {
                calls += all_to_alls;
            }
            if first {
                host.kernel_issue_ns * kernels.min(1)
            } else {
                host.kernel_issue_ns * kernels.saturating_sub(1) + host.collective_call_ns * calls
            }
        }
        Work::HostCall => host.collective_call_ns,
        Work::HostOptimizer => host.kernel_issue_ns * host.optimizer_kernels as u64,
        _ => 0,
    };
    WorkCost {
        duration: SimDuration(nanoseconds),
        bytes: 0,
        flops: 0.0,
    }
}

/// Kernels, tensor all-reduce calls and expert all-to-all calls of one
/// segment of a pass (every per-expert GEMM and quantization kernel is a
/// kernel issued: [`models::moe_ops`]).
#[allow(clippy::too_many_arguments)]
fn issued(
    scenario: &Scenario,
    pass: taskgraph::task_graph::ComputePass,
    layers: u32,
    dense_layers: u32,
    embedding: bool,
    head: bool,
    segment: u16,
) -> (u64, u64, u64) {
    super::segment_steps(
        super::pass_steps_of(scenario, pass, layers, dense_layers, embedding, head),
        segment,
    )
    .iter()
    .fold(
        (0, 0, 0),
        |(kernels, calls, all_to_alls), step| match step {
            Step::Kernel(_) => (kernels + 1, calls, all_to_alls),
            Step::TensorAllReduce { .. } => (kernels, calls + 1, all_to_alls),
            Step::ExpertAllToAll { .. } => (kernels, calls, all_to_alls + 1),
            Step::HostSync => (kernels, calls, all_to_alls),
        },
    )
}
