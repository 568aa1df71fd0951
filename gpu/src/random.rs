//! A small seeded generator (SplitMix64) for benchmark inputs (calibrate's
//! GEMMs and CPU Adam, the executor's GEMM scratch), so every run times the
//! same data and no RNG crate is needed. Benchmarks want random
//! bits (tensor-core power and timing depend on them), not statistical rigour.

/// SplitMix64 (Steele, Lea, Flood 2014): one 64-bit state, full period.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator with this seed; equal seeds give equal streams.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn next_signed_unit(&mut self) -> f32 {
        // 24 random mantissa bits → [0, 1), then shift to [-1, 1).
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        2.0 * unit - 1.0
    }
}

/// `len` values uniform in [-scale, scale), from `seed`.
pub fn signed_values(seed: u64, len: usize, scale: f32) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..len).map(|_| scale * rng.next_signed_unit()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_gives_same_values_in_range() {
        let a = signed_values(7, 1000, 0.5);
        assert_eq!(a, signed_values(7, 1000, 0.5));
        assert_ne!(a, signed_values(8, 1000, 0.5));
        assert!(a.iter().all(|x| (-0.5..0.5).contains(x)));
        let mean = a.iter().sum::<f32>() / a.len() as f32;
        assert!(mean.abs() < 0.05, "mean {mean}");
    }
}
