//! Tests of `sharding.rs`: parameter counts per rank, chunk and layer
//! range, and the pipeline split's virtual stages.

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
        let expected =
            formulas::published_parameter_count(&model) + (t as u64 - 1) * model.norm_parameters();
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
