//! Closed-form cost of one collective: the ring's bandwidth and steps, and
//! [`estimate`], which runs the (algorithm, protocol) pair NCCL's tuner picks
//! (see the crate documentation and [`crate::protocol`]).

use super::cost_terms::{ring_steps, ring_terms, CostTerms};
use super::protocol::{tune, Protocol};
use super::shape::{Algorithm, CollectiveOp, GroupShape, LinkRates};
use timeline::time::SimDuration;

/// What one collective costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CollectiveEstimate {
    /// Wall time of the collective, rounded up to whole nanoseconds once.
    pub duration: SimDuration,
    /// The algorithm the time is for (the requested one, or the tuner's choice).
    pub algorithm: Algorithm,
    /// The protocol the tuner picked (Simple for send/recv).
    pub protocol: Protocol,
    /// The latency term of the time (fixed per-call and per-hop costs), before rounding.
    pub latency_ns: f64,
    /// nccl-tests' algorithm bandwidth: size ÷ time (0 when nothing is sent).
    pub algbw_bytes_per_s: f64,
    /// nccl-tests' bus bandwidth: algbw × the operation's bus factor.
    pub busbw_bytes_per_s: f64,
}

/// Network hops on one chunk's path through `algorithm`, each of which pays
/// the declared fabric's path latency ([`LinkRates::fabric_step_latency_ns`]):
/// a ring's inter-node steps ([`ring_steps`]: 2(nodes − 1) for an all-reduce,
/// nodes − 1 for reduce-scatter, all-gather and broadcast), a tree's
/// 2·⌊log2 nodes⌋ (up the double binary tree and down again, the count
/// NCCL's tree latency uses).
///
/// Why the fabric's latency is added to the tuned pair's time rather than
/// replacing NCCL's network latency or entering the tuner: NCCL's tuner
/// costs a network hop at `hwLat[NET]` unless the network plugin reports a
/// latency (`interLat = graphs[a]->latencyInter ? … : hwLat[NCCL_HW_NET]`,
/// `src/graph/tuning.cc`), and its IB verbs transport — which runs both
/// InfiniBand and RoCE — reports none (`props->latency = 0; // Not set`,
/// `src/transport/net_ib.cc`). So NCCL chooses the same pair on either
/// fabric (the choice here stays NCCL's), and `hwLat[NET]` is a per-hop
/// constant that does not change with the NICs and switches a hop crosses;
/// the fabric's own NIC and switch latency is added to each network hop on
/// top of it. `hwLat[NET]` was set by NVIDIA on its own InfiniBand systems,
/// so part of an InfiniBand path's latency may already be inside it: with a
/// declared kind the absolute time is an upper bound by at most one path
/// latency per network hop (1.65 µs on `dgx-h100-ib`), while the difference
/// between two fabrics is exact. A topology without a kind adds nothing.
/// Under `--contention` the added latency stays in the flow plan's tail
/// (closed-form time minus the flows' transfer), and an untuned pipeline
/// send's tail is [`LinkRates::network_step_ns`].
pub fn fabric_hops(op: CollectiveOp, algorithm: Algorithm, group: &GroupShape) -> u64 {
    if group.nodes <= 1 {
        return 0;
    }
    match algorithm {
        Algorithm::Ring => ring_steps(op, group).1,
        Algorithm::Tree => 2 * u64::from(group.nodes.ilog2()),
    }
}

/// Cost of `op` on `bytes` (nccl-tests' "size": the buffer per rank; for
/// all-gather/reduce-scatter the full, gathered buffer) over `group`.
///
/// Collectives run the (algorithm, protocol) pair NCCL's tuner picks
/// ([`tune`]) and take that pair's modeled time; `algorithm: Some` restricts the
/// choice to that algorithm, except that a tree is only defined for all-reduce (as
/// in NCCL), so other operations run as rings and say so in the result. A send/recv
/// is not tuned by NCCL: it runs Simple, one hop of [`ring_terms`]; an all-to-all
/// is point-to-point too ([`crate::all_to_all`], reported as a Simple ring).
/// A group of one rank, or zero bytes, costs nothing.
pub fn estimate(
    op: CollectiveOp,
    bytes: u64,
    group: &GroupShape,
    rates: &LinkRates,
    algorithm: Option<Algorithm>,
) -> CollectiveEstimate {
    let forced = match algorithm {
        Some(Algorithm::Tree) if op != CollectiveOp::AllReduce => Some(Algorithm::Ring),
        other => other,
    };
    if group.ranks <= 1 || bytes == 0 {
        return CollectiveEstimate {
            duration: SimDuration::ZERO,
            algorithm: forced.unwrap_or(Algorithm::Ring),
            protocol: Protocol::Simple,
            latency_ns: 0.0,
            algbw_bytes_per_s: 0.0,
            busbw_bytes_per_s: 0.0,
        };
    }
    let untuned = if op == CollectiveOp::AllToAll {
        crate::all_to_all::all_to_all_terms(bytes, group, rates)
    } else {
        ring_terms(op, bytes, group, rates)
    };
    let (algorithm, protocol, terms) = match tune(op, bytes, group, rates, forced) {
        Some((algorithm, protocol, tuned)) => {
            let fabric_ns = fabric_hops(op, algorithm, group) as f64 * rates.fabric_step_latency_ns;
            let terms = CostTerms {
                latency_ns: tuned.latency_ns + fabric_ns,
                ..tuned
            };
            (algorithm, protocol, terms)
        }
        None => (Algorithm::Ring, Protocol::Simple, untuned),
    };
    let duration = SimDuration::from_seconds_ceil(terms.total_seconds());
    let algbw_bytes_per_s = bytes as f64 / duration.as_seconds();
    CollectiveEstimate {
        duration,
        algorithm,
        protocol,
        latency_ns: terms.latency_ns,
        algbw_bytes_per_s,
        busbw_bytes_per_s: algbw_bytes_per_s * op.bus_factor(group.ranks),
    }
}

/// The algorithm NCCL's tuner runs `op` of `bytes` with ([`tune`]; a ring for
/// send/recv and single ranks).
pub fn choose_algorithm(
    op: CollectiveOp,
    bytes: u64,
    group: &GroupShape,
    rates: &LinkRates,
) -> Algorithm {
    tune(op, bytes, group, rates, None).map_or(Algorithm::Ring, |(a, _, _)| a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost_terms::ring_bus_bytes_per_s;

    /// Round numbers: 100 GB/s NVLink bus, 10 GB/s NICs, 1 µs / 3 µs steps, an
    /// Ampere GPU (LL128 on, the 235 GB/s cap) on NVLink, Intel hosts.
    pub(crate) fn round_rates() -> LinkRates {
        LinkRates {
            nvlink_bus_bytes_per_s: 100e9,
            nvlink_step_latency_ns: 1000.0,
            nic_bytes_per_s: 10e9,
            nics_per_node: 8,
            gpus_per_node: 8,
            network_step_latency_ns: 3000.0,
            compute_capability: 80,
            intra_node_nvlink: true,
            amd_host_cpu: false,
            nccl: crate::version::NcclVersion::V2_12,
            fabric_step_latency_ns: 0.0,
        }
    }

    fn ring_ns(op: CollectiveOp, bytes: u64, group: GroupShape) -> u64 {
        SimDuration::from_seconds_ceil(
            ring_terms(op, bytes, &group, &round_rates()).total_seconds(),
        )
        .as_nanos()
    }

    #[test]
    fn ring_formulas_inside_a_node_are_exact_to_the_nanosecond() {
        let node8 = GroupShape::single_node(8);
        // Sizes are chosen so that no exact result is a whole number of ns (f64
        // noise on an integer could round either way; see time.rs).
        // 14 steps × 1 µs + 1.75 × 1 000 100 B ÷ 100 GB/s = 14 000 + 17 501.75 ns.
        assert_eq!(ring_ns(CollectiveOp::AllReduce, 1_000_100, node8), 31_502);
        // 7 steps + 0.875 × 1 000 100 ÷ 100e9 = 7 000 + 8 750.875 ns.
        assert_eq!(ring_ns(CollectiveOp::AllGather, 1_000_100, node8), 15_751);
        // Pipelined chain: 7 steps + 1 000 050 ÷ 100e9 = 7 000 + 10 000.5 ns.
        assert_eq!(ring_ns(CollectiveOp::Broadcast, 1_000_050, node8), 17_001);
    }

    #[test]
    fn send_recv_is_one_simple_hop_at_the_profile_step_latency() {
        // One hop: 1 µs + 10 000.5 ns.
        let pair = GroupShape::single_node(2);
        let e = estimate(
            CollectiveOp::SendRecv,
            1_000_050,
            &pair,
            &round_rates(),
            None,
        );
        assert_eq!(e.duration.as_nanos(), 11_001);
        assert_eq!(
            (e.algorithm, e.protocol),
            (Algorithm::Ring, Protocol::Simple)
        );
        assert_eq!(e.latency_ns, 1000.0);
        // Between nodes: one network step over one rail: 3 000 + 100 000.3 ns.
        let pair = GroupShape::new(2, 1);
        let e = estimate(
            CollectiveOp::SendRecv,
            1_000_003,
            &pair,
            &round_rates(),
            None,
        );
        assert_eq!(e.duration.as_nanos(), 103_001);
    }

    #[test]
    fn ring_bandwidth_across_nodes_uses_rails() {
        // 2 nodes × 8: bus bw min(100, 8 × 10) = 80 GB/s; one rank per node: its own rail.
        assert_eq!(
            ring_bus_bytes_per_s(&GroupShape::new(2, 8), &round_rates()),
            80e9
        );
        assert_eq!(
            ring_bus_bytes_per_s(&GroupShape::new(4, 1), &round_rates()),
            10e9
        );
    }

    #[test]
    fn estimate_runs_the_tuned_pair_and_reports_its_latency_term() {
        let rates = round_rates();
        let node8 = GroupShape::single_node(8);
        let run = |bytes| estimate(CollectiveOp::AllReduce, bytes, &node8, &rates, None);
        // Ring LL: 3.6 + 14 × 0.47 = 10.18 µs; 100 001 B × 14 ÷ (8 × 25 GB/s) = 7 000.07 ns.
        let small = run(100_001);
        assert_eq!(
            (small.algorithm, small.protocol),
            (Algorithm::Ring, Protocol::Ll)
        );
        assert_eq!(small.duration.as_nanos(), 17_181);
        assert!((small.latency_ns - 10_180.0).abs() < 1e-6);
        // Ring LL128: 10 + 14 × 1.9 = 36.6 µs; 4 000 001 × 14 ÷ (8 × 92 GB/s) = 76 086.98 ns.
        let medium = run(4_000_001);
        assert_eq!(
            (medium.algorithm, medium.protocol),
            (Algorithm::Ring, Protocol::Ll128)
        );
        assert_eq!(medium.duration.as_nanos(), 112_687);
        // Ring Simple: 8.4 + 14 × 3.4 = 56 µs; 64 000 001 × 1.75 ÷ 100 GB/s = 1 120 000.02 ns.
        let large = run(64_000_001);
        assert_eq!(
            (large.algorithm, large.protocol),
            (Algorithm::Ring, Protocol::Simple)
        );
        assert_eq!(large.duration.as_nanos(), 1_176_001);
        assert_eq!(
            large.algbw_bytes_per_s,
            64_000_001.0 / large.duration.as_seconds()
        );
        assert_eq!(large.busbw_bytes_per_s, large.algbw_bytes_per_s * 1.75);
        // An all-gather's LL ring in one node gets ⅓ of the bus, 33.3 GB/s × 8/7:
        // 3.6 + 7 × 0.47 = 6.89 µs + 100 001 × 7 ÷ (8 × 33.3e9) = 2 625.03 ns.
        let gather = estimate(CollectiveOp::AllGather, 100_001, &node8, &rates, None);
        assert_eq!(gather.protocol, Protocol::Ll);
        assert_eq!(gather.duration.as_nanos(), 9_516);
    }

    #[test]
    fn forcing_an_algorithm_restricts_the_tuner_to_it() {
        let rates = round_rates();
        let group = GroupShape::new(16, 8);
        let choose = |bytes| estimate(CollectiveOp::AllReduce, bytes, &group, &rates, None);
        assert_eq!(choose(64 << 10).algorithm, Algorithm::Tree);
        assert_eq!(choose(4 << 30).algorithm, Algorithm::Ring);
        assert_eq!(
            choose_algorithm(CollectiveOp::AllReduce, 64 << 10, &group, &rates),
            Algorithm::Tree
        );
        // Forcing a tree onto an all-gather runs a ring, as NCCL does.
        let forced = estimate(
            CollectiveOp::AllGather,
            1024,
            &group,
            &rates,
            Some(Algorithm::Tree),
        );
        assert_eq!(forced.algorithm, Algorithm::Ring);
        // The override wins over the tuner, and is slower where the tuner disagrees.
        let ring = estimate(
            CollectiveOp::AllReduce,
            64 << 10,
            &group,
            &rates,
            Some(Algorithm::Ring),
        );
        assert_eq!(ring.algorithm, Algorithm::Ring);
        assert!(ring.duration > choose(64 << 10).duration);
    }

    #[test]
    fn one_rank_or_zero_bytes_costs_nothing() {
        let rates = round_rates();
        let one = estimate(
            CollectiveOp::AllReduce,
            1 << 20,
            &GroupShape::single_node(1),
            &rates,
            None,
        );
        assert_eq!(one.duration, SimDuration::ZERO);
        let empty = estimate(
            CollectiveOp::AllReduce,
            0,
            &GroupShape::new(2, 8),
            &rates,
            None,
        );
        assert_eq!(empty.duration, SimDuration::ZERO);
        assert_eq!(empty.busbw_bytes_per_s, 0.0);
    }
}
