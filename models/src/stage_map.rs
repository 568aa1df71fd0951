//! Which pipeline rank holds which global (virtual) stage: the data every
//! lowering step reads instead of computing `chunk · p + rank` itself.
//!
//! - Interleaved (Megatron-LM SC21 Sec. 2.2.2, and every schedule with one
//!   chunk per rank): global stage k·p + r is chunk k of rank r, so each
//!   chunk runs down the ranks 0 … p−1.
//! - V (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Sec. 6;
//!   PyTorch `generate_stage_to_rank_mapping(style="v")`): rank r holds
//!   stages r and 2p−1−r. Chunk 0 runs down the ranks, chunk 1 comes back
//!   up: the embedding (stage 0) and the loss (stage 2p−1) both sit on rank
//!   0, and the turn from stage p−1 to stage p stays on rank p−1 (a local
//!   hand-off, no transfer). Even chunks go down and odd ones up, so the map
//!   is defined for any v; the V schedules use v = 2.
//! - DualPipe (DeepSeek-V3 report; deepseek-ai/DualPipe `dualpipe.py`, and
//!   `examples/example_dualpipe.py`, which builds rank r's modules from
//!   `full_modules[rank]` and `full_modules[pp_size - 1 - rank]`): two copies
//!   of the model, each cut into p stages. Rank r holds stage r of copy A
//!   (chunk 0, fed from rank 0) and stage p−1−r of copy B (chunk 1, fed
//!   from rank p−1). Global ids: copy A's stages 0 … p−1, copy B's stage k
//!   is p + k, so the ids are the V map's; but stage p−1 (copy A's loss) and
//!   stage p (copy B's embedding) are two ends, not a turn: no microbatch
//!   runs from one copy into the other.

use serde::{Deserialize, Serialize};

/// The stage-to-rank map of a pipeline.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum StageMap {
    /// Global stage k·p + r on rank r (chunk k).
    #[default]
    Interleaved,
    /// Rank r holds stages r and 2p−1−r (chunk 0 down, chunk 1 back up).
    V,
    /// DualPipe's two model copies: rank r holds stage r of copy A (global
    /// stage r) and stage p−1−r of copy B (global stage 2p−1−r).
    #[serde(rename = "dualpipe")]
    DualPipe,
}

impl StageMap {
    /// Whether this is the default (interleaved) map; serialization skips it.
    pub fn is_interleaved(&self) -> bool {
        *self == StageMap::Interleaved
    }

    /// Copies of the model the pipeline holds: 2 for DualPipe, else 1.
    pub fn copies(self) -> u32 {
        match self {
            StageMap::DualPipe => 2,
            StageMap::Interleaved | StageMap::V => 1,
        }
    }

    /// The global stage of chunk `chunk` on rank `rank` of `ranks`.
    pub fn stage_of(self, ranks: u32, rank: u32, chunk: u32) -> u32 {
        self.stage_of_wide(ranks as u64, rank as u64, chunk as u64) as u32
    }

    /// [`Self::stage_of`] in u64, for counts over user-given chunk numbers
    /// that validation has not bounded yet.
    pub fn stage_of_wide(self, ranks: u64, rank: u64, chunk: u64) -> u64 {
        let offset = match self {
            StageMap::V | StageMap::DualPipe if chunk % 2 == 1 => ranks.saturating_sub(1 + rank),
            StageMap::Interleaved | StageMap::V | StageMap::DualPipe => rank,
        };
        chunk.saturating_mul(ranks).saturating_add(offset)
    }

    /// (rank, chunk) holding global stage `stage` of a pipeline of `ranks` ranks.
    pub fn place(self, ranks: u32, stage: u32) -> (u32, u32) {
        let (chunk, offset) = (stage / ranks, stage % ranks);
        let rank = match self {
            StageMap::V | StageMap::DualPipe if chunk % 2 == 1 => ranks - 1 - offset,
            StageMap::Interleaved | StageMap::V | StageMap::DualPipe => offset,
        };
        (rank, chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::StageMap;

    #[test]
    fn the_v_map_puts_stages_r_and_2p_minus_1_minus_r_on_rank_r() {
        let p = 4;
        for rank in 0..p {
            assert_eq!(StageMap::V.stage_of(p, rank, 0), rank);
            assert_eq!(StageMap::V.stage_of(p, rank, 1), 2 * p - 1 - rank);
        }
        // The loss (stage 2p−1) and the embedding (stage 0) on rank 0; the turn on rank p−1.
        assert_eq!(StageMap::V.place(p, 2 * p - 1), (0, 1));
        assert_eq!(StageMap::V.place(p, p - 1), (p - 1, 0));
        assert_eq!(StageMap::V.place(p, p), (p - 1, 1));
        // The interleaved map is Megatron's k·p + r.
        assert_eq!(StageMap::Interleaved.stage_of(p, 1, 2), 9);
        assert_eq!(StageMap::Interleaved.place(p, 9), (1, 2));
    }

    #[test]
    fn dualpipe_puts_copy_a_stage_r_and_copy_b_stage_p_minus_1_minus_r_on_rank_r() {
        let p = 4;
        assert_eq!(StageMap::DualPipe.copies(), 2);
        assert_eq!(StageMap::V.copies(), 1);
        for rank in 0..p {
            // Copy A's stage r; copy B's stage p−1−r is global p + (p−1−r).
            assert_eq!(StageMap::DualPipe.stage_of(p, rank, 0), rank);
            assert_eq!(StageMap::DualPipe.stage_of(p, rank, 1), p + (p - 1 - rank));
        }
        // Copy B's first stage (its embedding) on the last rank, its loss on rank 0.
        assert_eq!(StageMap::DualPipe.place(p, p), (p - 1, 1));
        assert_eq!(StageMap::DualPipe.place(p, 2 * p - 1), (0, 1));
    }

    #[test]
    fn place_inverts_stage_of_for_both_maps() {
        for map in [StageMap::Interleaved, StageMap::V, StageMap::DualPipe] {
            for p in 1..6 {
                for chunk in 0..4 {
                    for rank in 0..p {
                        let stage = map.stage_of(p, rank, chunk);
                        assert_eq!(map.place(p, stage), (rank, chunk), "{map:?} p={p}");
                    }
                }
            }
        }
    }
}
