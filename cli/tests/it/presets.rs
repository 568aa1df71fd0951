//! `clustersim presets --show NAME` prints a preset as the file a user would
//! edit: read back with `--model FILE` (and the other kinds), it simulates
//! exactly as the preset's name does (issue 33 item 6).

use crate::common;
use common::{clustersim, stderr, text};

fn run(args: &[&str]) -> String {
    let out = clustersim(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    text(&out.stdout)
}

#[test]
fn every_kind_of_preset_shown_as_a_file_simulates_as_its_name_does() {
    let dir = std::env::temp_dir().join(format!("clustersim-presets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = [
        "simulate",
        "--model",
        "llama3-8b",
        "--topology",
        "dgx-h100-ib",
        "--profile",
        "h100-sxm",
        "--stack",
        "megatron-core-2024",
        "--tp",
        "8",
        "--pp",
        "1",
        "--dp",
        "2",
        "--global-batch",
        "16",
        "--json",
    ];
    let by_name: serde_json::Value = serde_json::from_str(&run(&base)).unwrap();
    for (flag, name, kind) in [
        ("--model", "llama3-8b", "model"),
        ("--topology", "dgx-h100-ib", "topology"),
        ("--profile", "h100-sxm", "profile"),
        ("--stack", "megatron-core-2024", "stack"),
    ] {
        let path = dir.join(format!("{kind}.json"));
        std::fs::write(&path, run(&["presets", "--show", name, "--kind", kind])).unwrap();
        let mut args = base.to_vec();
        let at = args.iter().position(|a| *a == flag).unwrap() + 1;
        args[at] = path.to_str().unwrap();
        let by_file: serde_json::Value = serde_json::from_str(&run(&args)).unwrap();
        assert_eq!(
            by_file["iteration_time_s"], by_name["iteration_time_s"],
            "{kind}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_ambiguous_or_unknown_name_exits_2_and_the_lists_are_json() {
    let ambiguous = clustersim(&["presets", "--show", "h200"]);
    assert_eq!(ambiguous.status.code(), Some(2));
    assert!(stderr(&ambiguous).contains("is a topology and a profile: add --kind"));
    let unknown = clustersim(&["presets", "--show", "lama3-8b"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("did you mean 'llama3-8b'?"));
    let lists: serde_json::Value = serde_json::from_str(&run(&["presets", "--json"])).unwrap();
    for key in ["models", "topologies", "profiles", "stacks", "schedules"] {
        assert!(!lists[key].as_array().unwrap().is_empty(), "{key}");
    }
    assert!(lists["models"]
        .as_array()
        .unwrap()
        .contains(&"llama3-70b".into()));
}
