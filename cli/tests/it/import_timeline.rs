//! `clustersim import-trace` of a clustersim Timeline (issue 32 item 4): a
//! measured run's Timeline becomes a case of rank 0's busy seconds per
//! iteration by class of task, which `validate` predicts from the simulated
//! rank 0 and `fit` learns from. A simulated Timeline imported back is
//! predicted exactly; the lab H100's measured Timeline is read as recorded.

use crate::common;
use common::{clustersim, repository_root, stderr, text};
use std::path::{Path, PathBuf};

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "clustersim-import-timeline-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Llama 3 8B at t2 d2 p2 on one DGX H100: every class of task runs on rank 0.
const SCENARIO: &str = r#"{
  "model": "llama3-8b", "seq_len": 2048, "topology": "dgx-h100-superpod",
  "stack": "megatron-core-2024", "tp": 2, "pp": 2, "dp": 2, "microbatch_size": 1,
  "global_batch": 8, "recompute": "none", "precision": "bf16"
}"#;

/// `clustersim import-trace TRACE --scenario SCENARIO --out CASES`.
fn import_trace(trace: &Path, scenario: &Path, cases: &Path) -> std::process::Output {
    clustersim(&[
        "import-trace",
        path(trace),
        "--scenario",
        path(scenario),
        "--out",
        path(cases),
    ])
}

/// `validate --json`'s rows of `cases`: (quantity, published, predicted).
fn validated(cases: &Path) -> Vec<(String, f64, f64)> {
    let output = clustersim(&["validate", path(cases), "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    value["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["quantity"].as_str().unwrap().to_string(),
                row["measured"].as_f64().unwrap(),
                row["predicted"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_simulated_timeline_imported_back_is_predicted_exactly() {
    let dir = folder("roundtrip");
    let scenario = dir.join("run.json");
    std::fs::write(&scenario, SCENARIO).unwrap();
    for name in ["run.timeline.json", "run.timeline.jsonl"] {
        let timeline = dir.join(name);
        let simulated = clustersim(&["simulate", path(&scenario), "--timeline", path(&timeline)]);
        assert_eq!(simulated.status.code(), Some(0), "{}", stderr(&simulated));
        let cases = dir.join("cases.json");
        let imported = import_trace(&timeline, &scenario, &cases);
        assert_eq!(imported.status.code(), Some(0), "{}", stderr(&imported));
        assert!(
            text(&imported.stdout).contains("rank 0's busy seconds per iteration by class"),
            "{}",
            text(&imported.stdout)
        );
        let rows = validated(&cases);
        let quantities: Vec<&str> = rows.iter().map(|(q, ..)| q.as_str()).collect();
        for quantity in [
            "iteration_time_s",
            "compute_s",
            "tensor_comm_s",
            "pipeline_comm_s",
            "data_parallel_comm_s",
        ] {
            assert!(quantities.contains(&quantity), "{name}: {quantities:?}");
        }
        for (quantity, measured, predicted) in &rows {
            assert!(*measured > 0.0, "{name}: {quantity}");
            assert!(
                (predicted / measured - 1.0).abs() < 1e-9,
                "{name}: {quantity}: measured {measured}, predicted {predicted}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_lab_h100_s_measured_timeline_is_read_as_recorded() {
    let dir = folder("lab");
    let measured =
        repository_root().join("validation/measured/h100-sxm/gpt-layers-p1-real.measured.json");
    // The example as the lab ran it: the H100 topology and its calibrated profile.
    let scenario = dir.join("run.json");
    let profile = repository_root().join("calibrate/profiles/h100-sxm.json");
    let mut file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repository_root().join("examples/gpt-layers-p1-real.json"))
            .unwrap(),
    )
    .unwrap();
    file["topology"] = "h100".into();
    file["profile"] = path(&profile).into();
    std::fs::write(&scenario, file.to_string()).unwrap();
    let cases = dir.join("cases.json");
    let imported = import_trace(&measured, &scenario, &cases);
    assert_eq!(imported.status.code(), Some(0), "{}", stderr(&imported));
    // Rank 0's compute tasks and the run's end, summed here from the file.
    let timeline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&measured).unwrap()).unwrap();
    let compute = [
        "forward",
        "backward",
        "recompute",
        "optimizer_step",
        "gradient_copy",
    ];
    let tasks = timeline["tasks"].as_array().unwrap();
    let span =
        |t: &serde_json::Value| t["end_ns"].as_u64().unwrap() - t["start_ns"].as_u64().unwrap();
    let compute_ns: u64 = tasks
        .iter()
        .filter(|t| compute.contains(&t["kind"].as_str().unwrap()))
        .map(span)
        .sum();
    let end_ns = tasks
        .iter()
        .map(|t| t["end_ns"].as_u64().unwrap())
        .max()
        .unwrap();
    let case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cases).unwrap()).unwrap();
    let got = &case["cases"][0]["measured"];
    assert_eq!(got["compute_s"].as_f64().unwrap(), compute_ns as f64 * 1e-9);
    assert_eq!(
        got["iteration_time_s"].as_f64().unwrap(),
        end_ns as f64 * 1e-9
    );
    assert!(
        got.get("tensor_comm_s").is_none(),
        "one GPU: no communication"
    );
    // validate predicts both; fit learns from them.
    let rows = validated(&cases);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let fitted = clustersim(&["fit", path(&cases), "--out", path(&dir.join("fit.json"))]);
    assert_eq!(fitted.status.code(), Some(0), "{}", stderr(&fitted));
    assert!(
        text(&fitted.stdout).contains("1 class times"),
        "{}",
        text(&fitted.stdout)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_timeline_that_cannot_be_read_exits_2_and_writes_nothing() {
    let dir = folder("bad");
    let scenario = dir.join("run.json");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let bad = dir.join("bad.timeline.json");
    std::fs::write(&bad, r#"{"header": {"format_version": 99}, "tasks": []}"#).unwrap();
    let cases = dir.join("cases.json");
    let output = import_trace(&bad, &scenario, &cases);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("bad.timeline.json"),
        "{}",
        stderr(&output)
    );
    assert!(!cases.exists());
    // A Timeline that timed nothing.
    let mut empty: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            repository_root().join("validation/measured/h100-sxm/gpt-layers-p1-real.measured.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for task in empty["tasks"].as_array_mut().unwrap() {
        task["start_ns"] = 0.into();
        task["end_ns"] = 0.into();
    }
    let zero = dir.join("zero.timeline.json");
    std::fs::write(&zero, empty.to_string()).unwrap();
    let output = import_trace(&zero, &scenario, &cases);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("nothing was timed"),
        "{}",
        stderr(&output)
    );
    assert!(!cases.exists());
    let _ = std::fs::remove_dir_all(dir);
}
