//! What `clustersim plot bubble` simulates: each schedule's series (its
//! label, its chunks per rank, whether it runs with optimizer
//! post-validation), the scenario of one point, the simulated fraction and
//! the analytical curve it is drawn over. Shared by the CLI and the tests
//! that check each series against its formula in integer nanoseconds.
//!
//! Curves, all at F = I = W, F&B = F+B and free communication (c = 0), over
//! the ideal compute time m(F+I+W) per chunk:
//! - GPipe and 1F1B (p−1)/m; interleaved and looped BFS (p−1)/(v·m);
//! - ZB-H1 (p−1)(F+I−W) (Qi et al., ICLR 2024, Sec. 2.1): (p−1)/(3·m);
//! - ZB-H2 with post-validation (p−1)(F+I+2c−2W)⁺ (Sec. 2.2, 4): 0. One
//!   iteration alone would also show the stages' (p−1)·F start skew, which
//!   post-validation hides behind the previous iteration; the series is the
//!   steady state of [`sim::scenario::post_validation::ITERATIONS`]
//!   iterations, so the scenario must allow post-validation (fp16, untied
//!   embeddings) or the series is skipped with the reason;
//! - ZB-V: its (p−1)·F start skew over 2m(F+I+W): (p−1)/(6·m);
//! - DualPipeV (p−1)(F&B+B−3W) (deepseek-ai/DualPipe README) = (p−1)·2F
//!   over 2m·3F: (p−1)/(3·m);
//! - DualPipe (p/2−1)(F&B+B−3W) = (p−2)F over m·3F: (p−2)/(3·m).

use sim::scenario::{ScenarioFile, ScheduleKind};

/// The analytical curve of a series, as a fraction of the ideal compute time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BubbleFormula {
    /// (p−1−`fewer_stages`)/(`k`·m).
    OverKm { k: u32, fewer_stages: u32 },
    /// No bubble: ZB-H2's (p−1)(F+I+2c−2W)⁺ at F = I = W, c = 0.
    Zero,
}

impl BubbleFormula {
    /// The curve's value at p stages and m microbatches.
    pub fn fraction(self, pipeline_stages: u32, microbatches: u32) -> f64 {
        match self {
            BubbleFormula::OverKm { k, fewer_stages } => {
                f64::from(
                    pipeline_stages
                        .saturating_sub(1)
                        .saturating_sub(fewer_stages),
                ) / (f64::from(k.max(1)) * f64::from(microbatches.max(1)))
            }
            BubbleFormula::Zero => 0.0,
        }
    }

    /// The curve's value as an exact ratio (numerator, denominator).
    pub fn ratio(self, pipeline_stages: u32, microbatches: u32) -> (u64, u64) {
        match self {
            BubbleFormula::OverKm { k, fewer_stages } => (
                u64::from(
                    pipeline_stages
                        .saturating_sub(1)
                        .saturating_sub(fewer_stages),
                ),
                u64::from(k.max(1)) * u64::from(microbatches.max(1)),
            ),
            BubbleFormula::Zero => (0, 1),
        }
    }
}

/// One schedule's series in the chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BubbleCurve {
    pub schedule: ScheduleKind,
    /// Model chunks per rank v.
    pub chunks: u32,
    /// With optimizer post-validation, measured in the steady state.
    pub post_validation: bool,
    /// Legend label (what is simulated).
    pub label: &'static str,
    pub formula: BubbleFormula,
}

const fn over(k: u32, fewer_stages: u32) -> BubbleFormula {
    BubbleFormula::OverKm { k, fewer_stages }
}

const fn curve(
    schedule: ScheduleKind,
    chunks: u32,
    post_validation: bool,
    label: &'static str,
    formula: BubbleFormula,
) -> BubbleCurve {
    BubbleCurve {
        schedule,
        chunks,
        post_validation,
        label,
        formula,
    }
}

/// Every series, in legend order. Interleaved runs with Megatron-Core's
/// flexible microbatch groups where they are needed ([`group_size`]): its
/// bubble is (p−1)/(v·m) for any group size N.
pub const CURVES: [BubbleCurve; 10] = [
    curve(ScheduleKind::Gpipe, 1, false, "GPipe", over(1, 0)),
    curve(ScheduleKind::OneFOneB, 1, false, "1F1B", over(1, 0)),
    curve(
        ScheduleKind::Interleaved,
        2,
        false,
        "interleaved v=2",
        over(2, 0),
    ),
    curve(
        ScheduleKind::Interleaved,
        4,
        false,
        "interleaved v=4",
        over(4, 0),
    ),
    curve(ScheduleKind::ZbH1, 1, false, "ZB-H1", over(3, 0)),
    curve(
        ScheduleKind::ZbH2,
        1,
        true,
        "ZB-H2 (post-validation, steady state)",
        BubbleFormula::Zero,
    ),
    curve(
        ScheduleKind::LoopedBfs,
        2,
        false,
        "looped BFS v=2",
        over(2, 0),
    ),
    curve(ScheduleKind::ZbV, 2, false, "ZB-V", over(6, 0)),
    curve(ScheduleKind::DualPipeV, 2, false, "DualPipeV", over(3, 0)),
    curve(ScheduleKind::DualPipe, 2, false, "DualPipe", over(3, 1)),
];

/// The microbatch group size N an interleaved point runs with: the
/// scenario's (`--microbatch-group-size`), else, where p does not divide m,
/// the smallest valid one (p < N ≤ m, m mod N = 0 or ≥ p: Megatron-Core's
/// `get_schedule_table` rule), as `sweep --microbatch-groups` picks it; None
/// for the other schedules and where p divides m (N = p).
pub fn group_size(
    file: &ScenarioFile,
    curve: &BubbleCurve,
    microbatches: u32,
    pipeline_stages: u32,
) -> Option<u32> {
    if curve.schedule != ScheduleKind::Interleaved {
        return None;
    }
    if file.microbatch_group_size.is_some() {
        return file.microbatch_group_size;
    }
    if pipeline_stages < 2 || microbatches.is_multiple_of(pipeline_stages) {
        return None;
    }
    (pipeline_stages + 1..=microbatches).find(|&n| {
        sim::schedule::flexible_interleaved::group_size_problem(pipeline_stages, microbatches, n)
            .is_none()
    })
}

/// The scenario file of one point: `file` with the curve's schedule, chunks,
/// microbatch group size ([`group_size`]) and post-validation, and m
/// microbatches per pipeline (the global batch m · `samples_per_microbatch`,
/// saturating: resolution refuses what does not fit).
pub fn point_file(
    file: &ScenarioFile,
    curve: &BubbleCurve,
    microbatches: u32,
    samples_per_microbatch: u32,
    pipeline_stages: u32,
) -> ScenarioFile {
    let mut point = ScenarioFile {
        schedule: Some(curve.schedule),
        chunks: Some(curve.chunks),
        microbatch_group_size: group_size(file, curve, microbatches, pipeline_stages),
        global_batch: Some(microbatches.saturating_mul(samples_per_microbatch)),
        ..file.clone()
    };
    if curve.post_validation {
        point.options.optimizer_post_validation = Some(true);
    }
    point
}

/// The chart's y: bubble time ÷ ideal compute time, from a bubble fraction
/// of the iteration (idle ÷ iteration, as metrics give it).
pub fn over_ideal(bubble_fraction: f64, iteration_s: f64) -> f64 {
    let idle = bubble_fraction * iteration_s;
    idle / (iteration_s - idle)
}
