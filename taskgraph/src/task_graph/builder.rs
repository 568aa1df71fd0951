//! The task graph's builder: lowering adds tasks (as columns) and edges (as
//! a list, or counted then written straight into CSR rows), then seals it.

use super::intern_hash::InternMap;
use super::{Dependency, TaskGraph, Work};
use crate::ids::{GroupId, Rank, TaskId, WorkId};
use crate::task::Task;
use crate::task_columns::{Csr, TaskColumns};

/// Incremental builder used by lowering: tasks as columns; edges either as a
/// list turned into CSR rows once, by [`TaskGraphBuilder::finish`], or, when
/// the same edges are added twice ([`TaskGraphBuilder::count_edges`], then
/// [`TaskGraphBuilder::fill_edges`]), written straight into their rows.
#[derive(Debug, Default)]
pub struct TaskGraphBuilder {
    tasks: TaskColumns,
    edges: Vec<(u32, u32)>,
    why: Vec<Dependency>,
    sink: EdgeSink,
    groups: Vec<Vec<Rank>>,
    group_index: InternMap<Vec<Rank>, GroupId>,
    works: Vec<Work>,
    work_index: InternMap<Work, WorkId>,
    /// Under symmetry: every group interned and where replica 0's loops
    /// are, for the Timeline of any rank ([`crate::replica_map`]).
    replica_log: Option<crate::replica_map::ReplicaLog>,
}

/// Where [`TaskGraphBuilder::add_edge`] puts an edge.
#[derive(Debug, Default)]
enum EdgeSink {
    /// Appended to the edge list.
    #[default]
    List,
    /// Counted per source (first of two identical passes).
    Count { out_degree: Vec<u32> },
    /// Written into its row, from the row's end (second pass): each row then
    /// lists its edges most recently added first, as [`Csr::from_edges`] does.
    Fill {
        offsets: Vec<u32>,
        next: Vec<u32>,
        targets: Vec<u32>,
        why: Vec<Dependency>,
    },
}

impl TaskGraphBuilder {
    /// Starts the first of two passes adding the same edges: they are only
    /// counted (every task must already be added). Saves the edge list, 8
    /// bytes an edge, at the cost of generating the edges twice.
    pub fn count_edges(&mut self) {
        assert!(self.edges.is_empty(), "edges were already listed");
        self.edges = Vec::new();
        self.why = Vec::new();
        self.sink = EdgeSink::Count {
            out_degree: vec![0; self.tasks.len()],
        };
    }

    /// Starts the second pass: the same edges, in the same order, are
    /// written into their rows.
    ///
    /// # Panics
    /// Without [`TaskGraphBuilder::count_edges`] first, or with `u32::MAX`
    /// edges or more.
    pub fn fill_edges(&mut self) {
        let EdgeSink::Count { out_degree } = std::mem::take(&mut self.sink) else {
            panic!("fill_edges without count_edges");
        };
        let rows = out_degree.len();
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0u32);
        let mut total = 0u32;
        for &degree in &out_degree {
            total = total
                .checked_add(degree)
                .expect("edges exceed 32-bit edge offsets");
            offsets.push(total);
        }
        drop(out_degree);
        self.sink = EdgeSink::Fill {
            next: offsets[1..].to_vec(),
            offsets,
            targets: vec![0; total as usize],
            why: vec![Dependency::Data; total as usize],
        };
    }

    pub fn with_capacity(nodes: usize, edges: usize) -> TaskGraphBuilder {
        TaskGraphBuilder {
            tasks: TaskColumns::with_capacity(nodes),
            edges: Vec::with_capacity(edges),
            why: Vec::with_capacity(edges),
            ..TaskGraphBuilder::default()
        }
    }

    /// The id of this group of ranks, interning it on first use.
    pub fn group(&mut self, ranks: &[Rank]) -> GroupId {
        let id = match self.group_index.get(ranks) {
            Some(&id) => id,
            None => {
                let id = GroupId(self.groups.len() as u32);
                self.groups.push(ranks.to_vec());
                self.group_index.insert(ranks.to_vec(), id);
                id
            }
        };
        if let Some(log) = &mut self.replica_log {
            log.interns.push(id);
        }
        id
    }

    /// Starts logging every group request and replica loop (lowering of a
    /// representative replica, [`crate::replica_map`]).
    pub fn log_replicas(&mut self) {
        self.replica_log = Some(crate::replica_map::ReplicaLog::default());
    }

    /// The log, when [`TaskGraphBuilder::log_replicas`] started one.
    pub fn replica_log_mut(&mut self) -> Option<&mut crate::replica_map::ReplicaLog> {
        self.replica_log.as_mut()
    }

    /// The log, taken out (lowering ends it).
    pub fn take_replica_log(&mut self) -> Option<crate::replica_map::ReplicaLog> {
        self.replica_log.take()
    }

    /// The id of this work, interning it on first use.
    pub fn work(&mut self, work: Work) -> WorkId {
        if let Some(&id) = self.work_index.get(&work) {
            return id;
        }
        let id = WorkId(self.works.len() as u32);
        self.works.push(work.clone());
        self.work_index.insert(work, id);
        id
    }

    /// Makes room for exactly `additional` more tasks: a lowering that
    /// knows its count sizes the columns once, and `finish` has no slack
    /// to shrink away.
    pub fn reserve_tasks(&mut self, additional: usize) {
        self.tasks.reserve_exact(additional);
    }

    pub fn add_task(&mut self, task: Task) -> TaskId {
        self.tasks.push(task)
    }

    /// Adds `task` once per group of `groups` (consecutive ids, the first
    /// returned): the compute tasks of a tensor-parallel pass.
    pub fn add_task_per_group(&mut self, task: Task, groups: &[GroupId]) -> TaskId {
        self.tasks.push_per_group(task, groups)
    }

    /// Makes room for `edges` more edges in the edge list (none while
    /// counting or filling rows).
    pub fn reserve_edges(&mut self, edges: usize) {
        if let EdgeSink::List = self.sink {
            self.edges.reserve(edges);
            self.why.reserve(edges);
        }
    }

    #[inline]
    pub fn add_edge(&mut self, from: TaskId, to: TaskId, why: Dependency) {
        debug_assert!(from.index() < self.tasks.len() && to.index() < self.tasks.len());
        match &mut self.sink {
            EdgeSink::List => {
                self.edges.push((from.0, to.0));
                self.why.push(why);
            }
            EdgeSink::Count { out_degree } => out_degree[from.index()] += 1,
            EdgeSink::Fill {
                next,
                targets,
                why: reasons,
                ..
            } => {
                // A row given more edges than counted runs below its start
                // (into the row before, or out of bounds): `finish` then
                // finds a row whose cursor is not at its start, and panics.
                let slot = &mut next[from.index()];
                *slot = slot.wrapping_sub(1);
                targets[*slot as usize] = to.0;
                reasons[*slot as usize] = why;
            }
        }
    }

    pub fn task(&self, id: TaskId) -> Task {
        self.tasks.get(id.index())
    }

    /// The group of task `id` (without assembling the whole task).
    pub fn task_group(&self, id: TaskId) -> GroupId {
        self.tasks.group(id.index())
    }

    /// The stream of task `id` (without assembling the whole task).
    pub fn task_stream(&self, id: TaskId) -> crate::task::StreamKind {
        self.tasks.stream(id.index())
    }

    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// The ranks of an interned group.
    pub fn group_ranks(&self, group: GroupId) -> &[Rank] {
        &self.groups[group.index()]
    }

    /// Seals the graph: the edge list becomes CSR successor rows, each row
    /// most recently added edge first (the order the engine has always
    /// started successors in).
    pub fn finish(self, n_ranks: u32) -> TaskGraph {
        let TaskGraphBuilder {
            mut tasks,
            edges,
            why,
            groups,
            works,
            sink,
            ..
        } = self;
        tasks.shrink_to_fit();
        let successors = match sink {
            EdgeSink::List => Csr::from_edges(tasks.len(), &edges, &why),
            EdgeSink::Count { .. } => panic!("count_edges without fill_edges"),
            EdgeSink::Fill {
                offsets,
                next,
                targets,
                why,
            } => {
                assert!(
                    next.iter().zip(&offsets).all(|(next, start)| next == start),
                    "the filling pass added other edges than the counting pass"
                );
                Csr::from_parts(offsets, targets, why)
            }
        };
        drop((edges, why));
        TaskGraph {
            tasks,
            successors,
            predecessors: std::sync::OnceLock::new(),
            groups,
            works,
            n_ranks,
            replica_map: None,
        }
    }
}
