//! The scenario's `pipeline_layout` key (Megatron-Core's
//! `--pipeline-model-parallel-layout`): the string parsed by
//! `models::pipeline_layout`, checked against the model and the layout as
//! Megatron-Core's `validate_layer_layout` does (embedding first and loss
//! last, each once; as many transformer layers as the model has; p·v stages),
//! and against what the simulator builds (embedding on the first virtual
//! stage, loss on the last, at least one transformer layer per virtual stage,
//! no MTP layers). The result is a [`PipelineSplit`] whose `layers_of_chunk`
//! the lowering, parameter counts and memory already read.

use crate::problem::Problem;
use models::pipeline_layout::{parse, StageLayers};
use models::sharding::PipelineSplit;
use models::ModelSpec;

/// The split of a layout string, or None with its problems pushed.
pub fn resolve(
    text: &str,
    model: Option<&ModelSpec>,
    stages: u32,
    chunks: u32,
    split_too: bool,
    problems: &mut Vec<Problem>,
) -> Option<PipelineSplit> {
    let before = problems.len();
    if split_too {
        problems.push(Problem::new("pipeline_layout", "the layout places the embedding and the loss itself; drop pipeline_split (--account-for-embedding/loss-in-pipeline-split)"));
    }
    let parsed = match parse(text) {
        Ok(parsed) => parsed,
        Err(error) => {
            problems.push(Problem::worded("pipeline_layout", error.to_string()));
            return None;
        }
    };
    let count = parsed.stages.len() as u64;
    let virtual_stages = stages as u64 * chunks as u64;
    if count != virtual_stages {
        let hint = if stages > 0 && count.is_multiple_of(stages as u64) {
            format!(" (chunks = {} would match)", count / stages as u64)
        } else {
            String::new()
        };
        problems.push(Problem::new("pipeline_layout", format!(
            "'{text}' has {count} stages, but pp × chunks = {stages} × {chunks} = {virtual_stages}{hint}"
        )));
    }
    let total = |f: fn(&models::pipeline_layout::StageContent) -> u32| -> u64 {
        parsed.stages.iter().map(|s| f(s) as u64).sum()
    };
    if total(|s| s.mtp_layers) > 0 {
        problems.push(Problem::new(
            "pipeline_layout",
            "multi-token-prediction layers ('m') are not simulated",
        ));
    }
    if total(|s| s.embeddings) != 1 || parsed.first != Some('E') {
        problems.push(Problem::new("pipeline_layout", "the embedding 'E' must appear exactly once, as the first layer (Megatron-Core's validate_layer_layout)"));
    } else if parsed.stages[0].embeddings != 1 {
        problems.push(Problem::new(
            "pipeline_layout",
            "an embedding after empty stages is not built; put 'E' in the first stage",
        ));
    }
    if total(|s| s.losses) != 1 || parsed.last != Some('L') {
        problems.push(Problem::new("pipeline_layout", "the loss 'L' must appear exactly once, as the last layer (Megatron-Core's validate_layer_layout)"));
    } else if parsed.stages.last().is_some_and(|s| s.losses != 1) {
        problems.push(Problem::new(
            "pipeline_layout",
            "a loss before empty stages is not built; put 'L' in the last stage",
        ));
    }
    if let Some(model) = model {
        let layers = total(|s| s.transformer_layers);
        if layers != model.layers {
            problems.push(Problem::new(
                "pipeline_layout",
                format!(
                    "{layers} transformer layers ('t'), but the model has {}",
                    model.layers
                ),
            ));
        }
    }
    if let Some(empty) = parsed.stages.iter().position(|s| s.transformer_layers == 0) {
        problems.push(Problem::new(
            "pipeline_layout",
            format!(
                "virtual stage {empty} has no transformer layer; stages without one are not built"
            ),
        ));
    }
    if problems.len() > before {
        return None;
    }
    let layers: Vec<u32> = parsed.stages.iter().map(|s| s.transformer_layers).collect();
    Some(PipelineSplit::from_layout(StageLayers::intern(
        text, &layers,
    )))
}
