//! GPU memory per rank: model states (fp16 weights, fp16 gradients, fp32
//! Adam states: 16 bytes per parameter, ZeRO paper Sec. 3.1), activations of
//! the microbatches in flight (the schedule's own peak, counted from its action
//! list), the head's logits, and pipeline buffers. Allocator fragmentation and
//! library workspaces are not modeled; the report says so.

use crate::scenario::{Layout, Recompute, Scenario};
use crate::schedule::PipelineSchedule;
use models::memory::{
    activation_bytes_per_layer, checkpoint_bytes_per_layer, GRADIENT_BYTES_PER_PARAM,
    OPTIMIZER_BYTES_PER_PARAM, WEIGHT_BYTES_PER_PARAM,
};
use models::{formulas, ModelSpec};
use serde::Serialize;

/// Parameters held by one rank of pipeline stage `stage`: its layers split t
/// ways, the vocab-parallel word embedding on the first virtual stage (plus
/// position embeddings, replicated), and the tied output embedding copy plus
/// final LayerNorm on the last virtual stage.
pub fn parameters_on_rank(model: &ModelSpec, layout: &Layout, stage: u32) -> u64 {
    let t = layout.tensor_parallel as u64;
    let virtual_stages = layout.virtual_stages();
    let layers_per_chunk = model.layers / virtual_stages as u64;
    let mut params = 0;
    for chunk in 0..layout.chunks {
        let virtual_stage = chunk * layout.pipeline_parallel + stage;
        params += layers_per_chunk * formulas::layer_parameters(model) / t;
        if virtual_stage == 0 {
            params += model.vocab * model.hidden / t + model.seq_len * model.hidden;
        }
        if virtual_stage == virtual_stages - 1 {
            if virtual_stages > 1 {
                params += model.vocab * model.hidden / t;
            }
            params += 2 * model.hidden;
        }
    }
    params
}

/// Memory use of one rank at its peak.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemoryBreakdown {
    pub stage: u32,
    pub parameters: u64,
    pub weight_bytes: u64,
    pub gradient_bytes: u64,
    pub optimizer_state_bytes: u64,
    pub activation_bytes: u64,
    pub peak_microbatches_in_flight: u32,
    pub total_bytes: u64,
    pub capacity_bytes: u64,
    pub fits: bool,
}

/// Peak memory of one rank of every stage.
pub fn memory_per_stage(scenario: &Scenario, schedule: &PipelineSchedule) -> Vec<MemoryBreakdown> {
    let model = &scenario.model;
    let layout = &scenario.layout;
    let (b, t) = (layout.microbatch_size as u64, layout.tensor_parallel as u64);
    let layers_per_chunk = model.layers / layout.virtual_stages() as u64;
    let per_microbatch_chunk = match scenario.recompute {
        Recompute::None => layers_per_chunk as f64 * activation_bytes_per_layer(model, b, t),
        Recompute::Full => layers_per_chunk as f64 * checkpoint_bytes_per_layer(model, b),
    };
    // Working set while one layer's activations are live (full recompute keeps only one at a time).
    let working_layer = match scenario.recompute {
        Recompute::None => 0.0,
        Recompute::Full => activation_bytes_per_layer(model, b, t),
    };
    let hidden_bytes = (b * model.seq_len * model.hidden * 2) as f64;
    (0..layout.pipeline_parallel)
        .map(|stage| {
            let parameters = parameters_on_rank(model, layout, stage);
            let in_flight = schedule.peak_in_flight(stage);
            let is_last = (0..layout.chunks)
                .any(|c| c * layout.pipeline_parallel + stage == layout.virtual_stages() - 1);
            // fp16 logits plus their fp32 softmax for the loss, one microbatch at a time.
            let logits = if is_last {
                (b * model.seq_len * model.vocab / t * 6) as f64
            } else {
                0.0
            };
            // Send and receive buffers for both directions.
            let pipeline_buffers = if layout.pipeline_parallel > 1 {
                4.0 * hidden_bytes
            } else {
                0.0
            };
            let activation_bytes = (in_flight as f64 * per_microbatch_chunk
                + working_layer
                + logits
                + pipeline_buffers) as u64;
            let weight_bytes = parameters * WEIGHT_BYTES_PER_PARAM;
            let gradient_bytes = parameters * GRADIENT_BYTES_PER_PARAM;
            let optimizer_state_bytes = parameters * OPTIMIZER_BYTES_PER_PARAM;
            let total_bytes =
                weight_bytes + gradient_bytes + optimizer_state_bytes + activation_bytes;
            let capacity_bytes = scenario.topology.gpu.hbm_bytes;
            MemoryBreakdown {
                stage,
                parameters,
                weight_bytes,
                gradient_bytes,
                optimizer_state_bytes,
                activation_bytes,
                peak_microbatches_in_flight: in_flight,
                total_bytes,
                capacity_bytes,
                fits: total_bytes <= capacity_bytes,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ScenarioFile;

    #[test]
    fn parameters_summed_over_ranks_equal_the_model_plus_tied_copy() {
        let scenario = ScenarioFile::embedded_default().resolve().unwrap();
        let layout = scenario.layout;
        let total: u64 = (0..layout.pipeline_parallel)
            .map(|stage| {
                parameters_on_rank(&scenario.model, &layout, stage) * layout.tensor_parallel as u64
            })
            .sum();
        let model = &scenario.model;
        let expected = formulas::parameter_count(model)
            + model.vocab * model.hidden // tied output embedding on the last stage
            + model.seq_len * model.hidden * (layout.tensor_parallel as u64 - 1) // replicated position embeddings
            + 2 * model.hidden * layout.tensor_parallel as u64; // final LayerNorm, replicated
        assert_eq!(total, expected);
    }
}
