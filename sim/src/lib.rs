//! # sim — from a scenario to a timeline (being built; see ARCHITECTURE.md)

pub mod ids;
pub mod profile;
pub mod task;
pub mod time;
pub mod timeline;
