//! The plan: what is decided once from a validated [`scenario::Scenario`]
//! before anything is lowered, priced or counted, and read by every later
//! phase instead of being rebuilt or read back from lowering.
//!
//! [`Plan::of`] derives it once: the pipeline schedule ([`schedule_of`]),
//! the placement, the ZeRO shard plan ([`shard_plan`]), the ZeRO-Offload
//! plan ([`offload_plan`]) and the representative replica; lowering emits
//! their tasks, memory sizes their buffers and symmetry decides from it.
//! Gradient buckets are [`buckets`]. `--explain`, the flow planner and the
//! layer breakdown read the plan's placement.

pub mod buckets;
pub mod offload_plan;
mod pipeline_schedule;
pub mod shard_plan;

pub use offload_plan::OffloadPlan;
pub use pipeline_schedule::schedule_of;
pub use shard_plan::ShardPlan;

use crate::placement::{representative, Placement, Representative};
use scenario::Scenario;
use schedules::PipelineSchedule;

/// What is decided once from a validated scenario, before anything is
/// lowered, priced or counted.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Each pipeline stage's program of actions.
    pub schedule: PipelineSchedule,
    /// Which GPU runs which rank, in Megatron-Core's order.
    pub placement: Placement,
    /// ZeRO-2/3 and HSDP: how passes are cut and gradients sharded.
    pub shard_plan: Option<ShardPlan>,
    /// ZeRO-Offload: its gradient buckets and CPU Adam tiles.
    pub offload_plan: Option<OffloadPlan>,
    /// The replica a symmetric run lowers for all.
    pub representative: Representative,
}

impl Plan {
    /// The plan of `scenario`.
    pub fn of(scenario: &Scenario) -> Plan {
        Plan {
            schedule: schedule_of(scenario),
            placement: Placement::of(scenario),
            shard_plan: ShardPlan::new(scenario),
            offload_plan: scenario.options.offload.map(|_| OffloadPlan::new(scenario)),
            representative: representative(scenario),
        }
    }

    /// The ZeRO-Offload plan of a scenario with ZeRO-Offload (validated:
    /// [`Plan::of`] builds one exactly then).
    pub fn offload(&self) -> &OffloadPlan {
        self.offload_plan
            .as_ref()
            .expect("the plan of an offload scenario has one")
    }
}
