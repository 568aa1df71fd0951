//! The flow-level network behind `--contention`: the fabric, routes and
//! max-min fair sharing are the engine's (`engine::network`, re-exported
//! here); which communication tasks become which flows is the simulator's
//! ([`FabricFlowPlanner`], from each task's work and the placement; a
//! twin in another replica through `TwinPlanner`).

pub use engine::network::*;

mod flows;
mod lone_rings;
mod twin_planner;

pub use flows::FabricFlowPlanner;
pub(crate) use twin_planner::TwinPlanner;
