//! The CLI's integration tests, one module per topic, in one test binary (one link
//! instead of one per file): `cargo test -p cli --test it`, a topic alone with
//! `cargo test -p cli --test it <module>::`. The golden outputs (`golden.rs`, the bless
//! tool), the long fuzz run (`fuzz.rs`, which must not share the CPU with other tests
//! under its hang timeout) and the GPU tests the lab bundle carries (`execute.rs`) stay
//! binaries of their own.

mod accuracy;
mod bad_input;
mod bridge_config;
mod cli;
#[path = "../common/mod.rs"]
mod common;
mod context_parallel;
mod era_defaults;
mod fabric_kind;
mod fit;
mod fp8;
mod import_timeline;
mod input_schemas;
mod invariants;
mod json_schemas;
mod kernel_tables;
mod llama3_70b_today;
mod megatron_args;
mod moe;
mod presets;
mod reliability;
mod round3;
mod routing_trace;
mod run_plan;
mod schedules_as_data;
mod seq_len_trace;
mod stdout_full;
mod summary;
mod sweep;
mod sweep_post_validation;
mod symmetry;
mod torchtitan;
mod v_schedules;
mod zero_bubble;
