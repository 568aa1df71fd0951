//! vTrain's single-node ground truth (`validation/vtrain-single-node.csv`):
//! 1,440 measured iterations of Megatron-DeepSpeed GPT models on 2–8 A100s
//! of one NVLink node, from VIA-Research/vTrain (MICRO'24), commit f8dda84,
//! `data/ground_truth_single.csv` (its `data/README.md`: "collected using
//! Megatron-DeepSpeed codebase").
//!
//! [`read_csv`] checks the header and every row (a bad file is a
//! [`VtrainCsvError`] naming the line and column); [`scenario_file`] turns a
//! row into the scenario it measured; [`simulate_runs`] simulates every row in
//! parallel, in row order, without any memory filter (every run happened);
//! [`super::vtrain_table`] summarizes the errors. Nothing here tunes anything:
//! every row runs with the `dgx-a100` topology's default profile.
//!
//! What the rows do not say comes from vTrain's repository at f8dda84:
//! - `config/validation/single/config_val_single_NNNN.json` (one per row, in
//!   row order): `gpu_name` "A100", `max_length` 1024, 16 heads,
//!   `use_checkpoint` true (full activation recompute), `pipeline_scheduling`
//!   "1f1b", `use_gradient_bucket` false (no DDP gradient buckets: one
//!   non-overlapped data-parallel all-reduce after the last backward);
//! - `src/config.py`: `vocab_size` defaults to 50257 (GPT-2's BPE vocabulary;
//!   no single-node config sets it), also `src/model/gpt_model.py`;
//! - `src/model/gpt_model.py` and `src/predictor.py`: fp16 parameters and
//!   gradients (2-byte elements), the simulator's default precision.
//!
//! Megatron-DeepSpeed pads the vocabulary to a multiple of
//! `make_vocab_size_divisible_by` (default 128) × t
//! (`megatron/tokenizer/tokenizer.py`, `_vocab_size_with_padding`;
//! `megatron/arguments.py`), so the model runs with [`padded_vocab`].
//! vTrain's repository does not say whether its A100s had 40 or 80 GB;
//! `dgx-a100` is the 80 GB DGX A100.

use rayon::prelude::*;
use serde::Serialize;
use sim::scenario::fitted::FitValues;
use sim::scenario::{Recompute, ScenarioFile, ScheduleKind, TrainingOptionsFile};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The topology preset every row runs on: one DGX A100 node.
pub const VTRAIN_TOPOLOGY: &str = "dgx-a100";

/// GPT-2's BPE vocabulary, vTrain's `vocab_size` default (`src/config.py`).
pub const GPT2_VOCAB: u64 = 50257;

/// Megatron-DeepSpeed's `--make-vocab-size-divisible-by` default.
pub const MAKE_VOCAB_SIZE_DIVISIBLE_BY: u64 = 128;

/// The CSV's columns, in order (the first one follows a UTF-8 BOM and `#`).
pub const COLUMNS: [&str; 11] = [
    "# GPUs",
    "global batch",
    "micro batch",
    "hidden size",
    "attention heads",
    "# layers",
    "sequence length",
    "tensor parallelism",
    "data parallelism",
    "pipeline parallelism",
    "iteration time (ms)",
];

const BOM: char = '\u{feff}';

/// One measured run (one data row of the CSV).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VtrainRun {
    /// Line of the file (the header is line 1).
    pub line: usize,
    pub gpus: u32,
    pub global_batch: u32,
    pub microbatch_size: u32,
    pub hidden: u32,
    pub heads: u32,
    pub layers: u32,
    pub seq_len: u32,
    #[serde(rename = "tensor_parallel")]
    pub tp: u32,
    #[serde(rename = "data_parallel")]
    pub dp: u32,
    #[serde(rename = "pipeline_parallel")]
    pub pp: u32,
    /// The measured iteration (written in seconds as `measured`).
    #[serde(rename = "measured", serialize_with = "ms_as_s")]
    pub measured_ms: f64,
}

/// Milliseconds written as seconds (validate's JSON gives every time in s).
fn ms_as_s<S: serde::Serializer>(ms: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(ms / 1e3)
}

fn option_ms_as_s<S: serde::Serializer>(
    ms: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) => serializer.serialize_some(&(ms / 1e3)),
        None => serializer.serialize_none(),
    }
}

/// What is wrong with a vTrain CSV file; every variant names its line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VtrainCsvError {
    #[error("line 1: not vTrain's ground-truth header (expected `#` and the columns {expected}), found {found:?}")]
    Header { found: String, expected: String },
    #[error("line {line}: {found} columns, expected {}", COLUMNS.len())]
    Columns { line: usize, found: usize },
    #[error("line {line}, column {column} ({name}): {problem}")]
    Field {
        line: usize,
        /// 1-based.
        column: usize,
        name: &'static str,
        problem: String,
    },
    #[error("line {line}: {problem}")]
    Row { line: usize, problem: String },
    #[error("no runs after the header")]
    Empty,
}

/// Whether a text looks like vTrain's CSV (its first line starts with `#`,
/// after an optional BOM); a dev-set JSON file starts with `{`.
pub fn looks_like_csv(text: &str) -> bool {
    text.trim_start_matches(BOM).starts_with('#')
}

/// Whether a file is vTrain's CSV: a `.csv` extension, or a text that
/// [`looks_like_csv`].
pub fn is_vtrain_file(path: &std::path::Path, text: &str) -> bool {
    let csv_extension = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    csv_extension || looks_like_csv(text)
}

/// Reads the whole file: the header, then one run per non-empty line.
pub fn read_csv(text: &str) -> Result<Vec<VtrainRun>, VtrainCsvError> {
    let mut lines = text.trim_start_matches(BOM).lines().enumerate();
    let header = lines.next().map(|(_, l)| l).unwrap_or("");
    check_header(header)?;
    let runs = lines
        .map(|(index, text)| (index + 1, text.trim_end_matches('\r')))
        .filter(|(_, text)| !text.trim().is_empty())
        .map(|(line, text)| parse_row(line, text))
        .collect::<Result<Vec<_>, _>>()?;
    if runs.is_empty() {
        return Err(VtrainCsvError::Empty);
    }
    Ok(runs)
}

fn check_header(header: &str) -> Result<(), VtrainCsvError> {
    let header = header.trim_end_matches('\r');
    let fields: Vec<&str> = header.split(',').map(str::trim).collect();
    let matches = header.starts_with('#')
        && fields.len() == COLUMNS.len()
        && fields.iter().zip(COLUMNS).all(|(a, b)| *a == b);
    if matches {
        Ok(())
    } else {
        Err(VtrainCsvError::Header {
            found: header.chars().take(120).collect(),
            expected: COLUMNS.join(","),
        })
    }
}

fn parse_row(line: usize, text: &str) -> Result<VtrainRun, VtrainCsvError> {
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    if fields.len() != COLUMNS.len() {
        return Err(VtrainCsvError::Columns {
            line,
            found: fields.len(),
        });
    }
    let field_error = |column: usize, problem: String| VtrainCsvError::Field {
        line,
        column: column + 1,
        name: COLUMNS[column],
        problem,
    };
    let int = |column: usize| -> Result<u32, VtrainCsvError> {
        let value = fields[column].parse::<u32>().map_err(|_| {
            field_error(
                column,
                format!("{:?} is not a whole number below 2^32", fields[column]),
            )
        })?;
        if value == 0 {
            return Err(field_error(column, "must be at least 1".into()));
        }
        Ok(value)
    };
    let measured_ms = fields[10]
        .parse::<f64>()
        .ok()
        .filter(|ms| ms.is_finite() && *ms > 0.0)
        .ok_or_else(|| {
            field_error(
                10,
                format!("{:?} is not a positive number of ms", fields[10]),
            )
        })?;
    let run = VtrainRun {
        line,
        gpus: int(0)?,
        global_batch: int(1)?,
        microbatch_size: int(2)?,
        hidden: int(3)?,
        heads: int(4)?,
        layers: int(5)?,
        seq_len: int(6)?,
        tp: int(7)?,
        dp: int(8)?,
        pp: int(9)?,
        measured_ms,
    };
    let product = run
        .tp
        .checked_mul(run.dp)
        .and_then(|td| td.checked_mul(run.pp));
    if product != Some(run.gpus) {
        return Err(VtrainCsvError::Row {
            line,
            problem: format!(
                "# GPUs ({}) is not t·d·p ({}·{}·{})",
                run.gpus, run.tp, run.dp, run.pp
            ),
        });
    }
    Ok(run)
}

/// GPT-2's vocabulary padded as Megatron-DeepSpeed pads it for `tp` tensor
/// ranks: up to a multiple of 128·t (50304 at t=1, 50432 at 2, 50688 at 4,
/// 51200 at 8).
pub fn padded_vocab(tp: u32) -> u64 {
    let multiple = MAKE_VOCAB_SIZE_DIVISIBLE_BY * u64::from(tp.max(1));
    GPT2_VOCAB.div_ceil(multiple) * multiple
}

/// The scenario a row measured: its model inline, one DGX A100, the row's
/// layout, 1F1B, full recompute, one data-parallel all-reduce after the last
/// backward (no gradient buckets).
pub fn scenario_file(run: &VtrainRun) -> ScenarioFile {
    let model = serde_json::json!({
        "name": format!("vtrain-h{}-a{}-l{}", run.hidden, run.heads, run.layers),
        "layers": run.layers,
        "hidden": run.hidden,
        "heads": run.heads,
        "seq_len": run.seq_len,
        "vocab": padded_vocab(run.tp),
    });
    ScenarioFile {
        model: Some(model),
        topology: Some(VTRAIN_TOPOLOGY.into()),
        // vTrain's data/README.md: collected with Megatron-DeepSpeed, whose
        // DeepSpeed engine turns the asynchronous tensor all-reduce off.
        stack: Some("deepspeed-pipeline".into()),
        tp: Some(run.tp),
        pp: Some(run.pp),
        dp: Some(run.dp),
        chunks: Some(1),
        microbatch_size: Some(run.microbatch_size),
        global_batch: Some(run.global_batch),
        schedule: Some(ScheduleKind::OneFOneB),
        recompute: Some(Recompute::Full),
        options: TrainingOptionsFile {
            // `use_gradient_bucket: false`: no DDP buckets, no overlap.
            overlap_grad_reduce: Some(false),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    }
}

/// One row predicted against its measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VtrainResult {
    #[serde(flatten)]
    pub run: VtrainRun,
    /// The simulated iteration in integer nanoseconds (None when refused).
    #[serde(rename = "predicted_iteration_time_ns")]
    pub predicted_ns: Option<u64>,
    #[serde(rename = "predicted", serialize_with = "option_ms_as_s")]
    pub predicted_ms: Option<f64>,
    /// 100 · (predicted / measured − 1).
    pub error_percent: Option<f64>,
    /// Whether every stage fits in the topology's GPU memory (simulated anyway).
    pub fits_in_memory: Option<bool>,
    /// Why the simulator refused the row (invalid layout, …).
    pub refused: Option<String>,
    /// The simulated run's regime ([`super::residuals`]); not written out.
    #[serde(skip)]
    pub regime: Option<super::regime::Regime>,
}

/// Simulates one row, with a fit's factors.
pub fn simulate_run(run: &VtrainRun, fit: &FitValues) -> VtrainResult {
    let refused = |why: String| VtrainResult {
        run: *run,
        predicted_ns: None,
        predicted_ms: None,
        error_percent: None,
        fits_in_memory: None,
        // One line per row: multi-problem scenario errors are joined.
        refused: Some(why.replace(":\n  - ", ": ").replace("\n  - ", "; ")),
        regime: None,
    };
    let mut scenario = match scenario_file(run).resolve() {
        Ok(scenario) => scenario,
        Err(error) => return refused(error.to_string()),
    };
    fit.apply(&mut scenario);
    if let Err(error) = sim::host_memory::check_fits_this_machine(&scenario, sim::Expansion::Auto) {
        return refused(error.to_string());
    }
    let report = match sim::simulate(&scenario) {
        Ok(report) => report,
        Err(error) => return refused(error.to_string()),
    };
    let ns = report.makespan_ns();
    let predicted_ms = ns as f64 / 1e6;
    let error_percent = 100.0 * (predicted_ms / run.measured_ms - 1.0);
    if !error_percent.is_finite() {
        return refused(format!(
            "measured {:e} ms is too small for a finite relative error",
            run.measured_ms
        ));
    }
    VtrainResult {
        run: *run,
        predicted_ns: Some(ns),
        predicted_ms: Some(predicted_ms),
        error_percent: Some(error_percent),
        fits_in_memory: Some(report.memory.iter().all(|stage| stage.fits)),
        refused: None,
        regime: Some(super::regime::Regime::of(&scenario)),
    }
}

/// Simulates every row in parallel, with a fit's factors; results come
/// back in row order. `on_simulated(done, total)` is called after each row
/// (from any thread).
pub fn simulate_runs(
    runs: &[VtrainRun],
    fit: &FitValues,
    on_simulated: &(dyn Fn(usize, usize) + Sync),
) -> Vec<VtrainResult> {
    let done = AtomicUsize::new(0);
    runs.par_iter()
        .with_max_len(1)
        .map(|run| {
            let result = simulate_run(run, fit);
            on_simulated(done.fetch_add(1, Ordering::Relaxed) + 1, runs.len());
            result
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "\u{feff}# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\r\n";

    fn csv(rows: &[&str]) -> String {
        let mut text = HEADER.to_string();
        for row in rows {
            text.push_str(row);
            text.push_str("\r\n");
        }
        text
    }

    #[test]
    fn reads_the_header_and_every_row() {
        // The first rows of the file, as written (BOM, CRLF).
        let text = csv(&[
            "2,16,8,1024,16,24,1024,1,1,2,372.160408",
            "8,32,4,1024,16,24,1024,2,2,2,219.732754",
            "4,16,2,1024,16,20,1024,1,4,1,158.717599",
        ]);
        assert!(looks_like_csv(&text));
        assert!(!looks_like_csv("{\"cases\": []}"));
        let runs = read_csv(&text).unwrap();
        assert_eq!(runs.len(), 3);
        assert_eq!(
            runs[1],
            VtrainRun {
                line: 3,
                gpus: 8,
                global_batch: 32,
                microbatch_size: 4,
                hidden: 1024,
                heads: 16,
                layers: 24,
                seq_len: 1024,
                tp: 2,
                dp: 2,
                pp: 2,
                measured_ms: 219.732754,
            }
        );
        assert_eq!(runs[2].line, 4);
    }

    #[test]
    fn a_bad_row_names_its_line_and_column() {
        let text = csv(&[
            "2,16,8,1024,16,24,1024,1,1,2,372.1",
            "8,32,4,1024,16,24,1024,2,2,-2,219.7",
        ]);
        let error = read_csv(&text).unwrap_err();
        assert_eq!(
            error.to_string(),
            "line 3, column 10 (pipeline parallelism): \"-2\" is not a whole number below 2^32"
        );
        let cases = [
            (
                "8,32,4,1024,16,24,1024,2,2,2",
                "line 2: 10 columns, expected 11",
            ),
            (
                "8,32,4,1024,16,24,1024,2,2,2,abc",
                "line 2, column 11 (iteration time (ms)): \"abc\" is not a positive number of ms",
            ),
            (
                "8,32,0,1024,16,24,1024,2,2,2,1.0",
                "line 2, column 3 (micro batch): must be at least 1",
            ),
            (
                "8,32,4,1024,16,24,1024,2,2,4,1.0",
                "line 2: # GPUs (8) is not t·d·p (2·2·4)",
            ),
            (
                "8,32,4,99999999999,16,24,1024,2,2,2,1.0",
                "line 2, column 4 (hidden size): \"99999999999\" is not a whole number below 2^32",
            ),
        ];
        for (row, message) in cases {
            assert_eq!(read_csv(&csv(&[row])).unwrap_err().to_string(), message);
        }
        assert_eq!(read_csv(&csv(&[])), Err(VtrainCsvError::Empty));
        let no_header = "2,16,8,1024,16,24,1024,1,1,2,372.1\n";
        assert!(matches!(
            read_csv(no_header),
            Err(VtrainCsvError::Header { .. })
        ));
        assert!(read_csv("").unwrap_err().to_string().starts_with("line 1:"));
    }

    #[test]
    fn vocabulary_is_padded_as_megatron_deepspeed_pads_it() {
        assert_eq!(padded_vocab(1), 50304);
        assert_eq!(padded_vocab(2), 50432);
        assert_eq!(padded_vocab(4), 50688);
        assert_eq!(padded_vocab(8), 51200);
    }

    #[test]
    fn rows_simulate_end_to_end_in_row_order() {
        let text = csv(&[
            "2,16,8,1024,16,24,1024,1,1,2,372.160408",
            "8,32,4,1024,16,24,1024,2,2,2,219.732754",
            "4,4,2,1024,16,12,1024,4,1,1,88.523325",
            // 5 layers on 2 stages: the simulator refuses it with a reason.
            "2,4,2,1024,16,5,1024,1,1,2,50.0",
        ]);
        let runs = read_csv(&text).unwrap();
        let scenario = scenario_file(&runs[1]).resolve().unwrap();
        assert_eq!(scenario.model.vocab, 50432);
        assert_eq!(scenario.topology.name, VTRAIN_TOPOLOGY);
        let results = simulate_runs(&runs, &FitValues::CALIBRATED, &|_, _| {});
        assert_eq!(
            results,
            simulate_runs(&runs, &FitValues::CALIBRATED, &|_, _| {}),
            "deterministic"
        );
        let lines: Vec<usize> = results.iter().map(|r| r.run.line).collect();
        assert_eq!(lines, [2, 3, 4, 5]);
        for result in &results[..3] {
            let ms = result.predicted_ms.unwrap();
            assert!(ms > 0.0 && result.refused.is_none(), "{result:?}");
            let error = result.error_percent.unwrap();
            assert!((error - 100.0 * (ms / result.run.measured_ms - 1.0)).abs() < 1e-9);
            assert_eq!(result.predicted_ns.unwrap() as f64 / 1e6, ms);
        }
        let refused = &results[3];
        assert!(refused.predicted_ms.is_none());
        let why = refused.refused.as_deref().unwrap();
        assert!(why.contains("layers (5)") && !why.contains('\n'), "{why}");
    }
}
