//! One rank's busy seconds per iteration in each class of task: its compute
//! kernels (forward, recompute, backward, optimizer, gradient copies) and
//! the tensor-parallel, pipeline and data-parallel communication it takes
//! part in, each task counted whole (busy time, not exposed time; tasks on
//! different streams add up). The same sums of a measured Timeline (from
//! `clustersim execute`) and of a simulated one are what `clustersim fit`
//! compares class by class (`clustersim import-trace` of a Timeline).

use crate::{CommClass, Timeline};

/// Seconds per iteration one rank spends in each class of task.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RankClassSeconds {
    /// Compute tasks ([`crate::TaskKind::is_compute`]).
    pub compute: f64,
    /// Tensor-parallel collectives.
    pub tensor: f64,
    /// Pipeline transfers (activations, gradients, norm exchanges).
    pub pipeline: f64,
    /// Data-parallel reductions and gathers, the embedding's all-reduce.
    pub data_parallel: f64,
}

impl Timeline {
    /// What `rank` spends per iteration in each class of task: the tasks
    /// whose group holds it, summed by class and divided by the iterations
    /// recorded.
    pub fn rank_class_seconds(&self, rank: u32) -> RankClassSeconds {
        let holds: Vec<bool> = self
            .header
            .groups
            .iter()
            .map(|ranks| ranks.contains(&rank))
            .collect();
        // Nanoseconds per class (compute, tensor, pipeline, data-parallel),
        // summed exactly before one division.
        let mut total_ns = [0u128; 4];
        for task in &self.tasks {
            if !holds.get(task.group as usize).copied().unwrap_or(false) {
                continue;
            }
            let class = if task.kind.is_compute() {
                0
            } else {
                match task.kind.communication_class() {
                    Some(CommClass::Tensor) => 1,
                    Some(CommClass::Pipeline) => 2,
                    Some(CommClass::DataParallel) => 3,
                    _ => continue,
                }
            };
            total_ns[class] += u128::from(task.end_ns - task.start_ns);
        }
        let iterations = self.iteration_ends_ns().len() as f64;
        let per_iteration = |ns: u128| ns as f64 * 1e-9 / iterations;
        RankClassSeconds {
            compute: per_iteration(total_ns[0]),
            tensor: per_iteration(total_ns[1]),
            pipeline: per_iteration(total_ns[2]),
            data_parallel: per_iteration(total_ns[3]),
        }
    }

    /// The iteration time in seconds as the metrics take it: the
    /// steady-state window's span ([`crate::metrics::steady_window_ns`]).
    pub fn steady_iteration_s(&self) -> f64 {
        let (start, end) = crate::metrics::steady_window_ns(&self.iteration_ends_ns());
        (end - start) as f64 * 1e-9
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        Producer, StreamKind, TaskKind, TaskRecord, Timeline, TimelineHeader, TimelineLayout,
        TIMELINE_FORMAT_VERSION,
    };

    fn task(id: u32, kind: TaskKind, group: u32, iteration: u32, span: (u64, u64)) -> TaskRecord {
        TaskRecord {
            id,
            kind,
            stream: StreamKind::Compute,
            group,
            stage: 0,
            chunk: 0,
            microbatch: Some(0),
            start_ns: span.0,
            end_ns: span.1,
            bytes: 0,
            flops: 0.0,
            iteration: Some(iteration),
        }
    }

    /// Two ranks of one tensor group over two iterations: groups 0 = {0},
    /// 1 = {1}, 2 = {0, 1}.
    fn two_ranks(tasks: Vec<TaskRecord>) -> Timeline {
        Timeline {
            header: TimelineHeader {
                format_version: TIMELINE_FORMAT_VERSION,
                producer: Producer::Executor,
                executor_mode: Some("real".into()),
                scenario: serde_json::json!({}),
                profile_id: "test".to_string(),
                seed: 0,
                n_gpus: 2,
                layout: TimelineLayout {
                    tensor_parallel: 2,
                    pipeline_parallel: 1,
                    data_parallel: 1,
                    context_parallel: 1,
                    chunks: 1,
                    microbatches: 1,
                    microbatch_size: 1,
                    global_batch: 1,
                    gpus_per_node: 2,
                },
                groups: vec![vec![0], vec![1], vec![0, 1]],
            },
            tasks,
        }
    }

    #[test]
    fn a_rank_s_tasks_are_summed_by_class_per_iteration() {
        let timeline = two_ranks(vec![
            task(0, TaskKind::Forward, 0, 0, (0, 1_000)),
            task(1, TaskKind::Forward, 1, 0, (0, 5_000)),
            task(2, TaskKind::TensorAllReduce, 2, 0, (1_000, 1_500)),
            task(3, TaskKind::Backward, 0, 1, (5_000, 7_000)),
            task(4, TaskKind::DataParallelAllReduce, 2, 1, (7_000, 7_400)),
            task(5, TaskKind::HostIssue, 0, 1, (5_000, 5_100)),
            task(6, TaskKind::PipelineActivation, 2, 1, (7_400, 8_000)),
        ]);
        timeline.check("two ranks").unwrap();
        let rank_0 = timeline.rank_class_seconds(0);
        assert_eq!(rank_0.compute, 3_000.0 * 1e-9 / 2.0);
        assert_eq!(rank_0.tensor, 500.0 * 1e-9 / 2.0);
        assert_eq!(rank_0.data_parallel, 400.0 * 1e-9 / 2.0);
        assert_eq!(rank_0.pipeline, 600.0 * 1e-9 / 2.0);
        assert_eq!(timeline.rank_class_seconds(1).compute, 5_000.0 * 1e-9 / 2.0);
        // Two iterations: the second's span, from the first's end.
        assert_eq!(timeline.steady_iteration_s(), (8_000.0 - 5_000.0) * 1e-9);
    }
}
