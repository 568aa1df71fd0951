//! `simulate` with and without `--no-symmetry`: the `--json` reports are
//! byte-identical but for `simulation_mode`, and the text says which mode ran.

use crate::common;
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
        text.contains("simulation mode     full (every replica): --no-symmetry"),
        "{text}"
    );
    // Under --contention the summary says why it ran in full.
    let mut contention = args.to_vec();
    contention.push("--contention");
    let text = run(&contention);
    assert!(
        text.contains(
            "simulation mode     full (every replica): --contention shares links between replicas"
        ),
        "{text}"
    );
    // A timeline is a view of the symmetric run: the same bytes as full
    // expansion's, for every rank or for the ranks and window asked.
    let dir = std::env::temp_dir().join(format!("clustersim-symmetry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let timeline_bytes = |extra: &[&str], name: &str| -> (String, Vec<u8>) {
        let path = dir.join(name);
        let mut with_timeline = args.to_vec();
        with_timeline.extend(["--timeline", path.to_str().unwrap()]);
        with_timeline.extend(extra);
        let text = run(&with_timeline);
        (text, std::fs::read(&path).unwrap())
    };
    let (text, symmetric) = timeline_bytes(&[], "auto.timeline.json");
    assert!(
        text.contains("simulation mode     symmetric: 1 of 2"),
        "{text}"
    );
    let (_, full) = timeline_bytes(&["--no-symmetry"], "full.timeline.json");
    assert_eq!(symmetric, full);
    let chosen = ["--timeline-ranks", "1,6-7", "--timeline-window", "0.001:"];
    let (_, some) = timeline_bytes(&chosen, "some.timeline.jsonl");
    let mut chosen_full = chosen.to_vec();
    chosen_full.push("--no-symmetry");
    let (_, some_full) = timeline_bytes(&chosen_full, "some-full.timeline.jsonl");
    assert_eq!(some, some_full);
    let records = |bytes: &[u8]| bytes.iter().filter(|&&b| b == b'\n').count();
    let (_, all_lines) = timeline_bytes(&[], "all.timeline.jsonl");
    assert!(
        records(&some) > 1 && records(&some) < records(&all_lines),
        "{} of {} lines",
        records(&some),
        records(&all_lines)
    );
    // Ranks past the layout and windows ending before they start: exit 2.
    for (flag, value, says) in [
        (
            "--timeline-ranks",
            "3,8",
            "rank 8 is outside this layout's 0..8 ranks",
        ),
        ("--timeline-window", "5:1", "ends before it starts"),
        ("--timeline-window", "x:1", "not a number of milliseconds"),
    ] {
        let mut bad = args.to_vec();
        bad.extend([flag, value]);
        let output = clustersim(&bad);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}");
        assert!(stderr(&output).contains(says), "{}", stderr(&output));
    }
    std::fs::remove_dir_all(&dir).ok();
}
