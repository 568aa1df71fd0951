//! `clustersim sweep` as a user meets it: the table and the sentence, shard
//! files merged by `sweep merge` equal the unsharded `--json` file byte for
//! byte, and bad flags exit 2 with one clear line.

use std::path::PathBuf;
mod common;
use common::{clustersim, text};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-sweep-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const TINY: [&str; 9] = [
    "sweep",
    "--model",
    "tiny",
    "--topology",
    "dgx-a100",
    "--gpus",
    "8",
    "--global-batch",
    "16",
];

#[test]
fn sweep_prints_a_ranked_table_and_why_the_best_wins() {
    let dir = scratch("table");
    let csv = dir.join("sweep.csv");
    let plot = dir.join("sweep.svg");
    let mut args = TINY.to_vec();
    let (csv_arg, plot_arg) = (csv.to_str().unwrap(), plot.to_str().unwrap());
    args.extend(["--top", "3", "--csv", csv_arg, "--plot", plot_arg]);
    let output = clustersim(&args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("146 valid"), "{stdout}");
    assert!(stdout.contains("samples/s"), "{stdout}");
    assert!(stdout.contains("Best: "), "{stdout}");
    assert!(stdout.contains("… 143 more"), "{stdout}");
    // Not a terminal: no progress bar on stderr.
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 147);
    assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn merged_shard_files_equal_the_unsharded_json_file() {
    let dir = scratch("merge");
    let whole = dir.join("whole.json");
    let mut args = TINY.to_vec();
    args.extend(["--json", whole.to_str().unwrap()]);
    assert!(clustersim(&args).status.success());
    let mut merge_args = vec!["sweep".to_string(), "merge".to_string()];
    for index in 0..4 {
        let path = dir.join(format!("shard-{index}.json"));
        let shard = format!("{index}/4");
        let mut args = TINY.to_vec();
        args.extend(["--shard", &shard, "--json", path.to_str().unwrap()]);
        let output = clustersim(&args);
        assert!(output.status.success(), "{}", text(&output.stderr));
        assert!(text(&output.stdout).contains(&format!("shard {index}/4")));
        merge_args.push(path.to_str().unwrap().to_string());
    }
    let merged = dir.join("merged.json");
    merge_args.extend(["--json".to_string(), merged.to_str().unwrap().to_string()]);
    let merge_refs: Vec<&str> = merge_args.iter().map(String::as_str).collect();
    let output = clustersim(&merge_refs);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(std::fs::read(&whole).unwrap() == std::fs::read(&merged).unwrap());
    // A missing shard is a clear user error.
    let output = clustersim(&merge_refs[..4]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("exactly once"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_sweep_flags_exit_2_with_one_clear_line() {
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "sweep",
                "--model",
                "gpt3-175b",
                "--gpus",
                "7",
                "--global-batch",
                "1536",
            ],
            "no layout of 7 GPUs",
        ),
        (
            &["sweep", "--gpus", "8192", "--global-batch", "1536"],
            "has only 4480 GPUs",
        ),
        (
            &[
                "sweep",
                "--gpus",
                "8",
                "--global-batch",
                "16",
                "--shard",
                "8/8",
            ],
            "--shard 8/8",
        ),
        (
            &[
                "sweep",
                "--model",
                "gpt3-175b",
                "--topology",
                "dgx-a100",
                "--gpus",
                "8",
                "--global-batch",
                "8",
            ],
            "fits in GPU memory",
        ),
    ];
    for (args, needle) in cases {
        let output = clustersim(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
