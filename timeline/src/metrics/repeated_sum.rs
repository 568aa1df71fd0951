//! The sum of a list of non-negative terms added over and over, `passes`
//! times, one term at a time from 0.0 — bit for bit what that double loop
//! gives — in about (terms × binades crossed) additions instead of
//! (terms × passes).
//!
//! A symmetric run's FLOP total adds replica 0's compute terms once per
//! replica, in full expansion's order (`compute_spans_weighted`): at 512
//! replicas that loop was most of the metrics' time.
//!
//! **Why it is exact.** Let the running sum `s` lie in the binade
//! [2^E, 2^(E+1)), where doubles are the multiples of u = 2^(E−52); write
//! s = S·u with S an integer in [2^52, 2^53). Adding t ≥ 0 gives the double
//! nearest S + t/u (in units of u), ties to the even one, as long as the
//! result stays below 2^(E+1): S + q when t/u's fraction is below one half,
//! S + q + 1 above it, and on a tie whichever of those is even (q = ⌊t/u⌋).
//! So across one pass the increment of S depends only on the terms and on
//! S's parity at the start of the pass (each tie's choice follows from the
//! parity the previous terms left). [`RepeatedSum`] works out both
//! increments once per binade and then takes whole passes in one addition,
//! while the pass's end (the largest partial sum: terms are non-negative)
//! stays inside the binade; a pass that would leave it runs term by term,
//! as does any pass from zero or a subnormal sum.

/// Terms in order, as runs of one value repeated: a merged task's FLOPs
/// added once per rank it stands for are one run, not t terms.
#[derive(Debug, Default)]
pub struct TermRuns {
    /// (term, how many times in a row).
    runs: Vec<(f64, u64)>,
}

impl TermRuns {
    /// Appends `term` `times` times.
    #[inline]
    pub fn push(&mut self, term: f64, times: u64) {
        match self.runs.last_mut() {
            Some((last, count)) if last.to_bits() == term.to_bits() => *count += times,
            _ => self.runs.push((term, times)),
        }
    }

    /// Every term, one by one.
    fn expanded(&self) -> Vec<f64> {
        self.runs
            .iter()
            .flat_map(|&(term, times)| std::iter::repeat_n(term, times as usize))
            .collect()
    }
}

/// The FLOP totals of the terms `runs` holds added `passes` times in
/// order from 0.0: Σ |t| and Σ max(t, 0) (a recomputation's term is
/// negative), with exactly the bits of `for _ in 0..passes { for t in
/// terms { total += t.abs(); model += t.max(0.0) } }`. Terms must be
/// finite; otherwise, and whenever the fast paths do not apply, it adds
/// term by term (both sums in one loop, two independent chains).
pub fn repeated_flop_sums_of_runs(runs: &TermRuns, passes: u32) -> (f64, f64) {
    exact_integer_sums(runs.runs.iter().copied(), passes)
        .unwrap_or_else(|| repeated_float_sums(&runs.expanded(), passes))
}

/// [`repeated_flop_sums_of_runs`] in floating point: whole passes at a time where
/// [`RepeatedSum`] can take them, term by term elsewhere.
fn repeated_float_sums(terms: &[f64], passes: u32) -> (f64, f64) {
    let (mut total, mut model) = (0.0f64, 0.0f64);
    let finite = terms.iter().all(|t| t.is_finite());
    let mut fast_total = RepeatedSum::new(f64::abs);
    let mut fast_model = RepeatedSum::new(|t: f64| t.max(0.0));
    for done in 0..passes {
        let worth_it = |sum: f64| finite && passes_left_in_binade(sum, done) >= PASSES_TO_REPAY;
        let next_total = fast_total.whole_pass(terms, total, worth_it);
        let next_model = fast_model.whole_pass(terms, model, worth_it);
        match (next_total, next_model) {
            (Some(next_total), Some(next_model)) => (total, model) = (next_total, next_model),
            (Some(next_total), None) => {
                total = next_total;
                for &term in terms {
                    model += term.max(0.0);
                }
            }
            (None, Some(next_model)) => {
                model = next_model;
                for &term in terms {
                    total += term.abs();
                }
            }
            (None, None) => {
                for &term in terms {
                    total += term.abs();
                    model += term.max(0.0);
                }
            }
        }
    }
    (total, model)
}

/// The sums when no addition of the double loop rounds, computed in
/// integers; `None` otherwise. `runs` are the terms in order, each
/// `(term, times in a row)`. Every term must be a whole number; with k the
/// fewest trailing zero bits of any term, every partial sum is then a
/// multiple of 2^k no larger than the final one (the terms added are not
/// negative), and a multiple of 2^k below 2^(53+k) is a double: when the
/// total is below that bound, each addition is exact and the double loop
/// gives the exact sum, in any order. FLOP counts of GEMMs mostly are such
/// numbers (a sweep's layouts' sums never round).
fn exact_integer_sums(runs: impl Iterator<Item = (f64, u64)>, passes: u32) -> Option<(f64, f64)> {
    const WHOLE_BELOW: f64 = 1.2676506002282294e30; // 2^100
    let (mut total, mut model, mut bits) = (0u128, 0u128, 0u128);
    for (term, times) in runs {
        let magnitude = term.abs();
        // NaN and ±∞ fail both tests.
        if magnitude.fract() != 0.0 || magnitude >= WHOLE_BELOW {
            return None;
        }
        let whole = magnitude as u128;
        if times > 0 {
            bits |= whole;
        }
        let run = whole.checked_mul(u128::from(times))?;
        total = total.checked_add(run)?;
        if term > 0.0 {
            model += run;
        }
    }
    let total = total.checked_mul(u128::from(passes))?;
    let model = model.checked_mul(u128::from(passes))?;
    let spacing_bits = if bits == 0 { 0 } else { bits.trailing_zeros() };
    let bound = 1u128.checked_shl(53 + spacing_bits).unwrap_or(u128::MAX);
    (total < bound).then_some((total as f64, model as f64))
}

/// Working out a binade's increments costs about eight passes term by term
/// (two passes of integer work a term, against two independent additions
/// a term); it is done only where about twice that many passes are
/// expected to stay in the binade (small replica counts add term by term
/// throughout: at 4 the sweep ran 3 % slower).
const PASSES_TO_REPAY: f64 = 16.0;

/// About how many more passes of the size seen so far (`done` passes to
/// reach `sum`) fit in `sum`'s binade.
fn passes_left_in_binade(sum: f64, done: u32) -> f64 {
    if done == 0 || sum <= 0.0 {
        return 0.0;
    }
    let binade_end = f64::from_bits(((sum.to_bits() >> MANTISSA_BITS) + 1) << MANTISSA_BITS);
    (binade_end - sum) / (sum / f64::from(done))
}

/// Mantissa bits of an `f64` (the implicit leading bit not included).
const MANTISSA_BITS: u32 = 52;
const IMPLICIT_BIT: u64 = 1 << MANTISSA_BITS;

/// A pass's increment of the running sum in units of its binade's spacing,
/// by the parity of the sum at the pass's start, for one binade; the sum
/// adds `term(t)` for each term t (which must be ≥ 0 or −0.0).
struct RepeatedSum<F> {
    term: F,
    /// (biased exponent, increments by starting parity; `None` when a term
    /// alone would leave the binade).
    binade: Option<(u64, Option<[u64; 2]>)>,
}

impl<F: Fn(f64) -> f64> RepeatedSum<F> {
    fn new(term: F) -> RepeatedSum<F> {
        RepeatedSum { term, binade: None }
    }

    /// The sum after one more pass from `sum`, if the pass stays inside
    /// `sum`'s binade (and `sum` is normal); `None` to add term by term.
    fn whole_pass(
        &mut self,
        terms: &[f64],
        sum: f64,
        worth_it: impl Fn(f64) -> bool,
    ) -> Option<f64> {
        let bits = sum.to_bits();
        let exponent = bits >> MANTISSA_BITS;
        // Zero and subnormal sums (no implicit bit), and sums so small
        // that their binades hold few passes anyway.
        if exponent <= u64::from(MANTISSA_BITS) + 1 {
            return None;
        }
        let increments = match self.binade {
            Some((known, increments)) if known == exponent => increments,
            _ if !worth_it(sum) => return None,
            _ => {
                let increments = pass_increments(terms.iter().map(|&t| (self.term)(t)), exponent);
                self.binade = Some((exponent, increments));
                increments
            }
        }?;
        let units = (bits & (IMPLICIT_BIT - 1)) | IMPLICIT_BIT;
        let after = units.checked_add(increments[(units & 1) as usize])?;
        // The pass's largest partial sum is its last: inside the binade iff
        // its units stay below 2^53.
        (after < 2 * IMPLICIT_BIT)
            .then(|| f64::from_bits((exponent << MANTISSA_BITS) | (after - IMPLICIT_BIT)))
    }
}

/// One pass's increment in units of the spacing of the binade with biased
/// exponent `exponent`, starting from an even and from an odd sum; `None`
/// when some term is at least 2^53 units (it alone leaves the binade).
fn pass_increments(terms: impl Iterator<Item = f64> + Clone, exponent: u64) -> Option<[u64; 2]> {
    let mut increments = [0u64; 2];
    for (parity, increment) in increments.iter_mut().enumerate() {
        let mut units = parity as u64;
        for term in terms.clone() {
            units = units.checked_add(term_units(term, exponent, units)?)?;
        }
        *increment = units - parity as u64;
    }
    Some(increments)
}

/// How many units adding `term` (finite, ≥ 0) moves a sum of `units` units
/// in the binade of biased exponent `sum_exponent` (a unit is that binade's
/// spacing, 2^(`sum_exponent` − 1075)) by: the quotient rounded to
/// nearest, a tie to the even total. Integer arithmetic on the term's bits:
/// its mantissa shifted by the exponents' difference, the bits shifted out
/// deciding the rounding.
#[inline]
fn term_units(term: f64, sum_exponent: u64, units: u64) -> Option<u64> {
    let bits = term.to_bits() & !(1 << 63);
    if bits == 0 {
        return Some(0);
    }
    let exponent = bits >> MANTISSA_BITS;
    let mantissa = match exponent {
        0 => bits,
        _ => (bits & (IMPLICIT_BIT - 1)) | IMPLICIT_BIT,
    };
    // term = mantissa · 2^(max(exponent, 1) − 1075); in units,
    // mantissa · 2^(max(exponent, 1) − sum_exponent).
    let term_exponent = exponent.max(1);
    if term_exponent >= sum_exponent {
        // A whole number of units: at least 2^52 of them once shifted, so
        // past 2^53 (out of the binade) from a shift of 1 on.
        let whole = mantissa.checked_shl((term_exponent - sum_exponent) as u32)?;
        return (whole < 2 * IMPLICIT_BIT).then_some(whole);
    }
    let shift = sum_exponent - term_exponent;
    if shift > 54 {
        // Below a quarter unit: the mantissa is under 2^53.
        return Some(0);
    }
    let whole = mantissa >> shift;
    let rest = mantissa & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    Some(match rest.cmp(&half) {
        std::cmp::Ordering::Less => whole,
        std::cmp::Ordering::Greater => whole + 1,
        std::cmp::Ordering::Equal => whole + ((units + whole) & 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(terms: &[f64], passes: u32) -> (u64, u64) {
        let (mut total, mut model) = (0.0f64, 0.0f64);
        for _ in 0..passes {
            for &term in terms {
                total += term.abs();
                model += term.max(0.0);
            }
        }
        (total.to_bits(), model.to_bits())
    }

    /// Each term once, as runs.
    fn ones_each(terms: &[f64]) -> impl Iterator<Item = (f64, u64)> + '_ {
        terms.iter().map(|&term| (term, 1))
    }

    fn repeated_flop_sums(terms: &[f64], passes: u32) -> (f64, f64) {
        let mut runs = TermRuns::default();
        for &term in terms {
            runs.push(term, 1);
        }
        repeated_flop_sums_of_runs(&runs, passes)
    }

    fn fast(terms: &[f64], passes: u32) -> (u64, u64) {
        let (total, model) = repeated_flop_sums(terms, passes);
        (total.to_bits(), model.to_bits())
    }

    /// A small deterministic generator (no dependency for a test).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 11
        }
    }

    /// The bits of the double loop on integer FLOP-like terms (which tie
    /// often once the sum's spacing exceeds 1), on fractions, on terms
    /// spanning many magnitudes, with zeros, −0.0 and negative terms (a
    /// recomputation's), for 1 to 600 passes.
    #[test]
    fn equals_the_double_loop_bit_for_bit() {
        let mut random = Lcg(7);
        for case in 0..400 {
            let count = 1 + (random.next() % 40) as usize;
            let terms: Vec<f64> = (0..count)
                .map(|_| match case % 5 {
                    // Integers of FLOP-like size: ties at spacings ≥ 2.
                    0 => (random.next() % (1 << 40)) as f64,
                    // Small integers with halves: ties from the start.
                    1 => (random.next() % 64) as f64 * 0.5,
                    // Magnitudes from 2^-20 to 2^50.
                    2 => {
                        (1.0 + (random.next() % 1000) as f64 / 1000.0)
                            * 2f64.powi((random.next() % 71) as i32 - 20)
                    }
                    // Recomputations: negative terms.
                    3 => {
                        (random.next() % (1 << 36)) as f64
                            * if random.next().is_multiple_of(3) {
                                -1.0
                            } else {
                                1.0
                            }
                    }
                    _ => match random.next() % 4 {
                        0 => 0.0,
                        1 => -0.0,
                        _ => (random.next() % (1 << 30)) as f64 * 3.0,
                    },
                })
                .collect();
            let passes = 1 + (random.next() % 600) as u32;
            assert_eq!(
                fast(&terms, passes),
                naive(&terms, passes),
                "case {case}: {passes} passes of {terms:?}"
            );
        }
    }

    /// Whole terms with many trailing zero bits (as GEMMs' FLOPs), their
    /// sums below and above the bound where integer sums are exact: equal
    /// to the double loop either way.
    #[test]
    fn whole_terms_sum_exactly_in_integers_within_the_bound() {
        let mut random = Lcg(11);
        for case in 0..300 {
            let shift = (random.next() % 40) as i32;
            let count = 1 + (random.next() % 60) as usize;
            let terms: Vec<f64> = (0..count)
                .map(|_| {
                    // Up to 2^10 … 2^45 before the shift: totals on both
                    // sides of the bound.
                    let term =
                        (1 + random.next() % (1 << (10 + case % 36))) as f64 * 2f64.powi(shift);
                    if case % 4 == 3 && random.next().is_multiple_of(3) {
                        -term
                    } else {
                        term
                    }
                })
                .collect();
            let passes = 1 + (random.next() % 5000) as u32;
            assert_eq!(
                fast(&terms, passes),
                naive(&terms, passes),
                "case {case}: {passes} passes of {terms:?}"
            );
        }
        // Past the bound the additions round (2^53 + 1 ties to 2^53): the
        // integer sum would be 2^53 + 2.
        let rounding = [2f64.powi(53), 1.0, 1.0];
        assert!(exact_integer_sums(ones_each(&rounding), 1).is_none());
        assert_eq!(fast(&rounding, 1), naive(&rounding, 1));
        // Just inside and at the bound for k = 0: 2^53 − 1 and 2^53.
        let ones = [2f64.powi(52) - 1.0, 2f64.powi(52), 1.0];
        assert!(exact_integer_sums(ones_each(&ones), 1).is_none());
        let under = [2f64.powi(52) - 1.0, 2f64.powi(52)];
        assert_eq!(
            exact_integer_sums(ones_each(&under), 1),
            Some((2f64.powi(53) - 1.0, 2f64.powi(53) - 1.0))
        );
        assert_eq!(fast(&ones, 1), naive(&ones, 1));
        // A fraction or an infinity takes the other paths.
        assert!(exact_integer_sums(ones_each(&[1.0, 0.5]), 3).is_none());
        assert!(exact_integer_sums(ones_each(&[1.0, f64::INFINITY]), 3).is_none());
    }

    /// Terms given as runs of a repeated value sum to the bits of the same
    /// terms one by one, on both paths (integer sums, and terms with
    /// fractions that round).
    #[test]
    fn runs_sum_as_their_terms_one_by_one() {
        let mut random = Lcg(13);
        for case in 0..300 {
            let mut runs = TermRuns::default();
            let mut terms = Vec::new();
            for _ in 0..1 + random.next() % 30 {
                let term = match case % 3 {
                    0 => (random.next() % (1 << 40)) as f64 * 8.0,
                    1 => (random.next() % 64) as f64 * 0.375,
                    _ => -((random.next() % (1 << 20)) as f64),
                };
                let times = 1 + random.next() % 9;
                runs.push(term, times);
                terms.extend(std::iter::repeat_n(term, times as usize));
            }
            let passes = 1 + (random.next() % 300) as u32;
            let (total, model) = repeated_flop_sums_of_runs(&runs, passes);
            assert_eq!(
                (total.to_bits(), model.to_bits()),
                naive(&terms, passes),
                "case {case}: {passes} passes of {terms:?}"
            );
        }
    }

    /// Where the fast path must not apply, and the empty cases.
    #[test]
    fn falls_back_or_returns_zero_where_it_must() {
        let infinite = [1.0, f64::INFINITY];
        assert_eq!(fast(&infinite, 3), naive(&infinite, 3));
        assert_eq!(repeated_flop_sums(&[], 50), (0.0, 0.0));
        assert_eq!(repeated_flop_sums(&[1.0], 0), (0.0, 0.0));
        // Ties at every pass once the spacing is 2: 2^53 + k·1 in units.
        let tie = [2f64.powi(53), 1.0, 1.0, 1.0];
        assert_eq!(fast(&tie, 500), naive(&tie, 500));
    }
}
