//! GEMM time by tiles and waves, at the GPU's sustained clock.
//!
//! A GEMM's output is cut into tiles (the profile's `tile_shapes`: the cuBLAS
//! tile sizes 256×128 … 64×64 of NVIDIA's *Matrix Multiplication Background*
//! guide), each tile computed by one SM; tiles run in waves of one per SM. A
//! wave costs a fixed latency (pipeline fill, epilogue) plus its main loop:
//! 2·tile_m·tile_n·k FLOPs at the SM's share of the datasheet peak times the
//! main-loop efficiency. Where the tiles cannot fill the GPU, split-K cuts k
//! into s slices (s ∈ {2, 3, 4, 6, 8}, each slice at least 128 deep) and pays
//! for writing and reading back s fp32 partial outputs. The GEMM's memory
//! traffic (operands and output once, at `memory_efficiency` of the HBM
//! bandwidth) and its arithmetic combine smoothly,
//! (compute^p + memory^p)^(1/p), instead of the roofline's max(), which is
//! optimistic near the ridge point. Every kernel adds a fixed latency. Of the
//! candidate (tile, split) pairs the fastest is taken, as cuBLAS's
//! heuristics aim to.
//!
//! The sustained time runs the main loop at `sustained_ratio` of its burst
//! rate (the clock a GPU holds at its power limit for seconds); memory and
//! latencies keep their burst values. Constants: `profile::GemmTileModel`.

use models::ops::GemmShape;
use profile::GemmTileModel;
use topologies::GpuSpec;

/// Split-K factors tried where the tiles do not fill the GPU.
const SPLIT_K_FACTORS: [u64; 6] = [1, 2, 3, 4, 6, 8];
/// Shallowest k slice split-K makes.
const MIN_SPLIT_K_DEPTH: u64 = 128;
/// The main loop's k step: a tile's k extent is padded to a multiple of it
/// (CUTLASS's and cuBLAS's Hopper and Ampere 16-bit kernels step k by 32 or
/// 64; 64 is the Hopper tile depth).
const K_STEP: u64 = 64;
/// Bytes of one fp32 partial output that split-K writes and reads back.
const PARTIAL_BYTES: f64 = 4.0;

/// How the model runs one GEMM, for `--explain` and the validation tables.
/// Tile, split and waves are the sustained choice (the burst one may differ
/// where two candidates are close).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmEstimate {
    /// The output tile [rows, cols] chosen.
    pub tile: [u64; 2],
    /// Split-K slices (1: none).
    pub split_k: u64,
    /// Waves of tiles over the SMs.
    pub waves: u64,
    /// Seconds at the burst rate, without the launch gap.
    pub burst_s: f64,
    /// Seconds at the sustained rate, without the launch gap: the price.
    pub seconds: f64,
}

/// The tile model for one GPU, precision and profile.
#[derive(Debug, Clone, Copy)]
pub struct TileModel<'a> {
    tiles: &'a [[u64; 2]],
    sm_count: u64,
    /// Main-loop FLOP/s of one SM in a burst.
    sm_burst_flops_per_s: f64,
    sustained_ratio: f64,
    memory_bytes_per_s: f64,
    kernel_latency_s: f64,
    wave_latency_s: f64,
    overlap_exponent: f64,
}

impl<'a> TileModel<'a> {
    /// The model at `peak_flops_per_s` (the precision's datasheet dense
    /// peak) × `relative_efficiency` (an FP8 GEMM's efficiency relative to
    /// a bf16 one's; 1 otherwise).
    pub fn new(
        constants: &GemmTileModel,
        tiles: &'a [[u64; 2]],
        gpu: &GpuSpec,
        peak_flops_per_s: f64,
        relative_efficiency: f64,
    ) -> TileModel<'a> {
        let sm_count = u64::from(gpu.sm_count);
        TileModel {
            tiles,
            sm_count,
            sm_burst_flops_per_s: peak_flops_per_s / sm_count as f64
                * constants.mainloop_efficiency.value
                * relative_efficiency,
            sustained_ratio: constants.sustained_ratio.value,
            memory_bytes_per_s: gpu.hbm_bandwidth_bytes_per_s * constants.memory_efficiency.value,
            kernel_latency_s: constants.kernel_latency_ns.value * 1e-9,
            wave_latency_s: constants.wave_latency_ns.value * 1e-9,
            overlap_exponent: constants.overlap_exponent.value,
        }
    }

    /// The same model with the main loop at `sustained_ratio` of its burst
    /// rate when sustained (FP8 GEMMs' own ratio, where the profile has one).
    pub fn with_sustained_ratio(mut self, sustained_ratio: f64) -> Self {
        self.sustained_ratio = sustained_ratio;
        self
    }

    /// The GEMM's burst and sustained times moving `bytes` through HBM.
    pub fn estimate(&self, shape: &GemmShape, bytes: f64) -> GemmEstimate {
        let burst = self.fastest(shape, bytes, self.sm_burst_flops_per_s);
        let sustained = self.fastest(
            shape,
            bytes,
            self.sm_burst_flops_per_s * self.sustained_ratio,
        );
        GemmEstimate {
            burst_s: burst.seconds,
            ..sustained
        }
    }

    /// The fastest (tile, split) at `sm_flops_per_s` per SM; `burst_s` is
    /// left equal to `seconds`.
    fn fastest(&self, shape: &GemmShape, bytes: f64, sm_flops_per_s: f64) -> GemmEstimate {
        let memory_s = bytes / self.memory_bytes_per_s;
        let mut best: Option<GemmEstimate> = None;
        for &tile in self.tiles {
            // Saturating: a validated profile or table keeps these far
            // inside u64 (sides up to 2^24, tiles at least 8 wide).
            let tiles = shape
                .batch
                .saturating_mul(shape.m.div_ceil(tile[0]))
                .saturating_mul(shape.n.div_ceil(tile[1]));
            for split_k in SPLIT_K_FACTORS {
                let splits_allowed = split_k == 1
                    || (tiles.saturating_mul(split_k) <= self.sm_count
                        && shape.k / split_k >= MIN_SPLIT_K_DEPTH);
                if !splits_allowed {
                    continue;
                }
                let depth = shape.k.div_ceil(split_k * K_STEP) * K_STEP;
                let waves = tiles.saturating_mul(split_k).div_ceil(self.sm_count);
                let wave_s = self.wave_latency_s
                    + 2.0 * tile[0] as f64 * tile[1] as f64 * depth as f64 / sm_flops_per_s;
                let compute_s = waves as f64 * wave_s;
                let partials_s = if split_k > 1 {
                    2.0 * split_k as f64 * (shape.batch * shape.m * shape.n) as f64 * PARTIAL_BYTES
                        / self.memory_bytes_per_s
                } else {
                    0.0
                };
                // The combination is never below the larger part, so a
                // candidate whose larger part alone does not beat the best
                // cannot win: skipped without its powers (the same choice).
                let floor_s = compute_s.max(memory_s + partials_s) + self.kernel_latency_s;
                if best.is_some_and(|b| floor_s >= b.seconds) {
                    continue;
                }
                let seconds =
                    self.combine(compute_s, memory_s + partials_s) + self.kernel_latency_s;
                if best.is_none_or(|b| seconds < b.seconds) {
                    best = Some(GemmEstimate {
                        tile,
                        split_k,
                        waves,
                        burst_s: seconds,
                        seconds,
                    });
                }
            }
        }
        best.expect("a validated profile lists at least one tile")
    }

    /// (compute^p + memory^p)^(1/p), scaled by the larger so that neither
    /// power overflows (the larger's own ratio is exactly 1, and 1^p = 1).
    /// Never below the larger: the sum is at least 1, so its root is.
    fn combine(&self, compute_s: f64, memory_s: f64) -> f64 {
        let larger = compute_s.max(memory_s);
        if larger == 0.0 {
            return 0.0;
        }
        let smaller = compute_s.min(memory_s);
        let p = self.overlap_exponent;
        larger * (1.0 + (smaller / larger).powf(p)).powf(1.0 / p)
    }
}

#[cfg(test)]
#[path = "gemm_tiles_tests.rs"]
mod tests;
