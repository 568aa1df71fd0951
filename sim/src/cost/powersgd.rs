//! PowerSGD (Vogels et al. 2019, arXiv 1905.13727) as PyTorch DDP's comm
//! hook runs it (`torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py`,
//! `compression-sources.md` §1) after `start_powerSGD_iter`: each gradient
//! n×m matrix (n = shape[0], m = numel/n) of rank r′ = min(n, m, r) is
//! compressed when (n + m)·r′·`min_compression_rate` (2) < n·m
//! (`_should_compress`); vectors and the rest are all-reduced whole.
//!
//! Per reduction, with S elements in all, M of them in compressed
//! matrices, P = Σ n·r′ and Q = Σ m·r′, each of b bytes (the bucket's
//! dtype, here the main gradients'):
//! - the wire: an all-reduce of the S − M uncompressed elements, then of
//!   the Ps, then of the Qs, on one NCCL stream;
//! - the kernels, HBM bytes read + written: the error added to the input
//!   (3·S·b) and the input cloned (2·S·b); the uncompressed tensors copied
//!   into one buffer and back (4·(S − M)·b); P = M·Q and Q = Mᵀ·P, each
//!   reading the matrices (M·b each; rank r′ leaves them memory-bound);
//!   Gram-Schmidt over P's r′ columns (3·r′·P·b); M ≈ P·Qᵀ written into the
//!   gradients (M·b); the new error, clone − input (3·S·b).
//!
//! The kernels before the first all-reduce (error, clone, the buffer of
//! uncompressed tensors, M·Q) are a compute-stream task before the
//! reduction, the rest one after it ([`kernel_bytes_before`],
//! [`kernel_bytes_after`]; the hook runs Gram-Schmidt and Mᵀ·P between the
//! all-reduces, the same serial time). The reduction runs after the last
//! pass: the hook's `decompress` calls
//! `torch.cuda.synchronize(device)` for every bucket, so the host waits for
//! each bucket's reduction before it issues the rest of the backward, and
//! nothing overlaps (the options refuse `--overlap-grad-reduce`).

use super::{NetworkModel, WorkCost};
use models::ModelSpec;
use taskgraph::task_graph::NodeSpread;
use timeline::time::SimDuration;

/// PyTorch's `PowerSGDState.min_compression_rate` default.
pub const MIN_COMPRESSION_RATE: u64 = 2;

/// What PowerSGD sends for a set of gradient tensors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PowerSgdSizes {
    /// Every element (S).
    pub elements: u64,
    /// Elements of the compressed matrices (M).
    pub matrix_elements: u64,
    /// Σ n·r′ and Σ m·r′ over the compressed matrices.
    pub p_elements: u64,
    pub q_elements: u64,
}

impl PowerSgdSizes {
    /// Adds `count` matrices of `n` × `m` at rank `rank` (compressed or not).
    fn add_matrix(&mut self, n: u64, m: u64, count: u64, rank: u64) {
        let elements = n.saturating_mul(m).saturating_mul(count);
        self.elements = self.elements.saturating_add(elements);
        let r = rank.min(n).min(m);
        if (n + m)
            .saturating_mul(r)
            .saturating_mul(MIN_COMPRESSION_RATE)
            < n.saturating_mul(m)
        {
            self.matrix_elements = self.matrix_elements.saturating_add(elements);
            self.p_elements = self.p_elements.saturating_add(n * r * count);
            self.q_elements = self.q_elements.saturating_add(m * r * count);
        }
    }

    /// Elements all-reduced whole.
    pub fn uncompressed_elements(&self) -> u64 {
        self.elements - self.matrix_elements
    }
}

/// The gradient matrices of a rank holding `layers` transformer layers
/// (tensor-parallel shards of `t`), the word embedding (and learned
/// positions) when `embedding`, the output layer when `untied_head`, and
/// `vectors` more elements in 1-D tensors (norms, biases), at rank `rank`.
/// A weight is `nn.Linear`'s [out, in]: QKV [qkv/t, h], output projection
/// [h, q/t], fc1 [f·(2 for SwiGLU)/t, h], fc2 [h, f/t]; the embedding
/// [vocab/t, h].
pub fn sizes_of(
    model: &ModelSpec,
    t: u64,
    (layers, embedding, untied_head): (u64, bool, bool),
    vectors: u64,
    rank: u64,
) -> PowerSgdSizes {
    let h = model.hidden;
    let fc1_rows = match model.ffn_type {
        models::FfnType::Gelu => model.ffn(),
        models::FfnType::Swiglu => 2 * model.ffn(),
    };
    let mut sizes = PowerSgdSizes::default();
    sizes.add_matrix(model.qkv_width() / t, h, layers, rank);
    sizes.add_matrix(h, model.q_width() / t, layers, rank);
    sizes.add_matrix(fc1_rows / t, h, layers, rank);
    sizes.add_matrix(h, model.ffn() / t, layers, rank);
    if embedding {
        sizes.add_matrix(model.vocab / t, h, 1, rank);
        if model.learned_positions() {
            sizes.add_matrix(model.seq_len, h, 1, rank);
        }
    }
    if untied_head {
        sizes.add_matrix(model.vocab / t, h, 1, rank);
    }
    sizes.elements = sizes.elements.saturating_add(vectors);
    sizes
}

/// The sizes of what one rank of pipeline stage `stage` reduces, its
/// chunks' layers, embedding and head summed (dense models; the options
/// refuse the rest), at rank `rank`; the 1-D parameters are what is left of
/// the rank's parameters.
pub fn stage_sizes(scenario: &scenario::Scenario, stage: u32, rank: u64) -> PowerSgdSizes {
    let model = &scenario.model;
    let sharding = scenario.layout.sharding();
    let t = u64::from(sharding.tensor_parallel.get());
    let mut sizes = PowerSgdSizes::default();
    for chunk in 0..sharding.chunks.get() {
        let layers = sharding.layers_of_chunk(model.layers, stage, chunk);
        let (embedding, head) = sharding.is_end(sharding.virtual_stage(stage, chunk));
        let untied_head = head && (sharding.virtual_stages() > 1 || !model.tied_embeddings);
        let part = sizes_of(model, t, (layers, embedding, untied_head), 0, rank);
        sizes.elements += part.elements;
        sizes.matrix_elements += part.matrix_elements;
        sizes.p_elements += part.p_elements;
        sizes.q_elements += part.q_elements;
    }
    let all = models::sharding::parameters_on_rank(model, sharding, stage);
    sizes.elements = sizes.elements.max(all);
    sizes
}

/// HBM bytes of the hook's kernels before its all-reduces at
/// `element_bytes` per element: the error added (3·S), the clone (2·S), the
/// uncompressed tensors into one buffer (2·U), M·Q reading the matrices (M).
pub fn kernel_bytes_before(sizes: &PowerSgdSizes, element_bytes: u64) -> f64 {
    let s = sizes.elements as f64;
    let m = sizes.matrix_elements as f64;
    let u = sizes.uncompressed_elements() as f64;
    (3.0 * s + 2.0 * s + 2.0 * u + m) * element_bytes as f64
}

/// HBM bytes of the rest at rank `rank`: Gram-Schmidt over P (3·r′·P),
/// Mᵀ·P reading the matrices (M), P·Qᵀ writing them (M), the new error
/// (3·S) and the uncompressed tensors copied back (2·U).
pub fn kernel_bytes_after(sizes: &PowerSgdSizes, element_bytes: u64, rank: u64) -> f64 {
    let s = sizes.elements as f64;
    let m = sizes.matrix_elements as f64;
    let u = sizes.uncompressed_elements() as f64;
    let p = sizes.p_elements as f64;
    (3.0 * rank as f64 * p + m + m + 3.0 * s + 2.0 * u) * element_bytes as f64
}

/// The hook's kernels' HBM bytes in all.
pub fn kernel_bytes(sizes: &PowerSgdSizes, element_bytes: u64, rank: u64) -> f64 {
    kernel_bytes_before(sizes, element_bytes) + kernel_bytes_after(sizes, element_bytes, rank)
}

/// The cost of one PowerSGD reduction's three all-reduces (its kernels
/// are tasks of their own).
pub fn powersgd_all_reduce(
    sizes: &PowerSgdSizes,
    element_bytes: u64,
    group_size: u32,
    spread: NodeSpread,
    network: &dyn NetworkModel,
) -> WorkCost {
    if group_size < 2 || sizes.elements == 0 {
        return WorkCost {
            duration: SimDuration::ZERO,
            bytes: 0,
            flops: 0.0,
        };
    }
    let wire = [
        sizes.uncompressed_elements(),
        sizes.p_elements,
        sizes.q_elements,
    ]
    .map(|elements| elements.saturating_mul(element_bytes));
    let communication = wire.iter().fold(SimDuration::ZERO, |sum, &bytes| {
        sum + network.all_reduce(bytes, group_size, spread)
    });
    WorkCost {
        duration: communication,
        bytes: wire.iter().sum(),
        flops: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_is_compressed_only_where_the_hook_compresses_it() {
        let mut sizes = PowerSgdSizes::default();
        // 256 × 256 at rank 4: (512)·4·2 = 4096 < 65,536: compressed.
        sizes.add_matrix(256, 256, 1, 4);
        assert_eq!((sizes.p_elements, sizes.q_elements), (1024, 1024));
        // 4 × 1000 at rank 4: r′ = 4, (1004)·4·2 > 4000: sent whole.
        sizes.add_matrix(4, 1000, 1, 4);
        assert_eq!(sizes.elements, 65_536 + 4000);
        assert_eq!(sizes.uncompressed_elements(), 4000);
        assert_eq!(sizes.matrix_elements, 65_536);
    }
}
