//! Lowering's second phase: every step of a [`Program`] becomes its tasks,
//! in step order, so task ids follow issue order. Each step's tasks are
//! remembered as two [`TaskRange`]s: the tasks that wait for the step's
//! predecessors (its head) and the tasks its successors wait for (its tail).
//! A pass's head is its per-rank compute tasks and its tail the tensor
//! all-reduce when there is one; per-rank kernels and a single task are
//! both.

use super::passes::task_kind;
use super::program::{Program, Step};
use taskgraph::ids::TaskId;
use taskgraph::task::{StreamKind, Task, TaskKind};
use taskgraph::task_graph::TaskGraphBuilder;

/// Consecutive task ids `first .. first + len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRange {
    first: TaskId,
    len: u32,
}

impl TaskRange {
    /// One task.
    pub fn single(id: TaskId) -> TaskRange {
        TaskRange { first: id, len: 1 }
    }

    /// `len` consecutive tasks from `first` (`len` ≥ 1).
    pub fn new(first: TaskId, len: u32) -> TaskRange {
        debug_assert!(len >= 1);
        TaskRange { first, len }
    }

    /// The range's first task.
    pub fn first(self) -> TaskId {
        self.first
    }

    pub fn len(self) -> u32 {
        self.len
    }

    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The `index`-th task of the range.
    pub fn get(self, index: u32) -> TaskId {
        assert!(index < self.len, "task {index} of a range of {}", self.len);
        TaskId(self.first.0 + index)
    }

    pub fn iter(self) -> impl Iterator<Item = TaskId> {
        (self.first.0..self.first.0 + self.len).map(TaskId)
    }
}

/// Where a step's tasks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepTasks {
    /// The tasks that wait for the step's predecessors.
    pub head: TaskRange,
    /// The tasks the step's successors wait for.
    pub tail: TaskRange,
}

/// Adds every step's tasks to `builder`, in step order.
pub fn emit(program: &Program, builder: &mut TaskGraphBuilder) -> Vec<StepTasks> {
    program
        .steps
        .iter()
        .map(|step| match step {
            Step::Task(task) => {
                let id = builder.add_task(*task);
                StepTasks {
                    head: TaskRange::single(id),
                    tail: TaskRange::single(id),
                }
            }
            Step::Pass {
                group,
                piece,
                compute_work,
                all_reduce_work,
                all_to_all_work,
            } => {
                let group = program.tensor_group(*group);
                assert!(!group.rank_groups.is_empty(), "tensor groups are non-empty");
                let first = builder.add_task_per_group(
                    Task {
                        kind: task_kind(piece.pass),
                        stream: StreamKind::Compute,
                        chunk: piece.chunk as u16,
                        stage: group.stage,
                        microbatch: piece.microbatch,
                        group: group.rank_groups[0],
                        work: *compute_work,
                        iteration: piece.iteration,
                    },
                    &group.rank_groups,
                );
                let head = TaskRange::new(first, group.rank_tasks());
                let mut tail = head;
                // The pass's blocking collectives, on the compute stream after
                // its kernels: tensor all-reduces, then expert all-to-alls.
                for (kind, work) in [
                    (TaskKind::TensorAllReduce, all_reduce_work),
                    (TaskKind::ExpertAllToAll, all_to_all_work),
                ] {
                    if let Some(work) = work {
                        tail = TaskRange::single(builder.add_task(Task {
                            kind,
                            stream: StreamKind::Compute,
                            chunk: piece.chunk as u16,
                            stage: group.stage,
                            microbatch: piece.microbatch,
                            group: group.tensor_group,
                            work: *work,
                            iteration: piece.iteration,
                        }));
                    }
                }
                StepTasks { head, tail }
            }
            &Step::RankKernels {
                group,
                kind,
                work,
                chunk,
                microbatch,
                iteration,
            } => {
                let group = program.tensor_group(group);
                let first = builder.add_task_per_group(
                    Task {
                        kind,
                        stream: StreamKind::Compute,
                        chunk,
                        stage: group.stage,
                        microbatch,
                        group: group.rank_groups[0],
                        work,
                        iteration,
                    },
                    &group.rank_groups,
                );
                let tasks = TaskRange::new(first, group.rank_tasks());
                StepTasks {
                    head: tasks,
                    tail: tasks,
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_names_its_tasks_and_refuses_to_run_past_its_end() {
        let range = TaskRange::new(TaskId(10), 3);
        assert_eq!(
            range.iter().collect::<Vec<_>>(),
            [TaskId(10), TaskId(11), TaskId(12)]
        );
        assert_eq!(range.get(2), TaskId(12));
        assert!(std::panic::catch_unwind(|| range.get(3)).is_err());
        assert_eq!(TaskRange::single(TaskId(4)).iter().count(), 1);
    }

    #[test]
    fn a_pass_of_a_tensor_group_is_a_task_per_rank_then_its_all_reduce() {
        let scenario = scenario::ScenarioFile::tiny_example().resolve().unwrap();
        let placement = crate::placement::Placement::new(scenario.layout, 8);
        let mut builder = TaskGraphBuilder::default();
        let mut program = Program::default();
        let group = program.add_tensor_group(super::super::program::TensorGroup::new(
            &mut builder,
            &placement,
            (1, 0),
            super::super::program::TensorRanks::Each,
        ));
        let piece = super::super::passes::PassPiece {
            pass: taskgraph::task_graph::ComputePass::Backward,
            chunk: 0,
            microbatch: 3,
            iteration: 0,
            layers: 2,
            dense_layers: 0,
            first_layer: 0,
            embedding: false,
            head: false,
            fp8_weight_cast: false,
            segment: taskgraph::task_graph::WHOLE_PASS,
        };
        program.pass(&mut builder, group, piece);
        let steps = emit(&program, &mut builder);
        assert_eq!(steps[0].head, TaskRange::new(TaskId(0), 2));
        assert_eq!(steps[0].tail, TaskRange::single(TaskId(2)));
        let kinds: Vec<TaskKind> = (0..3).map(|i| builder.task(TaskId(i)).kind).collect();
        assert_eq!(
            kinds,
            [
                TaskKind::Backward,
                TaskKind::Backward,
                TaskKind::TensorAllReduce
            ]
        );
        assert_eq!(program.task_count(), 3);
    }
}
