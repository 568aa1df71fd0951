//! `clustersim execute` as a user meets it on any machine: without a CUDA
//! driver it fails with one clear line and exit code 2; `--dry-run` plans and
//! checks every example scenario without a GPU; the examples simulate.
//! GPU runs of the examples are gated at run time: they skip with a message
//! when no driver loads.
//!
//! Nothing here depends on where the tests were built: the binary is
//! `CLUSTERSIM_BIN`, else the `clustersim` beside this test executable (or
//! one folder up), else cargo's; the examples are under `CLUSTERSIM_REPO`,
//! else the current directory, else the source tree (`common`).

mod common;

use common::{beside, clustersim_binary, repository_root, text};
use std::path::PathBuf;
use std::process::{Command, Output};

const EXAMPLES: [(&str, &str); 5] = [
    ("gpt-layers-p1-real.json", "real"),
    ("gpt-layers-p1-real-gpu-bound.json", "real"),
    ("pipeline-1f1b-p4-synthetic.json", "synthetic"),
    ("pipeline-interleaved-p4-synthetic.json", "synthetic"),
    (
        "pipeline-1f1b-p2-d2-distributed-optimizer-synthetic.json",
        "synthetic",
    ),
];

/// Runs the binary from the repository root (example scenarios name
/// `examples/h200-x4-virtual.json` relative to it).
fn clustersim(args: &[&str]) -> Output {
    let binary = clustersim_binary();
    Command::new(&binary)
        .args(args)
        .current_dir(repository_root())
        .output()
        .unwrap_or_else(|error| panic!("running {}: {error}", binary.display()))
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

/// Runs each example on the GPU the way the README does (execute, simulate,
/// compare); skipped without a driver. Synthetic runs must meet the
/// acceptance target (`compare --max-error 2`); real runs depend on a
/// profile calibrated on this GPU, so without one they get a loose bound.
#[test]
fn examples_execute_on_a_gpu_when_one_is_present() {
    if let Err(error) = executor::require_driver() {
        eprintln!("skipping: {error}");
        return;
    }
    for (file, mode) in EXAMPLES {
        let scenario = format!("examples/{file}");
        let measured = scratch(&format!("{file}.measured.json"));
        let simulated = scratch(&format!("{file}.simulated.json"));
        let output = clustersim(&[
            "execute",
            &scenario,
            "--mode",
            mode,
            "--out",
            measured.to_str().unwrap(),
        ]);
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{file}: {}", text(&output.stderr));
        eprintln!("{stdout}");
        assert!(!stdout.contains("warning"), "{file}: {stdout}");
        let timeline = timeline::Timeline::read(&measured).unwrap();
        assert_eq!(timeline.header.producer, timeline::Producer::Executor);
        assert_eq!(timeline.header.executor_mode.as_deref(), Some(mode));
        let hardware_queues = &timeline.header.scenario["executor"]["hardware_queues"];
        assert!(
            hardware_queues["setting"].is_string(),
            "{file}: set by main"
        );
        assert_eq!(hardware_queues["setting_known_in_effect"], true, "{file}");
        let output = clustersim(&[
            "simulate",
            &scenario,
            "--timeline",
            simulated.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{file}: {}", text(&output.stderr));
        let max_error = if mode == "synthetic" { "2" } else { "50" };
        let output = clustersim(&[
            "compare",
            simulated.to_str().unwrap(),
            measured.to_str().unwrap(),
            "--max-error",
            max_error,
        ]);
        assert!(
            output.status.success(),
            "{file}: {}{}",
            text(&output.stdout),
            text(&output.stderr)
        );
    }
}

#[test]
fn the_binary_is_found_beside_the_test_or_one_folder_up() {
    let dir = scratch("beside");
    let deps = dir.join("deps");
    std::fs::create_dir_all(&deps).unwrap();
    let test = deps.join("execute-0123");
    std::fs::write(&test, b"").unwrap();
    assert_eq!(beside(&test, "clustersim"), None);
    std::fs::write(dir.join("clustersim"), b"").unwrap();
    assert_eq!(beside(&test, "clustersim"), Some(dir.join("clustersim")));
    std::fs::write(deps.join("clustersim"), b"").unwrap();
    assert_eq!(
        beside(&test, "clustersim"),
        Some(deps.join("clustersim")),
        "a copy beside the test wins"
    );
    // Without CLUSTERSIM_BIN the binary these tests run exists.
    if std::env::var_os("CLUSTERSIM_BIN").is_none() {
        assert!(clustersim_binary().is_file());
    }
    assert!(repository_root().join("examples").is_dir());
}
