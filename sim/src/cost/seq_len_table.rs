//! Values published at a few sequence lengths (fused attention rates,
//! dropout's time ratios), read between them on a line in log₂ of the
//! length.

/// The value at sequence length `s` on the line through two tabulated
/// (sequence length, value) points, linear in log₂ of the length.
pub(super) fn between_in_log2(lo: (u64, f64), hi: (u64, f64), s: u64) -> f64 {
    let x = |seq: u64| (seq as f64).log2();
    let weight = (x(s) - x(lo.0)) / (x(hi.0) - x(lo.0));
    lo.1 + weight * (hi.1 - lo.1)
}
