//! What calibrate's sustained stage recorded (`gemm.sustained_run`): one
//! large GEMM launched back to back for seconds, its time per launch in the
//! first window (a burst) and over the run's last third (at the power
//! limit), and the GPU's clock, power and temperature sampled through it.
//! `clustersim calibrate` sets `gemm.tile_model.sustained_ratio` from it.

use crate::limits::{GEMM_LAYOUTS, MAX_GEMM_DIMENSION, MAX_OVERHEAD_NS};
use serde::{Deserialize, Serialize};

/// Longest sustained run a profile may record: one hour.
pub const MAX_SUSTAINED_SECONDS: f64 = 3600.0;

/// One sample of the GPU's state during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SustainedSample {
    /// Seconds since the run began.
    pub at_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_draw_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<i32>,
}

/// One GEMM shape run back to back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SustainedRun {
    pub batch: u64,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    /// "bf16" or "fp16".
    pub dtype: String,
    /// cuBLAS layout ("tn").
    pub layout: String,
    /// Seconds of back-to-back load.
    pub duration_s: f64,
    /// Launches per timed window after the first (which has 16): about
    /// half a second of them.
    pub window_launches: u32,
    /// Median time of one launch in the first window.
    pub burst_ns: u64,
    /// Median of the windows' medians over the run's last third.
    pub sustained_ns: u64,
    /// Each window's median time of one launch, in order.
    pub window_ns: Vec<u64>,
    /// The GPU's state through the run (empty where nvidia-smi is missing).
    #[serde(default)]
    pub samples: Vec<SustainedSample>,
}

impl SustainedRun {
    /// Every problem with the record, each naming its key.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let dimensions = [self.batch, self.m, self.n, self.k];
        if dimensions
            .iter()
            .any(|d| !(1..=MAX_GEMM_DIMENSION).contains(d))
        {
            problems.push(format!(
                "gemm.sustained_run needs batch, m, n and k from 1 to {MAX_GEMM_DIMENSION}"
            ));
        }
        if !["bf16", "fp16"].contains(&self.dtype.as_str()) {
            problems.push(format!(
                "gemm.sustained_run.dtype must be bf16 or fp16, got {:?}",
                self.dtype
            ));
        }
        if !GEMM_LAYOUTS.contains(&self.layout.as_str()) {
            problems.push(format!(
                "gemm.sustained_run.layout must be one of {}, got {:?}",
                GEMM_LAYOUTS.join(", "),
                self.layout
            ));
        }
        if !(self.duration_s.is_finite()
            && self.duration_s > 0.0
            && self.duration_s <= MAX_SUSTAINED_SECONDS)
        {
            problems.push(format!(
                "gemm.sustained_run.duration_s must be above 0 and at most {MAX_SUSTAINED_SECONDS}, got {:e}",
                self.duration_s
            ));
        }
        let in_range = |ns: u64| ns > 0 && ns as f64 <= MAX_OVERHEAD_NS;
        if !in_range(self.burst_ns) || !in_range(self.sustained_ns) {
            problems.push(
                "gemm.sustained_run.burst_ns and sustained_ns must be from 1 ns to 1 s".into(),
            );
        }
        if self.window_ns.is_empty() || !self.window_ns.iter().all(|&ns| in_range(ns)) {
            problems.push(
                "gemm.sustained_run.window_ns must list at least one time, each from 1 ns to 1 s"
                    .into(),
            );
        }
        if self.window_launches == 0 {
            problems.push("gemm.sustained_run.window_launches must be at least 1".into());
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> SustainedRun {
        SustainedRun {
            batch: 1,
            m: 8192,
            n: 8192,
            k: 8192,
            dtype: "bf16".into(),
            layout: "tn".into(),
            duration_s: 20.0,
            window_launches: 64,
            burst_ns: 1_400_000,
            sustained_ns: 1_600_000,
            window_ns: vec![1_400_000, 1_600_000],
            samples: Vec::new(),
        }
    }

    #[test]
    fn a_plausible_run_has_no_problems_and_each_bad_field_is_named() {
        assert!(run().problems().is_empty());
        let bad = [
            SustainedRun { k: 0, ..run() },
            SustainedRun {
                duration_s: f64::NAN,
                ..run()
            },
            SustainedRun {
                burst_ns: 0,
                ..run()
            },
            SustainedRun {
                window_ns: vec![],
                ..run()
            },
            SustainedRun {
                window_launches: 0,
                ..run()
            },
            SustainedRun {
                dtype: "fp8".into(),
                ..run()
            },
            SustainedRun {
                layout: "xx".into(),
                ..run()
            },
        ];
        let keys = [
            "batch, m, n and k",
            "duration_s",
            "burst_ns",
            "window_ns",
            "window_launches",
            "dtype",
            "layout",
        ];
        for (run, key) in bad.iter().zip(keys) {
            let problems = run.problems();
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(problems[0].contains(key), "{problems:?}");
        }
    }
}
