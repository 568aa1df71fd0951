//! A fabric's `kind` and a node without NVLink through the binary: `--explain`
//! names the latency added per network hop (only for topologies that declare
//! one), `collective` costs RoCE above InfiniBand by exactly that difference,
//! and a bad kind or an absurd latency is one message with exit code 2.

use crate::common;
use common::{clustersim, text};

fn explain(topology: &str) -> String {
    let output = clustersim(&[
        "simulate",
        "--model",
        "llama3-8b",
        "--topology",
        topology,
        "--tp",
        "8",
        "--pp",
        "1",
        "--dp",
        "2",
        "--global-batch",
        "4",
        "--explain",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    text(&output.stdout)
}

#[test]
fn explain_names_the_fabric_latency_only_where_a_kind_is_declared() {
    let roce = explain("dgx-h100-roce");
    assert!(
        roce.contains("fabric roce_v2: every network hop also pays 2100 ns (2 NICs × 600 ns + 3 switch hops × 300 ns"),
        "{roce}"
    );
    let ib = explain("dgx-h100-ib");
    assert!(
        ib.contains("fabric infiniband: every network hop also pays 1650 ns (2 NICs × 600 ns + 3 switch hops × 150 ns"),
        "{ib}"
    );
    let superpod = explain("dgx-h100-superpod");
    assert!(
        !superpod.contains("every network hop also pays"),
        "{superpod}"
    );
    assert!(!superpod.contains("node without NVLink"), "{superpod}");
    let pcie = explain("h100-pcie-cluster");
    assert!(
        pcie.contains("node without NVLink: the 8 GPUs of a node talk over PCIe (Gen5 x16, 63.0 GB/s per direction line rate)"),
        "{pcie}"
    );
}

/// The latency column (µs) of `clustersim collective` rows on `topology`:
/// an all-reduce over 16 GPUs = 2 nodes of 8, 1 KiB to 1 MiB.
fn all_reduce_latencies_us(topology: &str) -> Vec<(String, f64)> {
    let output = clustersim(&[
        "collective",
        "--op",
        "all_reduce",
        "--gpus",
        "16",
        "--topology",
        topology,
        "--min-bytes",
        "1K",
        "--max-bytes",
        "1M",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    text(&output.stdout)
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let columns: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(columns.len(), 9, "{line}");
            (
                format!("{} {}", columns[6], columns[7]),
                columns[8].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn collective_costs_roce_above_infiniband_by_the_latency_difference() {
    let ib = all_reduce_latencies_us("dgx-h100-ib");
    let roce = all_reduce_latencies_us("dgx-h100-roce");
    assert_eq!(ib.len(), roce.len());
    assert!(ib.len() >= 10);
    // 2 nodes: a ring or a tree crosses the network twice, 2 × 450 ns =
    // 0.90 µs more on RoCE at every size, with the same (algorithm, protocol).
    for ((ib_pair, ib_us), (roce_pair, roce_us)) in ib.iter().zip(&roce) {
        assert_eq!(ib_pair, roce_pair);
        assert!(
            (roce_us - ib_us - 0.9).abs() < 0.011,
            "{ib_us} vs {roce_us}"
        );
    }
}

fn refused(topology: serde_json::Value, name: &str) -> String {
    let path = std::env::temp_dir().join(format!(
        "clustersim-fabric-{name}-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, topology.to_string()).unwrap();
    let output = clustersim(&[
        "simulate",
        "--model",
        "tiny",
        "--topology",
        path.to_str().unwrap(),
        "--tp",
        "1",
        "--pp",
        "1",
        "--dp",
        "16",
        "--global-batch",
        "16",
    ]);
    std::fs::remove_file(&path).ok();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stdout));
    text(&output.stderr)
}

#[test]
fn a_bad_kind_or_an_absurd_latency_is_one_message_with_exit_2() {
    let roce = serde_json::to_value(topologies::preset("dgx-h100-roce").unwrap()).unwrap();
    let mut ethernet = roce.clone();
    ethernet["fabric"]["kind"] = "ethernet".into();
    let error = refused(ethernet, "kind");
    assert!(error.contains("unknown variant `ethernet`"), "{error}");
    let mut slow = roce;
    slow["fabric"]["switch_hop_latency_ns"] = serde_json::json!(u64::MAX);
    let error = refused(slow, "latency");
    assert!(
        error.contains("fabric.kind roce_v2") && error.contains("fabric.switch_hop_latency_ns"),
        "{error}"
    );
}
