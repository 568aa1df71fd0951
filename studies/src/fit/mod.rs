//! `clustersim fit`: learn a few physical parameters of a user's cluster
//! from their own measured runs, and say how well the simulator then
//! predicts runs it did not see.
//!
//! The runs come from a CASES file in a format `validate` reads
//! ([`cases`]); the parameters are factors on calibrated rates and costs
//! (`scenario::fitted`). The fit is a regularized least squares in log time
//! over the simulator itself ([`solver`]): only the parameters the runs can
//! identify are fitted ([`identify`]), the rest keep their prior with the
//! reason. Each case is then left out in turn: the factors are re-solved
//! without it (one Gauss–Newton solve at the full fit's Jacobian, exact for a
//! model linear in the log-factors) and the simulator predicts the case with
//! them. Those leave-one-out ratios are the range `--fit` prints around a
//! prediction. The result is a [`fit_file::FitRecord`] (FIT.json).

pub mod cases;
pub mod fit_file;
mod identify;
pub mod normal_equations;
mod solver;

use cases::FitUnit;
use fit_file::{error_percent, ErrorSummary, FitRecord, LeaveOneOut, ParameterRecord, RunRecord};
use identify::identifiable;
use normal_equations::{cholesky_solve, inverse_diagonal, normal_equations};
use sim::scenario::fitted::FitParameter;
use solver::{clamped, minimize, prior_precision, values_of, Observer};

/// The measurement noise of one run's iteration time, as a standard
/// deviation of its natural log: 3%, the run-to-run spread of a training
/// iteration (1–3% in Megatron-LM's logs) plus the rounding of published
/// throughput figures.
pub const MEASUREMENT_LOG_SD: f64 = 0.03;

/// The noise a fit assumes: the measurement noise, or, when larger, the
/// scatter of the calibrated runs' log-ratios around their mean (the sample
/// standard deviation, from 3 runs on). Scatter no common factor explains is
/// the simulator's own error on these runs until a parameter accounts for
/// it; treating it as 3% noise would let a few runs drag the factors far
/// from their priors to explain it.
pub fn noise_log_sd(calibrated_log_ratios: &[f64]) -> f64 {
    let n = calibrated_log_ratios.len();
    if n < 3 {
        return MEASUREMENT_LOG_SD;
    }
    let mean = calibrated_log_ratios.iter().sum::<f64>() / n as f64;
    let variance = calibrated_log_ratios
        .iter()
        .map(|r| (r - mean).powi(2))
        .sum::<f64>()
        / (n - 1) as f64;
    variance.sqrt().max(MEASUREMENT_LOG_SD)
}

/// What a fit is asked.
#[derive(Debug, Clone)]
pub struct FitOptions {
    /// The parameters to fit (all when `None`). Asked for by name, each must
    /// be identifiable or the fit is refused.
    pub parameters: Option<Vec<FitParameter>>,
    /// The CASES file's name as recorded in FIT.json.
    pub cases_file: String,
}

/// Why a fit was refused.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    #[error("the cases give no whole run the simulator can predict (each was refused or has no measured iteration time or throughput)")]
    NoRuns,
    #[error("cannot fit {parameter}: {why}")]
    Unidentified {
        parameter: &'static str,
        why: String,
    },
    #[error("the runs identify none of the parameters:\n{reasons}")]
    NothingIdentified { reasons: String },
    #[error("a run's prediction appeared or vanished as a parameter moved (a layout refused at some factor); fit fewer parameters with --params")]
    RunsChanged,
    #[error("the fit's normal equations are singular")]
    Singular,
    #[error("not a FIT.json this build reads: {0}")]
    BadFitFile(String),
}

/// Fits `units`; `progress` hears each stage.
pub fn fit(
    units: &[FitUnit],
    options: &FitOptions,
    progress: &dyn Fn(&str),
) -> Result<FitRecord, FitError> {
    progress("simulating the runs as calibrated");
    let (observer, calibrated_ratios, regimes) = Observer::new(units);
    if observer.kernel_class.iter().all(|&class| class) {
        return Err(FitError::NoRuns);
    }
    let calibrated: Vec<f64> = calibrated_ratios.iter().map(|r| r.ln()).collect();
    let whole_runs: Vec<f64> = (0..calibrated.len())
        .filter(|&i| !observer.kernel_class[i])
        .map(|i| calibrated[i])
        .collect();
    let noise = noise_log_sd(&whole_runs);
    let candidates = options
        .parameters
        .clone()
        .unwrap_or_else(|| FitParameter::ALL.to_vec());
    progress("finding which parameters the runs identify");
    let at_prior = observer.linearize(&candidates, &vec![0.0; candidates.len()], calibrated)?;
    let columns: Vec<Vec<f64>> = (0..candidates.len())
        .map(|j| at_prior.jacobian.iter().map(|row| row[j]).collect())
        .collect();
    let (free, kept) = identifiable(&candidates, &columns, noise);
    if options.parameters.is_some() {
        if let Some(first) = kept.first() {
            return Err(FitError::Unidentified {
                parameter: first.parameter.name(),
                why: first.why.clone(),
            });
        }
    }
    if free.is_empty() {
        let reasons = kept
            .iter()
            .map(|u| format!("  - {}: {}", u.parameter.name(), u.why))
            .collect::<Vec<_>>()
            .join("\n");
        return Err(FitError::NothingIdentified { reasons });
    }
    let first = observer.linearize(&free, &vec![0.0; free.len()], at_prior.residuals.clone())?;
    let (log_values, solution) = minimize(&observer, &free, noise, first, &|step, _| {
        progress(&format!("fitting {} parameters: step {step}", free.len()))
    })?;
    progress("leaving each case out in turn");
    let leave_one_out = leave_one_out(&observer, &free, &log_values, &solution, noise)?;
    let log_sds = posterior_log_sds(&free, &log_values, &solution, noise);
    let parameters = parameter_records(&free, &log_values, &log_sds, &kept);
    let runs: Vec<RunRecord> = (0..observer.runs.len())
        .map(|i| RunRecord {
            run: observer.runs[i].clone(),
            regime: regimes[i].clone(),
            calibrated_ratio: calibrated_ratios[i],
            fitted_ratio: solution.residuals[i].exp(),
            leave_one_out_ratio: leave_one_out[i],
            kernel_class: observer.kernel_class[i],
        })
        .collect();
    let mut cases = observer.unit_of_run.clone();
    cases.dedup();
    Ok(record(options, parameters, runs, noise, cases.len()))
}

/// Each run's measured ÷ predicted ratio with the factors re-solved without
/// its case (one Gauss–Newton solve at the full fit's Jacobian, clamped into
/// the bounds), the case simulated with them.
fn leave_one_out(
    observer: &Observer,
    free: &[FitParameter],
    log_values: &[f64],
    solution: &normal_equations::Linearized,
    noise: f64,
) -> Result<Vec<f64>, FitError> {
    let precision = prior_precision(free);
    let mut ratios = vec![0.0; observer.runs.len()];
    for (unit_index, unit) in observer.units.iter().enumerate() {
        let held: Vec<usize> = (0..observer.runs.len())
            .filter(|&i| observer.unit_of_run[i] == unit_index)
            .collect();
        if held.is_empty() {
            continue;
        }
        let (matrix, gradient) = normal_equations(
            solution,
            |i| observer.unit_of_run[i] != unit_index,
            noise,
            &precision,
            log_values,
        );
        let minus: Vec<f64> = gradient.iter().map(|g| -g).collect();
        let delta = cholesky_solve(&matrix, &minus).ok_or(FitError::Singular)?;
        let moved: Vec<f64> = log_values.iter().zip(&delta).map(|(u, d)| u + d).collect();
        let values = values_of(free, &clamped(free, &moved));
        let simulated = unit.simulate(&values);
        if simulated.len() != held.len() {
            return Err(FitError::RunsChanged);
        }
        for (i, run) in held.into_iter().zip(simulated) {
            ratios[i] = run.ratio;
        }
    }
    Ok(ratios)
}

/// The posterior standard deviation of each fitted log-factor, widened by the
/// misfit when the runs scatter more than the noise assumed.
fn posterior_log_sds(
    free: &[FitParameter],
    log_values: &[f64],
    solution: &normal_equations::Linearized,
    noise: f64,
) -> Vec<f64> {
    let precision = prior_precision(free);
    let (matrix, _) = normal_equations(solution, |_| true, noise, &precision, log_values);
    let n = solution.residuals.len();
    let chi_square: f64 = solution.residuals.iter().map(|r| (r / noise).powi(2)).sum();
    let misfit = if n > free.len() {
        (chi_square / (n - free.len()) as f64).max(1.0)
    } else {
        1.0
    };
    inverse_diagonal(&matrix)
        .unwrap_or_else(|| vec![f64::NAN; free.len()])
        .into_iter()
        .map(|variance| (variance * misfit).sqrt())
        .collect()
}

/// Every parameter's record, in [`FitParameter::ALL`]'s order.
fn parameter_records(
    free: &[FitParameter],
    log_values: &[f64],
    log_sds: &[f64],
    kept: &[identify::Unidentified],
) -> Vec<ParameterRecord> {
    FitParameter::ALL
        .into_iter()
        .map(|parameter| {
            let (low, high) = parameter.bounds();
            let fitted = free.iter().position(|&p| p == parameter);
            let value = fitted.map_or(1.0, |j| log_values[j].exp());
            let log_sd = fitted.map(|j| log_sds[j]);
            ParameterRecord {
                name: parameter,
                meaning: parameter.meaning().into(),
                value,
                fitted: fitted.is_some(),
                log_sd,
                range: log_sd
                    .map(|sd| [(value * (-sd).exp()).max(low), (value * sd.exp()).min(high)]),
                bounds: [low, high],
                prior_log_sd: parameter.prior_log_sd(),
                kept_at_prior_because: kept.iter().find(|u| u.parameter == parameter).map_or(
                    fitted
                        .is_none()
                        .then(|| "not asked for (--params)".to_string()),
                    |u| Some(u.why.clone()),
                ),
            }
        })
        .collect()
}

/// The whole record: errors, consistency and warnings.
fn record(
    options: &FitOptions,
    parameters: Vec<ParameterRecord>,
    runs: Vec<RunRecord>,
    noise: f64,
    cases: usize,
) -> FitRecord {
    // Errors and the range are of whole runs; kernel classes only inform the fit.
    let whole: Vec<&RunRecord> = runs.iter().filter(|r| !r.kernel_class).collect();
    let summary = |ratio: &dyn Fn(&RunRecord) -> f64| {
        let errors: Vec<f64> = whole
            .iter()
            .map(|r| error_percent(ratio(r)).abs())
            .collect();
        (
            errors.iter().sum::<f64>() / errors.len() as f64,
            errors.iter().copied().fold(0.0, f64::max),
        )
    };
    let (calibrated_mean, _) = summary(&|r| r.calibrated_ratio);
    let (fitted_mean, fitted_max) = summary(&|r| r.fitted_ratio);
    let (loo_mean, loo_max) = summary(&|r| r.leave_one_out_ratio);
    let mut loo_ratios: Vec<f64> = whole.iter().map(|r| r.leave_one_out_ratio).collect();
    let coverage = crate::validation::residuals::held_out_coverage(&loo_ratios);
    let (ratio_low, ratio_high, range_method) =
        crate::validation::residuals::spread(&mut loo_ratios);
    let rms_log = (whole
        .iter()
        .map(|r| r.fitted_ratio.ln().powi(2))
        .sum::<f64>()
        / whole.len() as f64)
        .sqrt();
    let consistent = rms_log <= 2.0 * MEASUREMENT_LOG_SD;
    let mut warnings = Vec::new();
    if !consistent {
        let mut worst: Vec<&RunRecord> = whole.clone();
        worst.sort_by(|a, b| {
            b.fitted_ratio
                .ln()
                .abs()
                .total_cmp(&a.fitted_ratio.ln().abs())
        });
        let named: Vec<String> = worst
            .iter()
            .take(3)
            .map(|r| format!("{} ({:+.1}%)", r.run, error_percent(r.fitted_ratio)))
            .collect();
        warnings.push(format!(
            "the runs are inconsistent with one set of factors: after the fit they scatter by \
             {:.1}% (root mean square), more than twice the {:.0}% noise assumed; farthest: {}",
            100.0 * rms_log,
            100.0 * MEASUREMENT_LOG_SD,
            named.join(", ")
        ));
    }
    let beats_calibrated = loo_mean < calibrated_mean;
    if whole.len() < crate::validation::residuals::MIN_RANGE_RUNS {
        warnings.push(format!(
            "{} whole run{}: too few to say how well the fit predicts a run it was not given \
             (the leave-one-out error and range need at least {})",
            whole.len(),
            if whole.len() == 1 { "" } else { "s" },
            crate::validation::residuals::MIN_RANGE_RUNS
        ));
    } else if !beats_calibrated {
        warnings.push(format!(
            "each case left out, the fitted factors predict it no better ({loo_mean:.1}% mean \
             |error|) than the calibrated simulator does ({calibrated_mean:.1}%): these {cases} \
             cases do not carry a fit to runs they do not contain"
        ));
    }
    FitRecord {
        format: fit_file::FORMAT.into(),
        schema_version: fit_file::SCHEMA_VERSION,
        tool: format!("clustersim {}", env!("CARGO_PKG_VERSION")),
        cases_file: options.cases_file.clone(),
        noise_log_sd: noise,
        parameters,
        in_sample: ErrorSummary {
            runs: whole.len(),
            calibrated_mean_abs_error_percent: calibrated_mean,
            mean_abs_error_percent: fitted_mean,
            max_abs_error_percent: fitted_max,
        },
        leave_one_out: LeaveOneOut {
            method: "each case left out: factors re-solved without it (one Gauss–Newton solve \
                     at the full fit's Jacobian), the case simulated with them"
                .into(),
            mean_abs_error_percent: loo_mean,
            max_abs_error_percent: loo_max,
            ratio_low,
            ratio_high,
            range_method: range_method.into(),
            held_out_coverage_percent: coverage
                .map(|(covered, runs, _)| 100.0 * covered as f64 / runs as f64),
            held_out_mean_width_percent: coverage.map(|(_, _, width)| 100.0 * width),
        },
        runs,
        consistent,
        leave_one_out_beats_calibrated: beats_calibrated,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_noise_is_the_measurement_noise_or_the_runs_scatter_when_larger() {
        assert_eq!(noise_log_sd(&[0.5, -0.5]), MEASUREMENT_LOG_SD);
        assert_eq!(noise_log_sd(&[0.1, 0.1, 0.1]), MEASUREMENT_LOG_SD);
        // Sample standard deviation of 0, 0.1, 0.2: 0.1.
        assert!((noise_log_sd(&[0.0, 0.1, 0.2]) - 0.1).abs() < 1e-12);
    }
}
