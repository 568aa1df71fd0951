//! The ranges a profile's figures must lie in: what validation refuses
//! outside them.

/// The values [`crate::GemmMeasurement::layout`] may take.
pub const GEMM_LAYOUTS: [&str; 4] = ["nn", "nt", "tn", "tt"];

/// Smallest efficiency a profile may state (0.1 %).
pub const MIN_EFFICIENCY: f64 = 1e-3;

/// Slowest rate a profile may state: 1 kB/s (or 1,000 parameters/s).
pub const MIN_RATE_PER_S: f64 = 1e3;

/// Fastest rate a profile may state: 10 PB/s.
pub const MAX_RATE_PER_S: f64 = 1e16;

/// Largest batch, m, n or k a measured GEMM may have (2^24): products of
/// three stay far inside u64.
pub const MAX_GEMM_DIMENSION: u64 = 1 << 24;

/// Sides a GEMM tile may have, in elements.
pub const TILE_SIDES: std::ops::RangeInclusive<u64> = 8..=1024;

/// Largest overhead or latency a profile may state: 1 s.
pub const MAX_OVERHEAD_NS: f64 = 1e9;
