//! The plan: what is decided once from a validated [`scenario::Scenario`]
//! before anything is lowered, priced or counted, and read by every later
//! phase instead of being rebuilt or read back from lowering.
//!
//! Today it holds the gradient buckets ([`buckets`]), the ZeRO shard plan
//! ([`shard_plan`]), the ZeRO-Offload plan ([`offload_plan`]) and the
//! scenario's pipeline schedule ([`schedule_of`]): lowering emits their
//! tasks, memory sizes their buffers, symmetry asks whether shard groups
//! replicate. Still derived elsewhere (issue 31 item 1): placement, the stage
//! map, expert routing, the task estimate (`scenario::task_count`) and fabric
//! feasibility.

pub mod buckets;
pub mod offload_plan;
mod pipeline_schedule;
pub mod shard_plan;

pub use offload_plan::OffloadPlan;
pub use pipeline_schedule::schedule_of;
pub use shard_plan::ShardPlan;
