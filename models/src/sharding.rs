//! Parameter counts per GPU under Megatron's sharding: layers split evenly
//! over p·v virtual stages, every weight matrix split t ways, the word
//! embedding vocab-parallel. Pure counts: no bytes, no time.

use crate::{formulas, ModelSpec};

/// How a model is cut up: tensor-parallel degree t, pipeline stages p and
/// model chunks per stage v (interleaved schedules), so p·v virtual stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharding {
    pub tensor_parallel: u32,
    pub pipeline_parallel: u32,
    pub chunks: u32,
}

impl Sharding {
    /// Virtual stages p·v.
    pub fn virtual_stages(&self) -> u32 {
        self.pipeline_parallel * self.chunks
    }
}

/// Parameters held by one rank of pipeline stage `stage`: its layers split t
/// ways, the vocab-parallel word embedding on the first virtual stage (plus
/// position embeddings, replicated, unless RoPE), and the output layer (the
/// tied embedding's copy, or the untied output matrix) plus final norm on the
/// last virtual stage.
pub fn parameters_on_rank(model: &ModelSpec, sharding: Sharding, stage: u32) -> u64 {
    // The sum of `parameters_of_chunk` over the stage's chunks in closed
    // form (a user may ask for 2³¹ chunks: validation refuses them, but
    // counts them first): every chunk has the same layers; the first
    // virtual stage (chunk 0 of stage 0) adds the embedding and the last
    // (chunk v−1 of stage p−1) the head.
    let layers_per_chunk = model.layers / sharding.virtual_stages() as u64;
    let layers = parameters_of_layers(model, sharding, layers_per_chunk, false, false);
    let ends = parameters_of_layers(
        model,
        sharding,
        0,
        stage == 0,
        stage + 1 == sharding.pipeline_parallel,
    );
    layers
        .saturating_mul(sharding.chunks as u64)
        .saturating_add(ends)
}

/// Parameters of one model chunk on one rank of pipeline stage `stage`.
pub fn parameters_of_chunk(model: &ModelSpec, sharding: Sharding, stage: u32, chunk: u32) -> u64 {
    let virtual_stages = sharding.virtual_stages();
    let layers_per_chunk = model.layers / virtual_stages as u64;
    let virtual_stage = chunk * sharding.pipeline_parallel + stage;
    parameters_of_layers(
        model,
        sharding,
        layers_per_chunk,
        virtual_stage == 0,
        virtual_stage == virtual_stages - 1,
    )
}

/// Parameters on one rank of `layers` layers plus, optionally, the embedding
/// (word and, without RoPE, position tables) and the head (final norm, and
/// the output layer: its own matrix when untied, else the copy of the word
/// embedding when that sits on another stage).
pub fn parameters_of_layers(
    model: &ModelSpec,
    sharding: Sharding,
    layers: u64,
    embedding: bool,
    head: bool,
) -> u64 {
    let t = sharding.tensor_parallel as u64;
    let mut params = layers * formulas::layer_parameters(model) / t;
    if embedding {
        params += model.vocab * model.hidden / t;
        if model.learned_positions() {
            params += model.seq_len * model.hidden;
        }
    }
    if head {
        if sharding.virtual_stages() > 1 || !model.tied_embeddings {
            params += model.vocab * model.hidden / t;
        }
        params += model.norm_parameters();
    }
    params
}

#[cfg(test)]
mod tests {
    #[test]
    fn parameters_on_rank_is_the_sum_over_its_chunks() {
        for name in ["gpt3-175b", "llama3-70b", "tiny"] {
            let model = crate::preset(name).unwrap();
            for (t, p, v) in [(1, 1, 1), (8, 4, 1), (8, 4, 3), (2, 8, 6), (4, 2, 5)] {
                let sharding = super::Sharding {
                    tensor_parallel: t,
                    pipeline_parallel: p,
                    chunks: v,
                };
                for stage in 0..p {
                    let summed: u64 = (0..v)
                        .map(|chunk| super::parameters_of_chunk(&model, sharding, stage, chunk))
                        .sum();
                    assert_eq!(
                        super::parameters_on_rank(&model, sharding, stage),
                        summed,
                        "{name} t{t} p{p} v{v} stage {stage}"
                    );
                }
            }
        }
    }

    use super::*;

    #[test]
    fn the_ranks_of_every_stage_hold_the_whole_model_once() {
        let model = crate::preset("gpt3-175b").unwrap();
        for (t, p, v) in [(1, 1, 1), (8, 8, 1), (8, 4, 3), (4, 16, 2)] {
            let sharding = Sharding {
                tensor_parallel: t,
                pipeline_parallel: p,
                chunks: v,
            };
            let total: u64 = (0..p)
                .map(|stage| parameters_on_rank(&model, sharding, stage) * t as u64)
                .sum();
            // With p·v > 1 the output layer keeps its own copy of the word
            // embedding; position embeddings and the final LayerNorm (2h,
            // outside Eq. 2's count) are replicated on the t ranks.
            let tied_copy = if p * v > 1 {
                model.vocab * model.hidden
            } else {
                0
            };
            let position_copies = (t as u64 - 1) * model.seq_len * model.hidden;
            let expected = formulas::parameter_count(&model)
                + 2 * model.hidden * t as u64
                + tied_copy
                + position_copies;
            assert_eq!(total, expected, "t={t} p={p} v={v}");
        }
    }

    #[test]
    fn untied_rope_models_are_held_once_with_only_their_norms_replicated() {
        let model = crate::preset("llama3-70b").unwrap();
        for (t, p, v) in [(1, 1, 1), (8, 1, 1), (8, 4, 5), (2, 16, 1)] {
            let sharding = Sharding {
                tensor_parallel: t,
                pipeline_parallel: p,
                chunks: v,
            };
            let total: u64 = (0..p)
                .map(|stage| parameters_on_rank(&model, sharding, stage) * t as u64)
                .sum();
            // No tied copy, no position table: the published count, with the
            // final RMSNorm replicated on the t ranks.
            let expected = formulas::published_parameter_count(&model)
                + (t as u64 - 1) * model.norm_parameters();
            assert_eq!(total, expected, "t={t} p={p} v={v}");
        }
    }
}
