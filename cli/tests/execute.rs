//! `clustersim execute` as a user meets it on any machine: without a CUDA
//! driver it fails with one clear line and exit code 2; `--dry-run` plans and
//! checks every example scenario without a GPU; the examples simulate.
//! GPU runs of the examples are gated at run time: they skip with a message
//! when no driver loads.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXAMPLES: [(&str, &str); 3] = [
    ("gpt-layers-p1-real.json", "real"),
    ("pipeline-1f1b-p4-synthetic.json", "synthetic"),
    ("pipeline-interleaved-p4-synthetic.json", "synthetic"),
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ is inside the workspace")
        .to_path_buf()
}

/// Runs the binary from the workspace root (example scenarios name
/// `examples/h200-x4-virtual.json` relative to it).
fn clustersim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clustersim"))
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-execute-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn execute_without_a_driver_fails_with_one_line_and_exit_2() {
    if executor::require_driver().is_ok() {
        eprintln!("skipping: a CUDA driver is present, the no-driver path cannot be exercised");
        return;
    }
    let out = scratch("never-written.json");
    let output = clustersim(&[
        "execute",
        "examples/pipeline-1f1b-p4-synthetic.json",
        "--mode",
        "synthetic",
        "--out",
        out.to_str().unwrap(),
    ]);
    let message = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("no CUDA driver"), "{message}");
    assert_eq!(message.trim_end().lines().count(), 1, "one line: {message}");
    assert!(!message.contains("panicked"), "{message}");
    assert!(!out.exists(), "nothing written without a GPU");
}

#[test]
fn bad_execute_flags_exit_2() {
    let output = clustersim(&["execute", "--mode", "pretend"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let output = clustersim(&["execute", "--mode", "real", "--gpus", "0", "--dry-run"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("--gpus"));
}

#[test]
fn every_example_plans_without_a_gpu_and_simulates() {
    for (file, mode) in EXAMPLES {
        let scenario = format!("examples/{file}");
        let plan_path = scratch(&format!("{file}.plan.json"));
        let output = clustersim(&[
            "execute",
            &scenario,
            "--mode",
            mode,
            "--dry-run",
            "--plan",
            plan_path.to_str().unwrap(),
        ]);
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{file}: {}", text(&output.stderr));
        assert!(stdout.contains("dry run"), "{stdout}");
        let plan: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
        assert_eq!(plan["mode"], mode);
        assert_eq!(
            plan["gpu_count"], 1,
            "{file}: every rank folded onto one GPU"
        );
        assert!(!plan["tasks"].as_array().unwrap().is_empty());

        let output = clustersim(&["simulate", &scenario, "--json"]);
        assert!(output.status.success(), "{file}: {}", text(&output.stderr));
    }
}

/// Runs each example on the GPU and compares with the simulation; skipped
/// without a driver. The tolerance here is loose (a smoke test); the
/// acceptance targets are checked with `clustersim compare --max-error`.
#[test]
fn examples_execute_on_a_gpu_when_one_is_present() {
    if let Err(error) = executor::require_driver() {
        eprintln!("skipping: {error}");
        return;
    }
    for (file, mode) in EXAMPLES {
        let scenario = format!("examples/{file}");
        let measured = scratch(&format!("{file}.measured.json"));
        let output = clustersim(&[
            "execute",
            &scenario,
            "--mode",
            mode,
            "--out",
            measured.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{file}: {}", text(&output.stderr));
        let timeline = timeline::Timeline::read(&measured).unwrap();
        assert_eq!(timeline.header.producer, timeline::Producer::Executor);
        assert_eq!(timeline.header.executor_mode.as_deref(), Some(mode));
        let simulated = clustersim(&["simulate", &scenario, "--json"]);
        let summary: serde_json::Value = serde_json::from_slice(&simulated.stdout).unwrap();
        let simulated_s = summary["iteration_time_s"].as_f64().unwrap();
        let measured_s = timeline.makespan_ns() as f64 * 1e-9;
        assert!(
            (measured_s / simulated_s - 1.0).abs() < 0.5,
            "{file}: measured {measured_s} s vs simulated {simulated_s} s"
        );
    }
}
