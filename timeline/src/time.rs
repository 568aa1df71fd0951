//! Simulated time: integer nanoseconds in newtypes, and the one rounding
//! policy that turns a real-valued duration into them.
//!
//! Rounding policy (the only place it lives): a duration computed in `f64`
//! seconds is rounded *up* to whole nanoseconds, and any non-empty piece of
//! work lasts at least 1 ns. Zero work lasts zero.

use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, nanoseconds since the iteration started.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SimTime(pub u64);

/// A length of simulated time in nanoseconds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SimDuration(pub u64);

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);

    /// Rounds `seconds` up to whole nanoseconds; positive work takes ≥ 1 ns.
    /// Negative or NaN input is a bug in the caller and becomes zero.
    pub fn from_seconds_ceil(seconds: f64) -> SimDuration {
        // `seconds > 0.0` is false for NaN too, so NaN becomes zero.
        if seconds.is_nan() || seconds <= 0.0 {
            return SimDuration::ZERO;
        }
        let nanos = (seconds * 1e9).ceil();
        SimDuration((nanos as u64).max(1))
    }

    pub fn from_nanos(nanos: u64) -> SimDuration {
        SimDuration(nanos)
    }

    pub fn as_nanos(self) -> u64 {
        self.0
    }

    pub fn as_seconds(self) -> f64 {
        self.0 as f64 * 1e-9
    }
}

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);

    pub fn as_nanos(self) -> u64 {
        self.0
    }

    pub fn as_seconds(self) -> f64 {
        self.0 as f64 * 1e-9
    }

    /// Time elapsed since `earlier` (saturating at zero).
    pub fn since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimDuration) -> SimTime {
        SimTime(self.0 + rhs.0)
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, rhs: SimDuration) -> SimDuration {
        SimDuration(self.0 + rhs.0)
    }
}

impl AddAssign for SimDuration {
    fn add_assign(&mut self, rhs: SimDuration) {
        self.0 += rhs.0;
    }
}

impl Sub for SimTime {
    type Output = SimDuration;
    fn sub(self, rhs: SimTime) -> SimDuration {
        self.since(rhs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_up_and_positive_work_takes_at_least_one_nanosecond() {
        assert_eq!(SimDuration::from_seconds_ceil(0.0), SimDuration(0));
        assert_eq!(SimDuration::from_seconds_ceil(1e-15), SimDuration(1));
        assert_eq!(
            SimDuration::from_seconds_ceil(1.0000000001e-6),
            SimDuration(1001)
        );
        assert_eq!(SimDuration::from_seconds_ceil(2e-9), SimDuration(2));
        assert_eq!(SimDuration::from_seconds_ceil(-3.0), SimDuration(0));
        assert_eq!(SimDuration::from_seconds_ceil(f64::NAN), SimDuration(0));
    }
}
