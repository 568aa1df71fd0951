//! Activation compression (`activation_compression`, `--activation-compression
//! RATIO`): the activations a layer saves for its backward are kept encoded
//! between the two, Gist-style (Jain et al., ISCA 2018: feature maps kept
//! encoded, lossless and lossy, average 1.8× and up to 2× on five CNNs,
//! `compression-sources.md` §6). No source gives a transformer's ratio, so
//! the ratio is the user's; the encode and decode kernels are priced by their
//! bytes (`sim::cost::activation_compression`). This file holds the ratio's
//! type and what it refuses.

use crate::options::TrainingOptions;
use crate::problem::Problem;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::num::NonZeroU32;

/// The largest ratio accepted: 1-bit encodings of 32-bit values (Gist's
/// binarization) are 32×; twice that leaves room and refuses nonsense.
pub const MAX_RATIO: f64 = 64.0;

/// How many times smaller the saved activations are kept, in thousandths
/// (exact and comparable; at least 1.000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CompressionRatio {
    thousandths: NonZeroU32,
}

impl CompressionRatio {
    /// The ratio of `value` (rounded to thousandths), or why not.
    pub fn new(value: f64) -> Result<CompressionRatio, String> {
        if !value.is_finite() || !(1.0..=MAX_RATIO).contains(&value) {
            return Err(format!(
                "must be a ratio from 1 (none) to {MAX_RATIO}, got {value}"
            ));
        }
        let thousandths = (value * 1000.0).round() as u32;
        Ok(CompressionRatio {
            thousandths: NonZeroU32::new(thousandths).expect("at least 1000"),
        })
    }

    pub fn get(self) -> f64 {
        f64::from(self.thousandths.get()) / 1000.0
    }
}

impl Serialize for CompressionRatio {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.get())
    }
}

impl<'de> Deserialize<'de> for CompressionRatio {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(deserializer)?;
        CompressionRatio::new(value).map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for CompressionRatio {
    type Err = String;

    fn from_str(text: &str) -> Result<CompressionRatio, String> {
        let value: f64 = text.trim().parse().map_err(|_| {
            format!("must be a number (a ratio from 1 to {MAX_RATIO}), got '{text}'")
        })?;
        CompressionRatio::new(value)
    }
}

/// What activation compression refuses, under its key.
pub(crate) fn check(options: &TrainingOptions, problems: &mut Vec<Problem>) {
    if options.activation_compression.is_some() && options.activation_offload_layers > 0 {
        problems.push(Problem::new(
            "activation_compression",
            "is not modeled together with cpu_offloading_num_layers",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_kept_in_thousandths_and_bounded() {
        assert_eq!(CompressionRatio::new(1.8).unwrap().get(), 1.8);
        assert_eq!(CompressionRatio::new(2.0004).unwrap().get(), 2.0);
        for bad in [0.5, 0.0, -1.0, 65.0, f64::NAN, f64::INFINITY] {
            assert!(CompressionRatio::new(bad).is_err(), "{bad}");
        }
        assert_eq!("2".parse::<CompressionRatio>().unwrap().get(), 2.0);
        assert!("two".parse::<CompressionRatio>().is_err());
        let parsed: Result<CompressionRatio, _> = serde_json::from_str("0.5");
        assert!(parsed
            .unwrap_err()
            .to_string()
            .contains("must be a ratio from 1"));
    }
}
