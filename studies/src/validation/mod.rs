//! Runs published measurements (a "dev set" file like
//! validation/dev-set.json in the repository) through the simulator and lines the
//! predictions up against them. Nothing here tunes anything: every case runs
//! with the default profile of its topology.
//!
//! A case with `model` and `layout` is simulated once per variant its
//! measured keys ask for ([`keys`] has the grammar: iteration time, TFLOP/s
//! per GPU, percent of peak, MFU, aggregate PFLOP/s, samples/s, each with or
//! without a recompute/sequence-parallel suffix). The layout's `tp`, `pp`,
//! `dp`, `chunks`, `microbatch_size`, `global_batch` are required; `schedule`
//! (default: interleaved when chunks > 1, else 1F1B), `recompute`,
//! `sequence_parallel`, `zero_offload` and `delayed_update` are optional.
//! A case whose source names ZeRO-Offload runs with `zero_offload` (and
//! `delayed_update` when it names DPU or the delayed parameter update) unless
//! its layout says otherwise. The topology is the case's `topology` preset when given, else read from
//! the hardware text: DGX-2 / V100 → `dgx2-v100` (16 GPUs) or `dgx2-v100-x8`,
//! otherwise Selene. Cases from Megatron-LM's SC21 runs without pipeline
//! parallelism run as NVIDIA's script ran them, with PyTorch DDP: gradient
//! buckets of 25 MB all-reduced during the last backward.
//!
//! A case with a `scenario` (a whole scenario file: model, topology, stack,
//! layout and options as `clustersim simulate` reads them) is simulated as
//! it is ([`scenario_cases`]); its measured keys take no variant suffix.
//!
//! A case with `measured.forward_ms` / `backward_ms_*` is one transformer
//! layer (Korthikanti et al. 2022, Table 4): the case's model and layout when
//! given, else the 22B model at t=8, b=4 that table measured.
//!
//! Every numeric measured key yields a row: a prediction, or the reason there
//! is none (an unknown key, a figure restating another, an invalid layout).
//!
//! vTrain's single-node ground truth (a CSV of measured iteration times) has
//! its own reader and runner in [`vtrain`] and its error table in
//! [`vtrain_table`].

pub mod attention_table;
pub mod gemm_table;
mod kernel_table;
mod keys;
pub mod regime;
pub mod residuals;
mod scenario_cases;
mod simulated;
pub mod vtrain;
pub mod vtrain_table;

pub use keys::{MeasuredKey, Quantity, Variant};

use serde::Serialize;
use sim::cost::layer_kernel_costs;
use sim::scenario::fitted::FitValues;
use sim::scenario::{Recompute, ScenarioFile, ScheduleKind, TrainingOptionsFile};
use sim::task_graph::ComputePass;
use simulated::{breakdown, simulate_file, simulate_variant, Simulated};
use std::collections::BTreeMap;

/// One prediction against one published figure.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ValidationRow {
    pub case: String,
    pub quantity: String,
    /// The published (measured) value.
    #[serde(rename = "measured")]
    pub published: f64,
    /// None when the case cannot be modeled; `note` says why.
    pub predicted: Option<f64>,
    pub error_percent: Option<f64>,
    /// Breakdown or reason.
    pub note: String,
    /// The simulated run's regime, for an iteration-level prediction
    /// ([`residuals`]); not written out.
    #[serde(skip)]
    pub regime: Option<regime::Regime>,
}

impl ValidationRow {
    fn in_regime(mut self, regime: &regime::Regime) -> ValidationRow {
        if self.predicted.is_some() {
            self.regime = Some(regime.clone());
        }
        self
    }
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
    if !(published.is_finite() && published > 0.0) {
        return skipped(
            case,
            quantity,
            published,
            &format!("published value {published} is not positive: no relative error"),
        );
    }
    if !predicted.is_finite() {
        return skipped(
            case,
            quantity,
            published,
            "the prediction is not a finite number (a size beyond what the cost model can represent)",
        );
    }
    // A ratio first: `predicted - published` overflows for published values near f64::MAX.
    let error_percent = 100.0 * (predicted / published - 1.0);
    if !error_percent.is_finite() {
        return skipped(
            case,
            quantity,
            published,
            &format!("published value {published:e} is too small for a finite relative error"),
        );
    }
    ValidationRow {
        case: case.into(),
        quantity: quantity.into(),
        published,
        predicted: Some(predicted),
        error_percent: Some(error_percent),
        note,
        regime: None,
    }
}

fn skipped(case: &str, quantity: &str, published: f64, why: &str) -> ValidationRow {
    ValidationRow {
        case: case.into(),
        quantity: quantity.into(),
        published,
        predicted: None,
        error_percent: None,
        // One line per row: multi-problem scenario errors are joined.
        note: why.replace(":\n  - ", ": ").replace("\n  - ", "; "),
        regime: None,
    }
}

/// Runs every case of a dev-set JSON text.
pub fn run_dev_set(text: &str) -> Result<Vec<ValidationRow>, ValidationError> {
    run_dev_set_with(text, &FitValues::CALIBRATED)
}

/// [`run_dev_set`] with a fit's factors applied to every simulated scenario
/// (`clustersim validate --fit`, `clustersim fit`).
pub fn run_dev_set_with(
    text: &str,
    fit: &FitValues,
) -> Result<Vec<ValidationRow>, ValidationError> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    let cases = value
        .get("cases")
        .and_then(|c| c.as_array())
        .ok_or(ValidationError::NoCases)?;
    let file_hardware = value.get("hardware").and_then(|h| h.as_str()).unwrap_or("");
    let mut rows = Vec::new();
    for case in cases {
        let id = case.get("id").and_then(|v| v.as_str()).unwrap_or("?");
        let measured = case
            .get("measured")
            .and_then(|m| m.as_object())
            .cloned()
            .unwrap_or_default();
        let hardware = [
            file_hardware,
            case.get("hardware").and_then(|h| h.as_str()).unwrap_or(""),
            case.get("source").and_then(|h| h.as_str()).unwrap_or(""),
        ]
        .join(" ");
        if let Some(scenario) = case.get("scenario") {
            rows.extend(scenario_cases::rows(id, scenario, &measured, fit));
            continue;
        }
        let case_file = case_scenario(id, case, &hardware);
        if measured.contains_key("forward_ms") {
            let source = case.get("source").and_then(|s| s.as_str()).unwrap_or("");
            let stack = stack_from_source(source);
            rows.extend(layer_rows(
                id,
                &measured,
                case_file.as_ref().ok(),
                stack,
                fit,
            ));
            continue;
        }
        let numbers = measured
            .iter()
            .filter_map(|(key, value)| value.as_f64().map(|v| (key.as_str(), v)));
        let (file, default_variant, ignored) = match case_file {
            Ok(parsed) => parsed,
            Err(why) => {
                rows.extend(numbers.map(|(key, published)| skipped(id, key, published, &why)));
                continue;
            }
        };
        let task_classes =
            measures_task_classes(numbers.clone().map(|(key, _)| key), default_variant);
        let mut simulated: BTreeMap<Variant, Result<Simulated, String>> = BTreeMap::new();
        for (key, published) in numbers {
            let (quantity, variant) = match keys::parse(key, default_variant) {
                MeasuredKey::Predict(quantity, variant) => (quantity, variant),
                MeasuredKey::Restated => {
                    rows.push(skipped(
                        id,
                        key,
                        published,
                        "restates another figure of this case; not predicted separately",
                    ));
                    continue;
                }
                MeasuredKey::Unknown => {
                    rows.push(skipped(
                        id,
                        key,
                        published,
                        "not modeled: unknown measured quantity (see `studies::validation::keys`)",
                    ));
                    continue;
                }
            };
            let label = format!("{} ({})", quantity.name(), variant.label());
            let outcome = simulated
                .entry(variant)
                .or_insert_with(|| simulate_variant(&file, variant, fit, task_classes));
            match outcome {
                Ok(simulated) => rows.push(
                    row(
                        id,
                        &label,
                        published,
                        simulated.predict(quantity),
                        breakdown(&simulated.metrics) + &ignored,
                    )
                    .in_regime(&simulated.regime),
                ),
                Err(why) => rows.push(skipped(id, &label, published, why)),
            }
        }
    }
    Ok(rows)
}

/// Whether any of a case's measured keys is a class of rank 0's tasks
/// (`compute_s`, …), which needs rank 0's records of the simulated run.
fn measures_task_classes<'a>(keys: impl IntoIterator<Item = &'a str>, variant: Variant) -> bool {
    keys.into_iter().any(|key| {
        matches!(keys::parse(key, variant),
            MeasuredKey::Predict(quantity, _) if quantity.is_task_class())
    })
}

/// The scenario a case describes (recompute and sequence parallelism are set
/// per variant later), its default variant, and a note naming layout keys
/// that were not understood.
fn case_scenario(
    id: &str,
    case: &serde_json::Value,
    hardware: &str,
) -> Result<(ScenarioFile, Variant, String), String> {
    let (Some(model), Some(layout)) = (case.get("model"), case.get("layout")) else {
        return Err("needs `model` and `layout` to be simulated".into());
    };
    let mut model = model.clone();
    match &mut model {
        serde_json::Value::Object(object) => {
            object
                .entry("name")
                .or_insert_with(|| serde_json::Value::from(id));
        }
        serde_json::Value::String(_) => {} // a preset name or a model file
        other => {
            return Err(format!(
                "`model` must be a preset name or an object, not {other}"
            ))
        }
    }
    let layout = layout.as_object().ok_or("`layout` is not an object")?;
    // Every integer of the layout must fit the simulator's u32 degrees.
    for (key, value) in layout {
        if let Some(number) = value.as_u64() {
            if u32::try_from(number).is_err() {
                return Err(format!(
                    "layout.{key}: {number} is larger than {}",
                    u32::MAX
                ));
            }
        }
    }
    let source = case.get("source").and_then(|s| s.as_str()).unwrap_or("");
    let get = |key: &str| {
        layout
            .get(key)
            .and_then(|v| v.as_u64())
            .and_then(|v| u32::try_from(v).ok())
    };
    let flag = |key: &str| layout.get(key).and_then(|v| v.as_bool());
    let chunks = get("chunks").unwrap_or(1);
    let schedule = match layout.get("schedule").and_then(|v| v.as_str()) {
        Some(name) => Some(
            ScheduleKind::parse(name)
                .ok_or(format!("layout.schedule: unknown schedule '{name}'"))?,
        ),
        None if chunks > 1 => Some(ScheduleKind::Interleaved),
        None => Some(ScheduleKind::OneFOneB),
    };
    let recompute = match layout.get("recompute").and_then(|v| v.as_str()) {
        Some(name) => {
            Recompute::parse(name).ok_or(format!("layout.recompute: unknown mode '{name}'"))?
        }
        None => Recompute::Full,
    };
    let default_variant = Variant {
        recompute,
        sequence_parallel: flag("sequence_parallel").unwrap_or(false),
    };
    let gpus = [get("tp"), get("pp"), get("dp")]
        .into_iter()
        .map(|d| d.unwrap_or(1) as u64)
        .product::<u64>();
    let topology = match case.get("topology").and_then(|t| t.as_str()) {
        Some(name) => name.to_string(),
        None => topology_for_hardware(hardware, gpus).to_string(),
    };
    const KNOWN: [&str; 12] = [
        "stack",
        "tp",
        "pp",
        "dp",
        "chunks",
        "microbatch_size",
        "global_batch",
        "schedule",
        "recompute",
        "sequence_parallel",
        "zero_offload",
        "delayed_update",
    ];
    let unknown: Vec<&str> = layout
        .keys()
        .map(String::as_str)
        .filter(|key| !KNOWN.contains(key))
        .collect();
    let ignored = if unknown.is_empty() {
        String::new()
    } else {
        format!(" (ignored layout keys: {})", unknown.join(", "))
    };
    let file = ScenarioFile {
        model: Some(model),
        topology: Some(topology.into()),
        stack: layout
            .get("stack")
            .and_then(|v| v.as_str())
            .or(stack_from_source(source))
            .map(String::from),
        tp: get("tp"),
        pp: get("pp"),
        dp: get("dp"),
        chunks: Some(chunks),
        microbatch_size: get("microbatch_size"),
        global_batch: get("global_batch"),
        schedule,
        options: TrainingOptionsFile {
            zero_offload: flag("zero_offload").or(offload_from_source(source).then_some(true)),
            delayed_update: flag("delayed_update")
                .or(delayed_update_from_source(source).then_some(true)),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    };
    let mut file = file;
    if runs_pytorch_ddp(source, get("pp").unwrap_or(1)) {
        file.options.overlap_grad_reduce = Some(true);
        file.options.grad_reduce_bucket_params = Some(PYTORCH_DDP_BUCKET_PARAMS);
    }
    Ok((file, default_variant, ignored))
}

/// The software stack a case's source ran, when its layout does not say:
/// Korthikanti et al. 2022 ran the Megatron-LM of early 2022 (asynchronous
/// tensor all-reduce on by default), the SC21 paper the code of 2021. Other
/// sources run under the default stack.
fn stack_from_source(source: &str) -> Option<&'static str> {
    if source.contains("Korthikanti") {
        Some("megatron-2022")
    } else if source.contains("SC21") || source.contains("run_table_1.sh") {
        Some("megatron-2021")
    } else {
        None
    }
}

/// Whether a case measured ZeRO-Offload (its source names it), when its layout does not say.
fn offload_from_source(source: &str) -> bool {
    source.contains("ZeRO-Offload")
}

/// Whether a ZeRO-Offload case ran with the delayed parameter update.
fn delayed_update_from_source(source: &str) -> bool {
    let named = source.contains("DPU") || source.contains("delayed parameter update");
    let negated = [
        "without DPU",
        "no DPU",
        "without delayed",
        "without the delayed",
    ]
    .iter()
    .any(|phrase| source.contains(phrase));
    offload_from_source(source) && named && !negated
}

/// PyTorch DDP's default gradient bucket, 25 MB (`bucket_cap_mb`), in fp16 parameters.
pub const PYTORCH_DDP_BUCKET_PARAMS: u64 = 25_000_000 / 2;

/// Whether a case ran Megatron-LM with `--DDP-impl torch`: NVIDIA's SC21
/// script (`examples/sc21/run_table_1.sh`) uses it for every configuration
/// without pipeline parallelism and the local DDP otherwise. PyTorch DDP
/// all-reduces gradient buckets during the last microbatch's backward.
fn runs_pytorch_ddp(source: &str, pipeline_parallel: u32) -> bool {
    (source.contains("SC21") || source.contains("run_table_1.sh")) && pipeline_parallel == 1
}

/// The topology preset for a case's hardware description.
fn topology_for_hardware(hardware: &str, gpus: u64) -> &'static str {
    if hardware.contains("DGX-2") || hardware.contains("V100") {
        if gpus <= 16 {
            "dgx2-v100"
        } else {
            "dgx2-v100-x8"
        }
    } else {
        "selene"
    }
}

/// One transformer layer's forward and backward in ms, each its kernels
/// plus its two blocking tensor all-reduces (Korthikanti et al. 2022, Table 4).
/// The case's model, `tp` and `microbatch_size` when given, else the 22B
/// model (h=6144, a=64, s=2048) at t=8, b=4 that table measured.
fn layer_rows(
    id: &str,
    measured: &serde_json::Map<String, serde_json::Value>,
    case: Option<&(ScenarioFile, Variant, String)>,
    stack: Option<&str>,
    fit: &FitValues,
) -> Vec<ValidationRow> {
    let file = match case {
        Some((file, _, _)) => ScenarioFile {
            model: file.model.clone(),
            topology: file.topology.clone(),
            stack: file.stack.clone(),
            tp: file.tp,
            microbatch_size: file.microbatch_size,
            ..ScenarioFile::default()
        },
        None => ScenarioFile {
            model: Some("gpt-22b".into()),
            topology: Some("selene".into()),
            stack: stack.map(String::from),
            tp: Some(8),
            microbatch_size: Some(4),
            ..ScenarioFile::default()
        },
    };
    let b = file.microbatch_size.unwrap_or(1);
    let mut scenario = match (ScenarioFile {
        pp: Some(1),
        dp: Some(1),
        global_batch: Some(b),
        recompute: Some(Recompute::Selective),
        ..file
    })
    .resolve()
    {
        Ok(scenario) => scenario,
        Err(error) => {
            return measured
                .iter()
                .filter_map(|(key, value)| value.as_f64().map(|v| (key, v)))
                .map(|(key, published)| skipped(id, key, published, &error.to_string()))
                .collect();
        }
    };
    fit.apply(&mut scenario);
    // The scenario recomputes selectively, so its recompute pass is the attention core.
    let rows = layer_kernel_costs(&scenario, &sim::placement::Placement::of(&scenario));
    let ms = |pass: ComputePass, communication: bool| -> f64 {
        rows.iter()
            .filter(|r| r.pass == pass && r.is_communication == communication)
            .map(|r| r.seconds * 1e3)
            .sum()
    };
    let (fwd_kernels, fwd_comm) = (
        ms(ComputePass::Forward, false),
        ms(ComputePass::Forward, true),
    );
    let (bwd_kernels, bwd_comm) = (
        ms(ComputePass::Backward, false),
        ms(ComputePass::Backward, true),
    );
    let attention_core = ms(ComputePass::Recompute, false);
    let (forward, backward) = (fwd_kernels + fwd_comm, bwd_kernels + bwd_comm);
    measured
        .iter()
        .filter_map(|(key, value)| value.as_f64().map(|v| (key.as_str(), v)))
        .map(|(key, published)| match key {
            "forward_ms" => row(
                id,
                key,
                published,
                forward,
                format!("kernels {fwd_kernels:.2} ms + TP all-reduce {fwd_comm:.2} ms"),
            ),
            "backward_ms_no_recompute" => row(
                id,
                key,
                published,
                backward,
                format!("kernels {bwd_kernels:.2} ms + TP all-reduce {bwd_comm:.2} ms"),
            ),
            "backward_ms_full_recompute" => row(
                id,
                key,
                published,
                forward + backward,
                "recomputed forward + backward".into(),
            ),
            "backward_ms_selective_recompute" => row(
                id,
                key,
                published,
                attention_core + backward,
                format!("recomputed attention core {attention_core:.2} ms + backward"),
            ),
            _ => skipped(
                id,
                key,
                published,
                "not modeled: unknown per-layer quantity",
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests;
