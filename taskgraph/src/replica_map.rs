//! Full expansion's task and group ids from a representative replica: what
//! lets a symmetric run give any rank's Timeline records without lowering
//! every replica (`sim::symmetry`).
//!
//! **Where replicas are.** Lowering builds every replica with loops `for
//! data_index in …` (the pipeline program, local DDP's copies, the tied
//! embedding's and DualPipe's mirrored all-reduces, the optimizer steps);
//! everything else (the collectives joining replicas) is outside them.
//! Under symmetry each loop runs for replica 0 only, and the builder logs
//! where it ran ([`ReplicaLog`]: its steps, and every group request in
//! order). Full expansion runs the same loop body for data indices
//! 0..d·cp, one after another, each the twin of replica 0's with its ranks
//! moved by `data_index · t` (`rank = stage·t·D + data_index·t +
//! tensor_index`, `sim::placement`); groups with ranks outside replica 0
//! (a data-parallel group) are the same group in every copy. So full
//! expansion's tasks are, in order: the tasks outside loops as they are,
//! each loop's tasks repeated d·cp times; and its groups are interned by
//! replaying the group requests the same way ([`ReplicaMap::expand`]).
//! `tests/tests/it/symmetry.rs` checks the whole Timeline and rank/window
//! subsets against full expansion's on its grid of layouts (schedules,
//! DualPipe, options, cp, ZeRO, MoE); a layout whose counts do not
//! match full expansion's (`sim::symmetry::FullCounts`) is refused
//! (`None`), and its Timeline comes from full expansion.

use crate::ids::{GroupId, Rank};
use crate::replica_ids::ReplicaIds;
use crate::representative::Representative;
use std::collections::BTreeMap;
use std::ops::Range;

/// What the builder logs while lowering a representative replica.
#[derive(Debug, Default, Clone)]
pub struct ReplicaLog {
    /// Every group request, in order (repeats included).
    pub interns: Vec<GroupId>,
    /// Every loop over the lowered replicas, in program order.
    pub loops: Vec<ReplicaLoop>,
}

/// One loop over the lowered replicas: the steps its body added and its
/// group requests (indices into [`ReplicaLog::interns`]).
#[derive(Debug, Clone)]
pub struct ReplicaLoop {
    pub steps: Range<u32>,
    pub interns: Range<u32>,
}

/// The log with steps turned into task ids (phase 2 numbers tasks in step order).
#[derive(Debug, Clone, Default)]
pub struct ReplicaMap {
    interns: Vec<GroupId>,
    /// (tasks, group requests) of each non-empty loop, in order.
    loops: Vec<(Range<u32>, Range<u32>)>,
}

impl ReplicaMap {
    /// `first_task(step)`: the id of the first task of a step, for steps
    /// `0..=steps` (one past the last: the task count).
    pub fn new(log: ReplicaLog, first_task: impl Fn(u32) -> u32) -> ReplicaMap {
        let loops = log
            .loops
            .into_iter()
            .map(|l| {
                (
                    first_task(l.steps.start)..first_task(l.steps.end),
                    l.interns,
                )
            })
            .filter(|(tasks, interns)| !tasks.is_empty() || !interns.is_empty())
            .collect();
        ReplicaMap {
            interns: log.interns,
            loops,
        }
    }

    /// Full expansion's ids for a representative graph of `task_groups`
    /// (each task's group) over `groups`, or `None` if the tasks it gives
    /// are not `full_tasks` (the layout is outside what the loops describe).
    pub fn expand(
        &self,
        groups: &[Vec<Rank>],
        task_groups: impl Fn(u32) -> GroupId,
        task_count: u32,
        representative: Representative,
        full_tasks: usize,
    ) -> Option<Expanded> {
        let replicas = representative.replicas;
        let t = representative.tensor_parallel;
        let rename = |ranks: &[Rank], copy: u32| -> Vec<Rank> {
            if ranks.iter().all(|&rank| representative.contains(rank)) {
                ranks.iter().map(|&rank| Rank(rank.0 + copy * t)).collect()
            } else {
                ranks.to_vec()
            }
        };
        let mut index: BTreeMap<Vec<Rank>, u32> = BTreeMap::new();
        let mut full_groups: Vec<Vec<Rank>> = Vec::new();
        let intern = |ranks: Vec<Rank>,
                      index: &mut BTreeMap<Vec<Rank>, u32>,
                      full_groups: &mut Vec<Vec<Rank>>|
         -> u32 {
            if let Some(&id) = index.get(&ranks) {
                return id;
            }
            let id = full_groups.len() as u32;
            full_groups.push(ranks.clone());
            index.insert(ranks, id);
            id
        };
        let mut loops = Vec::with_capacity(self.loops.len());
        let mut position = 0u32;
        for (tasks, interns) in &self.loops {
            for &group in &self.interns[position as usize..interns.start as usize] {
                intern(groups[group.index()].clone(), &mut index, &mut full_groups);
            }
            // Distinct groups of the body in first-request order (a repeat
            // interns nothing), then those its tasks use without requesting.
            let mut distinct: Vec<GroupId> = Vec::new();
            let mut seen: Vec<u32> = vec![u32::MAX; groups.len()];
            let mut add = |group: GroupId, distinct: &mut Vec<GroupId>| {
                if seen[group.index()] == u32::MAX {
                    seen[group.index()] = distinct.len() as u32;
                    distinct.push(group);
                }
            };
            for &group in &self.interns[interns.start as usize..interns.end as usize] {
                add(group, &mut distinct);
            }
            let requested = distinct.len();
            for task in tasks.clone() {
                add(task_groups(task), &mut distinct);
            }
            let mut full_of: Vec<u32> = vec![u32::MAX; distinct.len() * replicas as usize];
            for copy in 0..replicas {
                for (k, &group) in distinct[..requested].iter().enumerate() {
                    full_of[copy as usize * distinct.len() + k] = intern(
                        rename(&groups[group.index()], copy),
                        &mut index,
                        &mut full_groups,
                    );
                }
            }
            loops.push(ExpandedLoop {
                tasks: tasks.clone(),
                distinct,
                slot: seen,
                full_of,
                requested,
            });
            position = interns.end;
        }
        for &group in &self.interns[position as usize..] {
            intern(groups[group.index()].clone(), &mut index, &mut full_groups);
        }
        // Groups a loop's tasks use without requesting them, and the
        // groups of tasks outside loops: looked up, never interned.
        for lp in &mut loops {
            for copy in 0..replicas {
                for k in lp.requested..lp.distinct.len() {
                    let ranks = rename(&groups[lp.distinct[k].index()], copy);
                    lp.full_of[copy as usize * lp.distinct.len() + k] = *index.get(&ranks)?;
                }
            }
        }
        let mut outside: Vec<u32> = vec![u32::MAX; groups.len()];
        let mut cursor = 0u32;
        let mut total = 0u64;
        let look_up = |range: Range<u32>, outside: &mut Vec<u32>| -> Option<()> {
            for task in range {
                let group = task_groups(task).index();
                if outside[group] == u32::MAX {
                    outside[group] = *index.get(&groups[group])?;
                }
            }
            Some(())
        };
        for lp in &loops {
            if lp.tasks.start < cursor {
                return None;
            }
            look_up(cursor..lp.tasks.start, &mut outside)?;
            total += (lp.tasks.start - cursor) as u64 + lp.tasks.len() as u64 * replicas as u64;
            cursor = lp.tasks.end;
        }
        look_up(cursor..task_count, &mut outside)?;
        total += (task_count - cursor) as u64;
        (total == full_tasks as u64).then_some(Expanded {
            groups: full_groups,
            loops,
            outside,
            replicas,
            task_count,
        })
    }
}

/// One loop of the representative, expanded.
#[derive(Debug, Clone)]
struct ExpandedLoop {
    tasks: Range<u32>,
    /// Its tasks' groups and requests, distinct, in first-request order.
    distinct: Vec<GroupId>,
    /// Position in `distinct` of each representative group (`u32::MAX`: none).
    slot: Vec<u32>,
    /// Full group id of `distinct[k]` in copy `c`: `full_of[c·len + k]`.
    full_of: Vec<u32>,
    /// How many of `distinct` the body requests (the rest its tasks only use).
    requested: usize,
}

/// Full expansion's groups and the map from (representative task, copy) to
/// its task and group ids.
#[derive(Debug, Clone)]
pub struct Expanded {
    /// Full expansion's groups, in its order.
    pub groups: Vec<Vec<Rank>>,
    loops: Vec<ExpandedLoop>,
    /// Full group id of each representative group a task outside loops has.
    outside: Vec<u32>,
    replicas: u32,
    task_count: u32,
}

/// One task of full expansion: the representative task it is the twin of,
/// its full id and its full group id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Twin {
    pub representative: u32,
    pub id: u32,
    pub group: u32,
}

impl Expanded {
    /// Full expansion's task ids as arithmetic on the representative's
    /// ([`ReplicaIds`]); `None` past 32-bit ids.
    pub fn replica_ids(&self) -> Option<ReplicaIds> {
        let loops: Vec<Range<u32>> = self.loops.iter().map(|lp| lp.tasks.clone()).collect();
        ReplicaIds::new(self.task_count, &loops, self.replicas)
    }

    /// Visits, in full expansion's id order, every task whose full group
    /// `wanted` accepts; `task_groups(task)` is a representative task's group.
    pub fn for_each_twin(
        &self,
        task_groups: impl Fn(u32) -> GroupId,
        wanted: impl Fn(u32) -> bool,
        mut visit: impl FnMut(Twin),
    ) {
        let mut cursor = 0u32;
        let mut full = 0u32;
        let outside = |range: Range<u32>, full: &mut u32, visit: &mut dyn FnMut(Twin)| {
            for task in range {
                let group = self.outside[task_groups(task).index()];
                if wanted(group) {
                    visit(Twin {
                        representative: task,
                        id: *full,
                        group,
                    });
                }
                *full += 1;
            }
        };
        for lp in &self.loops {
            outside(cursor..lp.tasks.start, &mut full, &mut visit);
            let len = lp.tasks.len() as u32;
            let n = lp.distinct.len();
            for copy in 0..self.replicas {
                let table = &lp.full_of[copy as usize * n..(copy as usize + 1) * n];
                if !table.iter().any(|&group| wanted(group)) {
                    continue;
                }
                for task in lp.tasks.clone() {
                    let group = table[lp.slot[task_groups(task).index()] as usize];
                    if wanted(group) {
                        visit(Twin {
                            representative: task,
                            id: full + copy * len + (task - lp.tasks.start),
                            group,
                        });
                    }
                }
            }
            full += len * self.replicas;
            cursor = lp.tasks.end;
        }
        outside(cursor..self.task_count, &mut full, &mut visit);
    }
}
