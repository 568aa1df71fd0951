//! How a resolved scenario describes itself: chart titles and the JSON
//! stored in timeline headers.

use super::{Offload, Scenario};

/// The training options a title names when they are on, in a fixed order;
/// shared by scenario titles and sweep titles.
pub struct TrainingOptionLabels {
    pub sequence_parallel: bool,
    pub overlap_grad_reduce: bool,
    pub grad_reduce_bucket_params: Option<u64>,
    pub gradient_accumulation_fusion: bool,
    pub async_tensor_allreduce: bool,
}

impl TrainingOptionLabels {
    /// " · label" for every option on ("" when none is).
    pub fn suffix(&self) -> String {
        let mut labels = Vec::new();
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
        if self.async_tensor_allreduce {
            labels.push("async TP all-reduce".into());
        }
        labels.iter().map(|label| format!(" · {label}")).collect()
    }
}

impl Scenario {
    /// One-line description used as chart and report titles.
    pub fn title(&self) -> String {
        let l = &self.layout;
        let offload = match self.offload {
            None => String::new(),
            Some(Offload {
                delayed_update: false,
                ..
            }) => " · ZeRO-Offload".into(),
            Some(Offload {
                delayed_update: true,
                dpu_warmup_iterations,
                ..
            }) => format!(
                " · ZeRO-Offload + DPU (warm-up {dpu_warmup_iterations}, {} iterations)",
                self.iterations
            ),
        };
        let contention = if self.network_contention {
            " · contention"
        } else {
            ""
        };
        let options = TrainingOptionLabels {
            sequence_parallel: self.sequence_parallel,
            overlap_grad_reduce: self.overlap_grad_reduce,
            grad_reduce_bucket_params: self.grad_reduce_bucket_params,
            gradient_accumulation_fusion: self.gradient_accumulation_fusion,
            async_tensor_allreduce: self.async_tensor_allreduce,
        }
        .suffix();
        format!(
            "{} on {} · t={} p={} d={} v={} · b={} B={} · {} · recompute={}{options}{offload}{contention}",
            self.model.name,
            self.topology.name,
            l.tensor_parallel,
            l.pipeline_parallel,
            l.data_parallel,
            l.chunks,
            l.microbatch_size,
            l.global_batch,
            self.schedule.name(),
            self.recompute.name(),
        )
    }

    /// The resolved scenario as JSON (model and topology inline), for timeline headers.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::json!({
            "title": self.title(),
            "model": self.model,
            "topology": self.topology,
            "profile": self.profile.id,
            "layout": self.layout,
            "schedule": self.schedule,
            "recompute": self.recompute,
            "pipeline_scatter_gather": self.pipeline_scatter_gather,
            "network_contention": self.network_contention,
            "sequence_parallel": self.sequence_parallel,
            "overlap_grad_reduce": self.overlap_grad_reduce,
            "grad_reduce_bucket_params": self.grad_reduce_bucket_params,
            "gradient_accumulation_fusion": self.gradient_accumulation_fusion,
            "async_tensor_allreduce": self.async_tensor_allreduce,
            "seed": self.seed,
        });
        if let Some(offload) = &self.offload {
            value["zero_offload"] = serde_json::json!(offload);
            value["iterations"] = self.iterations.into();
        }
        value
    }
}
