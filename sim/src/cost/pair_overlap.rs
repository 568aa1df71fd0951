//! DualPipe's overlapped F&B pair, as costs: a pass cut into pieces at its
//! expert all-to-alls, the SMs an all-to-all holds from the computation
//! beside it, and DeepEP's dispatch/combine duration.
//!
//! The DeepSeek-V3 report (arXiv 2412.19437v2, Sec. 3.2.1) divides each
//! chunk into attention, all-to-all dispatch, MLP and all-to-all combine, and
//! pairs a forward chunk with a backward chunk so that one's all-to-alls run
//! while the other computes; deepseek-ai/DualPipe (3da1bbe, README) leaves
//! the pair's `overlapped_forward_backward` to the model. A pass is cut here
//! before each of its [`Step::ExpertAllToAll`]s: piece 0 runs up to the
//! first all-to-all, piece j (j ≥ 1) starts with the j-th one (its
//! communication, [`all_to_all_of_piece`]) and runs the computation that
//! needs it. In a forward MoE layer that is attention … permute | dispatch,
//! experts | combine, unpermute, shared experts, next layer …; a backward
//! mirrors it. Lowering (`lowering/pair_overlap.rs`) interleaves the two
//! halves' pieces.
//!
//! While an all-to-all runs beside a piece of computation it holds
//! [`communication_sms`] of the GPU's SMs, and the computation progresses at
//! (SMs − held)/SMs of its rate, as `comm_sms.rs` charges an overlapped
//! tensor all-reduce: a piece of C beside an all-to-all of A takes
//! C + share·min(A, C/(1 − share)) ([`stretched`]).

use super::comm_sms::intra_node_collective_sm_share;
use collectives::{deepep, GroupShape, LinkRates};
use models::ops::Step;
use scenario::moe_comm::MoeDispatcher;
use scenario::Scenario;
use timeline::time::SimDuration;

/// Segments at or above this (and below [`taskgraph::task_graph::WHOLE_PASS`])
/// name all-to-all pieces: `PIECE_BASE + j` is piece j.
pub const PIECE_BASE: u16 = 0x8000;

/// SMs DeepSeek-V3's dispatch and combine kernels hold: the report's Sec.
/// 3.2.2 ("only 20 SMs are sufficient to fully utilize the bandwidths of IB
/// and NVLink"; 10 communication channels of 2 warps' roles) and DeepEP V1's
/// default (`deep_ep/buffer.py` at 567632d: `Buffer.num_sms = 20`).
pub const DEEPEP_SMS: u32 = 20;

/// The segment of piece `piece` (see the module documentation).
pub fn piece_segment(piece: u16) -> u16 {
    assert!(piece < taskgraph::task_graph::WHOLE_PASS - PIECE_BASE);
    PIECE_BASE + piece
}

/// The piece a segment names, if it names one.
pub fn piece_of(segment: u16) -> Option<u16> {
    (PIECE_BASE..taskgraph::task_graph::WHOLE_PASS)
        .contains(&segment)
        .then(|| segment - PIECE_BASE)
}

/// Whether a segment is the first of its pass (host segment 0, piece 0, or
/// the whole pass).
pub fn is_first_segment(segment: u16) -> bool {
    segment == 0 || segment == PIECE_BASE || segment == taskgraph::task_graph::WHOLE_PASS
}

/// The steps of piece `piece` of a pass, its host synchronizations dropped.
pub fn piece_steps(steps: Vec<Step>, piece: u16) -> Vec<Step> {
    let mut index = 0u16;
    let mut out = Vec::new();
    for step in steps {
        if matches!(step, Step::ExpertAllToAll { .. }) {
            index += 1;
        }
        if index == piece && !matches!(step, Step::HostSync) {
            out.push(step);
        }
    }
    out
}

/// Per piece of a pass, whether the host synchronizes inside it (the MoE
/// dispatcher's device-to-host read: the host issues nothing after it until
/// the GPU has run the piece). As many entries as pieces: all-to-alls + 1.
pub fn pieces_with_host_sync(steps: &[Step]) -> Vec<bool> {
    let mut pieces = vec![false];
    for step in steps {
        match step {
            Step::ExpertAllToAll { .. } => pieces.push(false),
            Step::HostSync => *pieces.last_mut().expect("one piece at least") = true,
            _ => {}
        }
    }
    pieces
}

/// The fraction of the GPU's SMs the dispatcher's all-to-all holds while it
/// runs: DeepEP's [`DEEPEP_SMS`], or NCCL's collective channels
/// (`comm_sms.rs`; NCCL's point-to-point all-to-all is taken to hold as many).
pub fn communication_sms(scenario: &Scenario) -> f64 {
    match scenario.options.moe_dispatcher {
        MoeDispatcher::Deepep => {
            let sms = scenario.topology.gpu.sm_count;
            if sms == 0 {
                0.0
            } else {
                (f64::from(DEEPEP_SMS) / f64::from(sms)).min(1.0)
            }
        }
        MoeDispatcher::Nccl => intra_node_collective_sm_share(&scenario.topology),
    }
}

/// A computation of `compute` run beside a communication of `beside` that
/// holds `share` of the SMs from its start: the computation progresses at
/// 1 − share while both run, at full rate after.
pub fn stretched(compute: SimDuration, beside: SimDuration, share: f64) -> SimDuration {
    if share <= 0.0 || compute == SimDuration::ZERO {
        return compute;
    }
    if share >= 1.0 {
        return SimDuration(beside.0.saturating_add(compute.0));
    }
    let c = compute.0 as f64;
    let a = beside.0 as f64;
    let extra = (share * a.min(c / (1.0 - share))).ceil() as u64;
    SimDuration(compute.0.saturating_add(extra))
}

/// DeepEP's dispatch or combine of one MoE layer whose NCCL payload is
/// `payload` bytes (the busiest rank's routed token copies, k per token),
/// over `group_size` ranks on `nodes` nodes ([`deepep::deepep_terms`] on
/// the payload's distinct tokens, payload/k).
pub fn deepep_duration(
    scenario: &Scenario,
    payload: u64,
    group_size: u32,
    nodes: u32,
) -> SimDuration {
    let Some(moe) = scenario.model.moe.as_ref() else {
        return SimDuration::ZERO;
    };
    if group_size <= 1 || payload == 0 {
        return SimDuration::ZERO;
    }
    let nodes = nodes.max(1);
    let group = GroupShape::new(nodes, group_size.div_ceil(nodes));
    let rates = LinkRates::from(&scenario.topology, &scenario.profile);
    let token_bytes = payload as f64 / moe.top_k.max(1) as f64;
    let terms = deepep::deepep_terms(token_bytes, moe.experts, moe.top_k, &group, &rates);
    SimDuration::from_seconds_ceil(terms.total_seconds())
}

/// One dispatch or combine of `payload` bytes (the NCCL all-to-all's
/// per-rank buffer) by the scenario's dispatcher.
pub fn expert_all_to_all(
    scenario: &Scenario,
    network: &dyn super::NetworkModel,
    payload: u64,
    group_size: u32,
    nodes: u32,
) -> SimDuration {
    match scenario.options.moe_dispatcher {
        MoeDispatcher::Nccl => network.all_to_all(payload, group_size, nodes),
        MoeDispatcher::Deepep => deepep_duration(scenario, payload, group_size, nodes),
    }
}

/// `simulate --explain`'s lines on the dispatcher and the pair overlap
/// (None for a model without experts or ep 1).
pub fn explain(scenario: &Scenario) -> Option<String> {
    let moe = scenario.model.moe.as_ref()?;
    let ep = scenario.layout.expert_parallel.get();
    if ep <= 1 {
        return None;
    }
    let mut text = String::new();
    if scenario.options.moe_dispatcher == MoeDispatcher::Deepep {
        let per_node = scenario.topology.node.gpus_per_node.clamp(1, ep);
        let group = GroupShape::new(ep.div_ceil(per_node), per_node);
        let (remote, nvlink) = deepep::deepep_copies(moe.experts, moe.top_k, &group);
        text.push_str(&format!(
            "\nMoE dispatcher: DeepEP (node-limited routing, at most {} nodes per token): over {} ranks on {} nodes each token crosses InfiniBand {remote:.2} times (once per remote node it reaches, to the same-index GPU) and NVLink {nvlink:.2} times (forwarded to each other GPU holding its experts), against {} routed copies under NCCL's all-to-all; the slower link sets the time\n",
            deepep::MAX_NODES_PER_TOKEN,
            group.ranks,
            group.nodes,
            moe.top_k
        ));
    }
    if scenario.options.pair_overlap {
        text.push_str(&format!(
            "\nF&B pairs overlapped (DeepSeek-V3 Sec. 3.2.1): each pair's forward and backward are cut at their all-to-alls and interleaved on the compute stream (F0 B0 F1 B1 …), the all-to-alls on the ep stream, each running beside the other half's next piece, which gets {:.1}% of the SMs while it runs ({} dispatcher); a pair whose backward is bucketed for gradient reduction, or whose forward waits for the overlapped parameter gather, runs back to back\n",
            100.0 * (1.0 - communication_sms(scenario)),
            scenario.options.moe_dispatcher.name()
        ));
    }
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cut_before_each_all_to_all() {
        let kernel = |name| Step::memory(models::ops::KernelRole::Forward, name, 1.0);
        let a2a = Step::ExpertAllToAll {
            bytes: 8,
            expert_tensor_bytes: 0,
        };
        let steps = vec![
            kernel("attention"),
            Step::HostSync,
            a2a.clone(),
            kernel("experts"),
            a2a.clone(),
            kernel("unpermute"),
        ];
        assert_eq!(pieces_with_host_sync(&steps), [true, false, false]);
        assert_eq!(piece_steps(steps.clone(), 0), [kernel("attention")]);
        assert_eq!(
            piece_steps(steps.clone(), 1),
            [a2a.clone(), kernel("experts")]
        );
        assert_eq!(piece_steps(steps.clone(), 2), [a2a, kernel("unpermute")]);
        assert!(piece_steps(steps, 3).is_empty());
        assert_eq!(piece_of(piece_segment(2)), Some(2));
        assert_eq!(piece_of(taskgraph::task_graph::WHOLE_PASS), None);
        assert_eq!(piece_of(3), None);
    }

    #[test]
    fn a_computation_beside_communication_runs_on_the_sms_left() {
        let share = 20.0 / 132.0;
        // Longer than the communication: slowed only while it runs.
        let long = stretched(SimDuration(1_000_000), SimDuration(300_000), share);
        assert_eq!(long.0, 1_000_000 + (share * 300_000.0f64).ceil() as u64);
        // Shorter: slowed throughout.
        let short = stretched(SimDuration(100_000), SimDuration(300_000), share);
        assert!((short.0 as f64 - 100_000.0 / (1.0 - share)).abs() <= 1.0);
        assert_eq!(
            stretched(SimDuration(5), SimDuration::ZERO, share),
            SimDuration(5)
        );
    }
}
