//! The workspace's integration tests, one module per topic, in one test binary:
//! one link instead of one per file (`cargo test -p tests --test it`; a topic alone:
//! `cargo test -p tests --test it <module>::`).

mod activation_compression;
mod activation_offload;
mod bubble;
mod bubble_chart_series;
mod checkpoint_size;
mod cluster_presets;
mod collective_calibration;
mod compare;
mod contention;
mod context_parallel;
mod deepseek_v3;
mod distributed_optimizer;
mod dualpipe;
mod embedding_all_reduce;
mod engine_properties;
mod engine_reference;
mod fair_share_properties;
mod fit;
mod fp8;
mod grad_reduce_bf16;
mod h100_moe_published;
mod h100_published;
mod local_ddp;
mod measured_h100;
mod moe;
mod moe_capacity;
mod moe_expert_tensor;
mod moe_host_sync;
mod moe_layer_routing;
mod offload;
mod onebit_adam;
mod optimizers;
mod p2p_bubble;
mod pair_overlap;
mod post_validation;
mod powersgd;
mod qwen3_moe;
mod replicated_contention;
mod replicated_run;
mod ring_step_flows;
mod scenario_validation;
mod schedules_as_data;
mod seq_len_override;
mod sharded_data_parallel;
mod slow_links;
mod slow_pcie;
mod slow_uplinks;
mod split_backward_memory;
mod stragglers;
mod summary_run;
mod symmetry;
mod symmetry_exceptions;
mod tp_comm_overlap;
mod uneven_stages;
mod v_schedules;
mod vtrain;
mod zero_bubble;
mod zeropp;

/// A degree written in a test: `n`, which must not be 0.
fn degree(n: u32) -> std::num::NonZeroU32 {
    std::num::NonZeroU32::new(n).expect("a test's degree is at least 1")
}

/// [`degree`] as a `NonZeroU64`, as the `models` formulas take it.
fn nz(n: u64) -> std::num::NonZeroU64 {
    std::num::NonZeroU64::new(n).expect("a test's degree is at least 1")
}
