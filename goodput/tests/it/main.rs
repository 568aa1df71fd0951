//! The goodput crate's integration tests, one module per topic.

mod agreement;
mod bad_inputs;
mod determinism;
mod fixtures;
mod intervals;
mod sanity_405b;
