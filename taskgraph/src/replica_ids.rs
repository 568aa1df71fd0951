//! Full expansion's task ids as arithmetic on the representative's: what
//! lets a run of every replica keep one replica's graph
//! (`sim::replicated_run`).
//!
//! Full expansion numbers its tasks as the representative's loops over
//! replicas lay them out ([`crate::replica_map`]): a task outside loops (a
//! collective joining replicas) once, at its place; a loop's tasks once per
//! copy, copy after copy. So representative task `v`'s twin in copy `c` is
//! `base[v] + c · stride[v]`, with `stride` the loop's length (0 for a task
//! outside loops: its one full task is `base[v]` whatever the copy), and
//! full expansion's id order is the [`ReplicaIds::segments`] walked in order.
//!
//! **Where a run keeps a twin's state** is another order, the *twin slot*
//! ([`ReplicaIds::twin_slot`]): a representative task's twins side by side,
//! representative tasks in order. Replicas run in step, so the tasks a run
//! touches at one instant are twins of a few representative tasks, which
//! this order keeps in a few cache lines where full ids scatter them a
//! loop's length apart.

use std::ops::Range;

/// Full ids of every representative task's twins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaIds {
    /// Full id of each representative task's copy-0 twin.
    base: Vec<u32>,
    /// Distance between consecutive copies' twins; 0 for a task outside
    /// loops (shared: one task in full expansion).
    stride: Vec<u32>,
    /// Copies of every loop (d·cp).
    copies: u32,
    /// Full expansion's id order: representative tasks, each range once
    /// (outside loops) or `copies` times (a loop's), in order.
    segments: Vec<Segment>,
    full_tasks: u32,
    /// Twin slot of each representative task's copy-0 twin (its twins
    /// follow it, one per copy).
    first_slot: Vec<u32>,
}

/// Representative tasks `tasks`, repeated `copies` times in full expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub tasks: Range<u32>,
    pub copies: u32,
}

impl ReplicaIds {
    /// The ids of a representative of `task_count` tasks whose loops cover
    /// `loops` (task ranges, in order, disjoint), each repeated `copies`
    /// times; `None` past 32-bit ids.
    pub fn new(task_count: u32, loops: &[Range<u32>], copies: u32) -> Option<ReplicaIds> {
        let mut base = vec![0u32; task_count as usize];
        let mut stride = vec![0u32; task_count as usize];
        let mut segments = Vec::with_capacity(2 * loops.len() + 1);
        let mut cursor = 0u32;
        let mut full = 0u32;
        for tasks in loops {
            if tasks.start < cursor {
                return None;
            }
            place_outside(cursor..tasks.start, &mut base, &mut full, &mut segments)?;
            for task in tasks.clone() {
                base[task as usize] = full.checked_add(task - tasks.start)?;
                stride[task as usize] = tasks.len() as u32;
            }
            full = full.checked_add(tasks.len().checked_mul(copies as usize)?.try_into().ok()?)?;
            segments.push(Segment {
                tasks: tasks.clone(),
                copies,
            });
            cursor = tasks.end;
        }
        place_outside(cursor..task_count, &mut base, &mut full, &mut segments)?;
        let mut next_slot = 0u32;
        let first_slot = stride
            .iter()
            .map(|&stride| {
                let first = next_slot;
                next_slot += twins_of(stride, copies);
                first
            })
            .collect();
        Some(ReplicaIds {
            base,
            stride,
            copies,
            segments,
            full_tasks: full,
            first_slot,
        })
    }

    /// Full id of representative task `task`'s twin in copy `copy` (any
    /// copy of a shared task: its one full task).
    #[inline]
    pub fn full_id(&self, task: u32, copy: u32) -> u32 {
        self.base[task as usize] + copy * self.stride[task as usize]
    }

    /// Twin slot of representative task `task`'s twin in copy `copy` (any
    /// copy of a shared task: its one full task): where a run keeps its
    /// state, twins side by side (see the module header). A bijection onto
    /// `0..full_tasks`.
    #[inline]
    pub fn twin_slot(&self, task: u32, copy: u32) -> u32 {
        match self.stride[task as usize] {
            0 => self.first_slot[task as usize],
            _ => self.first_slot[task as usize] + copy,
        }
    }

    /// The copy full task `id` is of, given its representative `task`.
    #[inline]
    pub fn copy_of(&self, task: u32, id: u32) -> u32 {
        match self.stride[task as usize] {
            0 => 0,
            stride => (id - self.base[task as usize]) / stride,
        }
    }

    /// How many full tasks representative task `task` stands for: one
    /// outside loops, one per copy in a loop.
    #[inline]
    pub fn twins_of(&self, task: u32) -> u32 {
        twins_of(self.stride[task as usize], self.copies)
    }

    /// Whether `task` is outside loops: one task in full expansion, shared
    /// by every copy.
    #[inline]
    pub fn is_shared(&self, task: u32) -> bool {
        self.stride[task as usize] == 0
    }

    /// The representative's task count.
    pub fn representative_tasks(&self) -> u32 {
        self.base.len() as u32
    }

    /// Copies of every loop (d·cp).
    pub fn copies(&self) -> u32 {
        self.copies
    }

    /// Full expansion's task count.
    pub fn full_tasks(&self) -> u32 {
        self.full_tasks
    }

    /// Full expansion's id order ([`Segment`]s in order).
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Visits every full task in id order as (representative task, copy).
    pub fn for_each_in_order(&self, mut visit: impl FnMut(u32, u32)) {
        for segment in &self.segments {
            for copy in 0..segment.copies {
                for task in segment.tasks.clone() {
                    visit(task, copy);
                }
            }
        }
    }
}

/// Full tasks of a representative task whose twins are `stride` apart
/// (0: outside loops, one full task) in a layout of `copies` copies.
fn twins_of(stride: u32, copies: u32) -> u32 {
    if stride == 0 {
        1
    } else {
        copies
    }
}

/// Numbers the tasks of `range`, outside loops, from `full` on.
fn place_outside(
    range: Range<u32>,
    base: &mut [u32],
    full: &mut u32,
    segments: &mut Vec<Segment>,
) -> Option<()> {
    full.checked_add(range.len() as u32)?;
    for task in range.clone() {
        base[task as usize] = *full;
        *full += 1;
    }
    if !range.is_empty() {
        segments.push(Segment {
            tasks: range,
            copies: 1,
        });
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_repeat_copy_after_copy_between_shared_tasks() {
        // Tasks 0 | 1 2 (loop) | 3 | 4 (loop) | 5, three copies.
        let ids = ReplicaIds::new(6, &[1..3, 4..5], 3).unwrap();
        let mut order = Vec::new();
        ids.for_each_in_order(|task, copy| order.push((ids.full_id(task, copy), task, copy)));
        let expected = [
            (0, 0, 0),
            (1, 1, 0),
            (2, 2, 0),
            (3, 1, 1),
            (4, 2, 1),
            (5, 1, 2),
            (6, 2, 2),
            (7, 3, 0),
            (8, 4, 0),
            (9, 4, 1),
            (10, 4, 2),
            (11, 5, 0),
        ];
        assert_eq!(order, expected);
        assert_eq!(ids.full_tasks(), 12);
        assert!(ids.is_shared(3) && !ids.is_shared(4));
        assert_eq!(ids.full_id(3, 2), 7);
        assert_eq!(
            (ids.copy_of(4, 9), ids.copy_of(2, 6), ids.copy_of(3, 7)),
            (1, 2, 0)
        );
        // Twin slots: task 0 | 1 ×3 | 2 ×3 | 3 | 4 ×3 | 5.
        let mut slots = Vec::new();
        ids.for_each_in_order(|task, copy| slots.push(ids.twin_slot(task, copy)));
        assert_eq!(slots, [0, 1, 4, 2, 5, 3, 6, 7, 8, 9, 10, 11]);
        assert_eq!(ids.twin_slot(3, 2), 7);
    }

    #[test]
    fn overlapping_loops_and_32_bit_overflow_are_refused() {
        assert!(ReplicaIds::new(6, &[1..3, 2..5], 3).is_none());
        let whole = [0..2, 2..4];
        assert!(ReplicaIds::new(4, &whole, u32::MAX / 2).is_none());
    }
}
