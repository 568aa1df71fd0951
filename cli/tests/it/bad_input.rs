//! Fuzzer reproducers (`../shared/reliability/REPRODUCERS.md`: P1, P2, N1,
//! N2, N4, N5, N6, O3, E1, E2) kept fixed: inputs in `tests/bad_input/`. None may panic (exit 101)
//! or abort (134); each gives a clear message.

use std::path::PathBuf;
use std::process::Output;

use crate::common;
use common::{clustersim, text};

fn input(name: &str) -> String {
    common::input("bad_input", name)
}

#[test]
fn p1_a_dev_set_model_that_is_not_an_object_is_a_reason_not_a_panic() {
    let number = clustersim(&["validate", &input("devset-model-number.json")]);
    assert_eq!(number.status.code(), Some(0), "{}", text(&number.stderr));
    assert!(
        !text(&number.stderr).contains("panicked"),
        "{}",
        text(&number.stderr)
    );
    let string = clustersim(&["validate", &input("devset-model-string.json")]);
    assert_eq!(string.status.code(), Some(0), "{}", text(&string.stderr));
}

#[test]
fn p2_ranks_lists_parse_and_huge_ranges_are_refused() {
    let dir = std::env::temp_dir().join(format!("clustersim-ranks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plot = dir.join("r.svg");
    let base = [
        "simulate",
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "1",
        "--dp",
        "1",
        "--global-batch",
        "1",
    ];
    let mut ok = base.to_vec();
    ok.extend(["--plot", plot.to_str().unwrap(), "--ranks", "0"]);
    let output = clustersim(&ok);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut huge = base.to_vec();
    huge.extend(["--plot", plot.to_str().unwrap(), "--ranks", "0-4294967295"]);
    let output = clustersim(&huge);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("names more than 1048576 ranks"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn n2_n4_wrapped_layouts_zero_published_values_and_infinite_predictions_are_reasons() {
    let output = clustersim(&["validate", &input("devset-tp-wrap.json")]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("layout.tp: 4294967298 is larger than 4294967295"),
        "{stdout}"
    );
    let output = clustersim(&["validate", &input("devset-published-zero.json")]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("published value 0 is not positive"),
        "{stdout}"
    );
    assert!(!stdout.contains("inf"), "{stdout}");
    // A sequence beyond the model limits is refused before anything is costed.
    let output = clustersim(&["validate", &input("devset-layer-seq.json")]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("seq_len 4294967296 is over the limit of 16777216"),
        "{stdout}"
    );
    assert!(!stdout.contains("inf%"), "{stdout}");
}

#[test]
fn n5_a_timeline_that_cannot_be_written_is_exit_2_and_leaves_nothing() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("skipping: no /dev/full on this machine");
        return;
    }
    let output = clustersim(&[
        "simulate",
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "1",
        "--dp",
        "1",
        "--global-batch",
        "2",
        "--timeline",
        "/dev/full",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("No space left on device"),
        "{}",
        text(&output.stderr)
    );
}

fn model_file(name: &str, json: &str) -> String {
    let dir = std::env::temp_dir().join(format!("clustersim-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, json).unwrap();
    path.display().to_string()
}

fn simulate_model(path: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "simulate",
        "--model",
        path,
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "1",
        "--dp",
        "1",
        "--global-batch",
        "2",
    ];
    args.extend(extra);
    clustersim(&args)
}

#[test]
fn o3_n1_n2_e1_models_beyond_the_limits_are_refused_before_anything_is_built() {
    for (name, json, needle) in [
        (
            "layers-4m.json",
            r#"{"name":"x","layers":4000000,"hidden":512,"heads":8,"seq_len":256,"vocab":51200}"#,
            "layers 4000000 is over the limit of 16384",
        ),
        (
            "layers-2p32.json",
            r#"{"name":"l","layers":4294967300,"hidden":512,"heads":8,"seq_len":256,"vocab":51200}"#,
            "layers 4294967300 is over the limit",
        ),
        (
            "hidden-2p41.json",
            r#"{"name":"x","layers":4,"hidden":2199023255552,"heads":8,"seq_len":256,"vocab":51200}"#,
            "hidden 2199023255552 is over the limit",
        ),
        (
            "seq-2p40.json",
            r#"{"name":"x","layers":4,"hidden":512,"heads":8,"seq_len":1099511627776,"vocab":51200}"#,
            "seq_len 1099511627776 is over the limit",
        ),
    ] {
        let output = simulate_model(&model_file(name, json), &["--contention"]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{name}: {}",
            text(&output.stderr)
        );
        assert!(
            text(&output.stderr).contains(needle),
            "{name}: {}",
            text(&output.stderr)
        );
    }
    // Within the limits but still beyond integer nanoseconds: one clear error, exit 2.
    let huge = model_file(
        "huge.json",
        r#"{"name":"x","layers":16384,"hidden":1048576,"heads":8,"seq_len":16777216,"vocab":51200}"#,
    );
    let output = simulate_model(&huge, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("out of range"),
        "{}",
        text(&output.stderr)
    );
}

/// The embedded A100 profile with `edit` applied, simulated under `--profile`.
fn simulate_with_edited_profile(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Output {
    let text_of_profile = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../profile/profiles/a100-80gb.json"),
    )
    .unwrap();
    let mut profile: serde_json::Value = serde_json::from_str(&text_of_profile).unwrap();
    edit(&mut profile);
    let path = model_file(name, &profile.to_string());
    clustersim(&[
        "simulate",
        "--profile",
        &path,
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "1",
        "--dp",
        "1",
        "--global-batch",
        "1",
    ])
}

#[test]
fn n1_n6_profile_values_outside_physical_ranges_are_named() {
    for ((section, key, value), needle) in [
        (
            ("gemm", "large_gemm_efficiency", 5e-324),
            "gemm.large_gemm_efficiency must be in [0.001, 1], got 5e-324",
        ),
        (
            ("gemm", "kernel_overhead_ns", 1e308),
            "gemm.kernel_overhead_ns must be from 0 to 1e9 ns (1 s), got 1e308",
        ),
    ] {
        let output = simulate_with_edited_profile(&format!("profile-{key}.json"), |profile| {
            profile[section][key]["value"] = value.into();
        });
        assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
        assert!(
            text(&output.stderr).contains(needle),
            "{}",
            text(&output.stderr)
        );
    }
    let output = simulate_with_edited_profile("profile-schema.json", |profile| {
        profile["schema_version"] = 4294967297u64.into();
    });
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("schema version 4294967297"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn n2_a_warm_up_that_would_wrap_is_refused() {
    let output = clustersim(&[
        "simulate",
        "--model",
        "tiny",
        "--topology",
        "dgx2-v100",
        "--tp",
        "1",
        "--pp",
        "1",
        "--dp",
        "1",
        "--global-batch",
        "1",
        "--zero-offload",
        "--delayed-update",
        "--dpu-warmup-iterations",
        "4294967295",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("dpu_warmup_iterations: at most 65532"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn outputs_appear_whole_or_not_at_all_and_leave_no_temporary_files() {
    let dir = std::env::temp_dir().join(format!("clustersim-whole-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str| dir.join(name).display().to_string();
    let output = clustersim(&[
        "simulate",
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "2",
        "--dp",
        "1",
        "--global-batch",
        "2",
        "--timeline",
        &file("t.json"),
        "--trace",
        &file("t.trace.json"),
        "--plot",
        &file("t.svg"),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["t.json", "t.svg", "t.trace.json"]);
}

/// A `--cuda-lib-dir` that is not a directory is named in one line, exit 2,
/// before anything looks for a GPU (so also on machines without one).
#[test]
fn a_cuda_lib_dir_that_does_not_exist_is_refused_by_name() {
    let missing = "/nonexistent/clustersim-cuda-libs";
    for args in [
        vec![
            "calibrate",
            "--quick",
            "--cuda-lib-dir",
            missing,
            "--out",
            "/dev/null",
        ],
        vec!["cuda-libs", "--cuda-lib-dir", missing],
    ] {
        let output = clustersim(&args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("--cuda-lib-dir {missing}: no such directory")),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    }
}

/// bf16 on a GPU without bf16 tensor cores is refused by name, not simulated
/// at the fp16 rate.
#[test]
fn bf16_on_a_v100_is_refused() {
    let output = clustersim(&[
        "simulate",
        "--topology",
        "dgx2-v100",
        "--model",
        "gpt2-1b",
        "--tp",
        "1",
        "--pp",
        "1",
        "--dp",
        "8",
        "--global-batch",
        "64",
        "--precision",
        "bf16",
    ]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("precision: bf16 needs bf16 tensor cores"),
        "{stderr}"
    );
}

#[test]
fn an_image_path_without_svg_or_png_is_refused_before_any_work_or_output() {
    // Fuzz seed 26, case 7917: `sweep … --csv out.csv --plot 1e308` simulated
    // for 80 s, wrote out.csv, and only then refused the picture's name.
    let dir = std::env::temp_dir().join(format!("clustersim-image-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("out.csv");
    let csv = csv.to_str().unwrap();
    let cases: [&[&str]; 5] = [
        &[
            "sweep",
            "--model",
            "tiny",
            "--topology",
            "dgx-a100",
            "--gpus",
            "8",
            "--global-batch",
            "8",
            "--csv",
            csv,
            "--plot",
            "1e308",
        ],
        &[
            "simulate",
            "--model",
            "tiny",
            "--topology",
            "dgx-a100",
            "--tp",
            "1",
            "--pp",
            "1",
            "--dp",
            "1",
            "--global-batch",
            "1",
            "--timeline",
            csv,
            "--plot",
            "x.bmp",
        ],
        &["plot", "bubble", "--pp", "4", "--out", "b.jpg"],
        &["compare", "a.json", "b.json", "--plot", "c.gif"],
        &["timeline", "t.json", "--plot", "x"],
    ];
    for args in cases {
        let output = clustersim(args);
        let message = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(
            message.contains("unsupported image extension") && message.contains("use .svg or .png"),
            "{args:?}: {message}"
        );
        assert!(!std::path::Path::new(csv).exists(), "{args:?} wrote {csv}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn an_output_in_a_missing_folder_or_onto_a_folder_is_refused_before_any_work() {
    let folder = std::env::temp_dir();
    let folder = folder.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "simulate",
                "--model",
                "tiny",
                "--timeline",
                "/nonexistent-clustersim/t.json",
            ],
            "folder /nonexistent-clustersim does not exist",
        ),
        (
            &["simulate", "--model", "tiny", "--trace", folder],
            "is a folder, not a file",
        ),
        (
            &[
                "sweep",
                "--gpus",
                "8",
                "--global-batch",
                "8",
                "--csv",
                "/nonexistent-clustersim/x.csv",
            ],
            "folder /nonexistent-clustersim does not exist",
        ),
        (
            &[
                "execute",
                "--dry-run",
                "--mode",
                "synthetic",
                "--out",
                "/nonexistent-clustersim/m.json",
            ],
            "folder /nonexistent-clustersim does not exist",
        ),
    ];
    for (args, needle) in cases {
        let output = clustersim(args);
        let message = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(needle), "{args:?}: {message}");
    }
}
