//! The output of lowering's first phase: a [`Program`], the steps of one or
//! more iterations in issue order with the dependencies between them, before
//! any task exists.
//!
//! A step is either one pass of a tensor-parallel group ([`Step::Pass`]: a
//! compute task on every tensor rank, then the pass's blocking tensor
//! all-reduces as one group task when t > 1, then its blocking
//! expert-parallel all-to-alls as one group task when ep > 1), kernels of
//! one kind on every tensor rank's compute stream ([`Step::RankKernels`]:
//! ZeRO++'s dequantization of the gathered weights before a pass), or a
//! single task on some ranks ([`Step::Task`]: a pipeline transfer, a
//! collective, an optimizer step, a PCIe copy, a CPU Adam tile). Steps are numbered in the order the ranks
//! issue them, so on every (rank, stream) the steps' tasks are already in
//! program order; [`super::edges`] turns that order into edges.
//!
//! Dependencies name steps, not tasks: "this pass waits for that transfer".
//! Which tasks they connect is decided once, in [`super::edges`], by the
//! ranks the tasks run on.

use super::passes::{task_kind, PassPiece};
use crate::placement::Placement;
use taskgraph::ids::{GroupId, Rank, WorkId};
use taskgraph::task::{StreamKind, Task, TaskKind};
use taskgraph::task_graph::{ComputePass, Dependency, TaskGraphBuilder, Work};

/// A step of a program, numbered in issue order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StepId(pub u32);

impl StepId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A tensor-parallel group, by index into [`Program::tensor_groups`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TensorGroupId(pub u32);

/// The groups a tensor-parallel group's tasks run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorGroup {
    /// The groups of a pass's compute tasks: one single-rank group per
    /// tensor rank in rank order, or the whole group once where its ranks'
    /// tasks are merged ([`TensorRanks::Merged`]).
    pub rank_groups: Vec<GroupId>,
    /// t: ranks in the group.
    pub tensor_parallel: u32,
    /// The whole tensor group (its all-reduce task).
    pub tensor_group: GroupId,
    /// Nodes the tensor group spans.
    pub nodes: u32,
    pub stage: u32,
    /// (ranks, nodes) of the expert-parallel group its first rank belongs to
    /// ((1, 1) without expert parallelism).
    pub expert_group: (u32, u32),
    /// (ranks, nodes) of the expert tensor-parallel group its first rank
    /// belongs to ((1, 1) without expert tensor parallelism).
    pub expert_tensor_group: (u32, u32),
}

impl TensorGroup {
    /// The tensor group of pipeline stage `stage` in data-parallel replica
    /// `data_index`; interns the whole group, then each rank's own group
    /// (with `tensor_ranks` [`TensorRanks::Each`]).
    pub fn new(
        builder: &mut TaskGraphBuilder,
        placement: &Placement,
        (stage, data_index): (u32, u32),
        tensor_ranks: TensorRanks,
    ) -> TensorGroup {
        let ranks = placement.tensor_group(stage, data_index);
        let tensor_group = builder.group(&ranks);
        TensorGroup {
            rank_groups: match tensor_ranks {
                TensorRanks::Each => ranks.iter().map(|&rank| builder.group(&[rank])).collect(),
                TensorRanks::Merged => vec![tensor_group],
            },
            tensor_parallel: ranks.len() as u32,
            tensor_group,
            nodes: placement.nodes_spanned(&ranks),
            stage,
            expert_group: (
                placement.layout.expert_parallel.get(),
                placement.nodes_spanned(&placement.expert_group(stage, data_index, 0)),
            ),
            expert_tensor_group: (
                placement.layout.expert_tensor_parallel.get(),
                placement.nodes_spanned(&placement.expert_tensor_group(stage, data_index, 0)),
            ),
        }
    }

    /// The compute tasks a pass of the group makes (t, or 1 merged).
    pub fn rank_tasks(&self) -> u32 {
        self.rank_groups.len() as u32
    }
}

/// How a tensor group's per-rank kernels become tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorRanks {
    /// A task per rank: every run that keeps its Timeline or its counts.
    Each,
    /// One task on the whole group standing for its ranks' tasks, which
    /// without perturbations run at the same times (`crate::summary_run`).
    Merged,
}

/// One step of a program.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A pass (or a gradient bucket of one) of a tensor group.
    Pass {
        group: TensorGroupId,
        piece: PassPiece,
        compute_work: WorkId,
        /// The pass's tensor all-reduces (t > 1).
        all_reduce_work: Option<WorkId>,
        /// The pass's expert-parallel all-to-alls (ep > 1).
        all_to_all_work: Option<WorkId>,
    },
    /// One task of `kind` doing `work` on every tensor rank of `group`, on
    /// its compute stream.
    RankKernels {
        group: TensorGroupId,
        kind: TaskKind,
        work: WorkId,
        chunk: u16,
        microbatch: u32,
        iteration: u16,
    },
    /// One task.
    Task(Task),
}

/// `to` cannot start before `from` is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepDependency {
    pub from: StepId,
    pub to: StepId,
    pub why: Dependency,
}

/// Steps in issue order and the dependencies between them.
#[derive(Debug, Default)]
pub struct Program {
    /// Added through [`Program::add_tensor_group`] alone, which keeps
    /// `pass_works` and `issue_works` one entry per group.
    tensor_groups: Vec<TensorGroup>,
    pub steps: Vec<Step>,
    pub dependencies: Vec<StepDependency>,
    /// Per tensor group, the works its passes interned so far, by what
    /// tells them apart: a pass like one before (the next microbatch's)
    /// takes their ids without hashing its works again.
    pass_works: Vec<Vec<(PassPiece, PassWorks)>>,
    /// Per tensor group, the host lane's issue works of its passes so far
    /// (first launch, the rest), by what tells them apart.
    issue_works: Vec<Vec<(IssueWorkKey, [WorkId; 2])>>,
    /// [`Work::HostCall`]'s id, once interned through [`Program::host_call_work`].
    host_call: Option<WorkId>,
}

/// What the host lane's issue of a pass segment depends on
/// ([`Work::HostIssuePass`] without `first`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IssueWorkKey {
    pub pass: ComputePass,
    pub layers: u32,
    pub dense_layers: u32,
    pub embedding: bool,
    pub head: bool,
    pub segment: u16,
}

impl IssueWorkKey {
    /// The issue of its first launch (`first`) or of the rest.
    fn work(&self, first: bool) -> Work {
        Work::HostIssuePass {
            pass: self.pass,
            layers: self.layers,
            dense_layers: self.dense_layers,
            embedding: self.embedding,
            head: self.head,
            first,
            segment: self.segment,
        }
    }
}

/// What a pass's works depend on besides its tensor group (whose size,
/// nodes and expert groups are the group's): its piece without its chunk,
/// microbatch and iteration.
fn pass_work_key(piece: &PassPiece) -> PassPiece {
    PassPiece {
        chunk: 0,
        microbatch: 0,
        iteration: 0,
        ..*piece
    }
}

/// A pass's works as [`Step::Pass`] holds them.
#[derive(Debug, Clone, Copy)]
struct PassWorks {
    compute: WorkId,
    all_reduce: Option<WorkId>,
    all_to_all: Option<WorkId>,
}

impl Program {
    /// Where a loop over the lowered replicas (`for data_index in …`)
    /// starts: under symmetry its body is one replica's copy of what full
    /// expansion repeats for every replica ([`taskgraph::replica_map`]).
    pub fn begin_replicas(&self, builder: &mut TaskGraphBuilder) -> Option<(u32, u32)> {
        let steps = self.steps.len() as u32;
        builder
            .replica_log_mut()
            .map(|log| (steps, log.interns.len() as u32))
    }

    /// Where that loop ends.
    pub fn end_replicas(&self, builder: &mut TaskGraphBuilder, begun: Option<(u32, u32)>) {
        let steps = self.steps.len() as u32;
        if let (Some(log), Some((first_step, first_intern))) = (builder.replica_log_mut(), begun) {
            let interns = log.interns.len() as u32;
            log.loops.push(taskgraph::replica_map::ReplicaLoop {
                steps: first_step..steps,
                interns: first_intern..interns,
            });
        }
    }

    pub fn add_tensor_group(&mut self, group: TensorGroup) -> TensorGroupId {
        self.tensor_groups.push(group);
        self.pass_works.push(Vec::new());
        self.issue_works.push(Vec::new());
        TensorGroupId(self.tensor_groups.len() as u32 - 1)
    }

    pub fn tensor_group(&self, id: TensorGroupId) -> &TensorGroup {
        &self.tensor_groups[id.0 as usize]
    }

    /// Appends a pass of `group` (interning its works, or taking those of
    /// the group's pass like it).
    pub fn pass(
        &mut self,
        builder: &mut TaskGraphBuilder,
        group: TensorGroupId,
        piece: PassPiece,
    ) -> StepId {
        let key = pass_work_key(&piece);
        let known = self.pass_works[group.0 as usize]
            .iter()
            .find(|(other, _)| *other == key)
            .map(|&(_, works)| works);
        let works = known.unwrap_or_else(|| {
            let works = self.intern_pass_works(builder, group, &piece);
            self.pass_works[group.0 as usize].push((key, works));
            works
        });
        self.push(Step::Pass {
            group,
            piece,
            compute_work: works.compute,
            all_reduce_work: works.all_reduce,
            all_to_all_work: works.all_to_all,
        })
    }

    /// The host lane's works issuing a pass segment of `group` (first
    /// launch, the rest), interned in that order the first time.
    pub fn issue_works(
        &mut self,
        builder: &mut TaskGraphBuilder,
        group: TensorGroupId,
        key: IssueWorkKey,
    ) -> [WorkId; 2] {
        let known = &mut self.issue_works[group.0 as usize];
        if let Some(&(_, works)) = known.iter().find(|(other, _)| *other == key) {
            return works;
        }
        let works = [builder.work(key.work(true)), builder.work(key.work(false))];
        known.push((key, works));
        works
    }

    /// [`Work::HostCall`] (the host's call of a collective or a send),
    /// interned the first time.
    pub fn host_call_work(&mut self, builder: &mut TaskGraphBuilder) -> WorkId {
        *self
            .host_call
            .get_or_insert_with(|| builder.work(Work::HostCall))
    }

    /// The works of a pass of `group`, interned in this order: its
    /// computation, its tensor all-reduces, its expert all-to-alls.
    fn intern_pass_works(
        &self,
        builder: &mut TaskGraphBuilder,
        group: TensorGroupId,
        piece: &PassPiece,
    ) -> PassWorks {
        let tensor_group = self.tensor_group(group);
        let (t, nodes) = (tensor_group.tensor_parallel, tensor_group.nodes);
        let compute = builder.work(Work::Compute {
            pass: piece.pass,
            layers: piece.layers,
            dense_layers: piece.dense_layers,
            first_layer: piece.first_layer,
            embedding: piece.embedding,
            head: piece.head,
            fp8_weight_cast: piece.fp8_weight_cast,
            segment: piece.segment,
        });
        let all_reduce = tensor_all_reduce_work(builder, piece, t, nodes);
        let (expert_group, expert_tensor_group) =
            (tensor_group.expert_group, tensor_group.expert_tensor_group);
        // A forward (or recompute) cut at host synchronizations has no
        // all-to-all in its segment 0: a MoE layer's dispatch follows its sync.
        let before_first_sync = piece.segment == 0
            && matches!(piece.pass, ComputePass::Forward | ComputePass::Recompute);
        let all_to_all = ((expert_group.0 > 1 || expert_tensor_group.0 > 1)
            && piece.pass != ComputePass::WeightGradient
            && !before_first_sync)
            .then(|| {
                builder.work(Work::ExpertAllToAll {
                    pass: piece.pass,
                    layers: piece.layers,
                    dense_layers: piece.dense_layers,
                    first_layer: piece.first_layer,
                    embedding: piece.embedding,
                    head: piece.head,
                    group_size: expert_group.0,
                    nodes: expert_group.1,
                    expert_tensor_group,
                    segment: piece.segment,
                })
            });
        PassWorks {
            compute,
            all_reduce,
            all_to_all,
        }
    }

    /// Appends a piece of a pass whose computation is `compute` (a
    /// [`Work::Compute`], or one run beside communication) with the piece's
    /// tensor all-reduces and no expert all-to-all: the overlapped F&B
    /// pair's pieces, whose all-to-alls are tasks of their own
    /// (`pair_overlap.rs`).
    pub fn pass_piece(
        &mut self,
        builder: &mut TaskGraphBuilder,
        group: TensorGroupId,
        piece: PassPiece,
        compute: Work,
    ) -> StepId {
        let tensor_group = self.tensor_group(group);
        let (t, nodes) = (tensor_group.tensor_parallel, tensor_group.nodes);
        let compute_work = builder.work(compute);
        let all_reduce_work = tensor_all_reduce_work(builder, &piece, t, nodes);
        self.push(Step::Pass {
            group,
            piece,
            compute_work,
            all_reduce_work,
            all_to_all_work: None,
        })
    }

    /// Appends `work`, a task of `kind` on every tensor rank of `group`'s
    /// compute stream, in `action`'s chunk and microbatch.
    pub fn rank_kernels(
        &mut self,
        builder: &mut TaskGraphBuilder,
        group: TensorGroupId,
        (kind, work): (TaskKind, Work),
        action: schedules::Action,
        iteration: u16,
    ) -> StepId {
        let work = builder.work(work);
        self.push(Step::RankKernels {
            group,
            kind,
            work,
            chunk: action.chunk as u16,
            microbatch: action.microbatch,
            iteration,
        })
    }

    /// Appends a single task.
    pub fn task(&mut self, task: Task) -> StepId {
        self.push(Step::Task(task))
    }

    /// Appends a task on one rank (interning its group and work).
    #[allow(clippy::too_many_arguments)]
    pub fn rank_task(
        &mut self,
        builder: &mut TaskGraphBuilder,
        rank: Rank,
        kind: TaskKind,
        stream: StreamKind,
        work: Work,
        stage: u32,
        microbatch: u32,
        iteration: u16,
    ) -> StepId {
        let group = builder.group(&[rank]);
        let work = builder.work(work);
        self.task(Task {
            kind,
            stream,
            chunk: 0,
            stage,
            microbatch,
            group,
            work,
            iteration,
        })
    }

    fn push(&mut self, step: Step) -> StepId {
        self.steps.push(step);
        StepId(self.steps.len() as u32 - 1)
    }

    /// `to` waits for `from`.
    pub fn depend(&mut self, from: StepId, to: StepId, why: Dependency) {
        self.dependencies.push(StepDependency { from, to, why });
    }

    /// How many tasks the program's steps become.
    pub fn task_count(&self) -> usize {
        self.steps
            .iter()
            .map(|step| match step {
                Step::Pass {
                    group,
                    all_reduce_work,
                    all_to_all_work,
                    ..
                } => {
                    self.tensor_group(*group).rank_tasks() as usize
                        + all_reduce_work.is_some() as usize
                        + all_to_all_work.is_some() as usize
                }
                Step::RankKernels { group, .. } => self.tensor_group(*group).rank_tasks() as usize,
                Step::Task(_) => 1,
            })
            .sum()
    }

    /// Steps of a tensor group's per-rank tasks (passes and per-rank
    /// kernels): one task each when its ranks are merged.
    pub fn rank_task_steps(&self) -> usize {
        self.steps
            .iter()
            .filter(|step| matches!(step, Step::Pass { .. } | Step::RankKernels { .. }))
            .count()
    }

    /// The kind of task a step's first task is (for descriptions and tests).
    pub fn first_kind(&self, step: StepId) -> TaskKind {
        match &self.steps[step.index()] {
            Step::Pass { piece, .. } => task_kind(piece.pass),
            Step::RankKernels { kind, .. } => *kind,
            Step::Task(task) => task.kind,
        }
    }
}

/// The tensor all-reduce work of `piece` over a group of `t` ranks on
/// `nodes` nodes (None at t = 1, and for a weight-gradient pass, whose
/// backward all-reduces belong to its input gradient).
fn tensor_all_reduce_work(
    builder: &mut TaskGraphBuilder,
    piece: &PassPiece,
    t: u32,
    nodes: u32,
) -> Option<WorkId> {
    (t > 1 && piece.pass != ComputePass::WeightGradient).then(|| {
        builder.work(Work::TensorAllReduce {
            pass: piece.pass,
            layers: piece.layers,
            dense_layers: piece.dense_layers,
            first_layer: piece.first_layer,
            embedding: piece.embedding,
            head: piece.head,
            group_size: t,
            nodes,
            segment: piece.segment,
        })
    })
}
