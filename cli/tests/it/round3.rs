//! Round 3's reproducers (`cli/tests/reliability/round3/`, issue 34; the
//! findings F1–F9 and their inputs are in the reliability report): each
//! behaves as the report's "expected" column says. F4, F8 and F9 are in
//! `reliability.rs`.

use std::process::Output;

use crate::common;

fn input(name: &str) -> String {
    common::input("reliability", &format!("round3/{name}"))
}

/// Runs the binary under a 4 GB address-space cap, as the fuzzers ran it.
fn limited(args: &str) -> Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 4000000 && exec {} {args}",
            common::clustersim_binary().display()
        ))
        .output()
        .expect("sh runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// F1: `--contention` builds only the fat-tree levels and cables the
/// topology's NIC ports reach, so a declared tree of 40 levels (20⁴⁰ ports),
/// 8 levels or radix 4000 costs what the 2 nodes' ports need.
#[test]
fn f1_contention_builds_the_fat_tree_its_nodes_use() {
    if !std::path::Path::new("/proc/self/limits").exists() {
        eprintln!("skipped: no /proc/self/limits (not Linux)");
        return;
    }
    for topology in [
        "R1a-topology-fat-tree-40-levels.json",
        "R1b-topology-fat-tree-8-levels.json",
        "R1c-topology-fat-tree-5-levels.json",
        "R1d-topology-radix-4000.json",
    ] {
        let output = limited(&format!(
            "simulate --model tiny --topology {} --tp 1 --pp 2 --dp 1 --global-batch 2 --contention --json",
            input(topology)
        ));
        assert!(output.status.success(), "{topology}: {}", stderr(&output));
        let json: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("--json prints JSON");
        let seconds = json["iteration_time_s"].as_f64();
        assert!(
            seconds.is_some_and(|s| s.is_finite() && s > 0.0),
            "{topology}: {seconds:?}"
        );
    }
    let scenario = limited(&format!(
        "simulate {} --json",
        input("R1-fuzzer-found-scenario-ft600.json")
    ));
    let text = stderr(&scenario);
    assert!(!text.contains("panicked"), "{text}");
    assert!(
        matches!(scenario.status.code(), Some(0) | Some(2)),
        "exit {:?}: {text}",
        scenario.status.code()
    );
}

/// F2: `validate` refuses, as a reason row, a case this machine's memory
/// cannot simulate, with `simulate`'s message, instead of aborting.
#[test]
fn f2_validate_refuses_a_case_the_memory_cannot_hold() {
    if !std::path::Path::new("/proc/self/limits").exists() {
        eprintln!("skipped: no /proc/self/limits (not Linux)");
        return;
    }
    for file in [
        "R2-validate-oom-devset.json",
        "R2b-h100-published-case12-global-batch-65536.json",
    ] {
        let output = limited(&format!("validate {}", input(file)));
        assert!(output.status.success(), "{file}: {}", stderr(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains("needs about") && stdout.contains("ulimit -v"),
            "{file}: {stdout}"
        );
    }
    let fuzzed = limited(&format!(
        "validate {}",
        input("R2-fuzzer-found-devset.json")
    ));
    let text = stderr(&fuzzed);
    assert!(!text.contains("panicked"), "{text}");
    assert!(matches!(fuzzed.status.code(), Some(0) | Some(2)), "{text}");
}
