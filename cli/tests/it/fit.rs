//! The CLI contract of issue 32: `clustersim fit CASES --out FIT.json`, then
//! `validate CASES --fit FIT.json` and `simulate … --fit FIT.json` name the
//! fit and take its range; bad input exits 2 with one message and writes
//! nothing.

use crate::common;
use common::{clustersim, repository_root, stderr, text};
use std::path::PathBuf;

/// A folder of its own for one test.
fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-fit-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Three of NVIDIA's H100 cases as a CASES file of their own.
fn three_h100_cases(dir: &std::path::Path) -> PathBuf {
    let table = repository_root().join("validation/h100-published.json");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(table).unwrap()).unwrap();
    let cases: Vec<serde_json::Value> = value["cases"].as_array().unwrap()[..3].to_vec();
    let path = dir.join("cases.json");
    std::fs::write(&path, serde_json::json!({ "cases": cases }).to_string()).unwrap();
    path
}

#[test]
fn fit_then_validate_and_simulate_with_it() {
    let dir = folder("contract");
    let cases = three_h100_cases(&dir);
    let fit_path = dir.join("FIT.json");
    let (cases, fit) = (cases.to_str().unwrap(), fit_path.to_str().unwrap());
    let out = clustersim(&["fit", cases, "--out", fit]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        text(&out.stdout).contains("each case left out"),
        "{}",
        text(&out.stdout)
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fit_path).unwrap()).unwrap();
    assert_eq!(record["format"], "clustersim-fit");
    assert_eq!(record["runs"].as_array().unwrap().len(), 3);

    let validated = clustersim(&["validate", cases, "--fit", fit, "--json"]);
    assert_eq!(validated.status.code(), Some(0), "{}", stderr(&validated));
    let validated: serde_json::Value = serde_json::from_slice(&validated.stdout).unwrap();
    assert_eq!(validated["fit"]["file"], fit);
    assert_eq!(validated["rows"].as_array().unwrap().len(), 6);

    let scenario = serde_json::to_string(&record_case_scenario(cases)).unwrap();
    let scenario_path = dir.join("scenario.json");
    std::fs::write(&scenario_path, scenario).unwrap();
    let simulated = clustersim(&[
        "simulate",
        scenario_path.to_str().unwrap(),
        "--fit",
        fit,
        "--json",
    ]);
    assert_eq!(simulated.status.code(), Some(0), "{}", stderr(&simulated));
    let summary: serde_json::Value = serde_json::from_slice(&simulated.stdout).unwrap();
    assert_eq!(summary["fit"]["file"], fit);
    assert_eq!(summary["expected_range"]["fit"], fit);
    let loo = &record["leave_one_out"];
    assert_eq!(
        summary["expected_range"]["measured_over_predicted"],
        serde_json::json!([loo["ratio_low"], loo["ratio_high"]])
    );
    // The summary says when the fit does not carry beyond its own runs: the
    // same fit with the verdict flipped prints the other sentence.
    let carried = record["leave_one_out_beats_calibrated"].as_bool().unwrap();
    let flipped_path = dir.join("FIT-flipped.json");
    let mut flipped = record.clone();
    flipped["leave_one_out_beats_calibrated"] = (!carried).into();
    std::fs::write(&flipped_path, flipped.to_string()).unwrap();
    for (path, carries) in [(fit, carried), (flipped_path.to_str().unwrap(), !carried)] {
        let out = clustersim(&["simulate", scenario_path.to_str().unwrap(), "--fit", path]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let warned = text(&out.stdout).contains("do not carry a fit beyond themselves");
        assert_eq!(warned, !carries, "{}", text(&out.stdout));
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The first case's scenario of a CASES file.
fn record_case_scenario(cases: &str) -> serde_json::Value {
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cases).unwrap()).unwrap();
    value["cases"][0]["scenario"].clone()
}

#[test]
fn bad_fits_exit_2_with_one_message_and_write_nothing() {
    let dir = folder("bad");
    let cases = three_h100_cases(&dir);
    let cases = cases.to_str().unwrap();
    let out_path = dir.join("never.json");
    let out = out_path.to_str().unwrap();
    let refused = |args: &[&str], says: &str| {
        let run = clustersim(args);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {}", stderr(&run));
        assert!(stderr(&run).contains(says), "{args:?}: {}", stderr(&run));
        assert!(!stderr(&run).contains("panicked"));
        assert!(!out_path.exists(), "{args:?} wrote {out}");
    };
    refused(
        &["fit", cases, "--out", out, "--params", "gemm"],
        "unknown parameter 'gemm'",
    );
    refused(
        &[
            "fit",
            cases,
            "--out",
            out,
            "--params",
            "host_collective_cost",
        ],
        "cannot fit host_collective_cost",
    );
    refused(
        &["fit", "no-such-file.json", "--out", out],
        "cannot read no-such-file.json",
    );
    refused(
        &[
            "fit",
            cases,
            "--out",
            dir.join("none/f.json").to_str().unwrap(),
        ],
        "does not exist",
    );
    let unpredictable = dir.join("unpredictable.json");
    std::fs::write(
        &unpredictable,
        r#"{"cases":[{"id":"x","scenario":{"model":"tiny","tp":3},"measured":{"iteration_time_s":1.0}}]}"#,
    )
    .unwrap();
    refused(
        &["fit", unpredictable.to_str().unwrap(), "--out", out],
        "no whole run the simulator can predict",
    );
    let out_of_bounds = dir.join("oob.json");
    let fitted = clustersim(&["fit", cases, "--out", out_of_bounds.to_str().unwrap()]);
    assert_eq!(fitted.status.code(), Some(0), "{}", stderr(&fitted));
    let text = std::fs::read_to_string(&out_of_bounds).unwrap();
    let mut record: serde_json::Value = serde_json::from_str(&text).unwrap();
    record["parameters"][0]["value"] = 9.0.into();
    std::fs::write(&out_of_bounds, record.to_string()).unwrap();
    let oob = out_of_bounds.to_str().unwrap();
    refused(&["simulate", "--fit", oob], "outside its physical bounds");
    let table = repository_root().join("validation/kernels/xla-h100-matmul.csv");
    std::fs::write(&out_of_bounds, text).unwrap();
    refused(
        &["validate", table.to_str().unwrap(), "--fit", oob],
        "is a kernel table",
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A trace of rank `rank`: two profiler steps, a GEMM, an attention and an
/// elementwise kernel in each.
fn trace(rank: u64, steps: bool) -> String {
    let mut events = Vec::new();
    for step in 0..2u32 {
        let t0 = f64::from(step) * 2e6;
        if steps {
            events.push(serde_json::json!({"ph": "X", "cat": "user_annotation",
                "name": format!("ProfilerStep#{step}"), "pid": 9, "tid": 1, "ts": t0, "dur": 1.6e6}));
        }
        for (name, dur) in [
            ("sm90_xmma_gemm_bf16bf16_bf16f32", 1.2e6),
            ("cudnn_generated_fort_native_sdpa_sm90", 1.5e5),
            ("vectorized_elementwise_kernel", 1.4e5),
        ] {
            events.push(serde_json::json!({"ph": "X", "cat": "kernel", "name": name,
                "pid": 0, "tid": 7, "ts": t0, "dur": dur}));
        }
    }
    serde_json::json!({"distributedInfo": {"rank": rank}, "traceEvents": events}).to_string()
}

const SCENARIO: &str = r#"{"model": "llama3-8b", "seq_len": 4096, "topology": "dgx-h100-superpod",
  "stack": "megatron-core-2024", "tp": 2, "pp": 1, "dp": 4, "microbatch_size": 1,
  "global_batch": 32, "recompute": "none", "precision": "bf16"}"#;

#[test]
fn a_trace_becomes_a_case_that_validate_and_fit_read() {
    let dir = folder("trace");
    let (trace_path, scenario, cases) = (
        dir.join("rank0.json"),
        dir.join("s.json"),
        dir.join("c.json"),
    );
    std::fs::write(&trace_path, trace(0, true)).unwrap();
    std::fs::write(&scenario, SCENARIO).unwrap();
    let [t, s, c] = [&trace_path, &scenario, &cases].map(|p| p.to_str().unwrap().to_string());
    let imported = clustersim(&["import-trace", &t, "--scenario", &s, "--out", &c]);
    assert_eq!(imported.status.code(), Some(0), "{}", stderr(&imported));
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cases).unwrap()).unwrap();
    let measured = &file["cases"][0]["measured"];
    assert!((measured["iteration_time_s"].as_f64().unwrap() - 1.6).abs() < 1e-9);
    assert!((measured["gemm_s"].as_f64().unwrap() - 1.2).abs() < 1e-9);
    let validated = clustersim(&["validate", &c, "--json"]);
    assert_eq!(validated.status.code(), Some(0), "{}", stderr(&validated));
    let rows: serde_json::Value = serde_json::from_slice(&validated.stdout).unwrap();
    let predicted = |q: &str| {
        rows["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["quantity"] == q)
            .unwrap()["predicted"]
            .as_f64()
            .unwrap()
    };
    assert!(predicted("gemm_s") > 0.0 && predicted("memory_bound_s") > 0.0);
    let fitted = clustersim(&["fit", &c, "--out", dir.join("f.json").to_str().unwrap()]);
    assert_eq!(fitted.status.code(), Some(0), "{}", stderr(&fitted));
    assert!(
        text(&fitted.stdout).contains("3 class times"),
        "{}",
        text(&fitted.stdout)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn traces_that_cannot_be_read_exit_2_and_write_nothing() {
    let dir = folder("bad-trace");
    let scenario = dir.join("s.json");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let out = dir.join("never.json");
    let refused = |trace: &str, extra: &[&str], says: &str| {
        let path = dir.join("t.json");
        std::fs::write(&path, trace).unwrap();
        let mut args = vec![
            "import-trace",
            path.to_str().unwrap(),
            "--scenario",
            scenario.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let run = clustersim(&args);
        assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
        assert!(stderr(&run).contains(says), "{}", stderr(&run));
        assert!(!out.exists());
    };
    refused("not json", &[], "not JSON");
    refused(&trace(3, true), &[], "rank 3's");
    refused(&trace(0, false), &[], "--iterations");
    refused(&trace(0, false), &["--iterations", "0"], "invalid value");
    std::fs::write(&scenario, r#"{"model": "llama3-8b", "tp": 3}"#).unwrap();
    refused(&trace(0, true), &[], "s.json");
    let _ = std::fs::remove_dir_all(dir);
}
