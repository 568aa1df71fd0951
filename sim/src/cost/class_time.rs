//! The GPU time one rank spends in each kernel class per iteration: what a
//! profiler trace of that rank measures directly (`clustersim import-trace`),
//! so that a fit learns each class's rate from its own kernels rather than
//! from a whole iteration's time. Kernels only: communication, the exposed
//! ring-attention exchanges and host time are not counted; kernels on
//! different streams add up (busy time, not wall time).

use super::{compute_steps, KernelCostModel};
use models::ops::{KernelClass, Step};
use scenario::Scenario;
use taskgraph::ids::{Rank, TaskId};
use taskgraph::task_graph::{TaskGraph, Work};

/// Seconds per iteration in each kernel class.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KernelClassSeconds {
    /// Matrix multiplies (bf16/fp16 and FP8).
    pub gemm: f64,
    /// The fused attention kernel (unfused attention's GEMMs count as GEMMs,
    /// its softmax and dropout as memory-bound).
    pub attention: f64,
    /// Elementwise, normalization, softmax, casts, the optimizer step.
    pub memory_bound: f64,
}

impl KernelClassSeconds {
    fn add(&mut self, other: KernelClassSeconds, times: f64) {
        self.gemm += other.gemm * times;
        self.attention += other.attention * times;
        self.memory_bound += other.memory_bound * times;
    }
}

/// What `rank` runs of `graph`'s compute works, by kernel class, per
/// simulated iteration.
pub fn kernel_class_seconds(
    scenario: &Scenario,
    graph: &TaskGraph,
    rank: u32,
) -> KernelClassSeconds {
    let kernels = KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
        .with_precision(scenario.options.precision);
    // How many of the rank's tasks run each work: each work is priced once.
    let mut runs = vec![0u32; graph.works().len()];
    for (index, &work) in graph.task_works().iter().enumerate() {
        let group = graph.group_of(TaskId(index as u32));
        if graph.group_ranks(group).contains(&Rank(rank)) {
            runs[work.index()] += 1;
        }
    }
    let mut total = KernelClassSeconds::default();
    for (work, &count) in graph.works().iter().zip(&runs) {
        if count == 0 {
            continue;
        }
        // A computation beside a communication (DualPipe's overlapped pairs)
        // runs the computation's kernels.
        let computed = match work {
            Work::ComputeBeside { compute, .. } => compute,
            other => other,
        };
        let Some(steps) = compute_steps(scenario, computed) else {
            continue;
        };
        let mut one = KernelClassSeconds::default();
        for step in &steps {
            if let Step::Kernel(kernel) = step {
                let seconds = kernels.kernel_seconds(kernel);
                match kernel.class {
                    KernelClass::Gemm { .. } | KernelClass::Fp8Gemm { .. } => one.gemm += seconds,
                    KernelClass::FusedAttention(_) => one.attention += seconds,
                    KernelClass::MemoryBound => one.memory_bound += seconds,
                }
            }
        }
        total.add(one, count as f64);
    }
    let mut per_iteration = KernelClassSeconds::default();
    per_iteration.add(total, 1.0 / f64::from(scenario.iterations));
    per_iteration
}
