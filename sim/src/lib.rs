//! # sim — from a scenario to a timeline (being built; see ARCHITECTURE.md)

pub mod collective;
pub mod ids;
pub mod network;
pub mod profile;
pub mod task;
pub mod time;
pub mod timeline;
