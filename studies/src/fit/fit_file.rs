//! FIT.json: what `clustersim fit` learned, and how `--fit` reads it back.
//!
//! It records every parameter (fitted or kept at its prior, and why), its
//! uncertainty, the runs with their measured ÷ predicted ratios before the
//! fit, after it and left out of it, the in-sample and leave-one-out errors,
//! and the tool's version. `--fit` takes the factors and the leave-one-out
//! range from it; a file whose factors leave their physical bounds, or that
//! names a parameter this build does not know, is refused.

use super::FitError;
use serde::{Deserialize, Serialize};
use sim::scenario::fitted::{FitParameter, FitValues};

/// The `format` field of every FIT.json.
pub const FORMAT: &str = "clustersim-fit";

/// The version of the format this build writes and reads (`schemas/fit.schema.json`).
pub const SCHEMA_VERSION: u32 = 1;

/// A whole FIT.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitRecord {
    pub format: String,
    /// Read from `format_version` too (its name before every document had a `schema_version`).
    #[serde(alias = "format_version")]
    pub schema_version: u32,
    /// "clustersim 0.1.0".
    pub tool: String,
    /// The CASES file as given on the command line.
    pub cases_file: String,
    /// The measurement noise assumed, as a standard deviation of ln time.
    pub noise_log_sd: f64,
    pub parameters: Vec<ParameterRecord>,
    pub runs: Vec<RunRecord>,
    pub in_sample: ErrorSummary,
    pub leave_one_out: LeaveOneOut,
    /// Whether one parameter set explains the runs within twice the
    /// measurement noise.
    pub consistent: bool,
    /// Whether the runs left out are predicted better with the fit than
    /// calibrated (mean |error|).
    pub leave_one_out_beats_calibrated: bool,
    pub warnings: Vec<String>,
}

/// One parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParameterRecord {
    pub name: FitParameter,
    pub meaning: String,
    /// The factor (1 = the calibrated figure).
    pub value: f64,
    pub fitted: bool,
    /// Posterior standard deviation of ln(value), fitted parameters only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_sd: Option<f64>,
    /// value · exp(∓ log_sd), within the bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[f64; 2]>,
    pub bounds: [f64; 2],
    pub prior_log_sd: f64,
    /// Why the runs could not identify it (kept at 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_at_prior_because: Option<String>,
}

/// One run of the CASES file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    /// The case and its variant, or "vtrain line N".
    pub run: String,
    /// The regime of the run (`Hopper, megatron-core-2024, fp8, dense, …`).
    pub regime: String,
    /// Measured ÷ predicted iteration time as calibrated.
    pub calibrated_ratio: f64,
    /// … with the fitted factors.
    pub fitted_ratio: f64,
    /// … with the factors fitted without this run's case.
    pub leave_one_out_ratio: f64,
    /// One kernel class's time from a profiler trace ("case · gemm_s"), not
    /// a whole run: fitted to, but outside the errors and the range.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernel_class: bool,
}

/// Errors over the whole runs (error = predicted ÷ measured iteration time
/// − 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorSummary {
    pub runs: usize,
    pub calibrated_mean_abs_error_percent: f64,
    pub mean_abs_error_percent: f64,
    pub max_abs_error_percent: f64,
}

/// Each case predicted by the factors fitted without it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaveOneOut {
    /// How each case's factors were found.
    pub method: String,
    pub mean_abs_error_percent: f64,
    pub max_abs_error_percent: f64,
    /// Measured ÷ predicted: the range a new prediction gets.
    pub ratio_low: f64,
    pub ratio_high: f64,
    /// "lowest to highest" or "5th to 95th percentile" of the runs.
    pub range_method: String,
    /// How often that range, made without each run in turn, holds the run
    /// (percent of the runs; absent with fewer than 4 runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out_coverage_percent: Option<f64>,
    /// The mean width of those ranges (high ÷ low − 1, percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out_mean_width_percent: Option<f64>,
}

/// Error percent of a measured ÷ predicted ratio.
pub fn error_percent(ratio: f64) -> f64 {
    100.0 * (1.0 / ratio - 1.0)
}

impl FitRecord {
    /// Reads a FIT.json's text, checking what `--fit` relies on.
    pub fn parse(text: &str) -> Result<FitRecord, FitError> {
        let record: FitRecord =
            serde_json::from_str(text).map_err(|e| FitError::BadFitFile(e.to_string()))?;
        if record.format != FORMAT || record.schema_version != SCHEMA_VERSION {
            return Err(FitError::BadFitFile(format!(
                "format {:?} schema_version {}; this build reads {FORMAT:?} schema_version {SCHEMA_VERSION}",
                record.format, record.schema_version
            )));
        }
        for parameter in &record.parameters {
            let (low, high) = parameter.name.bounds();
            if !(parameter.value.is_finite() && low <= parameter.value && parameter.value <= high) {
                return Err(FitError::BadFitFile(format!(
                    "{} = {} is outside its physical bounds {low}–{high}",
                    parameter.name.name(),
                    parameter.value
                )));
            }
        }
        let l = &record.leave_one_out;
        let positive_range = l.ratio_low.is_finite()
            && l.ratio_low > 0.0
            && l.ratio_low <= l.ratio_high
            && l.ratio_high.is_finite();
        if !positive_range {
            return Err(FitError::BadFitFile(format!(
                "leave_one_out ratio range {}–{} is not a range of positive numbers",
                l.ratio_low, l.ratio_high
            )));
        }
        Ok(record)
    }

    /// The factors to apply.
    pub fn values(&self) -> FitValues {
        FitValues::from_factors(self.parameters.iter().map(|p| (p.name, p.value)))
    }
}
