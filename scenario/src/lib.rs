//! A scenario: model + topology + profile + parallel layout + schedule +
//! options. Parsed in two phases, as ripgrep does: a raw [`ScenarioFile`]
//! (every key optional, unknown keys rejected; CLI flags override it) is
//! resolved into a validated [`Scenario`]. Resolution reports every problem at
//! once, each naming its field.

pub mod activation_compression;
pub mod bucket_sizes;
mod context;
mod describe;
pub mod era;
pub mod expert_capacity;
pub mod expert_imbalance;
mod expert_tensor;
pub mod experts;
pub mod fitted;
mod iterations;
mod kinds;
mod layout;
mod mla;
pub mod moe_comm;
mod moe_dispatcher;
mod offload;
pub mod optimizer;
mod options;
mod options_checks;
mod options_title;
mod pipeline_layout;
pub mod post_validation;
mod powersgd;
mod precision;
mod problem;
mod resolve;
mod resolved;
pub mod routing_trace;
mod scenario_file;
pub mod seq_len_trace;
mod sequence_parallel;
mod sharding;
mod stack;
mod stack_file;
mod task_count;
mod trace_lines;
pub mod userbuffers;
mod zero_stage;
pub mod zeropp;

pub use activation_compression::CompressionRatio;
pub use kinds::Recompute;
pub use layout::Layout;
pub use moe_dispatcher::MoeDispatcher;
pub use offload::{Offload, DEFAULT_DPU_WARMUP_ITERATIONS, DEFAULT_OFFLOAD_BUCKET_PARAMS};
pub use optimizer::Optimizer;
pub use options::{Precision, TrainingOptions, TrainingOptionsFile, ZeroStage};
pub use problem::{Problem, GPU_COUNT_FIELD};
pub use resolved::{Scenario, ScenarioError};
pub use scenario_file::ScenarioFile;
pub use schedules::ScheduleKind;
pub use stack::{HostCosts, LocalDdpKernels, NotModeled, Stack, StackError, DEFAULT_STACK};
pub use task_count::{
    estimated_task_count, task_limit, GradientSplits, ADDRESS_BYTES_PER_GPU,
    ADDRESS_BYTES_PER_REPLICATED_FLOW_TASK, ADDRESS_BYTES_PER_REPLICATED_TASK,
    ADDRESS_BYTES_PER_TASK, BYTES_PER_GPU, BYTES_PER_REPLICATED_FLOW_TASK,
    BYTES_PER_REPLICATED_TASK, BYTES_PER_TASK, MAX_TASKS, TASK_LIMIT_VARIABLE,
};
pub use userbuffers::UserbuffersConfig;
pub use zeropp::ZeroPlusPlus;

#[cfg(test)]
use std::num::NonZeroU32;

/// A degree written in a test: `n`, which must not be 0.
#[cfg(test)]
pub(crate) fn degree(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).expect("a test's degree is at least 1")
}
