//! How many buffer sets a timed GEMM rotates through, sized by bytes, and
//! the rotating buffers themselves.
//!
//! A GEMM timed over and over on the same buffers finds its inputs in L2
//! and runs faster than it does in training, where each layer's operands
//! come from HBM. So each repeat uses the next of several sets of A, B and C,
//! chosen by bytes alone: together [`ROTATION_L2_MULTIPLE`] times the L2
//! when half of the free memory allows it, and in any case as many as fit in
//! that half. A rotation that cannot exceed twice the L2 is reported
//! ([`Rotation::exceeds_twice_l2`]) so the profile can say the entry may be
//! L2-resident. The sets live in one allocation per operand
//! ([`RotatingBuffers`]), so small shapes needing thousands of sets cost
//! three allocations, not thousands.

use crate::error::CalibrateError;
use cudarc::driver::{CudaSlice, CudaStream};
use gpu::error::CudaContextExt;
use gpu::gemm::{fill_tiled, GemmElement};
use models::ops::GemmShape;
use std::sync::Arc;

/// The rotation aims at this many times the L2 size.
pub const ROTATION_L2_MULTIPLE: u64 = 4;

/// L2 size assumed when the driver reports none.
pub const MIN_L2_BYTES: u64 = 1 << 20;

/// How many buffer sets one shape rotates through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// At least one.
    pub sets: u64,
    /// Whether the sets together exceed twice the L2; if not, repeats may
    /// find their inputs in L2.
    pub exceeds_twice_l2: bool,
}

/// The rotation for sets of `set_bytes` each on a GPU with `l2_bytes` of L2
/// (at least [`MIN_L2_BYTES`] assumed) and `free_bytes` of free memory:
/// enough sets for [`ROTATION_L2_MULTIPLE`] × L2, capped only by half of the
/// free memory. `None` when one set does not fit in that half.
pub fn size_rotation(set_bytes: u64, l2_bytes: u64, free_bytes: u64) -> Option<Rotation> {
    let set_bytes = set_bytes.max(1);
    let budget_bytes = free_bytes / 2;
    if set_bytes > budget_bytes {
        return None;
    }
    let l2_bytes = l2_bytes.max(MIN_L2_BYTES);
    let sets = gpu::timing::slots_covering(
        l2_bytes.saturating_mul(ROTATION_L2_MULTIPLE),
        set_bytes,
        budget_bytes / set_bytes,
    );
    Some(Rotation {
        sets,
        exceeds_twice_l2: sets * set_bytes > l2_bytes.saturating_mul(2),
    })
}

/// Elements each set's slice of an operand is rounded up to, so every set
/// starts on a 256-byte boundary as a separate allocation would (cuBLAS
/// picks kernels by pointer alignment).
const SLOT_ALIGN_ELEMS: u64 = 128;

/// Elements of A, B and C for `shape` (saturating at `u64::MAX`, which no
/// memory holds, so such a shape is skipped rather than overflowing).
fn operand_elems(shape: &GemmShape) -> [u64; 3] {
    let product = |x: u64, y: u64| shape.batch.saturating_mul(x).saturating_mul(y);
    [
        product(shape.m, shape.k),
        product(shape.k, shape.n),
        product(shape.m, shape.n),
    ]
}

/// Elements of one set of A, B and C for `shape`, each rounded up to a slot
/// (saturating, as [`operand_elems`]).
pub fn slot_elems(shape: &GemmShape) -> [u64; 3] {
    operand_elems(shape).map(|len| {
        len.checked_next_multiple_of(SLOT_ALIGN_ELEMS)
            .unwrap_or(u64::MAX)
    })
}

/// Bytes of one set of A, B and C for `shape` (slots included) with
/// elements of `element_bytes` each; saturating.
pub fn set_bytes(shape: &GemmShape, element_bytes: u64) -> u64 {
    slot_elems(shape)
        .iter()
        .fold(0u64, |sum, elems| sum.saturating_add(*elems))
        .saturating_mul(element_bytes)
}

/// `sets` copies of a shape's A, B and C, one allocation per operand; A and
/// B filled with the random chunk, C zeroed.
pub struct RotatingBuffers<T> {
    a: CudaSlice<T>,
    b: CudaSlice<T>,
    c: CudaSlice<T>,
    /// Elements per set of A, B, C (each slot start is aligned).
    slots: [usize; 3],
    /// Elements the GEMM uses of each slot.
    lens: [usize; 3],
    sets: usize,
}

impl<T: GemmElement> RotatingBuffers<T> {
    /// Allocates and fills `sets` (at least one) sets for `shape`.
    pub fn new(
        stream: &Arc<CudaStream>,
        shape: &GemmShape,
        sets: u64,
        chunk: &[T],
        what: &str,
    ) -> Result<Self, CalibrateError> {
        let sets = sets.max(1);
        let too_large = |value: u64| {
            CalibrateError::Gpu(gpu::GpuError::TooLarge {
                what: format!("the buffers of {what}"),
                value,
                limit: usize::MAX as u64,
            })
        };
        let size = |value: u64| usize::try_from(value).map_err(|_| too_large(value));
        let slots = slot_elems(shape);
        let lens = operand_elems(shape);
        let alloc = |slot: u64, name: &str| -> Result<CudaSlice<T>, CalibrateError> {
            let len = size(slot.saturating_mul(sets))?;
            Ok(stream
                .alloc_zeros::<T>(len)
                .cuda(|| format!("allocating {sets} sets of {name} ({len} elements) for {what}"))?)
        };
        let mut a = alloc(slots[0], "A")?;
        let mut b = alloc(slots[1], "B")?;
        let c = alloc(slots[2], "C")?;
        fill_tiled(stream, chunk, &mut a, what)?;
        fill_tiled(stream, chunk, &mut b, what)?;
        Ok(RotatingBuffers {
            a,
            b,
            c,
            slots: [size(slots[0])?, size(slots[1])?, size(slots[2])?],
            lens: [size(lens[0])?, size(lens[1])?, size(lens[2])?],
            sets: size(sets)?,
        })
    }

    /// Launches `launch(a, b, c)` on set `i % sets`.
    pub fn with_set<R>(
        &mut self,
        i: usize,
        launch: impl FnOnce(
            &cudarc::driver::CudaView<'_, T>,
            &cudarc::driver::CudaView<'_, T>,
            &mut cudarc::driver::CudaViewMut<'_, T>,
        ) -> R,
    ) -> R {
        let set = i % self.sets;
        let range = |operand: usize| {
            let start = set * self.slots[operand];
            start..start + self.lens[operand]
        };
        let (a_range, b_range, c_range) = (range(0), range(1), range(2));
        let a = self.a.slice(a_range);
        let b = self.b.slice(b_range);
        let mut c = self.c.slice_mut(c_range);
        launch(&a, &b, &mut c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn rotation_aims_at_four_times_the_l2_without_a_fixed_set_cap() {
        // 1024³ bf16: 6 MiB per set on H100 (50 MiB L2) with 70 GiB free:
        // 34 sets (204 MiB), where the old cap of 8 sets gave 48 MiB < L2.
        let h100_l2 = 50 * MIB;
        let r = size_rotation(6 * MIB, h100_l2, 70 << 30).unwrap();
        assert_eq!(r.sets, (4 * h100_l2).div_ceil(6 * MIB));
        assert_eq!(r.sets, 34);
        assert!(r.exceeds_twice_l2);
        // Tiny sets: thousands of them, still only bytes decide.
        let tiny = size_rotation(96 << 10, h100_l2, 70 << 30).unwrap();
        assert_eq!(tiny.sets, 2134);
        // One set larger than 4 × L2: one set.
        assert_eq!(size_rotation(400 * MIB, h100_l2, 70 << 30).unwrap().sets, 1);
    }

    #[test]
    fn half_of_free_memory_caps_the_rotation_and_flags_l2_residency() {
        let l2 = 50 * MIB;
        // 120 MiB free: 60 MiB budget holds 10 sets of 6 MiB = 60 MiB,
        // not above 2 × L2 = 100 MiB.
        let capped = size_rotation(6 * MIB, l2, 120 * MIB).unwrap();
        assert_eq!(capped.sets, 10);
        assert!(!capped.exceeds_twice_l2);
        // 240 MiB free: 20 sets = 120 MiB > 100 MiB, below the 4× target.
        let enough = size_rotation(6 * MIB, l2, 240 * MIB).unwrap();
        assert_eq!(enough.sets, 20);
        assert!(enough.exceeds_twice_l2);
        // Exactly 2 × L2 is not above it.
        let exact = size_rotation(50 * MIB, l2, 200 * MIB).unwrap();
        assert_eq!(exact.sets, 2);
        assert!(!exact.exceeds_twice_l2);
        // One set not fitting in half of free memory: not timed.
        assert_eq!(size_rotation(6 * MIB, l2, 11 * MIB), None);
        assert_eq!(size_rotation(1, l2, 1), None);
    }

    #[test]
    fn unknown_l2_and_degenerate_sizes_do_not_break_the_sizing() {
        // L2 reported as 0: 1 MiB assumed.
        let r = size_rotation(MIB, 0, 1 << 30).unwrap();
        assert_eq!(r.sets, 4);
        assert!(r.exceeds_twice_l2);
        // A zero-byte set counts as one byte; no division by zero.
        assert!(size_rotation(0, MIB, 1 << 30).is_some());
        // Huge numbers saturate instead of overflowing.
        let huge = size_rotation(u64::MAX / 4, u64::MAX, u64::MAX).unwrap();
        assert_eq!(huge.sets, 2);
    }

    #[test]
    fn slots_round_each_operand_to_256_bytes_of_bf16() {
        let shape = GemmShape {
            batch: 3,
            m: 5,
            n: 7,
            k: 11,
        };
        assert_eq!(slot_elems(&shape), [256, 256, 128]);
        let aligned = GemmShape {
            batch: 1,
            m: 1024,
            n: 1024,
            k: 1024,
        };
        assert_eq!(slot_elems(&aligned), [1 << 20; 3]);
        // A shape no memory holds saturates and is then skipped.
        let huge = GemmShape {
            batch: 1 << 31,
            m: 1 << 31,
            n: 1 << 31,
            k: 1 << 31,
        };
        assert_eq!(slot_elems(&huge), [u64::MAX; 3]);
        assert_eq!(set_bytes(&huge, 2), u64::MAX);
        assert_eq!(size_rotation(set_bytes(&huge, 2), 50 * MIB, u64::MAX), None);
        assert_eq!(set_bytes(&shape, 2), (256 + 256 + 128) * 2);
    }
}
