//! The summary's `accuracy` line: what published runs of the same kind say
//! about a prediction, so that a user never reads an optimistic figure as a
//! validated one.
//!
//! Each line restates errors that the validation tests pin (change a line
//! with its test):
//! - mixtures of experts: `tests/tests/it/h100_moe_published.rs` and
//!   `tests/tests/it/deepseek_v3.rs`;
//! - dense FP8: `tests/tests/it/h100_published.rs` (NVIDIA's H100 runs, all
//!   FP8); `cli/tests/it/accuracy.rs` checks that the line states the range and
//!   mean `clustersim validate validation/h100-published.json` gives.
//!
//! Runs in bf16 or fp16 print no line: their published checks (the dev set
//! and vTrain's single-node runs, `clustersim validate`) are A100-era runs
//! whose errors the README states.

use sim::scenario::{Precision, Scenario};

/// What the published mixture-of-experts runs say about these predictions.
pub const MOE_ACCURACY: &str =
    "NOT VALIDATED for mixtures of experts: on published runs tokens/s came out \
+41…+114 % (Qwen3-30B-A3B), −12…−14 % (Qwen3-235B-A22B) and +3 % (DeepSeek-V3 with DeepEP's dispatch and overlapped F&B pairs, bf16 for FP8; −42 % with NCCL all-to-alls exposed) \
(validation/h100-moe-published.json, deepseek-v3-published.json); do not plan on this figure";

/// What NVIDIA's published H100 FP8 runs say about these predictions.
pub const DENSE_FP8_ACCURACY: &str =
    "OPTIMISTIC for FP8: on NVIDIA's 14 published H100 FP8 runs tokens/s came out \
-3.5…+13.2 % off, 11 of them too high (mean +5.2 %, mean |error| 6.2 %; the worst, +10…+13 %, for the single-stage models of 20 B parameters or fewer) \
(validation/h100-published.json); expect the run to be up to that much slower";

/// The accuracy line for `scenario`, where published runs of its kind say
/// something.
pub fn accuracy_line(scenario: &Scenario) -> Option<&'static str> {
    if scenario.experts.is_some() {
        Some(MOE_ACCURACY)
    } else if scenario.options.precision == Precision::Fp8 {
        Some(DENSE_FP8_ACCURACY)
    } else {
        None
    }
}
