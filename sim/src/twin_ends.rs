//! When each twin of a replicated run ends ([`crate::replicated_run`]): at
//! its start plus its duration ([`TwinDurations`]), or, a flow task under
//! `--contention`, when the fabric finished it (the engine keeps those
//! ends, [`PlannedEnds`]).

use crate::twin_durations::TwinDurations;
use engine::replicated_flows::PlannedEnds;
use taskgraph::replica_ids::ReplicaIds;
use timeline::time::SimTime;

/// Each twin's end, from its start.
#[derive(Debug, Clone)]
pub(crate) struct TwinEnds {
    pub durations: TwinDurations,
    /// Under `--contention`: the flow tasks' ends.
    pub planned: Option<PlannedEnds>,
}

impl TwinEnds {
    /// The end of representative task `task`'s twin in copy `copy`, which
    /// started at `start`.
    #[inline]
    pub fn end(&self, ids: &ReplicaIds, task: u32, copy: u32, start: SimTime) -> SimTime {
        if let Some(end) = self.planned.as_ref().and_then(|p| p.end(ids, task, copy)) {
            return end;
        }
        start + self.durations.of(ids, task, copy)
    }
}
