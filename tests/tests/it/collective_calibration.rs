//! The default model against published measurements (shared/HARDWARE.md):
//! `selene` + `a100-80gb` must land near the NCCL all-reduce bus bandwidths
//! measured on DGX A100. Each test prints predicted vs measured.

use profile::Profile;
use sim::collective::*;
use studies::nccl_tests::{format_nccl_tests_table, nccl_tests_table, size_sweep};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn selene_rates() -> LinkRates {
    let topology = topologies::preset("selene").unwrap();
    let profile = Profile::builtin("a100-80gb").unwrap();
    LinkRates::from(&topology, &profile)
}

fn busbw_gb_per_s(bytes: u64, group: GroupShape) -> f64 {
    estimate(
        CollectiveOp::AllReduce,
        bytes,
        &group,
        &selene_rates(),
        None,
    )
    .busbw_bytes_per_s
        / 1e9
}

/// vTrain's measured table (VIA-Research/vTrain), 8 × A100 in one DGX node.
/// Tolerance: 5 % from 64 MiB up, where NCCL's tuner runs Simple and the time is
/// the bus bandwidth's. Below, the model takes NCCL 2.12's own latencies
/// (`tuning.cc`), which are much less than vTrain measured: at 1 MiB the tuner's
/// LL ring costs 10.2 µs + 1 MiB at ¼ of 230 GB/s = 42 µs (43.6 GB/s busbw) against
/// 92.7 µs measured (19.8 GB/s); at 8 MiB its LL128 ring 106 µs against 135 µs
/// (+27 % busbw). Those bounds record that known deviation (the older fit of a
/// 5 µs step to this table was within 20 % at 1 MiB); how vTrain timed its calls
/// (host-side launch and synchronization included or not) is not stated.
#[test]
fn one_dgx_a100_all_reduce_matches_the_vtrain_table() {
    let measured = [
        (MIB, 19.8, 1.25),
        (8 * MIB, 109.0, 0.30),
        (64 * MIB, 203.0, 0.05),
        (256 * MIB, 217.0, 0.05),
        (GIB, 229.0, 0.05),
    ];
    println!("8 x A100, one node, all-reduce busbw (GB/s): size, predicted, measured");
    for (bytes, measured_gb_per_s, tolerance) in measured {
        let predicted = busbw_gb_per_s(bytes, GroupShape::single_node(8));
        println!("{bytes:>11} {predicted:>7.1} {measured_gb_per_s:>7.1}");
        let error = (predicted - measured_gb_per_s).abs() / measured_gb_per_s;
        assert!(
            error <= tolerance,
            "{bytes} B: predicted {predicted:.1} GB/s, measured {measured_gb_per_s}, error {error:.3}"
        );
    }
}

/// NVIDIA/nccl issue 149: ~230 GB/s at ≥ 1 GiB on one node.
#[test]
fn one_dgx_a100_reaches_about_230_gb_per_s_at_large_sizes() {
    let predicted = busbw_gb_per_s(4 * GIB, GroupShape::single_node(8));
    println!("8 x A100 4 GiB all-reduce: predicted {predicted:.1} GB/s, measured ~230");
    assert!((predicted - 230.0).abs() / 230.0 <= 0.02, "{predicted}");
}

/// NVIDIA/nccl issue 812: ~192 GB/s across DGX A100 nodes (8 HDR NICs each).
/// The ring's bus bandwidth is 8 × 24 GB/s; NCCL 2.12's latency of a Simple ring
/// across nodes grows with the ring (28 µs per network hop, 3.4 per NVLink hop,
/// × 1.9 for its "plateau"), so "large" means larger as the group grows: within
/// 5 % at 1 GiB on 2 nodes and at 8 GiB on 16 nodes; within 8 % at 1 GiB on 4
/// nodes (0.79 ms of latency: 179 GB/s); within 10 % at 8 GiB on 64 nodes (where
/// the tuner picks the tree: ~175 GB/s).
#[test]
fn across_dgx_a100_nodes_all_reduce_reaches_about_192_gb_per_s() {
    println!("all-reduce busbw across nodes (GB/s): nodes, size, predicted, measured ~192");
    for (nodes, bytes, tolerance) in [
        (2, GIB, 0.05),
        (4, GIB, 0.08),
        (16, 8 * GIB, 0.05),
        (64, 8 * GIB, 0.10),
    ] {
        let predicted = busbw_gb_per_s(bytes, GroupShape::new(nodes, 8));
        println!("{nodes:>5} {bytes:>11} {predicted:>7.1}");
        assert!(
            (predicted - 192.0).abs() / 192.0 <= tolerance,
            "{nodes} nodes, {bytes} B: {predicted}"
        );
    }
}

/// A data-parallel group with t = 8 has one rank per node, which owns one rail:
/// its ring runs at one NIC's 24 GB/s.
#[test]
fn one_rank_per_node_runs_at_one_rail() {
    let predicted = busbw_gb_per_s(GIB, GroupShape::new(8, 1));
    println!("8 nodes x 1 rank, 1 GiB all-reduce: predicted {predicted:.1} GB/s (one rail: 24)");
    assert!(predicted <= 24.0 && predicted > 23.0, "{predicted}");
}

/// Prints the predicted tables a user would compare with nccl-tests (run with
/// `--nocapture`); asserts the bandwidth never decreases with size.
#[test]
fn predicted_tables_for_one_node_and_sixteen_nodes() {
    let sizes = size_sweep(MIB, GIB, 2);
    for group in [GroupShape::single_node(8), GroupShape::new(16, 8)] {
        let rows = nccl_tests_table(
            CollectiveOp::AllReduce,
            &sizes,
            &group,
            &selene_rates(),
            None,
        );
        println!(
            "{}",
            format_nccl_tests_table(CollectiveOp::AllReduce, &group, &rows)
        );
        for pair in rows.windows(2) {
            assert!(
                pair[1].estimate.busbw_bytes_per_s >= pair[0].estimate.busbw_bytes_per_s * 0.97
            );
        }
    }
}
