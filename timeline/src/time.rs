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
        SimDuration(ceil_to_u64(seconds * 1e9).max(1))
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

/// `value.ceil() as u64` for positive `value` (+∞ included), without
/// `f64::ceil`, which is a library call on x86-64 without SSE4.1 and costs a
/// few percent of a `--contention` run (every flow's completion time comes
/// through here). Truncation is exact below 2^53, where a fraction shows
/// as `truncated < value`; at and above 2^53 every `f64` is an integer, so
/// `truncated` equals `value` (or saturates at `u64::MAX`, as `as` does).
#[inline]
fn ceil_to_u64(value: f64) -> u64 {
    let truncated = value as u64;
    if (truncated as f64) < value && truncated < u64::MAX {
        truncated + 1
    } else {
        truncated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The integer ceiling equals `f64::ceil` on edges and on a spread of
    /// magnitudes (fractions, integers, the 2^53 and 2^64 boundaries, +∞).
    #[test]
    fn integer_ceiling_is_the_library_ceiling() {
        let mut values = vec![
            f64::MIN_POSITIVE,
            0.5,
            1.0,
            1.5,
            2f64.powi(52) + 0.5,
            2f64.powi(53),
            2f64.powi(53) + 2.0,
            2f64.powi(63),
            2f64.powi(64),
            2f64.powi(70),
            f64::MAX,
            f64::INFINITY,
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Mantissa and exponent from the state: 2^-30 … 2^70.
            let mantissa = 1.0 + (state >> 11) as f64 / (1u64 << 53) as f64;
            let exponent = (state % 101) as i32 - 30;
            values.push(mantissa * 2f64.powi(exponent));
        }
        for value in values {
            assert_eq!(ceil_to_u64(value), value.ceil() as u64, "{value:e}");
            let next = f64::from_bits(value.to_bits() + 1);
            assert_eq!(ceil_to_u64(next), next.ceil() as u64, "{next:e}");
        }
    }

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
