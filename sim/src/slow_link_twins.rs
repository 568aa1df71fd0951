//! Slow links in full expansion kept as one replica's graph
//! ([`crate::replicated_run`]): what [`crate::slow_link::SlowLinkCosts`]
//! gives a built graph's tasks, given to every replica's twins.
//!
//! A twin's group is its representative task's moved to its copy (each rank
//! plus copy · t), or the same group for a shared task; a pipeline transfer
//! also takes its receivers' links (the groups of the tasks it feeds,
//! outside its sender's group, in the same copy), as a built graph's does.
//! The factors of each (representative group, copy) are computed once, the
//! transfers' only where their receivers change them (kept sorted, as the
//! built graph's), and each distinct set of factors costs every work once
//! ([`crate::slow_link::factor_tables`]).

use crate::cost::WorkCost;
use crate::slow_link::{factor_tables, LinkFactors, SlowLinks};
use crate::symmetry::Representative;
use scenario::Scenario;
use taskgraph::ids::{Rank, TaskId};
use taskgraph::replica_ids::ReplicaIds;
use taskgraph::task_graph::{TaskGraph, Work};
use timeline::time::SimDuration;

/// Each twin's closed-form duration where a slow link touches it.
#[derive(Debug, Clone)]
pub(crate) struct TwinLinkCosts {
    copies: u32,
    /// Per (representative group, copy), `group · copies + copy`: the index
    /// into `tables`, or `None` where no member's link is slow.
    group_table: Vec<Option<u32>>,
    /// Pipeline transfers whose receivers change their factors, by
    /// `task << 32 | copy`, sorted: their table.
    transfer_table: Vec<(u64, Option<u32>)>,
    tables: Vec<Vec<WorkCost>>,
    /// Each representative task's group and work, and whether it has an
    /// entry in `transfer_table`.
    task_group: Vec<u32>,
    task_work: Vec<u32>,
    transferred: Vec<bool>,
}

impl TwinLinkCosts {
    pub fn new(
        scenario: &Scenario,
        graph: &TaskGraph,
        ids: &ReplicaIds,
        representative: Representative,
        links: SlowLinks<'_>,
    ) -> TwinLinkCosts {
        let copies = ids.copies();
        let moved = |ranks: &[Rank], copy: u32| -> Vec<Rank> {
            if ranks
                .iter()
                .all(|&rank| representative.data_index(rank) == 0)
            {
                ranks
                    .iter()
                    .map(|&rank| representative.in_copy(rank, copy))
                    .collect()
            } else {
                ranks.to_vec()
            }
        };
        // Copies none of whose ranks a slow link touches keep nominal factors
        // (every loop task's ranks are its copy's).
        let mut touched = vec![false; copies as usize];
        for rank in 0..scenario.layout.gpus() {
            if links.touches(rank, scenario) {
                touched[representative.data_index(Rank(rank)) as usize] = true;
            }
        }
        // A group inside replica 0 moves with its copy; a shared one (up to
        // d·cp ranks) is the same group in every copy: priced once.
        let mut group_factors: Vec<LinkFactors> =
            Vec::with_capacity(graph.groups().len() * copies as usize);
        for ranks in graph.groups() {
            if ranks
                .iter()
                .all(|&rank| representative.data_index(rank) == 0)
            {
                group_factors.extend((0..copies).map(|copy| match touched[copy as usize] {
                    true => links.factors_of(&moved(ranks, copy), scenario),
                    false => LinkFactors::NOMINAL,
                }));
            } else {
                let factors = links.factors_of(ranks, scenario);
                group_factors.extend((0..copies).map(|_| factors));
            }
        }
        let mut transfers: Vec<(u64, LinkFactors)> = Vec::new();
        for task in 0..graph.task_count() as u32 {
            let id = TaskId(task);
            if !matches!(graph.work(graph.work_of(id)), Work::PipelineTransfer { .. }) {
                continue;
            }
            let own = graph.group_of(id);
            let copies_of_task = if ids.is_shared(task) { 1 } else { copies };
            // Fed only by and feeding its copy's tasks: untouched copies are nominal.
            let local =
                !ids.is_shared(task) && graph.successors(id).all(|next| !ids.is_shared(next.0));
            for copy in 0..copies_of_task {
                if local && !touched[copy as usize] {
                    continue;
                }
                let senders = moved(graph.group_ranks(own), copy);
                let mut ranks = senders.clone();
                for next in graph.successors(id) {
                    let group = moved(graph.group_ranks(graph.group_of(next)), copy);
                    if group.iter().all(|rank| !senders.contains(rank)) {
                        ranks.extend_from_slice(&group);
                    }
                }
                ranks.sort_unstable();
                ranks.dedup();
                let factors = links.factors_of(&ranks, scenario);
                if factors != group_factors[(own.index()) * copies as usize + copy as usize] {
                    transfers.push(((u64::from(task) << 32) | u64::from(copy), factors));
                }
            }
        }
        let every = group_factors.iter().chain(transfers.iter().map(|(_, f)| f));
        let (distinct, tables) = factor_tables(scenario, graph.works(), every);
        let table_of = |f: &LinkFactors| distinct.iter().position(|d| d == f).map(|at| at as u32);
        TwinLinkCosts {
            copies,
            group_table: group_factors.iter().map(table_of).collect(),
            transfer_table: transfers
                .iter()
                .map(|(key, f)| (*key, table_of(f)))
                .collect(),
            tables,
            task_group: (0..graph.task_count() as u32)
                .map(|task| graph.group_of(TaskId(task)).0)
                .collect(),
            task_work: graph.task_works().iter().map(|work| work.0).collect(),
            transferred: {
                let mut transferred = vec![false; graph.task_count()];
                for (key, _) in &transfers {
                    transferred[(key >> 32) as usize] = true;
                }
                transferred
            },
        }
    }

    /// Whether some twin of representative task `task` may take a slow
    /// table's duration.
    pub fn varies(&self, task: u32) -> bool {
        let group = self.task_group[task as usize] as usize;
        let copies = self.copies as usize;
        self.group_table[group * copies..(group + 1) * copies]
            .iter()
            .any(Option::is_some)
            || self.transferred[task as usize]
    }

    /// The duration of representative task `task`'s twin in copy `copy`
    /// (copy 0 for a shared task): its slow table's where a member's link is
    /// slow, else `nominal`.
    #[inline]
    pub fn duration(&self, task: u32, copy: u32, nominal: SimDuration) -> SimDuration {
        let key = (u64::from(task) << 32) | u64::from(copy);
        let table = match self
            .transfer_table
            .binary_search_by_key(&key, |(key, _)| *key)
        {
            Ok(at) => self.transfer_table[at].1,
            Err(_) => {
                let group = self.task_group[task as usize] as usize;
                self.group_table[group * self.copies as usize + copy as usize]
            }
        };
        match table {
            Some(table) => {
                self.tables[table as usize][self.task_work[task as usize] as usize].duration
            }
            None => nominal,
        }
    }
}
