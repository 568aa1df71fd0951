//! Errors of the goodput crate, and the collector that validation uses to
//! report every problem of an input at once.
//!
//! No function of this crate panics on bad input: a value out of range, a
//! non-finite number, an integer product that overflows, or a run too
//! costly to sample all come back as a
//! [`GoodputError`] naming the field and what is wrong with it.

use std::fmt;

/// One thing wrong with an input: the field (a dotted path such as
/// `storage.aggregate_write_bytes_per_s`) and why it is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputProblem {
    /// Dotted path of the field, as the input struct spells it.
    pub field: String,
    /// What is wrong with the value.
    pub reason: String,
}

impl fmt::Display for InputProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// Every error this crate returns.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GoodputError {
    /// One or more inputs are out of range; every problem found is listed.
    #[error("invalid input: {}", join(.problems))]
    InvalidInput {
        /// Every problem found, in the order the fields were checked.
        problems: Vec<InputProblem>,
    },
    /// The expected time is not finite: with this failure rate a segment of
    /// work plus its checkpoint almost never completes.
    #[error(
        "the run never finishes in expectation: failure rate {failures_per_s:e}/s over a {segment_s} s segment (work + checkpoint) gives exp({exponent}) attempts per segment"
    )]
    NeverFinishes {
        /// The job's failure rate, failures per second.
        failures_per_s: f64,
        /// Work plus checkpoint time of one segment, seconds.
        segment_s: f64,
        /// λ·(τ + C), the exponent of the expected attempts per segment.
        exponent: f64,
    },
    /// The Monte-Carlo would sample more failures than its budget allows.
    #[error(
        "Monte-Carlo too costly: {trials} trials x ~{expected_failures_per_trial:.0} failures each exceeds the budget of {budget} sampled failures; use fewer trials"
    )]
    TooCostly {
        /// Trials asked for.
        trials: u32,
        /// Expected failures per trial, from the closed form.
        expected_failures_per_trial: f64,
        /// The most failures all trials together may sample.
        budget: u64,
    },
}

fn join(problems: &[InputProblem]) -> String {
    let parts: Vec<String> = problems.iter().map(ToString::to_string).collect();
    parts.join("; ")
}

/// Collects the problems of one input so that all of them are reported
/// together. Each check returns the value when it is good, so a caller can
/// go on computing with a placeholder and look at [`Problems::finish`] once.
#[derive(Debug, Default)]
pub struct Problems {
    found: Vec<InputProblem>,
}

impl Problems {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a problem with `field`.
    pub fn push(&mut self, field: impl Into<String>, reason: impl Into<String>) {
        self.found.push(InputProblem {
            field: field.into(),
            reason: reason.into(),
        });
    }

    /// A finite number strictly above zero.
    pub fn positive(&mut self, field: &str, value: f64) -> bool {
        if value.is_finite() && value > 0.0 {
            return true;
        }
        self.push(
            field,
            format!("must be a finite number above 0, got {value}"),
        );
        false
    }

    /// A finite number at or above zero.
    pub fn non_negative(&mut self, field: &str, value: f64) -> bool {
        if value.is_finite() && value >= 0.0 {
            return true;
        }
        self.push(
            field,
            format!("must be a finite number at or above 0, got {value}"),
        );
        false
    }

    /// A finite number in `[low, high]`.
    pub fn within(&mut self, field: &str, value: f64, low: f64, high: f64) -> bool {
        if value.is_finite() && value >= low && value <= high {
            return true;
        }
        self.push(
            field,
            format!("must be within [{low}, {high}], got {value}"),
        );
        false
    }

    /// An integer above zero.
    pub fn nonzero(&mut self, field: &str, value: u64) -> bool {
        if value > 0 {
            return true;
        }
        self.push(field, "must be at least 1, got 0");
        false
    }

    /// Whether nothing was found so far.
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// `Ok(())` when nothing was found, else every problem in one error.
    pub fn finish(self) -> Result<(), GoodputError> {
        if self.found.is_empty() {
            Ok(())
        } else {
            Err(GoodputError::InvalidInput {
                problems: self.found,
            })
        }
    }
}

/// One problem as an error, for the checks that stop at the first.
pub fn invalid(field: &str, reason: impl Into<String>) -> GoodputError {
    GoodputError::InvalidInput {
        problems: vec![InputProblem {
            field: field.to_string(),
            reason: reason.into(),
        }],
    }
}

/// `a * b` on user-supplied integers, or an error naming the field.
pub fn checked_product(field: &str, a: u64, b: u64) -> Result<u64, GoodputError> {
    a.checked_mul(b)
        .ok_or_else(|| invalid(field, format!("{a} x {b} overflows a 64-bit integer")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_is_reported_together() {
        let mut problems = Problems::new();
        problems.positive("a_s", f64::NAN);
        problems.positive("b_s", -1.0);
        problems.positive("c_s", 2.0);
        let error = problems.finish().unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("a_s") && text.contains("b_s") && !text.contains("c_s"),
            "{text}"
        );
    }

    #[test]
    fn overflowing_products_are_errors() {
        assert!(checked_product("x", u64::MAX, 2).is_err());
        assert_eq!(checked_product("x", 3, 4), Ok(12));
    }
}
