//! The summary's `accuracy` line states what `clustersim validate` gives on
//! the published runs of the scenario's kind, so that it cannot drift from
//! the model: the dense FP8 line's range and mean are recomputed here from
//! `validate validation/h100-published.json`.

use crate::common;
use common::{clustersim, repository_root, text};

const LLAMA2_7B: [&str; 17] = [
    "simulate",
    "--model",
    "llama2-7b",
    "--topology",
    "dgx-h100-superpod",
    "--stack",
    "megatron-core-2024",
    "--tp",
    "1",
    "--pp",
    "1",
    "--dp",
    "8",
    "--global-batch",
    "128",
    "--distributed-optimizer",
    "--overlap-param-gather",
];

fn run(args: &[&str]) -> String {
    let out = clustersim(args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn the_fp8_line_states_the_published_h100_errors_validate_gives() {
    let published = repository_root().join("validation/h100-published.json");
    let published = published.to_str().unwrap();
    let rows: serde_json::Value =
        serde_json::from_str(&run(&["validate", published, "--json"])).unwrap();
    let errors: Vec<f64> = rows["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["quantity"] == "tokens_per_s_per_gpu")
        .filter_map(|row| row["error_percent"].as_f64())
        .collect();
    assert_eq!(errors.len(), 14);
    let low = errors.iter().copied().fold(f64::INFINITY, f64::min);
    let high = errors.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    let optimistic = errors.iter().filter(|&&e| e > 0.0).count();
    assert!(
        optimistic > errors.len() / 2,
        "the line says most runs were optimistic: {errors:?}"
    );

    let mut fp8 = LLAMA2_7B.to_vec();
    fp8.extend(["--precision", "fp8"]);
    let summary = run(&fp8);
    let line = summary
        .lines()
        .find(|line| line.trim_start().starts_with("accuracy"))
        .unwrap_or_else(|| panic!("no accuracy line:\n{summary}"));
    assert!(
        line.contains(&format!("{low:+.1}…{high:+.1} % off")),
        "{line}"
    );
    assert!(
        line.contains(&format!("{optimistic} of them too high")),
        "{line}"
    );
    assert!(line.contains(&format!("mean {mean:+.1} %")), "{line}");
    let mean_abs = errors.iter().map(|e| e.abs()).sum::<f64>() / errors.len() as f64;
    assert!(
        line.contains(&format!("mean |error| {mean_abs:.1} %")),
        "{line}"
    );
    assert!(
        line.contains(&format!("{} published H100 FP8 runs", errors.len())),
        "{line}"
    );

    fp8.push("--json");
    let json: serde_json::Value = serde_json::from_str(&run(&fp8)).unwrap();
    let stated = json["accuracy"].as_str().unwrap();
    assert!(line.ends_with(stated), "{line}\n{stated}");
}

#[test]
fn bf16_runs_print_no_accuracy_line() {
    let mut bf16 = LLAMA2_7B.to_vec();
    bf16.extend(["--precision", "bf16"]);
    assert!(!run(&bf16).contains("accuracy"));
    bf16.push("--json");
    let json: serde_json::Value = serde_json::from_str(&run(&bf16)).unwrap();
    assert!(json.get("accuracy").is_none(), "{json}");
}
