//! `simulate` with and without `--no-symmetry`: the `--json` reports are
//! byte-identical but for `simulation_mode`, and the text says which mode ran.

mod common;
use common::{clustersim, stderr};

fn run(args: &[&str]) -> String {
    let output = clustersim(args);
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    String::from_utf8(output.stdout).unwrap()
}

/// The report without its `simulation_mode` line, and that line.
fn split_mode(json: &str) -> (String, String) {
    let (mode, rest): (Vec<&str>, Vec<&str>) = json
        .lines()
        .partition(|line| line.trim_start().starts_with("\"simulation_mode\""));
    assert_eq!(mode.len(), 1, "{json}");
    (rest.join("\n"), mode[0].trim().to_string())
}

#[test]
fn json_reports_are_byte_identical_but_for_the_mode() {
    let cases: [&[&str]; 5] = [
        &[
            "--model",
            "tiny",
            "--topology",
            "dgx-a100",
            "--tp",
            "2",
            "--pp",
            "2",
            "--dp",
            "2",
            "--global-batch",
            "8",
        ],
        &[
            "--model",
            "gpt3-175b",
            "--tp",
            "8",
            "--pp",
            "8",
            "--dp",
            "4",
            "--global-batch",
            "64",
            "--schedule",
            "interleaved",
            "--chunks",
            "2",
            "--distributed-optimizer",
            "--overlap-grad-reduce",
        ],
        &[
            "--model",
            "tiny",
            "--topology",
            "selene",
            "--tp",
            "2",
            "--pp",
            "2",
            "--dp",
            "2",
            "--cp",
            "2",
            "--global-batch",
            "8",
            "--stack",
            "megatron-core-2024",
        ],
        &[
            "--model",
            "tiny",
            "--topology",
            "selene",
            "--tp",
            "1",
            "--pp",
            "2",
            "--dp",
            "8",
            "--global-batch",
            "32",
            "--zero-stage",
            "3",
        ],
        &[
            "--model",
            "mixtral-8x7b",
            "--seq-len",
            "512",
            "--topology",
            "dgx-h100-superpod",
            "--tp",
            "1",
            "--pp",
            "2",
            "--dp",
            "8",
            "--ep",
            "4",
            "--global-batch",
            "32",
            "--precision",
            "bf16",
            "--expert-imbalance",
            "skew:1.5",
        ],
    ];
    for case in cases {
        let mut auto = vec!["simulate", "--json"];
        auto.extend_from_slice(case);
        let mut full = auto.clone();
        full.push("--no-symmetry");
        let (auto_rest, auto_mode) = split_mode(&run(&auto));
        let (full_rest, full_mode) = split_mode(&run(&full));
        assert_eq!(auto_rest, full_rest, "{case:?}");
        assert_eq!(full_mode, "\"simulation_mode\": \"full\",", "{case:?}");
        assert!(
            auto_mode.starts_with("\"simulation_mode\": \"symmetric (1 of "),
            "{case:?}: {auto_mode}"
        );
    }
}

#[test]
fn the_text_summary_names_the_mode() {
    let args = [
        "simulate",
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--tp",
        "2",
        "--pp",
        "2",
        "--dp",
        "2",
        "--global-batch",
        "8",
    ];
    let text = run(&args);
    assert!(
        text.contains(
            "simulation mode     symmetric: 1 of 2 identical data-parallel replicas simulated"
        ),
        "{text}"
    );
    let mut full = args.to_vec();
    full.push("--no-symmetry");
    let text = run(&full);
    assert!(
        text.contains("simulation mode     full (every replica)"),
        "{text}"
    );
    // A timeline asks for every rank's records: full expansion.
    let dir = std::env::temp_dir().join(format!("clustersim-symmetry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.timeline.json");
    let mut with_timeline = args.to_vec();
    with_timeline.extend(["--timeline", path.to_str().unwrap()]);
    let text = run(&with_timeline);
    assert!(
        text.contains("simulation mode     full (every replica)"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
