//! The expected range of a prediction: the measured ÷ predicted iteration
//! times of the validation runs of the same regime
//! (`studies::validation::residuals`), or with `--fit` those of the fit's
//! runs each left out of it, applied to this run's iteration time and
//! throughput; or why there is none.

use sim::scenario::Scenario;
use studies::fit::fit_file::FitRecord;
use studies::validation::regime::Regime;
use studies::validation::residuals::{self, RegimeRange, MIN_RANGE_RUNS};
use timeline::metrics::Metrics;

/// What the validation runs say about one prediction.
pub enum ExpectedRange {
    /// Enough runs of the regime for a range.
    Range(RegimeRange),
    /// Runs of the regime, too few for a range.
    TooFew(RegimeRange),
    /// No validation run of the regime.
    NoData(Regime),
    /// A fit of fewer whole runs than a range takes (`--fit FILE`).
    FitTooFew { file: String, runs: usize },
    /// A fit's leave-one-out ratios (`--fit FILE`).
    Fit {
        file: String,
        runs: usize,
        ratio_low: f64,
        ratio_high: f64,
        method: String,
    },
}

impl ExpectedRange {
    pub fn of(scenario: &Scenario) -> ExpectedRange {
        let regime = Regime::of(scenario);
        match residuals::range_of(&regime) {
            Some(range) if range.runs >= MIN_RANGE_RUNS => ExpectedRange::Range(range),
            Some(range) => ExpectedRange::TooFew(range),
            None => ExpectedRange::NoData(regime),
        }
    }

    /// The range of a prediction made with the fit read from `file`.
    pub fn of_fit(file: &str, record: &FitRecord) -> ExpectedRange {
        let l = &record.leave_one_out;
        if record.in_sample.runs < MIN_RANGE_RUNS {
            return ExpectedRange::FitTooFew {
                file: file.to_string(),
                runs: record.in_sample.runs,
            };
        }
        ExpectedRange::Fit {
            file: file.to_string(),
            runs: record.in_sample.runs,
            ratio_low: l.ratio_low,
            ratio_high: l.ratio_high,
            method: l.range_method.clone(),
        }
    }

    /// The summary's line (after `expected range`).
    pub fn line(&self, m: &Metrics) -> String {
        match self {
            ExpectedRange::FitTooFew { file, runs } => format!(
                "fit {file} has {runs} whole run{}: too few for a range (at least \
                 {MIN_RANGE_RUNS})",
                if *runs == 1 { "" } else { "s" }
            ),
            ExpectedRange::Fit {
                file,
                runs,
                ratio_low,
                ratio_high,
                method,
            } => format!(
                "{:.3}–{:.3} s per iteration, {:.2}–{:.2} samples/s: measured ÷ predicted came out \
                 {ratio_low:.3}–{ratio_high:.3} ({method}) over the {runs} runs of fit {file}, \
                 each predicted with the factors fitted without its case",
                m.iteration_time_s * ratio_low,
                m.iteration_time_s * ratio_high,
                m.samples_per_s / ratio_high,
                m.samples_per_s / ratio_low,
            ),
            ExpectedRange::Range(range) => format!(
                "{:.3}–{:.3} s per iteration, {:.2}–{:.2} samples/s: measured ÷ predicted came out \
                 {:.3}–{:.3} ({}) over the {} validation runs of this regime ({})",
                m.iteration_time_s * range.ratio_low,
                m.iteration_time_s * range.ratio_high,
                m.samples_per_s / range.ratio_high,
                m.samples_per_s / range.ratio_low,
                range.ratio_low,
                range.ratio_high,
                range.method,
                range.runs,
                range.regime.label()
            ),
            ExpectedRange::TooFew(range) => {
                let ratios = if range.ratio_low == range.ratio_high {
                    format!("{:.3}", range.ratio_low)
                } else {
                    format!("{:.3}–{:.3}", range.ratio_low, range.ratio_high)
                };
                format!(
                    "too few validation runs of this regime for a range ({}): {} run{} came out \
                     at {ratios} × the predicted iteration time",
                    range.regime.label(),
                    range.runs,
                    if range.runs == 1 { "" } else { "s" },
                )
            }
            ExpectedRange::NoData(regime) => {
                format!("no validation data for this regime ({})", regime.label())
            }
        }
    }

    /// The `--json` object.
    pub fn json(&self, m: &Metrics) -> serde_json::Value {
        match self {
            ExpectedRange::FitTooFew { file, runs } => serde_json::json!({
                "fit": file,
                "runs": runs,
                "note": format!("fewer than {MIN_RANGE_RUNS} whole runs in the fit: no range"),
            }),
            ExpectedRange::Fit {
                file,
                runs,
                ratio_low,
                ratio_high,
                method,
            } => serde_json::json!({
                "fit": file,
                "runs": runs,
                "method": format!("{method}, each run left out of the fit"),
                "measured_over_predicted": [ratio_low, ratio_high],
                "iteration_time_s": [m.iteration_time_s * ratio_low, m.iteration_time_s * ratio_high],
                "samples_per_s": [m.samples_per_s / ratio_high, m.samples_per_s / ratio_low],
            }),
            ExpectedRange::Range(range) => serde_json::json!({
                "regime": range.regime.label(),
                "runs": range.runs,
                "method": range.method,
                "measured_over_predicted": [range.ratio_low, range.ratio_high],
                "iteration_time_s": [
                    m.iteration_time_s * range.ratio_low,
                    m.iteration_time_s * range.ratio_high
                ],
                "samples_per_s": [
                    m.samples_per_s / range.ratio_high,
                    m.samples_per_s / range.ratio_low
                ],
            }),
            ExpectedRange::TooFew(range) => serde_json::json!({
                "regime": range.regime.label(),
                "runs": range.runs,
                "measured_over_predicted": [range.ratio_low, range.ratio_high],
                "note": format!("fewer than {MIN_RANGE_RUNS} validation runs: no range"),
            }),
            ExpectedRange::NoData(regime) => serde_json::json!({
                "regime": regime.label(),
                "runs": 0,
                "note": "no validation data for this regime",
            }),
        }
    }
}
