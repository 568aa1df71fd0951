//! Predicted nccl-tests tables (`all_reduce_perf -b 1M -e 1G -f 2` and friends):
//! the rows a `clustersim collective` command prints, in nccl-tests' columns, so
//! a prediction can be laid next to a real run.

use sim::collective::{estimate, CollectiveEstimate};
use sim::collective::{Algorithm, CollectiveOp, GroupShape, LinkRates};
use std::fmt::Write;

/// Element size of nccl-tests' default datatype (`float`).
pub const FLOAT_BYTES: u64 = 4;

/// One row of a predicted nccl-tests table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NcclTestsRow {
    /// nccl-tests "size": the buffer per rank, in bytes.
    pub size_bytes: u64,
    /// Elements of `float` in that buffer (size ÷ 4).
    pub count: u64,
    pub estimate: CollectiveEstimate,
}

/// One row per size, each with [`estimate`]'s choice (or the forced algorithm).
pub fn nccl_tests_table(
    op: CollectiveOp,
    sizes_bytes: &[u64],
    group: &GroupShape,
    rates: &LinkRates,
    algorithm: Option<Algorithm>,
) -> Vec<NcclTestsRow> {
    sizes_bytes
        .iter()
        .map(|&size_bytes| NcclTestsRow {
            size_bytes,
            count: size_bytes / FLOAT_BYTES,
            estimate: estimate(op, size_bytes, group, rates, algorithm),
        })
        .collect()
}

/// Sizes from `min_bytes` to `max_bytes` multiplying by `factor` (nccl-tests `-b -e -f`).
pub fn size_sweep(min_bytes: u64, max_bytes: u64, factor: u64) -> Vec<u64> {
    let mut sizes = Vec::new();
    let mut size = min_bytes.max(1);
    while size <= max_bytes {
        sizes.push(size);
        match size.checked_mul(factor.max(2)) {
            Some(next) => size = next,
            None => break,
        }
    }
    sizes
}

/// Formats rows with nccl-tests' columns (size, count, type, time in µs, algbw
/// and busbw in GB/s = 1e9 B/s) plus the algorithm and protocol NCCL's tuner
/// picks and the latency term of the time (µs).
pub fn format_nccl_tests_table(
    op: CollectiveOp,
    group: &GroupShape,
    rows: &[NcclTestsRow],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {} predicted by clustersim: {} ranks on {} node(s), {} per node",
        op.name(),
        group.ranks,
        group.nodes,
        group.ranks_per_node
    );
    let _ = writeln!(
        out,
        "# {:>10} {:>12} {:>8} {:>10} {:>10} {:>10} {:>6} {:>6} {:>8}",
        "size", "count", "type", "time", "algbw", "busbw", "algo", "proto", "latency"
    );
    let _ = writeln!(
        out,
        "# {:>10} {:>12} {:>8} {:>10} {:>10} {:>10} {:>6} {:>6} {:>8}",
        "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)", "", "", "(us)"
    );
    for row in rows {
        let e = &row.estimate;
        let _ = writeln!(
            out,
            "  {:>10} {:>12} {:>8} {:>10.2} {:>10.2} {:>10.2} {:>6} {:>6} {:>8.2}",
            row.size_bytes,
            row.count,
            "float",
            e.duration.as_nanos() as f64 / 1e3,
            e.algbw_bytes_per_s / 1e9,
            e.busbw_bytes_per_s / 1e9,
            // An all-to-all is grouped send/recv to every peer, no ring.
            if op == CollectiveOp::AllToAll {
                "p2p"
            } else {
                e.algorithm.name()
            },
            e.protocol.name(),
            e.latency_ns / 1e3
        );
    }
    out
}

/// The rows as `collective --json` prints them: the group, then one object
/// per size with the time in integer nanoseconds and the bandwidths in
/// bytes per second (the same names and units as `simulate --json`).
pub fn nccl_tests_json(
    op: CollectiveOp,
    group: &GroupShape,
    rows: &[NcclTestsRow],
) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let e = &row.estimate;
            serde_json::json!({
                "size_bytes": row.size_bytes,
                "count": row.count,
                "type": "float",
                "time_ns": e.duration.as_nanos(),
                "algbw_bytes_per_s": e.algbw_bytes_per_s,
                "busbw_bytes_per_s": e.busbw_bytes_per_s,
                "algorithm": if op == CollectiveOp::AllToAll { "p2p" } else { e.algorithm.name() },
                "protocol": e.protocol.name(),
                "latency_ns": e.latency_ns,
            })
        })
        .collect();
    serde_json::json!({
        "op": op.name(),
        "gpus": group.ranks,
        "nodes": group.nodes,
        "gpus_per_node": group.ranks_per_node,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_sweep_doubles_like_nccl_tests() {
        assert_eq!(
            size_sweep(1 << 20, 8 << 20, 2),
            vec![1 << 20, 2 << 20, 4 << 20, 8 << 20]
        );
        assert_eq!(size_sweep(8, 8, 2), vec![8]);
    }

    #[test]
    fn table_has_one_row_per_size_and_the_nccl_tests_columns() {
        let rates = LinkRates {
            nvlink_bus_bytes_per_s: 100e9,
            nvlink_step_latency_ns: 1000.0,
            nic_bytes_per_s: 10e9,
            nics_per_node: 8,
            gpus_per_node: 8,
            network_step_latency_ns: 3000.0,
            compute_capability: 80,
            intra_node_nvlink: true,
            amd_host_cpu: false,
            nccl: sim::collective::NcclVersion::V2_12,
            fabric_step_latency_ns: 0.0,
        };
        let group = GroupShape::single_node(8);
        let rows = nccl_tests_table(
            CollectiveOp::AllReduce,
            &[1_000_100, 4 << 20],
            &group,
            &rates,
            None,
        );
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].count, 250_025);
        let text = format_nccl_tests_table(CollectiveOp::AllReduce, &group, &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        for column in [
            "size", "count", "type", "time", "algbw", "busbw", "proto", "latency",
        ] {
            assert!(lines[1].contains(column), "{text}");
        }
        // Ring LL128: 10 + 14 × 1.9 = 36.6 µs + 1 000 100 × 14 ÷ (8 × 92 GB/s) = 19 023.73 ns:
        // 55 624 ns; algbw 1 000 100 B ÷ 55.624 µs = 17.98 GB/s; busbw × 1.75 = 31.46.
        let first: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            first,
            ["1000100", "250025", "float", "55.62", "17.98", "31.46", "ring", "LL128", "36.60"]
        );
    }
}
