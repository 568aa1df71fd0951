//! Megatron-Core's tensor-parallel communication overlap (`--tp-comm-overlap`,
//! Transformer Engine userbuffers): with sequence parallelism each linear
//! layer's all-gather (of its sequence-sharded input) or reduce-scatter (of
//! its partial output) is split into chunks exchanged around the ring while
//! the GEMM computes on the chunks already there, so only the part of the
//! collective longer than its GEMM is exposed (Megatron-Core
//! `ModelParallelConfig.tp_comm_overlap`: "overlapping of Linear layer
//! execution with tensor parallel communication collectives like
//! AllGather/ReduceScatter ... during the forward and the backward pass";
//! Megatron Bridge's communication-overlap guide: it needs tensor
//! parallelism and sequence parallelism).
//!
//! A layer lists each sequence-parallel reduce-scatter + all-gather pair as
//! one [`Step::TensorAllReduce`] (a ring costs RS + AG exactly as the
//! all-reduce, half each). Which GEMM hides which half, by the GEMM just
//! before the step:
//!
//! | step after | reduce-scatter hidden by | all-gather hidden by |
//! |---|---|---|
//! | `output_projection` (fwd) | `output_projection` (row-parallel output) | `mlp_fc1` (its input) |
//! | `mlp_fc2` (fwd) | `mlp_fc2` | `qkv_gemm` (the next layer's input; every layer is the same) |
//! | `mlp_fc1.wgrad` (bwd) | `mlp_fc1.wgrad` (bulk overlap of the input-gradient RS) | `mlp_fc2.dgrad` (all-gather of its output gradient) |
//! | `qkv_gemm.wgrad` (bwd) | `qkv_gemm.wgrad` | `output_projection.dgrad` |
//!
//! Any other tensor all-reduce (the embedding's, the head's) is charged in
//! full.
//!
//! The communication's SMs (the scenario's `tp_comm_overlap_config`, see
//! [`scenario::userbuffers`]): with a half of time A hidden by a GEMM
//! of time G on a GPU of S SMs, whose userbuffers method holds n SMs,
//! - with `set_sm_margin` the GEMM runs on S − n SMs all along (G·S/(S − n),
//!   full waves assumed) beside the communication: the half adds
//!   max(G·S/(S − n), A) − G;
//! - without it the communication kernel shares the SMs while it runs, as
//!   an NCCL collective does ([`super::comm_sms`]): the GEMM progresses at
//!   (S − n)/S of its rate during A, and the half adds A − min(G, A·(1 − n/S));
//! - ring exchanges on the copy engines hold no SM: max(0, A − G).
//!
//! Not modeled: the bulk all-gathers of the LayerNorm outputs that the
//! weight-gradient GEMMs need under sequence parallelism (`qkv_dgrad`,
//! `fc1_dgrad` in TE's names) are not steps of the layer, so neither their
//! time nor their SMs are charged; nor the pipelined chunks' last
//! reduce-scatter, which no GEMM chunk hides (`num_splits`).

use super::KernelCostModel;
use models::ops::{KernelClass, Step};
use scenario::userbuffers::{OverlapMethod, UserbuffersConfig};
use timeline::time::SimDuration;

/// The GEMMs hiding the (reduce-scatter, all-gather) halves of the tensor
/// all-reduce that follows `gemm`, per the table above.
pub fn overlapping_gemms(gemm: &str) -> Option<(&'static str, &'static str)> {
    Some(match gemm {
        "output_projection" => ("output_projection", "mlp_fc1"),
        "mlp_fc2" => ("mlp_fc2", "qkv_gemm"),
        "mlp_fc1.wgrad" => ("mlp_fc1.wgrad", "mlp_fc2.dgrad"),
        "qkv_gemm.wgrad" => ("qkv_gemm.wgrad", "output_projection.dgrad"),
        _ => return None,
    })
}

/// Transformer Engine's name (`UB_GEMMS`) for the GEMM this simulator calls
/// `gemm`.
pub fn te_gemm_name(gemm: &str) -> Option<&'static str> {
    Some(match gemm {
        "qkv_gemm" => "qkv_fprop",
        "output_projection" => "proj_fprop",
        "mlp_fc1" => "fc1_fprop",
        "mlp_fc2" => "fc2_fprop",
        "qkv_gemm.dgrad" => "qkv_dgrad",
        "output_projection.dgrad" => "proj_dgrad",
        "mlp_fc1.dgrad" => "fc1_dgrad",
        "mlp_fc2.dgrad" => "fc2_dgrad",
        "qkv_gemm.wgrad" => "qkv_wgrad",
        "mlp_fc1.wgrad" => "fc1_wgrad",
        _ => return None,
    })
}

/// What a half of `comm_s` seconds hidden by a GEMM of `gemm_s` seconds adds,
/// its communication using `method` on a GPU of `sm_count` SMs (the rule in
/// the module header).
pub fn exposed_half_seconds(comm_s: f64, gemm_s: f64, method: OverlapMethod, sm_count: u32) -> f64 {
    let sms = f64::from(sm_count);
    let held = f64::from(method.comm_sms);
    if sm_count == 0 || held >= sms {
        return (comm_s - gemm_s).max(0.0);
    }
    if method.set_sm_margin {
        (gemm_s * sms / (sms - held)).max(comm_s) - gemm_s
    } else {
        comm_s - gemm_s.min(comm_s * (1.0 - held / sms))
    }
}

fn is_gemm(step: &Step) -> Option<&'static str> {
    match step {
        Step::Kernel(kernel)
            if matches!(
                kernel.class,
                KernelClass::Gemm { .. } | KernelClass::Fp8Gemm { .. }
            ) =>
        {
            Some(kernel.name)
        }
        _ => None,
    }
}

/// What the tensor all-reduce at `steps[index]`, costing `full` alone, adds
/// under `--tp-comm-overlap` with userbuffers configuration `config` on a GPU
/// of `sm_count` SMs: each half's [`exposed_half_seconds`] beside the GEMM
/// that hides it, each rounded up to a nanosecond; `full` when no GEMM hides it.
pub fn exposed_with_tp_overlap(
    full: SimDuration,
    steps: &[Step],
    index: usize,
    kernels: &KernelCostModel,
    config: UserbuffersConfig,
    sm_count: u32,
) -> SimDuration {
    let Some((reduce_scatter, all_gather)) = steps[..index]
        .iter()
        .rev()
        .find_map(is_gemm)
        .and_then(overlapping_gemms)
    else {
        return full;
    };
    let gemm_seconds = |name: &str| {
        steps.iter().find_map(|step| match step {
            Step::Kernel(kernel) if kernel.name == name => Some(kernels.kernel_seconds(kernel)),
            _ => None,
        })
    };
    let (Some(rs_s), Some(ag_s)) = (gemm_seconds(reduce_scatter), gemm_seconds(all_gather)) else {
        return full;
    };
    let half_s = full.as_seconds() / 2.0;
    let method = |gemm: &str| {
        te_gemm_name(gemm)
            .and_then(|name| config.method(name))
            .unwrap_or(OverlapMethod {
                comm_sms: 0,
                set_sm_margin: false,
            })
    };
    SimDuration::from_seconds_ceil(exposed_half_seconds(
        half_s,
        rs_s,
        method(reduce_scatter),
        sm_count,
    )) + SimDuration::from_seconds_ceil(exposed_half_seconds(
        half_s,
        ag_s,
        method(all_gather),
        sm_count,
    ))
}
