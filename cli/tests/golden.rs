//! Golden outputs: the bytes of `--json`, `--timeline`, `--trace`, `--explain`
//! and sweep outputs for a fixed set of scenarios, pinned by SHA-256 in
//! `tests/golden/manifest.txt`. A refactor must leave every one unchanged; a
//! change to the model must say so by re-blessing the manifest:
//!
//! ```sh
//! CLUSTERSIM_BLESS=1 cargo test --release -p cli --test golden
//! ```
//!
//! On a mismatch the actual outputs are left in `target/golden-actual/` to
//! diff against a build of the previous commit.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One golden case: a command line, with `{timeline}`, `{trace}`, `{json}` and
/// `{csv}` standing for output files the case writes.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
}

impl Case {
    /// A sweep's table names its own wall-clock time, so only its files are pinned.
    fn pins_stdout(&self) -> bool {
        self.args[0] != "sweep"
    }
}

const CASES: &[Case] = &[
    Case {
        name: "1f1b",
        args: &[
            "simulate",
            "--model",
            "gpt3-175b",
            "--tp",
            "8",
            "--pp",
            "4",
            "--dp",
            "2",
            "--global-batch",
            "16",
            "--recompute",
            "full",
            "--json",
            "--timeline",
            "{timeline}",
            "--trace",
            "{trace}",
        ],
    },
    Case {
        name: "interleaved",
        args: &[
            "simulate",
            "--model",
            "gpt3-175b",
            "--tp",
            "8",
            "--pp",
            "4",
            "--dp",
            "1",
            "--schedule",
            "interleaved",
            "--chunks",
            "2",
            "--global-batch",
            "8",
            "--sequence-parallel",
            "--recompute",
            "selective",
            "--json",
            "--timeline",
            "{timeline}",
            "--trace",
            "{trace}",
        ],
    },
    Case {
        name: "gpipe",
        args: &[
            "simulate",
            "--model",
            "gpt-22b",
            "--topology",
            "dgx-a100",
            "--tp",
            "2",
            "--pp",
            "2",
            "--dp",
            "2",
            "--schedule",
            "gpipe",
            "--global-batch",
            "8",
            "--overlap-grad-reduce",
            "--grad-reduce-bucket-params",
            "100000000",
            "--async-tensor-allreduce",
            "--json",
            "--timeline",
            "{timeline}",
            "--trace",
            "{trace}",
        ],
    },
    Case {
        name: "offload-dpu",
        args: &[
            "simulate",
            "--model",
            "gpt2-10b",
            "--topology",
            "dgx2-v100",
            "--tp",
            "1",
            "--pp",
            "1",
            "--dp",
            "2",
            "--microbatch-size",
            "10",
            "--global-batch",
            "20",
            "--zero-offload",
            "--delayed-update",
            "--json",
            "--timeline",
            "{timeline}",
            "--trace",
            "{trace}",
        ],
    },
    Case {
        name: "offload-contention",
        args: &[
            "simulate",
            "--model",
            "gpt2-4b",
            "--topology",
            "dgx2-v100",
            "--tp",
            "2",
            "--pp",
            "1",
            "--dp",
            "4",
            "--microbatch-size",
            "4",
            "--global-batch",
            "32",
            "--zero-offload",
            "--contention",
            "--json",
            "--timeline",
            "{timeline}",
        ],
    },
    Case {
        name: "contention",
        args: &[
            "simulate",
            "--model",
            "gpt3-175b",
            "--tp",
            "8",
            "--pp",
            "4",
            "--dp",
            "2",
            "--global-batch",
            "16",
            "--contention",
            "--grad-accumulation-fusion",
            "--overlap-grad-reduce",
            "--json",
            "--timeline",
            "{timeline}",
            "--trace",
            "{trace}",
        ],
    },
    Case {
        name: "default",
        args: &["simulate", "--json"],
    },
    Case {
        name: "explain",
        args: &[
            "simulate",
            "--model",
            "gpt3-175b",
            "--tp",
            "8",
            "--pp",
            "4",
            "--dp",
            "1",
            "--global-batch",
            "8",
            "--explain",
        ],
    },
    Case {
        name: "max-model-size",
        args: &[
            "simulate",
            "--model",
            "gpt2-10b",
            "--topology",
            "dgx2-v100",
            "--tp",
            "1",
            "--pp",
            "1",
            "--dp",
            "1",
            "--microbatch-size",
            "10",
            "--global-batch",
            "10",
            "--zero-offload",
            "--max-model-size",
            "--json",
        ],
    },
    Case {
        name: "sweep",
        args: &[
            "sweep",
            "--model",
            "gpt-22b",
            "--topology",
            "dgx-a100",
            "--gpus",
            "8",
            "--global-batch",
            "8",
            "--json",
            "{json}",
            "--csv",
            "{csv}",
        ],
    },
    Case {
        name: "sweep-options",
        args: &[
            "sweep",
            "--model",
            "gpt-22b",
            "--topology",
            "dgx-a100",
            "--gpus",
            "8",
            "--global-batch",
            "16",
            "--max-microbatch",
            "2",
            "--sequence-parallel",
            "--overlap-grad-reduce",
            "--recompute",
            "selective,full",
            "--json",
            "{json}",
        ],
    },
];

const FILE_OUTPUTS: [&str; 4] = ["timeline", "trace", "json", "csv"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ is in the workspace")
        .to_path_buf()
}

fn manifest_path() -> PathBuf {
    workspace_root().join("tests/golden/manifest.txt")
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The human summary ends with the simulation's own wall-clock time
/// ("… 2376 events in 0.000 s (profile …)"), which a loaded machine can push
/// to 0.001 s: pinned as 0.000 so the bytes compare only what is simulated.
fn without_wall_clock(stdout: &[u8]) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(stdout) else {
        return stdout.to_vec();
    };
    text.split_inclusive('\n')
        .map(
            |line| match (line.find(" events in "), line.rfind(" s (profile")) {
                (Some(start), Some(end)) if start < end => {
                    format!("{} events in 0.000{}", &line[..start], &line[end..])
                }
                _ => line.to_string(),
            },
        )
        .collect::<String>()
        .into_bytes()
}

/// Runs one case; returns (output name, bytes) for stdout and every file it wrote.
fn run_case(case: &Case, scratch: &Path) -> Vec<(String, Vec<u8>)> {
    let file = |output: &str| scratch.join(format!("{}.{output}", case.name));
    let args: Vec<String> = case
        .args
        .iter()
        .map(|arg| {
            FILE_OUTPUTS
                .iter()
                .find(|output| *arg == format!("{{{output}}}"))
                .map_or(arg.to_string(), |output| file(output).display().to_string())
        })
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_clustersim"))
        .args(&args)
        .output()
        .expect("binary runs");
    assert!(
        output.status.success(),
        "golden case {} failed: {}",
        case.name,
        String::from_utf8_lossy(&output.stderr)
    );
    let mut outputs = Vec::new();
    if case.pins_stdout() {
        outputs.push(("stdout".to_string(), without_wall_clock(&output.stdout)));
    }
    for name in FILE_OUTPUTS {
        if case.args.contains(&format!("{{{name}}}").as_str()) {
            let bytes = std::fs::read(file(name)).expect("the case wrote its file");
            outputs.push((name.to_string(), bytes));
        }
    }
    outputs
}

#[test]
fn outputs_are_byte_identical_to_the_golden_manifest() {
    let scratch = workspace_root().join("target/golden-actual");
    std::fs::create_dir_all(&scratch).unwrap();
    let mut actual = BTreeMap::new();
    for case in CASES {
        for (output, bytes) in run_case(case, &scratch) {
            if output == "stdout" {
                std::fs::write(scratch.join(format!("{}.stdout", case.name)), &bytes).unwrap();
            }
            actual.insert(
                format!("{} {output}", case.name),
                format!("{} {}", sha256(&bytes), bytes.len()),
            );
        }
    }
    let text: String = actual
        .iter()
        .map(|(key, digest)| format!("{key} {digest}\n"))
        .collect();
    if std::env::var_os("CLUSTERSIM_BLESS").is_some() {
        std::fs::create_dir_all(manifest_path().parent().unwrap()).unwrap();
        std::fs::write(manifest_path(), &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(manifest_path()).expect("tests/golden/manifest.txt");
    let differing: Vec<String> = expected
        .lines()
        .chain(text.lines())
        .filter(|line| !(expected.lines().any(|l| l == *line) && text.lines().any(|l| l == *line)))
        .map(str::to_string)
        .collect();
    assert!(
        differing.is_empty(),
        "outputs differ from tests/golden/manifest.txt (actual outputs in {}):\n{}",
        scratch.display(),
        differing.join("\n")
    );
}

#[test]
fn every_case_runs_twice_to_the_same_bytes() {
    // Determinism of the pinned outputs themselves: a second run of a
    // contention case (the most order-sensitive) gives the same digests.
    let scratch = workspace_root().join("target/golden-repeat");
    std::fs::create_dir_all(&scratch).unwrap();
    let case = CASES
        .iter()
        .find(|c| c.name == "offload-contention")
        .unwrap();
    let first = run_case(case, &scratch);
    let second = run_case(case, &scratch);
    assert_eq!(first, second);
}
