//! The constants of the GEMM tile-and-wave model (`gemm.tile_model` in a
//! profile): how fast a tile's main loop runs, what each kernel and each
//! wave of tiles costs besides, how a GEMM's memory traffic overlaps its
//! arithmetic, and how much slower a GPU runs at its power limit for
//! seconds than in a burst. `sim::cost::gemm_tiles` evaluates the model;
//! `scripts/derive-gemm-tile-model.py` derives the H100 constants from the
//! lab H100 grid. A profile without a tile model is priced by the older
//! whole-GEMM formula (`large_gemm_efficiency` × tile quantization).

use crate::limits::{MAX_OVERHEAD_NS, MIN_EFFICIENCY};
use crate::quantity::Quantity;
use serde::{Deserialize, Serialize};

/// Largest exponent of the compute/memory combination: beyond it the
/// combination is a plain `max()` to within 1%.
pub const MAX_OVERLAP_EXPONENT: f64 = 64.0;

/// Constants of the tile-and-wave GEMM model, each with its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GemmTileModel {
    /// Fraction of the datasheet dense peak (per SM) a tile's main loop
    /// reaches in a burst, at the GPU's maximum clock.
    pub mainloop_efficiency: Quantity,
    /// Fixed time of every GEMM kernel besides the launch gap
    /// (`kernel_overhead_ns`) and its waves: the first loads' latency, the
    /// last stores' drain.
    pub kernel_latency_ns: Quantity,
    /// Fixed time of each wave of tiles (pipeline fill, epilogue).
    pub wave_latency_ns: Quantity,
    /// Fraction of the datasheet HBM bandwidth at which a GEMM's operands
    /// and output stream.
    pub memory_efficiency: Quantity,
    /// Exponent p of the smooth combination (compute^p + memory^p)^(1/p):
    /// 1 adds them, large p tends to the roofline's max().
    pub overlap_exponent: Quantity,
    /// Sustained compute rate over burst rate: what the main loop keeps of
    /// its burst speed when the GPU runs at its power limit for seconds, as
    /// a training step does. Applied to measured GEMMs shorter than 2 ms too
    /// (their times are bursts), so a shape on a measured grid is priced like
    /// one beside it; not to those of 10 ms or more, whose repeats already
    /// ran at the power limit (linearly in between).
    pub sustained_ratio: Quantity,
    /// The sustained ratio of FP8 GEMMs, where it differs from the bf16
    /// GEMMs' `sustained_ratio`: FP8 tensor cores doing twice the work per
    /// clock draw more power, so at the same power limit the clock falls
    /// further. Absent: FP8 GEMMs take `sustained_ratio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8_sustained_ratio: Option<Quantity>,
}

impl GemmTileModel {
    /// The sustained ratio of FP8 GEMMs: `fp8_sustained_ratio`, or the bf16
    /// GEMMs' `sustained_ratio` without one.
    pub fn fp8_sustained_ratio(&self) -> f64 {
        self.fp8_sustained_ratio
            .as_ref()
            .unwrap_or(&self.sustained_ratio)
            .value
    }

    /// Every problem with the constants, each naming its key.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for (key, q) in [
            ("mainloop_efficiency", &self.mainloop_efficiency),
            ("memory_efficiency", &self.memory_efficiency),
            ("sustained_ratio", &self.sustained_ratio),
        ]
        .into_iter()
        .chain(
            self.fp8_sustained_ratio
                .as_ref()
                .map(|q| ("fp8_sustained_ratio", q)),
        ) {
            if !(q.value >= MIN_EFFICIENCY && q.value <= 1.0) {
                problems.push(format!(
                    "gemm.tile_model.{key} must be in [{MIN_EFFICIENCY}, 1], got {:e}",
                    q.value
                ));
            }
        }
        for (key, q) in [
            ("kernel_latency_ns", &self.kernel_latency_ns),
            ("wave_latency_ns", &self.wave_latency_ns),
        ] {
            if !(q.value.is_finite() && (0.0..=MAX_OVERHEAD_NS).contains(&q.value)) {
                problems.push(format!(
                    "gemm.tile_model.{key} must be from 0 to {MAX_OVERHEAD_NS:e} ns (1 s), got {:e}",
                    q.value
                ));
            }
        }
        let p = self.overlap_exponent.value;
        if !(p.is_finite() && (1.0..=MAX_OVERLAP_EXPONENT).contains(&p)) {
            problems.push(format!(
                "gemm.tile_model.overlap_exponent must be from 1 to {MAX_OVERLAP_EXPONENT}, got {p:e}"
            ));
        }
        problems
    }
}
