//! How titles name the training options: [`TrainingOptions::title_suffix`],
//! one label per option that is on, in a fixed order.

use crate::offload::Offload;
use crate::options::{Precision, TrainingOptions, ZeroStage};
use crate::userbuffers::UserbuffersConfig;

impl TrainingOptions {
    /// " · label" for every option that is on, in a fixed order ("" when
    /// none is); `iterations` is the number simulated (shown with the delayed update).
    pub fn title_suffix(&self, iterations: u32) -> String {
        let mut labels = Vec::new();
        if self.precision != Precision::default() {
            labels.push(self.precision.name().to_string());
        }
        if !self.optimizer.is_default() {
            labels.push(self.optimizer.name().to_string());
        }
        if self.sequence_parallel {
            labels.push("sequence parallel".to_string());
        }
        match (self.overlap_grad_reduce, self.grad_reduce_bucket_params) {
            (false, _) => {}
            (true, None) => labels.push("overlapped grad reduce".into()),
            (true, Some(bucket)) => {
                labels.push(format!("overlapped grad reduce ({bucket}-param buckets)"))
            }
        }
        if self.gradient_accumulation_fusion {
            labels.push("fused grad accumulation".into());
        }
        if self.grad_reduce_in_bf16 {
            labels.push("bf16 grad reduce".into());
        }
        if self.activation_offload_layers > 0 {
            labels.push(format!(
                "activations of {} layers offloaded to CPU",
                self.activation_offload_layers
            ));
        }
        match self.sharding {
            ZeroStage::None | ZeroStage::Optimizer if self.distributed_optimizer => {
                labels.push("distributed optimizer".into())
            }
            ZeroStage::None | ZeroStage::Optimizer => {}
            ZeroStage::Gradients => labels.push("ZeRO-2 sharded gradients".into()),
            ZeroStage::Full => labels.push("ZeRO-3/FSDP full sharding".into()),
        }
        if let Some(group) = self.shard_group_size {
            labels.push(format!("HSDP shard groups of {group}"));
        }
        if self.overlap_param_gather {
            labels.push("overlapped param gather".into());
        }
        if let Some(label) = self.zeropp.label() {
            labels.push(label);
        }
        if let Some(ratio) = self.activation_compression {
            labels.push(format!("activations compressed {}x", ratio.get()));
        }
        if let Some(rank) = self.powersgd_rank {
            labels.push(format!("PowerSGD rank {rank}"));
        }
        if self.async_tensor_allreduce {
            labels.push("async TP all-reduce".into());
        }
        if self.tp_comm_overlap {
            labels.push(match self.tp_comm_overlap_config {
                UserbuffersConfig::TeDefaults => "TP comm overlap".into(),
                config => format!("TP comm overlap ({})", config.name()),
            });
        }
        match self.offload {
            None => {}
            Some(Offload {
                delayed_update: false,
                ..
            }) => labels.push("ZeRO-Offload".into()),
            Some(Offload {
                delayed_update: true,
                dpu_warmup_iterations,
                ..
            }) => labels.push(format!(
                "ZeRO-Offload + DPU (warm-up {dpu_warmup_iterations}, {iterations} iterations)"
            )),
        }
        if self.optimizer_post_validation {
            labels.push(format!(
                "optimizer post-validation ({iterations} iterations)"
            ));
        }
        if self.pair_overlap {
            labels.push("overlapped F&B pairs".into());
        }
        if !self.moe_dispatcher.is_default() {
            labels.push(format!("{} dispatcher", self.moe_dispatcher.name()));
        }
        if self.network_contention {
            labels.push("contention".into());
        }
        labels.iter().map(|label| format!(" · {label}")).collect()
    }
}
