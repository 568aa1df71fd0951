//! The sharded-data-parallel options (`zero_stage`, `shard_group_size`,
//! `overlap_param_gather`, declared in `options.rs`): the mode's type and
//! the keys' checks and conflicts with the other options.

use crate::options::TrainingOptionsFile;
use crate::problem::Problem;
pub use crate::zero_stage::ZeroStage;

impl TrainingOptionsFile {
    /// The sharding mode `zero_stage` asks for (None when unset or past 3).
    pub fn sharding(&self) -> Option<ZeroStage> {
        self.zero_stage.and_then(ZeroStage::from_stage)
    }

    /// The sharding keys' own checks and their conflicts with the others.
    pub(super) fn check_sharding(&self, data_parallel: u32, problems: &mut Vec<Problem>) {
        if self.overlap_param_gather == Some(true) {
            // megatron/training/arguments.py (2024): "--overlap-param-gather only
            // supported with distributed optimizer" and "... with --overlap-grad-reduce".
            let distributed = self.distributed_optimizer == Some(true)
                || self.sharding() == Some(ZeroStage::Optimizer);
            if !distributed {
                problems.push(Problem::new("overlap_param_gather", "needs the distributed optimizer (--distributed-optimizer or --zero-stage 1; zero_stage 3 gathers per layer by itself)"));
            }
            if self.overlap_grad_reduce != Some(true) {
                problems.push(Problem::new(
                    "overlap_param_gather",
                    "needs overlap_grad_reduce, as Megatron asserts",
                ));
            }
        }
        if let Some(stage) = self.zero_stage.filter(|&stage| stage > 3) {
            problems.push(Problem::new(
                "zero_stage",
                format!("must be 0, 1, 2 or 3 (ZeRO's stages), got {stage}"),
            ));
        }
        let Some(sharding) = self.sharding() else {
            if self.shard_group_size.is_some() {
                problems.push(Problem::new(
                    "shard_group_size",
                    "needs zero_stage 2 or 3 (--zero-stage)",
                ));
            }
            return;
        };
        match (sharding, self.distributed_optimizer) {
            (ZeroStage::None, Some(true)) => problems.push(Problem::new("zero_stage", "0 contradicts distributed_optimizer = true (which is zero_stage 1)")),
            (ZeroStage::Optimizer | ZeroStage::Gradients | ZeroStage::Full, Some(false)) => {
                problems.push(Problem::new("zero_stage", format!(
                    "{} shards the optimizer states, which contradicts distributed_optimizer = false",
                    sharding.stage()
                )))
            }
            _ => {}
        }
        if sharding != ZeroStage::None && self.zero_offload == Some(true) {
            problems.push(Problem::new("zero_stage", "ZeRO-Offload already partitions gradients and optimizer states over the data-parallel group"));
        }
        if sharding >= ZeroStage::Gradients && self.overlap_grad_reduce == Some(true) {
            problems.push(Problem::new(
                "overlap_grad_reduce",
                format!(
                    "zero_stage {} already reduce-scatters gradients as the backward produces them",
                    sharding.stage()
                ),
            ));
        }
        if sharding == ZeroStage::Full && self.grad_reduce_bucket_params.is_some() {
            problems.push(Problem::new("grad_reduce_bucket_params", "zero_stage 3 reduce-scatters each layer's gradients (one FSDP unit per layer), not buckets"));
        }
        if let Some(group) = self.shard_group_size {
            if sharding < ZeroStage::Gradients {
                problems.push(Problem::new(
                    "shard_group_size",
                    format!(
                        "HSDP is built for zero_stage 2 or 3, not {}",
                        sharding.stage()
                    ),
                ));
            }
            if group == 0 {
                problems.push(Problem::new("shard_group_size", "must be at least 1"));
            } else if !data_parallel.is_multiple_of(group) {
                problems.push(Problem::new(
                    "shard_group_size",
                    format!("must divide the data-parallel size {data_parallel} (got {group})"),
                ));
            }
        }
    }
}
