//! Round 3's reproducers (`cli/tests/reliability/round3/`, issue 34; the
//! findings F1–F9 and their inputs are in the reliability report): each
//! behaves as the report's "expected" column says. F4, F8 and F9 are in
//! `reliability.rs`.

use crate::common;
use common::{clustersim_under_4gb as limited, stderr};

fn input(name: &str) -> String {
    common::input("reliability", &format!("round3/{name}"))
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

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-round3-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const TINY: [&str; 12] = [
    "simulate",
    "--model",
    "tiny",
    "--topology",
    "dgx-a100",
    "--tp",
    "1",
    "--pp",
    "2",
    "--dp",
    "1",
    "--global-batch",
];

/// F6: an output path that is a symbolic link is written through to its
/// target; the link stays a link.
#[cfg(unix)]
#[test]
fn f6_a_symbolic_link_output_is_written_through() {
    let dir = scratch("f6");
    std::fs::create_dir(dir.join("real")).unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink("real/target.json", &link).unwrap();
    let mut args = TINY.to_vec();
    let link_arg = link.display().to_string();
    args.extend(["4", "--timeline", &link_arg]);
    let output = common::clustersim(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let written = std::fs::read_to_string(dir.join("real/target.json")).unwrap();
    assert!(written.starts_with("{\"header\""), "{written:.80}");
}

/// F7: a run that fails changes none of its outputs: an unwritable
/// destination is refused before any work, and a stale temporary of a dead
/// writer is removed by the next run that writes the same file.
#[test]
fn f7_a_failed_run_changes_no_file_and_stale_temporaries_go() {
    if !std::path::Path::new("/proc/self").exists() {
        eprintln!("skipped: no /proc (not Linux)");
        return;
    }
    let dir = scratch("f7");
    let keep = dir.join("keep.json");
    std::fs::write(&keep, "old").unwrap();
    let keep_arg = keep.display().to_string();
    let mut args = TINY.to_vec();
    args.extend(["4", "--timeline", &keep_arg, "--plot", "/proc/x.svg"]);
    let failed = common::clustersim(&args);
    assert_eq!(failed.status.code(), Some(2), "{}", stderr(&failed));
    assert!(stderr(&failed).contains("cannot create a file in /proc"));
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "old");
    let sweep = common::clustersim(&[
        "sweep",
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--gpus",
        "2",
        "--global-batch",
        "4",
        "--json",
        &keep_arg,
        "--csv",
        "/proc/x.csv",
    ]);
    assert_eq!(sweep.status.code(), Some(2), "{}", stderr(&sweep));
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "old");
    // Beyond any pid_max (2^22 at most): a writer that died.
    let stale = dir.join(".keep.tmp-4194399.json");
    std::fs::write(&stale, "partial").unwrap();
    let mut args = TINY.to_vec();
    args.extend(["4", "--timeline", &keep_arg]);
    let written = common::clustersim(&args);
    assert!(written.status.success(), "{}", stderr(&written));
    assert!(!stale.exists());
    assert_ne!(std::fs::read_to_string(&keep).unwrap(), "old");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "only keep.json"
    );
}

/// F5: twice the data parallelism and global batch on `gb200-nvl72` (the
/// same work per GPU) never shortens the iteration. The cause was the closed
/// form pricing a data-parallel group split 4 + 12 over two NVL72 domains as
/// 8 + 8: the least populated domain has 4 NICs for the ring, not 8.
#[test]
fn f5_weak_scaling_on_nvl72_is_never_faster() {
    let iteration_s = |tp: u32, dp: u32, microbatch: u32, chunks: u32| {
        let args = [
            "simulate".to_string(),
            "--model".into(),
            "gpt3-175b".into(),
            "--topology".into(),
            "gb200-nvl72".into(),
            "--tp".into(),
            tp.to_string(),
            "--pp".into(),
            "8".into(),
            "--dp".into(),
            dp.to_string(),
            "--microbatch-size".into(),
            microbatch.to_string(),
            "--global-batch".into(),
            (16 * dp).to_string(),
            "--seq-len".into(),
            "512".into(),
            "--schedule".into(),
            "interleaved".into(),
            "--chunks".into(),
            chunks.to_string(),
            "--recompute".into(),
            "selective".into(),
            "--stack".into(),
            "deepspeed-pipeline".into(),
            "--json".into(),
        ];
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = common::clustersim(&refs);
        assert!(output.status.success(), "{}", stderr(&output));
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        json["iteration_time_s"].as_f64().expect("iteration_time_s")
    };
    // The report's reproducer (t = 2, b = 2, v = 3) and t = 4 (b = 1, v = 2).
    let reproducer = [iteration_s(2, 8, 2, 3), iteration_s(2, 16, 2, 3)];
    assert!(reproducer[1] >= reproducer[0], "{reproducer:?}");
    let wider = [4, 8, 16].map(|dp| iteration_s(4, dp, 1, 2));
    assert!(wider[0] <= wider[1] && wider[1] <= wider[2], "{wider:?}");
}
