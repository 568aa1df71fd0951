//! Lowering's third phase: the edges, from two rules.
//!
//! 1. **Program order.** On every rank, consecutive tasks of one stream are
//!    joined by a `ProgramOrder` edge. Task ids follow issue order
//!    ([`super::tasks`]), so walking tasks by id and remembering the last
//!    task of each (rank, stream) gives exactly the stream order: a stream
//!    never runs two tasks at once and the engine needs no resource queues.
//!    A group task (a tensor all-reduce, a pipeline transfer, a collective)
//!    occupies the stream on each of its ranks, so it follows the last task
//!    of every one of them, once each.
//! 2. **Dependencies between steps.** A [`StepDependency`] joins the tail
//!    tasks of one step to the head tasks of another: each pair that runs on
//!    a common rank (a rank waits for its own part of the previous step: the
//!    bucket's gradients of *its* tensor rank feed *its* data-parallel
//!    all-reduce), or, when the two steps share no rank at all (a transfer
//!    from another stage), every pair.

use super::program::StepDependency;
use super::tasks::StepTasks;
use taskgraph::ids::{GroupId, Rank, TaskId};
use taskgraph::task::StreamKind;
use taskgraph::task_graph::{Dependency, TaskGraphBuilder};

/// Adds the program-order edges, then the dependencies' edges.
///
/// With a `representative` (the graph of replica 0 alone, [`crate::symmetry`])
/// program order is kept on its ranks only: a collective over several
/// replicas follows the representative's own tasks, whose twins on the other
/// replicas' ranks end at the same times.
pub fn connect(
    dependencies: &[StepDependency],
    steps: &[StepTasks],
    builder: &mut TaskGraphBuilder,
    representative: Option<crate::symmetry::Representative>,
) {
    let sorted_groups = GroupRanks::sorted(builder, |_| true);
    match representative {
        None => program_order(builder, &sorted_groups),
        Some(representative) => {
            let own = GroupRanks::sorted(builder, |rank| representative.contains(rank));
            program_order(builder, &own);
        }
    }
    let mut scratch = Scratch::default();
    for dependency in dependencies {
        connect_steps(builder, &sorted_groups, steps, dependency, &mut scratch);
    }
}

/// Every interned group's ranks (those a filter keeps), sorted, in one
/// array: group `g` is `ranks[offsets[g] .. offsets[g + 1]]`.
struct GroupRanks {
    offsets: Vec<u32>,
    ranks: Vec<Rank>,
}

impl GroupRanks {
    fn sorted(builder: &TaskGraphBuilder, keep: impl Fn(Rank) -> bool) -> GroupRanks {
        let count = builder.group_count();
        let mut offsets = Vec::with_capacity(count + 1);
        offsets.push(0u32);
        let mut ranks = Vec::new();
        for index in 0..count {
            let start = ranks.len();
            ranks.extend(
                builder
                    .group_ranks(GroupId(index as u32))
                    .iter()
                    .copied()
                    .filter(|&rank| keep(rank)),
            );
            ranks[start..].sort_unstable();
            offsets.push(u32::try_from(ranks.len()).expect("group ranks fit 32-bit offsets"));
        }
        GroupRanks { offsets, ranks }
    }

    /// The ranks of `group`, sorted.
    #[inline]
    fn of(&self, group: GroupId) -> &[Rank] {
        let index = group.index();
        &self.ranks[self.offsets[index] as usize..self.offsets[index + 1] as usize]
    }

    /// One more than the highest rank (0 without ranks).
    fn rank_bound(&self) -> usize {
        self.ranks
            .iter()
            .map(|rank| rank.index() + 1)
            .max()
            .unwrap_or(0)
    }
}

/// Buffers [`connect_steps`] reuses from one dependency to the next.
#[derive(Default)]
struct Scratch {
    /// The (source, target) pairs that share a rank, in edge order.
    pairs: Vec<(TaskId, TaskId)>,
    /// (rank, source position) for every rank of every source, sorted.
    by_rank: Vec<(Rank, u32)>,
    /// Positions of the sources sharing a rank with one target.
    hits: Vec<u32>,
}

/// Above this many (source, target) pairs a dependency finds the sharing
/// pairs through its sources' ranks instead of testing every pair: the
/// index costs a sort of the sources' ranks, which a handful of pairs
/// (a pass after a pass: t × 1 or 1 × t) does not repay.
const PAIRS_TESTED_ONE_BY_ONE: u32 = 64;

/// Rule 1: consecutive tasks of each (rank, stream) in id order.
fn program_order(builder: &mut TaskGraphBuilder, groups: &GroupRanks) {
    let streams = StreamKind::ALL.len();
    let mut last_on_stream: Vec<Option<TaskId>> = vec![None; groups.rank_bound() * streams];
    let mut previous: Vec<TaskId> = Vec::new();
    for index in 0..builder.task_count() {
        let id = TaskId(index as u32);
        let stream = builder.task_stream(id).index();
        let ranks = groups.of(builder.task_group(id));
        if let [rank] = ranks {
            // One rank (most tasks): at most one task before it.
            let slot = rank.index() * streams + stream;
            if let Some(before) = last_on_stream[slot].replace(id) {
                builder.add_edge(before, id, Dependency::ProgramOrder);
            }
            continue;
        }
        previous.clear();
        for rank in ranks {
            let slot = rank.index() * streams + stream;
            if let Some(before) = last_on_stream[slot].replace(id) {
                // A group task before it is met once per rank it shares,
                // mostly in a row.
                if previous.last() != Some(&before) {
                    previous.push(before);
                }
            }
        }
        // Each predecessor once. Sorting changes no CSR row: these edges
        // all have different sources, so each goes to a row of its own.
        if previous.len() > 1 {
            previous.sort_unstable();
            previous.dedup();
        }
        for &before in &previous {
            builder.add_edge(before, id, Dependency::ProgramOrder);
        }
    }
}

/// Rule 2: one dependency between steps as edges between their tasks, for
/// each target in order the sources in order: the pairs that share a rank,
/// or every pair when none does.
fn connect_steps(
    builder: &mut TaskGraphBuilder,
    groups: &GroupRanks,
    steps: &[StepTasks],
    dependency: &StepDependency,
    scratch: &mut Scratch,
) {
    let sources = steps[dependency.from.index()].tail;
    let targets = steps[dependency.to.index()].head;
    if sources.len() == 1 && targets.len() == 1 {
        // The one pair, whether or not its tasks share a rank.
        builder.add_edge(sources.first(), targets.first(), dependency.why);
        return;
    }
    let ranks = |id: TaskId| groups.of(builder.task_group(id));
    let pairs = &mut scratch.pairs;
    pairs.clear();
    if sources.len().saturating_mul(targets.len()) <= PAIRS_TESTED_ONE_BY_ONE {
        for target in targets.iter() {
            let target_ranks = ranks(target);
            for source in sources.iter() {
                if share_a_rank(ranks(source), target_ranks) {
                    pairs.push((source, target));
                }
            }
        }
    } else {
        let by_rank = &mut scratch.by_rank;
        by_rank.clear();
        for (position, source) in sources.iter().enumerate() {
            by_rank.extend(ranks(source).iter().map(|&rank| (rank, position as u32)));
        }
        by_rank.sort_unstable();
        for target in targets.iter() {
            let hits = &mut scratch.hits;
            hits.clear();
            for &rank in ranks(target) {
                let first = by_rank.partition_point(|&(other, _)| other < rank);
                hits.extend(
                    by_rank[first..]
                        .iter()
                        .take_while(|&&(other, _)| other == rank)
                        .map(|&(_, position)| position),
                );
            }
            hits.sort_unstable();
            hits.dedup();
            pairs.extend(hits.iter().map(|&position| (sources.get(position), target)));
        }
    }
    if pairs.is_empty() {
        for target in targets.iter() {
            for source in sources.iter() {
                builder.add_edge(source, target, dependency.why);
            }
        }
    } else {
        for &(source, target) in pairs.iter() {
            builder.add_edge(source, target, dependency.why);
        }
    }
}

/// Whether two sorted rank lists have a rank in common.
fn share_a_rank(a: &[Rank], b: &[Rank]) -> bool {
    // Disjoint spans (another stage's ranks, most often) share nothing.
    match (a.first(), a.last(), b.first(), b.last()) {
        (Some(a_first), Some(a_last), Some(b_first), Some(b_last))
            if a_last >= b_first && b_last >= a_first => {}
        _ => return false,
    }
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    small.iter().any(|rank| large.binary_search(rank).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgraph::ids::WorkId;
    use taskgraph::task::{Task, TaskKind};
    use taskgraph::task_graph::Work;

    fn task(builder: &mut TaskGraphBuilder, ranks: &[u32], stream: StreamKind) -> TaskId {
        let ranks: Vec<Rank> = ranks.iter().map(|&r| Rank(r)).collect();
        let group = builder.group(&ranks);
        let work: WorkId = builder.work(Work::OptimizerStep { params: 1 });
        builder.add_task(Task {
            kind: TaskKind::Forward,
            stream,
            chunk: 0,
            stage: 0,
            microbatch: 0,
            iteration: 0,
            group,
            work,
        })
    }

    fn edges(builder: TaskGraphBuilder) -> Vec<(u32, u32)> {
        let graph = builder.finish(4);
        let mut edges: Vec<(u32, u32)> =
            graph.edges().map(|(from, to, _)| (from.0, to.0)).collect();
        edges.sort_unstable();
        edges
    }

    #[test]
    fn a_group_task_follows_each_rank_once_and_precedes_each_rank() {
        let mut builder = TaskGraphBuilder::default();
        let c0 = task(&mut builder, &[0], StreamKind::Compute);
        let c1 = task(&mut builder, &[1], StreamKind::Compute);
        let all_reduce = task(&mut builder, &[0, 1], StreamKind::Compute);
        let next0 = task(&mut builder, &[0], StreamKind::Compute);
        let send = task(&mut builder, &[0, 1], StreamKind::PipelineSendNext);
        let send_again = task(&mut builder, &[0, 1], StreamKind::PipelineSendNext);
        let groups = GroupRanks::sorted(&builder, |_| true);
        program_order(&mut builder, &groups);
        assert_eq!(
            edges(builder),
            [
                (c0.0, all_reduce.0),
                (c1.0, all_reduce.0),
                (all_reduce.0, next0.0),
                (send.0, send_again.0)
            ]
        );
    }

    #[test]
    fn shared_ranks_pair_up_and_disjoint_steps_connect_every_pair() {
        assert!(share_a_rank(
            &[Rank(1), Rank(5)],
            &[Rank(0), Rank(5), Rank(9)]
        ));
        assert!(!share_a_rank(&[Rank(1), Rank(2)], &[Rank(3)]));
        // Spans that overlap without a common rank.
        assert!(!share_a_rank(&[Rank(1), Rank(5)], &[Rank(2), Rank(3)]));
        assert!(share_a_rank(&[Rank(3)], &[Rank(2), Rank(3)]));
        assert!(!share_a_rank(&[], &[Rank(2)]));
        let mut builder = TaskGraphBuilder::default();
        // Two ranks' compute tasks, a data-parallel collective over ranks
        // {1, 3}, and a transfer to another stage's ranks {2, 3}.
        let c0 = task(&mut builder, &[0], StreamKind::Compute);
        let c1 = task(&mut builder, &[1], StreamKind::Compute);
        let collective = task(&mut builder, &[1, 3], StreamKind::DataParallel);
        let receiver2 = task(&mut builder, &[2], StreamKind::Compute);
        let receiver3 = task(&mut builder, &[3], StreamKind::Compute);
        let groups = GroupRanks::sorted(&builder, |_| true);
        let steps = [
            StepTasks {
                head: super::super::tasks::TaskRange::new(c0, 2),
                tail: super::super::tasks::TaskRange::new(c0, 2),
            },
            StepTasks {
                head: super::super::tasks::TaskRange::single(collective),
                tail: super::super::tasks::TaskRange::single(collective),
            },
            StepTasks {
                head: super::super::tasks::TaskRange::new(receiver2, 2),
                tail: super::super::tasks::TaskRange::new(receiver2, 2),
            },
        ];
        let dependency = |from, to| StepDependency {
            from: super::super::program::StepId(from),
            to: super::super::program::StepId(to),
            why: Dependency::Data,
        };
        let mut scratch = Scratch::default();
        connect_steps(
            &mut builder,
            &groups,
            &steps,
            &dependency(0, 1),
            &mut scratch,
        );
        connect_steps(
            &mut builder,
            &groups,
            &steps,
            &dependency(0, 2),
            &mut scratch,
        );
        let found = edges(builder);
        // The collective waits only for rank 1's part; the other stage for both.
        assert_eq!(
            found,
            [
                (c0.0, receiver2.0),
                (c0.0, receiver3.0),
                (c1.0, collective.0),
                (c1.0, receiver2.0),
                (c1.0, receiver3.0)
            ]
        );
    }
}
