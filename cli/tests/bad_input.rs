//! Fuzzer reproducers (`../shared/reliability/REPRODUCERS.md`: P1, P2, N2,
//! N4, N5) kept fixed: inputs in `tests/bad_input/`. None may panic (exit 101)
//! or abort (134); each gives a clear message.

use std::path::PathBuf;
use std::process::{Command, Output};

fn clustersim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clustersim"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn input(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bad_input")
        .join(name)
        .display()
        .to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
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
    let output = clustersim(&["validate", &input("devset-layer-seq.json")]);
    let stdout = text(&output.stdout);
    assert!(stdout.contains("not a finite number"), "{stdout}");
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
