//! The two FP8 formats of the OCP 8-bit floating point specification (OFP8,
//! rev. 1.0, 2023, section 5.1, tables 1–2), as Hopper's tensor cores and
//! Transformer Engine use them, encoded and decoded on the CPU.
//!
//! | | E4M3 | E5M2 |
//! |---|---|---|
//! | exponent bits, bias | 4, 7 | 5, 15 |
//! | mantissa bits | 3 | 2 |
//! | max normal | S.1111.110 = 448 | S.11110.11 = 57344 |
//! | min normal | 2⁻⁶ | 2⁻¹⁴ |
//! | min subnormal | 2⁻⁹ | 2⁻¹⁶ |
//! | infinities | none | S.11111.00 |
//! | NaN | S.1111.111 | S.11111.{01, 10, 11} |
//!
//! [`Fp8Format::encode`] rounds to nearest, ties to even, and saturates to
//! the largest finite value (what CUDA's `__nv_fp8_e4m3`/`__nv_fp8_e5m2`
//! constructors do, `__NV_SATFINITE` in `cuda_fp8.h`, and so Transformer
//! Engine's casts); NaN becomes 0x7F (a NaN in both formats).

/// One of the two OCP FP8 formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fp8Format {
    /// 4 exponent bits, 3 mantissa bits: Transformer Engine's forward format.
    E4M3,
    /// 5 exponent bits, 2 mantissa bits: its gradient format (HYBRID recipe).
    E5M2,
}

impl Fp8Format {
    /// "e4m3" or "e5m2".
    pub fn name(self) -> &'static str {
        match self {
            Fp8Format::E4M3 => "e4m3",
            Fp8Format::E5M2 => "e5m2",
        }
    }

    /// Mantissa (trailing significand) bits.
    pub const fn mantissa_bits(self) -> u32 {
        match self {
            Fp8Format::E4M3 => 3,
            Fp8Format::E5M2 => 2,
        }
    }

    /// Exponent bias.
    pub const fn bias(self) -> i32 {
        match self {
            Fp8Format::E4M3 => 7,
            Fp8Format::E5M2 => 15,
        }
    }

    /// Code of the largest finite positive value (0x7E = 448 for E4M3,
    /// 0x7B = 57344 for E5M2).
    pub const fn max_finite_code(self) -> u8 {
        match self {
            Fp8Format::E4M3 => 0x7E,
            Fp8Format::E5M2 => 0x7B,
        }
    }

    /// The largest finite value.
    pub fn max_finite(self) -> f32 {
        self.decode(self.max_finite_code())
    }

    /// The value of `code` (exact in f32: at most 4 significant bits).
    pub fn decode(self, code: u8) -> f32 {
        let mantissa_bits = self.mantissa_bits();
        let sign = if code & 0x80 != 0 { -1.0f32 } else { 1.0 };
        let exponent_mask = (1u8 << (7 - mantissa_bits)) - 1;
        let exponent = (code >> mantissa_bits) & exponent_mask;
        let mantissa = code & ((1u8 << mantissa_bits) - 1);
        let all_ones_exponent = exponent == exponent_mask;
        match self {
            Fp8Format::E4M3 if all_ones_exponent && mantissa == 0b111 => return f32::NAN,
            Fp8Format::E5M2 if all_ones_exponent => {
                return if mantissa == 0 {
                    sign * f32::INFINITY
                } else {
                    f32::NAN
                };
            }
            _ => {}
        }
        let bias = self.bias();
        let (significand, power) = if exponent == 0 {
            // Subnormal: 0.m × 2^(1 − bias).
            (mantissa as f32, 1 - bias - mantissa_bits as i32)
        } else {
            // Normal: 1.m × 2^(e − bias).
            (
                ((1u32 << mantissa_bits) | mantissa as u32) as f32,
                exponent as i32 - bias - mantissa_bits as i32,
            )
        };
        sign * significand * 2f32.powi(power)
    }

    /// The code nearest to `value`, ties to the even code; beyond the largest
    /// finite value (infinities included) the largest finite value of that
    /// sign; NaN → 0x7F.
    pub fn encode(self, value: f32) -> u8 {
        if value.is_nan() {
            return 0x7F;
        }
        let sign = if value.is_sign_negative() { 0x80u8 } else { 0 };
        let magnitude = value.abs();
        let max_code = self.max_finite_code();
        if magnitude >= self.decode(max_code) {
            return sign | max_code;
        }
        // Positive codes 0..=max_code decode to increasing values: find the
        // last one not above `magnitude`, then the nearer of it and the next.
        let (mut low, mut high) = (0u8, max_code);
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if self.decode(middle) <= magnitude {
                low = middle;
            } else {
                high = middle;
            }
        }
        // Differences of f32 values are exact in f64.
        let below = magnitude as f64 - self.decode(low) as f64;
        let above = self.decode(high) as f64 - magnitude as f64;
        let code = if below < above || (below == above && low % 2 == 0) {
            low
        } else {
            high
        };
        sign | code
    }
}

#[cfg(test)]
mod tests {
    use super::Fp8Format::{E4M3, E5M2};

    #[test]
    fn special_values_match_the_ocp_tables() {
        // E4M3 (OFP8 table 1): max normal 448, no infinity, NaN S.1111.111.
        assert_eq!(E4M3.decode(0x7E), 448.0);
        assert_eq!(E4M3.decode(0xFE), -448.0);
        assert_eq!(E4M3.max_finite(), 448.0);
        assert!(E4M3.decode(0x7F).is_nan() && E4M3.decode(0xFF).is_nan());
        assert_eq!(E4M3.decode(0x78), 256.0, "S.1111.000 is finite in E4M3");
        assert_eq!(E4M3.decode(0x38), 1.0);
        assert_eq!(E4M3.decode(0x08), 2f32.powi(-6), "min normal");
        assert_eq!(E4M3.decode(0x07), 7.0 * 2f32.powi(-9), "max subnormal");
        assert_eq!(E4M3.decode(0x01), 2f32.powi(-9), "min subnormal");
        assert_eq!(E4M3.decode(0x00), 0.0);
        assert!(E4M3.decode(0x80) == 0.0 && E4M3.decode(0x80).is_sign_negative());
        // E5M2 (OFP8 table 2): max normal 57344, ±inf S.11111.00, NaN otherwise.
        assert_eq!(E5M2.decode(0x7B), 57344.0);
        assert_eq!(E5M2.max_finite(), 57344.0);
        assert_eq!(E5M2.decode(0x7C), f32::INFINITY);
        assert_eq!(E5M2.decode(0xFC), f32::NEG_INFINITY);
        for nan in [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF] {
            assert!(E5M2.decode(nan).is_nan(), "{nan:#x}");
        }
        assert_eq!(E5M2.decode(0x3C), 1.0);
        assert_eq!(E5M2.decode(0x04), 2f32.powi(-14), "min normal");
        assert_eq!(E5M2.decode(0x03), 3.0 * 2f32.powi(-16), "max subnormal");
        assert_eq!(E5M2.decode(0x01), 2f32.powi(-16), "min subnormal");
    }

    #[test]
    fn every_finite_code_round_trips_and_codes_are_ordered() {
        for format in [E4M3, E5M2] {
            let mut finite = 0;
            for code in 0..=255u8 {
                let value = format.decode(code);
                if value.is_finite() {
                    assert_eq!(format.encode(value), code, "{format:?} {code:#x}");
                    finite += 1;
                }
            }
            // E4M3: 256 − 2 NaNs; E5M2: 256 − 6 NaNs − 2 infinities.
            assert_eq!(finite, if format == E4M3 { 254 } else { 248 });
            for code in 1..=format.max_finite_code() {
                assert!(format.decode(code) > format.decode(code - 1));
            }
        }
    }

    #[test]
    fn rounding_is_to_nearest_even_and_saturating() {
        // E4M3 near 1: 1.0 (0x38), 1.125 (0x39), 1.25 (0x3A).
        assert_eq!(E4M3.encode(1.0625), 0x38, "tie to the even code");
        assert_eq!(E4M3.encode(1.1875), 0x3A, "tie to the even code");
        assert_eq!(E4M3.encode(1.0626), 0x39);
        assert_eq!(E4M3.encode(-1.0624), 0xB8);
        // Below the least subnormal 2⁻⁹: half of it ties to zero.
        assert_eq!(E4M3.encode(2f32.powi(-10)), 0x00);
        assert_eq!(E4M3.encode(1.5 * 2f32.powi(-10)), 0x01);
        assert_eq!(E4M3.encode(-2f32.powi(-12)), 0x80);
        // Beyond the largest finite value: saturate (no infinity, no NaN).
        for value in [449.0, 464.0, 1e9, f32::INFINITY] {
            assert_eq!(E4M3.encode(value), 0x7E, "{value}");
            assert_eq!(E4M3.encode(-value), 0xFE, "{value}");
        }
        // E5M2 near 1: 1.0 (0x3C), 1.25 (0x3D), 1.5 (0x3E).
        assert_eq!(E5M2.encode(1.125), 0x3C, "tie to the even code");
        assert_eq!(E5M2.encode(1.375), 0x3E, "tie to the even code");
        assert_eq!(E5M2.encode(61440.0), 0x7B, "past the max finite 57344");
        assert_eq!(E5M2.encode(f32::INFINITY), 0x7B);
        assert_eq!(E5M2.encode(f32::NEG_INFINITY), 0xFB);
        for format in [E4M3, E5M2] {
            assert_eq!(format.encode(f32::NAN), 0x7F);
            assert!(format.decode(format.encode(f32::NAN)).is_nan());
        }
    }
}
