//! `clustersim sweep --optimizer-post-validation`: refused with one line
//! and exit 2 where a swept schedule is not zero-bubble (or the model ties
//! its embeddings); otherwise every layout runs with it — the title line
//! and the JSON say so, and a layout's iteration is `simulate`'s
//! steady-state one with the same flag, not the single iteration without.

use crate::common;
use common::{clustersim, text};

const LLAMA: [&str; 13] = [
    "sweep",
    "--model",
    "llama2-7b",
    "--topology",
    "selene",
    "--gpus",
    "8",
    "--global-batch",
    "16",
    "--tp",
    "4",
    "--pp",
    "2",
];

fn refused(args: &[&str]) -> String {
    let output = clustersim(args);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
    text(&output.stderr)
}

#[test]
fn post_validation_with_a_schedule_it_does_not_apply_to_is_refused() {
    // The default schedules: gpipe, 1f1b, interleaved.
    let mut args = LLAMA.to_vec();
    args.push("--optimizer-post-validation");
    let stderr = refused(&args);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--optimizer-post-validation applies only to the zero-bubble schedules zb-h1, zb-h2 and zb-v")
            && stderr.contains("also runs gpipe, 1f1b, interleaved"),
        "{stderr}"
    );
    args.extend(["--schedule", "zb-h2,1f1b"]);
    let stderr = refused(&args);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("also runs 1f1b;"), "{stderr}");
}

#[test]
fn post_validation_on_a_model_with_tied_embeddings_is_refused() {
    let args = [
        "sweep",
        "--model",
        "gpt-22b",
        "--gpus",
        "8",
        "--global-batch",
        "16",
        "--schedule",
        "zb-h2",
        "--optimizer-post-validation",
    ];
    let stderr = refused(&args);
    assert!(stderr.contains("needs untied embeddings"), "{stderr}");
}

/// The steady-state iteration (s) `simulate --json` reports for the layout.
fn simulated_iteration_s(post_validation: bool) -> f64 {
    let mut args = vec![
        "simulate",
        "--model",
        "llama2-7b",
        "--topology",
        "selene",
        "--tp",
        "4",
        "--pp",
        "2",
        "--dp",
        "1",
        "--global-batch",
        "16",
        "--microbatch-size",
        "1",
        "--schedule",
        "zb-h2",
        "--recompute",
        "none",
        "--json",
    ];
    if post_validation {
        args.push("--optimizer-post-validation");
    }
    let output = clustersim(&args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    json["iteration_time_s"].as_f64().unwrap()
}

#[test]
fn a_sweep_with_post_validation_says_so_and_runs_every_layout_with_it() {
    let dir = std::env::temp_dir().join(format!("clustersim-sweep-pv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json_path = dir.join("sweep.json");
    let mut args = LLAMA.to_vec();
    args.extend([
        "--schedule",
        "zb-h1,zb-h2,zb-v",
        "--optimizer-post-validation",
        "--json",
        json_path.to_str().unwrap(),
    ]);
    let output = clustersim(&args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let title = stdout.lines().next().unwrap();
    assert!(
        title.contains("· optimizer post-validation (3 iterations)"),
        "{title}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(json["sweep"]["optimizer_post_validation"], true);
    let results = json["results"].as_array().unwrap();
    let schedules: std::collections::BTreeSet<&str> = results
        .iter()
        .map(|r| r["layout"]["schedule"].as_str().unwrap())
        .collect();
    assert_eq!(
        schedules.into_iter().collect::<Vec<_>>(),
        ["zb-h1", "zb-h2", "zb-v"]
    );
    let zb_h2 = results
        .iter()
        .find(|r| {
            let layout = &r["layout"];
            layout["schedule"] == "zb-h2"
                && layout["recompute"] == "none"
                && layout["microbatch_size"] == 1
        })
        .expect("zb-h2, b = 1, no recompute is simulated");
    let swept = zb_h2["iteration_time_s"].as_f64().unwrap();
    let with = simulated_iteration_s(true);
    let without = simulated_iteration_s(false);
    assert_eq!(swept, with);
    assert_ne!(
        with, without,
        "the steady state differs from one iteration here"
    );
    std::fs::remove_dir_all(dir).ok();
}
