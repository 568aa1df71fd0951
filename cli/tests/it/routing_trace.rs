//! `simulate --routing-trace FILE` (issue 35, item 4's routing variance):
//! each line of the trace is simulated with its routing, exactly as the same
//! counts given as an `--expert-imbalance` histogram simulate; the
//! distribution, the slowest line and the fullest iteration's memory are
//! reported and valid against the schema; bad traces exit 2 naming the line;
//! `run-plan --routing-trace` plans the run at the trace's mean.

use crate::common;
use common::schema::assert_valid;
use common::{clustersim, text, MIXTRAL_T1_P4_D16};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Three iterations: balanced, mildly skewed, one expert at twice the mean.
const LINES: [&str; 3] = [
    "1000 1000 1000 1000 1000 1000 1000 1000",
    "1200,900,1000,1000,950,1000,950,1000",
    "2000 800 900 1000 900 800 800 800",
];

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn simulate(extra: &[&str]) -> std::process::Output {
    clustersim(&[&MIXTRAL_T1_P4_D16[..], &["--ep", "8"][..], extra].concat())
}

fn json(extra: &[&str]) -> Value {
    let output = simulate(&[extra, &["--json"][..]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn each_traced_iteration_is_its_routing_simulated() {
    let trace = scratch("trace.txt");
    std::fs::write(
        &trace,
        format!("# tokens per expert\n{}\n", LINES.join("\n\n")),
    )
    .unwrap();
    let value = json(&["--routing-trace", path_str(&trace)]);
    assert_valid("simulate", "--routing-trace", &value);
    let traced = &value["routing_trace"];
    assert_eq!(traced["iterations"], 3);
    let per = traced["per_iteration"].as_array().unwrap();
    // Lines 2, 4 and 6 of the file (a comment first, blank lines between).
    let lines: Vec<u64> = per.iter().map(|i| i["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [2, 4, 6]);
    let mut times = Vec::new();
    for (index, line) in LINES.iter().enumerate() {
        let histogram = scratch(&format!("histogram-{index}.txt"));
        std::fs::write(&histogram, line).unwrap();
        let alone = json(&["--expert-imbalance", path_str(&histogram)]);
        assert_eq!(
            per[index]["iteration_time_s"], alone["iteration_time_s"],
            "line {}",
            lines[index]
        );
        assert_eq!(
            per[index]["busiest_rank_load"],
            alone["experts"]["busiest_rank_load"]
        );
        assert_eq!(per[index]["peak_memory_bytes"], alone["peak_memory_bytes"]);
        times.push(alone["iteration_time_s"].as_f64().unwrap());
    }
    // The balanced line is the default routing's iteration; skew slows it.
    assert_eq!(per[0]["iteration_time_s"], value["iteration_time_s"]);
    assert!(times[0] < times[1] && times[1] < times[2], "{times:?}");
    let distribution = &traced["iteration_time_s"];
    assert_eq!(distribution["max"].as_f64().unwrap(), times[2]);
    assert_eq!(distribution["p50"].as_f64().unwrap(), times[1]);
    let mean = times.iter().sum::<f64>() / 3.0;
    assert!((distribution["mean"].as_f64().unwrap() - mean).abs() < 1e-12 * mean);
    assert_eq!(traced["slowest_line"], 6);
    // Expert 0 takes 2000 of 8000 tokens: a quarter, on 1 of 8 ranks.
    assert_eq!(per[2]["busiest_rank_load"], 2.0);
    let summary = text(&simulate(&["--routing-trace", path_str(&trace)]).stdout);
    assert!(
        summary.contains(&format!(
            "routing trace       3 iterations ({}): iteration time mean",
            trace.display()
        )),
        "{summary}"
    );
    assert!(summary.contains("max "), "{summary}");
    assert!(summary.contains("(line 6)"), "{summary}");
}

#[test]
fn bad_traces_exit_2_naming_what_is_wrong() {
    let short = scratch("short.txt");
    std::fs::write(&short, format!("{}\n1 2 3\n", LINES[0])).unwrap();
    let output = simulate(&["--routing-trace", path_str(&short)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("line 2: 3 counts; the model has 8 experts"),
        "{}",
        text(&output.stderr)
    );
    let empty = scratch("empty.txt");
    std::fs::write(&empty, "# nothing yet\n").unwrap();
    let output = simulate(&["--routing-trace", path_str(&empty)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("holds no iteration"));
    let missing = simulate(&["--routing-trace", "/no/such/trace"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("routing trace '/no/such/trace'"));
    let dense = clustersim(&[
        "simulate",
        "--model",
        "gpt-22b",
        "--routing-trace",
        path_str(&short),
    ]);
    assert_eq!(dense.status.code(), Some(2));
    assert!(
        text(&dense.stderr).contains("has no experts"),
        "{}",
        text(&dense.stderr)
    );
    assert!(dense.stdout.is_empty());
}

/// `run-plan --routing-trace`: the run is planned at the trace's mean
/// iteration time, its distribution reported and valid against the schema.
#[test]
fn run_plan_trains_at_the_traces_mean_iteration_time() {
    let trace = scratch("plan-trace.txt");
    std::fs::write(&trace, LINES.join("\n")).unwrap();
    let layout = &MIXTRAL_T1_P4_D16[1..];
    let plan = |extra: &[&str]| {
        let args = [
            &["run-plan"][..],
            layout,
            &["--ep", "8", "--steps", "1000", "--trials", "100", "--json"],
            extra,
        ]
        .concat();
        let output = clustersim(&args);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    let traced = plan(&["--routing-trace", path_str(&trace)]);
    assert_valid("run-plan", "--routing-trace", &traced);
    let mean = traced["routing_trace"]["iteration_time_s"]["mean"]
        .as_f64()
        .unwrap();
    assert_eq!(traced["plan"]["iteration_time_s"].as_f64().unwrap(), mean);
    assert_eq!(traced["routing_trace"]["iterations"], 3);
    // The balanced first line alone is the untraced run; the skewed lines
    // make the traced run's 1,000 iterations longer.
    let untraced = plan(&[]);
    let useful = |value: &Value| value["useful_time_s"].as_f64().unwrap();
    let first = traced["routing_trace"]["per_iteration"][0]["iteration_time_s"].as_f64();
    assert_eq!(untraced["plan"]["iteration_time_s"].as_f64(), first);
    assert!((useful(&traced) / (1000.0 * mean) - 1.0).abs() < 1e-12);
    assert!(useful(&traced) > useful(&untraced));
    // What run-plan cannot combine with a trace is exit 2, naming it.
    let refused = clustersim(
        &[
            &["run-plan"][..],
            layout,
            &[
                "--ep",
                "8",
                "--steps",
                "10",
                "--routing-trace",
                path_str(&trace),
            ],
            &["--recovery", "fewer-replicas", "--repair-s", "3600"],
        ]
        .concat(),
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr)
        .contains("--routing-trace with --recovery fewer-replicas is not built"));
}

#[test]
fn a_routing_per_moe_layer_is_named_layer_by_layer_and_follows_the_schema() {
    // Mixtral's 32 MoE layers: the third line of LINES in layer 9, the
    // first everywhere else.
    let mut layers = vec![LINES[0]; 32];
    layers[9] = LINES[2];
    let file = scratch("per-layer.txt");
    std::fs::write(
        &file,
        format!("# one line per MoE layer\n{}\n", layers.join("\n")),
    )
    .unwrap();
    let value = json(&["--expert-imbalance", path_str(&file)]);
    assert_valid("simulate", "--expert-imbalance per layer", &value);
    let experts = &value["experts"];
    let loads: Vec<f64> = experts["layer_busiest_rank_loads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|load| load.as_f64().unwrap())
        .collect();
    assert_eq!(loads.len(), 32);
    assert!(loads[9] > 1.0 && loads.iter().enumerate().all(|(i, &l)| i == 9 || l == 1.0));
    assert_eq!(experts["busiest_rank_load"].as_f64().unwrap(), loads[9]);
    let uniform = json(&[]);
    let spiked_everywhere = {
        let histogram = scratch("every-layer.txt");
        std::fs::write(&histogram, LINES[2]).unwrap();
        json(&["--expert-imbalance", path_str(&histogram)])
    };
    let time = |value: &Value| value["iteration_time_s"].as_f64().unwrap();
    assert!(time(&uniform) < time(&value) && time(&value) < time(&spiked_everywhere));
    let summary = text(&simulate(&["--expert-imbalance", path_str(&file)]).stdout);
    assert!(summary.contains("one per MoE layer"), "{summary}");
    assert!(summary.contains("in MoE layer 9"), "{summary}");
}

#[test]
fn a_histogram_that_can_be_read_once_routes_as_its_file_would() {
    // Standard input is read once: the per-layer file and a single routing
    // both come through it as through a file.
    let mut layers = vec![LINES[0]; 32];
    layers[9] = LINES[2];
    let per_layer = layers.join("\n");
    for histogram in [per_layer.as_str(), LINES[2]] {
        let file = scratch("read-once.txt");
        std::fs::write(&file, histogram).unwrap();
        let from_file = json(&["--expert-imbalance", path_str(&file)]);
        let mut child = std::process::Command::new(common::clustersim_binary())
            .args([&MIXTRAL_T1_P4_D16[..], &["--ep", "8", "--json"][..]].concat())
            .args(["--expert-imbalance", "/dev/stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(histogram.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let from_stdin: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(
            from_stdin["iteration_time_s"],
            from_file["iteration_time_s"]
        );
    }
}
