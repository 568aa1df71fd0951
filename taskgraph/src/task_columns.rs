//! The task graph's compact storage: task fields as struct-of-arrays columns
//! indexed by `u32` task id, and successor lists in compressed-sparse-row form.
//!
//! The engine reads one column (each task's work, hence its duration) and the
//! successor rows; the other columns are read only to describe or report
//! tasks. A task costs 22 bytes of columns (no padding) plus 4 bytes per
//! outgoing edge and 4 bytes of row offset, against petgraph's 32 bytes per
//! node and 20 per edge before.

use crate::ids::{GroupId, TaskId, WorkId};
use crate::task::Dependency;
use crate::task::{StreamKind, Task, TaskKind};

/// Every task's fields, one `Vec` per field, indexed by task id.
#[derive(Debug, Clone, Default)]
pub struct TaskColumns {
    kind: Vec<TaskKind>,
    stream: Vec<StreamKind>,
    chunk: Vec<u16>,
    iteration: Vec<u16>,
    stage: Vec<u32>,
    microbatch: Vec<u32>,
    group: Vec<GroupId>,
    work: Vec<WorkId>,
}

impl TaskColumns {
    pub fn with_capacity(tasks: usize) -> TaskColumns {
        TaskColumns {
            kind: Vec::with_capacity(tasks),
            stream: Vec::with_capacity(tasks),
            chunk: Vec::with_capacity(tasks),
            iteration: Vec::with_capacity(tasks),
            stage: Vec::with_capacity(tasks),
            microbatch: Vec::with_capacity(tasks),
            group: Vec::with_capacity(tasks),
            work: Vec::with_capacity(tasks),
        }
    }

    /// Makes room for exactly `additional` more tasks.
    pub fn reserve_exact(&mut self, additional: usize) {
        self.kind.reserve_exact(additional);
        self.stream.reserve_exact(additional);
        self.chunk.reserve_exact(additional);
        self.iteration.reserve_exact(additional);
        self.stage.reserve_exact(additional);
        self.microbatch.reserve_exact(additional);
        self.group.reserve_exact(additional);
        self.work.reserve_exact(additional);
    }

    /// Appends a task; its id is the previous length.
    ///
    /// # Panics
    /// Past `u32::MAX` tasks (scenario validation refuses such layouts first).
    pub fn push(&mut self, task: Task) -> TaskId {
        let id = u32::try_from(self.kind.len()).expect("task ids are 32-bit");
        self.kind.push(task.kind);
        self.stream.push(task.stream);
        self.chunk.push(task.chunk);
        self.iteration.push(task.iteration);
        self.stage.push(task.stage);
        self.microbatch.push(task.microbatch);
        self.group.push(task.group);
        self.work.push(task.work);
        TaskId(id)
    }

    /// Appends one task per group of `groups`, each `task` but for its
    /// group, with consecutive ids; returns the first (the next id when
    /// `groups` is empty). Column by column: a tensor-parallel pass's tasks.
    ///
    /// # Panics
    /// Past `u32::MAX` tasks.
    pub fn push_per_group(&mut self, task: Task, groups: &[GroupId]) -> TaskId {
        let first = u32::try_from(self.kind.len()).expect("task ids are 32-bit");
        let end = self.kind.len() + groups.len();
        u32::try_from(end).expect("task ids are 32-bit");
        self.kind.resize(end, task.kind);
        self.stream.resize(end, task.stream);
        self.chunk.resize(end, task.chunk);
        self.iteration.resize(end, task.iteration);
        self.stage.resize(end, task.stage);
        self.microbatch.resize(end, task.microbatch);
        self.group.extend_from_slice(groups);
        self.work.resize(end, task.work);
        TaskId(first)
    }

    pub fn len(&self) -> usize {
        self.kind.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kind.is_empty()
    }

    /// The task with id `index`, assembled from the columns.
    #[inline]
    pub fn get(&self, index: usize) -> Task {
        Task {
            kind: self.kind[index],
            stream: self.stream[index],
            chunk: self.chunk[index],
            stage: self.stage[index],
            microbatch: self.microbatch[index],
            iteration: self.iteration[index],
            group: self.group[index],
            work: self.work[index],
        }
    }

    /// The work of task `index` (the engine's one column).
    #[inline]
    pub fn work(&self, index: usize) -> WorkId {
        self.work[index]
    }

    /// Every task's work, by id.
    pub fn works(&self) -> &[WorkId] {
        &self.work
    }

    #[inline]
    pub fn kind(&self, index: usize) -> TaskKind {
        self.kind[index]
    }

    #[inline]
    pub fn stream(&self, index: usize) -> StreamKind {
        self.stream[index]
    }

    #[inline]
    pub fn iteration(&self, index: usize) -> u16 {
        self.iteration[index]
    }

    #[inline]
    pub fn group(&self, index: usize) -> GroupId {
        self.group[index]
    }

    #[inline]
    pub fn stage(&self, index: usize) -> u32 {
        self.stage[index]
    }

    #[inline]
    pub fn chunk(&self, index: usize) -> u16 {
        self.chunk[index]
    }

    pub fn shrink_to_fit(&mut self) {
        self.kind.shrink_to_fit();
        self.stream.shrink_to_fit();
        self.chunk.shrink_to_fit();
        self.iteration.shrink_to_fit();
        self.stage.shrink_to_fit();
        self.microbatch.shrink_to_fit();
        self.group.shrink_to_fit();
        self.work.shrink_to_fit();
    }
}

/// Rows of `u32` targets in compressed-sparse-row form: row `i` is
/// `targets[offsets[i] .. offsets[i + 1]]`.
#[derive(Debug, Clone, Default)]
pub struct Csr {
    offsets: Vec<u32>,
    targets: Vec<u32>,
    /// Why each entry exists, beside `targets` (empty in rows built without it).
    why: Vec<Dependency>,
}

impl Csr {
    /// Rows of `rows` nodes from edges given in insertion order: each row
    /// lists its edges most recently added first (petgraph's order, which the
    /// engine's FIFO tie-break has always followed). A counting sort, two
    /// passes over the edges.
    ///
    /// # Panics
    /// With `u32::MAX` edges or more (far beyond what any machine simulates).
    pub fn from_edges(rows: usize, edges: &[(u32, u32)], why: &[Dependency]) -> Csr {
        assert!(
            u32::try_from(edges.len()).is_ok(),
            "{} edges exceed 32-bit edge offsets",
            edges.len()
        );
        let mut offsets = vec![0u32; rows + 1];
        for &(from, _) in edges {
            offsets[from as usize + 1] += 1;
        }
        for i in 0..rows {
            offsets[i + 1] += offsets[i];
        }
        let mut fill: Vec<u32> = offsets[..rows].to_vec();
        let mut targets = vec![0u32; edges.len()];
        let mut whys = vec![Dependency::Data; why.len()];
        if why.len() == edges.len() {
            for (&(from, to), &reason) in edges.iter().zip(why).rev() {
                let slot = &mut fill[from as usize];
                let at = *slot as usize;
                *slot += 1;
                targets[at] = to;
                whys[at] = reason;
            }
        } else {
            for (index, &(from, to)) in edges.iter().enumerate().rev() {
                let at = fill[from as usize] as usize;
                fill[from as usize] += 1;
                targets[at] = to;
                if let Some(&reason) = why.get(index) {
                    whys[at] = reason;
                }
            }
        }
        Csr {
            offsets,
            targets,
            why: whys,
        }
    }

    /// Rows already built (`offsets` has one entry more than rows, ends at
    /// `targets.len()`; `why` is empty or beside `targets`).
    pub fn from_parts(offsets: Vec<u32>, targets: Vec<u32>, why: Vec<Dependency>) -> Csr {
        assert_eq!(offsets.last().copied().unwrap_or(0) as usize, targets.len());
        assert!(why.is_empty() || why.len() == targets.len());
        Csr {
            offsets,
            targets,
            why,
        }
    }

    /// The transpose (predecessor rows of successor rows), sources in id order.
    pub fn transpose(&self) -> Csr {
        let rows = self.rows();
        let mut offsets = vec![0u32; rows + 1];
        for &to in &self.targets {
            offsets[to as usize + 1] += 1;
        }
        for i in 0..rows {
            offsets[i + 1] += offsets[i];
        }
        let mut fill: Vec<u32> = offsets[..rows].to_vec();
        let mut targets = vec![0u32; self.targets.len()];
        for from in 0..rows {
            for &to in self.row(from) {
                targets[fill[to as usize] as usize] = from as u32;
                fill[to as usize] += 1;
            }
        }
        Csr {
            offsets,
            targets,
            why: Vec::new(),
        }
    }

    pub fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn len(&self) -> usize {
        self.targets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    #[inline]
    pub fn row(&self, index: usize) -> &[u32] {
        &self.targets[self.offsets[index] as usize..self.offsets[index + 1] as usize]
    }

    /// Row `index` with each entry's reason.
    pub fn row_with_why(&self, index: usize) -> impl Iterator<Item = (u32, Dependency)> + '_ {
        let range = self.offsets[index] as usize..self.offsets[index + 1] as usize;
        self.targets[range.clone()]
            .iter()
            .copied()
            .zip(self.why[range].iter().copied())
    }

    /// Every target, row after row.
    pub fn targets(&self) -> &[u32] {
        &self.targets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_of_tasks_gets_consecutive_ids_and_its_own_groups() {
        let mut columns = TaskColumns::default();
        let task = Task {
            kind: TaskKind::Forward,
            stream: StreamKind::Compute,
            chunk: 1,
            stage: 2,
            microbatch: 3,
            iteration: 4,
            group: GroupId(0),
            work: WorkId(5),
        };
        columns.push(task);
        let first = columns.push_per_group(task, &[GroupId(7), GroupId(9)]);
        assert_eq!(first, TaskId(1));
        assert_eq!(columns.len(), 3);
        assert_eq!(
            columns.get(2),
            Task {
                group: GroupId(9),
                ..task
            }
        );
        assert_eq!(columns.get(1).group, GroupId(7));
        assert_eq!(columns.push_per_group(task, &[]), TaskId(3));
    }

    #[test]
    fn rows_list_their_edges_most_recent_first_and_transpose_back() {
        let edges = [(0, 1), (0, 2), (2, 1), (0, 3)];
        let why = [Dependency::Data; 4];
        let csr = Csr::from_edges(4, &edges, &why);
        assert_eq!(csr.row(0), [3, 2, 1]);
        assert_eq!(csr.row(1), [] as [u32; 0]);
        assert_eq!(csr.row(2), [1]);
        let back = csr.transpose();
        assert_eq!(back.row(1), [0, 2]);
        assert_eq!(back.row(3), [0]);
        assert_eq!(back.len(), 4);
    }
}
