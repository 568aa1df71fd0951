//! Parameter counts per GPU under Megatron's sharding: layers split over p·v
//! virtual stages (evenly, or with the embedding and the loss counted as a
//! layer each: [`PipelineSplit`]), every weight matrix split t ways, the word
//! embedding vocab-parallel. Pure counts: no bytes, no time.

use crate::formulas;
use crate::spec::ModelSpec;
pub use crate::stage_map::StageMap;
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;

/// Megatron-Core's uneven pipeline split
/// (`--account-for-embedding-in-pipeline-split`,
/// `--account-for-loss-in-pipeline-split`;
/// `megatron/core/transformer/transformer_block.py` `get_num_layers_to_build`):
/// the embedding and/or the loss count as one layer each, the L (+1 +1)
/// "layers" are split evenly over the p·v virtual stages, and the first
/// (last) virtual stage builds one transformer layer fewer. Llama 3.1 405B's
/// 126 layers on 8 × 8 virtual stages run so (Megatron-Bridge's recipes set
/// both): 2 per virtual stage, 1 on the first and the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSplit {
    /// The embedding counts as a layer of the first virtual stage.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub embedding: bool,
    /// The loss counts as a layer of the last virtual stage.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub loss: bool,
    /// Megatron-Core's `--pipeline-model-parallel-layout`: the transformer
    /// layers of every virtual stage, as written (`crate::pipeline_layout`);
    /// the embedding on the first virtual stage, the loss on the last. Set
    /// by the scenario's `pipeline_layout` key (validated there), never read
    /// from this object.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub layout: Option<crate::pipeline_layout::StageLayers>,
}

impl PipelineSplit {
    /// Every virtual stage builds L/(p·v) layers.
    pub fn is_even(&self) -> bool {
        !self.embedding && !self.loss && self.layout.is_none()
    }

    /// The split of an explicit layout.
    pub fn from_layout(layout: crate::pipeline_layout::StageLayers) -> PipelineSplit {
        PipelineSplit {
            layout: Some(layout),
            ..PipelineSplit::default()
        }
    }

    /// The "layers" the split adds to the model's: one for the embedding
    /// and one for the loss where it counts them.
    pub fn counted_ends(&self) -> u64 {
        u64::from(self.embedding) + u64::from(self.loss)
    }
}

/// How a model is cut up: tensor-parallel degree t, pipeline stages p and
/// model chunks per stage v (interleaved and V schedules), so p·v virtual
/// stages, how the layers are split over them, and which rank holds which
/// virtual stage ([`StageMap`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharding {
    pub tensor_parallel: NonZeroU32,
    pub pipeline_parallel: NonZeroU32,
    pub chunks: NonZeroU32,
    pub split: PipelineSplit,
    pub map: StageMap,
    /// Expert-parallel degree ep: each rank holds E/ep of every MoE layer's
    /// routed experts (1 for dense models).
    pub expert_parallel: NonZeroU32,
    /// Expert tensor-parallel degree etp: each of those experts' fc1
    /// column-parallel and fc2 row-parallel over etp ranks, 1/etp of its
    /// weights on each (Megatron-Core's `TEGroupedMLP` over the expert
    /// tensor group; 1 for dense models).
    pub expert_tensor_parallel: NonZeroU32,
}

impl Sharding {
    /// Ways a MoE layer's routed experts' parameters are split: ep·etp.
    pub fn expert_ways(&self) -> u64 {
        u64::from(self.expert_parallel.get()) * u64::from(self.expert_tensor_parallel.get())
    }

    /// Virtual stages p·v.
    pub fn virtual_stages(&self) -> u32 {
        self.pipeline_parallel.get() * self.chunks.get()
    }

    /// The stages one copy of the model is cut into: p·v, or p for
    /// DualPipe's two copies of p stages each.
    pub fn model_stages(&self) -> NonZeroU32 {
        match self.map {
            StageMap::DualPipe => self.pipeline_parallel,
            StageMap::Interleaved | StageMap::V => {
                self.pipeline_parallel.saturating_mul(self.chunks)
            }
        }
    }

    /// Which stage of its model copy virtual stage `virtual_stage` is (the
    /// virtual stage itself unless the pipeline holds two copies).
    pub fn model_stage(&self, virtual_stage: u32) -> u32 {
        virtual_stage % self.model_stages().get()
    }

    /// Whether virtual stage `virtual_stage` is the first of its copy (the
    /// embedding) and whether it is the last (the head and the loss).
    pub fn is_end(&self, virtual_stage: u32) -> (bool, bool) {
        let stage = self.model_stage(virtual_stage);
        (stage == 0, stage + 1 == self.model_stages().get())
    }

    /// Whether some chunk of pipeline stage (rank) `stage` holds a head
    /// and its loss (DualPipe: ranks 0 and p−1 both do).
    pub fn holds_head(&self, stage: u32) -> bool {
        (0..self.chunks.get()).any(|chunk| self.is_end(self.virtual_stage(stage, chunk)).1)
    }

    /// The "layers" split evenly over the virtual stages: the model's, plus
    /// the embedding and the loss where the split counts them.
    pub fn split_layers(&self, layers: u64) -> u64 {
        layers + self.split.counted_ends()
    }

    /// Transformer layers an ordinary virtual stage builds (the most any
    /// builds): the split layers over p·v, or a layout's largest stage.
    pub fn layers_per_chunk(&self, layers: u64) -> u64 {
        if let Some(layout) = self.split.layout {
            return layout.layers().iter().copied().max().unwrap_or(0) as u64;
        }
        self.split_layers(layers) / (self.model_stages().get() as u64)
    }

    /// The virtual stage chunk `chunk` of pipeline stage (rank) `stage` runs.
    pub fn virtual_stage(&self, stage: u32, chunk: u32) -> u32 {
        self.map
            .stage_of(self.pipeline_parallel.get(), stage, chunk)
    }

    /// (pipeline stage, chunk) of the first and of the last virtual stage:
    /// where the embedding and the head are.
    pub fn ends(&self) -> ((u32, u32), (u32, u32)) {
        let p = self.pipeline_parallel.get();
        (
            self.map.place(p, 0),
            self.map.place(p, self.virtual_stages() - 1),
        )
    }

    /// Transformer layers of chunk `chunk` on pipeline stage `stage`
    /// (virtual stage [`Self::virtual_stage`]): [`Self::layers_per_chunk`],
    /// one fewer on the first virtual stage when the embedding counts as a
    /// layer and on the last when the loss does.
    /// With a layout, the layout's count for that virtual stage.
    pub fn layers_of_chunk(&self, layers: u64, stage: u32, chunk: u32) -> u64 {
        let virtual_stage = self.map.stage_of_wide(
            u64::from(self.pipeline_parallel.get()),
            stage as u64,
            chunk as u64,
        ) % (self.model_stages().get() as u64);
        if let Some(layout) = self.split.layout {
            return layout
                .layers()
                .get(virtual_stage as usize)
                .copied()
                .unwrap_or(0) as u64;
        }
        let last = self.model_stages().get() as u64 - 1;
        let mut count = self.layers_per_chunk(layers);
        if virtual_stage == 0 && self.split.embedding {
            count = count.saturating_sub(1);
        }
        if virtual_stage == last && self.split.loss {
            count = count.saturating_sub(1);
        }
        count
    }
}

impl Sharding {
    /// The model's index (0-based) of the first transformer layer of chunk
    /// `chunk` on pipeline stage `stage`: the layers of every earlier
    /// virtual stage ([`Self::layers_of_chunk`]).
    pub fn first_layer_of_chunk(&self, layers: u64, stage: u32, chunk: u32) -> u64 {
        let virtual_stage = self.map.stage_of_wide(
            u64::from(self.pipeline_parallel.get()),
            stage as u64,
            chunk as u64,
        );
        // Its place in its model copy (DualPipe's second copy starts over).
        let virtual_stage = virtual_stage % u64::from(self.model_stages().get());
        if let Some(layout) = self.split.layout {
            return layout
                .layers()
                .iter()
                .take(virtual_stage as usize)
                .map(|&n| n as u64)
                .sum();
        }
        let before = virtual_stage * self.layers_per_chunk(layers);
        before.saturating_sub(u64::from(virtual_stage > 0 && self.split.embedding))
    }
}

/// Whether a model's layers differ in kind: a mixture of experts with dense
/// layers among its MoE layers (`first_dense_layers`, `layer_frequency`).
pub fn has_dense_and_moe_layers(model: &ModelSpec) -> bool {
    model
        .moe
        .as_ref()
        .is_some_and(|moe| moe.moe_layers(model.layers) != model.layers)
}

/// Of the `layers` layers from the model's layer `first`, how many are dense
/// in a model with experts (0 for a dense model: its every layer is the
/// model's one kind).
pub fn dense_layers_in(model: &ModelSpec, first: u64, layers: u64) -> u64 {
    model
        .moe
        .as_ref()
        .map_or(0, |moe| layers - moe.moe_layers_in(first, layers))
}

/// Parameters held by one rank of pipeline stage `stage`: its layers split t
/// ways, the vocab-parallel word embedding on the first virtual stage (plus
/// position embeddings, replicated, unless RoPE), and the output layer (the
/// tied embedding's copy, or the untied output matrix) plus final norm on the
/// last virtual stage.
pub fn parameters_on_rank(model: &ModelSpec, sharding: Sharding, stage: u32) -> u64 {
    // The sum of `parameters_of_chunk` over the stage's chunks in closed
    // form (a user may ask for 2³¹ chunks: validation refuses them, but
    // counts them first): every chunk but the first virtual stage's and the
    // last's has the same layers; the first adds the embedding, the last the
    // head. A layout's chunks may all differ: summed one by one (its p·v
    // stages were written out, so there are few).
    // DualPipe's two copies put an end on both ranks 0 and p−1: summed too,
    // as are the chunks of a model with dense layers among its MoE layers.
    if sharding.split.layout.is_some()
        || sharding.map.copies() > 1
        || (has_dense_and_moe_layers(model) && u64::from(sharding.chunks.get()) <= model.layers)
    {
        return (0..sharding.chunks.get())
            .map(|chunk| parameters_of_chunk(model, sharding, stage, chunk))
            .sum();
    }
    let chunks = sharding.chunks.get();
    let ordinary = parameters_of_layers(
        model,
        sharding,
        sharding.layers_per_chunk(model.layers),
        false,
        false,
    );
    let ((first_stage, first_chunk), (last_stage, last_chunk)) = sharding.ends();
    let mut special: Vec<u32> = Vec::new();
    if stage == first_stage {
        special.push(first_chunk);
    }
    if stage == last_stage && !special.contains(&last_chunk) {
        special.push(last_chunk);
    }
    let special_layers: u64 = special
        .iter()
        .map(|&chunk| {
            parameters_of_layers(
                model,
                sharding,
                sharding.layers_of_chunk(model.layers, stage, chunk),
                false,
                false,
            )
        })
        .sum();
    let ends = parameters_of_layers(
        model,
        sharding,
        0,
        stage == first_stage,
        stage == last_stage,
    );
    ordinary
        .saturating_mul(u64::from(chunks) - special.len() as u64)
        .saturating_add(special_layers)
        .saturating_add(ends)
}

/// Parameters of one model chunk on one rank of pipeline stage `stage`.
pub fn parameters_of_chunk(model: &ModelSpec, sharding: Sharding, stage: u32, chunk: u32) -> u64 {
    let (first, last) = sharding.is_end(sharding.virtual_stage(stage, chunk));
    parameters_of_layer_range(
        model,
        sharding,
        sharding.first_layer_of_chunk(model.layers, stage, chunk),
        sharding.layers_of_chunk(model.layers, stage, chunk),
        first,
        last,
    )
}

/// [`parameters_of_layers`] of the `layers` layers from the model's layer
/// `first`, each at its own kind: a dense layer of a model with experts
/// holds [`formulas::layer_parameters`] split t ways.
pub fn parameters_of_layer_range(
    model: &ModelSpec,
    sharding: Sharding,
    first: u64,
    layers: u64,
    embedding: bool,
    head: bool,
) -> u64 {
    let dense = dense_layers_in(model, first, layers);
    parameters_of_pass(model, sharding, layers, dense, embedding, head)
}

/// Parameters on one rank of a pass over `layers` layers of which
/// `dense_layers` are a mixture of experts' dense ones (0 for a dense
/// model), plus the embedding and/or head: what ZeRO-3 gathers for it.
pub fn parameters_of_pass(
    model: &ModelSpec,
    sharding: Sharding,
    layers: u64,
    dense_layers: u64,
    embedding: bool,
    head: bool,
) -> u64 {
    let dense_layer = formulas::layer_parameters(model) / u64::from(sharding.tensor_parallel.get());
    parameters_of_layers(model, sharding, layers - dense_layers, embedding, head)
        .saturating_add(dense_layers.saturating_mul(dense_layer))
}

/// [`expert_parameters_of_layers`] of the `layers` layers from the model's
/// layer `first`: only its MoE layers hold routed experts.
pub fn expert_parameters_of_layer_range(
    model: &ModelSpec,
    sharding: Sharding,
    first: u64,
    layers: u64,
) -> u64 {
    let moe_layers = layers - dense_layers_in(model, first, layers);
    expert_parameters_of_layers(model, sharding, moe_layers)
}

/// Parameters of one layer on one rank: a dense layer's split t ways; a MoE
/// layer's (the layers of a model with `moe`, but its dense ones:
/// [`parameters_of_layer_range`]) attention, norms and router t ways and
/// its routed experts ep·etp ways ([`expert_parameters_of_layers`]).
pub fn layer_parameters_on_rank(model: &ModelSpec, sharding: Sharding) -> u64 {
    let t = u64::from(sharding.tensor_parallel.get());
    if model.moe.is_none() {
        return formulas::layer_parameters(model) / t;
    }
    let routed = formulas::routed_expert_parameters(model);
    (formulas::moe_layer_parameters(model) - routed) / t + routed / sharding.expert_ways()
}

/// The routed experts' parameters among `layers` layers on one rank: E/ep
/// experts per layer, each 1/etp of its weights (0 for a dense model; the
/// simulator requires etp to divide the expert's inner size, and refuses
/// biased experts, so the split is exact). Their gradients are reduced over
/// the expert-data-parallel group (t·dp·cp/(ep·etp) ranks), the rest over
/// dp·cp.
pub fn expert_parameters_of_layers(model: &ModelSpec, sharding: Sharding, layers: u64) -> u64 {
    layers * formulas::routed_expert_parameters(model) / sharding.expert_ways()
}

/// The routed experts' parameters on one rank of pipeline stage `stage`
/// (every chunk's layers; 0 for a dense model).
pub fn expert_parameters_of_stage(model: &ModelSpec, sharding: Sharding, stage: u32) -> u64 {
    (0..sharding.chunks.get())
        .map(|chunk| {
            expert_parameters_of_layer_range(
                model,
                sharding,
                sharding.first_layer_of_chunk(model.layers, stage, chunk),
                sharding.layers_of_chunk(model.layers, stage, chunk),
            )
        })
        .sum()
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
    let t = u64::from(sharding.tensor_parallel.get());
    let mut params = layers * layer_parameters_on_rank(model, sharding);
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
    use crate::degree;
    #[test]
    fn parameters_on_rank_is_the_sum_over_its_chunks() {
        for name in ["gpt3-175b", "llama3-70b", "tiny"] {
            let model = crate::presets::preset(name).unwrap();
            for (t, p, v) in [(1, 1, 1), (8, 4, 1), (8, 4, 3), (2, 8, 6), (4, 2, 5)] {
                let sharding = super::Sharding {
                    tensor_parallel: degree(t),
                    pipeline_parallel: degree(p),
                    chunks: degree(v),
                    split: Default::default(),
                    map: Default::default(),
                    expert_parallel: degree(1),
                    expert_tensor_parallel: degree(1),
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
        let model = crate::presets::preset("gpt3-175b").unwrap();
        for (t, p, v) in [(1, 1, 1), (8, 8, 1), (8, 4, 3), (4, 16, 2)] {
            let sharding = Sharding {
                tensor_parallel: degree(t),
                pipeline_parallel: degree(p),
                chunks: degree(v),
                split: Default::default(),
                map: Default::default(),
                expert_parallel: degree(1),
                expert_tensor_parallel: degree(1),
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
    fn llama_405b_on_64_virtual_stages_builds_one_layer_on_the_first_and_last() {
        // Megatron-Core with both accounting flags: (126 + 2) / 64 = 2 per
        // virtual stage, one transformer layer beside the embedding and
        // beside the loss.
        let model = crate::presets::preset("llama3.1-405b").unwrap();
        let sharding = Sharding {
            tensor_parallel: degree(8),
            pipeline_parallel: degree(8),
            chunks: degree(8),
            split: PipelineSplit {
                embedding: true,
                loss: true,
                layout: None,
            },
            map: StageMap::Interleaved,
            expert_parallel: degree(1),
            expert_tensor_parallel: degree(1),
        };
        let layers: Vec<u64> = (0..8)
            .flat_map(|chunk| (0..8).map(move |stage| (stage, chunk)))
            .map(|(stage, chunk)| sharding.layers_of_chunk(model.layers, stage, chunk))
            .collect();
        assert_eq!(layers.iter().sum::<u64>(), 126);
        assert_eq!(sharding.layers_of_chunk(model.layers, 0, 0), 1);
        assert_eq!(sharding.layers_of_chunk(model.layers, 7, 7), 1);
        assert_eq!(layers.iter().filter(|&&n| n == 2).count(), 62);
        // Every stage's ranks together hold the whole model once (t = 8:
        // only the final norm is replicated on the tensor ranks).
        let total: u64 = (0..8)
            .map(|stage| parameters_on_rank(&model, sharding, stage) * 8)
            .sum();
        assert_eq!(
            total,
            formulas::published_parameter_count(&model) + 7 * model.norm_parameters()
        );
        for stage in 0..8 {
            let summed: u64 = (0..8)
                .map(|chunk| parameters_of_chunk(&model, sharding, stage, chunk))
                .sum();
            assert_eq!(parameters_on_rank(&model, sharding, stage), summed);
        }
    }

    #[test]
    fn untied_rope_models_are_held_once_with_only_their_norms_replicated() {
        let model = crate::presets::preset("llama3-70b").unwrap();
        for (t, p, v) in [(1, 1, 1), (8, 1, 1), (8, 4, 5), (2, 16, 1)] {
            let sharding = Sharding {
                tensor_parallel: degree(t),
                pipeline_parallel: degree(p),
                chunks: degree(v),
                split: Default::default(),
                map: Default::default(),
                expert_parallel: degree(1),
                expert_tensor_parallel: degree(1),
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

    #[test]
    fn on_the_v_map_rank_0_holds_embedding_and_head_and_the_turn_splits_evenly() {
        let model = crate::presets::preset("gpt3-175b").unwrap();
        for split in [
            PipelineSplit::default(),
            PipelineSplit {
                embedding: true,
                loss: true,
                layout: None,
            },
        ] {
            let (t, p) = (8, 4);
            let v_map = Sharding {
                tensor_parallel: degree(t),
                pipeline_parallel: degree(p),
                chunks: degree(2),
                split,
                map: StageMap::V,
                expert_parallel: degree(1),
                expert_tensor_parallel: degree(1),
            };
            assert_eq!(v_map.ends(), ((0, 0), (0, 1)));
            let interleaved = Sharding {
                map: StageMap::Interleaved,
                ..v_map
            };
            assert_eq!(interleaved.ends(), ((0, 0), (p - 1, 1)));
            // Stage 0 holds the embedding and the head; the others none.
            let ordinary = parameters_of_layers(
                &model,
                v_map,
                2 * v_map.layers_per_chunk(model.layers),
                false,
                false,
            );
            for stage in 1..p {
                assert_eq!(parameters_on_rank(&model, v_map, stage), ordinary);
            }
            let summed: u64 = (0..2)
                .map(|chunk| parameters_of_chunk(&model, v_map, 0, chunk))
                .sum();
            assert_eq!(parameters_on_rank(&model, v_map, 0), summed);
            // Both maps hold the whole model once over the ranks.
            let total = |sharding| {
                (0..p)
                    .map(|stage| parameters_on_rank(&model, sharding, stage))
                    .sum::<u64>()
            };
            assert_eq!(total(v_map), total(interleaved));
            // Uneven split: one layer fewer on stage 0's two chunks (embedding, loss).
            let layers = |stage, chunk| v_map.layers_of_chunk(model.layers, stage, chunk);
            let per_chunk = v_map.layers_per_chunk(model.layers);
            if !split.is_even() {
                assert_eq!((layers(0, 0), layers(0, 1)), (per_chunk - 1, per_chunk - 1));
                assert_eq!((layers(p - 1, 0), layers(p - 1, 1)), (per_chunk, per_chunk));
            }
        }
    }

    #[test]
    fn dualpipe_holds_two_copies_with_both_ends_on_the_first_and_last_rank() {
        // Each copy is cut into p stages (layers/p each); rank r holds copy
        // A's stage r and copy B's stage p−1−r: twice the parameters of one
        // 1F1B stage pair, the whole model twice over the ranks.
        let model = crate::presets::preset("gpt3-175b").unwrap();
        let (t, p) = (8, 4);
        let dual = Sharding {
            tensor_parallel: degree(t),
            pipeline_parallel: degree(p),
            chunks: degree(2),
            split: PipelineSplit::default(),
            map: StageMap::DualPipe,
            expert_parallel: degree(1),
            expert_tensor_parallel: degree(1),
        };
        let one_f_one_b = Sharding {
            chunks: degree(1),
            map: StageMap::Interleaved,
            ..dual
        };
        assert_eq!(dual.model_stages().get(), p);
        assert_eq!(dual.layers_per_chunk(model.layers), model.layers / p as u64);
        for rank in 0..p {
            assert_eq!(
                parameters_on_rank(&model, dual, rank),
                parameters_on_rank(&model, one_f_one_b, rank)
                    + parameters_on_rank(&model, one_f_one_b, p - 1 - rank),
                "rank {rank}"
            );
            // The loss of one copy or the other on ranks 0 and p−1 only.
            assert_eq!(dual.holds_head(rank), rank == 0 || rank == p - 1);
        }
        let total = |sharding| {
            (0..p)
                .map(|stage| parameters_on_rank(&model, sharding, stage))
                .sum::<u64>()
        };
        assert_eq!(total(dual), 2 * total(one_f_one_b));
        // Copy A's embedding and copy B's head on rank 0, the reverse on p−1.
        assert_eq!(dual.is_end(dual.virtual_stage(0, 0)), (true, false));
        assert_eq!(dual.is_end(dual.virtual_stage(0, 1)), (false, true));
        assert_eq!(dual.is_end(dual.virtual_stage(p - 1, 0)), (false, true));
        assert_eq!(dual.is_end(dual.virtual_stage(p - 1, 1)), (true, false));
    }
}

#[cfg(test)]
#[path = "sharding_moe_tests.rs"]
mod moe_tests;
