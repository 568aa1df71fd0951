//! The fit itself: regularized least squares in log time over the simulator.
//!
//! Each run's residual is ln(measured ÷ predicted iteration time), with
//! measurement noise `noise_log_sd`; each parameter enters as the log of its
//! factor with a Gaussian prior around 0 (the calibrated figure) of its
//! [`FitParameter::prior_log_sd`]. The Jacobian comes from the simulator by
//! forward differences of [`STEP_LOG`] in log space, and a Levenberg–
//! Marquardt step minimizes the sum of squares; each step is clamped into
//! the parameters' physical bounds.

use super::cases::{simulate_units, FitUnit};
use super::normal_equations::{cholesky_solve, normal_equations, Linearized};
use super::FitError;
use sim::scenario::fitted::{FitParameter, FitValues};

/// Forward-difference step in log space: 2%, wide enough that integer
/// nanoseconds and the cost model's discrete choices do not dominate it.
pub const STEP_LOG: f64 = 0.02;

/// Most Levenberg–Marquardt steps.
const MAX_STEPS: usize = 12;

/// A step smaller than this in every log-parameter ends the fit (0.1%).
const CONVERGED_LOG: f64 = 1e-3;

/// The runs of a CASES file as one vector of residuals.
pub struct Observer<'a> {
    pub units: &'a [FitUnit],
    /// Every run's name, in residual order.
    pub runs: Vec<String>,
    /// The unit each run belongs to.
    pub unit_of_run: Vec<usize>,
    /// Whether each is a kernel class's time rather than a whole run's.
    pub kernel_class: Vec<bool>,
}

impl<'a> Observer<'a> {
    /// The observer of `units`, with their runs as the calibrated simulator
    /// gives them (their names fix the residuals' order) and those runs'
    /// measured ÷ predicted ratios.
    pub fn new(units: &'a [FitUnit]) -> (Observer<'a>, Vec<f64>, Vec<String>) {
        let simulated = simulate_units(units, &FitValues::CALIBRATED);
        let mut observer = Observer {
            units,
            runs: Vec::new(),
            unit_of_run: Vec::new(),
            kernel_class: Vec::new(),
        };
        let mut ratios = Vec::new();
        let mut regimes = Vec::new();
        for (unit, runs) in simulated.into_iter().enumerate() {
            for run in runs {
                observer.runs.push(run.run);
                observer.unit_of_run.push(unit);
                observer.kernel_class.push(run.kernel_class);
                ratios.push(run.ratio);
                regimes.push(run.regime.label());
            }
        }
        (observer, ratios, regimes)
    }

    /// ln(measured ÷ predicted) of every run with `values`.
    pub fn residuals(&self, values: &FitValues) -> Result<Vec<f64>, FitError> {
        let simulated = simulate_units(self.units, values);
        let mut residuals = Vec::with_capacity(self.runs.len());
        for runs in simulated {
            for run in runs {
                residuals.push((run.run, run.ratio.ln()));
            }
        }
        let names: Vec<&String> = residuals.iter().map(|(name, _)| name).collect();
        if names.len() != self.runs.len() || names.iter().zip(&self.runs).any(|(a, b)| *a != b) {
            return Err(FitError::RunsChanged);
        }
        Ok(residuals.into_iter().map(|(_, r)| r).collect())
    }

    /// The residuals at `log_values` of `parameters` and their Jacobian.
    pub fn linearize(
        &self,
        parameters: &[FitParameter],
        log_values: &[f64],
        residuals: Vec<f64>,
    ) -> Result<Linearized, FitError> {
        let base = values_of(parameters, log_values);
        let mut columns = Vec::with_capacity(parameters.len());
        for (j, &parameter) in parameters.iter().enumerate() {
            // Step inward at the upper bound.
            let step = if log_values[j] + STEP_LOG > parameter.bounds().1.ln() {
                -STEP_LOG
            } else {
                STEP_LOG
            };
            let moved = base.with(parameter, (log_values[j] + step).exp());
            let after = self.residuals(&moved)?;
            columns.push(
                after
                    .iter()
                    .zip(&residuals)
                    .map(|(a, r)| (a - r) / step)
                    .collect::<Vec<f64>>(),
            );
        }
        let jacobian = (0..residuals.len())
            .map(|i| columns.iter().map(|column| column[i]).collect())
            .collect();
        Ok(Linearized {
            residuals,
            jacobian,
        })
    }
}

/// The factor set with `parameters` at `exp(log_values)`, the rest at 1.
pub fn values_of(parameters: &[FitParameter], log_values: &[f64]) -> FitValues {
    FitValues::from_factors(
        parameters
            .iter()
            .zip(log_values)
            .map(|(&parameter, &log)| (parameter, log.exp())),
    )
}

/// `log_values` clamped into the parameters' bounds.
pub fn clamped(parameters: &[FitParameter], log_values: &[f64]) -> Vec<f64> {
    parameters
        .iter()
        .zip(log_values)
        .map(|(parameter, &log)| {
            let (low, high) = parameter.bounds();
            log.clamp(low.ln(), high.ln())
        })
        .collect()
}

/// The prior precision (1 / sd²) of each parameter's log.
pub fn prior_precision(parameters: &[FitParameter]) -> Vec<f64> {
    parameters
        .iter()
        .map(|p| p.prior_log_sd().powi(-2))
        .collect()
}

/// The objective: Σ (r/σ)² + Σ precision · u².
fn objective(residuals: &[f64], noise_log_sd: f64, precision: &[f64], log_values: &[f64]) -> f64 {
    let data: f64 = residuals.iter().map(|r| (r / noise_log_sd).powi(2)).sum();
    let prior: f64 = precision
        .iter()
        .zip(log_values)
        .map(|(p, u)| p * u * u)
        .sum();
    data + prior
}

/// The minimizing log-values of `parameters` and the linearization there.
pub fn minimize(
    observer: &Observer,
    parameters: &[FitParameter],
    noise_log_sd: f64,
    first: Linearized,
    on_step: &dyn Fn(usize, f64),
) -> Result<(Vec<f64>, Linearized), FitError> {
    let precision = prior_precision(parameters);
    let mut log_values = vec![0.0; parameters.len()];
    let mut here = first;
    let mut cost = objective(&here.residuals, noise_log_sd, &precision, &log_values);
    let mut damping = 1e-3;
    for step in 1..=MAX_STEPS {
        on_step(step, cost);
        let (matrix, gradient) =
            normal_equations(&here, |_| true, noise_log_sd, &precision, &log_values);
        let damped: Vec<Vec<f64>> = (0..matrix.len())
            .map(|a| {
                let mut row = matrix[a].clone();
                row[a] *= 1.0 + damping;
                row
            })
            .collect();
        let minus_gradient: Vec<f64> = gradient.iter().map(|g| -g).collect();
        let Some(delta) = cholesky_solve(&damped, &minus_gradient) else {
            return Err(FitError::Singular);
        };
        let trial: Vec<f64> = log_values.iter().zip(&delta).map(|(u, d)| u + d).collect();
        let trial = clamped(parameters, &trial);
        let moved = trial
            .iter()
            .zip(&log_values)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        let residuals = observer.residuals(&values_of(parameters, &trial))?;
        let trial_cost = objective(&residuals, noise_log_sd, &precision, &trial);
        if trial_cost < cost {
            log_values = trial;
            cost = trial_cost;
            damping = (damping / 3.0).max(1e-6);
            if moved < CONVERGED_LOG {
                here.residuals = residuals;
                break;
            }
            here = observer.linearize(parameters, &log_values, residuals)?;
        } else {
            damping *= 4.0;
            if moved < CONVERGED_LOG || damping > 1e6 {
                break;
            }
        }
    }
    Ok((log_values, here))
}
