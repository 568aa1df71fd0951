//! 1-bit Adam's compressed all-reduce of the momentum (Tang et al. 2021,
//! arXiv 2102.02888), as DeepSpeed runs it after `freeze_step`:
//! `NcclBackend.compressed_allreduce` (`deepspeed/runtime/comm/nccl.py`,
//! 38327e07) on the momentum of the fp32 flat buffer, padded to S′
//! elements ([`scenario::optimizer::onebit_padded_elements`]), over N ranks:
//!
//! 1. worker: `buffer_m.add_(worker_error)`, the scale ‖buffer‖/√S′, the
//!    new error `buffer − scale · sign(buffer)`, the signs packed 1 bit per
//!    element (cupy `packbits`);
//! 2. `all_to_all_single` of the packed signs (S′/8 bytes per rank) and an
//!    `all_gather` of the N fp32 scales;
//! 3. server (each rank's S′/N chunk): unpack the N chunks, scale and
//!    average them, add `server_error`, re-compress as in 1;
//! 4. `all_gather` of the packed server chunks (S′/8 bytes in all) and of
//!    the server scales; unpack and scale into the momentum.
//!
//! Each step is a chain of unfused torch ops; their HBM bytes per fp32
//! element, read + written, counted from that code: `add_` 12, `norm` 4;
//! the error `sign()` 8, `add_(1)` 8, `.bool()` 5, `.float()` 5,
//! `add_(-0.5)` 8, `mul_(2.0)` 8, `× scale` 8, subtraction 12 (62); the
//! packed signs `sign_()` 8, `add_(1)` 8, `.bool()` 5, `packbits` 1.125
//! (22.125). The unpack of N chunks is `unpackbits` 1.125, `.float()` 5,
//! `add_` 8, `mul_` 8, `mul_(scales)` 8 (30.125) per element unpacked; the
//! server's `sum(0)` reads 4 per element and writes 4 per element of its
//! chunk. Cupy's `stream.synchronize()` in each `compress_by_chunk` is a
//! host wait on work already done, not counted. The chain runs in the
//! optimizer step, nothing beside it: the worker's compression is a
//! compute-stream task before the exchanges ([`kernel_bytes_before`]), the
//! server's work and the final unpack one after them
//! ([`kernel_bytes_after`]; in DeepSpeed the server's sits between the two
//! exchanges, the same serial time).

use super::{NetworkModel, WorkCost};
use scenario::optimizer::onebit_padded_elements;
use taskgraph::task_graph::NodeSpread;
use timeline::time::SimDuration;

/// HBM bytes per element of compressing a buffer (`add_` of the error, its
/// norm, the new error, the packed signs): 12 + 4 + 62 + 22.125.
pub const COMPRESS_BYTES_PER_ELEMENT: f64 = 12.0 + 4.0 + 62.0 + 22.125;
/// HBM bytes per element of unpacking and scaling signs: 1.125 + 5 + 8 + 8 + 8.
pub const UNPACK_BYTES_PER_ELEMENT: f64 = 1.125 + 5.0 + 8.0 + 8.0 + 8.0;
/// Bytes of one scale (fp32).
const SCALE_BYTES: u64 = 4;

/// Per-rank bytes of the two sign exchanges for `elements` momentum values
/// over `group_size` ranks: the all-to-all's packed signs, and the
/// all-gather's (the same S′/8 bytes gathered).
pub fn sign_bytes(elements: u64, group_size: u32) -> u64 {
    onebit_padded_elements(elements, group_size).div_ceil(8)
}

/// HBM bytes of the worker's compression of S′ = `padded` elements.
pub fn kernel_bytes_before(padded: u64) -> f64 {
    COMPRESS_BYTES_PER_ELEMENT * padded as f64
}

/// HBM bytes of what follows the sign all-to-all on one rank for S′ =
/// `padded` elements over N = `group_size` ranks: the unpack of N chunks
/// of S′/N, the server's sum and its compression of S′/N, and the final
/// unpack of S′.
pub fn kernel_bytes_after(padded: u64, group_size: u32) -> f64 {
    let s = padded as f64;
    let chunk = s / f64::from(group_size.max(1));
    UNPACK_BYTES_PER_ELEMENT * s
        + (4.0 * s + 4.0 * chunk)
        + COMPRESS_BYTES_PER_ELEMENT * chunk
        + UNPACK_BYTES_PER_ELEMENT * s
}

/// The whole chain's HBM bytes per rank ([`kernel_bytes_before`] + [`kernel_bytes_after`]).
pub fn kernel_bytes(padded: u64, group_size: u32) -> f64 {
    kernel_bytes_before(padded) + kernel_bytes_after(padded, group_size)
}

/// The cost of one compressed all-reduce's exchanges of `elements`
/// momentum values (its kernels are tasks of their own).
pub fn onebit_all_reduce(
    elements: u64,
    group_size: u32,
    spread: NodeSpread,
    network: &dyn NetworkModel,
) -> WorkCost {
    if group_size < 2 || elements == 0 {
        return WorkCost {
            duration: SimDuration::ZERO,
            bytes: 0,
            flops: 0.0,
        };
    }
    let signs = sign_bytes(elements, group_size);
    let scales = SCALE_BYTES * u64::from(group_size);
    let duration = network.all_to_all(signs, group_size, spread.nodes)
        + network.all_gather(scales, group_size, spread)
        + network.all_gather(signs, group_size, spread)
        + network.all_gather(scales, group_size, spread);
    WorkCost {
        duration,
        bytes: 2 * signs,
        flops: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_are_a_sixteenth_of_fp16_and_the_kernels_count_every_pass() {
        // 1 Mi elements over 16 ranks: padded to a multiple of 16 · 16, so
        // unchanged; 128 KiB of signs in each exchange, against 2 MiB of
        // fp16 in a ring all-reduce's reduce-scatter and all-gather each.
        let elements = 1 << 20;
        assert_eq!(onebit_padded_elements(elements, 16), elements);
        assert_eq!(sign_bytes(elements, 16), (2 << 20) / 16);
        // Worker 100.125, unpack 30.125, sum 4, final unpack 30.125 per
        // element; server sum 4 and compression 100.125 per chunk element.
        let per_element = 100.125 + 30.125 + 4.0 + 30.125 + (4.0 + 100.125) / 16.0;
        assert_eq!(kernel_bytes(elements, 16), per_element * elements as f64);
    }
}
