//! What the training options refuse: [`TrainingOptionsFile::resolve`]
//! checks the options against each other and the layout, appending every
//! problem with the key it concerns (the options themselves are declared in
//! `options.rs`).

use crate::options::{Precision, TrainingOptions, TrainingOptionsFile, ZeroStage, MAX_DPU_WARMUP};
use crate::problem::Problem;

impl TrainingOptionsFile {
    /// Validates the options for a layout with `pipeline_parallel` stages
    /// and `data_parallel` replicas; every problem is appended, naming its key.
    pub fn resolve(
        &self,
        pipeline_parallel: u32,
        data_parallel: u32,
        problems: &mut Vec<Problem>,
    ) -> TrainingOptions {
        let options = self.with_defaults();
        self.check_sharding(data_parallel, problems);
        crate::activation_compression::check(&options, problems);
        if self.powersgd_rank == Some(0) {
            problems.push(Problem::new("powersgd_rank", "must be at least 1"));
        }
        let zero_offload = options.offload.is_some();
        let delayed_update = self.delayed_update.unwrap_or(false);
        if delayed_update && !zero_offload {
            problems.push(Problem::new("delayed_update", "needs zero_offload (the delayed parameter update overlaps ZeRO-Offload's CPU optimizer step; add --zero-offload)"));
        }
        if let Some(warmup) = self.dpu_warmup_iterations.filter(|&w| w > MAX_DPU_WARMUP) {
            problems.push(Problem::new("dpu_warmup_iterations", format!(
                "at most {MAX_DPU_WARMUP} (warm-up + 3 iterations are simulated, at most {}), got {warmup}",
                u16::MAX
            )));
        }
        if self.dpu_warmup_iterations.is_some() && !delayed_update {
            problems.push(Problem::new(
                "dpu_warmup_iterations",
                "only meaningful with delayed_update (--delayed-update)",
            ));
        }
        if self.offload_bucket_params.is_some() && !zero_offload {
            problems.push(Problem::new(
                "offload_bucket_params",
                "only meaningful with zero_offload",
            ));
        }
        if self.offload_bucket_params == Some(0) {
            problems.push(Problem::new("offload_bucket_params", "must be at least 1"));
        }
        if zero_offload && pipeline_parallel > 1 {
            problems.push(Problem::new("zero_offload", format!(
                "pipeline parallelism is not supported with ZeRO-Offload (pp = {pipeline_parallel}); it composes with data and tensor parallelism, as in the paper: use --pp 1"
            )));
        }
        if let Some(bucket) = self.grad_reduce_bucket_params {
            if bucket == 0 {
                problems.push(Problem::new(
                    "grad_reduce_bucket_params",
                    "must be at least 1",
                ));
            }
            if self.overlap_grad_reduce != Some(true) && options.sharding != ZeroStage::Gradients {
                problems.push(Problem::new("grad_reduce_bucket_params", "needs overlap_grad_reduce or zero_stage 2 (buckets only matter when the all-reduce overlaps the backward)"));
            }
            if zero_offload {
                problems.push(Problem::new(
                    "grad_reduce_bucket_params",
                    "zero_offload buckets its gradients with offload_bucket_params instead",
                ));
            }
        }
        if options.async_tensor_allreduce && options.sequence_parallel {
            problems.push(Problem::new("async_tensor_allreduce", "Megatron turns it off under sequence_parallel (whose reduce-scatters and all-gathers overlap differently, which is not modeled)"));
        }
        if options.tp_comm_overlap && !options.sequence_parallel {
            problems.push(Problem::new("tp_comm_overlap", "needs sequence_parallel (Megatron-Core overlaps the sequence-parallel all-gathers and reduce-scatters with the linear layers' GEMMs; add --sequence-parallel)"));
        }
        if self.tp_comm_overlap_config.is_some() && !options.tp_comm_overlap {
            problems.push(Problem::new(
                "tp_comm_overlap_config",
                "only meaningful with tp_comm_overlap (--tp-comm-overlap)",
            ));
        }
        if options.tp_comm_overlap && zero_offload {
            problems.push(Problem::new("tp_comm_overlap", "not modeled under zero_offload (DeepSpeed has no Transformer Engine userbuffers overlap)"));
        }
        if zero_offload && options.distributed_optimizer && self.sharding().is_none() {
            problems.push(Problem::new("distributed_optimizer", "ZeRO-Offload already partitions gradients and optimizer states over the data-parallel group"));
        }
        if zero_offload && options.gradient_accumulation_fusion {
            problems.push(Problem::new("gradient_accumulation_fusion", "Megatron's fused accumulation does not apply under zero_offload (DeepSpeed streams gradients to the CPU itself)"));
        }
        if options.grad_reduce_in_bf16 && options.precision == Precision::Fp16 {
            problems.push(Problem::new("grad_reduce_in_bf16", "needs precision bf16 or fp8 (Megatron-LM applies --grad-reduce-in-bf16 under --bf16 only)"));
        }
        crate::optimizer::check_compatible(&options, problems);
        options
    }
}
