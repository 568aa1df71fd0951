//! What the engine asks of a communication task on a shared fabric: its
//! flows and fixed tail ([`FlowPlan`]), from a [`FlowPlanner`] (the
//! simulator's plans each task from its work: `sim::network::FabricFlowPlanner`).

use super::fabric::Fabric;
use taskgraph::ids::TaskId;
use timeline::time::SimDuration;

/// Where a flow runs: between two GPUs, or between a GPU and its host's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FlowEnds {
    /// Source GPU, destination GPU.
    Gpus(u32, u32),
    /// A device-to-host copy from this GPU.
    ToHost(u32),
    /// A host-to-device copy to this GPU.
    FromHost(u32),
}

/// How a communication task runs on a shared fabric: flows, then a fixed tail
/// (per-step latencies, intra-node phases) once the last flow ends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowPlan {
    /// (where, bytes).
    pub flows: Vec<(FlowEnds, u64)>,
    pub tail: SimDuration,
    /// The planner's guarantee that, from the task's start until each of
    /// these flows ends, no other flow uses any of its links (nor do two of
    /// them share one): each then runs at its route's slowest capacity
    /// throughout, which is what the fair-share network would give it, so
    /// the engine times them when they start and keeps them out of the
    /// sharing (`flow_loop.rs`). False unless the planner proves it
    /// (`sim::network::lone_rings`).
    pub alone: bool,
}

/// Tasks that contend for a fabric: the engine asks for each task's plan when it
/// starts; `None` means the task's duration is fixed.
pub trait FlowPlanner {
    fn plan(&self, task: TaskId) -> Option<FlowPlan>;

    /// [`FlowPlanner::plan`] into `plan` (its buffer reused): false, and
    /// `plan` unspecified, when the task is not planned.
    fn plan_into(&self, task: TaskId, plan: &mut FlowPlan) -> bool {
        match self.plan(task) {
            Some(planned) => {
                *plan = planned;
                true
            }
            None => false,
        }
    }
}

/// The fabric and its fair-share state during a run.
pub struct SharedFabric<'a> {
    pub fabric: &'a Fabric,
    pub planner: &'a dyn FlowPlanner,
}
