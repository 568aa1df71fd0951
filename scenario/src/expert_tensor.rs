//! What expert tensor parallelism (`etp`, Megatron-Core's
//! `--expert-tensor-parallel-size`) requires of the model and the options.
//!
//! Built (`models::moe_ops`, `sim::placement`): each local expert's fc1
//! column-parallel and fc2 row-parallel over the expert tensor group of etp
//! ranks (`TEColumnParallelGroupedLinear` / `TERowParallelGroupedLinear`
//! over `pg_collection.expt_tp`, `megatron/core/transformer/moe/experts.py`
//! and `megatron/core/extensions/transformer_engine.py` at core_r0.15.0
//! 575b0fbd), the dispatched tokens all-gathered over that group after the
//! dispatch all-to-all and the experts' partial outputs reduce-scattered
//! before the combine (`token_dispatcher.py`
//! `MoEAlltoAllTokenDispatcher`: "AG(TP)", "RS(TP)"), the routed experts'
//! parameters split ep·etp ways and their gradients reduced over the
//! expert-data group t·cp·d/(ep·etp).
//!
//! Refused here, each naming its key: an etp that does not divide the
//! expert's inner size F (the column- and row-parallel split of F), FP8
//! (its experts' per-shard FP8 weights, casts and saved inputs are not
//! built), and `--contention` (the expert tensor group's all-gathers and
//! reduce-scatters are not planned as fabric flows). Biased experts stay
//! refused for every etp (Megatron-Core asserts "Bias in Moe is only
//! supported when ETP==1", `transformer_config.py`).

use crate::options::{Precision, TrainingOptions};
use crate::problem::Problem;
use models::ModelSpec;

/// The problems of expert tensor parallelism `etp` with `model` and
/// `options`; nothing at etp = 1.
pub fn check(model: &ModelSpec, etp: u32, options: &TrainingOptions, problems: &mut Vec<Problem>) {
    let Some(moe) = &model.moe else {
        return;
    };
    if etp <= 1 {
        return;
    }
    if !moe.expert_ffn_hidden.is_multiple_of(etp as u64) {
        problems.push(Problem::new("etp", format!(
            "the experts' inner size {} must split evenly over etp = {etp} ranks (fc1 column-parallel, fc2 row-parallel)",
            moe.expert_ffn_hidden
        )));
    }
    if options.precision == Precision::Fp8 {
        problems.push(Problem::new("precision", format!(
            "fp8 with expert tensor parallelism (etp = {etp}) is not simulated yet (the experts' FP8 weight shards, casts and saved inputs are not built); use bf16 or etp 1"
        )));
    }
    if options.network_contention {
        problems.push(Problem::new("network_contention", format!(
            "expert tensor parallelism (etp = {etp}) under contention is not simulated yet (its all-gathers and reduce-scatters are not planned as flows); run without contention or with etp 1"
        )));
    }
}
