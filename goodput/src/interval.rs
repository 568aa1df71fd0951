//! Checkpoint intervals: Young's and Daly's optimum estimates, and a
//! numeric minimizer of the closed-form expected time to compare them with.
//!
//! - Young (J. W. Young, "A first order approximation to the optimum
//!   checkpoint interval", CACM 17(9), 1974): τ = √(2·C·M), with C the
//!   checkpoint cost and M = 1/λ the mean time between failures.
//! - Daly (J. T. Daly, "A higher order estimate of the optimum checkpoint
//!   interval for restart dumps", FGCS 22, 2006): τ = √(2CM)·[1 +
//!   ⅓·√(C/2M) + ⅑·(C/2M)] − C for C < 2M, and τ = M for C ≥ 2M.
//! - [`optimal_interval_s`]: the τ minimizing the closed form's expected time
//!   per unit of work, (e^{λ(τ + C(τ))} − 1)/τ (the factors e^{λR₁}(1/λ +
//!   R₀) do not depend on τ, so the downtime does not move the optimum; nor
//!   does an asynchronous checkpoint's durability delay d, whose e^{λd}
//!   multiplies every segment after the first), by
//!   golden-section search on ln τ. C may depend on τ (an asynchronous
//!   checkpoint stalls when τ is shorter than its persist).
//!
//! Young's estimate is first order in √(C/M): it is within a few percent of
//! the optimum for C ≪ M (its relative error grows like ⅓·√(C/2M)); Daly's
//! adds the next terms and is within a fraction of a percent there.

use serde::Serialize;

use crate::error::{GoodputError, Problems};

/// Young's interval √(2·C·M), seconds, or `None` without failures.
pub fn young_interval_s(checkpoint_s: f64, failures_per_s: f64) -> Option<f64> {
    if failures_per_s <= 0.0 || !failures_per_s.is_finite() {
        return None;
    }
    Some((2.0 * checkpoint_s / failures_per_s).sqrt())
}

/// Daly's higher-order interval, seconds, or `None` without failures.
pub fn daly_interval_s(checkpoint_s: f64, failures_per_s: f64) -> Option<f64> {
    if failures_per_s <= 0.0 || !failures_per_s.is_finite() {
        return None;
    }
    let m = 1.0 / failures_per_s;
    if checkpoint_s >= 2.0 * m {
        return Some(m);
    }
    let ratio = checkpoint_s / (2.0 * m);
    Some((2.0 * checkpoint_s * m).sqrt() * (1.0 + ratio.sqrt() / 3.0 + ratio / 9.0) - checkpoint_s)
}

/// The three intervals side by side, seconds (`null` without failures).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IntervalEstimates {
    /// Young's √(2CM).
    pub young_s: Option<f64>,
    /// Daly's higher-order estimate.
    pub daly_s: Option<f64>,
    /// The numeric minimizer of the closed form.
    pub numeric_s: f64,
}

/// Expected time per unit of work, up to factors independent of τ.
fn overhead_rate(tau_s: f64, failures_per_s: f64, checkpoint_s: &dyn Fn(f64) -> f64) -> f64 {
    let x = tau_s + checkpoint_s(tau_s);
    if failures_per_s == 0.0 {
        return x / tau_s;
    }
    (failures_per_s * x).exp_m1() / (failures_per_s * tau_s)
}

/// The interval of work between checkpoints that minimizes the closed-form
/// expected time, searched in `[shortest_s, longest_s]`.
///
/// Without failures the longest interval wins (checkpoint as rarely as
/// allowed). `checkpoint_s(τ)` gives the blocking cost at interval τ.
pub fn optimal_interval_s(
    failures_per_s: f64,
    checkpoint_s: &dyn Fn(f64) -> f64,
    shortest_s: f64,
    longest_s: f64,
) -> Result<f64, GoodputError> {
    let mut problems = Problems::new();
    problems.non_negative("failures_per_s", failures_per_s);
    problems.positive("shortest_s", shortest_s);
    problems.positive("longest_s", longest_s);
    problems.finish()?;
    if shortest_s >= longest_s || failures_per_s == 0.0 {
        return Ok(longest_s);
    }
    // Golden-section search on ln τ: the rate falls then rises in τ.
    let f = |ln_tau: f64| {
        let rate = overhead_rate(ln_tau.exp(), failures_per_s, checkpoint_s);
        if rate.is_finite() {
            rate
        } else {
            f64::MAX
        }
    };
    let inverse_phi = (5.0_f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (shortest_s.ln(), longest_s.ln());
    let mut c = b - inverse_phi * (b - a);
    let mut d = a + inverse_phi * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..200 {
        if (b - a).abs() < 1e-12 {
            break;
        }
        if fc <= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - inverse_phi * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + inverse_phi * (b - a);
            fd = f(d);
        }
    }
    let best = ((a + b) / 2.0).exp();
    // The search brackets the minimum; an end of the range may still win.
    let candidates = [best, shortest_s, longest_s];
    let mut chosen = best;
    let mut chosen_rate = f(best.ln());
    for tau in candidates {
        let rate = f(tau.ln());
        if rate < chosen_rate {
            chosen = tau;
            chosen_rate = rate;
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn young_and_daly_agree_when_checkpoints_are_cheap() {
        let young = young_interval_s(10.0, 1.0 / 36_000.0).unwrap();
        let daly = daly_interval_s(10.0, 1.0 / 36_000.0).unwrap();
        assert!((young - 848.5).abs() < 0.1, "{young}");
        assert!((daly / young - 1.0).abs() < 0.01, "{daly} {young}");
    }

    #[test]
    fn daly_caps_at_the_mtbf_for_costly_checkpoints() {
        assert_eq!(daly_interval_s(5000.0, 1.0 / 1000.0), Some(1000.0));
    }

    #[test]
    fn no_failures_means_the_longest_interval() {
        let tau = optimal_interval_s(0.0, &|_| 10.0, 1.0, 1e6).unwrap();
        assert_eq!(tau, 1e6);
        assert_eq!(young_interval_s(10.0, 0.0), None);
    }
}
