//! Which ranks a report shows, and for each rank group which of those ranks
//! it covers. Shared by the Gantt chart and the Perfetto trace: a task
//! occupies its stream on every rank of its group, so it appears once per
//! selected rank of its group.

use crate::error::ReportError;
use timeline::Timeline;

/// Ranks chosen for display, and the selected members of every group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RankSelection {
    /// Selected ranks in display order, without repeats.
    pub ranks: Vec<u32>,
    /// For each group of the header: indices into `ranks` of its selected
    /// members, in ascending rank order.
    pub group_members: Vec<Vec<usize>>,
}

impl RankSelection {
    /// Validates `requested` (or uses `default` when absent) against the timeline.
    ///
    /// Errors: an empty request, a rank outside `0..n_gpus`, or a task whose group
    /// index is not in the header.
    pub fn new(
        timeline: &Timeline,
        requested: Option<&[u32]>,
        default: impl FnOnce() -> Vec<u32>,
    ) -> Result<RankSelection, ReportError> {
        let n_gpus = timeline.header.n_gpus;
        let wanted = match requested {
            Some(ranks) => ranks.to_vec(),
            None => default(),
        };
        if wanted.is_empty() {
            return Err(ReportError::EmptySelection { ranks: wanted });
        }
        let mut position_of_rank: Vec<Option<usize>> = vec![None; n_gpus as usize];
        let mut ranks = Vec::with_capacity(wanted.len());
        for &rank in &wanted {
            let slot = position_of_rank
                .get_mut(rank as usize)
                .ok_or(ReportError::RankOutOfRange { rank, n_gpus })?;
            if slot.is_none() {
                *slot = Some(ranks.len());
                ranks.push(rank);
            }
        }
        let group_members = timeline
            .header
            .groups
            .iter()
            .map(|group| {
                let mut members: Vec<usize> = group
                    .iter()
                    .filter_map(|&rank| position_of_rank.get(rank as usize).copied().flatten())
                    .collect();
                members.sort_by_key(|&index| ranks[index]);
                members.dedup();
                members
            })
            .collect();
        let n_groups = timeline.header.groups.len();
        if let Some(task) = timeline
            .tasks
            .iter()
            .find(|task| task.group as usize >= n_groups)
        {
            return Err(ReportError::UnknownGroup {
                task_id: task.id,
                group: task.group,
                n_groups,
            });
        }
        Ok(RankSelection {
            ranks,
            group_members,
        })
    }

    /// Indices into `ranks` of the selected members of `group` (validated in `new`).
    pub fn members(&self, group: u32) -> &[usize] {
        &self.group_members[group as usize]
    }

    /// The error for a selection that shows no task.
    pub fn empty_error(&self) -> ReportError {
        ReportError::EmptySelection {
            ranks: self.ranks.clone(),
        }
    }
}

/// The first rank of each pipeline stage: data-parallel index 0, tensor index 0
/// (Megatron order: rank = stage·t·cp·d + (dp_index·cp + cp_index)·t + tensor_index).
pub(crate) fn representative_pipeline(timeline: &Timeline) -> Vec<u32> {
    let layout = &timeline.header.layout;
    let ranks_per_stage = layout.ranks_per_stage().max(1);
    (0..layout.pipeline_parallel.max(1))
        .map(|stage| stage * ranks_per_stage)
        .collect()
}

/// The pipeline stage of `rank` in Megatron order.
pub(crate) fn stage_of_rank(timeline: &Timeline, rank: u32) -> u32 {
    let layout = &timeline.header.layout;
    rank / layout.ranks_per_stage().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::one_f_one_b;

    #[test]
    fn representative_pipeline_takes_the_first_rank_of_every_stage() {
        let timeline = one_f_one_b(4, 8, 2, 2);
        assert_eq!(representative_pipeline(&timeline), vec![0, 4, 8, 12]);
        assert_eq!(stage_of_rank(&timeline, 13), 3);
    }

    #[test]
    fn selection_keeps_order_drops_repeats_and_rejects_unknown_ranks() {
        let timeline = one_f_one_b(4, 8, 2, 2);
        let selection = RankSelection::new(&timeline, Some(&[5, 1, 5]), Vec::new).unwrap();
        assert_eq!(selection.ranks, vec![5, 1]);
        match RankSelection::new(&timeline, Some(&[16]), Vec::new) {
            Err(ReportError::RankOutOfRange {
                rank: 16,
                n_gpus: 16,
            }) => {}
            other => panic!("expected RankOutOfRange, got {other:?}"),
        }
        assert!(matches!(
            RankSelection::new(&timeline, Some(&[]), Vec::new),
            Err(ReportError::EmptySelection { .. })
        ));
    }
}
