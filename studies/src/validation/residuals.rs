//! How far to trust a prediction: the measured ÷ predicted iteration times
//! of the project's validation runs, by regime ([`super::regime`]), and the
//! expected range they give a new prediction of the same regime.
//!
//! Each validation run counts once: a published case's iteration time where
//! it gives one, else its first throughput figure (tokens/s, TFLOP/s, MFU,
//! … : measured time ÷ predicted time = predicted ÷ measured throughput), per
//! recompute/sequence-parallel variant; vTrain's runs by their iteration
//! times. Per-layer timings are not runs. The range of a regime is the
//! lowest to the highest ratio with fewer than [`PERCENTILE_MIN_RUNS`] runs,
//! else the 5th to the 95th percentile (nearest rank), so that one outlier
//! among hundreds does not set it.
//!
//! The table is committed (`validation/residuals.json`) so that `simulate`
//! reads it without simulating the validation runs; a test recomputes it
//! from the validation files and fails when it is stale
//! (`CLUSTERSIM_BLESS=1` rewrites it).

use super::regime::Regime;
use super::vtrain::VtrainResult;
use super::ValidationRow;
use serde::{Deserialize, Serialize};

/// Runs from which a regime's range is the 5th–95th percentile, not the
/// lowest–highest ratio.
pub const PERCENTILE_MIN_RUNS: usize = 20;

/// Fewest runs that give a range: one or two runs say how one or two runs
/// came out, not how far the next may.
pub const MIN_RANGE_RUNS: usize = 3;

/// The committed table.
const COMMITTED: &str = include_str!("../../../validation/residuals.json");

/// One validation run's measured ÷ predicted iteration time.
#[derive(Debug, Clone, PartialEq)]
pub struct Residual {
    pub regime: Regime,
    pub ratio: f64,
}

/// The residuals of one regime, summarized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegimeRange {
    pub regime: Regime,
    /// Validation runs behind it.
    pub runs: usize,
    /// Measured ÷ predicted iteration time: the range's low and high ends.
    pub ratio_low: f64,
    pub ratio_high: f64,
    /// "lowest to highest" or "5th to 95th percentile".
    pub method: String,
}

/// The committed table's file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResidualTable {
    pub about: String,
    pub regimes: Vec<RegimeRange>,
}

/// Residuals of published-case rows: one per (case, variant).
pub fn of_rows(rows: &[ValidationRow]) -> Vec<Residual> {
    runs_of_rows(rows)
        .into_iter()
        .map(|run| Residual {
            regime: run.regime,
            ratio: run.ratio,
        })
        .collect()
}

/// One validation run's measured ÷ predicted iteration time, named.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResidual {
    /// The case and its variant, e.g. "k22-gpt-175b (SP + selective)".
    pub run: String,
    pub regime: Regime,
    pub ratio: f64,
    /// One kernel class's time from a profiler trace, not a whole run's.
    pub kernel_class: bool,
}

/// The runs of published-case rows, one per (case, variant) in the rows'
/// order of iteration times first: a run's iteration time where the case
/// gives one, else its first throughput figure.
pub fn runs_of_rows(rows: &[ValidationRow]) -> Vec<RunResidual> {
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut runs = Vec::new();
    // Iteration times first, so that a run's time wins over its throughput.
    let ordered = rows
        .iter()
        .filter(|r| r.quantity.starts_with("iteration_time_s"))
        .chain(
            rows.iter()
                .filter(|r| !r.quantity.starts_with("iteration_time_s")),
        );
    for row in ordered.filter(|row| !is_kernel_class(&row.quantity)) {
        let (Some(regime), Some(predicted)) = (&row.regime, row.predicted) else {
            continue;
        };
        let run = (row.case.clone(), variant_of(&row.quantity));
        if seen.contains(&run) {
            continue;
        }
        let ratio = if row.quantity.starts_with("iteration_time_s") {
            row.published / predicted
        } else {
            predicted / row.published
        };
        if ratio.is_finite() && ratio > 0.0 {
            runs.push(RunResidual {
                run: format!("{}{}", run.0, run.1),
                regime: regime.clone(),
                ratio,
                kernel_class: false,
            });
        }
        seen.push(run);
    }
    runs
}

/// Whether a row's quantity is rank 0's time in one class (`gemm_s`,
/// `compute_s`, …).
fn is_kernel_class(quantity: &str) -> bool {
    super::Quantity::of_label(quantity).is_some_and(super::Quantity::is_class_time)
}

/// The class-time rows (`gemm_s`, `attention_s`, `memory_bound_s` from a
/// profiler trace; `compute_s`, `tensor_comm_s`, … from a Timeline): each
/// its own measured ÷ predicted time, named "case · gemm_s". Not runs: the
/// residual table and ranges leave them out.
pub fn kernel_class_rows(rows: &[ValidationRow]) -> Vec<RunResidual> {
    rows.iter()
        .filter(|row| is_kernel_class(&row.quantity))
        .filter_map(|row| {
            let (regime, predicted) = (row.regime.as_ref()?, row.predicted?);
            let ratio = row.published / predicted;
            (ratio.is_finite() && ratio > 0.0).then(|| RunResidual {
                run: format!("{} · {}", row.case, row.quantity),
                regime: regime.clone(),
                ratio,
                kernel_class: true,
            })
        })
        .collect()
}

/// The variant suffix of a quantity label ("(SP + selective)"), or "".
fn variant_of(quantity: &str) -> String {
    quantity
        .find(" (")
        .map_or(String::new(), |at| quantity[at..].to_string())
}

/// Residuals of vTrain's runs.
pub fn of_vtrain(results: &[VtrainResult]) -> Vec<Residual> {
    results
        .iter()
        .filter_map(|result| {
            let regime = result.regime.clone()?;
            let predicted = result.predicted_ms?;
            let ratio = result.run.measured_ms / predicted;
            (ratio.is_finite() && ratio > 0.0).then_some(Residual { regime, ratio })
        })
        .collect()
}

/// One range per regime, in the regimes' order.
pub fn summarize(residuals: &[Residual]) -> Vec<RegimeRange> {
    let mut regimes: Vec<&Regime> = residuals.iter().map(|r| &r.regime).collect();
    regimes.sort();
    regimes.dedup();
    regimes
        .into_iter()
        .map(|regime| {
            let mut ratios: Vec<f64> = residuals
                .iter()
                .filter(|r| &r.regime == regime)
                .map(|r| r.ratio)
                .collect();
            let runs = ratios.len();
            let (ratio_low, ratio_high, method) = spread(&mut ratios);
            RegimeRange {
                regime: regime.clone(),
                runs,
                ratio_low: round6(ratio_low),
                ratio_high: round6(ratio_high),
                method: method.into(),
            }
        })
        .collect()
}

/// The range of some measured ÷ predicted ratios (at least one): lowest to
/// highest with fewer than [`PERCENTILE_MIN_RUNS`], else the 5th to the 95th
/// percentile (nearest rank); and which of the two it is. Sorts `ratios`.
pub fn spread(ratios: &mut [f64]) -> (f64, f64, &'static str) {
    ratios.sort_by(f64::total_cmp);
    let runs = ratios.len();
    if runs < PERCENTILE_MIN_RUNS {
        (ratios[0], ratios[runs - 1], "lowest to highest")
    } else {
        let rank = |p: f64| ratios[((p * runs as f64).ceil() as usize).clamp(1, runs) - 1];
        (rank(0.05), rank(0.95), "5th to 95th percentile")
    }
}

/// How often a range made without a run contains it: for each run whose
/// others number at least [`MIN_RANGE_RUNS`], the [`spread`] of the others,
/// and whether it holds the run. `None` with no such run; else (runs
/// covered, runs counted, mean width of their ranges as high ÷ low − 1).
pub fn held_out_coverage(ratios: &[f64]) -> Option<(usize, usize, f64)> {
    if ratios.len() <= MIN_RANGE_RUNS {
        return None;
    }
    let (mut covered, mut width) = (0, 0.0);
    for held in 0..ratios.len() {
        let mut others: Vec<f64> = (0..ratios.len())
            .filter(|&i| i != held)
            .map(|i| ratios[i])
            .collect();
        let (low, high, _) = spread(&mut others);
        if low <= ratios[held] && ratios[held] <= high {
            covered += 1;
        }
        width += high / low - 1.0;
    }
    Some((covered, ratios.len(), width / ratios.len() as f64))
}

/// Six decimals: the table stays the same bytes across platforms' last bits.
fn round6(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
}

/// The committed table.
pub fn committed() -> ResidualTable {
    serde_json::from_str(COMMITTED).expect("validation/residuals.json parses (tested)")
}

/// The committed range of `regime`, if validation runs back it.
pub fn range_of(regime: &Regime) -> Option<RegimeRange> {
    committed()
        .regimes
        .into_iter()
        .find(|range| &range.regime == regime)
}

#[cfg(test)]
#[path = "residuals_tests.rs"]
mod tests;
