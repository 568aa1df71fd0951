//! Runs published measurements (a "dev set" file like
//! shared/validation/dev-set.json) through the simulator and lines the
//! predictions up against them. Nothing here tunes anything: every case runs
//! with the default profile of its topology.
//!
//! Case kinds understood:
//! - `model` + `layout` + `measured.iteration_time_s_full_recompute`: a full
//!   iteration with full recompute;
//! - `model` + `layout` + `measured.tflops_per_gpu`: throughput, counted with Eq. 3;
//! - `measured.forward_ms` / `backward_ms_*` without a model: one layer of the
//!   22B model (Korthikanti Table 4), t=8, b=4; backward without recompute,
//!   with full recompute (forward + backward) and with selective recompute
//!   (attention core + backward);
//! - `measured.iteration_time_s_sequence_parallel_selective_recompute`: the
//!   same layout with sequence parallelism and selective recompute.

use crate::cost::{cost_works, ClosedFormNetwork};
use crate::scenario::{Recompute, ScenarioFile, ScheduleKind};
use crate::task_graph::{ComputePass, Work};
use serde::Serialize;

/// One prediction against one published figure.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ValidationRow {
    pub case: String,
    pub quantity: String,
    pub published: f64,
    /// None when the case cannot be modeled; `note` says why.
    pub predicted: Option<f64>,
    pub error_percent: Option<f64>,
    /// Breakdown or reason.
    pub note: String,
}

/// Problems with the dev-set file itself.
#[derive(Debug, thiserror::Error)]
pub enum ValidationError {
    #[error("dev set is not valid JSON: {0}")]
    Parse(#[from] serde_json::Error),
    #[error("dev set has no `cases` array")]
    NoCases,
}

fn row(case: &str, quantity: &str, published: f64, predicted: f64, note: String) -> ValidationRow {
    ValidationRow {
        case: case.into(),
        quantity: quantity.into(),
        published,
        predicted: Some(predicted),
        error_percent: Some(100.0 * (predicted - published) / published),
        note,
    }
}

fn skipped(case: &str, quantity: &str, published: f64, why: &str) -> ValidationRow {
    ValidationRow {
        case: case.into(),
        quantity: quantity.into(),
        published,
        predicted: None,
        error_percent: None,
        note: why.into(),
    }
}

/// Runs every case of a dev-set JSON text.
pub fn run_dev_set(text: &str) -> Result<Vec<ValidationRow>, ValidationError> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    let cases = value
        .get("cases")
        .and_then(|c| c.as_array())
        .ok_or(ValidationError::NoCases)?;
    let mut rows = Vec::new();
    for case in cases {
        let id = case.get("id").and_then(|v| v.as_str()).unwrap_or("?");
        let measured = case.get("measured").cloned().unwrap_or_default();
        let number = |key: &str| measured.get(key).and_then(|v| v.as_f64());
        let (Some(model), Some(layout)) = (case.get("model"), case.get("layout")) else {
            if let Some(forward_ms) = number("forward_ms") {
                rows.extend(layer_rows(
                    id,
                    forward_ms,
                    number("backward_ms_no_recompute"),
                    number("backward_ms_full_recompute"),
                    number("backward_ms_selective_recompute"),
                ));
            }
            continue;
        };
        let mut model = model.clone();
        if model.get("name").is_none() {
            model["name"] = id.into();
        }
        let get = |key: &str| layout.get(key).and_then(|v| v.as_u64()).map(|v| v as u32);
        let chunks = get("chunks").unwrap_or(1);
        let file = ScenarioFile {
            model: Some(model),
            topology: Some("selene".into()),
            tp: get("tp"),
            pp: get("pp"),
            dp: get("dp"),
            chunks: Some(chunks),
            microbatch_size: get("microbatch_size"),
            global_batch: get("global_batch"),
            schedule: Some(if chunks > 1 {
                ScheduleKind::Interleaved
            } else {
                ScheduleKind::OneFOneB
            }),
            recompute: Some(Recompute::Full),
            ..ScenarioFile::default()
        };
        // (measured key, quantity, recompute, sequence parallel)
        let targets = [
            (
                "iteration_time_s_full_recompute",
                "iteration_time_s (full recompute)",
                Recompute::Full,
                false,
            ),
            (
                "tflops_per_gpu",
                "tflops_per_gpu (full recompute)",
                Recompute::Full,
                false,
            ),
            (
                "iteration_time_s_sequence_parallel_selective_recompute",
                "iteration_time_s (SP + selective)",
                Recompute::Selective,
                true,
            ),
        ];
        for (key, quantity, recompute, sequence_parallel) in targets {
            let Some(published) = number(key) else {
                continue;
            };
            let file = ScenarioFile {
                recompute: Some(recompute),
                sequence_parallel: Some(sequence_parallel),
                ..file.clone()
            };
            let scenario = match file.resolve() {
                Ok(scenario) => scenario,
                Err(error) => {
                    rows.push(skipped(id, quantity, published, &error.to_string()));
                    continue;
                }
            };
            let report = match crate::simulate(&scenario) {
                Ok(report) => report,
                Err(error) => {
                    rows.push(skipped(id, quantity, published, &error.to_string()));
                    continue;
                }
            };
            let m = &report.metrics;
            let e = &m.exposed_communication;
            let breakdown = format!(
                "compute {:.2} s, bubble {:.3} ({:.2} s), exposed TP {:.2} s, PP {:.2} s, DP {:.2} s",
                m.compute_time_s,
                m.bubble_fraction,
                m.bubble_fraction * m.iteration_time_s,
                e.tensor_s,
                e.pipeline_s,
                e.data_parallel_s
            );
            let predicted = if key == "tflops_per_gpu" {
                m.tflops_per_gpu
            } else {
                m.iteration_time_s
            };
            rows.push(row(id, quantity, published, predicted, breakdown));
        }
    }
    Ok(rows)
}

/// One 22B layer (h=6144, a=64, s=2048, t=8, b=4): forward and backward ms,
/// each the layer's kernels plus its two blocking tensor all-reduces.
fn layer_rows(
    id: &str,
    forward_ms: f64,
    backward_ms: Option<f64>,
    backward_recompute_ms: Option<f64>,
    backward_selective_ms: Option<f64>,
) -> Vec<ValidationRow> {
    let scenario = ScenarioFile {
        model: Some("gpt-22b".into()),
        topology: Some("selene".into()),
        tp: Some(8),
        pp: Some(1),
        dp: Some(1),
        microbatch_size: Some(4),
        global_batch: Some(4),
        recompute: Some(Recompute::Selective),
        ..ScenarioFile::default()
    }
    .resolve()
    .expect("the 22B layer scenario is valid");
    let works: Vec<Work> = [ComputePass::Forward, ComputePass::Backward]
        .into_iter()
        .flat_map(|pass| {
            [
                Work::Compute {
                    pass,
                    layers: 1,
                    embedding: false,
                    head: false,
                },
                Work::TensorAllReduce {
                    pass,
                    layers: 1,
                    embedding: false,
                    head: false,
                    group_size: 8,
                    nodes: 1,
                },
            ]
        })
        // The selective recompute pass: the attention core only, no all-reduce.
        .chain([Work::Compute {
            pass: ComputePass::Recompute,
            layers: 1,
            embedding: false,
            head: false,
        }])
        .collect();
    let network = ClosedFormNetwork::new(&scenario.topology, &scenario.profile);
    let costs = cost_works(&scenario, &works, &network);
    let ms = |i: usize| costs[i].duration.as_seconds() * 1e3;
    let (fwd_kernels, fwd_comm, bwd_kernels, bwd_comm) = (ms(0), ms(1), ms(2), ms(3));
    let attention_core = ms(4);
    let mut rows = vec![row(
        id,
        "forward_ms",
        forward_ms,
        fwd_kernels + fwd_comm,
        format!("kernels {fwd_kernels:.2} ms + TP all-reduce {fwd_comm:.2} ms"),
    )];
    if let Some(published) = backward_ms {
        rows.push(row(
            id,
            "backward_ms_no_recompute",
            published,
            bwd_kernels + bwd_comm,
            format!("kernels {bwd_kernels:.2} ms + TP all-reduce {bwd_comm:.2} ms"),
        ));
    }
    if let Some(published) = backward_recompute_ms {
        rows.push(row(
            id,
            "backward_ms_full_recompute",
            published,
            fwd_kernels + fwd_comm + bwd_kernels + bwd_comm,
            "recomputed forward + backward".into(),
        ));
    }
    if let Some(published) = backward_selective_ms {
        rows.push(row(
            id,
            "backward_ms_selective_recompute",
            published,
            attention_core + bwd_kernels + bwd_comm,
            format!("recomputed attention core {attention_core:.2} ms + backward"),
        ));
    }
    rows
}
