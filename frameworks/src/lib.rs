//! Training frameworks' own configurations read as clustersim scenarios: a
//! user describes a run in the terms of the framework that trains it, and
//! gets the scenario those terms mean, what each argument was read as, what
//! was ignored and why, and a refusal naming what cannot be modeled.
//!
//! - [`megatron_args`]: Megatron-LM's `pretrain_gpt.py` argument list
//!   (`simulate --megatron-args`);
//! - [`torchtitan`]: a torchtitan training TOML (`simulate --torchtitan`);
//! - [`bridge`]: a Megatron-Bridge / NeMo 2 configuration YAML
//!   (`simulate --bridge-config`), through the Megatron arguments it maps to.

pub mod bridge;
pub mod megatron_args;
mod megatron_flags;
mod reading;
mod toml_keys;
pub mod torchtitan;

pub use reading::{Ignored, Reading, Translation, TranslationError};
