//! `validate --json`: one document shape whatever the input. Every document
//! has `schema_version`, `kind` (what the file was), `source` (its path),
//! `rows` (each with `measured`, `predicted` and `error_percent`) and
//! `summary`; the keys are documented in `schemas/validate.schema.json`.

use serde_json::{json, Value};
use studies::validation::ValidationRow;

/// What kind of file was validated.
#[derive(Debug, Clone, Copy)]
pub enum ValidatedFile {
    /// Published cases (validation/dev-set.json format).
    Cases,
    /// vTrain's single-node ground truth CSV.
    VtrainCsv,
    /// A GEMM table (validation/kernels/*.csv).
    GemmTable,
    /// An attention table (validation/kernels/*attention*.csv).
    AttentionTable,
}

impl ValidatedFile {
    fn name(self) -> &'static str {
        match self {
            ValidatedFile::Cases => "cases",
            ValidatedFile::VtrainCsv => "vtrain_csv",
            ValidatedFile::GemmTable => "gemm_table",
            ValidatedFile::AttentionTable => "attention_table",
        }
    }
}

/// The keys every validate document starts with.
pub fn document(file: ValidatedFile, source: &str) -> Value {
    json!({
        "schema_version": crate::schema_versions::VALIDATE,
        "kind": file.name(),
        "source": source,
    })
}

/// Counts and errors over a dev set's rows, with the keys of the vTrain
/// table's summary (`worst_case` names the row with the largest |error|).
pub fn cases_summary(rows: &[ValidationRow]) -> Value {
    let predicted: Vec<(&ValidationRow, f64)> = rows
        .iter()
        .filter_map(|row| row.error_percent.map(|error| (row, error)))
        .collect();
    let count = predicted.len();
    let mean = |f: fn(f64) -> f64| {
        (count > 0).then(|| predicted.iter().map(|(_, e)| f(*e)).sum::<f64>() / count as f64)
    };
    let worst =
        predicted.iter().fold(
            None::<(&ValidationRow, f64)>,
            |worst, &(row, error)| match worst {
                Some((_, w)) if w.abs() >= error.abs() => worst,
                _ => Some((row, error)),
            },
        );
    json!({
        "runs": rows.len(),
        "predicted": count,
        "refused": rows.len() - count,
        "mean_error_percent": mean(|e| e),
        "mean_abs_error_percent": mean(f64::abs),
        "max_abs_error_percent": worst.map(|(_, e)| e.abs()),
        "worst_case": worst.map(|(row, _)| row.case.clone()),
    })
}
