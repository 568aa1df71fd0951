//! Megatron-Core's uneven pipeline split (`pipeline_split`, the
//! `--account-for-embedding/loss-in-pipeline-split` flags): Llama 3.1 405B's
//! 126 layers on 16 stages build 8 layers per stage and 7 on the first and
//! the last, whose forward FLOPs (embedding: none; head: the output GEMM)
//! follow exactly; validation names what does not divide.

use models::formulas;
use sim::scenario::{Recompute, ScenarioFile};
use timeline::TaskKind;

fn file(split: Option<models::sharding::PipelineSplit>) -> ScenarioFile {
    ScenarioFile {
        model: Some("llama3.1-405b".into()),
        topology: Some("dgx-h100-superpod".into()),
        // The layout mechanics under the 2021 stack's fp16, as written.
        stack: Some("megatron-2021".into()),
        options: sim::scenario::TrainingOptionsFile {
            precision: Some(sim::scenario::Precision::Fp16),
            ..Default::default()
        },
        seq_len: Some(2048),
        tp: Some(8),
        pp: Some(16),
        dp: Some(1),
        microbatch_size: Some(1),
        global_batch: Some(16),
        recompute: Some(Recompute::Full),
        pipeline_split: split,
        ..ScenarioFile::default()
    }
}

const BOTH: models::sharding::PipelineSplit = models::sharding::PipelineSplit {
    embedding: true,
    loss: true,
    layout: None,
};

#[test]
fn a_126_layer_model_runs_on_16_stages_with_the_first_and_last_lighter() {
    let scenario = file(Some(BOTH)).resolve().expect("valid with the split");
    let report = sim::simulate(&scenario).unwrap();
    // FLOPs of one rank's forward of microbatch 0, per stage (every task of
    // a stage's forward records the same per-rank FLOPs).
    let forward: Vec<f64> = (0..16)
        .map(|stage| {
            report
                .timeline()
                .tasks
                .iter()
                .find(|t| {
                    t.kind == TaskKind::Forward && t.stage == stage && t.microbatch == Some(0)
                })
                .map(|t| t.flops)
                .unwrap()
        })
        .collect();
    let middle = forward[7];
    assert!(forward[1..15].iter().all(|&f| f == middle), "{forward:?}");
    // Stage 0: 7 layers and the embedding (no FLOPs).
    assert_eq!(forward[0], middle * 7.0 / 8.0);
    // Stage 15: 7 layers and the head, whose output GEMM is 2·b·s·h·V/t.
    let model = &scenario.model;
    let head = 2.0 * 2048.0 * model.hidden as f64 * model.vocab as f64 / 8.0;
    assert!(
        (forward[15] - (middle * 7.0 / 8.0 + head)).abs() / forward[15] < 1e-12,
        "{} vs {} + {head}",
        forward[15],
        middle * 7.0 / 8.0
    );
    // Every parameter is held once over the stages (t = 8: the final norm
    // replicated on the tensor ranks).
    let total: u64 = report.memory.iter().map(|m| m.parameters * 8).sum();
    assert_eq!(
        total,
        formulas::published_parameter_count(model) + 7 * model.norm_parameters()
    );
}

#[test]
fn splits_that_do_not_divide_are_refused_by_name() {
    let even = file(None).resolve().unwrap_err().to_string();
    assert!(
        even.contains("layers (126) must be divisible by pp × chunks = 16 × 1 = 16"),
        "{even}"
    );
    assert!(even.contains("pipeline_split"), "{even}");
    let embedding_only = models::sharding::PipelineSplit {
        embedding: true,
        loss: false,
        layout: None,
    };
    let error = file(Some(embedding_only))
        .resolve()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("pipeline_split: layers + embedding + loss (127) must be divisible"),
        "{error}"
    );
}

/// Megatron-Core's layout string for the same split: `Et*7|(t*8|)*14,t*7L`.
const LLAMA_16: &str = "Et*7|(t*8|)*14,t*7L";

fn with_layout(layout: &str) -> ScenarioFile {
    ScenarioFile {
        pipeline_layout: Some(layout.into()),
        ..file(None)
    }
}

#[test]
fn megatrons_layout_string_builds_the_layers_it_names_per_stage() {
    let scenario = with_layout(LLAMA_16).resolve().expect("valid layout");
    let sharding = scenario.layout.sharding();
    let layers: Vec<u64> = (0..16)
        .map(|stage| sharding.layers_of_chunk(126, stage, 0))
        .collect();
    let mut expected = vec![8u64; 16];
    expected[0] = 7;
    expected[15] = 7;
    assert_eq!(layers, expected);
    // The same split as counting the embedding and the loss as layers: the
    // same simulation, task for task.
    let by_layout = sim::simulate(&scenario).unwrap();
    let by_split = sim::simulate(&file(Some(BOTH)).resolve().unwrap()).unwrap();
    assert_eq!(by_layout.timeline().tasks, by_split.timeline().tasks);
    assert_eq!(
        by_layout
            .memory
            .iter()
            .map(|m| m.parameters)
            .collect::<Vec<_>>(),
        by_split
            .memory
            .iter()
            .map(|m| m.parameters)
            .collect::<Vec<_>>()
    );
}

#[test]
fn an_uneven_layout_moves_exactly_its_layers() {
    // Two layers off the first stage onto the last: 6, 8 × 14, 8 + loss.
    let scenario = with_layout("Et*6|(t*8|)*14,t*8L").resolve().unwrap();
    let report = sim::simulate(&scenario).unwrap();
    let forward = |stage: u32| {
        report
            .timeline()
            .tasks
            .iter()
            .find(|t| t.kind == TaskKind::Forward && t.stage == stage && t.microbatch == Some(0))
            .map(|t| t.flops)
            .unwrap()
    };
    let middle = forward(7);
    assert_eq!(forward(0), middle * 6.0 / 8.0);
    let head = 2.0 * 2048.0 * scenario.model.hidden as f64 * scenario.model.vocab as f64 / 8.0;
    assert!((forward(15) - (middle + head)).abs() / forward(15) < 1e-12);
    let total: u64 = report.memory.iter().map(|m| m.parameters * 8).sum();
    assert_eq!(
        total,
        formulas::published_parameter_count(&scenario.model) + 7 * scenario.model.norm_parameters()
    );
}

#[test]
fn an_interleaved_layout_gives_each_chunk_its_layers() {
    // 32 virtual stages on 16 ranks (v = 2): 3 beside the embedding and the
    // loss, 4 elsewhere; virtual stage k·16 + r is chunk k of rank r.
    let scenario = ScenarioFile {
        chunks: Some(2),
        schedule: Some(sim::scenario::ScheduleKind::Interleaved),
        ..with_layout("Et*3|(t*4|)*30,t*3L")
    }
    .resolve()
    .unwrap();
    let sharding = scenario.layout.sharding();
    assert_eq!(sharding.layers_of_chunk(126, 0, 0), 3);
    assert_eq!(sharding.layers_of_chunk(126, 0, 1), 4);
    assert_eq!(sharding.layers_of_chunk(126, 15, 0), 4);
    assert_eq!(sharding.layers_of_chunk(126, 15, 1), 3);
    let sum: u64 = (0..16)
        .flat_map(|r| (0..2).map(move |c| (r, c)))
        .map(|(r, c)| sharding.layers_of_chunk(126, r, c))
        .sum();
    assert_eq!(sum, 126);
    let report = sim::simulate(&scenario).unwrap();
    let total: u64 = report.memory.iter().map(|m| m.parameters * 8).sum();
    assert_eq!(
        total,
        formulas::published_parameter_count(&scenario.model) + 7 * scenario.model.norm_parameters()
    );
}

#[test]
fn layouts_the_source_or_the_simulator_refuses_are_named() {
    for (layout, chunks, needle) in [
        (
            "Et*7|(t*8|)*14,t*7L",
            2,
            "has 16 stages, but pp × chunks = 16 × 2 = 32",
        ),
        ("Et*7|(t*8|)*30,t*7L", 1, "(chunks = 2 would match)"),
        (
            "Et*7|(t*8|)*14,t*6L",
            1,
            "125 transformer layers ('t'), but the model has 126",
        ),
        (
            "tEt*6|(t*8|)*14,t*7L",
            1,
            "the embedding 'E' must appear exactly once, as the first layer",
        ),
        (
            "Et*7|(t*8|)*14,t*6Lt",
            1,
            "the loss 'L' must appear exactly once, as the last layer",
        ),
        (
            "Et*7|(t*8|)*14,t*6mL",
            1,
            "multi-token-prediction layers ('m') are not simulated",
        ),
        (
            "E|t*7|(t*8|)*13,t*15L",
            1,
            "virtual stage 0 has no transformer layer",
        ),
        ("|Et*7|(t*8|)*13,t*15L", 1, "put 'E' in the first stage"),
        (
            "Et*7|(t*8|)*14,t*7x",
            1,
            "position 18 of 'Et*7|(t*8|)*14,t*7x': unknown layer character 'x'",
        ),
        (
            "Et*7|(t*8|*14,t*7L",
            1,
            "position 5 of 'Et*7|(t*8|*14,t*7L': '(' is never closed",
        ),
    ] {
        let error = ScenarioFile {
            chunks: Some(chunks),
            schedule: Some(if chunks > 1 {
                sim::scenario::ScheduleKind::Interleaved
            } else {
                sim::scenario::ScheduleKind::OneFOneB
            }),
            ..with_layout(layout)
        }
        .resolve()
        .unwrap_err()
        .to_string();
        assert!(error.contains("pipeline_layout: "), "{layout}: {error}");
        assert!(error.contains(needle), "{layout}: {error}");
    }
    let both = ScenarioFile {
        pipeline_split: Some(BOTH),
        ..with_layout(LLAMA_16)
    }
    .resolve()
    .unwrap_err()
    .to_string();
    assert!(both.contains("drop pipeline_split"), "{both}");
}

#[test]
fn a_layouts_activation_memory_counts_each_stages_own_layers() {
    // Full recompute keeps one input per layer: activations scale with the
    // layers held. 1F1B on stage r holds p − r microbatches; with the
    // layout's 6 layers on stage 0 (8 on the others) stage 0 holds 6/8 of
    // what the even count of the largest chunk would say.
    let even = sim::simulate(&with_layout("Et*8|(t*8|)*14,t*6L").resolve().unwrap()).unwrap();
    let light = sim::simulate(&with_layout("Et*6|(t*8|)*14,t*8L").resolve().unwrap()).unwrap();
    let stage0 = |report: &sim::SimulationReport| {
        let m = &report.memory[0];
        (m.activation_bytes, m.peak_microbatches_in_flight)
    };
    let (even_bytes, even_in_flight) = stage0(&even);
    let (light_bytes, light_in_flight) = stage0(&light);
    assert_eq!((even_in_flight, light_in_flight), (16, 16));
    // Full recompute keeps each layer's input, 2·s·b·h bytes (fp16, no
    // sequence parallelism); the rest (recompute working layer, pipeline
    // buffers) is the same on both: 16 microbatches × 2 layers apart.
    let layer_input = 2 * 2048 * 16384;
    assert_eq!(even_bytes - light_bytes, 16 * 2 * layer_input);
}
