//! DeepEP's dispatch and combine (its normal, high-throughput kernels) in
//! closed form.
//!
//! Facts, from the DeepSeek-V3 Technical Report (arXiv 2412.19437v2) Sec.
//! 3.2.2 and deepseek-ai/DeepEP V1 (at 567632d, `deep_ep/buffer.py`,
//! `docs/legacy.md` of the later tree): node-limited routing sends each token
//! to at most [`MAX_NODES_PER_TOKEN`] nodes (DeepSeek-V3's `topk_group` 4 of
//! `n_group` 8 in its Hugging Face config; the groups are the nodes); a token
//! crosses InfiniBand once per target node, to the GPU with the same in-node
//! index, which forwards it over NVLink to each GPU of that node holding one
//! of its experts; a token goes to a GPU once however many of its experts
//! that GPU holds; IB and NVLink transfers are pipelined (warp-specialized
//! channels), so the slower of the two sets the time. The combine sends the
//! same volumes back.
//!
//! The model, for `E` experts over `n` ranks on `N` nodes of `G` ranks, top-k
//! `k`, node limit `M = min(4, N)`, and `bytes` of distinct tokens per rank
//! (each token's hidden state once): under uniform routing a token picks `M`
//! nodes, then its `k` experts uniformly among those nodes' `S = M·E/N`
//! experts, so a unit (node, GPU) holding `e` of them is hit with
//! probability `1 − C(S − e, k) / C(S, k)`. Per token:
//! - distinct nodes hit `D_node = M·(1 − C(S − E/N, k)/C(S, k))`, of which
//!   `D_node·(N − 1)/N` are not the sender's own (each node is equally likely
//!   to be chosen): that many copies over the rank's own NIC rail;
//! - distinct GPUs hit `D_gpu = M·G·(1 − C(S − E/n, k)/C(S, k))`; in each hit
//!   node the entry GPU is itself a target with probability (hit GPUs)/G, so
//!   `D_gpu·(G − 1)/G` copies cross NVLink (the rank forwards, by symmetry,
//!   what it receives).
//!
//! Time: the slower of the IB bytes at the rank's rail rate and the NVLink
//! bytes at the NVLink bus rate, plus one network step (when N > 1) and one
//! NVLink step. Not modeled: the report's FP8 dispatch (the payload is the
//! scenario's), the kernels' own efficiency below line rate (DeepEP V1's
//! measured 43–58 GB/s of a ~50 GB/s NIC at EP16–64), imbalance beyond the
//! busiest rank's volume.

use crate::all_to_all::per_rank_network_bytes_per_s;
use crate::cost_terms::CostTerms;
use crate::shape::{GroupShape, LinkRates};

/// Nodes a token is sent to at most: the report's Sec. 3.2.2 ("each token
/// will be sent to at most 4 nodes").
pub const MAX_NODES_PER_TOKEN: u32 = 4;

/// Probability that none of `k` experts drawn without replacement from `s`
/// land among a unit's `e`: C(s − e, k) / C(s, k).
fn miss_probability(s: u64, e: u64, k: u64) -> f64 {
    if s < e + k {
        return 0.0;
    }
    (0..k).fold(1.0, |p, i| p * (s - e - i) as f64 / (s - i) as f64)
}

/// Per token: (distinct remote nodes reached over IB, copies over NVLink).
pub fn deepep_copies(experts: u64, top_k: u64, group: &GroupShape) -> (f64, f64) {
    let ranks = u64::from(group.ranks.max(1));
    let nodes = u64::from(group.nodes.max(1));
    let per_node = u64::from(group.ranks_per_node.max(1));
    let chosen = nodes.min(u64::from(MAX_NODES_PER_TOKEN));
    let selected = chosen * experts / nodes;
    let k = top_k.min(selected);
    let node_hits = chosen as f64 * (1.0 - miss_probability(selected, experts / nodes, k));
    let gpu_hits =
        (chosen * per_node) as f64 * (1.0 - miss_probability(selected, experts / ranks, k));
    let remote_nodes = node_hits * (nodes - 1) as f64 / nodes as f64;
    let nvlink = gpu_hits * (per_node - 1) as f64 / per_node as f64;
    (remote_nodes, nvlink)
}

/// Latency and transfer terms of one dispatch (or combine) moving
/// `token_bytes` of distinct tokens per rank over `group` (see the module
/// documentation).
pub fn deepep_terms(
    token_bytes: f64,
    experts: u64,
    top_k: u64,
    group: &GroupShape,
    rates: &LinkRates,
) -> CostTerms {
    let (remote_nodes, nvlink_copies) = deepep_copies(experts, top_k, group);
    let network_seconds = if remote_nodes > 0.0 {
        token_bytes * remote_nodes / per_rank_network_bytes_per_s(rates)
    } else {
        0.0
    };
    let nvlink_seconds = if nvlink_copies > 0.0 {
        token_bytes * nvlink_copies / rates.nvlink_bus_bytes_per_s
    } else {
        0.0
    };
    let network_latency = if group.nodes > 1 {
        rates.network_step_ns()
    } else {
        0.0
    };
    CostTerms {
        latency_ns: network_latency + rates.nvlink_step_latency_ns,
        transfer_seconds: network_seconds.max(nvlink_seconds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_expert_per_gpu_inside_one_node_sends_each_copy_but_its_own() {
        // 8 experts on 8 GPUs of one node, top-2: a token reaches 2 GPUs, and
        // each is the sender itself with probability 1/8.
        let (remote, nvlink) = deepep_copies(8, 2, &GroupShape::single_node(8));
        assert_eq!(remote, 0.0);
        assert!((nvlink - 2.0 * 7.0 / 8.0).abs() < 1e-12);
    }

    #[test]
    fn deepseek_v3_on_eight_nodes_reaches_under_four_nodes_per_token() {
        // 256 experts, top-8, 64 ranks on 8 nodes: 4 of 8 nodes chosen, 128
        // experts among them, 32 per node, 4 per GPU.
        let (remote, nvlink) = deepep_copies(256, 8, &GroupShape::new(8, 8));
        let node_miss: f64 = (0..8).map(|i| (96 - i) as f64 / (128 - i) as f64).product();
        let gpu_miss: f64 = (0..8)
            .map(|i| (124 - i) as f64 / (128 - i) as f64)
            .product();
        assert!((remote - 4.0 * (1.0 - node_miss) * 7.0 / 8.0).abs() < 1e-12);
        assert!((nvlink - 32.0 * (1.0 - gpu_miss) * 7.0 / 8.0).abs() < 1e-12);
        assert!(remote < 3.5 && remote > 3.0, "{remote}");
    }
}
